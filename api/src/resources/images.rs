//! `/v1/images`: uploads (multipart), metadata, background thumbnails and enrichment.
//!
//! Upload flow: sniff the format from the bytes → check the file is complete → read the
//! header dimensions (bomb guard) → decode under the process-wide memory budget, shrunk at
//! once to 1200 px (see [`crate::imaging`]) → store the original → insert the row → answer
//! 201. Thumbnails and the measured description are made from the 1200 px preview after
//! the response on a blocking thread; images left without thumbnails by a stopped server
//! are finished at the next start.

use std::sync::Arc;

use axum::extract::{FromRequest, Multipart, Request, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use image::RgbaImage;
use serde::Serialize;
use sqlx::FromRow;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::IdPath;
use crate::app::AppState;
use crate::auth::{Auth, Scope};
use crate::blob::BlobStore;
use crate::error::{ApiError, ApiResult, ErrorCode, FieldError};
use crate::http::envelope::{self, Deleted, Envelope, ListEnvelope};
use crate::http::extract::QueryParams;
use crate::imaging;
use crate::store::Db;
use crate::store::list::{Condition, ListParams, ListQuery};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(upload_image, list_images))
        .routes(routes!(get_image, delete_image))
}

pub const IMAGE_TYPES: [&str; 5] = ["product", "lifestyle", "logo", "background", "other"];
const SEARCH_MAX: usize = 200;
const ALT_TEXT_MAX: usize = 1_000;

/// An uploaded image.
#[derive(Debug, Serialize, ToSchema)]
pub struct Image {
    /// `img_…`
    pub id: String,
    /// Public URL of the original.
    pub src: String,
    pub width: i64,
    pub height: i64,
    /// `png`, `jpeg` or `webp`, decided from the bytes.
    pub format: String,
    pub size_bytes: i64,
    pub alt_text: Option<String>,
    #[schema(value_type = Option<ImageType>)]
    pub image_type: Option<String>,
    pub is_ai_generated: bool,
    /// For logos: `light` when the logo's marks are light (for dark backgrounds), `dark`
    /// otherwise. Measured from the pixels unless given at upload.
    #[schema(value_type = Option<LogoTheme>)]
    pub logo_theme: Option<String>,
    pub product_id: Option<String>,
    /// WebP, long edge 200 px; null until made (moments after upload).
    pub thumbnail_small_src: Option<String>,
    /// WebP, long edge 600 px.
    pub thumbnail_medium_src: Option<String>,
    /// WebP, long edge 1200 px.
    pub thumbnail_large_src: Option<String>,
    /// What was measured in the image (orientation, dominant colours, brightness); null
    /// until enrichment has run. Matched by `search`.
    pub enriched_description: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(FromRow)]
struct ImageRow {
    id: String,
    blob_key: String,
    width: i64,
    height: i64,
    format: String,
    size_bytes: i64,
    alt_text: Option<String>,
    image_type: Option<String>,
    #[sqlx(try_from = "crate::store::Flag")]
    is_ai_generated: bool,
    logo_theme: Option<String>,
    product_id: Option<String>,
    thumb_small_key: Option<String>,
    thumb_medium_key: Option<String>,
    thumb_large_key: Option<String>,
    enriched_description: Option<String>,
    created_at: String,
    updated_at: String,
}

const COLUMNS: &str = "t.id, t.blob_key, t.width, t.height, t.format, t.size_bytes, t.alt_text, t.image_type, \
                       t.is_ai_generated, t.logo_theme, t.product_id, t.thumb_small_key, t.thumb_medium_key, \
                       t.thumb_large_key, t.enriched_description, t.created_at, t.updated_at";

