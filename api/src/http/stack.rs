//! The middleware of every route outside the operator's, as one layer (issue 26).
//!
//! Outermost first: metrics → request id → auth → rate limit → body limit → idempotency →
//! route. Each step is a plain async function that takes the rest as a closure, and
//! [`run`] nests them, so a request pays for one `from_fn` layer: one clone of the route's
//! boxed service and one boxed future, where six layers cost six of each (plus each
//! layer's clone of every layer inside it). The read-path profile in
//! `docs/performance.md` measured what the six cost.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::auth::KeyCache;
use crate::http::middleware;
use crate::metrics::Metrics;
use crate::ratelimit::RateState;
use crate::state::AppState;
use crate::store::Db;

/// What authentication reads: the keys' table and the cache in front of it.
#[derive(Clone)]
pub struct AuthState {
    db: Db,
    keys: Arc<KeyCache>,
}

impl axum::extract::FromRef<AppState> for AuthState {
    fn from_ref(s: &AppState) -> Self {
        Self {
            db: s.db.clone(),
            keys: s.keys.clone(),
        }
    }
}

/// What the steps read.
#[derive(Clone)]
pub struct Stack {
    pub metrics: Arc<Metrics>,
    pub auth: AuthState,
    pub rate: RateState,
    pub db: Db,
}

/// The layer's function (`axum::middleware::from_fn_with_state(stack, run)`).
pub async fn run(State(s): State<Stack>, req: Request, next: Next) -> Response {
    let s = &s;
    crate::metrics::track(&s.metrics, req, |req| {
        middleware::with_request_id(req, |req| async move {
            crate::auth::authenticate(&s.auth.db, &s.auth.keys, req, |req| {
                crate::ratelimit::enforce(&s.rate, req, |req| async move {
                    middleware::limit_body(req, |req| async move {
                        crate::idempotency::idempotency(&s.db, req, |req| next.run(req))
                            .await
                            .into_response()
                    })
                    .await
                    .into_response()
                })
            })
            .await
            .into_response()
        })
    })
    .await
}
