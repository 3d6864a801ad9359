//! Webhook delivery benchmark (issue 12), run by `scripts/bench-webhooks`.
//!
//! An in-process server (SQLite file in a temp dir, in-process queue, no render workers)
//! and a receiver on loopback. N image ads are created over HTTP; then, for each, a worker's
//! completion report is published into the server's real queue, so the measured path is
//! the production one: queue → event applier (status change, wallet capture, event and
//! delivery rows in one transaction) → delivery task → signed POST → receiver. Renders are
//! left out on purpose: they take seconds and would measure the renderer instead.
//!
//! - latency: completion reports published one at a time (one every `GAP_MS`), latency =
//!   receiver arrival − publish;
//! - throughput: `BURST` reports published at once, events/s = BURST / (last arrival −
//!   first publish).
//!
//! Prints a table (markdown).

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use adforge::app::Server;
use adforge::cli::ServeArgs;
use adforge_worker::{AdCompleted, Event, ImageAdRendered, JobResult};
use serde_json::{Value, json};

type Arrivals = Arc<Mutex<HashMap<String, Instant>>>;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn receive(
    axum::extract::State(arrivals): axum::extract::State<Arrivals>,
    body: axum::body::Bytes,
) -> &'static str {
    let now = Instant::now();
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if let Some(ad) = v["data"]["object"]["id"].as_str() {
        arrivals
            .lock()
            .unwrap()
            .entry(ad.to_string())
            .or_insert(now);
    }
    "ok"
}

struct Api {
    http: reqwest::Client,
    base: String,
    key: String,
}

impl Api {
    async fn call(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let res = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("x-api-key", &self.key)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = res.status();
        let v: Value = res.json().await.unwrap();
        assert!(status.is_success(), "{path}: {status} {v}");
        v
    }

    async fn upload(&self, bytes: Vec<u8>, image_type: Option<&str>) -> Value {
        let mut form = reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(bytes).file_name("x.png"),
        );
        if let Some(t) = image_type {
            form = form.text("image_type", t.to_string());
        }
        let res = self
            .http
            .post(format!("{}/v1/images", self.base))
            .header("x-api-key", &self.key)
            .multipart(form)
            .send()
            .await
            .unwrap();
        res.json().await.unwrap()
    }
}

fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbaImage::from_pixel(w, h, image::Rgba([200, 40, 40, 255]));
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let n_latency = env_usize("N", 200);
    let burst = env_usize("BURST", 1000);
    let gap = Duration::from_millis(env_usize("GAP_MS", 20) as u64);

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
        allow_private_urls: true,
        dashboard_url: None,
        workers: 0,
        redis_url: None,
        queue: Default::default(),
        webhooks: Default::default(),
        ops: Default::default(),
        blob: Default::default(),
        copy_model: Default::default(),
        render: adforge::flags::RenderBackend {
            backend: adforge_renderer::BackendChoice::Cpu,
        },
        models_dir: None,
        default_collection: None,
        previews: Default::default(),
        swipe_index: Default::default(),
        figma: Default::default(),
        dashboard: Default::default(),
    };
    let server = Server::bind(&args).await.unwrap();
    let base = format!("http://{}", server.addr);
    let db = server.db.clone();
    let queue = server.jobs.queue.clone();
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
    adforge_api::store::query("UPDATE wallets SET balance_cents = 1000000000 WHERE org_id = ?")
        .bind(&org_id)
        .execute(&db.write)
        .await
        .unwrap();
    let api = Api {
        http: reqwest::Client::new(),
        base,
        key,
    };

    let arrivals: Arrivals = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let receiver = format!("http://{}/hook", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .fallback(receive)
        .with_state(arrivals.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    api.call(
        reqwest::Method::POST,
        "/v1/webhook-endpoints",
        json!({"url": receiver, "events": ["image_ad.completed"]}),
    )
    .await;

    let brand = api
        .call(
            reqwest::Method::POST,
            "/v1/brands",
            json!({"name": "Bench"}),
        )
        .await["data"]["id"]
        .clone();
    let product = api
        .call(
            reqwest::Method::POST,
            "/v1/products",
            json!({"brand_id": brand, "name": "Thing"}),
        )
        .await["data"]["id"]
        .clone();
    let shot = api.upload(png(64, 64), Some("product")).await["data"]["id"].clone();
    api.call(
        reqwest::Method::POST,
        "/v1/product-variants",
        json!({"product_id": product, "name": "One", "image_ids": [shot]}),
    )
    .await;
    let audience = api
        .call(
            reqwest::Method::POST,
            "/v1/audiences",
            json!({"product_id": product, "name": "Everyone"}),
        )
        .await["data"]["id"]
        .clone();
    let reference = api.upload(png(120, 150), None).await["data"]["src"].clone();
    let body = json!({"reference_ad_url": reference, "brand_id": brand, "product_id": product, "audience_id": audience});

    eprintln!("creating {} ads", n_latency + burst);
    let mut ads = Vec::new();
    for _ in 0..(n_latency + burst) {
        let v = api
            .call(reqwest::Method::POST, "/v1/image-ads", body.clone())
            .await;
        ads.push(v["data"]["id"].as_str().unwrap().to_string());
    }
    let completed = |ad: &str| {
        Event::Completed(AdCompleted {
            ad_id: ad.to_string(),
            version: 1,
            duration_ms: 1,
            result: JobResult::ImageAd(ImageAdRendered {
                image_url: "http://127.0.0.1/files/bench.png".into(),
                width: 3840,
                height: 3840,
                json_tree: None,
                render: None,
                copy: None,
            }),
        })
    };
    let wait_all = |ids: Vec<String>| {
        let arrivals = arrivals.clone();
        async move {
            let deadline = Instant::now() + Duration::from_secs(600);
            loop {
                let done = {
                    let a = arrivals.lock().unwrap();
                    ids.iter().all(|id| a.contains_key(id))
                };
                if done || Instant::now() > deadline {
                    return done;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    };

    // Latency: one completion at a time.
    eprintln!("latency: {n_latency} completions, one every {gap:?}");
    let mut published = HashMap::new();
    for ad in &ads[..n_latency] {
        published.insert(ad.clone(), Instant::now());
        queue.publish(completed(ad)).await.unwrap();
        tokio::time::sleep(gap).await;
    }
    assert!(
        wait_all(ads[..n_latency].to_vec()).await,
        "deliveries missing"
    );
    let mut lat: Vec<f64> = {
        let a = arrivals.lock().unwrap();
        ads[..n_latency]
            .iter()
            .map(|id| (a[id] - published[id]).as_secs_f64() * 1000.0)
            .collect()
    };
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());

    // Throughput: a burst.
    eprintln!("throughput: {burst} completions at once");
    let start = Instant::now();
    for ad in &ads[n_latency..] {
        queue.publish(completed(ad)).await.unwrap();
    }
    assert!(
        wait_all(ads[n_latency..].to_vec()).await,
        "deliveries missing"
    );
    let last = {
        let a = arrivals.lock().unwrap();
        ads[n_latency..].iter().map(|id| a[id]).max().unwrap()
    };
    let secs = (last - start).as_secs_f64();

    println!("| measure | value |");
    println!("|---|---|");
    println!(
        "| completion → delivery latency p50 ({n_latency} events, one every {} ms) | {:.1} ms |",
        gap.as_millis(),
        percentile(&lat, 0.5)
    );
    println!(
        "| completion → delivery latency p99 | {:.1} ms |",
        percentile(&lat, 0.99)
    );
    println!(
        "| completion → delivery latency max | {:.1} ms |",
        lat.last().copied().unwrap_or(f64::NAN)
    );
    println!(
        "| events delivered per second (burst of {burst}) | {:.0} /s |",
        burst as f64 / secs
    );
}
