//! The image-ad pipelines: [`GenerateAdHandler`] runs [`Job::GenerateImageAd`] (reference
//! → analysis → layout → copy → filled tree → 4K PNG in the blob store) and
//! [`Job::RenderImageAdVersion`] (an edited tree → PNG).
//!
//! Stages, each its own module and each a plain function that can be tested alone:
//!
//! 1. [`fetch`]: the reference, product image and logos, through the renderer's guarded
//!    HTTP fetcher; failures sorted into retry and abort.
//! 2. [`analyse`]: aspect, palette, subject and calm areas, text-led or image-led.
//! 3. [`layouts`]: the built-in layout library and [`layouts::choose_layout`].
//! 4. [`copy`]: the deterministic copywriter.
//! 5. [`fill`]: brand colours, fonts, logo, images, copy and UUIDs into the template.
//! 6. A preflight render at small size: the renderer measures every text's contrast against
//!    the pixels really behind it and reports text that does not fit; [`fill::strengthen`]
//!    and [`fill::loosen_fit`] fix those before the 4K render. So every completed ad has
//!    been checked, not just designed, to have ≥ 4.5:1 text and no overflowing text.
//!
//! The tree returned for an editable ad is exactly the tree rendered; its node ids are
//! UUIDs derived from the ad id and the layout slot, so a redone job yields the same tree.
//!
//! Rejected alternative: generating the ad as an image directly (drawing with tiny-skia
//! here). Going through the JSON tree keeps one renderer, makes every ad editable for free
//! and lets the renderer's report check contrast and fit.
//!
//! ```no_run
//! # fn demo(blobs: std::sync::Arc<dyn adforge_worker::blob::BlobStore>) {
//! use adforge_worker::generate::{GenerateAdHandler, GenerateConfig};
//! // One handler per process: it owns the renderer (fonts, glyph caches).
//! let handler = GenerateAdHandler::new(GenerateConfig::new(blobs));
//! # }
//! ```

pub mod analyse;
pub mod brand;
pub mod copy;
pub mod fetch;
pub mod fill;
pub mod layouts;

use std::sync::Arc;

use adforge_renderer::{
    FetchLimits, FontLibrary, RenderOptions, Rendered, Renderer, Tree, Warning,
};
use bytes::Bytes;
use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::blob::BlobStore;
use crate::protocol::{AdCompleted, GenerateAdJob, Job, RerenderJob};
use crate::runner::{JobError, JobHandler, ProgressSink};
use fetch::ShelfFetcher;

/// Width of the preflight render that checks contrast and fit before the 4K render.
const PREFLIGHT_WIDTH: u32 = 540;

/// How a [`GenerateAdHandler`] is set up.
pub struct GenerateConfig {
    /// Where rendered PNGs go (`image-ads/{ad_id}/v{version}.png`).
    pub blobs: Arc<dyn BlobStore>,
    /// Fonts the renderer draws with. Default: the bundled library.
    pub fonts: FontLibrary,
    /// Limits for every image fetched (reference, product images, logos).
    pub fetch_limits: FetchLimits,
}

impl GenerateConfig {
    /// Bundled fonts and default fetch limits (public addresses only).
    pub fn new(blobs: Arc<dyn BlobStore>) -> Self {
        GenerateConfig {
            blobs,
            fonts: FontLibrary::bundled(),
            fetch_limits: FetchLimits::default(),
        }
    }

    /// Allows fetching from loopback and private addresses (tests and local demos only).
    pub fn allow_private_urls(mut self, allow: bool) -> Self {
        self.fetch_limits.allow_private = allow;
        self
    }
}

/// Runs both image-ad jobs. Create one per process and share it: it owns the renderer.
pub struct GenerateAdHandler {
    renderer: Arc<Renderer>,
    fetcher: Arc<ShelfFetcher>,
    blobs: Arc<dyn BlobStore>,
    layouts: Vec<layouts::Layout>,
}

/// The deterministic blob key of an ad version; a redo overwrites it.
pub fn blob_key(ad_id: &str, version: u32) -> String {
    format!("image-ads/{ad_id}/v{version}.png")
}

impl GenerateAdHandler {
    /// A handler with `config`. Builds the renderer's font database (a few hundred ms).
    pub fn new(config: GenerateConfig) -> Self {
        let fetcher =
            Arc::new(ShelfFetcher::new(config.fetch_limits).with_own_files(config.blobs.clone()));
        let renderer = Arc::new(Renderer::new(config.fonts, fetcher.clone()));
        let layouts = layouts::library().unwrap_or_else(|e| {
            tracing::error!(error = %e, "built-in layouts do not parse; generation will fail");
            Vec::new()
        });
        GenerateAdHandler {
            renderer,
            fetcher,
            blobs: config.blobs,
            layouts,
        }
    }

