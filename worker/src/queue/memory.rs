//! [`MemoryQueue`]: the in-process backend of the embedded default. One mutex-guarded state
//! (held only for short, non-async critical sections) plus two [`Notify`]s that wake waiting
//! claimers and event readers.
//!
//! It mirrors the Redis backend entry for entry: a ready queue (the stream), a queue of
//! background jobs taken only when the ready queue is empty (the low list), a pending map
//! with owner and last-seen time (the consumer group's pending entries list), a delayed list
//! (the retry sorted set), live job ids (the dedup markers), and the same attempt arithmetic
//! (`attempt = envelope attempt + deliveries - 1`), so the shared tests hold for both.
//!
//! Rejected alternative: an `mpsc` channel per queue. A channel cannot take a message back
//! from a consumer that vanished, which is exactly what the visibility timeout needs.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::{
    Claimed, DeliveredEvent, EnqueueOutcome, JobIdentity, JobQueue, QueueConfig, QueueStats,
    Receipt, RetryOutcome, gave_up, reclaim_exhausted_message,
};
use crate::Error;
use crate::protocol::{AdCompleted, AdFailed, AdProgress, Event, Job, JobEnvelope};

/// The in-process queue. Create one per process and share it as `Arc<dyn JobQueue>`
/// between the API and its in-process workers. Nothing survives the process.
pub struct MemoryQueue {
    config: QueueConfig,
    state: Mutex<State>,
    jobs_changed: Notify,
    events_changed: Notify,
}

struct Entry {
    id: u64,
    envelope: JobEnvelope,
    deliveries: u32,
    /// When the job entered the ready queue (kept across releases), for the oldest-job age.
    queued_at: Instant,
}

impl Entry {
    fn attempt(&self) -> u32 {
        self.envelope.attempt + self.deliveries.saturating_sub(1)
    }
}

struct PendingJob {
    entry: Entry,
    consumer: String,
    since: Instant,
}

struct PendingEvent {
    event: Event,
    since: Instant,
    deliveries: u32,
}

#[derive(Default)]
struct State {
    next_id: u64,
    ready: VecDeque<Entry>,
    /// Background jobs ([`super::is_background`]): taken only while `ready` is empty.
    ready_low: VecDeque<Entry>,
    pending: BTreeMap<u64, PendingJob>,
    delayed: Vec<(Instant, JobEnvelope)>,
    live: HashSet<String>,
    events: VecDeque<(u64, Event)>,
    events_pending: BTreeMap<u64, PendingEvent>,
    progress: HashMap<String, (AdProgress, Instant)>,
}

impl State {
    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn push_ready(&mut self, envelope: JobEnvelope) {
        let id = self.next_id();
        self.ready.push_back(Entry {
            id,
            envelope,
            deliveries: 0,
            queued_at: Instant::now(),
        });
    }

    /// A new job: background work waits behind everything in `ready`.
    fn push_new(&mut self, envelope: JobEnvelope) {
        if super::is_background(&envelope.job) {
            let id = self.next_id();
            self.ready_low.push_back(Entry {
                id,
                envelope,
                deliveries: 0,
                queued_at: Instant::now(),
            });
        } else {
            self.push_ready(envelope);
        }
    }

    fn push_event(&mut self, event: Event) {
        let id = self.next_id();
        self.events.push_back((id, event));
    }

