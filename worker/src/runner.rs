//! The worker loop: [`run_worker`] claims up to `concurrency` jobs from a [`JobQueue`] and
//! runs each through a [`JobHandler`] in its own tokio task, keeping the claim alive with
//! heartbeats and finishing it by the handler's verdict.
//!
//! - `Ok(completed)` → [`JobQueue::complete`] (publishes `Completed`, drops the job).
//! - [`JobError::Retry`] (transient: network, busy) → [`JobQueue::retry`] with exponential
//!   backoff; after the last attempt the ad fails with `PIPELINE_ERROR`.
//! - [`JobError::Abort`] (bad input that no retry fixes) → [`JobQueue::fail`] at once.
//! - A panic in the handler is a failed attempt, like `Retry`; the loop goes on.
//!
//! On shutdown the loop stops claiming (a claim that was in flight is given back unstarted
//! with [`JobQueue::release`]), waits for the in-flight jobs, retires its consumer name
//! ([`JobQueue::retire`]) and returns.
//!
//! Rejected alternative: running handlers inline in the loop with `FuturesUnordered`. A
//! panic would unwind through the loop and drop every other job's claim; a task per job
//! contains it (pict-rs runs jobs the same way).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::protocol::{AdCompleted, AdProgress, Event, Job};
use crate::queue::{Claimed, JobQueue, RetryOutcome};

/// A handler's verdict on a failed attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobError {
    /// A transient failure (a fetch timed out, a service was busy): try again after a
    /// backoff, as the next attempt.
    Retry {
        /// What went wrong; becomes the `Failed` message if no attempts remain.
        message: String,
    },
    /// The job can never succeed (an input image that does not decode): fail the ad now.
    Abort {
        /// Spec error code for the ad, usually [`crate::PIPELINE_ERROR`].
        code: String,
        /// What went wrong, for the client.
        message: String,
    },
}

impl JobError {
    /// A transient failure.
    pub fn retry(message: impl Into<String>) -> Self {
        JobError::Retry {
            message: message.into(),
        }
    }

    /// A permanent failure with `PIPELINE_ERROR`.
    pub fn abort(message: impl Into<String>) -> Self {
        JobError::Abort {
            code: crate::PIPELINE_ERROR.to_owned(),
            message: message.into(),
        }
    }
}

/// Runs jobs. One handler per process, shared by every job task.
pub trait JobHandler: Send + Sync + 'static {
    /// Runs one attempt of `job`, reporting steps through `progress`, and returns the
    /// result. `AdCompleted::duration_ms` is filled in by the runner. The work must be
    /// idempotent per `(ad_id, version)`: an attempt may be redone after a worker died.
    fn handle<'a>(
        &'a self,
        job: Job,
        progress: ProgressSink,
    ) -> BoxFuture<'a, Result<AdCompleted, JobError>>;
}

/// Publishes progress of one job attempt. Cheap to clone.
#[derive(Clone)]
pub struct ProgressSink {
    queue: Arc<dyn JobQueue>,
    ad_id: String,
    version: u32,
    attempt: u32,
}

impl ProgressSink {
    /// A sink for the job in `claimed`.
    pub fn new(queue: Arc<dyn JobQueue>, claimed: &Claimed) -> Self {
        ProgressSink {
            queue,
            ad_id: claimed.job.ad_id().to_owned(),
            version: claimed.job.version(),
            attempt: claimed.attempt,
        }
    }

    /// The attempt being run (1-based).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Reports that `step` started. Progress is a hint: a failure to publish it is logged,
    /// never fails the job.
    pub async fn report(&self, step: &str, message: &str, percentage: u8) {
        let event = Event::Progress(AdProgress {
            ad_id: self.ad_id.clone(),
            version: self.version,
            step: step.to_owned(),
            message: message.to_owned(),
            percentage: percentage.min(100),
        });
        if let Err(e) = self.queue.publish(event).await {
            tracing::warn!(ad_id = %self.ad_id, error = %e, "could not publish progress");
        }
    }
}

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// The consumer name, unique per worker process (two processes with one name would
    /// share claims). [`WorkerOptions::new`] takes it; [`default_consumer_name`] makes one.
    pub consumer: String,
    /// Jobs run at once. Default 1 (rendering is CPU-bound; run one worker per core pair).
    pub concurrency: usize,
    /// The longest one claim call waits; also how long shutdown may wait for it. Default 1 s.
    pub claim_wait: Duration,
    /// Heartbeat period; `None` is a third of the queue's visibility timeout.
    pub heartbeat_interval: Option<Duration>,
    /// Backoff before attempt 2; doubles per attempt. Default 1 s.
    pub backoff_base: Duration,
    /// Longest backoff. Default 60 s.
    pub backoff_max: Duration,
    /// Claims only interactive work ([`JobQueue::claim_interactive`]): a slot kept free of
    /// swipe-file ingests. Default false.
    pub interactive_only: bool,
}

