//! The operator's endpoints, outside `/v1` (no API key, no rate limit, not in the OpenAPI
//! document's paths):
//!
//! - `GET /healthz`: the process is up and serving; always 200 `{"status":"ok"}`.
//! - `GET /readyz`: SQL, Redis (when configured) and the blob store each answer within
//!   [`CHECK_TIMEOUT`]; 200, or 503 naming each dependency and its state. The body names
//!   states only (`ok`, `down`, `timeout`, `not_configured`); the causes go to the log,
//!   since the endpoint is public.
//! - `GET /metrics`: Prometheus text exposition (see `crate::metrics`). On the public
//!   address only with `Authorization: Bearer <--metrics-token>` (404 when no token is
//!   set, 401 for a wrong one); on `--metrics-listen`, a second address meant for a private
//!   interface, without a token.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{FromRef, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::from_fn;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use crate::blob::BlobStore;
use crate::error::{ApiError, ErrorCode};
use crate::http::middleware;
use crate::jobs::Jobs;
use crate::state::AppState;
use crate::store::Db;

pub mod config;

use config::digest;
pub use config::{Ops, OpsArgs};

/// What `/readyz` and `/metrics` read (the server takes it from the state).
#[derive(Clone)]
pub struct OpsState {
    db: Db,
    jobs: Jobs,
    blobs: Arc<dyn BlobStore>,
    ops: Arc<Ops>,
}

impl FromRef<AppState> for OpsState {
    fn from_ref(s: &AppState) -> Self {
        Self {
            db: s.db.clone(),
            jobs: s.jobs.clone(),
            blobs: s.blobs.clone(),
            ops: s.ops.clone(),
        }
    }
}

/// How long `/readyz` waits for each dependency.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// The operator's routes on the public address.
pub fn router(state: OpsState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(public_metrics))
        .method_not_allowed_fallback(middleware::no_such_endpoint)
        .layer(from_fn(middleware::request_id))
        .with_state(state)
}

/// Everything served on `--metrics-listen`.
pub fn private_router(state: OpsState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(private_metrics))
        .fallback(middleware::no_such_endpoint)
        .method_not_allowed_fallback(middleware::no_such_endpoint)
        .layer(from_fn(middleware::request_id))
        .with_state(state)
}

async fn healthz() -> axum::Json<Value> {
    axum::Json(json!({"status": "ok"}))
}

/// The state of one dependency.
async fn probe<F, E>(name: &str, check: F) -> &'static str
where
    F: std::future::Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    match tokio::time::timeout(CHECK_TIMEOUT, check).await {
        Ok(Ok(())) => "ok",
        Ok(Err(e)) => {
            tracing::warn!(dependency = name, error = %e, "readiness check failed");
            "down"
        }
        Err(_) => {
            tracing::warn!(dependency = name, "readiness check timed out");
            "timeout"
        }
    }
}

async fn readyz(State(state): State<OpsState>) -> Response {
    let database = probe("database", async {
        crate::store::query_scalar::<i64>("SELECT 1")
            .fetch_one(&state.db.read)
            .await
            .map(|_| ())
    });
    let redis = async {
        if state.ops.redis {
            probe("redis", state.jobs.queue.ping()).await
        } else {
            "not_configured"
        }
    };
    let blobs = probe("blob_store", state.blobs.check());
    let (database, redis, blobs) = tokio::join!(database, redis, blobs);
    let checks = [
        ("database", database),
        ("redis", redis),
        ("blob_store", blobs),
    ];
    let failing: Vec<String> = checks
        .iter()
        .filter(|(_, s)| !matches!(*s, "ok" | "not_configured"))
        .map(|(n, s)| format!("{n} ({s})"))
        .collect();
    let checks: serde_json::Map<String, Value> = checks
        .iter()
        .map(|(n, s)| ((*n).to_owned(), json!({"status": s})))
        .collect();
    if failing.is_empty() {
        return axum::Json(json!({"status": "ready", "checks": checks})).into_response();
    }
    // Our error shape, plus the per-dependency states a load balancer's operator reads.
    let body = json!({
        "status": "unavailable",
        "checks": checks,
        "error": {
            "code": "SERVICE_UNAVAILABLE",
            "message": format!("Not ready: {} did not answer", failing.join(", ")),
        },
        "meta": crate::http::envelope::Meta::current(),
    });
    (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response()
}

async fn public_metrics(State(state): State<OpsState>, headers: HeaderMap) -> Response {
    let Some(expected) = &state.ops.metrics_token else {
        return ApiError::new(
            ErrorCode::NotFound,
            "No endpoint GET /metrics on this address; metrics are served on --metrics-listen, or here with --metrics-token",
        )
        .into_response();
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(digest);
    // Both sides are SHA-256 digests: equal length, compared without early exit.
    let ok = given.is_some_and(|g| {
        g.iter()
            .zip(expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    });
    if !ok {
        let mut res = ApiError::new(
            ErrorCode::Unauthorized,
            "GET /metrics needs `Authorization: Bearer <token>` with the server's --metrics-token",
        )
        .into_response();
        res.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return res;
    }
    render(&state).await
}

async fn private_metrics(State(state): State<OpsState>) -> Response {
    render(&state).await
}

/// Reads the gauges that are measured at scrape time, then renders everything.
async fn render(state: &OpsState) -> Response {
    let metrics = &state.ops.metrics;
    match tokio::time::timeout(CHECK_TIMEOUT, state.jobs.queue.stats()).await {
        Ok(Ok(stats)) => metrics.set_queue(&stats),
        Ok(Err(e)) => tracing::warn!(error = %e, "queue stats unavailable"),
        Err(_) => tracing::warn!("queue stats timed out"),
    }
    match crate::store::query_scalar::<i64>("SELECT COUNT(*) FROM job_outbox")
        .fetch_one(&state.db.read)
        .await
    {
        Ok(n) => metrics.set_outbox_rows(n),
        Err(e) => tracing::warn!(error = %e, "outbox count unavailable"),
    }
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        metrics.render(),
    )
        .into_response()
}
