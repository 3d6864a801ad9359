//! `/v1/design-packs`: named, organisation-wide collections of swipe-file designs.
//!
//! A pack stores links (`design_pack_items`), never copies. What a pack shows is computed
//! on every read from the designs the organisation can see now: an archived design, or one
//! whose data source was turned off, drops out of `item_count`, `previews` and the items
//! list, and returns when restored or re-enabled (rule 4). The 500-design cap counts every
//! link, hidden ones included, so re-enabling a source can never overfill a pack.
//!
//! Decisions where the spec is silent:
//! - DESIGN_PACK_NOT_FOUND 404; SWIPE_FILE_NOT_FOUND 404 with one `details` entry per bad id;
//!   DESIGN_PACK_FULL 409 (the pack's state forbids the add).
//! - `created_by` is null for packs created with an API key (keys belong to the
//!   organisation, not to a profile); the dashboard fills it for packs its users create.
//! - Service-curated packs (`is_managed`, a data source's) are read-only: changing one is
//!   409 CONFLICT.
//! - Listing: most recently updated first; archived packs are listed only with
//!   `archived=true` (which then lists only them).
//! - DELETE of items answers `{removed, not_present, item_count}`.
//!
//! Where things live: this module holds the routes, the request and response types and
//! the handlers (parse → domain call → respond), with the domain calls the web dashboard
//! shares (`list`, `respond`); [`store`] holds every SQL statement of the resource;
//! [`edit`] creating, renaming and archiving packs; [`items`] adding and removing a
//! pack's designs.

mod edit;
mod items;
mod store;

pub use edit::{create, set_archived, update};
pub use items::{add_designs, remove_designs};

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::{IdPath, Patch};
use crate::auth::{Auth, Scope};
use crate::blob::BlobStore;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::http::envelope::{self, Deleted, Envelope, ListEnvelope};
use crate::http::extract::{JsonBody, QueryParams};
use crate::state::AppState;
use crate::store::Db;
use crate::store::list::{DEFAULT_LIMIT, MAX_LIMIT};
use crate::swipe::filter::SwipeFilter;
use store::PackRow;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_packs, create_pack))
        .routes(routes!(get_pack, update_pack, delete_pack))
        .routes(routes!(archive_pack))
        .routes(routes!(unarchive_pack))
        .routes(routes!(list_items, add_items, remove_items))
}

/// Largest pack.
pub const PACK_MAX: i64 = 500;
/// Most ids per add or remove call.
pub const PER_CALL_MAX: usize = 100;
const TITLE_MAX: usize = 80;
const DESCRIPTION_MAX: usize = 500;

/// One of a pack's most recently added visible designs.
#[derive(Debug, Serialize, ToSchema)]
pub struct Preview {
    pub swipe_file_id: String,
    pub image_url: String,
    pub width: Option<i64>,
    pub height: Option<i64>,
}

/// Who created a pack.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedBy {
    pub profile_id: String,
    pub name: String,
}

/// A design pack.
#[derive(Debug, Serialize, ToSchema)]
pub struct DesignPack {
    /// `dp_…`
    pub id: String,
    /// 1-80 characters.
    pub title: String,
    /// Up to 500 characters.
    pub description: Option<String>,
    /// True for service-curated packs (read-only).
    pub is_managed: bool,
    /// Designs in the pack the organisation can currently see.
    pub item_count: i64,
    /// Up to 4 most recently added visible designs.
    pub previews: Vec<Preview>,
    /// Only when listed with swipe-file filters: designs in the pack that match them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched_item_count: Option<i64>,
    /// `{profile_id, name}` of the member who created the pack in the web dashboard; null
    /// for packs created with an API key.
    pub created_by: Option<CreatedBy>,
    pub archived_at: Option<String>,
    pub created_at: String,
    /// Moved by renaming and by adding or removing designs.
    pub updated_at: String,
}

