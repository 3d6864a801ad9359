//! SQLite point reads on the calling thread (issue 26), for the hottest read:
//! `GET /v1/brands/{id}`.
//!
//! sqlx runs every SQLite connection on a thread of its own: a statement is a message to
//! that thread and its rows are messages back, so each point read costs two thread
//! wake-ups, which on a loaded 2-core machine took half of the read path's time (see
//! `docs/performance.md`). A point read by primary key over SQLite's page cache takes a
//! few microseconds, less than one wake-up, so these reads run on the request's own thread
//! through rusqlite (the same SQLite library, linked once), on a few read-only connections
//! with their prepared statements kept. They see what sqlx's readers see: the last
//! committed state of the WAL file.
//!
//! A read that finds the database busy (a checkpoint or recovery holding a lock, rare in
//! WAL mode) does not wait on the request's thread: its busy timeout is short, and the
//! caller falls back to the sqlx path, which waits on its own thread. PostgreSQL has no
//! such path (its reads are network round trips either way).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use rusqlite::{Connection, OpenFlags};

/// How long an inline read waits for a lock before giving up (and the caller falls back).
const INLINE_BUSY_MS: u32 = 5;

/// Read-only SQLite connections used inline.
pub struct InlineReaders {
    slots: Box<[Mutex<Option<Connection>>]>,
    next: AtomicUsize,
    path: PathBuf,
}

impl InlineReaders {
    pub(super) fn new(path: PathBuf, count: usize) -> Self {
        Self {
            slots: (0..count.max(1)).map(|_| Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
            path,
        }
    }

    /// Runs `f` on a free connection (held for `f` only: it never waits on anything but
    /// SQLite). `None` when the read could not be made here (the database busy, a
    /// connection that cannot be opened): the caller then reads through sqlx.
    pub fn read<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Option<T> {
        let n = self.slots.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let mut slot = (0..n)
            .find_map(|i| self.slots[(start + i) % n].try_lock().ok())
            .unwrap_or_else(|| {
                self.slots[start]
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
            });
        if slot.is_none() {
            match open(&self.path) {
                Ok(conn) => *slot = Some(conn),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot open an inline SQLite reader");
                    return None;
                }
            }
        }
        let conn = slot.as_ref()?;
        match f(conn) {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::debug!(error = %e, "inline read failed; reading through sqlx");
                if !matches!(
                    e.sqlite_error_code(),
                    Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
                ) {
                    // Anything but a busy database: start afresh with a new connection.
                    *slot = None;
                }
                None
            }
        }
    }
}

fn open(path: &PathBuf) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.execute_batch(&format!(
        "PRAGMA busy_timeout = {INLINE_BUSY_MS}; PRAGMA cache_size = -16000;"
    ))?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// A JSON document of a `TEXT` column, read into `T` as [`super::JsonText`] does for sqlx
/// (NULL reads as JSON `null`).
///
/// # Errors
/// A conversion failure naming the column.
pub fn json_column<T: serde::de::DeserializeOwned>(
    row: &rusqlite::Row<'_>,
    i: usize,
) -> rusqlite::Result<T> {
    let text: Option<String> = row.get(i)?;
    let parsed = match text {
        Some(t) => serde_json::from_str(&t),
        None => serde_json::from_value(serde_json::Value::Null),
    };
    parsed.map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))
    })
}
