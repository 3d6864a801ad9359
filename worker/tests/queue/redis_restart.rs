//! Redis restarted (SIGKILL, same folder and port) mid-run: nothing is lost, and the
//! reconnecting clients carry on.

use std::time::Duration;

use adforge_worker::{EnqueueOutcome, Event, WorkerOptions, run_worker};
use futures_util::FutureExt;
use tokio::time::Instant;

use crate::{Kind, PATIENCE, claim_within, collect_events, completed, job, test_config};

/// Retries an operation until Redis is back.
async fn until_ok<T, F>(mut op: impl FnMut() -> F) -> T
where
    F: std::future::Future<Output = Result<T, adforge_worker::Error>>,
{
    let deadline = Instant::now() + PATIENCE;
    loop {
        match op().await {
            Ok(v) => return v,
            Err(e) => {
                assert!(Instant::now() < deadline, "redis did not come back: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_claimed_and_published_work_survives_a_restart() {
    let mut t = Kind::Redis.start(test_config()).await;
    let q = t.queue.clone();
    for ad in ["ia_r1", "ia_r2", "ia_r3"] {
        q.enqueue(job(ad)).await.unwrap();
    }
    let unacked = claim_within(q.as_ref(), "crashing-worker", PATIENCE)
        .await
        .unwrap();
    q.publish(Event::Completed(completed(&job("ia_done"))))
        .await
        .unwrap();
    let unacked_event = q.read_events("api-1", 10, PATIENCE).await.unwrap();
    assert_eq!(unacked_event.len(), 1);

    t.server.as_mut().unwrap().restart();

    // The same client objects work again once they have reconnected.
    let mut delivered = vec![unacked.job_id.clone()];
    while delivered.len() < 4 {
        let claimed = claim_within(q.as_ref(), "w2", PATIENCE)
            .await
            .expect("every job is still delivered");
        until_ok(|| q.ack(&claimed)).await;
        delivered.push(claimed.job_id);
    }
    delivered.sort();
    // ia_r1 twice: claimed before the restart, never acknowledged, reclaimed after it.
    assert_eq!(delivered, ["ia_r1@v1", "ia_r1@v1", "ia_r2@v1", "ia_r3@v1"]);

    let events = collect_events(q.as_ref(), 1, PATIENCE).await;
    assert!(
        matches!(&events[..], [Event::Completed(c)] if c.ad_id == "ia_done"),
        "the unacknowledged event is redelivered: {events:?}"
    );

    let outcome = until_ok(|| q.enqueue(job("ia_new"))).await;
    assert_eq!(outcome, EnqueueOutcome::Queued("ia_new@v1".into()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_worker_rides_out_a_restart() {
    let mut t = Kind::Redis.start(test_config()).await;
    let handler = std::sync::Arc::new(SlowHandler);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let options = WorkerOptions {
        concurrency: 2,
        claim_wait: Duration::from_millis(200),
        backoff_base: Duration::from_millis(50),
        ..WorkerOptions::new("w1")
    };
    let worker = tokio::spawn(run_worker(t.queue.clone(), handler, options, async move {
        let _ = stopped.await;
    }));
    for i in 0..4 {
        t.queue.enqueue(job(&format!("ia_w{i}"))).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    t.server.as_mut().unwrap().restart();
    for i in 4..8 {
        let q = t.queue.clone();
        until_ok(|| q.enqueue(job(&format!("ia_w{i}")))).await;
    }
    // A job finished around the restart may complete twice (at least once); count ads.
    let mut events = Vec::new();
    let mut ids = std::collections::BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while ids.len() < 8 && Instant::now() < deadline {
        for e in collect_events(t.queue.as_ref(), 1, Duration::from_secs(1)).await {
            ids.insert(e.ad_id().to_owned());
            events.push(e);
        }
    }
    let ids: Vec<_> = ids.into_iter().collect();
    assert_eq!(
        ids,
        (0..8).map(|i| format!("ia_w{i}")).collect::<Vec<_>>(),
        "{events:?}"
    );
    assert!(
        events.iter().all(|e| matches!(e, Event::Completed(_))),
        "{events:?}"
    );
    stop.send(()).unwrap();
    worker.await.unwrap();
}

struct SlowHandler;

impl adforge_worker::JobHandler for SlowHandler {
    fn handle<'a>(
        &'a self,
        job: adforge_worker::Job,
        _progress: adforge_worker::ProgressSink,
    ) -> futures_util::future::BoxFuture<
        'a,
        Result<adforge_worker::AdCompleted, adforge_worker::JobError>,
    > {
        async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            Ok(completed(&job))
        }
        .boxed()
    }
}
