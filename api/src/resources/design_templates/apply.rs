//! Applying a worker's design-template result, exactly once in effect: only a
//! `processing` template whose `json_tree_version` is the event's changes, so a
//! redelivered event does nothing; the webhook event of the change is written in the same
//! transaction.

use adforge_worker::{AdCompleted, AdFailed};
use serde_json::json;

use crate::error::ApiResult;
use crate::store::Db;

struct State {
    org_id: String,
    status: String,
    version: i64,
}

async fn state(conn: &mut sqlx::AnyConnection, id: &str) -> ApiResult<Option<State>> {
    let row: Option<(String, String, i64)> = crate::store::query_as(
        "SELECT org_id, status, json_tree_version FROM design_templates WHERE id = ?",
    )
    .bind(id)
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|(org_id, status, version)| State {
        org_id,
        status,
        version,
    }))
}

/// A finished analysis (version 1: tree, preview, size, analysis) or preview of an edit
/// (later versions: the preview; the tree is already the edited one). Returns whether
/// anything changed.
///
/// # Errors
/// Database failures (the event is then redelivered).
pub async fn completed(db: &Db, c: &AdCompleted) -> ApiResult<bool> {
    let Some(result) = &c.design_template else {
        return Ok(false);
    };
    let mut tx = db.begin_write().await?;
    let Some(t) = state(&mut tx, &c.ad_id).await? else {
        return Ok(false);
    };
    if t.status != "processing" || t.version != i64::from(c.version) {
        return Ok(false);
    }
    let now = crate::timestamp::now();
    let aspect = crate::swipe::taxonomy::aspect_ratio(c.width, c.height);
    let duration = i64::try_from(c.duration_ms).unwrap_or(i64::MAX);
    if c.version == 1 {
        let analysis = json!({
            "cache_hit": result.cache_hit,
            "composition": result.composition,
            "note": result.note,
        });
        crate::store::query(
            "UPDATE design_templates SET status = 'completed', current_json_tree = ?, preview_url = ?, width = ?, \
             height = ?, aspect_ratio = ?, duration_ms = ?, analysis = ?, reference_colours = ?, error = NULL, \
             industry = coalesce(industry, ?), ad_format = coalesce(ad_format, ?), version_created_at = ?, \
             updated_at = ? WHERE id = ?",
        )
        .bind(crate::store::to_json_text(&result.json_tree))
        .bind(&c.image_url)
        .bind(i64::from(c.width))
        .bind(i64::from(c.height))
        .bind(aspect)
        .bind(duration)
        .bind(crate::store::to_json_text(&analysis))
        .bind(crate::store::to_json_text(&result.reference_colours))
        .bind(&result.industry)
        .bind(&result.ad_format)
        .bind(&now)
        .bind(&now)
        .bind(&c.ad_id)
        .execute(&mut *tx)
        .await?;
    } else {
        // An edited tree may have changed the root's size.
        crate::store::query(
            "UPDATE design_templates SET status = 'completed', preview_url = ?, width = ?, height = ?, \
             aspect_ratio = ?, duration_ms = ?, error = NULL, updated_at = ? WHERE id = ?",
        )
        .bind(&c.image_url)
        .bind(i64::from(c.width))
        .bind(i64::from(c.height))
        .bind(aspect)
        .bind(duration)
        .bind(&now)
        .bind(&c.ad_id)
        .execute(&mut *tx)
        .await?;
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
    if f.version == 1 {
        crate::store::query(
            "UPDATE design_templates SET status = 'failed', error = ?, updated_at = ? WHERE id = ?",
        )
        .bind(&f.message)
        .bind(&now)
        .bind(&f.ad_id)
        .execute(&mut *tx)
        .await?;
        record(&mut tx, &t.org_id, &f.ad_id, "design_template.failed").await?;
    } else {
        crate::store::query(
            "UPDATE design_templates SET status = 'completed', preview_url = NULL, error = ?, updated_at = ? WHERE id = ?",
        )
        .bind(format!(
            "the preview of version {} could not be rendered: {}",
            f.version, f.message
        ))
        .bind(&now)
        .bind(&f.ad_id)
        .execute(&mut *tx)
        .await?;
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
