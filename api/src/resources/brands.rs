//! `/v1/brands`: create, list, get, update, delete, duplicate.

use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sqlx::FromRow;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::{
    IdPath, Lines, Patch, Table, check_chars, check_image_ids, check_name, check_object,
    check_text, dedup_ids, finish, patch_text,
};
use super::products::{self, DuplicateCounts};
use crate::app::AppState;
use crate::auth::{Auth, Scope};
use crate::error::{ApiError, ApiResult, ChildCounts, ErrorCode, FieldError};
use crate::http::envelope::{self, Deleted, Envelope, ListEnvelope, Meta};
use crate::http::extract::{JsonBody, QueryParams};
use crate::store::list::{ListParams, ListQuery};
use crate::store::{Db, to_json_text};

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
    /// Free-form metadata such as mission, voice and tagline (a JSON object of at most 16 KiB).
    #[sqlx(try_from = "crate::store::JsonText")]
    #[schema(value_type = Option<Object>)]
    pub details: Option<Map<String, Value>>,
    pub duplicated_from_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

const COLUMNS: &str = "t.id, t.name, t.description, t.color_palettes, t.fonts, t.logo_image_ids, t.details, \
                       t.duplicated_from_id, t.created_at, t.updated_at";

const TABLE: Table = Table {
    name: "brands",
    columns: COLUMNS,
    not_found: ErrorCode::BrandNotFound,
    kind: "brand",
};

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
    #[schema(value_type = Option<Object>)]
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
    #[schema(value_type = Option<Object>)]
    pub details: Patch<Map<String, Value>>,
}

/// The request schema of `color_palettes`: the rules [`check_palettes`] applies.
fn palettes_schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, SchemaType, Type};
    let colour = ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some("^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$"));
    let palette = ArrayBuilder::new()
        .items(colour)
        .min_items(Some(1))
        .max_items(Some(20));
    let names = ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(50))
        .pattern(Some(super::common::LINE_PATTERN))
        .build();
    let palettes = ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
        .property_names(Some(names))
        .additional_properties(Some(palette))
        .max_properties(Some(20))
        .description(Some(
            "Named palettes (names 1-50 characters on one line) of 1-20 hex colours each (#RGB, #RRGGBB or #RRGGBBAA); at most 20 palettes. Null clears them",
        ))
        .build();
    utoipa::openapi::RefOr::T(utoipa::openapi::Schema::Object(palettes))
}

fn is_hex_colour(s: &str) -> bool {
    s.strip_prefix('#')
        .is_some_and(|h| matches!(h.len(), 3 | 6 | 8) && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn check_palettes(p: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    if p.len() > 20 {
        errors.push(FieldError::new(
            "color_palettes",
            "may hold at most 20 palettes",
        ));
    }
    for (name, colours) in p {
        let field = format!("color_palettes.{name}");
        if name.is_empty() || name.chars().count() > 50 {
            errors.push(FieldError::new(
                &field,
                "palette names are 1 to 50 characters",
            ));
        }
        check_chars(&field, name, Lines::Single, errors);
        match colours.as_array() {
            Some(list) if (1..=20).contains(&list.len()) => {
                for (i, c) in list.iter().enumerate() {
                    if !c.as_str().is_some_and(is_hex_colour) {
                        errors.push(FieldError::new(
                            format!("{field}[{i}]"),
                            "must be a hex colour such as \"#1A2B3C\" (#RGB, #RRGGBB or #RRGGBBAA)",
                        ));
                    }
                }
            }
            _ => errors.push(FieldError::new(
                field,
                "must be an array of 1 to 20 hex colours",
            )),
        }
    }
}

fn check_fonts(fonts: &[BrandFont], errors: &mut Vec<FieldError>) {
    if fonts.len() > 10 {
        errors.push(FieldError::new("fonts", "may hold at most 10 families"));
    }
    for (i, f) in fonts.iter().enumerate() {
        if f.name.trim().is_empty() || f.name.chars().count() > 100 {
            errors.push(FieldError::new(
                format!("fonts[{i}].name"),
                "must be 1 to 100 characters",
            ));
        }
        check_chars(&format!("fonts[{i}].name"), &f.name, Lines::Single, errors);
    }
}

fn check_logos(ids: &[String], errors: &mut Vec<FieldError>) {
    if ids.len() > 20 {
        errors.push(FieldError::new(
            "logo_image_ids",
            "may hold at most 20 images",
        ));
    }
}

/// Loads a live brand of the organisation.
///
/// # Errors
/// 404 BRAND_NOT_FOUND.
pub async fn load<'e, E: sqlx::AnyExecutor<'e>>(ex: E, org_id: &str, id: &str) -> ApiResult<Brand> {
    TABLE.load(ex, org_id, id).await
}

async fn insert(tx: &mut sqlx::AnyConnection, org_id: &str, b: &Brand) -> ApiResult<()> {
    crate::store::query(
        "INSERT INTO brands (id, org_id, name, description, color_palettes, fonts, logo_image_ids, details, \
         duplicated_from_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&b.id)
    .bind(org_id)
    .bind(&b.name)
    .bind(&b.description)
    .bind(b.color_palettes.as_ref().map(to_json_text))
    .bind(to_json_text(&b.fonts))
    .bind(b.logo_image_ids.as_ref().map(to_json_text))
    .bind(b.details.as_ref().map(to_json_text))
    .bind(&b.duplicated_from_id)
    .bind(&b.created_at)
    .bind(&b.updated_at)
    .execute(tx)
    .await?;
    Ok(())
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
    JsonBody(body): JsonBody<BrandCreate>,
) -> ApiResult<Response> {
    caller.require(Scope::BrandsWrite)?;
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
    }
    finish(errors)?;
    check_image_ids(&state.db, &caller.org_id, "logo_image_ids", &logos).await?;
    // Timestamps are taken under the write lock, so they agree with list order.
    let mut tx = state.db.begin_write().await?;
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
    insert(&mut tx, &caller.org_id, &brand).await?;
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
    q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::BrandsRead)?;
    Ok(axum::response::IntoResponse::into_response(
        list(&state.db, &caller.org_id, q).await?,
    ))
}

/// A page of the organisation's brands, newest first (what GET /v1/brands answers; the
/// dashboard's catalogue page calls it too).
///
/// # Errors
/// VALIDATION_ERROR; database failures.
pub async fn list(
    db: &crate::store::Db,
    org_id: &str,
    mut q: QueryParams,
) -> ApiResult<crate::http::envelope::Page<Brand>> {
    let p = ListParams::parse(&mut q, false, &[]);
    q.finish()?;
    ListQuery {
        table: "brands",
        columns: COLUMNS,
        joins: "",
        org_id,
        conditions: vec![],
        facet_columns: &[],
    }
    .fetch::<Brand>(db, &p)
    .await
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
        load(&state.db.read, &caller.org_id, &id).await?,
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
    JsonBody(body): JsonBody<BrandUpdate>,
) -> ApiResult<Response> {
    caller.require(Scope::BrandsWrite)?;
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
    }
    finish(errors)?;
    if let Patch::Value(ids) = &logos {
        check_image_ids(db, org_id, "logo_image_ids", ids).await?;
    }
    let mut tx = db.begin_write().await?;
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
    crate::store::query(
        "UPDATE brands SET name = ?, description = ?, color_palettes = ?, fonts = ?, logo_image_ids = ?, \
         details = ?, updated_at = ? WHERE id = ? AND org_id = ?",
    )
    .bind(&b.name)
    .bind(&b.description)
    .bind(b.color_palettes.as_ref().map(to_json_text))
    .bind(to_json_text(&b.fonts))
    .bind(b.logo_image_ids.as_ref().map(to_json_text))
    .bind(b.details.as_ref().map(to_json_text))
    .bind(&b.updated_at)
    .bind(&b.id)
    .bind(org_id)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(b)
}

