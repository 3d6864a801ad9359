//! The versions of a design template's tree: every PATCH keeps the tree it replaces
//! (`design_template_versions`), and the current tree is the last version.

use axum::extract::State;
use axum::response::Response;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::store::{self, VersionRow};
use super::{Deletion, TemplateRow, load_row};
use crate::auth::{Auth, Scope};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::http::envelope::{self, Envelope};
use crate::http::extract::PathParams;
use crate::resources::common::IdPath;
use crate::state::AppState;

/// One version of a template's tree.
#[derive(Debug, Serialize, ToSchema)]
pub struct DesignTemplateVersion {
    /// 1 for the analysis's tree, then one more per PATCH.
    pub json_tree_version: i64,
    #[schema(value_type = Object)]
    pub json_tree: Value,
    /// The `change_summary` of the PATCH that made this version; null for version 1 and
    /// for edits sent without one.
    pub change_summary: Option<String>,
    /// The preview of this version; null while it renders (or when it could not be
    /// rendered).
    pub preview_url: Option<String>,
    /// True for the template's current version.
    pub current: bool,
    /// When this version was made.
    pub created_at: String,
}

/// The current version of `row`, if it has a tree. While its preview renders the row's
/// `preview_url` is still the previous version's, so it is not shown here.
fn current(row: TemplateRow) -> Option<DesignTemplateVersion> {
    let tree = serde_json::from_str(row.current_json_tree.as_deref()?).ok()?;
    Some(DesignTemplateVersion {
        json_tree_version: row.json_tree_version,
        json_tree: tree,
        change_summary: row.change_summary,
        preview_url: if row.status == "processing" {
            None
        } else {
            row.preview_url
        },
        current: true,
        created_at: row.version_created_at,
    })
}

/// List a template's versions
///
/// Oldest first; the last is the current version (`current: true`). A template whose
/// analysis has not completed has none. Soft-deleted templates' versions can be read too.
#[utoipa::path(get, path = "/v1/design-templates/{id}/versions", tag = "design templates",
    params(("id" = String, Path, description = "dt_…")),
    responses(
        (status = 200, description = "The versions", body = Envelope<Vec<DesignTemplateVersion>>),
        (status = 404, description = "DESIGN_TEMPLATE_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["design_templates:read"])))]
pub async fn list_template_versions(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::DesignTemplatesRead)?;
    Ok(envelope::ok(
        versions(&state.db, &caller.org_id, &id).await?,
    ))
}

/// A template's versions, oldest first (what GET /v1/design-templates/{id}/versions
/// answers; the dashboard's template page calls it too).
///
/// # Errors
/// DESIGN_TEMPLATE_NOT_FOUND; database failures.
pub async fn versions(
    db: &crate::store::Db,
    org_id: &str,
    id: &str,
) -> ApiResult<Vec<DesignTemplateVersion>> {
    let mut tx = db.begin_read().await?;
    let row = load_row(&mut *tx, org_id, id, Deletion::Any).await?;
    let mut versions: Vec<DesignTemplateVersion> = store::versions(&mut tx, org_id, id)
        .await?
        .into_iter()
        .map(VersionRow::into_api)
        .collect();
    tx.commit().await?;
    versions.extend(current(row));
    Ok(versions)
}

/// Retrieve a version
#[utoipa::path(get, path = "/v1/design-templates/{id}/versions/{version}", tag = "design templates",
    params(("id" = String, Path, description = "dt_…"),
        ("version" = i64, Path, minimum = 1, description = "A json_tree_version")),
    responses(
        (status = 200, description = "The version", body = Envelope<DesignTemplateVersion>),
        (status = 400, description = "VALIDATION_ERROR: a version that is not a whole number from 1", body = crate::error::ErrorBody),
        (status = 404, description = "DESIGN_TEMPLATE_NOT_FOUND, DESIGN_TEMPLATE_VERSION_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["design_templates:read"])))]
pub async fn get_template_version(
    State(state): State<AppState>,
    Auth(caller): Auth,
    PathParams((id, version)): PathParams<(String, String)>,
) -> ApiResult<Response> {
    caller.require(Scope::DesignTemplatesRead)?;
    let mut tx = state.db.begin_read().await?;
    let row = load_row(&mut *tx, &caller.org_id, &id, Deletion::Any).await?;
    let n: i64 = match version.parse() {
        Ok(n) if n >= 1 => n,
        _ => {
            return Err(ApiError::field(
                "version",
                format!("must be a whole number from 1, not `{version}`"),
            ));
        }
    };
    let missing = || {
        ApiError::new(
            ErrorCode::DesignTemplateVersionNotFound,
            format!("Design template `{id}` has no version {n}"),
        )
    };
    if n == row.json_tree_version {
        tx.commit().await?;
        return current(row).map(envelope::ok).ok_or_else(missing);
    }
    let v = store::version(&mut tx, &caller.org_id, &id, n).await?;
    tx.commit().await?;
    v.map(|v| envelope::ok(v.into_api())).ok_or_else(missing)
}
