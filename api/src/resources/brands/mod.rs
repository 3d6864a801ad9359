//! `/v1/brands`: create, list, get, update, delete, duplicate.
//!
//! Where things live: this module holds the routes, the request and response types and
//! the handlers (parse → domain call → respond), with the calls the web dashboard shares
//! (`list`, `update`, `load`); [`store`] holds every SQL statement of the resource;
//! [`checks`] the checks of palettes, fonts and logos.

mod checks;
mod store;

pub use store::load;

use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sqlx::FromRow;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::{
    IdPath, Patch, check_image_ids, check_name, check_object, check_text, dedup_ids, finish,
    patch_text,
};
use super::products::{self, DuplicateCounts};
use crate::auth::{Auth, Scope};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::http::envelope::{self, Deleted, Envelope, ListEnvelope, Meta};
use crate::http::extract::{JsonBody, QueryParams};
use crate::state::AppState;
use crate::store::Db;
use crate::store::list::ListParams;
use checks::{check_fonts, check_logos, check_palettes, palettes_schema};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_brand, list_brands))
        .routes(routes!(get_brand, update_brand, delete_brand))
        .routes(routes!(duplicate_brand))
}

/// A font family of the brand.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BrandFont {
    /// Family name, e.g. `Inter`: 1-100 characters on one line.
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069]*[^\s\u0000-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069][^\u0000-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069]*$"
    )]
    pub name: String,
    /// Where the family is used; omitted means any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<FontRole>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum FontRole {
    Heading,
    Body,
}

/// A brand: the visual identity that products and image ads belong to.
#[derive(Debug, Serialize, FromRow, ToSchema)]
pub struct Brand {
    /// `brand_…`
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    /// Named palettes of hex colours, e.g. `{"primary": ["#0A2540", "#635BFF"]}`. Names are
    /// 1–50 characters; each palette holds 1–20 colours as `#RGB`, `#RRGGBB` or `#RRGGBBAA`;
    /// at most 20 palettes. A palette named `primary` is used first by ad generation.
    #[sqlx(try_from = "crate::store::JsonText")]
    #[schema(value_type = Option<std::collections::HashMap<String, Vec<String>>>)]
    pub color_palettes: Option<Map<String, Value>>,
    #[sqlx(try_from = "crate::store::JsonText")]
    pub fonts: Vec<BrandFont>,
    /// `img_…` ids of logo images.
    #[sqlx(try_from = "crate::store::JsonText")]
    pub logo_image_ids: Option<Vec<String>>,
    /// Free-form metadata such as mission, voice and tagline (a JSON object of at most 16 KiB);
    /// `voice` steers ad copy (see `BrandCreate.details`).
    #[sqlx(try_from = "crate::store::JsonText")]
    #[schema(value_type = Option<Object>, example = super::facts::brand_details_example)]
    pub details: Option<Map<String, Value>>,
    pub duplicated_from_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// Body of POST /v1/brands.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BrandCreate {
    #[schema(schema_with = super::common::text_schema::name)]
    pub name: String,
    /// At most 5,000 characters.
    #[schema(schema_with = super::common::text_schema::description)]
    pub description: Option<String>,
    #[schema(schema_with = palettes_schema)]
    pub color_palettes: Option<Map<String, Value>>,
    /// At most 10 families.
    #[schema(max_items = 10)]
    pub fonts: Option<Vec<BrandFont>>,
    /// At most 20 `img_…` ids of this organisation's images (repeats are dropped).
    pub logo_image_ids: Option<Vec<String>>,
    #[schema(schema_with = details_schema)]
    pub details: Option<Map<String, Value>>,
}

