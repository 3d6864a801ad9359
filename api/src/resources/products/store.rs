//! Every SQL statement of `/v1/products`, as functions named for what they do. The
//! handlers in [`super`] parse, call these and respond; they hold no SQL. Functions that
//! take `&mut AnyConnection` run inside the caller's transaction (a [`WriteTx`] derefs to
//! one), so the caller keeps its transaction boundaries. Reading one product goes through
//! the shared [`Table`] loader.
//!
//! The texts are the portable subset both engines share (see [`crate::store`]).
//!
//! [`WriteTx`]: crate::store::WriteTx

use sqlx::AnyConnection;

use super::Product;
use crate::error::{ApiResult, ChildCounts, ErrorCode};
use crate::http::envelope::Page;
use crate::resources::common::Table;
use crate::store::list::{Condition, ListParams, ListQuery};
use crate::store::{Db, to_json_text};

pub const COLUMNS: &str = "t.id, t.brand_id, t.name, t.description, t.details, t.duplicated_from_id, \
                           t.archived_at, t.created_at, t.updated_at";

const TABLE: Table = Table {
    name: "products",
    columns: COLUMNS,
    not_found: ErrorCode::ProductNotFound,
    kind: "product",
};

/// Loads a live product (archived ones included).
///
/// # Errors
/// 404 PRODUCT_NOT_FOUND.
pub async fn load<'e, E: sqlx::AnyExecutor<'e>>(
    ex: E,
    org_id: &str,
    id: &str,
) -> ApiResult<Product> {
    TABLE.load(ex, org_id, id).await
}

/// [`load`] on a held read connection (`GET /v1/products/{id}`).
///
/// # Errors
/// As [`load`].
pub async fn read(db: &Db, org_id: &str, id: &str) -> ApiResult<Product> {
    TABLE.read(db, org_id, id).await
}

