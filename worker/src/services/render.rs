//! Rendering for jobs: every render within [`RENDER_BUDGET`] (and stopped at shutdown), the
//! small check render before the full-size one ([`CHECK_WIDTH`]), the full-size render with
//! its backend and stage times for the API's metrics ([`render_timed`]), and a lost image
//! turned into the job's error ([`image_failures`]).

use std::collections::BTreeMap;

use adforge_renderer::{RenderOptions, Rendered, Renderer, Tree, Warning};

use super::fetch::{ShelfFetcher, classify};
use crate::protocol::RenderTimings;
use crate::runner::JobError;

/// Width of the check render (contrast, fit, missing fonts and images) made before the
/// full-size render.
pub const CHECK_WIDTH: u32 = 540;

/// How long one render of a job may draw: a tree that takes longer (hundreds of large
/// blurred and shadowed layers) fails its job instead of holding a worker for minutes.
/// An ad's 4K render takes 50-500 ms.
pub const RENDER_BUDGET: std::time::Duration = std::time::Duration::from_secs(120);

/// Renders `tree` within [`RENDER_BUDGET`]: past it, or when the process shuts down, the
/// render stops where it is (between draw operations, inside blurs between rows).
///
/// # Errors
/// A job error: `abort` for a tree that cannot be drawn within the budgets (time, memory)
/// or at all, `retry` when the worker is shutting down (another picks the job up).
pub fn render_within(
    renderer: &Renderer,
    tree: &Tree,
    options: &RenderOptions,
) -> Result<Rendered, JobError> {
    use adforge_renderer::Error;
    renderer
        .render_until(tree, options, &adforge_renderer::Deadline::after(RENDER_BUDGET))
        .map_err(|e| match e {
            Error::Stopped => JobError::retry(e.to_string()),
            Error::PastDeadline { .. } => JobError::abort(format!(
                "rendering took longer than {} s and was stopped: use fewer or smaller blurs and shadows, or fewer layers",
                RENDER_BUDGET.as_secs()
            )),
            e => JobError::abort(format!("rendering failed: {e}")),
        })
}

/// [`render_within`] at `width` (`None`: the tree's own size), encoding a PNG or not.
///
/// # Errors
/// As [`render_within`].
pub fn render(
    renderer: &Renderer,
    tree: &Tree,
    width: Option<u32>,
    encode_png: bool,
) -> Result<Rendered, JobError> {
    render_within(renderer, tree, &RenderOptions { width, encode_png })
}

/// A full-size render, encoded, with where its time went.
pub struct TimedRender {
    /// The PNG.
    pub png: Vec<u8>,
    /// Its size in pixels.
    pub width: u32,
    pub height: u32,
    /// The backend and the time of each stage, for the API's metrics.
    pub timings: RenderTimings,
    /// What the renderer reported (images it could not draw, missing fonts, ...).
    pub warnings: Vec<Warning>,
}

/// Renders `tree` at `width` (`None`: its own size, 4K for an ad) and encodes it; logs the
/// backend and stage times and returns them with the PNG.
///
/// # Errors
/// As [`render_within`]; a retry when the renderer returned no PNG.
pub fn render_timed(
    renderer: &Renderer,
    tree: &Tree,
    width: Option<u32>,
) -> Result<TimedRender, JobError> {
    let mut out = render(renderer, tree, width, true)?;
    let (w, h) = (out.report.width, out.report.height);
    let png = out
        .png
        .take()
        .ok_or_else(|| JobError::retry("the renderer returned no PNG"))?;
    if !out.report.warnings.is_empty() {
        tracing::debug!(warnings = ?out.report.warnings, "render warnings");
    }
    let gpu = out.report.gpu.as_ref();
    tracing::info!(
        backend = ?out.report.backend,
        width = w,
        height = h,
        total_ms = out.report.timings.total_ms,
        gpu_upload_ms = gpu.map(|g| g.upload_ms),
        gpu_draw_ms = gpu.map(|g| g.draw_ms),
        gpu_readback_ms = gpu.map(|g| g.readback_ms),
        gpu_fallback = gpu.and_then(|g| g.fallback.as_deref()),
        "rendered"
    );
    let t = &out.report.timings;
    let mut stages: BTreeMap<String, f64> = [
        ("images", t.images_ms),
        ("layout", t.layout_ms),
        ("scene", t.scene_ms),
        ("raster", t.raster_ms),
        ("encode", t.encode_ms),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    if let Some(g) = gpu {
        stages.insert("gpu_upload".to_owned(), g.upload_ms);
        stages.insert("gpu_draw".to_owned(), g.draw_ms);
        stages.insert("gpu_readback".to_owned(), g.readback_ms);
    }
    let backend = match out.report.backend {
        adforge_renderer::report::BackendUsed::Gpu => "gpu",
        adforge_renderer::report::BackendUsed::Cpu => "cpu",
    };
    let timings = RenderTimings {
        backend: backend.to_owned(),
        stages_ms: stages,
    };
    let warnings = std::mem::take(&mut out.report.warnings);
    renderer.recycle(out.pixmap);
    Ok(TimedRender {
        png,
        width: w,
        height: h,
        timings,
        warnings,
    })
}

/// A render that lost an image the tree asks for is not an ad: the renderer skips such a
/// paint and reports [`Warning::ImageFailed`], and this turns the first one into the job's
/// error. An image whose bytes were fetched for this job (they are on the shelf) failed to
/// decode, which no retry fixes (abort); any other failure was the fetch, sorted by
/// [`classify`] (5xx, timeouts and refused connections retry; 4xx and refused addresses
/// abort).
///
/// # Errors
/// The failure of the first image that could not be drawn, naming its URL and the reason.
pub fn image_failures(fetcher: &ShelfFetcher, warnings: &[Warning]) -> Result<(), JobError> {
    for w in warnings {
        if let Warning::ImageFailed { node, url, reason } = w {
            return Err(if fetcher.has(url) {
                JobError::abort(format!(
                    "the image at {url} (node {node}) cannot be decoded: {reason}"
                ))
            } else {
                classify("image", url, reason)
            });
        }
    }
    Ok(())
}
