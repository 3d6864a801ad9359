//! Hardening, round two (issue 19), over real HTTP: the one address policy refuses every
//! loopback form before dialling (a listener records every connection and must record
//! none), webhook URLs refuse user info, scopes and the path's resource are checked before
//! the body on every operation of the OpenAPI document, error bodies are bounded, trees the
//! renderer would refuse are refused at PATCH, and every response says `nosniff`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{TestServer, png, send};

/// A loopback listener that counts every connection made to it (and answers nothing).
struct Recorder {
    port: u16,
    hits: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Recorder {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                drop(stream);
            }
        });
        Self { port, hits, task }
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    /// The loopback address of this listener in every notation the policy must see
    /// through: dotted, one number, hex, short, `localhost`, IPv4-mapped,
    /// IPv4-compatible, NAT64, 6to4 and Teredo.
    fn loopback_hosts(&self) -> Vec<String> {
        let p = self.port;
        [
            "127.0.0.1",
            "2130706433",
            "0x7f.1",
            "0177.0.0.1",
            "127.1",
            "localhost",
            "[::ffff:127.0.0.1]",
            "[::127.0.0.1]",
            "[64:ff9b::7f00:1]",
            "[2002:7f00:1::]",
            "[2001:0:4136:e378:8000:63bf:80ff:fffe]",
        ]
        .iter()
        .map(|h| format!("{h}:{p}"))
        .collect()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Every place a user's URL enters refuses every loopback form with the policy's words,
/// before any connection: webhook create and PATCH, a template's reference, a search
/// example, an ad's reference. The listener behind all those URLs sees no connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_loopback_form_is_refused_everywhere_before_dialling() {
    let s = TestServer::start_with(|a| {
        a.allow_private_urls = false;
        a.workers = 0;
    })
    .await;
    let org = s.org("Guard").await;
    let rec = Recorder::start().await;
    // An endpoint to PATCH: a public literal (no DNS), disabled at once; no event is ever
    // written in this test, so nothing is delivered to it.
    let endpoint = s
        .post(
            &org,
            "/v1/webhook-endpoints",
            json!({"url": "https://192.31.196.1/hook", "events": ["image_ad.completed"]}),
        )
        .await
        .expect(201, None)
        .id();
    s.patch(
        &org,
        &format!("/v1/webhook-endpoints/{endpoint}"),
        json!({"enabled": false}),
    )
    .await
    .expect(200, None);
    let (c, _) = s.ad_inputs(&org).await;
    for host in rec.loopback_hosts() {
        let hook = format!("https://{host}/hook");
        let image = format!("http://{host}/x.png");
        let cases: Vec<(Method, String, Value, &str, u16)> = vec![
            (
                Method::POST,
                "/v1/webhook-endpoints".into(),
                json!({"url": hook, "events": ["image_ad.completed"]}),
                "url",
                400,
            ),
            (
                Method::PATCH,
                format!("/v1/webhook-endpoints/{endpoint}"),
                json!({"url": hook}),
                "url",
                400,
            ),
            (
                Method::POST,
                "/v1/design-templates".into(),
                json!({"reference_image_url": image}),
                "reference_image_url",
                400,
            ),
            (
                Method::POST,
                "/v1/swipe-files/search".into(),
                json!({"image_url": image}),
                "image_url",
                400,
            ),
            (
                Method::POST,
                "/v1/image-ads".into(),
                json!({"reference_ad_url": image, "brand_id": c.brand, "product_id": c.product, "audience_id": c.audience}),
                "",
                422,
            ),
        ];
        for (method, path, body, field, status) in cases {
            let r = s.call(method, &path, Some(&org.key), Some(body)).await;
            assert_eq!(r.status.as_u16(), status, "{path} {host}: {}", r.body);
            let text = r.body["error"].to_string();
            assert!(
                text.contains("not a public address"),
                "{path} {host}: {text}"
            );
            if !field.is_empty() {
                assert_eq!(r.body["error"]["details"][0]["field"], field, "{text}");
            }
        }
    }
    assert_eq!(rec.hits(), 0, "a refused address was dialled");
    // Nothing refused was stored: the endpoint kept its URL.
    let kept = s
        .get(&org, &format!("/v1/webhook-endpoints/{endpoint}"))
        .await
        .expect(200, None);
    assert_eq!(kept.body["data"]["url"], "https://192.31.196.1/hook");
}

