//! Image ads: the gallery (the API list's filters, status facets and cursor paging), the
//! detail page with every version side by side and a PNG download, the editor of an
//! editable ad's texts, solid colours and image URLs, and the create form.
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
use adforge_api::resources::image_ads::{self, ImageAd, ImageAdCreate, ImageAdVersion};
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
fn api_message(e: ApiError) -> Result<(StatusCode, String), DashError> {
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

fn status_label(s: &str) -> &str {
    match s {
        "processing" => "Processing",
        "completed" => "Completed",
        "failed" => "Failed",
        other => other,
    }
}

/// The progress bar and step of a processing ad.
fn progress_html(ad: &ImageAd) -> String {
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
fn origins<'a>(urls: impl Iterator<Item = &'a str>) -> Vec<String> {
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

// ---------------------------------------------------------------------------------------
// Gallery
// ---------------------------------------------------------------------------------------

const FILTERS: [&str; 5] = ["status", "brand_id", "product_id", "editable", "search"];

/// The gallery's filters (`FILTERS`, from the page's query) as the API's typed filter.
///
/// # Errors
/// VALIDATION_ERROR naming `editable` when it is neither `true` nor `false`.
fn gallery_filter(value: &dyn Fn(&str) -> String) -> Result<image_ads::ImageAdFilter, ApiError> {
    let csv = |k: &str| crate::csv(&value(k));
    let editable = match value("editable").as_str() {
        "" => None,
        "true" => Some(true),
        "false" => Some(false),
        other => {
            return Err(ApiError::field(
                "editable",
                format!("must be one of true, false, not `{other}`"),
            ));
        }
    };
    let search = Some(value("search")).filter(|s| !s.is_empty());
    Ok(image_ads::ImageAdFilter {
        status: csv("status"),
        brand_id: csv("brand_id"),
        product_id: csv("product_id"),
        editable,
        search,
        ..Default::default()
    })
}

/// GET /dashboard/ads
pub async fn gallery(State(state): State<AppState>, me: SignedIn, uri: Uri) -> DashResult {
    let m = &me.0;
    let q = query(&uri);
    let q_string = uri.query().unwrap_or("").to_string();
    let value = |k: &str| q.get(k).unwrap_or("").trim().to_string();
    // The page's filters as the API's typed filter, status facets, the cursor.
    let after = value("starting_after");
    let kept = {
        let mut kept = form_urlencoded::Serializer::new(String::new());
        for f in FILTERS {
            let v = value(f);
            if !v.is_empty() {
                kept.append_pair(f, &v);
            }
        }
        kept.finish()
    };
    let cat = catalog(&state.db, &m.org_id).await?;
    let listed = match gallery_filter(&value) {
        Ok(filter) => {
            let p = ListParams {
                limit: GALLERY_PAGE,
                starting_after: Some(after.clone()).filter(|a| !a.is_empty()),
                ids: None,
                facets: vec!["status"],
            };
            image_ads::list(&state.db, &state.jobs, &m.org_id, &filter, &p).await
        }
        Err(e) => Err(e),
    };
    let (status, problem, page) = match listed {
        Ok(p) => (StatusCode::OK, None, Some(p)),
        Err(e) => {
            let (s, text) = api_message(e)?;
            (s, Some(text), None)
        }
    };

    // Status facet: "All" and one link per status with its count.
    let mut facet_links = String::new();
    let current_status = value("status");
    let facet_counts: Vec<(String, i64)> = page
        .as_ref()
        .and_then(|p| p.facets.as_ref())
        .and_then(|f| f.get("status"))
        .map(|v| v.iter().map(|f| (f.value.clone(), f.count)).collect())
        .unwrap_or_default();
    let without_status = {
        let mut s = form_urlencoded::Serializer::new(String::new());
        for f in FILTERS.iter().filter(|f| **f != "status") {
            let v = value(f);
            if !v.is_empty() {
                s.append_pair(f, &v);
            }
        }
        s.finish()
    };
    let all_count: i64 = facet_counts.iter().map(|(_, n)| n).sum();
    let link = |label: &str, status: &str, count: i64| {
        let mut qs = without_status.clone();
        if !status.is_empty() {
            if !qs.is_empty() {
                qs.push('&');
            }
            qs.push_str("status=");
            qs.push_str(status);
        }
        let cur = if current_status == status {
            r#" aria-current="true""#
        } else {
            ""
        };
        format!(
            r#"<li><a href="/dashboard/ads{sep}{qs}"{cur} id="facet-{id}">{label} <span class="count">{count}</span></a></li>"#,
            sep = if qs.is_empty() { "" } else { "?" },
            qs = esc(&qs),
            id = if status.is_empty() { "all" } else { status },
            label = esc(label),
        )
    };
    facet_links.push_str(&link("All", "", all_count));
    for s in ["processing", "completed", "failed"] {
        let n = facet_counts
            .iter()
            .find(|(v, _)| v == s)
            .map_or(0, |(_, n)| *n);
        facet_links.push_str(&link(status_label(s), s, n));
    }

    let mut cards = String::new();
    let mut any_processing = false;
    let mut image_urls: Vec<String> = Vec::new();
    if let Some(p) = &page {
        for ad in &p.items {
            let product = name_of(&cat.products, &ad.product_id).unwrap_or(&ad.product_id);
            let visual = match (&ad.image_url, ad.status.as_str()) {
                (Some(url), _) => {
                    image_urls.push(url.clone());
                    let h = match (ad.width, ad.height) {
                        (Some(w), Some(h)) if w > 0 => h * THUMB_WIDTH / w,
                        _ => THUMB_WIDTH,
                    };
                    format!(
                        r#"<img src="/dashboard/ads/{}/thumb?of={}" width="{THUMB_WIDTH}" height="{h}" loading="lazy" decoding="async" alt="Ad for {}">"#,
                        esc(&ad.id),
                        esc(url.rsplit('/').next().unwrap_or("")),
                        esc(product)
                    )
                }
                (None, "processing") => {
                    any_processing = true;
                    format!(r#"<div class="placeholder">{}</div>"#, progress_html(ad))
                }
                (None, _) => {
                    let why = ad.error.as_ref().map_or("No image", |e| e.message.as_str());
                    format!(r#"<div class="placeholder failed">{}</div>"#, esc(why))
                }
            };
            if ad.status == "processing" {
                any_processing = true;
            }
            let extra = if ad.status == "processing" && ad.image_url.is_some() {
                progress_html(ad)
            } else {
                String::new()
            };
            let _ = write!(
                cards,
                r#"<li class="ad-card" id="{id}"><a href="/dashboard/ads/{id}" class="thumb">{visual}</a>
<div class="ad-meta"><a href="/dashboard/ads/{id}"><strong>{product}</strong></a>
<span class="status {st}">{stl}</span>{ed}<br><small>{id} · {created}</small>{extra}</div></li>"#,
                id = esc(&ad.id),
                product = esc(product),
                st = esc(&ad.status),
                stl = esc(status_label(&ad.status)),
                ed = if ad.editable {
                    r#" <span class="badge">editable</span>"#
                } else {
                    ""
                },
                created = esc(&when(&ad.created_at)),
            );
        }
        if p.items.is_empty() {
            cards.push_str(r#"<li class="empty">No ads match.</li>"#);
        }
    }
    let next = match &page {
        Some(p) if p.has_more => p.items.last().map_or_else(String::new, |last| {
            format!(
                r#"<p class="pager"><a class="button secondary" href="/dashboard/ads?{}{}starting_after={}">Older ads</a></p>"#,
                esc(&kept),
                if kept.is_empty() { "" } else { "&amp;" },
                esc(&last.id)
            )
        }),
        _ => String::new(),
    };
    let first = if after.is_empty() {
        String::new()
    } else {
        format!(
            r#"<p class="pager"><a href="/dashboard/ads{}{}">Back to the newest</a></p>"#,
            if kept.is_empty() { "" } else { "?" },
            esc(&kept)
        )
    };
    let editable = value("editable");
    let sel = |v: &str| if editable == v { " selected" } else { "" };
    let total = page.as_ref().map_or(0, |p| p.total_count);
    let body = format!(
        r#"{note}{problem}<p class="toolbar"><a class="button" href="/dashboard/ads/new">Create an ad</a></p>
<form method="get" action="/dashboard/ads" class="filters" role="search" aria-label="Filter the ads">
<input type="hidden" name="status" value="{status}">
<div><label for="f-brand">Brand</label><select id="f-brand" name="brand_id"><option value="">All brands</option>{brands}</select></div>
<div><label for="f-product">Product</label><select id="f-product" name="product_id"><option value="">All products</option>{products}</select></div>
<div><label for="f-editable">Kind</label><select id="f-editable" name="editable"><option value="">Flat and editable</option><option value="true"{se_t}>Editable</option><option value="false"{se_f}>Flat</option></select></div>
<div><label for="f-search">Search</label><input id="f-search" name="search" type="search" value="{search}" maxlength="200" placeholder="Ad id or product name"></div>
<div class="filter-actions"><button type="submit">Filter</button> <a class="button secondary" href="/dashboard/ads">Clear</a></div>
</form>
<nav aria-label="Status"><ul class="status-facets">{facet_links}</ul></nav>
<p class="hint" id="ad-count">{count_text}</p>
{first}<ul class="gallery" aria-label="Image ads">{cards}</ul>{next}"#,
        note = refresh_note(any_processing),
        problem = problem
            .map(|p| notice("error", &format!("<p>{p}</p>")))
            .unwrap_or_default(),
        status = esc(&current_status),
        brands = options(&cat.brands, None, &value("brand_id")),
        products = options(&cat.products, Some(&cat.brands), &value("product_id")),
        se_t = sel("true"),
        se_f = sel("false"),
        search = esc(&value("search")),
        count_text = if total == 1 {
            "1 ad matches.".to_string()
        } else {
            format!("{total} ads match.")
        },
    );
    let here = if q_string.is_empty() {
        "/dashboard/ads".to_string()
    } else {
        format!("/dashboard/ads?{q_string}")
    };
    let head = refresh_head(any_processing, &here);
    Ok(html_with_images(
        status,
        page_with_head("Image ads", Some(m), "/dashboard/ads", &body, &head),
        &origins(image_urls.iter().map(String::as_str)),
    ))
}

// ---------------------------------------------------------------------------------------
// Detail
// ---------------------------------------------------------------------------------------

fn version_card(ad_id: &str, v: &ImageAdVersion, current: bool) -> String {
    let visual = match (&v.image_url, v.status.as_str()) {
        (Some(_), _) => format!(
            r#"<img src="/dashboard/ads/{}/thumb?version={n}" width="{w}" height="{h}" alt="Version {n}">"#,
            esc(ad_id),
            w = 480,
            h = match (v.width, v.height) {
                (Some(w), Some(h)) if w > 0 => h * 480 / w,
                _ => 480,
            },
            n = v.version_number
        ),
        (None, "processing") => r#"<div class="placeholder">Rendering…</div>"#.to_string(),
        (None, _) => r#"<div class="placeholder failed">Failed</div>"#.to_string(),
    };
    let download = if v.image_url.is_some() {
        format!(
            r#" · <a href="/dashboard/ads/{}/download?version={n}" download>Download PNG</a>"#,
            esc(ad_id),
            n = v.version_number
        )
    } else {
        String::new()
    };
    format!(
        r#"<li class="version{cur}" id="version-{n}"><figure>{visual}<figcaption><strong>Version {n}</strong>{curl} <span class="status {st}">{stl}</span><br><small>{created}</small>{download}</figcaption></figure></li>"#,
        cur = if current { " current" } else { "" },
        curl = if current { " (current)" } else { "" },
        n = v.version_number,
        st = esc(&v.status),
        stl = esc(status_label(&v.status)),
        created = esc(&when(&v.created_at)),
    )
}

/// GET /dashboard/ads/{id}
pub async fn detail(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
) -> DashResult {
    let m = &me.0;
    let ad = image_ads::get(&state.db, &state.jobs, &m.org_id, &id)
        .await
        .map_err(dash)?;
    let versions = image_ads::versions(&state.db, &m.org_id, &id)
        .await
        .map_err(dash)?;
    let cat = catalog(&state.db, &m.org_id).await?;
    let processing = ad.status == "processing";
    let mut urls: Vec<&str> = Vec::new();
    if let Some(u) = &ad.image_url {
        urls.push(u);
    }
    let main = match &ad.image_url {
        Some(url) => format!(
            r#"<img src="{}" width="{w}" height="{h}" alt="The ad's current image">"#,
            esc(url),
            w = 480,
            h = match (ad.width, ad.height) {
                (Some(w), Some(h)) if w > 0 => h * 480 / w,
                _ => 480,
            }
        ),
        None if processing => format!(r#"<div class="placeholder">{}</div>"#, progress_html(&ad)),
        None => r#"<div class="placeholder failed">No image</div>"#.to_string(),
    };
    let named = |list: &Named, id: &str| match name_of(list, id) {
        Some(n) => format!("{} <small><code>{}</code></small>", esc(n), esc(id)),
        None => format!("<code>{}</code>", esc(id)),
    };
    let mut fields = String::new();
    let mut row = |label: &str, value: String| {
        let _ = write!(fields, "<div><dt>{}</dt><dd>{value}</dd></div>", esc(label));
    };
    row(
        "Status",
        format!(
            r#"<span class="status {}" id="ad-status">{}</span>{}"#,
            esc(&ad.status),
            esc(status_label(&ad.status)),
            if processing {
                progress_html(&ad)
            } else {
                String::new()
            }
        ),
    );
    if let Some(e) = &ad.error {
        row(
            "Error",
            format!("<code>{}</code> {}", esc(&e.code), esc(&e.message)),
        );
    }
    row("Brand", named(&cat.brands, &ad.brand_id));
    row("Product", named(&cat.products, &ad.product_id));
    row("Audience", named(&cat.audiences, &ad.audience_id));
    if let Some(v) = &ad.product_variant_id {
        row("Variant", named(&cat.variants, v));
    }
    row(
        "Kind",
        if ad.editable {
            "Editable (PNG and JSON tree)".to_string()
        } else {
            "Flat (PNG)".to_string()
        },
    );
    row(
        "Reference",
        format!(
            r#"<a href="{u}" rel="noreferrer">{u}</a>"#,
            u = esc(&ad.reference_ad_url)
        ),
    );
    if let Some(p) = &ad.prompt {
        row("Prompt", esc(p));
    }
    if let (Some(w), Some(h)) = (ad.width, ad.height) {
        row("Size", format!("{w} × {h} px"));
    }
    row("Created", esc(&when(&ad.created_at)));
    if let Some(c) = &ad.completed_at {
        row("Completed", esc(&when(c)));
    }
    let mut actions = String::new();
    if ad.image_url.is_some() {
        let _ = write!(
            actions,
            r#"<a class="button" href="/dashboard/ads/{}/download" download>Download PNG</a> "#,
            esc(&ad.id)
        );
    }
    if ad.editable && ad.status == "completed" {
        let _ = write!(
            actions,
            r#"<a class="button secondary" href="/dashboard/ads/{}/edit">Edit texts, colours and images</a>"#,
            esc(&ad.id)
        );
    } else if ad.editable && processing {
        actions.push_str(
            r#"<span class="hint">The editor opens once this version has completed.</span>"#,
        );
    }
    let versions_html = if ad.editable {
        let current = versions.last().map_or(0, |v| v.version_number);
        let mut cards = String::new();
        for v in &versions {
            if let Some(u) = &v.image_url {
                urls.push(u);
            }
            if v.status == "processing" {
                // A version renders: keep refreshing even if the ad row says otherwise.
            }
            cards.push_str(&version_card(&ad.id, v, v.version_number == current));
        }
        if versions.is_empty() {
            cards.push_str(
                r#"<li class="empty">The first version appears when the ad completes.</li>"#,
            );
        }
        format!(
            r#"<section aria-labelledby="versions-h"><h2 id="versions-h">Versions</h2><ul class="versions">{cards}</ul></section>"#
        )
    } else {
        String::new()
    };
    let any_processing = processing || versions.iter().any(|v| v.status == "processing");
    let body = format!(
        r#"{note}<p><a href="/dashboard/ads">← All ads</a></p>
<div class="ad-detail"><div class="ad-main">{main}</div>
<div><dl class="fields">{fields}</dl><p class="actions">{actions}</p></div></div>
{versions_html}"#,
        note = refresh_note(any_processing),
    );
    let title = format!("Ad {}", ad.id);
    let origins = origins(urls.into_iter());
    Ok(html_with_images(
        StatusCode::OK,
        page_with_head(
            &title,
            Some(m),
            "/dashboard/ads",
            &body,
            &refresh_head(any_processing, &format!("/dashboard/ads/{}", ad.id)),
        ),
        &origins,
    ))
}

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

// ---------------------------------------------------------------------------------------
// Editor
// ---------------------------------------------------------------------------------------

/// The form field's name of a slot: `text:NODE`, `color:LIST:K:NODE`,
/// `image:LIST:K:FIELD:NODE` (the node id last, so it may contain colons).
fn field_name(slot: &Slot) -> String {
    match slot {
        Slot::Text { node, .. } => format!("text:{node}"),
        Slot::Color { at, .. } => format!("color:{}:{}:{}", at.list.key(), at.index, at.node),
        Slot::Image { at, field, .. } => format!(
            "image:{}:{}:{}:{}",
            at.list.key(),
            at.index,
            field.key(),
            at.node
        ),
    }
}

/// `#rrggbb`, as `<input type="color">` reads and writes it.
fn hex_of([r, g, b]: [u8; 3]) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

fn parse_hex(s: &str) -> Option<[u8; 3]> {
    let h = s.strip_prefix('#')?;
    if h.len() != 6 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let byte = |i: usize| u8::from_str_radix(&h[i..i + 2], 16).ok();
    Some([byte(0)?, byte(2)?, byte(4)?])
}

/// A node's name for a label: its `name` (the generator's "Headline", "Call to action"),
/// else its id.
fn node_label(tree: &TreeDoc<&Value>, id: &str) -> String {
    if tree.root_id() == Some(id) {
        return "Background".to_string();
    }
    tree.name(id).unwrap_or(id).to_string()
}

/// The tree with the form's values applied to its slots (every other field kept as it
/// was): the whole new tree for PATCH.
fn apply(tree: &Value, form: &crate::Form) -> Value {
    let mut out = TreeDoc::new(tree.clone());
    for slot in TreeDoc::new(tree).slots() {
        let Some(v) = form.get(&field_name(&slot)) else {
            continue;
        };
        // Every slot was read from this same tree, so its node and paint are there: an
        // edit cannot fail, and one that did would leave that value as it was.
        let _ = match &slot {
            Slot::Text { node, text } => {
                let new = v.replace("\r\n", "\n");
                if new == *text {
                    continue;
                }
                out.set_text(node, &new)
            }
            Slot::Color { at, rgb } => {
                if v.eq_ignore_ascii_case(&hex_of(*rgb)) {
                    continue;
                }
                let Some(new) = parse_hex(v) else { continue };
                out.set_solid_rgb(at, new)
            }
            Slot::Image { at, field, url } => {
                let new = v.trim();
                if new == url {
                    continue;
                }
                out.set_image_url(at, *field, new)
            }
        };
    }
    out.into_inner()
}

async fn editor_page(
    state: &AppState,
    m: &SessionMember,
    ad: &ImageAd,
    tree: &Value,
    base_version: i64,
    status: StatusCode,
    problem: Option<String>,
) -> DashResult {
    let mut texts = String::new();
    let mut colors = String::new();
    let mut imgs = String::new();
    let mut urls = Vec::new();
    let doc = TreeDoc::new(tree);
    for (i, slot) in doc.slots().iter().enumerate() {
        let name = esc(&field_name(slot));
        let label = esc(&node_label(&doc, slot.node()));
        match slot {
            Slot::Text { text, .. } => {
                let rows = text.lines().count().clamp(1, 6);
                let _ = write!(
                    texts,
                    r#"<div><label for="s{i}">{label}</label><textarea id="s{i}" name="{name}" rows="{rows}" maxlength="5000">{t}</textarea></div>"#,
                    t = esc(text)
                );
            }
            Slot::Color { at, rgb } => {
                let fills = at.list == PaintList::Fills;
                let what = if fills && at.index == 0 {
                    "colour".to_string()
                } else {
                    format!("{} {}", if fills { "fill" } else { "stroke" }, at.index + 1)
                };
                let _ = write!(
                    colors,
                    r#"<div class="color-field"><label for="s{i}">{label} <small>{what}</small></label><input id="s{i}" name="{name}" type="color" value="{h}"></div>"#,
                    h = esc(&hex_of(*rgb))
                );
            }
            Slot::Image { url, .. } => {
                urls.push(url.clone());
                let _ = write!(
                    imgs,
                    r#"<div class="image-field"><img src="{u}" alt="" width="64" height="64" loading="lazy"><div><label for="s{i}">{label} <small>image</small></label><input id="s{i}" name="{name}" type="url" value="{u}" maxlength="2048"></div></div>"#,
                    u = esc(url)
                );
            }
        }
    }
    let section = |title: &str, id: &str, content: &str, empty: &str| {
        format!(
            r#"<fieldset id="{id}"><legend>{title}</legend>{}</fieldset>"#,
            if content.is_empty() {
                format!(r#"<p class="hint">{empty}</p>"#)
            } else {
                content.to_string()
            }
        )
    };
    let body = format!(
        r#"{problem}<p><a href="/dashboard/ads/{id}">← Back to the ad</a></p>
<p>Change the texts, solid colours and image URLs of version {base_version}; saving makes version {next}, rendered in the background (editing is free for editable ads). Image URLs must be public http(s) URLs or this server's own file URLs.</p>
<form method="post" action="/dashboard/ads/{id}/edit" class="editor">{csrf}<input type="hidden" name="base_version" value="{base_version}">
{texts}{colors}{imgs}
<button type="submit">Save as version {next}</button></form>"#,
        problem = problem
            .map(|p| notice("error", &format!("<p>{p}</p>")))
            .unwrap_or_default(),
        id = esc(&ad.id),
        next = base_version + 1,
        csrf = csrf_field(&m.csrf_token),
        texts = section("Texts", "texts", &texts, "This ad has no text."),
        colors = section(
            "Colours",
            "colours",
            &colors,
            "This ad has no solid colours."
        ),
        imgs = section("Images", "images", &imgs, "This ad has no images."),
    );
    let _ = state;
    Ok(html_with_images(
        status,
        page_with_head(
            &format!("Edit ad {}", ad.id),
            Some(m),
            "/dashboard/ads",
            &body,
            "",
        ),
        &origins(urls.iter().map(String::as_str)),
    ))
}

/// The ad, its tree and its latest version number, if it can be edited now.
async fn editable(
    state: &AppState,
    m: &SessionMember,
    id: &str,
) -> Result<Result<(ImageAd, Value, i64), String>, DashError> {
    let ad = image_ads::get(&state.db, &state.jobs, &m.org_id, id)
        .await
        .map_err(dash)?;
    if !ad.editable {
        return Ok(Err(
            "This is a flat ad; only editable ads can be changed.".to_string()
        ));
    }
    if ad.status != "completed" {
        return Ok(Err(format!(
            "This ad is {}; it can be edited once it has completed.",
            ad.status
        )));
    }
    let versions = image_ads::versions(&state.db, &m.org_id, id)
        .await
        .map_err(dash)?;
    let base = versions.last().map_or(1, |v| v.version_number);
    match ad.current_json_tree.clone() {
        Some(tree) => Ok(Ok((ad, tree, base))),
        None => Ok(Err("This ad has no JSON tree to edit.".to_string())),
    }
}

/// GET /dashboard/ads/{id}/edit
pub async fn edit_form(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
) -> DashResult {
    let m = &me.0;
    match editable(&state, m, &id).await? {
        Ok((ad, tree, base)) => {
            editor_page(&state, m, &ad, &tree, base, StatusCode::OK, None).await
        }
        Err(why) => Ok(cannot_edit(m, &id, &why)),
    }
}

fn cannot_edit(m: &SessionMember, id: &str, why: &str) -> axum::response::Response {
    let body = format!(
        r#"{}<p><a href="/dashboard/ads/{}">Back to the ad</a></p>"#,
        notice("error", &format!("<p>{}</p>", esc(why))),
        esc(id)
    );
    crate::html(
        StatusCode::UNPROCESSABLE_ENTITY,
        page_with_head("Cannot edit this ad", Some(m), "/dashboard/ads", &body, ""),
    )
}

/// POST /dashboard/ads/{id}/edit: the whole new tree through PATCH's domain call.
pub async fn edit_submit(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    let form = me.form(&body)?;
    let m = &me.0;
    let (ad, tree, base) = match editable(&state, m, &id).await? {
        Ok(x) => x,
        Err(why) => return Ok(cannot_edit(m, &id, &why)),
    };
    if form.get("base_version").and_then(|v| v.parse::<i64>().ok()) != Some(base) {
        return editor_page(
            &state,
            m,
            &ad,
            &tree,
            base,
            StatusCode::CONFLICT,
            Some(format!(
                "The ad changed while you edited it: it is now at version {base}. Your changes were not saved; make them again below."
            )),
        )
        .await;
    }
    let new_tree = apply(&tree, &form);
    if new_tree == tree {
        return editor_page(
            &state,
            m,
            &ad,
            &tree,
            base,
            StatusCode::BAD_REQUEST,
            Some("Nothing was changed, so no new version was made.".to_string()),
        )
        .await;
    }
    match image_ads::update(&state, &m.org_id, &id, &new_tree).await {
        Ok(_) => {
            tracing::info!(ad_id = %id, profile_id = %m.profile_id, "image ad edited in the dashboard");
            Ok(redirect(&format!("/dashboard/ads/{id}#versions-h")))
        }
        Err(e) if e.code == ErrorCode::ImageAdNotFound => Err(DashError::NotFound),
        Err(e) => {
            let (status, text) = api_message(e)?;
            editor_page(&state, m, &ad, &new_tree, base, status, Some(text)).await
        }
    }
}

// ---------------------------------------------------------------------------------------
// Create
// ---------------------------------------------------------------------------------------

/// What the create form was sent with (kept to show the form again after an error).
#[derive(Default)]
struct CreateInput {
    brand_id: String,
    product_id: String,
    audience_id: String,
    variant_id: String,
    reference_url: String,
    swipe_file_id: String,
    upload: Option<Bytes>,
    editable: bool,
    prompt: String,
}

async fn create_page(
    state: &AppState,
    m: &SessionMember,
    input: &CreateInput,
    status: StatusCode,
    problem: Option<String>,
) -> DashResult {
    let cat = catalog(&state.db, &m.org_id).await?;
    let body = format!(
        r#"{problem}<p><a href="/dashboard/ads">← All ads</a></p>
<form method="post" action="/dashboard/ads/new" enctype="multipart/form-data" class="create-ad">{csrf}
<div class="grid-form">
<div><label for="c-brand">Brand</label><select id="c-brand" name="brand_id" required><option value="">Choose a brand</option>{brands}</select></div>
<div><label for="c-product">Product</label><select id="c-product" name="product_id" required><option value="">Choose a product</option>{products}</select></div>
<div><label for="c-audience">Audience</label><select id="c-audience" name="audience_id" required><option value="">Choose an audience</option>{audiences}</select></div>
<div><label for="c-variant">Variant</label><select id="c-variant" name="product_variant_id"><option value="">The product's first variant with images</option>{variants}</select></div>
</div>
<fieldset><legend>Reference ad (one of the three)</legend>
<p class="hint">The composition to follow: a public PNG, JPEG or WebP URL, an image uploaded from this device, or a design of the swipe file by its id.</p>
<label for="c-url">Image URL</label><input id="c-url" name="reference_url" type="url" maxlength="2048" value="{url}" placeholder="https://…">
<label for="c-file">Upload an image</label><input id="c-file" name="reference_file" type="file" accept="image/png,image/jpeg,image/webp">
<label for="c-swipe">Swipe-file design id</label><input id="c-swipe" name="swipe_file_id" value="{swipe}" placeholder="sf_…" maxlength="100">
</fieldset>
<label for="c-prompt">Creative direction (optional)</label><textarea id="c-prompt" name="prompt" rows="3" maxlength="2000">{prompt}</textarea>
<label class="check" for="c-editable"><input type="checkbox" id="c-editable" name="editable" value="true"{ed}> <span>Editable: PNG and JSON tree, editable here afterwards ({editable_price}; flat {flat_price})</span></label>
<p class="hint">The price is held from the wallet when the ad starts and charged when it completes; a failed ad is not charged.</p>
<button type="submit">Create ad</button></form>"#,
        problem = problem
            .map(|p| notice("error", &format!("<p>{p}</p>")))
            .unwrap_or_default(),
        csrf = csrf_field(&m.csrf_token),
        brands = options(&cat.brands, None, &input.brand_id),
        products = options(&cat.products, Some(&cat.brands), &input.product_id),
        audiences = options(&cat.audiences, Some(&cat.products), &input.audience_id),
        variants = options(&cat.variants, Some(&cat.products), &input.variant_id),
        url = esc(&input.reference_url),
        swipe = esc(&input.swipe_file_id),
        prompt = esc(&input.prompt),
        ed = if input.editable { " checked" } else { "" },
        editable_price = adforge_api::wallet::dollars(adforge_api::wallet::EDITABLE_IMAGE_AD_CENTS),
        flat_price = adforge_api::wallet::dollars(adforge_api::wallet::FLAT_IMAGE_AD_CENTS),
    );
    Ok(crate::html(
        status,
        page_with_head("Create an ad", Some(m), "/dashboard/ads", &body, ""),
    ))
}

/// GET /dashboard/ads/new
pub async fn create_form(State(state): State<AppState>, me: SignedIn) -> DashResult {
    create_page(&state, &me.0, &CreateInput::default(), StatusCode::OK, None).await
}

/// Reads the multipart create form, checking its CSRF token first.
async fn read_create(
    me: &SignedIn,
    req: Request,
) -> Result<Result<CreateInput, String>, DashError> {
    let Ok(mut mp) = Multipart::from_request(req, &()).await else {
        return Err(DashError::Csrf);
    };
    let mut input = CreateInput::default();
    let mut csrf_ok = false;
    while let Ok(Some(field)) = mp.next_field().await {
        let name = field.name().unwrap_or("").to_string();
        if name == "reference_file" {
            let has_name = field.file_name().is_some_and(|n| !n.is_empty());
            match field.bytes().await {
                Ok(b) if has_name && !b.is_empty() => input.upload = Some(b),
                Ok(_) => {}
                Err(e) => return Ok(Err(format!("The upload could not be read: {e}"))),
            }
            continue;
        }
        let Ok(text) = field.text().await else {
            return Ok(Err("The form could not be read.".to_string()));
        };
        match name.as_str() {
            "csrf" => csrf_ok = same_secret(&text, &me.0.csrf_token),
            "brand_id" => input.brand_id = text.trim().to_string(),
            "product_id" => input.product_id = text.trim().to_string(),
            "audience_id" => input.audience_id = text.trim().to_string(),
            "product_variant_id" => input.variant_id = text.trim().to_string(),
            "reference_url" => input.reference_url = text.trim().to_string(),
            "swipe_file_id" => input.swipe_file_id = text.trim().to_string(),
            "editable" => input.editable = text == "true",
            "prompt" => input.prompt = text,
            _ => {}
        }
    }
    if !csrf_ok {
        return Err(DashError::Csrf);
    }
    Ok(Ok(input))
}

/// POST /dashboard/ads/new: the reference (URL, upload through the images code, or a
/// swipe-file design's image), then POST /v1/image-ads's domain call.
pub async fn create(State(state): State<AppState>, me: SignedIn, req: Request) -> DashResult {
    let input = match read_create(&me, req).await? {
        Ok(i) => i,
        Err(why) => {
            return create_page(
                &state,
                &me.0,
                &CreateInput::default(),
                StatusCode::BAD_REQUEST,
                Some(esc(&why)),
            )
            .await;
        }
    };
    let m = &me.0;
    let given = [
        !input.reference_url.is_empty(),
        input.upload.is_some(),
        !input.swipe_file_id.is_empty(),
    ]
    .iter()
    .filter(|g| **g)
    .count();
    if given != 1 {
        return create_page(
            &state,
            m,
            &input,
            StatusCode::BAD_REQUEST,
            Some(
                "Give exactly one reference: an image URL, an upload or a swipe-file design id."
                    .into(),
            ),
        )
        .await;
    }
    let reference = if let Some(bytes) = input.upload.clone() {
        images::upload_bytes(&state.db, &state.blobs, &m.org_id, bytes)
            .await
            .map(|img| img.src)
    } else if !input.swipe_file_id.is_empty() {
        swipe_files::load(&state.db, &m.org_id, &input.swipe_file_id)
            .await
            .map(|row| row.into_api(state.blobs.as_ref()).image_url)
    } else {
        Ok(input.reference_url.clone())
    };
    let result = match reference {
        Ok(reference_ad_url) => {
            let body = ImageAdCreate {
                reference_ad_url,
                brand_id: input.brand_id.clone(),
                product_id: input.product_id.clone(),
                audience_id: input.audience_id.clone(),
                editable: input.editable,
                product_variant_id: Some(input.variant_id.clone()).filter(|v| !v.is_empty()),
                prompt: Some(input.prompt.clone()).filter(|p| !p.trim().is_empty()),
            };
            image_ads::create_from(&state, &m.org_id, &body, None).await
        }
        Err(e) => Err(e),
    };
    match result {
        Ok(ad) => {
            tracing::info!(ad_id = %ad.id, profile_id = %m.profile_id, "image ad created in the dashboard");
            Ok(redirect(&format!("/dashboard/ads/{}", ad.id)))
        }
        Err(e) => {
            let (status, text) = api_message(e)?;
            create_page(&state, m, &input, status, Some(text)).await
        }
    }
}
