//! The delivery task: a background task of every API process (never on a request's
//! path), woken when the event applier commits and otherwise polling for due retries.
//!
//! At least once: a pending delivery is claimed with a lease (`lease_until_ms`) before it
//! is sent, then marked delivered or rescheduled. A process that dies mid-delivery leaves
//! the lease to expire; any API process then takes the delivery again. Receivers may thus
//! see an event twice, always with the same `Adforge-Event-Id`.
//!
//! Order per resource: a delivery is not sent while an earlier delivery of the same
//! resource (image ad) to the same endpoint is still pending, so an endpoint sees an ad's
//! events in the order they happened (one SQL `NOT EXISTS` on an index).
//!
//! Redeliveries (POST /v1/events/{id}/redeliver) stand outside that order: one is attempted
//! at once, even while an automatic retry of the same event is scheduled hours away, and
//! it holds back no first delivery. When it succeeds, the event's scheduled retries to
//! that endpoint are dropped (`failed`, saying which redelivery superseded them), which
//! also lets the resource's later first deliveries go.
//!
//! Retries: after a failed attempt n (timeout, connection error, redirect, non-2xx), the
//! next is due `base × 2^(n-1)` later (base 60 s, capped at 6 h), with ±20 % jitter:
//! 1, 2, 4, 8, 16, 32, 64, 128, 256 minutes, then 6 h, 6 h, 6 h. The 13th attempt, about
//! 26.5 hours after the first, is the last; the delivery then stays `failed` (POST
//! /v1/events/{id}/redeliver sends it again). An endpoint whose attempts have failed
//! without a success in between for 3 days is disabled with `disabled_reason`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use sqlx::FromRow;
use tokio::sync::{Notify, Semaphore};

use crate::store::Db;

/// Attempts per delivery before it is given up (see the module text for the schedule).
pub const MAX_ATTEMPTS: i64 = 13;
/// The longest wait between two attempts, in units of the retry base (6 h at 60 s).
const MAX_DELAY_FACTOR: u64 = 360;
/// Response time limit of one attempt.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// An endpoint failing for this long without a success is disabled.
pub const DISABLE_AFTER_SECS: i64 = 3 * 24 * 3600;
/// Deliveries in flight at once per process.
const CONCURRENCY: usize = 64;
/// Deliveries claimed per round.
const BATCH: i64 = 32;
/// The longest sleep between two looks at the table (a lost wake-up, another process's
/// events, expired leases).
const POLL: Duration = Duration::from_secs(1);

/// `adforge serve` flags of the delivery task. Hidden: they exist so tests can shorten the
/// schedule; production keeps the defaults.
#[derive(Args, Clone, Debug)]
pub struct WebhookArgs {
    /// First retry delay of a failed webhook delivery; later ones double (tests shorten it).
    #[arg(
        long,
        env = "ADFORGE_WEBHOOK_RETRY_BASE_MS",
        default_value_t = 60_000,
        hide = true
    )]
    pub webhook_retry_base_ms: u64,
    /// How long a claimed delivery stays reserved to the process that claimed it; a process
    /// that dies mid-delivery has its deliveries taken over after this (tests shorten it).
    #[arg(
        long,
        env = "ADFORGE_WEBHOOK_LEASE_MS",
        default_value_t = 60_000,
        hide = true
    )]
    pub webhook_lease_ms: u64,
}

impl Default for WebhookArgs {
    fn default() -> Self {
        Self {
            webhook_retry_base_ms: 60_000,
            webhook_lease_ms: 60_000,
        }
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    let now = time::OffsetDateTime::now_utc();
    i64::try_from(now.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// An epoch-milliseconds value in the API's timestamp format.
pub fn format_ms(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .map(crate::timestamp::format)
        .unwrap_or_default()
}

/// Resolves names with the system resolver and keeps only public addresses, so the
/// connection goes to an address that was checked (a name re-pointed at a private
/// address after the endpoint was created cannot be reached).
struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let host = name.as_str().to_string();
            let all = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let public: Vec<SocketAddr> = all
                .filter(|a| adforge_renderer::address::is_public(a.ip()))
                .collect();
            if public.is_empty() {
                let e: Box<dyn std::error::Error + Send + Sync> = Box::new(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!(
                        "every address {host} resolves to is {}",
                        adforge_renderer::address::REFUSED
                    ),
                ));
                return Err(e);
            }
            let addrs: Addrs = Box::new(public.into_iter());
            Ok(addrs)
        })
    }
}

/// The delivery task's handle.
#[derive(Clone)]
pub struct Deliverer {
    db: Db,
    wake: Arc<Notify>,
    client: reqwest::Client,
    allow_private: bool,
    retry_base: Duration,
    lease: Duration,
}

