//! The job queue: a small object-safe trait, [`JobQueue`], chosen once at start-up and held
//! as `Arc<dyn JobQueue>`, with two backends that behave the same:
//!
//! - [`RedisQueue`]: Redis Streams with consumer groups, for API nodes and render nodes on
//!   many machines.
//! - [`MemoryQueue`]: tokio primitives in one process, the embedded default. Jobs do not
//!   survive the process; the API re-enqueues the ads it finds `processing` at start-up,
//!   which [`JobQueue::enqueue`]'s per-job-id deduplication makes safe in both backends.
//!
//! # Semantics (both backends)
//! - **Enqueue** is idempotent per [`crate::Job::job_id`] while the job is live (queued,
//!   claimed or waiting for a retry): a second enqueue answers
//!   [`EnqueueOutcome::AlreadyLive`] and adds nothing.
//! - **Claim** delivers each job to one consumer at a time, at least once. A claim that is
//!   neither finished nor kept alive by [`JobQueue::heartbeat`] within
//!   [`QueueConfig::visibility_timeout`] is reclaimed by the next consumer, as the next
//!   attempt. A claim whose attempt would exceed [`QueueConfig::max_attempts`] is not
//!   delivered: the ad fails with [`crate::PIPELINE_ERROR`] instead.
//! - **Finish** a claim with exactly one of [`complete`](JobQueue::complete) (publish
//!   `Completed` and drop the job atomically), [`retry`](JobQueue::retry) (back after a
//!   backoff as attempt + 1, or `PIPELINE_ERROR` when attempts are spent),
//!   [`fail`](JobQueue::fail) (publish `Failed` and drop the job), [`ack`](JobQueue::ack)
//!   (drop the job silently) or [`release`](JobQueue::release) (give it back unstarted).
//! - **Events**: terminal events (`Completed`, `Failed`) are delivered at least once to the
//!   API consumer group: an event read but not [`ack_event`](JobQueue::ack_event)ed within the
//!   visibility timeout is delivered again, to any API node. `Progress` events only update
//!   [`latest_progress`](JobQueue::latest_progress), which expires after
//!   [`QueueConfig::progress_ttl`].
//!
//! - **Priority**: background jobs ([`is_background`]: swipe-file ingest) wait while any
//!   other job is queued and undelivered, so an image ad submitted behind a batch of
//!   ingests (the 45 designs of the default collection at the first start) is taken next.
//!   A background job enters the main queue only when everything in it was handed out
//!   (Redis: a list `P:jobs:low` that claimers feed into the stream, so an idle worker
//!   starts one within a poll interval); a retried or released job comes back in the main
//!   queue. Jobs already claimed are not interrupted. A worker may keep a slot for
//!   interactive work ([`JobQueue::claim_interactive`]): the in-process workers beside the
//!   API do, so the first ads of a fresh server do not wait for the default collection's
//!   ingest.
//!
//! Rejected alternative: the `async-trait` crate. Boxed futures written by hand cost the
//! same allocation, keep the trait object-safe, and keep the dependency out (the API crate's
//! `BlobStore` does the same).

use std::time::Duration;

use futures_util::future::BoxFuture;

use crate::Error;
use crate::protocol::{AdCompleted, AdProgress, Event, Job};

mod memory;
mod redis_compat;
mod redis_conn;
mod redis_queue;
mod redis_scripts;

pub use self::memory::MemoryQueue;
pub use self::redis_compat::PreviousProtocol;
pub use self::redis_conn::jobs_stream;
pub use self::redis_queue::RedisQueue;

/// Whether `job` is background work that yields to every other queued job.
pub fn is_background(job: &Job) -> bool {
    matches!(job, Job::IngestSwipeFile(_))
}

