//! `/v1/image-ad-batches` (issue 42, item 2): many image ads in one request, a matrix of
//! products × layouts (reference ads and design templates) × sizes, each product with its
//! audiences. The batch answers 202 with its ad count and total price; every ad carries its
//! `batch_id` and is made, held and charged exactly as a single ad is.
//!
//! # Decisions
//! - Every item is checked ([`crate::resources::image_ads::prepare`]) before anything is
//!   written; the first failing item answers its own code, its message naming the item's
//!   index and what it was (`items[3]`: product, layout, size). Then the whole batch is
//!   written in one transaction: the batch, each ad with its hold and job, its item row.
//! - The wallet must hold the whole batch: 402 INSUFFICIENT_BALANCE with the total and the
//!   available amount, nothing created.
//! - At most [`MAX_ADS`] ads a batch (400 VALIDATION_ERROR naming the count).
//! - Status: `processing` until the last ad ends; then `cancelled` when cancel was asked,
//!   `failed` when every ad failed, else `completed` (some ads may have failed: `counts`
//!   says how many). It is set once, with the `image_ad_batch.completed` webhook, in the
//!   transaction that ends the last ad ([`apply::ad_ended`]), so a redelivered result
//!   changes nothing.
//! - Cancel fails the ads no worker has started (no progress reported for them yet) with
//!   `CANCELLED`, releasing their holds; running ads finish and are charged. A worker that
//!   later returns a result for a cancelled ad changes nothing (the applier only changes a
//!   `processing` ad). The queue has no way to withdraw a job, so a worker may still render
//!   a cancelled ad's job (wasted work, never charged).
//!
//! Where things live: this module holds the routes, the types and the handlers (parse →
//! domain call → respond) with the domain calls the dashboard shares ([`get`], [`list`],
//! [`cancel`]); [`create`] the matrix and its writes; [`download`] the ZIP; [`apply`] the
//! hook of an ad's end; [`store`] every SQL statement.

pub mod apply;
mod create;
mod download;
mod store;

pub use create::{MAX_ADS, create, create_as, is_batch_id};
pub use download::zip_stream;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::IdPath;
use super::variants::Price;
use crate::auth::{Auth, Scope};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::http::envelope::{self, Envelope, ListEnvelope, Meta, Page};
use crate::http::extract::{JsonBody, QueryParams};
use crate::jobs::Jobs;
use crate::state::AppState;
use crate::store::Db;
use crate::store::list::ListParams;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_batch, list_batches))
        .routes(routes!(get_batch))
        .routes(routes!(cancel_batch))
        .routes(routes!(download_batch))
}

/// Statuses of a batch.
pub const STATUSES: [&str; 4] = ["processing", "completed", "failed", "cancelled"];
/// The `error.code` of an ad failed by a batch's cancel.
pub const CANCELLED: &str = "CANCELLED";

/// Body of POST /v1/image-ad-batches.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageAdBatchCreate {
    /// The products (`prod_…`, 1 to 500, no repeats). Leave out to use every active
    /// product of `brand_id`.
    pub product_ids: Option<Vec<String>>,
    /// `brand_…`: with `product_ids`, each product must belong to it (else 422
    /// PRODUCT_BRAND_MISMATCH naming the item); without, every active product of the brand.
    pub brand_id: Option<String>,
    /// Reference ads to follow (as `reference_ad_url` of POST /v1/image-ads), 0 to 50.
    #[serde(default)]
    pub reference_ad_urls: Vec<String>,
    /// Design templates (`dt_…`, completed) whose layouts to fill, 0 to 50. At least one
    /// reference or template in all.
    #[serde(default)]
    pub design_template_ids: Vec<String>,
    /// Audiences (`aud_…`): each makes the ads of the product it belongs to, so a product
    /// may have several. A product with none named here uses its first active audience.
    /// Every one must belong to one of the batch's products (else 422
    /// AUDIENCE_PRODUCT_MISMATCH).
    #[serde(default)]
    pub audience_ids: Vec<String>,
    /// Sizes, 0 to 10, each once: a named placement (`1:1`, `4:5`, `9:16`, `1.91:1`, `2:3`,
    /// `16:9`, `300x250`, `336x280`, `300x600`, `160x600`, `970x250`), `"WIDTHxHEIGHT"` or
    /// `{"width", "height"}` (100 to 7680 a side, 1:4 to 4:1), as POST /v1/image-ads takes
    /// them. Each combination is made in every size, its sizes one campaign set
    /// (`size_set_id`). None: one ad per combination at its layout's own shape.
    #[serde(default)]
    #[schema(value_type = Vec<crate::resources::image_ads::SizeRequest>)]
    pub sizes: Vec<Value>,
    /// `true` for the editable SKU ($4.00 an ad); default `false` ($1.00 an ad).
    #[serde(default)]
    pub editable: bool,
    /// Free-form creative direction for every ad, at most 2,000 characters.
    #[schema(max_length = 2000)]
    pub prompt: Option<String>,
}

