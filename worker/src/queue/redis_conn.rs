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
    pub jobs: String,
    pub delayed: String,
    /// Background jobs waiting for the stream to drain (see [`super::is_background`]).
    pub low: String,
    pub events: String,
}

impl Keys {
    pub fn new(prefix: &str) -> Self {
        Keys {
            prefix: prefix.to_owned(),
            jobs: format!("{prefix}:jobs"),
            delayed: format!("{prefix}:jobs:delayed"),
            low: format!("{prefix}:jobs:low"),
            events: format!("{prefix}:events"),
        }
    }

    pub fn marker(&self, job_id: &str) -> String {
        format!("{}:job:{job_id}", self.prefix)
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