/// Settings shared by both backends. Tests shorten the timeouts; production keeps the
/// defaults.
#[derive(Debug, Clone)]
pub struct QueueConfig {
    /// How long a claim (or a read event) may go without a heartbeat (or an ack) before
    /// another consumer takes it over. Default 30 s. Workers heartbeat every third of it.
    pub visibility_timeout: Duration,
    /// Attempts per job, counting retries and reclaims after a worker died. Default 3.
    pub max_attempts: u32,
    /// How long the latest progress of an ad stays readable. Default 10 minutes.
    pub progress_ttl: Duration,
    /// The longest a single blocking wait lasts inside `claim` and `read_events`, which
    /// bounds how late a due retry or an expired claim is noticed. Default 1 s.
    pub poll_interval: Duration,
    /// Prefix of every Redis key, so several deployments can share one Redis. Default
    /// `"adforge"`. Ignored by [`MemoryQueue`].
    pub key_prefix: String,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            visibility_timeout: Duration::from_secs(30),
            max_attempts: 3,
            progress_ttl: Duration::from_secs(600),
            poll_interval: Duration::from_secs(1),
            key_prefix: "adforge".to_owned(),
        }
    }
}

/// A job delivered to one consumer, to be finished with one of the queue's finishing calls.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// The stable job id ([`Job::job_id`]).
    pub job_id: String,
    /// This delivery's attempt, 1-based.
    pub attempt: u32,
    /// The work.
    pub job: Job,
    /// The consumer that holds the claim.
    pub consumer: String,
    pub(crate) receipt: Receipt,
}

/// Where a claimed job sits in its backend.
#[derive(Debug, Clone)]
pub(crate) enum Receipt {
    /// A Redis stream entry id.
    Stream(String),
    /// A [`MemoryQueue`] entry id.
    Memory(u64),
}

/// A terminal event read by an API node, to be acknowledged once applied.
#[derive(Debug, Clone)]
pub struct DeliveredEvent {
    /// The event.
    pub event: Event,
    /// How many times it has been delivered (1 on the first read).
    pub deliveries: u32,
    pub(crate) receipt: Receipt,
}

/// What [`JobQueue::enqueue`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnqueueOutcome {
    /// The job was queued under this id.
    Queued(String),
    /// A job with this id is already queued, claimed or waiting for a retry; nothing added.
    AlreadyLive(String),
}

/// What [`JobQueue::retry`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryOutcome {
    /// The job comes back after the backoff as this attempt.
    Scheduled {
        /// The attempt number of the next delivery.
        next_attempt: u32,
    },
    /// The attempts are spent: a `Failed { code: PIPELINE_ERROR }` event was published and
    /// the job dropped.
    GaveUp,
}

/// What a queue holds at one moment, for the operator's metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueStats {
    /// Jobs queued or being worked on (not yet completed, failed or waiting for a retry).
    pub jobs: u64,
    /// Jobs waiting out a retry backoff.
    pub delayed: u64,
    /// How long the oldest of `jobs` has been in the queue, where the backend can tell.
    pub oldest_job_age: Option<Duration>,
}

/// A queue of jobs plus the channel of events back. See the module docs for the semantics
/// both backends share.
pub trait JobQueue: Send + Sync {
    /// This queue's settings.
    fn config(&self) -> &QueueConfig;

    /// Queues `job` for its first attempt, unless a job with the same id is live.
    ///
    /// # Errors
    /// [`Error::Redis`] when Redis is unreachable; nothing was queued then, and calling again
    /// is safe.
    fn enqueue(&self, job: Job) -> BoxFuture<'_, Result<EnqueueOutcome, Error>>;

