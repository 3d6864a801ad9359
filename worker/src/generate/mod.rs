//! The image-ad pipelines: [`GenerateAdHandler`] runs [`Job::GenerateImageAd`] (reference
//! → analysis → layout → copy → filled tree → 4K PNG in the blob store) and
//! [`Job::RenderImageAdVersion`] (an edited tree → PNG).
//!
//! Stages, each its own module and each a plain function that can be tested alone:
//!
//! 1. [`fetch`]: the reference, product image and logos, through the renderer's guarded
//!    HTTP fetcher; failures sorted into retry and abort.
//! 2. [`analyse`]: aspect, palette, subject and calm areas, text-led or image-led.
//! 3. [`crate::blueprint`]: the reference's own layout (its regions and their roles) as a
//!    template at its own aspect ratio, cached by content hash ([`cache`]). Used when it has
//!    a headline and a picture and the ad built on it keeps the [`quality`] rules; else
//!    [`layouts`]: the built-in layout library and [`layouts::choose_layout`] (the
//!    `composing` progress message says which, and why). The root of an ad built on the
//!    blueprint is named [`BLUEPRINT_LAYOUT`]; otherwise the library layout's name.
//! 4. [`copy`]: the deterministic copywriter.
//! 5. [`fill`]: brand colours, fonts, logo, images, copy and UUIDs into the template.
//! 6. A preflight render at small size: the renderer measures every text's contrast against
//!    the pixels really behind it and reports text that does not fit; [`fill::strengthen`]
//!    and [`fill::loosen_fit`] fix those before the 4K render. So every completed ad has
//!    been checked, not just designed, to have ≥ 4.5:1 text and no overflowing text. The
//!    logo is measured on the same pixels ([`quality::measure_logo`]: the render with and
//!    without it) and placed again against what is behind it when it does not read
//!    ([`fill::relogo`]).
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
//!
//! Files: this one holds the image-ad pipeline step by step; `assets` fetches the product
//! image and logos and cuts the product out, `words` writes the slots' words, `preflight`
//! checks the filled tree, `rerender` and [`design_template`] run the other jobs of the
//! pipeline. What both pipelines of a worker use (the renderer, fetcher, blob store, render
//! budget, blocking hand-off) is [`crate::services`].

pub mod analyse;
pub mod brand;
pub mod cache;
pub mod copy;
pub mod design_template;
pub mod facts;
pub mod fetch;
pub mod fill;
pub mod grounding;
pub mod ink;
pub mod layouts;
pub mod llm;
pub mod logo;
pub mod quality;
pub mod relayout;
pub mod slots;
pub mod voice;

mod assets;
mod preflight;
mod rerender;
mod words;

pub use preflight::{Checked, pixels, preflight, preflight_report};
pub use words::{blueprint_words, slot_keys, template_words};

use std::sync::Arc;

use adforge_renderer::{FetchLimits, FontLibrary, Renderer, Tree};
use futures_util::future::BoxFuture;

use crate::blob::BlobStore;
use crate::blueprint;
use crate::cutout::Cutter;
use crate::protocol::{AdCompleted, GenerateAdJob, ImageAdRendered, Job, JobResult};
use crate::runner::{JobError, JobHandler, ProgressSink};
pub use crate::services::{
    MAX_TREE_IMAGE_BYTES, MAX_TREE_IMAGES, RENDER_BUDGET, blob_key, image_failures, render_within,
};
use crate::services::{Services, ShelfFetcher, blocking, render};

/// The root `name` of an ad composed on its reference's own blueprint.
pub const BLUEPRINT_LAYOUT: &str = "reference_blueprint";

/// The root `name` of an ad composed on [`blueprint::Blueprint::generic`]: the reference's
/// own layout was not usable and no library layout has its aspect ratio.
pub const GENERIC_LAYOUT: &str = "reference_aspect";

