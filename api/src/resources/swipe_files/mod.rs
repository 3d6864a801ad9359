//! `/v1/swipe-files`: uploads (ingested by a worker job), lists with filters and facets,
//! archive/restore, filtered vector search, and data-source subscriptions.
//!
//! Decisions where the spec is silent:
//! - SWIPE_FILE_READ_ONLY is 409 (the request is well-formed and allowed by the key; the
//!   design's state, managed, forbids it).
//! - A missing or invisible swipe file is 404 SWIPE_FILE_NOT_FOUND.
//! - Restore answers `data`: the swipe file; restoring an active own upload is a no-op.
//! - The subscription toggle answers `data`: the data source `{id, name, subscribed,
//!   item_count}`; `item_count` counts the source's ready designs.
//! - Search by example: `swipe_file_id` (a visible design; excluded from its own hits) or
//!   `image_url` instead of `query`, compared by image vectors; `min_similarity` drops hits
//!   below a cosine similarity.
//!
//! Where things live: this module holds the routes, the request and response types and
//! the handlers (parse → domain call → respond), with the domain calls the web dashboard
//! and design packs share (`list`, `set_archived`, `subscribe`, `data_sources`);
//! [`store`] holds every SQL statement of the resource; [`upload`] the upload form and
//! [`create`]; [`search`](mod@search) the ranked search and the global search's hits;
//! [`apply`] a worker's ingest result; [`sources`] the data sources (managed collections)
//! and [`imports`] bulk imports into them. The search engine they use is `crate::swipe`.

pub mod apply;
pub mod imports;
mod search;
pub mod sources;
mod store;
mod upload;

pub use search::{search, search_labels};
pub use store::{COLUMNS, SwipeRow, load, subscribed_sources};
pub use upload::{StoredOriginal, create, stage_stored, stage_url, store_original};

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use sqlx::FromRow;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::IdPath;
use crate::auth::{Auth, Scope};
use crate::blob::BlobStore;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::http::envelope::{self, Deleted, Envelope, ListEnvelope, Meta};
use crate::http::extract::{JsonBody, QueryParams};
use crate::state::AppState;
use crate::store::Db;
use crate::store::list::ListParams;
use crate::swipe::filter::SwipeFilter;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(upload_swipe_file, list_swipe_files))
        .routes(routes!(search_swipe_files))
        .routes(routes!(list_data_sources))
        .routes(routes!(set_subscription))
        .routes(routes!(get_swipe_file, archive_swipe_file))
        .routes(routes!(restore_swipe_file))
}

/// Facet dimensions of swipe-file lists.
pub const FACETS: [&str; 3] = ["industry", "ad_format", "aspect_ratio"];

/// A design in the swipe file.
#[derive(Debug, Serialize, ToSchema)]
pub struct SwipeFile {
    /// `sf_…`
    pub id: String,
    /// The stored image (WebP uploads are stored as PNG).
    pub image_url: String,
    /// 200 px WebP preview; null while processing.
    pub thumbnail_url: Option<String>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    /// Nearest of 1:1, 4:5, 9:16, 1.91:1, 16:9, 2:3, 3:4.
    pub aspect_ratio: Option<String>,
    /// Top level of the Google product taxonomy (snake_case, e.g. `food_beverages_tobacco`);
    /// null when undecided. Discover values through facets.
    pub industry: Option<String>,
    /// product_shot, lifestyle, offer_sale, testimonial, before_after, comparison, listicle,
    /// statistic, text_only or announcement; null when undecided.
    pub ad_format: Option<String>,
    #[schema(value_type = String, example = "upload")]
    /// upload, import, studio_concept or svc_managed.
    pub source: String,
    /// True for designs of a managed data source (read-only).
    pub is_managed: bool,
    /// The data source (`sfs_…`) of a managed design; null for own uploads.
    pub data_source_id: Option<String>,
    /// processing, ready or failed.
    pub status: String,
    /// Why ingest failed (status failed).
    pub error: Option<String>,
    /// Set while archived (own uploads only).
    pub archived_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// Search hits only: cosine similarity to the query, -1 to 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
}

