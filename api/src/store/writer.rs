//! SQLite's one writer connection, held outside sqlx's pool (issue 26).
//!
//! A pooled connection costs, besides the statements, an acquire and, on every release, a
//! spawned task that pings the connection (a round trip to its thread) while the next
//! writer waits. Here a write transaction takes the connection behind an async lock, runs
//! `BEGIN IMMEDIATE`, its statements and `COMMIT`, and lets go.
//!
//! **Hand-over**: each statement is a round trip to sqlx's thread for the connection, and
//! the writer is held across all of them, so the round trips per write bound the writes
//! per second. When other write transactions are waiting at the commit, the commit runs
//! `COMMIT; BEGIN IMMEDIATE` as one command and the next writer starts inside that
//! transaction: one round trip fewer per write under load, with the same durability (every
//! transaction still commits on its own; responses follow their own commit). If no writer
//! takes the open transaction after all (its request was cancelled), a task ends it. If
//! `BEGIN IMMEDIATE` fails there (another process holds the lock past the busy timeout;
//! SQLite reports `SQLITE_BUSY`, which a WAL commit never does), the commit stands and the
//! next writer begins afresh.
//!
//! Dropped uncommitted, a transaction rolls back on a spawned task before the next writer
//! gets the connection; a connection whose statement failed with a connection error is
//! dropped and reopened on next use. A request dropped while its `BEGIN IMMEDIATE` or
//! `COMMIT` is on its way (its client hung up) leaves the connection in a state nobody
//! knows, since sqlx's connection thread still runs the statement: such a connection is
//! closed (which rolls back whatever it had open) and reopened for the next writer.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use sqlx::any::AnyConnectOptions;
use sqlx::{AnyConnection, ConnectOptions, Executor};
use tokio::sync::{Mutex, OwnedMutexGuard};

/// The connection, and whether a transaction handed over at the last commit is open on it.
#[derive(Default)]
pub(super) struct Slot {
    conn: Option<AnyConnection>,
    in_tx: bool,
    /// A `BEGIN IMMEDIATE` or `COMMIT` was sent and its caller dropped before it answered.
    unsure: bool,
}

/// The writer of one SQLite [`super::Db`].
pub(crate) struct Writer {
    slot: Arc<Mutex<Slot>>,
    options: AnyConnectOptions,
    /// Write transactions waiting for the connection.
    waiting: Arc<AtomicUsize>,
}

/// Counts a waiter until it has the connection (or gives up).
struct Waiting(Arc<AtomicUsize>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn broken(e: &sqlx::Error) -> bool {
    matches!(
        e,
        sqlx::Error::Io(_) | sqlx::Error::Protocol(_) | sqlx::Error::WorkerCrashed
    )
}

fn is_busy(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(d) => d
            .code()
            .and_then(|c| c.parse::<i64>().ok())
            .is_some_and(|c| c & 0xff == 5),
        _ => false,
    }
}

impl Writer {
    pub(super) fn new(options: AnyConnectOptions) -> Self {
        Self {
            slot: Arc::default(),
            options,
            waiting: Arc::default(),
        }
    }

    async fn lock(&self) -> Result<OwnedMutexGuard<Slot>, sqlx::Error> {
        let mut guard = self.slot.clone().lock_owned().await;
        if guard.unsure {
            tracing::warn!(
                "reopening the writer connection: a request was dropped inside its BEGIN or COMMIT"
            );
            guard.conn = None;
            guard.unsure = false;
        }
        if guard.conn.is_none() {
            let mut conn = self.options.connect().await?;
            super::sqlite_pragmas(&mut conn).await?;
            guard.conn = Some(conn);
            guard.in_tx = false;
        }
        Ok(guard)
    }

    /// The connection in autocommit (a transaction handed over to nobody is ended first).
    pub(super) async fn autocommit(&self) -> Result<HeldConn, sqlx::Error> {
        let mut guard = self.lock().await?;
        if guard.in_tx {
            end_handed_over(&mut guard).await?;
        }
        Ok(HeldConn(guard))
    }