/// How a [`GenerateAdHandler`] is set up.
pub struct GenerateConfig {
    /// Where rendered PNGs go (`image-ads/{ad_id}/v{version}.png`).
    pub blobs: Arc<dyn BlobStore>,
    /// Fonts the renderer draws with. Default: the bundled library.
    pub fonts: FontLibrary,
    /// Limits for every image fetched (reference, product images, logos).
    pub fetch_limits: FetchLimits,
    /// The GPU that draws the display list (`--backend`); `None` draws on the CPU.
    pub gpu: Option<Arc<adforge_renderer::backend::gpu::GpuContext>>,
    /// Classifies design-template references (industry, ad format) where models are
    /// loaded; `None` leaves them unclassified.
    pub classifier: Option<Arc<dyn design_template::Classifier>>,
    /// Cuts products out of their photos for cut-out slots. Default: without the model
    /// (photos on a flat ground only).
    pub cutter: Arc<Cutter>,
    /// The operator's copy model ([`llm`]), proposing the free lines; `None`: the template
    /// writer alone.
    pub copy_model: Option<Arc<dyn llm::SlotProposer>>,
    /// Reads the words of references' text blocks (their roles, the format, the words the
    /// copy follows). Default: Tesseract when it is on the PATH; `None` reads none.
    pub words: Option<Arc<dyn crate::blueprint::detect::WordReader>>,
    /// Opens the sealed third-party tokens jobs carry (Figma sync); `None`: such jobs are
    /// left to a worker that has the key.
    pub secrets: Option<Arc<crate::secrets::SecretKey>>,
}

impl GenerateConfig {
    /// Bundled fonts and default fetch limits (public addresses only).
    pub fn new(blobs: Arc<dyn BlobStore>) -> Self {
        GenerateConfig {
            blobs,
            fonts: FontLibrary::bundled(),
            fetch_limits: FetchLimits::default(),
            gpu: None,
            classifier: None,
            copy_model: None,
            words: crate::ocr::Tesseract::on_path()
                .map(|t| Arc::new(t.warm()) as Arc<dyn crate::blueprint::detect::WordReader>),
            cutter: Arc::new(Cutter::default()),
            secrets: None,
        }
    }

    /// Opens sealed tokens with `key` (the deployment's `ADFORGE_SECRETS_KEY`).
    pub fn with_secrets(mut self, key: Option<Arc<crate::secrets::SecretKey>>) -> Self {
        self.secrets = key;
        self
    }

    /// Cuts products out with `cutter` (the process's one, shared with the API).
    pub fn with_cutter(mut self, cutter: Arc<Cutter>) -> Self {
        self.cutter = cutter;
        self
    }

    /// Reads references' words with `reader` (`None`: roles and format from the layout only).
    pub fn with_word_reader(
        mut self,
        reader: Option<Arc<dyn crate::blueprint::detect::WordReader>>,
    ) -> Self {
        self.words = reader;
        self
    }

    /// Asks `model` for candidates for the free lines of each ad ([`llm`]).
    pub fn with_copy_model(mut self, model: Option<Arc<dyn llm::SlotProposer>>) -> Self {
        self.copy_model = model;
        self
    }

    /// Classifies design-template references with `classifier`.
    pub fn with_classifier(
        mut self,
        classifier: Option<Arc<dyn design_template::Classifier>>,
    ) -> Self {
        self.classifier = classifier;
        self
    }

    /// Draws with `gpu` (from [`adforge_renderer::open_gpu`]); `None` keeps the CPU.
    pub fn with_gpu(
        mut self,
        gpu: Option<Arc<adforge_renderer::backend::gpu::GpuContext>>,
    ) -> Self {
        self.gpu = gpu;
        self
    }

    /// Allows fetching from loopback and private addresses (tests and local demos only).
    pub fn allow_private_urls(mut self, allow: bool) -> Self {
        self.fetch_limits.allow_private = allow;
        self
    }
}

/// Runs both image-ad jobs. Create one per process and share it: it owns the renderer.
pub struct GenerateAdHandler {
    blueprints: Arc<cache::BlueprintCache>,
    services: Services,
    layouts: Vec<layouts::Layout>,
    classifier: Option<Arc<dyn design_template::Classifier>>,
    cutter: Arc<Cutter>,
    copy_model: Option<Arc<dyn llm::SlotProposer>>,
}

impl GenerateAdHandler {
    /// A handler with `config`. Builds the renderer's font database (a few hundred ms).
    pub fn new(config: GenerateConfig) -> Self {
        let services = Services::new(
            config.blobs,
            config.fonts,
            config.fetch_limits,
            config.gpu,
            config.secrets,
        );
        let layouts = layouts::library().unwrap_or_else(|e| {
            tracing::error!(error = %e, "built-in layouts do not parse; generation will fail");
            Vec::new()
        });
        GenerateAdHandler {
            blueprints: Arc::new(
                cache::BlueprintCache::new(cache::CAPACITY).with_reader(config.words),
            ),
            services,
            layouts,
            classifier: config.classifier,
            cutter: config.cutter,
            copy_model: config.copy_model,
        }
    }

    /// The cache of reference analyses (by content hash).
    pub fn blueprints(&self) -> &cache::BlueprintCache {
        &self.blueprints
    }

