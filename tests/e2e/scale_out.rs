//! Scale-out end to end (issue 11): two `adforge serve` API nodes and two `adforge worker`
//! render nodes, every one with a data folder of its own, sharing nothing but a throwaway
//! PostgreSQL, a redis-server and a moto S3 bucket. What one node writes the other reads:
//! ads created on one node complete and are polled on the other, a swipe file uploaded to
//! one is found by the other's search, an idempotent retry sent to the other node replays,
//! the wallet holds of 20 creates spread over both nodes never overspend, and a worker
//! SIGKILLed mid-job loses nothing. Then PostgreSQL itself goes away and comes back under
//! requests in flight.
//!
//! No assertion here is about time: every wait is a generous polling deadline.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use crate::flows::{
    After, Api, RefServer, SETTLE_DEADLINE, charged_once, create, get_ad, ledger_for, ready,
    settled,
};
use crate::moto::Moto;
use crate::postgres::Postgres;
use crate::redis_server::RedisServer;
use crate::support::{Process, free_port, send};
use crate::{Operator, adforge, admin_json, log_file, swipe_upload};

/// The visibility timeout every process agrees on: a killed worker's job is taken over this
/// long after its last heartbeat.
const VISIBILITY_MS: &str = "1500";
const BUCKET: &str = "adforge-scale";
const BLOB_URL: &str = "s3://adforge-scale/run";

/// One API node, as the flows' [`Api`].
#[derive(Clone)]
struct Node {
    base: String,
    http: reqwest::Client,
}

impl Api for Node {
    fn base(&self) -> &str {
        &self.base
    }
    fn client(&self) -> &reqwest::Client {
        &self.http
    }
}

/// PostgreSQL, Redis, moto, two API nodes and up to two workers; each adforge process has
/// its own folder under `dir` (`api-1`, `api-2`, `worker-N`, `admin`), where it also logs.
struct ScaleOut {
    pg: Postgres,
    redis: RedisServer,
    moto: Moto,
    database_url: String,
    dir: tempfile::TempDir,
    nodes: [Node; 2],
    /// Kept for their `Drop`: the API processes are SIGKILLed with the cluster.
    apis: Vec<Process>,
    workers: Vec<Option<Process>>,
}

