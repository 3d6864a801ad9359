//! What a render node runs, wired once per process: the router of job kinds ([`JobRouter`]:
//! image ads and design templates to the generate pipeline, Figma syncs to
//! [`crate::figma`], swipe-file ingest to the models when they are loaded, with
//! design-template references classified by the same models), the GPU `--backend` chose,
//! and workers in the API's own process (`serve --workers N`). The `adforge worker` command
//! (its flags, Redis, shutdown) belongs to the binary and calls these.
//!
//! This is the one place that knows every pipeline: the pipelines share
//! [`crate::services`] and never import each other, and what one lends another (the
//! copywriter that fills a Figma frame's text slots, [`SlotCopywriter`]) is wired here.
//!
//! ```no_run
//! # fn demo(blobs: std::sync::Arc<dyn adforge_worker::blob::BlobStore>, queue: std::sync::Arc<dyn adforge_worker::JobQueue>) -> Result<(), adforge_renderer::Error> {
//! use adforge_worker::node;
//!
//! let gpu = node::open_backend(adforge_renderer::BackendChoice::Auto)?; // once per process
//! let dir = adforge_models::default_models_dir();
//! let models = adforge_models::Models::load(&dir).ok().map(std::sync::Arc::new);
//! let cutter = std::sync::Arc::new(adforge_worker::cutout::Cutter::load(&dir));
//! let handler = node::handler_with_models(blobs, false, gpu, models, &dir, cutter, None, None);
//! node::spawn_in_process(queue, handler, 2);
//! # Ok(()) }
//! ```
//!
//! Lifetimes: one [`Gpu`], one [`Cutter`] and one handler per process (the handler owns the renderer and its
//! fonts); every worker loop of the process shares them.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use adforge_models::Models;
use adforge_renderer::Renderer;
use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::blob::BlobStore;
use crate::cutout::Cutter;
use crate::figma::slots::{SlotWords, SlotWriter};
use crate::figma::sync::Parts;
use crate::generate::design_template::Classifier;
use crate::generate::{facts::Facts, llm::SlotProposer, slots::Reference};
use crate::swipe::ingest::Ingestor;
use crate::{
    AdCompleted, GenerateAdHandler, GenerateAdJob, GenerateConfig, Job, JobError, JobHandler,
    JobQueue, ProgressSink, WorkerOptions,
};

/// The process's one GPU context.
pub type Gpu = Arc<adforge_renderer::backend::gpu::GpuContext>;

/// Opens the GPU that `--backend` asks for, once per process, and logs the choice.
///
/// # Errors
/// `BackendChoice::Gpu` with no usable Vulkan adapter.
pub fn open_backend(
    choice: adforge_renderer::BackendChoice,
) -> Result<Option<Gpu>, adforge_renderer::Error> {
    let gpu = adforge_renderer::open_gpu(choice)?;
    match &gpu {
        Some(g) => tracing::info!(adapter = %g.adapter(), "ads are drawn on the GPU"),
        None => tracing::info!(?choice, "ads are drawn on the CPU"),
    }
    Ok(gpu)
}

/// Loads the swipe-file models from `dir` through the models crate, once per process;
/// `None` (logged, never fatal) when they are not installed: this node then leaves
/// swipe-file ingest to nodes that have them.
pub fn load_models(dir: &Path) -> Option<Arc<Models>> {
    match Models::load(dir) {
        Ok(m) => {
            tracing::info!(models_dir = %dir.display(), image = m.image.model_id(), text = m.text.model_id(), "swipe-file models loaded");
            Some(Arc::new(m))
        }
        Err(e) => {
            tracing::warn!(models_dir = %dir.display(), error = %e, "swipe-file models not loaded; swipe-file ingest is left to workers that have them until scripts/fetch-models has run here");
            None
        }
    }
}

/// The router of a render node's jobs ([`JobRouter`]): the ad generation pipeline, Figma
/// sync, and swipe-file ingest (when `models` are loaded; `models_dir` is read for the
/// ImageNet label order), cutting products out with `cutter`
/// (the process's one: [`Cutter::load`]), with `copy_model` (the operator's model
/// writer, when set) proposing candidate lines, and opening sealed tokens (Figma sync)
/// with `secrets`.
#[expect(
    clippy::too_many_arguments,
    reason = "each is one process-wide service chosen at start-up; a struct would only rename them"
)]
pub fn handler_with_models(
    blobs: Arc<dyn BlobStore>,
    allow_private_urls: bool,
    gpu: Option<Gpu>,
    models: Option<Arc<Models>>,
    models_dir: &Path,
    cutter: Arc<Cutter>,
    copy_model: Option<Arc<dyn crate::generate::llm::SlotProposer>>,
    secrets: Option<Arc<crate::secrets::SecretKey>>,
) -> Arc<dyn JobHandler> {
    let ingest = models.map(|m| {
        Arc::new(Ingestor::new(m, blobs.clone(), models_dir).allow_private_urls(allow_private_urls))
    });
    let classifier = ingest
        .clone()
        .map(|i| Arc::new(TemplateClassifier(i)) as Arc<dyn Classifier>);
    let generate = Arc::new(GenerateAdHandler::new(
        GenerateConfig::new(blobs)
            .allow_private_urls(allow_private_urls)
            .with_gpu(gpu)
            .with_classifier(classifier)
            .with_cutter(cutter)
            .with_copy_model(copy_model)
            .with_secrets(secrets),
    ));
    Arc::new(JobRouter::new(generate, ingest))
}

