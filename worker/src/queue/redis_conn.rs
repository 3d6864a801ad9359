//! Key names and connections of [`super::RedisQueue`].
//!
//! Blocking reads get their own connections: Redis serves one client's commands in order,
//! so an `XREADGROUP ... BLOCK` on the shared multiplexed connection would stall every
//! command queued behind it. Rejected alternative: one fresh connection per blocking read,
//! which would add a TCP handshake to every claim and miss the dispatch-latency target.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use redis::Client;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::Error;

pub(crate) struct Keys {
    prefix: String,
    /// The prefix of this protocol's job keys ([`jobs_prefix`]).
    job_prefix: String,
    pub jobs: String,
    pub delayed: String,
    /// Background jobs waiting for the stream to drain (see [`super::is_background`]).
    pub low: String,
    pub events: String,
    /// The job stream of the previous protocol, which its workers read.
    pub previous_jobs: Option<String>,
}

/// The prefix of the job keys of protocol `version` under the deployment's `prefix`: the
/// prefix itself for protocol 1, `prefix:v{version}` after. A protocol bump moves the jobs to
/// new keys, so a worker of the previous version, which reads the old keys, never meets a
/// job it cannot read (a protocol-1 worker drops such a job: it would be lost); its jobs stay
/// queued for the workers that speak the new version.
fn jobs_prefix(prefix: &str, version: u32) -> String {
    if version <= 1 {
        prefix.to_owned()
    } else {
        format!("{prefix}:v{version}")
    }
}

/// The job stream of this build's protocol under the key prefix `prefix` (`P:v2:jobs`),
/// for operators' tools and tests that look at the stream itself.
pub fn jobs_stream(prefix: &str) -> String {
    format!(
        "{}:jobs",
        jobs_prefix(prefix, crate::protocol::PROTOCOL_VERSION)
    )
}

impl Keys {
    pub fn new(prefix: &str) -> Self {
        let version = crate::protocol::PROTOCOL_VERSION;
        let job_prefix = jobs_prefix(prefix, version);
        Keys {
            prefix: prefix.to_owned(),
            jobs: format!("{job_prefix}:jobs"),
            delayed: format!("{job_prefix}:jobs:delayed"),
            low: format!("{job_prefix}:jobs:low"),
            job_prefix,
            events: format!("{prefix}:events"),
            previous_jobs: (version > 1)
                .then(|| format!("{}:jobs", jobs_prefix(prefix, version - 1))),
        }
    }

    pub fn marker(&self, job_id: &str) -> String {
        format!("{}:job:{job_id}", self.job_prefix)
    }

    pub fn progress(&self, ad_id: &str) -> String {
        format!("{}:progress:{ad_id}", self.prefix)
    }
}

/// Connections for blocking reads, each used by one read at a time.
pub(crate) struct BlockingPool {
    pub client: Client,
    pub config: ConnectionManagerConfig,
    pub idle: Mutex<Vec<ConnectionManager>>,
}

impl BlockingPool {
    pub async fn take(&self) -> Result<ConnectionManager, Error> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        match idle {
            Some(conn) => Ok(conn),
            None => Ok(ConnectionManager::new_with_config(
                self.client.clone(),
                self.config.clone(),
            )
            .await?),
        }
    }

    pub fn give_back(&self, conn: ConnectionManager) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < 64 {
            idle.push(conn);
        }
    }
}

pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

pub(crate) fn is_nogroup(err: &Error) -> bool {
    matches!(err, Error::Redis(e) if e.code() == Some("NOGROUP"))
}