impl ScaleOut {
    async fn start(workers: usize) -> Self {
        let pg = Postgres::start();
        let database_url = pg.create_database();
        let redis = RedisServer::start();
        let moto = Moto::start();
        moto.bucket(BUCKET).await;
        let dir = tempfile::tempdir().expect("cluster folder");
        let ports = [free_port(), free_port()];
        let nodes = ports.map(|p| Node {
            base: format!("http://127.0.0.1:{p}"),
            http: reqwest::Client::new(),
        });
        let mut c = ScaleOut {
            pg,
            redis,
            moto,
            database_url,
            dir,
            nodes,
            apis: Vec::new(),
            workers: Vec::new(),
        };
        // One node after the other: the first runs the migrations, the second finds them.
        for (n, port) in ports.into_iter().enumerate() {
            let folder = c.folder(&format!("api-{}", n + 1));
            let api = adforge()
                .args(["serve", "--database-url", &c.database_url])
                .args(["--redis-url", &c.redis.url(), "--workers", "0"])
                .args(c.store_args())
                .arg("--data-dir")
                .arg(&folder)
                .args(["--listen", &format!("127.0.0.1:{port}")])
                .args(["--visibility-timeout-ms", VISIBILITY_MS, "--log", "warn"])
                .arg("--allow-private-urls")
                // No default swipe-file collection: its 45 ingests would only slow this.
                .args(["--default-collection", "/nonexistent-default-collection"])
                .envs(aws_env())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log_file(&folder, "serve.log"))
                .spawn()
                .expect("adforge serve starts");
            c.apis.push(Process(api));
            c.wait_ready(n).await;
        }
        for _ in 0..workers {
            c.add_worker();
        }
        c
    }

    fn folder(&self, name: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::create_dir_all(&p).expect("node folder");
        p
    }

    fn store_args(&self) -> Vec<String> {
        vec![
            "--blob-url".into(),
            BLOB_URL.into(),
            "--s3-endpoint".into(),
            self.moto.endpoint(),
            "--s3-allow-http".into(),
        ]
    }

    /// Starts one more worker with a folder of its own; worker `n` reports URLs of API
    /// node `n % 2`. Returns its index.
    fn add_worker(&mut self) -> usize {
        let n = self.workers.len();
        let folder = self.folder(&format!("worker-{}", n + 1));
        let child = adforge()
            .args(["worker", "--redis-url", &self.redis.url()])
            .args(self.store_args())
            .arg("--data-dir")
            .arg(&folder)
            .args(["--public-url", &self.nodes[n % 2].base])
            .arg("--allow-private-urls")
            .args(["--visibility-timeout-ms", VISIBILITY_MS, "--log", "info"])
            .envs(aws_env())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file(&folder, "worker.log"))
            .spawn()
            .expect("adforge worker starts");
        self.workers.push(Some(Process(child)));
        n
    }

    async fn wait_ready(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(r) = self.nodes[n]
                .http
                .get(format!("{}/readyz", self.nodes[n].base))
                .send()
                .await
                && r.status() == 200
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "API node {} did not become ready\n{}",
                n + 1,
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `GET /readyz` of node `n`: (status, body).
    async fn readyz(&self, n: usize) -> (u16, Value) {
        let r = send(
            self.nodes[n]
                .http
                .get(format!("{}/readyz", self.nodes[n].base)),
        )
        .await;
        (r.status.as_u16(), r.body)
    }

    /// The tails of every process's log, for failure messages.
    fn logs(&self) -> String {
        let mut out = String::new();
        let mut logs: Vec<PathBuf> = Vec::new();
        for e in std::fs::read_dir(self.dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            for f in std::fs::read_dir(e.path()).into_iter().flatten().flatten() {
                if f.path().extension().is_some_and(|x| x == "log") {
                    logs.push(f.path());
                }
            }
        }
        logs.sort();
        for p in logs {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(15)..].join("\n");
            out.push_str(&format!("--- {} ---\n{tail}\n", p.display()));
        }
        out
    }

    /// The worker processes' ids, by index (None for a killed one).
    fn worker_pids(&self) -> Vec<Option<u32>> {
        self.workers
            .iter()
            .map(|w| w.as_ref().map(|p| p.0.id()))
            .collect()
    }

    /// Consumers holding a claim on the job stream (`XPENDING`), as `worker-PID-…` names.
    fn pending_consumers(&self) -> Vec<String> {
        let port = self
            .redis
            .url()
            .trim_end_matches('/')
            .rsplit(':')
            .next()
            .expect("redis port")
            .to_string();
        let out = Command::new("redis-cli")
            .args([
                "-p",
                &port,
                "XPENDING",
                &adforge_worker::queue::jobs_stream("adforge"),
                "workers",
                "-",
                "+",
                "10",
            ])
            .output()
            .expect("redis-cli runs");
        // Flat output: id, consumer, idle ms, deliveries per entry.
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("worker-"))
            .map(str::to_string)
            .collect()
    }

    /// SIGKILLs worker `n` and reaps it.
    fn kill_worker(&mut self, n: usize) {
        drop(self.workers[n].take().expect("a live worker"));
    }
}

impl Operator for ScaleOut {
    /// `adforge admin --database-url … ARGS…`, parsed.
    fn admin(&self, args: &[&str]) -> Value {
        let mut cmd = adforge();
        cmd.args(["admin", "--database-url", &self.database_url])
            .arg("--data-dir")
            .arg(self.folder("admin"))
            .args(self.store_args())
            .envs(aws_env());
        admin_json(cmd, args)
    }
}

fn aws_env() -> [(&'static str, &'static str); 3] {
    [
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
    ]
}

/// A PNG fetched from `url`: asserts 200 and `image/png`, returns the bytes.
async fn fetch_png(http: &reqwest::Client, url: &str) -> Vec<u8> {
    let res = http.get(url).send().await.expect("fetch");
    assert_eq!(res.status().as_u16(), 200, "{url}");
    assert_eq!(res.headers()["content-type"], "image/png", "{url}");
    res.bytes().await.expect("bytes").to_vec()
}

