//! `/v1/audiences`: who a product's ads speak to.
//!
//! Where things live: this module holds the routes, the request and response types and
//! the handlers (parse → domain call → respond), with the calls other resources share
//! (`load`, `active_of_product`, `insert_copy`); [`store`] holds every SQL statement of the
//! resource.

mod store;

pub use store::{active_of_product, load};

use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sqlx::FromRow;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::{
    DESCRIPTION_MAX, IdPath, Patch, archived_condition, check_name, check_object, check_text,
    finish, patch_text,
};
use crate::auth::{Auth, Scope};
use crate::error::ApiResult;
use crate::http::envelope::{self, Deleted, Envelope, ListEnvelope};
use crate::http::extract::{JsonBody, QueryParams};
use crate::state::AppState;
use crate::store::list::ListParams;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_audience, list_audiences))
        .routes(routes!(get_audience, update_audience, delete_audience))
}

/// An audience of a product.
#[derive(Debug, Clone, Serialize, FromRow, ToSchema)]
pub struct Audience {
    /// `aud_…`
    pub id: String,
    /// `prod_…`
    pub product_id: String,
    pub name: String,
    /// Who they are, in prose; informs tone and copy.
    pub description: Option<String>,
    /// Free-form traits (a JSON object of at most 16 KiB). Ad generation reads
    /// `age_range`, `pain_points`, `motivations` and `tone` when present.
    #[sqlx(try_from = "crate::store::JsonText")]
    #[schema(value_type = Option<Object>)]
    pub details: Option<Map<String, Value>>,
    pub duplicated_from_id: Option<String>,
    /// Set while archived (with its product).
    pub archived_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AudienceCreate {
    /// `prod_…` of this organisation.
    pub product_id: String,
    #[schema(schema_with = super::common::text_schema::name)]
    pub name: String,
    #[schema(schema_with = super::common::text_schema::description)]
    pub description: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub details: Option<Map<String, Value>>,
}

/// Any subset of the fields; an audience cannot move to another product.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AudienceUpdate {
    #[serde(default)]
    #[schema(schema_with = super::common::text_schema::name)]
    pub name: Patch<String>,
    #[serde(default)]
    #[schema(schema_with = super::common::text_schema::description)]
    pub description: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub details: Patch<Map<String, Value>>,
}

/// Inserts a copy of `a` under `product_id` (same name).
pub async fn insert_copy(
    tx: &mut sqlx::AnyConnection,
    org_id: &str,
    a: &Audience,
    product_id: &str,
    now: &str,
) -> ApiResult<()> {
    let copy = Audience {
        id: crate::ids::new_id("aud"),
        product_id: product_id.to_string(),
        duplicated_from_id: Some(a.id.clone()),
        archived_at: None,
        created_at: now.to_string(),
        updated_at: now.to_string(),
        ..a.clone()
    };
    store::insert(tx, org_id, &copy).await
}

/// Create an audience
#[utoipa::path(post, path = "/v1/audiences", tag = "audiences", request_body = AudienceCreate,
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 201, description = "The new audience", body = Envelope<Audience>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 404, description = "PRODUCT_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["audiences:write"])))]
async fn create_audience(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    body: JsonBody<AudienceCreate>,
) -> ApiResult<Response> {
    caller.require(Scope::AudiencesWrite)?;
    let body = body.parse()?;
    let mut errors = Vec::new();
    let name = check_name("name", &body.name, &mut errors);
    let description = check_text(
        "description",
        body.description,
        DESCRIPTION_MAX,
        &mut errors,
    );
    if let Some(d) = &body.details {
        check_object("details", d, &mut errors);
    }
    finish(errors)?;
    let mut tx = state.db.begin_write_for(&caller.org_id).await?;
    super::products::load(&mut *tx, &caller.org_id, &body.product_id).await?;
    let now = crate::timestamp::now();
    let a = Audience {
        id: crate::ids::new_id("aud"),
        product_id: body.product_id,
        name,
        description,
        details: body.details,
        duplicated_from_id: None,
        archived_at: None,
        created_at: now.clone(),
        updated_at: now,
    };
    store::insert(&mut tx, &caller.org_id, &a).await?;
    tx.commit().await?;
    Ok(envelope::created(a))
}