impl ImageRow {
    fn into_image(self, blobs: &dyn BlobStore) -> Image {
        let url = |k: Option<String>| k.map(|k| blobs.url(&k));
        Image {
            src: blobs.url(&self.blob_key),
            id: self.id,
            width: self.width,
            height: self.height,
            format: self.format,
            size_bytes: self.size_bytes,
            alt_text: self.alt_text,
            image_type: self.image_type,
            is_ai_generated: self.is_ai_generated,
            logo_theme: self.logo_theme,
            product_id: self.product_id,
            thumbnail_small_src: url(self.thumb_small_key),
            thumbnail_medium_src: url(self.thumb_medium_key),
            thumbnail_large_src: url(self.thumb_large_key),
            enriched_description: self.enriched_description,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

async fn load(db: &Db, org_id: &str, id: &str) -> ApiResult<ImageRow> {
    load_with(&db.read, org_id, id).await
}

/// [`load`] through any connection (inside a transaction, it sees the transaction's writes).
async fn load_with<'c>(
    ex: impl sqlx::AnyExecutor<'c>,
    org_id: &str,
    id: &str,
) -> ApiResult<ImageRow> {
    crate::store::query_as::<ImageRow>(&format!(
        "SELECT {COLUMNS} FROM images AS t WHERE t.id = ? AND t.org_id = ? AND t.deleted_at IS NULL"
    ))
    .bind(id)
    .bind(org_id)
    .fetch_optional(ex)
    .await?
    .ok_or_else(|| ApiError::not_found(ErrorCode::ImageNotFound, "image", id))
}

/// The multipart form of an upload (for the OpenAPI description).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ImageUpload {
    /// The image: PNG, JPEG or WebP, at most 15 MiB, 16,384 px a side and 50 MP.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    // The optional fields are not nullable: a form field has no null, and the text
    // `null` is no image type, product id or boolean.
    #[schema(required = false)]
    image_type: ImageType,
    /// At most 1,000 characters on one line (no control characters or bidirectional
    /// overrides); surrounding white space is trimmed.
    #[schema(
        required = false,
        max_length = 1000,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069]*$"
    )]
    alt_text: String,
    /// `prod_…` to associate the image with.
    #[schema(required = false)]
    product_id: String,
    /// Measured from the pixels for logos when omitted.
    #[schema(required = false)]
    logo_theme: LogoTheme,
    /// `true` or `false` (default).
    #[schema(required = false)]
    is_ai_generated: bool,
}

/// What an image shows (the values of [`IMAGE_TYPES`]), for the OpenAPI description.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
enum ImageType {
    Product,
    Lifestyle,
    Logo,
    Background,
    Other,
}

/// Whether a logo is drawn for light or dark backgrounds, for the OpenAPI description.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
enum LogoTheme {
    Light,
    Dark,
}

#[derive(Default)]
struct UploadForm {
    file: Option<Bytes>,
    image_type: Option<String>,
    alt_text: Option<String>,
    product_id: Option<String>,
    logo_theme: Option<String>,
    is_ai_generated: bool,
}

async fn read_form(req: Request) -> ApiResult<UploadForm> {
    let mut mp = Multipart::from_request(req, &()).await.map_err(|_| {
        ApiError::field(
            "Content-Type",
            "send the upload as multipart/form-data with the image in a `file` field",
        )
    })?;
    let mut form = UploadForm::default();
    let mut errors = Vec::new();
    let bad_form = |e: axum::extract::multipart::MultipartError| {
        ApiError::field("body", format!("is not valid multipart/form-data: {e}"))
    };
    while let Some(field) = mp.next_field().await.map_err(bad_form)? {
        let name = field.name().unwrap_or("").to_string();
        if name == "file" {
            if form.file.is_some() {
                errors.push(FieldError::new(
                    "file",
                    "was given more than once; upload one image per request",
                ));
            }
            form.file = Some(field.bytes().await.map_err(bad_form)?);
            continue;
        }
        let raw = field.text().await.map_err(bad_form)?;
        let text = raw.trim().to_string();
        match name.as_str() {
            "image_type" => {
                if IMAGE_TYPES.contains(&text.as_str()) {
                    form.image_type = Some(text);
                } else {
                    errors.push(FieldError::new("image_type", format!("must be one of {}, not `{text}`", IMAGE_TYPES.join(", "))));
                }
            }
            "alt_text" => {
                // Length and characters as sent (as for names); stored trimmed.
                if raw.chars().count() > ALT_TEXT_MAX {
                    errors.push(FieldError::new("alt_text", format!("must be at most {ALT_TEXT_MAX} characters")));
                }
                super::common::check_chars("alt_text", &raw, super::common::Lines::Single, &mut errors);
                form.alt_text = Some(text).filter(|t| !t.is_empty());
            }
            "product_id" => form.product_id = Some(text).filter(|t| !t.is_empty()),
            "logo_theme" => match text.as_str() {
                "light" | "dark" => form.logo_theme = Some(text),
                _ => errors.push(FieldError::new("logo_theme", "must be `light` or `dark`")),
            },
            "is_ai_generated" => match text.as_str() {
                "true" => form.is_ai_generated = true,
                "false" => form.is_ai_generated = false,
                _ => errors.push(FieldError::new("is_ai_generated", "must be `true` or `false`")),
            },
            other => errors.push(FieldError::new(
                other,
                "is not a field of an image upload; allowed: file, image_type, alt_text, product_id, logo_theme, is_ai_generated",
            )),
        }
    }
    if form.file.is_none() {
        errors.push(FieldError::new(
            "file",
            "is required: the image bytes (PNG, JPEG or WebP) as a multipart file field",
        ));
    }
    if errors.is_empty() {
        Ok(form)
    } else {
        Err(ApiError::validation(errors))
    }
}

