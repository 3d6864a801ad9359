//! Rate limits, Idempotency-Key, and the 15 MiB body limit.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::support::{TestServer, send};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_headers_429_and_retry_after() {
    let s = TestServer::start().await;
    let org = s.org("Rl").await;
    let key = s.key(&org.id, "all", Some(5)).await;
    for i in 0..5 {
        // Errors count and carry headers too: one of the five is a 404.
        let path = if i == 2 {
            "/v1/brands/brand_missing"
        } else {
            "/v1/brands"
        };
        let r = s.call(Method::GET, path, Some(&key), None).await;
        assert_eq!(r.header("ratelimit-limit"), Some("5"));
        assert_eq!(
            r.header("ratelimit-remaining"),
            Some((4 - i).to_string().as_str())
        );
        let reset: u64 = r.header("ratelimit-reset").unwrap().parse().unwrap();
        assert!((1..=60).contains(&reset));
    }
    let r = s
        .call(Method::GET, "/v1/brands", Some(&key), None)
        .await
        .expect(429, Some("RATE_LIMIT_EXCEEDED"));
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
    assert_eq!(r.header("ratelimit-remaining"), Some("0"));
    let msg = r.body["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("5 requests per 60 seconds") && msg.contains(&format!("{retry} seconds")),
        "{msg}"
    );
    // Other keys, even of the same organisation, are not affected.
    s.get(&org, "/v1/brands").await.expect(200, None);
    // The default limit is 100.
    assert_eq!(
        s.get(&org, "/v1/brands").await.header("ratelimit-limit"),
        Some("100")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_search_counts_once() {
    let s = TestServer::start().await;
    let org = s.org("Rl2").await;
    let key = s.key(&org.id, "all", Some(3)).await;
    let r = s
        .call(
            Method::GET,
            "/v1/search?query=a&types=product,product_variant,audience",
            Some(&key),
            None,
        )
        .await;
    assert_eq!(r.expect(200, None).header("ratelimit-remaining"), Some("2"));
}

fn idem(
    s: &TestServer,
    key: &str,
    method: Method,
    path: &str,
    idem_key: &str,
    body: serde_json::Value,
) -> reqwest::RequestBuilder {
    s.request(method, path)
        .header("x-api-key", key)
        .header("idempotency-key", idem_key)
        .json(&body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_replay_mismatch_and_conflict() {
    let s = TestServer::start().await;
    let org = s.org("Idem").await;
    let first = send(idem(
        &s,
        &org.key,
        Method::POST,
        "/v1/brands",
        "k-1",
        json!({"name": "Once"}),
    ))
    .await
    .expect(201, None);
    assert!(first.header("idempotent-replayed").is_none());
    let again = send(idem(
        &s,
        &org.key,
        Method::POST,
        "/v1/brands",
        "k-1",
        json!({"name": "Once"}),
    ))
    .await
    .expect(201, None);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(
        again.body, first.body,
        "the replay is the first response, byte for byte"
    );
    let list = s.get(&org, "/v1/brands").await.expect(200, None);
    assert_eq!(list.body["total_count"], 1, "the retry created nothing");

    // Same key, different body → 400 naming the header.
    let r = send(idem(
        &s,
        &org.key,
        Method::POST,
        "/v1/brands",
        "k-1",
        json!({"name": "Other"}),
    ))
    .await
    .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(r.body["error"]["details"][0]["field"], "Idempotency-Key");
    // Keys are scoped to the API key: another key may use the same value.
    let other_key = s.key(&org.id, "all", None).await;
    send(idem(
        &s,
        &other_key,
        Method::POST,
        "/v1/brands",
        "k-1",
        json!({"name": "Other"}),
    ))
    .await
    .expect(201, None);

    // Client errors are kept and replayed too.
    let bad = send(idem(
        &s,
        &org.key,
        Method::POST,
        "/v1/brands",
        "k-2",
        json!({"name": ""}),
    ))
    .await
    .expect(400, Some("VALIDATION_ERROR"));
    let bad2 = send(idem(
        &s,
        &org.key,
        Method::POST,
        "/v1/brands",
        "k-2",
        json!({"name": ""}),
    ))
    .await
    .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(bad2.header("idempotent-replayed"), Some("true"));
    assert_eq!(bad.body, bad2.body);

    // PATCH honours it as well.
    let id = first.id();
    let p1 = send(idem(
        &s,
        &org.key,
        Method::PATCH,
        &format!("/v1/brands/{id}"),
        "k-3",
        json!({"description": "d"}),
    ))
    .await
    .expect(200, None);
    let p2 = send(idem(
        &s,
        &org.key,
        Method::PATCH,
        &format!("/v1/brands/{id}"),
        "k-3",
        json!({"description": "d"}),
    ))
    .await
    .expect(200, None);
    assert_eq!(p1.body, p2.body);

    // A claim that an older version left in SQL (its process may be long dead) is never
    // waited out: in-flight claims live in the running process only.
    let key_id: String =
        adforge_api::store::query_scalar("SELECT id FROM api_keys WHERE secret_hash = ?")
            .bind(adforge_api::auth::hash_key(&org.key))
            .fetch_one(&s.db.read)
            .await
            .unwrap();
    adforge_api::store::query("INSERT INTO idempotency_keys (api_key_id, idem_key, request_hash, state, created_at) VALUES (?, 'k-4', 'h', 'in_flight', ?)")
        .bind(&key_id)
        .bind(adforge_api::timestamp::now())
        .execute(&s.db.write)
        .await
        .unwrap();
    send(idem(
        &s,
        &org.key,
        Method::POST,
        "/v1/brands",
        "k-4",
        json!({"name": "Racing"}),
    ))
    .await
    .expect(201, None);

    // Malformed keys are refused.
    let long = "x".repeat(256);
    send(idem(
        &s,
        &org.key,
        Method::POST,
        "/v1/brands",
        &long,
        json!({"name": "L"}),
    ))
    .await
    .expect(400, Some("VALIDATION_ERROR"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truly_concurrent_retries_run_once() {
    let s = TestServer::start().await;
    let org = s.org("Race").await;
    let mut handles = Vec::new();
    for _ in 0..6 {
        let req = idem(
            &s,
            &org.key,
            Method::POST,
            "/v1/brands",
            "same",
            json!({"name": "Race"}),
        );
        handles.push(tokio::spawn(send(req)));
    }
    let mut created = 0;
    for h in handles {
        let r = h.await.unwrap();
        match r.status.as_u16() {
            201 => created += 1,
            409 => assert_eq!(r.code(), "IDEMPOTENCY_CONFLICT"),
            other => panic!("unexpected {other}: {}", r.body),
        }
    }
    assert!(created >= 1);
    assert_eq!(
        s.get(&org, "/v1/brands").await.body["total_count"],
        1,
        "exactly one brand whatever the interleaving"
    );
}

fn read_response(stream: &mut TcpStream) -> String {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let mut out = Vec::new();
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
        if out.windows(4).any(|w| w == b"\r\n\r\n") && out.ends_with(b"}") {
            break;
        }
    }
    String::from_utf8_lossy(&out).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_15_mib_get_413_without_being_buffered() {
    let s = TestServer::start().await;
    let org = s.org("Big").await;
    let addr = s.base.trim_start_matches("http://").to_string();
    let key = org.key.clone();
    let (declared, streamed, streamed_bytes) = tokio::task::spawn_blocking(move || {
        // 1. A declared Content-Length over the limit is refused before any body byte.
        let mut c = TcpStream::connect(&addr).unwrap();
        write!(c, "POST /v1/images HTTP/1.1\r\nHost: x\r\nX-API-Key: {key}\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 104857600\r\n\r\n").unwrap();
        let declared = read_response(&mut c);

        // 2. A chunked body is cut off once it passes the limit: the server answers while
        //    the client is still sending, long before 64 MiB went out.
        let mut c = TcpStream::connect(&addr).unwrap();
        write!(c, "POST /v1/brands HTTP/1.1\r\nHost: x\r\nX-API-Key: {key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap();
        // Read on another thread while writing, so the answer is seen before the server
        // closes the connection on the unread rest.
        let mut reader = c.try_clone().unwrap();
        let answered = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = answered.clone();
        let reading = std::thread::spawn(move || {
            let r = read_response(&mut reader);
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            r
        });
        let chunk = vec![b' '; 64 * 1024];
        let mut sent = 0usize;
        c.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
        while sent < 64 * 1024 * 1024 && !answered.load(std::sync::atomic::Ordering::SeqCst) {
            if write!(c, "{:x}\r\n", chunk.len()).and_then(|_| c.write_all(&chunk)).and_then(|_| c.write_all(b"\r\n")).is_err() {
                break;
            }
            sent += chunk.len();
        }
        let streamed = reading.join().unwrap();
        (declared, streamed, sent)
    })
    .await
    .unwrap();
    for resp in [&declared, &streamed] {
        assert!(resp.starts_with("HTTP/1.1 413"), "{resp}");
        assert!(resp.contains("PAYLOAD_TOO_LARGE"), "{resp}");
    }
    assert!(
        streamed_bytes < 64 * 1024 * 1024,
        "the server kept reading past the limit"
    );
    // Just under the limit is accepted (and then judged on its content).
    let body = vec![b'x'; 15 * 1024 * 1024 - 1024];
    let r = s.upload(&org, body, &[]).await;
    assert_eq!(r.code(), "IMAGE_INVALID_FORMAT", "{}", r.body);
}
