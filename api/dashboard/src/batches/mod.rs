//! Batches of image ads (issue 42, item 4): the batches list, the creation form with a
//! "Review" step showing the price before anything is made ([`form`]), and a batch's page
//! with its counts, progress, charges, its ads as they complete, filters by size and
//! product, the ZIP download and cancel ([`page`]).
//!
//! Everything goes through the functions the `/v1/image-ad-batches` handlers call
//! (`image_ad_batches::create`, `get`, `list`, `cancel`, `zip_stream`) and the ads list
//! (`image_ads::list` with `batch_id`), so validation, isolation, billing and messages are
//! the API's; a domain error is shown on the page with the API's status code.
//!
//! Live progress: a processing batch's page does not reload itself (`<meta
//! http-equiv=refresh>` is axe-core's critical `meta-refresh`, WCAG 2.2.1, unlike the single
//! ad's page whose wait is seconds); a status region says it is processing with a
//! "Refresh" link, and the dashboard's script fetches the page again every
//! [`crate::ads::REFRESH_SECS`] seconds and swaps its `data-live` regions (counts, actions,
//! the ads) in place, keeping the focus, until the batch ends.

use std::fmt::Write;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::routing::{get, post};

use crate::html::{esc, notice, page, when};
use crate::members::SessionMember;
use crate::{DashError, DashResult, DashboardState, SignedIn, html, query};
use adforge_api::error::{ApiError, ErrorCode};
use adforge_api::resources::image_ad_batches::{self, BatchFilter, ImageAdBatch};
use adforge_api::state::AppState;
use adforge_api::store::list::ListParams;

mod form;
mod view;

/// Batches per page of the list.
const LIST_PAGE: i64 = 25;
/// The navigation entry of these pages.
const ACTIVE: &str = "/dashboard/batches";

pub fn routes() -> Router<DashboardState> {
    Router::new()
        .route("/batches", get(list))
        .route("/batches/new", get(form::new_form).post(form::submit))
        .route("/batches/{id}", get(view::show))
        .route("/batches/{id}/download", get(view::download))
        .route("/batches/{id}/cancel", post(view::cancel))
}

/// An API error where the page has no form: an unknown batch (or another organisation's)
/// is the 404 page, anything else a failure.
fn dash(e: ApiError) -> DashError {
    if matches!(
        e.code,
        ErrorCode::ImageAdBatchNotFound | ErrorCode::ImageAdNotFound
    ) {
        DashError::NotFound
    } else {
        DashError::Internal(format!("{:?}: {}", e.code, e.message))
    }
}

fn status_label(s: &str) -> &str {
    match s {
        "cancelled" => "Cancelled",
        other => crate::ads::status_label(other),
    }
}

/// `ended of ad_count ads ended` with a `<progress>`.
fn progress_bar(b: &ImageAdBatch) -> String {
    let ended = b.counts.ended();
    format!(
        r#"<div class="progress"><progress max="{n}" value="{ended}" aria-label="Progress of batch {id}">{pct}%</progress><span>{ended} of {n} ads ended · {pct}%</span></div>"#,
        n = b.ad_count.max(1),
        id = esc(&b.id),
        pct = (b.progress * 100.0).round(),
    )
}

fn money(cents: i64) -> String {
    adforge_api::wallet::dollars(cents)
}

/// GET /dashboard/batches: newest first, paged by cursor.
async fn list(State(state): State<AppState>, me: SignedIn, uri: Uri) -> DashResult {
    let m = &me.0;
    let q = query(&uri);
    let after = q.get("starting_after").unwrap_or("").trim().to_string();
    let p = ListParams {
        limit: LIST_PAGE,
        starting_after: Some(after.clone()).filter(|a| !a.is_empty()),
        ids: None,
        facets: vec![],
    };
    let listed = image_ad_batches::list(&state.db, &m.org_id, &BatchFilter::default(), &p).await;
    let (status, problem, table, more) = match listed {
        Ok(page) => {
            let more = page
                .has_more
                .then(|| page.items.last().map(|b| b.id.clone()))
                .flatten();
            (StatusCode::OK, String::new(), rows(&page.items), more)
        }
        Err(e) => {
            let (s, text) = crate::ads::api_message(e)?;
            (
                s,
                notice("error", &format!("<p>{text}</p>")),
                String::new(),
                None,
            )
        }
    };
    let pager = more
        .map(|last| {
            format!(
                r#"<p class="pager"><a class="button secondary" href="/dashboard/batches?starting_after={}">Older batches</a></p>"#,
                esc(&last)
            )
        })
        .unwrap_or_default();
    let first = if after.is_empty() {
        String::new()
    } else {
        r#"<p class="pager"><a href="/dashboard/batches">Back to the newest</a></p>"#.to_string()
    };
    let body = format!(
        r#"{problem}<p class="toolbar"><a class="button" href="/dashboard/batches/new">New batch</a></p>
<p class="hint">A batch makes many ads at once: products × references or design templates × sizes. Each ad is charged as a single ad is, when it completes.</p>
{first}{table}{pager}"#
    );
    Ok(html(status, page("Batches", Some(m), ACTIVE, &body)))
}

/// The list's table (cards on a phone, through the stylesheet's `data-label`s).
fn rows(items: &[ImageAdBatch]) -> String {
    if items.is_empty() {
        return r#"<p class="empty">No batches yet. <a href="/dashboard/batches/new">Make the first one</a>.</p>"#.to_string();
    }
    let mut out = String::from(
        r#"<table class="stack batches"><caption class="sr-only">Batches, newest first</caption><thead><tr><th scope="col">Batch</th><th scope="col">Status</th><th scope="col">Progress</th><th scope="col">Charged</th><th scope="col">Created</th></tr></thead><tbody>"#,
    );
    for b in items {
        let _ = write!(
            out,
            r#"<tr id="{id}"><td data-label="Batch"><a href="/dashboard/batches/{id}">{id}</a><br><small>{n} ads · {kind}</small></td><td data-label="Status"><span class="status {st}">{stl}</span></td><td data-label="Progress">{progress}</td><td data-label="Charged">{charged} <small>of {total}</small></td><td data-label="Created">{created}</td></tr>"#,
            id = esc(&b.id),
            n = b.ad_count,
            kind = if b.editable { "editable" } else { "flat" },
            st = esc(&b.status),
            stl = esc(status_label(&b.status)),
            progress = progress_bar(b),
            charged = money(b.amount_charged.amount),
            total = money(b.total_price.amount),
            created = esc(&when(&b.created_at)),
        );
    }
    out.push_str("</tbody></table>");
    out
}

/// The member's page of a batch area.
fn batch_page(m: &SessionMember, title: &str, body: &str) -> String {
    page(title, Some(m), ACTIVE, body)
}
