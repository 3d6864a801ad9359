//! The ad flows the image-ad tests share, over HTTP only: an [`Api`] (a process cluster or
//! the in-process server), the ids an ad needs, create / poll / ledger helpers, and a
//! reference-image server that misbehaves on purpose. Used by `embedded.rs` here and
//! `#[path]`-included by the process-level tests of the top-level `tests/` crate, so both
//! drive ads the same way.
//!
//! No assertion here is about time: every wait is a generous polling deadline.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{Org, Reply, jpeg, png, send};

/// How long any one ad may take to settle before a test gives up (not a timing assertion:
/// a deadline that only a hang reaches).
pub const SETTLE_DEADLINE: Duration = Duration::from_secs(120);

/// What the ad tests need of a server: HTTP with a key. Implemented by the process cluster
/// and the in-process test server, so the helpers below serve both modes.
#[allow(async_fn_in_trait, reason = "test helpers, awaited in place")]
pub trait Api {
    fn base(&self) -> &str;
    fn client(&self) -> &reqwest::Client;

    async fn call(&self, method: Method, path: &str, org: &Org, body: Option<Value>) -> Reply {
        let mut req = self
            .client()
            .request(method, format!("{}{path}", self.base()))
            .header("x-api-key", &org.key);
        if let Some(b) = body {
            req = req.json(&b);
        }
        send(req).await
    }

    async fn upload(&self, org: &Org, bytes: Vec<u8>, image_type: Option<&str>) -> Reply {
        let mut form = reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(bytes).file_name("upload.bin"),
        );
        if let Some(t) = image_type {
            form = form.text("image_type", t.to_string());
        }
        send(
            self.client()
                .post(format!("{}/v1/images", self.base()))
                .header("x-api-key", &org.key)
                .multipart(form),
        )
        .await
    }
}

/// The ids an ad create needs.
pub struct Ready {
    pub brand: String,
    pub product: String,
    pub audience: String,
    /// A reference ad this API serves itself (an uploaded image's `src`).
    pub reference: String,
}

impl Ready {
    pub fn body(&self, reference: &str, editable: bool) -> Value {
        json!({
            "reference_ad_url": reference,
            "brand_id": self.brand,
            "product_id": self.product,
            "audience_id": self.audience,
            "editable": editable,
        })
    }

    pub fn flat(&self) -> Value {
        self.body(&self.reference, false)
    }
}

/// brand → product → variant with an image → audience, and a reference ad uploaded to the
/// API (what `image_ads.rs`'s `ready()` does, over HTTP only).
pub async fn ready(api: &impl Api, org: &Org) -> Ready {
    let post = |path: &'static str, body: Value| async move {
        api.call(Method::POST, path, org, Some(body))
            .await
            .expect(201, None)
            .id()
    };
    let brand = post("/v1/brands", json!({"name": "Acme"})).await;
    let product = post(
        "/v1/products",
        json!({"brand_id": brand, "name": "Trail Shoe"}),
    )
    .await;
    let variant = post(
        "/v1/product-variants",
        json!({"product_id": product, "name": "Red 42"}),
    )
    .await;
    let audience = post(
        "/v1/audiences",
        json!({"product_id": product, "name": "Weekend hikers"}),
    )
    .await;
    let shot = api
        .upload(org, png(64, 64, [200, 40, 40, 255]), Some("product"))
        .await
        .expect(201, None);
    api.call(
        Method::PATCH,
        &format!("/v1/product-variants/{variant}"),
        org,
        Some(json!({"image_ids": [shot.id()]})),
    )
    .await
    .expect(200, None);
    let reference = api
        .upload(org, jpeg(120, 150, [30, 60, 90]), None)
        .await
        .expect(201, None);
    Ready {
        brand,
        product,
        audience,
        reference: reference.body["data"]["src"]
            .as_str()
            .expect("src")
            .to_string(),
    }
}

pub async fn create(api: &impl Api, org: &Org, body: Value) -> String {
    api.call(Method::POST, "/v1/image-ads", org, Some(body))
        .await
        .expect(202, None)
        .id()
}

