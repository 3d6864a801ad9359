//! `/v1/image-ads`: create (202, asynchronous), read with live progress, list, edit
//! (PATCH → new immutable version), delete, and versions.
//!
//! Create runs every check the caller can fix synchronously (relations → 404/422, the
//! reference URL → 422, balance → 402), then writes the ad, its wallet hold and its job
//! (outbox) in one transaction. Workers report back through the queue; `crate::jobs`
//! applies their results.

use std::sync::Arc;

use adforge_renderer::ImageFetcher;
use adforge_worker::protocol::{
    Audience as JobAudience, Brand as JobBrand, Logo, Product as JobProduct,
};
use adforge_worker::{GenerateAdJob, Job, RerenderJob};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sqlx::FromRow;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::{IdPath, check_text};
use crate::app::AppState;
use crate::auth::{Auth, Scope};
use crate::blob::{BlobStore, NO_SUCH_FILE, OwnFile};
use crate::error::{ApiError, ApiResult, ErrorCode, FieldError};
use crate::http::envelope::{self, Deleted, Envelope, ListEnvelope, Meta};
use crate::http::extract::{JsonBody, PathParams, QueryParams};
use crate::jobs::Jobs;
use crate::store::list::{Bind, Condition, ListParams, ListQuery};
use crate::wallet;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_ad, list_ads))
        .routes(routes!(get_ad, update_ad, delete_ad))
        .routes(routes!(list_versions))
        .routes(routes!(get_version))
        .routes(routes!(sync_ads))
}

/// Largest JSON tree accepted by PATCH, serialised.
pub const MAX_TREE_BYTES: usize = 512 * 1024;
const PROMPT_MAX: usize = 2_000;

fn prompt_schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    super::common::text_schema::text(
        PROMPT_MAX,
        "Free-form creative direction: at most 2,000 characters; tab and line breaks allowed, other control characters and bidirectional overrides not",
    )
}

/// `{step, message, percentage}` while processing.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Progress {
    pub step: String,
    pub message: String,
    pub percentage: u8,
}

/// `{code, message}` when failed.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AdError {
    /// PIPELINE_ERROR, or another code a worker chose (e.g. REFERENCE_AD_URL_INVALID when the
    /// reference stopped being reachable after create).
    pub code: String,
    pub message: String,
}

/// The design template an ad was made from, and the version of its tree that was used.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SourceDesignTemplate {
    /// `dt_…`
    pub id: String,
    pub json_tree_version: i64,
}

/// An image ad.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImageAd {
    /// `ia_…`
    pub id: String,
    pub reference_ad_url: String,
    pub brand_id: String,
    pub product_id: String,
    pub audience_id: String,
    /// Historical; new ads return null, also those made from a design template (their
    /// template is in `source_design_template`).
    pub design_template_id: Option<String>,
    /// The design template whose tree laid this ad out, when it was made with
    /// POST /v1/design-templates/{id}/image-ads; null otherwise.
    pub source_design_template: Option<SourceDesignTemplate>,
    pub product_variant_id: Option<String>,
    pub prompt: Option<String>,
    /// Reserved for legacy rows; new ads return null.
    #[schema(value_type = Option<Object>)]
    pub options: Option<Value>,
    pub editable: bool,
    /// flat_image_ad or editable_image_ad.
    pub sku_code: String,
    /// processing, completed or failed.
    pub status: String,
    pub progress: Option<Progress>,
    /// The PNG, once completed.
    pub image_url: Option<String>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    /// The JSON tree of the current version (editable ads, once completed).
    #[schema(value_type = Option<Object>)]
    pub current_json_tree: Option<Value>,
    pub figma_render_url: Option<String>,
    pub initial_figma_render_url: Option<String>,
    pub error: Option<AdError>,
    /// Worker wall-clock time of the last render.
    pub duration_ms: Option<i64>,
    pub batch_id: Option<String>,
    pub created_at: String,
    pub completed_at: Option<String>,
}

#[derive(FromRow)]
struct AdRow {
    id: String,
    reference_ad_url: String,
    brand_id: String,
    product_id: String,
    audience_id: String,
    design_template_id: Option<String>,
    source_design_template_id: Option<String>,
    source_design_template_version: Option<i64>,
    product_variant_id: Option<String>,
    prompt: Option<String>,
    options: Option<String>,
    #[sqlx(try_from = "crate::store::Flag")]
    editable: bool,
    sku_code: String,
    status: String,
    progress: Option<String>,
    image_url: Option<String>,
    width: Option<i64>,
    height: Option<i64>,
    current_json_tree: Option<String>,
    current_version: i64,
    figma_render_url: Option<String>,
    initial_figma_render_url: Option<String>,
    error_code: Option<String>,
    error_message: Option<String>,
    duration_ms: Option<i64>,
    batch_id: Option<String>,
    created_at: String,
    completed_at: Option<String>,
}

const COLUMNS: &str = "t.id, t.reference_ad_url, t.brand_id, t.product_id, t.audience_id, t.design_template_id, \
    t.source_design_template_id, t.source_design_template_version, t.product_variant_id, t.prompt, t.options, t.editable, t.sku_code, t.status, t.progress, t.image_url, t.width, \
    t.height, t.current_json_tree, t.current_version, t.figma_render_url, t.initial_figma_render_url, t.error_code, \
    t.error_message, t.duration_ms, t.batch_id, t.created_at, t.completed_at";

