//! The worker side of a swipe file: [`Ingestor::run`] runs [`crate::Job::IngestSwipeFile`]
//! with the process's models (the router of job kinds, [`crate::node::JobRouter`], hands it
//! the job). The result travels back in the job's event; the API stores it.
//!
//! Ingest: read the stored original → decode under the process-wide decode budget and
//! shrink at once to [`imaging::WORKING_EDGE`] (the full-size pixels never outlive the
//! decode; a 7000×7000 16-bit PNG costs its reservation, not four copies) → 200 px WebP
//! preview → aspect ratio → EfficientNet-Lite0 image vector and top-5 ImageNet labels →
//! words (Tesseract, when `tesseract` is on PATH) → industry and ad format
//! ([`super::taxonomy`]) → a caption of all that → MiniLM caption vector. Deterministic:
//! the same image gives the same result, so a redone job after a worker died is harmless.
//! Only a failure to embed (or to read the stored image) fails the design; classification
//! that cannot decide leaves its field null.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use adforge_models::Models;
use bytes::Bytes;
use image::DynamicImage;

use super::taxonomy;
use crate::blob::BlobStore;
use crate::imaging;
use crate::{
    AdCompleted, IngestSwipeFileJob, JobError, JobResult, ProgressSink, SwipeFileIngested,
};

/// The failure code of a swipe file whose embedding failed.
pub const EMBEDDING_FAILED: &str = "EMBEDDING_FAILED";

