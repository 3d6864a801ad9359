//! Workers of the previous protocol version, seen from a [`super::RedisQueue`] of this one.
//!
//! A protocol bump moves the job keys (`redis_conn::Keys`): a worker of the previous
//! version keeps reading its own stream, where this build queues nothing, so it is refused
//! every job of the new version and none is lost (a protocol-1 worker drops a job whose
//! version it cannot read; here it never meets one). What the refused workers cannot be
//! told, because their code is older than this rule, this build says for them: which
//! consumers still read the previous stream, and how many of its jobs wait there.

use std::collections::HashMap;
use std::time::Duration;

use redis::Value;
use redis::aio::ConnectionManager;

use crate::Error;
use crate::protocol::PROTOCOL_VERSION;

/// A consumer that touched the previous stream within this long counts as running.
const RECENT: Duration = Duration::from_secs(600);

/// The job stream of the previous protocol version, still there: workers of that version
/// created it, and any that still run read it and are refused every job of this version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviousProtocol {
    /// Their protocol version.
    pub version: u32,
    /// The stream they read.
    pub stream: String,
    /// The consumer names (`worker-PID-…`) Redis lists as active there within the last ten
    /// minutes. Redis before 7.2 lists a consumer only once it was handed an entry, so a
    /// refused worker may run without being named.
    pub workers: Vec<String>,
    /// Jobs of their version still queued there (written by API nodes not yet upgraded).
    pub jobs: u64,
}

impl std::fmt::Display for PreviousProtocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "workers of protocol version {} read their jobs from {}, where this build \
             (protocol version {PROTOCOL_VERSION}) queues none: they are refused every job \
             until they are upgraded to a release that speaks version {PROTOCOL_VERSION}, and \
             the jobs wait for such workers",
            self.version, self.stream,
        )?;
        if !self.workers.is_empty() {
            write!(f, "; active there: {}", self.workers.join(", "))?;
        }
        if self.jobs > 0 {
            write!(
                f,
                "; {} job(s) of version {} wait there for a worker of that version",
                self.jobs, self.version
            )?;
        } else {
            write!(
                f,
                "; delete {} once no worker of version {} runs",
                self.stream, self.version
            )?;
        }
        Ok(())
    }
}

impl super::RedisQueue {
    /// The job stream of the previous protocol version, when its workers' group is there
    /// (logged as a warning when the queue connects); `None` when it is not.
    ///
    /// # Errors
    /// [`Error::Redis`] when Redis is unreachable.
    pub async fn previous_protocol(&self) -> Result<Option<PreviousProtocol>, Error> {
        match &self.keys.previous_jobs {
            Some(stream) => previous_protocol(&self.conn, stream, "workers").await,
            None => Ok(None),
        }
    }

    /// Logs [`Self::previous_protocol`] as a warning, when there are such workers.
    pub(super) async fn warn_of_previous_protocol(&self) {
        match self.previous_protocol().await {
            Ok(Some(previous)) => tracing::warn!("{previous}"),
            Ok(None) => {}
            Err(e) => {
                tracing::debug!(error = %e, "could not look for workers of the previous protocol")
            }
        }
    }
}

/// The previous version's `stream` when its workers' group `group` is on it; `None`
/// otherwise.
async fn previous_protocol(
    conn: &ConnectionManager,
    stream: &str,
    group: &str,
) -> Result<Option<PreviousProtocol>, Error> {
    let mut conn = conn.clone();
    let exists: i64 = redis::cmd("EXISTS")
        .arg(stream)
        .query_async(&mut conn)
        .await?;
    if exists == 0 {
        return Ok(None);
    }
    let consumers: Result<Vec<HashMap<String, Value>>, redis::RedisError> = redis::cmd("XINFO")
        .arg("CONSUMERS")
        .arg(stream)
        .arg(group)
        .query_async(&mut conn)
        .await;
    let consumers = match consumers {
        Ok(c) => c,
        Err(e) if e.code() == Some("NOGROUP") => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let recent = u64::try_from(RECENT.as_millis()).unwrap_or(u64::MAX);
    let workers: Vec<String> = consumers
        .iter()
        .filter(|c| match c.get("idle") {
            Some(Value::Int(idle)) => u64::try_from(*idle).is_ok_and(|i| i < recent),
            _ => false,
        })
        .filter_map(|c| match c.get("name") {
            Some(Value::BulkString(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            Some(Value::SimpleString(s)) => Some(s.clone()),
            _ => None,
        })
        .collect();
    let jobs: u64 = redis::cmd("XLEN")
        .arg(stream)
        .query_async(&mut conn)
        .await?;
    Ok(Some(PreviousProtocol {
        version: PROTOCOL_VERSION - 1,
        stream: stream.to_owned(),
        workers,
        jobs,
    }))
}
