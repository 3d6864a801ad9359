//! With Redis configured, the per-key rate limit holds across several API nodes: two
//! `adforge serve` processes on one data dir and one Redis share each key's window.

use std::process::Stdio;

use crate::adforge;
use crate::redis_server;
use crate::support::{Process, free_port};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_api_nodes_share_one_window_per_key() {
    let redis = redis_server::RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let db = adforge_api::store::Db::open(dir.path()).await.unwrap();
    let org = adforge_api::orgs::create_org(&db, "Shared").await.unwrap();
    let key = adforge_api::orgs::create_key(
        &db,
        org["id"].as_str().unwrap(),
        &adforge_api::auth::Grants::All,
        Some(6),
    )
    .await
    .unwrap();
    let key = key["key"].as_str().unwrap().to_string();

    let mut bases = Vec::new();
    let mut nodes = Vec::new();
    for _ in 0..2 {
        let port = free_port();
        nodes.push(Process(
            adforge()
                .args([
                    "serve",
                    "--data-dir",
                    &d,
                    "--listen",
                    &format!("127.0.0.1:{port}"),
                    "--log",
                    "warn",
                ])
                .args(["--redis-url", &redis.url(), "--workers", "0"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        ));
        bases.push(format!("http://127.0.0.1:{port}"));
    }
    let http = reqwest::Client::new();
    for base in &bases {
        assert!(crate::support::wait_up(base).await, "{base} did not start");
    }
    // Alternate between the nodes: six requests pass in all, the seventh is refused
    // wherever it lands, and both nodes report the same shared remaining count.
    let mut remaining = Vec::new();
    for i in 0..6 {
        let r = http
            .get(format!("{}/v1/brands", bases[i % 2]))
            .header("x-api-key", &key)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        remaining.push(
            r.headers()["ratelimit-remaining"]
                .to_str()
                .unwrap()
                .to_string(),
        );
    }
    assert_eq!(remaining, ["5", "4", "3", "2", "1", "0"]);
    for base in &bases {
        let r = http
            .get(format!("{base}/v1/brands"))
            .header("x-api-key", &key)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 429);
        let retry: u64 = r.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=60).contains(&retry));
        let body: serde_json::Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], "RATE_LIMIT_EXCEEDED");
    }
    drop(nodes);
}
