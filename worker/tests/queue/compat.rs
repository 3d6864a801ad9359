//! Mixed versions behind Redis: a job this build cannot read (a variant from a newer API
//! release) is left for other workers, and after the attempts run out the ad fails with
//! `PIPELINE_ERROR` instead of blocking the queue.

use std::time::Duration;

use adforge_worker::redis;
use adforge_worker::{Event, JobEnvelope};

use crate::{Kind, PATIENCE, collect_events, job, test_config};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_from_a_newer_release_is_retried_then_fails() {
    let t = Kind::Redis.start(test_config()).await;
    let mut envelope: serde_json::Value =
        serde_json::from_str(&JobEnvelope::new(job("ia_future")).encode()).unwrap();
    envelope["job"]["type"] = serde_json::Value::from("render_video_ad");
    let client = redis::Client::open(t.server.as_ref().unwrap().url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let _: String = redis::cmd("XADD")
        .arg("test:jobs")
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