/// The same blob through the other node's `/files/`: both nodes serve the bucket.
fn on_other_node(url: &str, nodes: &[Node; 2]) -> String {
    let (from, to) = if url.starts_with(&nodes[0].base) {
        (&nodes[0].base, &nodes[1].base)
    } else {
        (&nodes[1].base, &nodes[0].base)
    };
    assert!(url.starts_with(from.as_str()), "{url} is no node's URL");
    format!("{to}{}", &url[from.len()..])
}

/// Two API nodes, two workers, separate folders, one PostgreSQL, one Redis, one bucket:
/// flat and editable ads and a PATCH complete across nodes, a swipe file uploaded to one
/// node is found by the other's search, an idempotent retry sent to the other node replays,
/// a worker SIGKILLed mid-job loses nothing, and 20 creates spread over both nodes against
/// a balance for 10 admit exactly 10 and charge exactly 10.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_api_nodes_and_two_workers_share_only_postgres_redis_and_s3() {
    let mut c = ScaleOut::start(2).await;
    let logs = |c: &ScaleOut| c.logs();
    let [a, b] = c.nodes.clone();
    let (a, b) = (&a, &b);
    let org = c.org("Scale", "20.00");
    let r = ready(a, &org).await;

    // A flat ad created on node 1 and an editable one on node 2, each polled on the other.
    let flat = create(a, &org, r.flat()).await;
    let editable = create(b, &org, r.body(&r.reference, true)).await;
    let f = settled(b, &org, &flat, || c.logs()).await;
    assert_eq!(f["status"], "completed", "{f}\n{}", logs(&c));
    let e = settled(a, &org, &editable, || c.logs()).await;
    assert_eq!(e["status"], "completed", "{e}\n{}", logs(&c));
    assert!(e["current_json_tree"]["nodes"].is_object(), "{e}");
    for ad in [&f, &e] {
        let url = ad["image_url"].as_str().expect("image_url");
        let png = fetch_png(&a.http, url).await;
        let img = image::load_from_memory(&png).expect("a PNG");
        assert_eq!(img.width().max(img.height()), 3840, "4K long edge");
        assert_eq!(
            fetch_png(&a.http, &on_other_node(url, &c.nodes)).await,
            png,
            "both nodes serve the bucket's object"
        );
    }
    // No node wrote a blob into its own folder: they live in the bucket.
    for name in ["api-1", "api-2", "worker-1", "worker-2"] {
        let blobs = c.dir.path().join(name).join("blobs");
        let n = std::fs::read_dir(&blobs).map(|d| d.count()).unwrap_or(0);
        assert_eq!(n, 0, "blobs were written to {}", blobs.display());
    }
    let w = c.wallet(&org);
    charged_once(&w, &flat, 100);
    charged_once(&w, &editable, 400);

    // PATCH on node 1 → version 2, rendered by a worker, seen on node 2.
    let mut edited = e["current_json_tree"].clone();
    let text_id = edited["nodes"]
        .as_object()
        .expect("nodes")
        .iter()
        .find(|(_, n)| n["type"] == "TEXT")
        .map(|(k, _)| k.clone())
        .expect("a TEXT node");
    edited["nodes"][&text_id]["characters"] = json!("Edited on node one");
    a.call(
        Method::PATCH,
        &format!("/v1/image-ads/{editable}"),
        &org,
        Some(json!({"current_json_tree": edited})),
    )
    .await
    .expect(200, None);
    let e2 = settled(b, &org, &editable, || c.logs()).await;
    assert_eq!(e2["status"], "completed", "{e2}\n{}", logs(&c));
    assert_ne!(e2["image_url"], e["image_url"], "version 2 has a new image");
    assert_eq!(
        e2["current_json_tree"]["nodes"][&text_id]["characters"],
        "Edited on node one"
    );
    let versions = b
        .call(
            Method::GET,
            &format!("/v1/image-ads/{editable}/versions"),
            &org,
            None,
        )
        .await
        .expect(200, None);
    let list = versions.body["data"].as_array().expect("versions");
    assert_eq!(list.len(), 2, "{}", versions.body);
    assert_eq!(list[1]["status"], "completed");
    fetch_png(&b.http, e2["image_url"].as_str().expect("url")).await;

    // A swipe file uploaded to node 1 becomes ready and is found by node 2's search.
    let samples = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/samples");
    let coffee = std::fs::read(format!("{samples}/coffee.png")).expect("sample");
    let sf = swipe_upload(a, &org, coffee).await.expect(202, None).id();
    let deadline = Instant::now() + SETTLE_DEADLINE;
    loop {
        let got = b
            .call(Method::GET, &format!("/v1/swipe-files/{sf}"), &org, None)
            .await
            .expect(200, None);
        match got.body["data"]["status"].as_str() {
            Some("ready") => break,
            Some("processing") => {}
            _ => panic!(
                "swipe file did not become ready: {}\n{}",
                got.body,
                c.logs()
            ),
        }
        assert!(
            Instant::now() < deadline,
            "swipe file {sf} still processing\n{}",
            c.logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let hits = b
        .call(
            Method::POST,
            "/v1/swipe-files/search",
            &org,
            Some(json!({"query": "coffee"})),
        )
        .await
        .expect(200, None);
    assert_eq!(hits.body["data"][0]["id"], sf.as_str(), "{}", hits.body);
    let preview = hits.body["data"][0]["thumbnail_url"]
        .as_str()
        .expect("thumbnail_url");
    let res = b.http.get(preview).send().await.expect("preview");
    assert_eq!(res.status().as_u16(), 200, "{preview}");

    // Idempotent retries sent to the other node replay the first node's answer.
    let brand_body = json!({"name": "Retried brand"});
    let first = b
        .client()
        .post(format!("{}/v1/brands", b.base))
        .header("x-api-key", &org.key)
        .header("idempotency-key", "scale-out-brand-1")
        .json(&brand_body);
    let first = send(first).await.expect(201, None);
    assert!(first.header("idempotent-replayed").is_none());
    let again = a
        .client()
        .post(format!("{}/v1/brands", a.base))
        .header("x-api-key", &org.key)
        .header("idempotency-key", "scale-out-brand-1")
        .json(&brand_body);
    let again = send(again).await.expect(201, None);
    assert_eq!(again.id(), first.id());
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    let ad_first = send(
        a.client()
            .post(format!("{}/v1/image-ads", a.base))
            .header("x-api-key", &org.key)
            .header("idempotency-key", "scale-out-ad-1")
            .json(&r.flat()),
    )
    .await
    .expect(202, None);
    let ad_again = send(
        b.client()
            .post(format!("{}/v1/image-ads", b.base))
            .header("x-api-key", &org.key)
            .header("idempotency-key", "scale-out-ad-1")
            .json(&r.flat()),
    )
    .await
    .expect(202, None);
    assert_eq!(ad_again.id(), ad_first.id());
    assert_eq!(ad_again.header("idempotent-replayed"), Some("true"));
    let once = settled(b, &org, &ad_first.id(), || c.logs()).await;
    assert_eq!(once["status"], "completed", "{once}\n{}", logs(&c));
    let w = c.wallet(&org);
    assert_eq!(ledger_for(&w, "hold", &ad_first.id()).len(), 1, "{w}");
    charged_once(&w, &ad_first.id(), 100);

    // A worker SIGKILLed mid-job: the reference answers node 2's create-time check at once
    // and every worker fetch only after 3 s, so the worker that has the job sits in
    // `fetching_reference` long enough to be found (by its claim in Redis) and killed there.
    let stalling = RefServer::start(After::Stall(Duration::from_secs(3))).await;
    let stalled = create(b, &org, r.body(&stalling.url, false)).await;
    let deadline = Instant::now() + SETTLE_DEADLINE;
    let (step, holder) = loop {
        let ad = get_ad(a, &org, &stalled).await;
        assert_eq!(ad["status"], "processing", "{ad}\n{}", c.logs());
        let step = ad["progress"]["step"].as_str().unwrap_or("").to_string();
        let holders = c.pending_consumers();
        if !step.is_empty() && step != "queued" && holders.len() == 1 {
            break (step, holders[0].clone());
        }
        assert!(
            Instant::now() < deadline,
            "no worker took {stalled}: {ad} {holders:?}\n{}",
            c.logs()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let victim = c
        .worker_pids()
        .iter()
        .position(|p| p.is_some_and(|p| holder.starts_with(&format!("worker-{p}-"))))
        .unwrap_or_else(|| panic!("{holder} is none of {:?}", c.worker_pids()));
    c.kill_worker(victim);
    eprintln!("SIGKILLed worker {} at step {step}", victim + 1);
    let ad = get_ad(b, &org, &stalled).await;
    assert_eq!(
        ad["status"], "processing",
        "the worker was killed mid-job (at step {step}): {ad}"
    );
    let done = settled(a, &org, &stalled, || c.logs()).await;
    assert_eq!(done["status"], "completed", "{done}\n{}", c.logs());
    let w = c.wallet(&org);
    charged_once(&w, &stalled, 100);
    drop(stalling);
    // Back to two workers for the rest.
    c.add_worker();

    // 20 creates at once, alternating between the nodes, against $10: exactly 10 admitted,
    // 10 refused with INSUFFICIENT_BALANCE, and once they complete exactly 10 charges.
    let rich = c.org("Concurrent", "10.00");
    let rr = ready(b, &rich).await;
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let node = &c.nodes[i % 2];
            let req = node
                .http
                .post(format!("{}/v1/image-ads", node.base))
                .header("x-api-key", &rich.key)
                .json(&rr.flat());
            tokio::spawn(send(req))
        })
        .collect();
    let mut admitted = Vec::new();
    let mut refused = 0;
    for t in tasks {
        let r = t.await.expect("create task");
        match (r.status.as_u16(), r.code()) {
            (202, _) => admitted.push(r.id()),
            (402, "INSUFFICIENT_BALANCE") => refused += 1,
            _ => panic!("unexpected answer to a concurrent create: {r:?}"),
        }
    }
    assert_eq!((admitted.len(), refused), (10, 10));
    for id in &admitted {
        let ad = settled(a, &rich, id, || c.logs()).await;
        assert_eq!(ad["status"], "completed", "{ad}\n{}", c.logs());
    }
    let w = c.wallet(&rich);
    let charges = w["ledger"]
        .as_array()
        .expect("ledger")
        .iter()
        .filter(|e| e["kind"] == "charge")
        .count();
    assert_eq!(charges, 10, "{w}");
    for id in &admitted {
        charged_once(&w, id, 100);
    }
    assert_eq!(
        (w["balance_cents"].as_i64(), w["held_cents"].as_i64()),
        (Some(0), Some(0)),
        "{w}"
    );
}

/// What one client saw of one create during the outage: the brand's name and its status
/// (None: no answer at all).
type Sent = (String, Option<u16>);

/// PostgreSQL stops under two API nodes with creates in flight: `/readyz` answers 503
/// naming the database on both, comes back to 200 once PostgreSQL restarts, and every
/// create either answered 201 and its brand exists once, or answered an error and left
/// nothing behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_outage_makes_nodes_unready_and_leaves_no_half_written_rows() {
    let mut c = ScaleOut::start(0).await;
    let org = c.org("Outage", "1.00");
    for n in 0..2 {
        let (status, body) = c.readyz(n).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["checks"]["database"]["status"], "ok", "{body}");
    }

    // Four clients create brands one after another, alternating nodes, until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|client| {
            let stop = stop.clone();
            let bases = [c.nodes[0].base.clone(), c.nodes[1].base.clone()];
            let key = org.key.clone();
            tokio::spawn(async move {
                let http = reqwest::Client::new();
                let mut sent: Vec<Sent> = Vec::new();
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) {
                    let name = format!("outage-{client}-{i}");
                    let res = http
                        .post(format!("{}/v1/brands", bases[i % 2]))
                        .header("x-api-key", &key)
                        .json(&json!({"name": name, "description": "sent during an outage"}))
                        .send()
                        .await;
                    sent.push((name, res.ok().map(|r| r.status().as_u16())));
                    i += 1;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                sent
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;

    c.pg.stop();
    for n in 0..2 {
        let deadline = Instant::now() + Duration::from_secs(60);
        let body = loop {
            let (status, body) = c.readyz(n).await;
            if status == 503 {
                break body;
            }
            assert!(
                Instant::now() < deadline,
                "node {} stayed ready without PostgreSQL: {body}",
                n + 1
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(body["error"]["code"], "SERVICE_UNAVAILABLE", "{body}");
        assert_ne!(body["checks"]["database"]["status"], "ok", "{body}");
        assert_eq!(body["checks"]["redis"]["status"], "ok", "{body}");
        assert_eq!(body["checks"]["blob_store"]["status"], "ok", "{body}");
    }
    // A create while the database is down is refused with our error JSON, on either node.
    let mut refused_names = Vec::new();
    for (n, node) in c.nodes.iter().enumerate() {
        let name = format!("while-down-{n}");
        let r = node
            .call(
                Method::POST,
                "/v1/brands",
                &org,
                Some(json!({"name": name})),
            )
            .await;
        assert!(r.status.is_server_error(), "{r:?}");
        assert!(!r.code().is_empty(), "our error JSON: {r:?}");
        assert!(
            r.body["meta"]["request_id"]
                .as_str()
                .is_some_and(|id| id.starts_with("req_")),
            "{r:?}"
        );
        eprintln!("create while PostgreSQL is down: {} {}", r.status, r.code());
        refused_names.push(name);
    }

    c.pg.restart();
    for n in 0..2 {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (status, body) = c.readyz(n).await;
            if status == 200 {
                assert_eq!(body["checks"]["database"]["status"], "ok", "{body}");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "node {} did not come back with PostgreSQL: {body}\n{}",
                n + 1,
                c.logs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // Creates work again on both nodes.
    for node in &c.nodes {
        node.call(
            Method::POST,
            "/v1/brands",
            &org,
            Some(json!({"name": "after the outage"})),
        )
        .await
        .expect(201, None);
    }
    stop.store(true, Ordering::SeqCst);
    let mut sent: Vec<Sent> = Vec::new();
    for t in clients {
        sent.extend(t.await.expect("client task"));
    }

    // Every brand by name, through node 2's list.
    let mut per_name: HashMap<String, usize> = HashMap::new();
    let mut after = String::new();
    let mut total = 0;
    loop {
        let page = c.nodes[1]
            .call(
                Method::GET,
                &format!("/v1/brands?limit=100{after}"),
                &org,
                None,
            )
            .await
            .expect(200, None);
        let data = page.body["data"].as_array().expect("data");
        for b in data {
            *per_name
                .entry(b["name"].as_str().expect("name").to_string())
                .or_default() += 1;
        }
        total += data.len();
        if page.body["has_more"] != true {
            assert_eq!(page.body["total_count"], total, "{}", page.body);
            break;
        }
        let last = data.last().expect("a last brand")["id"].clone();
        after = format!("&starting_after={}", last.as_str().expect("id"));
    }
    let (mut created, mut failed) = (0, 0);
    for (name, status) in &sent {
        let found = per_name.get(name).copied().unwrap_or(0);
        match status {
            Some(201) => {
                created += 1;
                assert_eq!(found, 1, "{name} was answered 201: it exists once");
            }
            Some(s) => {
                failed += 1;
                assert_eq!(found, 0, "{name} was answered {s}: it left nothing behind");
            }
            None => panic!("{name} got no answer: an API node went away\n{}", c.logs()),
        }
    }
    for name in &refused_names {
        assert!(!per_name.contains_key(name), "{name} was refused");
    }
    assert_eq!(per_name.get("after the outage").copied(), Some(2));
    assert_eq!(
        total,
        created + 2,
        "no brand other than the answered creates: {per_name:?}"
    );
    eprintln!(
        "{} creates in flight around the outage: {created} created, {failed} refused",
        sent.len()
    );
}
