//! `POST /v1/previews`: a JSON tree rendered at once, free, for editors and for clients
//! that want to see a tree before a PATCH makes a paid, permanent version.
//!
//! The tree is checked exactly as PATCH /v1/image-ads/{id} checks it
//! ([`crate::resources::image_ads::validate_tree`]: size, the renderer's validation, every
//! image URL through the one address policy or as an existing own file), then rendered by
//! the process's [`Previewer`] ([`render`]): PNG by default, WebP with `Accept: image/webp`,
//! or with `Accept: application/json` the laid-out boxes of every node in the preview's
//! pixels, so an editor can draw handles where the renderer put things, with the render's
//! warnings (an image that could not be used among them). The web
//! dashboard's editor calls [`preview`] too.
//!
//! Bounds, each a clear 4xx: nodes, width and height, bytes per image, time to load the
//! images and to draw ([`PreviewLimits`]); previews per minute in a bucket of their own per
//! key (the key's general budget is not used). Rejected: queueing previews as jobs like ad
//! renders. A preview is worth having only while the person who changed the tree is
//! looking, so it is rendered in the request and bounded instead.

pub mod render;

use adforge_renderer::tree::TreeDoc;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use render::{PreviewArgs, PreviewLimits, PreviewOutput, Previewer};

use crate::auth::{Auth, Scope};
use crate::error::{ApiError, ApiResult, FieldError};
use crate::http::extract::JsonBody;
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(create_preview))
}

/// The width a preview is rendered at when the body names none.
pub const DEFAULT_WIDTH: u32 = 1080;

/// Body of POST /v1/previews.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PreviewRequest {
    /// A whole JSON tree (docs/json-tree.md), checked exactly as PATCH
    /// /v1/image-ads/{id} checks `current_json_tree`: at most 512 KiB, valid for the
    /// renderer, image fills with public http(s) URLs or this server's own files. At most
    /// 500 nodes (by default).
    #[schema(value_type = Object)]
    pub tree: Value,
    /// Output width in pixels, 1 to 2160 (default 1080); the height follows the root's
    /// aspect ratio and may not exceed 2160 either.
    #[schema(minimum = 1, maximum = 2160)]
    pub width: Option<u32>,
}

/// One node's laid-out box, in the preview's pixels.
#[derive(Debug, Serialize, ToSchema)]
pub struct PreviewNode {
    pub id: String,
    pub name: Option<String>,
    /// The slot the node fills (`headline`, `cta`, `product_image`, …) when it is one:
    /// from a template's `$text` / `$image` keys, its id, or its name.
    pub slot: Option<String>,
    /// FRAME, GROUP, RECTANGLE, ELLIPSE, TEXT or VECTOR.
    #[serde(rename = "type")]
    pub kind: String,
    /// False when the node or an ancestor is hidden.
    pub visible: bool,
    /// Top-left corner of the unrotated box (the rotation's pivot), in preview pixels.
    pub x: f32,
    pub y: f32,
    pub width: f32,
    pub height: f32,
    /// Degrees counter-clockwise, the node's and its ancestors' together.
    pub rotation: f32,
    /// TEXT: the number of lines laid out; null otherwise.
    pub lines: Option<usize>,
    /// TEXT: the font size used after shrink-to-fit, in preview pixels; null otherwise.
    pub font_size: Option<f32>,
}

/// The answer to `Accept: application/json`: where the renderer put every node.
#[derive(Debug, Serialize, ToSchema)]
pub struct PreviewLayout {
    /// Preview size in pixels.
    pub width: u32,
    pub height: u32,
    /// Preview pixels per design pixel (the root's `width`): a move of `d` preview pixels
    /// is `d / scale` in the tree.
    pub scale: f32,
    /// Every node the root reaches, parents before children (painting order).
    pub nodes: Vec<PreviewNode>,
    /// What the render could not do as asked (`missing_font`, `text_overflow`, …; the
    /// render report's warnings, docs/json-tree.md), among them `image_failed` (node, url,
    /// reason) for each node whose image could not be fetched or decoded (a host that does
    /// not resolve, a 404, bytes that are no image): such a fill is left out of the picture.
    #[schema(value_type = Vec<Object>)]
    pub warnings: Vec<Value>,
}

/// The picture's bytes (PNG or WebP), for the OpenAPI description.
pub struct PreviewPicture;

impl utoipa::PartialSchema for PreviewPicture {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .into()
    }
}

impl ToSchema for PreviewPicture {}

/// A rendered preview: the layout and, unless only boxes were asked for, the picture.
#[derive(Debug)]
pub struct Preview {
    pub layout: PreviewLayout,
    pub picture: Option<Vec<u8>>,
    pub output: PreviewOutput,
    /// Milliseconds the render took (images, layout, drawing, encoding).
    pub render_ms: f64,
}

