//! [`RedisQueue`]: jobs and events on Redis Streams with consumer groups.
//!
//! Keys (with the configured prefix `P`):
//! - `P:jobs`: the job stream, consumer group `workers`. An entry's one field `job` is a
//!   [`JobEnvelope`]. Its pending entries list is the set of live claims; `XCLAIM ... JUSTID`
//!   is the heartbeat; `XAUTOCLAIM` after the visibility timeout takes over a dead worker's
//!   claims; the delivery count (from `XPENDING`) plus the envelope's `attempt` is the
//!   attempt number.
//! - `P:jobs:delayed`: a sorted set of envelopes waiting for their retry, scored by due time
//!   (Redis's clock, in ms); each claim first moves due ones back to the stream.
//! - `P:jobs:low`: a list of background jobs (swipe-file ingest) waiting for the stream to
//!   have nothing undelivered; a claimer that finds the stream drained moves the oldest in
//!   (`promote_low`), so an idle worker starts one within a poll interval.
//! - `P:job:{job_id}`: the dedup marker of a live job.
//! - `P:events`: the terminal-event stream, consumer group `api`.
//! - `P:progress:{ad_id}`: the latest progress event, with a TTL.
//!
//! Finished entries are `XDEL`eted, so streams stay as long as the work in flight.
//!
//! Connections: one [`ConnectionManager`] for ordinary commands, shared by every task, and a
//! small pool of separate ones for blocking `XREADGROUP`s (`redis_conn`). Connection managers
//! reconnect by themselves, so the queue survives a Redis restart: calls fail while Redis is
//! down and work again once it is back. With `appendonly yes` the streams, groups and pending
//! lists come back with it.
//!
//! Rejected alternatives: lists with `BLMOVE` (the reliable-queue pattern) need a scanner
//! per processing list to find dead workers and have no delivery count; pub/sub loses
//! messages while a subscriber is down.
//!
//! Longer than 700 lines because it is one `JobQueue` implementation whose methods share
//! the stream layout and Lua scripts above; its tests live in `worker/tests/queue`.

use std::sync::Mutex;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, Value};
use tokio::time::Instant;

use super::redis_conn::{BlockingPool, Keys, is_nogroup, millis};
use super::redis_scripts::{RawEntry, Scripts, parse_read, parse_reclaimed};
use super::{
    Claimed, DeliveredEvent, EnqueueOutcome, JobIdentity, JobQueue, QueueConfig, QueueStats,
    Receipt, RetryOutcome, gave_up, reclaim_exhausted_message,
};
use crate::Error;
use crate::protocol::{
    AdCompleted, AdFailed, AdProgress, Event, Job, JobEnvelope, PROTOCOL_VERSION, decode_envelope,
    decode_header,
};

const WORKERS_GROUP: &str = "workers";
const API_GROUP: &str = "api";
/// A dedup marker outlives any sane job; the TTL only guards against a leaked marker
/// blocking an ad forever.
const MARKER_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// The Redis-backed queue. Create one per process with [`RedisQueue::connect`] and share it
/// as `Arc<dyn JobQueue>`.
pub struct RedisQueue {
    config: QueueConfig,
    pub(super) keys: Keys,
    pub(super) conn: ConnectionManager,
    blocking: BlockingPool,
    scripts: Scripts,
}

impl RedisQueue {
    /// Connects to `url` (`redis://host:port/db`) and creates the consumer groups if they do
    /// not exist.
    ///
    /// # Errors
    /// [`Error::Redis`] when the URL is invalid or Redis cannot be reached.
    pub async fn connect(url: &str, config: QueueConfig) -> Result<Self, Error> {
        let client = Client::open(url)?;
        let ordinary = ConnectionManagerConfig::new()
            .set_response_timeout(Some(Duration::from_secs(5)))
            .set_connection_timeout(Some(Duration::from_secs(2)));
        let blocking = ordinary
            .clone()
            .set_response_timeout(Some(config.poll_interval + Duration::from_secs(5)));
        let conn = ConnectionManager::new_with_config(client.clone(), ordinary).await?;
        let queue = RedisQueue {
            keys: Keys::new(&config.key_prefix),
            config,
            conn,
            blocking: BlockingPool {
                client,
                config: blocking,
                idle: Mutex::new(Vec::new()),
            },
            scripts: Scripts::new(),
        };
        queue.ensure_groups().await?;
        queue.warn_of_previous_protocol().await;
        Ok(queue)
    }

