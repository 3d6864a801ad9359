//! Image ads: the gallery (the API list's filters, status facets and cursor paging), the
//! detail page with every version side by side and a PNG download, the plain form of an
//! editable ad's texts, solid colours and image URLs (the visual editor is
//! `crate::editor`), and the create form.
//!
//! Everything goes through the functions the `/v1/image-ads` handlers call
//! (`image_ads::list_page`, `get`, `versions`, `update`, `create_from`; uploads through
//! `images::upload_bytes`, swipe-file references through `swipe_files::load`), so the same
//! validation, isolation, billing and error messages apply; an API error is shown as a
//! message on the form with the API's status code. Only the option lists of the forms
//! (brands, products, audiences, variants by name) are read here directly.
//!
//! Live progress: a page showing a processing ad carries `<meta http-equiv="refresh">`
//! every [`REFRESH_SECS`] seconds (the API's recommended poll interval) and stops once
//! nothing on it is processing. No JavaScript: the content policy keeps forbidding scripts.
//! The cost: a refresh moves focus to the top of the page, so the refresh notice says so.

use std::collections::HashSet;
use std::fmt::Write;

use adforge_renderer::tree::{PaintList, Slot, TreeDoc};
use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::IntoResponse;
use serde_json::Value;

use crate::html::{csrf_field, esc, notice, page_with_head, when};
use crate::members::SessionMember;
use crate::{DashError, DashResult, SignedIn, html_with_images, query, redirect, same_secret};
use adforge_api::blob::OwnFile;
use adforge_api::error::{ApiError, ErrorCode};
use adforge_api::resources::image_ads::{
    self, ImageAd, ImageAdCreate, ImageAdUpdate, ImageAdVersion,
};
use adforge_api::resources::{images, swipe_files};
use adforge_api::state::AppState;
use adforge_api::store::list::ListParams;

/// Ads per gallery page.
pub const GALLERY_PAGE: i64 = 24;
/// Seconds between refreshes of a page that shows a processing ad.
pub const REFRESH_SECS: u32 = 4;
/// Width of a gallery thumbnail in CSS pixels (a 600 px WebP made from the PNG on first
/// view, [`thumb`]).
const THUMB_WIDTH: i64 = 240;

/// An API error where the page has no form to show it on: an unknown ad (or another
/// organisation's) is the 404 page, anything else a failure.
fn dash(e: ApiError) -> DashError {
    if e.code == ErrorCode::ImageAdNotFound {
        DashError::NotFound
    } else {
        DashError::Internal(format!("{:?}: {}", e.code, e.message))
    }
}

/// An API error as a message for the page, with its status; server errors stay errors.
pub(crate) fn api_message(e: ApiError) -> Result<(StatusCode, String), DashError> {
    let status = e.code.status();
    if status.is_server_error() {
        return Err(DashError::Internal(format!("{:?}: {}", e.code, e.message)));
    }
    let mut text = esc(&e.message);
    for d in &e.details {
        let _ = write!(
            text,
            "<br><code>{}</code>: {}",
            esc(&d.field),
            esc(&d.message)
        );
    }
    if e.code == ErrorCode::InsufficientBalance {
        text.push_str(
            r#"<br><a href="/dashboard/wallet">Go to the wallet</a> to see the balance and how to top up."#,
        );
    }
    Ok((status, text))
}

pub(crate) fn status_label(s: &str) -> &str {
    match s {
        "processing" => "Processing",
        "completed" => "Completed",
        "failed" => "Failed",
        other => other,
    }
}

/// The progress bar and step of a processing ad.
pub(crate) fn progress_html(ad: &ImageAd) -> String {
    let (pct, msg) = ad
        .progress
        .as_ref()
        .map_or((0, "Waiting for a worker"), |p| {
            (p.percentage, p.message.as_str())
        });
    format!(
        r#"<div class="progress"><progress max="100" value="{pct}" aria-label="Progress of {id}">{pct}%</progress><span>{msg} · {pct}%</span></div>"#,
        id = esc(&ad.id),
        msg = esc(msg),
    )
}

/// The `<meta http-equiv="refresh">` of a page showing a processing ad. The URL is given
/// (without a fragment): a bare refresh of a URL with a `#fragment` is only a scroll in
/// Chromium, never a reload.
fn refresh_head(any_processing: bool, url: &str) -> String {
    if any_processing {
        format!(
            r#"<meta http-equiv="refresh" content="{REFRESH_SECS}; url={}">"#,
            esc(url)
        )
    } else {
        String::new()
    }
}

fn refresh_note(any_processing: bool) -> String {
    if any_processing {
        notice(
            "ok",
            &format!(
                "<p>An ad is processing: this page reloads every {REFRESH_SECS} seconds until it is done (focus returns to the top).</p>"
            ),
        )
    } else {
        String::new()
    }
}

use crate::store::catalog::{Named, catalog};

mod create;
mod detail;
mod editor;
mod files;
mod gallery;
mod sizes;

pub use create::{create, create_form};
pub use detail::detail;
pub(crate) use editor::{cannot_edit, editable};
pub use editor::{edit_form, edit_submit};
pub use files::{download, thumb};
pub use gallery::gallery;
pub use sizes::make_sizes;
pub(crate) use sizes::{placement_checks, size_label};

fn name_of<'a>(list: &'a Named, id: &str) -> Option<&'a str> {
    list.iter()
        .find(|(i, _, _)| i == id)
        .map(|(_, n, _)| n.as_str())
}

/// `<option>`s of `items`, grouped under their parent's name when `parents` is given.
fn options(items: &Named, parents: Option<&Named>, selected: &str) -> String {
    let mut out = String::new();
    let opt = |out: &mut String, id: &str, name: &str| {
        let sel = if id == selected { " selected" } else { "" };
        let _ = write!(
            out,
            r#"<option value="{}"{sel}>{}</option>"#,
            esc(id),
            esc(name)
        );
    };
    match parents {
        None => {
            for (id, name, _) in items {
                opt(&mut out, id, name);
            }
        }
        Some(parents) => {
            for (pid, pname, _) in parents {
                let children: Vec<_> = items.iter().filter(|(_, _, p)| p == pid).collect();
                if children.is_empty() {
                    continue;
                }
                let _ = write!(out, r#"<optgroup label="{}">"#, esc(pname));
                for (id, name, _) in children {
                    opt(&mut out, id, name);
                }
                out.push_str("</optgroup>");
            }
        }
    }
    out
}

/// `scheme://host[:port]` of an http(s) URL whose host part is plain (no user info, no
/// characters that could break out of a content-policy source).
fn origin(u: &str) -> Option<String> {
    let lower = u.to_ascii_lowercase();
    let scheme = if lower.starts_with("https://") {
        "https"
    } else if lower.starts_with("http://") {
        "http"
    } else {
        return None;
    };
    let rest = &lower[scheme.len() + 3..];
    let host = rest.split(['/', '?', '#']).next()?;
    let plain = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'));
    plain.then(|| format!("{scheme}://{host}"))
}

/// The origins of the images a page shows, for its content policy.
pub(crate) fn origins<'a>(urls: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for u in urls {
        if let Some(o) = origin(u)
            && seen.insert(o.clone())
        {
            out.push(o);
        }
    }
    out
}
