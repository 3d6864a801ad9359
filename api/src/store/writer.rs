//! SQLite's one writer connection, held outside sqlx's pool (issue 26).
//!
//! A pooled connection costs, besides the statements, an acquire and, on every release, a
//! spawned task that pings the connection (a round trip to its thread) while the next
//! writer waits. Here a write transaction takes the connection behind an async lock and
//! lets go when it ends.
//!
//! **Group commit.** Each commit of its own writes the pages it changed to the WAL (a brand
//! changes three: the table's and two indexes' last leaves, two `pwrite`s each) and takes
//! and drops SQLite's file locks: some 16 system calls and 20 KiB of WAL per request, and a
//! checkpoint (with `fsync`) every 200 or so. So when other writers wait, a commit does not
//! end the transaction: every writer works inside a savepoint of one SQLite transaction
//! (`BEGIN IMMEDIATE; SAVEPOINT w`), and its commit releases its savepoint and opens the
//! next writer's in the same command (`RELEASE w; SAVEPOINT w`), hands the connection over
//! and waits. The last writer of a group (none waiting, or [`GROUP_MOST`] in it) commits
//! for all (`RELEASE w; COMMIT`) and tells the others; each `commit` returns only after the
//! SQLite `COMMIT` that holds its writes, so a response still follows its own durable
//! commit. The pages the group's writers share are written once.
//!
//! A writer that fails or is dropped uncommitted rolls back to its savepoint (its writes
//! only) and the group commits without it. When the SQLite transaction itself fails (its
//! `COMMIT`, a lost connection), every writer of the group gets the error: none of them was
//! committed. If no writer takes an open transaction after all (its request was cancelled
//! while waiting), the waiting writers end the group themselves after [`GROUP_WAIT`].
//!
//! Durability is as before (WAL, `synchronous = NORMAL`: see [`super`]): a commit is a WAL
//! append without `fsync`.
//!
//! A connection whose statement failed with a connection error is dropped and reopened on
//! next use. A commit runs on a task of its own, so a request dropped meanwhile (its client
//! hung up) never cuts a hand-over or `COMMIT` off half-way, which would fail its whole
//! group. A request dropped while its `BEGIN` is on its way leaves the connection in a
//! state nobody knows, since sqlx's connection thread still runs the statement: such a
//! connection is closed (which rolls back whatever it had open; no group is open while a
//! `BEGIN` runs) and reopened for the next writer.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use sqlx::any::AnyConnectOptions;
use sqlx::{AnyConnection, ConnectOptions, Executor};
use tokio::sync::{Mutex, OwnedMutexGuard, oneshot};

/// The most writers one SQLite transaction holds: bounds how long the first of a group waits
/// for its commit.
const GROUP_MOST: usize = 64;

/// How long a writer of an open group waits before it checks whether anyone is left to
/// commit the group (a handed-over transaction whose taker was cancelled).
const GROUP_WAIT: Duration = Duration::from_millis(25);

/// How the writers of a group learn their commit's outcome (the error as text: one SQLite
/// error, told to each).
type Outcome = Result<(), String>;

/// The connection, and the group whose transaction is open on it.
#[derive(Default)]
pub(super) struct Slot {
    conn: Option<AnyConnection>,
    /// A SQLite transaction is open with a savepoint for the next writer (handed over at
    /// the last commit).
    in_tx: bool,
    /// A `BEGIN`, hand-over or `COMMIT` was sent and its caller dropped before it answered.
    unsure: bool,
    /// Writers whose work is in the open transaction, waiting for its `COMMIT`.
    group: Vec<oneshot::Sender<Outcome>>,
}

impl Slot {
    /// Tells the group how its transaction ended.
    fn end_group(&mut self, outcome: &Outcome) {
        for member in self.group.drain(..) {
            drop(member.send(outcome.clone()));
        }
    }

    /// Closes the connection (SQLite rolls back what it had open) and fails the group.
    fn drop_conn(&mut self, why: &str) {
        self.conn = None;
        self.in_tx = false;
        self.end_group(&Err(why.to_owned()));
    }

    /// Closes the connection when a request was dropped inside a statement on it (its
    /// state is unknown: see [`Slot::unsure`]); whether it did.
    fn close_if_unsure(&mut self) -> bool {
        if !self.unsure {
            return false;
        }
        tracing::warn!("reopening the writer connection: a request was dropped inside a statement");
        self.drop_conn("the writer connection was closed after a cancelled statement");
        self.unsure = false;
        true
    }
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
        guard.close_if_unsure();
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

