//! `/v1/events`: every event of the organisation, so a client that was down can catch up
//! by listing what it missed, and redelivery of one event.
//!
//! Where things live: this module holds the routes, the request types and the handlers
//! (parse → domain call → respond); [`store`] holds every SQL statement of the resource.

mod store;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::IdPath;
use super::webhook_endpoints::WebhookDelivery;
use crate::auth::{Auth, Scope};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::http::envelope::{self, Envelope, ListEnvelope, Meta};
use crate::http::extract::QueryParams;
use crate::state::AppState;
use crate::store::list::ListParams;
use crate::webhooks::{EVENT_TYPES, Event};
use store::EventRow;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_events))
        .routes(routes!(get_event))
        .routes(routes!(redeliver))
}

/// List events
///
/// Newest first, kept indefinitely. To catch up after downtime, page from the newest until
/// an event already processed (or use `created_after`), then process in reverse.
#[utoipa::path(get, path = "/v1/events", tag = "webhooks",
    params(
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1-100, default 20"),
        ("starting_after" = Option<String>, Query, description = "Id of the last event already received"),
        ("type" = Option<String>, Query, description = "Comma-separated event types"),
        ("object_id" = Option<String>, Query, description = "Only events about this resource (e.g. an ia_… id)"),
        ("created_after" = Option<String>, Query, description = "ISO 8601 timestamp: only events created strictly after it"),
    ),
    responses(
        (status = 200, description = "A page of events", body = ListEnvelope<Event>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["webhooks:read"])))]
async fn list_events(
    axum::extract::State(state): axum::extract::State<AppState>,
    Auth(caller): Auth,
    mut q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::WebhooksRead)?;
    let p = ListParams::parse(&mut q, false, &[]);
    let mut filter = store::ListFilter::default();
    if let Some(types) = q.csv("type") {
        for t in &types {
            if !EVENT_TYPES.contains(&t.as_str()) {
                q.error(
                    "type",
                    format!(
                        "`{t}` is not an event type; allowed: {}",
                        EVENT_TYPES.join(", ")
                    ),
                );
            }
        }
        filter.types = Some(types);
    }
    filter.object_id = q.string("object_id");
    if let Some(after) = q.string("created_after") {
        match crate::timestamp::parse(&after) {
            Some(t) => filter.created_after = Some(crate::timestamp::format(t)),
            None => q.error(
                "created_after",
                "must be an ISO 8601 timestamp such as 2026-01-02T03:04:05Z",
            ),
        }
    }
    q.finish()?;
    let page = store::list(&state.db, &caller.org_id, filter, &p).await?;
    Ok(page.map(EventRow::into_value).into_response())
}

/// Retrieve an event
///
/// The event exactly as it was (and is) delivered.
#[utoipa::path(get, path = "/v1/events/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "evt_…")),
    responses(
        (status = 200, description = "The event", body = Envelope<Event>),
        (status = 404, description = "EVENT_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["webhooks:read"])))]
async fn get_event(
    axum::extract::State(state): axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::WebhooksRead)?;
    let (payload, _, _) = store::load(&state.db.read, &caller.org_id, &id).await?;
    Ok(envelope::ok(
        serde_json::from_str::<Value>(&payload).unwrap_or(Value::Null),
    ))
}

/// Body of POST /v1/events/{id}/redeliver (optional).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RedeliverRequest {
    /// `we_…`: redeliver to this endpoint only (it must be enabled; it need not be
    /// subscribed to the event's type). Default: every enabled endpoint subscribed to the
    /// event's type now.
    pub endpoint_id: Option<String>,
}

/// Redeliver an event
///
/// Queues a new delivery of the event (same `evt_…` id, fresh signature) to one endpoint
/// or to every enabled endpoint subscribed to its type now, and answers those deliveries
/// (an empty list when no endpoint matches). They follow the same retry schedule as
/// first deliveries; watch them in GET /v1/webhook-endpoints/{id}/deliveries.
#[utoipa::path(post, path = "/v1/events/{id}/redeliver", tag = "webhooks",
    request_body(content = Option<RedeliverRequest>, description = "Optional; `{}` or no body: every subscribed endpoint"),
    params(("id" = String, Path, description = "evt_…"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 202, description = "The deliveries queued", body = Envelope<Vec<WebhookDelivery>>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 404, description = "EVENT_NOT_FOUND, WEBHOOK_ENDPOINT_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 409, description = "CONFLICT: the endpoint is disabled", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["webhooks:write"])))]
async fn redeliver(
    axum::extract::State(state): axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    body: Bytes,
) -> ApiResult<Response> {
    caller.require(Scope::WebhooksWrite)?;
    store::load(&state.db.read, &caller.org_id, &id).await?;
    let text = std::str::from_utf8(&body).unwrap_or("x").trim();
    let req: RedeliverRequest = if text.is_empty() || text == "null" {
        RedeliverRequest { endpoint_id: None }
    } else {
        crate::http::extract::parse_json(&body)?
    };
    let mut tx = state.db.begin_write().await?;
    let (_, event_type, object_id) = store::load(&mut *tx, &caller.org_id, &id).await?;
    let endpoints: Vec<String> = match &req.endpoint_id {
        Some(eid) => match store::endpoint_enabled(&mut tx, &caller.org_id, eid).await? {
            None => {
                return Err(ApiError::not_found(
                    ErrorCode::WebhookEndpointNotFound,
                    "webhook endpoint",
                    eid,
                ));
            }
            Some(false) => {
                return Err(ApiError::new(
                    ErrorCode::Conflict,
                    format!("Webhook endpoint `{eid}` is disabled; enable it with PATCH first"),
                ));
            }
            Some(true) => vec![eid.clone()],
        },
        None => crate::webhooks::subscribed_endpoints(&mut tx, &caller.org_id, &event_type).await?,
    };
    let mut ids = Vec::with_capacity(endpoints.len());
    for endpoint_id in &endpoints {
        ids.push(
            crate::webhooks::insert_delivery(
                &mut tx,
                &caller.org_id,
                endpoint_id,
                &id,
                &event_type,
                &object_id,
                true,
            )
            .await?,
        );
    }
    let mut deliveries = Vec::with_capacity(ids.len());
    for did in &ids {
        let row = store::delivery(&mut tx, did).await?;
        deliveries.push(row.into_delivery());
    }
    tx.commit().await?;
    state.jobs.applied_signal().notify_one();
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(Envelope {
            data: deliveries,
            meta: Meta::current(),
        }),
    )
        .into_response())
}
