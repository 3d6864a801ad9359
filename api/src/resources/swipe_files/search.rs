//! Finding designs: the ranked search of POST /v1/swipe-files/search (by text, or by
//! example: a design or an image URL), exact over every design the filters leave, and the
//! swipe-file hits of the global search (`crate::resources::search`).

use adforge_worker::imaging;

use super::{OneOrMany, SearchBody, SwipeFile, store};
use crate::error::{ApiError, ApiResult, FieldError};
use crate::resources::{common, design_packs};
use crate::state::AppState;
use crate::store::Db;
use crate::swipe::filter::SwipeFilter;
use crate::swipe::index::Search;
use crate::swipe::vectors;

/// Ranks the organisation's designs for a search body (what POST /v1/swipe-files/search
/// answers; the dashboard's text search and "more like this" call it too).
///
/// # Errors
/// VALIDATION_ERROR; SWIPE_FILE_NOT_FOUND; DESIGN_PACK_NOT_FOUND; SERVICE_UNAVAILABLE
/// without the models; database failures.
pub async fn search(state: &AppState, org_id: &str, body: SearchBody) -> ApiResult<Vec<SwipeFile>> {
    let mut errors = Vec::new();
    let given = [
        body.query.is_some(),
        body.swipe_file_id.is_some(),
        body.image_url.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if given != 1 {
        errors.push(FieldError::new(
            "query",
            "give exactly one of query, swipe_file_id and image_url",
        ));
    }
    if let Some(q) = &body.query {
        let n = q.trim().chars().count();
        if n == 0 || q.chars().count() > 1000 {
            errors.push(FieldError::new("query", "must be 1 to 1000 characters"));
        }
    }
    if let Some(u) = &body.image_url {
        let lower = u.to_ascii_lowercase();
        if u.len() > 2048 || !(lower.starts_with("http://") || lower.starts_with("https://")) {
            errors.push(FieldError::new(
                "image_url",
                "must be an http(s) URL of at most 2048 characters",
            ));
        } else if state.blobs.own_file(u) == crate::blob::OwnFile::Foreign
            && let Err(why) = adforge_renderer::address::check_url(u, state.allow_private_urls)
        {
            // Refused before any connection is attempted.
            errors.push(FieldError::new(
                "image_url",
                format!("cannot be fetched: {why}"),
            ));
        }
    }
    let limit = body.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        errors.push(FieldError::new(
            "limit",
            "must be a whole number from 1 to 100",
        ));
    }
    if let Some(m) = body.min_similarity
        && !(-1.0..=1.0).contains(&m)
    {
        errors.push(FieldError::new("min_similarity", "must be from -1 to 1"));
    }
    let filter = SwipeFilter {
        industry: body
            .industry
            .clone()
            .map(OneOrMany::into_vec)
            .unwrap_or_default(),
        ad_format: body
            .ad_format
            .clone()
            .map(OneOrMany::into_vec)
            .unwrap_or_default(),
        aspect_ratio: body
            .aspect_ratio
            .clone()
            .map(OneOrMany::into_vec)
            .unwrap_or_default(),
        status: Some("ready".into()),
        archived: false,
        data_source_ids: body.data_source_ids.clone(),
        include_own: body.include_own.unwrap_or(true),
        design_pack_id: body.design_pack_id.clone(),
    };
    filter.validate(&mut errors);
    common::finish(errors)?;
    if let Some(pid) = &filter.design_pack_id {
        design_packs::require_visible(&state.db, org_id, pid).await?;
    }
    // The query vector and which stored vectors it meets.
    let (kind, query, exclude) = if let Some(text) = &body.query {
        let models = state.models.require()?.clone();
        let text = text.clone();
        let v = tokio::task::spawn_blocking(move || {
            models.text.embed_texts(&[text.as_str()]).map(|mut v| {
                (
                    models.text.model_id().to_string(),
                    v.pop().unwrap_or_default(),
                )
            })
        })
        .await
        .map_err(ApiError::internal)?
        .map_err(|e| ApiError::field("query", format!("could not be embedded: {e}")))?;
        (vectors::TEXT, vectors::Query::new(&v.0, &v.1), None)
    } else if let Some(id) = &body.swipe_file_id {
        let row = store::load(&state.db, org_id, id).await?;
        let stored = store::image_vector(&state.db, &row.id).await?;
        let Some(q) = stored.and_then(|(m, b)| vectors::decode(&m, &b)) else {
            return Err(ApiError::field(
                "swipe_file_id",
                format!(
                    "`{id}` is not ready yet (status {}); search by example needs a ready design",
                    row.status
                ),
            ));
        };
        let dense: Vec<f32> = q.values.iter().map(|x| f32::from(*x) * q.scale).collect();
        (
            vectors::IMAGE,
            vectors::Query::new(&q.model_id, &dense),
            Some(row.id),
        )
    } else {
        let url = body.image_url.clone().unwrap_or_default();
        let models = state.models.require()?.clone();
        let own = match url.strip_prefix(state.blobs.url("").as_str()) {
            Some(key) => Some(state.blobs.get(key).await.map_err(ApiError::internal)?),
            None => None,
        };
        let fetcher = state.reference_fetcher.clone();
        let bytes = tokio::task::spawn_blocking(move || -> Result<Vec<u8>, String> {
            use adforge_renderer::ImageFetcher;
            match own {
                Some(Some(b)) => Ok(b.to_vec()),
                Some(None) => Err("names no file of this server".into()),
                None => fetcher.fetch(&url),
            }
        })
        .await
        .map_err(ApiError::internal)?
        .map_err(|why| ApiError::field("image_url", format!("could not be used: {why}")))?;
        // Decoded under the process-wide budget, shrunk at once.
        let decoded = imaging::decode_shrunk(bytes.into(), imaging::WORKING_EDGE)
            .await
            .map_err(|e| {
                // The API's message of the error (`Invalid `file`: …` for an image over the
                // limits), as this field's text has always quoted it.
                let message = ApiError::from(e).message;
                ApiError::field("image_url", format!("could not be used: {message}"))
            })?;
        let v = tokio::task::spawn_blocking(move || -> Result<(String, Vec<f32>), String> {
            let rgb = image::DynamicImage::ImageRgba8(decoded.image).to_rgb8();
            let mut v = models
                .image
                .embed_images(&[rgb])
                .map_err(|e| e.to_string())?;
            Ok((
                models.image.model_id().to_string(),
                v.pop().unwrap_or_default(),
            ))
        })
        .await
        .map_err(ApiError::internal)?
        .map_err(|why| ApiError::field("image_url", format!("could not be used: {why}")))?;
        (vectors::IMAGE, vectors::Query::new(&v.0, &v.1), None)
    };
    let min = body.min_similarity.unwrap_or(-1.0) as f32;
    let scored = state
        .search_index
        .search(
            &state.db,
            &Search {
                org_id,
                filter: &filter,
                kind,
                query: &query,
                exclude: exclude.as_deref(),
                min,
                limit: limit as usize,
            },
        )
        .await?;
    let top: Vec<String> = scored.iter().map(|(_, id)| id.clone()).collect();
    let rows = store::rows_in_order(&state.db, &top).await?;
    let hits: Vec<SwipeFile> = rows
        .into_iter()
        .zip(&scored)
        .map(|(r, (s, _))| {
            let mut f = r.into_api(state.blobs.as_ref());
            f.similarity = Some((f64::from(*s) * 10_000.0).round() / 10_000.0);
            f
        })
        .collect();
    Ok(hits)
}

