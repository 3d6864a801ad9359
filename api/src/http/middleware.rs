//! Request-scoped middleware: request ids and logging, the body size limit, and the
//! fallback for paths that name no endpoint.

use std::time::Instant;

use axum::body::{Body, HttpBody as _};
use axum::extract::Request;
use axum::http::{HeaderValue, Method, Uri, header};
use axum::middleware::Next;
use axum::response::Response;
use http_body_util::BodyExt;
use tracing::Instrument;

use crate::error::{ApiError, ErrorCode};
use crate::http::envelope::REQUEST_ID;

/// Largest accepted request body: 15 MiB of raw bytes (spec § Limits).
pub const MAX_BODY_BYTES: usize = 15 * 1024 * 1024;

/// `X-Content-Type-Options: nosniff` on every response (pages, JSON, files, errors), so no
/// browser second-guesses a declared content type.
pub async fn nosniff(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    res.headers_mut().insert(
        axum::http::header::X_CONTENT_TYPE_OPTIONS,
        axum::http::HeaderValue::from_static("nosniff"),
    );
    res
}

/// Gives the request an id (`req_…`), runs it inside a tracing span carrying that id (so
/// every log line of the request names it), and returns it in `X-Request-Id`.
pub async fn request_id(req: Request, next: Next) -> Response {
    with_request_id(req, |req| next.run(req)).await
}

/// [`request_id`] before any continuation (the `/v1` stack of [`super::stack`]).
pub async fn with_request_id<N, F>(req: Request, next: N) -> Response
where
    N: FnOnce(Request) -> F,
    F: Future<Output = Response>,
{
    let id = crate::ids::new_id("req");
    let span = tracing::info_span!(
        "request",
        request_id = %id,
        method = %req.method(),
        path = %req.uri().path(),
    );
    let started = Instant::now();
    let mut res = REQUEST_ID
        .scope(id.clone(), next(req))
        .instrument(span.clone())
        .await;
    let status = res.status().as_u16();
    span.in_scope(|| {
        tracing::info!(
            status,
            elapsed_us = started.elapsed().as_micros() as u64,
            "served"
        )
    });
    if let Ok(v) = HeaderValue::from_str(&id) {
        res.headers_mut().insert("x-request-id", v);
    }
    res
}

fn too_large() -> ApiError {
    ApiError::new(
        ErrorCode::PayloadTooLarge,
        format!(
            "The request body is larger than 15 MiB ({MAX_BODY_BYTES} bytes); send a smaller body or file"
        ),
    )
}

/// Reads the body into memory up to [`MAX_BODY_BYTES`]. A declared `Content-Length` over
/// the limit is refused before a byte is read; a chunked body is refused as soon as it
/// passes the limit, so the excess is never buffered. A request that has no body (most
/// GETs and DELETEs: no `Content-Length` or `0`, and not chunked) passes untouched, so it
/// pays for no collection and no second body (issue 26).
pub async fn limit_body<N, F>(req: Request, next: N) -> Result<Response, ApiError>
where
    N: FnOnce(Request) -> F,
    F: Future<Output = Response>,
{
    if req.body().is_end_stream() {
        return Ok(next(req).await);
    }
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    let (parts, body) = req.into_parts();
    let bytes = match http_body_util::Limited::new(body, MAX_BODY_BYTES)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => return Err(too_large()),
        Err(e) => return Err(ApiError::field("body", format!("could not be read: {e}"))),
    };
    Ok(next(Request::from_parts(parts, Body::from(bytes))).await)
}

/// Any path or method that names no endpoint.
pub async fn no_such_endpoint(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        ErrorCode::NotFound,
        format!(
            "No endpoint {method} {}; the endpoints are listed at /openapi.json",
            uri.path()
        ),
    )
}
