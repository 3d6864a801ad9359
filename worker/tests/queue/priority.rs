//! Priority: background jobs (swipe-file ingest) wait while image-ad jobs are queued, so an
//! ad submitted behind a batch of ingests is taken next; the ingests all still run.

use adforge_worker::{IngestSwipeFileJob, Job};

use crate::{Kind, PATIENCE, both_backends, claim_within, job, test_config};

both_backends!(
    an_ad_submitted_after_ingest_jobs_is_taken_first,
    ingest_jobs_alone_run_in_order,
    an_interactive_claim_never_starts_a_waiting_ingest
);

fn ingest(n: usize) -> Job {
    Job::IngestSwipeFile(IngestSwipeFileJob {
        swipe_file_id: format!("sf_prio{n:03}"),
        org_id: None,
        blob_key: format!("swipe-files/sf_prio{n:03}/original.png"),
        fetch_url: None,
        hints: None,
    })
}

async fn an_ad_submitted_after_ingest_jobs_is_taken_first(kind: Kind) {
    let t = kind.start(test_config()).await;
    let q = t.queue.as_ref();
    // One ingest is already running (claimed) when the batch and then the ad arrive, as at
    // the first start with the default collection.
    q.enqueue(ingest(0)).await.unwrap();
    let running = claim_within(q, "w1", PATIENCE).await.unwrap();
    assert_eq!(running.job, ingest(0));
    for n in 1..=10 {
        q.enqueue(ingest(n)).await.unwrap();
    }
    let ad = job("ia_prio");
    q.enqueue(ad.clone()).await.unwrap();
    q.ack(&running).await.unwrap();

    let first = claim_within(q, "w1", PATIENCE).await.unwrap();
    assert_eq!(first.job, ad, "the ad is taken before the waiting ingests");
    // A second ad arriving while ingests wait is also taken before them.
    q.enqueue(job("ia_prio2")).await.unwrap();
    let second = claim_within(q, "w2", PATIENCE).await.unwrap();
    assert_eq!(second.job, job("ia_prio2"));
    q.ack(&first).await.unwrap();
    q.ack(&second).await.unwrap();
    // Then every ingest runs, oldest first, each once.
    for n in 1..=10 {
        let c = claim_within(q, "w1", PATIENCE)
            .await
            .unwrap_or_else(|| panic!("ingest {n} was never delivered"));
        assert_eq!(c.job, ingest(n));
        q.ack(&c).await.unwrap();
    }
    assert!(
        q.claim("w1", std::time::Duration::from_millis(300))
            .await
            .unwrap()
            .is_none()
    );
}

async fn ingest_jobs_alone_run_in_order(kind: Kind) {
    let t = kind.start(test_config()).await;
    let q = t.queue.as_ref();
    for n in 0..5 {
        q.enqueue(ingest(n)).await.unwrap();
    }
    let stats = q.stats().await.unwrap();
    assert_eq!(stats.jobs, 5, "waiting background jobs count as queued");
    for n in 0..5 {
        let c = claim_within(q, "w1", PATIENCE).await.unwrap();
        assert_eq!(c.job, ingest(n));
        q.ack(&c).await.unwrap();
    }
}

/// The slot kept for interactive work (`claim_interactive`, the in-process workers' extra
/// slot) leaves waiting ingests to the other slots and takes an ad submitted behind them.
async fn an_interactive_claim_never_starts_a_waiting_ingest(kind: Kind) {
    let t = kind.start(test_config()).await;
    let q = t.queue.as_ref();
    for n in 0..3 {
        q.enqueue(ingest(n)).await.unwrap();
    }
    let none = q
        .claim_interactive("w-interactive", std::time::Duration::from_millis(300))
        .await
        .unwrap();
    assert!(
        none.is_none(),
        "an ingest went to the interactive slot: {none:?}"
    );
    q.enqueue(job("ia_lane")).await.unwrap();
    let ad = q
        .claim_interactive("w-interactive", PATIENCE)
        .await
        .unwrap()
        .expect("the ad reaches the interactive slot");
    assert_eq!(ad.job, job("ia_lane"));
    q.ack(&ad).await.unwrap();
    // The ingests are all still there for the other slots, in order.
    for n in 0..3 {
        let c = claim_within(q, "w1", PATIENCE).await.unwrap();
        assert_eq!(c.job, ingest(n));
        q.ack(&c).await.unwrap();
    }
}
