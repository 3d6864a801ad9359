//! Test harness: a real server on a loopback port over a real SQLite file in a temporary
//! data dir, and a small HTTP client that returns status, headers and JSON.

use std::path::PathBuf;

use adforge::app::Server;
use adforge::cli::ServeArgs;
use adforge_api::auth::Grants;
use adforge_api::store::Db;
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// A running server with its data dir; dropped at the end of the test.
pub struct TestServer {
    pub base: String,
    pub db: Db,
    /// The server's job queue (in-process unless `redis_url` is set) and result applier.
    pub jobs: adforge_api::jobs::Jobs,
    pub data_dir: PathBuf,
    _dir: tempfile::TempDir,
    http: reqwest::Client,
}

/// An organisation and an all-scope key of it.
#[derive(Clone)]
pub struct Org {
    pub id: String,
    pub key: String,
}

/// What a request answered.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Reply {
    /// `error.code` of an error reply.
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }

    /// `data.id`.
    pub fn id(&self) -> String {
        self.body["data"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts the status and, for errors, the code; returns self for chaining.
    #[track_caller]
    pub fn expect(self, status: u16, code: Option<&str>) -> Self {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.body
        );
        if let Some(c) = code {
            assert_eq!(self.code(), c, "unexpected code; body: {}", self.body);
            assert!(
                !self.body["error"]["message"]
                    .as_str()
                    .unwrap_or("")
                    .is_empty()
            );
            assert!(
                self.body["meta"]["request_id"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("req_")
            );
        }
        self
    }
}

impl TestServer {
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// Starts a server after `adjust` has changed its arguments (e.g. `workers = 0`).
    pub async fn start_with(adjust: impl FnOnce(&mut ServeArgs)) -> Self {
        // `ADFORGE_TEST_LOG=error` (any tracing filter) shows the servers' logs.
        if let Ok(filter) = std::env::var("ADFORGE_TEST_LOG") {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
                .with_test_writer()
                .try_init();
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let mut args = ServeArgs {
            listen: "127.0.0.1:0".parse().expect("addr"),
            db: adforge::flags::DatabaseArgs {
                data_dir: dir.path().to_path_buf(),
                database_url: None,
            },
            public_url: None,
            log: "warn".into(),
            log_json: false,
            allow_private_urls: true,
            dashboard_url: Some("https://dashboard.test/billing".into()),
            workers: 1,
            redis_url: None,
            queue: Default::default(),
            webhooks: Default::default(),
            ops: Default::default(),
            blob: Default::default(),
            copy_model: Default::default(),
            dashboard: Default::default(),
            render: adforge::flags::RenderBackend {
                backend: adforge_renderer::BackendChoice::Cpu,
            },
            models_dir: None,
            default_collection: None,
            previews: Default::default(),
            swipe_index: Default::default(),
            figma: Default::default(),
        };
        // `ADFORGE_TEST_POSTGRES=1` runs the server on a fresh database of this binary's
        // throwaway PostgreSQL cluster instead of a SQLite file.
        if std::env::var_os("ADFORGE_TEST_POSTGRES").is_some_and(|v| v == "1") {
            args.db.database_url = Some(crate::postgres::shared().create_database());
        }
        adjust(&mut args);
        let server = Server::bind(&args).await.expect("server binds");
        let base = format!("http://{}", server.addr);
        let db = server.db.clone();
        let jobs = server.jobs.clone();
        tokio::spawn(server.run(std::future::pending()));
        Self {
            base,
            db,
            jobs,
            data_dir: dir.path().to_path_buf(),
            _dir: dir,
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(4)
                .build()
                .expect("client"),
        }
    }

    /// A new organisation with an all-scope key.
    pub async fn org(&self, name: &str) -> Org {
        let org = adforge_api::orgs::create_org(&self.db, name)
            .await
            .expect("org");
        let id = org["id"].as_str().expect("id").to_string();
        let key = self.key(&id, "all", None).await;
        Org { id, key }
    }

    /// A key of `org_id` with the given scopes (`all` or a comma list) and rate limit.
    pub async fn key(&self, org_id: &str, scopes: &str, rate_limit: Option<u32>) -> String {
        let grants = Grants::parse_list(scopes).expect("scopes");
        let k = adforge_api::orgs::create_key(&self.db, org_id, &grants, rate_limit)
            .await
            .expect("key");
        k["key"].as_str().expect("key").to_string()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends a request with `key` (if any) and an optional JSON body.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        let mut req = self.http.request(method, self.url(path));
        if let Some(k) = key {
            req = req.header("x-api-key", k);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        send(req).await
    }

    pub async fn get(&self, org: &Org, path: &str) -> Reply {
        self.call(Method::GET, path, Some(&org.key), None).await
    }

    pub async fn post(&self, org: &Org, path: &str, body: Value) -> Reply {
        self.call(Method::POST, path, Some(&org.key), Some(body))
            .await
    }

    pub async fn patch(&self, org: &Org, path: &str, body: Value) -> Reply {
        self.call(Method::PATCH, path, Some(&org.key), Some(body))
            .await
    }

    pub async fn delete(&self, org: &Org, path: &str) -> Reply {
        self.call(Method::DELETE, path, Some(&org.key), None).await
    }

    /// A raw request builder for cases the helpers do not cover.
    pub fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.http.request(method, self.url(path))
    }

    /// Uploads image bytes as multipart `file`, with extra text fields.
    pub async fn upload(&self, org: &Org, bytes: Vec<u8>, fields: &[(&str, &str)]) -> Reply {
        let mut form = reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(bytes).file_name("upload.bin"),
        );
        for (k, v) in fields {
            form = form.text(k.to_string(), v.to_string());
        }
        send(
            self.request(Method::POST, "/v1/images")
                .header("x-api-key", &org.key)
                .multipart(form),
        )
        .await
    }

    /// brand → product → variant → audience, returning their ids.
    pub async fn catalog(&self, org: &Org) -> Catalog {
        let brand = self
            .post(org, "/v1/brands", json!({"name": "Acme"}))
            .await
            .expect(201, None)
            .id();
        let product = self
            .post(
                org,
                "/v1/products",
                json!({"brand_id": brand, "name": "Trail Shoe"}),
            )
            .await
            .expect(201, None)
            .id();
        let variant = self
            .post(
                org,
                "/v1/product-variants",
                json!({"product_id": product, "name": "Red 42"}),
            )
            .await
            .expect(201, None)
            .id();
        let audience = self
            .post(
                org,
                "/v1/audiences",
                json!({"product_id": product, "name": "Weekend hikers"}),
            )
            .await
            .expect(201, None)
            .id();
        Catalog {
            brand,
            product,
            variant,
            audience,
        }
    }

    /// What an image ad needs: a [`catalog`](Self::catalog) whose variant has a product
    /// photo, and the URL of an uploaded reference ad (served by this server).
    pub async fn ad_inputs(&self, org: &Org) -> (Catalog, String) {
        let c = self.catalog(org).await;
        let shot = self
            .upload(
                org,
                png(64, 64, [200, 40, 40, 255]),
                &[("image_type", "product")],
            )
            .await
            .expect(201, None);
        self.patch(
            org,
            &format!("/v1/product-variants/{}", c.variant),
            json!({"image_ids": [shot.id()]}),
        )
        .await
        .expect(200, None);
        let reference = self
            .upload(org, jpeg(120, 150, [30, 60, 90]), &[])
            .await
            .expect(201, None);
        let src = reference.body["data"]["src"].as_str().unwrap().to_string();
        (c, src)
    }
}

/// Ids made by [`TestServer::catalog`].
pub struct Catalog {
    pub brand: String,
    pub product: String,
    pub variant: String,
    pub audience: String,
}

/// `POST {base}/v1/brands` named `name` with `key`, on a task of its own and a client of its
/// own: for tests that watch a write wait on a lock, or cancel it (`abort` closes its
/// connection).
pub fn post_brand_in_background(
    base: &str,
    key: &str,
    name: &str,
) -> tokio::task::JoinHandle<Reply> {
    let req = reqwest::Client::new()
        .post(format!("{base}/v1/brands"))
        .header("x-api-key", key)
        .json(&serde_json::json!({ "name": name }));
    tokio::spawn(send(req))
}

pub async fn send(req: reqwest::RequestBuilder) -> Reply {
    let res = req.send().await.expect("request sent");
    let status = res.status();
    let headers = res.headers().clone();
    let bytes = res.bytes().await.expect("body");
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Reply {
        status,
        headers,
        body,
    }
}

/// A PNG of the given size and colour (optionally with a transparent border).
pub fn png(width: u32, height: u32, rgba: [u8; 4]) -> Vec<u8> {
    let img = image::RgbaImage::from_pixel(width, height, image::Rgba(rgba));
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .expect("png");
    out
}

/// A JPEG of the given size and colour.
pub fn jpeg(width: u32, height: u32, rgb: [u8; 3]) -> Vec<u8> {
    let img = image::RgbImage::from_pixel(width, height, image::Rgb(rgb));
    let mut out = Vec::new();
    img.write_to(
        &mut std::io::Cursor::new(&mut out),
        image::ImageFormat::Jpeg,
    )
    .expect("jpeg");
    out
}

/// Polls `check` every 50 ms for up to 10 s.
pub async fn eventually<F, Fut>(mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..200 {
        if check().await {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

impl TestServer {
    /// A new organisation whose all-scope key has a rate limit high enough for tests that
    /// make hundreds of requests (paging, isolation sweeps).
    pub async fn org_unlimited(&self, name: &str) -> Org {
        let org = adforge_api::orgs::create_org(&self.db, name)
            .await
            .expect("org");
        let id = org["id"].as_str().expect("id").to_string();
        let key = self.key(&id, "all", Some(1_000_000)).await;
        Org { id, key }
    }

    /// Uploads an arbitrary multipart form to POST /v1/images.
    pub async fn upload_form(&self, org: &Org, form: reqwest::multipart::Form) -> Reply {
        send(
            self.request(Method::POST, "/v1/images")
                .header("x-api-key", &org.key)
                .multipart(form),
        )
        .await
    }

    /// GETs an absolute URL without a key and returns status, headers and the raw bytes.
    pub async fn fetch(&self, url: &str) -> (StatusCode, HeaderMap, Vec<u8>) {
        let res = self.http.get(url).send().await.expect("request sent");
        let status = res.status();
        let headers = res.headers().clone();
        let bytes = res.bytes().await.expect("body").to_vec();
        (status, headers, bytes)
    }
}

/// A lossless WebP of the given size and colour.
pub fn webp(width: u32, height: u32, rgba: [u8; 4]) -> Vec<u8> {
    let img = image::RgbaImage::from_pixel(width, height, image::Rgba(rgba));
    let mut out = Vec::new();
    image::codecs::webp::WebPEncoder::new_lossless(&mut out)
        .encode(img.as_raw(), width, height, image::ExtendedColorType::Rgba8)
        .expect("webp");
    out
}

/// A tiny deterministic xorshift64* generator, so randomised tests print a seed and can be
/// replayed without a dependency.
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
}

/// The `data` array of a list reply, as ids.
pub fn ids_of(reply: &Reply) -> Vec<String> {
    reply.body["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data array in {}", reply.body))
        .iter()
        .map(|v| v["id"].as_str().expect("id").to_string())
        .collect()
}

/// Percent-encodes a query value (everything but unreserved characters).
pub fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A child process (an `adforge serve` or `worker`), killed with SIGKILL and reaped on drop.
pub struct Process(pub std::process::Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free loopback port")
        .port()
}

/// Waits up to 10 s for a server at `base` to answer; false if it never does.
pub async fn wait_up(base: &str) -> bool {
    let client = reqwest::Client::new();
    for _ in 0..200 {
        if client
            .get(format!("{base}/openapi.json"))
            .send()
            .await
            .is_ok()
        {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

/// The image ad `id` once it is no longer `processing` (a deadline only a hang reaches).
pub async fn wait_settled(s: &TestServer, org: &Org, id: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..600 {
        last = s
            .get(org, &format!("/v1/image-ads/{id}"))
            .await
            .expect(200, None)
            .body["data"]
            .clone();
        if last["status"] != "processing" {
            return last;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("ad {id} still processing after 60 s: {last}");
}
