//! `Idempotency-Key` on every POST and PATCH.
//!
//! The first request with a key claims it (`in_flight`) and, when it finishes, stores its
//! status and body; a retry with the same key and the same request (method, path, query
//! and body) replays that response with `Idempotent-Replayed: true`. Decisions where the
//! spec is silent (documented in the OpenAPI description):
//! - keys are scoped to the API key and kept 24 hours; format: 1–255 visible ASCII
//!   characters (a UUID is typical);
//! - the same key while the first request is still running → 409 IDEMPOTENCY_CONFLICT;
//! - the same key with a different request → 400 VALIDATION_ERROR on field
//!   `Idempotency-Key` (Stripe's rule: a key names one request);
//! - 5xx outcomes are not stored, so a retry after a server failure runs again; a claim
//!   whose request died without finishing is released at once, or after 5 minutes if the
//!   process itself died.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use sha2::{Digest, Sha256};

use crate::auth::Caller;
use crate::error::{ApiError, ErrorCode};
use crate::store::Db;

/// How long a stored response is replayed.
pub const RETENTION_SECS: i64 = 24 * 60 * 60;
/// After this long an unfinished claim is considered abandoned.
pub const STALE_CLAIM_SECS: i64 = 5 * 60;

fn request_hash(method: &Method, path_and_query: &str, body: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(method.as_str().as_bytes());
    h.update(b" ");
    h.update(path_and_query.as_bytes());
    h.update(b"\n");
    h.update(body);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Releases a claim if the request never finished (client gone, handler panicked).
struct Claim {
    db: Db,
    key_id: String,
    idem_key: String,
    settled: bool,
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let (db, key_id, idem_key) = (self.db.clone(), self.key_id.clone(), self.idem_key.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = sqlx::query(
                    "DELETE FROM idempotency_keys WHERE api_key_id = ? AND idem_key = ? AND state = 'in_flight'",
                )
                .bind(key_id)
                .bind(idem_key)
                .execute(&db.write)
                .await;
            });
        }
    }
}

enum Outcome {
    Run,
    Replay(u16, Vec<u8>),
}

async fn claim(db: &Db, key_id: &str, idem_key: &str, hash: &str) -> Result<Outcome, ApiError> {
    let mut tx = db.begin_write().await?;
    let row: Option<(String, String, Option<i64>, Option<Vec<u8>>, String)> = sqlx::query_as(
        "SELECT request_hash, state, response_status, response_body, created_at \
         FROM idempotency_keys WHERE api_key_id = ? AND idem_key = ?",
    )
    .bind(key_id)
    .bind(idem_key)
    .fetch_optional(&mut *tx)
    .await?;
    if let Some((stored_hash, state, status, body, created_at)) = row {
        let expired = created_at < crate::timestamp::seconds_ago(RETENTION_SECS);
        let stale =
            state == "in_flight" && created_at < crate::timestamp::seconds_ago(STALE_CLAIM_SECS);
        if !expired && !stale {
            if state == "in_flight" {
                return Err(ApiError::new(
                    ErrorCode::IdempotencyConflict,
                    format!(
                        "A request with Idempotency-Key `{idem_key}` is still in progress; wait for it to finish, then retry to receive its response"
                    ),
                ));
            }
            if stored_hash != hash {
                return Err(ApiError::field(
                    "Idempotency-Key",
                    format!(
                        "`{idem_key}` was already used for a different request (method, path or body differ); use a new key for a new request"
                    ),
                ));
            }
            let status = status.and_then(|s| u16::try_from(s).ok()).unwrap_or(200);
            return Ok(Outcome::Replay(status, body.unwrap_or_default()));
        }
        sqlx::query("DELETE FROM idempotency_keys WHERE api_key_id = ? AND idem_key = ?")
            .bind(key_id)
            .bind(idem_key)
            .execute(&mut *tx)
            .await?;
    }
    sqlx::query(
        "INSERT INTO idempotency_keys (api_key_id, idem_key, request_hash, state, created_at) \
         VALUES (?, ?, ?, 'in_flight', ?)",
    )
    .bind(key_id)
    .bind(idem_key)
    .bind(hash)
    .bind(crate::timestamp::now())
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Outcome::Run)
}

/// The middleware.
pub async fn idempotency(
    State(state): State<crate::app::AppState>,
    req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    if !(req.method() == Method::POST || req.method() == Method::PATCH) {
        return Ok(next.run(req).await);
    }
    let Some(raw) = req.headers().get("idempotency-key") else {
        return Ok(next.run(req).await);
    };
    let idem_key = match raw.to_str() {
        Ok(k) if (1..=255).contains(&k.len()) && k.bytes().all(|b| b.is_ascii_graphic()) => {
            k.to_string()
        }
        _ => {
            return Err(ApiError::field(
                "Idempotency-Key",
                "must be 1 to 255 visible ASCII characters, such as a UUID",
            ));
        }
    };
    let Some(caller) = req.extensions().get::<Arc<Caller>>().cloned() else {
        return Ok(next.run(req).await);
    };
    let (parts, body) = req.into_parts();
    let bytes = body
        .collect()
        .await
        .map_err(|e| ApiError::field("body", format!("could not be read: {e}")))?
        .to_bytes();
    let path = parts.uri.path_and_query().map_or("", |p| p.as_str());
    let hash = request_hash(&parts.method, path, &bytes);

    match claim(&state.db, &caller.key_id, &idem_key, &hash).await? {
        Outcome::Replay(status, body) => {
            let mut res =
                (StatusCode::from_u16(status).unwrap_or(StatusCode::OK), body).into_response();
            res.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            res.headers_mut()
                .insert("idempotent-replayed", HeaderValue::from_static("true"));
            Ok(res)
        }
        Outcome::Run => {
            let mut guard = Claim {
                db: state.db.clone(),
                key_id: caller.key_id.clone(),
                idem_key: idem_key.clone(),
                settled: false,
            };
            let res = next
                .run(Request::from_parts(parts, Body::from(bytes)))
                .await;
            let (rparts, rbody) = res.into_parts();
            let rbytes = rbody
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            let status = rparts.status.as_u16();
            let stored = if status < 500 {
                sqlx::query(
                    "UPDATE idempotency_keys SET state = 'done', response_status = ?, response_body = ? \
                     WHERE api_key_id = ? AND idem_key = ?",
                )
                .bind(i64::from(status))
                .bind(rbytes.to_vec())
                .bind(&caller.key_id)
                .bind(&idem_key)
                .execute(&state.db.write)
                .await
            } else {
                sqlx::query("DELETE FROM idempotency_keys WHERE api_key_id = ? AND idem_key = ?")
                    .bind(&caller.key_id)
                    .bind(&idem_key)
                    .execute(&state.db.write)
                    .await
            };
            match stored {
                Ok(_) => guard.settled = true,
                Err(e) => tracing::error!(error = %e, "could not record idempotent response"),
            }
            Ok(Response::from_parts(rparts, Body::from(rbytes)))
        }
    }
}

/// Deletes records past their retention; run periodically.
///
/// # Errors
/// Database failures.
pub async fn purge_expired(db: &Db) -> Result<u64, sqlx::Error> {
    let r = sqlx::query("DELETE FROM idempotency_keys WHERE created_at < ?")
        .bind(crate::timestamp::seconds_ago(RETENTION_SECS))
        .execute(&db.write)
        .await?;
    Ok(r.rows_affected())
}
