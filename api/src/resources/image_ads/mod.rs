//! `/v1/image-ads`: create (202, asynchronous), read with live progress, list, edit
//! (PATCH → new immutable version), delete, and versions.
//!
//! Create runs every check the caller can fix synchronously (relations → 404/422, the
//! reference URL → 422, balance → 402), then writes the ad, its wallet hold and its job
//! (outbox) in one transaction. Workers report back through the queue; `crate::jobs`
//! applies their results.
//!
//! Where things live: this module holds the routes, the request and response types and
//! the handlers (parse → domain call → respond), with the domain calls the web dashboard
//! shares (`get`, `list_page`); [`store`] holds every SQL statement of the resource;
//! [`create`] the checks and writes of a create (`create_from`); [`edit`] those of an edit
//! (`update`) and the checks of an edited JSON tree; [`versions`] the versions of an
//! editable ad, read by id or by number; [`sets`] campaign sets (issue 42): the `sizes`
//! of a request, a create with siblings, and an edit applied to them; [`resize`] the
//! remake of a completed ad at other sizes.

pub mod apply;
mod create;
mod edit;
pub mod renditions;
mod resize;
mod sets;
mod store;
pub mod sync;
mod versions;

// The ad's `copy` report is the worker's wire type, schema included (its `utoipa` feature).
pub use adforge_worker::protocol::{
    CopyReport, FactSource as CopyFact, Refusal as CopyRefusal, SlotReport as CopySlot,
};
pub use create::{PreparedAd, ReferenceCheck, create_from, create_set, insert, prepare};
pub use edit::MAX_TREE_BYTES;
pub use edit::{CheckedTree, checked_tree, update, validate_saved_tree, validate_tree};
pub use resize::{ImageAdResize, resize};
pub use sets::{ExplicitSize, ImageAdSize, MAX_SIZES, SizeRequest, hold_all, parse_sizes};
pub use versions::{ImageAdVersion, versions};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::IdPath;
use crate::auth::{Auth, Scope};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::http::envelope::{self, Deleted, Envelope, ListEnvelope, Meta};
use crate::http::extract::{JsonBody, QueryParams};
use crate::jobs::Jobs;
use crate::state::AppState;
use crate::store::Db;
use crate::store::list::ListParams;
use store::AdRow;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_ad, list_ads))
        .routes(routes!(get_ad, update_ad, delete_ad))
        .routes(routes!(versions::list_versions))
        .routes(routes!(versions::get_version))
        .routes(routes!(resize::resize_ad))
        .routes(routes!(sync::sync_ads))
}

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
    /// reference stopped being reachable after create). An ad synced from Figma
    /// (POST /v1/image-ads/sync) may fail with FIGMA_TOKEN_INVALID (Figma refused the
    /// organisation's token: 403), FIGMA_NOT_FOUND (no such file or node: 404) or
    /// FIGMA_RATE_LIMITED (429 after waiting as Figma asked; the message gives the wait).
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
    /// Files for ad platforms, once completed (empty otherwise): JPEG and WebP at 1080 px
    /// wide, and at the standard size of the placement nearest the ad's aspect (1080×1080,
    /// 1080×1350, 1080×1920 or 1200×628; an ad more than 1% off that aspect is scaled to
    /// fit inside it on bands of its edge colour, never cropped). Each version has its own;
    /// a rendition is made on the first request of its URL, then kept.
    pub renditions: Vec<renditions::Rendition>,
    /// The JSON tree of the current version (editable ads, once completed).
    #[schema(value_type = Option<Object>)]
    pub current_json_tree: Option<Value>,
    /// Figma's own render of the frame at the latest sync (POST /v1/image-ads/sync), stored
    /// as this server's file; null for ads not synced from Figma.
    pub figma_render_url: Option<String>,
    /// Figma's own render of the frame at the first sync, stored as this server's file.
    pub initial_figma_render_url: Option<String>,
    /// The Figma frame the ad is synced from, its last sync and the import report; null for
    /// ads not made from Figma.
    pub figma: Option<crate::resources::integrations::FigmaSync>,
    pub error: Option<AdError>,
    /// Worker wall-clock time of the last render.
    pub duration_ms: Option<i64>,
    /// What the copywriter wrote and the source of every fact the ad states; null until
    /// completed (and for ads completed before copy reports existed).
    pub copy: Option<CopyReport>,
    pub batch_id: Option<String>,
    /// The size this ad was laid out for, when it is one of a campaign set's sizes (made
    /// with `sizes` on create or with POST /v1/image-ads/{id}/resize); null for an ad at
    /// its reference's (or design template's) own shape.
    pub size: Option<ImageAdSize>,
    /// The campaign set this ad belongs to: the id of the set's first ad (which names
    /// itself); null for an ad in no set. The set's ads are
    /// `GET /v1/image-ads?size_set_id={size_set_id}`.
    pub size_set_id: Option<String>,
    pub created_at: String,
    pub completed_at: Option<String>,
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
    match store::load(conn, org_id, id).await {
        Ok(row) => Ok(Some(
            serde_json::to_value(row.into_ad(None)).map_err(ApiError::internal)?,
        )),
        Err(e) if e.code == ErrorCode::ImageAdNotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The row with live progress from the queue while processing.
async fn present(jobs: &Jobs, row: AdRow) -> ImageAd {
    let mut live = None;
    if row.status == "processing"
        && let Ok(Some(p)) = jobs.queue.latest_progress(&row.id).await
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

/// What POST /v1/image-ads creates, without `sizes` (design templates and the dashboard
/// create with it too).
#[derive(Deserialize)]
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
    pub prompt: Option<String>,
}

/// Body of POST /v1/image-ads: an [`ImageAdCreate`] and its `sizes`. (A type of its own
/// because `ImageAdCreate` is built by other creates too, which take no sizes.)
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ImageAdCreate)]
pub struct ImageAdCreateBody {
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
    /// Other sizes to make besides the ad itself (at most 10, each once): each is a
    /// sibling of the ad in one campaign set, with the same brief, laid out again for its
    /// shape and charged as an ad of its own. Each item is a named placement (`1:1`,
    /// `4:5`, `9:16`, `1.91:1`, `2:3`, `16:9`, `300x250`, `336x280`, `300x600`,
    /// `160x600`, `970x250`), `"WIDTHxHEIGHT"`, or `{"width", "height"}` (100–7680 px a
    /// side, from 1:4 to 4:1). The response is the first ad; its siblings are
    /// `GET /v1/image-ads?size_set_id={id}`.
    #[serde(default)]
    #[schema(value_type = Option<Vec<SizeRequest>>, max_items = 10)]
    pub sizes: Option<Vec<Value>>,
}

