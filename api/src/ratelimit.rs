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

use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
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

/// The in-process limiter (one API node).
#[derive(Default)]
pub struct MemoryRateLimiter {
    windows: Mutex<HashMap<String, Window>>,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl MemoryRateLimiter {
    fn decide_at(&self, key_id: &str, limit: u32, now: u64) -> RateDecision {
        let Ok(mut map) = self.windows.lock() else {
            // A poisoned lock means a panic elsewhere; failing open beats refusing all.
            return RateDecision {
                allowed: true,
                limit,
                remaining: limit,
                reset_secs: WINDOW_SECS,
                retry_after_secs: 0,
            };
        };
        if map.len() > 50_000 {
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
}

fn set_headers(res: &mut Response, d: &RateDecision) {
    let h = res.headers_mut();
    for (name, value) in [
        ("ratelimit-limit", u64::from(d.limit)),
        ("ratelimit-remaining", u64::from(d.remaining)),
        ("ratelimit-reset", d.reset_secs),
    ] {
        if let Ok(v) = HeaderValue::from_str(&value.to_string()) {
            h.insert(name, v);
        }
    }
}

/// Counts the request against its key; 429 with `Retry-After` when over the limit.
pub async fn enforce(
    State(state): State<crate::app::AppState>,
    req: Request,
    next: Next,
) -> Response {
    let Some(caller) = req.extensions().get::<Arc<Caller>>().cloned() else {
        return next.run(req).await;
    };
    let d = state.limiter.hit(&caller.key_id, caller.rate_limit).await;
    let mut res = if d.allowed {
        next.run(req).await
    } else {
        ApiError {
            retry_after: Some(d.retry_after_secs),
            ..ApiError::new(
                ErrorCode::RateLimitExceeded,
                format!(
                    "Rate limit of {} requests per {WINDOW_SECS} seconds exceeded for this API key; wait {} seconds before retrying",
                    d.limit, d.retry_after_secs
                ),
            )
        }
        .into_response()
    };
    set_headers(&mut res, &d);
    res
}

/// Shared handle type.
pub type SharedLimiter = Arc<dyn RateLimiter>;

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