/// The router of job kinds: each [`Job`] to the pipeline that runs it. One per process,
/// shared by every worker loop.
pub struct JobRouter {
    generate: Arc<GenerateAdHandler>,
    figma: Parts,
    ingest: Option<Arc<Ingestor>>,
}

impl JobRouter {
    /// Routes image ads and design templates to `generate`, Figma syncs to
    /// [`crate::figma::sync`] on `generate`'s services, and swipe-file ingest to `ingest`
    /// (`None`: no models loaded here; the job is left to a worker that has them).
    pub fn new(generate: Arc<GenerateAdHandler>, ingest: Option<Arc<Ingestor>>) -> Self {
        JobRouter {
            figma: figma_parts(&generate),
            generate,
            ingest,
        }
    }
}

impl JobHandler for JobRouter {
    fn handle<'a>(
        &'a self,
        job: Job,
        progress: ProgressSink,
    ) -> BoxFuture<'a, Result<AdCompleted, JobError>> {
        Box::pin(async move {
            match job {
                Job::GenerateImageAd(j) => self.generate.generate(j, progress).await,
                Job::RenderImageAdVersion(j) => self.generate.rerender(j, progress).await,
                Job::AnalyzeDesignTemplate(j) => self.generate.analyse_template(j, progress).await,
                Job::RenderDesignTemplatePreview(j) => {
                    self.generate.preview_template(j, progress).await
                }
                Job::SyncFigma(j) => crate::figma::sync::run(&self.figma, j, progress).await,
                Job::IngestSwipeFile(j) => match &self.ingest {
                    Some(ingest) => ingest.run(j, progress).await,
                    // Another worker with models may take it; after the attempts the design
                    // fails with this message.
                    None => Err(JobError::retry(
                        "no worker with the swipe-file models took this design; run scripts/fetch-models on the workers",
                    )),
                },
            }
        })
    }
}

/// What a Figma sync runs with beside `generate`: its services, and the copywriter of its
/// ads for the frame's text slots.
pub fn figma_parts(generate: &GenerateAdHandler) -> Parts {
    Parts {
        services: generate.services().clone(),
        words: Arc::new(SlotCopywriter {
            renderer: generate.renderer().clone(),
            model: generate.copy_model().cloned(),
        }),
    }
}

/// The copywriter of generated ads ([`crate::generate::template_words`]) writing a Figma
/// frame's text slots: the same roles, facts and grounding rule, measured with the
/// process's renderer, with no reference to follow.
pub struct SlotCopywriter {
    renderer: Arc<Renderer>,
    model: Option<Arc<dyn SlotProposer>>,
}

impl SlotWriter for SlotCopywriter {
    fn write(&self, inputs: &GenerateAdJob, template: &Value) -> BTreeMap<String, SlotWords> {
        let facts = Facts::from_job(inputs);
        let written = crate::generate::template_words(
            inputs,
            template,
            &Reference::default(),
            &facts,
            &self.renderer,
            self.model.as_deref(),
        );
        written
            .slots
            .into_iter()
            .map(|(node, t)| {
                let words = SlotWords {
                    text: t.text,
                    shown: t.shown,
                };
                (node, words)
            })
            .collect()
    }
}

/// Design-template references classified as swipe files are: the same models, OCR and
/// taxonomy ([`Ingestor::measure`]), so a template's `industry` and `ad_format` take the
/// swipe file's values.
struct TemplateClassifier(Arc<Ingestor>);

impl Classifier for TemplateClassifier {
    fn classify(&self, bytes: &[u8]) -> (Option<String>, Option<String>) {
        match self.0.measure(bytes) {
            Ok((m, _)) => (m.industry, m.ad_format),
            Err(e) => {
                tracing::warn!(error = %e, "a design template's reference could not be classified");
                (None, None)
            }
        }
    }
}

/// Starts `n` in-process workers sharing one handler, plus one slot kept for interactive
/// work (image ads, templates, cut-outs: everything but swipe-file ingest), so a fresh
/// server's first ads start at once rather than after the ingest of the default collection
/// that the `n` workers are running (issue 26: ads waited 1–2 s there). They stop with the
/// process.
pub fn spawn_in_process(queue: Arc<dyn JobQueue>, handler: Arc<dyn JobHandler>, n: usize) {
    if n == 0 {
        return;
    }
    let mut options = WorkerOptions::new(crate::default_consumer_name());
    options.concurrency = n;
    let mut interactive = WorkerOptions::new(format!("{}-interactive", options.consumer));
    interactive.interactive_only = true;
    tokio::spawn(crate::run_worker(
        queue.clone(),
        handler.clone(),
        options,
        std::future::pending(),
    ));
    tokio::spawn(crate::run_worker(
        queue,
        handler,
        interactive,
        std::future::pending(),
    ));
}
