//! `/v1/webhook-endpoints`: where events are POSTed, with their signing secrets and the
//! record of every delivery. See `crate::webhooks` for events and delivery.
//!
//! Where things live: this module holds the routes, the request and response types and
//! the handlers (parse → domain call → respond); [`store`] holds every SQL statement of the
//! resource.

mod store;

pub(crate) use store::{DELIVERY_COLUMNS, DeliveryRow};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::{IdPath, Patch, check_text, finish, patch_text};
use crate::auth::{Auth, Scope};
use crate::error::{ApiError, ApiResult, ErrorCode, FieldError};
use crate::http::envelope::{self, Deleted, Envelope, ListEnvelope};
use crate::http::extract::{JsonBody, QueryParams};
use crate::state::AppState;
use crate::store::list::ListParams;
use crate::webhooks::{self, DESCRIPTION_MAX, EVENT_TYPES, EventType, MAX_ENDPOINTS};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_endpoint, list_endpoints))
        .routes(routes!(get_endpoint, update_endpoint, delete_endpoint))
        .routes(routes!(rotate_secret))
        .routes(routes!(list_deliveries))
}

/// A webhook endpoint.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookEndpoint {
    /// `we_…`
    pub id: String,
    /// Where events are POSTed (https; http only on servers run with --allow-private-urls).
    pub url: String,
    pub description: Option<String>,
    /// The event types sent to this endpoint.
    #[schema(value_type = Vec<EventType>)]
    pub events: Vec<String>,
    /// Disabled endpoints receive nothing (deliveries pending when an endpoint is disabled
    /// or deleted end `failed`; redeliver them once it is enabled again).
    pub enabled: bool,
    /// Why the service disabled the endpoint (3 days of failed deliveries); null when it is
    /// enabled or was disabled with PATCH.
    pub disabled_reason: Option<String>,
    /// Until when the previous secret still signs deliveries (a second `v1=` in
    /// `Adforge-Signature`) after a rotation; null when no previous secret is valid.
    pub previous_secret_expires_at: Option<String>,
    /// The signing secret (`whsec_…`): only in the answers of create and rotate-secret.
    /// Store it then; it is never shown again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// Checks an event list: at least one, each one of [`EVENT_TYPES`]; duplicates dropped.
fn check_events(events: Vec<String>, errors: &mut Vec<FieldError>) -> Vec<String> {
    if events.is_empty() {
        errors.push(FieldError::new(
            "events",
            format!(
                "must name at least one event type: {}",
                EVENT_TYPES.join(", ")
            ),
        ));
    }
    let mut out: Vec<String> = Vec::new();
    for (i, e) in events.into_iter().enumerate() {
        if !EVENT_TYPES.contains(&e.as_str()) {
            errors.push(FieldError::new(
                format!("events[{i}]"),
                format!(
                    "`{e}` is not an event type this server emits; allowed: {}",
                    EVENT_TYPES.join(", ")
                ),
            ));
        } else if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

async fn check_url(state: &AppState, url: &str, errors: &mut Vec<FieldError>) {
    if let Err(why) = webhooks::check_url(url, state.allow_private_urls).await {
        errors.push(FieldError::new("url", why));
    }
}

/// Body of POST /v1/webhook-endpoints.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookEndpointCreate {
    /// An https URL whose host resolves to a public address (http and private addresses
    /// only on servers run with --allow-private-urls).
    #[schema(max_length = 2048, min_length = 1)]
    pub url: String,
    /// The event types to send (at least one).
    #[schema(value_type = Vec<EventType>, min_items = 1)]
    pub events: Vec<String>,
    /// At most 500 characters.
    #[schema(max_length = 500)]
    pub description: Option<String>,
}

/// Body of PATCH /v1/webhook-endpoints/{id}: any subset of the fields.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookEndpointUpdate {
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 2048, min_length = 1)]
    pub url: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<Vec<EventType>>, min_items = 1)]
    pub events: Patch<Vec<String>>,
    /// `null` or an empty string clears it.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 500)]
    pub description: Patch<String>,
    /// `false` stops deliveries; `true` re-enables an endpoint (also one the service
    /// disabled) and clears `disabled_reason`.
    #[serde(default)]
    #[schema(value_type = Option<bool>)]
    pub enabled: Patch<bool>,
}

/// Create a webhook endpoint
///
/// The answer carries the signing secret (`whsec_…`) once; store it. At most 16 endpoints
/// per organisation (409 CONFLICT beyond). The URL must be https and resolve to a public
/// address (checked now and again at every delivery).
#[utoipa::path(post, path = "/v1/webhook-endpoints", tag = "webhooks", request_body = WebhookEndpointCreate,
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 201, description = "The new endpoint, with its secret", body = Envelope<WebhookEndpoint>),
        (status = 400, description = "VALIDATION_ERROR (`url`, `events[i]`, `description`)", body = crate::error::ErrorBody),
        (status = 409, description = "CONFLICT: the organisation has 16 endpoints already", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["webhooks:write"])))]