    /// The connection inside a savepoint of `BEGIN IMMEDIATE` (or of the transaction the last
    /// commit handed over).
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
                .execute("BEGIN IMMEDIATE; SAVEPOINT w")
                .await;
            guard.unsure = false;
            if let Err(e) = r {
                // A BEGIN refused as busy opened nothing; after any other failure (a lost
                // connection, a failed SAVEPOINT) closing the connection ends what may be open.
                if !is_busy(&e) {
                    guard.drop_conn("the writer connection failed to begin");
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

/// Commits a transaction handed over to no writer, for its group.
async fn end_handed_over(slot: &mut Slot) -> Result<(), sqlx::Error> {
    slot.in_tx = false;
    let Some(conn) = slot.conn.as_mut() else {
        return Ok(());
    };
    if let Err(e) = conn.execute("RELEASE w; COMMIT").await {
        tracing::warn!(error = %e, "dropping the writer connection: ending an unused transaction failed");
        slot.drop_conn(&format!("the group's commit failed: {e}"));
        return Err(e);
    }
    slot.end_group(&Ok(()));
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

    /// Commits: joins the group and hands the transaction over when other writers wait,
    /// else commits for the whole group; returns once the SQLite `COMMIT` holding this
    /// writer's work has returned.
    ///
    /// Runs on a task of its own, to its end even when the caller stops waiting (its client
    /// hung up): a hand-over or `COMMIT` cut off half-way would leave the connection in a
    /// state nobody knows, to be closed, and with it the work of every writer in the group.
    pub(super) async fn commit(self) -> Result<(), sqlx::Error> {
        tokio::spawn(self.commit_here())
            .await
            .map_err(|e| sqlx::Error::Protocol(format!("the commit's task failed: {e}")))?
    }

    async fn commit_here(mut self) -> Result<(), sqlx::Error> {
        let waiting = self.waiting.load(Ordering::Relaxed) > 0;
        let join = waiting && self.slot().group.len() + 1 < GROUP_MOST;
        let sql = match (join, waiting) {
            (true, _) => "RELEASE w; SAVEPOINT w",
            (false, true) => "RELEASE w; COMMIT; BEGIN IMMEDIATE; SAVEPOINT w",
            (false, false) => "RELEASE w; COMMIT",
        };
        self.set_unsure(true);
        let r = self.conn_mut().execute(sql).await;
        self.set_unsure(false);
        let mut guard = self.guard.take().expect("held until the commit");
        match r {
            Ok(_) if join => {
                let (told, outcome) = oneshot::channel();
                guard.group.push(told);
                guard.in_tx = true;
                let slot = Arc::clone(OwnedMutexGuard::mutex(&guard));
                drop(guard);
                wait_for_group(slot, outcome).await
            }
            Ok(_) => {
                guard.end_group(&Ok(()));
                guard.in_tx = waiting;
                if waiting {
                    // If the waiter is cancelled before it takes the new transaction, end it
                    // here rather than hold SQLite's write lock until the next writer.
                    let slot = Arc::clone(OwnedMutexGuard::mutex(&guard));
                    // Without queueing for the lock: a holder ends it in time.
                    tokio::spawn(async move {
                        tokio::time::sleep(GROUP_WAIT).await;
                        if let Ok(mut g) = slot.try_lock()
                            && g.in_tx
                            && !g.unsure
                        {
                            let _ = end_handed_over(&mut g).await;
                        }
                    });
                }
                Ok(())
            }
            // The commit stood; only the next writer's BEGIN did not.
            Err(e) if waiting && is_busy(&e) => {
                guard.end_group(&Ok(()));
                guard.in_tx = false;
                Ok(())
            }
            Err(e) => {
                guard.drop_conn(&format!("the group's commit failed: {e}"));
                Err(e)
            }
        }
    }
}

/// Waits for the commit of the group this writer joined; ends the group itself when the
/// transaction sits handed over to nobody (a waiter cancelled before it took it).
async fn wait_for_group(
    slot: Arc<Mutex<Slot>>,
    mut outcome: oneshot::Receiver<Outcome>,
) -> Result<(), sqlx::Error> {
    loop {
        match tokio::time::timeout(GROUP_WAIT, &mut outcome).await {
            Ok(Ok(Ok(()))) => return Ok(()),
            Ok(Ok(Err(why))) => return Err(sqlx::Error::Protocol(why)),
            Ok(Err(_)) => {
                return Err(sqlx::Error::Protocol(
                    "the writer connection was dropped before the group committed".into(),
                ));
            }
            Err(_) => end_if_handed_over(&slot).await,
        }
    }
}

/// Commits the open transaction when it sits handed over with nobody inside; fails the
/// group when its last writer was dropped inside a statement (as [`Writer::lock`] would).
async fn end_if_handed_over(slot: &Mutex<Slot>) {
    let mut g = slot.lock().await;
    if !g.close_if_unsure() && g.in_tx {
        let _ = end_handed_over(&mut g).await;
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
                    // This writer's work goes; the group's commits.
                    let Some(conn) = guard.conn.as_mut() else {
                        return;
                    };
                    match conn.execute("ROLLBACK TO w; RELEASE w; COMMIT").await {
                        Ok(_) => guard.end_group(&Ok(())),
                        Err(e) => {
                            tracing::warn!(error = %e, "dropping the writer connection after a failed rollback");
                            guard.drop_conn(&format!("the group's commit failed: {e}"));
                        }
                    }
                });
            }
            // No runtime to roll back on: closing the connection rolls back.
            Err(_) => guard.drop_conn("the writer was dropped outside a runtime"),
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
