//! Idempotency across a crash: a real `adforge serve` process is SIGKILLed while idempotent
//! creates are in flight and restarted on the same data dir; every retried key must either
//! replay its committed response or run for the first time, and never create twice.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

use crate::adforge;
use crate::support::{Process, free_port, wait_up};

fn serve(dir: &std::path::Path, port: u16) -> Process {
    Process(
        adforge()
            .arg("serve")
            .arg("--data-dir")
            .arg(dir)
            .args(["--listen", &format!("127.0.0.1:{port}"), "--log", "warn"])
            .args(["--workers", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("adforge serve starts"),
    )
}

async fn create(
    http: &reqwest::Client,
    base: &str,
    key: &str,
    name: &str,
) -> reqwest::Result<(u16, Value)> {
    let r = http
        .post(format!("{base}/v1/brands"))
        .header("x-api-key", key)
        .header("idempotency-key", format!("key-{name}"))
        .json(&json!({"name": name, "description": "made under fire"}))
        .send()
        .await?;
    let status = r.status().as_u16();
    Ok((status, r.json().await.unwrap_or(Value::Null)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_idempotent_creates_never_duplicates() {
    // Eight clients each send six creates one after another, so requests are in flight
    // whenever the kill falls (48 per process stays under the 100/min rate limit).
    const CLIENTS: usize = 8;
    const EACH: usize = 6;
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let mut key = String::new();
    let mut total = 0;

    // Three rounds, each killing the server at a different moment.
    for (round, kill_after_ms) in [25_u64, 40, 50].into_iter().enumerate() {
        let port = free_port();
        let base = format!("http://127.0.0.1:{port}");
        let mut server = serve(dir.path(), port);
        assert!(wait_up(&base).await, "server did not start");
        if round == 0 {
            let stdout = server.0.stdout.take().unwrap();
            let mut line = String::new();
            std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
            let boot: Value = serde_json::from_str(&line).expect("bootstrap key on stdout");
            key = boot["api_key"]["key"].as_str().unwrap().to_string();
        }
        let mut tasks = Vec::new();
        for c in 0..CLIENTS {
            let (http, base, key) = (http.clone(), base.clone(), key.clone());
            tasks.push(tokio::spawn(async move {
                // (name, id of the brand if the create was answered before the kill)
                let mut sent: Vec<(String, Option<String>)> = Vec::new();
                for i in 0..EACH {
                    let name = format!("r{round}-c{c}-{i}");
                    match create(&http, &base, &key, &name).await {
                        Ok((201, body)) => {
                            sent.push((name, body["data"]["id"].as_str().map(String::from)));
                        }
                        _ => {
                            // The server is gone: this one may or may not have landed.
                            sent.push((name, None));
                            break;
                        }
                    }
                }
                sent
            }));
        }
        tokio::time::sleep(Duration::from_millis(kill_after_ms)).await;
        drop(server); // SIGKILL and reap
        let mut attempted = Vec::new();
        for t in tasks {
            attempted.extend(t.await.unwrap());
        }

        // Restart on the same files and retry every attempted key at once: nothing to wait
        // out, and each either replays or creates.
        let port = free_port();
        let base = format!("http://127.0.0.1:{port}");
        let _server = serve(dir.path(), port);
        assert!(wait_up(&base).await, "server did not restart");
        let answered = attempted.iter().filter(|(_, id)| id.is_some()).count();
        for (name, first_id) in &attempted {
            let (status, body) = create(&http, &base, &key, name).await.unwrap();
            assert_eq!(
                status, 201,
                "round {round}: retry of {name} must replay or create, got {body}"
            );
            assert_eq!(body["data"]["name"], name.as_str());
            if let Some(id) = first_id {
                assert_eq!(
                    body["data"]["id"],
                    id.as_str(),
                    "round {round}: {name} was answered before the kill, so its retry replays that brand"
                );
            }
        }
        eprintln!(
            "round {round}: kill at {kill_after_ms} ms; {} creates sent, {answered} answered before it",
            attempted.len()
        );
        total += attempted.len();

        // Exactly one brand per attempted key, however the kill fell.
        let mut per_name: HashMap<String, usize> = HashMap::new();
        let mut after = String::new();
        loop {
            let page: Value = http
                .get(format!("{base}/v1/brands?limit=100{after}"))
                .header("x-api-key", &key)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            for b in page["data"].as_array().unwrap() {
                *per_name
                    .entry(b["name"].as_str().unwrap().to_string())
                    .or_default() += 1;
            }
            if page["has_more"] != true {
                assert_eq!(page["total_count"], total, "round {round}: no stray brands");
                break;
            }
            let last = page["data"].as_array().unwrap().last().unwrap()["id"].clone();
            after = format!("&starting_after={}", last.as_str().unwrap());
        }
        for (name, _) in &attempted {
            assert_eq!(
                per_name.get(name).copied(),
                Some(1),
                "round {round}: {name} must exist exactly once"
            );
        }
    }
}
