//! Every SQL statement of `/v1/audiences`, as functions named for what they do. The
//! handlers in [`super`] parse, call these and respond; they hold no SQL. Functions that
//! take `&mut AnyConnection` run inside the caller's transaction (a [`WriteTx`] derefs to
//! one), so the caller keeps its transaction boundaries. Reading one audience and the soft
//! delete go through the shared [`Table`] helpers.
//!
//! The texts are the portable subset both engines share (see [`crate::store`]).
//!
//! [`WriteTx`]: crate::store::WriteTx

use sqlx::AnyConnection;

use super::Audience;
use crate::error::{ApiResult, ErrorCode};
use crate::http::envelope::Page;
use crate::resources::common::Table;
use crate::store::list::{Condition, ListParams, ListQuery};
use crate::store::{Db, to_json_text};

const COLUMNS: &str = "t.id, t.product_id, t.name, t.description, t.details, t.duplicated_from_id, t.archived_at, \
                       t.created_at, t.updated_at";

const TABLE: Table = Table {
    name: "audiences",
    columns: COLUMNS,
    not_found: ErrorCode::AudienceNotFound,
    kind: "audience",
};

/// Loads a live audience.
///
/// # Errors
/// 404 AUDIENCE_NOT_FOUND.
pub async fn load<'e, E: sqlx::AnyExecutor<'e>>(
    ex: E,
    org_id: &str,
    id: &str,
) -> ApiResult<Audience> {
    TABLE.load(ex, org_id, id).await
}

/// [`load`] on a held read connection (`GET /v1/audiences/{id}`).
///
/// # Errors
/// As [`load`].
pub async fn read(db: &Db, org_id: &str, id: &str) -> ApiResult<Audience> {
    TABLE.read(db, org_id, id).await
}

/// The active audiences of a product, oldest first.
pub async fn active_of_product(
    ex: &mut sqlx::AnyConnection,
    product_id: &str,
) -> ApiResult<Vec<Audience>> {
    Ok(crate::store::query_as::<Audience>(&format!(
        "SELECT {COLUMNS} FROM audiences AS t WHERE t.product_id = ? AND t.deleted_at IS NULL \
         AND t.archived_at IS NULL ORDER BY t.seq"
    ))
    .bind(product_id)
    .fetch_all(ex)
    .await?)
}

/// Inserts audience `a` of `org_id` as it is (ids and timestamps included).
///
/// # Errors
/// Database failures.
pub(super) async fn insert(tx: &mut AnyConnection, org_id: &str, a: &Audience) -> ApiResult<()> {
    crate::store::query(
        "INSERT INTO audiences (id, org_id, product_id, name, search_name, description, details, duplicated_from_id, \
         archived_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&a.id)
    .bind(org_id)
    .bind(&a.product_id)
    .bind(&a.name)
    .bind(a.name.to_lowercase())
    .bind(&a.description)
    .bind(a.details.as_ref().map(to_json_text))
    .bind(&a.duplicated_from_id)
    .bind(&a.archived_at)
    .bind(&a.created_at)
    .bind(&a.updated_at)
    .execute(tx)
    .await?;
    Ok(())
}

/// One page of `org_id`'s audiences, newest first: `archived` is the archived filter's
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
) -> ApiResult<Page<Audience>> {
    let mut conditions = vec![archived];
    if let Some(ids) = product_ids {
        conditions.push(Condition::any_of(None, "t.product_id", ids));
    }
    ListQuery {
        table: "audiences",
        columns: COLUMNS,
        joins: "",
        org_id,
        conditions,
        facet_columns: &[],
    }
    .fetch::<Audience>(db, p)
    .await
}

/// Writes audience `a`'s name, description, details and `updated_at`.
///
/// # Errors
/// Database failures.
pub(super) async fn update(conn: &mut AnyConnection, org_id: &str, a: &Audience) -> ApiResult<()> {
    crate::store::query("UPDATE audiences SET name = ?, search_name = ?, description = ?, details = ?, updated_at = ? WHERE id = ? AND org_id = ?")
        .bind(&a.name)
        .bind(a.name.to_lowercase())
        .bind(&a.description)
        .bind(a.details.as_ref().map(to_json_text))
        .bind(&a.updated_at)
        .bind(&a.id)
        .bind(org_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Soft-deletes the live audience `id` of `org_id`.
///
/// # Errors
/// AUDIENCE_NOT_FOUND; database failures.
pub(super) async fn soft_delete(db: &Db, org_id: &str, id: &str) -> ApiResult<()> {
    TABLE.soft_delete(db, org_id, id).await
}