#[derive(FromRow)]
struct Due {
    id: String,
    org_id: String,
    endpoint_id: String,
    event_id: String,
    attempts: i64,
    url: String,
    secret: String,
    previous_secret: Option<String>,
    previous_secret_expires_at: Option<String>,
    #[sqlx(try_from = "crate::store::Flag")]
    enabled: bool,
    deleted_at: Option<String>,
    payload: String,
    #[sqlx(try_from = "crate::store::Flag")]
    redelivery: bool,
}

/// What one attempt came to.
struct Outcome {
    status: Option<u16>,
    error: Option<String>,
    latency_ms: i64,
}

impl Deliverer {
    /// A deliverer over `db`, woken by `wake` (the event applier notifies it on commit).
    ///
    /// # Errors
    /// When the HTTP client cannot be built (no TLS roots).
    pub fn new(
        db: Db,
        wake: Arc<Notify>,
        allow_private: bool,
        args: &WebhookArgs,
    ) -> Result<Self, reqwest::Error> {
        let mut builder = reqwest::Client::builder()
            .timeout(ATTEMPT_TIMEOUT)
            .connect_timeout(ATTEMPT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent("adforge-webhooks/1")
            .pool_max_idle_per_host(8);
        if !allow_private {
            builder = builder.dns_resolver(Arc::new(PublicOnly));
        }
        Ok(Self {
            db,
            wake,
            client: builder.build()?,
            allow_private,
            retry_base: Duration::from_millis(args.webhook_retry_base_ms.max(1)),
            lease: Duration::from_millis(args.webhook_lease_ms.max(100)),
        })
    }

    /// Wakes the task (after an event was committed, or a redelivery requested).
    pub fn kick(&self) {
        self.wake.notify_one();
    }

    /// Starts the task.
    pub fn spawn(self) {
        tokio::spawn(async move {
            let permits = Arc::new(Semaphore::new(CONCURRENCY));
            loop {
                let room = permits.available_permits().min(BATCH as usize) as i64;
                let claimed = if room == 0 {
                    Ok(Vec::new())
                } else {
                    self.claim(room).await
                };
                let n = match claimed {
                    Ok(batch) => {
                        let n = batch.len() as i64;
                        for due in batch {
                            let Ok(permit) = permits.clone().acquire_owned().await else {
                                return;
                            };
                            let this = self.clone();
                            tokio::spawn(async move {
                                this.attempt(due).await;
                                drop(permit);
                                // A finished delivery may unblock the next one of its
                                // resource, and frees a slot.
                                this.kick();
                            });
                        }
                        n
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "claiming webhook deliveries failed; retrying");
                        0
                    }
                };
                if n == room && room > 0 {
                    continue;
                }
                let wait = self.next_due_in().await.unwrap_or(POLL).min(POLL);
                let _ = tokio::time::timeout(wait, self.wake.notified()).await;
            }
        });
    }

    /// How long until the earliest pending delivery is due (its lease expired included).
    async fn next_due_in(&self) -> Option<Duration> {
        let next: Option<i64> = crate::store::query_scalar(
            "SELECT min(CASE WHEN d.next_attempt_ms > coalesce(d.lease_until_ms, 0) THEN d.next_attempt_ms ELSE coalesce(d.lease_until_ms, 0) END) FROM webhook_deliveries d \
             WHERE d.state = 'pending' AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p \
                 WHERE p.endpoint_id = d.endpoint_id AND p.object_id = d.object_id AND p.state = 'pending' \
                 AND p.seq < d.seq)",
        )
        .fetch_one(&self.db.read)
        .await
        .ok()
        .flatten();
        let wait = next? - now_ms();
        Some(Duration::from_millis(u64::try_from(wait).unwrap_or(0)))
    }