impl WorkerOptions {
    /// Defaults with the given consumer name.
    pub fn new(consumer: impl Into<String>) -> Self {
        WorkerOptions {
            consumer: consumer.into(),
            concurrency: 1,
            claim_wait: Duration::from_secs(1),
            heartbeat_interval: None,
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
            interactive_only: false,
        }
    }

    /// The backoff after a failed `attempt`: `base * 2^(attempt-1)`, capped.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1).min(20));
        self.backoff_base
            .saturating_mul(factor)
            .min(self.backoff_max)
    }
}

/// A consumer name unique to this process: `worker-{pid}-{random}`.
pub fn default_consumer_name() -> String {
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("worker-{}-{}", std::process::id(), &random[..8])
}

/// Runs the worker loop until `shutdown` completes, then waits for in-flight jobs and
/// returns. Queue errors (Redis down) are logged and retried with backoff; they never end
/// the loop.
pub async fn run_worker(
    queue: Arc<dyn JobQueue>,
    handler: Arc<dyn JobHandler>,
    options: WorkerOptions,
    shutdown: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(options.concurrency.max(1)));
    let heartbeat = options
        .heartbeat_interval
        .unwrap_or(queue.config().visibility_timeout / 3)
        .max(Duration::from_millis(10));
    let mut tasks = JoinSet::new();
    let mut failures_in_row = 0u32;
    tokio::pin!(shutdown);
    loop {
        while let Some(done) = tasks.try_join_next() {
            log_task_end(done);
        }
        let permit = tokio::select! {
            biased;
            () = &mut shutdown => break,
            permit = slots.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        // A claim is not cancelled midway: a Redis claim dropped after the server handed out
        // an entry would strand it until the visibility timeout. It ends within claim_wait.
        let claim = if options.interactive_only {
            queue.claim_interactive(&options.consumer, options.claim_wait)
        } else {
            queue.claim(&options.consumer, options.claim_wait)
        };
        tokio::pin!(claim);
        let (result, stopping) = tokio::select! {
            biased;
            result = &mut claim => (result, false),
            () = &mut shutdown => (claim.await, true),
        };
        match result {
            Ok(Some(claimed)) if stopping => {
                if let Err(e) = queue.release(&claimed).await {
                    tracing::warn!(job_id = %claimed.job_id, error = %e, "could not release a job at shutdown; it is reclaimed after the visibility timeout");
                }
                break;
            }
            Ok(Some(claimed)) => {
                failures_in_row = 0;
                let job = JobRun {
                    queue: queue.clone(),
                    handler: handler.clone(),
                    claimed,
                    heartbeat,
                    options: options.clone(),
                };
                tasks.spawn(async move {
                    job.run().await;
                    drop(permit);
                });
            }
            Ok(None) if stopping => break,
            Ok(None) => failures_in_row = 0,
            Err(e) => {
                failures_in_row = failures_in_row.saturating_add(1);
                let pause = pause_after(failures_in_row);
                tracing::warn!(error = %e, pause_ms = pause.as_millis(), "claim failed; retrying");
                if stopping {
                    break;
                }
                tokio::select! {
                    biased;
                    () = &mut shutdown => break,
                    () = tokio::time::sleep(pause) => {}
                }
            }
        }
    }
    tracing::info!(
        in_flight = tasks.len(),
        "worker stops claiming; finishing in-flight jobs"
    );
    while let Some(done) = tasks.join_next().await {
        log_task_end(done);
    }
    if let Err(e) = queue.retire(&options.consumer).await {
        tracing::warn!(consumer = %options.consumer, error = %e, "could not retire the consumer name");
    }
}

