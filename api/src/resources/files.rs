//! `GET /files/{key}`: blobs (originals, thumbnails, rendered ads) at public URLs, with
//! their content types and long-lived cache headers (keys are never reused for other
//! content), streamed from whichever store `--blob-url` chose. Not under `/v1` and not authenticated: URLs are unguessable, as the spec's
//! "public URL" fields require.
//!
//! Only files are served. A folder (`/files/images`, `/files/images/img_…`), a key that is
//! not valid, a path that is not UTF-8 once decoded and an unknown key all answer the same
//! 404, so the answers do not tell which ids exist.

use axum::extract::State;
use axum::http::{HeaderValue, Uri, header};
use axum::response::{IntoResponse, Response};

use crate::blob::{content_type_for, valid_key};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::http::extract::PathParams;
use crate::state::AppState;

pub async fn serve_file(
    State(state): State<AppState>,
    uri: Uri,
    key: ApiResult<PathParams<String>>,
) -> Result<Response, ApiError> {
    let missing = || ApiError::new(ErrorCode::NotFound, format!("No file at {}", uri.path()));
    let Ok(PathParams(key)) = key else {
        return Err(missing());
    };
    if !valid_key(&key) {
        return Err(missing());
    }
    let mut blob = state.blobs.open(&key).await.map_err(ApiError::internal)?;
    // An ad's renditions are made on the first request of one of them.
    if blob.is_none()
        && crate::resources::image_ads::renditions::made_on_request(&*state.blobs, &key).await?
    {
        blob = state.blobs.open(&key).await.map_err(ApiError::internal)?;
    }
    let blob = blob.ok_or_else(missing)?;
    // Streamed from the store (a folder or a bucket) without holding the blob in memory.
    let mut res = axum::body::Body::from_stream(blob.chunks).into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(blob.len));
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type_for(&key)),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(crate::blob::CACHE_CONTROL),
    );
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    Ok(res)
}