/// Counts the live products, variants and audiences under a brand.
async fn brand_children(ex: &mut sqlx::AnyConnection, brand_id: &str) -> ApiResult<ChildCounts> {
    let (products, product_variants, audiences): (i64, i64, i64) = crate::store::query_as(
        "SELECT \
           (SELECT COUNT(*) FROM products WHERE brand_id = ?1 AND deleted_at IS NULL), \
           (SELECT COUNT(*) FROM product_variants v JOIN products p ON p.id = v.product_id \
              WHERE p.brand_id = ?1 AND p.deleted_at IS NULL AND v.deleted_at IS NULL), \
           (SELECT COUNT(*) FROM audiences a JOIN products p ON p.id = a.product_id \
              WHERE p.brand_id = ?1 AND p.deleted_at IS NULL AND a.deleted_at IS NULL)",
    )
    .bind(brand_id)
    .fetch_one(ex)
    .await?;
    Ok(ChildCounts {
        products,
        product_variants,
        audiences,
    })
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
    let mut tx = state.db.begin_write().await?;
    load(&mut *tx, &caller.org_id, &id).await?;
    let children = brand_children(&mut tx, &id).await?;
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
    for sql in [
        "UPDATE product_variants SET deleted_at = ?1 WHERE deleted_at IS NULL AND product_id IN \
           (SELECT id FROM products WHERE brand_id = ?2 AND deleted_at IS NULL)",
        "UPDATE audiences SET deleted_at = ?1 WHERE deleted_at IS NULL AND product_id IN \
           (SELECT id FROM products WHERE brand_id = ?2 AND deleted_at IS NULL)",
        "UPDATE products SET deleted_at = ?1 WHERE brand_id = ?2 AND deleted_at IS NULL",
        "UPDATE brands SET deleted_at = ?1 WHERE id = ?2",
    ] {
        crate::store::query(sql)
            .bind(&now)
            .bind(&id)
            .execute(&mut *tx)
            .await?;
    }
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
    let mut tx = db.begin_write().await?;
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
    insert(&mut tx, org_id, &copy).await?;
    let mut counts = DuplicateCounts::default();
    if cascade {
        let product_ids: Vec<String> = crate::store::query_scalar(
            "SELECT id FROM products WHERE brand_id = ? AND org_id = ? AND deleted_at IS NULL AND archived_at IS NULL ORDER BY seq",
        )
        .bind(id)
        .bind(org_id)
        .fetch_all(&mut *tx)
        .await?;
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
