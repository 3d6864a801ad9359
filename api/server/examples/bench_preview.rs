//! Preview benchmark (issue 23), run by `scripts/bench-preview`.
//!
//! An in-process server (SQLite in a temp dir, no render workers) on loopback; the simple,
//! typical and heavy ads of `scripts/bench-render` (`renderer/examples/ads/*.json`), their
//! photos uploaded first so the trees name this server's own files, as an edited ad does.
//! Each tree is previewed at 1080 px over HTTP, `RUNS` times per answer (PNG, WebP, the
//! JSON boxes) after `WARMUP` previews that fill the image cache, so the numbers are those
//! of an editor's previews after the first: images cached.
//!
//! `request` is the client's time from sending the POST to the last byte of the answer
//! (validation, render, encode, transfer); `render` is the server's `X-Render-Ms` (images,
//! layout, drawing and encoding). Prints a markdown table of p50 / p99 in milliseconds.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::Instant;

use adforge::app::Server;
use adforge::cli::ServeArgs;
use adforge_renderer::tree::TreeDoc;
use serde_json::{Value, json};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

struct Api {
    http: reqwest::Client,
    base: String,
    key: String,
}

impl Api {
    /// Uploads `bytes` as an image; its `/files/…` URL.
    async fn upload(&self, bytes: Vec<u8>, name: &str) -> String {
        let form = reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(bytes).file_name(name.to_string()),
        );
        let res = self
            .http
            .post(format!("{}/v1/images", self.base))
            .header("x-api-key", &self.key)
            .multipart(form)
            .send()
            .await
            .unwrap();
        let status = res.status();
        let v: Value = res.json().await.unwrap();
        assert!(status.is_success(), "upload {name}: {status} {v}");
        v["data"]["src"].as_str().unwrap().to_string()
    }

    /// One preview: (request ms, X-Render-Ms).
    async fn preview(&self, tree: &Value, accept: &str) -> (f64, f64) {
        let t = Instant::now();
        let res = self
            .http
            .post(format!("{}/v1/previews", self.base))
            .header("x-api-key", &self.key)
            .header("accept", accept)
            .json(&json!({"tree": tree, "width": 1080}))
            .send()
            .await
            .unwrap();
        let status = res.status();
        let render: f64 = res
            .headers()
            .get("x-render-ms")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN);
        let body = res.bytes().await.unwrap();
        let request = t.elapsed().as_secs_f64() * 1e3;
        assert!(
            status.is_success(),
            "preview: {status} {}",
            String::from_utf8_lossy(&body)
        );
        (request, render)
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let runs = env_usize("RUNS", 50).max(1);
    let warmup = env_usize("WARMUP", 3);

    let dir = tempfile::tempdir().unwrap();
    let args = ServeArgs {
        listen: "127.0.0.1:0".parse().unwrap(),
        db: adforge::flags::DatabaseArgs {
            data_dir: dir.path().to_path_buf(),
            database_url: None,
        },
        public_url: None,
        log: "warn".into(),
        log_json: false,
        allow_private_urls: false,
        dashboard_url: None,
        workers: 0,
        redis_url: None,
        queue: Default::default(),
        webhooks: Default::default(),
        ops: Default::default(),
        blob: Default::default(),
        render: adforge::flags::RenderBackend {
            backend: adforge_renderer::BackendChoice::Cpu,
        },
        models_dir: None,
        default_collection: None,
        copy_model: Default::default(),
        swipe_index: Default::default(),
        previews: adforge_api::resources::previews::PreviewArgs {
            // The benchmark's own requests are not what is measured: no 429s.
            preview_rate_limit: 1_000_000,
            ..Default::default()
        },
        dashboard: Default::default(),
        figma: Default::default(),
    };
    let server = Server::bind(&args).await.unwrap();
    let base = format!("http://{}", server.addr);
    let db = server.db.clone();
    tokio::spawn(server.run(std::future::pending()));

    let org = adforge_api::orgs::create_org(&db, "Bench").await.unwrap();
    let org_id = org["id"].as_str().unwrap().to_string();
    let key = adforge_api::orgs::create_key(
        &db,
        &org_id,
        &adforge_api::auth::Grants::All,
        Some(100_000_000),
    )
    .await
    .unwrap()["key"]
        .as_str()
        .unwrap()
        .to_string();
    let api = Api {
        http: reqwest::Client::new(),
        base,
        key,
    };

    let ads = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../renderer/examples/ads");
    println!(
        "Previews at 1080 px, {runs} runs each after {warmup} warm-up previews (images cached), ms"
    );
    println!();
    println!(
        "| tree | nodes | PNG request p50 | PNG request p99 | PNG render p50 | WebP request p50 | WebP request p99 | boxes request p50 | boxes request p99 |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for name in ["simple", "typical", "heavy"] {
        let text = std::fs::read_to_string(ads.join(format!("{name}.json"))).unwrap();
        let mut tree: Value = serde_json::from_str(&text).unwrap();
        // Photos named relative to the example's folder become this server's own files.
        let paints = TreeDoc::new(&tree).image_paints();
        for p in paints {
            let path = ads.join(&p.url);
            let bytes =
                std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {}: {e}", path.display()));
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            let url = api.upload(bytes, &file).await;
            TreeDoc::new(&mut tree)
                .set_image_url(&p.at, p.field, &url)
                .unwrap();
        }
        let nodes = TreeDoc::new(&tree).node_ids().count();
        let mut row = format!("| {name} | {nodes} |");
        for accept in ["image/png", "image/webp", "application/json"] {
            for _ in 0..warmup {
                api.preview(&tree, accept).await;
            }
            let mut request = Vec::with_capacity(runs);
            let mut render = Vec::with_capacity(runs);
            for _ in 0..runs {
                let (q, r) = api.preview(&tree, accept).await;
                request.push(q);
                render.push(r);
            }
            request.sort_by(f64::total_cmp);
            render.sort_by(f64::total_cmp);
            let (p50, p99) = (percentile(&request, 0.5), percentile(&request, 0.99));
            row.push_str(&format!(" {p50:.1} | {p99:.1} |"));
            if accept == "image/png" {
                row.push_str(&format!(" {:.1} |", percentile(&render, 0.5)));
            }
        }
        println!("{row}");
    }
}
