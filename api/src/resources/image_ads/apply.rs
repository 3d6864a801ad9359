//! Applying a worker's result to an image ad, exactly once in effect: only a `processing`
//! ad whose current version is the event's changes, so a redelivered event does nothing.
//! The wallet capture (or release) and the webhook event of the change are written in the
//! same transaction.
//!
//! One completion serves every job that renders an ad: a generated ad, an edit's
//! re-render and a Figma import (which also stores the frame's sync state and Figma's
//! render). A Figma sync whose frame had not changed renders nothing; the ad goes back to
//! its latest completed version.

use adforge_worker::protocol::FigmaSynced;
use adforge_worker::{AdCompleted, AdFailed, ImageAdRendered, Job};

use super::store::{self, Completion};
use crate::error::ApiResult;
use crate::metrics::Applied;
use crate::store::Db;

/// A render of the ad (`rendered`), or of a Figma sync (`figma` set; `rendered` is `None`
/// when the frame had not changed). `None` when nothing changed (a redelivery, a stale
/// version, an ad that is gone).
///
/// # Errors
/// Database failures (the event is then redelivered).
pub async fn completed(
    db: &Db,
    c: &AdCompleted,
    rendered: Option<&ImageAdRendered>,
    figma: Option<&FigmaSynced>,
) -> ApiResult<Option<Applied>> {
    let duration = Some(std::time::Duration::from_millis(c.duration_ms));
    let mut tx = db.begin_write().await?;
    let Some(ad) = store::result_state(&mut tx, &c.ad_id).await? else {
        return Ok(None);
    };
    if ad.status != "processing" || ad.current_version != i64::from(c.version) {
        return Ok(None);
    }
    let now = crate::timestamp::now();
    let sync_state = figma.map(|f| {
        crate::store::to_json_text(&super::sync::next_state(ad.figma_sync.as_deref(), f, &now))
    });
    let Some(r) = rendered else {
        // Only a sync renders nothing: the frame had not changed.
        let state = sync_state.unwrap_or_default();
        store::back_to_latest_version(&mut tx, &c.ad_id, ad.current_version - 1, &state, &now)
            .await?;
        record_ad_event(&mut tx, &ad.org_id, &c.ad_id, "image_ad.completed").await?;
        tx.commit().await?;
        return Ok(Some(Applied {
            kind: "image_ad",
            outcome: "completed",
            duration,
            wallet: None,
        }));
    };
    let tree = r
        .json_tree
        .as_ref()
        .filter(|_| ad.editable)
        .map(crate::store::to_json_text);
    let completion = Completion {
        id: &c.ad_id,
        image_url: &r.image_url,
        width: r.width,
        height: r.height,
        duration_ms: i64::try_from(c.duration_ms).unwrap_or(i64::MAX),
        tree: tree.as_deref(),
        copy_report: r.copy.as_ref().map(crate::store::to_json_text),
        figma_render_url: figma.and_then(|f| f.figma_render_url.as_deref()),
        figma_sync: sync_state.as_deref(),
        now: &now,
    };
    store::complete(&mut tx, &completion).await?;
    if ad.editable {
        // A new ad's first version and a sync's import have no version row yet; an edit's
        // re-render completes the row the edit started.
        if c.version == 1 || figma.is_some() {
            store::insert_completed_version(&mut tx, &ad.org_id, &completion, c.version).await?;
        } else {
            store::complete_version(&mut tx, &completion, c.version).await?;
        }
    }
    let charge = ad.charged_at.is_none();
    if charge {
        crate::wallet::capture(&mut tx, &ad.org_id, ad.price_cents, &c.ad_id).await?;
        store::mark_charged(&mut tx, &c.ad_id, &now).await?;
    }
    record_ad_event(&mut tx, &ad.org_id, &c.ad_id, "image_ad.completed").await?;
    crate::resources::image_ad_batches::apply::ad_ended(&mut tx, &c.ad_id).await?;
    tx.commit().await?;
    Ok(Some(Applied {
        kind: "image_ad",
        outcome: "completed",
        duration,
        wallet: charge.then_some(("capture", ad.price_cents)),
    }))
}

/// The ad's version failed for good: the ad is `failed` with the worker's code, a first
/// generation's hold goes back, and a failed sync leaves the ad at its last completed
/// version. `None` when nothing changed.
///
/// # Errors
/// Database failures (the event is then redelivered).
pub async fn failed(db: &Db, f: &AdFailed) -> ApiResult<Option<Applied>> {
    let mut tx = db.begin_write().await?;
    let Some(ad) = store::result_state(&mut tx, &f.ad_id).await? else {
        return Ok(None);
    };
    if ad.status != "processing" || ad.current_version != i64::from(f.version) {
        return Ok(None);
    }
    let now = crate::timestamp::now();
    store::fail(&mut tx, &f.ad_id, f.version, &f.code, &f.message, &now).await?;
    store::after_failed_sync(&mut tx, &f.ad_id).await?;
    let release = ad.charged_at.is_none();
    if release {
        // The first generation failed: no charge, and the hold goes back.
        crate::wallet::release(&mut tx, &ad.org_id, ad.price_cents, &f.ad_id).await?;
    }
    record_ad_event(&mut tx, &ad.org_id, &f.ad_id, "image_ad.failed").await?;
    crate::resources::image_ad_batches::apply::ad_ended(&mut tx, &f.ad_id).await?;
    tx.commit().await?;
    Ok(Some(Applied {
        kind: "image_ad",
        outcome: "failed",
        duration: None,
        wallet: release.then_some(("release", ad.price_cents)),
    }))
}

/// The current job of every `processing` ad (generation, re-render or sync), for the
/// API's start-up to queue again.
///
/// # Errors
/// Database failures.
pub async fn unfinished(db: &Db) -> Result<Vec<Job>, sqlx::Error> {
    Ok(store::processing_jobs(db)
        .await?
        .iter()
        .filter_map(|payload| serde_json::from_str(payload).ok())
        .collect())
}

/// Writes the webhook event of an ad's state change, with the ad as GET shows it now, in
/// the transaction of the change.
async fn record_ad_event(
    conn: &mut sqlx::AnyConnection,
    org_id: &str,
    ad_id: &str,
    event_type: &str,
) -> ApiResult<()> {
    if let Some(object) = super::snapshot(&mut *conn, org_id, ad_id).await? {
        crate::webhooks::record(conn, org_id, event_type, ad_id, object).await?;
    }
    Ok(())
}
