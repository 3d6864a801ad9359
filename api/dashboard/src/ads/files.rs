//! An ad's PNG as a download and as the gallery's cached thumbnail.

use super::*;

/// The blob key and download name of an ad's PNG (`version` N, else the current one);
/// `Err` with the URL when the image is not one of this server's files.
async fn png_of(
    state: &AppState,
    m: &SessionMember,
    id: &str,
    version: Option<&str>,
) -> Result<Result<(String, String), String>, DashError> {
    let ad = image_ads::get(&state.db, &state.jobs, &m.org_id, id)
        .await
        .map_err(dash)?;
    let (url, name) = match version {
        Some(n) => {
            let n: i64 = n.parse().map_err(|_| DashError::NotFound)?;
            let versions = image_ads::versions(&state.db, &m.org_id, id)
                .await
                .map_err(dash)?;
            let v = versions
                .into_iter()
                .find(|v| v.version_number == n)
                .ok_or(DashError::NotFound)?;
            (v.image_url, format!("{id}-v{n}.png"))
        }
        None => (ad.image_url, format!("{id}.png")),
    };
    let url = url.ok_or(DashError::NotFound)?;
    Ok(match state.blobs.own_file(&url) {
        OwnFile::Key(key) => Ok((key, name)),
        _ => Err(url),
    })
}

/// GET /dashboard/ads/{id}/download[?version=N]: the PNG as an attachment, read from the
/// blob store.
pub async fn download(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    uri: Uri,
) -> DashResult {
    let q = query(&uri);
    let (key, name) = match png_of(&state, &me.0, &id, q.get("version")).await? {
        Ok(found) => found,
        Err(url) => return Ok(redirect(&url)),
    };
    let bytes = state
        .blobs
        .get(&key)
        .await
        .map_err(|e| DashError::Internal(e.to_string()))?
        .ok_or(DashError::NotFound)?;
    let mut r = bytes.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("image/png"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(r)
}

/// GET /dashboard/ads/{id}/thumb[?version=N]: a 600 px WebP of the ad's PNG for the
/// gallery and the versions (a 4K PNG is megabytes), made on first request by the
/// images code (`imaging::decode_preview` under its memory budget, `imaging::thumbnails`)
/// and kept in the blob store next to nothing else (`dashboard-thumbs/<png key>.webp`).
pub async fn thumb(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    uri: Uri,
) -> DashResult {
    let q = query(&uri);
    let (key, _) = match png_of(&state, &me.0, &id, q.get("version")).await? {
        Ok(found) => found,
        Err(url) => return Ok(redirect(&url)),
    };
    let thumb_key = format!("dashboard-thumbs/{key}.webp");
    let internal = |e: String| DashError::Internal(e);
    let webp = match state
        .blobs
        .get(&thumb_key)
        .await
        .map_err(|e| internal(e.to_string()))?
    {
        Some(b) => b,
        None => {
            let png = state
                .blobs
                .get(&key)
                .await
                .map_err(|e| internal(e.to_string()))?
                .ok_or(DashError::NotFound)?;
            let preview = adforge_worker::imaging::decode_preview(png)
                .await
                .map_err(|e| internal(e.to_string()))?;
            let [_, medium, _] = tokio::task::spawn_blocking(move || {
                adforge_worker::imaging::thumbnails(&preview.image)
            })
            .await
            .map_err(|e| internal(e.to_string()))?
            .map_err(|e| internal(e.to_string()))?;
            let bytes = Bytes::from(medium);
            if let Err(e) = state.blobs.put(&thumb_key, bytes.clone()).await {
                tracing::warn!(error = %e, key = %thumb_key, "storing a dashboard thumbnail failed");
            }
            bytes
        }
    };
    let mut r = webp.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("image/webp"));
    // The key names one immutable PNG version; private: behind the session.
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=86400"),
    );
    Ok(r)
}