impl ImageAdCreateBody {
    /// The create and its sizes.
    pub fn split(self) -> (ImageAdCreate, Vec<Value>) {
        (
            ImageAdCreate {
                reference_ad_url: self.reference_ad_url,
                brand_id: self.brand_id,
                product_id: self.product_id,
                audience_id: self.audience_id,
                editable: self.editable,
                product_variant_id: self.product_variant_id,
                prompt: self.prompt,
            },
            self.sizes.unwrap_or_default(),
        )
    }
}

/// Create an image ad
///
/// Checks run in this order: the body and its `sizes` (400), the four ids exist (404),
/// product ∈ brand and audience ∈ product (422), the product has a variant with images
/// (422), the reference URL is a reachable image (422), the wallet's available balance
/// covers the price (402; with `sizes`, the price of every ad of the set, else nothing is
/// created). Then the ad is created `processing` with a hold for its price and generation
/// starts; poll GET /v1/image-ads/{id}. The price is charged once, when the ad first
/// completes; nothing is charged if it fails. With `sizes`, the ad's siblings are created
/// in the same transaction, one hold each; the ad's `size_set_id` is its own id and the
/// set is `GET /v1/image-ads?size_set_id={id}`.
#[utoipa::path(post, path = "/v1/image-ads", tag = "image ads", request_body = ImageAdCreateBody,
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 202, description = "Accepted; the ad is processing", body = Envelope<ImageAd>),
        (status = 400, description = "VALIDATION_ERROR (a bad size names `sizes[i]`)", body = crate::error::ErrorBody),
        (status = 402, description = "INSUFFICIENT_BALANCE: the message carries the top-up link and the amounts (with `sizes`, the whole set's)", body = crate::error::ErrorBody),
        (status = 404, description = "BRAND_NOT_FOUND, PRODUCT_NOT_FOUND, AUDIENCE_NOT_FOUND, PRODUCT_VARIANT_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 422, description = "PRODUCT_BRAND_MISMATCH, AUDIENCE_PRODUCT_MISMATCH, PRODUCT_VARIANT_NO_IMAGES, REFERENCE_AD_URL_INVALID", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["image_ads:write"])))]
async fn create_ad(
    State(state): State<AppState>,
    Auth(caller): Auth,
    body: JsonBody<ImageAdCreateBody>,
) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsWrite)?;
    let (body, sizes) = body.parse()?.split();
    let ad = create::create_set(&state, &caller.org_id, &body, &sizes, None).await?;
    let body = Envelope {
        data: ad,
        meta: Meta::current(),
    };
    Ok((StatusCode::ACCEPTED, axum::Json(body)).into_response())
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
    Ok(envelope::ok(
        get(&state.db, &state.jobs, &caller.org_id, &id).await?,
    ))
}