    /// Leases up to `limit` due deliveries whose resource has no earlier pending delivery
    /// to the same endpoint.
    async fn claim(&self, limit: i64) -> Result<Vec<Due>, sqlx::Error> {
        let now = now_ms();
        // A cheap look on the read pool first: most wake-ups find nothing due, and those
        // should not take the single write connection.
        let any: Option<i64> = crate::store::query_scalar(
            "SELECT 1 FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_ms <= ? \
             AND (lease_until_ms IS NULL OR lease_until_ms <= ?) LIMIT 1",
        )
        .bind(now)
        .bind(now)
        .fetch_optional(&self.db.read)
        .await?;
        if any.is_none() {
            return Ok(Vec::new());
        }
        let mut tx = self.db.begin_write().await?;
        let due: Vec<Due> = crate::store::query_as(
            "SELECT d.id, d.org_id, d.endpoint_id, d.event_id, d.attempts, w.url, w.secret, w.previous_secret, \
             w.previous_secret_expires_at, w.enabled, w.deleted_at, e.payload, d.redelivery \
             FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id JOIN events e ON e.id = d.event_id \
             WHERE d.state = 'pending' AND d.next_attempt_ms <= ? AND (d.lease_until_ms IS NULL OR d.lease_until_ms <= ?) \
             AND (d.redelivery = 1 OR NOT EXISTS (SELECT 1 FROM webhook_deliveries p WHERE p.endpoint_id = d.endpoint_id \
                 AND p.object_id = d.object_id AND p.state = 'pending' AND p.redelivery = 0 AND p.seq < d.seq)) \
             ORDER BY d.next_attempt_ms, d.seq LIMIT ?",
        )
        .bind(now)
        .bind(now)
        .bind(limit)
        .fetch_all(&mut *tx)
        .await?;
        let lease_until = now + i64::try_from(self.lease.as_millis()).unwrap_or(60_000);
        let mut out = Vec::with_capacity(due.len());
        for mut d in due {
            if !d.enabled || d.deleted_at.is_some() {
                let why = if d.deleted_at.is_some() {
                    "the endpoint was deleted"
                } else {
                    "the endpoint is disabled"
                };
                crate::store::query(
                    "UPDATE webhook_deliveries SET state = 'failed', next_attempt_ms = NULL, lease_until_ms = NULL, \
                     last_error = ? WHERE id = ?",
                )
                .bind(why)
                .bind(&d.id)
                .execute(&mut *tx)
                .await?;
                continue;
            }
            crate::store::query(
                "UPDATE webhook_deliveries SET lease_until_ms = ?, attempts = attempts + 1 WHERE id = ?",
            )
            .bind(lease_until)
            .bind(&d.id)
            .execute(&mut *tx)
            .await?;
            d.attempts += 1;
            out.push(d);
        }
        tx.commit().await?;
        Ok(out)
    }

    /// Sends one delivery and records the outcome.
    async fn attempt(&self, due: Due) {
        let outcome = self.send(&due).await;
        if let Err(e) = self.finish(&due, &outcome).await {
            // The lease expires and the delivery is attempted again.
            tracing::warn!(delivery = %due.id, error = %e, "recording a webhook attempt failed");
        }
    }

    async fn send(&self, due: &Due) -> Outcome {
        let started = Instant::now();
        let fail = |error: String| Outcome {
            status: None,
            error: Some(error),
            latency_ms: 0,
        };
        // Checked again at delivery time: the URL was checked when it was saved, but DNS
        // can change (the resolver keeps only public addresses) and literal addresses skip
        // the resolver.
        let url = match reqwest::Url::parse(&due.url) {
            Ok(u) => u,
            Err(e) => return fail(format!("invalid URL: {e}")),
        };
        if !self.allow_private {
            if url.scheme() != "https" {
                return fail("the URL is not https".into());
            }
            if let Some(host) = url.host_str()
                && let Some(why) =
                    adforge_renderer::address::Host::parse(host).map_or_else(Some, |h| h.refusal())
            {
                return fail(format!("{why}; not delivered"));
            }
        }
        let t = now_ms() / 1000;
        let now = crate::timestamp::now();
        let mut secrets = vec![due.secret.as_str()];
        if let (Some(old), Some(until)) = (&due.previous_secret, &due.previous_secret_expires_at)
            && until.as_str() > now.as_str()
        {
            secrets.push(old.as_str());
        }
        let body = due.payload.clone().into_bytes();
        let signature = super::signature_header(t, &secrets, &body);
        let result = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(super::SIGNATURE_HEADER, signature)
            .header(super::EVENT_ID_HEADER, &due.event_id)
            .body(body)
            .send()
            .await;
        let latency_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        match result {
            Ok(res) => {
                let status = res.status();
                // The body is not read: receivers answer fast and with little; dropping the
                // response is all that is needed.
                drop(res);
                let error = if status.is_success() {
                    None
                } else if status.is_redirection() {
                    Some(format!(
                        "HTTP {}: redirects are not followed; point the endpoint at the final URL",
                        status.as_u16()
                    ))
                } else {
                    Some(format!("HTTP {}", status.as_u16()))
                };
                Outcome {
                    status: Some(status.as_u16()),
                    error,
                    latency_ms,
                }
            }
            Err(e) => {
                let error = if e.is_timeout() {
                    format!("no response within {} seconds", ATTEMPT_TIMEOUT.as_secs())
                } else if e.is_connect() {
                    format!("could not connect: {}", error_chain(&e))
                } else {
                    error_chain(&e)
                };
                Outcome {
                    status: None,
                    error: Some(error),
                    latency_ms,
                }
            }
        }
    }