    /// A handle on the queue's shared, reconnecting connection for other short commands of
    /// the process (a rate limiter's script). Not for blocking commands: they would stall
    /// every command queued behind them.
    pub fn connection_manager(&self) -> ConnectionManager {
        self.conn.clone()
    }

    /// Creates both consumer groups (and their streams) unless they exist.
    async fn ensure_groups(&self) -> Result<(), Error> {
        for (stream, group) in [
            (&self.keys.jobs, WORKERS_GROUP),
            (&self.keys.events, API_GROUP),
        ] {
            let created: Result<Value, redis::RedisError> = redis::cmd("XGROUP")
                .arg("CREATE")
                .arg(stream)
                .arg(group)
                .arg("0")
                .arg("MKSTREAM")
                .query_async(&mut self.conn.clone())
                .await;
            match created {
                Ok(_) => {}
                Err(e) if e.code() == Some("BUSYGROUP") => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    async fn claim_inner(
        &self,
        consumer: &str,
        max_wait: Duration,
        background: bool,
    ) -> Result<Option<Claimed>, Error> {
        let deadline = Instant::now() + max_wait;
        loop {
            let mut conn = self.conn.clone();
            let _: Value = self
                .scripts
                .promote
                .key(&self.keys.jobs)
                .key(&self.keys.delayed)
                .invoke_async(&mut conn)
                .await?;
            let reply: Value = self
                .scripts
                .reclaim
                .key(&self.keys.jobs)
                .arg(WORKERS_GROUP)
                .arg(consumer)
                .arg(millis(self.config.visibility_timeout))
                .arg(1)
                .invoke_async(&mut conn)
                .await?;
            for entry in parse_reclaimed(reply, "job")? {
                if let Some(claimed) = self.accept(consumer, entry).await? {
                    return Ok(Some(claimed));
                }
            }
            // Background jobs enter the stream only once the group has been handed everything
            // in it: when one moves in, read it without blocking; else wait on the stream.
            // An interactive claimer never moves them.
            let mut block = Duration::ZERO;
            let promoted: i64 = if background {
                self.scripts
                    .promote_low
                    .key(&self.keys.jobs)
                    .key(&self.keys.low)
                    .arg(WORKERS_GROUP)
                    .invoke_async(&mut conn)
                    .await?
            } else {
                0
            };
            if promoted == 0 {
                let remaining = deadline.saturating_duration_since(Instant::now());
                block = remaining.min(self.config.poll_interval);
            }
            let read = match self
                .read_group(&self.keys.jobs, WORKERS_GROUP, consumer, 1, block)
                .await
            {
                Err(e) if is_nogroup(&e) => {
                    self.ensure_groups().await?;
                    continue;
                }
                other => other?,
            };
            for entry in parse_read(read, "job")? {
                if let Some(claimed) = self.accept(consumer, entry).await? {
                    return Ok(Some(claimed));
                }
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
        }
    }

    /// `XREADGROUP` of new entries on a pooled blocking connection; no `BLOCK` when `block`
    /// is under a millisecond (`BLOCK 0` would wait forever).
    async fn read_group(
        &self,
        stream: &str,
        group: &str,
        consumer: &str,
        count: usize,
        block: Duration,
    ) -> Result<Value, Error> {
        let mut cmd = redis::cmd("XREADGROUP");
        cmd.arg("GROUP")
            .arg(group)
            .arg(consumer)
            .arg("COUNT")
            .arg(count);
        let block_ms = millis(block);
        if block_ms > 0 {
            cmd.arg("BLOCK").arg(block_ms);
        }
        cmd.arg("STREAMS").arg(stream).arg(">");
        let mut conn = self.blocking.take().await?;
        let reply = cmd.query_async(&mut conn).await;
        if reply.is_ok() {
            self.blocking.give_back(conn);
        }
        Ok(reply?)
    }

    /// Turns a delivered entry into a claim, or settles it when it must not run: attempts
    /// exhausted (fail), undecodable (retry for a newer worker, then fail), garbage (drop).
    async fn accept(&self, consumer: &str, entry: RawEntry) -> Result<Option<Claimed>, Error> {
        let payload = entry.payload.unwrap_or_default();
        let header = match decode_header(&payload) {
            Ok(header) => header,
            Err(Error::UnsupportedVersion { found, .. }) => {
                // A job of a newer protocol: refused, and put back as it was (no attempt
                // spent) for a worker that speaks its version.
                tracing::warn!(entry = %entry.id, "a job has protocol version {found}, this worker speaks {PROTOCOL_VERSION}: left queued for a worker that speaks version {found}; upgrade this worker");
                let backoff = self.config.visibility_timeout;
                self.schedule(&entry.id, &payload, backoff).await?;
                return Ok(None);
            }
            Err(e) => {
                tracing::error!(entry = %entry.id, error = %e, "dropping a job entry without a readable header");
                self.finish(&entry.id, "", "").await?;
                return Ok(None);
            }
        };
        let attempt = header
            .attempt
            .saturating_add(entry.deliveries.saturating_sub(1));
        let identity = JobIdentity {
            subject: header.subject,
            ad_id: &header.ad_id,
            version: header.version,
        };
        if attempt > self.config.max_attempts {
            let event = gave_up(
                &identity,
                &reclaim_exhausted_message(self.config.max_attempts),
            );
            self.finish(&entry.id, &header.job_id, &event.encode())
                .await?;
            return Ok(None);
        }
        match decode_envelope(&payload) {
            Ok(envelope) => Ok(Some(Claimed {
                job_id: envelope.job_id,
                attempt,
                job: envelope.job,
                consumer: consumer.to_owned(),
                receipt: Receipt::Stream(entry.id),
            })),
            Err(e) => {
                tracing::warn!(job_id = %header.job_id, error = %e, "this worker cannot read the job; leaving it for a newer one");
                let reason = format!("no worker could read the job: {e}");
                if attempt >= self.config.max_attempts {
                    let event = gave_up(&identity, &reason);
                    self.finish(&entry.id, &header.job_id, &event.encode())
                        .await?;
                } else {
                    let mut value: serde_json::Value =
                        serde_json::from_str(&payload).map_err(|source| Error::Decode {
                            what: "job",
                            source,
                        })?;
                    value["attempt"] = serde_json::Value::from(attempt + 1);
                    self.schedule(
                        &entry.id,
                        &value.to_string(),
                        self.config.visibility_timeout,
                    )
                    .await?;
                }
                Ok(None)
            }
        }
    }

    /// Runs [`FINISH`](super::redis_scripts::FINISH); `Ok(true)` when the entry was pending.
    async fn finish(&self, entry_id: &str, job_id: &str, event: &str) -> Result<bool, Error> {
        let done: i64 = self
            .scripts
            .finish
            .key(&self.keys.jobs)
            .key(self.keys.marker(job_id))
            .key(&self.keys.events)
            .arg(WORKERS_GROUP)
            .arg(entry_id)
            .arg(event)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(done == 1)
    }

    async fn schedule(
        &self,
        entry_id: &str,
        payload: &str,
        backoff: Duration,
    ) -> Result<(), Error> {
        let _: i64 = self
            .scripts
            .retry
            .key(&self.keys.jobs)
            .key(&self.keys.delayed)
            .arg(WORKERS_GROUP)
            .arg(entry_id)
            .arg(payload)
            .arg(millis(backoff))
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    async fn finish_claim(&self, claimed: &Claimed, event: Option<Event>) -> Result<(), Error> {
        let Receipt::Stream(id) = &claimed.receipt else {
            return Err(Error::ForeignClaim);
        };
        let payload = event.map(|e| e.encode()).unwrap_or_default();
        self.finish(id, &claimed.job_id, &payload).await?;
        Ok(())
    }

    fn envelope_of(claimed: &Claimed, attempt: u32) -> JobEnvelope {
        let mut envelope = JobEnvelope::new(claimed.job.clone());
        envelope.attempt = attempt;
        envelope
    }

    async fn read_events_inner(
        &self,
        consumer: &str,
        max: usize,
        max_wait: Duration,
    ) -> Result<Vec<DeliveredEvent>, Error> {
        let deadline = Instant::now() + max_wait;
        loop {
            let reply: Value = self
                .scripts
                .reclaim
                .key(&self.keys.events)
                .arg(API_GROUP)
                .arg(consumer)
                .arg(millis(self.config.visibility_timeout))
                .arg(max)
                .invoke_async(&mut self.conn.clone())
                .await?;
            let mut raw = parse_reclaimed(reply, "event")?;
            if raw.is_empty() {
                let remaining = deadline.saturating_duration_since(Instant::now());
                let block = remaining.min(self.config.poll_interval);
                let read = match self
                    .read_group(&self.keys.events, API_GROUP, consumer, max, block)
                    .await
                {
                    Err(e) if is_nogroup(&e) => {
                        self.ensure_groups().await?;
                        continue;
                    }
                    other => other?,
                };
                raw = parse_read(read, "event")?;
            }
            let delivered: Vec<DeliveredEvent> = raw
                .into_iter()
                .filter_map(|entry| {
                    // An event this build cannot read stays pending for a newer API node.
                    match Event::decode(entry.payload.as_deref().unwrap_or_default()) {
                        Ok(event) => Some(DeliveredEvent {
                            event,
                            deliveries: entry.deliveries,
                            receipt: Receipt::Stream(entry.id),
                        }),
                        Err(e) => {
                            tracing::error!(entry = %entry.id, error = %e, "cannot read an event; leaving it pending");
                            None
                        }
                    }
                })
                .collect();
            if !delivered.is_empty() || max == 0 || Instant::now() >= deadline {
                return Ok(delivered);
            }
        }
    }
}

impl JobQueue for RedisQueue {
    fn config(&self) -> &QueueConfig {
        &self.config
    }

    fn enqueue(&self, job: Job) -> BoxFuture<'_, Result<EnqueueOutcome, Error>> {
        async move {
            let envelope = JobEnvelope::new(job);
            let queued: i64 = if super::is_background(&envelope.job) {
                self.scripts
                    .enqueue_low
                    .key(self.keys.marker(&envelope.job_id))
                    .key(&self.keys.low)
                    .arg(envelope.encode())
                    .arg(millis(MARKER_TTL))
                    .invoke_async(&mut self.conn.clone())
                    .await?
            } else {
                self.scripts
                    .enqueue
                    .key(&self.keys.jobs)
                    .key(self.keys.marker(&envelope.job_id))
                    .arg(envelope.encode())
                    .arg(millis(MARKER_TTL))
                    .invoke_async(&mut self.conn.clone())
                    .await?
            };
            Ok(if queued == 1 {
                EnqueueOutcome::Queued(envelope.job_id)
            } else {
                EnqueueOutcome::AlreadyLive(envelope.job_id)
            })
        }
        .boxed()
    }

    fn claim<'a>(
        &'a self,
        consumer: &'a str,
        max_wait: Duration,
    ) -> BoxFuture<'a, Result<Option<Claimed>, Error>> {
        self.claim_inner(consumer, max_wait, true).boxed()
    }

    fn claim_interactive<'a>(
        &'a self,
        consumer: &'a str,
        max_wait: Duration,
    ) -> BoxFuture<'a, Result<Option<Claimed>, Error>> {
        self.claim_inner(consumer, max_wait, false).boxed()
    }

