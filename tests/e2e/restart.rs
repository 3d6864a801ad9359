//! An `adforge serve` process stopped with ads and design templates in flight (embedded
//! mode: the in-process queue dies with it) resumes them when it starts again.

use std::process::Stdio;

use serde_json::{Value, json};

use crate::adforge;
use crate::support::png;

/// Processing ads of a stopped API are resumed when it starts again (embedded mode, whose
/// in-process queue dies with the process).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_api_resumes_processing_ads() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let serve = |workers: &str| {
        adforge()
            .args([
                "serve",
                "--data-dir",
                &d,
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--log",
                "warn",
                "--allow-private-urls",
                "--workers",
                workers,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let http = reqwest::Client::new();
    // First life: no workers, so the ad is still processing when the process dies.
    let first = crate::support::Process(serve("0"));
    assert!(crate::support::wait_up(&base).await);
    let org = adforge_api::orgs::create_org(
        &adforge_api::store::Db::open(dir.path()).await.unwrap(),
        "Resume",
    )
    .await
    .unwrap();
    let org_id = org["id"].as_str().unwrap().to_string();
    let db = adforge_api::store::Db::open(dir.path()).await.unwrap();
    let key =
        adforge_api::orgs::create_key(&db, &org_id, &adforge_api::auth::Grants::All, Some(100_000))
            .await
            .unwrap()["key"]
            .as_str()
            .unwrap()
            .to_string();
    adforge_api::store::query("UPDATE wallets SET balance_cents = 1000 WHERE org_id = ?")
        .bind(&org_id)
        .execute(&db.write)
        .await
        .unwrap();
    let call = |method: reqwest::Method, path: String, body: Option<Value>| {
        let mut r = http
            .request(method, format!("{base}{path}"))
            .header("x-api-key", &key);
        if let Some(b) = body {
            r = r.json(&b);
        }
        crate::support::send(r)
    };
    let brand = call(
        reqwest::Method::POST,
        "/v1/brands".into(),
        Some(json!({"name": "R"})),
    )
    .await
    .id();
    let product = call(
        reqwest::Method::POST,
        "/v1/products".into(),
        Some(json!({"brand_id": brand, "name": "Bag"})),
    )
    .await
    .id();
    let audience = call(
        reqwest::Method::POST,
        "/v1/audiences".into(),
        Some(json!({"product_id": product, "name": "Walkers"})),
    )
    .await
    .id();
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(png(40, 40, [10, 120, 60, 255])).file_name("a.png"),
    );
    let img = crate::support::send(
        http.post(format!("{base}/v1/images"))
            .header("x-api-key", &key)
            .multipart(form),
    )
    .await
    .expect(201, None);
    call(
        reqwest::Method::POST,
        "/v1/product-variants".into(),
        Some(json!({"product_id": product, "name": "v", "image_ids": [img.id()]})),
    )
    .await
    .expect(201, None);
    let body = json!({"reference_ad_url": img.body["data"]["src"], "brand_id": brand, "product_id": product, "audience_id": audience});
    let ad = call(reqwest::Method::POST, "/v1/image-ads".into(), Some(body))
        .await
        .expect(202, None)
        .id();
    // A design template's analysis is resumed the same way.
    let template = call(
        reqwest::Method::POST,
        "/v1/design-templates".into(),
        Some(json!({"reference_image_url": img.body["data"]["src"]})),
    )
    .await
    .expect(202, None)
    .id();
    drop(first);

    // Second life with a worker: the ad completes and is charged once.
    let second = crate::support::Process(serve("1"));
    assert!(crate::support::wait_up(&base).await);
    let mut status = Value::Null;
    for _ in 0..600 {
        status = call(reqwest::Method::GET, format!("/v1/image-ads/{ad}"), None)
            .await
            .body["data"]["status"]
            .clone();
        if status != "processing" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let mut template_status = Value::Null;
    for _ in 0..600 {
        template_status = call(
            reqwest::Method::GET,
            format!("/v1/design-templates/{template}"),
            None,
        )
        .await
        .body["data"]["status"]
            .clone();
        if template_status != "processing" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    drop(second);
    assert_eq!(status, "completed");
    assert_eq!(template_status, "completed");
    let (balance, held): (i64, i64) = adforge_api::store::query_as(
        "SELECT balance_cents, held_cents FROM wallets WHERE org_id = ?",
    )
    .bind(&org_id)
    .fetch_one(&db.read)
    .await
    .unwrap();
    assert_eq!((balance, held), (900, 0));
}