    /// The delay before attempt `attempts + 1`.
    fn backoff(&self, attempts: i64) -> Duration {
        let exp = u32::try_from(attempts.saturating_sub(1))
            .unwrap_or(0)
            .min(20);
        let factor = (1u64 << exp).min(MAX_DELAY_FACTOR);
        let base = self.retry_base.as_millis() as u64;
        let nominal = base.saturating_mul(factor);
        // ±20 % jitter, from 128 random bits we already have a source for.
        let r = (uuid::Uuid::new_v4().as_u128() % 401) as u64; // 0..=400
        Duration::from_millis(nominal.saturating_mul(800 + r) / 1000)
    }

    async fn finish(&self, due: &Due, o: &Outcome) -> Result<(), sqlx::Error> {
        let now = crate::timestamp::now();
        let mut tx = self.db.begin_write().await?;
        if o.error.is_none() {
            crate::store::query(
                "UPDATE webhook_deliveries SET state = 'delivered', next_attempt_ms = NULL, lease_until_ms = NULL, \
                 last_status = ?, last_error = NULL, latency_ms = ?, last_attempt_at = ?, delivered_at = ? \
                 WHERE id = ? AND state = 'pending'",
            )
            .bind(o.status.map(i64::from))
            .bind(o.latency_ms)
            .bind(&now)
            .bind(&now)
            .bind(&due.id)
            .execute(&mut *tx)
            .await?;
            crate::store::query("UPDATE webhook_endpoints SET failing_since = NULL WHERE id = ?")
                .bind(&due.endpoint_id)
                .execute(&mut *tx)
                .await?;
            if due.redelivery {
                // The receiver has the event now: its scheduled retries to this endpoint
                // are dropped (one being attempted right now finishes as it will).
                crate::store::query(
                    "UPDATE webhook_deliveries SET state = 'failed', next_attempt_ms = NULL, last_error = ? \
                     WHERE event_id = ? AND endpoint_id = ? AND state = 'pending' AND id <> ? \
                     AND (lease_until_ms IS NULL OR lease_until_ms <= ?)",
                )
                .bind(format!(
                    "superseded: redelivery {} was delivered, so no further retry is made",
                    due.id
                ))
                .bind(&due.event_id)
                .bind(&due.endpoint_id)
                .bind(&due.id)
                .bind(now_ms())
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            return Ok(());
        }
        let (state, next) = if due.attempts >= MAX_ATTEMPTS {
            ("failed", None)
        } else {
            let delay = i64::try_from(self.backoff(due.attempts).as_millis()).unwrap_or(0);
            ("pending", Some(now_ms() + delay))
        };
        crate::store::query(
            "UPDATE webhook_deliveries SET state = ?, next_attempt_ms = ?, lease_until_ms = NULL, last_status = ?, \
             last_error = ?, latency_ms = ?, last_attempt_at = ? WHERE id = ? AND state = 'pending'",
        )
        .bind(state)
        .bind(next)
        .bind(o.status.map(i64::from))
        .bind(&o.error)
        .bind(o.latency_ms)
        .bind(&now)
        .bind(&due.id)
        .execute(&mut *tx)
        .await?;
        crate::store::query(
            "UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, ?) WHERE id = ?",
        )
        .bind(&now)
        .bind(&due.endpoint_id)
        .execute(&mut *tx)
        .await?;
        let since: Option<String> =
            crate::store::query_scalar("SELECT failing_since FROM webhook_endpoints WHERE id = ?")
                .bind(&due.endpoint_id)
                .fetch_optional(&mut *tx)
                .await?
                .flatten();
        if let Some(since) = since
            && since.as_str() <= crate::timestamp::seconds_ago(DISABLE_AFTER_SECS).as_str()
        {
            let reason = format!(
                "Every delivery attempt since {since} failed (last: {}); re-enable with PATCH enabled=true once the endpoint works",
                o.error.as_deref().unwrap_or("unknown")
            );
            crate::store::query(
                "UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ?, updated_at = ? WHERE id = ? AND enabled = 1",
            )
            .bind(&reason)
            .bind(&now)
            .bind(&due.endpoint_id)
            .execute(&mut *tx)
            .await?;
            crate::store::query(
                "UPDATE webhook_deliveries SET state = 'failed', next_attempt_ms = NULL, lease_until_ms = NULL, \
                 last_error = coalesce(last_error, 'the endpoint was disabled') \
                 WHERE endpoint_id = ? AND state = 'pending' AND (lease_until_ms IS NULL OR id = ?)",
            )
            .bind(&due.endpoint_id)
            .bind(&due.id)
            .execute(&mut *tx)
            .await?;
            tracing::warn!(endpoint = %due.endpoint_id, org = %due.org_id, "webhook endpoint disabled after 3 days of failures");
        }
        tx.commit().await?;
        Ok(())
    }
}

/// An error with its sources, for `last_error`.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
