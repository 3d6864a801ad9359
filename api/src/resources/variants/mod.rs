//! `/v1/product-variants`: the SKUs of a product, with their images.
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
    DESCRIPTION_MAX, IdPath, Patch, archived_condition, check_image_ids, check_line, check_name,
    check_object, check_text, dedup_ids, finish, patch_line, patch_text,
};
use crate::auth::{Auth, Scope};
use crate::error::{ApiError, ApiResult, ErrorCode, FieldError};
use crate::http::envelope::{self, Deleted, Envelope, ListEnvelope};
use crate::http::extract::{JsonBody, QueryParams};
use crate::state::AppState;
use crate::store::list::ListParams;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_variant, list_variants))
        .routes(routes!(get_variant, update_variant, delete_variant))
}

/// Most images one variant may reference.
pub const MAX_VARIANT_IMAGES: usize = 50;

/// `Price::amount`: an integer, with its bounds written as integers (a float bound such
/// as `1e11` would invite `100000000000.0`, which JSON Schema counts as an integer and this
/// API does not).
fn amount_schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::Integer)
        .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
            utoipa::openapi::KnownFormat::Int64,
        )))
        .minimum(Some(0))
        .maximum(Some(100_000_000_000_i64))
        .description(Some("Minor units (cents), 0 to 100,000,000,000"))
        .into()
}

fn sku_schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    super::common::text_schema::line(
        SKU_MAX,
        "Stock-keeping unit code: at most 100 characters on one line, unique among the product's variants. Empty or null: none",
    )
}

/// A price in minor units of a currency (`{"amount": 2900, "currency": "usd"}` is $29.00).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"amount": 2400, "currency": "usd"}))]
pub struct Price {
    #[schema(schema_with = amount_schema)]
    pub amount: i64,
    /// ISO 4217 code, three lowercase letters.
    #[schema(pattern = "^[a-z]{3}$")]
    pub currency: String,
}

/// A product variant (SKU).
#[derive(Debug, Clone, Serialize, FromRow, ToSchema)]
pub struct ProductVariant {
    /// `pv_…`
    pub id: String,
    /// `prod_…`
    pub product_id: String,
    pub name: String,
    pub description: Option<String>,
    /// Merchant's stock-keeping unit code; unique among the product's variants.
    pub sku: Option<String>,
    /// What the variant costs; the only price an ad's copy states.
    #[sqlx(try_from = "crate::store::JsonText")]
    pub price: Option<Price>,
    /// The former price, shown crossed out next to `price` in ads whose reference shows
    /// one; in the same currency and higher than `price`. An ad's discount ("25% off",
    /// "Save $8") is computed from the two, never invented; without it (and without an
    /// `offer` in the product's details or the prompt) ads state no discount.
    #[sqlx(try_from = "crate::store::JsonText")]
    #[schema(example = json!({"amount": 3200, "currency": "usd"}))]
    pub compare_at_price: Option<Price>,
    /// Free-form attributes such as colour and size (a JSON object of at most 16 KiB).
    #[sqlx(try_from = "crate::store::JsonText")]
    #[schema(value_type = Option<Object>)]
    pub attributes: Option<Map<String, Value>>,
    /// `img_…` ids of the variant's images, in order; the first is the main image.
    #[sqlx(try_from = "crate::store::JsonText")]
    pub image_ids: Vec<String>,
    pub duplicated_from_id: Option<String>,
    /// Set while archived (with its product).
    pub archived_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VariantCreate {
    /// `prod_…` of this organisation.
    pub product_id: String,
    #[schema(schema_with = super::common::text_schema::name)]
    pub name: String,
    #[schema(schema_with = super::common::text_schema::description)]
    pub description: Option<String>,
    #[schema(schema_with = sku_schema)]
    pub sku: Option<String>,
    pub price: Option<Price>,
    /// The former price, shown crossed out: same currency as `price` and higher (needs
    /// `price`). Ads compute their discount from the two.
    #[schema(example = json!({"amount": 3200, "currency": "usd"}))]
    pub compare_at_price: Option<Price>,
    #[schema(value_type = Option<Object>)]
    pub attributes: Option<Map<String, Value>>,
    /// At most 50 `img_…` ids of this organisation's images.
    pub image_ids: Option<Vec<String>>,
}

/// Any subset of the fields; a variant cannot move to another product.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VariantUpdate {
    #[serde(default)]
    #[schema(schema_with = super::common::text_schema::name)]
    pub name: Patch<String>,
    #[serde(default)]
    #[schema(schema_with = super::common::text_schema::description)]
    pub description: Patch<String>,
    #[serde(default)]
    #[schema(schema_with = sku_schema)]
    pub sku: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<Price>)]
    pub price: Patch<Price>,
    /// `null` removes it; checked against the variant's price after the update.
    #[serde(default)]
    #[schema(value_type = Option<Price>)]
    pub compare_at_price: Patch<Price>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub attributes: Patch<Map<String, Value>>,
    /// Replaces the list; `[]` or `null` removes every image.
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>)]
    pub image_ids: Patch<Vec<String>>,
}

