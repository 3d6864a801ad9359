//! A batch of image ads (issue 42) across real processes: an `adforge serve --workers 0`
//! API, a redis-server and `adforge worker` processes. A worker SIGKILLed mid-batch loses
//! nothing: another takes its job over after the visibility timeout, and every ad of the
//! batch ends once and is charged once; the batch's completion event is written once.
//!
//! No assertion here is about time: every wait is a generous polling deadline.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use crate::Operator;
use crate::cluster::Cluster;
use crate::flows::{Api, SETTLE_DEADLINE, charged_once, ready};

/// Ads in the batch: enough that a worker is still busy with it when it is killed.
const ADS: usize = 12;

async fn get(cluster: &Cluster, org: &crate::support::Org, path: &str) -> Value {
    cluster
        .call(Method::GET, path, org, None)
        .await
        .expect(200, None)
        .body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_sigkilled_mid_batch_leaves_every_ad_ended_once_and_charged_once() {
    let mut cluster = Cluster::start(0).await;
    let org = cluster.org("Batch survivor", "20.00");
    let r = ready(&cluster, &org).await;
    // One ad per audience of the product.
    for i in 1..ADS {
        cluster
            .call(
                Method::POST,
                "/v1/audiences",
                &org,
                Some(json!({"product_id": r.product, "name": format!("Audience {i}")})),
            )
            .await
            .expect(201, None);
    }
    let audiences: Vec<String> = get(
        &cluster,
        &org,
        &format!("/v1/audiences?product_id={}&limit=100", r.product),
    )
    .await["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(audiences.len(), ADS);

    let first = cluster.add_worker();
    let batch = cluster
        .call(
            Method::POST,
            "/v1/image-ad-batches",
            &org,
            Some(
                json!({"product_ids": [r.product], "reference_ad_urls": [r.reference],
                "audience_ids": audiences}),
            ),
        )
        .await
        .expect(202, None)
        .id();
    let path = format!("/v1/image-ad-batches/{batch}");

    // Mid-batch: at least one ad completed, and one in the worker's hands (a step past
    // `queued`), so the kill falls inside a job.
    let deadline = Instant::now() + SETTLE_DEADLINE;
    loop {
        let b = get(&cluster, &org, &path).await["data"].clone();
        assert_eq!(
            b["status"],
            "processing",
            "the batch ended before the worker was killed: {b}\n{}",
            cluster.logs()
        );
        let ads = get(
            &cluster,
            &org,
            &format!("/v1/image-ads?batch_id={batch}&status=processing&limit=100"),
        )
        .await;
        let running = ads["data"].as_array().unwrap().iter().any(|a| {
            a["progress"]["step"]
                .as_str()
                .is_some_and(|s| s != "queued")
        });
        if b["counts"]["completed"].as_i64().unwrap_or(0) >= 1 && running {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the worker never got going: {b}\n{}",
            cluster.logs()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cluster.kill_worker(first);
    let at_kill = get(&cluster, &org, &path).await["data"].clone();
    eprintln!("SIGKILLed the worker at {}", at_kill["counts"]);
    cluster.add_worker();

    let deadline = Instant::now() + SETTLE_DEADLINE * 2;
    let ended = loop {
        let b = get(&cluster, &org, &path).await["data"].clone();
        if b["status"] != "processing" {
            break b;
        }
        assert!(
            Instant::now() < deadline,
            "batch still processing: {b}\n{}",
            cluster.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(ended["status"], "completed", "{ended}\n{}", cluster.logs());
    assert_eq!(
        ended["counts"],
        json!({"processing": 0, "completed": ADS, "failed": 0, "cancelled": 0})
    );
    assert_eq!(ended["amount_charged"]["amount"], 100 * ADS);

    let w = cluster.wallet(&org);
    let ads = get(
        &cluster,
        &org,
        &format!("/v1/image-ads?batch_id={batch}&limit=100"),
    )
    .await;
    let ads = ads["data"].as_array().unwrap();
    assert_eq!(ads.len(), ADS);
    for ad in ads {
        let id = ad["id"].as_str().unwrap();
        assert_eq!(ad["status"], "completed", "{ad}");
        charged_once(&w, id, 100);
        // Ended once: one completion event per ad.
        let events = get(&cluster, &org, &format!("/v1/events?object_id={id}")).await;
        let completions = events["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "image_ad.completed")
            .count();
        assert_eq!(completions, 1, "{id}: {events}");
    }
    assert_eq!(
        (w["balance_cents"].as_i64(), w["held_cents"].as_i64()),
        (Some(2000 - 100 * ADS as i64), Some(0)),
        "{w}"
    );
    let events = get(
        &cluster,
        &org,
        &format!("/v1/events?type=image_ad_batch.completed&object_id={batch}"),
    )
    .await;
    assert_eq!(events["data"].as_array().unwrap().len(), 1, "{events}");
}