impl AdRow {
    fn into_ad(self, live: Option<Progress>) -> ImageAd {
        let parse = |s: Option<String>| s.and_then(|s| serde_json::from_str::<Value>(&s).ok());
        let stored: Option<Progress> = self.progress.and_then(|p| serde_json::from_str(&p).ok());
        ImageAd {
            progress: if self.status == "processing" {
                live.or(stored)
            } else {
                None
            },
            error: match (self.error_code, self.error_message) {
                (Some(code), message) if self.status == "failed" => Some(AdError {
                    code,
                    message: message.unwrap_or_default(),
                }),
                _ => None,
            },
            options: parse(self.options),
            current_json_tree: parse(self.current_json_tree),
            id: self.id,
            reference_ad_url: self.reference_ad_url,
            brand_id: self.brand_id,
            product_id: self.product_id,
            audience_id: self.audience_id,
            design_template_id: self.design_template_id,
            source_design_template: self
                .source_design_template_id
                .map(|id| SourceDesignTemplate {
                    id,
                    json_tree_version: self.source_design_template_version.unwrap_or(1),
                }),
            product_variant_id: self.product_variant_id,
            prompt: self.prompt,
            editable: self.editable,
            sku_code: self.sku_code,
            status: self.status,
            image_url: self.image_url,
            width: self.width,
            height: self.height,
            figma_render_url: self.figma_render_url,
            initial_figma_render_url: self.initial_figma_render_url,
            duration_ms: self.duration_ms,
            batch_id: self.batch_id,
            created_at: self.created_at,
            completed_at: self.completed_at,
        }
    }
}

async fn load_row<'e, E: sqlx::AnyExecutor<'e>>(ex: E, org_id: &str, id: &str) -> ApiResult<AdRow> {
    crate::store::query_as::<AdRow>(&format!(
        "SELECT {COLUMNS} FROM image_ads AS t WHERE t.id = ? AND t.org_id = ? AND t.deleted_at IS NULL"
    ))
    .bind(id)
    .bind(org_id)
    .fetch_optional(ex)
    .await?
    .ok_or_else(|| ApiError::not_found(ErrorCode::ImageAdNotFound, "image ad", id))
}

