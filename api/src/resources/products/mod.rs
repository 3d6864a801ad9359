//! `/v1/products`: create, list, get, update, delete, duplicate, archive, unarchive.
//!
//! Where things live: this module holds the routes, the request and response types and
//! the handlers (parse → domain call → respond), with the calls other resources and the
//! web dashboard share (`load`, `list`, `update`, `copy_product`); [`store`] holds every
//! SQL statement of the resource.

mod store;

pub use store::{COLUMNS, load};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sqlx::FromRow;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::brands::DuplicateResponse;
use super::common::{IdPath, Patch, check_name, check_object, check_text, finish, patch_text};
use crate::auth::{Auth, Scope};
use crate::error::{ApiError, ApiResult, ChildCounts, ErrorCode};
use crate::http::envelope::{self, Deleted, Envelope, ListEnvelope, Meta};
use crate::http::extract::{JsonBody, QueryParams};
use crate::state::AppState;
use crate::store::list::ListParams;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_product, list_products))
        .routes(routes!(get_product, update_product, delete_product))
        .routes(routes!(duplicate_product))
        .routes(routes!(archive_product))
        .routes(routes!(unarchive_product))
}

/// Long-form descriptions may be longer than other text.
pub const PRODUCT_DESCRIPTION_MAX: usize = 20_000;

/// What an ad sells.
#[derive(Debug, Serialize, FromRow, ToSchema)]
pub struct Product {
    /// `prod_…`
    pub id: String,
    /// Owning brand, `brand_…`.
    pub brand_id: String,
    pub name: String,
    /// Long-form description used to inform ad copy (at most 20,000 characters).
    pub description: Option<String>,
    /// Free-form features, benefits and USPs (a JSON object of at most 16 KiB); the keys ad
    /// copy reads are described under `ProductCreate.details`.
    #[sqlx(try_from = "crate::store::JsonText")]
    #[schema(value_type = Option<Object>, example = super::facts::product_details_example)]
    pub details: Option<Map<String, Value>>,
    pub duplicated_from_id: Option<String>,
    /// Set while the product is archived (hidden from lists by default).
    pub archived_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// Counts of what a duplicate created.
#[derive(Debug, Clone, Copy, Default, Serialize, ToSchema)]
pub struct DuplicateCounts {
    pub products: i64,
    pub product_variants: i64,
    pub audiences: i64,
    /// Image references carried over to the copied variants (the images are shared).
    pub variant_images: i64,
}

impl DuplicateCounts {
    pub fn add(&mut self, o: &DuplicateCounts) {
        self.products += o.products;
        self.product_variants += o.product_variants;
        self.audiences += o.audiences;
        self.variant_images += o.variant_images;
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProductCreate {
    /// `brand_…` of this organisation.
    pub brand_id: String,
    #[schema(schema_with = super::common::text_schema::name)]
    pub name: String,
    #[schema(schema_with = super::common::text_schema::description)]
    pub description: Option<String>,
    #[schema(schema_with = details_schema)]
    pub details: Option<Map<String, Value>>,
}

/// Any subset of the fields; a product cannot move to another brand.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProductUpdate {
    #[serde(default)]
    #[schema(schema_with = super::common::text_schema::name)]
    pub name: Patch<String>,
    #[serde(default)]
    #[schema(schema_with = super::common::text_schema::description)]
    pub description: Patch<String>,
    #[serde(default)]
    #[schema(schema_with = details_schema)]
    pub details: Patch<Map<String, Value>>,
}

/// The request schema of `details`: an object whose documented keys ad copy reads.
fn details_schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    utoipa::openapi::RefOr::T(utoipa::openapi::Schema::Object(
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
            .description(Some(super::facts::PRODUCT_DETAILS_DOC))
            .examples([super::facts::product_details_example()])
            .build(),
    ))
}

/// Create a product
#[utoipa::path(post, path = "/v1/products", tag = "products", request_body = ProductCreate,
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 201, description = "The new product", body = Envelope<Product>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 404, description = "BRAND_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["products:write"])))]
async fn create_product(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    body: JsonBody<ProductCreate>,
) -> ApiResult<Response> {
    caller.require(Scope::ProductsWrite)?;
    let body = body.parse()?;
    let mut errors = Vec::new();
    let name = check_name("name", &body.name, &mut errors);
    let description = check_text(
        "description",
        body.description,
        PRODUCT_DESCRIPTION_MAX,
        &mut errors,
    );
    if let Some(d) = &body.details {
        check_object("details", d, &mut errors);
        super::facts::check_product_details(d, &mut errors);
    }
    finish(errors)?;
    let mut tx = state.db.begin_write_for(&caller.org_id).await?;
    super::brands::load(&mut *tx, &caller.org_id, &body.brand_id).await?;
    let now = crate::timestamp::now();
    let p = Product {
        id: crate::ids::new_id("prod"),
        brand_id: body.brand_id,
        name,
        description,
        details: body.details,
        duplicated_from_id: None,
        archived_at: None,
        created_at: now.clone(),
        updated_at: now,
    };
    store::insert(&mut tx, &caller.org_id, &p).await?;
    tx.commit().await?;
    Ok(envelope::created(p))
}

/// List products
///
/// Newest first. Archived products are left out unless `archived=true`, which lists only
/// archived ones.
#[utoipa::path(get, path = "/v1/products", tag = "products",
    params(
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "Page size, default 20"),
        ("starting_after" = Option<String>, Query, description = "Id of the last product already received"),
        ("brand_id" = Option<String>, Query, description = "Comma-separated brand ids"),
        ("archived" = Option<bool>, Query, description = "`true`: only archived products; default `false`"),
    ),
    responses(
        (status = 200, description = "A page of products", body = ListEnvelope<Product>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["products:read"])))]
