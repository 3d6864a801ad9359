//! The worker side of a swipe file: [`SwipeAwareHandler`] runs
//! [`Job::IngestSwipeFile`] with the process's models and hands every other job to the ad
//! generation handler.
//!
//! Ingest: read the stored original → decode (the API's guarded decoder) → 200 px WebP
//! preview → aspect ratio → EfficientNet-Lite0 image vector and top-5 ImageNet labels →
//! words (Tesseract, when `tesseract` is on PATH) → industry and ad format
//! ([`super::taxonomy`]) → a caption of all that → MiniLM caption vector. Deterministic:
//! the same image gives the same result, so a redone job after a worker died is harmless.
//! Only a failure to embed (or to read the stored image) fails the design; classification
//! that cannot decide leaves its field null.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use adforge_models::Models;
use adforge_worker::{
    AdCompleted, IngestSwipeFileJob, Job, JobError, JobHandler, ProgressSink, SwipeFileIngested,
};
use bytes::Bytes;
use futures_util::future::BoxFuture;
use image::DynamicImage;

use super::taxonomy;
use crate::blob::BlobStore;
use crate::imaging;

/// The failure code of a swipe file whose embedding failed.
pub const EMBEDDING_FAILED: &str = "EMBEDDING_FAILED";

/// Runs swipe-file ingests with loaded models; everything else goes to `inner`.
pub struct SwipeAwareHandler {
    inner: Arc<dyn JobHandler>,
    ingest: Option<Arc<Ingestor>>,
}

impl SwipeAwareHandler {
    pub fn new(inner: Arc<dyn JobHandler>, ingest: Option<Arc<Ingestor>>) -> Self {
        Self { inner, ingest }
    }
}

impl JobHandler for SwipeAwareHandler {
    fn handle<'a>(
        &'a self,
        job: Job,
        progress: ProgressSink,
    ) -> BoxFuture<'a, Result<AdCompleted, JobError>> {
        match job {
            Job::IngestSwipeFile(j) => Box::pin(async move {
                match &self.ingest {
                    Some(ingest) => ingest.run(j, progress).await,
                    // Another worker with models may take it; after the attempts the design
                    // fails with this message.
                    None => Err(JobError::retry(
                        "no worker with the swipe-file models took this design; run scripts/fetch-models on the workers",
                    )),
                }
            }),
            other => self.inner.handle(other, progress),
        }
    }
}

/// What an ingest needs: models, blobs, the label index and whether OCR is available.
pub struct Ingestor {
    models: Arc<Models>,
    blobs: Arc<dyn BlobStore>,
    label_index: HashMap<String, usize>,
    tesseract: Option<std::path::PathBuf>,
}

impl Ingestor {
    /// `models_dir` is read for the ImageNet label order (labels.txt).
    pub fn new(models: Arc<Models>, blobs: Arc<dyn BlobStore>, models_dir: &Path) -> Self {
        let labels = std::fs::read_to_string(
            models_dir
                .join(adforge_models::EFFICIENTNET_DIR)
                .join("labels.txt"),
        )
        .unwrap_or_default();
        let label_index = labels
            .lines()
            .enumerate()
            .map(|(i, l)| (l.trim().to_string(), i))
            .collect();
        let tesseract = find_on_path("tesseract");
        if tesseract.is_none() {
            tracing::info!(
                "tesseract is not on PATH: swipe-file captions will not include the words printed on designs"
            );
        }
        Self {
            models,
            blobs,
            label_index,
            tesseract,
        }
    }

    async fn run(
        &self,
        job: IngestSwipeFileJob,
        progress: ProgressSink,
    ) -> Result<AdCompleted, JobError> {
        progress
            .report("read", "Reading the stored image", 10)
            .await;
        let bytes = self
            .blobs
            .get(&job.blob_key)
            .await
            .map_err(|e| JobError::retry(format!("reading {}: {e}", job.blob_key)))?
            .ok_or_else(|| JobError::Abort {
                code: EMBEDDING_FAILED.into(),
                message: "the stored image is missing".into(),
            })?;
        let models = self.models.clone();
        let index = self.label_index.clone();
        let tesseract = self.tesseract.clone();
        progress
            .report("embed", "Embedding and classifying the design", 40)
            .await;
        let (thumb, result, width, height) = tokio::task::spawn_blocking(move || {
            analyse(&models, &index, tesseract.as_deref(), &bytes)
        })
        .await
        .map_err(|e| JobError::retry(format!("the ingest task ended abnormally: {e}")))??;
        let thumb_key = format!("swipe-files/{}/preview.webp", job.swipe_file_id);
        self.blobs
            .put(&thumb_key, Bytes::from(thumb))
            .await
            .map_err(|e| JobError::retry(format!("storing {thumb_key}: {e}")))?;
        Ok(AdCompleted {
            ad_id: job.swipe_file_id.clone(),
            version: 1,
            image_url: self.blobs.url(&job.blob_key),
            width,
            height,
            json_tree: None,
            duration_ms: 0,
            swipe_file: Some(Box::new(SwipeFileIngested {
                thumb_key,
                ..result
            })),
            design_template: None,
        })
    }
}

fn embedding_failed(what: &str, e: impl std::fmt::Display) -> JobError {
    JobError::Abort {
        code: EMBEDDING_FAILED.into(),
        message: format!("{what}: {e}"),
    }
}

