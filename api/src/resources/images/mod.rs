//! `/v1/images`: uploads (multipart), metadata, background thumbnails and enrichment.
//!
//! Upload flow: sniff the format from the bytes → check the file is complete → read the
//! header dimensions (bomb guard) → decode under the process-wide memory budget, shrunk at
//! once to 1200 px (see [`adforge_worker::imaging`]) → store the original → insert the row → answer
//! 201. Thumbnails and the measured description are made from the 1200 px preview after
//! the response on a blocking thread; images left without thumbnails by a stopped server
//! are finished at the next start.
//!
//! Where things live: this module holds the routes, the request and response types and
//! the handlers (parse → domain call → respond), with the calls other resources and the
//! web dashboard share (`live_urls`, `live_logos`, `upload_bytes`, `upload_logo`);
//! [`store`] holds every SQL statement of the resource; [`upload`] the upload form and
//! the upload itself; [`derivatives`] the thumbnails and description made in the background;
//! [`cutout`] the product cut out of an image (`POST /v1/images/{id}/cutout`).

mod cutout;
mod derivatives;
mod store;
mod upload;

pub use derivatives::{resume_derivatives, spawn_derivatives};

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::IdPath;
use crate::auth::{Auth, Scope};
use crate::blob::BlobStore;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::http::envelope::{self, Deleted, Envelope, ListEnvelope};
use crate::http::extract::QueryParams;
use crate::state::AppState;
use crate::store::Db;
use crate::store::list::ListParams;
use std::sync::Arc;
use upload::{UploadForm, read_form, store_upload};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(upload_image, list_images))
        .routes(routes!(get_image, delete_image))
        .routes(routes!(cutout::cutout_image))
}

pub const IMAGE_TYPES: [&str; 5] = ["product", "lifestyle", "logo", "background", "other"];
const SEARCH_MAX: usize = 200;

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
    /// For a cut-out (`POST /v1/images/{id}/cutout`): the `img_…` it was cut out of; null
    /// for uploads.
    pub cutout_of: Option<String>,
    /// For a cut-out: how the product's mask was made. `colour_key`: keyed on the photo's
    /// flat or studio-sweep border; `model`: the U²-Net-P salient-object model;
    /// `source_alpha`: the photo's own transparency. Null for uploads.
    #[schema(value_type = Option<CutoutMethod>)]
    pub cutout_method: Option<String>,
    pub created_at: String,
    pub updated_at: String,
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

/// How a cut-out's mask was made, for the OpenAPI description.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
enum CutoutMethod {
    SourceAlpha,
    ColourKey,
    Model,
}

/// Whether a logo is drawn for light or dark backgrounds, for the OpenAPI description.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
enum LogoTheme {
    Light,
    Dark,
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
    let image = store_upload(&state.db, &state.blobs, &caller.org_id, form).await?;
    Ok(envelope::created(image))
}

/// Stores an uploaded reference image (no type, no alt text) as POST /v1/images does: the
/// web dashboard's "create an ad" form uploads through this.
///
/// # Errors
/// As POST /v1/images: IMAGE_INVALID_FORMAT, IMAGE_UNREADABLE, VALIDATION_ERROR (limits),
/// IMAGE_UPLOAD_FAILED.
pub async fn upload_bytes(
    db: &Db,
    blobs: &Arc<dyn BlobStore>,
    org_id: &str,
    bytes: Bytes,
) -> ApiResult<Image> {
    let form = UploadForm {
        file: Some(bytes),
        ..UploadForm::default()
    };
    store_upload(db, blobs, org_id, form).await
}

/// [`upload_bytes`] of a logo: `image_type` `logo`, so its light/dark theme is measured as
/// POST /v1/images measures it (the dashboard's brand page uploads through this).
///
/// # Errors
/// As [`upload_bytes`].
pub async fn upload_logo(
    db: &Db,
    blobs: &Arc<dyn BlobStore>,
    org_id: &str,
    bytes: Bytes,
) -> ApiResult<Image> {
    let form = UploadForm {
        file: Some(bytes),
        image_type: Some("logo".to_string()),
        ..UploadForm::default()
    };
    store_upload(db, blobs, org_id, form).await
}

/// Public URLs of the live images among `ids`, in the order given.
///
/// # Errors
/// Database failures.
pub async fn live_urls(
    db: &Db,
    blobs: &dyn BlobStore,
    org_id: &str,
    ids: &[String],
) -> ApiResult<Vec<String>> {
    Ok(live_logos(db, blobs, org_id, ids)
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
    db: &Db,
    blobs: &dyn BlobStore,
    org_id: &str,
    ids: &[String],
) -> ApiResult<Vec<(String, Option<String>)>> {
    let mut out = Vec::new();
    for id in ids {
        if let Some((key, theme)) = store::live_key(db, org_id, id).await? {
            out.push((blobs.url(&key), theme));
        }
    }
    Ok(out)
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
    let mut filter = store::ListFilter {
        product_id: q.csv("product_id"),
        ..store::ListFilter::default()
    };
    if let Some(types) = q.csv("image_type") {
        for t in &types {
            if !IMAGE_TYPES.contains(&t.as_str()) {
                q.error(
                    "image_type",
                    format!("`{t}` is not an image type; use {}", IMAGE_TYPES.join(", ")),
                );
            }
        }
        filter.image_type = Some(types);
    }
    if let Some(s) = q.string("search") {
        if s.chars().count() > SEARCH_MAX {
            q.error("search", format!("must be at most {SEARCH_MAX} characters"));
        }
        filter.search = Some(s.to_lowercase());
    }
    q.finish()?;
    let page = store::list(&state.db, &caller.org_id, &filter, &p).await?;
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
        store::load(&state.db, &caller.org_id, &id)
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
    if !store::delete(&mut tx, &caller.org_id, &id).await? {
        return Err(ApiError::not_found(ErrorCode::ImageNotFound, "image", &id));
    }
    tx.commit().await?;
    Ok(Deleted::response(id))
}