/// Upload an image
///
/// multipart/form-data with the image in `file` (the only way to supply image bytes;
/// base64 in JSON is not accepted). The format is decided from the bytes. Thumbnails and
/// `enriched_description` are null for a moment after upload and filled in the
/// background.
///
/// Limits: at most 16,384 pixels a side and 50,000,000 pixels in all, read from the header
/// before any decoding (`VALIDATION_ERROR` on `file`). A file that ends before its
/// format's end marker (PNG `IEND`, JPEG end-of-image, WebP RIFF length) is refused with
/// `IMAGE_UNREADABLE`, whatever part of it would decode; bytes after the end marker are
/// allowed.
///
/// Memory: the server decodes uploads under one memory budget of 512 MiB per process.
/// Each decode reserves its worst case from the header (decoded pixels, decoder working
/// memory, resize buffer); uploads that do not fit wait their turn (the request takes
/// longer; none is refused for it), and the full-size pixels are dropped as soon as the
/// 1200 px preview for the thumbnails is made. Worst case for image work: 512 MiB plus
/// the request bodies being received (each at most 15 MiB).
#[utoipa::path(post, path = "/v1/images", tag = "images",
    request_body(content = ImageUpload, content_type = "multipart/form-data"),
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 201, description = "The stored image", body = Envelope<Image>),
        (status = 400, description = "VALIDATION_ERROR, IMAGE_INVALID_FORMAT, IMAGE_UNREADABLE", body = crate::error::ErrorBody),
        (status = 404, description = "PRODUCT_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 413, description = "PAYLOAD_TOO_LARGE", body = crate::error::ErrorBody),
        (status = 500, description = "IMAGE_UPLOAD_FAILED: storing failed; retry", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["images:write"])))]
async fn upload_image(
    State(state): State<AppState>,
    Auth(caller): Auth,
    req: Request,
) -> ApiResult<Response> {
    caller.require(Scope::ImagesWrite)?;
    let form = read_form(req).await?;
    let image = store(&state, &caller.org_id, form).await?;
    Ok(envelope::created(image))
}

/// Stores an uploaded reference image (no type, no alt text) as POST /v1/images does: the
/// web dashboard's "create an ad" form uploads through this.
///
/// # Errors
/// As POST /v1/images: IMAGE_INVALID_FORMAT, IMAGE_UNREADABLE, VALIDATION_ERROR (limits),
/// IMAGE_UPLOAD_FAILED.
pub(crate) async fn upload_bytes(state: &AppState, org_id: &str, bytes: Bytes) -> ApiResult<Image> {
    let form = UploadForm {
        file: Some(bytes),
        ..UploadForm::default()
    };
    store(state, org_id, form).await
}

/// [`upload_bytes`] of a logo: `image_type` `logo`, so its light/dark theme is measured as
/// POST /v1/images measures it (the dashboard's brand page uploads through this).
///
/// # Errors
/// As [`upload_bytes`].
pub(crate) async fn upload_logo(state: &AppState, org_id: &str, bytes: Bytes) -> ApiResult<Image> {
    let form = UploadForm {
        file: Some(bytes),
        image_type: Some("logo".to_string()),
        ..UploadForm::default()
    };
    store(state, org_id, form).await
}

