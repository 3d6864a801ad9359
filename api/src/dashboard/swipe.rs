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
//! The facets sit in a `<details>`: CSS shows them on a desktop (summary hidden) and folds
//! them below 721 px, open when a filter is chosen; no script. Each design's checkbox is
//! named "Select {label}, design {id}", as two designs can share a label.

use std::fmt::Write;

use adforge_worker::swipe::taxonomy;
use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;

use super::html::{csrf_field, esc, notice, page, page_with_head};
use super::members::SessionMember;
use super::{DashError, DashResult, Form, SignedIn, html, html_with_images, query, redirect};
use crate::app::AppState;
use crate::error::ApiError;
use crate::http::extract::QueryParams;
use crate::resources::design_packs;
use crate::resources::swipe_files::{self, OneOrMany, SearchBody, SwipeFile};

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
        r#"<li class="design" id="{id}">{img}<div class="design-body"><p class="design-label">{label}{sim}</p><p class="hint">{meta}</p>{check}<div class="design-actions">{actions}</div></div></li>"#,
        id = esc(&f.id),
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

/// What the swipe page was asked for.
struct View {
    text: Option<String>,
    like: Option<String>,
    archived: bool,
    after: Option<String>,
    /// (dimension, chosen values)
    chosen: Vec<(&'static str, Vec<String>)>,
}

impl View {
    fn of(q: &Form) -> Self {
        let nonempty = |k: &str| {
            q.get(k)
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        View {
            text: nonempty("q"),
            like: nonempty("like"),
            archived: q.get("archived") == Some("true"),
            after: nonempty("starting_after"),
            chosen: swipe_files::FACETS
                .iter()
                .map(|d| {
                    (
                        *d,
                        q.all(d)
                            .into_iter()
                            .filter(|v| !v.is_empty())
                            .map(str::to_string)
                            .collect(),
                    )
                })
                .collect(),
        }
    }

    fn values(&self, dim: &str) -> Vec<String> {
        self.chosen
            .iter()
            .find(|(d, _)| *d == dim)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }

    /// The list's query string (only parameters GET /v1/swipe-files knows).
    fn list_query(&self) -> String {
        let mut s = form_urlencoded::Serializer::new(String::new());
        s.append_pair("limit", &PAGE_SIZE.to_string());
        s.append_pair("facets", "industry,ad_format,aspect_ratio");
        if self.archived {
            s.append_pair("archived", "true");
        }
        if let Some(a) = &self.after {
            s.append_pair("starting_after", a);
        }
        for (d, vs) in &self.chosen {
            for v in vs {
                s.append_pair(d, v);
            }
        }
        s.finish()
    }

    /// This view's own URL with `starting_after` replaced.
    fn url_after(&self, after: &str) -> String {
        let mut s = form_urlencoded::Serializer::new(String::new());
        if self.archived {
            s.append_pair("archived", "true");
        }
        for (d, vs) in &self.chosen {
            for v in vs {
                s.append_pair(d, v);
            }
        }
        s.append_pair("starting_after", after);
        format!("/dashboard/swipe?{}", s.finish())
    }

    fn many(&self, dim: &str) -> Option<OneOrMany> {
        let v = self.values(dim);
        (!v.is_empty()).then_some(OneOrMany::Many(v))
    }

    fn search_body(&self) -> Option<SearchBody> {
        if self.text.is_none() && self.like.is_none() {
            return None;
        }
        Some(SearchBody {
            query: self.text.clone(),
            swipe_file_id: if self.text.is_none() {
                self.like.clone()
            } else {
                None
            },
            image_url: None,
            industry: self.many("industry"),
            ad_format: self.many("ad_format"),
            aspect_ratio: self.many("aspect_ratio"),
            data_source_ids: None,
            include_own: None,
            limit: Some(PAGE_SIZE),
            design_pack_id: None,
            min_similarity: None,
        })
    }
}

fn upload_card(csrf: &str) -> String {
    format!(
        r#"<section class="card upload-card" aria-labelledby="upload-h"><h2 id="upload-h">Upload designs</h2>
<form method="post" action="/dashboard/swipe/upload" enctype="multipart/form-data" class="upload" data-upload>{csrf}
<div class="drop" data-drop><label for="upload-files">Images (PNG, JPEG or WebP; choose or drop several)</label>
<input type="file" id="upload-files" name="file" multiple accept="image/png,image/jpeg,image/webp" required></div>
<progress class="upload-progress" max="100" value="0" hidden></progress><p class="hint upload-status" role="status" aria-live="polite"></p>
<button type="submit">Upload</button></form>
<p class="hint">Each design is analysed after upload (preview, format, industry, search vectors); it shows "Processing…" until then. Without the page's script, one upload sends all chosen files together (at most 15 MiB in all).</p></section>"#,
        csrf = csrf_field(csrf),
    )
}

fn filter_form(
    v: &View,
    facets: Option<&std::collections::BTreeMap<String, Vec<crate::http::envelope::FacetValue>>>,
) -> String {
    let mut groups = String::new();
    for dim in swipe_files::FACETS {
        let chosen = v.values(dim);
        let mut options: Vec<(String, Option<i64>)> = facets
            .and_then(|f| f.get(dim))
            .map(|vals| {
                vals.iter()
                    .map(|fv| (fv.value.clone(), Some(fv.count)))
                    .collect()
            })
            .unwrap_or_default();
        for c in &chosen {
            if !options.iter().any(|(o, _)| o == c) {
                options.push((c.clone(), None));
            }
        }
        let mut boxes = String::new();
        for (val, count) in &options {
            let id = format!(
                "f-{dim}-{}",
                val.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
            );
            let _ = write!(
                boxes,
                r#"<label class="check" for="{id}"><input type="checkbox" id="{id}" name="{dim}" value="{v}"{checked}> {name}{count}</label>"#,
                v = esc(val),
                checked = if chosen.contains(val) { " checked" } else { "" },
                name = esc(&facet_name(dim, val)),
                count = count
                    .map(|c| format!(r#" <span class="hint">({c})</span>"#))
                    .unwrap_or_default(),
            );
        }
        if boxes.is_empty() {
            boxes.push_str(r#"<p class="hint">No values yet.</p>"#);
        }
        let legend = match dim {
            "industry" => "Industry",
            "ad_format" => "Ad format",
            _ => "Aspect ratio",
        };
        let _ = write!(
            groups,
            r#"<fieldset class="facet"><legend>{legend}</legend>{boxes}</fieldset>"#
        );
    }
    format!(
        r#"<form method="get" action="/dashboard/swipe" class="card swipe-filters" role="search" aria-label="Search the swipe file">
<label for="swipe-q">Search by words</label>
<div class="search-row"><input type="search" id="swipe-q" name="q" value="{q}" placeholder="e.g. coffee, sale"><button type="submit">Search</button></div>
{like}<details class="facets-toggle"{open}><summary>Filters</summary><div class="facets">{groups}</div>
<label class="check" for="f-archived"><input type="checkbox" id="f-archived" name="archived" value="true"{arch}> Show archived designs only</label>
<button type="submit" class="secondary">Apply filters</button></details>
<p><a href="/dashboard/swipe">Clear search and filters</a></p></form>"#,
        q = esc(v.text.as_deref().unwrap_or("")),
        like = v
            .like
            .as_ref()
            .filter(|_| v.text.is_none())
            .map(|l| format!(r#"<input type="hidden" name="like" value="{}">"#, esc(l)))
            .unwrap_or_default(),
        arch = if v.archived { " checked" } else { "" },
        // Collapsed on a phone unless a filter is chosen (the CSS always shows it on a
        // desktop), so the chosen filters are never hidden.
        open = if v.archived || swipe_files::FACETS.iter().any(|d| !v.values(d).is_empty()) {
            " open"
        } else {
            ""
        },
    )
}

fn sources_card(m: &SessionMember, sources: &[swipe_files::DataSource]) -> String {
    let mut rows = String::new();
    for s in sources {
        let (label, to) = if s.subscribed {
            ("Turn off", "false")
        } else {
            ("Turn on", "true")
        };
        let _ = write!(
            rows,
            r#"<li id="{id}"><span><strong>{name}</strong> <span class="hint">{n} designs · {state}</span></span><form method="post" action="/dashboard/swipe/sources/{id}" class="inline">{csrf}<input type="hidden" name="active" value="{to}"><button type="submit" class="small secondary" aria-label="{label} {name}">{label}</button></form></li>"#,
            id = esc(&s.id),
            name = esc(&s.name),
            n = s.item_count,
            state = if s.subscribed { "on" } else { "off" },
            csrf = csrf_field(&m.csrf_token),
        );
    }
    if sources.is_empty() {
        rows.push_str("<li>No data sources on this server.</li>");
    }
    format!(
        r#"<section class="card sources-card" aria-labelledby="sources-h"><h2 id="sources-h">Data sources</h2><p class="hint">Managed collections whose designs appear next to your uploads; a change shows at once in lists, search and packs.</p><ul class="sources">{rows}</ul></section>"#
    )
}

/// The "add the checked designs to a pack" controls at the foot of the grid.
async fn pack_picker(state: &AppState, m: &SessionMember) -> Result<String, ApiError> {
    let packs = design_packs::list(state, &m.org_id, QueryParams::parse("limit=100")).await?;
    let mut options = String::from(r#"<option value="">New pack…</option>"#);
    for p in packs.items.iter().filter(|p| !p.is_managed) {
        let _ = write!(
            options,
            r#"<option value="{}">{} ({})</option>"#,
            esc(&p.id),
            esc(&p.title),
            p.item_count
        );
    }
    Ok(format!(
        r#"<fieldset class="pack-picker"><legend>Add the selected designs to a pack</legend><div class="grid-form">
<div><label for="pick-pack">Pack</label><select id="pick-pack" name="pack">{options}</select></div>
<div><label for="pick-title">or a new pack named</label><input id="pick-title" name="new_title" maxlength="80"></div>
<div><button type="submit" formaction="/dashboard/packs/add">Add to pack</button></div></div></fieldset>"#
    ))
}

async fn render(
    state: &AppState,
    m: &SessionMember,
    uri: &Uri,
    status: StatusCode,
    flash: String,
) -> DashResult {
    let q = query(uri);
    let v = View::of(&q);
    let flash = match q.get("uploaded").and_then(|n| n.parse::<usize>().ok()) {
        Some(n) if flash.is_empty() => uploaded_notice(n.min(1000)),
        _ => flash,
    };
    let title = "Swipe file";
    let active = "/dashboard/swipe";
    let (designs, facets, more, heading) = if let Some(body) = v.search_body() {
        let heading = match (&v.text, &v.like) {
            (Some(t), _) => format!("Designs matching “{}”", esc(t)),
            (None, Some(id)) => format!(
                r#"Designs like <a href="/dashboard/swipe#{0}"><code>{0}</code></a>"#,
                esc(id)
            ),
            _ => String::new(),
        };
        let hits = match swipe_files::search(state, &m.org_id, body).await {
            Ok(h) => h,
            Err(e) => return api_error(m, title, active, e),
        };
        // The facet counts beside a search are the swipe file's under the same filters
        // (search answers no facets), so the filters can still be chosen.
        let counts = View {
            after: None,
            ..View::of(&q)
        };
        let facets = match swipe_files::list(
            state,
            &m.org_id,
            QueryParams::parse(&counts.list_query().replace("limit=48", "limit=1")),
            None,
        )
        .await
        {
            Ok(p) => p.facets,
            Err(e) => return api_error(m, title, active, e),
        };
        (hits, facets, None, heading)
    } else {
        let q = QueryParams::parse(&v.list_query());
        let page = match swipe_files::list(state, &m.org_id, q, None).await {
            Ok(p) => p,
            Err(e) => return api_error(m, title, active, e),
        };
        let more = if page.has_more {
            page.items.last().map(|l| v.url_after(&l.id))
        } else {
            None
        };
        let heading = format!(
            "{} {} design{}",
            page.total_count,
            if v.archived { "archived" } else { "" },
            if page.total_count == 1 { "" } else { "s" }
        );
        (page.items, page.facets, more, heading)
    };
    let sources = match swipe_files::data_sources(&state.db, &m.org_id).await {
        Ok(s) => s,
        Err(e) => return api_error(m, title, active, e),
    };
    let picker = match pack_picker(state, m).await {
        Ok(p) => p,
        Err(e) => return api_error(m, title, active, e),
    };
    let mut cards = String::new();
    for f in &designs {
        let mut actions = String::new();
        if f.status == "ready" && f.archived_at.is_none() {
            let _ = write!(
                actions,
                r#"<a class="button secondary small" href="/dashboard/swipe?like={id}">More like this</a><a class="button secondary small" href="/dashboard/templates?swipe_file_id={id}#new-t-h" aria-label="Make a template of design {id}">Make a template</a>"#,
                id = esc(&f.id)
            );
        }
        if !f.is_managed {
            let (verb, path) = if f.archived_at.is_some() {
                ("Restore", "restore")
            } else {
                ("Archive", "archive")
            };
            let _ = write!(
                actions,
                r#"<button type="submit" class="small {cls}" formaction="/dashboard/swipe/{id}/{path}" formnovalidate aria-label="{verb} design {id}">{verb}</button>"#,
                cls = if path == "archive" {
                    "danger"
                } else {
                    "secondary"
                },
                id = esc(&f.id),
            );
        }
        cards.push_str(&design_card(f, true, &actions));
    }
    let grid = if designs.is_empty() {
        r#"<p class="empty">No designs here yet.</p>"#.to_string()
    } else {
        format!(
            r#"<form method="post" action="/dashboard/packs/add" class="designs-form">{csrf}<ul class="designs">{cards}</ul>{more}{picker}</form>"#,
            csrf = csrf_field(&m.csrf_token),
            more = more
                .map(|u| format!(
                    r#"<p><a class="button secondary" href="{}">Next page</a></p>"#,
                    esc(&u)
                ))
                .unwrap_or_default(),
        )
    };
    let body = format!(
        r#"{flash}<div class="swipe-layout"><div class="swipe-side">{filters}{sources}</div>
<div class="swipe-main">{upload}<section class="results" aria-labelledby="results-h"><h2 id="results-h">{heading}</h2>{grid}</section></div></div>
<script src="/dashboard/assets/dashboard.js" defer></script>"#,
        filters = filter_form(&v, facets.as_ref()),
        sources = sources_card(m, &sources),
        upload = upload_card(&m.csrf_token),
    );
    // While a design is being analysed the page reloads itself (no script needed); a
    // POST's answer does not, so a reload never repeats a form.
    let processing = designs.iter().any(|f| f.status == "processing");
    // The refresh names its URL: a bare refresh of a URL with a #fragment only scrolls.
    let head = if processing && status == StatusCode::OK {
        format!(
            r#"<meta http-equiv="refresh" content="4; url={}">"#,
            esc(&match uri.query() {
                Some(q) => format!("/dashboard/swipe?{q}"),
                None => "/dashboard/swipe".to_string(),
            })
        )
    } else {
        String::new()
    };
    Ok(html_with_images(
        status,
        page_with_head(title, Some(m), active, &body, &head),
        &blob_origins(state),
    ))
}

/// GET /dashboard/swipe
pub async fn show(State(state): State<AppState>, me: SignedIn, uri: Uri) -> DashResult {
    render(&state, &me.0, &uri, StatusCode::OK, String::new()).await
}

/// POST /dashboard/swipe/upload: multipart with `csrf` and one or more `file` parts. The
/// page's script sends one file per request; the plain form sends them all at once.
pub async fn upload(State(state): State<AppState>, me: SignedIn, req: Request) -> DashResult {
    let m = &me.0;
    let bad = |why: String| {
        html(
            StatusCode::BAD_REQUEST,
            page(
                "Swipe file",
                Some(m),
                "/dashboard/swipe",
                &notice("error", &format!("<p>{}</p>", esc(&why))),
            ),
        )
    };
    let Ok(mut mp) = Multipart::from_request(req, &()).await else {
        return Err(DashError::Csrf);
    };
    let mut csrf = None;
    let mut files: Vec<(String, Bytes)> = Vec::new();
    loop {
        let field = match mp.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => return Ok(bad(format!("The upload was cut short or malformed: {e}"))),
        };
        let name = field.name().unwrap_or("").to_string();
        let file_name = field.file_name().unwrap_or("").to_string();
        let data = match field.bytes().await {
            Ok(d) => d,
            Err(e) => return Ok(bad(format!("The upload was cut short or malformed: {e}"))),
        };
        match name.as_str() {
            "csrf" => csrf = Some(String::from_utf8_lossy(&data).into_owned()),
            "file" if !(data.is_empty() && file_name.is_empty()) => {
                files.push((file_name, data));
            }
            _ => {}
        }
    }
    match csrf {
        Some(t) if super::same_secret(&t, &m.csrf_token) => {}
        _ => return Err(DashError::Csrf),
    }
    let uri: Uri = "/dashboard/swipe".parse().unwrap_or_default();
    if files.is_empty() {
        let flash = notice("error", "<p>Choose at least one image to upload.</p>");
        return render(&state, m, &uri, StatusCode::BAD_REQUEST, flash).await;
    }
    if let Err(e) = state.models.require() {
        let flash = error_box(&e);
        return render(&state, m, &uri, e.code.status(), flash).await;
    }
    let mut ok = 0usize;
    let mut failed = String::new();
    for (name, bytes) in files {
        match swipe_files::create(
            &state.db,
            &state.blobs,
            (Some(&m.org_id), None),
            "upload",
            bytes,
            Some(state.jobs.clone()),
        )
        .await
        {
            Ok(row) => {
                ok += 1;
                tracing::info!(swipe_file_id = %row.id, profile_id = %m.profile_id, "swipe file uploaded in the dashboard");
            }
            Err(e) => {
                let _ = write!(
                    failed,
                    "<li>{}: {}</li>",
                    esc(if name.is_empty() { "file" } else { &name }),
                    esc(&e.message)
                );
            }
        }
    }
    if failed.is_empty() {
        // All stored: to the grid (a reload there repeats nothing), which says so.
        return Ok(redirect(&format!("/dashboard/swipe?uploaded={ok}")));
    }
    let mut flash = uploaded_notice(ok);
    flash.push_str(&notice(
        "error",
        &format!("<p>Not uploaded:</p><ul>{failed}</ul>"),
    ));
    let status = if ok == 0 {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::ACCEPTED
    };
    render(&state, m, &uri, status, flash).await
}

fn uploaded_notice(n: usize) -> String {
    if n == 0 {
        return String::new();
    }
    notice(
        "ok",
        &format!(
            "<p>{n} design{} uploaded; {} analysed in a moment.</p>",
            if n == 1 { "" } else { "s" },
            if n == 1 { "it is" } else { "they are" }
        ),
    )
}

async fn archive_or_restore(
    state: &AppState,
    me: &SignedIn,
    id: &str,
    body: &[u8],
    archive: bool,
) -> DashResult {
    me.form(body)?;
    let m = &me.0;
    if let Err(e) = swipe_files::set_archived(state, &m.org_id, id, archive).await {
        return api_error(m, "Swipe file", "/dashboard/swipe", e);
    }
    Ok(redirect(if archive {
        "/dashboard/swipe"
    } else {
        "/dashboard/swipe?archived=true"
    }))
}

/// POST /dashboard/swipe/{id}/archive
pub async fn archive(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    archive_or_restore(&state, &me, &id, &body, true).await
}

/// POST /dashboard/swipe/{id}/restore
pub async fn restore(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    archive_or_restore(&state, &me, &id, &body, false).await
}

/// POST /dashboard/swipe/sources/{id}: `active` true or false.
pub async fn subscription(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    let form = me.form(&body)?;
    let m = &me.0;
    let active = form.get("active") == Some("true");
    if let Err(e) = swipe_files::subscribe(&state.db, &m.org_id, &id, active).await {
        return api_error(m, "Swipe file", "/dashboard/swipe", e);
    }
    Ok(redirect(&format!("/dashboard/swipe#{id}")))
}

/// The routes of this page.
pub fn routes() -> axum::Router<AppState> {
    use axum::routing::{get, post};
    axum::Router::new()
        .route("/swipe", get(show))
        .route("/swipe/upload", post(upload))
        .route("/swipe/{id}/archive", post(archive))
        .route("/swipe/{id}/restore", post(restore))
        .route("/swipe/sources/{id}", post(subscription))
        .route("/assets/dashboard.js", get(script))
}

/// The swipe page's script, compiled in.
const JS: &str = include_str!("../../../assets/dashboard/dashboard.js");

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
