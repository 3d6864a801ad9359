//! The swipe file: upload many designs at once (a plain multi-file form; with the page's
//! small script, drag and drop and one request per file with progress), browse with the
//! list's facets and filters, text search and "more like this", archive and restore, the
//! data-source toggles, and "add to pack" for the checked designs.
//!
//! Every action calls the functions the `/v1/swipe-files` handlers call
//! (`swipe_files::create`, `list`, `search`, `set_archived`, `subscribe`), so validation,
//! visibility and errors are the API's; an API error is shown as a page with its message
//! and status (a 404 is the dashboard's not-found page).
//!
//! While designs are being analysed, a status region above the grid says how many, with a
//! "Refresh" link; the page's script polls `/dashboard/swipe/designs` and swaps each card
//! in place when it is ready (no `<meta http-equiv=refresh>`: a reload the reader cannot
//! stop fails WCAG 2.2.1 and loses their place and their checked boxes).
//!
//! The facets sit in a `<details>`: CSS shows them on a desktop (summary hidden) and folds
//! them below 721 px, open when a filter is chosen; no script. Each design's checkbox is
//! named "Select {label}, design {id}", as two designs can share a label.

use std::fmt::Write;

use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;

use crate::html::{csrf_field, esc, notice, page};
use crate::members::SessionMember;
use crate::{DashError, DashResult, Form, SignedIn, html, html_with_images, query, redirect};
use adforge_api::error::ApiError;
use adforge_api::resources::design_packs;
use adforge_api::resources::swipe_files::{self, OneOrMany, SearchBody, SwipeFile};
use adforge_api::state::AppState;
use adforge_api::store::list::ListParams;
use adforge_api::swipe::filter::SwipeFilter;
use adforge_worker::swipe::taxonomy;

mod actions;
mod page;
mod view;

use actions::{archive, restore, subscription, upload};
use page::{cards, render, show, uploaded_notice};
use view::{View, filter_form};

/// Designs per page.
const PAGE_SIZE: i64 = 48;

/// An API error as a dashboard page: 404 is the not-found page, server faults the failure
/// page, anything else the API's message and field details with its status.
pub fn api_error(m: &SessionMember, title: &str, active: &str, e: ApiError) -> DashResult {
    let status = e.code.status();
    if status == StatusCode::NOT_FOUND {
        return Err(DashError::NotFound);
    }
    if status.is_server_error() && status != StatusCode::SERVICE_UNAVAILABLE {
        return Err(DashError::Internal(
            e.internal.clone().unwrap_or_else(|| e.message.clone()),
        ));
    }
    Ok(html(status, page(title, Some(m), active, &error_box(&e))))
}

/// The notice of an API error: its message and each field problem.
pub fn error_box(e: &ApiError) -> String {
    let mut details = String::new();
    for d in &e.details {
        let _ = write!(
            details,
            "<li><code>{}</code> {}</li>",
            esc(&d.field),
            esc(&d.message)
        );
    }
    if !details.is_empty() {
        details = format!("<ul>{details}</ul>");
    }
    notice("error", &format!("<p>{}</p>{details}", esc(&e.message)))
}

/// The blob store's origin when it is not this server (an S3 bucket's), for the page's
/// `img-src`.
pub fn blob_origins(state: &AppState) -> Vec<String> {
    let base = state.blobs.url("");
    let Some((scheme, rest)) = base.split_once("://") else {
        return Vec::new();
    };
    let host = rest.split('/').next().unwrap_or("");
    if host.is_empty() || host.contains(|c: char| c.is_whitespace() || c == ';' || c == '\'') {
        return Vec::new();
    }
    vec![format!("{scheme}://{host}")]
}

/// A design's card: preview, labels, and its actions as buttons of the surrounding form
/// (`formaction`), so the grid needs no nested forms.
pub fn design_card(f: &SwipeFile, with_check: bool, actions: &str) -> String {
    let alt = label_of(f);
    let img = match &f.thumbnail_url {
        Some(u) => format!(
            r#"<img src="{}" alt="{}" loading="lazy" width="200" height="{}">"#,
            esc(u),
            esc(&alt),
            thumb_height(f)
        ),
        None => format!(
            r#"<div class="placeholder">{}</div>"#,
            esc(match f.status.as_str() {
                "failed" => "Failed",
                _ => "Processing…",
            })
        ),
    };
    let check = if with_check {
        format!(
            r#"<label class="check pick" for="pick-{id}"><input type="checkbox" id="pick-{id}" name="swipe_file_id" value="{id}"> <span class="sr-only">Select {alt}, design {id}</span><span aria-hidden="true">Select</span></label>"#,
            id = esc(&f.id),
            alt = esc(&alt),
        )
    } else {
        String::new()
    };
    let sim = f
        .similarity
        .map(|s| format!(r#" <span class="badge" title="Cosine similarity to the search, -1 to 1">similarity {s:.2}</span>"#))
        .unwrap_or_default();
    let meta = [
        f.aspect_ratio.clone(),
        f.width.zip(f.height).map(|(w, h)| format!("{w}×{h}")),
        f.is_managed.then(|| "managed".to_string()),
        f.archived_at.as_ref().map(|_| "archived".to_string()),
        (f.status != "ready").then(|| f.status.clone()),
    ]
    .into_iter()
    .flatten()
    .map(|s| esc(&s))
    .collect::<Vec<_>>()
    .join(" · ");
    format!(
        r#"<li class="design" id="{id}" data-status="{status}">{img}<div class="design-body"><p class="design-label">{label}{sim}</p><p class="hint">{meta}</p>{check}<div class="design-actions">{actions}</div></div></li>"#,
        id = esc(&f.id),
        status = esc(&f.status),
        label = esc(&alt),
    )
}

fn thumb_height(f: &SwipeFile) -> i64 {
    match (f.width, f.height) {
        (Some(w), Some(h)) if w > 0 => (200 * h / w).clamp(50, 400),
        _ => 200,
    }
}

/// "Format · industry" in words, or "Design" while neither is known.
fn label_of(f: &SwipeFile) -> String {
    let parts: Vec<&str> = [
        f.ad_format.as_deref().map(taxonomy::ad_format_name),
        f.industry.as_deref().map(taxonomy::industry_name),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        "Design".to_string()
    } else {
        parts.join(" · ")
    }
}

fn facet_name(dim: &str, v: &str) -> String {
    match dim {
        "industry" => taxonomy::industry_name(v).to_string(),
        "ad_format" => taxonomy::ad_format_name(v).to_string(),
        _ => v.to_string(),
    }
}

/// The routes of this page.
pub fn routes() -> axum::Router<crate::DashboardState> {
    use axum::routing::{get, post};
    axum::Router::new()
        .route("/swipe", get(show))
        .route("/swipe/designs", get(cards))
        .route("/swipe/upload", post(upload))
        .route("/swipe/{id}/archive", post(archive))
        .route("/swipe/{id}/restore", post(restore))
        .route("/swipe/sources/{id}", post(subscription))
        .route("/assets/dashboard.js", get(script))
}

/// The swipe page's script, compiled in.
const JS: &str = include_str!("../../../../assets/dashboard/dashboard.js");

async fn script() -> Response {
    use axum::response::IntoResponse;
    (
        [
            (
                axum::http::header::CONTENT_TYPE,
                "text/javascript; charset=utf-8",
            ),
            (axum::http::header::CACHE_CONTROL, "public, max-age=300"),
        ],
        JS,
    )
        .into_response()
}
