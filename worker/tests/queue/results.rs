//! Typed results: a result of each kind of job travels back through the queue as the worker
//! wrote it, tagged by its kind, and a redelivery carries the same result (the API applies
//! it once: `api/server/tests/api/results.rs`).

use std::time::Duration;

use adforge_worker::protocol::{FigmaFrameVersion, FigmaSyncJob, FigmaSynced, FigmaTarget};
use adforge_worker::{
    AdCompleted, DesignTemplateAnalysed, DesignTemplateJob, Event, FigmaSyncResult,
    ImageAdRendered, IngestSwipeFileJob, Job, JobResult, SubjectKind, SwipeFileIngested,
};

use crate::{Kind, PATIENCE, both_backends, claim_within, collect_events, job, test_config};

both_backends!(
    a_result_of_each_kind_round_trips_and_a_redelivery_is_the_same,
    a_failure_names_the_kind_of_its_subject
);

fn ad() -> ImageAdRendered {
    ImageAdRendered {
        image_url: "https://cdn.example.com/ia.png".into(),
        width: 3072,
        height: 3840,
        json_tree: Some(serde_json::json!({"root": "r", "nodes": {}})),
        render: None,
        copy: None,
    }
}

fn template() -> DesignTemplateAnalysed {
    DesignTemplateAnalysed {
        preview_url: "https://cdn.example.com/dt.png".into(),
        width: 1080,
        height: 1350,
        preview_key: "design-templates/dt/v1.png".into(),
        json_tree: serde_json::json!({"root": "r", "nodes": {}}),
        cache_hit: false,
        composition: "figma".into(),
        note: None,
        reference_colours: vec![[10, 20, 30]],
        industry: None,
        ad_format: None,
    }
}

fn synced(unchanged: bool) -> FigmaSynced {
    FigmaSynced {
        unchanged,
        frame: FigmaFrameVersion {
            file_version: "7".into(),
            frame_hash: "cafe".into(),
        },
        file_name: "Ads".into(),
        last_modified: "2026-11-28T00:00:00Z".into(),
        figma_render_key: None,
        figma_render_url: None,
        report: Default::default(),
    }
}

fn figma_job(subject_id: &str, target: FigmaTarget) -> Job {
    Job::SyncFigma(FigmaSyncJob {
        subject_id: subject_id.into(),
        org_id: "org_test".into(),
        version: 1,
        target,
        api_url: "https://api.figma.test".into(),
        file_key: "FILE".into(),
        node_id: "1:2".into(),
        token_sealed: "sealed".into(),
        previous: None,
        fill_slots: false,
        brief: None,
    })
}

/// Jobs of every kind, each with the result its pipeline writes.
fn work() -> Vec<(Job, JobResult)> {
    let template_job = |id: &str| DesignTemplateJob {
        template_id: id.into(),
        org_id: "org_test".into(),
        version: 1,
        reference_image_url: "https://example.com/ref.png".into(),
        json_tree: None,
        classify: true,
    };
    vec![
        (job("ia_r1"), JobResult::ImageAd(ad())),
        (
            Job::IngestSwipeFile(IngestSwipeFileJob {
                swipe_file_id: "sf_r1".into(),
                org_id: Some("org_test".into()),
                blob_key: "swipe-files/sf_r1/original.png".into(),
                fetch_url: None,
                hints: None,
            }),
            JobResult::SwipeFile(Box::new(SwipeFileIngested {
                width: 800,
                height: 1000,
                thumb_key: "swipe-files/sf_r1/preview.webp".into(),
                blob_key: None,
                aspect_ratio: "4:5".into(),
                industry: Some("beauty".into()),
                ad_format: None,
                caption: "a bottle on sand".into(),
                labels: vec![("bottle".into(), 0.75)],
                ocr_text: Some("SALE".into()),
                image_model: "clip".into(),
                image_vector: vec![0.6, 0.8],
                text_model: "minilm".into(),
                text_vector: vec![1.0, 0.0],
            })),
        ),
        (
            Job::AnalyzeDesignTemplate(template_job("dt_r1")),
            JobResult::DesignTemplate(Box::new(template())),
        ),
        (
            figma_job("ia_r2", FigmaTarget::ImageAd),
            JobResult::FigmaSync(Box::new(FigmaSyncResult::ImageAd {
                synced: synced(false),
                rendered: Some(ad()),
            })),
        ),
        (
            figma_job("ia_r3", FigmaTarget::ImageAd),
            JobResult::FigmaSync(Box::new(FigmaSyncResult::ImageAd {
                synced: synced(true),
                rendered: None,
            })),
        ),
        (
            figma_job("dt_r2", FigmaTarget::DesignTemplate),
            JobResult::FigmaSync(Box::new(FigmaSyncResult::DesignTemplate {
                synced: synced(false),
                rendered: Some(Box::new(template())),
            })),
        ),
    ]
}

