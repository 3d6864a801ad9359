//! Webhook delivery across a crash: an `adforge serve` process SIGKILLed while it delivers.

use std::process::Stdio;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::adforge;
use crate::support::{Process, free_port, jpeg, png, send, wait_up};
use crate::webhook_receiver::{Answer, Receiver};

/// How long the test waits for a delivery to settle: a deadline only a hang reaches.
const DEADLINE: Duration = Duration::from_secs(180);

/// An `adforge serve` process SIGKILLed while it delivers: after a restart the delivery
/// is taken over (its lease expired) and the receiver gets the same event id again;
/// exactly one event exists for the ad.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_api_process_still_delivers_exactly_one_event() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let serve = || {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join("api.log"))
            .unwrap();
        Process(
            adforge()
                .arg("serve")
                .arg("--data-dir")
                .arg(dir.path())
                .args(["--listen", &format!("127.0.0.1:{port}"), "--log", "warn"])
                .args(["--allow-private-urls", "--webhook-retry-base-ms", "200"])
                .args(["--webhook-lease-ms", "1500"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("adforge serve starts"),
        )
    };
    let admin = |args: &[&str]| -> Value {
        let out = adforge()
            .arg("admin")
            .arg("--data-dir")
            .arg(dir.path())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let mut api = serve();
    assert!(wait_up(&base).await, "the API came up");
    let org_id = admin(&["org", "create", "--name", "Crash"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let key = admin(&[
        "key",
        "create",
        "--org",
        &org_id,
        "--scopes",
        "all",
        "--rate-limit",
        "100000",
    ])["key"]
        .as_str()
        .unwrap()
        .to_string();
    admin(&["wallet", "top-up", "--org", &org_id, "--amount", "10.00"]);
    let http = reqwest::Client::new();
    let call = |method: Method, path: &str, body: Option<Value>| {
        let mut r = http
            .request(method, format!("{base}{path}"))
            .header("x-api-key", &key);
        if let Some(b) = body {
            r = r.json(&b);
        }
        send(r)
    };

    let receiver = Receiver::start().await;
    // The first delivery is never answered: the API is killed while it waits.
    receiver.plan(&[Answer::Hang]);
    let endpoint = call(
        Method::POST,
        "/v1/webhook-endpoints",
        Some(json!({"url": format!("{}/crash", receiver.base), "events": ["image_ad.completed"]})),
    )
    .await
    .expect(201, None)
    .id();
    // A catalog and a reference, over HTTP.
    let upload = |bytes: Vec<u8>, image_type: Option<&str>| {
        let mut form = reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(bytes).file_name("x.bin"),
        );
        if let Some(t) = image_type {
            form = form.text("image_type", t.to_string());
        }
        send(
            http.post(format!("{base}/v1/images"))
                .header("x-api-key", &key)
                .multipart(form),
        )
    };
    let brand = call(Method::POST, "/v1/brands", Some(json!({"name": "Crash"})))
        .await
        .expect(201, None)
        .id();
    let product = call(
        Method::POST,
        "/v1/products",
        Some(json!({"brand_id": brand, "name": "Boot"})),
    )
    .await
    .expect(201, None)
    .id();
    let shot = upload(png(64, 64, [20, 120, 40, 255]), Some("product"))
        .await
        .expect(201, None)
        .id();
    call(
        Method::POST,
        "/v1/product-variants",
        Some(json!({"product_id": product, "name": "Green", "image_ids": [shot]})),
    )
    .await
    .expect(201, None);
    let audience = call(
        Method::POST,
        "/v1/audiences",
        Some(json!({"product_id": product, "name": "Hikers"})),
    )
    .await
    .expect(201, None)
    .id();
    let reference = upload(jpeg(120, 150, [90, 60, 30]), None)
        .await
        .expect(201, None);
    let ad = call(
        Method::POST,
        "/v1/image-ads",
        Some(
            json!({"reference_ad_url": reference.body["data"]["src"], "brand_id": brand,
            "product_id": product, "audience_id": audience}),
        ),
    )
    .await
    .expect(202, None)
    .id();

    let first = receiver.wait_for("/crash", 1).await;
    // SIGKILL mid-delivery: no answer recorded, the lease still held.
    drop(api);
    api = serve();
    assert!(wait_up(&base).await, "the API came back");
    let hits = receiver.wait_for("/crash", 2).await;
    for h in &hits {
        assert_eq!(
            h.event_id, first[0].event_id,
            "duplicates carry the same event id"
        );
        assert_eq!(h.json()["data"]["object"]["id"], ad.as_str());
    }
    let events = call(Method::GET, &format!("/v1/events?object_id={ad}"), None)
        .await
        .expect(200, None);
    assert_eq!(events.body["total_count"], 1, "{}", events.body);
    assert_eq!(events.body["data"][0]["id"], first[0].event_id.as_str());
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let d = call(
            Method::GET,
            &format!("/v1/webhook-endpoints/{endpoint}/deliveries"),
            None,
        )
        .await
        .expect(200, None);
        let list = d.body["data"].as_array().unwrap().clone();
        assert_eq!(list.len(), 1, "{list:?}");
        if list[0]["state"] == "delivered" {
            assert!(list[0]["attempts"].as_i64() >= Some(2), "{list:?}");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{list:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(api);
}
