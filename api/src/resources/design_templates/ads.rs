//! The design-template workflow: an image ad laid out with a template's current tree.

use adforge_worker::TemplateLayout;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;

use super::{Deletion, load_row, require_ready};
use crate::auth::{Auth, Scope};
use crate::error::{ApiError, ApiResult};
use crate::http::envelope::{Envelope, Meta};
use crate::http::extract::JsonBody;
use crate::resources::common::IdPath;
use crate::resources::image_ads::{ImageAd, ImageAdCreate, create_from};
use crate::state::AppState;

/// Body of POST /v1/design-templates/{id}/image-ads: POST /v1/image-ads's body without
/// `reference_ad_url` (the template is the layout).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageAdFromTemplate {
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
    #[schema(max_length = 2000)]
    pub prompt: Option<String>,
}

/// Create an image ad from a design template
///
/// Like POST /v1/image-ads (the same checks in the same order, the same codes, the same
/// price, hold and charge on completion), but the ad's layout is the template's current
/// tree as edited, filled with the brand's colours, fonts and logo, the product image and
/// copy for the audience; the reference is not analysed again. The ad has the template's
/// size and aspect ratio, its `reference_ad_url` is the template's `reference_image_url`,
/// and `source_design_template` records `{id, json_tree_version}`. Its `design_template_id`
/// stays null: the spec makes that field historical and null for new ads, so the origin is
/// recorded in the new field instead. Contrast and fit are checked and fixed by a
/// preflight render as for every ad; the layout library is never substituted for the
/// template. A template that is processing or failed: 422 DESIGN_TEMPLATE_NOT_READY; a
/// soft-deleted one: 404 until restored. Needs `image_ads:write` and
/// `design_templates:read`.
#[utoipa::path(post, path = "/v1/design-templates/{id}/image-ads", tag = "design templates", request_body = ImageAdFromTemplate,
    params(("id" = String, Path, description = "dt_…")),
    responses(
        (status = 202, description = "Accepted; the ad is processing", body = Envelope<ImageAd>,
            headers(("Location" = String, description = "/v1/image-ads/{id} of the new ad"))),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 402, description = "INSUFFICIENT_BALANCE: the message carries the top-up link and the amounts", body = crate::error::ErrorBody),
        (status = 404, description = "DESIGN_TEMPLATE_NOT_FOUND, BRAND_NOT_FOUND, PRODUCT_NOT_FOUND, AUDIENCE_NOT_FOUND, PRODUCT_VARIANT_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 422, description = "DESIGN_TEMPLATE_NOT_READY, PRODUCT_BRAND_MISMATCH, AUDIENCE_PRODUCT_MISMATCH, PRODUCT_VARIANT_NO_IMAGES", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["image_ads:write", "design_templates:read"])))]
pub async fn create_ad_from_template(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    body: JsonBody<ImageAdFromTemplate>,
) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsWrite)?;
    caller.require(Scope::DesignTemplatesRead)?;
    let row = load_row(&state.db.read, &caller.org_id, &id, Deletion::LiveOnly).await?;
    let body = body.parse()?;
    require_ready(&row, "make an ad")?;
    let layout = layout_of(&row)?;
    let create = ImageAdCreate {
        reference_ad_url: row.reference_image_url.clone(),
        brand_id: body.brand_id,
        product_id: body.product_id,
        audience_id: body.audience_id,
        editable: body.editable,
        product_variant_id: body.product_variant_id,
        prompt: body.prompt,
    };
    let ad = create_from(&state, &caller.org_id, &create, Some(layout)).await?;
    let location = format!("/v1/image-ads/{}", ad.id);
    let body = Envelope {
        data: ad,
        meta: Meta::current(),
    };
    Ok((
        StatusCode::ACCEPTED,
        [(header::LOCATION, location)],
        axum::Json(body),
    )
        .into_response())
}

/// The layout an ad made from the completed template `row` carries in its job: the
/// current tree and version, and the reference's colours (a batch of ads uses it too).
///
/// # Errors
/// Internal when a completed template has no tree.
pub(crate) fn layout_of(row: &super::TemplateRow) -> ApiResult<TemplateLayout> {
    let tree = row
        .current_json_tree
        .as_deref()
        .and_then(|t| serde_json::from_str(t).ok())
        .ok_or_else(|| ApiError::internal(format!("completed template {} has no tree", row.id)))?;
    let reference_colours: Vec<[u8; 3]> = row
        .reference_colours
        .as_deref()
        .and_then(|c| serde_json::from_str(c).ok())
        .unwrap_or_default();
    Ok(TemplateLayout {
        template_id: row.id.clone(),
        json_tree_version: u32::try_from(row.json_tree_version).unwrap_or(u32::MAX),
        json_tree: tree,
        reference_colours,
    })
}