pub async fn get_ad(api: &impl Api, org: &Org, id: &str) -> Value {
    api.call(Method::GET, &format!("/v1/image-ads/{id}"), org, None)
        .await
        .expect(200, None)
        .body["data"]
        .clone()
}

/// Polls until the ad is no longer `processing`; `context` is appended to the panic.
pub async fn settled(api: &impl Api, org: &Org, id: &str, context: impl Fn() -> String) -> Value {
    let deadline = Instant::now() + SETTLE_DEADLINE;
    loop {
        let ad = get_ad(api, org, id).await;
        if ad["status"] != "processing" {
            return ad;
        }
        assert!(
            Instant::now() < deadline,
            "ad {id} still processing after {SETTLE_DEADLINE:?}: {ad}\n{}",
            context()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Ledger entries of one kind for one ad.
pub fn ledger_for<'a>(wallet: &'a Value, kind: &str, ad: &str) -> Vec<&'a Value> {
    wallet["ledger"]
        .as_array()
        .expect("ledger")
        .iter()
        .filter(|e| e["kind"] == kind && e["reference"] == ad)
        .collect()
}

/// Asserts that `ad` was charged exactly once, `cents`.
#[track_caller]
pub fn charged_once(wallet: &Value, ad: &str, cents: i64) {
    let charges = ledger_for(wallet, "charge", ad);
    assert_eq!(charges.len(), 1, "one charge for {ad}: {wallet}");
    assert_eq!(charges[0]["amount_cents"], cents, "{wallet}");
}

// ---------------------------------------------------------------------------------------
// A tiny HTTP server of the test, for reference ads that misbehave on purpose.
// ---------------------------------------------------------------------------------------

/// How the reference server treats requests after the first (the API's create-time check).
#[derive(Clone, Copy)]
pub enum After {
    /// Stop listening after the first request: every later fetch is refused.
    Refuse,
    /// Answer every later request only after this delay (a worker stuck in a fetch).
    Stall(Duration),
}

/// Serves one PNG at `http://127.0.0.1:P/ref.png`; see [`After`]. Stops when dropped.
pub struct RefServer {
    pub url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for RefServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RefServer {
    pub async fn start(after: After) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/ref.png", listener.local_addr().expect("addr"));
        let body = Arc::new(png(160, 120, [240, 200, 30, 255]));
        let served = Arc::new(AtomicUsize::new(0));
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let n = served.fetch_add(1, Ordering::SeqCst);
                let body = body.clone();
                tokio::spawn(async move {
                    // Read the request head, then answer with `Connection: close`.
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 << 10 {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(k) => head.extend_from_slice(&buf[..k]),
                        }
                    }
                    if let (After::Stall(d), true) = (after, n > 0) {
                        tokio::time::sleep(d).await;
                    }
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(&body).await;
                    let _ = stream.shutdown().await;
                });
                if matches!(after, After::Refuse) {
                    // Dropping the listener closes the port: later connects are refused.
                    return;
                }
            }
        });
        Self { url, task }
    }
}

/// Sends 20 flat-ad creates at once; returns (202s, 402 INSUFFICIENT_BALANCE s). Any other
/// answer fails the test.
pub async fn twenty_at_once(base: &str, org: &Org, body: Value) -> (usize, usize) {
    let http = reqwest::Client::new();
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let req = http
                .post(format!("{base}/v1/image-ads"))
                .header("x-api-key", &org.key)
                .json(&body);
            tokio::spawn(send(req))
        })
        .collect();
    let (mut accepted, mut refused) = (0, 0);
    for t in tasks {
        let r = t.await.expect("create task");
        match (r.status.as_u16(), r.code()) {
            (202, _) => accepted += 1,
            (402, "INSUFFICIENT_BALANCE") => refused += 1,
            _ => panic!("unexpected answer to a concurrent create: {r:?}"),
        }
    }
    (accepted, refused)
}
