//! Every SQL statement of design-tool sync for image ads (the request side; the applier's
//! are in [`super::apply`]).

use adforge_worker::Job;
use adforge_worker::figma::url::FrameRef;

use sqlx::{AnyConnection, FromRow};

use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::resources::image_ads::Progress;
use crate::resources::integrations::FigmaSyncState;

/// What a re-sync reads of an ad.
#[derive(FromRow)]
pub(super) struct SyncedAd {
    pub status: String,
    pub current_version: i64,
    pub charged_at: Option<String>,
    pub brand_id: String,
    pub product_id: String,
    pub audience_id: String,
    pub product_variant_id: Option<String>,
    pub prompt: Option<String>,
    pub figma_file_key: Option<String>,
    pub figma_node_id: Option<String>,
    pub figma_sync: Option<String>,
}

pub(super) async fn load_synced<'e, E: sqlx::AnyExecutor<'e>>(
    ex: E,
    org_id: &str,
    id: &str,
) -> ApiResult<SyncedAd> {
    crate::store::query_as::<SyncedAd>(
        "SELECT status, current_version, charged_at, brand_id, product_id, audience_id, product_variant_id, \
         prompt, figma_file_key, figma_node_id, figma_sync \
         FROM image_ads WHERE id = ? AND org_id = ? AND deleted_at IS NULL",
    )
    .bind(id)
    .bind(org_id)
    .fetch_optional(ex)
    .await?
    .ok_or_else(|| ApiError::not_found(ErrorCode::ImageAdNotFound, "image ad", id))
}

/// The number a re-sync's version takes: after every version the ad has had (a failed
/// edit's included) and its current one.
pub(super) async fn next_version<'e, E: sqlx::AnyExecutor<'e>>(
    ex: E,
    id: &str,
    current: i64,
) -> ApiResult<i64> {
    let highest: Option<i64> = crate::store::query_scalar(
        "SELECT max(version_number) FROM image_ad_versions WHERE ad_id = ?",
    )
    .bind(id)
    .fetch_one(ex)
    .await?;
    Ok(highest.unwrap_or(0).max(current) + 1)
}

/// Records the frame a new ad is synced from.
pub(super) async fn set_frame(
    conn: &mut AnyConnection,
    id: &str,
    frame: &FrameRef,
    state: &FigmaSyncState,
) -> ApiResult<()> {
    crate::store::query(
        "UPDATE image_ads SET figma_file_key = ?, figma_node_id = ?, figma_sync = ? WHERE id = ?",
    )
    .bind(&frame.file_key)
    .bind(&frame.node_id)
    .bind(crate::store::to_json_text(state))
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// A re-sync's start.
pub(super) struct Resync<'a> {
    pub id: &'a str,
    pub org_id: &'a str,
    pub version: i64,
    pub progress: &'a Progress,
    pub job: &'a Job,
    pub state: &'a FigmaSyncState,
    pub now: &'a str,
}

/// Moves a completed or failed synced ad to `processing` at version `r.version` with the
/// sync's job; false when it is processing already (a concurrent request won).
pub(super) async fn start_resync(conn: &mut AnyConnection, r: &Resync<'_>) -> ApiResult<bool> {
    let done = crate::store::query(
        "UPDATE image_ads SET status = 'processing', progress = ?, current_version = ?, job = ?, figma_sync = ?, \
         error_code = NULL, error_message = NULL, updated_at = ? \
         WHERE id = ? AND org_id = ? AND status <> 'processing' AND deleted_at IS NULL",
    )
    .bind(crate::store::to_json_text(r.progress))
    .bind(r.version)
    .bind(crate::store::to_json_text(r.job))
    .bind(crate::store::to_json_text(r.state))
    .bind(r.now)
    .bind(r.id)
    .bind(r.org_id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}