/// How many of a batch's ads are in each state.
#[derive(Debug, Clone, Default, Serialize, ToSchema, PartialEq, Eq)]
pub struct BatchCounts {
    pub processing: i64,
    pub completed: i64,
    /// Failed by their worker (not counting `cancelled`).
    pub failed: i64,
    /// Failed by the batch's cancel before a worker started them; never charged.
    pub cancelled: i64,
}

impl BatchCounts {
    /// Ads that ended (completed, failed or cancelled).
    pub fn ended(&self) -> i64 {
        self.completed + self.failed + self.cancelled
    }
}

/// A batch of image ads.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ImageAdBatch {
    /// `iab_…`; its ads carry it as `batch_id` (GET /v1/image-ads?batch_id=).
    pub id: String,
    /// processing, completed, failed (every ad failed) or cancelled.
    pub status: String,
    pub ad_count: i64,
    /// What the whole batch costs if every ad completes; held from the wallet at create.
    pub total_price: Price,
    /// What completed ads have been charged so far.
    pub amount_charged: Price,
    pub counts: BatchCounts,
    /// Ended ads ÷ `ad_count`, 0 to 1.
    pub progress: f64,
    /// The products the batch was made for (resolved from `brand_id` when it named none).
    pub product_ids: Vec<String>,
    pub brand_id: Option<String>,
    pub reference_ad_urls: Vec<String>,
    pub design_template_ids: Vec<String>,
    pub audience_ids: Vec<String>,
    /// The sizes as given.
    #[schema(value_type = Vec<crate::resources::image_ads::SizeRequest>)]
    pub sizes: Vec<Value>,
    pub editable: bool,
    pub prompt: Option<String>,
    pub created_at: String,
    /// When the last ad ended.
    pub completed_at: Option<String>,
    /// When cancel was asked.
    pub cancelled_at: Option<String>,
}

/// Create a batch of image ads
///
/// One ad per product × audience × layout (each reference, then each design template) ×
/// size. Every item is checked as POST /v1/image-ads checks one ad, before anything is
/// written; the first failing item answers its code with a message naming its index
/// (`items[N]`) and what it was. The wallet's available balance must cover the whole batch
/// (402 with the total and the available amount; nothing is created). Then the batch and
/// all its ads are created `processing` in one transaction, each ad with a hold for its
/// price; each is charged once when it completes, nothing when it fails. At most 500 ads
/// (400 naming the count). Poll GET /v1/image-ad-batches/{id} or subscribe to
/// `image_ad_batch.completed`.
#[utoipa::path(post, path = "/v1/image-ad-batches", tag = "image ad batches", request_body = ImageAdBatchCreate,
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 202, description = "Accepted; the ads are processing", body = Envelope<ImageAdBatch>,
            headers(("Location" = String, description = "/v1/image-ad-batches/{id}"))),
        (status = 400, description = "VALIDATION_ERROR (a bad field, a bad size, no layout, no audience for a product, more than 500 ads)", body = crate::error::ErrorBody),
        (status = 402, description = "INSUFFICIENT_BALANCE: the total, the available amount and the top-up link", body = crate::error::ErrorBody),
        (status = 404, description = "BRAND_NOT_FOUND, PRODUCT_NOT_FOUND, AUDIENCE_NOT_FOUND, DESIGN_TEMPLATE_NOT_FOUND, PRODUCT_VARIANT_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 422, description = "PRODUCT_BRAND_MISMATCH, AUDIENCE_PRODUCT_MISMATCH, PRODUCT_VARIANT_NO_IMAGES, REFERENCE_AD_URL_INVALID, DESIGN_TEMPLATE_NOT_READY (naming the item)", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["image_ads:write"])))]
async fn create_batch(
    State(state): State<AppState>,
    Auth(caller): Auth,
    body: JsonBody<ImageAdBatchCreate>,
) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsWrite)?;
    let body = body.parse()?;
    let batch = create(&state, &caller.org_id, &body).await?;
    let location = format!("/v1/image-ad-batches/{}", batch.id);
    let body = Envelope {
        data: batch,
        meta: Meta::current(),
    };
    Ok((
        StatusCode::ACCEPTED,
        [(header::LOCATION, location)],
        axum::Json(body),
    )
        .into_response())
}