async fn a_result_of_each_kind_round_trips_and_a_redelivery_is_the_same(kind: Kind) {
    let t = kind.start(test_config()).await;
    let work = work();
    let mut sent = Vec::new();
    for (job, result) in work {
        let job_id = job.job_id();
        t.queue.enqueue(job).await.unwrap();
        let claimed = claim_within(t.queue.as_ref(), "w1", PATIENCE)
            .await
            .expect("the job is claimed");
        assert_eq!(claimed.job_id, job_id);
        let done = AdCompleted {
            ad_id: claimed.job.ad_id().to_owned(),
            version: claimed.job.version(),
            duration_ms: 9,
            result,
        };
        t.queue.complete(&claimed, done.clone()).await.unwrap();
        sent.push(Event::Completed(done));
    }

    // api-1 reads every result, field for field as written, and dies before acknowledging.
    let mut read = Vec::new();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while read.len() < sent.len() && tokio::time::Instant::now() < deadline {
        read.extend(
            t.queue
                .read_events("api-1", 16, Duration::from_millis(200))
                .await
                .unwrap(),
        );
    }
    let got: Vec<Event> = read.iter().map(|d| d.event.clone()).collect();
    assert_eq!(got, sent);

    // Another API node gets the same results again: the applier sees them twice.
    let other = t.other_node().await;
    let mut again = Vec::new();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while again.len() < sent.len() && tokio::time::Instant::now() < deadline {
        again.extend(
            other
                .read_events("api-2", 16, Duration::from_millis(200))
                .await
                .unwrap(),
        );
    }
    assert!(again.iter().all(|d| d.deliveries >= 2), "{again:?}");
    let got: Vec<Event> = again.iter().map(|d| d.event.clone()).collect();
    assert_eq!(got, sent);
    for d in &again {
        other.ack_event(d).await.unwrap();
    }
    assert!(
        collect_events(t.queue.as_ref(), 1, Duration::from_millis(900))
            .await
            .is_empty()
    );
}

/// A failed job's event says what kind of subject failed (the API routes it by that, never
/// by the id's prefix), whether the handler failed it or its attempts ran out, on both
/// backends; the envelope carries the kind for a worker that cannot decode the job.
async fn a_failure_names_the_kind_of_its_subject(kind: Kind) {
    let t = kind.start(test_config()).await;
    let jobs = work().len();
    for (n, (job, _)) in work().into_iter().enumerate() {
        let subject = job.subject();
        let encoded: serde_json::Value =
            serde_json::from_str(&adforge_worker::JobEnvelope::new(job.clone()).encode()).unwrap();
        assert_eq!(encoded["subject"], serde_json::to_value(subject).unwrap());
        t.queue.enqueue(job).await.unwrap();
        let claimed = claim_within(t.queue.as_ref(), "w1", PATIENCE)
            .await
            .expect("the job is claimed");
        // Every other job fails by choice, the rest by running out of attempts.
        if n % 2 == 0 {
            t.queue
                .fail(&claimed, "PIPELINE_ERROR", "bad input")
                .await
                .unwrap();
        } else {
            let mut claimed = claimed;
            loop {
                let outcome = t
                    .queue
                    .retry(&claimed, Duration::ZERO, "busy")
                    .await
                    .unwrap();
                if outcome == adforge_worker::RetryOutcome::GaveUp {
                    break;
                }
                claimed = claim_within(t.queue.as_ref(), "w1", PATIENCE)
                    .await
                    .expect("the retry is claimed");
            }
        }
    }
    let events = collect_events(t.queue.as_ref(), jobs, PATIENCE).await;
    let got: Vec<(String, SubjectKind)> = events
        .iter()
        .map(|e| match e {
            Event::Failed(f) => (f.ad_id.clone(), f.subject),
            other => panic!("expected Failed, got {other:?}"),
        })
        .collect();
    let want: Vec<(String, SubjectKind)> = work()
        .into_iter()
        .map(|(job, _)| (job.ad_id().to_owned(), job.subject()))
        .collect();
    assert_eq!(got, want);
    assert_eq!(
        want.iter().map(|(_, k)| *k).collect::<Vec<_>>(),
        [
            SubjectKind::ImageAd,
            SubjectKind::SwipeFile,
            SubjectKind::DesignTemplate,
            SubjectKind::ImageAd,
            SubjectKind::ImageAd,
            SubjectKind::DesignTemplate,
        ]
    );
}
