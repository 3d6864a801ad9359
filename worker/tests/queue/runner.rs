//! The worker loop: completes, retries, fails, survives panics, heartbeats long jobs and
//! shuts down gracefully.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use adforge_worker::{
    AdCompleted, Event, Job, JobError, JobHandler, JobQueue, ProgressSink, WorkerOptions,
    run_worker,
};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio::sync::{Notify, oneshot};

use crate::{
    Kind, PATIENCE, both_backends, claim_within, collect_events, completed, job, no_more_events,
    test_config,
};

both_backends!(
    runner_completes_jobs_with_progress,
    runner_treats_a_panic_as_a_failed_attempt,
    runner_fails_a_job_that_keeps_failing_with_pipeline_error,
    runner_fails_an_aborted_job_at_once,
    runner_heartbeats_keep_a_long_job_on_one_worker,
    runner_shutdown_finishes_in_flight_jobs_and_claims_no_more,
);

type Behaviour =
    dyn Fn(&Job, u32) -> BoxFuture<'static, Result<AdCompleted, JobError>> + Send + Sync;

/// A handler whose behaviour per (job, attempt) is a closure; counts calls per ad.
struct ScriptedHandler {
    behaviour: Box<Behaviour>,
    calls: Mutex<HashMap<String, u32>>,
}

impl ScriptedHandler {
    fn new(
        behaviour: impl Fn(&Job, u32) -> BoxFuture<'static, Result<AdCompleted, JobError>>
        + Send
        + Sync
        + 'static,
    ) -> Arc<Self> {
        Arc::new(ScriptedHandler {
            behaviour: Box::new(behaviour),
            calls: Mutex::default(),
        })
    }

    fn calls(&self, ad_id: &str) -> u32 {
        self.calls.lock().unwrap().get(ad_id).copied().unwrap_or(0)
    }
}

impl JobHandler for ScriptedHandler {
    fn handle<'a>(
        &'a self,
        job: Job,
        progress: ProgressSink,
    ) -> BoxFuture<'a, Result<AdCompleted, JobError>> {
        *self
            .calls
            .lock()
            .unwrap()
            .entry(job.ad_id().to_owned())
            .or_default() += 1;
        let attempt = progress.attempt();
        let work = (self.behaviour)(&job, attempt);
        async move {
            progress.report("render", "rendering", 50).await;
            work.await
        }
        .boxed()
    }
}

fn options(consumer: &str) -> WorkerOptions {
    WorkerOptions {
        concurrency: 2,
        claim_wait: Duration::from_millis(200),
        backoff_base: Duration::from_millis(50),
        backoff_max: Duration::from_millis(200),
        ..WorkerOptions::new(consumer)
    }
}

/// Starts a worker loop; the returned sender stops it.
fn spawn_worker(
    queue: Arc<dyn JobQueue>,
    handler: Arc<dyn JobHandler>,
    options: WorkerOptions,
) -> (oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(run_worker(queue, handler, options, async move {
        let _ = stopped.await;
    }));
    (stop, task)
}

fn ad_ids(events: &[Event]) -> Vec<String> {
    let mut ids: Vec<String> = events.iter().map(|e| e.ad_id().to_owned()).collect();
    ids.sort();
    ids
}

async fn runner_completes_jobs_with_progress(kind: Kind) {
    let t = kind.start(test_config()).await;
    let handler = ScriptedHandler::new(|job, _| {
        let done = completed(job);
        async move { Ok(done) }.boxed()
    });
    let (stop, task) = spawn_worker(t.queue.clone(), handler.clone(), options("w1"));
    for i in 0..5 {
        t.queue.enqueue(job(&format!("ia_run{i}"))).await.unwrap();
    }
    let events = collect_events(t.queue.as_ref(), 5, PATIENCE).await;
    assert_eq!(
        ad_ids(&events),
        (0..5).map(|i| format!("ia_run{i}")).collect::<Vec<_>>()
    );
    assert!(
        events.iter().all(|e| matches!(e, Event::Completed(_))),
        "{events:?}"
    );
    let progress = t.queue.latest_progress("ia_run3").await.unwrap().unwrap();
    assert_eq!(progress.step, "render");
    stop.send(()).unwrap();
    task.await.unwrap();
    assert!(
        no_more_events(t.queue.as_ref()).await.is_empty(),
        "each job completed once"
    );
}

async fn runner_treats_a_panic_as_a_failed_attempt(kind: Kind) {
    let t = kind.start(test_config()).await;
    let handler = ScriptedHandler::new(|job, attempt| {
        let done = completed(job);
        let explode = job.ad_id() == "ia_boom" && attempt == 1;
        async move {
            assert!(!explode, "the pipeline hit a bug");
            Ok(done)
        }
        .boxed()
    });
    let (stop, task) = spawn_worker(t.queue.clone(), handler.clone(), options("w1"));
    t.queue.enqueue(job("ia_boom")).await.unwrap();
    t.queue.enqueue(job("ia_fine")).await.unwrap();
    let events = collect_events(t.queue.as_ref(), 2, PATIENCE).await;
    assert_eq!(ad_ids(&events), ["ia_boom", "ia_fine"]);
    assert!(
        events.iter().all(|e| matches!(e, Event::Completed(_))),
        "{events:?}"
    );
    assert_eq!(
        handler.calls("ia_boom"),
        2,
        "the panic counted as attempt 1"
    );
    // The loop is still alive after the panic.
    t.queue.enqueue(job("ia_after")).await.unwrap();
    assert_eq!(
        ad_ids(&collect_events(t.queue.as_ref(), 1, PATIENCE).await),
        ["ia_after"]
    );
    stop.send(()).unwrap();
    task.await.unwrap();
}

