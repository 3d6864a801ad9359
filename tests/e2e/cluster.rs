//! Process-level end-to-end tests of the job system (issue 4): a real `redis-server` on a
//! free port, an `adforge serve --redis-url … --workers 0` API process and `adforge worker`
//! processes sharing its data dir, driven over HTTP exactly as a client and an operator
//! would. (The embedded mode's share of these behaviours is tested in-process in
//! `api/tests/api/embedded.rs`.)
//!
//! No assertion here is about time: every wait is a generous polling deadline, so a slow CI
//! machine makes these slower, never red.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use crate::flows::{
    After, Api, RefServer, SETTLE_DEADLINE, charged_once, create, get_ad, ledger_for, ready,
    settled, twenty_at_once,
};
use crate::redis_server::RedisServer;
use crate::support::{Org, free_port};
use crate::{Operator, adforge, admin_json, log_file, swipe_upload};

/// The visibility timeout every process of a cluster agrees on: a killed worker's job is
/// taken over this long after its last heartbeat.
const VISIBILITY_MS: &str = "1500";

// ---------------------------------------------------------------------------------------
// The cluster: redis-server, one API process, N worker processes.
// ---------------------------------------------------------------------------------------

pub(crate) struct Cluster {
    redis: RedisServer,
    dir: tempfile::TempDir,
    pub(crate) base: String,
    api: Child,
    workers: Vec<Child>,
    pub(crate) http: reqwest::Client,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for w in &mut self.workers {
            let _ = w.kill();
            let _ = w.wait();
        }
        let _ = self.api.kill();
        let _ = self.api.wait();
        // `redis` kills its server when it drops.
    }
}

impl Cluster {
    /// Starts redis-server, the API (no in-process workers) and `workers` worker processes.
    pub(crate) async fn start(workers: usize) -> Self {
        let redis = RedisServer::start();
        let dir = tempfile::tempdir().expect("data dir");
        let port = free_port();
        let base = format!("http://127.0.0.1:{port}");
        let api = adforge()
            .args(["serve", "--redis-url", &redis.url(), "--workers", "0"])
            .arg("--allow-private-urls")
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--visibility-timeout-ms", VISIBILITY_MS, "--log", "warn"])
            // No default swipe-file collection: its 45 ingests would only slow these tests.
            .args(["--default-collection", "/nonexistent-default-collection"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file(dir.path(), "api.log"))
            .spawn()
            .expect("adforge serve starts");
        let mut cluster = Cluster {
            redis,
            dir,
            base,
            api,
            workers: Vec::new(),
            http: reqwest::Client::new(),
        };
        cluster.wait_up().await;
        for _ in 0..workers {
            cluster.add_worker();
        }
        cluster
    }

    pub(crate) fn data_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Starts one more `adforge worker`; returns its index in `workers`.
    pub(crate) fn add_worker(&mut self) -> usize {
        self.add_worker_with(&[])
    }

    /// Starts one more `adforge worker` with `extra` flags (e.g. `--backend gpu`); returns
    /// its index in `workers`. Its log is `worker-<index>.log` in the data dir.
    pub(crate) fn add_worker_with(&mut self, extra: &[&str]) -> usize {
        let n = self.workers.len();
        let child = adforge()
            .args(["worker", "--redis-url", &self.redis.url()])
            .args(extra)
            .arg("--data-dir")
            .arg(self.data_dir())
            .args(["--public-url", &self.base])
            .arg("--allow-private-urls")
            .args(["--visibility-timeout-ms", VISIBILITY_MS, "--log", "info"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file(self.data_dir(), &format!("worker-{n}.log")))
            .spawn()
            .expect("adforge worker starts");
        self.workers.push(child);
        n
    }

    /// SIGKILLs worker `n` (`Child::kill` sends SIGKILL on Unix): no shutdown, no ack, no
    /// goodbye to Redis.
    pub(crate) fn kill_worker(&mut self, n: usize) {
        let w = &mut self.workers[n];
        w.kill().expect("SIGKILL the worker");
        w.wait().expect("reap the worker");
    }

    async fn wait_up(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if self
                .http
                .get(format!("{}/openapi.json", self.base))
                .send()
                .await
                .is_ok()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the API at {} did not come up\n{}", self.base, self.logs());
    }

    /// The tails of every process's log, for failure messages.
    pub(crate) fn logs(&self) -> String {
        let mut out = String::new();
        let mut names: Vec<PathBuf> = std::fs::read_dir(self.data_dir())
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        names.retain(|p| p.extension().is_some_and(|e| e == "log"));
        names.sort();
        for p in names {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(15)..].join("\n");
            out.push_str(&format!("--- {} ---\n{tail}\n", p.display()));
        }
        out
    }
}

impl Operator for Cluster {
    /// `adforge admin --data-dir D ARGS…`, parsed.
    fn admin(&self, args: &[&str]) -> Value {
        let mut cmd = adforge();
        cmd.arg("admin").arg("--data-dir").arg(self.data_dir());
        admin_json(cmd, args)
    }
}

impl Api for Cluster {
    fn base(&self) -> &str {
        &self.base
    }
    fn client(&self) -> &reqwest::Client {
        &self.http
    }
}

// ---------------------------------------------------------------------------------------
// Redis mode: processes.
// ---------------------------------------------------------------------------------------

/// One cluster with two workers carries four behaviours: flat and editable ads complete and
/// are charged once; PATCH renders version 2 with a new image; a pipeline that keeps
/// failing ends `failed` without a charge; 20 concurrent creates against a balance for 10
/// admit exactly 10.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_two_workers_complete_edit_bill_once_fail_cleanly_and_admit_by_balance() {
    let cluster = Cluster::start(2).await;
    let logs = || cluster.logs();