/// POST /v1/images after the form is read.
async fn store(state: &AppState, org_id: &str, form: UploadForm) -> ApiResult<Image> {
    let bytes = form.file.clone().unwrap_or_default();
    if let Some(pid) = &form.product_id {
        super::products::load(&state.db.read, org_id, pid).await?;
    }
    let size = bytes.len() as i64;
    let decoded = imaging::decode_preview(bytes.clone()).await?;
    let logo_theme = match (&form.logo_theme, form.image_type.as_deref()) {
        (Some(t), _) => Some(t.clone()),
        (None, Some("logo")) => {
            let img = decoded.image.clone();
            Some(
                tokio::task::spawn_blocking(move || imaging::logo_theme(&img))
                    .await
                    .map_err(ApiError::internal)?
                    .to_string(),
            )
        }
        _ => None,
    };
    let id = crate::ids::new_id("img");
    let blob_key = format!(
        "images/{id}/original.{}",
        imaging::extension(decoded.format)
    );
    state
        .blobs
        .put(&blob_key, bytes)
        .await
        .map_err(|e| ApiError {
            internal: Some(e.to_string()),
            ..ApiError::new(
                ErrorCode::ImageUploadFailed,
                "Storing the image failed; retry the upload",
            )
        })?;
    let search_text = form.alt_text.as_deref().unwrap_or("").to_lowercase();
    // Timestamps are taken under the write lock, so they agree with list order.
    let mut tx = state.db.begin_write().await?;
    let now = crate::timestamp::now();
    crate::store::query(
        "INSERT INTO images (id, org_id, blob_key, width, height, format, size_bytes, alt_text, image_type, \
         is_ai_generated, logo_theme, product_id, search_text, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&id)
    .bind(org_id)
    .bind(&blob_key)
    .bind(i64::from(decoded.width))
    .bind(i64::from(decoded.height))
    .bind(imaging::format_name(decoded.format))
    .bind(size)
    .bind(&form.alt_text)
    .bind(&form.image_type)
    .bind(i64::from(form.is_ai_generated))
    .bind(&logo_theme)
    .bind(&form.product_id)
    .bind(search_text)
    .bind(&now)
    .bind(&now)
    .execute(&mut *tx)
    .await?;
    // Read back inside the transaction: under an Idempotency-Key its commit is deferred.
    let row = load_with(&mut *tx, org_id, &id).await?;
    // Thumbnails start once the row is really committed: under an Idempotency-Key the commit
    // waits for the middleware, and a task started earlier could read the row before it exists.
    let (db, blobs, image) = (state.db.clone(), state.blobs.clone(), decoded.image);
    tx.after_commit(move || spawn_derivatives(db, blobs, id, Some(image)));
    tx.commit().await?;
    Ok(row.into_image(state.blobs.as_ref()))
}

/// Public URLs of the live images among `ids`, in the order given.
///
/// # Errors
/// Database failures.
pub async fn live_urls(state: &AppState, org_id: &str, ids: &[String]) -> ApiResult<Vec<String>> {
    Ok(live_logos(state, org_id, ids)
        .await?
        .into_iter()
        .map(|(url, _)| url)
        .collect())
}

/// `(url, logo_theme)` of the live images among `ids`, in the order given.
///
/// # Errors
/// Database failures.
pub async fn live_logos(
    state: &AppState,
    org_id: &str,
    ids: &[String],
) -> ApiResult<Vec<(String, Option<String>)>> {
    let mut out = Vec::new();
    for id in ids {
        let row: Option<(String, Option<String>)> =
            crate::store::query_as("SELECT blob_key, logo_theme FROM images WHERE id = ? AND org_id = ? AND deleted_at IS NULL")
                .bind(id)
                .bind(org_id)
                .fetch_optional(&state.db.read)
                .await?;
        if let Some((key, theme)) = row {
            out.push((state.blobs.url(&key), theme));
        }
    }
    Ok(out)
}

/// Makes thumbnails and the description in the background. `image` is the upload's
/// preview ([`imaging::decode_preview`]) when at hand; otherwise the original is read back
/// from the blob store and decoded under the same memory budget.
pub fn spawn_derivatives(db: Db, blobs: Arc<dyn BlobStore>, id: String, image: Option<RgbaImage>) {
    tokio::spawn(async move {
        if let Err(e) = make_derivatives(&db, blobs, &id, image).await {
            tracing::error!(image_id = %id, error = %e, "thumbnails failed");
        }
    });
}

async fn make_derivatives(
    db: &Db,
    blobs: Arc<dyn BlobStore>,
    id: &str,
    image: Option<RgbaImage>,
) -> Result<(), String> {
    let image = match image {
        Some(i) => i,
        None => {
            let key: String =
                crate::store::query_scalar("SELECT blob_key FROM images WHERE id = ?")
                    .bind(id)
                    .fetch_one(&db.read)
                    .await
                    .map_err(|e| e.to_string())?;
            let bytes = blobs
                .get(&key)
                .await
                .map_err(|e| e.to_string())?
                .ok_or("original missing")?;
            imaging::decode_preview(bytes)
                .await
                .map_err(|e| e.message)?
                .image
        }
    };
    let (thumbs, description) = tokio::task::spawn_blocking(move || {
        imaging::thumbnails(&image)
            .map(|t| (t, imaging::describe(&image)))
            .map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| e.to_string())??;
    let mut keys = Vec::new();
    for (bytes, size) in thumbs.into_iter().zip(["small", "medium", "large"]) {
        let key = format!("images/{id}/thumb_{size}.webp");
        blobs
            .put(&key, Bytes::from(bytes))
            .await
            .map_err(|e| e.to_string())?;
        keys.push(key);
    }
    // Lower-cased here, not with SQL `lower()`, which folds ASCII only: the search needle
    // is lower-cased in Rust, so `Été` must be stored as `été` to be found.
    let alt_text: Option<String> =
        crate::store::query_scalar("SELECT alt_text FROM images WHERE id = ?")
            .bind(id)
            .fetch_one(&db.read)
            .await
            .map_err(|e| e.to_string())?;
    let search_text = format!(
        "{} {}",
        alt_text.unwrap_or_default().to_lowercase(),
        description.to_lowercase()
    );
    crate::store::query(
        "UPDATE images SET thumb_small_key = ?, thumb_medium_key = ?, thumb_large_key = ?, enriched_description = ?, \
         search_text = ? WHERE id = ?",
    )
    .bind(&keys[0])
    .bind(&keys[1])
    .bind(&keys[2])
    .bind(&description)
    .bind(search_text)
    .bind(id)
    .execute(&db.write)
    .await
    .map_err(|e| e.to_string())?;
    Ok(())
}

/// Finishes images that a stopped server left without thumbnails.
pub async fn resume_derivatives(db: &Db, blobs: &Arc<dyn BlobStore>) {
    let ids: Vec<String> = crate::store::query_scalar(
        "SELECT id FROM images WHERE thumb_small_key IS NULL AND deleted_at IS NULL",
    )
    .fetch_all(&db.read)
    .await
    .unwrap_or_default();
    for id in ids {
        spawn_derivatives(db.clone(), blobs.clone(), id, None);
    }
}

/// List images
///
/// Newest first. `search` matches alt text and the enriched description,
/// case-insensitively. `facets=image_type` (an adforge extension) counts images per type.
#[utoipa::path(get, path = "/v1/images", tag = "images",
    params(
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "Page size, default 20"),
        ("starting_after" = Option<String>, Query, description = "Id of the last image already received"),
        ("ids" = Option<String>, Query, pattern = r"[^,\s]", description = "Comma-separated img_ ids (1 to 100); ignores cursor pagination"),
        ("product_id" = Option<String>, Query, description = "Comma-separated product ids"),
        ("image_type" = Option<String>, Query, pattern = r"^\s*(product|lifestyle|logo|background|other)?\s*(,\s*(product|lifestyle|logo|background|other)?\s*)*$", description = "Comma-separated among product, lifestyle, logo, background, other"),
        ("search" = Option<String>, Query, max_length = 200, description = "Case-insensitive match on alt text and description"),
        ("facets" = Option<String>, Query, pattern = r"^\s*(image_type)?\s*(,\s*(image_type)?\s*)*$", description = "Comma-separated: image_type"),
    ),
    responses(
        (status = 200, description = "A page of images", body = ListEnvelope<Image>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["images:read"])))]
