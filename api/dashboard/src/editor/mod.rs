//! The visual editor of editable ads and design templates: the design on its own picture,
//! rendered by the server at every change (see `assets/dashboard/editor/`, plain ES
//! modules served from `/dashboard/assets/editor/`, no build step).
//!
//! - The page ([`page`]) is server-rendered HTML with the tree's JSON text and what the
//!   panel offers (brand palettes, images, fonts: [`choices`]) in a JSON data block
//!   (`<script type="application/json">`, not executed, so the content policy stays
//!   `script-src 'self'`).
//! - The browser edits the tree and asks `POST /dashboard/editor/preview` for its picture
//!   and laid-out boxes: the same [`previews::preview`] as `POST /v1/previews` (checked as
//!   PATCH checks a tree), with its own bucket per member of the same size as an API key's
//!   preview bucket. The answer is one JSON object holding both, so a picture and its boxes
//!   always belong to the same tree (the picture as a `data:` URL, which the page's
//!   `img-src` already allows).
//! - Save posts the whole tree to the ad's or template's `…/edit/save`, which calls the
//!   PATCH domain functions (`image_ads::update`, `design_templates::update`) with the
//!   change summary the editor wrote from its undo history.
//! - The JSON endpoints are called by the page's script with the session cookie and the
//!   session's CSRF token in an `X-CSRF-Token` header (the token every form of the session
//!   carries; a cross-site page can neither read it nor send the header without a CORS
//!   preflight this server never answers). They answer the API's error shape, so the
//!   editor shows the API's messages. No API key is ever put in a page.
//!
//! Rejected: a client-side renderer (the picture would not be the renderer's), and a
//! pointer library (Pointer Events with capture cover drag and resize in a few lines).

mod ad;
mod assets;
pub mod choices;
mod template;

use adforge_api::error::{ApiError, ErrorCode};
use adforge_api::http::extract::JsonBody;
use adforge_api::ratelimit::WINDOW_SECS;
use adforge_api::resources::previews::{self, PreviewLayout, PreviewOutput, PreviewRequest};
use axum::Router;
use axum::extract::{FromRequestParts, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Serialize;
use serde_json::Value;

use crate::html::{esc, page_with_head};
use crate::members::{self, SessionMember};
use crate::{DashboardState, SESSION_COOKIE, cookie, html_with_images, same_secret};
use choices::Choices;

pub use ad::{page as ad_page, save as ad_save};

/// The header carrying the session's CSRF token on the editor's JSON requests.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The editor's routes (merged into the dashboard's router).
pub fn routes() -> Router<DashboardState> {
    Router::new()
        .route("/assets/editor.css", get(assets::css))
        .route("/assets/editor/{file}", get(assets::script))
        .route("/editor/preview", post(preview))
        .route("/ads/{id}/edit/save", post(ad::save))
        .route("/templates/{id}/edit", get(template::page))
        .route("/templates/{id}/edit/save", post(template::save))
}

/// The signed-in member of an editor JSON request whose `X-CSRF-Token` is the session's.
///
/// Rejections are the API's error shape: 401 UNAUTHORIZED (no live session: sign in again,
/// in another tab, then retry), 403 FORBIDDEN (the token is missing or wrong: reload the
/// page), 404 NOT_FOUND (the dashboard is off).
pub struct EditorCaller(pub SessionMember);

impl FromRequestParts<DashboardState> for EditorCaller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &DashboardState,
    ) -> Result<Self, Self::Rejection> {
        if !state.config.enabled {
            return Err(ApiError::new(
                ErrorCode::NotFound,
                "The dashboard is turned off on this server",
            ));
        }
        let signed_out = || {
            ApiError::new(
                ErrorCode::Unauthorized,
                "You are signed out: sign in to the dashboard again (in another tab, to keep your changes here), then try again",
            )
        };
        let Some(token) = cookie(&parts.headers, SESSION_COOKIE) else {
            return Err(signed_out());
        };
        let m = members::session_member(&state.db, token)
            .await
            .map_err(ApiError::internal)?
            .ok_or_else(signed_out)?;
        let sent = parts.headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
        match sent {
            Some(t) if same_secret(t, &m.csrf_token) => Ok(EditorCaller(m)),
            _ => Err(ApiError::new(
                ErrorCode::Forbidden,
                "The request's X-CSRF-Token header is missing or not this session's: reload the editor page",
            )),
        }
    }
}

/// The answer of `POST /dashboard/editor/preview`.
#[derive(Serialize)]
pub struct PreviewAnswer {
    /// The picture as a `data:image/png;base64,…` URL.
    pub image: String,
    /// Milliseconds the render took on the server.
    pub render_ms: f64,
    /// Where the renderer put every node, in the picture's pixels.
    pub layout: PreviewLayout,
}