    // The failing ad first, so its retries run while the others render. Its reference
    // answers the API's check, then the port closes: every worker fetch is refused (a
    // transient error → retry with backoff) until the attempts are spent.
    let poor = cluster.org("Failing", "5.00");
    let poor_ready = ready(&cluster, &poor).await;
    let refusing = RefServer::start(After::Refuse).await;
    let doomed = create(&cluster, &poor, poor_ready.body(&refusing.url, false)).await;
    drop(refusing);

    let org = cluster.org("Cluster", "10.00");
    let r = ready(&cluster, &org).await;
    let flat = create(&cluster, &org, r.flat()).await;
    let editable = create(&cluster, &org, r.body(&r.reference, true)).await;
    let w = cluster.wallet(&org);
    assert_eq!(
        (w["balance_cents"].as_i64(), w["held_cents"].as_i64()),
        (Some(1000), Some(500)),
        "both prices are held: {w}"
    );

    let f = settled(&cluster, &org, &flat, logs).await;
    assert_eq!(f["status"], "completed", "{f}\n{}", logs());
    let e = settled(&cluster, &org, &editable, logs).await;
    assert_eq!(e["status"], "completed", "{e}\n{}", logs());
    assert!(e["current_json_tree"]["nodes"].is_object(), "{e}");
    // The workers wrote the PNGs into the data dir the API serves.
    for ad in [&f, &e] {
        let url = ad["image_url"].as_str().expect("image_url");
        assert!(url.starts_with(&cluster.base), "{url}");
        let res = cluster.http.get(url).send().await.expect("fetch PNG");
        assert_eq!(res.status().as_u16(), 200, "{url}");
        assert_eq!(res.headers()["content-type"], "image/png");
        let bytes = res.bytes().await.expect("PNG bytes");
        let img = image::load_from_memory(&bytes).expect("a PNG");
        assert_eq!(img.width().max(img.height()), 3840, "4K long edge");
    }
    let w = cluster.wallet(&org);
    assert_eq!(w["balance_cents"], 500, "$1 + $4 charged: {w}");
    assert_eq!(w["held_cents"], 0, "no holds left: {w}");
    charged_once(&w, &flat, 100);
    charged_once(&w, &editable, 400);