/// What an ingest needs: models, blobs, the label index and whether OCR is available.
pub struct Ingestor {
    models: Arc<Models>,
    blobs: Arc<dyn BlobStore>,
    label_index: HashMap<String, usize>,
    tesseract: Option<std::path::PathBuf>,
    /// Fetches the originals of imports given by URL, through the address policy.
    fetcher: Arc<adforge_renderer::HttpFetcher>,
    allow_private: bool,
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
        let tesseract = crate::ocr::find_on_path("tesseract");
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
            fetcher: Arc::new(adforge_renderer::HttpFetcher::new(
                adforge_renderer::FetchLimits::default(),
            )),
            allow_private: false,
        }
    }

    /// The same ingestor fetching imports' URLs with loopback and private addresses
    /// allowed or not (the process's `--allow-private-urls`).
    pub fn allow_private_urls(mut self, allow: bool) -> Self {
        self.fetcher = Arc::new(adforge_renderer::HttpFetcher::new(
            adforge_renderer::FetchLimits {
                allow_private: allow,
                ..adforge_renderer::FetchLimits::default()
            },
        ));
        self.allow_private = allow;
        self
    }

    /// Fetches an import's original from `url` and stores it beside `blob_key` (PNG or
    /// JPEG, WebP transcoded to PNG); returns its key and bytes.
    async fn fetch_original(&self, url: &str, blob_key: &str) -> Result<(String, Bytes), JobError> {
        // The one address policy, before any connection (the fetcher checks again at connect).
        adforge_renderer::address::check_url(url, self.allow_private)
            .map_err(|why| embedding_failed(&format!("{url} cannot be fetched"), why))?;
        let fetcher = self.fetcher.clone();
        let target = url.to_string();
        let fetched = tokio::task::spawn_blocking(move || {
            use adforge_renderer::ImageFetcher;
            fetcher.fetch(&target)
        })
        .await
        .map_err(|e| JobError::retry(format!("the fetch task ended abnormally: {e}")))?;
        let bytes = match fetched {
            Ok(b) => Bytes::from(b),
            // Too large, or the server said no (4xx): fetching again cannot help.
            Err(why)
                if why.starts_with(adforge_renderer::image::fetch::TOO_LARGE)
                    || why.contains("status: 4") =>
            {
                return Err(embedding_failed(&format!("fetching {url}"), why));
            }
            Err(why) => return Err(JobError::retry(format!("fetching {url}: {why}"))),
        };
        let (stored, ext) = imaging::with_decoded(bytes.clone(), move |probed, image| {
            if probed.format == image::ImageFormat::WebP {
                let mut png = Vec::new();
                image
                    .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
                    .map(|_| (Bytes::from(png), "png"))
                    .map_err(|e| e.to_string())
            } else {
                Ok((bytes, imaging::extension(probed.format)))
            }
        })
        .await
        .map_err(|e| embedding_failed(&format!("{url} is not a usable image"), e))?
        .map_err(|e| JobError::retry(format!("transcoding {url}: {e}")))?;
        let key = format!("{blob_key}.{ext}");
        self.blobs
            .put(&key, stored.clone())
            .await
            .map_err(|e| JobError::retry(format!("storing {key}: {e}")))?;
        Ok((key, stored))
    }

    /// The same ingestor with OCR through `tesseract` (a path), or without OCR (`None`):
    /// for tests and the benchmark, which compare both paths.
    pub fn with_tesseract(mut self, tesseract: Option<std::path::PathBuf>) -> Self {
        self.tesseract = tesseract;
        self
    }

    /// `tesseract` on PATH, if any (what [`Ingestor::new`] uses).
    pub fn tesseract_on_path() -> Option<std::path::PathBuf> {
        crate::ocr::find_on_path("tesseract")
    }

    /// Measures one design from its bytes as an ingest does, without storing anything:
    /// the result (thumb key empty) and the time each stage took.
    ///
    /// # Errors
    /// What would fail the ingest, as text.
    pub fn measure(&self, bytes: &[u8]) -> Result<(SwipeFileIngested, StageTimes), String> {
        let t = Instant::now();
        let decoded = imaging::probe(bytes)
            .and_then(|p| imaging::decode_probed_to(bytes, &p, imaging::WORKING_EDGE))
            .map_err(|e| format!("the stored image cannot be decoded: {e}"))?;
        let decode = t.elapsed();
        analyse(
            &self.models,
            &self.label_index,
            self.tesseract.as_deref(),
            decoded,
            None,
        )
        .map(|(_, result, mut times)| {
            times.decode += decode;
            (result, times)
        })
        .map_err(|e| match e {
            JobError::Retry { message } | JobError::Abort { message, .. } => message,
        })
    }

    /// Runs one ingest: read the stored original, measure, embed and classify it.
    ///
    /// # Errors
    /// [`EMBEDDING_FAILED`] when the image cannot be embedded; a retry when the stored
    /// original cannot be read.
    pub async fn run(
        &self,
        job: IngestSwipeFileJob,
        progress: ProgressSink,
    ) -> Result<AdCompleted, JobError> {
        progress
            .report("read", "Reading the stored image", 10)
            .await;
        let (fetched_key, bytes) = match &job.fetch_url {
            Some(url) => {
                let (key, bytes) = self.fetch_original(url, &job.blob_key).await?;
                (Some(key), bytes)
            }
            None => (
                None,
                self.blobs
                    .get(&job.blob_key)
                    .await
                    .map_err(|e| JobError::retry(format!("reading {}: {e}", job.blob_key)))?
                    .ok_or_else(|| JobError::Abort {
                        code: EMBEDDING_FAILED.into(),
                        message: "the stored image is missing".into(),
                    })?,
            ),
        };
        let t = Instant::now();
        let decoded = imaging::decode_shrunk(bytes, imaging::WORKING_EDGE)
            .await
            .map_err(|e| embedding_failed("the stored image cannot be decoded", e))?;
        let decode = t.elapsed();
        let models = self.models.clone();
        let index = self.label_index.clone();
        let tesseract = self.tesseract.clone();
        let hints = job.hints.clone();
        progress
            .report("embed", "Embedding and classifying the design", 40)
            .await;
        let (thumb, result, mut times) = tokio::task::spawn_blocking(move || {
            analyse(
                &models,
                &index,
                tesseract.as_deref(),
                decoded,
                hints.as_ref(),
            )
        })
        .await
        .map_err(|e| JobError::retry(format!("the ingest task ended abnormally: {e}")))??;
        times.decode += decode;
        tracing::debug!(
            swipe_file_id = %job.swipe_file_id,
            decode_ms = times.decode.as_millis() as u64,
            model_ms = times.model.as_millis() as u64,
            ocr_ms = times.ocr.as_millis() as u64,
            "swipe file measured"
        );
        let thumb_key = format!("swipe-files/{}/preview.webp", job.swipe_file_id);
        self.blobs
            .put(&thumb_key, Bytes::from(thumb))
            .await
            .map_err(|e| JobError::retry(format!("storing {thumb_key}: {e}")))?;
        Ok(AdCompleted {
            ad_id: job.swipe_file_id.clone(),
            version: 1,
            duration_ms: 0,
            result: JobResult::SwipeFile(Box::new(SwipeFileIngested {
                thumb_key,
                blob_key: fetched_key,
                ..result
            })),
        })
    }
}

