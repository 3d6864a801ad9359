//! The blob store behind `BlobStore`, against the local folder and against a real
//! S3-compatible server: moto's server (`moto_server` from PyPI, installed into `.venv` by
//! scripts/test) started on a free loopback port per test. End to end, a real `adforge
//! serve --blob-url s3://…` and a real `adforge worker` with its own data dir complete a flat
//! ad whose image is served back from the bucket.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use adforge_api::blob::{BlobStore, LocalBlobStore};
use adforge_worker::s3::{S3BlobStore, S3Options, object_store};
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::support::{Process, free_port, jpeg, png};

#[path = "../../../worker/tests/queue/redis_server.rs"]
#[allow(dead_code, clippy::duplicate_mod)]
mod redis_server;

/// A `moto_server` child process on a free loopback port; killed on drop.
pub struct Moto {
    child: Child,
    pub port: u16,
}

impl Moto {
    /// `ADFORGE_MOTO_SERVER`, else the repository's `.venv/bin/moto_server`.
    fn binary() -> PathBuf {
        std::env::var_os("ADFORGE_MOTO_SERVER").map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/moto_server"),
            PathBuf::from,
        )
    }

    pub fn start() -> Self {
        let bin = Self::binary();
        assert!(
            bin.exists(),
            "{} is missing: scripts/test installs moto[server] into .venv (or set ADFORGE_MOTO_SERVER)",
            bin.display()
        );
        let port = free_port();
        let child = Command::new(&bin)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server starts");
        let moto = Self { child, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "moto_server did not listen");
            std::thread::sleep(Duration::from_millis(100));
        }
        moto
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Creates a bucket (moto accepts unsigned requests for this).
    pub async fn bucket(&self, name: &str) {
        let res = reqwest::Client::new()
            .put(format!("{}/{name}", self.endpoint()))
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success(), "create bucket: {}", res.status());
    }

    pub fn store(&self, url: &str, files_base: &str) -> S3BlobStore {
        S3BlobStore::new(
            &S3Options {
                url: url.to_owned(),
                endpoint: Some(self.endpoint()),
                region: Some("us-east-1".into()),
                allow_http: true,
                credentials: Some(("testing".into(), "testing".into())),
            },
            files_base,
        )
        .unwrap()
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Everything the trait promises, on any store.
async fn contract(store: &dyn BlobStore) {
    let png_bytes = Bytes::from(png(8, 8, [1, 2, 3, 255]));
    // Missing keys, valid or not, are `None`, never errors.
    assert_eq!(store.get("images/none/x.png").await.unwrap(), None);
    assert!(!store.exists("images/none/x.png").await.unwrap());
    assert!(store.open("images/none/x.png").await.unwrap().is_none());
    assert_eq!(store.get("../etc/passwd").await.unwrap(), None);
    assert!(store.put("../escape.png", png_bytes.clone()).await.is_err());
    store.check().await.unwrap();

    store
        .put("images/img_1/original.png", png_bytes.clone())
        .await
        .unwrap();
    store
        .put("images/img_1/thumb.webp", Bytes::from_static(b"thumb"))
        .await
        .unwrap();
    store
        .put("ads/ia_1/v1.png", Bytes::from_static(b"ad"))
        .await
        .unwrap();
    assert_eq!(
        store.get("images/img_1/original.png").await.unwrap(),
        Some(png_bytes.clone())
    );
    assert!(store.exists("images/img_1/original.png").await.unwrap());
    // A folder is no blob.
    assert!(!store.exists("images/img_1").await.unwrap());
    assert_eq!(store.get("images/img_1").await.unwrap(), None);

    // Streaming gives the same bytes and the length up front.
    let blob = store
        .open("images/img_1/original.png")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(blob.len, png_bytes.len() as u64);
    let chunks: Vec<_> = blob.chunks.collect().await;
    let streamed: Vec<u8> = chunks
        .into_iter()
        .flat_map(|c| c.unwrap().to_vec())
        .collect();
    assert_eq!(streamed, png_bytes.to_vec());

    // Replacing is whole.
    store
        .put("ads/ia_1/v1.png", Bytes::from_static(b"ad, second render"))
        .await
        .unwrap();
    assert_eq!(
        store.get("ads/ia_1/v1.png").await.unwrap().as_deref(),
        Some(&b"ad, second render"[..])
    );

    let mut under = store.list("images").await.unwrap();
    under.sort();
    assert_eq!(
        under,
        ["images/img_1/original.png", "images/img_1/thumb.webp"]
    );
    let mut all = store.list("").await.unwrap();
    all.sort();
    assert_eq!(
        all,
        [
            "ads/ia_1/v1.png",
            "images/img_1/original.png",
            "images/img_1/thumb.webp"
        ]
    );
    assert!(store.list("nothing-here").await.unwrap().is_empty());

    store.delete("images/img_1/thumb.webp").await.unwrap();
    assert_eq!(store.get("images/img_1/thumb.webp").await.unwrap(), None);
    assert!(!store.exists("images/img_1/thumb.webp").await.unwrap());
    // Deleting what is not there is fine.
    store.delete("images/img_1/thumb.webp").await.unwrap();
    assert_eq!(
        store.list("images").await.unwrap(),
        ["images/img_1/original.png"]
    );

    // URLs map back to keys through the one mapping.
    let url = store.url("images/img_1/original.png");
    assert_eq!(
        store.own_file(&url),
        adforge_api::blob::OwnFile::Key("images/img_1/original.png".into())
    );
}

#[tokio::test]
async fn local_folder_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalBlobStore::new(dir.path().join("blobs"), "http://127.0.0.1:1");
    contract(&store).await;
    assert_eq!(
        store.url("a/b.png"),
        "http://127.0.0.1:1/files/a/b.png",
        "served by the API"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_bucket_keeps_the_contract() {
    let mut moto = Moto::start();
    moto.bucket("adforge-contract").await;
    // Under a prefix, and at the bucket's root.
    let store = moto.store(
        "s3://adforge-contract/env/blobs",
        "https://cdn.example.test/a",
    );
    contract(&store).await;
    assert_eq!(
        store.url("a/b.png"),
        "https://cdn.example.test/a/a/b.png",
        "--blob-public-url"
    );
    let root = moto.store("s3://adforge-contract", "http://127.0.0.1:1/files");
    let mut everything = root.list("").await.unwrap();
    everything.sort();
    assert_eq!(
        everything,
        [
            "env/blobs/ads/ia_1/v1.png",
            "env/blobs/images/img_1/original.png"
        ],
        "the prefix is where the objects are"
    );

    // Objects carry the content type and cache header the API sends, so a CDN or public
    // bucket serving them directly answers alike.
    let raw = object_store::aws::AmazonS3Builder::new()
        .with_bucket_name("adforge-contract")
        .with_endpoint(moto.endpoint())
        .with_allow_http(true)
        .with_region("us-east-1")
        .with_access_key_id("testing")
        .with_secret_access_key("testing")
        .build()
        .unwrap();
    let got = object_store::ObjectStoreExt::get(
        &raw,
        &object_store::path::Path::from("env/blobs/images/img_1/original.png"),
    )
    .await
    .unwrap();
    assert_eq!(
        got.attributes
            .get(&object_store::Attribute::ContentType)
            .map(|v| v.as_ref()),
        Some("image/png")
    );
    assert_eq!(
        got.attributes
            .get(&object_store::Attribute::CacheControl)
            .map(|v| v.as_ref()),
        Some(adforge_api::blob::CACHE_CONTROL)
    );

    // A server that does not answer is an error, not "no blob".
    moto.kill();
    assert!(store.get("images/img_1/original.png").await.is_err());
    assert!(store.check().await.is_err());
}

async fn call(
    http: &reqwest::Client,
    base: &str,
    key: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = http
        .request(method, format!("{base}{path}"))
        .header("x-api-key", key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.unwrap();
    (
        res.status().as_u16(),
        res.json().await.unwrap_or(Value::Null),
    )
}

async fn upload(http: &reqwest::Client, base: &str, key: &str, bytes: Vec<u8>) -> Value {
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(bytes).file_name("upload.jpg"),
    );
    let res = http
        .post(format!("{base}/v1/images"))
        .header("x-api-key", key)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    res.json::<Value>().await.unwrap()["data"].clone()
}

/// `adforge serve --blob-url s3://…` as an API node and `adforge worker --blob-url s3://…`
/// as a render node with a data dir of its own, sharing only Redis and the bucket: uploads
/// and the rendered ad live in the bucket, neither data dir holds a blob, `/files/` serves
/// them back, and `/readyz` names the bucket when it goes away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_and_worker_with_s3_complete_a_flat_ad_and_serve_it() {
    let moto = Moto::start();
    moto.bucket("adforge-e2e").await;
    let redis = redis_server::RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let worker_dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let log = std::fs::File::create(dir.path().join("serve.log")).unwrap();
    let mut server = Process(
        Command::new(env!("CARGO_BIN_EXE_adforge"))
            .arg("serve")
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--listen", &format!("127.0.0.1:{port}"), "--log", "warn"])
            .args(["--blob-url", "s3://adforge-e2e/run"])
            .args(["--s3-endpoint", &moto.endpoint(), "--s3-allow-http"])
            .args(["--redis-url", &redis.url(), "--workers", "0"])
            .args(["--allow-private-urls", "--backend", "cpu"])
            .args(["--default-collection", "/nonexistent-default-collection"])
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("adforge serve starts"),
    );
    let mut line = String::new();
    BufReader::new(server.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let boot: Value = serde_json::from_str(&line).unwrap_or_else(|_| {
        panic!(
            "no bootstrap key: {line}\n{}",
            std::fs::read_to_string(dir.path().join("serve.log")).unwrap_or_default()
        )
    });
    let key = boot["api_key"]["key"].as_str().unwrap().to_string();
    let org = boot["organization"]["id"].as_str().unwrap().to_string();
    let worker_log = std::fs::File::create(worker_dir.path().join("worker.log")).unwrap();
    let _worker = Process(
        Command::new(env!("CARGO_BIN_EXE_adforge"))
            .args(["worker", "--redis-url", &redis.url()])
            .arg("--data-dir")
            .arg(worker_dir.path())
            .args([
                "--public-url",
                &base,
                "--allow-private-urls",
                "--backend",
                "cpu",
            ])
            .args(["--blob-url", "s3://adforge-e2e/run"])
            .args(["--s3-endpoint", &moto.endpoint(), "--s3-allow-http"])
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(worker_log))
            .spawn()
            .expect("adforge worker starts"),
    );
    let topped = Command::new(env!("CARGO_BIN_EXE_adforge"))
        .arg("admin")
        .arg("--data-dir")
        .arg(dir.path())
        .args(["wallet", "top-up", "--org", &org, "--amount", "10.00"])
        .output()
        .unwrap();
    assert!(topped.status.success(), "{topped:?}");

    let http = reqwest::Client::new();
    let ready = http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
    let ready: Value = ready.json().await.unwrap();
    assert_eq!(ready["checks"]["blob_store"]["status"], "ok", "{ready}");

    use reqwest::Method;
    let (_, brand) = call(
        &http,
        &base,
        &key,
        Method::POST,
        "/v1/brands",
        Some(json!({"name": "Bucket Co"})),
    )
    .await;
    let brand = brand["data"]["id"].as_str().unwrap().to_string();
    let (_, product) = call(
        &http,
        &base,
        &key,
        Method::POST,
        "/v1/products",
        Some(json!({"brand_id": brand, "name": "Pail"})),
    )
    .await;
    let product = product["data"]["id"].as_str().unwrap().to_string();
    let (_, variant) = call(
        &http,
        &base,
        &key,
        Method::POST,
        "/v1/product-variants",
        Some(json!({"product_id": product, "name": "Blue"})),
    )
    .await;
    let variant = variant["data"]["id"].as_str().unwrap().to_string();
    let (_, audience) = call(
        &http,
        &base,
        &key,
        Method::POST,
        "/v1/audiences",
        Some(json!({"product_id": product, "name": "Gardeners"})),
    )
    .await;
    let audience = audience["data"]["id"].as_str().unwrap().to_string();
    let shot = upload(&http, &base, &key, png(200, 200, [200, 40, 40, 255])).await;
    let (status, _) = call(
        &http,
        &base,
        &key,
        Method::PATCH,
        &format!("/v1/product-variants/{variant}"),
        Some(json!({"image_ids": [shot["id"]]})),
    )
    .await;
    assert_eq!(status, 200);
    let reference = upload(&http, &base, &key, jpeg(120, 150, [30, 60, 90])).await;
    let src = reference["src"].as_str().unwrap().to_string();
    assert!(src.starts_with(&format!("{base}/files/")), "{src}");

    let (status, ad) = call(
        &http,
        &base,
        &key,
        Method::POST,
        "/v1/image-ads",
        Some(json!({"reference_ad_url": src, "brand_id": brand, "product_id": product, "audience_id": audience})),
    )
    .await;
    assert_eq!(status, 202, "{ad}");
    let ad_id = ad["data"]["id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(180);
    let done = loop {
        let (_, a) = call(
            &http,
            &base,
            &key,
            Method::GET,
            &format!("/v1/image-ads/{ad_id}"),
            None,
        )
        .await;
        if a["data"]["status"] != "processing" {
            break a["data"].clone();
        }
        assert!(Instant::now() < deadline, "the ad did not settle: {a}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(
        done["status"],
        "completed",
        "{done}\n{}\n{}",
        std::fs::read_to_string(dir.path().join("serve.log")).unwrap_or_default(),
        std::fs::read_to_string(worker_dir.path().join("worker.log")).unwrap_or_default()
    );
    let image_url = done["image_url"].as_str().unwrap();
    assert!(
        image_url.starts_with(&format!("{base}/files/")),
        "{image_url}"
    );
    let res = http.get(image_url).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "image/png");
    assert_eq!(
        res.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    let served = res.bytes().await.unwrap();
    let decoded = image::load_from_memory(&served).unwrap();
    assert_eq!(
        i64::from(decoded.width().max(decoded.height())),
        done["width"]
            .as_i64()
            .unwrap()
            .max(done["height"].as_i64().unwrap())
    );

    // The bytes are the bucket's: the rendered ad and the uploads are objects under the
    // prefix, and no blob was written to the data dir.
    let bucket = moto.store("s3://adforge-e2e/run", &format!("{base}/files"));
    let ad_key = image_url
        .strip_prefix(&format!("{base}/files/"))
        .unwrap()
        .to_string();
    assert_eq!(
        bucket.get(&ad_key).await.unwrap().as_deref(),
        Some(&served[..])
    );
    let uploads = bucket.list("images").await.unwrap();
    assert!(
        uploads
            .iter()
            .any(|k| k.starts_with(&format!("images/{}/", shot["id"].as_str().unwrap()))),
        "{uploads:?}"
    );
    for local in [dir.path().join("blobs"), worker_dir.path().join("blobs")] {
        let local_files = std::fs::read_dir(&local).map(|d| d.count()).unwrap_or(0);
        assert_eq!(local_files, 0, "blobs were written to {}", local.display());
    }

    // The bucket going away makes the node unready, naming it.
    drop(moto);
    let down = http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(down.status(), 503);
    let down: Value = down.json().await.unwrap();
    assert_ne!(down["checks"]["blob_store"]["status"], "ok", "{down}");
    assert_eq!(down["checks"]["database"]["status"], "ok", "{down}");
}
