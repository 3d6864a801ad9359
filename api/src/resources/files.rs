//! `GET /files/{key}`: blobs (originals, thumbnails, rendered ads) at public URLs, with
//! their content types and long-lived cache headers (keys are never reused for other
//! content). Not under `/v1` and not authenticated: URLs are unguessable, as the spec's
//! "public URL" fields require.

use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::app::AppState;
use crate::blob::{content_type_for, valid_key};
use crate::error::{ApiError, ErrorCode};

pub async fn serve_file(
    State(state): State<AppState>,
    Path(key): Path<String>,
) -> Result<Response, ApiError> {
    let missing = || ApiError::new(ErrorCode::NotFound, format!("No file at /files/{key}"));
    if !valid_key(&key) {
        return Err(missing());
    }
    let bytes = state
        .blobs
        .get(&key)
        .await
        .map_err(ApiError::internal)?
        .ok_or_else(missing)?;
    let mut res = bytes.into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type_for(&key)),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    Ok(res)
}