/// The ad as GET /v1/image-ads/{id} shows it once it is no longer processing (no live
/// progress to add), as JSON; `None` when it is gone. Used for webhook events, inside the
/// transaction of the state change.
///
/// # Errors
/// Database failures.
pub async fn snapshot(
    conn: &mut sqlx::AnyConnection,
    org_id: &str,
    id: &str,
) -> ApiResult<Option<Value>> {
    match load_row(conn, org_id, id).await {
        Ok(row) => Ok(Some(
            serde_json::to_value(row.into_ad(None)).map_err(ApiError::internal)?,
        )),
        Err(e) if e.code == ErrorCode::ImageAdNotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The row with live progress from the queue while processing.
async fn present(state: &AppState, row: AdRow) -> ImageAd {
    let mut live = None;
    if row.status == "processing"
        && let Ok(Some(p)) = state.jobs.queue.latest_progress(&row.id).await
        && i64::from(p.version) == row.current_version
    {
        live = Some(Progress {
            step: p.step,
            message: p.message,
            percentage: p.percentage,
        });
    }
    row.into_ad(live)
}

/// Body of POST /v1/image-ads.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageAdCreate {
    /// A publicly reachable PNG, JPEG or WebP: the composition to follow. A file of this
    /// server (an image's `src`) is read from its store and must be given exactly as
    /// returned: no user info, query, fragment or `..` (else 422 REFERENCE_AD_URL_INVALID
    /// saying what to change).
    pub reference_ad_url: String,
    pub brand_id: String,
    /// Must belong to `brand_id` (else 422 PRODUCT_BRAND_MISMATCH).
    pub product_id: String,
    /// Must belong to `product_id` (else 422 AUDIENCE_PRODUCT_MISMATCH).
    pub audience_id: String,
    /// `true` for the editable SKU ($4.00: PNG + JSON tree); default `false` ($1.00).
    #[serde(default)]
    pub editable: bool,
    /// Use this variant's images; default: the product's oldest active variant with images.
    pub product_variant_id: Option<String>,
    /// Free-form creative direction, at most 2,000 characters.
    #[schema(schema_with = prompt_schema)]
    pub prompt: Option<String>,
}

struct Resolved {
    brand: JobBrand,
    product: JobProduct,
    audience: JobAudience,
    variant_id: String,
    variant_image_urls: Vec<String>,
    search_name: String,
}

fn object(v: Option<Map<String, Value>>) -> Value {
    v.map_or(Value::Object(Map::new()), Value::Object)
}

/// Resolves and checks every relation of a create, in the spec's order of precedence.
async fn resolve(state: &AppState, org_id: &str, body: &ImageAdCreate) -> ApiResult<Resolved> {
    resolve_ids(
        state,
        org_id,
        &body.brand_id,
        &body.product_id,
        &body.audience_id,
        body.product_variant_id.as_deref(),
    )
    .await
}

/// [`resolve`] by ids.
async fn resolve_ids(
    state: &AppState,
    org_id: &str,
    brand_id: &str,
    product_id: &str,
    audience_id: &str,
    product_variant_id: Option<&str>,
) -> ApiResult<Resolved> {
    let db = &state.db.read;
    let brand = super::brands::load(db, org_id, brand_id).await?;
    let product = super::products::load(db, org_id, product_id).await?;
    let audience = super::audiences::load(db, org_id, audience_id).await?;
    if product.brand_id != brand.id {
        return Err(ApiError::new(
            ErrorCode::ProductBrandMismatch,
            format!(
                "Product `{}` belongs to brand `{}`, not to `{}`",
                product.id, product.brand_id, brand.id
            ),
        ));
    }
    if audience.product_id != product.id {
        return Err(ApiError::new(
            ErrorCode::AudienceProductMismatch,
            format!(
                "Audience `{}` belongs to product `{}`, not to `{}`",
                audience.id, audience.product_id, product.id
            ),
        ));
    }
    let variant = match product_variant_id {
        Some(vid) => {
            let v = super::variants::load(db, org_id, vid).await?;
            if v.product_id != product.id {
                return Err(ApiError::field(
                    "product_variant_id",
                    format!(
                        "`{vid}` is a variant of product `{}`, not of `{}`",
                        v.product_id, product.id
                    ),
                ));
            }
            if v.image_ids.is_empty() {
                return Err(ApiError::new(
                    ErrorCode::ProductVariantNoImages,
                    format!(
                        "Variant `{vid}` has no images; attach some with PATCH /v1/product-variants/{vid} (image_ids)"
                    ),
                ));
            }
            v
        }
        None => {
            let mut conn = state.db.read.acquire().await?;
            super::variants::active_of_product(&mut conn, &product.id)
                .await?
                .into_iter()
                .find(|v| !v.image_ids.is_empty())
                .ok_or_else(|| {
                    ApiError::new(
                        ErrorCode::ProductVariantNoImages,
                        format!(
                            "Product `{}` has no variant with images; attach images to a variant with PATCH /v1/product-variants/{{id}} (image_ids)",
                            product.id
                        ),
                    )
                })?
        }
    };
    let variant_image_urls = super::images::live_urls(state, org_id, &variant.image_ids).await?;
    if variant_image_urls.is_empty() {
        return Err(ApiError::new(
            ErrorCode::ProductVariantNoImages,
            format!("The images of variant `{}` were deleted", variant.id),
        ));
    }
    let logo_ids = brand.logo_image_ids.clone().unwrap_or_default();
    let logos = super::images::live_logos(state, org_id, &logo_ids).await?;
    Ok(Resolved {
        search_name: product.name.to_lowercase(),
        brand: JobBrand {
            id: brand.id,
            name: brand.name,
            color_palettes: object(brand.color_palettes),
            fonts: serde_json::to_value(&brand.fonts).unwrap_or(Value::Null),
            logos: logos
                .into_iter()
                .map(|(url, theme)| Logo { url, theme })
                .collect(),
        },
        product: JobProduct {
            id: product.id,
            name: product.name,
            description: product.description,
            details: object(product.details),
        },
        audience: JobAudience {
            id: audience.id,
            name: audience.name,
            description: audience.description,
            details: object(audience.details),
        },
        variant_id: variant.id,
        variant_image_urls,
    })
}

/// Fetches the reference (this server's own files from the blob store, others through
/// the public-address guard) and checks it is an image.
async fn check_reference(state: &AppState, url: String) -> ApiResult<()> {
    let fetcher: Arc<adforge_renderer::HttpFetcher> = state.reference_fetcher.clone();
    let invalid = |why: String| {
        ApiError::new(
            ErrorCode::ReferenceAdUrlInvalid,
            format!("reference_ad_url {why}; give a publicly reachable PNG, JPEG or WebP URL"),
        )
    };
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(invalid("is not an http(s) URL".into()));
    }
    // This server's own files are read from the blob store, by the one mapping of own URLs
    // to keys that the worker uses too; a malformed own URL says what to change.
    let own_invalid = |why: &str| {
        ApiError::new(
            ErrorCode::ReferenceAdUrlInvalid,
            format!("reference_ad_url {why}"),
        )
    };
    let own = match state.blobs.own_file(&url) {
        OwnFile::Foreign => None,
        OwnFile::Invalid(why) => return Err(own_invalid(&why)),
        OwnFile::Key(key) => match state.blobs.get(&key).await.map_err(ApiError::internal)? {
            Some(bytes) => Some(bytes.to_vec()),
            None => return Err(own_invalid(NO_SUCH_FILE)),
        },
    };
    let checked = tokio::task::spawn_blocking(move || -> Result<(u32, u32), String> {
        let bytes = match own {
            Some(bytes) => bytes,
            None => fetcher.fetch(&url)?,
        };
        let format = image::guess_format(&bytes).map_err(|_| "is not an image".to_string())?;
        if !matches!(
            format,
            image::ImageFormat::Png | image::ImageFormat::Jpeg | image::ImageFormat::WebP
        ) {
            return Err(format!("is a {format:?} image, not PNG, JPEG or WebP"));
        }
        image::ImageReader::with_format(std::io::Cursor::new(&bytes), format)
            .into_dimensions()
            .map_err(|e| format!("cannot be decoded ({e})"))
    })
    .await
    .map_err(ApiError::internal)?;
    match checked {
        Ok((w, h))
            if w > 0 && h > 0 && w <= crate::imaging::MAX_SIDE && h <= crate::imaging::MAX_SIDE =>
        {
            Ok(())
        }
        Ok((w, h)) => Err(invalid(format!(
            "is {w}×{h} pixels, over the limit of {} a side",
            crate::imaging::MAX_SIDE
        ))),
        Err(why) if why.starts_with("is ") || why.starts_with("cannot") => Err(invalid(why)),
        Err(why) => Err(invalid(format!("could not be fetched ({why})"))),
    }
}

