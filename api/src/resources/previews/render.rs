//! The preview renderer: one [`Previewer`] per process (held in the process's state),
//! holding its own CPU [`Renderer`] with a cache of decoded images, a fetcher that reads
//! this server's files from the blob store and public URLs through the address guard, and
//! the bounds every preview runs under ([`PreviewLimits`]).
//!
//! A preview runs in three bounded steps, each on a blocking thread so the async runtime
//! never renders: wait for a render slot ([`PreviewLimits::slots`], one per core by
//! default; [`PreviewLimits::queue_ms`], then 503), load the images
//! ([`PreviewLimits::image_ms`], each image at most [`PreviewLimits::max_image_bytes`]),
//! draw and encode ([`PreviewLimits::render_ms`]). A step over its budget answers at once;
//! its thread finishes in the background still holding the slot, so a flood of slow
//! previews cannot pile up more work than there are slots.
//!
//! Caching: decoded images are kept by URL (LRU, [`PreviewLimits::cache_bytes`]), so an
//! editor's previews after the first fetch and decode nothing. Own files and uploads are
//! immutable; a public URL whose picture changes is seen again after the server restarts
//! or once the cache has dropped it. Failures are remembered for [`FAILURE_TTL`] so a
//! broken URL does not cost a fetch per keystroke.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use adforge_renderer::image::fetch::TOO_LARGE;
use adforge_renderer::{
    Deadline, FetchLimits, FontLibrary, ImageFetcher, LaidOut, RenderOptions, Renderer, Tree,
    Warning, encode_webp,
};
use adforge_worker::services::ShelfFetcher;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::blob::BlobStore;
use crate::error::{ApiError, ApiResult, ErrorCode};

/// How long a failed image fetch is remembered.
pub const FAILURE_TTL: Duration = Duration::from_secs(60);

/// The bounds of previews (`adforge serve --preview-*`).
#[derive(Debug, Clone)]
pub struct PreviewLimits {
    /// Most nodes in a previewed tree.
    pub max_nodes: u32,
    /// Longest side of a preview in pixels (width and the height it implies).
    pub max_edge: u32,
    /// Most bytes of one image (fetched or read from the blob store).
    pub max_image_bytes: u64,
    /// Budget for loading a preview's images, in milliseconds.
    pub image_ms: u32,
    /// Budget for drawing and encoding, in milliseconds.
    pub render_ms: u32,
    /// Longest wait for a free render slot before 503, in milliseconds.
    pub queue_ms: u32,
    /// Previews rendered at once (0: one per CPU core).
    pub slots: u32,
    /// Previews per rolling minute per API key (or dashboard member), in a bucket of their
    /// own: previews do not use the key's general rate budget.
    pub per_minute: u32,
    /// Decoded images kept between previews, in bytes.
    pub cache_bytes: usize,
}

impl Default for PreviewLimits {
    fn default() -> Self {
        Self {
            max_nodes: 500,
            max_edge: 2160,
            max_image_bytes: 15 << 20,
            image_ms: 10_000,
            render_ms: 5_000,
            queue_ms: 10_000,
            slots: 0,
            per_minute: 600,
            cache_bytes: 256 << 20,
        }
    }
}

/// `adforge serve`'s preview flags: the bounds an operator may change. The documented
/// defaults are those of [`PreviewLimits::default`].
#[derive(clap::Args, Clone, Debug)]
pub struct PreviewArgs {
    /// Most bytes of one image in a preview (POST /v1/previews, the dashboard's editor).
    #[arg(long, env = "ADFORGE_PREVIEW_MAX_IMAGE_BYTES", default_value_t = 15 << 20)]
    pub preview_max_image_bytes: u64,
    /// Milliseconds a preview may take to load its images before it is refused (400).
    #[arg(long, env = "ADFORGE_PREVIEW_IMAGE_MS", default_value_t = 10_000)]
    pub preview_image_ms: u32,
    /// Milliseconds a preview may take to draw and encode before it is refused (400).
    #[arg(long, env = "ADFORGE_PREVIEW_RENDER_MS", default_value_t = 5_000)]
    pub preview_render_ms: u32,
    /// Previews per rolling minute per API key (and per dashboard member), in a bucket of
    /// their own.
    #[arg(long, env = "ADFORGE_PREVIEW_RATE_LIMIT", default_value_t = 600)]
    pub preview_rate_limit: u32,
    /// Previews rendered at once; 0 (the default) is one per CPU core.
    #[arg(long, env = "ADFORGE_PREVIEW_SLOTS", default_value_t = 0)]
    pub preview_slots: u32,
    /// Milliseconds a preview waits for a free render slot before 503.
    #[arg(long, env = "ADFORGE_PREVIEW_QUEUE_MS", default_value_t = 10_000)]
    pub preview_queue_ms: u32,
    /// Most nodes in a previewed tree.
    #[arg(
        long,
        env = "ADFORGE_PREVIEW_MAX_NODES",
        default_value_t = 500,
        hide = true
    )]
    pub preview_max_nodes: u32,
}