/// Webhook URLs with a user name or password are refused on create and PATCH, naming the
/// field, and never stored (so never shown back).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_urls_refuse_user_info() {
    let s = TestServer::start().await;
    let org = s.org("Userinfo").await;
    let rec = Recorder::start().await;
    let clean = format!("http://127.0.0.1:{}/hook", rec.port);
    let id = s
        .post(
            &org,
            "/v1/webhook-endpoints",
            json!({"url": clean, "events": ["image_ad.completed"]}),
        )
        .await
        .expect(201, None)
        .id();
    for url in [
        format!("http://user:secret@127.0.0.1:{}/hook", rec.port),
        format!("http://user@127.0.0.1:{}/hook", rec.port),
        format!("http://:secret@127.0.0.1:{}/hook", rec.port),
    ] {
        for r in [
            s.post(
                &org,
                "/v1/webhook-endpoints",
                json!({"url": url, "events": ["image_ad.completed"]}),
            )
            .await,
            s.patch(
                &org,
                &format!("/v1/webhook-endpoints/{id}"),
                json!({"url": url}),
            )
            .await,
        ] {
            let r = r.expect(400, Some("VALIDATION_ERROR"));
            assert_eq!(r.body["error"]["details"][0]["field"], "url", "{}", r.body);
            assert!(
                r.body["error"]["details"][0]["message"]
                    .as_str()
                    .unwrap()
                    .contains("user name or password"),
                "{}",
                r.body
            );
            assert!(!r.body.to_string().contains("secret@"), "{}", r.body);
        }
    }
    let list = s.get(&org, "/v1/webhook-endpoints").await.expect(200, None);
    assert_eq!(list.body["total_count"], 1);
    assert_eq!(list.body["data"][0]["url"], clean.as_str());
}

/// The scopes an operation of the OpenAPI document lists under `security`.
fn op_scopes(op: &Value) -> Vec<String> {
    op["security"][0]["api_key"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Every operation with a body, from the OpenAPI document: with a key lacking its scope, an
/// invalid body answers 403 (never a 400 describing the schema); with every scope and
/// ids that name nothing of the caller's (missing, or another organisation's), it answers
/// 404 whatever the body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scope_and_existence_come_before_the_body_on_every_operation() {
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org("Order").await;
    let other = s.org("Victim").await;
    let doc = adforge_api::v1::openapi_document();
    let all: Vec<&str> = adforge_api::auth::Scope::ALL
        .iter()
        .map(|s| s.name())
        .collect();
    let mut checked = 0;
    let mut with_ids = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if op.get("requestBody").is_none() {
                continue;
            }
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let needed = op_scopes(op);
            assert!(!needed.is_empty(), "{method} {path} lists no scope");
            let others: Vec<&str> = all
                .iter()
                .copied()
                .filter(|n| !needed.iter().any(|x| x == n))
                .collect();
            let weak = s.key(&org.id, &others.join(","), None).await;
            let mut concrete = path.clone();
            while let (Some(a), Some(b)) = (concrete.find('{'), concrete.find('}')) {
                concrete.replace_range(a..=b, "nope_0000000000000000000000");
            }
            let invalid = json!({"no_such_field": [1, 2, 3], "name": 7});
            for body in [invalid.clone(), json!("not an object")] {
                let r = s
                    .call(method.clone(), &concrete, Some(&weak), Some(body))
                    .await;
                assert_eq!(
                    r.status.as_u16(),
                    403,
                    "{method} {path} without {needed:?}: {}",
                    r.body
                );
                assert_eq!(r.code(), "FORBIDDEN", "{method} {path}: {}", r.body);
            }
            // Without a JSON content type too (multipart operations alike).
            let r = send(
                s.request(method.clone(), &concrete)
                    .header("x-api-key", &weak)
                    .body("garbage"),
            )
            .await;
            assert_eq!(r.status.as_u16(), 403, "{method} {path}: {}", r.body);
            checked += 1;
            if path.contains("{id}") {
                let r = s
                    .call(method.clone(), &concrete, Some(&org.key), Some(invalid))
                    .await;
                assert_eq!(r.status.as_u16(), 404, "{method} {path}: {}", r.body);
                with_ids += 1;
            }
        }
    }
    assert!(checked >= 20 && with_ids >= 10, "{checked} {with_ids}");

    // Another organisation's real resources are 404 whatever the body, as missing ones.
    let brand = s
        .post(&other, "/v1/brands", json!({"name": "Theirs"}))
        .await
        .expect(201, None)
        .id();
    let pack = s
        .post(&other, "/v1/design-packs", json!({"title": "Theirs"}))
        .await
        .expect(201, None)
        .id();
    for (path, body) in [
        (format!("/v1/brands/{brand}"), json!({"name": 7})),
        (format!("/v1/design-packs/{pack}"), json!({"title": []})),
    ] {
        let r = s.patch(&org, &path, body).await;
        assert_eq!(r.status.as_u16(), 404, "{path}: {}", r.body);
    }
    let r = s
        .post(
            &org,
            &format!("/v1/design-packs/{pack}/items"),
            json!({"swipe_file_ids": "x"}),
        )
        .await;
    assert_eq!(r.status.as_u16(), 404, "{}", r.body);
}

