//! Every SQL statement of `/v1/webhook-endpoints`, as functions named for what they do.
//! The handlers in [`super`] parse, call these and respond; they hold no SQL. Functions
//! that take `&mut AnyConnection` run inside the caller's transaction (a [`WriteTx`] derefs
//! to one), so the caller keeps its transaction boundaries. Delivery itself (claims,
//! attempts, retries) is `crate::webhooks`'s.
//!
//! The texts are the portable subset both engines share (see [`crate::store`]).
//!
//! [`WriteTx`]: crate::store::WriteTx

use sqlx::{AnyConnection, FromRow};

use super::{WebhookDelivery, WebhookEndpoint};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::http::envelope::Page;
use crate::store::Db;
use crate::store::list::{Bind, Condition, ListParams, ListQuery};

/// A row of `webhook_endpoints` as every read selects it ([`COLUMNS`]).
#[derive(FromRow)]
pub(super) struct EndpointRow {
    pub id: String,
    pub url: String,
    pub description: Option<String>,
    pub events: String,
    #[sqlx(try_from = "crate::store::Flag")]
    pub enabled: bool,
    pub disabled_reason: Option<String>,
    pub previous_secret_expires_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

const COLUMNS: &str = "t.id, t.url, t.description, t.events, t.enabled, t.disabled_reason, \
    t.previous_secret_expires_at, t.created_at, t.updated_at";

impl EndpointRow {
    /// The endpoint as the API shows it; `secret` only when just made.
    pub(super) fn into_endpoint(self, secret: Option<String>) -> WebhookEndpoint {
        let now = crate::timestamp::now();
        WebhookEndpoint {
            events: serde_json::from_str(&self.events).unwrap_or_default(),
            previous_secret_expires_at: self
                .previous_secret_expires_at
                .filter(|t| t.as_str() > now.as_str()),
            id: self.id,
            url: self.url,
            description: self.description,
            enabled: self.enabled,
            disabled_reason: self.disabled_reason,
            secret,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// Loads a live endpoint of the organisation.
///
/// # Errors
/// 404 WEBHOOK_ENDPOINT_NOT_FOUND.
pub(super) async fn load<'e, E: sqlx::AnyExecutor<'e>>(
    ex: E,
    org_id: &str,
    id: &str,
) -> ApiResult<EndpointRow> {
    crate::store::query_as::<EndpointRow>(&format!(
        "SELECT {COLUMNS} FROM webhook_endpoints AS t WHERE t.id = ? AND t.org_id = ? AND t.deleted_at IS NULL"
    ))
    .bind(id)
    .bind(org_id)
    .fetch_optional(ex)
    .await?
    .ok_or_else(|| not_found(id))
}

/// 404 WEBHOOK_ENDPOINT_NOT_FOUND for `id`.
fn not_found(id: &str) -> ApiError {
    ApiError::not_found(ErrorCode::WebhookEndpointNotFound, "webhook endpoint", id)
}

/// How many live endpoints `org_id` has.
///
/// # Errors
/// Database failures.
pub(super) async fn count_live(conn: &mut AnyConnection, org_id: &str) -> ApiResult<i64> {
    Ok(crate::store::query_scalar(
        "SELECT COUNT(*) FROM webhook_endpoints WHERE org_id = ? AND deleted_at IS NULL",
    )
    .bind(org_id)
    .fetch_one(conn)
    .await?)
}

/// A new endpoint, enabled.
pub(super) struct NewEndpoint<'a> {
    pub id: &'a str,
    pub org_id: &'a str,
    pub url: &'a str,
    pub description: Option<&'a str>,
    pub events: &'a [String],
    pub secret: &'a str,
    pub now: &'a str,
}

/// Inserts a new, enabled endpoint.
///
/// # Errors
/// Database failures.
pub(super) async fn insert(conn: &mut AnyConnection, e: &NewEndpoint<'_>) -> ApiResult<()> {
    crate::store::query(
        "INSERT INTO webhook_endpoints (id, org_id, url, description, events, enabled, secret, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?)",
    )
    .bind(e.id)
    .bind(e.org_id)
    .bind(e.url)
    .bind(e.description)
    .bind(crate::store::to_json_text(&e.events))
    .bind(e.secret)
    .bind(e.now)
    .bind(e.now)
    .execute(conn)
    .await?;
    Ok(())
}

/// One page of `org_id`'s endpoints, newest first.
///
/// # Errors
/// VALIDATION_ERROR for a bad cursor; database failures.
pub(super) async fn list(db: &Db, org_id: &str, p: &ListParams) -> ApiResult<Page<EndpointRow>> {
    ListQuery {
        table: "webhook_endpoints",
        columns: COLUMNS,
        joins: "",
        org_id,
        conditions: Vec::new(),
        facet_columns: &[],
    }
    .fetch::<EndpointRow>(db, p)
    .await
}

/// Writes endpoint `row`'s url, events, description, enabled flag, disabled reason and
/// `updated_at`; `reenabled` also forgets since when it was failing.
///
/// # Errors
/// Database failures.
pub(super) async fn update(
    conn: &mut AnyConnection,
    org_id: &str,
    row: &EndpointRow,
    reenabled: bool,
) -> ApiResult<()> {
    crate::store::query(
        "UPDATE webhook_endpoints SET url = ?, events = ?, description = ?, enabled = ?, disabled_reason = ?, \
         failing_since = CASE WHEN ? THEN NULL ELSE failing_since END, updated_at = ? WHERE id = ? AND org_id = ?",
    )
    .bind(&row.url)
    .bind(&row.events)
    .bind(&row.description)
    .bind(i64::from(row.enabled))
    .bind(&row.disabled_reason)
    .bind(reenabled)
    .bind(&row.updated_at)
    .bind(&row.id)
    .bind(org_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Soft-deletes endpoint `id` (disabled) and ends its pending deliveries that no sender
/// holds `failed`.
///
/// # Errors
/// Database failures.
pub(super) async fn delete(conn: &mut AnyConnection, id: &str, now: &str) -> ApiResult<()> {
    crate::store::query("UPDATE webhook_endpoints SET deleted_at = ?, enabled = 0 WHERE id = ?")
        .bind(now)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    crate::store::query(
        "UPDATE webhook_deliveries SET state = 'failed', next_attempt_ms = NULL, \
         last_error = coalesce(last_error, 'the endpoint was deleted') WHERE endpoint_id = ? AND state = 'pending' \
         AND lease_until_ms IS NULL",
    )
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Makes `secret` endpoint `id`'s signing secret; the current one becomes the previous
/// secret, which keeps signing until `until`.
///
/// # Errors
/// Database failures.
pub(super) async fn rotate_secret(
    conn: &mut AnyConnection,
    id: &str,
    secret: &str,
    until: &str,
    now: &str,
) -> ApiResult<()> {
    crate::store::query(
        "UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at = ?, secret = ?, \
         updated_at = ? WHERE id = ?",
    )
    .bind(until)
    .bind(secret)
    .bind(now)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// A row of `webhook_deliveries` as every read selects it ([`DELIVERY_COLUMNS`]); the
/// events API lists deliveries with it too.
#[derive(FromRow)]
pub(crate) struct DeliveryRow {
    id: String,
    event_id: String,
    event_type: String,
    endpoint_id: String,
    state: String,
    attempts: i64,
    last_status: Option<i64>,
    last_error: Option<String>,
    latency_ms: Option<i64>,
    next_attempt_ms: Option<i64>,
    last_attempt_at: Option<String>,
    delivered_at: Option<String>,
    created_at: String,
}

pub(crate) const DELIVERY_COLUMNS: &str = "t.id, t.event_id, t.event_type, t.endpoint_id, t.state, t.attempts, \
    t.last_status, t.last_error, t.latency_ms, t.next_attempt_ms, t.last_attempt_at, t.delivered_at, t.created_at";

impl DeliveryRow {
    /// The delivery as the API shows it.
    pub(crate) fn into_delivery(self) -> WebhookDelivery {
        WebhookDelivery {
            next_attempt_at: self
                .next_attempt_ms
                .filter(|_| self.state == "pending")
                .map(crate::webhooks::deliver::format_ms),
            id: self.id,
            event_id: self.event_id,
            event_type: self.event_type,
            endpoint_id: self.endpoint_id,
            state: self.state,
            attempts: self.attempts,
            last_status_code: self.last_status,
            last_error: self.last_error,
            latency_ms: self.latency_ms,
            last_attempt_at: self.last_attempt_at,
            delivered_at: self.delivered_at,
            created_at: self.created_at,
        }
    }
}

/// The filters of an endpoint's delivery list, parsed and checked by the handler.
pub(super) struct DeliveryFilter {
    pub endpoint_id: String,
    pub state: Option<Vec<String>>,
    pub event_id: Option<String>,
}

/// One page of `org_id`'s deliveries matching `filter`, newest first.
///
/// # Errors
/// VALIDATION_ERROR for a bad cursor; database failures.
pub(super) async fn list_deliveries(
    db: &Db,
    org_id: &str,
    filter: DeliveryFilter,
    p: &ListParams,
) -> ApiResult<Page<DeliveryRow>> {
    let mut conditions = vec![Condition::new(
        "t.endpoint_id = ?",
        vec![Bind::Text(filter.endpoint_id)],
    )];
    if let Some(values) = &filter.state {
        conditions.push(Condition::any_of(None, "t.state", values));
    }
    if let Some(e) = filter.event_id {
        conditions.push(Condition::new("t.event_id = ?", vec![Bind::Text(e)]));
    }
    ListQuery {
        table: "webhook_deliveries",
        columns: DELIVERY_COLUMNS,
        joins: "",
        org_id,
        conditions,
        facet_columns: &[],
    }
    .fetch::<DeliveryRow>(db, p)
    .await
}