/// The label of a design in the global search: "format · industry" (display names), or
/// "Swipe file" while neither is known.
fn search_label(ad_format: Option<&str>, industry: Option<&str>) -> String {
    let parts: Vec<&str> = [
        ad_format.map(adforge_worker::swipe::taxonomy::ad_format_name),
        industry.map(adforge_worker::swipe::taxonomy::industry_name),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        "Swipe file".to_string()
    } else {
        parts.join(" · ")
    }
}

/// Swipe-file hits of the global search: visible, active, non-processing designs whose
/// ad format or industry (value or display name) contains `needle`, newest first, with
/// those starting with it first; or, in resolve mode, `ids` that are visible. Returns
/// (id, label, preview blob key).
///
/// # Errors
/// Database failures.
pub async fn search_labels(
    db: &Db,
    org_id: &str,
    needle: &str,
    limit: i64,
    ids: Option<&[String]>,
) -> ApiResult<Vec<(String, String, Option<String>)>> {
    let rows = store::label_rows(db, org_id, ids).await?;
    let mut hits: Vec<(bool, String, String, Option<String>)> = Vec::new();
    for (id, format, industry, thumb) in rows {
        let label = search_label(format.as_deref(), industry.as_deref());
        if ids.is_some() {
            hits.push((true, id, label, thumb));
            continue;
        }
        let haystacks: Vec<String> = [format.as_deref(), industry.as_deref()]
            .into_iter()
            .flatten()
            .flat_map(|v| {
                [
                    v.replace('_', " "),
                    adforge_worker::swipe::taxonomy::ad_format_name(v).to_lowercase(),
                    adforge_worker::swipe::taxonomy::industry_name(v).to_lowercase(),
                ]
            })
            .collect();
        // An empty query lists the most recent designs.
        if !needle.is_empty() && !haystacks.iter().any(|h| h.contains(needle)) {
            continue;
        }
        let starts = needle.is_empty() || haystacks.iter().any(|h| h.starts_with(needle));
        hits.push((starts, id, label, thumb));
    }
    // Stable: newest first within each group.
    hits.sort_by_key(|h| !h.0);
    if ids.is_none() {
        hits.truncate(limit.max(0) as usize);
    }
    Ok(hits
        .into_iter()
        .map(|(_, id, label, thumb)| (id, label, thumb))
        .collect())
}