    /// The built-in layouts this handler chooses from.
    pub fn layouts(&self) -> &[layouts::Layout] {
        &self.layouts
    }

    /// The renderer (to re-render a returned tree and compare).
    pub fn renderer(&self) -> &Arc<Renderer> {
        &self.renderer
    }

    /// Fetches `url` on a blocking thread, keeping the bytes for the render.
    async fn fetch(&self, what: &str, url: &str) -> Result<Arc<Vec<u8>>, JobError> {
        let fetcher = self.fetcher.clone();
        let u = url.to_owned();
        blocking(move || fetcher.fetch_and_keep(&u))
            .await?
            .map_err(|e| fetch::classify(what, url, &e))
    }

    async fn generate(
        &self,
        job: GenerateAdJob,
        progress: ProgressSink,
    ) -> Result<AdCompleted, JobError> {
        let mut fetched = vec![job.reference_ad_url.clone()];
        let result = self.generate_inner(&job, &progress, &mut fetched).await;
        self.fetcher.release(&fetched);
        result
    }

    async fn generate_inner(
        &self,
        job: &GenerateAdJob,
        progress: &ProgressSink,
        fetched: &mut Vec<String>,
    ) -> Result<AdCompleted, JobError> {
        progress
            .report("fetching_reference", "Fetching the reference ad", 10)
            .await;
        let reference = self.fetch("reference image", &job.reference_ad_url).await?;
        progress
            .report("analysing", "Analysing the reference's composition", 25)
            .await;
        let url = job.reference_ad_url.clone();
        let analysis = blocking(move || analyse::analyse(&reference))
            .await?
            .map_err(|e| {
                JobError::abort(format!("the reference image at {url} cannot be used: {e}"))
            })?;

        progress
            .report("fetching_assets", "Fetching product images and logos", 32)
            .await;
        let product_image = job.variant_image_urls.first().cloned();
        if let Some(url) = &product_image {
            fetched.push(url.clone());
            let bytes = self.fetch("product image", url).await?;
            fetch::check_image("product image", url, &bytes)?;
        }
        let mut logos = Vec::new();
        for logo in job.brand.logos.iter().take(4) {
            fetched.push(logo.url.clone());
            match self.fetch("logo", &logo.url).await {
                Ok(bytes) => logos.extend(fetch::measure_logo(logo, &bytes)),
                // A missing logo is not worth failing an ad for: the brand name is set
                // as a wordmark instead.
                Err(e) => {
                    tracing::warn!(ad_id = %job.ad_id, url = %logo.url, error = ?e, "logo skipped")
                }
            }
        }

        progress
            .report("choosing_layout", "Choosing a layout", 40)
            .await;
        let layout = layouts::choose_layout(&self.layouts, &analysis, product_image.is_some())
            .map_err(JobError::abort)?;
        tracing::info!(ad_id = %job.ad_id, layout = %layout.name, aspect = analysis.aspect.key(), "layout chosen");

        progress
            .report("writing_copy", "Writing the copy", 55)
            .await;
        let copy = copy::write_copy(&job.product, &job.audience, job.prompt.as_deref());

        progress
            .report("composing", "Composing the ad and checking contrast", 65)
            .await;
        let template = layout
            .template(analysis.aspect)
            .ok_or_else(|| JobError::abort("no layout for this aspect ratio"))?;
        let inputs = fill::FillInputs {
            ad_id: &job.ad_id,
            layout_name: &layout.name,
            brand: &job.brand,
            palette: brand::Palette::from_brand(&job.brand, &analysis),
            copy: &copy,
            product_image: product_image.as_deref(),
            logos: &logos,
        };
        let filled = fill::fill(template, &inputs).map_err(JobError::abort)?;
        let renderer = self.renderer.clone();
        let tree = blocking(move || preflight(&renderer, filled)).await??;

        progress.report("rendering", "Rendering at 4K", 75).await;
        let renderer = self.renderer.clone();
        let to_render = tree.clone();
        let (png, width, height) = blocking(move || render_png(&renderer, &to_render)).await??;

        progress.report("storing", "Storing the image", 90).await;
        let key = blob_key(&job.ad_id, job.version);
        self.store(&key, png).await?;
        Ok(AdCompleted {
            ad_id: job.ad_id.clone(),
            version: job.version,
            image_url: self.blobs.url(&key),
            width,
            height,
            json_tree: job.editable.then(|| tree.as_value().clone()),
            duration_ms: 0,
            swipe_file: None,
        })
    }

