//! A local server that speaks Figma's REST API from the fixtures of `assets/figma/fixtures`
//! (real responses and hand-made ones, see the README there): `GET /v1/files/:key/nodes`,
//! `GET /v1/files/:key/images`, `GET /v1/images/:key` (PNG renders and SVG exports), and
//! the download URLs those name (`/downloads/…`, as Figma's S3 URLs are). Every JSON answer
//! it gives is first validated against Figma's OpenAPI description (the test fails on an
//! answer Figma's own description does not allow). Answers can be planned (403, 404, 429
//! with `Retry-After`, a slow answer), and every request is recorded, with whether it
//! carried the token. `#[path]`-included by the benchmark too.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

#[path = "../../../../worker/tests/generate/figma/spec.rs"]
#[allow(dead_code)]
pub mod figma_spec;

/// A planned answer to the next API call (downloads are never planned).
#[derive(Clone, Debug)]
pub enum Planned {
    /// An error status with Figma's error body.
    Status(u16),
    /// 429 with `Retry-After` seconds.
    RateLimited(u64),
    /// Answer normally after a pause.
    Slow(Duration),
}

/// One request the server saw.
#[derive(Clone, Debug)]
pub struct Hit {
    pub path: String,
    pub query: String,
    /// The `X-Figma-Token` it carried, if any.
    pub token: Option<String>,
    pub at: Instant,
}

#[derive(Default)]
struct Inner {
    token: String,
    /// Where download URLs point: this server.
    base: String,
    /// File key → nodes response.
    files: HashMap<String, Value>,
    /// Image ref → bytes.
    images: HashMap<String, Vec<u8>>,
    /// Node id → SVG export (others get the hand-made icon).
    svgs: HashMap<String, Vec<u8>>,
    /// Node id → Figma's PNG render.
    renders: HashMap<String, Vec<u8>>,
    plan: VecDeque<Planned>,
    hits: Vec<Hit>,
    /// Validate each JSON answer against Figma's description (off only in the benchmark).
    skip_validation: bool,
}

#[derive(Clone, Default)]
pub struct Shared(Arc<Mutex<Inner>>);

pub struct FigmaServer {
    pub base: String,
    pub shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FigmaServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub fn fixtures() -> std::path::PathBuf {
    figma_spec::assets().join("fixtures")
}

pub fn fixture(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixtures().join(name)).unwrap()).unwrap()
}

/// The hand-made ad's file key, and its frame.
pub const AD_FILE: &str = "HandMadeAd01";
pub const AD_NODE: &str = "10:1";
/// The real frame with Figma's render.
pub const VECTOR_FILE: &str = "GridaVectorFrame";
pub const VECTOR_NODE: &str = "1038:24";

fn validated(shared: &Shared, value: Value, response: &str) -> Value {
    if shared.0.lock().unwrap().skip_validation {
        return value;
    }
    let errors = figma_spec::validate_response(&value, response);
    // The one real fixture that differs from Figma's description (no `thumbnailUrl`).
    let errors: Vec<_> = errors
        .into_iter()
        .filter(|e| e != "$: `thumbnailUrl` is required")
        .collect();
    assert!(
        errors.is_empty(),
        "the local Figma server would answer what Figma's description forbids ({response}): {errors:#?}"
    );
    value
}