/// GET /v1/image-ads/{id} after the scope check: the ad with live progress.
///
/// # Errors
/// IMAGE_AD_NOT_FOUND (also for another organisation's ad); database failures.
pub async fn get(db: &Db, jobs: &Jobs, org_id: &str, id: &str) -> ApiResult<ImageAd> {
    let row = store::read(db, org_id, id).await?;
    Ok(present(jobs, row).await)
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
        ("size_set_id" = Option<String>, Query, description = "Comma-separated ia_ ids of sets' first ads: the ads of those campaign sets"),
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
    let mut q = q;
    let p = ListParams::parse(&mut q, true, &["status"]);
    let filter = ImageAdFilter::from_query(&mut q);
    q.finish()?;
    Ok(list(&state.db, &state.jobs, &caller.org_id, &filter, &p)
        .await?
        .into_response())
}

/// The filters of GET /v1/image-ads. Comma-separated values match any of them; filters
/// combine with AND.
#[derive(Debug, Clone, Default)]
pub struct ImageAdFilter {
    /// Among [`STATUSES`].
    pub status: Option<Vec<String>>,
    pub brand_id: Option<Vec<String>>,
    pub product_id: Option<Vec<String>>,
    pub product_variant_id: Option<Vec<String>>,
    pub batch_id: Option<Vec<String>>,
    /// The campaign sets (their first ads' ids).
    pub size_set_id: Option<Vec<String>>,
    /// Among the SKU codes of the price list.
    pub sku_code: Option<Vec<String>>,
    pub reference_ad_url: Option<String>,
    pub editable: Option<bool>,
    /// At most 200 characters; matches the ad id or the product's name, any case.
    pub search: Option<String>,
}

impl ImageAdFilter {
    /// The filters of a GET /v1/image-ads query; problems are recorded in `q`.
    pub fn from_query(q: &mut QueryParams) -> Self {
        let mut filter = Self::default();
        for (param, slot) in [
            ("status", &mut filter.status),
            ("brand_id", &mut filter.brand_id),
            ("product_id", &mut filter.product_id),
            ("product_variant_id", &mut filter.product_variant_id),
            ("batch_id", &mut filter.batch_id),
            ("size_set_id", &mut filter.size_set_id),
            ("sku_code", &mut filter.sku_code),
        ] {
            *slot = q.csv(param);
        }
        filter.reference_ad_url = q.string("reference_ad_url");
        filter.editable = q
            .one_of("editable", &["true", "false"])
            .map(|e| e == "true");
        filter.search = q.string("search");
        for e in filter.problems() {
            q.error(&e.field, e.message);
        }
        filter
    }

    /// What is wrong with the filter's values, naming each query parameter.
    pub fn problems(&self) -> Vec<crate::error::FieldError> {
        let mut out = Vec::new();
        for (param, values, allowed) in [
            ("status", &self.status, &STATUSES[..]),
            ("sku_code", &self.sku_code, &SKUS[..]),
        ] {
            for v in values.iter().flatten() {
                if !allowed.contains(&v.as_str()) {
                    out.push(crate::error::FieldError::new(
                        param,
                        format!("`{v}` is not one of {}", allowed.join(", ")),
                    ));
                }
            }
        }
        if self
            .search
            .as_ref()
            .is_some_and(|s| s.chars().count() > 200)
        {
            out.push(crate::error::FieldError::new(
                "search",
                "must be at most 200 characters",
            ));
        }
        out
    }
}

