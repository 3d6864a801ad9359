//! Writer connections held outside sqlx's pool (issue 26): SQLite's one writer, and on
//! PostgreSQL one per busy organisation ([`OrgWriters`]).
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
//! **PostgreSQL** does the same per organisation: a writer's `BEGIN` takes the cluster lock
//! shared and the organisation's lock ([`super::WriteLock::Org`]), so its group holds them
//! until the group's `COMMIT`, and that commit's one WAL flush serves every writer in it
//! (each used to wait for a flush of its own while the organisation's next writer waited
//! for its lock). A group that is full commits without opening the next (PostgreSQL's
//! `BEGIN` may wait for another node's writer: that wait belongs to the next writer).
//! A writer that took a further lock inside its transaction (an idempotent request's
//! second write for another organisation, or the cluster lock) ends its group at its
//! commit, so no lock outlives the writer that needed it by more than that commit.
//!
//! A connection whose statement failed with a connection error is dropped and reopened on
//! next use. A commit runs on a task of its own, so a request dropped meanwhile (its client
//! hung up) never cuts a hand-over or `COMMIT` off half-way, which would fail its whole
//! group. On SQLite a request dropped while its `BEGIN` is on its way leaves the connection
//! in a state nobody knows, since sqlx's connection thread still runs the statement: such a
//! connection is closed (which rolls back whatever it had open; no group is open while a
//! `BEGIN` runs) and reopened for the next writer. PostgreSQL's `BEGIN`, which may wait
//! long for another node's writer, runs on a task of its own instead (see
//! [`Writer::begin`]).

use std::borrow::Cow;
use std::collections::HashMap;
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

/// What a writer's connection is.
pub(super) enum Flavour {
    /// SQLite's one writer: `BEGIN IMMEDIATE`, pragmas on connect.
    Sqlite,
    /// A PostgreSQL writer for one organisation: its `BEGIN` takes the locks in `begin`.
    Postgres {
        /// `BEGIN; <lock statements>; SAVEPOINT w`.
        begin: String,
    },
}

impl Flavour {
    fn begin(&self) -> &str {
        match self {
            Self::Sqlite => "BEGIN IMMEDIATE; SAVEPOINT w",
            Self::Postgres { begin } => begin,
        }
    }

    /// Whether `e` is SQLite's "busy" (a `BEGIN` that opened nothing).
    fn busy(&self, e: &sqlx::Error) -> bool {
        matches!(self, Self::Sqlite) && is_busy(e)
    }
}

/// A writer connection: SQLite's one, or a PostgreSQL organisation's.
pub(crate) struct Writer {
    slot: Arc<Mutex<Slot>>,
    options: Arc<AnyConnectOptions>,
    flavour: Arc<Flavour>,
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
    pub(super) fn new(options: AnyConnectOptions, flavour: Flavour) -> Self {
        Self {
            slot: Arc::default(),
            options: Arc::new(options),
            flavour: Arc::new(flavour),
            waiting: Arc::default(),
        }
    }

    /// The slot with its connection open; whether it was opened just now.
    async fn lock(&self) -> Result<(OwnedMutexGuard<Slot>, bool), sqlx::Error> {
        let mut guard = self.slot.clone().lock_owned().await;
        guard.close_if_unsure();
        let fresh = guard.conn.is_none();
        if fresh {
            guard.conn = Some(connect(&self.options, &self.flavour).await?);
            guard.in_tx = false;
        }
        Ok((guard, fresh))
    }

    /// Whether nobody uses the writer now (so it may be closed).
    fn idle(&self) -> bool {
        self.waiting.load(Ordering::Relaxed) == 0
            && self
                .slot
                .try_lock()
                .is_ok_and(|g| !g.in_tx && !g.unsure && g.group.is_empty())
    }

    /// The connection in autocommit (a transaction handed over to nobody is ended first).
    pub(super) async fn autocommit(&self) -> Result<HeldConn, sqlx::Error> {
        let (mut guard, _) = self.lock().await?;
        if guard.in_tx {
            end_handed_over(&mut guard).await?;
        }
        Ok(HeldConn(guard))
    }

    /// The connection inside a savepoint of a new transaction (SQLite's `BEGIN IMMEDIATE`,
    /// PostgreSQL's `BEGIN` with the organisation's locks), or of the transaction the last
    /// commit handed over.
    pub(super) async fn begin(&self) -> Result<HeldTx, sqlx::Error> {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let counted = Waiting(self.waiting.clone());
        let (mut guard, fresh) = self.lock().await?;
        drop(counted);
        let (waiting, flavour) = (self.waiting.clone(), self.flavour.clone());
        let held = move |guard| HeldTx {
            guard: Some(guard),
            waiting,
            flavour,
            ends_group: false,
        };
        if guard.in_tx {
            guard.in_tx = false;
            return Ok(held(guard));
        }
        let begin = open_tx(guard, fresh, self.options.clone(), self.flavour.clone());
        match *self.flavour {
            Flavour::Sqlite => begin.await.map(held),
            // PostgreSQL's `BEGIN` waits for the organisation's lock, which another node's
            // writer may hold: a request dropped meanwhile must not leave the lock taken with
            // nobody in the transaction (every write of the organisation, on every node,
            // would wait for this node's next one). So it runs to its end on a task of its
            // own, and a transaction nobody takes is dropped there, which rolls it back.
            Flavour::Postgres { .. } => {
                let (send, begun) = oneshot::channel();
                tokio::spawn(async move { drop(send.send(begin.await.map(held))) });
                begun.await.map_err(|_| {
                    sqlx::Error::Protocol("the task beginning a transaction stopped".into())
                })?
            }
        }
    }
}