/// List audiences
///
/// Newest first; archived audiences only with `archived=true`.
#[utoipa::path(get, path = "/v1/audiences", tag = "audiences",
    params(
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "Page size, default 20"),
        ("starting_after" = Option<String>, Query, description = "Id of the last audience already received"),
        ("product_id" = Option<String>, Query, description = "Comma-separated product ids"),
        ("archived" = Option<bool>, Query, description = "`true`: only archived audiences; default `false`"),
    ),
    responses(
        (status = 200, description = "A page of audiences", body = ListEnvelope<Audience>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["audiences:read"])))]
async fn list_audiences(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    mut q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::AudiencesRead)?;
    let p = ListParams::parse(&mut q, false, &[]);
    let archived = archived_condition(&mut q);
    let product_ids = q.csv("product_id");
    q.finish()?;
    let page = store::list(
        &state.db,
        &caller.org_id,
        archived,
        product_ids.as_deref(),
        &p,
    )
    .await?;
    Ok(page.into_response())
}

/// Retrieve an audience
#[utoipa::path(get, path = "/v1/audiences/{id}", tag = "audiences",
    params(("id" = String, Path, description = "aud_…")),
    responses(
        (status = 200, description = "The audience", body = Envelope<Audience>),
        (status = 404, description = "AUDIENCE_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["audiences:read"])))]
async fn get_audience(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::AudiencesRead)?;
    Ok(envelope::ok(
        store::read(&state.db, &caller.org_id, &id).await?,
    ))
}

/// Update an audience
#[utoipa::path(patch, path = "/v1/audiences/{id}", tag = "audiences", request_body = AudienceUpdate,
    params(("id" = String, Path, description = "aud_…"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 200, description = "The updated audience", body = Envelope<Audience>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 404, description = "AUDIENCE_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["audiences:write"])))]
async fn update_audience(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    body: JsonBody<AudienceUpdate>,
) -> ApiResult<Response> {
    caller.require(Scope::AudiencesWrite)?;
    load(&state.db.read, &caller.org_id, &id).await?;
    let body = body.parse()?;
    let mut errors = Vec::new();
    let name = body
        .name
        .required("name", &mut errors)
        .map(|n| check_name("name", &n, &mut errors));
    let description = patch_text(
        "description",
        body.description,
        DESCRIPTION_MAX,
        &mut errors,
    );
    if let Patch::Value(d) = &body.details {
        check_object("details", d, &mut errors);
    }
    finish(errors)?;
    let mut tx = state.db.begin_write_for(&caller.org_id).await?;
    let mut a = load(&mut *tx, &caller.org_id, &id).await?;
    if name.is_none() && description == Patch::Missing && body.details == Patch::Missing {
        return Ok(envelope::ok(a));
    }
    if let Some(n) = name {
        a.name = n;
    }
    description.apply_nullable(&mut a.description);
    body.details.apply_nullable(&mut a.details);
    a.updated_at = crate::timestamp::now();
    store::update(&mut tx, &caller.org_id, &a).await?;
    tx.commit().await?;
    Ok(envelope::ok(a))
}

/// Delete an audience
///
/// A soft delete: 404 afterwards; ads already made for it keep their images.
#[utoipa::path(delete, path = "/v1/audiences/{id}", tag = "audiences",
    params(("id" = String, Path, description = "aud_…")),
    responses(
        (status = 200, description = "Deleted", body = Deleted),
        (status = 404, description = "AUDIENCE_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["audiences:write"])))]
async fn delete_audience(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::AudiencesWrite)?;
    store::soft_delete(&state.db, &caller.org_id, &id).await?;
    Ok(Deleted::response(id))
}
