//! The API's side of asynchronous work: the outbox (resources stage their jobs in their own
//! transaction, [`Jobs::kick`] wakes the dispatcher that moves committed jobs into the
//! queue), the loop that reads worker events and hands each to the result router it was
//! given ([`ApplyEvent`]), and re-queueing at start-up. What a result changes is its
//! feature's (`resources::*::apply`); this module imports no resource, so every resource
//! can import it.
//!
//! Why an outbox: the ad row and its job are written in one SQL transaction, then a
//! dispatcher enqueues and deletes outbox rows. A crash between commit and enqueue leaves
//! the row, which the next dispatch (or the next start) sends; the queue drops duplicates
//! by job id (one job per ad version), so a resend is harmless. Enqueueing inside the
//! request instead was rejected: a crash between the SQL commit and the enqueue would lose
//! the job and leave the ad `processing` forever.
//!
//! Each feature's applier is idempotent per (subject, version): only a `processing` subject
//! whose current version is the event's changes, so redelivered events do nothing; the
//! wallet and the webhook event of the change are written in the same transaction, and the
//! delivery task is woken after the commit.

use std::sync::Arc;
use std::time::Duration;

use adforge_worker::{Event, Job, JobQueue};
use futures_util::future::BoxFuture;
use sqlx::AnyConnection;
use tokio::sync::Notify;

use crate::blob::BlobStore;
use crate::error::ApiResult;
use crate::metrics::Applied;
use crate::store::Db;

/// Applies one worker event to SQL, exactly once in effect; says what changed (for the
/// metrics), or `None` when nothing did (a redelivery, a stale version). The process that
/// assembles the features passes the result router, so the outbox knows no feature.
pub type ApplyEvent =
    for<'a> fn(&'a Db, &'a dyn BlobStore, &'a Event) -> BoxFuture<'a, ApiResult<Option<Applied>>>;

/// Shared handle: the queue plus the dispatcher's wake-up. One `Arc`, cloned per request by
/// the states that hold it.
#[derive(Clone)]
pub struct Jobs(Arc<JobsInner>);

impl std::ops::Deref for Jobs {
    type Target = JobsInner;

    fn deref(&self) -> &JobsInner {
        &self.0
    }
}

/// What a [`Jobs`] holds.
pub struct JobsInner {
    pub db: Db,
    pub queue: Arc<dyn JobQueue>,
    /// Counts what the applier did (jobs by kind and outcome, wallet captures and releases).
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Builds the URLs of objects in webhook events (swipe files keep blob keys).
    pub blobs: Arc<dyn crate::blob::BlobStore>,
    wake: Arc<Notify>,
    /// Notified after every applied event: wakes the webhook delivery task.
    applied: Arc<Notify>,
}

impl Jobs {
    pub fn new(
        db: Db,
        queue: Arc<dyn JobQueue>,
        metrics: Arc<crate::metrics::Metrics>,
        blobs: Arc<dyn crate::blob::BlobStore>,
    ) -> Self {
        Self(Arc::new(JobsInner {
            db,
            queue,
            metrics,
            blobs,
            wake: Arc::new(Notify::new()),
            applied: Arc::new(Notify::new()),
        }))
    }

    /// The signal the applier gives after each applied event (the webhook delivery task
    /// waits on it).
    pub fn applied_signal(&self) -> Arc<Notify> {
        self.applied.clone()
    }

    /// Writes `job` to the outbox inside the caller's transaction; call [`Jobs::kick`] after
    /// the commit.
    ///
    /// # Errors
    /// Database failures.
    pub async fn stage(conn: &mut AnyConnection, job: &Job) -> ApiResult<()> {
        crate::store::query(
            "INSERT INTO job_outbox (job_id, payload, created_at) VALUES (?, ?, ?)",
        )
        .bind(job.job_id())
        .bind(crate::store::to_json_text(job))
        .bind(crate::timestamp::now())
        .execute(conn)
        .await?;
        Ok(())
    }

    /// Wakes the dispatcher.
    pub fn kick(&self) {
        self.wake.notify_one();
    }

    /// Sends every outbox row to the queue, oldest first, deleting each once enqueued.
    async fn drain(&self) -> Result<usize, String> {
        let rows: Vec<(i64, String)> =
            crate::store::query_as("SELECT seq, payload FROM job_outbox ORDER BY seq LIMIT 100")
                .fetch_all(&self.db.read)
                .await
                .map_err(|e| e.to_string())?;
        let n = rows.len();
        for (seq, payload) in rows {
            match serde_json::from_str::<Job>(&payload) {
                Ok(job) => {
                    self.queue.enqueue(job).await.map_err(|e| e.to_string())?;
                }
                Err(e) => {
                    tracing::error!(seq, error = %e, "dropping an outbox row that is not a job")
                }
            }
            let mut conn = self.db.write_conn().await.map_err(|e| e.to_string())?;
            crate::store::query("DELETE FROM job_outbox WHERE seq = ?")
                .bind(seq)
                .execute(&mut *conn)
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(n)
    }

    /// Runs the dispatcher: drains on every kick, and every second in case a kick was lost
    /// or the queue was down.
    pub fn spawn_dispatcher(&self) {
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                match this.drain().await {
                    Ok(100) => continue,
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "outbox dispatch failed; retrying"),
                }
                let _ = tokio::time::timeout(Duration::from_secs(1), this.wake.notified()).await;
            }
        });
    }

    /// Queues `jobs` again (at start-up: the unfinished jobs a feature names); says how
    /// many were queued. Jobs still live in the queue are dropped there as duplicates
    /// (one job id per subject version); jobs lost with a stopped in-process queue run
    /// again. `kind` names them in the log.
    pub async fn requeue(&self, jobs: Vec<Job>, kind: &str) -> usize {
        let mut queued = 0;
        for job in jobs {
            match self.queue.enqueue(job).await {
                Ok(_) => queued += 1,
                Err(e) => {
                    tracing::warn!(error = %e, kind, "could not resume a processing job")
                }
            }
        }
        queued
    }

    /// Runs the event applier as consumer `consumer` of the API group: each event goes to
    /// `apply` (the result router, which hands it to the feature that owns its subject) and
    /// is acknowledged once applied.
    pub fn spawn_applier(&self, consumer: String, apply: ApplyEvent) {
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                let batch = match this
                    .queue
                    .read_events(&consumer, 32, Duration::from_secs(1))
                    .await
                {
                    Ok(b) => b,
                    Err(e) => {
                        tracing::warn!(error = %e, "reading events failed; retrying");
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        continue;
                    }
                };
                for delivered in batch {
                    match apply(&this.db, this.blobs.as_ref(), &delivered.event).await {
                        Ok(applied) => {
                            if let Some(applied) = &applied {
                                this.metrics.observe_applied(applied);
                                if let Event::Completed(c) = &delivered.event
                                    && let Some(render) = c.render()
                                {
                                    this.metrics.observe_render(render);
                                }
                            }
                            if !matches!(delivered.event, Event::Progress(_)) {
                                this.applied.notify_one();
                            }
                            if let Err(e) = this.queue.ack_event(&delivered).await {
                                tracing::warn!(error = %e, "ack failed; the event will be applied again (harmlessly)");
                            }
                        }
                        Err(e) => {
                            tracing::error!(error = ?e.internal, code = ?e.code, "applying an event failed; it will be redelivered")
                        }
                    }
                }
            }
        });
    }
}
