//! PostgreSQL's write locks across two API nodes (issue 26): writes of one organisation
//! are serialised (the cluster lock shared plus the organisation's lock), writes of
//! different organisations are not, and the guarantees the single cluster lock gave hold
//! under concurrent requests sent to both nodes: the wallet's check-then-hold, an
//! idempotency key's single run, and a cap (a design pack's 500 designs).
//!
//! Every test runs two `adforge` servers in this process on one fresh database of the
//! binary's throwaway PostgreSQL cluster (whatever `ADFORGE_TEST_POSTGRES` says).

use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::support::{Org, Reply, TestServer, eventually, post_brand_in_background, send};

/// Two nodes on one PostgreSQL database, with no in-process workers.
async fn two_nodes() -> (TestServer, TestServer, String) {
    let url = crate::postgres::shared().create_database();
    let setup = |a: &mut adforge::cli::ServeArgs| {
        a.db.database_url = Some(url.clone());
        a.workers = 0;
        a.default_collection = Some("/nonexistent-default-collection".into());
    };
    let n1 = TestServer::start_with(setup).await;
    let n2 = TestServer::start_with(setup).await;
    (n1, n2, url)
}

/// Sessions of this database waiting on an advisory lock.
fn advisory_waiters(url: &str) -> i64 {
    let db = url.rsplit('/').next().unwrap();
    crate::postgres::shared()
        .psql(
            url,
            &format!(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
                 WHERE l.locktype = 'advisory' AND NOT l.granted AND a.datname = '{db}'"
            ),
        )
        .unwrap()
        .parse()
        .unwrap()
}

