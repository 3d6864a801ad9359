//! Every SQL statement of `/v1/product-variants`, as functions named for what they do.
//! The handlers in [`super`] parse, call these and respond; they hold no SQL. Functions
//! that take `&mut AnyConnection` run inside the caller's transaction (a [`WriteTx`] derefs
//! to one), so the caller keeps its transaction boundaries. Reading one variant and the
//! soft delete go through the shared [`Table`] helpers.
//!
//! The texts are the portable subset both engines share (see [`crate::store`]).
//!
//! [`WriteTx`]: crate::store::WriteTx

use sqlx::AnyConnection;

use super::ProductVariant;
use crate::error::{ApiResult, ErrorCode};
use crate::http::envelope::Page;
use crate::resources::common::Table;
use crate::store::list::{Condition, ListParams, ListQuery};
use crate::store::{Db, to_json_text};

const COLUMNS: &str = "t.id, t.product_id, t.name, t.description, t.sku, t.price, t.compare_at_price, t.attributes, t.image_ids, \
                       t.duplicated_from_id, t.archived_at, t.created_at, t.updated_at";

const TABLE: Table = Table {
    name: "product_variants",
    columns: COLUMNS,
    not_found: ErrorCode::ProductVariantNotFound,
    kind: "product variant",
};

/// Loads a live variant.
///
/// # Errors
/// 404 PRODUCT_VARIANT_NOT_FOUND.
pub async fn load<'e, E: sqlx::AnyExecutor<'e>>(
    ex: E,
    org_id: &str,
    id: &str,
) -> ApiResult<ProductVariant> {
    TABLE.load(ex, org_id, id).await
}

/// [`load`] on a held read connection (`GET /v1/variants/{id}`).
///
/// # Errors
/// As [`load`].
pub async fn read(db: &Db, org_id: &str, id: &str) -> ApiResult<ProductVariant> {
    TABLE.read(db, org_id, id).await
}

/// The active (not archived, not deleted) variants of a product, oldest first.
pub async fn active_of_product(
    ex: &mut sqlx::AnyConnection,
    product_id: &str,
) -> ApiResult<Vec<ProductVariant>> {
    Ok(crate::store::query_as::<ProductVariant>(&format!(
        "SELECT {COLUMNS} FROM product_variants AS t WHERE t.product_id = ? AND t.deleted_at IS NULL \
         AND t.archived_at IS NULL ORDER BY t.seq"
    ))
    .bind(product_id)
    .fetch_all(ex)
    .await?)
}

/// Inserts variant `v` of `org_id` as it is (ids and timestamps included).
///
/// # Errors
/// Database failures.
pub(super) async fn insert(
    tx: &mut AnyConnection,
    org_id: &str,
    v: &ProductVariant,
) -> ApiResult<()> {
    crate::store::query(
        "INSERT INTO product_variants (id, org_id, product_id, name, search_name, description, sku, price, compare_at_price, \
         attributes, image_ids, duplicated_from_id, archived_at, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&v.id)
    .bind(org_id)
    .bind(&v.product_id)
    .bind(&v.name)
    .bind(v.name.to_lowercase())
    .bind(&v.description)
    .bind(&v.sku)
    .bind(v.price.as_ref().map(to_json_text))
    .bind(v.compare_at_price.as_ref().map(to_json_text))
    .bind(v.attributes.as_ref().map(to_json_text))
    .bind(to_json_text(&v.image_ids))
    .bind(&v.duplicated_from_id)
    .bind(&v.archived_at)
    .bind(&v.created_at)
    .bind(&v.updated_at)
    .execute(tx)
    .await?;
    Ok(())
}

/// The live variant of `product_id` other than `except` that has SKU `sku`, if any.
///
/// # Errors
/// Database failures.
pub(super) async fn sku_holder(
    conn: &mut AnyConnection,
    product_id: &str,
    sku: &str,
    except: Option<&str>,
) -> ApiResult<Option<String>> {
    Ok(crate::store::query_scalar(
        "SELECT id FROM product_variants WHERE product_id = ? AND sku = ? AND deleted_at IS NULL AND id != ?",
    )
    .bind(product_id)
    .bind(sku)
    .bind(except.unwrap_or(""))
    .fetch_optional(conn)
    .await?)
}

/// One page of `org_id`'s variants, newest first: `archived` is the archived filter's
/// condition; `product_ids`, when given, the products to list.
///
/// # Errors
/// VALIDATION_ERROR for a bad cursor; database failures.
pub(super) async fn list(
    db: &Db,
    org_id: &str,
    archived: Condition,
    product_ids: Option<&[String]>,
    p: &ListParams,
) -> ApiResult<Page<ProductVariant>> {
    let mut conditions = vec![archived];
    if let Some(ids) = product_ids {
        conditions.push(Condition::any_of(None, "t.product_id", ids));
    }
    ListQuery {
        table: "product_variants",
        columns: COLUMNS,
        joins: "",
        org_id,
        conditions,
        facet_columns: &[],
    }
    .fetch::<ProductVariant>(db, p)
    .await
}

/// Writes variant `v`'s fields (all but ids, product and `created_at`).
///
/// # Errors
/// Database failures.
pub(super) async fn update(
    conn: &mut AnyConnection,
    org_id: &str,
    v: &ProductVariant,
) -> ApiResult<()> {
    crate::store::query(
        "UPDATE product_variants SET name = ?, search_name = ?, description = ?, sku = ?, price = ?, compare_at_price = ?, \
         attributes = ?, image_ids = ?, updated_at = ? WHERE id = ? AND org_id = ?",
    )
    .bind(&v.name)
    .bind(v.name.to_lowercase())
    .bind(&v.description)
    .bind(&v.sku)
    .bind(v.price.as_ref().map(to_json_text))
    .bind(v.compare_at_price.as_ref().map(to_json_text))
    .bind(v.attributes.as_ref().map(to_json_text))
    .bind(to_json_text(&v.image_ids))
    .bind(&v.updated_at)
    .bind(&v.id)
    .bind(org_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Soft-deletes the live variant `id` of `org_id`.
///
/// # Errors
/// PRODUCT_VARIANT_NOT_FOUND; database failures.
pub(super) async fn soft_delete(db: &Db, org_id: &str, id: &str) -> ApiResult<()> {
    TABLE.soft_delete(db, org_id, id).await
}
