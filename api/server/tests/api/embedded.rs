//! The job system's behaviours in the embedded mode (in-process queue and workers), against
//! the in-process test server. The same behaviours through redis-server and separate
//! `adforge serve` / `adforge worker` processes are tested by the top-level `tests/` crate
//! (`tests/e2e/cluster.rs`), with the same ad flows (`flows.rs`).

use crate::flows::{After, Api, RefServer, create, ready, settled, twenty_at_once};
use crate::support::{Org, TestServer};

/// The in-process server, through its own base URL.
struct Embedded {
    s: TestServer,
    http: reqwest::Client,
}

impl Api for Embedded {
    fn base(&self) -> &str {
        &self.s.base
    }
    fn client(&self) -> &reqwest::Client {
        &self.http
    }
}

async fn embedded(adjust: impl FnOnce(&mut adforge::cli::ServeArgs)) -> (Embedded, Org) {
    let s = TestServer::start_with(adjust).await;
    let org = s.org_unlimited("Embedded").await;
    (
        Embedded {
            s,
            http: reqwest::Client::new(),
        },
        org,
    )
}

async fn embedded_top_up(e: &Embedded, org: &Org, cents: i64) {
    adforge_api::store::query(
        "UPDATE wallets SET balance_cents = balance_cents + ? WHERE org_id = ?",
    )
    .bind(cents)
    .bind(&org.id)
    .execute(&e.s.db.write)
    .await
    .expect("top up");
}

async fn embedded_wallet(e: &Embedded, org: &Org) -> (i64, i64) {
    adforge_api::store::query_as("SELECT balance_cents, held_cents FROM wallets WHERE org_id = ?")
        .bind(&org.id)
        .fetch_one(&e.s.db.read)
        .await
        .expect("wallet")
}

async fn embedded_ledger(e: &Embedded, org: &Org, kind: &str) -> i64 {
    adforge_api::store::query_scalar(
        "SELECT COUNT(*) FROM wallet_ledger WHERE org_id = ? AND kind = ?",
    )
    .bind(&org.id)
    .bind(kind)
    .fetch_one(&e.s.db.read)
    .await
    .expect("ledger")
}

/// 20 concurrent creates against a balance for 10 flat ads: exactly 10 admitted. (No
/// in-process workers: admission is decided by the holds alone, and the ads need not
/// render for it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_twenty_concurrent_creates_admit_exactly_ten() {
    let (e, org) = embedded(|a| a.workers = 0).await;
    let r = ready(&e, &org).await;
    embedded_top_up(&e, &org, 1000).await;
    let (accepted, refused) = twenty_at_once(&e.s.base, &org, r.flat()).await;
    assert_eq!((accepted, refused), (10, 10));
    assert_eq!(embedded_wallet(&e, &org).await, (1000, 1000));
    assert_eq!(embedded_ledger(&e, &org, "hold").await, 10);
}

/// A pipeline that keeps failing (its reference refuses every worker fetch) ends `failed`
/// with PIPELINE_ERROR once the attempts are spent; nothing is charged, the hold released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_failing_pipeline_fails_without_charge() {
    let (e, org) = embedded(|a| {
        a.queue.visibility_timeout_ms = 1500;
        a.queue.max_attempts = 2;
    })
    .await;
    let r = ready(&e, &org).await;
    embedded_top_up(&e, &org, 500).await;
    let refusing = RefServer::start(After::Refuse).await;
    let id = create(&e, &org, r.body(&refusing.url, false)).await;
    drop(refusing);
    let d = settled(&e, &org, &id, String::new).await;
    assert_eq!(d["status"], "failed", "{d}");
    assert_eq!(d["error"]["code"], "PIPELINE_ERROR", "{d}");
    assert_eq!(embedded_wallet(&e, &org).await, (500, 0), "nothing charged");
    assert_eq!(embedded_ledger(&e, &org, "charge").await, 0);
    assert_eq!(embedded_ledger(&e, &org, "release").await, 1);
}