/// A form of 100,000 fields (5.8 MB) is refused at its 17th field with a small body (it
/// was a 9.7 MB answer of 100,001 details). The bound on details and message lengths of
/// every error is unit-tested in `error.rs`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_bodies_and_forms_are_bounded() {
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org("Bounds").await;
    let mut body = String::new();
    let boundary = "XyZbOuNdArY";
    for i in 0..100_000 {
        body.push_str(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"f{i}\"\r\n\r\n1\r\n"
        ));
    }
    body.push_str(&format!("--{boundary}--\r\n"));
    assert!(body.len() > 5_000_000);
    for path in ["/v1/swipe-files", "/v1/images"] {
        let res = s
            .request(Method::POST, path)
            .header("x-api-key", &org.key)
            .header(
                "content-type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 400, "{path}");
        let text = res.text().await.unwrap();
        assert!(
            text.len() < 8_000,
            "{path}: a {} byte error body",
            text.len()
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        let details = v["error"]["details"].as_array().unwrap();
        assert!(details.len() <= 100, "{path}: {} details", details.len());
        assert!(text.contains("more than 16 form fields"), "{path}: {text}");
    }
}

/// Every kind of response says `X-Content-Type-Options: nosniff`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_says_nosniff() {
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org("Sniff").await;
    let img = s
        .upload(&org, png(8, 8, [1, 2, 3, 255]), &[])
        .await
        .expect(201, None);
    let src = img.body["data"]["src"].as_str().unwrap().to_string();
    let files = src.strip_prefix(&s.base).unwrap().to_string();
    for (path, key) in [
        ("/v1/brands", Some(org.key.as_str())),
        ("/v1/brands", None),
        ("/v1/no-such-thing", Some(org.key.as_str())),
        ("/openapi.json", None),
        ("/healthz", None),
        ("/readyz", None),
        ("/dashboard/sign-in", None),
        ("/dashboard/keys", None),
        (files.as_str(), None),
    ] {
        let mut req = s.request(Method::GET, path);
        if let Some(k) = key {
            req = req.header("x-api-key", k);
        }
        let r = send(req).await;
        assert_eq!(
            r.header("x-content-type-options"),
            Some("nosniff"),
            "{path} ({})",
            r.status
        );
    }
}
