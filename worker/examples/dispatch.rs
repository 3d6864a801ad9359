//! Dispatch latency: the time from `enqueue` being called to a worker's waiting `claim`
//! returning the job, through Redis (a `redis-server` this program starts on a free port,
//! with the same settings as the tests) and through the in-process queue for comparison.
//! Jobs go one at a time, each after the consumer is back waiting in `claim`, so the number
//! is the latency of an idle worker picking up new work. Target: Redis p50 <= 2 ms.
//!
//! Redis runs with `appendfsync everysec` (Redis's default, what a deployment runs) unless
//! `--fsync always` (what the tests use, so a SIGKILL loses nothing) is given; with
//! `always` every write waits for an fsync, and the disk's fsync time dominates.
//!
//!   scripts/bench-jobs-dispatch [--jobs N] [--fsync everysec|always]

// Shared with the tests, which also restart the server; this benchmark does not.
#[path = "../tests/queue/redis_server.rs"]
#[allow(dead_code)]
mod redis_server;

use std::sync::Arc;
use std::time::Duration;

use adforge_worker::protocol::{AdBrief, Audience, Brand, Product};
use adforge_worker::{GenerateAdJob, Job, JobQueue, MemoryQueue, QueueConfig, RedisQueue};
use tokio::sync::mpsc;
use tokio::time::Instant;

fn job(i: usize) -> Job {
    let entity = |prefix: &str| (format!("{prefix}_{i}"), format!("{prefix} {i}"));
    Job::GenerateImageAd(GenerateAdJob {
        ad_id: format!("ia_bench_{i}"),
        org_id: "org_bench".to_owned(),
        version: 1,
        editable: false,
        reference_ad_url: "https://example.com/reference.png".to_owned(),
        brief: AdBrief {
            prompt: Some("a bright summer sale banner".to_owned()),
            brand: Brand {
                id: entity("br").0,
                name: entity("brand").1,
                color_palettes: serde_json::json!({"primary": ["#112233", "#445566"]}),
                fonts: serde_json::json!([{"name": "Inter"}]),
                logos: Vec::new(),
                details: serde_json::Value::Null,
            },
            product: Product {
                id: entity("prod").0,
                name: entity("product").1,
                description: Some("a product".to_owned()),
                details: serde_json::Value::Null,
            },
            audience: Audience {
                id: entity("aud").0,
                name: entity("audience").1,
                description: None,
                details: serde_json::Value::Null,
            },
            variant_image_urls: vec!["https://example.com/variant.png".to_owned()],
            created_at: None,
            variant: None,
        },
        template: None,
        size: None,
    })
}

struct Samples {
    dispatch: Vec<Duration>,
    enqueue: Vec<Duration>,
}

/// Enqueues `n` jobs one at a time with a consumer waiting in `claim` on `consumer_queue`.
async fn measure(
    producer: Arc<dyn JobQueue>,
    consumer_queue: Arc<dyn JobQueue>,
    n: usize,
) -> Samples {
    let (claimed_tx, mut claimed_rx) = mpsc::unbounded_channel::<Instant>();
    let consumer = tokio::spawn(async move {
        let mut got = 0;
        while got < n {
            match consumer_queue
                .claim("bench-worker", Duration::from_secs(5))
                .await
            {
                Ok(Some(claimed)) => {
                    let at = Instant::now();
                    got += 1;
                    let _ = claimed_tx.send(at);
                    if let Err(e) = consumer_queue.ack(&claimed).await {
                        eprintln!("ack failed: {e}");
                    }
                }
                Ok(None) => {}
                Err(e) => eprintln!("claim failed: {e}"),
            }
        }
    });
    let mut samples = Samples {
        dispatch: Vec::with_capacity(n),
        enqueue: Vec::with_capacity(n),
    };
    for i in 0..n {
        // Let the consumer get back into its blocking claim.
        tokio::time::sleep(Duration::from_millis(2)).await;
        let start = Instant::now();
        if let Err(e) = producer.enqueue(job(i)).await {
            eprintln!("enqueue failed: {e}");
            continue;
        }
        samples.enqueue.push(start.elapsed());
        match claimed_rx.recv().await {
            Some(at) => samples.dispatch.push(at.duration_since(start)),
            None => break,
        }
    }
    let _ = consumer.await;
    samples
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn row(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "| {label:<36} | {:>6} | {:>8.3} | {:>8.3} | {:>8.3} |",
        samples.len(),
        ms(percentile(&samples, 50.0)),
        ms(percentile(&samples, 99.0)),
        ms(samples.last().copied().unwrap_or_default()),
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mut jobs = 2000usize;
    let mut fsync = "everysec";
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--jobs" => jobs = args.next().and_then(|v| v.parse().ok()).expect("--jobs N"),
            "--fsync" => {
                fsync = match args.next().as_deref() {
                    Some("always") => "always",
                    Some("everysec") => "everysec",
                    _ => panic!("--fsync everysec|always"),
                }
            }
            other => panic!(
                "unknown argument {other}; usage: dispatch [--jobs N] [--fsync everysec|always]"
            ),
        }
    }
    let server = redis_server::RedisServer::start_with_fsync(fsync);
    let config = QueueConfig {
        key_prefix: "bench".to_owned(),
        ..QueueConfig::default()
    };
    let producer: Arc<dyn JobQueue> = Arc::new(
        RedisQueue::connect(&server.url(), config.clone())
            .await
            .expect("connect to redis"),
    );
    let consumer: Arc<dyn JobQueue> = Arc::new(
        RedisQueue::connect(&server.url(), config.clone())
            .await
            .expect("connect to redis"),
    );
    // Warm-up: connections, script cache.
    measure(producer.clone(), consumer.clone(), 50).await;
    let redis = measure(producer, consumer, jobs).await;

    let memory: Arc<dyn JobQueue> = Arc::new(MemoryQueue::new(config));
    measure(memory.clone(), memory.clone(), 50).await;
    let in_process = measure(memory.clone(), memory, jobs).await;

    println!(
        "dispatch latency, {jobs} jobs one at a time, redis appendfsync {fsync} (ms; target: redis dispatch p50 <= 2)"
    );
    println!(
        "| {:<36} | {:>6} | {:>8} | {:>8} | {:>8} |",
        "path", "n", "p50", "p99", "max"
    );
    println!(
        "|{:-<38}|{:-<8}|{:-<10}|{:-<10}|{:-<10}|",
        "", "", "", "", ""
    );
    row("redis: enqueue -> claim returns", redis.dispatch);
    row("redis: enqueue call", redis.enqueue);
    row("in-process: enqueue -> claim returns", in_process.dispatch);
    row("in-process: enqueue call", in_process.enqueue);
}
