//! [`crate::Job::SyncFigma`] on a worker: read the frame, stop when it has not changed
//! since the last sync, import it ([`super::import`]), store its image fills, SVG exports
//! and Figma's own render as our files, fill its slots when asked ([`super::slots`]),
//! render it (4K for an ad, the 1080 px preview for a template) and report.
//!
//! Stages and what each waits on (the benchmark `scripts/bench-figma` prints them):
//! `read` (the nodes call), `import`, `assets` (the image-fill and render calls and the
//! downloads, eight at a time, stored under content-hash keys so a re-sync of the same
//! images writes nothing new), `render`, `store`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use adforge_renderer::{Tree, Warning};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::client::{FigmaClient, FigmaError, encode};
use super::import::{self, Imported};
use super::slots::SlotWriter;
use super::{FIGMA_NOT_FOUND, FIGMA_RATE_LIMITED, FIGMA_TOKEN_INVALID, MAX_TREE_BYTES};
use crate::protocol::{
    AdCompleted, DesignTemplateAnalysed, FigmaFrameVersion, FigmaSyncJob, FigmaSyncResult,
    FigmaSynced, FigmaTarget, ImageAdRendered, JobResult, MissingFont, RenderTimings, Unmapped,
    token_context,
};
use crate::runner::{JobError, ProgressSink};
use crate::services::{
    CHECK_WIDTH, MAX_TREE_IMAGES, Services, blob_key, blocking, preview_key, preview_width,
    render_timed,
};

/// What a sync uses: the worker's shared services, and the copywriter that writes a frame's
/// text slots (`fill_slots`), given where the worker is assembled ([`crate::node`]).
#[derive(Clone)]
pub struct Parts {
    /// The renderer, fetcher, blob store and the key that opens the Figma token.
    pub services: Services,
    /// Writes the words of the frame's text slots.
    pub words: Arc<dyn SlotWriter>,
}

/// Milliseconds per stage of one sync.
pub type StageTimes = BTreeMap<String, f64>;