    /// The built-in layouts this handler chooses from.
    pub fn layouts(&self) -> &[layouts::Layout] {
        &self.layouts
    }

    /// The renderer (to re-render a returned tree and compare).
    pub fn renderer(&self) -> &Arc<Renderer> {
        &self.services.renderer
    }

    /// The operator's copy model, when one is set ([`llm`]).
    pub fn copy_model(&self) -> Option<&Arc<dyn llm::SlotProposer>> {
        self.copy_model.as_ref()
    }

    /// The fetcher the renderer reads images through (for [`preflight`] in tests).
    pub fn fetcher(&self) -> &Arc<ShelfFetcher> {
        &self.services.fetcher
    }

    /// The worker's shared services this handler draws, fetches and stores with.
    pub fn services(&self) -> &Services {
        &self.services
    }

    /// Fetches `url` on a blocking thread, keeping the bytes for the render.
    async fn fetch(&self, what: &str, url: &str) -> Result<Arc<Vec<u8>>, JobError> {
        self.services.fetch(what, url).await
    }

    /// Runs [`Job::GenerateImageAd`].
    ///
    /// # Errors
    /// The job's failure: `abort` for inputs no retry fixes, `retry` otherwise.
    pub async fn generate(
        &self,
        job: GenerateAdJob,
        progress: ProgressSink,
    ) -> Result<AdCompleted, JobError> {
        let mut fetched = vec![job.reference_ad_url.clone()];
        let result = self.generate_inner(&job, &progress, &mut fetched).await;
        self.services.fetcher.release(&fetched);
        result
    }