    /// Moves due retries to the ready queue.
    fn promote_due(&mut self, now: Instant) {
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.delayed)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        self.delayed = later;
        for (_, envelope) in due {
            self.push_ready(envelope);
        }
    }

    /// Takes the next deliverable job: an expired claim first, then the ready queue. Claims
    /// whose attempts ran out become `Failed` events; returns whether any did.
    fn take_next(
        &mut self,
        consumer: &str,
        now: Instant,
        config: &QueueConfig,
        background: bool,
    ) -> (Option<Claimed>, bool) {
        let mut failed_any = false;
        let expired: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.since + config.visibility_timeout <= now)
            .filter(|(_, p)| background || !super::is_background(&p.entry.envelope.job))
            .map(|(id, _)| *id)
            .collect();
        let mut taken = None;
        for id in expired {
            let Some(mut pending) = self.pending.remove(&id) else {
                continue;
            };
            pending.entry.deliveries += 1;
            if pending.entry.attempt() > config.max_attempts {
                let envelope = &pending.entry.envelope;
                let identity = JobIdentity {
                    subject: envelope.subject,
                    ad_id: &envelope.ad_id,
                    version: envelope.version,
                };
                let event = gave_up(&identity, &reclaim_exhausted_message(config.max_attempts));
                self.live.remove(&envelope.job_id);
                self.push_event(event);
                failed_any = true;
                continue;
            }
            taken = Some(pending.entry);
            break;
        }
        let entry = match taken {
            Some(entry) => Some(entry),
            None => self
                .ready
                .pop_front()
                .or_else(|| {
                    if background {
                        self.ready_low.pop_front()
                    } else {
                        None
                    }
                })
                .map(|mut entry| {
                    entry.deliveries = 1;
                    entry
                }),
        };
        let claimed = entry.map(|entry| {
            let claimed = Claimed {
                job_id: entry.envelope.job_id.clone(),
                attempt: entry.attempt(),
                job: entry.envelope.job.clone(),
                consumer: consumer.to_owned(),
                receipt: Receipt::Memory(entry.id),
            };
            self.pending.insert(
                entry.id,
                PendingJob {
                    entry,
                    consumer: consumer.to_owned(),
                    since: now,
                },
            );
            claimed
        });
        (claimed, failed_any)
    }

    /// When the next retry falls due or the next claim expires.
    fn next_change(&self, visibility: Duration) -> Option<Instant> {
        let due = self.delayed.iter().map(|(at, _)| *at).min();
        let expiry = self.pending.values().map(|p| p.since + visibility).min();
        due.into_iter().chain(expiry).min()
    }

    /// Removes a pending job; `None` when it was already finished.
    fn finish(&mut self, claimed: &Claimed) -> Result<Option<PendingJob>, Error> {
        let Receipt::Memory(id) = claimed.receipt else {
            return Err(Error::ForeignClaim);
        };
        let pending = self.pending.remove(&id);
        if let Some(p) = &pending {
            self.live.remove(&p.entry.envelope.job_id);
        }
        Ok(pending)
    }
}

impl MemoryQueue {
    /// An empty queue.
    pub fn new(config: QueueConfig) -> Self {
        MemoryQueue {
            config,
            state: Mutex::new(State::default()),
            jobs_changed: Notify::new(),
            events_changed: Notify::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // The state stays consistent across a panic: every critical section is a few
        // collection operations with no user code.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn claim_inner(
        &self,
        consumer: &str,
        max_wait: Duration,
        background: bool,
    ) -> Option<Claimed> {
        let deadline = Instant::now() + max_wait;
        loop {
            let notified = self.jobs_changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let (claimed, failed_any, next_change) = {
                let mut state = self.state();
                let now = Instant::now();
                state.promote_due(now);
                let (claimed, failed_any) =
                    state.take_next(consumer, now, &self.config, background);
                (
                    claimed,
                    failed_any,
                    state.next_change(self.config.visibility_timeout),
                )
            };
            if failed_any {
                self.events_changed.notify_waiters();
            }
            if claimed.is_some() {
                return claimed;
            }
            if Instant::now() >= deadline {
                return None;
            }
            let wake = next_change.map_or(deadline, |at| at.min(deadline));
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep_until(wake) => {}
            }
        }
    }