/// The pack as the API shows it, with its previews; `matched`: show `matched_item_count`.
async fn into_api(
    db: &Db,
    blobs: &dyn BlobStore,
    org_id: &str,
    row: PackRow,
    matched: bool,
) -> ApiResult<DesignPack> {
    Ok(DesignPack {
        previews: store::previews(db, org_id, &row.id)
            .await?
            .into_iter()
            .map(|(id, key, width, height)| Preview {
                swipe_file_id: id,
                image_url: blobs.url(&key),
                width,
                height,
            })
            .collect(),
        is_managed: row.org_id.is_none(),
        matched_item_count: matched.then_some(row.matched),
        created_by: match (row.created_by_profile, row.created_by_name) {
            (Some(profile_id), Some(name)) => Some(CreatedBy { profile_id, name }),
            _ => None,
        },
        id: row.id,
        title: row.title,
        description: row.description,
        item_count: row.item_count,
        archived_at: row.archived_at,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

/// 404 DESIGN_PACK_NOT_FOUND unless the organisation sees pack `id`.
///
/// # Errors
/// DESIGN_PACK_NOT_FOUND; database failures.
pub async fn require_visible(db: &Db, org_id: &str, id: &str) -> ApiResult<()> {
    if store::is_visible(db, org_id, id).await? {
        Ok(())
    } else {
        Err(ApiError::not_found(
            ErrorCode::DesignPackNotFound,
            "design pack",
            id,
        ))
    }
}

/// The visible pack `id` as the API answers it.
///
/// # Errors
/// DESIGN_PACK_NOT_FOUND; database failures.
pub async fn respond(
    db: &Db,
    blobs: &dyn BlobStore,
    org_id: &str,
    id: &str,
) -> ApiResult<DesignPack> {
    let row = store::load(db, org_id, id).await?;
    into_api(db, blobs, org_id, row, false).await
}

/// Loads an own (changeable) pack or explains why not.
async fn own_pack(db: &Db, org_id: &str, id: &str) -> ApiResult<PackRow> {
    let row = store::load(db, org_id, id).await?;
    if row.org_id.is_none() {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!(
                "`{id}` is a service-curated pack and is read-only; create your own pack and add its designs to it"
            ),
        ));
    }
    Ok(row)
}

/// List design packs
///
/// Most recently updated first. With swipe-file filters (industry, ad_format, aspect_ratio,
/// status, data_source_ids, include_own), only packs holding a matching visible design are
/// listed, each with `matched_item_count`. `archived=true` lists only archived packs.
#[utoipa::path(get, path = "/v1/design-packs", tag = "design packs",
    params(
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1-100, default 20"),
        ("starting_after" = Option<String>, Query, description = "Id of the last pack already received"),
        ("archived" = Option<bool>, Query, description = "`true`: only archived packs; default `false`"),
        ("status" = Option<String>, Query, description = "processing, ready or failed"),
        ("industry" = Option<Vec<String>>, Query, description = "Repeatable"),
        ("ad_format" = Option<Vec<String>>, Query, description = "Repeatable"),
        ("aspect_ratio" = Option<Vec<String>>, Query, description = "Repeatable"),
        ("data_source_ids" = Option<String>, Query, description = "Comma-separated sfs_ ids; empty: no managed designs"),
        ("include_own" = Option<bool>, Query, description = "Default `true`"),
    ),
    responses(
        (status = 200, description = "A page of packs", body = ListEnvelope<DesignPack>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["design_packs:read"])))]
async fn list_packs(
    State(state): State<AppState>,
    Auth(caller): Auth,
    q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::DesignPacksRead)?;
    let mut q = q;
    let limit = q.int("limit", 1, MAX_LIMIT, DEFAULT_LIMIT);
    let after = q.string("starting_after");
    let filter = PackFilter {
        archived: q.bool("archived", false),
        designs: SwipeFilter::from_query(&mut q, false, false),
    };
    q.finish()?;
    Ok(list(
        &state.db,
        state.blobs.as_ref(),
        &caller.org_id,
        &filter,
        after.as_deref(),
        limit,
    )
    .await?
    .into_response())
}