/// A Figma failure as the job's error: the codes clients see on the ad.
pub fn job_error(e: FigmaError, file_key: &str) -> JobError {
    let abort = |code: &str, message: String| JobError::Abort {
        code: code.to_owned(),
        message,
    };
    match e {
        FigmaError::Forbidden(m) => abort(
            FIGMA_TOKEN_INVALID,
            format!(
                "Figma refused the organisation's token ({m}): connect Figma again with PUT /v1/integrations/figma, using a token that can open file {file_key}"
            ),
        ),
        FigmaError::NotFound(m) => abort(
            FIGMA_NOT_FOUND,
            format!(
                "Figma has no file {file_key}, or the token cannot see it ({m}); check the link"
            ),
        ),
        FigmaError::RateLimited { retry_after } => abort(
            FIGMA_RATE_LIMITED,
            match retry_after {
                Some(s) => format!(
                    "Figma's rate limit: it asks to wait {s} seconds; sync again after that"
                ),
                None => "Figma's rate limit: sync again in a minute".to_owned(),
            },
        ),
        FigmaError::Status { status, message } if status >= 500 => {
            JobError::retry(format!("Figma answered {status}: {message}"))
        }
        FigmaError::Status { status, message } => {
            JobError::abort(format!("Figma refused the request ({status}: {message})"))
        }
        FigmaError::Transport(m) if m.contains(adforge_renderer::address::REFUSED) => {
            JobError::abort(format!(
                "Figma's API address is refused by the address policy ({m}); the operator must set --figma-api-url to a public address, or allow private URLs"
            ))
        }
        FigmaError::Transport(m) => JobError::retry(format!("Figma could not be reached: {m}")),
    }
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 (hex) of a frame's JSON as Figma sent it.
pub fn frame_hash(document: &Value) -> String {
    hex(&Sha256::digest(document.to_string().as_bytes()))
}

/// Runs one sync.
///
/// # Errors
/// Figma's refusals as the ad's codes ([`job_error`]); a frame the tree cannot hold.
pub async fn run(
    p: &Parts,
    job: FigmaSyncJob,
    progress: ProgressSink,
) -> Result<AdCompleted, JobError> {
    let (done, _) = run_timed(p, &job, &progress).await?;
    Ok(done)
}

/// [`run`], also returning the time of each stage.
///
/// # Errors
/// As [`run`].
pub async fn run_timed(
    p: &Parts,
    job: &FigmaSyncJob,
    progress: &ProgressSink,
) -> Result<(AdCompleted, StageTimes), JobError> {
    let mut times = StageTimes::new();
    let key = p.services.secrets.clone().ok_or_else(|| {
        JobError::retry("this worker has no ADFORGE_SECRETS_KEY to open the organisation's Figma token; give every worker the API nodes' key")
    })?;
    let token = key
        .open(&job.token_sealed, &token_context(&job.org_id))
        .map_err(|_| {
            JobError::retry("the organisation's Figma token cannot be opened with this worker's ADFORGE_SECRETS_KEY; every API node and worker needs the same key (or connect Figma again)")
        })?;
    let token = String::from_utf8(token)
        .map_err(|_| JobError::abort("the stored Figma token is not text; connect Figma again"))?;
    let client = Arc::new(FigmaClient::new(
        &job.api_url,
        token,
        p.services.allow_private,
    ));

    progress
        .report("reading_frame", "Reading the frame from Figma", 10)
        .await;
    let t = Instant::now();
    let path = format!(
        "/v1/files/{}/nodes?ids={}&geometry=paths",
        job.file_key,
        encode(&job.node_id)
    );
    let answer = {
        let client = client.clone();
        blocking(move || client.get_json(&path))
            .await?
            .map_err(|e| job_error(e, &job.file_key))?
    };
    times.insert("read".into(), ms(t));
    let document = answer
        .get("nodes")
        .and_then(|n| n.get(&job.node_id))
        .and_then(|n| n.get("document"))
        .filter(|d| d.is_object())
        .ok_or_else(|| JobError::Abort {
            code: FIGMA_NOT_FOUND.to_owned(),
            message: format!(
                "file {} has no node {}: the frame was deleted, or the link names another file",
                job.file_key, job.node_id
            ),
        })?
        .clone();
    let text = |k: &str| {
        answer
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let frame = FigmaFrameVersion {
        file_version: text("version"),
        frame_hash: frame_hash(&document),
    };
    let (file_name, last_modified) = (text("name"), text("lastModified"));
    if let Some(prev) = &job.previous
        && (prev.frame_hash == frame.frame_hash
            || (!prev.file_version.is_empty() && prev.file_version == frame.file_version))
    {
        progress
            .report(
                "unchanged",
                "The frame has not changed since the last sync",
                100,
            )
            .await;
        let synced = FigmaSynced {
            unchanged: true,
            frame,
            file_name,
            last_modified,
            figma_render_key: None,
            figma_render_url: None,
            report: Default::default(),
        };
        let result = match job.target {
            FigmaTarget::ImageAd => FigmaSyncResult::ImageAd {
                synced,
                rendered: None,
            },
            FigmaTarget::DesignTemplate => FigmaSyncResult::DesignTemplate {
                synced,
                rendered: None,
            },
        };
        return Ok((completed(job, result), times));
    }

    progress
        .report("importing", "Importing the frame", 25)
        .await;
    let t = Instant::now();
    let for_template = job.target == FigmaTarget::DesignTemplate;
    let file_key = job.file_key.clone();
    let mut imported = blocking(move || {
        import::import(
            &document,
            &import::Options {
                file_key: &file_key,
                for_template,
            },
        )
    })
    .await?
    .map_err(JobError::abort)?;
    times.insert("import".into(), ms(t));
    let distinct = imported.image_refs.len() + imported.svg_exports.len();
    if distinct > MAX_TREE_IMAGES {
        return Err(JobError::abort(format!(
            "the frame uses {} image fills and {} nodes drawn from SVG exports; at most {MAX_TREE_IMAGES} images are drawn in one ad (flatten some layers in Figma, or sync a smaller frame)",
            imported.image_refs.len(),
            imported.svg_exports.len()
        )));
    }

    progress
        .report(
            "fetching_assets",
            "Fetching image fills, exports and Figma's render",
            40,
        )
        .await;
    let t = Instant::now();
    let (figma_render_key, mut fetched) =
        super::assets::fetch(p, job, &client, &mut imported).await?;
    times.insert("assets".into(), ms(t));

    if job.fill_slots
        && let Some(inputs) = &job.ad_inputs()
    {
        progress
            .report("filling", "Filling the frame's slots", 55)
            .await;
        match super::slots::fill(p, inputs, &mut imported).await {
            Ok(mut more) => fetched.append(&mut more),
            Err(e) => {
                p.services.fetcher.release(&fetched);
                return Err(e);
            }
        }
    }
    let tree_text = imported.tree.to_string();
    if tree_text.len() > MAX_TREE_BYTES {
        p.services.fetcher.release(&fetched);
        return Err(JobError::abort(format!(
            "the imported frame's tree is {} KiB; at most {} KiB are kept so the ad stays editable (flatten detailed vectors in Figma, or sync a smaller frame)",
            tree_text.len() / 1024,
            MAX_TREE_BYTES / 1024
        )));
    }

    progress
        .report("rendering", "Rendering the imported frame", 70)
        .await;
    let t = Instant::now();
    let result = render(p, job, &mut imported).await;
    p.services.fetcher.release(&fetched);
    let (png, size, timings) = result?;
    times.insert("render".into(), ms(t));

    progress.report("storing", "Storing the image", 90).await;
    let t = Instant::now();
    let key = match job.target {
        FigmaTarget::ImageAd => blob_key(&job.subject_id, job.version),
        FigmaTarget::DesignTemplate => preview_key(&job.subject_id, job.version),
    };
    p.services.store(&key, png).await?;
    times.insert("store".into(), ms(t));
    let url = p.services.blobs.url(&key);
    let synced = FigmaSynced {
        unchanged: false,
        frame,
        file_name,
        last_modified,
        figma_render_url: figma_render_key.as_deref().map(|k| p.services.blobs.url(k)),
        figma_render_key,
        report: imported.report.clone(),
    };
    let result = match job.target {
        FigmaTarget::ImageAd => FigmaSyncResult::ImageAd {
            synced,
            rendered: Some(ImageAdRendered {
                image_url: url,
                width: size.0,
                height: size.1,
                json_tree: Some(imported.tree),
                render: Some(timings),
                copy: None,
            }),
        },
        FigmaTarget::DesignTemplate => FigmaSyncResult::DesignTemplate {
            synced,
            rendered: Some(Box::new(DesignTemplateAnalysed {
                preview_url: url,
                width: size.0,
                height: size.1,
                preview_key: key.clone(),
                json_tree: imported.tree,
                cache_hit: false,
                composition: "figma".to_owned(),
                note: None,
                reference_colours: Vec::new(),
                industry: None,
                ad_format: None,
            })),
        },
    };
    let done = completed(job, result);
    Ok((done, times))
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn completed(job: &FigmaSyncJob, result: FigmaSyncResult) -> AdCompleted {
    AdCompleted {
        ad_id: job.subject_id.clone(),
        version: job.version,
        duration_ms: 0,
        result: JobResult::FigmaSync(Box::new(result)),
    }
}

/// Checks the tree with a small render (fonts, images), then renders it at its size: 4K
/// for an ad, the preview for a template. Returns the PNG, its size and the timings.
async fn render(
    p: &Parts,
    job: &FigmaSyncJob,
    imported: &mut Imported,
) -> Result<(Vec<u8>, (u32, u32), RenderTimings), JobError> {
    let renderer = p.services.renderer.clone();
    let tree_value = imported.tree.clone();
    let target = job.target;
    let (check, out) = blocking(move || -> Result<_, JobError> {
        let tree = Tree::from_value(tree_value)
            .map_err(|e| JobError::abort(format!("the imported frame cannot be drawn: {e}")))?;
        let check = crate::services::render(&renderer, &tree, Some(CHECK_WIDTH), false)?;
        let (dw, dh) = tree.design_size();
        let width = match target {
            FigmaTarget::ImageAd => None,
            FigmaTarget::DesignTemplate => Some(preview_width(f64::from(dw), f64::from(dh))),
        };
        let out = render_timed(&renderer, &tree, width)?;
        Ok((check.report.warnings, out))
    })
    .await??;
    // Missing fonts, by family, with their nodes.
    let mut fonts: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for w in &check {
        match w {
            Warning::MissingFont {
                node,
                family,
                fallback,
            } => {
                fonts
                    .entry((family.clone(), fallback.clone()))
                    .or_default()
                    .push(node.clone());
            }
            Warning::ImageFailed { node, url, reason } => {
                imported.report.unmapped.push(Unmapped {
                    node: node.clone(),
                    figma_id: String::new(),
                    name: String::new(),
                    feature: format!("image {url}"),
                    reason: format!("not drawn: {reason}"),
                });
            }
            _ => {}
        }
    }
    imported.report.missing_fonts = fonts
        .into_iter()
        .map(|((family, fallback), mut nodes)| {
            nodes.sort();
            nodes.dedup();
            MissingFont {
                family,
                fallback,
                nodes,
            }
        })
        .collect();
    Ok((out.png, (out.width, out.height), out.timings))
}