async fn runner_fails_a_job_that_keeps_failing_with_pipeline_error(kind: Kind) {
    let t = kind.start(test_config()).await;
    let handler = ScriptedHandler::new(|_, attempt| {
        async move {
            Err(JobError::retry(format!(
                "model server busy (attempt {attempt})"
            )))
        }
        .boxed()
    });
    let (stop, task) = spawn_worker(t.queue.clone(), handler.clone(), options("w1"));
    t.queue.enqueue(job("ia_flaky")).await.unwrap();
    let events = collect_events(t.queue.as_ref(), 1, PATIENCE).await;
    match &events[..] {
        [Event::Failed(f)] => {
            assert_eq!(f.code, "PIPELINE_ERROR");
            assert_eq!(f.message, "model server busy (attempt 3)");
        }
        other => panic!("expected one Failed event, got {other:?}"),
    }
    assert!(
        no_more_events(t.queue.as_ref()).await.is_empty(),
        "no Completed, no second Failed"
    );
    assert_eq!(handler.calls("ia_flaky"), 3);
    stop.send(()).unwrap();
    task.await.unwrap();
}

async fn runner_fails_an_aborted_job_at_once(kind: Kind) {
    let t = kind.start(test_config()).await;
    let handler = ScriptedHandler::new(|_, _| {
        async { Err(JobError::abort("the reference image is not an image")) }.boxed()
    });
    let (stop, task) = spawn_worker(t.queue.clone(), handler.clone(), options("w1"));
    t.queue.enqueue(job("ia_bad")).await.unwrap();
    let events = collect_events(t.queue.as_ref(), 1, PATIENCE).await;
    assert!(
        matches!(&events[..], [Event::Failed(f)] if f.code == "PIPELINE_ERROR" && f.message == "the reference image is not an image"),
        "{events:?}"
    );
    assert_eq!(handler.calls("ia_bad"), 1, "no retry after an abort");
    stop.send(()).unwrap();
    task.await.unwrap();
}

async fn runner_heartbeats_keep_a_long_job_on_one_worker(kind: Kind) {
    let t = kind.start(test_config()).await;
    let other = t.other_node().await;
    // A job that runs for several visibility timeouts (300 ms each).
    let handler = ScriptedHandler::new(|job, _| {
        let done = completed(job);
        async move {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            Ok(done)
        }
        .boxed()
    });
    let (stop1, task1) = spawn_worker(t.queue.clone(), handler.clone(), options("w1"));
    let (stop2, task2) = spawn_worker(other, handler.clone(), options("w2"));
    t.queue.enqueue(job("ia_long")).await.unwrap();
    let events = collect_events(t.queue.as_ref(), 1, PATIENCE).await;
    assert_eq!(ad_ids(&events), ["ia_long"]);
    assert!(no_more_events(t.queue.as_ref()).await.is_empty());
    assert_eq!(
        handler.calls("ia_long"),
        1,
        "the live claim was never reclaimed"
    );
    stop1.send(()).unwrap();
    stop2.send(()).unwrap();
    task1.await.unwrap();
    task2.await.unwrap();
}

async fn runner_shutdown_finishes_in_flight_jobs_and_claims_no_more(kind: Kind) {
    let t = kind.start(test_config()).await;
    let started = Arc::new(Notify::new());
    let finish = Arc::new(Notify::new());
    let running = Arc::new(AtomicUsize::new(0));
    let handler = {
        let (started, finish, running) = (started.clone(), finish.clone(), running.clone());
        ScriptedHandler::new(move |job, _| {
            let done = completed(job);
            let (started, finish, running) = (started.clone(), finish.clone(), running.clone());
            async move {
                running.fetch_add(1, Ordering::SeqCst);
                started.notify_one();
                finish.notified().await;
                Ok(done)
            }
            .boxed()
        })
    };
    let (stop, task) = spawn_worker(t.queue.clone(), handler.clone(), options("w1"));
    t.queue.enqueue(job("ia_inflight")).await.unwrap();
    tokio::time::timeout(PATIENCE, started.notified())
        .await
        .expect("the job started");

    stop.send(()).unwrap(); // SIGTERM
    // Let the loop see the signal, then queue more work it must not take.
    tokio::time::sleep(Duration::from_millis(500)).await;
    t.queue.enqueue(job("ia_later")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !task.is_finished(),
        "the worker waits for its in-flight job"
    );
    finish.notify_one();
    tokio::time::timeout(PATIENCE, task)
        .await
        .expect("the worker returns")
        .unwrap();

    assert_eq!(
        running.load(Ordering::SeqCst),
        1,
        "nothing was claimed after the signal"
    );
    let events = collect_events(t.queue.as_ref(), 1, PATIENCE).await;
    assert_eq!(
        ad_ids(&events),
        ["ia_inflight"],
        "the in-flight job completed"
    );
    let left = claim_within(t.queue.as_ref(), "w2", PATIENCE)
        .await
        .expect("the later job waits for another worker");
    assert_eq!((left.job_id.as_str(), left.attempt), ("ia_later@v1", 1));
}