async fn list_products(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    mut q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::ProductsRead)?;
    let p = ListParams::parse(&mut q, false, &[]);
    let filter = ProductFilter::from_query(&mut q);
    q.finish()?;
    Ok(list(&state.db, &caller.org_id, &filter, &p)
        .await?
        .into_response())
}

/// Which products a list shows: archived or active ones, of some brands or all.
#[derive(Debug, Clone, Default)]
pub struct ProductFilter {
    /// Archived products instead of active ones.
    pub archived: bool,
    /// Only products of these brands.
    pub brand_ids: Option<Vec<String>>,
}

impl ProductFilter {
    /// `archived` and `brand_id` of GET /v1/products.
    pub fn from_query(q: &mut QueryParams) -> Self {
        Self {
            archived: q.bool("archived", false),
            brand_ids: q.csv("brand_id"),
        }
    }
}

/// A page of the organisation's products (what GET /v1/products answers; the dashboard's
/// catalogue page calls it too).
///
/// # Errors
/// VALIDATION_ERROR for a bad cursor; database failures.
pub async fn list(
    db: &crate::store::Db,
    org_id: &str,
    filter: &ProductFilter,
    p: &ListParams,
) -> ApiResult<crate::http::envelope::Page<Product>> {
    store::list(db, org_id, filter.archived, filter.brand_ids.as_deref(), p).await
}