/// Create an image ad
///
/// Checks run in this order: the four ids exist (404), product ∈ brand and audience ∈
/// product (422), the product has a variant with images (422), the reference URL is a
/// reachable image (422), the wallet's available balance covers the price (402). Then the
/// ad is created `processing` with a hold for its price and generation starts; poll
/// GET /v1/image-ads/{id}. The price is charged once, when the ad first completes;
/// nothing is charged if it fails.
#[utoipa::path(post, path = "/v1/image-ads", tag = "image ads", request_body = ImageAdCreate,
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 202, description = "Accepted; the ad is processing", body = Envelope<ImageAd>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 402, description = "INSUFFICIENT_BALANCE: the message carries the top-up link and the amounts", body = crate::error::ErrorBody),
        (status = 404, description = "BRAND_NOT_FOUND, PRODUCT_NOT_FOUND, AUDIENCE_NOT_FOUND, PRODUCT_VARIANT_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 422, description = "PRODUCT_BRAND_MISMATCH, AUDIENCE_PRODUCT_MISMATCH, PRODUCT_VARIANT_NO_IMAGES, REFERENCE_AD_URL_INVALID", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["image_ads:write"])))]
async fn create_ad(
    State(state): State<AppState>,
    Auth(caller): Auth,
    JsonBody(body): JsonBody<ImageAdCreate>,
) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsWrite)?;
    let ad = create_from(&state, &caller.org_id, &body, None).await?;
    let body = Envelope {
        data: ad,
        meta: Meta::current(),
    };
    Ok((StatusCode::ACCEPTED, axum::Json(body)).into_response())
}

