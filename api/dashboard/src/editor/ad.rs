//! The visual editor of an editable ad: GET /dashboard/ads/{id}/edit and its Save,
//! POST /dashboard/ads/{id}/edit/save, which makes the next version through
//! `image_ads::update` (PATCH /v1/image-ads/{id}'s code) with the editor's change summary.

use adforge_api::error::{ApiError, ApiResult, ErrorCode};
use adforge_api::http::extract::JsonBody;
use adforge_api::resources::brands;
use adforge_api::resources::image_ads::{self, ImageAdUpdate};
use axum::extract::{Path, State};

use super::{EditorCaller, EditorPage, SaveAnswer, SaveRequest, choices, stale};
use crate::{DashResult, DashboardState, SignedIn};

/// GET /dashboard/ads/{id}/edit
pub async fn page(
    State(state): State<DashboardState>,
    me: SignedIn,
    Path(id): Path<String>,
) -> DashResult {
    let m = &me.0;
    let (ad, tree, base) = match crate::ads::editable(&state, m, &id).await? {
        Ok(x) => x,
        Err(why) => return Ok(crate::ads::cannot_edit(m, &id, &why)),
    };
    let brand = brands::load(&state.db.read, &m.org_id, &ad.brand_id)
        .await
        .ok();
    let choices = choices::for_ad(&state, &m.org_id, brand, &ad.product_id).await?;
    Ok(super::page(
        &state,
        m,
        &EditorPage {
            kind: "ad",
            id: &ad.id,
            title: format!("Edit ad {}", ad.id),
            version: base,
            tree: &tree,
            picture: Some(format!("/dashboard/ads/{}/thumb?version={base}", ad.id)),
            back: (format!("/dashboard/ads/{}", ad.id), "← Back to the ad"),
            fallback: Some(format!("/dashboard/ads/{}/edit/form", ad.id)),
            save_url: format!("/dashboard/ads/{}/edit/save", ad.id),
            active: "/dashboard/ads",
            choices,
        },
    ))
}

/// POST /dashboard/ads/{id}/edit/save: `{"tree", "base_version", "change_summary"}`.
/// Answers `{"version", "url"}`, or the API's error: 409 CONFLICT when the ad has moved
/// past `base_version`, and every error of PATCH /v1/image-ads/{id}.
pub async fn save(
    State(state): State<DashboardState>,
    caller: EditorCaller,
    Path(id): Path<String>,
    body: JsonBody<SaveRequest>,
) -> ApiResult<axum::Json<SaveAnswer>> {
    let id = id.as_str();
    let m = &caller.0;
    // Unknown ids and other organisations' ads are 404 before the body is read.
    let ad = image_ads::get(&state.db, &state.jobs, &m.org_id, id).await?;
    let body = body.parse()?;
    if !ad.editable {
        return Err(ApiError::new(
            ErrorCode::ImageAdNotEditable,
            format!("Image ad `{id}` is a flat ad; only editable ads can be changed"),
        ));
    }
    // The version check and the update are two steps, as with the plain form: a PATCH
    // landing between them is the newer version this save then follows, as any PATCH would.
    let versions = image_ads::versions(&state.db, &m.org_id, id).await?;
    let base = versions.last().map_or(1, |v| v.version_number);
    if body.base_version != base {
        return Err(stale("ad", base));
    }
    let update = ImageAdUpdate {
        current_json_tree: body.tree,
        change_summary: body.change_summary,
        apply_to_siblings: false,
    };
    image_ads::update(&state, &m.org_id, id, &update).await?;
    tracing::info!(ad_id = %id, profile_id = %m.profile_id, version = base + 1, "image ad saved from the editor");
    Ok(axum::Json(SaveAnswer {
        version: base + 1,
        url: format!("/dashboard/ads/{id}#version-{}", base + 1),
    }))
}