/// Retrieve a product
///
/// Archived products can still be retrieved.
#[utoipa::path(get, path = "/v1/products/{id}", tag = "products",
    params(("id" = String, Path, description = "prod_…")),
    responses(
        (status = 200, description = "The product", body = Envelope<Product>),
        (status = 404, description = "PRODUCT_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["products:read"])))]
async fn get_product(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::ProductsRead)?;
    Ok(envelope::ok(
        store::read(&state.db, &caller.org_id, &id).await?,
    ))
}

/// Update a product
#[utoipa::path(patch, path = "/v1/products/{id}", tag = "products", request_body = ProductUpdate,
    params(("id" = String, Path, description = "prod_…"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 200, description = "The updated product", body = Envelope<Product>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 404, description = "PRODUCT_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["products:write"])))]
async fn update_product(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    body: JsonBody<ProductUpdate>,
) -> ApiResult<Response> {
    caller.require(Scope::ProductsWrite)?;
    store::load(&state.db.read, &caller.org_id, &id).await?;
    let body = body.parse()?;
    Ok(envelope::ok(
        update(&state.db, &caller.org_id, &id, body).await?,
    ))
}

/// Applies a PATCH to the organisation's product `id` (what PATCH /v1/products/{id} does)
/// and answers the product.
///
/// # Errors
/// VALIDATION_ERROR; PRODUCT_NOT_FOUND; database failures.
pub async fn update(
    db: &crate::store::Db,
    org_id: &str,
    id: &str,
    body: ProductUpdate,
) -> ApiResult<Product> {
    let mut errors = Vec::new();
    let name = body
        .name
        .required("name", &mut errors)
        .map(|n| check_name("name", &n, &mut errors));
    let description = patch_text(
        "description",
        body.description,
        PRODUCT_DESCRIPTION_MAX,
        &mut errors,
    );
    if let Patch::Value(d) = &body.details {
        check_object("details", d, &mut errors);
        super::facts::check_product_details(d, &mut errors);
    }
    finish(errors)?;
    let mut tx = db.begin_write_for(org_id).await?;
    let mut p = load(&mut *tx, org_id, id).await?;
    if name.is_none() && description == Patch::Missing && body.details == Patch::Missing {
        return Ok(p);
    }
    if let Some(n) = name {
        p.name = n;
    }
    description.apply_nullable(&mut p.description);
    body.details.apply_nullable(&mut p.details);
    p.updated_at = crate::timestamp::now();
    store::update(&mut tx, org_id, &p).await?;
    tx.commit().await?;
    Ok(p)
}

/// Delete a product
///
/// A soft delete (404 afterwards; image ads made from it keep working). A product with
/// variants or audiences is refused with 409 RESOURCE_HAS_CHILDREN unless `cascade=true`.
#[utoipa::path(delete, path = "/v1/products/{id}", tag = "products",
    params(("id" = String, Path, description = "prod_…"),
        ("cascade" = Option<bool>, Query, description = "Also delete its variants and audiences (default false)")),
    responses(
        (status = 200, description = "Deleted", body = Deleted),
        (status = 400, description = "VALIDATION_ERROR: `cascade` is not `true`/`false`, or an unknown query parameter", body = crate::error::ErrorBody),
        (status = 404, description = "PRODUCT_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 409, description = "RESOURCE_HAS_CHILDREN", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["products:write"])))]
async fn delete_product(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    mut q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::ProductsWrite)?;
    let cascade = q.bool("cascade", false);
    q.finish()?;
    let mut tx = state.db.begin_write_for(&caller.org_id).await?;
    load(&mut *tx, &caller.org_id, &id).await?;
    let children = store::children(&mut tx, &id, false).await?;
    if children.product_variants + children.audiences > 0 && !cascade {
        return Err(ApiError::new(
            ErrorCode::ResourceHasChildren,
            format!(
                "Product `{id}` has {} variants and {} audiences; delete them first or pass cascade=true",
                children.product_variants, children.audiences
            ),
        )
        .with_children(children));
    }
    let now = crate::timestamp::now();
    store::delete_with_children(&mut tx, &id, &now).await?;
    tx.commit().await?;
    Ok(Deleted::response(id))
}

/// Duplicate a product
///
/// A new product under the same brand named `<name> - copy`; with `cascade=true` (the
/// default) its active variants and audiences are copied too, names unchanged, sharing
/// the variant images. All or nothing.
#[utoipa::path(post, path = "/v1/products/{id}/duplicate", tag = "products",
    params(("id" = String, Path, description = "prod_…"),
        ("cascade" = Option<bool>, Query, description = "Copy variants and audiences too (default true)"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 201, description = "The new product and what was copied", body = DuplicateResponse<Product>),
        (status = 400, description = "VALIDATION_ERROR: `cascade` is not `true`/`false`, an unknown query parameter, or an invalid Idempotency-Key", body = crate::error::ErrorBody),
        (status = 404, description = "PRODUCT_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["products:write"])))]
async fn duplicate_product(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    mut q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::ProductsWrite)?;
    let cascade = q.bool("cascade", true);
    q.finish()?;
    let mut tx = state.db.begin_write_for(&caller.org_id).await?;
    let src = load(&mut *tx, &caller.org_id, &id).await?;
    let (product, counts) =
        copy_product(&mut tx, &caller.org_id, &id, &src.brand_id, true, cascade).await?;
    tx.commit().await?;
    let body = DuplicateResponse {
        data: product,
        duplicated: counts,
        meta: Meta::current(),
    };
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

/// Copies a product with its active variants and audiences into `brand_id`, inside the
/// caller's transaction. `rename` appends ` - copy` to the product's name; without
/// `with_children` only the product record is copied.
///
/// # Errors
/// Database failures (the caller's transaction then rolls everything back).
pub async fn copy_product(
    tx: &mut sqlx::AnyConnection,
    org_id: &str,
    product_id: &str,
    brand_id: &str,
    rename: bool,
    with_children: bool,
) -> ApiResult<(Product, DuplicateCounts)> {
    let src = load(&mut *tx, org_id, product_id).await?;
    let now = crate::timestamp::now();
    let copy = Product {
        id: crate::ids::new_id("prod"),
        brand_id: brand_id.to_string(),
        name: if rename {
            format!("{} - copy", src.name)
        } else {
            src.name.clone()
        },
        duplicated_from_id: Some(src.id.clone()),
        archived_at: None,
        created_at: now.clone(),
        updated_at: now.clone(),
        ..src
    };
    store::insert(tx, org_id, &copy).await?;
    let mut counts = DuplicateCounts {
        products: 1,
        ..Default::default()
    };
    if !with_children {
        return Ok((copy, counts));
    }
    let variants = super::variants::active_of_product(&mut *tx, product_id).await?;
    for v in variants {
        counts.variant_images += v.image_ids.len() as i64;
        super::variants::insert_copy(&mut *tx, org_id, &v, &copy.id, &now).await?;
        counts.product_variants += 1;
    }
    let audiences = super::audiences::active_of_product(&mut *tx, product_id).await?;
    for a in audiences {
        super::audiences::insert_copy(&mut *tx, org_id, &a, &copy.id, &now).await?;
        counts.audiences += 1;
    }
    Ok((copy, counts))
}

/// Response of archive and unarchive.
#[derive(Serialize, ToSchema)]
pub struct ArchiveResult {
    /// The product's state after the call.
    pub archived: bool,
    /// What the call changed: the variants and audiences archived (or restored) with the
    /// product. `products` is always 0 for a product.
    pub children: ChildCounts,
    pub meta: Meta,
}

/// Archive a product
///
/// Hides the product from lists and global search, keeps every reference intact, and is
/// reversible with POST /v1/products/{id}/unarchive. A product with active variants or
/// audiences is refused with 409 RESOURCE_HAS_CHILDREN unless `cascade=true`, which
/// archives them too. Archiving an archived product changes nothing and succeeds.
#[utoipa::path(post, path = "/v1/products/{id}/archive", tag = "products",
    params(("id" = String, Path, description = "prod_…"),
        ("cascade" = Option<bool>, Query, description = "Archive active variants and audiences too (default false)"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 200, description = "Archived", body = ArchiveResult),
        (status = 400, description = "VALIDATION_ERROR: `cascade` is not `true`/`false`, an unknown query parameter, or an invalid Idempotency-Key", body = crate::error::ErrorBody),
        (status = 404, description = "PRODUCT_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 409, description = "RESOURCE_HAS_CHILDREN", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["products:write"])))]
async fn archive_product(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    mut q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::ProductsWrite)?;
    let cascade = q.bool("cascade", false);
    q.finish()?;
    let mut tx = state.db.begin_write_for(&caller.org_id).await?;
    let p = load(&mut *tx, &caller.org_id, &id).await?;
    let active = store::children(&mut tx, &id, true).await?;
    if p.archived_at.is_none() && active.product_variants + active.audiences > 0 && !cascade {
        return Err(ApiError::new(
            ErrorCode::ResourceHasChildren,
            format!(
                "Product `{id}` has {} active variants and {} active audiences; pass cascade=true to archive them with it",
                active.product_variants, active.audiences
            ),
        )
        .with_children(active));
    }
    let mut changed = ChildCounts::default();
    if p.archived_at.is_none() {
        let now = crate::timestamp::now();
        changed = store::archive_with_children(&mut tx, &id, &now).await?;
    }
    tx.commit().await?;
    Ok(axum::Json(ArchiveResult {
        archived: true,
        children: changed,
        meta: Meta::current(),
    })
    .into_response())
}

/// Unarchive a product
///
/// Restores an archived product together with the variants and audiences that were
/// archived with it. Unarchiving an active product changes nothing and succeeds.
#[utoipa::path(post, path = "/v1/products/{id}/unarchive", tag = "products",
    params(("id" = String, Path, description = "prod_…"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 200, description = "Active again", body = ArchiveResult),
        (status = 400, description = "VALIDATION_ERROR: an unknown query parameter or an invalid Idempotency-Key", body = crate::error::ErrorBody),
        (status = 404, description = "PRODUCT_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["products:write"])))]
async fn unarchive_product(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::ProductsWrite)?;
    q.finish()?;
    let mut tx = state.db.begin_write_for(&caller.org_id).await?;
    let p = load(&mut *tx, &caller.org_id, &id).await?;
    let mut changed = ChildCounts::default();
    if let Some(at) = &p.archived_at {
        let now = crate::timestamp::now();
        changed = store::unarchive_with_children(&mut tx, &id, at, &now).await?;
    }
    tx.commit().await?;
    Ok(axum::Json(ArchiveResult {
        archived: false,
        children: changed,
        meta: Meta::current(),
    })
    .into_response())
}