/// Creates an ad (the whole of POST /v1/image-ads after the scope check): validation,
/// relations, the reference (not checked again for an ad made from a design template,
/// whose worker does not read it), the hold, the row and its job. `template` lays the ad
/// out with a design template's tree.
///
/// # Errors
/// Every error POST /v1/image-ads lists.
pub(crate) async fn create_from(
    state: &AppState,
    org_id: &str,
    body: &ImageAdCreate,
    template: Option<adforge_worker::TemplateLayout>,
) -> ApiResult<ImageAd> {
    let mut errors: Vec<FieldError> = Vec::new();
    let prompt = check_text("prompt", body.prompt.clone(), PROMPT_MAX, &mut errors);
    if body.reference_ad_url.len() > 2048 {
        errors.push(FieldError::new(
            "reference_ad_url",
            "must be at most 2048 characters",
        ));
    }
    super::common::finish(errors)?;
    let r = resolve(state, org_id, body).await?;
    if template.is_none() {
        check_reference(state, body.reference_ad_url.clone()).await?;
    }
    let source = template
        .as_ref()
        .map(|t| (t.template_id.clone(), i64::from(t.json_tree_version)));

    let (sku, price) = if body.editable {
        ("editable_image_ad", wallet::EDITABLE_IMAGE_AD_CENTS)
    } else {
        ("flat_image_ad", wallet::FLAT_IMAGE_AD_CENTS)
    };
    let id = crate::ids::new_id("ia");
    let job = Job::GenerateImageAd(GenerateAdJob {
        ad_id: id.clone(),
        org_id: org_id.to_owned(),
        version: 1,
        editable: body.editable,
        reference_ad_url: body.reference_ad_url.clone(),
        prompt: prompt.clone(),
        brand: r.brand,
        product: r.product,
        audience: r.audience,
        variant_image_urls: r.variant_image_urls,
        template,
    });
    let queued = Progress {
        step: "queued".into(),
        message: "Waiting for a worker".into(),
        percentage: 0,
    };
    let mut tx = state.db.begin_write().await?;
    wallet::hold(&mut tx, org_id, price, &id, &state.dashboard_url).await?;
    let now = crate::timestamp::now();
    crate::store::query(
        "INSERT INTO image_ads (id, org_id, brand_id, product_id, audience_id, product_variant_id, reference_ad_url, prompt, \
         editable, sku_code, price_cents, status, progress, current_version, job, search_name, created_at, updated_at, \
         source_design_template_id, source_design_template_version) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'processing', ?, 1, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&id)
    .bind(org_id)
    .bind(&body.brand_id)
    .bind(&body.product_id)
    .bind(&body.audience_id)
    .bind(body.product_variant_id.as_ref().map(|_| r.variant_id.clone()))
    .bind(&body.reference_ad_url)
    .bind(&prompt)
    .bind(i64::from(body.editable))
    .bind(sku)
    .bind(price)
    .bind(crate::store::to_json_text(&queued))
    .bind(crate::store::to_json_text(&job))
    .bind(&r.search_name)
    .bind(&now)
    .bind(&now)
    .bind(source.as_ref().map(|s| s.0.clone()))
    .bind(source.as_ref().map(|s| s.1))
    .execute(&mut *tx)
    .await?;
    Jobs::stage(&mut tx, &job).await?;
    let row = load_row(&mut *tx, org_id, &id).await?;
    let jobs = state.jobs.clone();
    tx.after_commit(move || jobs.kick());
    tx.commit().await?;
    Ok(row.into_ad(None))
}

/// Retrieve an image ad
///
/// While `processing`, `progress` shows the worker's latest step. Poll every 4 seconds (never
/// faster than every 2).
#[utoipa::path(get, path = "/v1/image-ads/{id}", tag = "image ads",
    params(("id" = String, Path, description = "ia_…")),
    responses(
        (status = 200, description = "The ad", body = Envelope<ImageAd>),
        (status = 404, description = "IMAGE_AD_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["image_ads:read"])))]
async fn get_ad(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsRead)?;
    Ok(envelope::ok(get(&state, &caller.org_id, &id).await?))
}

/// GET /v1/image-ads/{id} after the scope check: the ad with live progress.
///
/// # Errors
/// IMAGE_AD_NOT_FOUND (also for another organisation's ad); database failures.
pub(crate) async fn get(state: &AppState, org_id: &str, id: &str) -> ApiResult<ImageAd> {
    let row = load_row(&state.db.read, org_id, id).await?;
    Ok(present(state, row).await)
}

const STATUSES: [&str; 3] = ["processing", "completed", "failed"];
const SKUS: [&str; 2] = ["flat_image_ad", "editable_image_ad"];

/// List image ads
///
/// Newest first. Multi-value filters are comma-separated (`status=processing,completed`);
/// values within one filter match any, filters combine with AND. `search` matches the ad id
/// or its product's name. `facets=status` counts ads per status.
#[utoipa::path(get, path = "/v1/image-ads", tag = "image ads",
    params(
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "Page size, default 20"),
        ("starting_after" = Option<String>, Query, description = "Id of the last ad already received"),
        ("ids" = Option<String>, Query, pattern = r"[^,\s]", description = "Comma-separated ia_ ids (1 to 100); ignores cursor pagination"),
        ("status" = Option<String>, Query, pattern = r"^\s*(processing|completed|failed)?\s*(,\s*(processing|completed|failed)?\s*)*$", description = "Comma-separated among processing, completed, failed"),
        ("brand_id" = Option<String>, Query, description = "Comma-separated"),
        ("product_id" = Option<String>, Query, description = "Comma-separated"),
        ("product_variant_id" = Option<String>, Query, description = "Comma-separated"),
        ("reference_ad_url" = Option<String>, Query, description = "Exact URL"),
        ("batch_id" = Option<String>, Query, description = "Comma-separated"),
        ("editable" = Option<bool>, Query, description = "true or false"),
        ("sku_code" = Option<String>, Query, pattern = r"^\s*(flat_image_ad|editable_image_ad)?\s*(,\s*(flat_image_ad|editable_image_ad)?\s*)*$", description = "Comma-separated among flat_image_ad, editable_image_ad"),
        ("search" = Option<String>, Query, max_length = 200, description = "Ad id or product name"),
        ("facets" = Option<String>, Query, pattern = r"^\s*(status)?\s*(,\s*(status)?\s*)*$", description = "Comma-separated: status"),
    ),
    responses(
        (status = 200, description = "A page of ads", body = ListEnvelope<ImageAd>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["image_ads:read"])))]
async fn list_ads(
    State(state): State<AppState>,
    Auth(caller): Auth,
    q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsRead)?;
    Ok(list_page(&state, &caller.org_id, q).await?.into_response())
}

/// One page of GET /v1/image-ads for `org_id` with the query's filters, paging and facets
/// (the web dashboard's gallery calls it too).
///
/// # Errors
/// VALIDATION_ERROR for a bad filter or cursor; database failures.
pub(crate) async fn list_page(
    state: &AppState,
    org_id: &str,
    mut q: QueryParams,
) -> ApiResult<crate::http::envelope::Page<ImageAd>> {
    let p = ListParams::parse(&mut q, true, &["status"]);
    let mut conditions = Vec::new();
    for (param, column, allowed, dim) in [
        ("status", "t.status", Some(&STATUSES[..]), Some("status")),
        ("brand_id", "t.brand_id", None, None),
        ("product_id", "t.product_id", None, None),
        ("product_variant_id", "t.product_variant_id", None, None),
        ("batch_id", "t.batch_id", None, None),
        ("sku_code", "t.sku_code", Some(&SKUS[..]), None),
    ] {
        if let Some(values) = q.csv(param) {
            if let Some(allowed) = allowed {
                for v in &values {
                    if !allowed.contains(&v.as_str()) {
                        q.error(param, format!("`{v}` is not one of {}", allowed.join(", ")));
                    }
                }
            }
            conditions.push(Condition::any_of(dim, column, &values));
        }
    }
    if let Some(url) = q.string("reference_ad_url") {
        conditions.push(Condition::new(
            "t.reference_ad_url = ?",
            vec![Bind::Text(url)],
        ));
    }
    if let Some(e) = q.one_of("editable", &["true", "false"]) {
        conditions.push(Condition::new(
            "t.editable = ?",
            vec![Bind::Int(i64::from(e == "true"))],
        ));
    }
    if let Some(s) = q.string("search") {
        if s.chars().count() > 200 {
            q.error("search", "must be at most 200 characters");
        }
        let needle = s.to_lowercase();
        conditions.push(Condition::new(
            "instr(lower(t.id), ?) > 0 OR instr(t.search_name, ?) > 0",
            vec![Bind::Text(needle.clone()), Bind::Text(needle)],
        ));
    }
    q.finish()?;
    let page = ListQuery {
        table: "image_ads",
        columns: COLUMNS,
        joins: "",
        org_id,
        conditions,
        facet_columns: &[("status", "t.status")],
    }
    .fetch::<AdRow>(&state.db, &p)
    .await?;
    let mut items = Vec::with_capacity(page.items.len());
    let crate::http::envelope::Page {
        items: rows,
        has_more,
        total_count,
        facets,
    } = page;
    for row in rows {
        items.push(present(state, row).await);
    }
    Ok(crate::http::envelope::Page {
        items,
        has_more,
        total_count,
        facets,
    })
}

