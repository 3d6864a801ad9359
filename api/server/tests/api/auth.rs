//! Authentication, scopes, key storage and the operator CLI working beside a live server.

use std::process::{Command, Stdio};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Process, TestServer, free_port, send};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_malformed_and_unknown_keys_are_401() {
    let s = TestServer::start().await;
    let r = s
        .call(Method::GET, "/v1/brands", None, None)
        .await
        .expect(401, Some("UNAUTHORIZED"));
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("X-API-Key")
    );
    assert!(
        r.header("ratelimit-limit").is_none(),
        "no key, no rate headers"
    );

    let bearer = send(
        s.request(Method::GET, "/v1/brands")
            .header("authorization", "Bearer svc_live_abc"),
    )
    .await;
    let bearer = bearer.expect(401, Some("UNAUTHORIZED"));
    assert!(
        bearer.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("X-API-Key"),
        "{}",
        bearer.body
    );

    for bad in [
        "sk_live_0123456789abcdefghij",
        "svc_live_short",
        "svc_live_0123456789abcdef!!",
        "svc_live_0123456789abcdefghij ",
    ] {
        s.call(Method::GET, "/v1/brands", Some(bad), None)
            .await
            .expect(401, Some("UNAUTHORIZED"));
    }
    let unknown = format!("svc_live_{}", "A".repeat(44));
    s.call(Method::GET, "/v1/brands", Some(&unknown), None)
        .await
        .expect(401, Some("UNAUTHORIZED"));

    // Unauthenticated access outside /v1 is fine; inside it, even unknown paths need a key.
    s.call(Method::GET, "/v1/nothing-here", None, None)
        .await
        .expect(401, Some("UNAUTHORIZED"));
    let doc = s
        .call(Method::GET, "/openapi.json", None, None)
        .await
        .expect(200, None);
    assert_eq!(doc.body["openapi"], "3.1.0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scopes_gate_each_action_with_403() {
    let s = TestServer::start().await;
    let org = s.org("Scoped").await;
    let brand = s
        .post(&org, "/v1/brands", json!({"name": "B"}))
        .await
        .expect(201, None)
        .id();
    let reader = s.key(&org.id, "brands:read", None).await;
    s.call(
        Method::GET,
        &format!("/v1/brands/{brand}"),
        Some(&reader),
        None,
    )
    .await
    .expect(200, None);
    let denied = s
        .call(
            Method::POST,
            "/v1/brands",
            Some(&reader),
            Some(json!({"name": "x"})),
        )
        .await;
    let denied = denied.expect(403, Some("FORBIDDEN"));
    assert!(
        denied.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("brands:write")
    );
    assert!(
        denied.header("ratelimit-remaining").is_some(),
        "errors of authenticated calls carry rate headers"
    );

    let writer = s.key(&org.id, "brands:write", None).await;
    s.call(Method::GET, "/v1/brands", Some(&writer), None)
        .await
        .expect(403, Some("FORBIDDEN"));
    s.call(
        Method::POST,
        "/v1/brands",
        Some(&writer),
        Some(json!({"name": "w"})),
    )
    .await
    .expect(201, None);
    for (path, body) in [
        ("/v1/products", json!({"brand_id": brand, "name": "p"})),
        (
            "/v1/audiences",
            json!({"product_id": "prod_x", "name": "a"}),
        ),
        (
            "/v1/product-variants",
            json!({"product_id": "prod_x", "name": "v"}),
        ),
    ] {
        s.call(Method::POST, path, Some(&reader), Some(body))
            .await
            .expect(403, Some("FORBIDDEN"));
    }
    for path in [
        "/v1/products",
        "/v1/audiences",
        "/v1/product-variants",
        "/v1/images",
    ] {
        s.call(Method::GET, path, Some(&reader), None)
            .await
            .expect(403, Some("FORBIDDEN"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_stored_only_as_hashes() {
    let s = TestServer::start().await;
    let org = s.org("Hashes").await;
    s.get(&org, "/v1/brands").await.expect(200, None);
    let stored: Vec<String> = adforge_api::store::query_scalar("SELECT secret_hash FROM api_keys")
        .fetch_all(&s.db.read)
        .await
        .unwrap();
    assert!(stored.contains(&adforge_api::auth::hash_key(&org.key)));
    let secret = org.key.trim_start_matches("svc_live_");
    for entry in std::fs::read_dir(&s.data_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "secret found in {}",
                path.display()
            );
        }
    }
}

fn adforge(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_adforge"))
        .args(args)
        .output()
        .expect("adforge runs");
    assert!(
        out.status.success(),
        "adforge {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?} printed non-JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

async fn wait_up(base: &str) {
    assert!(
        crate::support::wait_up(base).await,
        "server at {base} did not come up"
    );
}

fn spawn_serve(dir: &str, port: u16) -> Process {
    Process(
        Command::new(env!("CARGO_BIN_EXE_adforge"))
            .args([
                "serve",
                "--data-dir",
                dir,
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--log",
                "warn",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve starts"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_cli_works_beside_a_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut serve = spawn_serve(d, port);
    wait_up(&base).await;

    // First start with an empty database printed a default organization and one key.
    let stdout = serve.0.stdout.take().unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
        .expect("bootstrap line");
    let first: Value = serde_json::from_str(&line).expect("bootstrap JSON on stdout");
    let default_key = first["api_key"]["key"].as_str().unwrap().to_string();
    assert!(default_key.starts_with("svc_live_"));
    assert_eq!(
        first["api_key"]["scopes"].as_array().unwrap().len(),
        adforge_api::auth::Scope::ALL.len()
    );
    let client = reqwest::Client::new();
    let get = |key: String| {
        let client = client.clone();
        let url = format!("{base}/v1/brands");
        async move {
            client
                .get(url)
                .header("x-api-key", key)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(get(default_key.clone()).await, 200);

    let org = adforge(&[
        "admin",
        "--data-dir",
        d,
        "org",
        "create",
        "--name",
        "Acme Ltd",
    ]);
    assert_eq!(org["name"], "Acme Ltd");
    let org_id = org["id"].as_str().unwrap();
    assert!(org_id.starts_with("org_"));
    let key = adforge(&[
        "admin",
        "--data-dir",
        d,
        "key",
        "create",
        "--org",
        org_id,
        "--scopes",
        "brands:read,products:write",
        "--rate-limit",
        "7",
    ]);
    assert_eq!(key["scopes"], json!(["brands:read", "products:write"]));
    let secret = key["key"].as_str().unwrap().to_string();
    // A new key works at once, with its own rate limit.
    let r = client
        .get(format!("{base}/v1/brands"))
        .header("x-api-key", &secret)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.headers()["ratelimit-limit"], "7");

    let wallet = adforge(&[
        "admin",
        "--data-dir",
        d,
        "wallet",
        "top-up",
        "--org",
        org_id,
        "--amount",
        "25.00",
    ]);
    assert_eq!(
        wallet,
        json!({"org_id": org_id, "balance_cents": 2500, "top_up_cents": 2500})
    );
    adforge(&[
        "admin",
        "--data-dir",
        d,
        "wallet",
        "top-up",
        "--org",
        org_id,
        "--amount",
        "0.5",
    ]);
    let shown = adforge(&["admin", "--data-dir", d, "wallet", "show", "--org", org_id]);
    assert_eq!(shown["balance_cents"], 2550);
    assert_eq!(shown["held_cents"], 0);
    assert_eq!(shown["ledger"].as_array().unwrap().len(), 2);
    assert_eq!(shown["ledger"][0]["kind"], "top_up");

    // Bad operator input fails with a message, not JSON.
    let bad = Command::new(env!("CARGO_BIN_EXE_adforge"))
        .args([
            "admin",
            "--data-dir",
            d,
            "wallet",
            "top-up",
            "--org",
            org_id,
            "--amount",
            "-3",
        ])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("amount"));
    let bad = Command::new(env!("CARGO_BIN_EXE_adforge"))
        .args([
            "admin",
            "--data-dir",
            d,
            "key",
            "create",
            "--org",
            org_id,
            "--scopes",
            "brands:fly",
        ])
        .output()
        .unwrap();
    assert!(!bad.status.success());

    // A revoked key stops within 5 seconds.
    adforge(&[
        "admin",
        "--data-dir",
        d,
        "key",
        "revoke",
        key["id"].as_str().unwrap(),
    ]);
    let mut stopped = false;
    for _ in 0..50 {
        if get(secret.clone()).await == 401 {
            stopped = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(stopped, "revoked key still accepted after 5 s");

    // A restart prints no second key.
    drop(serve);
    let mut again = spawn_serve(d, port);
    wait_up(&base).await;
    let _ = again.0.kill();
    let _ = again.0.wait();
    let mut printed = String::new();
    std::io::Read::read_to_string(&mut again.0.stdout.take().unwrap(), &mut printed).unwrap();
    assert!(printed.is_empty(), "second start printed: {printed}");
}
