//! The API's side of asynchronous work: the outbox dispatcher that moves committed jobs
//! into the queue, the event applier that turns worker results into SQL state exactly once,
//! and the resume step at start-up.
//!
//! Why an outbox: the ad row and its job are written in one SQL transaction, then a
//! dispatcher enqueues and deletes outbox rows. A crash between commit and enqueue leaves
//! the row, which the next dispatch (or the next start) sends; the queue drops duplicates
//! by job id (one job per ad version), so a resend is harmless. Enqueueing inside the
//! request instead was rejected: a crash between the SQL commit and the enqueue would lose
//! the job and leave the ad `processing` forever.
//!
//! The applier is idempotent per (ad, version): only a `processing` ad whose current version
//! is the event's version changes, so redelivered events do nothing, and the wallet is
//! captured (or released) in the same transaction as the status change. The webhook event
//! of the change (`image_ad.completed` / `image_ad.failed`) and its deliveries are written
//! in that same transaction too (see `crate::webhooks`), and the delivery task is woken
//! after the commit.

use std::sync::Arc;
use std::time::Duration;

use adforge_worker::{
    AdCompleted, AdFailed, Event, FigmaSyncResult, ImageAdRendered, Job, JobQueue, JobResult,
};
use sqlx::AnyConnection;
use tokio::sync::Notify;