/// One page of `org_id`'s image ads with `filter`'s conditions, paging and facets (what
/// GET /v1/image-ads answers; the web dashboard's gallery calls it too).
///
/// # Errors
/// VALIDATION_ERROR for a bad filter value or cursor; database failures.
pub async fn list(
    db: &Db,
    jobs: &Jobs,
    org_id: &str,
    filter: &ImageAdFilter,
    p: &ListParams,
) -> ApiResult<crate::http::envelope::Page<ImageAd>> {
    super::common::finish(filter.problems())?;
    let stored = store::ListFilter {
        status: filter.status.clone(),
        brand_id: filter.brand_id.clone(),
        product_id: filter.product_id.clone(),
        product_variant_id: filter.product_variant_id.clone(),
        batch_id: filter.batch_id.clone(),
        size_set_id: filter.size_set_id.clone(),
        sku_code: filter.sku_code.clone(),
        reference_ad_url: filter.reference_ad_url.clone(),
        editable: filter.editable,
        search: filter.search.as_ref().map(|s| s.to_lowercase()),
    };
    let page = store::list(db, org_id, &stored, p).await?;
    let mut items = Vec::with_capacity(page.items.len());
    let crate::http::envelope::Page {
        items: rows,
        has_more,
        total_count,
        facets,
    } = page;
    for row in rows {
        items.push(present(jobs, row).await);
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
    /// What changed, at most 500 characters; kept with the version this PATCH makes
    /// (`change_summary` of GET /v1/image-ads/{id}/versions), as design templates keep theirs.
    #[serde(default)]
    #[schema(schema_with = super::design_templates::change_summary_schema)]
    pub change_summary: Option<String>,
    /// `true`: the edit's text changes (each TEXT node whose `characters` differ from the
    /// current version's, by node id, as node ids are the same in every size of a set)
    /// are applied to every other ad of the ad's campaign set too, each as a new version of
    /// its own (its own checks and re-render). Every sibling must be editable (else 422
    /// IMAGE_AD_NOT_EDITABLE naming the flat ones) and completed (else 422
    /// IMAGE_AD_NOT_COMPLETED naming the others); the ad must be in a set (else 400).
    /// Nothing is written unless every version can be. Default `false`.
    #[serde(default)]
    pub apply_to_siblings: bool,
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
/// first). With `apply_to_siblings: true`, the edit's text changes (by node id) also
/// become a new version of every other ad of the ad's campaign set (`size_set_id`) whose
/// texts they change, in the same transaction; list the set to follow their re-renders.
#[utoipa::path(patch, path = "/v1/image-ads/{id}", tag = "image ads", request_body = ImageAdUpdate,
    params(("id" = String, Path, description = "ia_…"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 200, description = "The ad, processing the new version", body = Envelope<ImageAd>),
        (status = 400, description = "VALIDATION_ERROR (naming the node and field of an invalid tree; `apply_to_siblings` for an ad in no set)", body = crate::error::ErrorBody),
        (status = 404, description = "IMAGE_AD_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 409, description = "CONFLICT: with apply_to_siblings, an ad of the set changed while the edit was checked", body = crate::error::ErrorBody),
        (status = 422, description = "IMAGE_AD_NOT_COMPLETED, IMAGE_AD_NOT_EDITABLE (with apply_to_siblings, also for a sibling, naming it)", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["image_ads:write"])))]
async fn update_ad(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    body: JsonBody<ImageAdUpdate>,
) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsWrite)?;
    store::load(&state.db.read, &caller.org_id, &id).await?;
    let body = body.parse()?;
    let ad = update(&state, &caller.org_id, &id, &body).await?;
    Ok(envelope::ok(ad))
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
    let mut tx = state.db.begin_write_for(&caller.org_id).await?;
    let row = store::load(&mut *tx, &caller.org_id, &id).await?;
    if row.status == "processing" {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("Image ad `{id}` is processing; delete it once it is completed or failed"),
        ));
    }
    store::soft_delete(&mut tx, &id).await?;
    tx.commit().await?;
    Ok(Deleted::response(id))
}