async fn list_images(
    State(state): State<AppState>,
    Auth(caller): Auth,
    mut q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::ImagesRead)?;
    let p = ListParams::parse(&mut q, true, &["image_type"]);
    let mut conditions = Vec::new();
    if let Some(ids) = q.csv("product_id") {
        conditions.push(Condition::any_of(None, "t.product_id", &ids));
    }
    if let Some(types) = q.csv("image_type") {
        for t in &types {
            if !IMAGE_TYPES.contains(&t.as_str()) {
                q.error(
                    "image_type",
                    format!("`{t}` is not an image type; use {}", IMAGE_TYPES.join(", ")),
                );
            }
        }
        conditions.push(Condition::any_of(
            Some("image_type"),
            "t.image_type",
            &types,
        ));
    }
    if let Some(s) = q.string("search") {
        if s.chars().count() > SEARCH_MAX {
            q.error("search", format!("must be at most {SEARCH_MAX} characters"));
        }
        conditions.push(Condition::new(
            "instr(t.search_text, ?) > 0",
            vec![crate::store::list::Bind::Text(s.to_lowercase())],
        ));
    }
    q.finish()?;
    let page = ListQuery {
        table: "images",
        columns: COLUMNS,
        joins: "",
        org_id: &caller.org_id,
        conditions,
        facet_columns: &[("image_type", "t.image_type")],
    }
    .fetch::<ImageRow>(&state.db, &p)
    .await?;
    Ok(page
        .map(|r| r.into_image(state.blobs.as_ref()))
        .into_response())
}