/// Checks `body` as a PATCH checks a tree, then renders it (what POST /v1/previews does
/// after its scope and rate checks; the dashboard's editor calls it too).
///
/// # Errors
/// VALIDATION_ERROR naming `width` or `tree` (the node and field of an invalid tree, an
/// image over the byte limit, a budget exceeded); SERVICE_UNAVAILABLE when every render
/// slot stays busy.
pub async fn preview(
    state: &AppState,
    body: &PreviewRequest,
    output: PreviewOutput,
) -> ApiResult<Preview> {
    let limits = &state.previews.limits;
    let width = body.width.unwrap_or(DEFAULT_WIDTH);
    if width == 0 || width > limits.max_edge {
        return Err(ApiError::field(
            "width",
            format!("is {width}; previews are 1 to {} px wide", limits.max_edge),
        ));
    }
    let nodes = TreeDoc::new(&body.tree).node_ids().count();
    if nodes > limits.max_nodes as usize {
        return Err(ApiError::field(
            "tree",
            format!(
                "has {nodes} nodes; previews accept at most {}: remove nodes, or save the tree with PATCH and wait for its render",
                limits.max_nodes
            ),
        ));
    }
    let tree = crate::resources::image_ads::checked_tree(state, &body.tree)
        .await
        .map_err(as_tree_field)?
        .tree;
    let design = tree.design_size();
    let (w, h) = adforge_renderer::output_size(design, Some(width))
        .map_err(|e| ApiError::field("width", e.to_string()))?;
    if h > limits.max_edge {
        let widest = (limits.max_edge as f32 * design.0 / design.1)
            .floor()
            .max(1.0);
        return Err(ApiError::field(
            "width",
            format!(
                "at width {w} this {}×{} tree is {w}×{h} px; previews are at most {} px a side: ask for a width of at most {widest}",
                design.0, design.1, limits.max_edge
            ),
        ));
    }
    let doc = TreeDoc::new(&body.tree);
    let out = state.previews.render(tree, width, output).await?;
    let nodes = out
        .layout
        .boxes
        .into_iter()
        .map(|b| PreviewNode {
            slot: doc.slot(&b.id),
            id: b.id,
            name: b.name,
            kind: b.kind.to_owned(),
            visible: b.visible,
            x: b.x,
            y: b.y,
            width: b.width,
            height: b.height,
            rotation: b.rotation,
            lines: b.lines,
            font_size: b.font_size,
        })
        .collect();
    let warnings = out
        .warnings
        .iter()
        .filter_map(|w| serde_json::to_value(w).ok())
        .collect();
    Ok(Preview {
        layout: PreviewLayout {
            width: out.layout.width,
            height: out.layout.height,
            scale: out.layout.scale,
            nodes,
            warnings,
        },
        picture: out.picture,
        output,
        render_ms: out.render_ms,
    })
}

/// The PATCH check names the field `current_json_tree`; a preview's body calls it `tree`.
fn as_tree_field(mut e: ApiError) -> ApiError {
    if e.details.is_empty() {
        return e;
    }
    let details: Vec<FieldError> = std::mem::take(&mut e.details)
        .into_iter()
        .map(|d| {
            let field = if d.field == "current_json_tree" {
                "tree".to_owned()
            } else {
                d.field
            };
            FieldError::new(field, d.message)
        })
        .collect();
    ApiError::validation(details)
}

/// What `Accept` asks for: JSON boxes, WebP or PNG (the default, also for `*/*` and for
/// types this endpoint does not make). Among the types a client accepts, the one with the
/// highest `q` wins; PNG wins ties, then WebP.
pub fn negotiate(accept: Option<&HeaderValue>) -> PreviewOutput {
    let Some(accept) = accept.and_then(|v| v.to_str().ok()) else {
        return PreviewOutput::Png;
    };
    let q_of = |mime: &str| -> f32 {
        let (kind, _) = mime.split_once('/').unwrap_or((mime, ""));
        let mut best: Option<(u8, f32)> = None;
        for range in accept.split(',') {
            let mut parts = range.split(';');
            let r = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            let specificity = if r == mime {
                3
            } else if r.strip_suffix("/*") == Some(kind) {
                2
            } else if r == "*/*" {
                1
            } else {
                continue;
            };
            if best.is_none_or(|(s, _)| specificity > s) {
                best = Some((specificity, q));
            }
        }
        best.map_or(0.0, |(_, q)| q)
    };
    let candidates = [
        (PreviewOutput::Png, q_of("image/png")),
        (PreviewOutput::Webp, q_of("image/webp")),
        (PreviewOutput::Boxes, q_of("application/json")),
    ];
    let mut best = (PreviewOutput::Png, 0.0f32);
    for (out, q) in candidates {
        if q > best.1 {
            best = (out, q);
        }
    }
    best.0
}