/// Liveness bound for a request that must not wait on a lock (a hang fails the test
/// instead of stalling the suite; not a measurement).
const MUST_NOT_BLOCK: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_organisations_write_passes_an_open_transaction_and_the_same_one_waits() {
    let (n1, n2, url) = two_nodes().await;
    let a = n1.org("A").await;
    let b = n1.org("B").await;

    // Node 1 holds a write transaction of organisation A open.
    let held = n1.db.begin_write_for(&a.id).await.unwrap();

    // Organisation B writes through node 2 meanwhile.
    let r = tokio::time::timeout(
        MUST_NOT_BLOCK,
        n2.post(&b, "/v1/brands", json!({"name": "B's brand"})),
    )
    .await
    .expect("a write of another organisation does not wait for A's transaction");
    r.expect(201, None);

    // A's own write through node 2 waits for A's transaction...
    let pending = post_brand_in_background(&n2.base, &a.key, "A's brand");
    assert!(
        eventually(|| async { advisory_waiters(&url) >= 1 }).await,
        "A's second write waits on an advisory lock"
    );
    assert!(
        !pending.is_finished(),
        "A's write waits while A's transaction is open"
    );

    // ...and goes through once it ends.
    held.commit().await.unwrap();
    let r = tokio::time::timeout(MUST_NOT_BLOCK, pending)
        .await
        .expect("A's write proceeds after the commit")
        .unwrap();
    r.expect(201, None);
    assert_eq!(n1.get(&a, "/v1/brands").await.body["total_count"], 1);
    assert_eq!(n1.get(&b, "/v1/brands").await.body["total_count"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_wide_write_excludes_every_organisation() {
    let (n1, n2, url) = two_nodes().await;
    let b = n1.org("B").await;
    let held = n1.db.begin_write().await.unwrap();
    let pending = post_brand_in_background(&n2.base, &b.key, "B's brand");
    assert!(eventually(|| async { advisory_waiters(&url) >= 1 }).await);
    assert!(!pending.is_finished());
    held.commit().await.unwrap();
    pending.await.unwrap().expect(201, None);
}

/// Sessions of this database left inside a transaction with nothing running.
fn idle_in_transaction(url: &str) -> i64 {
    let db = url.rsplit('/').next().unwrap();
    crate::postgres::shared()
        .psql(
            url,
            &format!(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE datname = '{db}' AND state LIKE 'idle in transaction%'"
            ),
        )
        .unwrap()
        .parse()
        .unwrap()
}

/// A client that hangs up while its write waits for the organisation's lock leaves no
/// transaction behind: before the fix the connection went back to the pool inside the
/// `BEGIN` it had sent, holding the lock once granted, and every later write of the
/// organisation on another connection waited for it (wrk's cancelled requests at the end of
/// a run stalled the PostgreSQL column of `scripts/bench-api`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_cancelled_while_waiting_for_its_lock_leaves_no_transaction_open() {
    let (n1, n2, url) = two_nodes().await;
    let a = n1.org("A").await;
    let held = n1.db.begin_write_for(&a.id).await.unwrap();
    let pending = post_brand_in_background(&n2.base, &a.key, "Never made");
    assert!(eventually(|| async { advisory_waiters(&url) >= 1 }).await);
    // The client hangs up (its connection closes), then the lock is released.
    pending.abort();
    assert!(pending.await.unwrap_err().is_cancelled());
    tokio::time::sleep(Duration::from_millis(200)).await;
    held.commit().await.unwrap();

    assert!(
        eventually(|| async { idle_in_transaction(&url) == 0 && advisory_waiters(&url) == 0 })
            .await,
        "{} sessions left idle in a transaction",
        idle_in_transaction(&url)
    );
    // Every pooled connection of node 2 is usable: each of several writes goes through.
    for i in 0..20 {
        let r = tokio::time::timeout(
            MUST_NOT_BLOCK,
            n2.post(&a, "/v1/brands", json!({"name": format!("Brand {i}")})),
        )
        .await
        .expect("a later write of the organisation does not wait on a lost transaction");
        r.expect(201, None);
    }
    assert_eq!(n1.get(&a, "/v1/brands").await.body["total_count"], 20);
}

/// A catalog, a reference uploaded to `node` (each node serves its own files) and the
/// body of a flat ad.
async fn ad_body(node: &TestServer, org: &Org) -> serde_json::Value {
    let (c, src) = node.ad_inputs(org).await;
    json!({"reference_ad_url": src, "brand_id": c.brand,
           "product_id": c.product, "audience_id": c.audience})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_on_two_nodes_never_hold_more_than_the_balance() {
    let (n1, n2, _) = two_nodes().await;
    let org = n1.org("Wallet").await;
    let bodies = [ad_body(&n1, &org).await, ad_body(&n2, &org).await];
    adforge_api::store::query("UPDATE wallets SET balance_cents = 500 WHERE org_id = ?")
        .bind(&org.id)
        .execute(&mut *n1.db.write_conn().await.unwrap())
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..16 {
        let (node, body) = if i % 2 == 0 {
            (&n1, bodies[0].clone())
        } else {
            (&n2, bodies[1].clone())
        };
        tasks.push(tokio::spawn(send(
            node.request(Method::POST, "/v1/image-ads")
                .header("x-api-key", &org.key)
                .json(&body),
        )));
    }
    let (mut accepted, mut refused) = (0, 0);
    for t in tasks {
        let r: Reply = t.await.unwrap();
        match r.status.as_u16() {
            202 => accepted += 1,
            402 => {
                assert_eq!(r.code(), "INSUFFICIENT_BALANCE");
                refused += 1;
            }
            other => panic!("unexpected {other}: {}", r.body),
        }
    }
    assert_eq!((accepted, refused), (5, 11), "$5.00 buys five $1.00 ads");
    let (balance, held, holds): (i64, i64, i64) = adforge_api::store::query_as(
        "SELECT balance_cents, held_cents, \
         (SELECT count(*) FROM wallet_ledger WHERE org_id = ?1 AND kind = 'hold') FROM wallets WHERE org_id = ?1",
    )
    .bind(&org.id)
    .fetch_one(&n2.db.read)
    .await
    .unwrap();
    assert_eq!((balance, held, holds), (500, 500, 5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotency_key_sent_to_both_nodes_at_once_runs_once() {
    let (n1, n2, _) = two_nodes().await;
    let org = n1.org("Idem").await;
    for round in 0..3 {
        let key = format!("same-{round}");
        let mut tasks = Vec::new();
        for i in 0..8 {
            let node = if i % 2 == 0 { &n1 } else { &n2 };
            tasks.push(tokio::spawn(send(
                node.request(Method::POST, "/v1/brands")
                    .header("x-api-key", &org.key)
                    .header("idempotency-key", &key)
                    .json(&json!({"name": format!("Race {round}")})),
            )));
        }
        let mut ids = Vec::new();
        for t in tasks {
            let r: Reply = t.await.unwrap();
            match r.status.as_u16() {
                201 => ids.push(r.id()),
                409 => assert_eq!(r.code(), "IDEMPOTENCY_CONFLICT"),
                other => panic!("unexpected {other}: {}", r.body),
            }
        }
        assert!(!ids.is_empty());
        assert!(
            ids.iter().all(|id| *id == ids[0]),
            "every 201 answers the one brand: {ids:?}"
        );
    }
    assert_eq!(
        n1.get(&org, "/v1/brands").await.body["total_count"],
        3,
        "one brand per key whatever the interleaving"
    );
}

/// The cap's count must see every other write of the organisation: a transaction of the
/// organisation holding 18 more designs is open on node 1 while twelve adds arrive at both
/// nodes; they wait for it, so all of them see 498 and are refused, and the last two fit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pack_filled_from_two_nodes_at_once_stops_at_500() {
    let (n1, n2, url) = two_nodes().await;
    let org = n1.org("Packs").await;
    let ids: Vec<String> = (0..560).map(|i| format!("sf_cap{i:04}")).collect();
    let mut tx = n1.db.begin_write().await.unwrap();
    for id in &ids {
        adforge_api::store::query(
            "INSERT INTO swipe_files (id, org_id, source, blob_key, status, aspect_ratio, industry, created_at, updated_at) \
             VALUES (?, ?, 'upload', 'x', 'ready', '1:1', 'food_beverages_tobacco', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
        )
        .bind(id)
        .bind(&org.id)
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    let pack = n1
        .post(&org, "/v1/design-packs", json!({"title": "Capped"}))
        .await
        .expect(201, None)
        .id();
    let items = format!("/v1/design-packs/{pack}/items");
    for chunk in ids[..480].chunks(96) {
        n1.post(&org, &items, json!({"swipe_file_ids": chunk}))
            .await
            .expect(200, None);
    }

    // Another write of the organisation, not committed yet, adds 18.
    let mut held = n1.db.begin_write_for(&org.id).await.unwrap();
    for id in &ids[480..498] {
        adforge_api::store::query(
            "INSERT INTO design_pack_items (pack_id, swipe_file_id, added_at) VALUES (?, ?, '2026-01-01T00:00:00.000Z')",
        )
        .bind(&pack)
        .bind(id)
        .execute(&mut *held)
        .await
        .unwrap();
    }
    // Twelve adds of four new designs each, half on each node.
    let mut tasks = Vec::new();
    for (i, chunk) in ids[500..548].chunks(4).enumerate() {
        let node = if i % 2 == 0 { &n1 } else { &n2 };
        tasks.push(tokio::spawn(send(
            node.request(Method::POST, &items)
                .header("x-api-key", &org.key)
                .json(&json!({"swipe_file_ids": chunk})),
        )));
    }
    assert!(
        eventually(|| async { advisory_waiters(&url) >= 1 }).await,
        "the adds wait for the organisation's open transaction"
    );
    held.commit().await.unwrap();
    for t in tasks {
        let r: Reply = t.await.unwrap();
        assert_eq!(r.status.as_u16(), 409, "{}", r.body);
        assert_eq!(r.code(), "DESIGN_PACK_FULL");
    }
    n2.post(&org, &items, json!({"swipe_file_ids": &ids[498..500]}))
        .await
        .expect(200, None);
    n1.post(&org, &items, json!({"swipe_file_ids": &ids[548..549]}))
        .await
        .expect(409, Some("DESIGN_PACK_FULL"));
    let n: i64 = adforge_api::store::query_scalar(
        "SELECT count(*) FROM design_pack_items WHERE pack_id = ?",
    )
    .bind(&pack)
    .fetch_one(&n2.db.read)
    .await
    .unwrap();
    assert_eq!(n, 500);
}
