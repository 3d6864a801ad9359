//! Every SQL statement of `/v1/brands`, as functions named for what they do. The
//! handlers in [`super`] parse, call these and respond; they hold no SQL. Functions that
//! take `&mut AnyConnection` run inside the caller's transaction (a [`WriteTx`] derefs to
//! one), so the caller keeps its transaction boundaries. Reading one brand goes through the
//! shared [`Table`] loader.
//!
//! The texts are the portable subset both engines share (see [`crate::store`]).
//!
//! [`WriteTx`]: crate::store::WriteTx

use sqlx::AnyConnection;

use super::Brand;
use crate::error::{ApiResult, ChildCounts, ErrorCode};
use crate::http::envelope::Page;
use crate::resources::common::Table;
use crate::store::list::{ListParams, ListQuery};
use crate::store::{Db, to_json_text};

const COLUMNS: &str = "t.id, t.name, t.description, t.color_palettes, t.fonts, t.logo_image_ids, t.details, \
                       t.duplicated_from_id, t.created_at, t.updated_at";

const TABLE: Table = Table {
    name: "brands",
    columns: COLUMNS,
    not_found: ErrorCode::BrandNotFound,
    kind: "brand",
};

/// Loads a live brand of the organisation.
///
/// # Errors
/// 404 BRAND_NOT_FOUND.
pub async fn load<'e, E: sqlx::AnyExecutor<'e>>(ex: E, org_id: &str, id: &str) -> ApiResult<Brand> {
    TABLE.load(ex, org_id, id).await
}

/// [`load`] for `GET /v1/brands/{id}`, on a held read connection.
///
/// # Errors
/// As [`load`].
pub async fn read(db: &Db, org_id: &str, id: &str) -> ApiResult<Brand> {
    TABLE.read(db, org_id, id).await
}

/// Inserts brand `b` of `org_id` as it is (ids and timestamps included).
///
/// # Errors
/// Database failures.
pub(super) async fn insert(tx: &mut AnyConnection, org_id: &str, b: &Brand) -> ApiResult<()> {
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

/// One page of `org_id`'s brands, newest first.
///
/// # Errors
/// VALIDATION_ERROR for a bad cursor; database failures.
pub(super) async fn list(db: &Db, org_id: &str, p: &ListParams) -> ApiResult<Page<Brand>> {
    ListQuery {
        table: "brands",
        columns: COLUMNS,
        joins: "",
        org_id,
        conditions: vec![],
        facet_columns: &[],
    }
    .fetch::<Brand>(db, p)
    .await
}

/// Writes brand `b`'s fields (all but ids and `created_at`).
///
/// # Errors
/// Database failures.
pub(super) async fn update(conn: &mut AnyConnection, org_id: &str, b: &Brand) -> ApiResult<()> {
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
    .execute(conn)
    .await?;
    Ok(())
}

/// Counts the live products, variants and audiences under a brand.
pub(super) async fn children(ex: &mut AnyConnection, brand_id: &str) -> ApiResult<ChildCounts> {
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

/// Soft-deletes brand `id` with its live products and their variants and audiences
/// (`deleted_at` = `now`).
///
/// # Errors
/// Database failures.
pub(super) async fn delete_with_children(
    conn: &mut AnyConnection,
    id: &str,
    now: &str,
) -> ApiResult<()> {
    for sql in [
        "UPDATE product_variants SET deleted_at = ?1 WHERE deleted_at IS NULL AND product_id IN \
           (SELECT id FROM products WHERE brand_id = ?2 AND deleted_at IS NULL)",
        "UPDATE audiences SET deleted_at = ?1 WHERE deleted_at IS NULL AND product_id IN \
           (SELECT id FROM products WHERE brand_id = ?2 AND deleted_at IS NULL)",
        "UPDATE products SET deleted_at = ?1 WHERE brand_id = ?2 AND deleted_at IS NULL",
        "UPDATE brands SET deleted_at = ?1 WHERE id = ?2",
    ] {
        crate::store::query(sql)
            .bind(now)
            .bind(id)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// The active (live, not archived) products of brand `id`, oldest first.
///
/// # Errors
/// Database failures.
pub(super) async fn active_product_ids(
    conn: &mut AnyConnection,
    org_id: &str,
    id: &str,
) -> ApiResult<Vec<String>> {
    Ok(crate::store::query_scalar(
        "SELECT id FROM products WHERE brand_id = ? AND org_id = ? AND deleted_at IS NULL AND archived_at IS NULL ORDER BY seq",
    )
    .bind(id)
    .bind(org_id)
    .fetch_all(conn)
    .await?)
}