async fn create_endpoint(
    axum::extract::State(state): axum::extract::State<AppState>,
    Auth(caller): Auth,
    body: JsonBody<WebhookEndpointCreate>,
) -> ApiResult<Response> {
    caller.require(Scope::WebhooksWrite)?;
    let body = body.parse()?;
    let mut errors = Vec::new();
    check_url(&state, &body.url, &mut errors).await;
    let events = check_events(body.events, &mut errors);
    let description = check_text(
        "description",
        body.description,
        DESCRIPTION_MAX,
        &mut errors,
    );
    finish(errors)?;
    let mut tx = state.db.begin_write_for(&caller.org_id).await?;
    let count = store::count_live(&mut tx, &caller.org_id).await?;
    if count >= MAX_ENDPOINTS {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!(
                "This organisation has {count} webhook endpoints, the most allowed; delete one first"
            ),
        ));
    }
    let id = crate::ids::new_id("we");
    let secret = webhooks::new_secret();
    let now = crate::timestamp::now();
    store::insert(
        &mut tx,
        &store::NewEndpoint {
            id: &id,
            org_id: &caller.org_id,
            url: &body.url,
            description: description.as_deref(),
            events: &events,
            secret: &secret,
            now: &now,
        },
    )
    .await?;
    let row = store::load(&mut *tx, &caller.org_id, &id).await?;
    tx.commit().await?;
    Ok(envelope::created(row.into_endpoint(Some(secret))))
}

/// List webhook endpoints
///
/// Newest first.
#[utoipa::path(get, path = "/v1/webhook-endpoints", tag = "webhooks",
    params(
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1-100, default 20"),
        ("starting_after" = Option<String>, Query, description = "Id of the last endpoint already received"),
    ),
    responses(
        (status = 200, description = "A page of endpoints", body = ListEnvelope<WebhookEndpoint>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["webhooks:read"])))]
async fn list_endpoints(
    axum::extract::State(state): axum::extract::State<AppState>,
    Auth(caller): Auth,
    mut q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::WebhooksRead)?;
    let p = ListParams::parse(&mut q, false, &[]);
    q.finish()?;
    let page = store::list(&state.db, &caller.org_id, &p).await?;
    Ok(page.map(|r| r.into_endpoint(None)).into_response())
}