impl Preview {
    /// The HTTP answer: the picture (`image/png` or `image/webp`) or the layout as JSON,
    /// with `X-Render-Ms`, never cached.
    pub fn into_response(self) -> Response {
        let ms = format!("{:.1}", self.render_ms);
        let mut res = match (self.output, self.picture) {
            (PreviewOutput::Boxes, _) | (_, None) => axum::Json(self.layout).into_response(),
            (PreviewOutput::Webp, Some(bytes)) => {
                ([(header::CONTENT_TYPE, "image/webp")], bytes).into_response()
            }
            (PreviewOutput::Png, Some(bytes)) => {
                ([(header::CONTENT_TYPE, "image/png")], bytes).into_response()
            }
        };
        let h = res.headers_mut();
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        h.insert(header::VARY, HeaderValue::from_static("Accept"));
        if let Ok(v) = HeaderValue::from_str(&ms) {
            h.insert("x-render-ms", v);
        }
        res
    }
}

/// Render a preview
///
/// Renders a JSON tree at once and answers the picture, for free: nothing is stored and no
/// version is made. The tree is checked exactly as PATCH /v1/image-ads/{id} checks
/// `current_json_tree` (errors name the field `tree`). Answers `image/png` by default,
/// `image/webp` (lossless) with `Accept: image/webp`, and with `Accept: application/json`
/// the laid-out box of every node in the preview's pixels and the render's `warnings`
/// (nothing is drawn; the images are loaded, so an image fill that cannot be fetched or
/// decoded, such as one whose host does not resolve, is an `image_failed` warning naming
/// the node, the URL and the reason). `X-Render-Ms` says how long the render took.
///
/// Scope `image_ads:read`. Limits (the defaults; the operator may change them): at most
/// 500 nodes; width 1 to 2160 px (default 1080)
/// and a height of at most 2160 px; each image at most 15 MiB; 10 s to load the images and
/// 5 s to draw; over any of them, 400 VALIDATION_ERROR saying which. Images come from this
/// server's own files or public URLs through the same address policy as ads, and decoded
/// images are cached by URL for later previews. Rate: 600 previews per rolling 60
/// seconds per key, in a bucket of their own (previews do not use the key's general budget; the
/// `RateLimit-*` headers of this endpoint describe the preview bucket); over it, 429
/// RATE_LIMIT_EXCEEDED with `Retry-After`. 503 SERVICE_UNAVAILABLE (with `Retry-After`)
/// when every render slot of the server stays busy for 10 s. `Idempotency-Key` is
/// ignored: a preview writes nothing, and a retry renders again.
#[utoipa::path(post, path = "/v1/previews", tag = "previews", request_body = PreviewRequest,
    responses(
        (status = 200, description = "The preview, with `X-Render-Ms`", content(
            (PreviewPicture = "image/png"),
            (PreviewPicture = "image/webp"),
            (PreviewLayout = "application/json"),
        ), headers(("X-Render-Ms" = String, description = "Milliseconds the render took"))),
        (status = 400, description = "VALIDATION_ERROR naming `tree` (the node and field of an invalid tree, an image over 15 MiB, a time budget exceeded) or `width`", body = crate::error::ErrorBody),
        (status = 429, description = "RATE_LIMIT_EXCEEDED: over the preview bucket; see Retry-After", body = crate::error::ErrorBody),
        (status = 503, description = "SERVICE_UNAVAILABLE: every render slot stayed busy; see Retry-After", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["image_ads:read"])))]
async fn create_preview(
    State(state): State<AppState>,
    Auth(caller): Auth,
    headers: HeaderMap,
    body: JsonBody<PreviewRequest>,
) -> ApiResult<Response> {
    // The preview bucket is counted by the rate-limit middleware
    // ([`crate::ratelimit::PREVIEWS_PATH`]).
    caller.require(Scope::ImageAdsRead)?;
    let body = body.parse()?;
    let output = negotiate(headers.get(header::ACCEPT));
    Ok(preview(&state, &body, output).await?.into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(accept: &str) -> PreviewOutput {
        negotiate(Some(&HeaderValue::from_str(accept).unwrap()))
    }

    #[test]
    fn accept_picks_the_format() {
        assert_eq!(negotiate(None), PreviewOutput::Png);
        assert_eq!(pick("*/*"), PreviewOutput::Png);
        assert_eq!(pick("image/webp"), PreviewOutput::Webp);
        assert_eq!(pick("image/webp,*/*;q=0.8"), PreviewOutput::Webp);
        assert_eq!(pick("application/json"), PreviewOutput::Boxes);
        assert_eq!(pick("image/*"), PreviewOutput::Png);
        assert_eq!(
            pick("image/png;q=0.5, application/json"),
            PreviewOutput::Boxes
        );
        assert_eq!(pick("text/html"), PreviewOutput::Png);
    }
}