/// Body of PATCH /v1/image-ads/{id}.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageAdUpdate {
    /// The entire updated tree (not a diff): at most 512 KiB, image fills with http(s) URLs
    /// only (no base64 data). Each image URL must be one the render can read: a public host
    /// (no `localhost` or private, loopback or link-local address in any notation, such as
    /// `2130706433`, unless the server allows private URLs), or an existing file of this
    /// server given exactly as returned (no user info, query, fragment or `..`). Else 400
    /// VALIDATION_ERROR naming the node and field.
    #[schema(value_type = Object)]
    pub current_json_tree: Value,
}

/// Checks an edited tree as PATCH /v1/image-ads/{id} does (size, the renderer's validation,
/// image URLs by the fetch rules, own files present) and returns its text. Design templates
/// check their trees with this too.
///
/// # Errors
/// VALIDATION_ERROR on `current_json_tree` naming the node and field.
pub(crate) async fn validate_tree(state: &AppState, tree: &Value) -> ApiResult<String> {
    // Validating a tree of up to 512 KiB is CPU work: keep it off the async runtime.
    let (tree, allow, blobs) = (tree.clone(), state.allow_private_urls, state.blobs.clone());
    let (text, own_images) =
        tokio::task::spawn_blocking(move || check_tree(&tree, allow, blobs.as_ref()))
            .await
            .map_err(ApiError::internal)??;
    // Own files are read from the blob store when rendering: each must be there now.
    for image in &own_images {
        if !state
            .blobs
            .exists(&image.key)
            .await
            .map_err(ApiError::internal)?
        {
            return Err(ApiError::field(
                "current_json_tree",
                format!("{}: image URL `{}` {NO_SUCH_FILE}", image.place, image.url),
            ));
        }
    }
    Ok(text)
}

/// An image of an edited tree that is one of this server's own files.
struct OwnImage {
    /// Where the tree names it: "node `…`, field `fills[0].imageFillUrl`".
    place: String,
    url: String,
    key: String,
}

/// Checks an edited tree: size, the renderer's validation, and every image URL the
/// renderer will fetch, by the rules the worker's fetch applies: this server's own files
/// map to blob keys by [`BlobStore::own_file`] (no `..`, query, fragment or user info), any
/// other URL must pass the fetcher's address guard ([`adforge_renderer::image::fetch::check_url`]:
/// no private, loopback or link-local host in any notation, unless private URLs are
/// allowed). Returns the tree's text and the own files, whose existence the caller checks.
fn check_tree(
    tree: &Value,
    allow_private: bool,
    blobs: &dyn BlobStore,
) -> ApiResult<(String, Vec<OwnImage>)> {
    let text = crate::store::to_json_text(tree);
    if text.len() > MAX_TREE_BYTES {
        return Err(ApiError::field(
            "current_json_tree",
            format!(
                "is {} bytes; at most {MAX_TREE_BYTES} are accepted",
                text.len()
            ),
        ));
    }
    let parsed = adforge_renderer::Tree::parse(&text)
        .map_err(|e| ApiError::field("current_json_tree", e.to_string()))?;
    let places = image_places(tree);
    let mut own = Vec::new();
    for url in adforge_renderer::image::image_urls(&parsed) {
        let place = places
            .get(&url)
            .cloned()
            .unwrap_or_else(|| "an IMAGE paint".to_string());
        let refuse = |why: &str| {
            ApiError::field(
                "current_json_tree",
                format!("{place}: image URL `{url}` {why}"),
            )
        };
        match blobs.own_file(&url) {
            OwnFile::Key(key) => own.push(OwnImage { place, url, key }),
            OwnFile::Invalid(why) => return Err(refuse(&why)),
            OwnFile::Foreign => {
                adforge_renderer::image::fetch::check_url(&url, allow_private)
                    .map_err(|e| refuse(&format!("cannot be fetched: {e}")))?;
            }
        }
    }
    Ok((text, own))
}