/// The multipart form of an upload (for the OpenAPI description).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct SwipeFileUpload {
    /// The design: PNG, JPEG or WebP (WebP is stored as PNG), at most 15 MiB, 16,384 px a
    /// side and 50 MP.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
}

/// Upload a design
///
/// multipart/form-data with the image in `file`. Answers 202 with `Location` and the swipe
/// file in status `processing`; a worker stores a 200 px preview, embeds it (EfficientNet-Lite0
/// image vector, MiniLM vector of a caption built from what was measured) and classifies it,
/// then it is `ready` (or `failed` with `error` when embedding fails). Without the models
/// installed on the server the answer is 503 SERVICE_UNAVAILABLE.
#[utoipa::path(post, path = "/v1/swipe-files", tag = "swipe files",
    request_body(content = SwipeFileUpload, content_type = "multipart/form-data"),
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 202, description = "Accepted; the design is processing", body = Envelope<SwipeFile>,
            headers(("Location" = String, description = "/v1/swipe-files/{id} of the new design"))),
        (status = 400, description = "VALIDATION_ERROR, IMAGE_INVALID_FORMAT, IMAGE_UNREADABLE", body = crate::error::ErrorBody),
        (status = 413, description = "PAYLOAD_TOO_LARGE", body = crate::error::ErrorBody),
        (status = 500, description = "IMAGE_UPLOAD_FAILED: storing failed; retry", body = crate::error::ErrorBody),
        (status = 503, description = "SERVICE_UNAVAILABLE: the models are not installed (scripts/fetch-models)", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["swipe_files:write"])))]
async fn upload_swipe_file(
    State(state): State<AppState>,
    Auth(caller): Auth,
    req: Request,
) -> ApiResult<Response> {
    caller.require(Scope::SwipeFilesWrite)?;
    state.models.require()?;
    let bytes = upload::read_file_field(req).await?;
    let row = create(
        &state.db,
        &state.blobs,
        (Some(&caller.org_id), None),
        "upload",
        bytes,
        Some(state.jobs.clone()),
    )
    .await?;
    let id = row.id.clone();
    let body = Envelope {
        data: row.into_api(state.blobs.as_ref()),
        meta: Meta::current(),
    };
    Ok((
        StatusCode::ACCEPTED,
        [(header::LOCATION, format!("/v1/swipe-files/{id}"))],
        axum::Json(body),
    )
        .into_response())
}

/// The query parameters shared by GET /v1/swipe-files and GET /v1/design-packs/{id}/items
/// (`pack`: the pack of the second), parsed, then [`list`].
pub async fn list_page(
    state: &AppState,
    org_id: &str,
    mut q: QueryParams,
    pack: Option<String>,
) -> ApiResult<Response> {
    let p = ListParams::parse(&mut q, true, &FACETS);
    let mut filter = SwipeFilter::from_query(&mut q, pack.is_none(), true);
    q.finish()?;
    if pack.is_some() {
        filter.design_pack_id = pack;
    }
    Ok(list(&state.db, state.blobs.as_ref(), org_id, &filter, &p)
        .await?
        .into_response())
}

/// A page of the organisation's designs with `filter`, facets and paging (what GET
/// /v1/swipe-files answers; the dashboard's swipe and pack pages call it too).
///
/// # Errors
/// VALIDATION_ERROR; DESIGN_PACK_NOT_FOUND; database failures.
pub async fn list(
    db: &Db,
    blobs: &dyn BlobStore,
    org_id: &str,
    filter: &SwipeFilter,
    p: &ListParams,
) -> ApiResult<crate::http::envelope::Page<SwipeFile>> {
    let mut errors = Vec::new();
    filter.validate(&mut errors);
    super::common::finish(errors)?;
    if let Some(pid) = &filter.design_pack_id {
        super::design_packs::require_visible(db, org_id, pid).await?;
    }
    let page = store::list(db, org_id, filter, p).await?;
    Ok(page.map(|r| r.into_api(blobs)))
}

