//! Per-key rate limits: a rolling 60-second window (100 requests by default, overridable
//! per key), with `RateLimit-*` headers on every authenticated response and
//! `Retry-After` on 429.
//!
//! The window is kept as 60 one-second buckets per key: exact to the second, constant
//! memory per key whatever its limit (a log of timestamps was rejected because raised
//! limits would make it grow without bound). The limiter is a trait so that API nodes can
//! share one window through Redis.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;

use crate::auth::Caller;
use crate::error::{ApiError, ErrorCode};

pub const WINDOW_SECS: u64 = 60;

/// The outcome of counting one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateDecision {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Seconds until the oldest request in the window leaves it (and `remaining` grows).
    pub reset_secs: u64,
    /// When refused: seconds until a request would be allowed.
    pub retry_after_secs: u64,
}

/// Counts requests per key.
pub trait RateLimiter: Send + Sync {
    /// Counts one request of `key_id` against `limit` per rolling minute (a refused
    /// request is not counted).
    fn hit<'a>(&'a self, key_id: &'a str, limit: u32) -> BoxFuture<'a, RateDecision>;

    /// The same, for a limiter that decides without waiting (in memory): no future is
    /// boxed on the hot path. `None` means "ask [`RateLimiter::hit`]".
    fn hit_now(&self, _key_id: &str, _limit: u32) -> Option<RateDecision> {
        None
    }
}

#[derive(Clone, Copy)]
struct Window {
    counts: [u32; WINDOW_SECS as usize],
    stamps: [u64; WINDOW_SECS as usize],
}

impl Default for Window {
    fn default() -> Self {
        Self {
            counts: [0; WINDOW_SECS as usize],
            stamps: [0; WINDOW_SECS as usize],
        }
    }
}

impl Window {
    fn decide(&mut self, now: u64, limit: u32) -> RateDecision {
        let slot = (now % WINDOW_SECS) as usize;
        if self.stamps[slot] != now {
            self.stamps[slot] = now;
            self.counts[slot] = 0;
        }
        let live = |stamp: u64| stamp + WINDOW_SECS > now;
        // The allowed path needs only the total and the oldest live bucket: no allocation.
        let (mut used, mut oldest) = (0u64, now);
        for (stamp, count) in self.stamps.iter().zip(self.counts.iter()) {
            if live(*stamp) && *count > 0 {
                used += u64::from(*count);
                oldest = oldest.min(*stamp);
            }
        }
        let reset_secs = (oldest + WINDOW_SECS - now).max(1);
        if used >= u64::from(limit) {
            // Wait until enough old buckets leave for one request to fit.
            let mut buckets: Vec<(u64, u32)> = self
                .stamps
                .iter()
                .zip(self.counts.iter())
                .filter(|(s, c)| live(**s) && **c > 0)
                .map(|(s, c)| (*s, *c))
                .collect();
            buckets.sort_unstable();
            let mut left = used;
            let mut retry = WINDOW_SECS;
            for (stamp, count) in &buckets {
                left -= u64::from(*count);
                if left < u64::from(limit) {
                    retry = stamp + WINDOW_SECS - now;
                    break;
                }
            }
            return RateDecision {
                allowed: false,
                limit,
                remaining: 0,
                reset_secs,
                retry_after_secs: retry.max(1),
            };
        }
        self.counts[slot] += 1;
        RateDecision {
            allowed: true,
            limit,
            remaining: (u64::from(limit) - used - 1) as u32,
            reset_secs,
            retry_after_secs: 0,
        }
    }
}

/// Shards of the in-process limiter: keys spread over this many locks.
const SHARDS: usize = 16;
/// Windows per shard before the idle ones are swept.
const SHARD_SWEEP_AT: usize = 50_000 / SHARDS;

/// The in-process limiter (one API node). Its hot path (issue 26) is one uncontended
/// lock of one of [`SHARDS`] maps (chosen by a hash of the key id), a lookup by `&str`
/// with no allocation (a key's first request stores its id), and the window's 60-bucket
/// sum; a lock-free window was not needed: the lock is held for that sum only.
pub struct MemoryRateLimiter {
    shards: Box<[Mutex<HashMap<String, Window>>]>,
}