/// POST /dashboard/editor/preview: `{"tree", "width"}` as POST /v1/previews takes it;
/// answers [`PreviewAnswer`] or the API's error (400 naming `tree` or `width`, 429 over the
/// member's preview bucket, 503 when every render slot stays busy).
async fn preview(
    State(state): State<DashboardState>,
    caller: EditorCaller,
    body: JsonBody<PreviewRequest>,
) -> Response {
    let limit = state.previews.limits.per_minute;
    let bucket = format!("previews:member:{}", caller.0.profile_id);
    let d = state.limiter.hit(&bucket, limit).await;
    if !d.allowed {
        return ApiError {
            retry_after: Some(d.retry_after_secs),
            ..ApiError::new(
                ErrorCode::RateLimitExceeded,
                format!(
                    "More than {limit} previews in {WINDOW_SECS} seconds: wait {} seconds; the editor asks again by itself",
                    d.retry_after_secs
                ),
            )
        }
        .into_response();
    }
    let body = match body.parse() {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    match previews::preview(&state, &body, PreviewOutput::Png).await {
        Ok(p) => {
            let answer = PreviewAnswer {
                image: data_url("image/png", p.picture.as_deref().unwrap_or_default()),
                render_ms: p.render_ms,
                layout: p.layout,
            };
            let mut r = axum::Json(answer).into_response();
            r.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            r
        }
        Err(e) => e.into_response(),
    }
}

/// `data:{mime};base64,…` of `bytes` (standard alphabet, padded; RFC 4648). Written here
/// rather than adding a crate for a dozen lines.
pub fn data_url(mime: &str, bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(mime.len() + 13 + bytes.len().div_ceil(3) * 4);
    out.push_str("data:");
    out.push_str(mime);
    out.push_str(";base64,");
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// What an editor page shows and where it saves.
pub struct EditorPage<'a> {
    /// `ad` or `template`.
    pub kind: &'static str,
    pub id: &'a str,
    /// The page's `<h1>`.
    pub title: String,
    /// The version the tree is; Save makes `version + 1`.
    pub version: i64,
    pub tree: &'a Value,
    /// The current picture, shown until the first preview arrives.
    pub picture: Option<String>,
    /// Where "back" goes, and its words.
    pub back: (String, &'static str),
    /// The plain form of the same edit, for browsers without scripts.
    pub fallback: Option<String>,
    pub save_url: String,
    /// The navigation entry to mark.
    pub active: &'static str,
    pub choices: Choices,
}

/// The data block the script reads (`#ed-data`).
#[derive(Serialize)]
struct EditorData<'a> {
    kind: &'a str,
    id: &'a str,
    version: i64,
    /// The tree's JSON text, kept as text so undo can return to it byte for byte.
    tree: String,
    preview_url: &'a str,
    save_url: &'a str,
    csrf: &'a str,
    #[serde(flatten)]
    choices: &'a Choices,
}

/// JSON for a `<script type="application/json">` block: `<`, `>` and `&` (which JSON has
/// only inside strings) written as `\u` escapes, so no text can end the element.
fn script_json(value: &impl Serialize) -> String {
    let text = serde_json::to_string(value).unwrap_or_else(|_| "{}".to_string());
    text.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// The editor page.
pub fn page(state: &DashboardState, m: &SessionMember, p: &EditorPage<'_>) -> Response {
    let data = EditorData {
        kind: p.kind,
        id: p.id,
        version: p.version,
        tree: serde_json::to_string(p.tree).unwrap_or_default(),
        preview_url: "/dashboard/editor/preview",
        save_url: &p.save_url,
        csrf: &m.csrf_token,
        choices: &p.choices,
    };
    let next = p.version + 1;
    let what = if p.kind == "ad" { "ad" } else { "template" };
    let fallback = p
        .fallback
        .as_deref()
        .map(|u| format!(r#" · <a href="{}">Edit with the plain form</a>"#, esc(u)))
        .unwrap_or_default();
    let noscript = p.fallback.as_deref().map_or_else(
        || "The editor needs JavaScript.".to_string(),
        |u| {
            format!(
                r#"The editor needs JavaScript; <a href="{}">the plain form</a> changes texts, colours and images without it."#,
                esc(u)
            )
        },
    );
    let picture = p
        .picture
        .as_deref()
        .map(|u| format!(r#" src="{}""#, esc(u)))
        .unwrap_or_default();
    let body = format!(
        r##"<div class="ed" id="editor">
<p class="ed-links"><a href="{back}">{back_words}</a>{fallback}</p>
<div class="notice warn ed-narrow-note"><p>On a screen this narrow the editor is read-mostly: you can pick parts, change their words and colours, undo and save; moving, resizing and adding parts need a wider window.</p></div>
<noscript><div class="notice error"><p>{noscript}</p></div></noscript>
<div class="ed-bar">
<button type="button" id="ed-undo" class="small secondary" aria-keyshortcuts="Control+Z Meta+Z" disabled>Undo</button>
<button type="button" id="ed-redo" class="small secondary" aria-keyshortcuts="Control+Shift+Z Meta+Shift+Z" disabled>Redo</button>
<button type="button" id="ed-add-text" class="small secondary wide-only">Add text</button>
<button type="button" id="ed-add-shape" class="small secondary wide-only">Add shape</button>
<span id="ed-dirty" class="ed-dirty" role="status">No unsaved changes</span>
</div>
<div class="ed-main">
<section class="ed-layers" id="ed-layers" aria-labelledby="ed-layers-h"><h2 id="ed-layers-h">Layers</h2><ul id="ed-layer-list" class="layer-list"></ul></section>
<section class="ed-canvas" aria-labelledby="ed-canvas-h"><h2 id="ed-canvas-h" class="sr-only">Picture</h2>
<div class="ed-stage-wrap"><div class="stage" id="ed-stage"><img id="ed-picture" alt="The {what} as it looks with your changes"{picture}><div class="overlay" id="ed-overlay"></div><div class="selection" id="ed-selection" hidden></div><div class="marker" id="ed-marker" hidden></div></div></div>
<p id="ed-status" class="hint">Rendering the preview…</p>
<div id="ed-alert" class="notice error" role="alert" hidden></div>
<p id="ed-keys" class="hint">Tab moves between the parts of the picture. <span class="wide-only">Arrow keys move the selected part (Shift: 10 px; Alt: change its size); </span>Enter edits a text in place; <span class="wide-only">Delete removes the part; </span>Escape selects the frame around it. Ctrl+Z undoes, Shift+Ctrl+Z redoes.</p>
</section>
<section class="ed-panel" aria-labelledby="ed-panel-h"><h2 id="ed-panel-h">Selected: <span id="ed-sel-name">nothing selected</span></h2><div id="ed-props"></div></section>
</div>
<form id="ed-save" class="ed-save card">
<div class="ed-field"><label for="ed-summary">Change summary <small>(kept with version {next}; written from your changes until you edit it)</small></label><input id="ed-summary" maxlength="500" autocomplete="off"></div>
<button type="submit" id="ed-save-button" disabled>Save as version {next}</button>
<p class="hint">Saving makes version {next} of this {what} through the same checks as the API's PATCH, then renders it{free}.</p>
</form>
<details class="ed-json"><summary>The tree as JSON (what Save sends)</summary><textarea id="ed-json" readonly rows="12" aria-label="The tree as JSON" spellcheck="false"></textarea></details>
<script type="application/json" id="ed-data">{data}</script>
<script type="module" src="/dashboard/assets/editor/main.js"></script>
</div>"##,
        back = esc(&p.back.0),
        back_words = p.back.1,
        free = if p.kind == "ad" {
            " in the background (edits of editable ads are free)"
        } else {
            " into a new preview"
        },
        data = script_json(&data),
    );
    let head = r#"<link rel="stylesheet" href="/dashboard/assets/editor.css">"#;
    html_with_images(
        StatusCode::OK,
        page_with_head(&p.title, Some(m), p.active, &body, head),
        &crate::swipe::blob_origins(&state.app),
    )
}

/// The JSON body of a Save.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaveRequest {
    /// The whole new tree.
    pub tree: Value,
    /// The version the editor started from; a newer one makes the save a 409.
    pub base_version: i64,
    pub change_summary: Option<String>,
}

/// What a Save answers: the new version and the page to go to.
#[derive(Serialize)]
pub struct SaveAnswer {
    pub version: i64,
    pub url: String,
}

/// 409 CONFLICT: the design moved on while it was being edited.
pub fn stale(what: &str, now: i64) -> ApiError {
    ApiError::new(
        ErrorCode::Conflict,
        format!(
            "The {what} changed while you edited it: it is now at version {now}. Your changes were not saved; copy what you need, reload the editor and make them again"
        ),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn data_urls_are_base64() {
        assert_eq!(super::data_url("a/b", b""), "data:a/b;base64,");
        assert_eq!(super::data_url("a/b", b"f"), "data:a/b;base64,Zg==");
        assert_eq!(super::data_url("a/b", b"fo"), "data:a/b;base64,Zm8=");
        assert_eq!(super::data_url("a/b", b"foo"), "data:a/b;base64,Zm9v");
        assert_eq!(
            super::data_url("a/b", b"foobar\xff\xfe"),
            "data:a/b;base64,Zm9vYmFy//4="
        );
    }

    #[test]
    fn script_json_cannot_end_its_element() {
        let s = super::script_json(&serde_json::json!({"t": "</script><b>&"}));
        assert!(
            !s.contains('<') && !s.contains('>') && !s.contains('&'),
            "{s}"
        );
        let back: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back["t"], "</script><b>&");
    }
}
