//! `ping` and `stats`, which the API's `/readyz` and `/metrics` read: jobs queued or claimed,
//! jobs waiting out a retry, and the oldest job's age.

use std::time::Duration;

use adforge_worker::queue::RetryOutcome;

use crate::{Kind, PATIENCE, both_backends, claim_within, completed, job, test_config};

both_backends!(stats_follow_jobs_through_the_queue);

async fn stats_follow_jobs_through_the_queue(kind: Kind) {
    let t = kind.start(test_config()).await;
    let q = t.queue.as_ref();
    q.ping().await.unwrap();
    let empty = q.stats().await.unwrap();
    assert_eq!(
        (empty.jobs, empty.delayed, empty.oldest_job_age),
        (0, 0, None)
    );

    q.enqueue(job("ia_st1")).await.unwrap();
    q.enqueue(job("ia_st2")).await.unwrap();
    let two = q.stats().await.unwrap();
    assert_eq!((two.jobs, two.delayed), (2, 0), "{two:?}");
    assert!(two.oldest_job_age.is_some(), "{two:?}");

    // A claimed job is still in the queue until it is completed.
    let first = claim_within(q, "w1", PATIENCE).await.expect("a job");
    assert_eq!(q.stats().await.unwrap().jobs, 2);
    q.complete(&first, completed(&first.job)).await.unwrap();
    assert_eq!(q.stats().await.unwrap().jobs, 1);

    // A retry waits among the delayed jobs.
    let second = claim_within(q, "w1", PATIENCE).await.expect("a job");
    let outcome = q
        .retry(&second, Duration::from_secs(600), "try later")
        .await
        .unwrap();
    assert!(
        matches!(outcome, RetryOutcome::Scheduled { .. }),
        "{outcome:?}"
    );
    let later = q.stats().await.unwrap();
    assert_eq!(
        (later.jobs, later.delayed, later.oldest_job_age),
        (0, 1, None)
    );
}