    /// The connection inside `BEGIN IMMEDIATE` (or inside the transaction the last commit
    /// opened for it).
    pub(super) async fn begin(&self) -> Result<HeldTx, sqlx::Error> {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let waiting = Waiting(self.waiting.clone());
        let mut guard = self.lock().await?;
        drop(waiting);
        if guard.in_tx {
            guard.in_tx = false;
        } else {
            guard.unsure = true;
            let r = guard
                .conn
                .as_mut()
                .ok_or(sqlx::Error::PoolClosed)?
                .execute("BEGIN IMMEDIATE")
                .await;
            guard.unsure = false;
            if let Err(e) = r {
                if broken(&e) {
                    guard.conn = None;
                }
                return Err(e);
            }
        }
        Ok(HeldTx {
            guard: Some(guard),
            waiting: self.waiting.clone(),
        })
    }
}

/// Commits a transaction opened at a hand-over that no writer took.
async fn end_handed_over(slot: &mut Slot) -> Result<(), sqlx::Error> {
    slot.in_tx = false;
    let Some(conn) = slot.conn.as_mut() else {
        return Ok(());
    };
    if let Err(e) = conn.execute("COMMIT").await {
        tracing::warn!(error = %e, "dropping the writer connection: ending an unused transaction failed");
        slot.conn = None;
        return Err(e);
    }
    Ok(())
}

/// The writer inside a transaction.
pub struct HeldTx {
    guard: Option<OwnedMutexGuard<Slot>>,
    waiting: Arc<AtomicUsize>,
}

impl HeldTx {
    fn slot(&self) -> &Slot {
        self.guard
            .as_ref()
            .expect("a held transaction has its connection until it ends")
    }

    pub(super) fn conn(&self) -> &AnyConnection {
        self.slot()
            .conn
            .as_ref()
            .expect("`Writer::begin` fills the slot")
    }

    pub(super) fn conn_mut(&mut self) -> &mut AnyConnection {
        self.guard
            .as_mut()
            .and_then(|g| g.conn.as_mut())
            .expect("a held transaction has its connection until it ends")
    }

    fn set_unsure(&mut self, unsure: bool) {
        if let Some(g) = self.guard.as_mut() {
            g.unsure = unsure;
        }
    }

    /// Commits; opens the next writer's transaction in the same command when one waits.
    pub(super) async fn commit(mut self) -> Result<(), sqlx::Error> {
        let hand_over = self.waiting.load(Ordering::Relaxed) > 0;
        let sql = if hand_over {
            "COMMIT; BEGIN IMMEDIATE"
        } else {
            "COMMIT"
        };
        self.set_unsure(true);
        let r = self.conn_mut().execute(sql).await;
        self.set_unsure(false);
        match r {
            Ok(_) => {
                let mut guard = self.guard.take().expect("held until the commit");
                guard.in_tx = hand_over;
                if hand_over {
                    let slot = Arc::clone(OwnedMutexGuard::mutex(&guard));
                    drop(guard);
                    // A waiter is served before this task (the lock is fair); if none is
                    // left, the open transaction is ended here.
                    tokio::spawn(async move {
                        if let Ok(mut g) = slot.try_lock_owned()
                            && g.in_tx
                        {
                            let _ = end_handed_over(&mut g).await;
                        }
                    });
                }
                Ok(())
            }
            // The commit stood; only the next writer's BEGIN did not.
            Err(e) if hand_over && is_busy(&e) => {
                let mut guard = self.guard.take().expect("held until the commit");
                guard.in_tx = false;
                Ok(())
            }
            Err(e) => Err(e), // dropped: rolled back
        }
    }
}

impl Drop for HeldTx {
    fn drop(&mut self) {
        let Some(mut guard) = self.guard.take() else {
            return;
        };
        if guard.unsure {
            // Dropped inside `commit`: the next `Writer::lock` reopens the connection.
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move {
                    if let Some(conn) = guard.conn.as_mut()
                        && let Err(e) = conn.execute("ROLLBACK").await
                    {
                        tracing::warn!(error = %e, "dropping the writer connection after a failed rollback");
                        guard.conn = None;
                    }
                });
            }
            // No runtime to roll back on: closing the connection rolls back.
            Err(_) => guard.conn = None,
        }
    }
}

/// The writer in autocommit, for single statements ([`super::Db::write_conn`]).
pub struct HeldConn(OwnedMutexGuard<Slot>);

impl Deref for HeldConn {
    type Target = AnyConnection;
    fn deref(&self) -> &AnyConnection {
        self.0.conn.as_ref().expect("`Writer::lock` fills the slot")
    }
}

impl DerefMut for HeldConn {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        self.0.conn.as_mut().expect("`Writer::lock` fills the slot")
    }
}
