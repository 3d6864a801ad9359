//! Every error the server sends is our `{error, meta}` JSON with a request id, including
//! those the framework would answer itself: paths that are not UTF-8 once decoded,
//! requests hyper cannot parse (sent over a raw socket), and rejected bodies.

use std::io::{Read, Write};

use reqwest::Method;
use serde_json::Value;

use crate::support::{Reply, TestServer, send};

/// Asserts `r` is our error JSON with `status` and `code` and a request id that matches
/// `X-Request-Id`.
#[track_caller]
fn assert_ours(r: &Reply, status: u16, code: &str) {
    assert_eq!(r.status.as_u16(), status, "{:?} {}", r.headers, r.body);
    assert_eq!(
        r.header("content-type"),
        Some("application/json"),
        "{}",
        r.body
    );
    assert_eq!(r.code(), code, "{}", r.body);
    let rid = r.body["meta"]["request_id"].as_str().unwrap_or("");
    assert!(rid.starts_with("req_"), "{}", r.body);
    assert_eq!(r.header("x-request-id"), Some(rid));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_that_are_not_utf8_answer_our_json() {
    let s = TestServer::start().await;
    let org = s.org("Utf8").await;
    let r = s.get(&org, "/v1/image-ads/%ff/versions/x").await;
    assert_ours(&r, 400, "VALIDATION_ERROR");
    assert_eq!(r.body["error"]["details"][0]["field"], "id", "{}", r.body);
    let r = s.get(&org, "/v1/image-ads/ia_x/versions/%c0%ae").await;
    assert_ours(&r, 400, "VALIDATION_ERROR");
    assert_eq!(
        r.body["error"]["details"][0]["field"], "version_id",
        "{}",
        r.body
    );
    for path in ["/v1/brands/%ff", "/v1/image-ads/%ff", "/v1/images/%fe%ff"] {
        assert_ours(&s.get(&org, path).await, 400, "VALIDATION_ERROR");
    }
    // Files are public: any unusable path is the same 404 as an unknown file.
    for path in [
        "/files/%c0%ae%c0%ae/x",
        "/files/%ff",
        "/files/images/img_nope/x.png",
    ] {
        let r = send(s.request(Method::GET, path)).await;
        assert_ours(&r, 404, "NOT_FOUND");
    }
}

/// Sends `request` as raw bytes and returns the status, lower-cased headers and body.
fn raw(base: &str, request: &[u8]) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let addr = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    stream.write_all(request).unwrap();
    let mut out = Vec::new();
    // The server closes the connection after these answers; a keep-alive answer ends
    // when its Content-Length is read.
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
        if let Some(end) = out.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&out[..end]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .and_then(|v| v.trim().parse::<usize>().ok());
            if len.is_some_and(|len| out.len() >= end + 4 + len) {
                break;
            }
        }
    }
    let end = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(&out)));
    let head = String::from_utf8_lossy(&out[..end]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap()[9..12].parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
        .collect();
    (status, headers, out[end + 4..].to_vec())
}

/// Asserts a raw answer is our error JSON with `status` and `code`.
#[track_caller]
fn assert_raw_ours(answer: &(u16, Vec<(String, String)>, Vec<u8>), status: u16, code: &str) {
    let (got, headers, body) = answer;
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let body: Value = serde_json::from_slice(body).unwrap_or_else(|_| {
        panic!(
            "status {got}, headers {headers:?}, body not JSON: {:?}",
            String::from_utf8_lossy(body)
        )
    });
    assert_eq!(*got, status, "{body}");
    assert_eq!(header("content-type"), Some("application/json"));
    assert_eq!(body["error"]["code"], code, "{body}");
    let rid = body["meta"]["request_id"].as_str().unwrap_or("");
    assert!(rid.starts_with("req_"), "{body}");
    assert_eq!(header("x-request-id"), Some(rid));
    assert!(body["meta"]["timestamp"].is_string(), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_hyper_cannot_parse_answer_our_json() {
    let s = TestServer::start().await;
    let org = s.org("Raw").await;
    let base = s.base.clone();
    let key = org.key.clone();
    tokio::task::spawn_blocking(move || {
        // A Content-Length above 2^64: hyper refuses it before any service runs.
        let huge = raw(
            &base,
            format!(
                "POST /v1/brands HTTP/1.1\r\nHost: x\r\nX-Api-Key: {key}\r\n\
                 Content-Type: application/json\r\nContent-Length: 99999999999999999999\r\n\r\n{{}}"
            )
            .as_bytes(),
        );
        assert_raw_ours(&huge, 400, "VALIDATION_ERROR");
        let msg = serde_json::from_slice::<Value>(&huge.2).unwrap()["error"]["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(msg.contains("Content-Length"), "{msg}");
        // Two Content-Lengths that disagree, a header line without a colon.
        for bad in [
            "POST /v1/brands HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n{}",
            "GET /v1/brands HTTP/1.1\r\nHost: x\r\nNot a header\r\n\r\n",
        ] {
            assert_raw_ours(&raw(&base, bad.as_bytes()), 400, "VALIDATION_ERROR");
        }
        // A request line longer than hyper reads.
        let long = format!(
            "GET /v1/brands?q={} HTTP/1.1\r\nHost: x\r\n\r\n",
            "a".repeat(70_000)
        );
        assert_raw_ours(&raw(&base, long.as_bytes()), 414, "VALIDATION_ERROR");
        // `..` reaches the router unnormalised: still the 404 of an unknown file.
        for path in ["/files/../adforge.sqlite3", "/files/images/..", "/files/%2e%2e/x"] {
            let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            assert_raw_ours(&raw(&base, req.as_bytes()), 404, "NOT_FOUND");
        }
        // A keep-alive connection still serves normal requests after ours.
        let ok = raw(
            &base,
            format!("GET /v1/brands HTTP/1.1\r\nHost: x\r\nX-Api-Key: {key}\r\n\r\n").as_bytes(),
        );
        assert_eq!(ok.0, 200);
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn framework_rejections_answer_our_json() {
    let s = TestServer::start().await;
    let org = s.org("Rejections").await;
    // JSON endpoints without, or with the wrong, Content-Type.
    let r = send(
        s.request(Method::POST, "/v1/brands")
            .header("x-api-key", &org.key)
            .body(r#"{"name":"x"}"#),
    )
    .await;
    assert_ours(&r, 400, "VALIDATION_ERROR");
    let r = send(
        s.request(Method::POST, "/v1/brands")
            .header("x-api-key", &org.key)
            .header("content-type", "text/plain")
            .body(r#"{"name":"x"}"#),
    )
    .await;
    assert_ours(&r, 400, "VALIDATION_ERROR");
    // Uploads that are not multipart, without a boundary, or broken.
    for (ct, body) in [
        ("application/json", "{}"),
        ("multipart/form-data", "--x\r\n"),
        (
            "multipart/form-data; boundary=x",
            "--x\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nabc",
        ),
    ] {
        let r = send(
            s.request(Method::POST, "/v1/images")
                .header("x-api-key", &org.key)
                .header("content-type", ct)
                .body(body),
        )
        .await;
        assert_ours(&r, 400, "VALIDATION_ERROR");
    }
    // Methods a path does not take.
    for (method, path) in [
        (Method::PUT, "/v1/brands"),
        (Method::DELETE, "/v1/image-ads"),
        (Method::POST, "/files/images/x.png"),
    ] {
        let r = send(s.request(method, path).header("x-api-key", &org.key)).await;
        assert_ours(&r, 404, "NOT_FOUND");
    }
}