    async fn rerender(
        &self,
        job: RerenderJob,
        progress: ProgressSink,
    ) -> Result<AdCompleted, JobError> {
        let tree = Tree::from_value(job.json_tree.clone())
            .map_err(|e| JobError::abort(format!("invalid json_tree: {e}")))?;
        progress
            .report("rendering", "Rendering the edited tree at 4K", 50)
            .await;
        let renderer = self.renderer.clone();
        let (png, width, height) = blocking(move || render_png(&renderer, &tree)).await??;
        progress.report("storing", "Storing the image", 90).await;
        let key = blob_key(&job.ad_id, job.version);
        self.store(&key, png).await?;
        Ok(AdCompleted {
            ad_id: job.ad_id,
            version: job.version,
            image_url: self.blobs.url(&key),
            width,
            height,
            json_tree: Some(job.json_tree),
            duration_ms: 0,
            swipe_file: None,
        })
    }

    async fn store(&self, key: &str, png: Vec<u8>) -> Result<(), JobError> {
        self.blobs
            .put(key, Bytes::from(png))
            .await
            .map_err(|e| JobError::retry(format!("storing {key}: {e}")))
    }
}

impl JobHandler for GenerateAdHandler {
    fn handle<'a>(
        &'a self,
        job: Job,
        progress: ProgressSink,
    ) -> BoxFuture<'a, Result<AdCompleted, JobError>> {
        Box::pin(async move {
            match job {
                Job::GenerateImageAd(j) => self.generate(j, progress).await,
                Job::RenderImageAdVersion(j) => self.rerender(j, progress).await,
                // Ingest runs where the models are loaded (the API crate's swipe-file
                // handler wraps this one); a bare generation handler cannot do it.
                Job::IngestSwipeFile(_) => Err(JobError::retry(
                    "this worker has no swipe-file models loaded",
                )),
            }
        })
    }
}

/// Renders small, fixes low contrast and overflowing text, and repeats (at most 3 times)
/// until the renderer reports neither. Returns the parsed tree to render at 4K.
///
/// # Errors
/// An abort when the filled tree does not parse (a layout asset bug).
pub fn preflight(renderer: &Renderer, mut filled: fill::Filled) -> Result<Tree, JobError> {
    for _ in 0..3 {
        let tree = parse(&filled.tree)?;
        let report = render(renderer, &tree, Some(PREFLIGHT_WIDTH), false)?.report;
        let (mut low, mut overflow) = (Vec::new(), Vec::new());
        for w in &report.warnings {
            match w {
                Warning::LowContrast { node, .. } => low.push(node.clone()),
                Warning::TextOverflow { node, .. } => overflow.push(node.clone()),
                _ => {}
            }
        }
        if low.is_empty() && overflow.is_empty() {
            return Ok(tree);
        }
        fill::strengthen(&mut filled, &low);
        fill::loosen_fit(&mut filled, &overflow);
    }
    parse(&filled.tree)
}

fn parse(tree: &Value) -> Result<Tree, JobError> {
    // A filled template that does not parse is a bug in a layout asset, not in the input.
    Tree::from_value(tree.clone())
        .map_err(|e| JobError::abort(format!("internal layout error: {e}")))
}

fn render(
    renderer: &Renderer,
    tree: &Tree,
    width: Option<u32>,
    encode_png: bool,
) -> Result<Rendered, JobError> {
    renderer
        .render(tree, &RenderOptions { width, encode_png })
        .map_err(|e| JobError::abort(format!("rendering failed: {e}")))
}

/// Renders `tree` at 4K and encodes it; returns the PNG and its size.
fn render_png(renderer: &Renderer, tree: &Tree) -> Result<(Vec<u8>, u32, u32), JobError> {
    let mut out = render(renderer, tree, None, true)?;
    let (w, h) = (out.report.width, out.report.height);
    let png = out
        .png
        .take()
        .ok_or_else(|| JobError::retry("the renderer returned no PNG"))?;
    if !out.report.warnings.is_empty() {
        tracing::debug!(warnings = ?out.report.warnings, "render warnings");
    }
    renderer.recycle(out.pixmap);
    Ok((png, w, h))
}

/// Runs CPU-bound work off the async threads; a panic becomes a retryable failure.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, JobError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| JobError::retry(format!("pipeline task failed: {e}")))
}
