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

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::from_fn;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use clap::Args;
use serde_json::{Value, json};

use crate::error::{ApiError, ErrorCode};
use crate::http::middleware;
use crate::metrics::Metrics;
use crate::state::OpsState;

/// How long `/readyz` waits for each dependency.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// `serve` flags for metrics and shutdown.
#[derive(Args, Clone, Debug)]
pub struct OpsArgs {
    /// A second address serving only `/metrics`, `/healthz` and `/readyz`, with no token:
    /// bind it to an interface only the Prometheus server reaches (e.g. `10.0.0.5:9100`).
    #[arg(long, env = "ADFORGE_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,
    /// Opens `GET /metrics` on the public address to requests carrying
    /// `Authorization: Bearer <token>`. Without it the public `/metrics` answers 404.
    #[arg(long, env = "ADFORGE_METRICS_TOKEN")]
    pub metrics_token: Option<String>,
    /// On SIGTERM or Ctrl-C the server stops accepting and lets in-flight requests finish
    /// for at most this many seconds, then exits.
    #[arg(long, env = "ADFORGE_SHUTDOWN_TIMEOUT_SECS", default_value_t = 30)]
    pub shutdown_timeout_secs: u64,
}

impl Default for OpsArgs {
    fn default() -> Self {
        Self {
            metrics_listen: None,
            metrics_token: None,
            shutdown_timeout_secs: 30,
        }
    }
}

/// What the operator's endpoints need besides the database, queue and blob store.
pub struct Ops {
    pub metrics: Arc<Metrics>,
    /// SHA-256 of `--metrics-token`, compared in constant time.
    metrics_token: Option<[u8; 32]>,
    /// Whether the queue is Redis (and so `/readyz` checks it).
    redis: bool,
}

impl Ops {
    pub fn new(metrics: Arc<Metrics>, metrics_token: Option<&str>, redis: bool) -> Self {
        Self {
            metrics,
            metrics_token: metrics_token.map(digest),
            redis,
        }
    }
}

fn digest(s: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(s.as_bytes()).into()
}

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
