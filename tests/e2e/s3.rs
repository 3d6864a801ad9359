//! End to end on S3-compatible storage: `adforge serve --blob-url s3://…` as an API node and
//! `adforge worker --blob-url s3://…` as a render node with a data dir of its own, sharing
//! only Redis and a real moto bucket.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use adforge_api::blob::BlobStore;
use serde_json::{Value, json};

use crate::adforge;
use crate::moto::Moto;
use crate::redis_server;
use crate::support::{Process, free_port, jpeg, png};

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
        adforge()
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
        adforge()
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
    let topped = adforge()
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
