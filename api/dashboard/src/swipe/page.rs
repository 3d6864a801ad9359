//! The swipe page itself: the upload card, the data sources, the pack picker and the grid
//! of designs (listed, or searched by text or by example).

use super::*;

pub(super) fn upload_card(csrf: &str) -> String {
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

pub(super) fn sources_card(m: &SessionMember, sources: &[swipe_files::DataSource]) -> String {
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
pub(super) async fn pack_picker(state: &AppState, m: &SessionMember) -> Result<String, ApiError> {
    let packs = design_packs::list(
        &state.db,
        state.blobs.as_ref(),
        &m.org_id,
        &design_packs::PackFilter::default(),
        None,
        100,
    )
    .await?;
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

pub(super) async fn render(
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
            &state.db,
            state.blobs.as_ref(),
            &m.org_id,
            &counts.filter(),
            &counts.page(1),
        )
        .await
        {
            Ok(p) => p.facets,
            Err(e) => return api_error(m, title, active, e),
        };
        (hits, facets, None, heading)
    } else {
        let page = match swipe_files::list(
            &state.db,
            state.blobs.as_ref(),
            &m.org_id,
            &v.filter(),
            &v.page(PAGE_SIZE),
        )
        .await
        {
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
        cards.push_str(&grid_card(f));
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
    // While designs are being analysed the page says so in a status region with a
    // "Refresh" link; the page's script polls GET /dashboard/swipe/designs and swaps each
    // card in place once it is ready, without reloading the page (a `<meta
    // http-equiv=refresh>` reload is a WCAG 2.2.1 failure: a time limit the reader cannot
    // turn off, which also loses their place and their checked boxes).
    let processing = designs.iter().filter(|f| f.status == "processing").count();
    let self_url = match uri.query() {
        Some(q) => format!("/dashboard/swipe?{q}"),
        None => "/dashboard/swipe".to_string(),
    };
    let live = processing_note(processing, &self_url);
    let body = format!(
        r#"{flash}<div class="swipe-layout"><div class="swipe-side">{filters}{sources}</div>
<div class="swipe-main">{upload}<section class="results" aria-labelledby="results-h"><h2 id="results-h">{heading}</h2>{live}{grid}</section></div></div>
<script src="/dashboard/assets/dashboard.js" defer></script>"#,
        filters = filter_form(&v, facets.as_ref()),
        sources = sources_card(m, &sources),
        upload = upload_card(&m.csrf_token),
    );
    Ok(html_with_images(
        status,
        page(title, Some(m), active, &body),
        &blob_origins(state),
    ))
}

/// A design's card in the swipe page's grid, with the actions its state allows.
pub(super) fn grid_card(f: &SwipeFile) -> String {
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
    design_card(f, true, &actions)
}

/// The status region above the grid: how many designs are being analysed, with a link
/// that reloads the page (the way to see them without the script); empty, but present for
/// the script to announce into, when none is. `data-poll` is where the script asks.
fn processing_note(processing: usize, self_url: &str) -> String {
    let text = if processing == 0 {
        String::new()
    } else {
        format!(
            r#"{processing} design{s} being analysed. <a href="{url}">Refresh</a> to see {them} once ready."#,
            s = if processing == 1 { " is" } else { "s are" },
            them = if processing == 1 { "it" } else { "them" },
            url = esc(self_url),
        )
    };
    format!(
        r#"<p id="swipe-processing" class="hint processing-note" role="status" aria-live="polite" data-poll="/dashboard/swipe/designs">{text}</p>"#
    )
}

/// The body of GET /dashboard/swipe/designs: the listed designs as they are now.
#[derive(serde::Serialize)]
pub(super) struct DesignCards {
    designs: Vec<DesignCardNow>,
}

/// One design: its status and its grid card (HTML, as the page renders it).
#[derive(serde::Serialize)]
struct DesignCardNow {
    id: String,
    status: String,
    html: String,
}

/// GET /dashboard/swipe/designs?ids=sf_…,sf_…: the cards of these designs (at most one
/// page's worth) as the swipe page would render them now, for the page's script to swap
/// in when a design is no longer processing. Ids the member cannot see are left out.
pub async fn cards(State(state): State<AppState>, me: SignedIn, uri: Uri) -> DashResult {
    let q = query(&uri);
    let ids: Vec<String> = q
        .get("ids")
        .map(|s| {
            s.split(',')
                .map(str::trim)
                .filter(|i| !i.is_empty())
                .take(PAGE_SIZE as usize)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let mut designs = Vec::new();
    if !ids.is_empty() {
        let params = ListParams {
            ids: Some(ids),
            ..ListParams::new(PAGE_SIZE)
        };
        let filter = SwipeFilter {
            archived: q.get("archived").is_some_and(|a| a == "true"),
            ..SwipeFilter::visible()
        };
        let page = swipe_files::list(
            &state.db,
            state.blobs.as_ref(),
            &me.0.org_id,
            &filter,
            &params,
        )
        .await
        .map_err(|e| DashError::Internal(e.internal.unwrap_or(e.message)))?;
        designs = page
            .items
            .iter()
            .map(|f| DesignCardNow {
                id: f.id.clone(),
                status: f.status.clone(),
                html: grid_card(f),
            })
            .collect();
    }
    use axum::response::IntoResponse;
    Ok((
        [(axum::http::header::CACHE_CONTROL, "no-store")],
        axum::Json(DesignCards { designs }),
    )
        .into_response())
}

/// GET /dashboard/swipe
pub async fn show(State(state): State<AppState>, me: SignedIn, uri: Uri) -> DashResult {
    render(&state, &me.0, &uri, StatusCode::OK, String::new()).await
}

pub(super) fn uploaded_notice(n: usize) -> String {
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