/// Body of PATCH /v1/brands/{id}: any subset of the fields; `null` clears a nullable field.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BrandUpdate {
    #[serde(default)]
    #[schema(schema_with = super::common::text_schema::name)]
    pub name: Patch<String>,
    #[serde(default)]
    #[schema(schema_with = super::common::text_schema::description)]
    pub description: Patch<String>,
    #[serde(default)]
    #[schema(schema_with = palettes_schema)]
    pub color_palettes: Patch<Map<String, Value>>,
    /// At most 10 families; cannot be null.
    #[serde(default)]
    #[schema(value_type = Vec<BrandFont>, max_items = 10)]
    pub fonts: Patch<Vec<BrandFont>>,
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>)]
    pub logo_image_ids: Patch<Vec<String>>,
    #[serde(default)]
    #[schema(schema_with = details_schema)]
    pub details: Patch<Map<String, Value>>,
}

/// The request schema of `details`: an object whose `voice` steers ad copy.
fn details_schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    utoipa::openapi::RefOr::T(utoipa::openapi::Schema::Object(
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
            .description(Some(super::facts::BRAND_DETAILS_DOC))
            .examples([super::facts::brand_details_example()])
            .build(),
    ))
}

/// Create a brand
///
/// `color_palettes`, `fonts` and `logo_image_ids` are empty (`{}`, `[]`, `[]`) unless given.
#[utoipa::path(post, path = "/v1/brands", tag = "brands",
    request_body = BrandCreate,
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe; see the API description")),
    responses(
        (status = 201, description = "The new brand", body = Envelope<Brand>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 404, description = "IMAGE_NOT_FOUND: a logo id names no image of the organization", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["brands:write"])))]
async fn create_brand(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    body: JsonBody<BrandCreate>,
) -> ApiResult<Response> {
    caller.require(Scope::BrandsWrite)?;
    let body = body.parse()?;
    let mut errors = Vec::new();
    let name = check_name("name", &body.name, &mut errors);
    let description = check_text(
        "description",
        body.description,
        super::common::DESCRIPTION_MAX,
        &mut errors,
    );
    let palettes = body.color_palettes.unwrap_or_default();
    check_palettes(&palettes, &mut errors);
    let fonts = body.fonts.unwrap_or_default();
    check_fonts(&fonts, &mut errors);
    let logos = dedup_ids(body.logo_image_ids.unwrap_or_default());
    check_logos(&logos, &mut errors);
    if let Some(d) = &body.details {
        check_object("details", d, &mut errors);
        super::facts::check_brand_details(d, &mut errors);
    }
    finish(errors)?;
    check_image_ids(&state.db, &caller.org_id, "logo_image_ids", &logos).await?;
    // Timestamps are taken under the write lock, so they agree with list order.
    let mut tx = state.db.begin_write_for(&caller.org_id).await?;
    let now = crate::timestamp::now();
    let brand = Brand {
        id: crate::ids::new_id("brand"),
        name,
        description,
        color_palettes: Some(palettes),
        fonts,
        logo_image_ids: Some(logos),
        details: body.details,
        duplicated_from_id: None,
        created_at: now.clone(),
        updated_at: now,
    };
    store::insert(&mut tx, &caller.org_id, &brand).await?;
    tx.commit().await?;
    Ok(envelope::created(brand))
}

/// List brands
///
/// Newest first.
#[utoipa::path(get, path = "/v1/brands", tag = "brands",
    params(
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "Page size, default 20"),
        ("starting_after" = Option<String>, Query, description = "Id of the last brand already received"),
    ),
    responses(
        (status = 200, description = "A page of brands", body = ListEnvelope<Brand>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["brands:read"])))]
async fn list_brands(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    mut q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::BrandsRead)?;
    let p = ListParams::parse(&mut q, false, &[]);
    q.finish()?;
    Ok(axum::response::IntoResponse::into_response(
        list(&state.db, &caller.org_id, &p).await?,
    ))
}

/// A page of the organisation's brands, newest first (what GET /v1/brands answers; the
/// dashboard's catalogue page calls it too).
///
/// # Errors
/// VALIDATION_ERROR for a bad cursor; database failures.
pub async fn list(
    db: &crate::store::Db,
    org_id: &str,
    p: &ListParams,
) -> ApiResult<crate::http::envelope::Page<Brand>> {
    store::list(db, org_id, p).await
}