/// Opens a connection for a writer of `flavour`.
async fn connect(
    options: &AnyConnectOptions,
    flavour: &Flavour,
) -> Result<AnyConnection, sqlx::Error> {
    let mut conn = options.connect().await?;
    if matches!(flavour, Flavour::Sqlite) {
        super::sqlite_pragmas(&mut conn).await?;
    }
    Ok(conn)
}

/// Begins a transaction with a savepoint for its first writer on the slot's connection
/// (`fresh`: opened just now).
async fn open_tx(
    mut guard: OwnedMutexGuard<Slot>,
    mut fresh: bool,
    options: Arc<AnyConnectOptions>,
    flavour: Arc<Flavour>,
) -> Result<OwnedMutexGuard<Slot>, sqlx::Error> {
    loop {
        guard.unsure = true;
        let r = guard
            .conn
            .as_mut()
            .ok_or(sqlx::Error::PoolClosed)?
            .execute(flavour.begin())
            .await;
        guard.unsure = false;
        let Err(e) = r else { return Ok(guard) };
        // A BEGIN refused as busy opened nothing; after any other failure (a lost
        // connection, a failed SAVEPOINT) closing the connection ends what may be open.
        if flavour.busy(&e) {
            return Err(e);
        }
        guard.drop_conn("the writer connection failed to begin");
        // A held connection is never pinged: one the server closed while it sat idle (a
        // restart) is found here, and opened again once.
        if fresh || !super::readers::lost(&e) {
            return Err(e);
        }
        guard.conn = Some(connect(&options, &flavour).await?);
        fresh = true;
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
    flavour: Arc<Flavour>,
    /// Its commit ends the group (it took a lock the group should not keep).
    ends_group: bool,
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

    /// Runs `sql`, the statements of a further lock (PostgreSQL's; SQLite's writer holds
    /// every lock already), and has this writer's commit end its group.
    pub(super) async fn take_lock(&mut self, sql: &str) -> Result<(), sqlx::Error> {
        if matches!(*self.flavour, Flavour::Sqlite) {
            return Ok(());
        }
        self.ends_group = true;
        self.conn_mut().execute(sql).await.map(drop)
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
        let join = waiting && !self.ends_group && self.slot().group.len() + 1 < GROUP_MOST;
        // SQLite opens the next writer's transaction in the same command; PostgreSQL's
        // `BEGIN` may wait for another node's writer, so the next writer sends it.
        let renew = waiting && !join && matches!(*self.flavour, Flavour::Sqlite);
        let sql: Cow<'static, str> = if join {
            "RELEASE w; SAVEPOINT w".into()
        } else if renew {
            format!("RELEASE w; COMMIT; {}", self.flavour.begin()).into()
        } else {
            "RELEASE w; COMMIT".into()
        };
        self.set_unsure(true);
        let r = self.conn_mut().execute(&*sql).await;
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
                guard.in_tx = renew;
                if renew {
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
            Err(e) if renew && self.flavour.busy(&e) => {
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

/// The most organisations with a PostgreSQL writer of their own per process; others' writes
/// go through the pool, a transaction each (as they did before group commit).
const ORG_WRITERS_MOST: usize = 8;

/// PostgreSQL's writers per organisation: a held connection each, made at an organisation's
/// first write, kept while it writes; one whose organisation stopped writing is closed when
/// another organisation needs its place.
pub(super) struct OrgWriters {
    options: AnyConnectOptions,
    writers: std::sync::Mutex<HashMap<String, Arc<Writer>>>,
}

impl OrgWriters {
    pub(super) fn new(options: AnyConnectOptions) -> Self {
        Self {
            options,
            writers: std::sync::Mutex::default(),
        }
    }

    /// The writer of `org_id`, whose `BEGIN` runs `begin` (its locks); `None` when every
    /// place is taken by an organisation that writes now.
    pub(super) fn get(&self, org_id: &str, begin: impl FnOnce() -> String) -> Option<Arc<Writer>> {
        let mut writers = self
            .writers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(w) = writers.get(org_id) {
            return Some(w.clone());
        }
        if writers.len() >= ORG_WRITERS_MOST {
            let idle = writers
                .iter()
                .find(|(_, w)| Arc::strong_count(w) == 1 && w.idle())
                .map(|(org, _)| org.clone())?;
            writers.remove(&idle);
        }
        let w = Arc::new(Writer::new(
            self.options.clone(),
            Flavour::Postgres { begin: begin() },
        ));
        writers.insert(org_id.to_owned(), w.clone());
        Some(w)
    }
}
