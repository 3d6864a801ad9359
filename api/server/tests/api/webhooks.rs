//! Webhooks (issue 12), end to end: real image ads completing and failing, a real HTTP
//! receiver on loopback that checks every signature with its own HMAC-SHA256 (written
//! here on top of SHA-256, independent of the server's code), retries, a receiver that is
//! down, rotation, URL rules, scopes, isolation, the rate limit, and an API process
//! SIGKILLed mid-delivery (in the
//! top-level `tests/` crate, `tests/e2e/webhooks.rs`).
//!
//! Waits are generous polling deadlines, never timing assertions.

use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use crate::support::{Catalog, Org, Reply, TestServer, free_port, png};
use crate::webhook_receiver::{Answer, Hit, Receiver, Shared};

/// How long a test waits for something that should happen (renders included) before it
/// gives up: a deadline only a hang reaches.
const DEADLINE: Duration = Duration::from_secs(180);

// ---------------------------------------------------------------------------------------
// The receiver's own HMAC-SHA256 (RFC 2104) and signature check.
// ---------------------------------------------------------------------------------------

fn hmac_sha256(key: &[u8], msg: &[u8]) -> String {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(k.map(|b| b ^ 0x36));
    inner.update(msg);
    let mut outer = Sha256::new();
    outer.update(k.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The `v1` signatures of `header`, after checking its timestamp is within 5 minutes.
fn signatures(header: &str) -> (i64, Vec<String>) {
    let mut t = None;
    let mut v1 = Vec::new();
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", v)) => t = v.parse::<i64>().ok(),
            Some(("v1", v)) => v1.push(v.to_string()),
            _ => panic!("unexpected part `{part}` in signature header `{header}`"),
        }
    }
    let t = t.unwrap_or_else(|| panic!("no t= in `{header}`"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!(
        (now - t).abs() <= 300,
        "timestamp {t} is outside the tolerance"
    );
    (t, v1)
}

/// Which of `secrets` signed this request, in the order of its `v1` values; panics on a
/// signature that none of them made.
fn signed_by(hit: &Hit, secrets: &[&str]) -> Vec<usize> {
    let (t, v1) = signatures(&hit.signature);
    let mut msg = format!("{t}.").into_bytes();
    msg.extend_from_slice(&hit.body);
    v1.iter()
        .map(|sig| {
            secrets
                .iter()
                .position(|s| hmac_sha256(s.as_bytes(), &msg) == *sig)
                .unwrap_or_else(|| panic!("signature {sig} made by none of the secrets"))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Ads.
// ---------------------------------------------------------------------------------------

/// A catalog whose variant has an image, $10 in the wallet, and a reference ad URL.
async fn ready(s: &TestServer, org: &Org) -> (Catalog, String) {
    let ready = s.ad_inputs(org).await;
    adforge_api::store::query(
        "UPDATE wallets SET balance_cents = balance_cents + 1000 WHERE org_id = ?",
    )
    .bind(&org.id)
    .execute(&s.db.write)
    .await
    .unwrap();
    ready
}

fn ad_body(c: &Catalog, reference: &str) -> Value {
    json!({"reference_ad_url": reference, "brand_id": c.brand, "product_id": c.product, "audience_id": c.audience})
}

/// Serves one PNG to the first request (the API's create-time check), then closes its
/// port: every worker fetch is refused, so the ad fails without rendering.
async fn refusing_reference() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/ref.png", listener.local_addr().unwrap());
    let body = png(160, 120, [240, 200, 30, 255]);
    tokio::spawn(async move {
        if let Ok((mut stream, _)) = listener.accept().await {
            let mut buf = [0u8; 4096];
            let _ = tokio::io::AsyncReadExt::read(&mut stream, &mut buf).await;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(&body).await;
            let _ = stream.shutdown().await;
        }
    });
    url
}

async fn create_endpoint(
    s: &TestServer,
    org: &Org,
    url: &str,
    events: &[&str],
) -> (String, String) {
    let r = s
        .post(
            org,
            "/v1/webhook-endpoints",
            json!({"url": url, "events": events}),
        )
        .await
        .expect(201, None);
    let secret = r.body["data"]["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("whsec_"), "{}", r.body);
    (r.id(), secret)
}

async fn deliveries(s: &TestServer, org: &Org, endpoint: &str) -> Vec<Value> {
    s.get(org, &format!("/v1/webhook-endpoints/{endpoint}/deliveries"))
        .await
        .expect(200, None)
        .body["data"]
        .as_array()
        .unwrap()
        .clone()
}

fn remaining(r: &Reply) -> i64 {
    r.header("ratelimit-remaining").unwrap().parse().unwrap()
}

// ---------------------------------------------------------------------------------------
// Tests.
// ---------------------------------------------------------------------------------------

/// One real completed ad and one real failed ad: each event reaches its endpoints once,
/// signed, with the ad exactly as GET shows it; a rotated endpoint gets both signatures;
/// an endpoint that is down when the ad completes gets the event once it is back;
/// another org sees none of it; deliveries leave the rate limit alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_arrive_signed_once_with_the_ad_as_get_shows_it() {
    let s = TestServer::start_with(|a| {
        a.webhooks.webhook_retry_base_ms = 200;
        a.queue.max_attempts = 1;
    })
    .await;
    let org = s.org_unlimited("Hooks").await;
    let receiver = Receiver::start().await;
    let both = ["image_ad.completed", "image_ad.failed"];
    let (a, secret_a) = create_endpoint(&s, &org, &format!("{}/a", receiver.base), &both).await;
    // C is rotated before anything happens: its deliveries carry both signatures.
    let (c, old_c) = create_endpoint(&s, &org, &format!("{}/c", receiver.base), &both).await;
    let rotated = s
        .post(
            &org,
            &format!("/v1/webhook-endpoints/{c}/rotate-secret"),
            json!({}),
        )
        .await
        .expect(200, None);
    let new_c = rotated.body["data"]["secret"].as_str().unwrap().to_string();
    assert_ne!(new_c, old_c);
    assert!(rotated.body["data"]["previous_secret_expires_at"].is_string());
    // B's receiver is down until the ad has completed.
    let b_port = free_port();
    let (b, secret_b) = create_endpoint(
        &s,
        &org,
        &format!("http://127.0.0.1:{b_port}/b"),
        &["image_ad.completed"],
    )
    .await;

    let (cat, reference) = ready(&s, &org).await;
    let ok = s
        .post(&org, "/v1/image-ads", ad_body(&cat, &reference))
        .await
        .expect(202, None)
        .id();
    let doomed = s
        .post(
            &org,
            "/v1/image-ads",
            ad_body(&cat, &refusing_reference().await),
        )
        .await
        .expect(202, None)
        .id();

    let hits = receiver.wait_for("/a", 2).await;
    let mut seen = Vec::new();
    for hit in &hits {
        assert_eq!(signed_by(hit, &[&secret_a]), vec![0]);
        let event = hit.json();
        assert_eq!(event["id"], hit.event_id.as_str());
        assert!(hit.event_id.starts_with("evt_"));
        let object = &event["data"]["object"];
        let ad = object["id"].as_str().unwrap();
        let got = s
            .get(&org, &format!("/v1/image-ads/{ad}"))
            .await
            .expect(200, None);
        assert_eq!(
            *object, got.body["data"],
            "data.object is the ad as GET shows it"
        );
        let expected = if ad == ok {
            "image_ad.completed"
        } else {
            "image_ad.failed"
        };
        assert_eq!(event["type"], expected, "{event}");
        assert_eq!(object["status"], expected.trim_start_matches("image_ad."));
        seen.push(ad.to_string());
        // The event log holds exactly what was delivered.
        let logged = s
            .get(&org, &format!("/v1/events/{}", hit.event_id))
            .await
            .expect(200, None);
        assert_eq!(logged.body["data"], event);
    }
    seen.sort();
    let mut want = vec![ok.clone(), doomed.clone()];
    want.sort();
    assert_eq!(seen, want, "one event per ad");

    // C: the new secret's signature first, then the old one's, on every delivery.
    for hit in receiver.wait_for("/c", 2).await {
        assert_eq!(signed_by(&hit, &[&new_c, &old_c]), vec![0, 1]);
    }

    // B was down: its delivery failed and waits for a retry; once B is up, it arrives.
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let d = deliveries(&s, &org, &b).await;
        if d.len() == 1 && d[0]["attempts"].as_i64() >= Some(1) && d[0]["last_error"].is_string() {
            assert_eq!(d[0]["state"], "pending", "{d:?}");
            assert!(d[0]["next_attempt_at"].is_string(), "{d:?}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "B's delivery never failed: {d:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let b_receiver = Receiver::start_on(b_port, Shared::default()).await;
    let b_hits = b_receiver.wait_for("/b", 1).await;
    assert_eq!(signed_by(&b_hits[0], &[&secret_b]), vec![0]);
    assert_eq!(b_hits[0].json()["data"]["object"]["id"], ok.as_str());

    // Each endpoint's deliveries ended delivered after one attempt (B: more), and nothing
    // was delivered twice.
    for (endpoint, n) in [(&a, 2), (&c, 2)] {
        let d = deliveries(&s, &org, endpoint).await;
        assert_eq!(d.len(), n, "{d:?}");
        for x in &d {
            assert_eq!(x["state"], "delivered", "{x}");
            assert_eq!(x["attempts"], 1, "{x}");
            assert_eq!(x["last_status_code"], 200, "{x}");
            assert!(
                x["delivered_at"].is_string() && x["next_attempt_at"].is_null(),
                "{x}"
            );
        }
    }
    let d = deliveries(&s, &org, &b).await;
    assert_eq!(d[0]["state"], "delivered", "{d:?}");
    assert_eq!(receiver.hits("/a").len(), 2);
    assert_eq!(receiver.hits("/c").len(), 2);
    assert_eq!(b_receiver.hits("/b").len(), 1);

    // The event list: newest first, filterable by type.
    let events = s.get(&org, "/v1/events").await.expect(200, None);
    assert_eq!(events.body["total_count"], 2, "{}", events.body);
    let failed = s
        .get(&org, "/v1/events?type=image_ad.failed")
        .await
        .expect(200, None);
    assert_eq!(
        failed.body["data"][0]["data"]["object"]["id"],
        doomed.as_str()
    );
    s.get(&org, "/v1/events?type=video_ad.completed")
        .await
        .expect(400, Some("VALIDATION_ERROR"));

    // Another organisation sees none of it.
    let other = s.org("Other").await;
    let theirs = s.get(&other, "/v1/events").await.expect(200, None);
    assert_eq!(theirs.body["total_count"], 0);
    let event_id = &receiver.hits("/a")[0].event_id;
    s.get(&other, &format!("/v1/events/{event_id}"))
        .await
        .expect(404, Some("EVENT_NOT_FOUND"));
    s.post(
        &other,
        &format!("/v1/events/{event_id}/redeliver"),
        json!({}),
    )
    .await
    .expect(404, Some("EVENT_NOT_FOUND"));
    for path in [
        format!("/v1/webhook-endpoints/{a}"),
        format!("/v1/webhook-endpoints/{a}/deliveries"),
    ] {
        s.get(&other, &path)
            .await
            .expect(404, Some("WEBHOOK_ENDPOINT_NOT_FOUND"));
    }
    s.patch(
        &other,
        &format!("/v1/webhook-endpoints/{a}"),
        json!({"enabled": false}),
    )
    .await
    .expect(404, Some("WEBHOOK_ENDPOINT_NOT_FOUND"));
    s.post(
        &other,
        &format!("/v1/webhook-endpoints/{a}/rotate-secret"),
        json!({}),
    )
    .await
    .expect(404, Some("WEBHOOK_ENDPOINT_NOT_FOUND"));
    s.delete(&other, &format!("/v1/webhook-endpoints/{a}"))
        .await
        .expect(404, Some("WEBHOOK_ENDPOINT_NOT_FOUND"));
    let mine = s
        .get(&org, &format!("/v1/webhook-endpoints/{a}"))
        .await
        .expect(200, None);
    assert!(
        mine.body["data"].get("secret").is_none(),
        "the secret is shown only once"
    );

    // Redelivery (same event id) does not touch the caller's rate limit: of a key's budget,
    // only its own two requests are spent while the delivery happens.
    let limited = Org {
        id: org.id.clone(),
        key: s.key(&org.id, "all", Some(50)).await,
    };
    let before = remaining(
        &s.get(&limited, "/v1/webhook-endpoints")
            .await
            .expect(200, None),
    );
    let again = s
        .post(
            &limited,
            &format!("/v1/events/{event_id}/redeliver"),
            json!({"endpoint_id": a}),
        )
        .await
        .expect(202, None);
    assert_eq!(again.body["data"].as_array().unwrap().len(), 1);
    let hits = receiver.wait_for("/a", 3).await;
    assert_eq!(
        &hits[2].event_id, event_id,
        "a redelivery carries the same event id"
    );
    signed_by(&hits[2], &[&secret_a]);
    let after = remaining(
        &s.get(&limited, "/v1/webhook-endpoints")
            .await
            .expect(200, None),
    );
    assert_eq!(
        after,
        before - 2,
        "deliveries spent none of the key's budget"
    );
}

/// A receiver answering 500 twice, then 200: three attempts, one success, the same event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_attempts_are_retried_with_backoff() {
    let s = TestServer::start_with(|a| {
        a.webhooks.webhook_retry_base_ms = 100;
        a.queue.max_attempts = 1;
    })
    .await;
    let org = s.org_unlimited("Retries").await;
    let receiver = Receiver::start().await;
    receiver.plan(&[Answer::Status(500), Answer::Status(500)]);
    let (endpoint, secret) = create_endpoint(
        &s,
        &org,
        &format!("{}/hook", receiver.base),
        &["image_ad.failed"],
    )
    .await;
    let (cat, _) = ready(&s, &org).await;
    let ad = s
        .post(
            &org,
            "/v1/image-ads",
            ad_body(&cat, &refusing_reference().await),
        )
        .await
        .expect(202, None)
        .id();
    let hits = receiver.wait_for("/hook", 3).await;
    for h in &hits {
        signed_by(h, &[&secret]);
        assert_eq!(h.event_id, hits[0].event_id);
        assert_eq!(h.json()["data"]["object"]["id"], ad.as_str());
    }
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let d = loop {
        let d = deliveries(&s, &org, &endpoint).await;
        if d[0]["state"] != "pending" {
            break d;
        }
        assert!(tokio::time::Instant::now() < deadline, "{d:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["state"], "delivered", "{d:?}");
    assert_eq!(d[0]["attempts"], 3, "{d:?}");
    assert_eq!(d[0]["last_status_code"], 200, "{d:?}");
    assert!(d[0]["last_error"].is_null(), "{d:?}");
    assert!(d[0]["latency_ms"].as_i64().is_some(), "{d:?}");
    assert_eq!(receiver.hits("/hook").len(), 3, "no fourth attempt");
    let failed_only = s
        .get(
            &org,
            &format!("/v1/webhook-endpoints/{endpoint}/deliveries?state=failed"),
        )
        .await
        .expect(200, None);
    assert_eq!(failed_only.body["total_count"], 0);

    // A redirect is a failure (not followed): a redelivery answered 302 then 200 takes two
    // attempts.
    receiver.plan(&[Answer::Status(302)]);
    let event_id = hits[0].event_id.clone();
    let again = s
        .post(
            &org,
            &format!("/v1/events/{event_id}/redeliver"),
            json!(null),
        )
        .await
        .expect(202, None);
    let redelivery = again.body["data"][0]["id"].as_str().unwrap().to_string();
    let hits = receiver.wait_for("/hook", 5).await;
    assert!(hits[3..].iter().all(|h| h.event_id == event_id));
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let d = deliveries(&s, &org, &endpoint).await;
        let x = d.iter().find(|x| x["id"] == redelivery.as_str()).unwrap();
        if x["state"] == "delivered" {
            assert_eq!(x["attempts"], 2, "{x}");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{x}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A receiver that failed the first attempt is fixed and the event redelivered: the
/// redelivery is attempted at once though the automatic retry is scheduled ten minutes
/// away, and once it succeeds the scheduled retry is dropped, saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivery_is_attempted_at_once_and_drops_the_scheduled_retry() {
    let s = TestServer::start_with(|a| {
        a.webhooks.webhook_retry_base_ms = 600_000;
        a.queue.max_attempts = 1;
    })
    .await;
    let org = s.org_unlimited("Redeliver").await;
    let receiver = Receiver::start().await;
    receiver.plan(&[Answer::Status(500)]);
    let (endpoint, _) = create_endpoint(
        &s,
        &org,
        &format!("{}/hook", receiver.base),
        &["image_ad.failed"],
    )
    .await;
    let (cat, _) = ready(&s, &org).await;
    s.post(
        &org,
        "/v1/image-ads",
        ad_body(&cat, &refusing_reference().await),
    )
    .await
    .expect(202, None);
    let first = receiver.wait_for("/hook", 1).await;
    let event_id = first[0].event_id.clone();
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let original = loop {
        let d = deliveries(&s, &org, &endpoint).await;
        if d[0]["attempts"] == 1 && d[0]["last_status_code"] == 500 {
            break d[0].clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "{d:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(original["state"], "pending", "{original}");
    assert!(original["next_attempt_at"].is_string(), "{original}");

    let again = s
        .post(&org, &format!("/v1/events/{event_id}/redeliver"), json!({}))
        .await
        .expect(202, None);
    let redelivery = again.body["data"][0]["id"].as_str().unwrap().to_string();
    let hits = receiver.wait_for("/hook", 2).await;
    assert_eq!(hits[1].event_id, event_id);
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let d = loop {
        let d = deliveries(&s, &org, &endpoint).await;
        let dropped = d
            .iter()
            .find(|x| x["id"] == original["id"])
            .is_some_and(|x| x["state"] != "pending");
        if dropped {
            break d;
        }
        assert!(tokio::time::Instant::now() < deadline, "{d:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let red = d.iter().find(|x| x["id"] == redelivery.as_str()).unwrap();
    assert_eq!(red["state"], "delivered", "{red}");
    assert_eq!(red["attempts"], 1, "{red}");
    let old = d.iter().find(|x| x["id"] == original["id"]).unwrap();
    assert_eq!(old["state"], "failed", "{old}");
    assert_eq!(old["attempts"], 1, "the scheduled retry never ran: {old}");
    assert!(old["next_attempt_at"].is_null(), "{old}");
    assert!(
        old["last_error"].as_str().unwrap().contains(&redelivery),
        "{old}"
    );
    assert_eq!(receiver.hits("/hook").len(), 2);
}

/// Without --allow-private-urls: https only, public addresses only, checked on create,
/// update and again at delivery. Event types are checked; scopes apply; the endpoint's
/// life cycle (update, disable, delete) works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoint_urls_types_scopes_and_life_cycle() {
    let s = TestServer::start_with(|a| {
        a.allow_private_urls = false;
        a.webhooks.webhook_retry_base_ms = 100;
    })
    .await;
    let org = s.org_unlimited("Rules").await;
    for (url, why) in [
        ("http://8.8.8.8/hook", "https"),
        ("https://127.0.0.1/hook", "not a public address"),
        ("https://10.1.2.3/hook", "not a public address"),
        ("https://[::1]/hook", "not a public address"),
        ("https://localhost:8443/hook", "localhost"),
        ("not a url", "absolute"),
    ] {
        let r = s
            .post(
                &org,
                "/v1/webhook-endpoints",
                json!({"url": url, "events": ["image_ad.completed"]}),
            )
            .await
            .expect(400, Some("VALIDATION_ERROR"));
        let d = &r.body["error"]["details"][0];
        assert_eq!(d["field"], "url", "{}", r.body);
        assert!(
            d["message"].as_str().unwrap().contains(why),
            "{url}: {}",
            r.body
        );
    }
    for (events, field) in [
        (json!(["video_ad.completed"]), "events[0]"),
        (
            json!(["image_ad.completed", "swipe_file.archived"]),
            "events[1]",
        ),
        (json!([]), "events"),
    ] {
        let r = s
            .post(
                &org,
                "/v1/webhook-endpoints",
                json!({"url": "https://8.8.8.8/hook", "events": events}),
            )
            .await
            .expect(400, Some("VALIDATION_ERROR"));
        assert_eq!(r.body["error"]["details"][0]["field"], field, "{}", r.body);
        assert!(
            r.body["error"]["details"][0]["message"]
                .as_str()
                .unwrap()
                .contains("image_ad.completed, image_ad.failed")
        );
    }

    let (id, _) = create_endpoint(&s, &org, "https://8.8.8.8/hook", &["image_ad.completed"]).await;
    assert!(id.starts_with("we_"));
    s.patch(
        &org,
        &format!("/v1/webhook-endpoints/{id}"),
        json!({"url": "https://192.168.1.1/x"}),
    )
    .await
    .expect(400, Some("VALIDATION_ERROR"));
    let updated = s
        .patch(
            &org,
            &format!("/v1/webhook-endpoints/{id}"),
            json!({"description": "ops", "events": ["image_ad.failed", "image_ad.failed"], "enabled": false}),
        )
        .await
        .expect(200, None);
    assert_eq!(updated.body["data"]["events"], json!(["image_ad.failed"]));
    assert_eq!(updated.body["data"]["enabled"], false);
    assert_eq!(updated.body["data"]["description"], "ops");
    let list = s.get(&org, "/v1/webhook-endpoints").await.expect(200, None);
    assert_eq!(list.body["total_count"], 1);
    assert!(list.body["data"][0].get("secret").is_none());

    // Scopes: webhooks:read reads, cannot write; image_ads:* alone cannot read.
    let reader = Org {
        id: org.id.clone(),
        key: s.key(&org.id, "webhooks:read", None).await,
    };
    s.get(&reader, "/v1/webhook-endpoints")
        .await
        .expect(200, None);
    s.get(&reader, "/v1/events").await.expect(200, None);
    s.post(
        &reader,
        "/v1/webhook-endpoints",
        json!({"url": "https://8.8.8.8/", "events": ["image_ad.failed"]}),
    )
    .await
    .expect(403, Some("FORBIDDEN"));
    let ads_only = Org {
        id: org.id.clone(),
        key: s.key(&org.id, "image_ads:read,image_ads:write", None).await,
    };
    s.get(&ads_only, "/v1/webhook-endpoints")
        .await
        .expect(403, Some("FORBIDDEN"));
    s.get(&ads_only, "/v1/events")
        .await
        .expect(403, Some("FORBIDDEN"));

    // Checked again at delivery: an endpoint whose stored URL now points at loopback (as
    // after a DNS change) gets nothing; the attempt fails naming why.
    let (guarded, _) =
        create_endpoint(&s, &org, "https://8.8.8.8/guarded", &["image_ad.failed"]).await;
    // Another endpoint has been failing for 4 days: its next failure disables it.
    let (dying, _) = create_endpoint(&s, &org, "https://8.8.8.8/dying", &["image_ad.failed"]).await;
    adforge_api::store::query(
        "UPDATE webhook_endpoints SET url = 'https://127.0.0.1:9/guarded' WHERE id IN (?, ?)",
    )
    .bind(&guarded)
    .bind(&dying)
    .execute(&s.db.write)
    .await
    .unwrap();
    adforge_api::store::query("UPDATE webhook_endpoints SET failing_since = ? WHERE id = ?")
        .bind(adforge_api::timestamp::seconds_ago(4 * 24 * 3600))
        .bind(&dying)
        .execute(&s.db.write)
        .await
        .unwrap();
    {
        let mut tx = s.db.write.begin().await.unwrap();
        adforge_api::webhooks::record(
            &mut tx,
            &org.id,
            "image_ad.failed",
            "ia_test",
            json!({"id": "ia_test"}),
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
    }
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let d = deliveries(&s, &org, &guarded).await;
        if let Some(e) = d.first().and_then(|x| x["last_error"].as_str()) {
            assert!(e.contains("not a public address"), "{d:?}");
            assert_eq!(d[0]["state"], "pending", "retried later: {d:?}");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{d:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let e = s
            .get(&org, &format!("/v1/webhook-endpoints/{dying}"))
            .await
            .expect(200, None);
        if e.body["data"]["enabled"] == false {
            let reason = e.body["data"]["disabled_reason"].as_str().unwrap();
            assert!(reason.contains("failed"), "{}", e.body);
            let d = deliveries(&s, &org, &dying).await;
            assert_eq!(d[0]["state"], "failed", "no more retries: {d:?}");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{}", e.body);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Re-enabling clears the reason.
    let back = s
        .patch(
            &org,
            &format!("/v1/webhook-endpoints/{dying}"),
            json!({"enabled": true}),
        )
        .await
        .expect(200, None);
    assert!(
        back.body["data"]["disabled_reason"].is_null(),
        "{}",
        back.body
    );
    // The disabled endpoint got no delivery of that event.
    assert!(deliveries(&s, &org, &id).await.is_empty());

    s.delete(&org, &format!("/v1/webhook-endpoints/{id}"))
        .await
        .expect(200, None);
    s.get(&org, &format!("/v1/webhook-endpoints/{id}"))
        .await
        .expect(404, Some("WEBHOOK_ENDPOINT_NOT_FOUND"));
}

/// An organisation's swipe-file upload reports `swipe_file.ready` once ingest finishes:
/// signed, once, with the design exactly as GET shows it; an endpoint subscribed only to
/// `swipe_file.failed` gets nothing, and another organisation's endpoint gets nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swipe_file_upload_reports_swipe_file_ready() {
    let s = TestServer::start().await;
    let org = s.org_unlimited("Swipe hooks").await;
    let other = s.org_unlimited("Someone else").await;
    let receiver = Receiver::start().await;
    let (_, secret) = create_endpoint(
        &s,
        &org,
        &format!("{}/sf", receiver.base),
        &["swipe_file.ready", "swipe_file.failed"],
    )
    .await;
    create_endpoint(
        &s,
        &org,
        &format!("{}/failed-only", receiver.base),
        &["swipe_file.failed"],
    )
    .await;
    create_endpoint(
        &s,
        &other,
        &format!("{}/other", receiver.base),
        &["swipe_file.ready"],
    )
    .await;
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../assets/samples/coffee.png"
    ))
    .unwrap();
    let id = crate::swipe::upload_swipe(&s, &org, bytes)
        .await
        .expect(202, None)
        .id();
    let design = crate::swipe::wait_ready(&s, &org, &id).await;
    assert_eq!(design["status"], "ready", "{design}");
    let hits = receiver.wait_for("/sf", 1).await;
    assert_eq!(hits.len(), 1, "one event per finished ingest");
    let hit = &hits[0];
    assert_eq!(signed_by(hit, &[&secret]), vec![0]);
    let event = hit.json();
    assert_eq!(event["type"], "swipe_file.ready", "{event}");
    assert_eq!(event["id"], hit.event_id.as_str());
    let got = s
        .get(&org, &format!("/v1/swipe-files/{id}"))
        .await
        .expect(200, None);
    assert_eq!(
        event["data"]["object"], got.body["data"],
        "data.object is the swipe file as GET shows it"
    );
    let logged = s
        .get(&org, &format!("/v1/events/{}", hit.event_id))
        .await
        .expect(200, None);
    assert_eq!(logged.body["data"], event);
    // The event is delivered by now; nothing else was sent anywhere.
    assert!(receiver.hits("/failed-only").is_empty());
    assert!(receiver.hits("/other").is_empty());
    assert_eq!(receiver.hits("/sf").len(), 1);
}
