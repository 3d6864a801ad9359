//! The operator's endpoints over real HTTP: `/healthz`, `/readyz` following a real
//! `redis-server` going away and coming back, and `/metrics` behind its token and on its own
//! listener. Graceful shutdown of a real `adforge serve` process is tested in the
//! process-level crate (`tests/e2e/shutdown.rs`).

use std::time::Duration;

use reqwest::Method;

use crate::support::{TestServer, eventually, free_port, png};

#[path = "../../../../worker/tests/queue/redis_server.rs"]
#[allow(dead_code, clippy::duplicate_mod)]
mod redis_server;

/// The value of the sample `name{labels}` in a text exposition, 0 when absent.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0.0)
}

async fn metrics_text(s: &TestServer, token: &str) -> String {
    let res = s
        .request(Method::GET, "/metrics")
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    res.text().await.unwrap()
}

#[tokio::test]
async fn health_readiness_and_metrics_outside_v1() {
    let s = TestServer::start_with(|a| a.ops.metrics_token = Some("scrape-secret".into())).await;

    // No API key anywhere: these are outside /v1.
    let h = s.call(Method::GET, "/healthz", None, None).await;
    assert_eq!(h.status, 200);
    assert_eq!(h.body, serde_json::json!({"status": "ok"}));
    let r = s.call(Method::GET, "/readyz", None, None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["status"], "ready");
    assert_eq!(r.body["checks"]["database"]["status"], "ok");
    assert_eq!(r.body["checks"]["blob_store"]["status"], "ok");
    assert_eq!(r.body["checks"]["redis"]["status"], "not_configured");

    // The token guards /metrics on the public address.
    s.call(Method::GET, "/metrics", None, None)
        .await
        .expect(401, Some("UNAUTHORIZED"));
    let wrong = crate::support::send(s.request(Method::GET, "/metrics").bearer_auth("nope")).await;
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.header("www-authenticate"), Some("Bearer"));

    // A request made here moves its counter by exactly one (this server's own registry).
    let org = s.org("Metered").await;
    let series =
        "adforge_http_requests_total{method=\"GET\",route=\"/v1/brands/{id}\",status=\"404\"}";
    let before = sample(&metrics_text(&s, "scrape-secret").await, series);
    s.get(&org, "/v1/brands/br_doesnotexist")
        .await
        .expect(404, Some("BRAND_NOT_FOUND"));
    let text = metrics_text(&s, "scrape-secret").await;
    assert_eq!(sample(&text, series), before + 1.0, "{text}");
    assert!(text.contains("# TYPE adforge_http_request_duration_seconds histogram"));
    assert!(text.contains(
        "adforge_http_request_duration_seconds_count{method=\"GET\",route=\"/v1/brands/{id}\",status=\"404\"}"
    ));
    assert!(text.contains("adforge_queue_jobs 0"), "{text}");
    assert!(text.contains("adforge_job_outbox_rows 0"), "{text}");

    // Without a token the public /metrics does not exist; the operator's routes are not
    // part of the /v1 OpenAPI document either.
    let plain = TestServer::start().await;
    plain
        .call(Method::GET, "/metrics", None, None)
        .await
        .expect(404, Some("NOT_FOUND"));
    let doc = plain.call(Method::GET, "/openapi.json", None, None).await;
    for p in ["/healthz", "/readyz", "/metrics"] {
        assert!(doc.body["paths"].get(p).is_none(), "{p} in the document");
    }
}