impl Default for PreviewArgs {
    fn default() -> Self {
        let d = PreviewLimits::default();
        Self {
            preview_max_image_bytes: d.max_image_bytes,
            preview_image_ms: d.image_ms,
            preview_render_ms: d.render_ms,
            preview_rate_limit: d.per_minute,
            preview_slots: d.slots,
            preview_queue_ms: d.queue_ms,
            preview_max_nodes: d.max_nodes,
        }
    }
}

impl PreviewArgs {
    /// The limits these flags set (the others at their defaults).
    pub fn limits(&self) -> PreviewLimits {
        PreviewLimits {
            max_image_bytes: self.preview_max_image_bytes,
            image_ms: self.preview_image_ms,
            render_ms: self.preview_render_ms,
            per_minute: self.preview_rate_limit.max(1),
            slots: self.preview_slots,
            queue_ms: self.preview_queue_ms,
            max_nodes: self.preview_max_nodes,
            ..PreviewLimits::default()
        }
    }
}

/// What a preview produces: `Png` or `Webp` bytes, or only the boxes (`Boxes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreviewOutput {
    Png,
    Webp,
    /// The laid-out boxes alone: nothing is drawn, but the images are loaded (and cached)
    /// so that one that cannot be fetched or decoded is reported (`image_failed`).
    Boxes,
}

/// A finished preview.
#[derive(Debug)]
pub struct Rendered {
    /// Size, scale, boxes and layout warnings.
    pub layout: LaidOut,
    /// The encoded picture (none for [`PreviewOutput::Boxes`]).
    pub picture: Option<Vec<u8>>,
    /// Everything the renderer could not do as asked (images that failed, low contrast…).
    pub warnings: Vec<Warning>,
    /// Milliseconds of rendering: images, layout, drawing and encoding.
    pub render_ms: f64,
}

/// The process's preview renderer (see the module docs). Cheap to share (`Arc`).
pub struct Previewer {
    pub limits: PreviewLimits,
    fetcher: Arc<PreviewFetcher>,
    renderer: OnceLock<Arc<Renderer>>,
    slots: Arc<Semaphore>,
}

