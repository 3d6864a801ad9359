//! Every SQL statement of `/v1/events`, as functions named for what they do. The handlers
//! in [`super`] parse, call these and respond; they hold no SQL. Functions that take
//! `&mut AnyConnection` run inside the caller's transaction (a [`WriteTx`] derefs to one),
//! so the caller keeps its transaction boundaries. A redelivery's rows are written by
//! `crate::webhooks::insert_delivery`.
//!
//! The texts are the portable subset both engines share (see [`crate::store`]).
//!
//! [`WriteTx`]: crate::store::WriteTx

use serde_json::Value;
use sqlx::{AnyConnection, FromRow};

use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::http::envelope::Page;
use crate::resources::webhook_endpoints::{DELIVERY_COLUMNS, DeliveryRow};
use crate::store::Db;
use crate::store::list::{Bind, Condition, ListParams, ListQuery};

/// An event as lists read it: its payload, exactly as delivered.
#[derive(FromRow)]
pub(super) struct EventRow {
    payload: String,
}

impl EventRow {
    /// The payload as JSON.
    pub(super) fn into_value(self) -> Value {
        serde_json::from_str(&self.payload).unwrap_or(Value::Null)
    }
}

/// Event `id` of `org_id`: (payload, type, object id).
///
/// # Errors
/// EVENT_NOT_FOUND; database failures.
pub(super) async fn load<'e, E: sqlx::AnyExecutor<'e>>(
    ex: E,
    org_id: &str,
    id: &str,
) -> ApiResult<(String, String, String)> {
    crate::store::query_as::<(String, String, String)>(
        "SELECT payload, type, object_id FROM events WHERE id = ? AND org_id = ?",
    )
    .bind(id)
    .bind(org_id)
    .fetch_optional(ex)
    .await?
    .ok_or_else(|| ApiError::not_found(ErrorCode::EventNotFound, "event", id))
}

/// The filters of GET /v1/events, parsed and checked by the handler.
#[derive(Default)]
pub(super) struct ListFilter {
    pub types: Option<Vec<String>>,
    pub object_id: Option<String>,
    /// A stored-form timestamp: only events created strictly after it.
    pub created_after: Option<String>,
}

/// One page of `org_id`'s events matching `filter`, newest first.
///
/// # Errors
/// VALIDATION_ERROR for a bad cursor; database failures.
pub(super) async fn list(
    db: &Db,
    org_id: &str,
    filter: ListFilter,
    p: &ListParams,
) -> ApiResult<Page<EventRow>> {
    let mut conditions = Vec::new();
    if let Some(types) = &filter.types {
        conditions.push(Condition::any_of(None, "t.type", types));
    }
    if let Some(o) = filter.object_id {
        conditions.push(Condition::new("t.object_id = ?", vec![Bind::Text(o)]));
    }
    if let Some(after) = filter.created_after {
        conditions.push(Condition::new("t.created_at > ?", vec![Bind::Text(after)]));
    }
    ListQuery {
        table: "events",
        columns: "t.payload",
        joins: "",
        org_id,
        conditions,
        facet_columns: &[],
    }
    .fetch::<EventRow>(db, p)
    .await
}

/// Whether the live webhook endpoint `id` of `org_id` is enabled; `None` when there is
/// no such endpoint.
///
/// # Errors
/// Database failures.
pub(super) async fn endpoint_enabled(
    conn: &mut AnyConnection,
    org_id: &str,
    id: &str,
) -> ApiResult<Option<bool>> {
    let enabled: Option<crate::store::Flag> = crate::store::query_scalar(
        "SELECT enabled FROM webhook_endpoints WHERE id = ? AND org_id = ? AND deleted_at IS NULL",
    )
    .bind(id)
    .bind(org_id)
    .fetch_optional(conn)
    .await?;
    Ok(enabled.map(|f| f.0))
}

/// Delivery `id`, read inside the caller's transaction.
///
/// # Errors
/// Database failures (also when there is no such delivery).
pub(super) async fn delivery(conn: &mut AnyConnection, id: &str) -> ApiResult<DeliveryRow> {
    Ok(crate::store::query_as(&format!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries AS t WHERE t.id = ?"
    ))
    .bind(id)
    .fetch_one(conn)
    .await?)
}