/// Everything measured from the bytes: (200 px WebP preview, result without thumb key,
/// width, height).
fn analyse(
    models: &Models,
    label_index: &HashMap<String, usize>,
    tesseract: Option<&Path>,
    bytes: &[u8],
) -> Result<(Vec<u8>, SwipeFileIngested, u32, u32), JobError> {
    let (probed, image) = imaging::decode_full(bytes)
        .map_err(|e| embedding_failed("the stored image cannot be decoded", e.message))?;
    let (width, height) = (probed.width, probed.height);
    let rgba = image.to_rgba8();
    let preview = imaging::encode_webp(&imaging::fit_within(&rgba, 200))
        .map_err(|e| JobError::retry(format!("encoding the preview: {e}")))?;
    let rgb = image.to_rgb8();
    let image_vector = models
        .image
        .embed_images(std::slice::from_ref(&rgb))
        .map_err(|e| embedding_failed("embedding the image failed", e))?
        .into_iter()
        .next()
        .ok_or_else(|| embedding_failed("embedding the image failed", "no vector"))?;
    let labels = models
        .classifier
        .classify(&rgb, 5)
        .map_err(|e| embedding_failed("classifying the image failed", e))?;
    let indexed: Vec<(String, f32, Option<usize>)> = labels
        .iter()
        .map(|(n, p)| (n.clone(), *p, label_index.get(n).copied()))
        .collect();
    let ocr_text = tesseract.and_then(|t| read_words(t, &image));
    let words = ocr_text.as_deref().map(taxonomy::words).unwrap_or_default();
    let aspect_ratio = taxonomy::aspect_ratio(width, height);
    let industry = taxonomy::industry(&indexed, &words);
    let ad_format = taxonomy::ad_format(ocr_text.as_deref(), &indexed, plain_background(&image));
    let caption = caption(
        &indexed,
        ocr_text.as_deref(),
        &imaging::describe(&rgba),
        aspect_ratio,
        industry,
        ad_format,
    );
    let text_vector = models
        .text
        .embed_texts(&[caption.as_str()])
        .map_err(|e| embedding_failed("embedding the caption failed", e))?
        .into_iter()
        .next()
        .ok_or_else(|| embedding_failed("embedding the caption failed", "no vector"))?;
    Ok((
        preview,
        SwipeFileIngested {
            thumb_key: String::new(),
            aspect_ratio: aspect_ratio.to_string(),
            industry: industry.map(str::to_string),
            ad_format: ad_format.map(str::to_string),
            caption,
            labels,
            ocr_text,
            image_model: models.image.model_id().to_string(),
            image_vector,
            text_model: models.text.model_id().to_string(),
            text_vector,
        },
        width,
        height,
    ))
}

/// The caption: what was measured, in plain words, most telling first.
fn caption(
    labels: &[(String, f32, Option<usize>)],
    ocr: Option<&str>,
    description: &str,
    aspect_ratio: &str,
    industry: Option<&str>,
    ad_format: Option<&str>,
) -> String {
    // ImageNet names a few classes twice ("missile"): each name once.
    let mut shown: Vec<&str> = Vec::new();
    for (i, (name, p, _)) in labels.iter().enumerate() {
        if (i == 0 || *p >= 0.05) && !shown.contains(&name.as_str()) && shown.len() < 3 {
            shown.push(name);
        }
    }
    let mut out = format!("A picture of {}.", shown.join(", "));
    if let Some(words) = ocr.map(str::trim).filter(|w| !w.is_empty()) {
        let words: String = words
            .split_whitespace()
            .take(60)
            .collect::<Vec<_>>()
            .join(" ");
        out.push_str(&format!(" Text: {words}."));
    }
    if let Some(f) = ad_format {
        out.push_str(&format!(" {} ad.", taxonomy::ad_format_name(f)));
    }
    if let Some(i) = industry {
        out.push_str(&format!(" {}.", taxonomy::industry_name(i)));
    }
    out.push_str(&format!(" {description}, {aspect_ratio}."));
    out
}

/// Whether the border of the picture is nearly one colour (a studio or flat background).
fn plain_background(img: &DynamicImage) -> bool {
    let small = imaging::fit_within(&img.to_rgba8(), 64);
    let (w, h) = small.dimensions();
    let border: Vec<[f32; 3]> = small
        .enumerate_pixels()
        .filter(|(x, y, _)| *x == 0 || *y == 0 || *x + 1 == w || *y + 1 == h)
        .map(|(_, _, p)| [f32::from(p[0]), f32::from(p[1]), f32::from(p[2])])
        .collect();
    let n = border.len().max(1) as f32;
    let mean = [0, 1, 2].map(|i| border.iter().map(|p| p[i]).sum::<f32>() / n);
    let var = border
        .iter()
        .map(|p| (0..3).map(|i| (p[i] - mean[i]).powi(2)).sum::<f32>())
        .sum::<f32>()
        / n;
    var.sqrt() < 40.0
}

fn find_on_path(program: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(program))
            .find(|p| p.is_file())
    })
}

/// The words Tesseract reads, or `None` when it fails or reads nothing.
fn read_words(tesseract: &Path, image: &DynamicImage) -> Option<String> {
    let dir = tempfile::tempdir().ok()?;
    let path = dir.path().join("in.png");
    imaging::fit_within(&image.to_rgba8(), 1600)
        .save(&path)
        .ok()?;
    let out = std::process::Command::new(tesseract)
        .arg(&path)
        .arg("stdout")
        .args(["--psm", "11", "-l", "eng"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| l.chars().filter(|c| c.is_alphanumeric()).count() >= 2)
        .collect::<Vec<_>>()
        .join("\n");
    (!text.is_empty()).then_some(text)
}