impl std::fmt::Debug for Previewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Previewer")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Previewer {
    /// A previewer reading own files from `blobs` and other URLs through the address
    /// guard (`allow_private` as the server's `--allow-private-urls`). Call it inside the
    /// tokio runtime (own files are read through it from the renderer's threads). The
    /// renderer and its fonts are made on the first preview.
    pub fn new(limits: PreviewLimits, blobs: Arc<dyn BlobStore>, allow_private: bool) -> Self {
        let fetch = FetchLimits {
            max_bytes: limits.max_image_bytes,
            // The image budget answers the request; a fetch still running then ends a
            // second later, freeing its render slot.
            timeout: Duration::from_millis(u64::from(limits.image_ms) + 1_000),
            allow_private,
        };
        let slots = match limits.slots {
            0 => std::thread::available_parallelism().map_or(1, usize::from),
            n => n as usize,
        };
        Self {
            fetcher: Arc::new(PreviewFetcher {
                inner: ShelfFetcher::new(fetch).with_own_files(blobs),
                max_bytes: limits.max_image_bytes,
                failures: Mutex::new(HashMap::new()),
            }),
            limits,
            renderer: OnceLock::new(),
            slots: Arc::new(Semaphore::new(slots)),
        }
    }

    fn renderer(&self) -> Arc<Renderer> {
        self.renderer
            .get_or_init(|| {
                Arc::new(
                    Renderer::new(FontLibrary::bundled(), self.fetcher.clone())
                        .with_image_cache(self.limits.cache_bytes),
                )
            })
            .clone()
    }

    /// Renders an accepted tree (already checked like a PATCH) at `width`.
    ///
    /// # Errors
    /// VALIDATION_ERROR on `tree` when an image is over the byte limit or the images or the
    /// drawing take longer than their budget; SERVICE_UNAVAILABLE (503, Retry-After) when no
    /// render slot frees up in time.
    pub async fn render(
        self: &Arc<Self>,
        tree: Tree,
        width: u32,
        output: PreviewOutput,
    ) -> ApiResult<Rendered> {
        let me = self.clone();
        let permit = self.slot().await?;
        let tree = Arc::new(tree);
        let (t2, me2) = (tree.clone(), self.clone());
        let t0 = Instant::now();
        let failed = self
            .within(
                self.limits.image_ms,
                Some(permit),
                move || Ok(me2.renderer().prefetch_images(&t2)),
                "load the images of",
            )
            .await;
        let (failed, permit) = failed?;
        if let Some((url, why)) = failed.iter().find(|(_, why)| why.starts_with(TOO_LARGE)) {
            return Err(ApiError::field(
                "tree",
                format!(
                    "image `{url}`: {why}; previews read at most {} bytes per image: use a smaller image",
                    self.limits.max_image_bytes
                ),
            ));
        }
        if output == PreviewOutput::Boxes {
            // Nothing is drawn, but the images were loaded (and cached for the pictures
            // that follow), so one that cannot be used is reported as a render would.
            let job = move || {
                let mut layout = me
                    .renderer()
                    .layout_boxes(&tree, Some(width))
                    .map_err(|e| ApiError::field("width", e.to_string()))?;
                layout
                    .warnings
                    .extend(adforge_renderer::image::failed_image_warnings(
                        &tree, &failed,
                    ));
                Ok(Rendered {
                    warnings: layout.warnings.clone(),
                    layout,
                    picture: None,
                    render_ms: elapsed_ms(t0),
                })
            };
            let (rendered, _) = self
                .within(self.limits.render_ms, permit, job, "lay out")
                .await?;
            return Ok(rendered);
        }
        let budget_ms = self.limits.render_ms;
        // The drawing stops at the budget, not only the answer: its thread and its render
        // slot are free again within milliseconds of the 400.
        let deadline = Deadline::after(Duration::from_millis(u64::from(budget_ms)));
        let job = move || {
            let renderer = me.renderer();
            let options = RenderOptions {
                width: Some(width),
                encode_png: output == PreviewOutput::Png,
            };
            let out = renderer
                .render_until(&tree, &options, &deadline)
                .map_err(|e| render_error(e, budget_ms))?;
            let picture = match out.png {
                Some(png) => png,
                None => encode_webp(&out.pixmap).map_err(ApiError::internal)?,
            };
            let render_ms = elapsed_ms(t0);
            let (w, h) = (out.report.width, out.report.height);
            let rendered = Rendered {
                layout: LaidOut {
                    width: w,
                    height: h,
                    scale: w as f32 / tree.design_size().0,
                    boxes: out.boxes,
                    warnings: Vec::new(),
                },
                picture: Some(picture),
                warnings: out.report.warnings,
                render_ms,
            };
            renderer.recycle(out.pixmap);
            Ok(rendered)
        };
        let (rendered, _permit) = self
            .within(self.limits.render_ms, permit, job, "draw")
            .await?;
        Ok(rendered)
    }

    /// Refuses `tree` (already validated) when drawing it at `width` (`None`: 4K, as an ad
    /// renders) would hold more memory than one render may
    /// ([`adforge_renderer::budget::MAX_LAYER_BYTES`]): lays it out and builds its display
    /// list, on a blocking thread.
    ///
    /// # Errors
    /// VALIDATION_ERROR on `field`, naming the node whose layers take it over.
    pub async fn check_memory(
        self: &Arc<Self>,
        tree: Tree,
        width: Option<u32>,
        field: &'static str,
    ) -> ApiResult<()> {
        let me = self.clone();
        tokio::task::spawn_blocking(move || me.renderer().check_memory(&tree, width, true))
            .await
            .map_err(ApiError::internal)?
            .map(|_| ())
            .map_err(|e| ApiError::field(field, e.to_string()))
    }

    /// A render slot, waiting at most [`PreviewLimits::queue_ms`].
    async fn slot(&self) -> ApiResult<OwnedSemaphorePermit> {
        let wait = Duration::from_millis(u64::from(self.limits.queue_ms));
        match tokio::time::timeout(wait, self.slots.clone().acquire_owned()).await {
            Ok(Ok(p)) => Ok(p),
            Ok(Err(e)) => Err(ApiError::internal(e)),
            Err(_) => Err(ApiError {
                retry_after: Some(1),
                ..ApiError::new(
                    ErrorCode::ServiceUnavailable,
                    format!(
                        "Every preview slot of this server stayed busy for {} ms; retry in a second",
                        self.limits.queue_ms
                    ),
                )
            }),
        }
    }

    /// Runs `job` on a blocking thread for at most `budget_ms`; the permit (when given)
    /// stays with the thread until it ends and comes back with the result.
    async fn within<T: Send + 'static>(
        &self,
        budget_ms: u32,
        permit: Option<OwnedSemaphorePermit>,
        job: impl FnOnce() -> ApiResult<T> + Send + 'static,
        what: &str,
    ) -> ApiResult<(T, Option<OwnedSemaphorePermit>)> {
        let task = tokio::task::spawn_blocking(move || (job(), permit));
        match tokio::time::timeout(Duration::from_millis(u64::from(budget_ms)), task).await {
            Ok(Ok((result, permit))) => result.map(|r| (r, permit)),
            Ok(Err(e)) => Err(ApiError::internal(e)),
            Err(_) => Err(ApiError::field(
                "tree",
                format!(
                    "took longer than the preview budget of {budget_ms} ms to {what} this tree; use fewer or smaller images (this server's own files load fastest), fewer effects, or a smaller `width`"
                ),
            )),
        }
    }
}