fn figma_error(shared: &Shared, status: u16) -> Response {
    let (response, err) = match status {
        403 => ("ForbiddenErrorResponseWithErrMessage", "Invalid token"),
        404 => ("NotFoundErrorResponseWithErrMessage", "Not found"),
        429 => (
            "TooManyRequestsErrorResponseWithErrMessage",
            "Rate limit exceeded",
        ),
        400 => ("BadRequestErrorResponseWithErrMessage", "Bad request"),
        _ => (
            "InternalServerErrorResponseWithErrMessage",
            "Internal server error",
        ),
    };
    let body = validated(shared, json!({"status": status, "err": err}), response);
    (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response()
}

impl Shared {
    fn record(&self, path: &str, query: &str, headers: &HeaderMap) {
        self.0.lock().unwrap().hits.push(Hit {
            path: path.to_owned(),
            query: query.to_owned(),
            token: headers
                .get("x-figma-token")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            at: Instant::now(),
        });
    }

    /// The checks every API call goes through: a planned answer, then the token.
    async fn gate(&self, headers: &HeaderMap) -> Option<Response> {
        let planned = self.0.lock().unwrap().plan.pop_front();
        match planned {
            Some(Planned::Status(s)) => return Some(figma_error(self, s)),
            Some(Planned::RateLimited(secs)) => {
                let mut r = figma_error(self, 429);
                r.headers_mut()
                    .insert(header::RETRY_AFTER, secs.to_string().parse().unwrap());
                return Some(r);
            }
            Some(Planned::Slow(d)) => tokio::time::sleep(d).await,
            None => {}
        }
        let token = self.0.lock().unwrap().token.clone();
        let given = headers.get("x-figma-token").and_then(|v| v.to_str().ok());
        if given != Some(token.as_str()) {
            return Some(figma_error(self, 403));
        }
        None
    }
}

async fn nodes(
    State(shared): State<Shared>,
    Path(key): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    shared.record(
        &format!("/v1/files/{key}/nodes"),
        &format!("{q:?}"),
        &headers,
    );
    if let Some(r) = shared.gate(&headers).await {
        return r;
    }
    let file = shared.0.lock().unwrap().files.get(&key).cloned();
    let Some(file) = file else {
        return figma_error(&shared, 404);
    };
    let mut answer = file.clone();
    let mut nodes = serde_json::Map::new();
    // A node the file does not have is left out of the answer (Figma's description allows
    // only objects there; Figma itself has been seen to answer `null`, which the importer
    // reads the same way).
    for id in q
        .get("ids")
        .map(String::as_str)
        .unwrap_or_default()
        .split(',')
    {
        if let Some(n) = file["nodes"].get(id) {
            nodes.insert(id.to_owned(), n.clone());
        }
    }
    answer["nodes"] = Value::Object(nodes);
    axum::Json(validated(&shared, answer, "GetFileNodesResponse")).into_response()
}

async fn image_fills(
    State(shared): State<Shared>,
    Path(key): Path<String>,
    headers: HeaderMap,
) -> Response {
    shared.record(&format!("/v1/files/{key}/images"), "", &headers);
    if let Some(r) = shared.gate(&headers).await {
        return r;
    }
    let (base, refs) = {
        let inner = shared.0.lock().unwrap();
        if !inner.files.contains_key(&key) {
            drop(inner);
            return figma_error(&shared, 404);
        }
        (
            inner.base.clone(),
            inner.images.keys().cloned().collect::<Vec<_>>(),
        )
    };
    let images: serde_json::Map<String, Value> = refs
        .into_iter()
        .map(|r| {
            (
                r.clone(),
                Value::from(format!("{base}/downloads/images/{r}")),
            )
        })
        .collect();
    let answer = json!({"error": false, "status": 200, "meta": {"images": images}});
    axum::Json(validated(&shared, answer, "GetImageFillsResponse")).into_response()
}

async fn renders(
    State(shared): State<Shared>,
    Path(key): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    shared.record(&format!("/v1/images/{key}"), &format!("{q:?}"), &headers);
    if let Some(r) = shared.gate(&headers).await {
        return r;
    }
    let base = {
        let inner = shared.0.lock().unwrap();
        if !inner.files.contains_key(&key) {
            drop(inner);
            return figma_error(&shared, 404);
        }
        inner.base.clone()
    };
    let format = q.get("format").map(String::as_str).unwrap_or("png");
    let mut images = serde_json::Map::new();
    for id in q
        .get("ids")
        .map(String::as_str)
        .unwrap_or_default()
        .split(',')
    {
        let url = match format {
            "svg" => Value::from(format!("{base}/downloads/svg/{id}")),
            _ if shared.0.lock().unwrap().renders.contains_key(id) => {
                Value::from(format!("{base}/downloads/render/{id}"))
            }
            // Figma answers null for a node it could not render.
            _ => Value::Null,
        };
        images.insert(id.to_owned(), url);
    }
    let answer = json!({"err": null, "images": images});
    axum::Json(validated(&shared, answer, "GetImagesResponse")).into_response()
}

async fn download(
    State(shared): State<Shared>,
    Path((kind, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    shared.record(&format!("/downloads/{kind}/{id}"), "", &headers);
    let inner = shared.0.lock().unwrap();
    let (bytes, content_type) =
        match kind.as_str() {
            "images" => (inner.images.get(&id).cloned(), "image/png"),
            "render" => (inner.renders.get(&id).cloned(), "image/png"),
            "svg" => {
                (
                    Some(inner.svgs.get(&id).cloned().unwrap_or_else(|| {
                        std::fs::read(fixtures().join("svg/icon.svg")).unwrap()
                    })),
                    "image/svg+xml",
                )
            }
            _ => (None, ""),
        };
    match bytes {
        Some(b) => ([(header::CONTENT_TYPE, content_type)], b).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

impl FigmaServer {
    /// A server that accepts `token`, holding the hand-made ad and the real vector frame.
    pub async fn start(token: &str) -> Self {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let shared = Shared::default();
        {
            let mut inner = shared.0.lock().unwrap();
            inner.token = token.to_owned();
            inner.base = base.clone();
            let samples = figma_spec::assets().join("../samples");
            for (r, path) in [
                ("img-photo", samples.join("coffee.png")),
                ("img-cat", samples.join("chelsea.png")),
                ("img-rocket", samples.join("rocket.jpg")),
                ("img-logo", fixtures().join("images/logo.png")),
                ("img-tile", fixtures().join("images/tile.png")),
            ] {
                inner
                    .images
                    .insert(r.to_owned(), std::fs::read(path).unwrap());
            }
            inner.svgs.insert(
                "10:23".into(),
                std::fs::read(fixtures().join("svg/masked.svg")).unwrap(),
            );
            inner.renders.insert(
                VECTOR_NODE.into(),
                std::fs::read(fixtures().join("grida-vector-frame.figma.png")).unwrap(),
            );
            // The hand-made frame's "render": Figma's render is not available for it, so
            // the real frame's PNG stands in (only its presence and storage are tested).
            inner.renders.insert(
                AD_NODE.into(),
                std::fs::read(fixtures().join("grida-vector-frame.figma.png")).unwrap(),
            );
        }
        let app = axum::Router::new()
            .route("/v1/files/{key}/nodes", get(nodes))
            .route("/v1/files/{key}/images", get(image_fills))
            .route("/v1/images/{key}", get(renders))
            .route("/downloads/{kind}/{id}", get(download))
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let server = Self { base, shared, task };
        server.put_file(AD_FILE, fixture("handmade-ad.nodes.json"));
        server.put_file(VECTOR_FILE, fixture("grida-vector-frame.nodes.json"));
        server
    }

    /// Serves `nodes` (a nodes response) as file `key`, replacing what was there.
    pub fn put_file(&self, key: &str, nodes: Value) {
        self.shared
            .0
            .lock()
            .unwrap()
            .files
            .insert(key.to_owned(), nodes);
    }

    /// Serves `bytes` as the image fill `image_ref`.
    pub fn put_image(&self, image_ref: &str, bytes: Vec<u8>) {
        self.shared
            .0
            .lock()
            .unwrap()
            .images
            .insert(image_ref.to_owned(), bytes);
    }

    /// Serves `png` as Figma's render of node `id`.
    pub fn put_render(&self, id: &str, png: Vec<u8>) {
        self.shared
            .0
            .lock()
            .unwrap()
            .renders
            .insert(id.to_owned(), png);
    }

    /// Turns the validation of answers off (the benchmark measures the importer, not this
    /// server's checks).
    pub fn set_validation(&self, on: bool) {
        self.shared.0.lock().unwrap().skip_validation = !on;
    }

    pub fn plan(&self, answers: &[Planned]) {
        self.shared
            .0
            .lock()
            .unwrap()
            .plan
            .extend(answers.iter().cloned());
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.shared.0.lock().unwrap().hits.clone()
    }

    /// The frame link of the hand-made ad.
    pub fn ad_link() -> String {
        format!("https://www.figma.com/design/{AD_FILE}/Hand-made-ad?node-id=10-1")
    }
}