fn check_price(field: &str, p: &Price, errors: &mut Vec<FieldError>) {
    if !(0..=100_000_000_000).contains(&p.amount) {
        errors.push(FieldError::new(
            format!("{field}.amount"),
            "must be from 0 to 100000000000 (minor units)",
        ));
    }
    if p.currency.len() != 3 || !p.currency.bytes().all(|b| b.is_ascii_lowercase()) {
        errors.push(FieldError::new(
            format!("{field}.currency"),
            "must be a three-letter lowercase ISO 4217 code such as \"usd\"",
        ));
    }
}

/// A former price needs a price, in the same currency, lower than it: the discount an ad
/// states is computed from the two.
fn check_compare_at(
    price: Option<&Price>,
    compare_at: Option<&Price>,
    errors: &mut Vec<FieldError>,
) {
    let Some(c) = compare_at else { return };
    match price {
        None => errors.push(FieldError::new(
            "compare_at_price",
            "needs a price: set `price` too (the crossed-out former price is compared with it)",
        )),
        Some(p) if p.currency != c.currency => errors.push(FieldError::new(
            "compare_at_price.currency",
            format!("must be the price's currency `{}`", p.currency),
        )),
        Some(p) if c.amount <= p.amount => errors.push(FieldError::new(
            "compare_at_price.amount",
            format!(
                "must be higher than price.amount ({}): it is the former price, shown crossed out; remove it when there is no discount",
                p.amount
            ),
        )),
        Some(_) => {}
    }
}

fn check_images(ids: &[String], errors: &mut Vec<FieldError>) {
    if ids.len() > MAX_VARIANT_IMAGES {
        errors.push(FieldError::new(
            "image_ids",
            format!("may hold at most {MAX_VARIANT_IMAGES} images"),
        ));
    }
}

const SKU_MAX: usize = 100;

/// SKUs are unique among a product's live variants.
///
/// # Errors
/// 409 CONFLICT naming the variant that already has the SKU.
async fn check_sku_free(
    conn: &mut sqlx::AnyConnection,
    product_id: &str,
    sku: &str,
    except: Option<&str>,
) -> ApiResult<()> {
    match store::sku_holder(conn, product_id, sku, except).await? {
        Some(id) => Err(ApiError::new(
            ErrorCode::Conflict,
            format!(
                "Variant `{id}` of this product already has sku `{sku}`; SKUs are unique within a product"
            ),
        )),
        None => Ok(()),
    }
}

/// Inserts a copy of `v` under `product_id` (same name, same image references).
pub async fn insert_copy(
    tx: &mut sqlx::AnyConnection,
    org_id: &str,
    v: &ProductVariant,
    product_id: &str,
    now: &str,
) -> ApiResult<()> {
    let copy = ProductVariant {
        id: crate::ids::new_id("pv"),
        product_id: product_id.to_string(),
        duplicated_from_id: Some(v.id.clone()),
        archived_at: None,
        created_at: now.to_string(),
        updated_at: now.to_string(),
        ..v.clone()
    };
    store::insert(tx, org_id, &copy).await
}

/// Create a product variant
#[utoipa::path(post, path = "/v1/product-variants", tag = "product variants", request_body = VariantCreate,
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 201, description = "The new variant", body = Envelope<ProductVariant>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 404, description = "PRODUCT_NOT_FOUND, IMAGE_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 409, description = "CONFLICT: another variant of the product has this sku", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["product_variants:write"])))]
async fn create_variant(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    body: JsonBody<VariantCreate>,
) -> ApiResult<Response> {
    caller.require(Scope::ProductVariantsWrite)?;
    let body = body.parse()?;
    let mut errors = Vec::new();
    let name = check_name("name", &body.name, &mut errors);
    let description = check_text(
        "description",
        body.description,
        DESCRIPTION_MAX,
        &mut errors,
    );
    let sku = check_line("sku", body.sku, SKU_MAX, &mut errors);
    if let Some(p) = &body.price {
        check_price("price", p, &mut errors);
    }
    if let Some(c) = &body.compare_at_price {
        check_price("compare_at_price", c, &mut errors);
    }
    check_compare_at(
        body.price.as_ref(),
        body.compare_at_price.as_ref(),
        &mut errors,
    );
    if let Some(a) = &body.attributes {
        check_object("attributes", a, &mut errors);
    }
    let image_ids = dedup_ids(body.image_ids.unwrap_or_default());
    check_images(&image_ids, &mut errors);
    finish(errors)?;
    check_image_ids(&state.db, &caller.org_id, "image_ids", &image_ids).await?;
    let mut tx = state.db.begin_write_for(&caller.org_id).await?;
    super::products::load(&mut *tx, &caller.org_id, &body.product_id).await?;
    if let Some(sku) = &sku {
        check_sku_free(&mut tx, &body.product_id, sku, None).await?;
    }
    let now = crate::timestamp::now();
    let v = ProductVariant {
        id: crate::ids::new_id("pv"),
        product_id: body.product_id,
        name,
        description,
        sku,
        price: body.price,
        compare_at_price: body.compare_at_price,
        attributes: body.attributes,
        image_ids,
        duplicated_from_id: None,
        archived_at: None,
        created_at: now.clone(),
        updated_at: now,
    };
    store::insert(&mut tx, &caller.org_id, &v).await?;
    tx.commit().await?;
    Ok(envelope::created(v))
}

