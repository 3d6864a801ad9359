//! The SQL of campaign sets (issue 42): what a resize reads of its source ad, an ad
//! joining a set, and the members of a set. A part of [`super`] in a file of its own so
//! the store stays within its length.

use sqlx::{AnyConnection, FromRow};

use crate::error::{ApiError, ApiResult, ErrorCode};

/// What a resize reads of the ad it remakes.
#[derive(FromRow)]
pub(in crate::resources::image_ads) struct ResizeSource {
    pub id: String,
    pub status: String,
    #[sqlx(try_from = "crate::store::Flag")]
    pub editable: bool,
    pub brand_id: String,
    pub product_id: String,
    pub audience_id: String,
    pub product_variant_id: Option<String>,
    pub reference_ad_url: String,
    pub prompt: Option<String>,
    pub search_name: String,
    pub source_design_template_id: Option<String>,
    pub source_design_template_version: Option<i64>,
    /// The JSON of the job of the current version (a new ad's, or an edit's re-render).
    pub job: String,
    /// The tree of the current version (editable ads, once completed).
    pub current_json_tree: Option<String>,
    pub size_set_id: Option<String>,
    pub created_at: String,
}

/// The live ad `id` of `org_id` as a resize reads it.
///
/// # Errors
/// IMAGE_AD_NOT_FOUND (also for another organisation's ad); database failures.
pub(in crate::resources::image_ads) async fn resize_source(
    conn: &mut AnyConnection,
    org_id: &str,
    id: &str,
) -> ApiResult<ResizeSource> {
    crate::store::query_as(
        "SELECT id, status, editable, brand_id, product_id, audience_id, product_variant_id, reference_ad_url, \
         prompt, search_name, source_design_template_id, source_design_template_version, job, current_json_tree, \
         size_set_id, created_at FROM image_ads WHERE id = ? AND org_id = ? AND deleted_at IS NULL",
    )
    .bind(id)
    .bind(org_id)
    .fetch_optional(conn)
    .await?
    .ok_or_else(|| ApiError::not_found(ErrorCode::ImageAdNotFound, "image ad", id))
}

/// Makes ad `id` the first ad of its own set, unless it is in one already.
///
/// # Errors
/// Database failures.
pub(in crate::resources::image_ads) async fn join_set(
    conn: &mut AnyConnection,
    id: &str,
) -> ApiResult<()> {
    crate::store::query(
        "UPDATE image_ads SET size_set_id = ? WHERE id = ? AND size_set_id IS NULL",
    )
    .bind(id)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// A live ad of a set, as an edit applied to the set reads it.
#[derive(FromRow)]
pub(in crate::resources::image_ads) struct SetMember {
    pub id: String,
    pub status: String,
    #[sqlx(try_from = "crate::store::Flag")]
    pub editable: bool,
    pub current_json_tree: Option<String>,
}

/// The live ads of set `set_id` of `org_id`, oldest first.
///
/// # Errors
/// Database failures.
pub(in crate::resources::image_ads) async fn set_members(
    conn: &mut AnyConnection,
    org_id: &str,
    set_id: &str,
) -> ApiResult<Vec<SetMember>> {
    Ok(crate::store::query_as(
        "SELECT id, status, editable, current_json_tree FROM image_ads \
         WHERE org_id = ? AND size_set_id = ? AND deleted_at IS NULL ORDER BY seq",
    )
    .bind(org_id)
    .bind(set_id)
    .fetch_all(conn)
    .await?)
}