/// Which packs a list shows.
#[derive(Debug, Clone)]
pub struct PackFilter {
    /// Archived packs instead of active ones.
    pub archived: bool,
    /// Only packs holding designs that match (and then `item_count` counts the matches).
    pub designs: SwipeFilter,
}

impl Default for PackFilter {
    /// Active packs, whatever they hold.
    fn default() -> Self {
        Self {
            archived: false,
            designs: SwipeFilter::visible(),
        }
    }
}

/// A page of the organisation's packs with `filter`, after the pack `after` (what GET
/// /v1/design-packs answers; the dashboard's packs and swipe pages call it too).
///
/// # Errors
/// VALIDATION_ERROR; database failures.
pub async fn list(
    db: &Db,
    blobs: &dyn BlobStore,
    org: &str,
    filter: &PackFilter,
    after: Option<&str>,
    limit: i64,
) -> ApiResult<crate::http::envelope::Page<DesignPack>> {
    let mut errors = Vec::new();
    filter.designs.validate(&mut errors);
    super::common::finish(errors)?;
    let matched = filter.designs.is_active();
    let page = store::list(
        db,
        org,
        filter.archived,
        matched.then_some(&filter.designs),
        after,
        limit,
    )
    .await?;
    let crate::http::envelope::Page {
        items: rows,
        has_more,
        total_count,
        ..
    } = page;
    let mut data = Vec::with_capacity(rows.len());
    for r in rows {
        data.push(into_api(db, blobs, org, r, matched).await?);
    }
    Ok(crate::http::envelope::Page {
        items: data,
        has_more,
        total_count,
        facets: None,
    })
}

/// The body of a pack creation.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PackCreate {
    #[schema(min_length = 1, max_length = 80)]
    pub title: String,
    #[schema(max_length = 500)]
    pub description: Option<String>,
    /// Designs to add at once, at most 100.
    #[schema(max_items = 100)]
    pub swipe_file_ids: Option<Vec<String>>,
}

/// The body of a pack update.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PackUpdate {
    #[serde(default)]
    #[schema(min_length = 1, max_length = 80, value_type = Option<String>)]
    pub title: Patch<String>,
    /// null clears it.
    #[serde(default)]
    #[schema(max_length = 500, value_type = Option<String>)]
    pub description: Patch<String>,
}

/// Create a design pack
///
/// Optionally with up to 100 designs (own uploads or designs of subscribed sources).
/// `created_by` is null for packs created with an API key.
#[utoipa::path(post, path = "/v1/design-packs", tag = "design packs",
    request_body = PackCreate,
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 201, description = "The pack", body = Envelope<DesignPack>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 404, description = "SWIPE_FILE_NOT_FOUND: details lists each id", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["design_packs:write"])))]
async fn create_pack(
    State(state): State<AppState>,
    Auth(caller): Auth,
    body: JsonBody<PackCreate>,
) -> ApiResult<Response> {
    caller.require(Scope::DesignPacksWrite)?;
    let body = body.parse()?;
    Ok(envelope::created(
        create(&state.db, state.blobs.as_ref(), &caller.org_id, body, None).await?,
    ))
}

