//! Job delivery: exactly one consumer per claim, reclaim after the visibility timeout,
//! heartbeats, retries with backoff, attempts running out, dedup by job id.

use std::time::Duration;

use adforge_worker::{EnqueueOutcome, Event, RetryOutcome};

use crate::{
    Kind, PATIENCE, both_backends, claim_within, collect_events, completed, job, no_more_events,
    test_config,
};

both_backends!(
    enqueue_claim_complete_delivers_once,
    enqueue_is_deduplicated_while_live,
    unacked_claim_is_reclaimed_after_visibility_timeout,
    heartbeats_keep_a_live_claim,
    retry_redelivers_after_backoff_as_next_attempt,
    retries_exhausted_fail_with_pipeline_error,
    claims_that_keep_expiring_fail_with_pipeline_error,
    fail_publishes_its_code_and_drops_the_job,
    release_gives_the_job_back_as_the_same_attempt,
    finishing_a_lost_claim_publishes_nothing_twice,
);

async fn enqueue_claim_complete_delivers_once(kind: Kind) {
    let t = kind.start(test_config()).await;
    let q = t.queue.as_ref();
    let j = job("ia_once");
    assert_eq!(
        q.enqueue(j.clone()).await.unwrap(),
        EnqueueOutcome::Queued(j.job_id())
    );

    let claimed = claim_within(q, "w1", PATIENCE)
        .await
        .expect("the job is delivered");
    assert_eq!(
        (claimed.job_id.as_str(), claimed.attempt),
        (j.job_id().as_str(), 1)
    );
    assert_eq!(claimed.job, j, "the payload arrives whole");
    // Another consumer gets nothing while the claim is live.
    assert!(
        q.claim("w2", Duration::from_millis(100))
            .await
            .unwrap()
            .is_none()
    );

    q.complete(&claimed, completed(&j)).await.unwrap();
    let events = collect_events(q, 1, PATIENCE).await;
    assert!(
        matches!(&events[..], [Event::Completed(c)] if c.ad_id == "ia_once"),
        "{events:?}"
    );
    // Nothing is delivered again, not even after a visibility timeout.
    tokio::time::sleep(t.queue.config().visibility_timeout * 2).await;
    assert!(
        q.claim("w2", Duration::from_millis(300))
            .await
            .unwrap()
            .is_none()
    );
    assert!(no_more_events(q).await.is_empty());
}

async fn enqueue_is_deduplicated_while_live(kind: Kind) {
    let t = kind.start(test_config()).await;
    let q = t.queue.as_ref();
    let j = job("ia_dedup");
    q.enqueue(j.clone()).await.unwrap();
    assert_eq!(
        q.enqueue(j.clone()).await.unwrap(),
        EnqueueOutcome::AlreadyLive(j.job_id())
    );
    let claimed = claim_within(q, "w1", PATIENCE).await.unwrap();
    assert_eq!(
        q.enqueue(j.clone()).await.unwrap(),
        EnqueueOutcome::AlreadyLive(j.job_id()),
        "claimed jobs are live"
    );
    assert!(
        q.claim("w1", Duration::from_millis(100))
            .await
            .unwrap()
            .is_none(),
        "one copy only"
    );
    q.ack(&claimed).await.unwrap();
    assert_eq!(
        q.enqueue(j.clone()).await.unwrap(),
        EnqueueOutcome::Queued(j.job_id()),
        "a finished job can be queued again"
    );
}

