//! The visual editor of a design template: GET /dashboard/templates/{id}/edit and its
//! Save, POST /dashboard/templates/{id}/edit/save, which makes the next version through
//! `design_templates::update` (PATCH /v1/design-templates/{id}'s code) with the editor's
//! change summary.

use adforge_api::error::{ApiError, ApiResult, ErrorCode};
use adforge_api::http::extract::JsonBody;
use adforge_api::resources::brands;
use adforge_api::resources::design_templates::{self, DesignTemplateUpdate};
use adforge_api::store::list::ListParams;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use super::{EditorCaller, EditorPage, SaveAnswer, SaveRequest, choices, stale};
use crate::html::{esc, notice, page_with_head};
use crate::{DashError, DashResult, DashboardState, SignedIn};

const ACTIVE: &str = "/dashboard/templates";

/// GET /dashboard/templates/{id}/edit
pub async fn page(
    State(state): State<DashboardState>,
    me: SignedIn,
    Path(id): Path<String>,
) -> DashResult {
    let m = &me.0;
    let t = match design_templates::get(&state.db, &m.org_id, &id).await {
        Ok(t) => t,
        Err(e) if e.code == ErrorCode::DesignTemplateNotFound => return Err(DashError::NotFound),
        Err(e) => return Err(DashError::Internal(format!("{:?}: {}", e.code, e.message))),
    };
    let why = if t.deleted {
        Some("This template is deleted; restore it to edit it.".to_string())
    } else if t.status != "completed" {
        Some(format!(
            "This template is {}; it can be edited once its analysis has completed.",
            t.status
        ))
    } else {
        None
    };
    let tree = match (why, t.current_json_tree.as_ref()) {
        (None, Some(tree)) => tree,
        (why, _) => {
            let body = format!(
                r#"{}<p><a href="/dashboard/templates/{}">Back to the template</a></p>"#,
                notice(
                    "error",
                    &format!(
                        "<p>{}</p>",
                        esc(&why.unwrap_or_else(|| "This template has no tree to edit.".into()))
                    )
                ),
                esc(&id)
            );
            return Ok(crate::html(
                StatusCode::UNPROCESSABLE_ENTITY,
                page_with_head("Cannot edit this template", Some(m), ACTIVE, &body, ""),
            ));
        }
    };
    let all = brands::list(&state.db, &m.org_id, &ListParams::new(100))
        .await
        .map_err(|e| DashError::Internal(e.message))?;
    let choices = choices::for_template(&state, &m.org_id, all.items).await?;
    Ok(super::page(
        &state,
        m,
        &EditorPage {
            kind: "template",
            id: &t.id,
            title: format!("Edit template {}", t.id),
            version: t.json_tree_version,
            tree,
            picture: t.preview_url.clone(),
            back: (
                format!("/dashboard/templates/{}", t.id),
                "← Back to the template",
            ),
            fallback: None,
            save_url: format!("/dashboard/templates/{}/edit/save", t.id),
            active: ACTIVE,
            choices,
        },
    ))
}

/// POST /dashboard/templates/{id}/edit/save: `{"tree", "base_version", "change_summary"}`.
/// Answers `{"version", "url"}`, or the API's error: 409 CONFLICT when the template has
/// moved past `base_version`, and every error of PATCH /v1/design-templates/{id}.
pub async fn save(
    State(state): State<DashboardState>,
    caller: EditorCaller,
    Path(id): Path<String>,
    body: JsonBody<SaveRequest>,
) -> ApiResult<axum::Json<SaveAnswer>> {
    let id = id.as_str();
    let m = &caller.0;
    let t = design_templates::get(&state.db, &m.org_id, id).await?;
    if t.deleted {
        return Err(ApiError::not_found(
            ErrorCode::DesignTemplateNotFound,
            "design template",
            id,
        ));
    }
    let body = body.parse()?;
    if body.base_version != t.json_tree_version {
        return Err(stale("template", t.json_tree_version));
    }
    let update = DesignTemplateUpdate {
        current_json_tree: body.tree,
        change_summary: body.change_summary,
    };
    let saved = design_templates::update(&state, &m.org_id, id, &update).await?;
    tracing::info!(template_id = %id, profile_id = %m.profile_id, version = saved.json_tree_version, "design template saved from the editor");
    Ok(axum::Json(SaveAnswer {
        version: saved.json_tree_version,
        url: format!(
            "/dashboard/templates/{id}#version-{}",
            saved.json_tree_version
        ),
    }))
}
