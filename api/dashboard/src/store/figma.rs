//! The Figma page's one query.

use adforge_api::store::Db;

/// The organisation's ads synced from Figma, newest first, at most `limit`.
///
/// # Errors
/// Database failures.
pub async fn synced_ads(db: &Db, org_id: &str, limit: i64) -> Result<Vec<String>, sqlx::Error> {
    adforge_api::store::query_scalar(
        "SELECT id FROM image_ads WHERE org_id = ? AND figma_file_key IS NOT NULL AND deleted_at IS NULL \
         ORDER BY seq DESC LIMIT ?",
    )
    .bind(org_id)
    .bind(limit)
    .fetch_all(&db.read)
    .await
}