fn embedding_failed(what: &str, e: impl std::fmt::Display) -> JobError {
    JobError::Abort {
        code: EMBEDDING_FAILED.into(),
        message: format!("{what}: {e}"),
    }
}

/// Wall-clock time of each stage of one ingest.
#[derive(Debug, Clone, Copy, Default)]
pub struct StageTimes {
    /// Decoding, the preview, colour and background measurements.
    pub decode: Duration,
    /// EfficientNet-Lite0 (vector and labels) and MiniLM (caption vector).
    pub model: Duration,
    /// Tesseract (zero without it).
    pub ocr: Duration,
}

/// Everything measured from the decoded design (at most [`imaging::WORKING_EDGE`]):
/// (200 px WebP preview, result without thumb key, width, height, stage times).
fn analyse(
    models: &Models,
    label_index: &HashMap<String, usize>,
    tesseract: Option<&Path>,
    decoded: imaging::Preview,
    hints: Option<&crate::IngestHints>,
) -> Result<(Vec<u8>, SwipeFileIngested, StageTimes), JobError> {
    let mut times = StageTimes::default();
    let t = Instant::now();
    let (width, height) = (decoded.width, decoded.height);
    let rgba = decoded.image;
    let preview = imaging::encode_webp(&imaging::fit_within(&rgba, 200))
        .map_err(|e| JobError::retry(format!("encoding the preview: {e}")))?;
    let description = imaging::describe(&rgba);
    let image = DynamicImage::ImageRgba8(rgba);
    let rgb = image.to_rgb8();
    let plain = plain_background(&image);
    times.decode = t.elapsed();
    let t = Instant::now();
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
    times.model = t.elapsed();
    let ocr_text = tesseract.and_then(|path| {
        let t = Instant::now();
        let words = crate::ocr::read_text(path, &image);
        times.ocr = t.elapsed();
        words
    });
    let words = ocr_text.as_deref().map(taxonomy::words).unwrap_or_default();
    let aspect_ratio = taxonomy::aspect_ratio(width, height);
    let hint =
        |f: fn(&crate::IngestHints) -> Option<&String>| hints.and_then(f).map(String::as_str);
    let industry = hint(|h| h.industry.as_ref()).or_else(|| taxonomy::industry(&indexed, &words));
    let ad_format = hint(|h| h.ad_format.as_ref())
        .or_else(|| taxonomy::ad_format(ocr_text.as_deref(), &indexed, plain));
    let caption = match hint(|h| h.caption.as_ref()) {
        Some(c) => c.to_string(),
        None => caption(
            &indexed,
            ocr_text.as_deref(),
            &description,
            aspect_ratio,
            industry,
            ad_format,
        ),
    };
    let t = Instant::now();
    let text_vector = models
        .text
        .embed_texts(&[caption.as_str()])
        .map_err(|e| embedding_failed("embedding the caption failed", e))?
        .into_iter()
        .next()
        .ok_or_else(|| embedding_failed("embedding the caption failed", "no vector"))?;
    times.model += t.elapsed();
    Ok((
        preview,
        SwipeFileIngested {
            width,
            height,
            thumb_key: String::new(),
            blob_key: None,
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
        times,
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
    let small = match img.as_rgba8() {
        Some(rgba) => imaging::fit_within(rgba, 64),
        None => imaging::fit_within(&img.to_rgba8(), 64),
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1080 px square design with big words on it, drawn by our renderer.
    fn words_design() -> Vec<u8> {
        let tree = adforge_renderer::Tree::from_value(serde_json::json!({
            "root": "root",
            "nodes": {
                "root": {"id": "root", "type": "FRAME", "width": 1080, "height": 1080,
                    "fills": [{"type": "SOLID", "color": {"r": 1, "g": 1, "b": 1, "a": 1}}],
                    "children": ["t"]},
                "t": {"id": "t", "type": "TEXT", "x": 80, "y": 300, "width": 920, "height": 500,
                    "characters": "WINTER BOOTS\n30% OFF", "fontSize": 130, "fontWeight": 700,
                    "fontFamily": "Inter", "textAlignHorizontal": "CENTER",
                    "fills": [{"type": "SOLID", "color": {"r": 0.05, "g": 0.05, "b": 0.1, "a": 1}}]}
            }
        }))
        .unwrap();
        let renderer = adforge_renderer::Renderer::new(
            adforge_renderer::FontLibrary::bundled(),
            Arc::new(adforge_renderer::HttpFetcher::new(
                adforge_renderer::FetchLimits::default(),
            )),
        );
        let options = adforge_renderer::RenderOptions {
            width: Some(1080),
            encode_png: true,
        };
        renderer.render(&tree, &options).unwrap().png.unwrap()
    }

    fn ingestor() -> Ingestor {
        let dir = adforge_models::default_models_dir();
        let models = Models::load(&dir)
            .unwrap_or_else(|e| panic!("the models are needed: run scripts/fetch-models ({e})"));
        let blobs: Arc<dyn BlobStore> = Arc::new(crate::blob::LocalBlobStore::new(
            std::env::temp_dir().join("adforge-ingest-test-unused"),
            "http://unused",
        ));
        Ingestor::new(Arc::new(models), blobs, &dir)
    }

    /// With Tesseract the printed words reach the caption and decide the format; without it
    /// ingest still succeeds, and the caption and format say nothing of the words.
    #[test]
    fn ocr_reads_the_printed_words_and_ingest_works_without_it() {
        let tesseract = Ingestor::tesseract_on_path().expect(
            "tesseract is not on PATH: install Debian's tesseract-ocr and tesseract-ocr-eng (scripts/test does)",
        );
        let bytes = words_design();
        let with = ingestor().with_tesseract(Some(tesseract));
        let (r, _) = with.measure(&bytes).unwrap();
        let words = r.ocr_text.clone().unwrap_or_default().to_uppercase();
        for w in ["WINTER", "BOOTS", "30%", "OFF"] {
            assert!(words.contains(w), "OCR read {words:?}");
        }
        assert!(
            r.caption.to_uppercase().contains("WINTER BOOTS"),
            "{}",
            r.caption
        );
        assert_eq!(r.ad_format.as_deref(), Some("offer_sale"), "{}", r.caption);

        let without = ingestor().with_tesseract(None);
        let (r, _) = without.measure(&bytes).unwrap();
        assert_eq!(r.ocr_text, None);
        assert!(
            !r.caption.to_uppercase().contains("WINTER"),
            "{}",
            r.caption
        );
        assert_ne!(r.ad_format.as_deref(), Some("offer_sale"));
        assert_eq!(r.text_vector.len(), 384);
    }
}
