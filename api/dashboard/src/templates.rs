//! Design templates: the list with status (live or deleted), create from a URL or from a
//! swipe-file design, a template's page with its preview and every version, soft delete
//! and restore. Every action calls the functions the `/v1/design-templates` handlers call
//! (`design_templates::list`, `create`, `get`, `versions`, `set_deleted`).

use std::fmt::Write;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};

use crate::html::{csrf_field, esc, page_with_head, post_button, when};
use crate::members::SessionMember;
use crate::swipe::{api_error, blob_origins, error_box};
use crate::{DashResult, SignedIn, html_with_images, query, redirect};
use adforge_api::resources::design_templates::versions::versions;
use adforge_api::resources::design_templates::{self, DesignTemplate, DesignTemplateCreate};
use adforge_api::state::AppState;
use adforge_api::store::list::ListParams;
use adforge_worker::swipe::taxonomy;

const TITLE: &str = "Design templates";
const ACTIVE: &str = "/dashboard/templates";

fn status_badge(t: &DesignTemplate) -> String {
    let text = if t.deleted {
        "deleted".to_string()
    } else {
        t.status.clone()
    };
    format!(
        r#"<span class="badge status-{cls}">{}</span>"#,
        esc(&text),
        cls = esc(&t.status)
    )
}

fn labels(t: &DesignTemplate) -> String {
    [
        t.ad_format.as_deref().map(taxonomy::ad_format_name),
        t.industry.as_deref().map(taxonomy::industry_name),
        t.aspect_ratio.as_deref(),
    ]
    .into_iter()
    .flatten()
    .map(esc)
    .collect::<Vec<_>>()
    .join(" · ")
}

fn create_form(csrf: &str, swipe_file_id: &str) -> String {
    format!(
        r#"<section class="card" aria-labelledby="new-t-h"><h2 id="new-t-h">New template</h2>
<p class="hint">A worker reads the reference's layout into a blueprint and renders a preview with neutral content. Give a URL or a ready swipe-file design (its id is on the <a href="/dashboard/swipe">swipe file</a>: "Make a template").</p>
<form method="post" action="/dashboard/templates">{csrf}<div class="grid-form">
<div><label for="t-url">Reference image URL</label><input id="t-url" name="reference_image_url" type="url" maxlength="2048" placeholder="https://…"></div>
<div><label for="t-sf">or swipe-file design id</label><input id="t-sf" name="swipe_file_id" value="{sf}" placeholder="sf_…"></div>
<div><button type="submit">Create template</button></div></div></form></section>"#,
        csrf = csrf_field(csrf),
        sf = esc(swipe_file_id),
    )
}