/// Inserts product `p` of `org_id` as it is (ids and timestamps included).
///
/// # Errors
/// Database failures.
pub(super) async fn insert(tx: &mut AnyConnection, org_id: &str, p: &Product) -> ApiResult<()> {
    crate::store::query(
        "INSERT INTO products (id, org_id, brand_id, name, search_name, description, details, duplicated_from_id, \
         archived_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&p.id)
    .bind(org_id)
    .bind(&p.brand_id)
    .bind(&p.name)
    .bind(p.name.to_lowercase())
    .bind(&p.description)
    .bind(p.details.as_ref().map(to_json_text))
    .bind(&p.duplicated_from_id)
    .bind(&p.archived_at)
    .bind(&p.created_at)
    .bind(&p.updated_at)
    .execute(tx)
    .await?;
    Ok(())
}

/// One page of `org_id`'s products, newest first: `archived` is the archived filter's
/// condition; `brand_ids`, when given, the brands to list.
///
/// # Errors
/// VALIDATION_ERROR for a bad cursor; database failures.
pub(super) async fn list(
    db: &Db,
    org_id: &str,
    archived: bool,
    brand_ids: Option<&[String]>,
    p: &ListParams,
) -> ApiResult<Page<Product>> {
    let mut conditions = vec![crate::resources::common::archived(archived)];
    if let Some(ids) = brand_ids {
        conditions.push(Condition::any_of(None, "t.brand_id", ids));
    }
    ListQuery {
        table: "products",
        columns: COLUMNS,
        joins: "",
        org_id,
        conditions,
        facet_columns: &[],
    }
    .fetch::<Product>(db, p)
    .await
}

/// Writes product `p`'s name, description, details and `updated_at`.
///
/// # Errors
/// Database failures.
pub(super) async fn update(conn: &mut AnyConnection, org_id: &str, p: &Product) -> ApiResult<()> {
    crate::store::query("UPDATE products SET name = ?, search_name = ?, description = ?, details = ?, updated_at = ? WHERE id = ? AND org_id = ?")
        .bind(&p.name)
        .bind(p.name.to_lowercase())
        .bind(&p.description)
        .bind(p.details.as_ref().map(to_json_text))
        .bind(&p.updated_at)
        .bind(&p.id)
        .bind(org_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Counts a product's live variants and audiences; `only_active` leaves archived ones out.
pub(super) async fn children(
    ex: &mut AnyConnection,
    product_id: &str,
    only_active: bool,
) -> ApiResult<ChildCounts> {
    let extra = if only_active {
        " AND archived_at IS NULL"
    } else {
        ""
    };
    let (product_variants, audiences): (i64, i64) = crate::store::query_as(&format!(
        "SELECT (SELECT COUNT(*) FROM product_variants WHERE product_id = ?1 AND deleted_at IS NULL{extra}), \
                (SELECT COUNT(*) FROM audiences WHERE product_id = ?1 AND deleted_at IS NULL{extra})"
    ))
    .bind(product_id)
    .fetch_one(ex)
    .await?;
    Ok(ChildCounts {
        products: 0,
        product_variants,
        audiences,
    })
}

/// Soft-deletes product `id` with its live variants and audiences (`deleted_at` = `now`).
///
/// # Errors
/// Database failures.
pub(super) async fn delete_with_children(
    conn: &mut AnyConnection,
    id: &str,
    now: &str,
) -> ApiResult<()> {
    for sql in [
        "UPDATE product_variants SET deleted_at = ?1 WHERE product_id = ?2 AND deleted_at IS NULL",
        "UPDATE audiences SET deleted_at = ?1 WHERE product_id = ?2 AND deleted_at IS NULL",
        "UPDATE products SET deleted_at = ?1 WHERE id = ?2",
    ] {
        crate::store::query(sql)
            .bind(now)
            .bind(id)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// Archives product `id` with its active variants and audiences (`archived_at` = `now`);
/// returns how many variants and audiences it archived.
///
/// # Errors
/// Database failures.
pub(super) async fn archive_with_children(
    conn: &mut AnyConnection,
    id: &str,
    now: &str,
) -> ApiResult<ChildCounts> {
    let v = crate::store::query("UPDATE product_variants SET archived_at = ? WHERE product_id = ? AND deleted_at IS NULL AND archived_at IS NULL")
            .bind(now)
            .bind(id)
            .execute(&mut *conn)
            .await?;
    let a = crate::store::query("UPDATE audiences SET archived_at = ? WHERE product_id = ? AND deleted_at IS NULL AND archived_at IS NULL")
            .bind(now)
            .bind(id)
            .execute(&mut *conn)
            .await?;
    crate::store::query("UPDATE products SET archived_at = ?, updated_at = ? WHERE id = ?")
        .bind(now)
        .bind(now)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    Ok(ChildCounts {
        products: 0,
        product_variants: v.rows_affected() as i64,
        audiences: a.rows_affected() as i64,
    })
}

/// Restores product `id` with the variants and audiences archived with it (those whose
/// `archived_at` is the product's, `at`); returns how many variants and audiences it
/// restored.
///
/// # Errors
/// Database failures.
pub(super) async fn unarchive_with_children(
    conn: &mut AnyConnection,
    id: &str,
    at: &str,
    now: &str,
) -> ApiResult<ChildCounts> {
    let v = crate::store::query(
        "UPDATE product_variants SET archived_at = NULL WHERE product_id = ? AND archived_at = ?",
    )
    .bind(id)
    .bind(at)
    .execute(&mut *conn)
    .await?;
    let a = crate::store::query(
        "UPDATE audiences SET archived_at = NULL WHERE product_id = ? AND archived_at = ?",
    )
    .bind(id)
    .bind(at)
    .execute(&mut *conn)
    .await?;
    crate::store::query("UPDATE products SET archived_at = NULL, updated_at = ? WHERE id = ?")
        .bind(now)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    Ok(ChildCounts {
        products: 0,
        product_variants: v.rows_affected() as i64,
        audiences: a.rows_affected() as i64,
    })
}