/// A completed ad moves the job, wallet and render series, each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_a_completed_ad_its_charge_and_its_render_stages() {
    let s = TestServer::start_with(|a| a.ops.metrics_token = Some("t".into())).await;
    let org = s.org("Counted").await;
    let c = s.catalog(&org).await;
    let shot = s
        .upload(
            &org,
            png(64, 64, [200, 40, 40, 255]),
            &[("image_type", "product")],
        )
        .await
        .expect(201, None);
    s.patch(
        &org,
        &format!("/v1/product-variants/{}", c.variant),
        serde_json::json!({"image_ids": [shot.id()]}),
    )
    .await
    .expect(200, None);
    let reference = s
        .upload(&org, crate::support::jpeg(120, 150, [30, 60, 90]), &[])
        .await
        .expect(201, None);
    adforge_api::store::query(
        "UPDATE wallets SET balance_cents = balance_cents + 1000 WHERE org_id = ?",
    )
    .bind(&org.id)
    .execute(&s.db.write)
    .await
    .unwrap();
    let ad = s
        .post(
            &org,
            "/v1/image-ads",
            serde_json::json!({"reference_ad_url": reference.body["data"]["src"], "brand_id": c.brand,
                "product_id": c.product, "audience_id": c.audience}),
        )
        .await
        .expect(202, None)
        .id();
    let path = format!("/v1/image-ads/{ad}");
    // A deadline only a hang reaches; not a timing assertion.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while s.get(&org, &path).await.body["data"]["status"] == "processing" {
        assert!(
            std::time::Instant::now() < deadline,
            "the ad did not settle"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let done = s.get(&org, &path).await.body["data"].clone();
    assert_eq!(done["status"], "completed", "{done}");

    let text = metrics_text(&s, "t").await;
    let one = |series: &str| assert_eq!(sample(&text, series), 1.0, "{series}\n{text}");
    one("adforge_jobs_total{kind=\"image_ad\",outcome=\"completed\"}");
    one("adforge_job_duration_seconds_count{kind=\"image_ad\"}");
    one("adforge_wallet_operations_total{operation=\"capture\"}");
    assert_eq!(
        sample(&text, "adforge_wallet_cents_total{operation=\"capture\"}"),
        100.0,
        "a flat ad costs $1: {text}"
    );
    for stage in ["images", "layout", "scene", "raster", "encode"] {
        one(&format!(
            "adforge_render_stage_seconds_count{{backend=\"cpu\",stage=\"{stage}\"}}"
        ));
    }
    assert_eq!(
        sample(
            &text,
            "adforge_wallet_operations_total{operation=\"release\"}"
        ),
        0.0
    );
}

#[tokio::test]
async fn metrics_listen_serves_metrics_without_a_token() {
    let port = free_port();
    let s = TestServer::start_with(|a| {
        a.ops.metrics_listen = Some(format!("127.0.0.1:{port}").parse().unwrap());
    })
    .await;
    let org = s.org("Private scrape").await;
    s.get(&org, "/v1/brands").await.expect(200, None);
    let http = reqwest::Client::new();
    let res = http
        .get(format!("http://127.0.0.1:{port}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let text = res.text().await.unwrap();
    assert_eq!(
        sample(
            &text,
            "adforge_http_requests_total{method=\"GET\",route=\"/v1/brands\",status=\"200\"}"
        ),
        1.0,
        "{text}"
    );
    // Only the operator's routes live there.
    let res = http
        .get(format!("http://127.0.0.1:{port}/v1/brands"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    let res = http
        .get(format!("http://127.0.0.1:{port}/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_follows_redis_down_and_back() {
    let mut redis = redis_server::RedisServer::start();
    let url = redis.url();
    let s = TestServer::start_with(|a| {
        a.redis_url = Some(url);
        a.workers = 0;
    })
    .await;
    let ready = s.call(Method::GET, "/readyz", None, None).await;
    assert_eq!(ready.status, 200, "{}", ready.body);
    assert_eq!(ready.body["checks"]["redis"]["status"], "ok");

    redis.kill();
    let down = s.call(Method::GET, "/readyz", None, None).await;
    assert_eq!(down.status, 503, "{}", down.body);
    assert_eq!(down.body["status"], "unavailable");
    assert_eq!(down.body["error"]["code"], "SERVICE_UNAVAILABLE");
    assert!(
        down.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("redis"),
        "{}",
        down.body
    );
    let state = down.body["checks"]["redis"]["status"].as_str().unwrap();
    assert!(matches!(state, "down" | "timeout"), "{}", down.body);
    assert_eq!(down.body["checks"]["database"]["status"], "ok");
    assert_eq!(down.body["checks"]["blob_store"]["status"], "ok");
    // Liveness does not depend on Redis.
    assert_eq!(
        s.call(Method::GET, "/healthz", None, None).await.status,
        200
    );

    // Same port, same data: the connection manager reconnects by itself.
    redis.restart();
    assert!(
        eventually(|| async { s.call(Method::GET, "/readyz", None, None).await.status == 200 })
            .await,
        "/readyz did not come back after redis-server restarted"
    );
}