/// Retrieve a batch of image ads
///
/// Its status, counts of its ads by state, progress and the amount charged so far. The
/// ads themselves: GET /v1/image-ads?batch_id={id}.
#[utoipa::path(get, path = "/v1/image-ad-batches/{id}", tag = "image ad batches",
    params(("id" = String, Path, description = "iab_…")),
    responses(
        (status = 200, description = "The batch", body = Envelope<ImageAdBatch>),
        (status = 404, description = "IMAGE_AD_BATCH_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["image_ads:read"])))]
async fn get_batch(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsRead)?;
    Ok(envelope::ok(get(&state.db, &caller.org_id, &id).await?))
}

/// GET /v1/image-ad-batches/{id} after the scope check.
///
/// # Errors
/// IMAGE_AD_BATCH_NOT_FOUND (also for another organisation's batch); database failures.
pub async fn get(db: &Db, org_id: &str, id: &str) -> ApiResult<ImageAdBatch> {
    let row = store::read(db, org_id, id).await?;
    let mut counts = store::counts(&db.read, std::slice::from_ref(&row.id)).await?;
    let (c, charged) = counts.remove(&row.id).unwrap_or_default();
    Ok(row.into_batch(c, charged))
}

/// The filters of GET /v1/image-ad-batches.
#[derive(Debug, Clone, Default)]
pub struct BatchFilter {
    /// Among [`STATUSES`].
    pub status: Option<Vec<String>>,
}

/// List batches of image ads
///
/// Newest first. `status` is comma-separated among processing, completed, failed,
/// cancelled.
#[utoipa::path(get, path = "/v1/image-ad-batches", tag = "image ad batches",
    params(
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "Page size, default 20"),
        ("starting_after" = Option<String>, Query, description = "Id of the last batch already received"),
        ("status" = Option<String>, Query, pattern = r"^\s*(processing|completed|failed|cancelled)?\s*(,\s*(processing|completed|failed|cancelled)?\s*)*$", description = "Comma-separated among processing, completed, failed, cancelled"),
    ),
    responses(
        (status = 200, description = "A page of batches", body = ListEnvelope<ImageAdBatch>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["image_ads:read"])))]
async fn list_batches(
    State(state): State<AppState>,
    Auth(caller): Auth,
    q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsRead)?;
    let mut q = q;
    let p = ListParams::parse(&mut q, false, &[]);
    let filter = BatchFilter {
        status: q.csv("status"),
    };
    for v in filter.status.iter().flatten() {
        if !STATUSES.contains(&v.as_str()) {
            q.error(
                "status",
                format!("`{v}` is not one of {}", STATUSES.join(", ")),
            );
        }
    }
    q.finish()?;
    Ok(list(&state.db, &caller.org_id, &filter, &p)
        .await?
        .into_response())
}

/// One page of `org_id`'s batches (what GET /v1/image-ad-batches answers).
///
/// # Errors
/// VALIDATION_ERROR for a bad status or cursor; database failures.
pub async fn list(
    db: &Db,
    org_id: &str,
    filter: &BatchFilter,
    p: &ListParams,
) -> ApiResult<Page<ImageAdBatch>> {
    if let Some(bad) = filter
        .status
        .iter()
        .flatten()
        .find(|s| !STATUSES.contains(&s.as_str()))
    {
        return Err(ApiError::field(
            "status",
            format!("`{bad}` is not one of {}", STATUSES.join(", ")),
        ));
    }
    let page = store::list(db, org_id, filter.status.as_deref(), p).await?;
    let ids: Vec<String> = page.items.iter().map(|r| r.id.clone()).collect();
    let mut counts = store::counts(&db.read, &ids).await?;
    Ok(page.map(|row| {
        let (c, charged) = counts.remove(&row.id).unwrap_or_default();
        row.into_batch(c, charged)
    }))
}

