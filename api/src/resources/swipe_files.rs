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

use std::sync::Arc;

use axum::extract::{FromRequest, Multipart, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use sqlx::FromRow;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::IdPath;
use crate::app::AppState;
use crate::auth::{Auth, Scope};
use crate::blob::BlobStore;
use crate::error::{ApiError, ApiResult, ErrorCode, FieldError};
use crate::http::envelope::{self, Deleted, Envelope, ListEnvelope, Meta};
use crate::http::extract::{JsonBody, QueryParams};
use crate::imaging;
use crate::jobs::Jobs;
use crate::store::Db;
use crate::store::list::{Bind, ListParams, ListQuery, bind_as};
use crate::swipe::filter::{SUBSCRIBED_SOURCES, SwipeFilter, visible};
use crate::swipe::index::Search;
use crate::swipe::vectors;

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

#[derive(FromRow, Clone)]
pub struct SwipeRow {
    pub id: String,
    pub org_id: Option<String>,
    pub data_source_id: Option<String>,
    pub source: String,
    pub blob_key: String,
    pub thumb_key: Option<String>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    pub aspect_ratio: Option<String>,
    pub industry: Option<String>,
    pub ad_format: Option<String>,
    pub status: String,
    pub error: Option<String>,
    pub archived_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

pub const COLUMNS: &str = "t.id, t.org_id, t.data_source_id, t.source, t.blob_key, t.thumb_key, t.width, t.height, \
     t.aspect_ratio, t.industry, t.ad_format, t.status, t.error, t.archived_at, t.created_at, t.updated_at";

impl SwipeRow {
    pub fn into_api(self, blobs: &dyn BlobStore) -> SwipeFile {
        SwipeFile {
            image_url: blobs.url(&self.blob_key),
            thumbnail_url: self.thumb_key.map(|k| blobs.url(&k)),
            is_managed: self.org_id.is_none(),
            id: self.id,
            width: self.width,
            height: self.height,
            aspect_ratio: self.aspect_ratio,
            industry: self.industry,
            ad_format: self.ad_format,
            source: self.source,
            data_source_id: self.data_source_id,
            status: self.status,
            error: self.error,
            archived_at: self.archived_at,
            created_at: self.created_at,
            updated_at: self.updated_at,
            similarity: None,
        }
    }
}

/// The visible swipe file `id`, or 404 SWIPE_FILE_NOT_FOUND.
///
/// # Errors
/// SWIPE_FILE_NOT_FOUND; database failures.
pub async fn load(db: &Db, org_id: &str, id: &str) -> ApiResult<SwipeRow> {
    let v = visible(org_id);
    let sql = format!(
        "SELECT {COLUMNS} FROM swipe_files AS t WHERE t.id = ? AND ({})",
        v.sql
    );
    let mut binds = vec![Bind::Text(id.to_string())];
    binds.extend(v.binds);
    bind_as(crate::store::query_as::<SwipeRow>(&sql), &binds)
        .fetch_optional(&db.read)
        .await?
        .ok_or_else(|| ApiError::not_found(ErrorCode::SwipeFileNotFound, "swipe file", id))
}

/// Rows of `ids` (visible or not, callers filtered), in the order given.
async fn rows_in_order(db: &Db, ids: &[String]) -> ApiResult<Vec<SwipeRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let marks = vec!["?"; ids.len()].join(", ");
    let sql = format!("SELECT {COLUMNS} FROM swipe_files AS t WHERE t.id IN ({marks})");
    let binds: Vec<Bind> = ids.iter().cloned().map(Bind::Text).collect();
    let rows = bind_as(crate::store::query_as::<SwipeRow>(&sql), &binds)
        .fetch_all(&db.read)
        .await?;
    Ok(ids
        .iter()
        .filter_map(|id| rows.iter().find(|r| &r.id == id).cloned())
        .collect())
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

async fn read_file_field(req: Request) -> ApiResult<Bytes> {
    let mut mp = Multipart::from_request(req, &()).await.map_err(|_| {
        ApiError::field(
            "Content-Type",
            "send the upload as multipart/form-data with the image in a `file` field",
        )
    })?;
    let bad_form = |e: axum::extract::multipart::MultipartError| {
        ApiError::field("body", format!("is not valid multipart/form-data: {e}"))
    };
    let mut file = None;
    let mut errors = Vec::new();
    while let Some(field) = mp.next_field().await.map_err(bad_form)? {
        let name = field.name().unwrap_or("").to_string();
        if name == "file" {
            if file.is_some() {
                errors.push(FieldError::new(
                    "file",
                    "was given more than once; upload one design per request",
                ));
            }
            file = Some(field.bytes().await.map_err(bad_form)?);
        } else {
            errors.push(FieldError::new(
                name,
                "is not a field of a swipe-file upload; send only `file`",
            ));
        }
    }
    match file {
        Some(f) if errors.is_empty() => Ok(f),
        None => {
            errors.push(FieldError::new(
                "file",
                "is required: the image bytes (PNG, JPEG or WebP) as a multipart file field",
            ));
            Err(ApiError::validation(errors))
        }
        Some(_) => Err(ApiError::validation(errors)),
    }
}

/// Stores a design's original and inserts its `processing` row with the ingest job staged
/// in the outbox (one transaction). `org_id` `None` with `data_source_id` for managed
/// designs. Returns the new row; with `jobs`, wakes its dispatcher once the row is committed.
///
/// # Errors
/// IMAGE_INVALID_FORMAT, IMAGE_UNREADABLE, VALIDATION_ERROR (limits), IMAGE_UPLOAD_FAILED,
/// database failures.
pub async fn create(
    db: &Db,
    blobs: &Arc<dyn BlobStore>,
    owner: (Option<&str>, Option<&str>),
    source: &str,
    bytes: Bytes,
    jobs: Option<Jobs>,
) -> ApiResult<SwipeRow> {
    let decode_bytes = bytes.clone();
    let (stored, ext, width, height) =
        imaging::with_decoded(bytes.clone(), move |probed, image| {
            let (w, h) = (probed.width, probed.height);
            if probed.format == image::ImageFormat::WebP {
                let mut png = Vec::new();
                image
                    .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
                    .map_err(|e| {
                        ApiError::new(
                            ErrorCode::ImageUnreadable,
                            format!("the WebP could not be transcoded to PNG: {e}"),
                        )
                    })?;
                Ok::<_, ApiError>((Bytes::from(png), "png", w, h))
            } else {
                Ok((decode_bytes, imaging::extension(probed.format), w, h))
            }
        })
        .await??;
    let id = crate::ids::new_id("sf");
    let blob_key = format!("swipe-files/{id}/original.{ext}");
    blobs.put(&blob_key, stored).await.map_err(|e| ApiError {
        internal: Some(e.to_string()),
        ..ApiError::new(
            ErrorCode::ImageUploadFailed,
            "Storing the design failed; retry the upload",
        )
    })?;
    let (org_id, data_source_id) = owner;
    let mut tx = db.begin_write().await?;
    let now = crate::timestamp::now();
    crate::store::query(
        "INSERT INTO swipe_files (id, org_id, data_source_id, source, blob_key, width, height, aspect_ratio, status, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'processing', ?, ?)",
    )
    .bind(&id)
    .bind(org_id)
    .bind(data_source_id)
    .bind(source)
    .bind(&blob_key)
    .bind(i64::from(width))
    .bind(i64::from(height))
    .bind(crate::swipe::taxonomy::aspect_ratio(width, height))
    .bind(&now)
    .bind(&now)
    .execute(&mut *tx)
    .await?;
    let job = adforge_worker::Job::IngestSwipeFile(adforge_worker::IngestSwipeFileJob {
        swipe_file_id: id.clone(),
        org_id: org_id.map(str::to_string),
        blob_key,
    });
    Jobs::stage(&mut tx, &job).await?;
    // Read back inside the transaction: under an Idempotency-Key its commit is deferred to
    // the end of the request, so the read pool would not see the row yet.
    let row = crate::store::query_as::<SwipeRow>(&format!(
        "SELECT {COLUMNS} FROM swipe_files AS t WHERE t.id = ?"
    ))
    .bind(&id)
    .fetch_one(&mut *tx)
    .await?;
    if let Some(jobs) = jobs {
        tx.after_commit(move || jobs.kick());
    }
    tx.commit().await?;
    Ok(row)
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
    let bytes = read_file_field(req).await?;
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

/// The query parameters shared by GET /v1/swipe-files and GET /v1/design-packs/{id}/items.
pub async fn list_page(
    state: &AppState,
    org_id: &str,
    q: QueryParams,
    pack: Option<String>,
) -> ApiResult<Response> {
    Ok(list(state, org_id, q, pack).await?.into_response())
}

/// A page of the organisation's designs with the list's filters, facets and paging (what
/// GET /v1/swipe-files answers; the dashboard's swipe page calls it too).
///
/// # Errors
/// VALIDATION_ERROR; DESIGN_PACK_NOT_FOUND; database failures.
pub async fn list(
    state: &AppState,
    org_id: &str,
    mut q: QueryParams,
    pack: Option<String>,
) -> ApiResult<crate::http::envelope::Page<SwipeFile>> {
    let p = ListParams::parse(&mut q, true, &FACETS);
    let mut filter = SwipeFilter::from_query(&mut q, pack.is_none(), true);
    q.finish()?;
    if pack.is_some() {
        filter.design_pack_id = pack;
    }
    if let Some(pid) = &filter.design_pack_id {
        super::design_packs::require_visible(&state.db, org_id, pid).await?;
    }
    let page = ListQuery {
        table: "swipe_files",
        columns: COLUMNS,
        joins: "",
        org_id,
        conditions: filter.conditions(),
        facet_columns: &[
            ("industry", "t.industry"),
            ("ad_format", "t.ad_format"),
            ("aspect_ratio", "t.aspect_ratio"),
        ],
    }
    .fetch_visible::<SwipeRow>(&state.db, &p, visible(org_id))
    .await?;
    Ok(page.map(|r| r.into_api(state.blobs.as_ref())))
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
pub async fn set_archived(
    state: &AppState,
    org_id: &str,
    id: &str,
    archive: bool,
) -> ApiResult<()> {
    let row = load(&state.db, org_id, id).await?;
    if row.org_id.is_none() {
        return Err(ApiError::new(
            ErrorCode::SwipeFileReadOnly,
            format!(
                "`{id}` is a managed design of a data source and is read-only; turn the data source off (PUT /v1/swipe-files/data-sources/{{id}}/subscription) to hide its designs"
            ),
        ));
    }
    let now = crate::timestamp::now();
    let mut tx = state.db.begin_write().await?;
    let sql = if archive {
        "UPDATE swipe_files SET archived_at = ?, updated_at = ? WHERE id = ? AND org_id = ? AND archived_at IS NULL"
    } else {
        "UPDATE swipe_files SET archived_at = NULL, updated_at = ? WHERE id = ? AND org_id = ? AND archived_at IS NOT NULL AND ? IS NOT NULL"
    };
    let q = crate::store::query(sql);
    let q = if archive {
        q.bind(&now).bind(&now).bind(id).bind(org_id)
    } else {
        q.bind(&now).bind(id).bind(org_id).bind(&now)
    };
    q.execute(&mut *tx).await?;
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
    set_archived(&state, &caller.org_id, &id, true).await?;
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
    set_archived(&state, &caller.org_id, &id, false).await?;
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
/// Exact (no approximate index: recall 1.0); a design archived, restored or finished a moment
/// ago, and a subscription just toggled, count in the next search on every API node.
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
    JsonBody(body): JsonBody<SearchBody>,
) -> ApiResult<Response> {
    caller.require(Scope::SwipeFilesRead)?;
    Ok(envelope::ok(search(&state, &caller.org_id, body).await?))
}

/// Ranks the organisation's designs for a search body (what POST /v1/swipe-files/search
/// answers; the dashboard's text search and "more like this" call it too).
///
/// # Errors
/// VALIDATION_ERROR; SWIPE_FILE_NOT_FOUND; DESIGN_PACK_NOT_FOUND; SERVICE_UNAVAILABLE
/// without the models; database failures.
pub async fn search(state: &AppState, org_id: &str, body: SearchBody) -> ApiResult<Vec<SwipeFile>> {
    let mut errors = Vec::new();
    let given = [
        body.query.is_some(),
        body.swipe_file_id.is_some(),
        body.image_url.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if given != 1 {
        errors.push(FieldError::new(
            "query",
            "give exactly one of query, swipe_file_id and image_url",
        ));
    }
    if let Some(q) = &body.query {
        let n = q.trim().chars().count();
        if n == 0 || q.chars().count() > 1000 {
            errors.push(FieldError::new("query", "must be 1 to 1000 characters"));
        }
    }
    if let Some(u) = &body.image_url {
        let lower = u.to_ascii_lowercase();
        if u.len() > 2048 || !(lower.starts_with("http://") || lower.starts_with("https://")) {
            errors.push(FieldError::new(
                "image_url",
                "must be an http(s) URL of at most 2048 characters",
            ));
        }
    }
    let limit = body.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        errors.push(FieldError::new(
            "limit",
            "must be a whole number from 1 to 100",
        ));
    }
    if let Some(m) = body.min_similarity
        && !(-1.0..=1.0).contains(&m)
    {
        errors.push(FieldError::new("min_similarity", "must be from -1 to 1"));
    }
    let filter = SwipeFilter {
        industry: body
            .industry
            .clone()
            .map(OneOrMany::into_vec)
            .unwrap_or_default(),
        ad_format: body
            .ad_format
            .clone()
            .map(OneOrMany::into_vec)
            .unwrap_or_default(),
        aspect_ratio: body
            .aspect_ratio
            .clone()
            .map(OneOrMany::into_vec)
            .unwrap_or_default(),
        status: Some("ready".into()),
        archived: false,
        data_source_ids: body.data_source_ids.clone(),
        include_own: body.include_own.unwrap_or(true),
        design_pack_id: body.design_pack_id.clone(),
    };
    filter.validate(&mut errors);
    super::common::finish(errors)?;
    if let Some(pid) = &filter.design_pack_id {
        super::design_packs::require_visible(&state.db, org_id, pid).await?;
    }
    // The query vector and which stored vectors it meets.
    let (kind, query, exclude) = if let Some(text) = &body.query {
        let models = state.models.require()?.clone();
        let text = text.clone();
        let v = tokio::task::spawn_blocking(move || {
            models.text.embed_texts(&[text.as_str()]).map(|mut v| {
                (
                    models.text.model_id().to_string(),
                    v.pop().unwrap_or_default(),
                )
            })
        })
        .await
        .map_err(ApiError::internal)?
        .map_err(|e| ApiError::field("query", format!("could not be embedded: {e}")))?;
        (vectors::TEXT, vectors::Query::new(&v.0, &v.1), None)
    } else if let Some(id) = &body.swipe_file_id {
        let row = load(&state.db, org_id, id).await?;
        let stored: Option<(String, Vec<u8>)> = crate::store::query_as(
            "SELECT model_id, vector FROM swipe_file_vectors WHERE swipe_file_id = ? AND kind = ?",
        )
        .bind(&row.id)
        .bind(vectors::IMAGE)
        .fetch_optional(&state.db.read)
        .await?;
        let Some(q) = stored.and_then(|(m, b)| vectors::decode(&m, &b)) else {
            return Err(ApiError::field(
                "swipe_file_id",
                format!(
                    "`{id}` is not ready yet (status {}); search by example needs a ready design",
                    row.status
                ),
            ));
        };
        let dense: Vec<f32> = q.values.iter().map(|x| f32::from(*x) * q.scale).collect();
        (
            vectors::IMAGE,
            vectors::Query::new(&q.model_id, &dense),
            Some(row.id),
        )
    } else {
        let url = body.image_url.clone().unwrap_or_default();
        let models = state.models.require()?.clone();
        let own = match url.strip_prefix(state.blobs.url("").as_str()) {
            Some(key) => Some(state.blobs.get(key).await.map_err(ApiError::internal)?),
            None => None,
        };
        let fetcher = state.reference_fetcher.clone();
        let v = tokio::task::spawn_blocking(move || -> Result<(String, Vec<f32>), String> {
            use adforge_renderer::ImageFetcher;
            let bytes = match own {
                Some(Some(b)) => b.to_vec(),
                Some(None) => return Err("names no file of this server".into()),
                None => fetcher.fetch(&url)?,
            };
            let (_, image) = imaging::decode_full(&bytes).map_err(|e| e.message)?;
            let rgb = image.to_rgb8();
            let mut v = models
                .image
                .embed_images(&[rgb])
                .map_err(|e| e.to_string())?;
            Ok((
                models.image.model_id().to_string(),
                v.pop().unwrap_or_default(),
            ))
        })
        .await
        .map_err(ApiError::internal)?
        .map_err(|why| ApiError::field("image_url", format!("could not be used: {why}")))?;
        (vectors::IMAGE, vectors::Query::new(&v.0, &v.1), None)
    };
    let min = body.min_similarity.unwrap_or(-1.0) as f32;
    let scored = state
        .search_index
        .search(
            &state.db,
            &Search {
                org_id,
                filter: &filter,
                kind,
                query: &query,
                exclude: exclude.as_deref(),
                min,
                limit: limit as usize,
            },
        )
        .await?;
    let top: Vec<String> = scored.iter().map(|(_, id)| id.clone()).collect();
    let rows = rows_in_order(&state.db, &top).await?;
    let hits: Vec<SwipeFile> = rows
        .into_iter()
        .zip(&scored)
        .map(|(r, (s, _))| {
            let mut f = r.into_api(state.blobs.as_ref());
            f.similarity = Some((f64::from(*s) * 10_000.0).round() / 10_000.0);
            f
        })
        .collect();
    Ok(hits)
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

fn data_source_sql(one: bool) -> String {
    format!(
        "SELECT s.id, s.name, coalesce(u.active, s.is_default) = 1 AS subscribed, \
         (SELECT COUNT(*) FROM swipe_files f WHERE f.data_source_id = s.id AND f.status = 'ready') AS item_count \
         FROM data_sources s LEFT JOIN data_source_subscriptions u ON u.source_id = s.id AND u.org_id = ? {} ORDER BY s.seq",
        if one { "WHERE s.id = ?" } else { "" }
    )
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
    Ok(crate::store::query_as(&data_source_sql(false))
        .bind(org_id)
        .fetch_all(&db.read)
        .await?)
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
    JsonBody(body): JsonBody<SubscriptionBody>,
) -> ApiResult<Response> {
    caller.require(Scope::SwipeFilesWrite)?;
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
    let exists: Option<String> =
        crate::store::query_scalar("SELECT id FROM data_sources WHERE id = ?")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
    if exists.is_none() {
        return Err(ApiError::not_found(
            ErrorCode::DataSourceNotFound,
            "data source",
            id,
        ));
    }
    crate::store::query(
        "INSERT INTO data_source_subscriptions (org_id, source_id, active, updated_at) VALUES (?, ?, ?, ?) \
         ON CONFLICT(org_id, source_id) DO UPDATE SET active = excluded.active, updated_at = excluded.updated_at",
    )
    .bind(org_id)
    .bind(id)
    .bind(i64::from(active))
    .bind(crate::timestamp::now())
    .execute(&mut *tx)
    .await?;
    // The caller reads the result back through the read pool: commit now (`commit_now`).
    tx.commit_now().await?;
    let row: DataSource = crate::store::query_as(&data_source_sql(true))
        .bind(org_id)
        .bind(id)
        .fetch_one(&db.read)
        .await?;
    Ok(row)
}

/// Subscribed source ids of an organisation (for callers outside this module).
///
/// # Errors
/// Database failures.
pub async fn subscribed_sources(db: &Db, org_id: &str) -> ApiResult<Vec<String>> {
    Ok(crate::store::query_scalar(SUBSCRIBED_SOURCES)
        .bind(org_id)
        .fetch_all(&db.read)
        .await?)
}

/// The label of a design in the global search: "format · industry" (display names), or
/// "Swipe file" while neither is known.
fn search_label(ad_format: Option<&str>, industry: Option<&str>) -> String {
    let parts: Vec<&str> = [
        ad_format.map(crate::swipe::taxonomy::ad_format_name),
        industry.map(crate::swipe::taxonomy::industry_name),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        "Swipe file".to_string()
    } else {
        parts.join(" · ")
    }
}

/// Swipe-file hits of the global search: visible, active, non-processing designs whose
/// ad format or industry (value or display name) contains `needle`, newest first, with
/// those starting with it first; or, in resolve mode, `ids` that are visible. Returns
/// (id, label, preview blob key).
///
/// # Errors
/// Database failures.
pub async fn search_labels(
    db: &Db,
    org_id: &str,
    needle: &str,
    limit: i64,
    ids: Option<&[String]>,
) -> ApiResult<Vec<(String, String, Option<String>)>> {
    let v = visible(org_id);
    let mut binds = v.binds.clone();
    let sql = match ids {
        Some(ids) => {
            let marks = vec!["?"; ids.len().max(1)].join(", ");
            binds.extend(ids.iter().cloned().map(Bind::Text));
            if ids.is_empty() {
                binds.push(Bind::Text(String::new()));
            }
            format!(
                "SELECT t.id, t.ad_format, t.industry, t.thumb_key FROM swipe_files t WHERE ({}) AND t.id IN ({marks})",
                v.sql
            )
        }
        None => format!(
            "SELECT t.id, t.ad_format, t.industry, t.thumb_key FROM swipe_files t WHERE ({}) \
             AND t.archived_at IS NULL AND t.status <> 'processing' ORDER BY t.seq DESC",
            v.sql
        ),
    };
    let rows: Vec<(String, Option<String>, Option<String>, Option<String>)> =
        bind_as(crate::store::query_as(&sql), &binds)
            .fetch_all(&db.read)
            .await?;
    let mut hits: Vec<(bool, String, String, Option<String>)> = Vec::new();
    for (id, format, industry, thumb) in rows {
        let label = search_label(format.as_deref(), industry.as_deref());
        if ids.is_some() {
            hits.push((true, id, label, thumb));
            continue;
        }
        let haystacks: Vec<String> = [format.as_deref(), industry.as_deref()]
            .into_iter()
            .flatten()
            .flat_map(|v| {
                [
                    v.replace('_', " "),
                    crate::swipe::taxonomy::ad_format_name(v).to_lowercase(),
                    crate::swipe::taxonomy::industry_name(v).to_lowercase(),
                ]
            })
            .collect();
        // An empty query lists the most recent designs.
        if !needle.is_empty() && !haystacks.iter().any(|h| h.contains(needle)) {
            continue;
        }
        let starts = needle.is_empty() || haystacks.iter().any(|h| h.starts_with(needle));
        hits.push((starts, id, label, thumb));
    }
    // Stable: newest first within each group.
    hits.sort_by_key(|h| !h.0);
    if ids.is_none() {
        hits.truncate(limit.max(0) as usize);
    }
    Ok(hits
        .into_iter()
        .map(|(_, id, label, thumb)| (id, label, thumb))
        .collect())
}
