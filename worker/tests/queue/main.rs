//! Integration tests of the job queues and the worker loop. The behaviour tests run the same
//! body against both backends (`both_backends!`); the Redis ones start their own
//! `redis-server` on a free port. No test asserts that anything was fast: waits poll with
//! generous deadlines.
#![allow(clippy::unwrap_used)]

mod compat;
mod delivery;
mod events;
mod housekeeping;
mod priority;
mod redis_restart;
mod redis_server;
mod results;
mod runner;
mod stats;

use std::sync::Arc;
use std::time::Duration;

use adforge_worker::protocol::{AdBrief, Audience, Brand, Logo, Product};
use adforge_worker::{
    AdCompleted, Event, GenerateAdJob, ImageAdRendered, Job, JobQueue, JobResult, MemoryQueue,
    QueueConfig, RedisQueue,
};
use redis_server::RedisServer;
use tokio::time::Instant;

/// Expands test bodies `async fn name(kind: Kind)` into `memory::name` and `redis::name`.
#[macro_export]
macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name($crate::Kind::Memory).await })*
        }
        mod redis {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name($crate::Kind::Redis).await })*
        }
    };
}

/// Which backend a test body runs on.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Memory,
    Redis,
}

/// A queue under test, with its Redis server when it has one.
pub struct TestQueue {
    pub queue: Arc<dyn JobQueue>,
    /// The same queue, as its type, on Redis.
    redis: Option<Arc<RedisQueue>>,
    pub server: Option<RedisServer>,
    config: QueueConfig,
}

impl Kind {
    pub async fn start(self, config: QueueConfig) -> TestQueue {
        match self {
            Kind::Memory => TestQueue {
                queue: Arc::new(MemoryQueue::new(config.clone())),
                redis: None,
                server: None,
                config,
            },
            Kind::Redis => {
                let server = RedisServer::start();
                let queue = Arc::new(
                    RedisQueue::connect(&server.url(), config.clone())
                        .await
                        .unwrap(),
                );
                TestQueue {
                    queue: queue.clone(),
                    redis: Some(queue),
                    server: Some(server),
                    config,
                }
            }
        }
    }
}

impl TestQueue {
    /// The queue as a [`RedisQueue`] (Redis tests only).
    pub fn queue_redis(&self) -> &RedisQueue {
        self.redis.as_deref().expect("a Redis queue")
    }

    /// Another node's handle on the same queue: a second connection for Redis (as another
    /// process would have), the same queue in memory.
    pub async fn other_node(&self) -> Arc<dyn JobQueue> {
        match &self.server {
            Some(server) => Arc::new(
                RedisQueue::connect(&server.url(), self.config.clone())
                    .await
                    .unwrap(),
            ),
            None => self.queue.clone(),
        }
    }
}

/// Short timeouts so that reclaims and retries happen within a test.
pub fn test_config() -> QueueConfig {
    QueueConfig {
        visibility_timeout: Duration::from_millis(300),
        max_attempts: 3,
        progress_ttl: Duration::from_secs(60),
        poll_interval: Duration::from_millis(100),
        key_prefix: "test".to_owned(),
    }
}

/// A generous deadline for things that should happen "soon".
pub const PATIENCE: Duration = Duration::from_secs(15);

pub fn job(ad_id: &str) -> Job {
    Job::GenerateImageAd(GenerateAdJob {
        ad_id: ad_id.to_owned(),
        org_id: "org_test".to_owned(),
        version: 1,
        editable: false,
        reference_ad_url: "https://example.com/ref.png".to_owned(),
        brief: AdBrief {
            prompt: Some("summer sale".to_owned()),
            brand: Brand {
                id: "br_1".to_owned(),
                name: "Acme".to_owned(),
                color_palettes: serde_json::json!({"primary": ["#ff0000"]}),
                fonts: serde_json::json!([{"name": "Inter"}]),
                logos: vec![Logo {
                    url: "https://example.com/logo.png".to_owned(),
                    theme: Some("dark".to_owned()),
                }],
                details: serde_json::Value::Null,
            },
            product: Product {
                id: "prod_1".to_owned(),
                name: "Rocket skates".to_owned(),
                description: None,
                details: serde_json::Value::Null,
            },
            audience: Audience {
                id: "aud_1".to_owned(),
                name: "Coyotes".to_owned(),
                description: Some("desert hunters".to_owned()),
                details: serde_json::Value::Null,
            },
            variant_image_urls: vec!["https://example.com/v1.png".to_owned()],
            created_at: None,
            variant: None,
        },
        template: None,
        size: None,
    })
}

pub fn completed(job: &Job) -> AdCompleted {
    AdCompleted {
        ad_id: job.ad_id().to_owned(),
        version: job.version(),
        duration_ms: 0,
        result: JobResult::ImageAd(ImageAdRendered {
            image_url: format!("https://cdn.example.com/{}.png", job.ad_id()),
            width: 3840,
            height: 2160,
            json_tree: None,
            render: None,
            copy: None,
        }),
    }
}

/// Claims until a job arrives or the deadline passes, riding out queue errors (a Redis
/// restart).
pub async fn claim_within(
    queue: &dyn JobQueue,
    consumer: &str,
    patience: Duration,
) -> Option<adforge_worker::Claimed> {
    let deadline = Instant::now() + patience;
    while Instant::now() < deadline {
        match queue.claim(consumer, Duration::from_millis(200)).await {
            Ok(Some(claimed)) => return Some(claimed),
            Ok(None) => {}
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    None
}

/// Reads and acknowledges terminal events until `n` arrived or the deadline passed.
pub async fn collect_events(queue: &dyn JobQueue, n: usize, patience: Duration) -> Vec<Event> {
    let deadline = Instant::now() + patience;
    let mut out = Vec::new();
    while out.len() < n && Instant::now() < deadline {
        match queue
            .read_events("api-test", 16, Duration::from_millis(200))
            .await
        {
            Ok(delivered) => {
                for d in delivered {
                    queue.ack_event(&d).await.unwrap();
                    out.push(d.event);
                }
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    out
}

/// Reads terminal events for a short while and returns what came (expected: nothing).
pub async fn no_more_events(queue: &dyn JobQueue) -> Vec<Event> {
    collect_events(queue, usize::MAX, Duration::from_millis(700)).await
}