    // PATCH → version 2, rendered by a worker, with a new image and no new charge.
    let mut edited = e["current_json_tree"].clone();
    let text_id = edited["nodes"]
        .as_object()
        .expect("nodes")
        .iter()
        .find(|(_, n)| n["type"] == "TEXT")
        .map(|(k, _)| k.clone())
        .expect("a TEXT node");
    edited["nodes"][&text_id]["characters"] = json!("Edited through Redis");
    cluster
        .call(
            Method::PATCH,
            &format!("/v1/image-ads/{editable}"),
            &org,
            Some(json!({"current_json_tree": edited})),
        )
        .await
        .expect(200, None);
    let e2 = settled(&cluster, &org, &editable, logs).await;
    assert_eq!(e2["status"], "completed", "{e2}\n{}", logs());
    assert_ne!(e2["image_url"], e["image_url"], "version 2 has a new image");
    assert_eq!(
        e2["current_json_tree"]["nodes"][&text_id]["characters"],
        "Edited through Redis"
    );
    let versions = cluster
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
    assert_eq!(list[1]["version_number"], 2);
    assert_eq!(list[1]["status"], "completed");
    assert_eq!(list[1]["image_url"], e2["image_url"]);
    let res = cluster
        .http
        .get(e2["image_url"].as_str().expect("url"))
        .send()
        .await
        .expect("fetch v2");
    assert_eq!(res.status().as_u16(), 200);
    let w = cluster.wallet(&org);
    assert_eq!(
        (w["balance_cents"].as_i64(), w["held_cents"].as_i64()),
        (Some(500), Some(0)),
        "re-renders are free: {w}"
    );
    charged_once(&w, &editable, 400);

    // The failing pipeline: failed, PIPELINE_ERROR, nothing charged, the hold released.
    let d = settled(&cluster, &poor, &doomed, logs).await;
    assert_eq!(d["status"], "failed", "{d}\n{}", logs());
    assert_eq!(d["error"]["code"], "PIPELINE_ERROR", "{d}");
    assert!(d["image_url"].is_null(), "{d}");
    eprintln!("failing pipeline ended: {}", d["error"]);
    let w = cluster.wallet(&poor);
    assert_eq!(
        (w["balance_cents"].as_i64(), w["held_cents"].as_i64()),
        (Some(500), Some(0)),
        "no charge, hold released: {w}"
    );
    assert!(ledger_for(&w, "charge", &doomed).is_empty(), "{w}");
    assert_eq!(ledger_for(&w, "release", &doomed).len(), 1, "{w}");

    // 20 concurrent creates against $10: exactly 10 admitted, 10 refused with 402.
    let rich = cluster.org("Concurrent", "10.00");
    let rr = ready(&cluster, &rich).await;
    let (accepted, refused) = twenty_at_once(&cluster.base, &rich, rr.flat()).await;
    assert_eq!((accepted, refused), (10, 10));
    let w = cluster.wallet(&rich);
    assert_eq!(
        w["available_cents"], 0,
        "the 10 admitted ads hold (or were charged) exactly the balance: {w}"
    );
    let holds = w["ledger"]
        .as_array()
        .expect("ledger")
        .iter()
        .filter(|e| e["kind"] == "hold")
        .count();
    assert_eq!(holds, 10, "{w}");
}