async fn unacked_claim_is_reclaimed_after_visibility_timeout(kind: Kind) {
    let t = kind.start(test_config()).await;
    let other = t.other_node().await;
    let j = job("ia_reclaim");
    t.queue.enqueue(j.clone()).await.unwrap();
    let first = claim_within(t.queue.as_ref(), "dead-worker", PATIENCE)
        .await
        .unwrap();
    assert_eq!(first.attempt, 1);
    // dead-worker never heartbeats nor acks: another node takes the job over.
    let second = claim_within(other.as_ref(), "live-worker", PATIENCE)
        .await
        .expect("reclaimed");
    assert_eq!(
        (second.job_id.as_str(), second.attempt),
        (j.job_id().as_str(), 2)
    );
    assert_eq!(second.consumer, "live-worker");
    // The dead worker's heartbeat now reports the claim lost.
    assert!(!t.queue.heartbeat(&first).await.unwrap());
    other.complete(&second, completed(&j)).await.unwrap();
    assert_eq!(collect_events(other.as_ref(), 1, PATIENCE).await.len(), 1);
}

async fn heartbeats_keep_a_live_claim(kind: Kind) {
    // A long visibility timeout against frequent heartbeats: a wide margin for slow machines.
    let config = adforge_worker::QueueConfig {
        visibility_timeout: Duration::from_millis(1000),
        ..test_config()
    };
    let t = kind.start(config).await;
    let other = t.other_node().await;
    t.queue.enqueue(job("ia_heartbeat")).await.unwrap();
    let claimed = claim_within(t.queue.as_ref(), "busy-worker", PATIENCE)
        .await
        .unwrap();

    let queue = t.queue.clone();
    let held = claimed.clone();
    let beating = tokio::spawn(async move {
        for _ in 0..60 {
            assert!(
                queue.heartbeat(&held).await.unwrap(),
                "the claim stays ours"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    // For three visibility timeouts the other worker finds nothing to reclaim.
    let stolen = other
        .claim("thief", Duration::from_millis(3000))
        .await
        .unwrap();
    assert!(
        stolen.is_none(),
        "a heart-beaten claim was reclaimed: {stolen:?}"
    );
    beating.await.unwrap();
    // Once the heartbeats stop, the claim expires like any other.
    let reclaimed = claim_within(other.as_ref(), "thief", PATIENCE)
        .await
        .unwrap();
    assert_eq!(reclaimed.attempt, 2);
}

async fn retry_redelivers_after_backoff_as_next_attempt(kind: Kind) {
    let t = kind.start(test_config()).await;
    let q = t.queue.as_ref();
    let j = job("ia_retry");
    q.enqueue(j.clone()).await.unwrap();
    let first = claim_within(q, "w1", PATIENCE).await.unwrap();
    let outcome = q
        .retry(&first, Duration::from_millis(200), "fetch timed out")
        .await
        .unwrap();
    assert_eq!(outcome, RetryOutcome::Scheduled { next_attempt: 2 });
    assert_eq!(
        q.enqueue(j.clone()).await.unwrap(),
        adforge_worker::EnqueueOutcome::AlreadyLive(j.job_id()),
        "a job waiting for its retry is live"
    );
    let second = claim_within(q, "w2", PATIENCE)
        .await
        .expect("redelivered after the backoff");
    assert_eq!(
        (second.job_id.as_str(), second.attempt),
        (j.job_id().as_str(), 2)
    );
    assert_eq!(second.job, j);
    q.ack(&second).await.unwrap();
    assert!(
        no_more_events(q).await.is_empty(),
        "a retry publishes nothing"
    );
}

async fn retries_exhausted_fail_with_pipeline_error(kind: Kind) {
    let t = kind.start(test_config()).await;
    let q = t.queue.as_ref();
    q.enqueue(job("ia_doomed")).await.unwrap();
    for attempt in 1..=3 {
        let claimed = claim_within(q, "w1", PATIENCE)
            .await
            .expect("each attempt is delivered");
        assert_eq!(claimed.attempt, attempt);
        let outcome = q
            .retry(&claimed, Duration::from_millis(50), "renderer crashed")
            .await
            .unwrap();
        if attempt < 3 {
            assert_eq!(
                outcome,
                RetryOutcome::Scheduled {
                    next_attempt: attempt + 1
                }
            );
        } else {
            assert_eq!(outcome, RetryOutcome::GaveUp);
        }
    }
    let events = collect_events(q, 1, PATIENCE).await;
    match &events[..] {
        [Event::Failed(f)] => {
            assert_eq!(
                (f.ad_id.as_str(), f.code.as_str()),
                ("ia_doomed", "PIPELINE_ERROR")
            );
            assert_eq!(f.message, "renderer crashed");
        }
        other => panic!("expected one Failed event, got {other:?}"),
    }
    assert!(
        q.claim("w1", Duration::from_millis(500))
            .await
            .unwrap()
            .is_none(),
        "never delivered again"
    );
    assert!(no_more_events(q).await.is_empty());
}

async fn claims_that_keep_expiring_fail_with_pipeline_error(kind: Kind) {
    let t = kind.start(test_config()).await;
    let q = t.queue.as_ref();
    q.enqueue(job("ia_poison")).await.unwrap();
    // Three workers in a row die holding the job (claim, then silence).
    for attempt in 1..=3 {
        let claimed = claim_within(q, &format!("doomed-{attempt}"), PATIENCE)
            .await
            .unwrap();
        assert_eq!(claimed.attempt, attempt);
    }
    // The fourth delivery would exceed max_attempts: the ad fails instead.
    assert!(
        claim_within(q, "survivor", Duration::from_secs(2))
            .await
            .is_none()
    );
    let events = collect_events(q, 1, PATIENCE).await;
    assert!(
        matches!(&events[..], [Event::Failed(f)] if f.code == "PIPELINE_ERROR" && f.ad_id == "ia_poison"),
        "{events:?}"
    );
}

async fn fail_publishes_its_code_and_drops_the_job(kind: Kind) {
    let t = kind.start(test_config()).await;
    let q = t.queue.as_ref();
    q.enqueue(job("ia_abort")).await.unwrap();
    let claimed = claim_within(q, "w1", PATIENCE).await.unwrap();
    q.fail(
        &claimed,
        "PIPELINE_ERROR",
        "reference image does not decode",
    )
    .await
    .unwrap();
    let events = collect_events(q, 1, PATIENCE).await;
    assert!(
        matches!(&events[..], [Event::Failed(f)] if f.message == "reference image does not decode"),
        "{events:?}"
    );
    tokio::time::sleep(t.queue.config().visibility_timeout * 2).await;
    assert!(
        q.claim("w2", Duration::from_millis(300))
            .await
            .unwrap()
            .is_none()
    );
}

async fn release_gives_the_job_back_as_the_same_attempt(kind: Kind) {
    let t = kind.start(test_config()).await;
    let q = t.queue.as_ref();
    q.enqueue(job("ia_release")).await.unwrap();
    let first = claim_within(q, "stopping-worker", PATIENCE).await.unwrap();
    q.release(&first).await.unwrap();
    let again = claim_within(q, "w2", PATIENCE).await.unwrap();
    assert_eq!((again.job_id.as_str(), again.attempt), ("ia_release@v1", 1));
}

async fn finishing_a_lost_claim_publishes_nothing_twice(kind: Kind) {
    let t = kind.start(test_config()).await;
    let other = t.other_node().await;
    let j = job("ia_slow");
    t.queue.enqueue(j.clone()).await.unwrap();
    let slow = claim_within(t.queue.as_ref(), "slow", PATIENCE)
        .await
        .unwrap();
    let fast = claim_within(other.as_ref(), "fast", PATIENCE)
        .await
        .unwrap();
    assert_eq!(fast.attempt, 2);
    // Both finish; the first finisher publishes, the second is a no-op.
    other.complete(&fast, completed(&j)).await.unwrap();
    t.queue.complete(&slow, completed(&j)).await.unwrap();
    let events = collect_events(t.queue.as_ref(), 2, Duration::from_secs(2)).await;
    assert_eq!(events.len(), 1, "{events:?}");
}
