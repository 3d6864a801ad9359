//! Redis housekeeping: finished entries leave the streams, and a worker that shut down
//! leaves no consumer behind, so neither grows with time and deploys.

use std::time::Duration;

use adforge_worker::{WorkerOptions, redis, run_worker};

use crate::{Kind, PATIENCE, claim_within, collect_events, completed, job, test_config};

async fn consumers(url: &str, group: &str) -> Vec<String> {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let stream = if group == "workers" {
        adforge_worker::queue::jobs_stream("test")
    } else {
        "test:events".to_owned()
    };
    let info: Vec<std::collections::HashMap<String, redis::Value>> = redis::cmd("XINFO")
        .arg("CONSUMERS")
        .arg(&stream)
        .arg(group)
        .query_async(&mut conn)
        .await
        .unwrap();
    info.iter()
        .filter_map(|c| match c.get("name") {
            Some(redis::Value::BulkString(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        })
        .collect()
}

async fn stream_len(url: &str, stream: &str) -> i64 {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("XLEN")
        .arg(stream)
        .query_async(&mut conn)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_work_leaves_no_entries_and_retired_consumers_leave_no_names() {
    let t = Kind::Redis.start(test_config()).await;
    let url = t.server.as_ref().unwrap().url();
    let handler = std::sync::Arc::new(Instant);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let options = WorkerOptions {
        claim_wait: Duration::from_millis(200),
        ..WorkerOptions::new("w-retiring")
    };
    let worker = tokio::spawn(run_worker(t.queue.clone(), handler, options, async move {
        let _ = stopped.await;
    }));
    for i in 0..3 {
        t.queue.enqueue(job(&format!("ia_h{i}"))).await.unwrap();
    }
    assert_eq!(collect_events(t.queue.as_ref(), 3, PATIENCE).await.len(), 3);
    assert_eq!(
        stream_len(&url, &adforge_worker::queue::jobs_stream("test")).await,
        0,
        "finished jobs are deleted"
    );
    assert_eq!(
        stream_len(&url, "test:events").await,
        0,
        "acknowledged events are deleted"
    );

    stop.send(()).unwrap();
    worker.await.unwrap();
    // A consumer holding a claim is kept: retiring it would lose the job.
    t.queue.enqueue(job("ia_held")).await.unwrap();
    let _held = claim_within(t.queue.as_ref(), "w-holding", PATIENCE)
        .await
        .unwrap();
    t.queue.retire("w-holding").await.unwrap();

    let names = consumers(&url, "workers").await;
    assert!(!names.contains(&"w-retiring".to_owned()), "{names:?}");
    assert!(names.contains(&"w-holding".to_owned()), "{names:?}");
}

/// Completes every job at once.
struct Instant;

impl adforge_worker::JobHandler for Instant {
    fn handle<'a>(
        &'a self,
        job: adforge_worker::Job,
        _progress: adforge_worker::ProgressSink,
    ) -> futures_util::future::BoxFuture<
        'a,
        Result<adforge_worker::AdCompleted, adforge_worker::JobError>,
    > {
        Box::pin(async move { Ok(completed(&job)) })
    }
}
