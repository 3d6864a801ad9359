//! The files of a sync: image fills, SVG exports and Figma's own render, asked for, downloaded
//! (eight at a time, without the token) and stored as our files under content-hash keys (a
//! re-sync of the same images writes nothing new); the tree's placeholders become their URLs.

use std::collections::BTreeMap;
use std::sync::Arc;

use adforge_renderer::tree::{ImageField, TreeDoc};
use bytes::Bytes;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::client::{FigmaClient, FigmaError, encode};
use super::import::{IMAGE_PLACEHOLDER, Imported, SVG_PLACEHOLDER};
use super::sync::{Parts, hex, job_error};
use crate::protocol::{FigmaSyncJob, Unmapped};
use crate::runner::JobError;
use crate::services::blocking;

/// Downloads made at once.
const PARALLEL_DOWNLOADS: usize = 8;
/// SVG exports asked for in one call.
const SVG_BATCH: usize = 50;
/// Long edge of Figma's render that is kept (`initial_figma_render_url`), in pixels:
/// Figma renders at most 4× the design size.
const FIGMA_RENDER_EDGE: f64 = 2048.0;

/// The extension for stored image bytes, or why they cannot be drawn.
fn image_extension(bytes: &[u8]) -> Result<&'static str, String> {
    if crate::services::fetch::looks_svg(bytes) {
        return Ok("svg");
    }
    match image::guess_format(bytes) {
        Ok(image::ImageFormat::Png) => Ok("png"),
        Ok(image::ImageFormat::Jpeg) => Ok("jpg"),
        Ok(image::ImageFormat::WebP) => Ok("webp"),
        Ok(other) => Err(format!(
            "{other:?} images are not drawn (PNG, JPEG, WebP and SVG are)"
        )),
        Err(_) => Err("not an image".to_owned()),
    }
}