    async fn read_events_inner(
        &self,
        consumer: &str,
        max: usize,
        max_wait: Duration,
    ) -> Vec<DeliveredEvent> {
        let _ = consumer; // one group: any API node may take any event
        let deadline = Instant::now() + max_wait;
        let visibility = self.config.visibility_timeout;
        loop {
            let notified = self.events_changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let (out, next_expiry) = {
                let mut state = self.state();
                let now = Instant::now();
                let mut out = Vec::new();
                for (id, pending) in state.events_pending.iter_mut() {
                    if out.len() >= max {
                        break;
                    }
                    if pending.since + visibility <= now {
                        pending.since = now;
                        pending.deliveries += 1;
                        out.push(DeliveredEvent {
                            event: pending.event.clone(),
                            deliveries: pending.deliveries,
                            receipt: Receipt::Memory(*id),
                        });
                    }
                }
                while out.len() < max {
                    let Some((id, event)) = state.events.pop_front() else {
                        break;
                    };
                    out.push(DeliveredEvent {
                        event: event.clone(),
                        deliveries: 1,
                        receipt: Receipt::Memory(id),
                    });
                    state.events_pending.insert(
                        id,
                        PendingEvent {
                            event,
                            since: now,
                            deliveries: 1,
                        },
                    );
                }
                let next_expiry = state
                    .events_pending
                    .values()
                    .map(|p| p.since + visibility)
                    .min();
                (out, next_expiry)
            };
            if !out.is_empty() || max == 0 || Instant::now() >= deadline {
                return out;
            }
            let wake = next_expiry.map_or(deadline, |at| at.min(deadline));
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep_until(wake) => {}
            }
        }
    }

    fn finish_with(&self, claimed: &Claimed, event: Option<Event>) -> Result<(), Error> {
        let finished = {
            let mut state = self.state();
            let finished = state.finish(claimed)?.is_some();
            if let (true, Some(event)) = (finished, event) {
                state.push_event(event);
            }
            finished
        };
        if finished {
            self.events_changed.notify_waiters();
        }
        Ok(())
    }
}

impl JobQueue for MemoryQueue {
    fn config(&self) -> &QueueConfig {
        &self.config
    }

