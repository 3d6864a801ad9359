//! POST /v1/image-ads/{id}/resize (issue 42, item 1): a completed ad remade at other
//! sizes, each a new ad of the ad's campaign set, laid out again for its shape.
//!
//! A flat ad's resize replays its stored generation job (the same brief and creation
//! time, so the same words) with the size set. An editable ad's resize carries its current
//! version's tree as the size's `source_tree`: the worker lays those words, pictures and
//! node ids out again (no new copy), so an edit of one size can be applied to the others
//! by node id. Each new ad is charged as a create is (its SKU's price, held now and
//! charged when it completes); the wallet must hold them all, and all are written in one
//! transaction, or none.

use adforge_worker::{GenerateAdJob, Job};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::{ImageAd, SizeRequest, create, parse_sizes, store};
use crate::auth::{Auth, Scope};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::http::envelope::Page;
use crate::http::extract::JsonBody;
use crate::resources::common::IdPath;
use crate::state::AppState;

/// Body of POST /v1/image-ads/{id}/resize.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageAdResize {
    /// The sizes to make, 1 to 10, each once: named placements (`1:1`, `4:5`, `9:16`,
    /// `1.91:1`, `2:3`, `16:9`, `300x250`, `336x280`, `300x600`, `160x600`, `970x250`),
    /// `"WIDTHxHEIGHT"` or `{"width", "height"}` (100–7680 px a side, from 1:4 to 4:1).
    #[schema(value_type = Vec<SizeRequest>, min_items = 1, max_items = 10)]
    pub sizes: Vec<Value>,
}

/// Make other sizes of an image ad
///
/// The ad must be completed (else 422 IMAGE_AD_NOT_COMPLETED). Each size becomes a new ad
/// (`processing`, 202) with the ad's brand, product, audience, variant, prompt and words,
/// laid out again for its shape (not scaled or cropped); its `size` says which, and every
/// ad of the set has the same `size_set_id` (the set's first ad's id; an ad in no set
/// starts one and becomes its first ad). A flat ad's sizes are flat ads ($1.00 each), an
/// editable ad's editable ads ($4.00 each) laid out from its current version's tree with
/// the same node ids. The wallet must hold every new ad's price (else 402 with the total;
/// nothing is created). Poll each ad, or list the set with
/// `GET /v1/image-ads?size_set_id={size_set_id}`.
#[utoipa::path(post, path = "/v1/image-ads/{id}/resize", tag = "image ads", request_body = ImageAdResize,
    params(("id" = String, Path, description = "ia_…"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 202, description = "Accepted; the new ads, in the order of `sizes`, are processing", body = crate::http::envelope::ListEnvelope<ImageAd>),
        (status = 400, description = "VALIDATION_ERROR (a bad size names `sizes[i]`)", body = crate::error::ErrorBody),
        (status = 402, description = "INSUFFICIENT_BALANCE: the message carries the top-up link and the total of the new ads", body = crate::error::ErrorBody),
        (status = 404, description = "IMAGE_AD_NOT_FOUND; BRAND_NOT_FOUND, PRODUCT_NOT_FOUND, AUDIENCE_NOT_FOUND, PRODUCT_VARIANT_NOT_FOUND when an edited ad's relation was deleted since", body = crate::error::ErrorBody),
        (status = 409, description = "CONFLICT: the ad started a new version while the resize was checked", body = crate::error::ErrorBody),
        (status = 422, description = "IMAGE_AD_NOT_COMPLETED; PRODUCT_VARIANT_NO_IMAGES when an edited ad's variant lost its images since", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["image_ads:write"])))]
pub(super) async fn resize_ad(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    body: JsonBody<ImageAdResize>,
) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsWrite)?;
    store::load(&state.db.read, &caller.org_id, &id).await?;
    let body = body.parse()?;
    let ads = resize(&state, &caller.org_id, &id, &body.sizes).await?;
    let page = Page {
        total_count: i64::try_from(ads.len()).unwrap_or(i64::MAX),
        items: ads,
        has_more: false,
        facets: None,
    };
    let mut response = page.into_response();
    *response.status_mut() = StatusCode::ACCEPTED;
    Ok(response)
}

fn not_completed(id: &str, status: &str) -> ApiError {
    ApiError::new(
        ErrorCode::ImageAdNotCompleted,
        format!(
            "Image ad `{id}` is {status}; only a completed ad can be made in other sizes: wait until it is completed"
        ),
    )
}

/// POST /v1/image-ads/{id}/resize after the scope check (the dashboard's "Make other
/// sizes" calls it too): the new ads, in the order of `sizes`.
///
/// # Errors
/// Every error POST /v1/image-ads/{id}/resize lists.
pub async fn resize(
    state: &AppState,
    org_id: &str,
    id: &str,
    sizes: &[Value],
) -> ApiResult<Vec<ImageAd>> {
    let sizes = parse_sizes(sizes, true)?;
    let src = {
        let mut conn = state.db.read.acquire().await?;
        store::resize_source(&mut conn, org_id, id).await?
    };
    if src.status != "completed" {
        return Err(not_completed(id, &src.status));
    }
    let tree: Option<Value> = src
        .current_json_tree
        .as_deref()
        .and_then(|t| serde_json::from_str(t).ok());
    let job: GenerateAdJob = match serde_json::from_str::<Job>(&src.job) {
        Ok(Job::GenerateImageAd(job)) => job,
        // An edited (or synced) editable ad's stored job is its last re-render: its brief
        // is made again from its relations, dated at its creation.
        _ if src.editable && tree.is_some() => create::rebuilt_job(state, org_id, &src).await?,
        _ => {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!(
                    "Image ad `{id}` keeps no job to remake it from (it predates stored jobs); create it again with POST /v1/image-ads and `sizes`"
                ),
            ));
        }
    };
    let set_id = src.size_set_id.clone().unwrap_or_else(|| src.id.clone());
    let ads: Vec<create::PreparedAd> = sizes
        .into_iter()
        .map(|mut size| {
            // An editable ad is laid out again from its current version's tree.
            if src.editable {
                size.source_tree.clone_from(&tree);
            }
            create::resized(&src, job.clone(), size, &set_id)
        })
        .collect();

    let mut tx = state.db.begin_write_for(org_id).await?;
    let now = store::resize_source(&mut tx, org_id, id).await?;
    if now.status != "completed" {
        return Err(not_completed(id, &now.status));
    }
    if now.current_json_tree != src.current_json_tree || now.size_set_id != src.size_set_id {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("Image ad `{id}` changed while the resize was checked; send it again"),
        ));
    }
    super::hold_all(&mut tx, state, org_id, &ads).await?;
    store::join_set(&mut tx, id).await?;
    let mut out = Vec::with_capacity(ads.len());
    for ad in &ads {
        out.push(create::insert(&mut tx, state, org_id, ad, None).await?);
    }
    tx.commit().await?;
    Ok(out)
}