async fn render_list(
    state: &AppState,
    m: &SessionMember,
    uri: &Uri,
    status: StatusCode,
    flash: String,
) -> DashResult {
    let q = query(uri);
    let deleted = q.get("deleted") == Some("true");
    let filter = design_templates::TemplateFilter {
        status: q.get("status").and_then(crate::csv),
        deleted,
        ..Default::default()
    };
    let p = ListParams {
        facets: vec!["status"],
        ..ListParams::new(100)
    };
    let page_data = match design_templates::list(&state.db, &m.org_id, &filter, &p).await {
        Ok(p) => p,
        Err(e) => return api_error(m, TITLE, ACTIVE, e),
    };
    let mut rows = String::new();
    let mut processing = false;
    for t in &page_data.items {
        processing |= t.status == "processing";
        let preview = match &t.preview_url {
            Some(u) => format!(
                r#"<img src="{}" alt="Preview of {}" loading="lazy" class="t-thumb">"#,
                esc(u),
                esc(&t.id)
            ),
            None => r#"<div class="placeholder t-thumb">No preview yet</div>"#.to_string(),
        };
        let _ = write!(
            rows,
            r#"<li class="design template" id="{id}"><a href="/dashboard/templates/{id}">{preview}</a><div class="design-body"><p class="design-label"><a href="/dashboard/templates/{id}">{id}</a></p><p>{badge} <span class="hint">v{v}</span></p><p class="hint">{labels}</p><p class="hint">{created}</p></div></li>"#,
            id = esc(&t.id),
            badge = status_badge(t),
            v = t.json_tree_version,
            labels = labels(t),
            created = esc(&when(&t.created_at)),
        );
    }
    if page_data.items.is_empty() {
        rows.push_str(r#"<li class="empty">No templates here.</li>"#);
    }
    let mut facets = String::new();
    if let Some(f) = page_data.facets.as_ref().and_then(|f| f.get("status")) {
        for fv in f {
            let _ = write!(
                facets,
                r#"<a class="facet-link" href="/dashboard/templates?status={v}{d}">{v} <span class="hint">({n})</span></a> "#,
                v = esc(&fv.value),
                n = fv.count,
                d = if deleted { "&amp;deleted=true" } else { "" },
            );
        }
    }
    let body = format!(
        r#"{flash}<p>{toggle} · <a href="/dashboard/templates{dq}">All statuses</a> {facets}</p>
<h2>{heading} ({total})</h2><ul class="designs">{rows}</ul>{form}"#,
        toggle = if deleted {
            r#"<a href="/dashboard/templates">Show live templates</a>"#
        } else {
            r#"<a href="/dashboard/templates?deleted=true">Show deleted templates</a>"#
        },
        dq = if deleted { "?deleted=true" } else { "" },
        heading = if deleted {
            "Deleted templates"
        } else {
            "Templates"
        },
        total = page_data.total_count,
        form = if deleted {
            String::new()
        } else {
            create_form(&m.csrf_token, q.get("swipe_file_id").unwrap_or(""))
        },
    );
    let head = if processing && status == StatusCode::OK {
        format!(
            r#"<meta http-equiv="refresh" content="4; url=/dashboard/templates{}">"#,
            if deleted { "?deleted=true" } else { "" }
        )
    } else {
        String::new()
    };
    Ok(html_with_images(
        status,
        page_with_head(TITLE, Some(m), ACTIVE, &body, &head),
        &blob_origins(state),
    ))
}

/// GET /dashboard/templates
pub async fn list(State(state): State<AppState>, me: SignedIn, uri: Uri) -> DashResult {
    render_list(&state, &me.0, &uri, StatusCode::OK, String::new()).await
}

/// POST /dashboard/templates: from `reference_image_url` or `swipe_file_id` (the empty one
/// is left out, so the API's "exactly one" rule applies to what was filled in).
pub async fn create(State(state): State<AppState>, me: SignedIn, body: Bytes) -> DashResult {
    let form = me.form(&body)?;
    let m = &me.0;
    let filled = |k: &str| {
        form.get(k)
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let body = DesignTemplateCreate {
        reference_image_url: filled("reference_image_url"),
        swipe_file_id: filled("swipe_file_id"),
        figma_url: filled("figma_url"),
        figma_file_key: None,
        figma_node_id: None,
    };
    match design_templates::create(&state, &m.org_id, body).await {
        Ok(t) => Ok(redirect(&format!("/dashboard/templates/{}", t.id))),
        Err(e) => {
            let status = e.code.status();
            if status.is_server_error() {
                return api_error(m, TITLE, ACTIVE, e);
            }
            // A swipe-file id of another organisation is the API's 404: shown as the
            // form's error here, like any other field problem.
            let uri: Uri = "/dashboard/templates".parse().unwrap_or_default();
            render_list(&state, m, &uri, status, error_box(&e)).await
        }
    }
}

/// GET /dashboard/templates/{id}: preview, details and every version.
pub async fn show(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
) -> DashResult {
    let m = &me.0;
    let t = match design_templates::get(&state.db, &m.org_id, &id).await {
        Ok(t) => t,
        Err(e) => return api_error(m, TITLE, ACTIVE, e),
    };
    let all = match versions(&state.db, &m.org_id, &id).await {
        Ok(v) => v,
        Err(e) => return api_error(m, TITLE, ACTIVE, e),
    };
    let tid = esc(&t.id);
    let mut vs = String::new();
    for v in all.iter().rev() {
        let img = match &v.preview_url {
            Some(u) => format!(
                r#"<img src="{}" alt="Preview of version {}" loading="lazy">"#,
                esc(u),
                v.json_tree_version
            ),
            None => r#"<div class="placeholder">No preview</div>"#.to_string(),
        };
        let _ = write!(
            vs,
            r#"<li class="design" id="version-{n}">{img}<div class="design-body"><p class="design-label">Version {n}{cur}</p><p class="hint">{when}</p>{summary}</div></li>"#,
            n = v.json_tree_version,
            cur = if v.current {
                r#" <span class="badge">current</span>"#
            } else {
                ""
            },
            when = esc(&when(&v.created_at)),
            summary = v
                .change_summary
                .as_deref()
                .map(|s| format!("<p>{}</p>", esc(s)))
                .unwrap_or_default(),
        );
    }
    if all.is_empty() {
        vs.push_str(r#"<li class="empty">No version yet: the analysis has not completed.</li>"#);
    }
    let edit = if !t.deleted && t.status == "completed" && t.current_json_tree.is_some() {
        format!(
            r#"<a class="button secondary" href="/dashboard/templates/{}/edit">Open in the editor</a> "#,
            esc(&t.id)
        )
    } else {
        String::new()
    };
    let action = if t.deleted {
        post_button(
            &format!("/dashboard/templates/{}/restore", t.id),
            &m.csrf_token,
            "Restore",
            "secondary",
            "Restore this template",
        )
    } else {
        post_button(
            &format!("/dashboard/templates/{}/delete", t.id),
            &m.csrf_token,
            "Delete",
            "danger",
            "Delete this template",
        )
    };
    let preview = match &t.preview_url {
        Some(u) => format!(
            r#"<img class="t-preview" src="{}" alt="Preview of the current version">"#,
            esc(u)
        ),
        None => r#"<div class="placeholder t-preview">No preview yet</div>"#.to_string(),
    };
    let reference = if t.reference_image_url.starts_with("http://")
        || t.reference_image_url.starts_with("https://")
    {
        format!(
            r#"<a href="{0}" rel="noreferrer">{0}</a>"#,
            esc(&t.reference_image_url)
        )
    } else {
        esc(&t.reference_image_url)
    };
    let body = format!(
        r#"<p><a href="/dashboard/templates">← All templates</a></p>
<h2><code>{tid}</code> <span id="t-status">{badge}</span></h2>
<div class="t-detail">{preview}<dl class="t-facts">
<dt>Reference</dt><dd class="wrap">{reference}</dd>
<dt>Swipe-file design</dt><dd>{sf}</dd>
<dt>Kind</dt><dd>{labels}</dd>
<dt>Size</dt><dd>{size}</dd>
<dt>Version</dt><dd>{v}</dd>
<dt>Created</dt><dd>{created}</dd>{error}{note}
</dl></div>
<div class="pack-archive">{edit}{action}</div>
<h2>Versions</h2><ul class="designs">{vs}</ul>"#,
        badge = status_badge(&t),
        sf = t
            .swipe_file_id
            .as_deref()
            .map(|s| format!("<code>{}</code>", esc(s)))
            .unwrap_or_else(|| "—".to_string()),
        labels = {
            let l = labels(&t);
            if l.is_empty() { "—".to_string() } else { l }
        },
        size = t
            .width
            .zip(t.height)
            .map(|(w, h)| format!("{w}×{h}"))
            .unwrap_or_else(|| "—".to_string()),
        v = t.json_tree_version,
        created = esc(&when(&t.created_at)),
        error = t
            .error
            .as_deref()
            .map(|e| format!("<dt>Error</dt><dd>{}</dd>", esc(e)))
            .unwrap_or_default(),
        note = t
            .analysis
            .as_ref()
            .and_then(|a| a.note.as_deref())
            .map(|n| format!("<dt>Note</dt><dd>{}</dd>", esc(n)))
            .unwrap_or_default(),
    );
    let head = if t.status == "processing" {
        format!(
            r#"<meta http-equiv="refresh" content="4; url=/dashboard/templates/{}">"#,
            esc(&t.id)
        )
    } else {
        String::new()
    };
    Ok(html_with_images(
        StatusCode::OK,
        page_with_head(TITLE, Some(m), ACTIVE, &body, &head),
        &blob_origins(&state),
    ))
}

async fn set_deleted(
    state: &AppState,
    me: &SignedIn,
    id: &str,
    body: &[u8],
    delete: bool,
) -> DashResult {
    me.form(body)?;
    let m = &me.0;
    match design_templates::set_deleted(&state.db, &m.org_id, id, delete).await {
        Ok(_) => Ok(redirect(&format!("/dashboard/templates/{id}"))),
        Err(e) => api_error(m, TITLE, ACTIVE, e),
    }
}

/// POST /dashboard/templates/{id}/delete (soft)
pub async fn delete(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    set_deleted(&state, &me, &id, &body, true).await
}

/// POST /dashboard/templates/{id}/restore
pub async fn restore(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    set_deleted(&state, &me, &id, &body, false).await
}

/// The routes of this page.
pub fn routes() -> axum::Router<crate::DashboardState> {
    use axum::routing::{get, post};
    axum::Router::new()
        .route("/templates", get(list).post(create))
        .route("/templates/{id}", get(show))
        .route("/templates/{id}/delete", post(delete))
        .route("/templates/{id}/restore", post(restore))
}