use crate::error::ApiResult;
use crate::metrics::Applied;
use crate::store::Db;

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

    /// At start-up: re-enqueues the current job of everything `processing` (image ads,
    /// swipe-file ingests, design templates) and says how many of each kind it queued. Jobs
    /// still live in the queue are dropped there as duplicates; jobs lost with a stopped
    /// in-process queue run again.
    ///
    /// # Errors
    /// Database failures.
    pub async fn resume(&self) -> Result<Resumed, sqlx::Error> {
        let ads: Vec<String> = crate::store::query_scalar(
            "SELECT job FROM image_ads WHERE status = 'processing' AND deleted_at IS NULL",
        )
        .fetch_all(&self.db.read)
        .await?;
        // A bulk import's design keeps what its manifest said (URL, hints).
        let swipes: Vec<(
            String,
            Option<String>,
            String,
            Option<String>,
            Option<crate::store::Flag>,
            Option<String>,
            Option<String>,
            Option<String>,
        )> = crate::store::query_as(
            "SELECT f.id, f.org_id, f.blob_key, i.locator, i.is_url, i.industry, i.ad_format, i.caption \
             FROM swipe_files f LEFT JOIN swipe_import_items i ON i.swipe_file_id = f.id \
             WHERE f.status = 'processing'",
        )
        .fetch_all(&self.db.read)
        .await?;
        let ingests = swipes.into_iter().map(
            |(swipe_file_id, org_id, blob_key, locator, is_url, industry, ad_format, caption)| {
                let from_import = locator.is_some();
                crate::store::to_json_text(&Job::IngestSwipeFile(
                    adforge_worker::IngestSwipeFileJob {
                        swipe_file_id,
                        org_id,
                        blob_key,
                        fetch_url: locator.filter(|_| is_url.is_some_and(|u| u.0)),
                        hints: from_import.then_some(adforge_worker::IngestHints {
                            industry,
                            ad_format,
                            caption,
                        }),
                    },
                ))
            },
        );
        // Design templates whose analysis or preview is running (deleted ones too: their
        // result is still applied).
        let templates: Vec<String> = crate::store::query_scalar(
            "SELECT job FROM design_templates WHERE status = 'processing'",
        )
        .fetch_all(&self.db.read)
        .await?;
        let mut resumed = Resumed::default();
        let jobs = ads
            .into_iter()
            .map(|j| (ResumedKind::ImageAd, j))
            .chain(ingests.map(|j| (ResumedKind::SwipeFileIngest, j)))
            .chain(
                templates
                    .into_iter()
                    .map(|j| (ResumedKind::DesignTemplate, j)),
            );
        for (kind, payload) in jobs {
            if let Ok(job) = serde_json::from_str::<Job>(&payload) {
                match self.queue.enqueue(job).await {
                    Ok(_) => resumed.count(kind),
                    Err(e) => {
                        tracing::warn!(error = %e, kind = kind.name(), "could not resume a processing job")
                    }
                }
            }
        }
        Ok(resumed)
    }

    /// Runs the event applier as consumer `consumer` of the API group.
    pub fn spawn_applier(&self, consumer: String) {
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

struct AdState {
    org_id: String,
    status: String,
    current_version: i64,
    editable: bool,
    price_cents: i64,
    charged_at: Option<String>,
}

async fn ad_state(conn: &mut AnyConnection, ad_id: &str) -> ApiResult<Option<AdState>> {
    let row: Option<(String, String, i64, crate::store::Flag, i64, Option<String>)> = crate::store::query_as(
        "SELECT org_id, status, current_version, editable, price_cents, charged_at FROM image_ads WHERE id = ?",
    )
    .bind(ad_id)
    .fetch_optional(conn)
    .await?;
    Ok(row.map(
        |(org_id, status, current_version, editable, price_cents, charged_at)| AdState {
            org_id,
            status,
            current_version,
            editable: editable.0,
            price_cents,
            charged_at,
        },
    ))
}

/// Applies one worker event to SQL, exactly once in effect; says what changed (for the
/// metrics), or `None` when the event changed nothing (a redelivery, a stale version).
///
/// # Errors
/// Database failures (the event is then redelivered).
pub async fn apply(
    db: &Db,
    blobs: &dyn crate::blob::BlobStore,
    event: &Event,
) -> ApiResult<Option<Applied>> {
    match event {
        Event::Completed(c) => completed(db, blobs, c).await,
        Event::Failed(f) => failed(db, blobs, f).await,
        Event::Progress(_) => Ok(None),
    }
}

/// Hands a finished job's result to what it completes, by the kind of result.
async fn completed(
    db: &Db,
    blobs: &dyn crate::blob::BlobStore,
    c: &AdCompleted,
) -> ApiResult<Option<Applied>> {
    let duration = Some(Duration::from_millis(c.duration_ms));
    let applied = |changed: bool, kind: &'static str| {
        changed.then_some(Applied {
            kind,
            outcome: "completed",
            duration,
            wallet: None,
        })
    };
    match &c.result {
        JobResult::ImageAd(r) => image_ad_completed(db, c, r).await,
        JobResult::SwipeFile(r) => {
            let changed = crate::swipe::apply_ingested(db, blobs, &c.ad_id, r).await?;
            Ok(applied(changed, "swipe_file"))
        }
        JobResult::DesignTemplate(r) => {
            let changed =
                crate::resources::design_templates::apply::completed(db, c, r, None).await?;
            Ok(applied(changed, "design_template"))
        }
        JobResult::FigmaSync(sync) => match sync.as_ref() {
            FigmaSyncResult::ImageAd { synced, rendered } => {
                crate::resources::image_ads::sync::apply::completed(
                    db,
                    c,
                    synced,
                    rendered.as_ref(),
                )
                .await
            }
            FigmaSyncResult::DesignTemplate {
                synced,
                rendered: Some(r),
            } => {
                let changed =
                    crate::resources::design_templates::apply::completed(db, c, r, Some(synced))
                        .await?;
                Ok(applied(changed, "design_template"))
            }
            // A template's import is never a re-sync (it names no previous frame), so an
            // unchanged frame changes nothing.
            FigmaSyncResult::DesignTemplate { rendered: None, .. } => Ok(None),
        },
    }
}