/// Retrieve a webhook endpoint
///
/// The secret is not shown (rotate it to get a new one).
#[utoipa::path(get, path = "/v1/webhook-endpoints/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "we_…")),
    responses(
        (status = 200, description = "The endpoint", body = Envelope<WebhookEndpoint>),
        (status = 404, description = "WEBHOOK_ENDPOINT_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["webhooks:read"])))]
async fn get_endpoint(
    axum::extract::State(state): axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::WebhooksRead)?;
    let row = store::load(&state.db.read, &caller.org_id, &id).await?;
    Ok(envelope::ok(row.into_endpoint(None)))
}

/// Update a webhook endpoint
///
/// Change `url`, `events`, `description`, or `enabled`. A new URL is checked as on
/// create. Re-enabling clears `disabled_reason`.
#[utoipa::path(patch, path = "/v1/webhook-endpoints/{id}", tag = "webhooks", request_body = WebhookEndpointUpdate,
    params(("id" = String, Path, description = "we_…"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 200, description = "The updated endpoint", body = Envelope<WebhookEndpoint>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 404, description = "WEBHOOK_ENDPOINT_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["webhooks:write"])))]
async fn update_endpoint(
    axum::extract::State(state): axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    body: JsonBody<WebhookEndpointUpdate>,
) -> ApiResult<Response> {
    caller.require(Scope::WebhooksWrite)?;
    store::load(&state.db.read, &caller.org_id, &id).await?;
    let body = body.parse()?;
    let mut errors = Vec::new();
    let url = body.url.required("url", &mut errors);
    if let Some(u) = &url {
        check_url(&state, u, &mut errors).await;
    }
    let events = body
        .events
        .required("events", &mut errors)
        .map(|e| check_events(e, &mut errors));
    let description = patch_text(
        "description",
        body.description,
        DESCRIPTION_MAX,
        &mut errors,
    );
    let enabled = body.enabled.required("enabled", &mut errors);
    finish(errors)?;
    let mut tx = state.db.begin_write_for(&caller.org_id).await?;
    let mut row = store::load(&mut *tx, &caller.org_id, &id).await?;
    if url.is_none() && events.is_none() && description == Patch::Missing && enabled.is_none() {
        return Ok(envelope::ok(row.into_endpoint(None)));
    }
    if let Some(u) = url {
        row.url = u;
    }
    if let Some(e) = events {
        row.events = crate::store::to_json_text(&e);
    }
    description.apply_nullable(&mut row.description);
    if let Some(on) = enabled {
        if on && !row.enabled {
            row.disabled_reason = None;
        }
        row.enabled = on;
    }
    row.updated_at = crate::timestamp::now();
    store::update(&mut tx, &caller.org_id, &row, enabled == Some(true)).await?;
    tx.commit().await?;
    Ok(envelope::ok(row.into_endpoint(None)))
}

/// Delete a webhook endpoint
///
/// Deliveries still pending end `failed`; nothing more is sent.
#[utoipa::path(delete, path = "/v1/webhook-endpoints/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "we_…")),
    responses(
        (status = 200, description = "Deleted", body = Deleted),
        (status = 404, description = "WEBHOOK_ENDPOINT_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["webhooks:write"])))]
async fn delete_endpoint(
    axum::extract::State(state): axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::WebhooksWrite)?;
    let mut tx = state.db.begin_write_for(&caller.org_id).await?;
    store::load(&mut *tx, &caller.org_id, &id).await?;
    let now = crate::timestamp::now();
    store::delete(&mut tx, &id, &now).await?;
    tx.commit().await?;
    Ok(Deleted::response(id))
}

/// Rotate an endpoint's signing secret
///
/// Answers the endpoint with its new secret (shown once). The previous secret keeps
/// signing for 24 hours (`previous_secret_expires_at`): meanwhile every delivery carries
/// two `v1=` signatures, the new secret's first, so receivers can switch without losing
/// events. Rotating again within the grace period drops the older secret at once.
#[utoipa::path(post, path = "/v1/webhook-endpoints/{id}/rotate-secret", tag = "webhooks",
    params(("id" = String, Path, description = "we_…"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 200, description = "The endpoint, with its new secret", body = Envelope<WebhookEndpoint>),
        (status = 404, description = "WEBHOOK_ENDPOINT_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["webhooks:write"])))]
async fn rotate_secret(
    axum::extract::State(state): axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::WebhooksWrite)?;
    let mut tx = state.db.begin_write_for(&caller.org_id).await?;
    store::load(&mut *tx, &caller.org_id, &id).await?;
    let secret = webhooks::new_secret();
    let now = crate::timestamp::now();
    let until = crate::timestamp::format(
        time::OffsetDateTime::now_utc() + time::Duration::seconds(webhooks::SECRET_GRACE_SECS),
    );
    store::rotate_secret(&mut tx, &id, &secret, &until, &now).await?;
    let row = store::load(&mut *tx, &caller.org_id, &id).await?;
    tx.commit().await?;
    Ok((
        StatusCode::OK,
        axum::Json(Envelope {
            data: row.into_endpoint(Some(secret)),
            meta: crate::http::envelope::Meta::current(),
        }),
    )
        .into_response())
}

/// State of a delivery.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryState {
    Pending,
    Delivered,
    Failed,
}

/// One delivery of an event to an endpoint.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookDelivery {
    /// `whd_…`
    pub id: String,
    /// `evt_…`: the `Adforge-Event-Id` the endpoint received.
    pub event_id: String,
    #[schema(value_type = EventType)]
    pub event_type: String,
    /// `we_…`
    pub endpoint_id: String,
    /// `pending` (to be attempted, or being attempted), `delivered` (a 2xx answer) or
    /// `failed` (attempts spent, or the endpoint disabled or deleted).
    #[schema(value_type = DeliveryState)]
    pub state: String,
    /// Attempts made (started) so far.
    pub attempts: i64,
    /// HTTP status of the last answer; null when there was none (timeout, connection error).
    pub last_status_code: Option<i64>,
    /// Why the last attempt failed; null after a success.
    pub last_error: Option<String>,
    /// Time from sending the request to its answer (or failure), last attempt.
    pub latency_ms: Option<i64>,
    /// When the next attempt is due; null once delivered or failed.
    pub next_attempt_at: Option<String>,
    pub last_attempt_at: Option<String>,
    pub delivered_at: Option<String>,
    pub created_at: String,
}

const STATES: [&str; 3] = ["pending", "delivered", "failed"];

/// List an endpoint's deliveries
///
/// Newest first: attempts, last status code and error, latency and the next retry.
#[utoipa::path(get, path = "/v1/webhook-endpoints/{id}/deliveries", tag = "webhooks",
    params(
        ("id" = String, Path, description = "we_…"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1-100, default 20"),
        ("starting_after" = Option<String>, Query, description = "Id of the last delivery already received"),
        ("state" = Option<String>, Query, description = "Comma-separated among pending, delivered, failed"),
        ("event_id" = Option<String>, Query, description = "Only deliveries of this event"),
    ),
    responses(
        (status = 200, description = "A page of deliveries", body = ListEnvelope<WebhookDelivery>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 404, description = "WEBHOOK_ENDPOINT_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["webhooks:read"])))]
async fn list_deliveries(
    axum::extract::State(state): axum::extract::State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    mut q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::WebhooksRead)?;
    let p = ListParams::parse(&mut q, false, &[]);
    let mut filter = store::DeliveryFilter {
        endpoint_id: id.clone(),
        state: None,
        event_id: None,
    };
    if let Some(values) = q.csv("state") {
        for v in &values {
            if !STATES.contains(&v.as_str()) {
                q.error(
                    "state",
                    format!("`{v}` is not one of {}", STATES.join(", ")),
                );
            }
        }
        filter.state = Some(values);
    }
    filter.event_id = q.string("event_id");
    q.finish()?;
    store::load(&state.db.read, &caller.org_id, &id).await?;
    let page = store::list_deliveries(&state.db, &caller.org_id, filter, &p).await?;
    Ok(page.map(DeliveryRow::into_delivery).into_response())
}
