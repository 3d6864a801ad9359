//! adforge's job protocol, job queues and worker loop: how an ad's work travels from the API
//! to whichever process renders it, how progress and results travel back, and the work
//! itself (ad generation, swipe-file ingest, image decoding).
//!
//! - [`protocol`]: the versioned wire types, [`Job`] (API → worker) and [`Event`]
//!   (worker → API). A job carries everything a worker needs, so workers never open SQL.
//! - [`queue`]: the [`JobQueue`] trait and its two backends with the same behaviour:
//!   [`RedisQueue`] (Redis Streams with consumer groups, for many nodes) and [`MemoryQueue`]
//!   (tokio primitives, the embedded default). Delivery is at least once: a claim that is
//!   neither acknowledged nor kept alive by heartbeats is reclaimed after a visibility
//!   timeout; failed attempts are retried with backoff and, after `max_attempts`, the ad
//!   fails with `PIPELINE_ERROR`.
//! - [`runner`]: [`run_worker`], the loop a render node (or the API's in-process workers)
//!   runs: claim, run the [`JobHandler`] in its own task, heartbeat, ack / retry / fail, and
//!   stop claiming on shutdown while in-flight jobs finish.
//! - [`node`]: what a render node runs, wired once per process: the router of job kinds
//!   ([`node::JobRouter`], each job to its pipeline), the GPU choice, in-process workers
//!   beside the API.
//! - [`services`]: what every pipeline uses (renderer, fetcher, blob store, secrets, the
//!   render budget and timings, blocking hand-off), so pipelines never import each other.
//! - [`generate`] and [`blueprint`]: ad generation from a reference and a brand.
//! - [`cutout`]: products cut out of their photos (colour key or U²-Net-P), kept by content
//!   hash in the blob store.
//! - [`swipe`]: swipe-file ingest (measure, embed, classify, caption) and its taxonomy.
//! - [`figma`]: design-tool sync: a Figma frame read through Figma's REST API and imported
//!   into a tree (node kinds, text, auto layout, paints, effects; images and SVG exports
//!   stored as our own files), with a report of what could not be mapped.
//! - [`secrets`]: third-party tokens sealed at rest (AES-256-GCM under
//!   `ADFORGE_SECRETS_KEY`), opened only by the worker that calls the third party.
//! - [`imaging`]: the one way client image bytes are decoded, under a process-wide memory
//!   budget (used by the API's uploads too).
//! - [`blob`] and [`s3`]: the blob store (a local folder or an S3-compatible bucket).
//!
//! ```no_run
//! # async fn demo(handler: std::sync::Arc<dyn adforge_worker::JobHandler>) -> Result<(), adforge_worker::Error> {
//! use std::sync::Arc;
//! use adforge_worker::{JobQueue, QueueConfig, RedisQueue, WorkerOptions, run_worker};
//!
//! // One queue per process, shared as `Arc<dyn JobQueue>` by the API and its workers.
//! let queue: Arc<dyn JobQueue> =
//!     Arc::new(RedisQueue::connect("redis://127.0.0.1/", QueueConfig::default()).await?);
//! let shutdown = async { let _ = tokio::signal::ctrl_c().await; };
//! run_worker(queue, handler, WorkerOptions::new("render-node-1"), shutdown).await;
//! # Ok(()) }
//! ```
//!
//! Lifetimes: create one queue per process at start-up and clone the `Arc`; a
//! [`RedisQueue`] holds reconnecting connections, so it outlives Redis restarts.

pub mod blob;
pub mod blueprint;
pub mod cutout;
pub mod figma;
pub mod generate;
pub mod imaging;
pub mod node;
pub mod ocr;
pub mod protocol;
pub mod s3;
pub mod secrets;
pub mod services;
pub mod swipe;
/// The `redis` crate this one is built on, so that other Redis users of the process (the
/// API's shared rate limiter) use the same version and can share
/// [`RedisQueue::connection_manager`].
pub use redis;
pub mod queue;
pub mod runner;

pub use generate::{GenerateAdHandler, GenerateConfig};
pub use protocol::{
    AdBrief, AdCompleted, AdFailed, AdProgress, DesignTemplateAnalysed, DesignTemplateJob, Event,
    FigmaSyncResult, GenerateAdJob, ImageAdRendered, IngestHints, IngestSwipeFileJob, Job,
    JobEnvelope, JobResult, RenderTimings, RerenderJob, SubjectKind, SwipeFileIngested, TargetSize,
    TemplateLayout,
};
pub use queue::{
    Claimed, DeliveredEvent, EnqueueOutcome, JobQueue, MemoryQueue, QueueConfig, QueueStats,
    RedisQueue, RetryOutcome,
};
pub use runner::{
    JobError, JobHandler, ProgressSink, WorkerOptions, default_consumer_name, run_worker,
};

/// The error code of an ad whose pipeline failed for good (retries exhausted, a handler that
/// kept panicking, a worker that kept dying mid-job).
pub const PIPELINE_ERROR: &str = "PIPELINE_ERROR";

/// Why a queue operation failed. Handler outcomes are [`JobError`], not this.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Redis could not be reached or refused a command. Transient while Redis restarts: the
    /// connection reconnects by itself, so retry the operation after a short pause.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// A job or event on the wire is not valid JSON of the shape this build knows (for
    /// example a variant added by a newer release). Upgrade the reading side first, as the
    /// compatibility rule in [`protocol`] says.
    #[error("cannot decode {what}: {source}")]
    Decode {
        /// `"job"` or `"event"`.
        what: &'static str,
        /// The JSON error, naming the field.
        source: serde_json::Error,
    },
    /// A job or event was written by a newer protocol version than this build reads.
    /// Upgrade this process.
    #[error("{what} has protocol version {found}, this build reads up to {supported}")]
    UnsupportedVersion {
        /// `"job"` or `"event"`.
        what: &'static str,
        /// The `v` on the wire.
        found: u32,
        /// [`protocol::PROTOCOL_VERSION`].
        supported: u32,
    },
    /// Redis answered with a reply of an unexpected shape; a bug or an incompatible server
    /// (Redis ≥ 7.0 is required for `XAUTOCLAIM`'s reply format).
    #[error("unexpected redis reply to {command}: {detail}")]
    UnexpectedReply {
        /// The command or script that answered.
        command: &'static str,
        /// What was wrong with the reply.
        detail: String,
    },
    /// A claim receipt from one backend was handed to another (a `Claimed` from a
    /// `MemoryQueue` given to a `RedisQueue`). Hand each claim back to the queue it came
    /// from.
    #[error("the claim was not made by this queue")]
    ForeignClaim,
    /// A blob key with characters or segments keys never have (`..`, empty segments).
    #[error("invalid blob key `{0}`")]
    InvalidBlobKey(String),
    /// The blob store's medium failed (disk full, permissions, a file where a folder must be).
    #[error("blob storage failed: {0}")]
    Blob(std::io::Error),
}
