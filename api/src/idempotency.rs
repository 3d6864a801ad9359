//! `Idempotency-Key` on every POST, PATCH and PUT but POST /v1/previews (which writes
//! nothing: a retry renders again).
//!
//! A retry with the same key and the same request (method, path, query and body) replays
//! the first response with `Idempotent-Replayed: true`. Decisions where the spec is silent
//! (documented in the OpenAPI description):
//! - keys are scoped to the API key and kept 24 hours; format: 1–255 visible ASCII
//!   characters (a UUID is typical);
//! - the same key while the first request is still running → 409 IDEMPOTENCY_CONFLICT;
//! - the same key with a different request → 400 VALIDATION_ERROR on field
//!   `Idempotency-Key` (Stripe's rule: a key names one request);
//! - a response is stored when the request wrote something (whatever its status, as Stripe
//!   does) or when it is a 4xx; a 5xx that wrote nothing is not stored, so a retry runs again.
//!
//! # Crash safety
//! The stored response commits in the same SQL transaction as what the request wrote: the
//! handler's commit is deferred ([`crate::store::DeferredCommit`]) and the middleware adds
//! the response row to it. After a crash at any point a retry therefore either replays a
//! committed result or runs for the first time, never both. Nothing about a request in
//! flight is written to SQL, so a dead process leaves no claim behind to wait out: "in
//! flight" is a per-process set (concurrent retries to one node get 409). Two nodes running
//! the same key at once (possible with several API nodes) both run, but only the first to
//! commit keeps its writes: the second's transaction fails on the key's primary key, rolls
//! back, and the second caller receives the first one's stored response.

use std::collections::HashSet;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use sha2::{Digest, Sha256};

use crate::auth::Caller;
use crate::error::{ApiError, ErrorCode};
use crate::store::{Db, DeferredCommit};
use sqlx::AnyConnection;

/// How long a stored response is replayed.
pub const RETENTION_SECS: i64 = 24 * 60 * 60;

/// What makes two requests "the same": method, path with query, and body. A multipart
/// body's boundary is chosen afresh by the client on every send, so it is left out: each
/// `--boundary` delimiter is hashed as `--`.
fn request_hash(
    method: &Method,
    path_and_query: &str,
    boundary: Option<&str>,
    body: &[u8],
) -> String {
    let mut h = Sha256::new();
    h.update(method.as_str().as_bytes());
    h.update(b" ");
    h.update(path_and_query.as_bytes());
    h.update(b"\n");
    match boundary.map(|b| format!("--{b}")) {
        Some(delim) if !delim.is_empty() => {
            let delim = delim.as_bytes();
            let mut rest = body;
            while let Some(at) = rest.windows(delim.len()).position(|w| w == delim) {
                h.update(&rest[..at]);
                h.update(b"--");
                rest = &rest[at + delim.len()..];
            }
            h.update(rest);
        }
        _ => h.update(body),
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The boundary parameter of a `multipart/*` Content-Type.
fn multipart_boundary(headers: &axum::http::HeaderMap) -> Option<String> {
    let ct = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    if !ct
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("multipart/")
    {
        return None;
    }
    ct.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("boundary")
            .then(|| v.trim().trim_matches('"').to_string())
    })
}

/// Keys whose first request is running in this process. API key ids are unique across
/// databases, so one set per process serves every server it runs.
static IN_FLIGHT: LazyLock<Mutex<HashSet<(String, String)>>> = LazyLock::new(Default::default);

/// This process's claim on a key; released when dropped (finished, failed or abandoned).
struct Claim((String, String));

impl Claim {
    fn take(key_id: &str, idem_key: &str) -> Option<Self> {
        let k = (key_id.to_string(), idem_key.to_string());
        let fresh = IN_FLIGHT
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(k.clone());
        // Built only when fresh: dropping a `Claim` removes the key (and takes the lock).
        fresh.then(|| Self(k))
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        IN_FLIGHT
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.0);
    }
}

/// A stored response that can be replayed.
struct Stored {
    hash: String,
    status: u16,
    body: Vec<u8>,
    /// The first response's `Location` header, if it had one.
    location: Option<String>,
}

/// The live (unexpired, finished) record of a key, if any.
async fn stored(db: &Db, key_id: &str, idem_key: &str) -> Result<Option<Stored>, ApiError> {
    let row: Option<(String, Option<i64>, Option<Vec<u8>>, Option<String>)> = crate::store::query_as(
        "SELECT request_hash, response_status, response_body, response_location FROM idempotency_keys \
         WHERE api_key_id = ? AND idem_key = ? AND state = 'done' AND created_at >= ?",
    )
    .bind(key_id)
    .bind(idem_key)
    .bind(crate::timestamp::seconds_ago(RETENTION_SECS))
    .fetch_optional(&db.read)
    .await?;
    Ok(row.map(|(hash, status, body, location)| Stored {
        hash,
        status: status.and_then(|s| u16::try_from(s).ok()).unwrap_or(200),
        body: body.unwrap_or_default(),
        location,
    }))
}

