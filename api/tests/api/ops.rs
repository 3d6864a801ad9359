//! The operator's endpoints over real HTTP: `/healthz`, `/readyz` following a real
//! `redis-server` going away and coming back, `/metrics` behind its token and on its own
//! listener, and a real `adforge serve` process finishing an upload in flight when SIGTERM
//! arrives.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use reqwest::Method;
use serde_json::Value;

use crate::support::{Process, TestServer, eventually, free_port, png};

#[path = "../../../worker/tests/queue/redis_server.rs"]
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
    sqlx::query("UPDATE wallets SET balance_cents = balance_cents + 1000 WHERE org_id = ?")
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

/// A multipart upload of `file`, as raw HTTP/1.1 pieces: the head (asking for
/// `100 Continue`) and the body.
fn upload_request(port: u16, key: &str, file: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let boundary = "adforgeboundary7MA4YWxkTrZu0gW";
    let mut body = Vec::new();
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.png\"\r\nContent-Type: image/png\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(file);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let head = format!(
        "POST /v1/images HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-API-Key: {key}\r\n\
         Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {}\r\n\
         Expect: 100-continue\r\nConnection: close\r\n\r\n",
        body.len()
    );
    (head.into_bytes(), body)
}

/// Reads from `stream` until `needle` has arrived; returns everything read.
fn read_until(stream: &mut TcpStream, needle: &[u8]) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(needle.len()).any(|w| w == needle) {
        let n = stream.read(&mut buf).expect("read from the server");
        assert!(
            n > 0,
            "connection closed; got {:?}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
    }
    got
}

/// A real `adforge serve` (no workers, no default collection) with its bootstrap key and its
/// log lines on a channel.
fn serve_process(
    dir: &std::path::Path,
    port: u16,
    extra: &[&str],
) -> (Process, String, std::sync::mpsc::Receiver<String>) {
    let mut server = Process(
        Command::new(env!("CARGO_BIN_EXE_adforge"))
            .arg("serve")
            .arg("--data-dir")
            .arg(dir)
            .args(["--listen", &format!("127.0.0.1:{port}"), "--log", "info"])
            .args(["--workers", "0"])
            .args(["--default-collection", "/nonexistent-default-collection"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("adforge serve starts"),
    );
    let mut line = String::new();
    BufReader::new(server.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let boot: Value = serde_json::from_str(&line).expect("bootstrap key on stdout");
    let key = boot["api_key"]["key"].as_str().unwrap().to_string();
    let (log_tx, log_rx) = std::sync::mpsc::channel::<String>();
    let stderr = server.0.stderr.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(stderr).lines().map_while(Result::ok) {
            if log_tx.send(l).is_err() {
                break;
            }
        }
    });
    (server, key, log_rx)
}

/// Connects, sends the head of an upload and half its body, and returns once the server
/// is reading that body (`100 Continue`): the request is in flight.
fn half_sent_upload(port: u16, key: &str, file: &[u8]) -> (TcpStream, Vec<u8>) {
    let (head, body) = upload_request(port, key, file);
    let mut conn = None;
    for _ in 0..200 {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(c) => {
                conn = Some(c);
                break;
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    let mut conn = conn.expect("the server listens");
    conn.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    conn.write_all(&head).unwrap();
    read_until(&mut conn, b"100 Continue\r\n\r\n");
    let half = body.len() / 2;
    conn.write_all(&body[..half]).unwrap();
    (conn, body[half..].to_vec())
}

fn sigterm(server: &Process, log: &std::sync::mpsc::Receiver<String>) {
    let pid = server.0.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    loop {
        let l = log
            .recv_timeout(Duration::from_secs(30))
            .expect("the server logs the shutdown");
        if l.contains("shutting down") {
            break;
        }
    }
}

/// SIGTERM while an upload is half sent: the server stops accepting at once, the upload
/// still completes and is stored, and then the process exits cleanly.
#[test]
fn sigterm_lets_an_upload_in_flight_finish() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let (mut server, key, log) = serve_process(dir.path(), port, &[]);
    let file = png(1200, 900, [20, 120, 220, 255]);
    let (mut conn, rest) = half_sent_upload(port, &key, &file);
    sigterm(&server, &log);

    // It stops accepting: new connections are refused once the listener is closed.
    let mut refused = false;
    for _ in 0..200 {
        if TcpStream::connect(("127.0.0.1", port)).is_err() {
            refused = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(refused, "the server kept accepting after SIGTERM");

    // The rest of the upload, and its answer.
    conn.write_all(&rest).unwrap();
    let mut answer = Vec::new();
    conn.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer).to_string();
    let final_head = answer
        .split("\r\n\r\n")
        .find(|part| part.starts_with("HTTP/1.1 ") && !part.starts_with("HTTP/1.1 100"))
        .unwrap_or("");
    assert!(
        final_head.starts_with("HTTP/1.1 201"),
        "the upload in flight did not complete: {answer}"
    );
    let json_start = answer.find("{\"data\"").expect("a JSON body");
    let created: Value =
        serde_json::from_str(answer[json_start..].trim_end()).expect("the image as JSON");
    assert_eq!(created["data"]["width"], 1200, "{created}");

    // Then the process exits by itself, successfully.
    let status = server.0.wait().unwrap();
    assert!(status.success(), "adforge serve exited with {status}");
    // The stored original is in the blob folder it was written to.
    let id = created["data"]["id"].as_str().unwrap();
    let stored: Vec<_> = std::fs::read_dir(dir.path().join("blobs").join("images").join(id))
        .unwrap()
        .collect();
    assert!(!stored.is_empty(), "nothing stored for {id}");
}

/// The bound: a request whose client stalls does not keep the process alive past
/// `--shutdown-timeout-secs`; it exits cleanly, and the stalled request gets no answer.
#[test]
fn sigterm_exits_after_the_shutdown_timeout_despite_a_stalled_request() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let (mut server, key, log) = serve_process(dir.path(), port, &["--shutdown-timeout-secs", "1"]);
    let file = png(300, 200, [200, 20, 20, 255]);
    let (mut conn, _rest) = half_sent_upload(port, &key, &file);
    sigterm(&server, &log);
    // Never sending the rest: only the bound can end the process. A hang is caught by the
    // deadline, which a working bound is nowhere near.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = server.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "adforge serve did not exit after its shutdown timeout"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "adforge serve exited with {status}");
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer);
    assert!(
        !String::from_utf8_lossy(&answer).contains("HTTP/1.1 201"),
        "the stalled upload cannot have been stored"
    );
}