/// A worker SIGKILLed mid-job loses nothing: another worker takes the job over after the
/// visibility timeout, the ad completes and is charged once. Then redis-server itself is
/// SIGKILLed and restarted mid-run: the API and the workers reconnect by themselves, and
/// every ad, created before or after the restart, completes and is charged once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_survives_a_killed_worker_and_a_restarted_redis() {
    let mut cluster = Cluster::start(0).await;
    let org = cluster.org("Survivor", "20.00");
    let r = ready(&cluster, &org).await;

    // The reference answers the API's check at once and every worker's fetch only after
    // 3 s, so a worker that has the job sits in `fetching_reference` long enough to be
    // killed there.
    let stalling = RefServer::start(After::Stall(Duration::from_secs(3))).await;
    let first = cluster.add_worker();
    let ad = create(&cluster, &org, r.body(&stalling.url, false)).await;
    let deadline = Instant::now() + SETTLE_DEADLINE;
    let step = loop {
        let a = get_ad(&cluster, &org, &ad).await;
        assert_eq!(a["status"], "processing", "{a}\n{}", cluster.logs());
        let step = a["progress"]["step"].as_str().unwrap_or("").to_string();
        if !step.is_empty() && step != "queued" {
            break step;
        }
        assert!(
            Instant::now() < deadline,
            "no worker took {ad}: {a}\n{}",
            cluster.logs()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    cluster.kill_worker(first);
    eprintln!("SIGKILLed the worker at step {step}");
    let a = get_ad(&cluster, &org, &ad).await;
    assert_eq!(
        a["status"], "processing",
        "the worker was killed mid-job (at step {step}): {a}"
    );
    cluster.add_worker();
    let done = settled(&cluster, &org, &ad, || cluster.logs()).await;
    assert_eq!(done["status"], "completed", "{done}\n{}", cluster.logs());
    let w = cluster.wallet(&org);
    charged_once(&w, &ad, 100);
    assert_eq!(
        (w["balance_cents"].as_i64(), w["held_cents"].as_i64()),
        (Some(1900), Some(0)),
        "{w}"
    );
    drop(stalling);

    // Two workers from here on; Redis restarts with jobs queued and in flight.
    cluster.add_worker();
    let mut ads = Vec::new();
    for _ in 0..3 {
        ads.push(create(&cluster, &org, r.flat()).await);
    }
    cluster.redis.restart();
    for _ in 0..2 {
        ads.push(create(&cluster, &org, r.flat()).await);
    }
    for id in &ads {
        let a = settled(&cluster, &org, id, || cluster.logs()).await;
        assert_eq!(a["status"], "completed", "{a}\n{}", cluster.logs());
    }
    let w = cluster.wallet(&org);
    for id in &ads {
        charged_once(&w, id, 100);
    }
    assert_eq!(
        (w["balance_cents"].as_i64(), w["held_cents"].as_i64()),
        (Some(1900 - 500), Some(0)),
        "{w}"
    );
}

// ---------------------------------------------------------------------------------------
// Swipe files through Redis and worker processes.
// ---------------------------------------------------------------------------------------

async fn swipe_ready_count(c: &Cluster, org: &Org, n: u64) {
    let deadline = Instant::now() + SETTLE_DEADLINE;
    while Instant::now() < deadline {
        let r = c
            .call(Method::GET, "/v1/swipe-files?status=ready", org, None)
            .await;
        if r.body["total_count"].as_u64() == Some(n) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("swipe files did not become ready\n{}", c.logs());
}

#[tokio::test]
async fn redis_worker_processes_ingest_swipe_files_and_survive_a_killed_worker() {
    let mut c = Cluster::start(1).await;
    let org = c.org("Swipe", "1.00");
    let samples = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/samples");
    let coffee = std::fs::read(format!("{samples}/coffee.png")).unwrap();
    let r = swipe_upload(&c, &org, coffee).await.expect(202, None);
    let id = r.id();
    // SIGKILL the only worker right away (before or during the ingest), then start another:
    // the job is taken over after the visibility timeout and the design still becomes ready.
    c.kill_worker(0);
    c.add_worker();
    swipe_ready_count(&c, &org, 1).await;
    let got = c
        .call(Method::GET, &format!("/v1/swipe-files/{id}"), &org, None)
        .await
        .expect(200, None);
    assert_eq!(got.body["data"]["status"], "ready");
    assert!(got.body["data"]["thumbnail_url"].is_string());

    // The operator's data-source commands; the running API ingests the import.
    let folder = tempfile::tempdir().unwrap();
    std::fs::copy(
        format!("{samples}/rocket.jpg"),
        folder.path().join("rocket.jpg"),
    )
    .unwrap();
    let src = c.admin(&["data-source", "create", "--name", "Launches", "--default"]);
    let src_id = src["id"].as_str().unwrap().to_string();
    let imported = c.admin(&[
        "data-source",
        "import",
        "--id",
        &src_id,
        "--folder",
        folder.path().to_str().unwrap(),
    ]);
    assert_eq!(imported["imported"].as_array().unwrap().len(), 1);
    swipe_ready_count(&c, &org, 2).await;
    let managed = c
        .call(Method::GET, "/v1/swipe-files?include_own=false", &org, None)
        .await
        .expect(200, None);
    assert_eq!(managed.body["data"][0]["is_managed"], true);
    assert_eq!(managed.body["data"][0]["data_source_id"], src_id.as_str());
    let hits = c
        .call(
            Method::POST,
            "/v1/swipe-files/search",
            &org,
            Some(json!({"query": "coffee"})),
        )
        .await
        .expect(200, None);
    assert_eq!(hits.body["data"][0]["id"], id.as_str());
}
