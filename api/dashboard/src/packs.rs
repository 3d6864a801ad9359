//! Design packs: list (active or archived), create, rename and describe, add designs (from
//! the swipe page's checkboxes, into an existing pack or a new one), remove them, archive
//! and unarchive. Every action calls the functions the `/v1/design-packs` handlers call; a
//! pack created here carries `created_by {profile_id, name}` of the signed-in member (API
//! keys' packs keep `created_by: null`).

use std::fmt::Write;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};

use crate::html::{csrf_field, esc, notice, page, post_button, when};
use crate::members::SessionMember;
use crate::swipe::{api_error, blob_origins, design_card, error_box};
use crate::{DashResult, SignedIn, html_with_images, query, redirect};
use adforge_api::resources::common::Patch;
use adforge_api::resources::design_packs::{self, PackCreate, PackUpdate};
use adforge_api::resources::swipe_files;
use adforge_api::state::AppState;
use adforge_api::store::list::{DEFAULT_LIMIT, ListParams};
use adforge_api::swipe::filter::SwipeFilter;

const TITLE: &str = "Design packs";
const ACTIVE: &str = "/dashboard/packs";

fn create_form(csrf: &str) -> String {
    format!(
        r#"<section class="card" aria-labelledby="new-pack-h"><h2 id="new-pack-h">New pack</h2>
<form method="post" action="/dashboard/packs">{csrf}<div class="grid-form">
<div><label for="pack-title">Title</label><input id="pack-title" name="title" required maxlength="80"></div>
<div><label for="pack-description">Description (optional)</label><input id="pack-description" name="description" maxlength="500"></div>
<div><button type="submit">Create pack</button></div></div></form>
<p class="hint">Add designs from the <a href="/dashboard/swipe">swipe file</a>: select them and choose "Add to pack".</p></section>"#,
        csrf = csrf_field(csrf),
    )
}