/// A generated or re-rendered image ad.
async fn image_ad_completed(
    db: &Db,
    c: &AdCompleted,
    r: &ImageAdRendered,
) -> ApiResult<Option<Applied>> {
    let duration = Some(Duration::from_millis(c.duration_ms));
    let mut tx = db.begin_write().await?;
    let Some(ad) = ad_state(&mut tx, &c.ad_id).await? else {
        return Ok(None);
    };
    if ad.status != "processing" || ad.current_version != i64::from(c.version) {
        return Ok(None);
    }
    let now = crate::timestamp::now();
    let tree = r
        .json_tree
        .as_ref()
        .filter(|_| ad.editable)
        .map(crate::store::to_json_text);
    crate::store::query(
        "UPDATE image_ads SET status = 'completed', progress = NULL, image_url = ?, width = ?, height = ?, \
         duration_ms = ?, completed_at = ?, updated_at = ?, current_json_tree = coalesce(?, current_json_tree), \
         copy_report = coalesce(?, copy_report), error_code = NULL, error_message = NULL WHERE id = ?",
    )
    .bind(&r.image_url)
    .bind(i64::from(r.width))
    .bind(i64::from(r.height))
    .bind(i64::try_from(c.duration_ms).unwrap_or(i64::MAX))
    .bind(&now)
    .bind(&now)
    .bind(&tree)
    .bind(r.copy.as_ref().map(crate::store::to_json_text))
    .bind(&c.ad_id)
    .execute(&mut *tx)
    .await?;
    if ad.editable {
        if c.version == 1 {
            crate::store::query(
                "INSERT INTO image_ad_versions (id, ad_id, org_id, version_number, json_tree, image_url, width, height, \
                 status, created_at, completed_at) VALUES (?, ?, ?, 1, ?, ?, ?, ?, 'completed', ?, ?) \
                 ON CONFLICT(ad_id, version_number) DO NOTHING",
            )
            .bind(crate::ids::new_id("iav"))
            .bind(&c.ad_id)
            .bind(&ad.org_id)
            .bind(tree.as_deref().unwrap_or("{}"))
            .bind(&r.image_url)
            .bind(i64::from(r.width))
            .bind(i64::from(r.height))
            .bind(&now)
            .bind(&now)
            .execute(&mut *tx)
            .await?;
        } else {
            crate::store::query(
                "UPDATE image_ad_versions SET image_url = ?, width = ?, height = ?, status = 'completed', completed_at = ? \
                 WHERE ad_id = ? AND version_number = ?",
            )
            .bind(&r.image_url)
            .bind(i64::from(r.width))
            .bind(i64::from(r.height))
            .bind(&now)
            .bind(&c.ad_id)
            .bind(i64::from(c.version))
            .execute(&mut *tx)
            .await?;
        }
    }
    let charge = ad.charged_at.is_none();
    if charge {
        crate::wallet::capture(&mut tx, &ad.org_id, ad.price_cents, &c.ad_id).await?;
        crate::store::query("UPDATE image_ads SET charged_at = ? WHERE id = ?")
            .bind(&now)
            .bind(&c.ad_id)
            .execute(&mut *tx)
            .await?;
    }
    record_ad_event(&mut tx, &ad.org_id, &c.ad_id, "image_ad.completed").await?;
    tx.commit().await?;
    Ok(Some(Applied {
        kind: "image_ad",
        outcome: "completed",
        duration,
        wallet: charge.then_some(("capture", ad.price_cents)),
    }))
}

async fn failed(
    db: &Db,
    blobs: &dyn crate::blob::BlobStore,
    f: &AdFailed,
) -> ApiResult<Option<Applied>> {
    if f.ad_id.starts_with("sf_") {
        let changed = crate::swipe::apply_failed(db, blobs, &f.ad_id, &f.message).await?;
        return Ok(changed.then_some(Applied {
            kind: "swipe_file",
            outcome: "failed",
            duration: None,
            wallet: None,
        }));
    }
    if f.ad_id.starts_with("dt_") {
        let changed = crate::resources::design_templates::apply::failed(db, f).await?;
        return Ok(changed.then_some(Applied {
            kind: "design_template",
            outcome: "failed",
            duration: None,
            wallet: None,
        }));
    }
    let mut tx = db.begin_write().await?;
    let Some(ad) = ad_state(&mut tx, &f.ad_id).await? else {
        return Ok(None);
    };
    if ad.status != "processing" || ad.current_version != i64::from(f.version) {
        return Ok(None);
    }
    let now = crate::timestamp::now();
    crate::store::query(
        "UPDATE image_ads SET status = 'failed', progress = NULL, error_code = ?, error_message = ?, updated_at = ? WHERE id = ?",
    )
    .bind(&f.code)
    .bind(&f.message)
    .bind(&now)
    .bind(&f.ad_id)
    .execute(&mut *tx)
    .await?;
    crate::store::query(
        "UPDATE image_ad_versions SET status = 'failed', error_code = ?, error_message = ? WHERE ad_id = ? AND version_number = ?",
    )
    .bind(&f.code)
    .bind(&f.message)
    .bind(&f.ad_id)
    .bind(i64::from(f.version))
    .execute(&mut *tx)
    .await?;
    // A failed sync from Figma leaves the ad at its last completed version.
    crate::resources::image_ads::sync::apply::after_failed(&mut tx, &f.ad_id).await?;
    let release = ad.charged_at.is_none();
    if release {
        // The first generation failed: no charge, and the hold goes back.
        crate::wallet::release(&mut tx, &ad.org_id, ad.price_cents, &f.ad_id).await?;
    }
    record_ad_event(&mut tx, &ad.org_id, &f.ad_id, "image_ad.failed").await?;
    tx.commit().await?;
    Ok(Some(Applied {
        kind: "image_ad",
        outcome: "failed",
        duration: None,
        wallet: release.then_some(("release", ad.price_cents)),
    }))
}