    fn heartbeat<'a>(&'a self, claimed: &'a Claimed) -> BoxFuture<'a, Result<bool, Error>> {
        async move {
            let Receipt::Stream(id) = &claimed.receipt else {
                return Err(Error::ForeignClaim);
            };
            let kept: i64 = self
                .scripts
                .heartbeat
                .key(&self.keys.jobs)
                .arg(WORKERS_GROUP)
                .arg(id)
                .arg(&claimed.consumer)
                .invoke_async(&mut self.conn.clone())
                .await?;
            Ok(kept == 1)
        }
        .boxed()
    }

    fn complete<'a>(
        &'a self,
        claimed: &'a Claimed,
        completed: AdCompleted,
    ) -> BoxFuture<'a, Result<(), Error>> {
        self.finish_claim(claimed, Some(Event::Completed(completed)))
            .boxed()
    }

    fn ack<'a>(&'a self, claimed: &'a Claimed) -> BoxFuture<'a, Result<(), Error>> {
        self.finish_claim(claimed, None).boxed()
    }

    fn release<'a>(&'a self, claimed: &'a Claimed) -> BoxFuture<'a, Result<(), Error>> {
        async move {
            let Receipt::Stream(id) = &claimed.receipt else {
                return Err(Error::ForeignClaim);
            };
            let _: i64 = self
                .scripts
                .release
                .key(&self.keys.jobs)
                .arg(WORKERS_GROUP)
                .arg(id)
                .arg(Self::envelope_of(claimed, claimed.attempt).encode())
                .invoke_async(&mut self.conn.clone())
                .await?;
            Ok(())
        }
        .boxed()
    }

    fn retry<'a>(
        &'a self,
        claimed: &'a Claimed,
        backoff: Duration,
        reason: &'a str,
    ) -> BoxFuture<'a, Result<RetryOutcome, Error>> {
        async move {
            if claimed.attempt >= self.config.max_attempts {
                let identity = JobIdentity {
                    subject: claimed.job.subject(),
                    ad_id: claimed.job.ad_id(),
                    version: claimed.job.version(),
                };
                self.finish_claim(claimed, Some(gave_up(&identity, reason)))
                    .await?;
                return Ok(RetryOutcome::GaveUp);
            }
            let Receipt::Stream(id) = &claimed.receipt else {
                return Err(Error::ForeignClaim);
            };
            let next_attempt = claimed.attempt + 1;
            self.schedule(
                id,
                &Self::envelope_of(claimed, next_attempt).encode(),
                backoff,
            )
            .await?;
            Ok(RetryOutcome::Scheduled { next_attempt })
        }
        .boxed()
    }

    fn fail<'a>(
        &'a self,
        claimed: &'a Claimed,
        code: &'a str,
        message: &'a str,
    ) -> BoxFuture<'a, Result<(), Error>> {
        let event = Event::Failed(AdFailed {
            subject: claimed.job.subject(),
            ad_id: claimed.job.ad_id().to_owned(),
            version: claimed.job.version(),
            code: code.to_owned(),
            message: message.to_owned(),
        });
        self.finish_claim(claimed, Some(event)).boxed()
    }

    fn publish(&self, event: Event) -> BoxFuture<'_, Result<(), Error>> {
        async move {
            let mut conn = self.conn.clone();
            let payload = event.encode();
            match &event {
                Event::Progress(p) => {
                    let _: Value = redis::cmd("SET")
                        .arg(self.keys.progress(&p.ad_id))
                        .arg(payload)
                        .arg("PX")
                        .arg(millis(self.config.progress_ttl).max(1))
                        .query_async(&mut conn)
                        .await?;
                }
                Event::Completed(_) | Event::Failed(_) => {
                    let _: Value = redis::cmd("XADD")
                        .arg(&self.keys.events)
                        .arg("*")
                        .arg("event")
                        .arg(payload)
                        .query_async(&mut conn)
                        .await?;
                }
            }
            Ok(())
        }
        .boxed()
    }

    fn read_events<'a>(
        &'a self,
        consumer: &'a str,
        max: usize,
        max_wait: Duration,
    ) -> BoxFuture<'a, Result<Vec<DeliveredEvent>, Error>> {
        self.read_events_inner(consumer, max, max_wait).boxed()
    }

    fn ack_event<'a>(&'a self, delivered: &'a DeliveredEvent) -> BoxFuture<'a, Result<(), Error>> {
        async move {
            let Receipt::Stream(id) = &delivered.receipt else {
                return Err(Error::ForeignClaim);
            };
            let _: Value = redis::pipe()
                .atomic()
                .cmd("XACK")
                .arg(&self.keys.events)
                .arg(API_GROUP)
                .arg(id)
                .cmd("XDEL")
                .arg(&self.keys.events)
                .arg(id)
                .query_async(&mut self.conn.clone())
                .await?;
            Ok(())
        }
        .boxed()
    }

    fn retire<'a>(&'a self, consumer: &'a str) -> BoxFuture<'a, Result<(), Error>> {
        async move {
            let _: i64 = self
                .scripts
                .retire
                .key(&self.keys.jobs)
                .key(&self.keys.events)
                .arg(WORKERS_GROUP)
                .arg(API_GROUP)
                .arg(consumer)
                .invoke_async(&mut self.conn.clone())
                .await?;
            Ok(())
        }
        .boxed()
    }

    fn latest_progress<'a>(
        &'a self,
        ad_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<AdProgress>, Error>> {
        async move {
            let stored: Option<String> = redis::cmd("GET")
                .arg(self.keys.progress(ad_id))
                .query_async(&mut self.conn.clone())
                .await?;
            match stored.as_deref().map(Event::decode).transpose()? {
                Some(Event::Progress(p)) => Ok(Some(p)),
                _ => Ok(None),
            }
        }
        .boxed()
    }

    fn ping(&self) -> BoxFuture<'_, Result<(), Error>> {
        async move {
            let _: String = redis::cmd("PING")
                .query_async(&mut self.conn.clone())
                .await?;
            Ok(())
        }
        .boxed()
    }

    fn stats(&self) -> BoxFuture<'_, Result<QueueStats, Error>> {
        async move {
            // Finished entries are XDELeted, so the stream's length is the work queued or
            // claimed, and its first entry's id (`<ms>-<seq>`, set by XADD) is the oldest.
            let (jobs, low, delayed, first): (u64, u64, u64, Vec<(String, Value)>) = redis::pipe()
                .cmd("XLEN")
                .arg(&self.keys.jobs)
                .cmd("LLEN")
                .arg(&self.keys.low)
                .cmd("ZCARD")
                .arg(&self.keys.delayed)
                .cmd("XRANGE")
                .arg(&self.keys.jobs)
                .arg("-")
                .arg("+")
                .arg("COUNT")
                .arg(1)
                .query_async(&mut self.conn.clone())
                .await?;
            let oldest_job_age = first.first().and_then(|(id, _)| {
                let ms: u64 = id.split('-').next()?.parse().ok()?;
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .ok()?;
                Some(now.saturating_sub(Duration::from_millis(ms)))
            });
            // Waiting background jobs count as queued; their age is not tracked (the oldest
            // job of the stream is the age reported).
            Ok(QueueStats {
                jobs: jobs + low,
                delayed,
                oldest_job_age,
            })
        }
        .boxed()
    }
}