/// Retrieve an image
#[utoipa::path(get, path = "/v1/images/{id}", tag = "images",
    params(("id" = String, Path, description = "img_…")),
    responses(
        (status = 200, description = "The image", body = Envelope<Image>),
        (status = 404, description = "IMAGE_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["images:read"])))]
async fn get_image(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::ImagesRead)?;
    Ok(envelope::ok(
        load(&state.db, &caller.org_id, &id)
            .await?
            .into_image(state.blobs.as_ref()),
    ))
}

/// Delete an image
///
/// The image leaves the API (404 afterwards) and is removed from brands' `logo_image_ids`
/// and variants' `image_ids`. Its files stay served at their URLs, so ads and JSON trees
/// already made from it keep rendering.
#[utoipa::path(delete, path = "/v1/images/{id}", tag = "images",
    params(("id" = String, Path, description = "img_…")),
    responses(
        (status = 200, description = "Deleted", body = Deleted),
        (status = 404, description = "IMAGE_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["images:write"])))]
async fn delete_image(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::ImagesWrite)?;
    let mut tx = state.db.begin_write().await?;
    let exists: Option<String> = crate::store::query_scalar(
        "SELECT id FROM images WHERE id = ? AND org_id = ? AND deleted_at IS NULL",
    )
    .bind(&id)
    .bind(&caller.org_id)
    .fetch_optional(&mut *tx)
    .await?;
    if exists.is_none() {
        return Err(ApiError::not_found(ErrorCode::ImageNotFound, "image", &id));
    }
    let now = crate::timestamp::now();
    crate::store::query("UPDATE images SET deleted_at = ? WHERE id = ?")
        .bind(&now)
        .bind(&id)
        .execute(&mut *tx)
        .await?;
    let quoted = format!("%\"{id}\"%");
    for (table, column) in [
        ("brands", "logo_image_ids"),
        ("product_variants", "image_ids"),
    ] {
        let rows: Vec<(String, String)> = crate::store::query_as(&format!(
            "SELECT id, {column} FROM {table} WHERE org_id = ? AND {column} LIKE ?"
        ))
        .bind(&caller.org_id)
        .bind(&quoted)
        .fetch_all(&mut *tx)
        .await?;
        for (rid, json) in rows {
            let ids: Vec<String> = serde_json::from_str(&json).unwrap_or_default();
            let kept: Vec<&String> = ids.iter().filter(|i| **i != id).collect();
            crate::store::query(&format!(
                "UPDATE {table} SET {column} = ?, updated_at = ? WHERE id = ?"
            ))
            .bind(crate::store::to_json_text(&kept))
            .bind(&now)
            .bind(&rid)
            .execute(&mut *tx)
            .await?;
        }
    }
    tx.commit().await?;
    Ok(Deleted::response(id))
}