/// List swipe files
///
/// Own uploads and designs of subscribed data sources, newest first. Repeat `industry`,
/// `ad_format` and `aspect_ratio` to match any of several values; dimensions combine with
/// AND.
#[utoipa::path(get, path = "/v1/swipe-files", tag = "swipe files",
    params(
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1-100, default 20"),
        ("starting_after" = Option<String>, Query, description = "Id of the last design already received"),
        ("ids" = Option<String>, Query, description = "Comma-separated sf_ ids (at most 100); ignores cursor pagination"),
        ("status" = Option<String>, Query, description = "processing, ready or failed"),
        ("industry" = Option<Vec<String>>, Query, description = "Repeatable"),
        ("ad_format" = Option<Vec<String>>, Query, description = "Repeatable"),
        ("aspect_ratio" = Option<Vec<String>>, Query, description = "Repeatable: 1:1, 4:5, 9:16, 1.91:1, 16:9, 2:3, 3:4"),
        ("archived" = Option<bool>, Query, description = "`true`: only archived own uploads; default `false`"),
        ("data_source_ids" = Option<String>, Query, description = "Comma-separated sfs_ ids restricting managed designs; empty value: no managed designs"),
        ("include_own" = Option<bool>, Query, description = "Default `true`"),
        ("design_pack_id" = Option<String>, Query, description = "Only designs in this pack"),
        ("facets" = Option<String>, Query, description = "Comma-separated: industry, ad_format, aspect_ratio"),
    ),
    responses(
        (status = 200, description = "A page of designs", body = ListEnvelope<SwipeFile>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 404, description = "DESIGN_PACK_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["swipe_files:read"])))]
async fn list_swipe_files(
    State(state): State<AppState>,
    Auth(caller): Auth,
    q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::SwipeFilesRead)?;
    list_page(&state, &caller.org_id, q, None).await
}

/// Retrieve a swipe file
#[utoipa::path(get, path = "/v1/swipe-files/{id}", tag = "swipe files",
    params(("id" = String, Path, description = "sf_…")),
    responses(
        (status = 200, description = "The design", body = Envelope<SwipeFile>),
        (status = 404, description = "SWIPE_FILE_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["swipe_files:read"])))]
async fn get_swipe_file(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::SwipeFilesRead)?;
    Ok(envelope::ok(
        load(&state.db, &caller.org_id, &id)
            .await?
            .into_api(state.blobs.as_ref()),
    ))
}

/// Archives (`archive`) or restores an own upload of the organisation.
///
/// # Errors
/// SWIPE_FILE_NOT_FOUND; SWIPE_FILE_READ_ONLY for a managed design; database failures.
pub async fn set_archived(db: &Db, org_id: &str, id: &str, archive: bool) -> ApiResult<()> {
    let row = load(db, org_id, id).await?;
    if row.org_id.is_none() {
        return Err(ApiError::new(
            ErrorCode::SwipeFileReadOnly,
            format!(
                "`{id}` is a managed design of a data source and is read-only; turn the data source off (PUT /v1/swipe-files/data-sources/{{id}}/subscription) to hide its designs"
            ),
        ));
    }
    let now = crate::timestamp::now();
    let mut tx = db.begin_write().await?;
    store::set_archived(&mut tx, org_id, id, archive, &now).await?;
    // The caller reads the result back through the read pool: commit now (`commit_now`).
    tx.commit_now().await?;
    Ok(())
}

/// Archive a swipe file
///
/// Soft delete of an own upload: it leaves lists (unless `archived=true`), search, packs and
/// global search, and comes back with restore. Managed designs are read-only: 409
/// SWIPE_FILE_READ_ONLY.
#[utoipa::path(delete, path = "/v1/swipe-files/{id}", tag = "swipe files",
    params(("id" = String, Path, description = "sf_…")),
    responses(
        (status = 200, description = "Archived", body = Deleted),
        (status = 404, description = "SWIPE_FILE_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 409, description = "SWIPE_FILE_READ_ONLY: a managed design", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["swipe_files:write"])))]
async fn archive_swipe_file(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::SwipeFilesWrite)?;
    set_archived(&state.db, &caller.org_id, &id, true).await?;
    Ok(Deleted::response(id))
}

/// Restore a swipe file
///
/// Makes an archived own upload active again and answers it; restoring an active design
/// changes nothing. Managed designs: 409 SWIPE_FILE_READ_ONLY.
#[utoipa::path(post, path = "/v1/swipe-files/{id}/restore", tag = "swipe files",
    params(("id" = String, Path, description = "sf_…")),
    responses(
        (status = 200, description = "The design, active", body = Envelope<SwipeFile>),
        (status = 404, description = "SWIPE_FILE_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 409, description = "SWIPE_FILE_READ_ONLY: a managed design", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["swipe_files:write"])))]
async fn restore_swipe_file(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::SwipeFilesWrite)?;
    set_archived(&state.db, &caller.org_id, &id, false).await?;
    Ok(envelope::ok(
        load(&state.db, &caller.org_id, &id)
            .await?
            .into_api(state.blobs.as_ref()),
    ))
}

/// One value or several.
#[derive(Deserialize, ToSchema, Debug, Clone)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

/// The body of a swipe-file search. Give exactly one of `query`, `swipe_file_id` and
/// `image_url`.
#[derive(Deserialize, ToSchema, Debug)]
#[serde(deny_unknown_fields)]
pub struct SearchBody {
    /// What to find, in words; matched against the captions of the designs.
    #[schema(min_length = 1, max_length = 1000)]
    pub query: Option<String>,
    /// Search by example: designs that look like this visible design (itself excluded).
    pub swipe_file_id: Option<String>,
    /// Search by example: designs that look like the image at this public URL.
    #[schema(max_length = 2048)]
    pub image_url: Option<String>,
    pub industry: Option<OneOrMany>,
    pub ad_format: Option<OneOrMany>,
    pub aspect_ratio: Option<OneOrMany>,
    /// Subscribed sources restricting managed designs; empty: no managed designs.
    pub data_source_ids: Option<Vec<String>>,
    /// Default true.
    pub include_own: Option<bool>,
    /// 1-100, default 20.
    #[schema(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// Searches within this pack.
    pub design_pack_id: Option<String>,
    /// Drops hits whose similarity is below this (-1 to 1).
    #[schema(minimum = -1.0, maximum = 1.0)]
    pub min_similarity: Option<f64>,
}

/// Search swipe files
///
/// Ranks ready, active, visible designs by cosine similarity, exactly over every design the
/// filters leave. A `query` is embedded with the text model (MiniLM) and compared with each
/// design's caption vector: the caption says what was measured in the design (ImageNet
/// labels, words read by OCR when available, colours, format, industry), so a text query finds
/// what those words describe. Search by example (`swipe_file_id` or `image_url` instead of
/// `query`) compares EfficientNet-Lite0 image vectors: near-duplicates and designs of the same
/// kind come first. `min_similarity` drops weaker hits. Equal similarities are ordered by id.
/// Large collections are searched approximately (an HNSW graph per API node) and re-scored
/// exactly: `similarity` is always the exact cosine of the stored vectors, and recall@20
/// against an exhaustive search is at least 0.98 under every filter; a filter that leaves
/// few designs (50,000 by default) scores them all exactly. A design archived, restored,
/// deleted or finished a moment ago, and a subscription just toggled, count in the next
/// search on every API node (what a node's graph lacks is scored exactly).
/// Requires swipe_files:read although it is a POST.
#[utoipa::path(post, path = "/v1/swipe-files/search", tag = "swipe files",
    request_body = SearchBody,
    responses(
        (status = 200, description = "Designs, most similar first, each with `similarity`", body = Envelope<Vec<SwipeFile>>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 404, description = "SWIPE_FILE_NOT_FOUND, DESIGN_PACK_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 503, description = "SERVICE_UNAVAILABLE: the models are not installed", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["swipe_files:read"])))]
async fn search_swipe_files(
    State(state): State<AppState>,
    Auth(caller): Auth,
    body: JsonBody<SearchBody>,
) -> ApiResult<Response> {
    caller.require(Scope::SwipeFilesRead)?;
    let body = body.parse()?;
    Ok(envelope::ok(search(&state, &caller.org_id, body).await?))
}

/// A data source as an organisation sees it.
#[derive(Debug, Serialize, FromRow, ToSchema)]
pub struct DataSource {
    /// `sfs_…`
    pub id: String,
    pub name: String,
    /// Whether the organisation's lists, search and packs include its designs.
    #[sqlx(try_from = "crate::store::Flag")]
    pub subscribed: bool,
    /// Ready designs in the source.
    pub item_count: i64,
}

/// List data sources
///
/// Every service-managed collection with whether the organisation is subscribed. New
/// organisations are subscribed to the default collection.
#[utoipa::path(get, path = "/v1/swipe-files/data-sources", tag = "swipe files",
    responses((status = 200, description = "The data sources", body = Envelope<Vec<DataSource>>)),
    security(("api_key" = ["swipe_files:read"])))]
async fn list_data_sources(
    State(state): State<AppState>,
    Auth(caller): Auth,
) -> ApiResult<Response> {
    caller.require(Scope::SwipeFilesRead)?;
    Ok(envelope::ok(data_sources(&state.db, &caller.org_id).await?))
}

/// Every data source with whether the organisation is subscribed.
///
/// # Errors
/// Database failures.
pub async fn data_sources(db: &Db, org_id: &str) -> ApiResult<Vec<DataSource>> {
    store::data_sources(db, org_id).await
}

/// The body of a subscription toggle.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubscriptionBody {
    /// true to include the source's designs, false to hide them.
    pub active: bool,
}

/// Turn a data source on or off
///
/// Idempotent; takes effect at once in lists, search, design packs and global search.
/// Answers the data source.
#[utoipa::path(put, path = "/v1/swipe-files/data-sources/{id}/subscription", tag = "swipe files",
    params(("id" = String, Path, description = "sfs_…")),
    request_body = SubscriptionBody,
    responses(
        (status = 200, description = "The data source", body = Envelope<DataSource>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 404, description = "DATA_SOURCE_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["swipe_files:write"])))]
async fn set_subscription(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    body: JsonBody<SubscriptionBody>,
) -> ApiResult<Response> {
    caller.require(Scope::SwipeFilesWrite)?;
    store::data_source(&state.db, &caller.org_id, &id).await?;
    let body = body.parse()?;
    Ok(envelope::ok(
        subscribe(&state.db, &caller.org_id, &id, body.active).await?,
    ))
}

/// Turns data source `id` on or off for the organisation (idempotent) and answers it.
///
/// # Errors
/// DATA_SOURCE_NOT_FOUND; database failures.
pub async fn subscribe(db: &Db, org_id: &str, id: &str, active: bool) -> ApiResult<DataSource> {
    let mut tx = db.begin_write().await?;
    if !store::data_source_exists(&mut tx, id).await? {
        return Err(ApiError::not_found(
            ErrorCode::DataSourceNotFound,
            "data source",
            id,
        ));
    }
    store::set_subscription(&mut tx, org_id, id, active).await?;
    // The caller reads the result back through the read pool: commit now (`commit_now`).
    tx.commit_now().await?;
    store::data_source(db, org_id, id).await
}
