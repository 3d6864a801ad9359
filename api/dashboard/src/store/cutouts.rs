//! The cut-outs page's one query: the organisation's live cut-outs, each with the photo it
//! was cut out of.

use adforge_api::store::Db;

/// One live cut-out beside its source photo.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CutoutRow {
    /// The cut-out's image id.
    pub id: String,
    /// The cut-out's blob key.
    pub blob_key: String,
    /// How its mask was made (`colour_key`, `model`, `source_alpha`).
    pub cutout_method: Option<String>,
    pub created_at: String,
    /// The id of the image it was cut out of.
    pub source_id: String,
    /// The source's blob key.
    pub source_key: String,
    /// The source's medium thumbnail key.
    pub source_thumb: Option<String>,
    /// The source's alt text.
    pub alt_text: Option<String>,
}

/// The organisation's live cut-outs, newest first, at most `limit`.
///
/// # Errors
/// Database failures.
pub async fn cutouts(db: &Db, org_id: &str, limit: i64) -> Result<Vec<CutoutRow>, sqlx::Error> {
    adforge_api::store::query_as(
        "SELECT c.id AS id, c.blob_key AS blob_key, c.cutout_method AS cutout_method, \
         c.created_at AS created_at, s.id AS source_id, s.blob_key AS source_key, \
         s.thumb_medium_key AS source_thumb, s.alt_text AS alt_text \
         FROM images AS c JOIN images AS s ON s.id = c.cutout_of AND s.org_id = c.org_id \
         WHERE c.org_id = ? AND c.deleted_at IS NULL ORDER BY c.seq DESC LIMIT ?",
    )
    .bind(org_id)
    .bind(limit)
    .fetch_all(&db.read)
    .await
}