fn log_task_end(done: Result<(), tokio::task::JoinError>) {
    if let Err(e) = done {
        tracing::error!(error = %e, "a job task ended abnormally");
    }
}

/// 100 ms doubling to 5 s.
fn pause_after(failures: u32) -> Duration {
    let factor = 2u32.saturating_pow(failures.saturating_sub(1).min(6));
    Duration::from_millis(100)
        .saturating_mul(factor)
        .min(Duration::from_secs(5))
}

/// One claimed job being run.
struct JobRun {
    queue: Arc<dyn JobQueue>,
    handler: Arc<dyn JobHandler>,
    claimed: Claimed,
    heartbeat: Duration,
    options: WorkerOptions,
}

/// How an attempt ended, as the queue is told.
enum Verdict {
    Complete(AdCompleted),
    Retry(String),
    Fail { code: String, message: String },
}

impl JobRun {
    async fn run(self) {
        let claimed = &self.claimed;
        let started = Instant::now();
        let sink = ProgressSink::new(self.queue.clone(), claimed);
        let handler = self.handler.clone();
        let job = claimed.job.clone();
        // Its own task, so that a panic is a JoinError here and not an unwind of the loop.
        let mut work = tokio::spawn(async move { handler.handle(job, sink).await });
        let mut ticker = tokio::time::interval_at(Instant::now() + self.heartbeat, self.heartbeat);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let outcome = loop {
            tokio::select! {
                outcome = &mut work => break outcome,
                _ = ticker.tick() => match self.queue.heartbeat(claimed).await {
                    Ok(true) => {}
                    Ok(false) => tracing::warn!(job_id = %claimed.job_id, "lost the claim (reclaimed by another worker); finishing anyway"),
                    Err(e) => tracing::warn!(job_id = %claimed.job_id, error = %e, "heartbeat failed"),
                },
            }
        };
        let verdict = match outcome {
            Ok(Ok(mut completed)) => {
                completed.duration_ms =
                    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                Verdict::Complete(completed)
            }
            Ok(Err(JobError::Retry { message })) => Verdict::Retry(message),
            Ok(Err(JobError::Abort { code, message })) => Verdict::Fail { code, message },
            Err(e) => {
                tracing::error!(job_id = %claimed.job_id, attempt = claimed.attempt, error = %e, "the job handler panicked");
                Verdict::Retry("the generation pipeline crashed".to_owned())
            }
        };
        self.settle(verdict).await;
    }

    /// Tells the queue how the attempt ended, retrying while the queue is unreachable (a
    /// Redis restart) for up to one visibility timeout, heartbeating meanwhile; after that
    /// the claim lapses and the job is redone elsewhere, which idempotent results allow.
    async fn settle(&self, verdict: Verdict) {
        let claimed = &self.claimed;
        let give_up_at = Instant::now() + self.queue.config().visibility_timeout;
        let backoff = self.options.backoff(claimed.attempt);
        let mut failures = 0u32;
        loop {
            let result = match &verdict {
                Verdict::Complete(completed) => self.queue.complete(claimed, completed.clone()).await,
                Verdict::Fail { code, message } => self.queue.fail(claimed, code, message).await,
                Verdict::Retry(message) => {
                    self.queue.retry(claimed, backoff, message).await.map(|outcome| {
                        match outcome {
                            RetryOutcome::Scheduled { next_attempt } => tracing::info!(job_id = %claimed.job_id, next_attempt, backoff_ms = backoff.as_millis(), reason = %message, "job will be retried"),
                            RetryOutcome::GaveUp => tracing::warn!(job_id = %claimed.job_id, reason = %message, "job failed for good: attempts spent"),
                        }
                    })
                }
            };
            match result {
                Ok(()) => return,
                Err(e) if Instant::now() < give_up_at => {
                    failures = failures.saturating_add(1);
                    tracing::warn!(job_id = %claimed.job_id, error = %e, "could not record the job's outcome; retrying");
                    tokio::time::sleep(pause_after(failures)).await;
                    let _ = self.queue.heartbeat(claimed).await;
                }
                Err(e) => {
                    tracing::error!(job_id = %claimed.job_id, error = %e, "could not record the job's outcome; it will be redone");
                    return;
                }
            }
        }
    }
}
