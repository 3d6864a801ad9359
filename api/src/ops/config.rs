//! What the operator's endpoints are configured with: the `serve` flags ([`OpsArgs`]) and
//! the process's [`Ops`] (held in the state; a leaf, so the state can name it without
//! importing the routes).

use std::net::SocketAddr;
use std::sync::Arc;

use clap::Args;

use crate::metrics::Metrics;

/// `serve` flags for metrics and shutdown.
#[derive(Args, Clone, Debug)]
pub struct OpsArgs {
    /// A second address serving only `/metrics`, `/healthz` and `/readyz`, with no token:
    /// bind it to an interface only the Prometheus server reaches (e.g. `10.0.0.5:9100`).
    #[arg(long, env = "ADFORGE_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,
    /// Opens `GET /metrics` on the public address to requests carrying
    /// `Authorization: Bearer <token>`. Without it the public `/metrics` answers 404.
    #[arg(long, env = "ADFORGE_METRICS_TOKEN")]
    pub metrics_token: Option<String>,
    /// On SIGTERM or Ctrl-C the server stops accepting and lets in-flight requests finish
    /// for at most this many seconds, then exits.
    #[arg(long, env = "ADFORGE_SHUTDOWN_TIMEOUT_SECS", default_value_t = 30)]
    pub shutdown_timeout_secs: u64,
}

impl Default for OpsArgs {
    fn default() -> Self {
        Self {
            metrics_listen: None,
            metrics_token: None,
            shutdown_timeout_secs: 30,
        }
    }
}

/// What the operator's endpoints need besides the database, queue and blob store.
pub struct Ops {
    pub metrics: Arc<Metrics>,
    /// SHA-256 of `--metrics-token`, compared in constant time.
    pub(super) metrics_token: Option<[u8; 32]>,
    /// Whether the queue is Redis (and so `/readyz` checks it).
    pub(super) redis: bool,
}

impl Ops {
    pub fn new(metrics: Arc<Metrics>, metrics_token: Option<&str>, redis: bool) -> Self {
        Self {
            metrics,
            metrics_token: metrics_token.map(digest),
            redis,
        }
    }
}

pub(super) fn digest(s: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(s.as_bytes()).into()
}