/// Retrieve a design pack
#[utoipa::path(get, path = "/v1/design-packs/{id}", tag = "design packs",
    params(("id" = String, Path, description = "dp_…")),
    responses(
        (status = 200, description = "The pack", body = Envelope<DesignPack>),
        (status = 404, description = "DESIGN_PACK_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["design_packs:read"])))]
async fn get_pack(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::DesignPacksRead)?;
    Ok(envelope::ok(
        respond(&state.db, state.blobs.as_ref(), &caller.org_id, &id).await?,
    ))
}

/// Rename or describe a design pack
#[utoipa::path(patch, path = "/v1/design-packs/{id}", tag = "design packs",
    params(("id" = String, Path, description = "dp_…")),
    request_body = PackUpdate,
    responses(
        (status = 200, description = "The pack", body = Envelope<DesignPack>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 404, description = "DESIGN_PACK_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 409, description = "CONFLICT: a service-curated pack", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["design_packs:write"])))]
async fn update_pack(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    body: JsonBody<PackUpdate>,
) -> ApiResult<Response> {
    caller.require(Scope::DesignPacksWrite)?;
    own_pack(&state.db, &caller.org_id, &id).await?;
    let body = body.parse()?;
    Ok(envelope::ok(
        update(&state.db, state.blobs.as_ref(), &caller.org_id, &id, body).await?,
    ))
}

/// Delete a design pack
///
/// The pack goes; its designs stay in the swipe file.
#[utoipa::path(delete, path = "/v1/design-packs/{id}", tag = "design packs",
    params(("id" = String, Path, description = "dp_…")),
    responses(
        (status = 200, description = "Deleted", body = Deleted),
        (status = 404, description = "DESIGN_PACK_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 409, description = "CONFLICT: a service-curated pack", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["design_packs:write"])))]
async fn delete_pack(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::DesignPacksWrite)?;
    own_pack(&state.db, &caller.org_id, &id).await?;
    let mut tx = state.db.begin_write_for(&caller.org_id).await?;
    store::delete_pack(&mut tx, &id).await?;
    tx.commit().await?;
    Ok(Deleted::response(id))
}

/// Archive a design pack
///
/// Sets `archived_at`; archived packs leave the default listing and global search.
#[utoipa::path(post, path = "/v1/design-packs/{id}/archive", tag = "design packs",
    params(("id" = String, Path, description = "dp_…")),
    responses(
        (status = 200, description = "The pack, archived", body = Envelope<DesignPack>),
        (status = 404, description = "DESIGN_PACK_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 409, description = "CONFLICT: a service-curated pack", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["design_packs:write"])))]
async fn archive_pack(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::DesignPacksWrite)?;
    Ok(envelope::ok(
        set_archived(&state.db, state.blobs.as_ref(), &caller.org_id, &id, true).await?,
    ))
}

/// Unarchive a design pack
#[utoipa::path(post, path = "/v1/design-packs/{id}/unarchive", tag = "design packs",
    params(("id" = String, Path, description = "dp_…")),
    responses(
        (status = 200, description = "The pack, active", body = Envelope<DesignPack>),
        (status = 404, description = "DESIGN_PACK_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 409, description = "CONFLICT: a service-curated pack", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["design_packs:write"])))]
async fn unarchive_pack(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::DesignPacksWrite)?;
    Ok(envelope::ok(
        set_archived(&state.db, state.blobs.as_ref(), &caller.org_id, &id, false).await?,
    ))
}

/// List a pack's designs
///
/// The visible, active designs of the pack, with the filters, facets and paging of GET
/// /v1/swipe-files.
#[utoipa::path(get, path = "/v1/design-packs/{id}/items", tag = "design packs",
    params(
        ("id" = String, Path, description = "dp_…"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1-100, default 20"),
        ("starting_after" = Option<String>, Query, description = "Id of the last design already received"),
        ("ids" = Option<String>, Query, description = "Comma-separated sf_ ids"),
        ("status" = Option<String>, Query, description = "processing, ready or failed"),
        ("industry" = Option<Vec<String>>, Query, description = "Repeatable"),
        ("ad_format" = Option<Vec<String>>, Query, description = "Repeatable"),
        ("aspect_ratio" = Option<Vec<String>>, Query, description = "Repeatable"),
        ("archived" = Option<bool>, Query, description = "`true`: only archived own uploads"),
        ("data_source_ids" = Option<String>, Query, description = "Comma-separated sfs_ ids; empty: no managed designs"),
        ("include_own" = Option<bool>, Query, description = "Default `true`"),
        ("facets" = Option<String>, Query, description = "Comma-separated: industry, ad_format, aspect_ratio"),
    ),
    responses(
        (status = 200, description = "A page of designs", body = ListEnvelope<super::swipe_files::SwipeFile>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 404, description = "DESIGN_PACK_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["design_packs:read"])))]
async fn list_items(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::DesignPacksRead)?;
    require_visible(&state.db, &caller.org_id, &id).await?;
    super::swipe_files::list_page(&state, &caller.org_id, q, Some(id)).await
}

/// The body of adding or removing designs.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemsBody {
    /// At most 100 sf_ ids.
    #[schema(min_items = 1, max_items = 100)]
    pub swipe_file_ids: Vec<String>,
}

/// What adding designs did.
#[derive(Serialize, ToSchema)]
pub struct Added {
    pub added: Vec<String>,
    pub already_present: Vec<String>,
    /// Visible designs in the pack afterwards.
    pub item_count: i64,
}

/// What removing designs did.
#[derive(Serialize, ToSchema)]
pub struct Removed {
    pub removed: Vec<String>,
    /// Ids that were not in the pack.
    pub not_present: Vec<String>,
    /// Visible designs in the pack afterwards.
    pub item_count: i64,
}

/// Add designs to a pack
///
/// Idempotent: designs already in the pack are listed in `already_present`. At most 100 ids
/// per call; a pack holds at most 500 designs (409 DESIGN_PACK_FULL). Every id must be a
/// design the organisation sees (404 SWIPE_FILE_NOT_FOUND, `details` per bad id; nothing is
/// added then).
#[utoipa::path(post, path = "/v1/design-packs/{id}/items", tag = "design packs",
    params(("id" = String, Path, description = "dp_…")),
    request_body = ItemsBody,
    responses(
        (status = 200, description = "What was added", body = Envelope<Added>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 404, description = "DESIGN_PACK_NOT_FOUND, SWIPE_FILE_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 409, description = "DESIGN_PACK_FULL; CONFLICT for a service-curated pack", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["design_packs:write"])))]
async fn add_items(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    body: JsonBody<ItemsBody>,
) -> ApiResult<Response> {
    caller.require(Scope::DesignPacksWrite)?;
    own_pack(&state.db, &caller.org_id, &id).await?;
    let body = body.parse()?;
    Ok(envelope::ok(
        add_designs(&state.db, &caller.org_id, &id, &body.swipe_file_ids).await?,
    ))
}

/// Remove designs from a pack
///
/// JSON body `{swipe_file_ids}` (at most 100). Ids not in the pack are listed in
/// `not_present`; the designs stay in the swipe file.
#[utoipa::path(delete, path = "/v1/design-packs/{id}/items", tag = "design packs",
    params(("id" = String, Path, description = "dp_…")),
    request_body = ItemsBody,
    responses(
        (status = 200, description = "What was removed", body = Envelope<Removed>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 404, description = "DESIGN_PACK_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 409, description = "CONFLICT: a service-curated pack", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["design_packs:write"])))]
async fn remove_items(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    body: JsonBody<ItemsBody>,
) -> ApiResult<Response> {
    caller.require(Scope::DesignPacksWrite)?;
    own_pack(&state.db, &caller.org_id, &id).await?;
    let body = body.parse()?;
    Ok(envelope::ok(
        remove_designs(&state.db, &caller.org_id, &id, &body.swipe_file_ids).await?,
    ))
}

/// Pack hits of the global search: visible, active packs whose title contains `needle`
/// (or `ids` in resolve mode), as (id, title, is_managed).
///
/// # Errors
/// Database failures.
pub async fn search(
    db: &Db,
    org_id: &str,
    needle: &str,
    limit: i64,
    ids: Option<&[String]>,
) -> ApiResult<Vec<(String, String, bool)>> {
    store::search(db, org_id, needle, limit, ids).await
}