/// List product variants
///
/// Newest first; archived variants only with `archived=true`.
#[utoipa::path(get, path = "/v1/product-variants", tag = "product variants",
    params(
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "Page size, default 20"),
        ("starting_after" = Option<String>, Query, description = "Id of the last variant already received"),
        ("product_id" = Option<String>, Query, description = "Comma-separated product ids"),
        ("archived" = Option<bool>, Query, description = "`true`: only archived variants; default `false`"),
    ),
    responses(
        (status = 200, description = "A page of variants", body = ListEnvelope<ProductVariant>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["product_variants:read"])))]
async fn list_variants(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    mut q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::ProductVariantsRead)?;
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

/// Retrieve a product variant
#[utoipa::path(get, path = "/v1/product-variants/{id}", tag = "product variants",
    params(("id" = String, Path, description = "pv_…")),
    responses(
        (status = 200, description = "The variant", body = Envelope<ProductVariant>),
        (status = 404, description = "PRODUCT_VARIANT_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["product_variants:read"])))]
async fn get_variant(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::ProductVariantsRead)?;
    Ok(envelope::ok(
        store::read(&state.db, &caller.org_id, &id).await?,
    ))
}

/// Update a product variant
///
/// `image_ids` replaces the variant's images (upload them with POST /v1/images first).
#[utoipa::path(patch, path = "/v1/product-variants/{id}", tag = "product variants", request_body = VariantUpdate,
    params(("id" = String, Path, description = "pv_…"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 200, description = "The updated variant", body = Envelope<ProductVariant>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 404, description = "PRODUCT_VARIANT_NOT_FOUND, IMAGE_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 409, description = "CONFLICT: another variant of the product has this sku", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["product_variants:write"])))]
async fn update_variant(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    body: JsonBody<VariantUpdate>,
) -> ApiResult<Response> {
    caller.require(Scope::ProductVariantsWrite)?;
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
    let sku = patch_line("sku", body.sku, SKU_MAX, &mut errors);
    if let Patch::Value(p) = &body.price {
        check_price("price", p, &mut errors);
    }
    if let Patch::Value(c) = &body.compare_at_price {
        check_price("compare_at_price", c, &mut errors);
    }
    if let Patch::Value(a) = &body.attributes {
        check_object("attributes", a, &mut errors);
    }
    let image_ids = match body.image_ids {
        Patch::Value(ids) => Some(dedup_ids(ids)),
        Patch::Null => Some(Vec::new()),
        Patch::Missing => None,
    };
    if let Some(ids) = &image_ids {
        check_images(ids, &mut errors);
    }
    finish(errors)?;
    if let Some(ids) = &image_ids {
        check_image_ids(&state.db, &caller.org_id, "image_ids", ids).await?;
    }
    let mut tx = state.db.begin_write_for(&caller.org_id).await?;
    let mut v = load(&mut *tx, &caller.org_id, &id).await?;
    let changed = name.is_some()
        || description != Patch::Missing
        || sku != Patch::Missing
        || body.price != Patch::Missing
        || body.compare_at_price != Patch::Missing
        || body.attributes != Patch::Missing
        || image_ids.is_some();
    if !changed {
        return Ok(envelope::ok(v));
    }
    if let Some(n) = name {
        v.name = n;
    }
    description.apply_nullable(&mut v.description);
    if let Patch::Value(new_sku) = &sku {
        check_sku_free(&mut tx, &v.product_id, new_sku, Some(&v.id)).await?;
    }
    sku.apply_nullable(&mut v.sku);
    body.price.apply_nullable(&mut v.price);
    body.compare_at_price
        .apply_nullable(&mut v.compare_at_price);
    // The pair is checked as it will be stored (a new price may undercut the old former
    // price, or a former price may come without one).
    let mut errors = Vec::new();
    check_compare_at(v.price.as_ref(), v.compare_at_price.as_ref(), &mut errors);
    finish(errors)?;
    body.attributes.apply_nullable(&mut v.attributes);
    if let Some(ids) = image_ids {
        v.image_ids = ids;
    }
    v.updated_at = crate::timestamp::now();
    store::update(&mut tx, &caller.org_id, &v).await?;
    tx.commit().await?;
    Ok(envelope::ok(v))
}

/// Delete a product variant
///
/// A soft delete: 404 afterwards; ads already made from it keep their images.
#[utoipa::path(delete, path = "/v1/product-variants/{id}", tag = "product variants",
    params(("id" = String, Path, description = "pv_…")),
    responses(
        (status = 200, description = "Deleted", body = Deleted),
        (status = 404, description = "PRODUCT_VARIANT_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["product_variants:write"])))]
async fn delete_variant(
    state: axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::ProductVariantsWrite)?;
    store::soft_delete(&state.db, &caller.org_id, &id).await?;
    Ok(Deleted::response(id))
}

crate::json_columns!(Option<Price>);