/// A failed preview render as the API answers it.
fn render_error(e: adforge_renderer::Error, budget_ms: u32) -> ApiError {
    use adforge_renderer::Error;
    match e {
        Error::TooMuchMemory { .. } => ApiError::field("tree", e.to_string()),
        Error::PastDeadline { .. } => ApiError::field(
            "tree",
            format!(
                "took longer than the preview budget of {budget_ms} ms to draw this tree and was stopped; use fewer or smaller blurs and shadows, fewer layers, or a smaller `width`"
            ),
        ),
        Error::Stopped => ApiError {
            retry_after: Some(1),
            ..ApiError::new(
                ErrorCode::ServiceUnavailable,
                "This server is shutting down; retry in a second (another node answers)",
            )
        },
        other => ApiError::field("width", other.to_string()),
    }
}

fn elapsed_ms(t: Instant) -> f64 {
    (t.elapsed().as_secs_f64() * 1e5).round() / 100.0
}

/// Own files from the blob store, other URLs through the guard (the worker's fetcher),
/// each at most `max_bytes`, with recent failures remembered.
struct PreviewFetcher {
    inner: ShelfFetcher,
    max_bytes: u64,
    failures: Mutex<HashMap<String, (Instant, String)>>,
}

impl ImageFetcher for PreviewFetcher {
    fn fetch(&self, url: &str) -> Result<Vec<u8>, String> {
        if let Some((at, why)) = self
            .failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(url)
            && at.elapsed() < FAILURE_TTL
        {
            return Err(why.clone());
        }
        let got = self.inner.fetch(url).and_then(|bytes| {
            if bytes.len() as u64 > self.max_bytes {
                Err(adforge_renderer::image::fetch::too_large(self.max_bytes))
            } else {
                Ok(bytes)
            }
        });
        if let Err(why) = &got {
            let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
            if failures.len() > 1024 {
                failures.retain(|_, (at, _)| at.elapsed() < FAILURE_TTL);
            }
            failures.insert(url.to_owned(), (Instant::now(), why.clone()));
        }
        got
    }
}