/// Where each image URL first appears among the tree's visible IMAGE paints, as the
/// renderer's errors name places: "node `id`, field `fills[0].imageFillUrl`".
fn image_places(tree: &Value) -> std::collections::HashMap<String, String> {
    let mut out = std::collections::HashMap::new();
    let Some(nodes) = tree.get("nodes").and_then(Value::as_object) else {
        return out;
    };
    for (id, node) in nodes {
        for list in ["fills", "strokes"] {
            let Some(paints) = node.get(list).and_then(Value::as_array) else {
                continue;
            };
            for (k, p) in paints.iter().enumerate() {
                if p.get("type").and_then(Value::as_str) != Some("IMAGE")
                    || p.get("visible").and_then(Value::as_bool) == Some(false)
                {
                    continue;
                }
                let found = ["imageFillUrl", "imageUrl", "imageRef"]
                    .into_iter()
                    .find_map(|f| p.get(f).and_then(Value::as_str).map(|u| (f, u)));
                if let Some((field, url)) = found {
                    out.entry(url.to_string())
                        .or_insert_with(|| format!("node `{id}`, field `{list}[{k}].{field}`"));
                }
            }
        }
    }
    out
}

/// Edit an editable image ad
///
/// Send the entire tree. The ad must be editable (else 422 IMAGE_AD_NOT_EDITABLE) and
/// completed (else 422 IMAGE_AD_NOT_COMPLETED). A new immutable version (`iav_…`) is
/// written, the ad goes back to `processing`, and the PNG is re-rendered; poll until it is
/// `completed` before reading `image_url`. Re-renders are free: the editable SKU's price
/// covers its edits. A re-render never completes without an image the tree asks for: an
/// image that cannot be fetched or decoded ends the ad `failed` with `PIPELINE_ERROR`, the
/// image's URL and the reason in `error.message` (transient fetch failures are retried
/// first).
#[utoipa::path(patch, path = "/v1/image-ads/{id}", tag = "image ads", request_body = ImageAdUpdate,
    params(("id" = String, Path, description = "ia_…"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 200, description = "The ad, processing the new version", body = Envelope<ImageAd>),
        (status = 400, description = "VALIDATION_ERROR (naming the node and field of an invalid tree)", body = crate::error::ErrorBody),
        (status = 404, description = "IMAGE_AD_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 422, description = "IMAGE_AD_NOT_COMPLETED, IMAGE_AD_NOT_EDITABLE", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["image_ads:write"])))]
async fn update_ad(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    JsonBody(body): JsonBody<ImageAdUpdate>,
) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsWrite)?;
    let ad = update(&state, &caller.org_id, &id, &body.current_json_tree).await?;
    Ok(envelope::ok(ad))
}

/// PATCH /v1/image-ads/{id} after the scope check (the web dashboard's editor calls it
/// too): checks, the new version, its job.
///
/// # Errors
/// Every error PATCH /v1/image-ads/{id} lists.
pub(crate) async fn update(
    state: &AppState,
    org_id: &str,
    id: &str,
    tree: &Value,
) -> ApiResult<ImageAd> {
    let row = load_row(&state.db.read, org_id, id).await?;
    if !row.editable {
        return Err(ApiError::new(
            ErrorCode::ImageAdNotEditable,
            format!(
                "Image ad `{id}` is a flat ad; only editable ads can be changed (create one with editable: true)"
            ),
        ));
    }
    if row.status != "completed" {
        return Err(ApiError::new(
            ErrorCode::ImageAdNotCompleted,
            format!(
                "Image ad `{id}` is {}; wait until it is completed, then send the whole tree",
                row.status
            ),
        ));
    }
    let text = validate_tree(state, tree).await?;
    let mut tx = state.db.begin_write().await?;
    let row = load_row(&mut *tx, org_id, id).await?;
    if row.status != "completed" {
        return Err(ApiError::new(
            ErrorCode::ImageAdNotCompleted,
            format!(
                "Image ad `{id}` is {}; wait until it is completed",
                row.status
            ),
        ));
    }
    let version = row.current_version + 1;
    let version_id = crate::ids::new_id("iav");
    let job = Job::RenderImageAdVersion(RerenderJob {
        ad_id: id.to_owned(),
        org_id: org_id.to_owned(),
        version: u32::try_from(version).unwrap_or(u32::MAX),
        version_id: Some(version_id.clone()),
        json_tree: tree.clone(),
    });
    let now = crate::timestamp::now();
    let queued = Progress {
        step: "queued".into(),
        message: "Waiting for a worker".into(),
        percentage: 0,
    };
    crate::store::query(
        "INSERT INTO image_ad_versions (id, ad_id, org_id, version_number, json_tree, status, created_at) VALUES (?, ?, ?, ?, ?, 'processing', ?)",
    )
    .bind(&version_id)
    .bind(id)
    .bind(org_id)
    .bind(version)
    .bind(&text)
    .bind(&now)
    .execute(&mut *tx)
    .await?;
    crate::store::query(
        "UPDATE image_ads SET status = 'processing', progress = ?, current_version = ?, current_json_tree = ?, job = ?, \
         updated_at = ? WHERE id = ?",
    )
    .bind(crate::store::to_json_text(&queued))
    .bind(version)
    .bind(&text)
    .bind(crate::store::to_json_text(&job))
    .bind(&now)
    .bind(id)
    .execute(&mut *tx)
    .await?;
    Jobs::stage(&mut tx, &job).await?;
    let row = load_row(&mut *tx, org_id, id).await?;
    let jobs = state.jobs.clone();
    tx.after_commit(move || jobs.kick());
    tx.commit().await?;
    Ok(row.into_ad(None))
}