/// Stores a response unless a live record of the key exists. Returns whether it was stored.
/// Expired records and claims left by versions before crash-safe storage are replaced.
async fn store(
    conn: &mut AnyConnection,
    key_id: &str,
    idem_key: &str,
    hash: &str,
    status: u16,
    body: &[u8],
    location: Option<&str>,
) -> Result<bool, sqlx::Error> {
    let done = crate::store::query(
        "INSERT INTO idempotency_keys (api_key_id, idem_key, request_hash, state, response_status, response_body, \
         response_location, created_at) \
         VALUES (?, ?, ?, 'done', ?, ?, ?, ?) \
         ON CONFLICT (api_key_id, idem_key) DO UPDATE SET request_hash = excluded.request_hash, \
         state = 'done', response_status = excluded.response_status, response_body = excluded.response_body, \
         response_location = excluded.response_location, created_at = excluded.created_at \
         WHERE idempotency_keys.state <> 'done' OR idempotency_keys.created_at < ?",
    )
    .bind(key_id)
    .bind(idem_key)
    .bind(hash)
    .bind(i64::from(status))
    .bind(body)
    .bind(location)
    .bind(crate::timestamp::now())
    .bind(crate::timestamp::seconds_ago(RETENTION_SECS))
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Answers a retry with what the first request stored.
fn replay(idem_key: &str, hash: &str, s: Stored) -> Result<Response, ApiError> {
    if s.hash != hash {
        return Err(ApiError::field(
            "Idempotency-Key",
            format!(
                "`{idem_key}` was already used for a different request (method, path or body differ); use a new key for a new request"
            ),
        ));
    }
    let mut res = (
        StatusCode::from_u16(s.status).unwrap_or(StatusCode::OK),
        s.body,
    )
        .into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res.headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    if let Some(location) = s.location.and_then(|l| HeaderValue::from_str(&l).ok()) {
        res.headers_mut().insert(header::LOCATION, location);
    }
    Ok(res)
}

fn in_flight(idem_key: &str) -> ApiError {
    ApiError::new(
        ErrorCode::IdempotencyConflict,
        format!(
            "A request with Idempotency-Key `{idem_key}` is still in progress; wait for it to finish, then retry to receive its response"
        ),
    )
}

/// The middleware.
pub async fn idempotency<N, F>(
    db: &crate::store::Db,
    req: Request,
    next: N,
) -> Result<Response, ApiError>
where
    N: FnOnce(Request) -> F,
    F: Future<Output = Response>,
{
    // A preview (POST /v1/previews) writes nothing, so a retry may simply render again;
    // replaying it could answer a picture in another format than the retry accepts.
    if !matches!(*req.method(), Method::POST | Method::PATCH | Method::PUT)
        || req.uri().path() == crate::ratelimit::PREVIEWS_PATH
    {
        return Ok(next(req).await);
    }
    let Some(raw) = req.headers().get("idempotency-key") else {
        return Ok(next(req).await);
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
        return Ok(next(req).await);
    };
    let (parts, body) = req.into_parts();
    let bytes = body
        .collect()
        .await
        .map_err(|e| ApiError::field("body", format!("could not be read: {e}")))?
        .to_bytes();
    let path = parts.uri.path_and_query().map_or("", |p| p.as_str());
    let boundary = multipart_boundary(&parts.headers);
    let hash = request_hash(&parts.method, path, boundary.as_deref(), &bytes);
    let key_id = caller.key_id.as_str();

    if let Some(s) = stored(db, key_id, &idem_key).await? {
        return replay(&idem_key, &hash, s);
    }
    let Some(_claim) = Claim::take(key_id, &idem_key) else {
        return Err(in_flight(&idem_key));
    };
    // The first request may have finished between the read above and the claim.
    if let Some(s) = stored(db, key_id, &idem_key).await? {
        return replay(&idem_key, &hash, s);
    }

    let deferred = DeferredCommit::default();
    let res = deferred
        .run(next(Request::from_parts(parts, Body::from(bytes))))
        .await;
    let (rparts, rbody) = res.into_parts();
    let rbytes = rbody
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let status = rparts.status.as_u16();
    let location = rparts
        .headers
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let location = location.as_deref();
    match deferred.take() {
        Some(mut pending) => {
            // The request wrote something: its response commits with it, or nothing does.
            if !store(
                &mut pending.tx,
                key_id,
                &idem_key,
                &hash,
                status,
                &rbytes,
                location,
            )
            .await?
            {
                drop(pending); // another node finished the same key first: roll back
                return match stored(db, key_id, &idem_key).await? {
                    Some(s) => replay(&idem_key, &hash, s),
                    None => Err(in_flight(&idem_key)),
                };
            }
            pending.commit().await?;
        }
        None if status < 500 => {
            // Nothing was written: storing the answer is only a convenience for replays.
            let mut conn = db.write_conn().await?;
            if let Err(e) = store(
                &mut conn, key_id, &idem_key, &hash, status, &rbytes, location,
            )
            .await
            {
                tracing::warn!(error = %e, "could not record an idempotent response");
            }
        }
        None => {}
    }
    Ok(Response::from_parts(rparts, Body::from(rbytes)))
}

/// Deletes records past their retention; run periodically.
///
/// # Errors
/// Database failures.
pub async fn purge_expired(db: &Db) -> Result<u64, sqlx::Error> {
    let r = crate::store::query("DELETE FROM idempotency_keys WHERE created_at < ?")
        .bind(crate::timestamp::seconds_ago(RETENTION_SECS))
        .execute(&mut *db.write_conn().await?)
        .await?;
    Ok(r.rows_affected())
}