/// Image fills, SVG exports and Figma's render of the frame: asked for, downloaded,
/// stored as our files; the tree's placeholders become their URLs. Returns the key of
/// Figma's render, when Figma made one, and the URLs kept on the fetcher's shelf for the
/// render (release them after it).
pub(super) async fn fetch(
    p: &Parts,
    job: &FigmaSyncJob,
    client: &Arc<FigmaClient>,
    imported: &mut Imported,
) -> Result<(Option<String>, Vec<String>), JobError> {
    let file_key = job.file_key.clone();
    let refs: Vec<String> = imported.image_refs.iter().cloned().collect();
    let svg_ids: Vec<String> = imported
        .svg_exports
        .iter()
        .map(|(f, _)| f.clone())
        .collect();
    let (frame_w, frame_h) = TreeDoc::new(&imported.tree)
        .root_id()
        .and_then(|r| TreeDoc::new(&imported.tree).node(r).cloned())
        .map(|n| {
            (
                n.get("width").and_then(Value::as_f64).unwrap_or(1.0),
                n.get("height").and_then(Value::as_f64).unwrap_or(1.0),
            )
        })
        .unwrap_or((1.0, 1.0));
    let scale = (FIGMA_RENDER_EDGE / frame_w.max(frame_h).max(1.0)).clamp(0.01, 4.0);
    let node_id = job.node_id.clone();
    // The calls that name the downloads: image fills, SVG exports (in batches), the render.
    let c = client.clone();
    let urls = blocking(move || -> Result<(BTreeMap<String, Option<String>>, BTreeMap<String, Option<String>>, Option<String>), FigmaError> {
        let mut fills = BTreeMap::new();
        if !refs.is_empty() {
            let answer = c.get_json(&format!("/v1/files/{file_key}/images"))?;
            let images = answer.get("meta").and_then(|m| m.get("images"));
            for r in &refs {
                fills.insert(
                    r.clone(),
                    images.and_then(|i| i.get(r)).and_then(Value::as_str).map(str::to_owned),
                );
            }
        }
        let mut svgs = BTreeMap::new();
        for batch in svg_ids.chunks(SVG_BATCH) {
            let ids = batch.join(",");
            let answer = c.get_json(&format!(
                "/v1/images/{file_key}?ids={}&format=svg",
                encode(&ids)
            ))?;
            for id in batch {
                svgs.insert(
                    id.clone(),
                    answer.get("images").and_then(|i| i.get(id)).and_then(Value::as_str).map(str::to_owned),
                );
            }
        }
        // Figma's own render is for comparison: only the refusals every call shares fail
        // the sync; a render Figma cannot make (a timeout, a frame too large) is skipped.
        let render = match c.get_json(&format!(
            "/v1/images/{file_key}?ids={}&format=png&scale={scale:.4}",
            encode(&node_id)
        )) {
            Ok(answer) => answer
                .get("images")
                .and_then(|i| i.get(&node_id))
                .and_then(Value::as_str)
                .map(str::to_owned),
            Err(e @ (FigmaError::Forbidden(_) | FigmaError::NotFound(_) | FigmaError::RateLimited { .. })) => {
                return Err(e);
            }
            Err(e) => {
                tracing::warn!(error = %e, "Figma did not render the frame; the sync goes on without its render");
                None
            }
        };
        Ok((fills, svgs, render))
    })
    .await?
    .map_err(|e| job_error(e, &job.file_key))?;
    let (fills, svgs, render) = urls;

    // Every download, eight at a time on blocking threads.
    let mut wanted: Vec<(String, String)> = Vec::new(); // (placeholder, url)
    let mut missing: Vec<(String, String)> = Vec::new(); // (placeholder, reason)
    for (r, url) in &fills {
        let placeholder = format!("{IMAGE_PLACEHOLDER}{r}");
        match url {
            Some(u) => wanted.push((placeholder, u.clone())),
            None => missing.push((placeholder, "Figma has no image behind this fill".into())),
        }
    }
    for (id, url) in &svgs {
        let placeholder = format!("{SVG_PLACEHOLDER}{id}");
        match url {
            Some(u) => wanted.push((placeholder, u.clone())),
            None => missing.push((
                placeholder,
                "Figma could not export this node as SVG".into(),
            )),
        }
    }
    if let Some(u) = &render {
        wanted.push(("render".into(), u.clone()));
    }
    let c = client.clone();
    let downloaded = blocking(move || {
        let mut out: Vec<(String, Result<Vec<u8>, String>)> = Vec::with_capacity(wanted.len());
        for chunk in wanted.chunks(PARALLEL_DOWNLOADS) {
            std::thread::scope(|s| {
                let handles: Vec<_> = chunk
                    .iter()
                    .map(|(ph, url)| {
                        let c = &c;
                        (ph.clone(), s.spawn(move || c.download(url)))
                    })
                    .collect();
                for (ph, h) in handles {
                    let r = h
                        .join()
                        .unwrap_or_else(|_| Err("download thread failed".into()));
                    out.push((ph, r));
                }
            });
        }
        out
    })
    .await?;

    let mut stored: BTreeMap<String, String> = BTreeMap::new(); // placeholder → our URL
    let mut render_key = None;
    for (placeholder, bytes) in downloaded {
        let bytes = match bytes {
            Ok(b) => b,
            Err(e) if placeholder == "render" => {
                tracing::warn!(subject = %job.subject_id, error = %e, "Figma's render could not be downloaded");
                continue;
            }
            // A download that failed at the network may work on a later attempt.
            Err(e)
                if !e.contains("http status: 4")
                    && !e.contains(adforge_renderer::address::REFUSED) =>
            {
                return Err(JobError::retry(format!("downloading a Figma image: {e}")));
            }
            Err(e) => {
                missing.push((placeholder, format!("its download failed: {e}")));
                continue;
            }
        };
        if placeholder == "render" {
            let key = format!("figma/renders/{}/v{}.png", job.subject_id, job.version);
            p.services
                .blobs
                .put(&key, Bytes::from(bytes))
                .await
                .map_err(|e| JobError::retry(format!("storing {key}: {e}")))?;
            render_key = Some(key);
            continue;
        }
        let ext = match image_extension(&bytes) {
            Ok(e) => e,
            Err(why) => {
                missing.push((placeholder, why));
                continue;
            }
        };
        let key = format!("figma/files/{}.{ext}", hex(&Sha256::digest(&bytes)));
        if !p.services.blobs.exists(&key).await.unwrap_or(false) {
            p.services
                .blobs
                .put(&key, Bytes::from(bytes.clone()))
                .await
                .map_err(|e| JobError::retry(format!("storing {key}: {e}")))?;
        }
        let url = p.services.blobs.url(&key);
        p.services.fetcher.keep(&url, bytes);
        stored.insert(placeholder, url);
    }
    replace_placeholders(imported, &stored, &missing);
    Ok((render_key, stored.into_values().collect()))
}

/// Points the tree's placeholders at the stored files; paints whose image is missing are
/// hidden and reported.
fn replace_placeholders(
    imported: &mut Imported,
    stored: &BTreeMap<String, String>,
    missing: &[(String, String)],
) {
    let mut doc = TreeDoc::new(&mut imported.tree);
    for paint in doc.image_paints() {
        if let Some(url) = stored.get(&paint.url) {
            let _ = doc.set_image_url(&paint.at, paint.field, url);
        } else if let Some((_, why)) = missing.iter().find(|(ph, _)| *ph == paint.url) {
            let at = paint.at.clone();
            let _ = doc.set_image_visible(&at, false);
            let _ = doc.set_image_url(
                &at,
                ImageField::FillUrl,
                "https://figma.invalid/missing.png",
            );
            let (figma_id, name) = doc
                .node(&at.node)
                .map(|n| {
                    (
                        n.get("figmaId")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        n.get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    )
                })
                .unwrap_or_default();
            imported.report.unmapped.push(Unmapped {
                node: at.node.clone(),
                figma_id,
                name,
                feature: format!("{} image", at.path()),
                reason: format!("not drawn: {why}"),
            });
        }
    }
}