    async fn generate_inner(
        &self,
        job: &GenerateAdJob,
        progress: &ProgressSink,
        fetched: &mut Vec<String>,
    ) -> Result<AdCompleted, JobError> {
        if let Some(size) = job.size.as_ref().filter(|s| s.source_tree.is_some()) {
            return self.resize(job, size, progress, fetched).await;
        }
        if let Some(layout) = &job.template {
            return self
                .generate_from_template(job, layout, progress, fetched)
                .await;
        }
        let started = std::time::Instant::now();
        let ms = |t: std::time::Instant| t.elapsed().as_millis() as u64;
        progress
            .report("fetching_reference", "Fetching the reference ad", 10)
            .await;
        let reference = self.fetch("reference image", &job.reference_ad_url).await?;
        progress
            .report(
                "analysing",
                "Analysing the reference's composition and fetching the product images and logos",
                25,
            )
            .await;
        // The analysis (a new reference's words are read by Tesseract, a process of its own)
        // and the asset fetches overlap; a reference that cannot be used is reported first.
        let url = job.reference_ad_url.clone();
        let cache = self.blueprints.clone();
        let (analysed, assets) = tokio::join!(
            blocking(move || cache.get_or_analyse(&reference)),
            self.fetch_assets(job, fetched)
        );
        let readings = analysed?.map_err(|e| {
            JobError::abort(format!("the reference image at {url} cannot be used: {e}"))
        })?;
        let (analysis, blueprint) = (&readings.0, &readings.1);
        let (product, logos) = assets?;
        let product_image = product.as_ref().map(|(url, _)| url.clone());
        let analysed_ms = ms(started);

        progress
            .report("choosing_layout", "Choosing a layout", 40)
            .await;
        let mut why_not = blueprint.unusable().map(str::to_owned);
        let template = why_not
            .is_none()
            .then(|| blueprint::template::template(blueprint));
        let cutout = match (&template, &product) {
            (Some(t), Some((url, bytes))) if fill::wants_cutout(t) => {
                self.product_cutout(url, bytes, progress, fetched).await
            }
            _ => None,
        };
        let copy = copy::write_copy(&job.product, &job.audience, job.prompt.as_deref());
        let facts = Arc::new(facts::Facts::from_job(job));
        let palette = brand::Palette::from_brand(&job.brand, analysis);
        let inputs = fill::FillInputs {
            ad_id: job
                .size
                .as_ref()
                .and_then(|s| s.node_seed.as_deref())
                .unwrap_or(&job.ad_id),
            layout_name: BLUEPRINT_LAYOUT,
            brand: &job.brand,
            palette,
            copy: &copy,
            product_image: product_image.as_deref(),
            product_cutout: cutout.as_ref(),
            logos: &logos,
            slots: None,
            no_logo: facts.no_logo(),
        };
        let mut written: Option<slots::Written> = None;
        // The reference's own layout first; the built-in library when the analysis found
        // nothing usable or the ad built on it breaks a quality rule.
        let mut tree = None;
        if let Some(template) = template {
            progress
                .report(
                    "composing",
                    "Composing the ad on the reference's own layout and checking it",
                    55,
                )
                .await;
            let words = {
                let (renderer, facts, template) = (
                    self.services.renderer.clone(),
                    facts.clone(),
                    template.clone(),
                );
                let (job, bp, model) = (job.clone(), readings.clone(), self.copy_model.clone());
                blocking(move || {
                    blueprint_words(&job, &bp.1, &template, &facts, &renderer, model.as_deref())
                })
                .await?
            };
            let inputs = fill::FillInputs {
                slots: Some(&words.slots),
                ..inputs.clone()
            };
            let filled = fill::fill(&template, &inputs).map_err(JobError::abort)?;
            let renderer = self.services.renderer.clone();
            let fetcher = self.services.fetcher.clone();
            let checked = blocking(move || preflight_report(&renderer, &fetcher, filled)).await??;
            let grounded = grounding::check_tree(checked.tree.as_value(), &facts)
                .map(|_| ())
                .map_err(|e| format!("its words state what no input supports: {}", e.join("; ")));
            let kept = quality::check(
                &checked.tree,
                &checked.report,
                blueprint,
                checked.logo.as_ref(),
            );
            match kept.and(grounded) {
                Ok(()) => {
                    tree = Some(checked.tree);
                    written = Some(words);
                }
                Err(e) => why_not = Some(e),
            }
        }
        let tree = match tree {
            Some(t) => {
                tracing::info!(ad_id = %job.ad_id, layout = BLUEPRINT_LAYOUT, "composed on the reference's blueprint");
                t
            }
            None if (analysis.aspect.ratio()
                / (analysis.width.max(1) as f32 / analysis.height.max(1) as f32)
                - 1.0)
                .abs()
                > quality::MAX_ASPECT_ERROR =>
            {
                // No library layout has the reference's shape (a landscape): a plain
                // composition at its own aspect keeps the ad the reference's shape.
                let reason = why_not.unwrap_or_default();
                progress
                    .report(
                        "composing",
                        &format!(
                            "Composing the ad on a plain layout at the reference's aspect ratio (the reference's own layout was not used: {reason})"
                        ),
                        65,
                    )
                    .await;
                let generic = blueprint::Blueprint::generic(
                    analysis.width,
                    analysis.height,
                    blueprint.background.clone(),
                    product_image.is_some(),
                );
                let template = blueprint::template::template(&generic);
                let words = self
                    .words_for(job, template.clone(), blueprint, facts.clone())
                    .await?;
                let inputs = fill::FillInputs {
                    layout_name: GENERIC_LAYOUT,
                    slots: Some(&words.slots),
                    ..inputs.clone()
                };
                let filled = fill::fill(&template, &inputs).map_err(JobError::abort)?;
                let renderer = self.services.renderer.clone();
                let fetcher = self.services.fetcher.clone();
                let t = blocking(move || preflight(&renderer, &fetcher, filled)).await??;
                written = Some(words);
                t
            }
            None => {
                let reason = why_not.unwrap_or_default();
                let layout =
                    layouts::choose_layout(&self.layouts, analysis, product_image.is_some())
                        .map_err(JobError::abort)?;
                tracing::info!(ad_id = %job.ad_id, layout = %layout.name, aspect = analysis.aspect.key(), %reason, "library layout chosen");
                progress
                    .report(
                        "composing",
                        &format!(
                            "Composing the ad on the built-in layout {} (the reference's own layout was not used: {reason})",
                            layout.name
                        ),
                        65,
                    )
                    .await;
                let template = layout
                    .template(analysis.aspect)
                    .ok_or_else(|| JobError::abort("no layout for this aspect ratio"))?;
                let words = self
                    .words_for(job, template.clone(), blueprint, facts.clone())
                    .await?;
                let inputs = fill::FillInputs {
                    layout_name: &layout.name,
                    slots: Some(&words.slots),
                    ..inputs.clone()
                };
                let filled = fill::fill(template, &inputs).map_err(JobError::abort)?;
                let renderer = self.services.renderer.clone();
                let fetcher = self.services.fetcher.clone();
                let t = blocking(move || preflight(&renderer, &fetcher, filled)).await??;
                written = Some(words);
                t
            }
        };

        // A size of a campaign set: the checked ad laid out again for its shape.
        let tree = match &job.size {
            Some(size) => {
                let logo = relayout::LogoContext {
                    logos: logos.clone(),
                    brand: job.brand.clone(),
                    palette: inputs.palette.clone(),
                };
                self.relaid(tree, size, logo, progress).await?
            }
            None => tree,
        };
        // The grounding rule, on every ad (the template writer only writes grounded words;
        // this is the guard that keeps it so). Each fact is credited to the input its words
        // were composed from.
        let provenance = written
            .as_ref()
            .map(slots::Written::provenance)
            .unwrap_or_default();
        let stated =
            grounding::check_tree_from(tree.as_value(), &facts, &provenance).map_err(|e| {
                JobError::abort(format!(
                    "the ad's words state what no input supports: {}",
                    e.join("; ")
                ))
            })?;
        let mut copy_report = match written {
            Some(w) => w.report,
            None => crate::protocol::CopyReport {
                writer: "template".into(),
                format: blueprint.format.map(str::to_owned),
                format_from: blueprint.format_from.to_owned(),
                words_read: blueprint.words_read,
                ..Default::default()
            },
        };
        copy_report.facts = slot_keys(stated, &copy_report);

        let composed_ms = ms(started);
        progress.report("rendering", "Rendering at 4K", 75).await;
        let renderer = self.services.renderer.clone();
        let fetcher = self.services.fetcher.clone();
        let to_render = tree.clone();
        let (png, width, height, timings) =
            blocking(move || render_png_timed(&renderer, &fetcher, &to_render)).await??;
        let rendered_ms = ms(started);

        progress.report("storing", "Storing the image", 90).await;
        let key = blob_key(&job.ad_id, job.version);
        self.store(&key, png).await?;
        // Where an ad's time went, cumulative from the job's start: the reference read and
        // the assets fetched; the layout, words and check renders; the 4K render; stored.
        tracing::info!(
            ad_id = %job.ad_id,
            analysed_ms,
            composed_ms,
            rendered_ms,
            stored_ms = ms(started),
            "ad generated"
        );
        Ok(AdCompleted {
            ad_id: job.ad_id.clone(),
            version: job.version,
            duration_ms: 0,
            result: JobResult::ImageAd(ImageAdRendered {
                image_url: self.services.blobs.url(&key),
                width,
                height,
                json_tree: job.editable.then(|| tree.as_value().clone()),
                render: Some(timings),
                copy: Some(Box::new(copy_report)),
            }),
        })
    }