/// Writes the webhook event of an ad's state change, with the ad as GET shows it now, in
/// the transaction of the change.
pub(crate) async fn record_ad_event(
    conn: &mut AnyConnection,
    org_id: &str,
    ad_id: &str,
    event_type: &str,
) -> ApiResult<()> {
    if let Some(object) = crate::resources::image_ads::snapshot(&mut *conn, org_id, ad_id).await? {
        crate::webhooks::record(conn, org_id, event_type, ad_id, object).await?;
    }
    Ok(())
}

/// What [`Jobs::resume`] queued again at start-up, by kind of work.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Resumed {
    /// Image ads (generation, re-renders and Figma syncs of an ad).
    pub image_ads: usize,
    /// Swipe-file designs being analysed (uploads and bulk imports, the default collection's
    /// among them).
    pub swipe_file_ingests: usize,
    /// Design templates whose analysis, preview or Figma import was running.
    pub design_templates: usize,
}

#[derive(Debug, Clone, Copy)]
enum ResumedKind {
    ImageAd,
    SwipeFileIngest,
    DesignTemplate,
}

impl ResumedKind {
    fn name(self) -> &'static str {
        match self {
            Self::ImageAd => "image ad",
            Self::SwipeFileIngest => "swipe-file ingest",
            Self::DesignTemplate => "design template",
        }
    }
}

impl Resumed {
    fn count(&mut self, kind: ResumedKind) {
        match kind {
            ResumedKind::ImageAd => self.image_ads += 1,
            ResumedKind::SwipeFileIngest => self.swipe_file_ingests += 1,
            ResumedKind::DesignTemplate => self.design_templates += 1,
        }
    }

    /// Jobs queued again, every kind together.
    pub fn total(&self) -> usize {
        self.image_ads + self.swipe_file_ingests + self.design_templates
    }

    /// Logs one line naming what was resumed, each kind with its count (nothing when
    /// nothing was): `resumed processing 45 swipe-file ingests`.
    pub fn log(&self) {
        if self.total() > 0 {
            tracing::info!(
                image_ads = self.image_ads,
                swipe_file_ingests = self.swipe_file_ingests,
                design_templates = self.design_templates,
                "resumed processing {self}"
            );
        }
    }
}

/// The kinds resumed, with their counts: "2 image ads and 45 swipe-file ingests".
impl std::fmt::Display for Resumed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = [
            (self.image_ads, ResumedKind::ImageAd),
            (self.swipe_file_ingests, ResumedKind::SwipeFileIngest),
            (self.design_templates, ResumedKind::DesignTemplate),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, k)| format!("{n} {}{}", k.name(), if n == 1 { "" } else { "s" }))
        .collect();
        match parts.as_slice() {
            [] => f.write_str("nothing"),
            [one] => f.write_str(one),
            [init @ .., last] => write!(f, "{} and {last}", init.join(", ")),
        }
    }
}

#[cfg(test)]
mod resumed_tests {
    use super::Resumed;

    #[test]
    fn the_resume_message_names_each_kind() {
        let only_ingests = Resumed {
            swipe_file_ingests: 45,
            ..Resumed::default()
        };
        assert_eq!(only_ingests.to_string(), "45 swipe-file ingests");
        let all = Resumed {
            image_ads: 1,
            swipe_file_ingests: 2,
            design_templates: 3,
        };
        assert_eq!(
            all.to_string(),
            "1 image ad, 2 swipe-file ingests and 3 design templates"
        );
        assert_eq!(all.total(), 6);
        assert_eq!(Resumed::default().to_string(), "nothing");
    }
}