async fn render_list(
    state: &AppState,
    m: &SessionMember,
    uri: &Uri,
    status: StatusCode,
    flash: String,
) -> DashResult {
    let archived = query(uri).get("archived") == Some("true");
    let filter = design_packs::PackFilter {
        archived,
        ..Default::default()
    };
    let packs = match design_packs::list(
        &state.db,
        state.blobs.as_ref(),
        &m.org_id,
        &filter,
        None,
        100,
    )
    .await
    {
        Ok(p) => p,
        Err(e) => return api_error(m, TITLE, ACTIVE, e),
    };
    let mut cards = String::new();
    for p in &packs.items {
        // The previews' 200 px thumbnails (the pack answers the originals' URLs), read
        // through the swipe-file list by ids, in the previews' order.
        let ids: Vec<&str> = p
            .previews
            .iter()
            .map(|pv| pv.swipe_file_id.as_str())
            .collect();
        let small = if ids.is_empty() {
            Vec::new()
        } else {
            let p = ListParams {
                ids: Some(ids.iter().map(|id| id.to_string()).collect()),
                ..ListParams::new(DEFAULT_LIMIT)
            };
            match swipe_files::list(
                &state.db,
                state.blobs.as_ref(),
                &m.org_id,
                &SwipeFilter::visible(),
                &p,
            )
            .await
            {
                Ok(page) => page.items,
                Err(e) => return api_error(m, TITLE, ACTIVE, e),
            }
        };
        let mut thumbs = String::new();
        for pv in &p.previews {
            let url = small
                .iter()
                .find(|f| f.id == pv.swipe_file_id)
                .and_then(|f| f.thumbnail_url.as_deref())
                .unwrap_or(&pv.image_url);
            let _ = write!(thumbs, r#"<img src="{}" alt="" loading="lazy">"#, esc(url));
        }
        if thumbs.is_empty() {
            thumbs.push_str(r#"<div class="placeholder">Empty</div>"#);
        }
        let by = match (&p.created_by, p.is_managed) {
            (Some(c), _) => format!("by {}", esc(&c.name)),
            (None, true) => "curated by the service".to_string(),
            (None, false) => "made with an API key".to_string(),
        };
        let _ = write!(
            cards,
            r#"<li class="pack" id="{id}"><a href="/dashboard/packs/{id}"><div class="pack-thumbs">{thumbs}</div><strong>{title}</strong></a><p class="hint">{n} design{s} · {by} · {created}</p></li>"#,
            id = esc(&p.id),
            title = esc(&p.title),
            n = p.item_count,
            s = if p.item_count == 1 { "" } else { "s" },
            created = esc(&when(&p.created_at)),
        );
    }
    if packs.items.is_empty() {
        cards.push_str(if archived {
            r#"<li class="empty">No archived packs.</li>"#
        } else {
            r#"<li class="empty">No packs yet.</li>"#
        });
    }
    let toggle = if archived {
        r#"<p><a href="/dashboard/packs">Show active packs</a></p>"#
    } else {
        r#"<p><a href="/dashboard/packs?archived=true">Show archived packs</a></p>"#
    };
    let body = format!(
        r#"{flash}<h2>{heading} ({total})</h2>{toggle}<ul class="packs">{cards}</ul>{form}"#,
        heading = if archived {
            "Archived packs"
        } else {
            "Your packs"
        },
        total = packs.total_count,
        form = if archived {
            String::new()
        } else {
            create_form(&m.csrf_token)
        },
    );
    Ok(html_with_images(
        status,
        page(TITLE, Some(m), ACTIVE, &body),
        &blob_origins(state),
    ))
}

/// GET /dashboard/packs
pub async fn list(State(state): State<AppState>, me: SignedIn, uri: Uri) -> DashResult {
    render_list(&state, &me.0, &uri, StatusCode::OK, String::new()).await
}

/// POST /dashboard/packs: a new pack, `created_by` the signed-in member.
pub async fn create(State(state): State<AppState>, me: SignedIn, body: Bytes) -> DashResult {
    let form = me.form(&body)?;
    let m = &me.0;
    let body = PackCreate {
        title: form.get("title").unwrap_or("").to_string(),
        description: form.get("description").map(str::to_string),
        swipe_file_ids: None,
    };
    match design_packs::create(
        &state.db,
        state.blobs.as_ref(),
        &m.org_id,
        body,
        Some((&m.profile_id, &m.name)),
    )
    .await
    {
        Ok(p) => Ok(redirect(&format!("/dashboard/packs/{}", p.id))),
        Err(e) => {
            let status = e.code.status();
            if status == StatusCode::NOT_FOUND || status.is_server_error() {
                return api_error(m, TITLE, ACTIVE, e);
            }
            let uri: Uri = "/dashboard/packs".parse().unwrap_or_default();
            render_list(&state, m, &uri, status, error_box(&e)).await
        }
    }
}

/// POST /dashboard/packs/add (the swipe page's form): the checked `swipe_file_id`s into
/// `pack`, or into a new pack named `new_title`.
pub async fn add_from_swipe(
    State(state): State<AppState>,
    me: SignedIn,
    body: Bytes,
) -> DashResult {
    let form = me.form(&body)?;
    let m = &me.0;
    let ids: Vec<String> = form
        .all("swipe_file_id")
        .into_iter()
        .map(str::to_string)
        .collect();
    let pack = form.get("pack").unwrap_or("").trim();
    let new_title = form.get("new_title").unwrap_or("").trim();
    let result = if pack.is_empty() {
        if ids.is_empty() {
            let e = adforge_api::error::ApiError::field(
                "swipe_file_ids",
                "select at least one design to add",
            );
            return api_error(m, TITLE, ACTIVE, e);
        }
        let body = PackCreate {
            title: new_title.to_string(),
            description: None,
            swipe_file_ids: Some(ids),
        };
        design_packs::create(
            &state.db,
            state.blobs.as_ref(),
            &m.org_id,
            body,
            Some((&m.profile_id, &m.name)),
        )
        .await
        .map(|p| p.id)
    } else {
        design_packs::add_designs(&state.db, &m.org_id, pack, &ids)
            .await
            .map(|_| pack.to_string())
    };
    match result {
        Ok(id) => Ok(redirect(&format!("/dashboard/packs/{id}"))),
        Err(e) => api_error(m, TITLE, ACTIVE, e),
    }
}

async fn render_pack(
    state: &AppState,
    m: &SessionMember,
    id: &str,
    uri: &Uri,
    status: StatusCode,
    flash: String,
) -> DashResult {
    let p = match design_packs::respond(&state.db, state.blobs.as_ref(), &m.org_id, id).await {
        Ok(p) => p,
        Err(e) => return api_error(m, TITLE, ACTIVE, e),
    };
    let after = query(uri).get("starting_after").map(str::to_string);
    let filter = SwipeFilter {
        design_pack_id: Some(p.id.clone()),
        ..SwipeFilter::visible()
    };
    let params = ListParams {
        starting_after: after,
        ..ListParams::new(100)
    };
    let items =
        match swipe_files::list(&state.db, state.blobs.as_ref(), &m.org_id, &filter, &params).await
        {
            Ok(i) => i,
            Err(e) => return api_error(m, TITLE, ACTIVE, e),
        };
    let pid = esc(&p.id);
    let editable = !p.is_managed;
    let mut cards = String::new();
    for f in &items.items {
        cards.push_str(&design_card(f, editable, ""));
    }
    let grid = if items.items.is_empty() {
        r#"<p class="empty">No designs in this pack. Add some from the <a href="/dashboard/swipe">swipe file</a>.</p>"#.to_string()
    } else if editable {
        format!(
            r#"<form method="post" action="/dashboard/packs/{pid}/remove">{csrf}<ul class="designs">{cards}</ul><button type="submit" class="danger">Remove selected from pack</button></form>"#,
            csrf = csrf_field(&m.csrf_token),
        )
    } else {
        format!(r#"<ul class="designs">{cards}</ul>"#)
    };
    let more = if items.has_more {
        items
            .items
            .last()
            .map(|l| {
                format!(
                    r#"<p><a class="button secondary" href="/dashboard/packs/{pid}?starting_after={}">Next page</a></p>"#,
                    esc(&l.id)
                )
            })
            .unwrap_or_default()
    } else {
        String::new()
    };
    let edit = if editable {
        let archive = if p.archived_at.is_some() {
            post_button(
                &format!("/dashboard/packs/{}/unarchive", p.id),
                &m.csrf_token,
                "Unarchive",
                "secondary",
                "Unarchive this pack",
            )
        } else {
            post_button(
                &format!("/dashboard/packs/{}/archive", p.id),
                &m.csrf_token,
                "Archive",
                "danger",
                "Archive this pack",
            )
        };
        format!(
            r#"<section class="card" aria-labelledby="rename-h"><h2 id="rename-h">Rename</h2>
<form method="post" action="/dashboard/packs/{pid}">{csrf}<div class="grid-form">
<div><label for="pack-title">Title</label><input id="pack-title" name="title" required maxlength="80" value="{title}"></div>
<div><label for="pack-description">Description</label><input id="pack-description" name="description" maxlength="500" value="{desc}"></div>
<div><button type="submit">Save</button></div></div></form>
<div class="pack-archive">{archive}</div></section>"#,
            csrf = csrf_field(&m.csrf_token),
            title = esc(&p.title),
            desc = esc(p.description.as_deref().unwrap_or("")),
        )
    } else {
        notice(
            "ok",
            "<p>A service-curated pack: read-only. Add its designs to a pack of your own from the swipe file.</p>",
        )
    };
    let by = match &p.created_by {
        Some(c) => format!(
            r#"Created by <span class="created-by" data-profile="{}">{}</span>"#,
            esc(&c.profile_id),
            esc(&c.name)
        ),
        None if p.is_managed => "Curated by the service".to_string(),
        None => "Created with an API key".to_string(),
    };
    let body = format!(
        r#"{flash}<p><a href="/dashboard/packs">← All packs</a></p>
<h2 class="pack-title">{title}{arch}</h2><p class="hint">{by} · {created} · {n} design{s} · <code>{pid}</code></p>{desc}
{grid}{more}{edit}"#,
        title = esc(&p.title),
        arch = if p.archived_at.is_some() {
            r#" <span class="badge">archived</span>"#
        } else {
            ""
        },
        created = esc(&when(&p.created_at)),
        n = p.item_count,
        s = if p.item_count == 1 { "" } else { "s" },
        desc = p
            .description
            .as_deref()
            .map(|d| format!("<p>{}</p>", esc(d)))
            .unwrap_or_default(),
    );
    Ok(html_with_images(
        status,
        page(TITLE, Some(m), ACTIVE, &body),
        &blob_origins(state),
    ))
}

/// GET /dashboard/packs/{id}
pub async fn show(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    uri: Uri,
) -> DashResult {
    render_pack(&state, &me.0, &id, &uri, StatusCode::OK, String::new()).await
}

/// POST /dashboard/packs/{id}: rename and describe.
pub async fn rename(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    let form = me.form(&body)?;
    let m = &me.0;
    let description = match form.get("description").map(str::trim) {
        Some("") => Patch::Null,
        Some(d) => Patch::Value(d.to_string()),
        None => Patch::Missing,
    };
    let body = PackUpdate {
        title: Patch::Value(form.get("title").unwrap_or("").to_string()),
        description,
    };
    match design_packs::update(&state.db, state.blobs.as_ref(), &m.org_id, &id, body).await {
        Ok(_) => Ok(redirect(&format!("/dashboard/packs/{id}"))),
        Err(e) => {
            let status = e.code.status();
            if status == StatusCode::NOT_FOUND || status.is_server_error() {
                return api_error(m, TITLE, ACTIVE, e);
            }
            let uri: Uri = "/dashboard/packs".parse().unwrap_or_default();
            render_pack(&state, m, &id, &uri, status, error_box(&e)).await
        }
    }
}

async fn set_archived(
    state: &AppState,
    me: &SignedIn,
    id: &str,
    body: &[u8],
    archive: bool,
) -> DashResult {
    me.form(body)?;
    let m = &me.0;
    match design_packs::set_archived(&state.db, state.blobs.as_ref(), &m.org_id, id, archive).await
    {
        Ok(_) => Ok(redirect(&format!("/dashboard/packs/{id}"))),
        Err(e) => api_error(m, TITLE, ACTIVE, e),
    }
}

/// POST /dashboard/packs/{id}/archive
pub async fn archive(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    set_archived(&state, &me, &id, &body, true).await
}

/// POST /dashboard/packs/{id}/unarchive
pub async fn unarchive(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    set_archived(&state, &me, &id, &body, false).await
}

/// POST /dashboard/packs/{id}/remove: the checked `swipe_file_id`s.
pub async fn remove(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    let form = me.form(&body)?;
    let m = &me.0;
    let ids: Vec<String> = form
        .all("swipe_file_id")
        .into_iter()
        .map(str::to_string)
        .collect();
    match design_packs::remove_designs(&state.db, &m.org_id, &id, &ids).await {
        Ok(_) => Ok(redirect(&format!("/dashboard/packs/{id}"))),
        Err(e) => api_error(m, TITLE, ACTIVE, e),
    }
}

/// The routes of this page.
pub fn routes() -> axum::Router<crate::DashboardState> {
    use axum::routing::{get, post};
    axum::Router::new()
        .route("/packs", get(list).post(create))
        .route("/packs/add", post(add_from_swipe))
        .route("/packs/{id}", get(show).post(rename))
        .route("/packs/{id}/archive", post(archive))
        .route("/packs/{id}/unarchive", post(unarchive))
        .route("/packs/{id}/remove", post(remove))
}
