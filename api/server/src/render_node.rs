//! The `adforge worker` command and the queue flags it shares with `serve`: a render node
//! on Redis, running the handler that [`adforge_worker::node`] wires (ad generation and
//! swipe-file ingest) and writing PNGs to the blob store the API serves.

use std::path::PathBuf;
use std::sync::Arc;

use adforge_worker::node;
use adforge_worker::{QueueConfig, RedisQueue, WorkerOptions};
use clap::Args;

use adforge_api::Error;
use adforge_api::blob::BlobStore;

/// Queue tuning shared by `serve` and `worker` (all processes of a deployment should agree).
#[derive(Args, Clone, Debug)]
pub struct QueueArgs {
    /// A job (or event) not kept alive by heartbeats (or acknowledged) for this long is taken
    /// over by another process: how soon a dead worker's job is redone.
    #[arg(long, env = "ADFORGE_VISIBILITY_TIMEOUT_MS", default_value_t = 30_000)]
    pub visibility_timeout_ms: u64,
    /// Attempts per job, retries and take-overs included, before the ad fails with
    /// PIPELINE_ERROR.
    #[arg(long, env = "ADFORGE_MAX_ATTEMPTS", default_value_t = 3)]
    pub max_attempts: u32,
}

impl QueueArgs {
    pub fn config(&self) -> QueueConfig {
        QueueConfig {
            visibility_timeout: std::time::Duration::from_millis(
                self.visibility_timeout_ms.max(100),
            ),
            max_attempts: self.max_attempts.max(1),
            ..QueueConfig::default()
        }
    }
}

impl Default for QueueArgs {
    fn default() -> Self {
        Self {
            visibility_timeout_ms: 30_000,
            max_attempts: 3,
        }
    }
}

/// `adforge worker` flags.
#[derive(Args, Clone, Debug)]
pub struct WorkerArgs {
    /// The Redis the API nodes enqueue into.
    #[arg(long, env = "ADFORGE_REDIS_URL")]
    pub redis_url: String,
    /// Folder whose `blobs/` this worker writes rendered ads into: the API's data dir, or
    /// a shared mount of it (see the README on multi-machine deployments). Unused with
    /// `--blob-url s3://…`.
    #[arg(long, env = "ADFORGE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// The API's public URL, which the image URLs this worker reports start with.
    #[arg(
        long,
        env = "ADFORGE_PUBLIC_URL",
        default_value = "http://127.0.0.1:8080"
    )]
    pub public_url: String,
    /// Jobs rendered at once.
    #[arg(long, env = "ADFORGE_CONCURRENCY", default_value_t = 1)]
    pub concurrency: usize,
    /// Allow image URLs on loopback and private addresses (tests, local demos).
    #[arg(long, env = "ADFORGE_ALLOW_PRIVATE_URLS", default_value_t = false)]
    pub allow_private_urls: bool,
    #[command(flatten)]
    pub render: crate::flags::RenderBackend,
    /// Log filter.
    #[arg(long, env = "ADFORGE_LOG", default_value = "info")]
    pub log: String,
    #[command(flatten)]
    pub queue: QueueArgs,
    #[command(flatten)]
    pub blob: crate::flags::BlobArgs,
    #[command(flatten)]
    pub copy_model: crate::flags::CopyModelArgs,
    /// The models folder for swipe-file ingest (default `$ADFORGE_MODELS_DIR`, else
    /// `~/.cache/adforge/models`). Without it this worker renders ads only and leaves
    /// swipe files to workers that have models.
    #[arg(long, env = "ADFORGE_MODELS_DIR")]
    pub models_dir: Option<PathBuf>,
}

/// Opens the GPU that `--backend` asks for ([`node::open_backend`]), with the flag's name
/// in the error.
///
/// # Errors
/// `--backend gpu` with no usable Vulkan adapter.
pub fn open_backend(choice: adforge_renderer::BackendChoice) -> Result<Option<node::Gpu>, Error> {
    node::open_backend(choice).map_err(|e| Error::Invalid(format!("--backend gpu: {e}")))
}

/// `adforge worker`: a stateless render node. It never opens the SQL database; on SIGTERM it
/// stops claiming and finishes the jobs in flight.
///
/// # Errors
/// Redis unreachable at start, an unusable data dir.
pub async fn run(args: WorkerArgs) -> Result<(), Error> {
    // Installed first: a SIGTERM during start-up (the models loading) is kept, and the
    // worker stops cleanly as soon as it runs, instead of being killed by the signal.
    let shutdown = crate::app::shutdown_signal();
    let queue = RedisQueue::connect(&args.redis_url, args.queue.config())
        .await
        .map_err(|e| Error::Invalid(format!("cannot use --redis-url {}: {e}", args.redis_url)))?;
    let blobs: Arc<dyn BlobStore> = args.blob.open(&args.data_dir, &args.public_url)?;
    let models_dir = adforge_api::swipe::models_dir(args.models_dir.as_ref());
    let models = node::load_models(&models_dir);
    let gpu = open_backend(args.render.backend)?;
    let cutter = Arc::new(adforge_worker::cutout::Cutter::load(&models_dir));
    // Figma sync jobs carry the organisation's token sealed with the API's key; this
    // worker opens them only with the same ADFORGE_SECRETS_KEY (read from the environment,
    // never a flag, so it stays out of process lists).
    let secrets = adforge_worker::secrets::SecretKey::from_env()
        .map_err(|e| Error::Invalid(format!("ADFORGE_SECRETS_KEY: {e}")))?
        .map(Arc::new);
    let handler = node::handler_with_models(
        blobs,
        args.allow_private_urls,
        gpu,
        models,
        &models_dir,
        cutter,
        args.copy_model.open()?,
        secrets,
    );
    let mut options = WorkerOptions::new(adforge_worker::default_consumer_name());
    options.concurrency = args.concurrency.max(1);
    tracing::info!(consumer = %options.consumer, concurrency = options.concurrency, "render worker started");
    adforge_worker::run_worker(Arc::new(queue), handler, options, shutdown).await;
    tracing::info!("render worker stopped");
    Ok(())
}