    /// Waits up to `max_wait` for a job and claims it for `consumer` (a name unique per
    /// worker process). Due retries and expired claims are taken first.
    ///
    /// # Errors
    /// [`Error::Redis`] when Redis is unreachable.
    fn claim<'a>(
        &'a self,
        consumer: &'a str,
        max_wait: Duration,
    ) -> BoxFuture<'a, Result<Option<Claimed>, Error>>;

    /// [`claim`](JobQueue::claim) for a slot reserved for interactive work: never starts a
    /// background job ([`is_background`]) that is still waiting, so an image ad submitted
    /// while every other slot runs a swipe-file ingest starts at once. On Redis this claimer
    /// does not move background jobs into the stream; one another claimer already moved
    /// there may still come to it (the in-process queue keeps the lanes apart exactly).
    ///
    /// # Errors
    /// [`Error::Redis`] when Redis is unreachable.
    fn claim_interactive<'a>(
        &'a self,
        consumer: &'a str,
        max_wait: Duration,
    ) -> BoxFuture<'a, Result<Option<Claimed>, Error>>;

    /// Keeps a live claim from being reclaimed. `Ok(false)` means the claim was lost (the
    /// job was reclaimed by another consumer or finished); the work may go on, since results
    /// are idempotent, but the job is no longer ours.
    fn heartbeat<'a>(&'a self, claimed: &'a Claimed) -> BoxFuture<'a, Result<bool, Error>>;

    /// Publishes `Completed` and drops the job, atomically.
    fn complete<'a>(
        &'a self,
        claimed: &'a Claimed,
        completed: AdCompleted,
    ) -> BoxFuture<'a, Result<(), Error>>;

    /// Drops the job without an event.
    fn ack<'a>(&'a self, claimed: &'a Claimed) -> BoxFuture<'a, Result<(), Error>>;

    /// Gives the job back unstarted: the next claim gets it as the same attempt.
    fn release<'a>(&'a self, claimed: &'a Claimed) -> BoxFuture<'a, Result<(), Error>>;

    /// Schedules the next attempt after `backoff`, or, when this was the last attempt,
    /// publishes `Failed { code: PIPELINE_ERROR, message: reason }` and drops the job.
    fn retry<'a>(
        &'a self,
        claimed: &'a Claimed,
        backoff: Duration,
        reason: &'a str,
    ) -> BoxFuture<'a, Result<RetryOutcome, Error>>;

    /// Publishes `Failed { code, message }` and drops the job, atomically.
    fn fail<'a>(
        &'a self,
        claimed: &'a Claimed,
        code: &'a str,
        message: &'a str,
    ) -> BoxFuture<'a, Result<(), Error>>;

    /// Publishes an event: `Progress` updates the latest progress of its ad; `Completed` and
    /// `Failed` go to the API consumer group. Workers finishing a claim use
    /// [`complete`](JobQueue::complete) / [`fail`](JobQueue::fail) instead, which also drop
    /// the job.
    fn publish(&self, event: Event) -> BoxFuture<'_, Result<(), Error>>;

    /// Waits up to `max_wait` for terminal events and reads up to `max` of them for the API
    /// node `consumer`; events another API node read but did not acknowledge within the
    /// visibility timeout come first.
    fn read_events<'a>(
        &'a self,
        consumer: &'a str,
        max: usize,
        max_wait: Duration,
    ) -> BoxFuture<'a, Result<Vec<DeliveredEvent>, Error>>;

    /// Acknowledges an applied event so that it is not delivered again.
    fn ack_event<'a>(&'a self, delivered: &'a DeliveredEvent) -> BoxFuture<'a, Result<(), Error>>;

    /// Forgets a consumer that is going away for good (a worker or API node shutting down),
    /// so consumer lists do not grow with every deploy. A consumer that still holds claims or
    /// unacknowledged events is kept, so that they can be reclaimed.
    fn retire<'a>(&'a self, consumer: &'a str) -> BoxFuture<'a, Result<(), Error>>;

    /// The newest progress of an ad, unless it expired.
    fn latest_progress<'a>(
        &'a self,
        ad_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<AdProgress>, Error>>;

    /// Whether the backend answers (`PING` for Redis); the in-process queue always does.
    ///
    /// # Errors
    /// [`Error::Redis`] when Redis is unreachable.
    fn ping(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async { Ok(()) })
    }

    /// How many jobs the queue holds and how old the oldest is (metrics).
    ///
    /// # Errors
    /// [`Error::Redis`] when Redis is unreachable.
    fn stats(&self) -> BoxFuture<'_, Result<QueueStats, Error>>;
}

/// The `Failed` event of an ad whose attempts ran out.
pub(crate) fn gave_up(job: &JobIdentity<'_>, reason: &str) -> Event {
    Event::Failed(crate::protocol::AdFailed {
        subject: job.subject,
        ad_id: job.ad_id.to_owned(),
        version: job.version,
        code: crate::PIPELINE_ERROR.to_owned(),
        message: reason.to_owned(),
    })
}

/// The parts of a job a failure event needs, available even when the job body cannot be
/// decoded.
pub(crate) struct JobIdentity<'a> {
    pub subject: crate::protocol::SubjectKind,
    pub ad_id: &'a str,
    pub version: u32,
}

/// The message of a job whose claim kept expiring.
pub(crate) fn reclaim_exhausted_message(max_attempts: u32) -> String {
    format!(
        "the ad could not be generated: {max_attempts} attempts ended without a result \
         (the worker stopped responding)"
    )
}