    fn enqueue(&self, job: Job) -> BoxFuture<'_, Result<EnqueueOutcome, Error>> {
        let envelope = JobEnvelope::new(job);
        let job_id = envelope.job_id.clone();
        let outcome = {
            let mut state = self.state();
            if state.live.insert(job_id.clone()) {
                state.push_new(envelope);
                EnqueueOutcome::Queued(job_id)
            } else {
                EnqueueOutcome::AlreadyLive(job_id)
            }
        };
        if matches!(outcome, EnqueueOutcome::Queued(_)) {
            self.jobs_changed.notify_waiters();
        }
        async move { Ok(outcome) }.boxed()
    }

    fn claim<'a>(
        &'a self,
        consumer: &'a str,
        max_wait: Duration,
    ) -> BoxFuture<'a, Result<Option<Claimed>, Error>> {
        async move { Ok(self.claim_inner(consumer, max_wait, true).await) }.boxed()
    }

    fn claim_interactive<'a>(
        &'a self,
        consumer: &'a str,
        max_wait: Duration,
    ) -> BoxFuture<'a, Result<Option<Claimed>, Error>> {
        async move { Ok(self.claim_inner(consumer, max_wait, false).await) }.boxed()
    }

    fn heartbeat<'a>(&'a self, claimed: &'a Claimed) -> BoxFuture<'a, Result<bool, Error>> {
        let result = match claimed.receipt {
            Receipt::Memory(id) => {
                let mut state = self.state();
                match state.pending.get_mut(&id) {
                    Some(p) if p.consumer == claimed.consumer => {
                        p.since = Instant::now();
                        Ok(true)
                    }
                    _ => Ok(false),
                }
            }
            Receipt::Stream(_) => Err(Error::ForeignClaim),
        };
        async move { result }.boxed()
    }

    fn complete<'a>(
        &'a self,
        claimed: &'a Claimed,
        completed: AdCompleted,
    ) -> BoxFuture<'a, Result<(), Error>> {
        let result = self.finish_with(claimed, Some(Event::Completed(completed)));
        async move { result }.boxed()
    }

    fn ack<'a>(&'a self, claimed: &'a Claimed) -> BoxFuture<'a, Result<(), Error>> {
        let result = self.finish_with(claimed, None);
        async move { result }.boxed()
    }

    fn release<'a>(&'a self, claimed: &'a Claimed) -> BoxFuture<'a, Result<(), Error>> {
        let result = (|| {
            let Receipt::Memory(id) = claimed.receipt else {
                return Err(Error::ForeignClaim);
            };
            let mut state = self.state();
            if let Some(p) = state.pending.remove(&id) {
                let queued_at = p.entry.queued_at;
                let mut envelope = p.entry.envelope;
                envelope.attempt = claimed.attempt;
                let id = state.next_id();
                state.ready.push_front(Entry {
                    id,
                    envelope,
                    deliveries: 0,
                    queued_at,
                });
            }
            Ok(())
        })();
        self.jobs_changed.notify_waiters();
        async move { result }.boxed()
    }

    fn retry<'a>(
        &'a self,
        claimed: &'a Claimed,
        backoff: Duration,
        reason: &'a str,
    ) -> BoxFuture<'a, Result<RetryOutcome, Error>> {
        let result = if claimed.attempt >= self.config.max_attempts {
            let identity = JobIdentity {
                subject: claimed.job.subject(),
                ad_id: claimed.job.ad_id(),
                version: claimed.job.version(),
            };
            self.finish_with(claimed, Some(gave_up(&identity, reason)))
                .map(|()| RetryOutcome::GaveUp)
        } else {
            (|| {
                let Receipt::Memory(id) = claimed.receipt else {
                    return Err(Error::ForeignClaim);
                };
                let mut state = self.state();
                if let Some(p) = state.pending.remove(&id) {
                    let mut envelope = p.entry.envelope;
                    envelope.attempt = claimed.attempt + 1;
                    state.delayed.push((Instant::now() + backoff, envelope));
                }
                Ok(RetryOutcome::Scheduled {
                    next_attempt: claimed.attempt + 1,
                })
            })()
        };
        // Waiting claimers recompute their wake-up time to include the new due retry.
        self.jobs_changed.notify_waiters();
        async move { result }.boxed()
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
        let result = self.finish_with(claimed, Some(event));
        async move { result }.boxed()
    }

    fn publish(&self, event: Event) -> BoxFuture<'_, Result<(), Error>> {
        match event {
            Event::Progress(progress) => {
                let now = Instant::now();
                let mut state = self.state();
                if state.progress.len() >= 1024 {
                    state.progress.retain(|_, (_, expires)| *expires > now);
                }
                let expires = now + self.config.progress_ttl;
                state
                    .progress
                    .insert(progress.ad_id.clone(), (progress, expires));
            }
            terminal => {
                self.state().push_event(terminal);
                self.events_changed.notify_waiters();
            }
        }
        async { Ok(()) }.boxed()
    }

    fn read_events<'a>(
        &'a self,
        consumer: &'a str,
        max: usize,
        max_wait: Duration,
    ) -> BoxFuture<'a, Result<Vec<DeliveredEvent>, Error>> {
        async move { Ok(self.read_events_inner(consumer, max, max_wait).await) }.boxed()
    }

    fn ack_event<'a>(&'a self, delivered: &'a DeliveredEvent) -> BoxFuture<'a, Result<(), Error>> {
        let result = match delivered.receipt {
            Receipt::Memory(id) => {
                self.state().events_pending.remove(&id);
                Ok(())
            }
            Receipt::Stream(_) => Err(Error::ForeignClaim),
        };
        async move { result }.boxed()
    }

    fn retire<'a>(&'a self, _consumer: &'a str) -> BoxFuture<'a, Result<(), Error>> {
        // Consumers are not registered in memory; nothing to forget.
        async { Ok(()) }.boxed()
    }

    fn latest_progress<'a>(
        &'a self,
        ad_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<AdProgress>, Error>> {
        let now = Instant::now();
        let progress = self
            .state()
            .progress
            .get(ad_id)
            .filter(|(_, expires)| *expires > now)
            .map(|(p, _)| p.clone());
        async move { Ok(progress) }.boxed()
    }

    fn stats(&self) -> BoxFuture<'_, Result<QueueStats, Error>> {
        let state = self.state();
        let now = Instant::now();
        let oldest = state
            .ready
            .iter()
            .chain(&state.ready_low)
            .map(|e| e.queued_at)
            .chain(state.pending.values().map(|p| p.entry.queued_at))
            .min();
        let stats = QueueStats {
            jobs: (state.ready.len() + state.ready_low.len() + state.pending.len()) as u64,
            delayed: state.delayed.len() as u64,
            oldest_job_age: oldest.map(|t| now.saturating_duration_since(t)),
        };
        drop(state);
        async move { Ok(stats) }.boxed()
    }
}
