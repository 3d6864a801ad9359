//! Connections held for the hot point reads (issue 26): the API key behind a request and
//! the one row a `GET /v1/{resource}/{id}` answers.
//!
//! A query on sqlx's pool costs more than the query: the pool's acquire, and on release a
//! spawned task that pings the connection (a round trip to SQLite's worker thread, or to
//! PostgreSQL) before the connection may serve again. A point read takes some 20 µs of
//! SQLite's time, so the ping and the task cost as much again. These few connections sit
//! outside the pool behind plain async locks: a reader takes a free one (or waits its turn
//! on one), runs its statement (sqlx keeps each connection's prepared statements, so a
//! text is prepared once per connection) and lets go. No ping: a connection whose
//! statement failed with a connection error ([`lost`]) is dropped and made anew on next
//! use, and [`super::Db::point_read`] reads again (so a PostgreSQL restart costs a retry,
//! not an error), which is what the ping guarded against; a statement cancelled half-way
//! leaves the connection usable (SQLite finishes or resets it on its worker thread before the next
//! command, PostgreSQL's connection drains to the next `ReadyForQuery` first).
//!
//! Reads that need a snapshot over several statements (lists) keep using the pool's read
//! transactions.

use std::sync::atomic::{AtomicUsize, Ordering};

use sqlx::any::AnyConnectOptions;
use sqlx::{AnyConnection, ConnectOptions};
use tokio::sync::{Mutex, MutexGuard};

/// The held connections of one [`super::Db`].
pub struct Readers {
    slots: Box<[Mutex<Option<AnyConnection>>]>,
    next: AtomicUsize,
    options: AnyConnectOptions,
    sqlite: bool,
}

/// One held connection, taken for a statement or a few.
pub struct Reader<'a> {
    slot: MutexGuard<'a, Option<AnyConnection>>,
}

impl Readers {
    /// `count` connections to `options`, opened on first use.
    pub(super) fn new(options: AnyConnectOptions, count: usize, sqlite: bool) -> Self {
        Self {
            slots: (0..count.max(1)).map(|_| Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
            options,
            sqlite,
        }
    }

    /// How many connections are held.
    pub fn count(&self) -> usize {
        self.slots.len()
    }

    /// A free connection, or the next one in turn when all are busy.
    ///
    /// # Errors
    /// When a connection has to be opened and cannot be.
    pub async fn get(&self) -> Result<Reader<'_>, sqlx::Error> {
        let n = self.slots.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let free = (0..n).find_map(|i| self.slots[(start + i) % n].try_lock().ok());
        let mut slot = match free {
            Some(slot) => slot,
            None => self.slots[start].lock().await,
        };
        if slot.is_none() {
            let mut conn = self.options.connect().await?;
            if self.sqlite {
                super::sqlite_pragmas(&mut conn).await?;
            }
            *slot = Some(conn);
        }
        Ok(Reader { slot })
    }
}

impl Reader<'_> {
    /// The connection, as an executor (`get` fills the slot before handing it out, and
    /// only [`Reader::check`] empties it, by value: the error cannot happen).
    ///
    /// # Errors
    /// `PoolClosed` for an empty slot.
    pub fn conn(&mut self) -> Result<&mut AnyConnection, sqlx::Error> {
        self.slot.as_mut().ok_or(sqlx::Error::PoolClosed)
    }

    /// Passes a statement's result through, dropping the connection when the error says
    /// it is broken (it is opened again on next use).
    pub fn check<T>(mut self, r: Result<T, sqlx::Error>) -> Result<T, sqlx::Error> {
        if let Err(e) = &r
            && lost(e)
        {
            tracing::warn!("dropping a held read connection after a connection error");
            *self.slot = None;
        }
        r
    }
}

/// Whether `e` says the connection is broken (it is dropped and opened again on next use):
/// an I/O or protocol failure, or PostgreSQL's word that it ended the session (SQLSTATE
/// class 08, connection exception, or 57P, operator intervention: a shutdown or
/// `pg_terminate_backend`, sent before it closes the socket).
pub fn lost(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::PoolClosed => true,
        sqlx::Error::Database(d) => d
            .code()
            .is_some_and(|c| c.starts_with("08") || c.starts_with("57P")),
        _ => false,
    }
}