/// Delete an image ad
///
/// A soft delete (404 afterwards; the PNG stays at its URL). An ad that is still
/// processing cannot be deleted (409 CONFLICT): wait until it completes or fails.
#[utoipa::path(delete, path = "/v1/image-ads/{id}", tag = "image ads",
    params(("id" = String, Path, description = "ia_…")),
    responses(
        (status = 200, description = "Deleted", body = Deleted),
        (status = 404, description = "IMAGE_AD_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 409, description = "CONFLICT: the ad is processing", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["image_ads:write"])))]
async fn delete_ad(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsWrite)?;
    let mut tx = state.db.begin_write().await?;
    let row = load_row(&mut *tx, &caller.org_id, &id).await?;
    if row.status == "processing" {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("Image ad `{id}` is processing; delete it once it is completed or failed"),
        ));
    }
    crate::store::query("UPDATE image_ads SET deleted_at = ? WHERE id = ?")
        .bind(crate::timestamp::now())
        .bind(&id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(Deleted::response(id))
}

/// A version of an editable ad.
#[derive(Debug, Serialize, FromRow, ToSchema)]
pub struct ImageAdVersion {
    /// `iav_…`
    pub id: String,
    pub image_ad_id: String,
    pub version_number: i64,
    /// The PNG of this version; null while it renders.
    pub image_url: Option<String>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    /// processing, completed or failed.
    pub status: String,
    #[sqlx(try_from = "crate::store::JsonText")]
    #[schema(value_type = Object)]
    pub json_tree: Value,
    pub created_at: String,
    pub completed_at: Option<String>,
}

const VERSION_COLUMNS: &str = "id, ad_id AS image_ad_id, version_number, image_url, width, height, status, json_tree, created_at, completed_at";

/// List an ad's versions
///
/// Oldest first. Flat ads have no versions (an empty list).
#[utoipa::path(get, path = "/v1/image-ads/{id}/versions", tag = "image ads",
    params(("id" = String, Path, description = "ia_…")),
    responses(
        (status = 200, description = "The versions", body = Envelope<Vec<ImageAdVersion>>),
        (status = 404, description = "IMAGE_AD_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["image_ads:read"])))]
async fn list_versions(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsRead)?;
    Ok(envelope::ok(versions(&state, &caller.org_id, &id).await?))
}

/// GET /v1/image-ads/{id}/versions after the scope check: oldest first.
///
/// # Errors
/// IMAGE_AD_NOT_FOUND; database failures.
pub(crate) async fn versions(
    state: &AppState,
    org_id: &str,
    id: &str,
) -> ApiResult<Vec<ImageAdVersion>> {
    load_row(&state.db.read, org_id, id).await?;
    Ok(crate::store::query_as(&format!(
        "SELECT {VERSION_COLUMNS} FROM image_ad_versions WHERE ad_id = ? AND org_id = ? ORDER BY version_number"
    ))
    .bind(id)
    .bind(org_id)
    .fetch_all(&state.db.read)
    .await?)
}

/// Retrieve a version
#[utoipa::path(get, path = "/v1/image-ads/{id}/versions/{version_id}", tag = "image ads",
    params(("id" = String, Path, description = "ia_…"), ("version_id" = String, Path, description = "iav_…")),
    responses(
        (status = 200, description = "The version", body = Envelope<ImageAdVersion>),
        (status = 400, description = "VALIDATION_ERROR: a path parameter that is not UTF-8 once percent-decoded", body = crate::error::ErrorBody),
        (status = 404, description = "IMAGE_AD_NOT_FOUND, IMAGE_AD_VERSION_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["image_ads:read"])))]
async fn get_version(
    State(state): State<AppState>,
    Auth(caller): Auth,
    PathParams((id, version_id)): PathParams<(String, String)>,
) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsRead)?;
    load_row(&state.db.read, &caller.org_id, &id).await?;
    let v: Option<ImageAdVersion> = crate::store::query_as(&format!(
        "SELECT {VERSION_COLUMNS} FROM image_ad_versions WHERE id = ? AND ad_id = ? AND org_id = ?"
    ))
    .bind(&version_id)
    .bind(&id)
    .bind(&caller.org_id)
    .fetch_optional(&state.db.read)
    .await?;
    v.map(envelope::ok).ok_or_else(|| {
        ApiError::not_found(
            ErrorCode::ImageAdVersionNotFound,
            "image ad version",
            &version_id,
        )
    })
}

/// Sync from a design tool (not supported yet)
///
/// Design-tool sync is not available in adforge yet; the endpoint answers 404 NOT_FOUND
/// saying so, rather than pretending to sync.
#[utoipa::path(post, path = "/v1/image-ads/sync", tag = "image ads",
    responses((status = 404, description = "NOT_FOUND: not supported yet", body = crate::error::ErrorBody)),
    security(("api_key" = ["image_ads:write"])))]
async fn sync_ads(Auth(caller): Auth) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsWrite)?;
    Err(ApiError::new(
        ErrorCode::NotFound,
        "Syncing image ads from a design tool is not supported yet",
    ))
}
