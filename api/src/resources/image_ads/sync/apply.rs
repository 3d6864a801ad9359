//! Applying a sync's result to an ad, exactly once in effect (only a `processing` ad at the
//! event's version changes), in one transaction with the wallet capture and the webhook
//! event: a new import becomes the ad's version (its tree, PNG, Figma's render and the
//! report); an unchanged frame puts the ad back at its previous version.

use adforge_worker::{AdCompleted, ImageAdRendered, protocol::FigmaSynced};

use crate::error::ApiResult;
use crate::metrics::Applied;
use crate::resources::integrations::{FigmaImportReport, FigmaSyncState};
use crate::store::Db;

struct AdState {
    org_id: String,
    status: String,
    current_version: i64,
    price_cents: i64,
    charged_at: Option<String>,
    figma_sync: Option<String>,
}

async fn ad_state(conn: &mut sqlx::AnyConnection, id: &str) -> ApiResult<Option<AdState>> {
    let row: Option<(String, String, i64, i64, Option<String>, Option<String>)> =
        crate::store::query_as(
            "SELECT org_id, status, current_version, price_cents, charged_at, figma_sync FROM image_ads WHERE id = ?",
        )
        .bind(id)
        .fetch_optional(conn)
        .await?;
    Ok(row.map(
        |(org_id, status, current_version, price_cents, charged_at, figma_sync)| AdState {
            org_id,
            status,
            current_version,
            price_cents,
            charged_at,
            figma_sync,
        },
    ))
}

/// The stored sync state after `f` (design templates store theirs with it too).
pub fn next_state(before: Option<&str>, f: &FigmaSynced, now: &str) -> FigmaSyncState {
    let mut s: FigmaSyncState = before
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default();
    s.file_name = Some(f.file_name.clone());
    s.file_version = Some(f.frame.file_version.clone());
    s.frame_hash = Some(f.frame.frame_hash.clone());
    s.last_modified = Some(f.last_modified.clone());
    s.synced_at = Some(now.to_owned());
    if !f.unchanged {
        if f.figma_render_url.is_some() {
            s.render_url = f.figma_render_url.clone();
        }
        s.report = serde_json::to_value(&f.report)
            .ok()
            .and_then(|v| serde_json::from_value::<FigmaImportReport>(v).ok());
    }
    s
}

