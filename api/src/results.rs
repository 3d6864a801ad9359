//! The result router: the one place that knows every kind of job result and which
//! feature owns it. A completed job's [`JobResult`] is matched once and handed to its
//! feature's `apply` (`resources::image_ads::apply`, `resources::swipe_files::apply`,
//! `resources::design_templates::apply`), a failure goes by its [`SubjectKind`], and at
//! start-up [`resume`] asks each feature for its unfinished jobs. The binary wires it in
//! where it assembles the process ([`crate::jobs::Jobs::spawn_applier`] takes
//! [`apply_boxed`]); the outbox in [`crate::jobs`] imports no feature.
//!
//! Rejected alternative: a registry of handlers by kind filled at start-up. The set of
//! kinds is closed and small; an exhaustive `match` makes a new kind a compile error here
//! instead of an event no handler claims.

use std::time::Duration;

use adforge_worker::{AdCompleted, AdFailed, Event, FigmaSyncResult, JobResult, SubjectKind};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use crate::blob::BlobStore;
use crate::error::ApiResult;
use crate::jobs::Jobs;
use crate::metrics::Applied;
use crate::resources::{design_templates, image_ads, swipe_files};
use crate::store::Db;

/// Applies one worker event to SQL, exactly once in effect; says what changed (for the
/// metrics), or `None` when the event changed nothing (a redelivery, a stale version).
///
/// # Errors
/// Database failures (the event is then redelivered).
pub async fn apply(db: &Db, blobs: &dyn BlobStore, event: &Event) -> ApiResult<Option<Applied>> {
    match event {
        Event::Completed(c) => completed(db, blobs, c).await,
        Event::Failed(f) => failed(db, blobs, f).await,
        Event::Progress(_) => Ok(None),
    }
}

/// [`apply`] as the applier loop takes it ([`crate::jobs::ApplyEvent`]).
pub fn apply_boxed<'a>(
    db: &'a Db,
    blobs: &'a dyn BlobStore,
    event: &'a Event,
) -> BoxFuture<'a, ApiResult<Option<Applied>>> {
    apply(db, blobs, event).boxed()
}

/// What a feature that reports only whether it changed something applied.
fn applied(
    changed: bool,
    kind: &'static str,
    outcome: &'static str,
    duration: Option<Duration>,
) -> Option<Applied> {
    changed.then_some(Applied {
        kind,
        outcome,
        duration,
        wallet: None,
    })
}

/// Hands a finished job's result to the feature it completes, by the kind of result.
async fn completed(db: &Db, blobs: &dyn BlobStore, c: &AdCompleted) -> ApiResult<Option<Applied>> {
    let duration = Some(Duration::from_millis(c.duration_ms));
    match &c.result {
        JobResult::ImageAd(r) => image_ads::apply::completed(db, c, Some(r), None).await,
        JobResult::SwipeFile(r) => {
            let changed = swipe_files::apply::completed(db, blobs, &c.ad_id, r).await?;
            Ok(applied(changed, "swipe_file", "completed", duration))
        }
        JobResult::DesignTemplate(r) => {
            let changed = design_templates::apply::completed(db, c, r, None).await?;
            Ok(applied(changed, "design_template", "completed", duration))
        }
        JobResult::FigmaSync(sync) => match sync.as_ref() {
            FigmaSyncResult::ImageAd { synced, rendered } => {
                image_ads::apply::completed(db, c, rendered.as_ref(), Some(synced)).await
            }
            FigmaSyncResult::DesignTemplate {
                synced,
                rendered: Some(r),
            } => {
                let changed = design_templates::apply::completed(db, c, r, Some(synced)).await?;
                Ok(applied(changed, "design_template", "completed", duration))
            }
            // A template's import is never a re-sync (it names no previous frame), so an
            // unchanged frame changes nothing.
            FigmaSyncResult::DesignTemplate { rendered: None, .. } => Ok(None),
        },
    }
}

/// Hands a failed job to the feature that owns its subject, by the subject's kind.
async fn failed(db: &Db, blobs: &dyn BlobStore, f: &AdFailed) -> ApiResult<Option<Applied>> {
    match f.subject {
        SubjectKind::ImageAd => image_ads::apply::failed(db, f).await,
        SubjectKind::SwipeFile => {
            let changed = swipe_files::apply::failed(db, blobs, &f.ad_id, &f.message).await?;
            Ok(applied(changed, "swipe_file", "failed", None))
        }
        SubjectKind::DesignTemplate => {
            let changed = design_templates::apply::failed(db, f).await?;
            Ok(applied(changed, "design_template", "failed", None))
        }
        SubjectKind::Unknown => {
            // A kind of job a newer release added, failed by a worker that could not read
            // it: an API node of that release applies it (the event is acknowledged here
            // and the subject is resumed by that node's start-up).
            tracing::error!(subject = %f.ad_id, version = f.version, code = %f.code, "a failed job of a kind this API does not know; upgrade this API node");
            Ok(None)
        }
    }
}

/// At start-up: asks each feature for its unfinished jobs (image ads, swipe-file ingests,
/// design templates) and queues them again; says how many of each kind it queued.
///
/// # Errors
/// Database failures.
pub async fn resume(jobs: &Jobs) -> Result<Resumed, sqlx::Error> {
    let db = &jobs.db;
    Ok(Resumed {
        image_ads: jobs
            .requeue(
                image_ads::apply::unfinished(db).await?,
                ResumedKind::ImageAd.name(),
            )
            .await,
        swipe_file_ingests: jobs
            .requeue(
                swipe_files::apply::unfinished(db).await?,
                ResumedKind::SwipeFileIngest.name(),
            )
            .await,
        design_templates: jobs
            .requeue(
                design_templates::apply::unfinished(db).await?,
                ResumedKind::DesignTemplate.name(),
            )
            .await,
    })
}

/// What [`resume`] queued again at start-up, by kind of work.
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
mod tests {
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