impl Default for MemoryRateLimiter {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl MemoryRateLimiter {
    fn decide_at(&self, key_id: &str, limit: u32, now: u64) -> RateDecision {
        // FNV-1a over the id: cheap, and ids are random, so shards fill evenly.
        let hash = key_id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        let shard = &self.shards[(hash % self.shards.len() as u64) as usize];
        let Ok(mut map) = shard.lock() else {
            // A poisoned lock means a panic elsewhere; failing open beats refusing all.
            return RateDecision {
                allowed: true,
                limit,
                remaining: limit,
                reset_secs: WINDOW_SECS,
                retry_after_secs: 0,
            };
        };
        if let Some(w) = map.get_mut(key_id) {
            return w.decide(now, limit);
        }
        if map.len() > SHARD_SWEEP_AT {
            map.retain(|_, w| w.stamps.iter().any(|s| s + WINDOW_SECS > now));
        }
        map.entry(key_id.to_string())
            .or_default()
            .decide(now, limit)
    }
}

impl RateLimiter for MemoryRateLimiter {
    fn hit<'a>(&'a self, key_id: &'a str, limit: u32) -> BoxFuture<'a, RateDecision> {
        let d = self.decide_at(key_id, limit, now_secs());
        Box::pin(async move { d })
    }

    fn hit_now(&self, key_id: &str, limit: u32) -> Option<RateDecision> {
        Some(self.decide_at(key_id, limit, now_secs()))
    }
}

/// The path whose requests count in a bucket of their own per key (see
/// [`crate::resources::previews`]) instead of the key's general budget.
pub const PREVIEWS_PATH: &str = "/v1/previews";

/// What [`enforce`] counts with: the limiter, and the size of each key's preview bucket
/// (previews per rolling minute, `adforge serve --preview-rate-limit`).
#[derive(Clone)]
pub struct RateState {
    pub limiter: SharedLimiter,
    pub previews_per_minute: u32,
}

fn refusal(d: &RateDecision, what: &str) -> ApiError {
    ApiError {
        retry_after: Some(d.retry_after_secs),
        ..ApiError::new(
            ErrorCode::RateLimitExceeded,
            format!(
                "Rate limit of {} {what} per {WINDOW_SECS} seconds exceeded for this API key; wait {} seconds before retrying",
                d.limit, d.retry_after_secs
            ),
        )
    }
}

fn set_headers(res: &mut Response, d: &RateDecision) {
    let h = res.headers_mut();
    for (name, value) in [
        ("ratelimit-limit", u64::from(d.limit)),
        ("ratelimit-remaining", u64::from(d.remaining)),
        ("ratelimit-reset", d.reset_secs),
    ] {
        h.insert(name, HeaderValue::from(value));
    }
}

/// Counts the request against its key; 429 with `Retry-After` when over the limit.
/// POST /v1/previews counts in the key's preview bucket (`previews:{key_id}`, of
/// [`RateState::previews_per_minute`]) instead, so an editor's previews leave the key's
/// general budget alone; its `RateLimit-*` headers describe that bucket.
pub async fn enforce<N, F>(rate: &RateState, req: Request, next: N) -> Response
where
    N: FnOnce(Request) -> F,
    F: Future<Output = Response>,
{
    let Some(caller) = req.extensions().get::<Arc<Caller>>().cloned() else {
        return next(req).await;
    };
    let (d, what) = if req.uri().path() == PREVIEWS_PATH {
        let bucket = format!("previews:{}", caller.key_id);
        (
            rate.limiter.hit(&bucket, rate.previews_per_minute).await,
            "previews",
        )
    } else {
        let d = match rate.limiter.hit_now(&caller.key_id, caller.rate_limit) {
            Some(d) => d,
            None => rate.limiter.hit(&caller.key_id, caller.rate_limit).await,
        };
        (d, "requests")
    };
    let mut res = if d.allowed {
        next(req).await
    } else {
        refusal(&d, what).into_response()
    };
    set_headers(&mut res, &d);
    res
}

/// Shared handle type.
pub type SharedLimiter = Arc<dyn RateLimiter>;

/// The same rolling window kept in Redis, so every API node counts against one budget per
/// key. One Lua script per request reads the key's buckets (a hash: second → count), drops
/// expired ones, and counts the request if it fits, using Redis's clock so that nodes with
/// skewed clocks agree. If Redis cannot be reached the request is allowed (and logged):
/// rate limiting must not take the API down with it.
pub struct RedisRateLimiter {
    conn: adforge_worker::redis::aio::ConnectionManager,
    script: adforge_worker::redis::Script,
}

const REDIS_WINDOW_SCRIPT: &str = r"
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = tonumber(redis.call('TIME')[1])
local all = redis.call('HGETALL', key)
local used, oldest = 0, now
local live = {}
for i = 1, #all, 2 do
  local s, c = tonumber(all[i]), tonumber(all[i + 1])
  if s + window > now then
    used = used + c
    if s < oldest then oldest = s end
    live[#live + 1] = {s, c}
  else
    redis.call('HDEL', key, all[i])
  end
end
if used >= limit then
  table.sort(live, function(a, b) return a[1] < b[1] end)
  local left, retry = used, window
  for _, b in ipairs(live) do
    left = left - b[2]
    if left < limit then retry = b[1] + window - now; break end
  end
  return {0, used, oldest + window - now, retry}
end
redis.call('HINCRBY', key, now, 1)
redis.call('EXPIRE', key, window + 1)
return {1, used, oldest + window - now, 0}
";

impl RedisRateLimiter {
    pub fn new(conn: adforge_worker::redis::aio::ConnectionManager) -> Self {
        Self {
            conn,
            script: adforge_worker::redis::Script::new(REDIS_WINDOW_SCRIPT),
        }
    }
}

impl RateLimiter for RedisRateLimiter {
    fn hit<'a>(&'a self, key_id: &'a str, limit: u32) -> BoxFuture<'a, RateDecision> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            let reply: Result<(i64, i64, i64, i64), _> = self
                .script
                .key(format!("adforge:ratelimit:{key_id}"))
                .arg(limit)
                .arg(WINDOW_SECS)
                .invoke_async(&mut conn)
                .await;
            match reply {
                Ok((allowed, used, reset, retry)) => {
                    let used = u64::try_from(used).unwrap_or(0);
                    RateDecision {
                        allowed: allowed == 1,
                        limit,
                        remaining: if allowed == 1 {
                            (u64::from(limit).saturating_sub(used + 1)) as u32
                        } else {
                            0
                        },
                        reset_secs: u64::try_from(reset).unwrap_or(WINDOW_SECS).max(1),
                        retry_after_secs: u64::try_from(retry)
                            .unwrap_or(0)
                            .max(u64::from(allowed != 1)),
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "rate limiter unreachable; allowing the request");
                    RateDecision {
                        allowed: true,
                        limit,
                        remaining: limit,
                        reset_secs: WINDOW_SECS,
                        retry_after_secs: 0,
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rolling_window_counts_and_recovers() {
        let l = MemoryRateLimiter::default();
        let t0 = 1_000_000;
        for i in 0..3 {
            let d = l.decide_at("k", 3, t0 + i * 10);
            assert!(d.allowed);
            assert_eq!(d.remaining, 2 - i as u32);
            assert_eq!(d.reset_secs, 60 - i * 10);
        }
        let d = l.decide_at("k", 3, t0 + 30);
        assert!(!d.allowed);
        assert_eq!(d.retry_after_secs, 30, "the request at t0 leaves at t0+60");
        assert!(l.decide_at("k", 3, t0 + 60).allowed, "one slot freed");
        assert!(!l.decide_at("k", 3, t0 + 61).allowed);
        assert!(
            l.decide_at("other", 3, t0 + 61).allowed,
            "keys are independent"
        );
        // Long after: the whole window is free again.
        assert_eq!(l.decide_at("k", 3, t0 + 500).remaining, 2);
    }
}