/// Cancel a batch of image ads
///
/// Its ads that no worker has started yet (no progress reported) end `failed` with
/// `error.code` CANCELLED and are not charged (their holds go back); ads already running
/// finish and are charged as usual. The batch ends `cancelled` when its last ad ends (at
/// once when none was running). A batch that already ended: 409 CONFLICT. Cancelling
/// again cancels any ad that has not started since.
#[utoipa::path(post, path = "/v1/image-ad-batches/{id}/cancel", tag = "image ad batches",
    params(("id" = String, Path, description = "iab_…"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 200, description = "The batch after the cancel", body = Envelope<ImageAdBatch>),
        (status = 404, description = "IMAGE_AD_BATCH_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 409, description = "CONFLICT: the batch already ended", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["image_ads:write"])))]
async fn cancel_batch(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsWrite)?;
    Ok(envelope::ok(
        cancel(&state.db, &state.jobs, &caller.org_id, &id).await?,
    ))
}

/// POST /v1/image-ad-batches/{id}/cancel after the scope check: answers the batch after
/// the cancel.
///
/// # Errors
/// IMAGE_AD_BATCH_NOT_FOUND; CONFLICT when the batch already ended; database failures.
pub async fn cancel(db: &Db, jobs: &Jobs, org_id: &str, id: &str) -> ApiResult<ImageAdBatch> {
    let now = crate::timestamp::now();
    let mut tx = db.begin_write_for(org_id).await?;
    let row = store::load(&mut *tx, org_id, id).await?;
    if row.status != "processing" {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!(
                "Batch `{id}` already ended ({}); only a processing batch can be cancelled",
                row.status
            ),
        ));
    }
    store::mark_cancelled(&mut tx, id, &now).await?;
    tx.commit().await?;
    // Not started: still processing at its first version, and no worker has reported a
    // step for it. Each is failed through the ads' own applier (status guard, release of
    // the hold, the ad's webhook, and this batch's end when it is the last).
    for ad_id in store::processing_first_versions(&db.read, id).await? {
        let started = matches!(
            jobs.queue.latest_progress(&ad_id).await,
            Ok(Some(p)) if p.step != "queued"
        );
        if started {
            continue;
        }
        let failed = adforge_worker::AdFailed {
            subject: adforge_worker::SubjectKind::ImageAd,
            ad_id,
            version: 1,
            code: CANCELLED.to_owned(),
            message: format!(
                "Cancelled with its batch `{id}` before a worker started it; nothing was charged"
            ),
        };
        super::image_ads::apply::failed(db, &failed).await?;
    }
    get(db, org_id, id).await
}

/// Download a batch as one ZIP
///
/// Streams a ZIP of every completed ad of the batch (ads still processing or failed are
/// left out; download again later for the rest): for each, the 4K PNG (`image_url`) and
/// the JPEG at its placement's standard size (1080×1080, 1080×1350, 1080×1920 or
/// 1200×628; a rendition, made now if it was not yet), named
/// `NNN-<product>-<size>-<ad id>.{png,jpg}` with `NNN` the item's index; and
/// `manifest.csv` (RFC 4180, UTF-8): one row per ad in the ZIP with its item, ad id,
/// product, layout (reference URL or design template id), size, pixel size, file names
/// and the words of each text slot, one column per slot name.
#[utoipa::path(get, path = "/v1/image-ad-batches/{id}/download", tag = "image ad batches",
    params(("id" = String, Path, description = "iab_…")),
    responses(
        (status = 200, description = "The ZIP (application/zip), streamed", content_type = "application/zip", body = Vec<u8>),
        (status = 404, description = "IMAGE_AD_BATCH_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["image_ads:read"])))]
async fn download_batch(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsRead)?;
    let body = zip_stream(&state.db, state.blobs.clone(), &caller.org_id, &id).await?;
    let disposition = format!("attachment; filename=\"{id}.zip\"");
    Ok((
        [
            (header::CONTENT_TYPE, "application/zip".to_owned()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        body,
    )
        .into_response())
}