/// Retrieve a brand
#[utoipa::path(get, path = "/v1/brands/{id}", tag = "brands",
    params(("id" = String, Path, description = "brand_…")),
    responses(
        (status = 200, description = "The brand", body = Envelope<Brand>),
        (status = 404, description = "BRAND_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["brands:read"])))]
async fn get_brand(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::BrandsRead)?;
    Ok(envelope::ok(
        store::read(&state.db, &caller.org_id, &id).await?,
    ))
}

/// Update a brand
///
/// Any subset of the fields; `null` clears a nullable field. Upload logos with
/// POST /v1/images first.
#[utoipa::path(patch, path = "/v1/brands/{id}", tag = "brands",
    params(("id" = String, Path, description = "brand_…"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    request_body = BrandUpdate,
    responses(
        (status = 200, description = "The updated brand", body = Envelope<Brand>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 404, description = "BRAND_NOT_FOUND, IMAGE_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["brands:write"])))]
async fn update_brand(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    body: JsonBody<BrandUpdate>,
) -> ApiResult<Response> {
    caller.require(Scope::BrandsWrite)?;
    load(&state.db.read, &caller.org_id, &id).await?;
    let body = body.parse()?;
    Ok(envelope::ok(
        update(&state.db, &caller.org_id, &id, body).await?,
    ))
}

/// Applies a PATCH to the organisation's brand `id` (what PATCH /v1/brands/{id} does) and
/// answers the brand.
///
/// # Errors
/// VALIDATION_ERROR; BRAND_NOT_FOUND; IMAGE_NOT_FOUND; database failures.
pub async fn update(
    db: &crate::store::Db,
    org_id: &str,
    id: &str,
    body: BrandUpdate,
) -> ApiResult<Brand> {
    let mut errors = Vec::new();
    let name = body
        .name
        .required("name", &mut errors)
        .map(|n| check_name("name", &n, &mut errors));
    let description = patch_text(
        "description",
        body.description,
        super::common::DESCRIPTION_MAX,
        &mut errors,
    );
    if let Patch::Value(p) = &body.color_palettes {
        check_palettes(p, &mut errors);
    }
    let fonts = body.fonts.required("fonts", &mut errors);
    if let Some(f) = &fonts {
        check_fonts(f, &mut errors);
    }
    let logos = match body.logo_image_ids {
        Patch::Value(ids) => Patch::Value(dedup_ids(ids)),
        other => other,
    };
    if let Patch::Value(ids) = &logos {
        check_logos(ids, &mut errors);
    }
    if let Patch::Value(d) = &body.details {
        check_object("details", d, &mut errors);
        super::facts::check_brand_details(d, &mut errors);
    }
    finish(errors)?;
    if let Patch::Value(ids) = &logos {
        check_image_ids(db, org_id, "logo_image_ids", ids).await?;
    }
    let mut tx = db.begin_write_for(org_id).await?;
    let mut b = load(&mut *tx, org_id, id).await?;
    let changed = name.is_some()
        || description != Patch::Missing
        || body.color_palettes != Patch::Missing
        || fonts.is_some()
        || logos != Patch::Missing
        || body.details != Patch::Missing;
    if !changed {
        return Ok(b);
    }
    if let Some(n) = name {
        b.name = n;
    }
    description.apply_nullable(&mut b.description);
    body.color_palettes.apply_nullable(&mut b.color_palettes);
    if let Some(f) = fonts {
        b.fonts = f;
    }
    logos.apply_nullable(&mut b.logo_image_ids);
    body.details.apply_nullable(&mut b.details);
    b.updated_at = crate::timestamp::now();
    store::update(&mut tx, org_id, &b).await?;
    tx.commit().await?;
    Ok(b)
}

/// Delete a brand
///
/// A soft delete: the brand disappears from the API (404 afterwards) while image ads
/// already made from it keep their rows and images. A brand with products (archived ones
/// included) is refused with 409 RESOURCE_HAS_CHILDREN unless `cascade=true`, which
/// deletes its products, variants and audiences with it.
#[utoipa::path(delete, path = "/v1/brands/{id}", tag = "brands",
    params(("id" = String, Path, description = "brand_…"),
        ("cascade" = Option<bool>, Query, description = "Also delete the brand's products, variants and audiences (default false)")),
    responses(
        (status = 200, description = "Deleted", body = Deleted),
        (status = 400, description = "VALIDATION_ERROR: `cascade` is not `true`/`false`, or an unknown query parameter", body = crate::error::ErrorBody),
        (status = 404, description = "BRAND_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 409, description = "RESOURCE_HAS_CHILDREN", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["brands:write"])))]
async fn delete_brand(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    mut q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::BrandsWrite)?;
    let cascade = q.bool("cascade", false);
    q.finish()?;
    let mut tx = state.db.begin_write_for(&caller.org_id).await?;
    load(&mut *tx, &caller.org_id, &id).await?;
    let children = store::children(&mut tx, &id).await?;
    if children.products > 0 && !cascade {
        return Err(ApiError::new(
            ErrorCode::ResourceHasChildren,
            format!(
                "Brand `{id}` has {} products ({} variants, {} audiences); delete them first or pass cascade=true",
                children.products, children.product_variants, children.audiences
            ),
        )
        .with_children(children));
    }
    let now = crate::timestamp::now();
    store::delete_with_children(&mut tx, &id, &now).await?;
    tx.commit().await?;
    Ok(Deleted::response(id))
}

/// Response of the duplicate endpoints.
#[derive(Serialize, ToSchema)]
pub struct DuplicateResponse<T> {
    pub data: T,
    pub duplicated: DuplicateCounts,
    pub meta: Meta,
}

/// Duplicate a brand
///
/// Makes an independent copy named `<name> - copy`. With `cascade=true` (the default) the
/// copy also receives the brand's active products, variants and audiences, names
/// unchanged; archived ones are left out. Logos and variant images are shared, not
/// re-uploaded. All or nothing: if any part fails, nothing is created.
#[utoipa::path(post, path = "/v1/brands/{id}/duplicate", tag = "brands",
    params(("id" = String, Path, description = "brand_…"),
        ("cascade" = Option<bool>, Query, description = "Copy products, variants and audiences too (default true)"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 201, description = "The new brand and what was copied", body = DuplicateResponse<Brand>),
        (status = 400, description = "VALIDATION_ERROR: `cascade` is not `true`/`false`, an unknown query parameter, or an invalid Idempotency-Key", body = crate::error::ErrorBody),
        (status = 404, description = "BRAND_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["brands:write"])))]
async fn duplicate_brand(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    mut q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::BrandsWrite)?;
    let cascade = q.bool("cascade", true);
    q.finish()?;
    let (brand, counts) = duplicate(&state.db, &caller.org_id, &id, cascade).await?;
    let body = DuplicateResponse {
        data: brand,
        duplicated: counts,
        meta: Meta::current(),
    };
    Ok(axum::response::IntoResponse::into_response((
        axum::http::StatusCode::CREATED,
        axum::Json(body),
    )))
}

/// Copies a brand (and with `cascade`, its active subtree) in one transaction.
async fn duplicate(
    db: &Db,
    org_id: &str,
    id: &str,
    cascade: bool,
) -> ApiResult<(Brand, DuplicateCounts)> {
    let mut tx = db.begin_write_for(org_id).await?;
    let src = load(&mut *tx, org_id, id).await?;
    let now = crate::timestamp::now();
    let copy = Brand {
        id: crate::ids::new_id("brand"),
        name: format!("{} - copy", src.name),
        duplicated_from_id: Some(src.id.clone()),
        created_at: now.clone(),
        updated_at: now,
        ..src
    };
    store::insert(&mut tx, org_id, &copy).await?;
    let mut counts = DuplicateCounts::default();
    if cascade {
        let product_ids = store::active_product_ids(&mut tx, org_id, id).await?;
        for pid in product_ids {
            let (_, c) =
                products::copy_product(&mut tx, org_id, &pid, &copy.id, false, true).await?;
            counts.add(&c);
        }
    }
    tx.commit().await?;
    Ok((copy, counts))
}

crate::json_columns!(Vec<BrandFont>);
