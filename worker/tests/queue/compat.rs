//! Mixed versions behind Redis: a job this build cannot read (a variant from a newer API
//! release) is left for other workers, and after the attempts run out the ad fails with
//! `PIPELINE_ERROR` instead of blocking the queue. A worker of the previous protocol version
//! is refused every job of this one, and a job of a newer protocol is left queued for a
//! worker that speaks it; neither loses the job.

use std::time::Duration;

use adforge_worker::protocol::PROTOCOL_VERSION;
use adforge_worker::queue::jobs_stream;
use adforge_worker::redis;
use adforge_worker::{Event, JobEnvelope};

use crate::{Kind, PATIENCE, claim_within, collect_events, job, no_more_events, test_config};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_from_a_newer_release_is_retried_then_fails() {
    let t = Kind::Redis.start(test_config()).await;
    let mut envelope: serde_json::Value =
        serde_json::from_str(&JobEnvelope::new(job("ia_future")).encode()).unwrap();
    envelope["job"]["type"] = serde_json::Value::from("render_video_ad");
    let client = redis::Client::open(t.server.as_ref().unwrap().url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let _: String = redis::cmd("XADD")
        .arg(jobs_stream("test"))
        .arg("*")
        .arg("job")
        .arg(envelope.to_string())
        .query_async(&mut conn)
        .await
        .unwrap();
    t.queue.enqueue(job("ia_today")).await.unwrap();

    // This build never hands the unreadable job to a handler, but the readable one flows.
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while tokio::time::Instant::now() < deadline {
        if let Some(claimed) = t
            .queue
            .claim("w1", Duration::from_millis(200))
            .await
            .unwrap()
        {
            seen.push(claimed.job_id.clone());
            t.queue.ack(&claimed).await.unwrap();
        }
    }
    assert_eq!(seen, ["ia_today@v1"]);
    let events = collect_events(t.queue.as_ref(), 1, PATIENCE).await;
    match &events[..] {
        [Event::Failed(f)] => {
            assert_eq!(
                (f.ad_id.as_str(), f.code.as_str()),
                ("ia_future", "PIPELINE_ERROR")
            );
            assert!(
                f.message.contains("no worker could read the job"),
                "{}",
                f.message
            );
        }
        other => panic!("expected one Failed event, got {other:?}"),
    }
}

/// What a worker of protocol version 1 does to claim, as its release's code does it: create
/// its group on `P:jobs` and read new entries, then look at its delayed and background keys.
async fn previous_worker_reads(conn: &mut redis::aio::MultiplexedConnection) -> usize {
    let _: Result<String, _> = redis::cmd("XGROUP")
        .arg("CREATE")
        .arg("test:jobs")
        .arg("workers")
        .arg("0")
        .arg("MKSTREAM")
        .query_async(conn)
        .await;
    let read: redis::Value = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg("workers")
        .arg("worker-v1")
        .arg("COUNT")
        .arg(10)
        .arg("STREAMS")
        .arg("test:jobs")
        .arg(">")
        .query_async(conn)
        .await
        .unwrap();
    let waiting: (usize, usize) = redis::pipe()
        .cmd("ZCARD")
        .arg("test:jobs:delayed")
        .cmd("LLEN")
        .arg("test:jobs:low")
        .query_async(conn)
        .await
        .unwrap();
    let entries = match read {
        redis::Value::Nil => 0,
        redis::Value::Array(streams) => streams.len(),
        redis::Value::Map(streams) => streams.len(),
        other => panic!("unexpected XREADGROUP reply {other:?}"),
    };
    entries + waiting.0 + waiting.1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_of_the_previous_protocol_is_refused_and_the_job_waits_for_this_one() {
    const { assert!(PROTOCOL_VERSION >= 2) };
    let t = Kind::Redis.start(test_config()).await;
    let client = redis::Client::open(t.server.as_ref().unwrap().url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    // A background job too: the previous release promotes `P:jobs:low` into its stream.
    let ingest = adforge_worker::Job::IngestSwipeFile(adforge_worker::IngestSwipeFileJob {
        swipe_file_id: "sf_new".into(),
        org_id: None,
        blob_key: "swipe-files/sf_new/original.png".into(),
        fetch_url: None,
        hints: None,
    });
    t.queue.enqueue(job("ia_new")).await.unwrap();
    t.queue.enqueue(ingest).await.unwrap();
    assert_eq!(t.queue_redis().previous_protocol().await.unwrap(), None);

    // The old worker finds nothing it could drop, however long it reads.
    for _ in 0..3 {
        assert_eq!(previous_worker_reads(&mut conn).await, 0);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // This build says which workers are refused, and why, in words an operator acts on.
    let previous = t.queue_redis().previous_protocol().await.unwrap().unwrap();
    assert_eq!(
        (previous.version, previous.stream.as_str(), previous.jobs),
        (PROTOCOL_VERSION - 1, "test:jobs", 0)
    );
    let message = previous.to_string();
    assert!(
        message.contains("test:jobs")
            && message.contains("refused every job until they are upgraded")
            && message.contains(&format!("speaks version {PROTOCOL_VERSION}")),
        "{message}"
    );

    // Both jobs wait, whole, for a worker of this version, as their first attempt.
    let mut got = Vec::new();
    for _ in 0..2 {
        let claimed = claim_within(t.queue.as_ref(), "worker-v2", PATIENCE)
            .await
            .expect("the job waited for this worker");
        assert_eq!(claimed.attempt, 1);
        got.push(claimed.job_id.clone());
        t.queue.ack(&claimed).await.unwrap();
    }
    got.sort();
    assert_eq!(got, ["ia_new@v1", "sf_new@v1"]);
    assert!(no_more_events(t.queue.as_ref()).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_of_a_newer_protocol_is_left_queued_for_a_worker_that_speaks_it() {
    let t = Kind::Redis.start(test_config()).await;
    let mut envelope: serde_json::Value =
        serde_json::from_str(&JobEnvelope::new(job("ia_next")).encode()).unwrap();
    envelope["v"] = serde_json::Value::from(PROTOCOL_VERSION + 1);
    let written = envelope.to_string();
    let client = redis::Client::open(t.server.as_ref().unwrap().url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let _: String = redis::cmd("XADD")
        .arg(jobs_stream("test"))
        .arg("*")
        .arg("job")
        .arg(&written)
        .query_async(&mut conn)
        .await
        .unwrap();

    // This build refuses it again and again (past the attempts a job has) without running,
    // failing or dropping it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while tokio::time::Instant::now() < deadline {
        let claimed = t
            .queue
            .claim("w-old", Duration::from_millis(200))
            .await
            .unwrap();
        assert!(claimed.is_none(), "{claimed:?}");
    }
    assert!(no_more_events(t.queue.as_ref()).await.is_empty());
    // It is still queued, as it was written (same version, same attempt).
    let stream: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
        .arg(jobs_stream("test"))
        .arg("-")
        .arg("+")
        .query_async(&mut conn)
        .await
        .unwrap();
    let delayed: Vec<String> = redis::cmd("ZRANGE")
        .arg(format!("{}:delayed", jobs_stream("test")))
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    let held: Vec<String> = stream
        .into_iter()
        .flat_map(|(_, fields)| fields.into_iter().map(|(_, v)| v))
        .chain(delayed)
        .collect();
    assert_eq!(held, [written]);
}