/// Applies a completed sync of an image ad: `rendered` is the import, `None` when the frame
/// had not changed. `None` when nothing changed (a redelivery).
///
/// # Errors
/// Database failures (the event is then redelivered).
pub async fn completed(
    db: &Db,
    c: &AdCompleted,
    f: &FigmaSynced,
    rendered: Option<&ImageAdRendered>,
) -> ApiResult<Option<Applied>> {
    let duration = Some(std::time::Duration::from_millis(c.duration_ms));
    let mut tx = db.begin_write().await?;
    let Some(ad) = ad_state(&mut tx, &c.ad_id).await? else {
        return Ok(None);
    };
    if ad.status != "processing" || ad.current_version != i64::from(c.version) {
        return Ok(None);
    }
    let now = crate::timestamp::now();
    let state = crate::store::to_json_text(&next_state(ad.figma_sync.as_deref(), f, &now));
    let Some(r) = rendered else {
        // Nothing new: back to the version the ad had (its latest version row).
        let previous: Option<i64> = crate::store::query_scalar(
            "SELECT max(version_number) FROM image_ad_versions WHERE ad_id = ? AND status = 'completed'",
        )
        .bind(&c.ad_id)
        .fetch_one(&mut *tx)
        .await?;
        crate::store::query(
            "UPDATE image_ads SET status = 'completed', progress = NULL, current_version = ?, figma_sync = ?, \
             error_code = NULL, error_message = NULL, updated_at = ? WHERE id = ?",
        )
        .bind(previous.unwrap_or(ad.current_version - 1).max(1))
        .bind(&state)
        .bind(&now)
        .bind(&c.ad_id)
        .execute(&mut *tx)
        .await?;
        crate::jobs::record_ad_event(&mut tx, &ad.org_id, &c.ad_id, "image_ad.completed").await?;
        tx.commit().await?;
        return Ok(Some(Applied {
            kind: "image_ad",
            outcome: "completed",
            duration,
            wallet: None,
        }));
    };
    let tree = r.json_tree.as_ref().map(crate::store::to_json_text);
    crate::store::query(
        "UPDATE image_ads SET status = 'completed', progress = NULL, image_url = ?, width = ?, height = ?, \
         duration_ms = ?, completed_at = ?, updated_at = ?, current_json_tree = coalesce(?, current_json_tree), \
         figma_render_url = coalesce(?, figma_render_url), \
         initial_figma_render_url = coalesce(initial_figma_render_url, ?), figma_sync = ?, \
         error_code = NULL, error_message = NULL WHERE id = ?",
    )
    .bind(&r.image_url)
    .bind(i64::from(r.width))
    .bind(i64::from(r.height))
    .bind(i64::try_from(c.duration_ms).unwrap_or(i64::MAX))
    .bind(&now)
    .bind(&now)
    .bind(&tree)
    .bind(&f.figma_render_url)
    .bind(&f.figma_render_url)
    .bind(&state)
    .bind(&c.ad_id)
    .execute(&mut *tx)
    .await?;
    crate::store::query(
        "INSERT INTO image_ad_versions (id, ad_id, org_id, version_number, json_tree, image_url, width, height, \
         status, created_at, completed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'completed', ?, ?) \
         ON CONFLICT(ad_id, version_number) DO NOTHING",
    )
    .bind(crate::ids::new_id("iav"))
    .bind(&c.ad_id)
    .bind(&ad.org_id)
    .bind(i64::from(c.version))
    .bind(tree.as_deref().unwrap_or("{}"))
    .bind(&r.image_url)
    .bind(i64::from(r.width))
    .bind(i64::from(r.height))
    .bind(&now)
    .bind(&now)
    .execute(&mut *tx)
    .await?;
    let charge = ad.charged_at.is_none();
    if charge {
        crate::wallet::capture(&mut tx, &ad.org_id, ad.price_cents, &c.ad_id).await?;
        crate::store::query("UPDATE image_ads SET charged_at = ? WHERE id = ?")
            .bind(&now)
            .bind(&c.ad_id)
            .execute(&mut *tx)
            .await?;
    }
    crate::jobs::record_ad_event(&mut tx, &ad.org_id, &c.ad_id, "image_ad.completed").await?;
    tx.commit().await?;
    Ok(Some(Applied {
        kind: "image_ad",
        outcome: "completed",
        duration,
        wallet: charge.then_some(("capture", ad.price_cents)),
    }))
}

/// After a failed sync of a synced ad: its current version goes back to its latest
/// completed version (a re-sync's new version was never made), so the next re-sync
/// numbers on from there. Runs in the failure's transaction; nothing for other ads.
///
/// # Errors
/// Database failures.
pub async fn after_failed(conn: &mut sqlx::AnyConnection, ad_id: &str) -> ApiResult<()> {
    // Only when the failed version has no row of its own (a sync's; a PATCH's failed
    // render keeps its row and its number).
    crate::store::query(
        "UPDATE image_ads SET current_version = (SELECT max(version_number) FROM image_ad_versions \
         WHERE ad_id = ? AND status = 'completed') \
         WHERE id = ? AND figma_file_key IS NOT NULL AND EXISTS (SELECT 1 FROM image_ad_versions \
         WHERE ad_id = ? AND status = 'completed') AND NOT EXISTS (SELECT 1 FROM image_ad_versions \
         WHERE ad_id = ? AND version_number = image_ads.current_version)",
    )
    .bind(ad_id)
    .bind(ad_id)
    .bind(ad_id)
    .bind(ad_id)
    .execute(conn)
    .await?;
    Ok(())
}
