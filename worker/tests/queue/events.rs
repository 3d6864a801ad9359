//! The event side: terminal events reach the API consumer group at least once; progress is
//! the latest value per ad.

use std::time::Duration;

use adforge_worker::{AdFailed, AdProgress, Event, SubjectKind};

use crate::{Kind, PATIENCE, both_backends, completed, job, test_config};

both_backends!(
    events_are_redelivered_until_acknowledged,
    latest_progress_is_the_newest
);

async fn events_are_redelivered_until_acknowledged(kind: Kind) {
    let t = kind.start(test_config()).await;
    let other = t.other_node().await;
    let done = Event::Completed(completed(&job("ia_ev1")));
    let failed = Event::Failed(AdFailed {
        subject: SubjectKind::ImageAd,
        ad_id: "ia_ev2".into(),
        version: 1,
        code: "PIPELINE_ERROR".into(),
        message: "no".into(),
    });
    t.queue.publish(done.clone()).await.unwrap();
    t.queue.publish(failed.clone()).await.unwrap();

    // api-1 reads both and dies before acknowledging.
    let read = t.queue.read_events("api-1", 10, PATIENCE).await.unwrap();
    let got: Vec<_> = read.iter().map(|d| d.event.clone()).collect();
    assert_eq!(got, vec![done.clone(), failed.clone()]);
    assert!(read.iter().all(|d| d.deliveries == 1));

    // api-2 gets them again once the visibility timeout has passed, marked as redeliveries.
    let mut again = Vec::new();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while again.len() < 2 && tokio::time::Instant::now() < deadline {
        again.extend(
            other
                .read_events("api-2", 10, Duration::from_millis(200))
                .await
                .unwrap(),
        );
    }
    let got: Vec<_> = again.iter().map(|d| d.event.clone()).collect();
    assert_eq!(got, vec![done, failed]);
    assert!(again.iter().all(|d| d.deliveries >= 2), "{again:?}");
    for d in &again {
        other.ack_event(d).await.unwrap();
    }
    // Acknowledged events are gone for good.
    tokio::time::sleep(t.queue.config().visibility_timeout * 2).await;
    assert!(
        t.queue
            .read_events("api-1", 10, Duration::from_millis(300))
            .await
            .unwrap()
            .is_empty()
    );
}

async fn latest_progress_is_the_newest(kind: Kind) {
    let t = kind.start(test_config()).await;
    let q = t.queue.as_ref();
    assert_eq!(q.latest_progress("ia_p").await.unwrap(), None);
    for (step, pct) in [("fetch_reference", 10u8), ("layout", 40), ("render", 80)] {
        q.publish(Event::Progress(AdProgress {
            ad_id: "ia_p".into(),
            version: 1,
            step: step.into(),
            message: format!("{step} started"),
            percentage: pct,
        }))
        .await
        .unwrap();
    }
    let p = q.latest_progress("ia_p").await.unwrap().unwrap();
    assert_eq!((p.step.as_str(), p.percentage), ("render", 80));
    assert_eq!(q.latest_progress("ia_other").await.unwrap(), None);
    // Progress is not a terminal event: the API group never sees it.
    assert!(
        q.read_events("api", 10, Duration::from_millis(300))
            .await
            .unwrap()
            .is_empty()
    );
}
