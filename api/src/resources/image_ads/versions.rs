//! The versions of an editable ad: `GET /v1/image-ads/{id}/versions` and one version by
//! its id (`iav_…`) or by its number (`1`, `2`, …), as design templates' versions are
//! read by number.
//!
//! A version is written when an editable ad first completes (version 1) and by every
//! PATCH after; it never changes once its render is done.

use axum::extract::State;
use axum::response::Response;
use serde::Serialize;
use serde_json::Value;
use sqlx::FromRow;
use utoipa::ToSchema;

use super::store;
use crate::auth::{Auth, Scope};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::http::envelope::{self, Envelope};
use crate::http::extract::PathParams;
use crate::resources::common::IdPath;
use crate::state::AppState;
use crate::store::Db;

/// A version of an editable ad.
#[derive(Debug, Serialize, FromRow, ToSchema)]
pub struct ImageAdVersion {
    /// `iav_…`
    pub id: String,
    pub image_ad_id: String,
    /// 1 for the ad's first tree, then one more per PATCH; GET
    /// /v1/image-ads/{id}/versions/{version_number} reads it.
    pub version_number: i64,
    /// The PNG of this version; null while it renders.
    pub image_url: Option<String>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    /// This version's files for ad platforms once completed (empty otherwise), as the
    /// ad's `renditions`.
    #[sqlx(skip)]
    pub renditions: Vec<super::renditions::Rendition>,
    /// processing, completed or failed.
    pub status: String,
    #[sqlx(try_from = "crate::store::JsonText")]
    #[schema(value_type = Object)]
    pub json_tree: Value,
    /// What the PATCH that made this version said it changed; null for version 1 and for
    /// edits that gave none.
    pub change_summary: Option<String>,
    pub created_at: String,
    pub completed_at: Option<String>,
}

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
pub(super) async fn list_versions(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsRead)?;
    Ok(envelope::ok(
        versions(&state.db, &caller.org_id, &id).await?,
    ))
}

/// GET /v1/image-ads/{id}/versions after the scope check: oldest first.
///
/// # Errors
/// IMAGE_AD_NOT_FOUND; database failures.
pub async fn versions(db: &Db, org_id: &str, id: &str) -> ApiResult<Vec<ImageAdVersion>> {
    store::load(&db.read, org_id, id).await?;
    let versions = store::versions(db, org_id, id).await?;
    Ok(versions.into_iter().map(with_renditions).collect())
}

/// The version with its renditions (a function of its PNG's URL and size).
fn with_renditions(mut v: ImageAdVersion) -> ImageAdVersion {
    v.renditions = super::renditions::listed(&v.status, v.image_url.as_deref(), v.width, v.height);
    v
}

/// How the path names a version: by id or by number.
#[derive(Debug, PartialEq)]
enum VersionRef<'a> {
    /// `iav_…`
    Id(&'a str),
    /// `version_number`, from 1.
    Number(i64),
}

impl<'a> VersionRef<'a> {
    /// Reads the `{version_id}` path segment.
    ///
    /// # Errors
    /// 400 VALIDATION_ERROR on `version_id` for anything that is neither an `iav_` id nor
    /// a whole number from 1 written in decimal digits (`0`, `-1`, `1.5`, `+1`, `x`).
    fn parse(raw: &'a str) -> ApiResult<Self> {
        if raw.starts_with("iav_") {
            return Ok(Self::Id(raw));
        }
        let number = (!raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit()))
            .then(|| raw.parse::<i64>().ok())
            .flatten()
            .filter(|n| *n >= 1);
        number.map(Self::Number).ok_or_else(|| {
            ApiError::field(
                "version_id",
                format!("must be a version id (iav_…) or a version number from 1, not `{raw}`"),
            )
        })
    }
}

/// Retrieve a version
///
/// By the version's id (`iav_…`) or by its `version_number` (1 for the ad's first tree,
/// one more per PATCH): both answer the same version.
#[utoipa::path(get, path = "/v1/image-ads/{id}/versions/{version_id}", tag = "image ads",
    params(("id" = String, Path, description = "ia_…"),
        ("version_id" = String, Path,
            description = "The version's id (iav_…) or its version_number (a whole number from 1)",
            example = "2")),
    responses(
        (status = 200, description = "The version", body = Envelope<ImageAdVersion>),
        (status = 400, description = "VALIDATION_ERROR: a version that is neither an iav_… id nor a whole number from 1, or a path parameter that is not UTF-8 once percent-decoded", body = crate::error::ErrorBody),
        (status = 404, description = "IMAGE_AD_NOT_FOUND, IMAGE_AD_VERSION_NOT_FOUND (naming the id or number)", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["image_ads:read"])))]
pub(super) async fn get_version(
    State(state): State<AppState>,
    Auth(caller): Auth,
    PathParams((id, version_id)): PathParams<(String, String)>,
) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsRead)?;
    store::load(&state.db.read, &caller.org_id, &id).await?;
    match VersionRef::parse(&version_id)? {
        VersionRef::Id(vid) => store::version(&state.db, &caller.org_id, &id, vid)
            .await?
            .map(|v| envelope::ok(with_renditions(v)))
            .ok_or_else(|| {
                ApiError::not_found(ErrorCode::ImageAdVersionNotFound, "image ad version", vid)
            }),
        VersionRef::Number(n) => store::version_numbered(&state.db, &caller.org_id, &id, n)
            .await?
            .map(|v| envelope::ok(with_renditions(v)))
            .ok_or_else(|| {
                ApiError::new(
                    ErrorCode::ImageAdVersionNotFound,
                    format!("Image ad `{id}` has no version {n}; GET /v1/image-ads/{id}/versions lists the versions it has"),
                )
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::VersionRef;

    #[test]
    fn a_version_is_named_by_id_or_by_a_number_from_one() {
        assert_eq!(
            VersionRef::parse("iav_abc").unwrap(),
            VersionRef::Id("iav_abc")
        );
        assert_eq!(VersionRef::parse("1").unwrap(), VersionRef::Number(1));
        assert_eq!(VersionRef::parse("42").unwrap(), VersionRef::Number(42));
        for bad in [
            "0",
            "-1",
            "+1",
            "1.0",
            "x",
            "",
            "ia_1",
            "99999999999999999999",
        ] {
            assert!(VersionRef::parse(bad).is_err(), "{bad}");
        }
    }
}
