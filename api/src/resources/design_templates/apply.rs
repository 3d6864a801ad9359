//! Applying a worker's design-template result, exactly once in effect: only a
//! `processing` template whose `json_tree_version` is the event's changes, so a
//! redelivered event does nothing; the webhook event of the change is written in the same
//! transaction.

use adforge_worker::protocol::FigmaSynced;
use adforge_worker::{AdCompleted, AdFailed, DesignTemplateAnalysed};
use serde_json::json;

use super::store;
use crate::error::ApiResult;
use crate::store::Db;

struct State {
    org_id: String,
    status: String,
    version: i64,
}

async fn state(conn: &mut sqlx::AnyConnection, id: &str) -> ApiResult<Option<State>> {
    let row = store::result_state(conn, id).await?;
    Ok(row.map(|(org_id, status, version)| State {
        org_id,
        status,
        version,
    }))
}

/// A finished analysis (version 1: tree, preview, size, analysis) or preview of an edit
/// (later versions: the preview; the tree is already the edited one). Returns whether
/// anything changed. `figma`: the frame's state after an import from Figma.
///
/// # Errors
/// Database failures (the event is then redelivered).
pub async fn completed(
    db: &Db,
    c: &AdCompleted,
    result: &DesignTemplateAnalysed,
    figma: Option<&FigmaSynced>,
) -> ApiResult<bool> {
    let mut tx = db.begin_write().await?;
    let Some(t) = state(&mut tx, &c.ad_id).await? else {
        return Ok(false);
    };
    if t.status != "processing" || t.version != i64::from(c.version) {
        return Ok(false);
    }
    let now = crate::timestamp::now();
    let aspect = adforge_worker::swipe::taxonomy::aspect_ratio(result.width, result.height);
    let duration = i64::try_from(c.duration_ms).unwrap_or(i64::MAX);
    let rendered = store::Rendered {
        id: &c.ad_id,
        preview_url: &result.preview_url,
        width: result.width,
        height: result.height,
        aspect_ratio: aspect,
        duration_ms: duration,
        now: &now,
    };
    if c.version == 1 {
        let analysis = json!({
            "cache_hit": result.cache_hit,
            "composition": result.composition,
            "note": result.note,
        });
        store::complete_analysis(
            &mut tx,
            &rendered,
            &store::Analysed {
                tree: &result.json_tree,
                analysis: &analysis,
                reference_colours: &result.reference_colours,
                industry: result.industry.as_deref(),
                ad_format: result.ad_format.as_deref(),
            },
        )
        .await?;
    } else {
        // An edited tree may have changed the root's size.
        store::complete_preview(&mut tx, &rendered).await?;
    }
    if let Some(f) = figma {
        store::set_figma_sync(&mut tx, &c.ad_id, f).await?;
    }
    record(&mut tx, &t.org_id, &c.ad_id, "design_template.completed").await?;
    tx.commit().await?;
    Ok(true)
}

/// A failed analysis makes the template `failed` with the reason. A failed preview of an
/// edit (only infrastructure can cause one: a preview draws what it can) leaves the
/// edited tree in place: the template is `completed` without a preview, `error` says why.
///
/// # Errors
/// Database failures.
pub async fn failed(db: &Db, f: &AdFailed) -> ApiResult<bool> {
    let mut tx = db.begin_write().await?;
    let Some(t) = state(&mut tx, &f.ad_id).await? else {
        return Ok(false);
    };
    if t.status != "processing" || t.version != i64::from(f.version) {
        return Ok(false);
    }
    let now = crate::timestamp::now();
    // A code other than PIPELINE_ERROR (a Figma import's FIGMA_…) leads the reason.
    let message = if f.code == adforge_worker::PIPELINE_ERROR {
        f.message.clone()
    } else {
        format!("{}: {}", f.code, f.message)
    };
    if f.version == 1 {
        store::fail_analysis(&mut tx, &f.ad_id, &message, &now).await?;
        record(&mut tx, &t.org_id, &f.ad_id, "design_template.failed").await?;
    } else {
        let error = format!(
            "the preview of version {} could not be rendered: {}",
            f.version, f.message
        );
        store::fail_preview(&mut tx, &f.ad_id, error, &now).await?;
        record(&mut tx, &t.org_id, &f.ad_id, "design_template.completed").await?;
    }
    tx.commit().await?;
    Ok(true)
}

async fn record(
    conn: &mut sqlx::AnyConnection,
    org_id: &str,
    id: &str,
    event_type: &str,
) -> ApiResult<()> {
    if let Some(object) = super::snapshot(&mut *conn, org_id, id).await? {
        crate::webhooks::record(conn, org_id, event_type, id, object).await?;
    }
    Ok(())
}

/// The current job of every `processing` template, for the API's start-up to queue again.
///
/// # Errors
/// Database failures.
pub async fn unfinished(db: &Db) -> Result<Vec<adforge_worker::Job>, sqlx::Error> {
    Ok(store::processing_jobs(db)
        .await?
        .iter()
        .filter_map(|payload| serde_json::from_str(payload).ok())
        .collect())
}