    /// The words of a library or generic `template`'s slots, by role ([`template_words`]),
    /// with what the reference's `blueprint` says of its format.
    async fn words_for(
        &self,
        job: &GenerateAdJob,
        template: serde_json::Value,
        blueprint: &blueprint::Blueprint,
        facts: Arc<facts::Facts>,
    ) -> Result<slots::Written, JobError> {
        let reference = slots::Reference {
            format: blueprint.format.map(str::to_owned),
            format_from: blueprint.format_from.to_owned(),
            words_read: blueprint.words_read,
        };
        let (renderer, model, job) = (
            self.services.renderer.clone(),
            self.copy_model.clone(),
            job.clone(),
        );
        blocking(move || {
            template_words(
                &job,
                &template,
                &reference,
                &facts,
                &renderer,
                model.as_deref(),
            )
        })
        .await
    }

    async fn store(&self, key: &str, png: Vec<u8>) -> Result<(), JobError> {
        self.services.store(key, png).await
    }
}

/// The pipeline's own jobs run alone (tests, examples, benchmarks). A worker process routes
/// every job kind through [`crate::node::JobRouter`], which calls the pipeline's methods
/// directly; the kinds of other pipelines are refused here with a retry, so that a worker
/// which has them takes the job.
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
                Job::AnalyzeDesignTemplate(j) => self.analyse_template(j, progress).await,
                Job::RenderDesignTemplatePreview(j) => self.preview_template(j, progress).await,
                Job::IngestSwipeFile(_) | Job::SyncFigma(_) => Err(JobError::retry(
                    "the image-ad pipeline alone does not run this job; a worker routes it through node::JobRouter",
                )),
            }
        })
    }
}

/// Renders `tree` at 4K and encodes it ([`crate::services::render_timed`]); an image it
/// could not draw fails the job ([`image_failures`]). Returns the PNG, its size, and the
/// backend and stage times for the API's metrics.
fn render_png_timed(
    renderer: &Renderer,
    fetcher: &ShelfFetcher,
    tree: &Tree,
) -> Result<(Vec<u8>, u32, u32, crate::protocol::RenderTimings), JobError> {
    let out = crate::services::render_timed(renderer, tree, None)?;
    image_failures(fetcher, &out.warnings)?;
    Ok((out.png, out.width, out.height, out.timings))
}
