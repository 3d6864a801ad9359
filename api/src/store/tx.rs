//! Write transactions, and commits deferred to the end of an idempotent request.
//!
//! A handler writes through [`WriteTx`] (from [`super::Db::begin_write`]) and calls
//! [`WriteTx::commit`]. Outside an idempotent request that commits at once. Inside one (the
//! `Idempotency-Key` middleware runs the handler under [`DeferredCommit::run`]) the commit
//! is *deferred*: the open transaction is handed to the middleware, which adds the stored
//! response to it and commits both together. So after any crash a retry finds either the
//! resource and its response, or neither: never a resource without a response to replay
//! (which would run the request twice) and never a response without its resource.
//!
//! A second `begin_write` in the same request joins the deferred transaction rather than
//! waiting for the single writer connection that it holds. Work that must follow the real
//! commit (waking the job dispatcher) is registered with [`WriteTx::after_commit`].
//!
//! Rejected alternative: storing the response in each handler's own transaction. Every
//! write handler would have to build its response before committing and know about
//! idempotency; the deferral keeps handlers as they are (parse → domain call → respond).
//!
//! # Locks (issue 26)
//! A transaction names what it may write ([`WriteLock`]):
//! - on **SQLite** both kinds are the same: `BEGIN IMMEDIATE` on the one writer connection,
//!   held outside sqlx's pool ([`super::Db::begin_write`] says why);
//! - on **PostgreSQL** [`WriteLock::Org`] takes the cluster lock [`PG_WRITE_LOCK`] *shared*
//!   and an exclusive advisory lock keyed by the organisation ([`PG_ORG_LOCK_CLASS`], a
//!   32-bit FNV-1a hash of its id), so writes of different organisations run and commit in
//!   parallel while one organisation's writes stay serialised; [`WriteLock::Cluster`] takes
//!   the cluster lock exclusively and so excludes every other writer, as the single lock
//!   did. `BEGIN` and the lock statements go in one round trip (a simple-query batch).
//!   An organisation's transactions run on a connection held for it ([`super::writer`]),
//!   where the writers waiting at one moment share one transaction and its locks, as
//!   SQLite's do; [`WriteLock::Cluster`] ones on pooled connections.
//!
//! A second `begin_write` joining a deferred transaction takes whatever lock it needs that
//! the transaction does not hold yet (another organisation's, or the cluster lock
//! exclusively, which PostgreSQL grants once other sessions' shared holds end; two such
//! upgrades at once are a deadlock PostgreSQL breaks by failing one, which the idempotency
//! middleware does not store, so its retry runs again).

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, PoisonError};

use sqlx::{Any, AnyConnection, Executor, Transaction};

use super::{PG_ORG_LOCK_CLASS, PG_WRITE_LOCK};

type Hook = Box<dyn FnOnce() + Send>;

tokio::task_local! {
    static DEFER: DeferredCommit;
}

/// What a write transaction may touch, and so which lock it takes on PostgreSQL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteLock {
    /// Rows of one organisation only (its resources, its wallet, its jobs' outbox rows).
    Org(String),
    /// Anything: shared data, several organisations, housekeeping.
    Cluster,
}

impl WriteLock {
    /// The organisation's advisory lock key (second half of PostgreSQL's two-key form).
    fn org_key(org_id: &str) -> i32 {
        let mut h: u32 = 0x811c_9dc5;
        for b in org_id.bytes() {
            h ^= u32::from(b);
            h = h.wrapping_mul(0x0100_0193);
        }
        i32::from_ne_bytes(h.to_ne_bytes())
    }

    /// The statements that take this lock (integers only: no text is ever spliced in).
    pub(super) fn pg_statements(&self) -> String {
        match self {
            Self::Cluster => format!("SELECT pg_advisory_xact_lock({PG_WRITE_LOCK})"),
            Self::Org(org) => format!(
                "SELECT pg_advisory_xact_lock_shared({PG_WRITE_LOCK}); \
                 SELECT pg_advisory_xact_lock({PG_ORG_LOCK_CLASS}, {})",
                Self::org_key(org)
            ),
        }
    }
}

/// The connection of an open write transaction.
pub enum TxConn {
    /// PostgreSQL: a pooled connection in a sqlx transaction.
    Pool(Transaction<'static, Any>),
    /// SQLite: the held writer connection inside `BEGIN IMMEDIATE`.
    Held(super::HeldTx),
}

impl TxConn {
    /// Commits.
    ///
    /// # Errors
    /// When the database refuses the commit (the transaction then rolls back).
    pub async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            Self::Pool(tx) => tx.commit().await,
            Self::Held(h) => h.commit().await,
        }
    }
}

impl Deref for TxConn {
    type Target = AnyConnection;
    fn deref(&self) -> &AnyConnection {
        match self {
            Self::Pool(tx) => tx,
            Self::Held(h) => h.conn(),
        }
    }
}

impl DerefMut for TxConn {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        match self {
            Self::Pool(tx) => tx,
            Self::Held(h) => h.conn_mut(),
        }
    }
}

/// An open write transaction. Dropped without [`commit`](Self::commit), it rolls back.
pub struct WriteTx {
    tx: TxConn,
    locks: Vec<WriteLock>,
    hooks: Vec<Hook>,
}

/// Where write transactions come from.
pub(super) enum Source<'a> {
    Pool(&'a sqlx::AnyPool),
    Held(&'a super::Writer),
}

impl WriteTx {
    pub(super) async fn begin(source: Source<'_>, lock: WriteLock) -> Result<Self, sqlx::Error> {
        if let Ok(Some((mut tx, mut locks))) = DEFER.try_with(DeferredCommit::take_tx) {
            if !locks.contains(&WriteLock::Cluster) && !locks.contains(&lock) {
                let sql = lock.pg_statements();
                let taken = match &mut tx {
                    TxConn::Pool(t) => (&mut **t).execute(sql.as_str()).await.map(drop),
                    TxConn::Held(h) => h.take_lock(&sql).await,
                };
                // Hand the transaction back first, so an error leaves it with its owner.
                if let Err(e) = taken {
                    let deferred = DEFER.try_with(Clone::clone).ok();
                    if let Some(d) = deferred {
                        d.stash(tx, locks, Vec::new());
                    }
                    return Err(e);
                }
                locks.push(lock);
            }
            return Ok(Self {
                tx,
                locks,
                hooks: Vec::new(),
            });
        }
        let tx = match source {
            Source::Held(w) => TxConn::Held(w.begin().await?),
            Source::Pool(pool) => {
                let begin = format!("BEGIN; {}", lock.pg_statements());
                TxConn::Pool(super::begin_whole(pool, begin).await?)
            }
        };
        Ok(Self {
            tx,
            locks: vec![lock],
            hooks: Vec::new(),
        })
    }

    /// Runs `hook` once the transaction is really committed (never if it rolls back).
    pub fn after_commit(&mut self, hook: impl FnOnce() + Send + 'static) {
        self.hooks.push(Box::new(hook));
    }

    /// Commits at once, also inside an idempotent request. For handlers whose response is
    /// read back through the read pool after the commit (a deferred commit would not be
    /// visible there yet). Such a request is no longer atomic with its stored response: a
    /// crash between the two makes a retry run again, so use it only where running twice
    /// yields the same state (renames, adds that report `already_present`, toggles) or say
    /// why at the call site.
    ///
    /// # Errors
    /// When the database refuses the commit.
    pub async fn commit_now(self) -> Result<(), sqlx::Error> {
        self.tx.commit().await?;
        self.hooks.into_iter().for_each(|h| h());
        Ok(())
    }

    /// Commits, or inside [`DeferredCommit::run`] hands the transaction to its owner,
    /// which commits it together with the request's stored response.
    ///
    /// # Errors
    /// When the database refuses the commit.
    pub async fn commit(self) -> Result<(), sqlx::Error> {
        let Self { tx, locks, hooks } = self;
        match DEFER.try_with(Clone::clone) {
            Ok(deferred) => {
                deferred.stash(tx, locks, hooks);
                Ok(())
            }
            Err(_) => {
                tx.commit().await?;
                hooks.into_iter().for_each(|h| h());
                Ok(())
            }
        }
    }
}

impl Deref for WriteTx {
    type Target = AnyConnection;
    fn deref(&self) -> &AnyConnection {
        &self.tx
    }
}

impl DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        &mut self.tx
    }
}

#[derive(Default)]
struct Pending {
    tx: Option<(TxConn, Vec<WriteLock>)>,
    hooks: Vec<Hook>,
}

/// The commits of one request, held back until its owner decides.
#[derive(Clone, Default)]
pub struct DeferredCommit(Arc<Mutex<Pending>>);

/// A transaction whose commit was deferred, with the work to run after it.
pub struct Deferred {
    pub tx: TxConn,
    hooks: Vec<Hook>,
}

impl Deferred {
    /// Commits, then runs the registered after-commit work.
    ///
    /// # Errors
    /// When the database refuses the commit (nothing of the request is then stored).
    pub async fn commit(self) -> Result<(), sqlx::Error> {
        self.tx.commit().await?;
        self.hooks.into_iter().for_each(|h| h());
        Ok(())
    }
}

impl DeferredCommit {
    /// Runs `fut` with every [`WriteTx::commit`] inside it deferred to this object.
    pub async fn run<F: Future>(&self, fut: F) -> F::Output {
        DEFER.scope(self.clone(), fut).await
    }

    /// The deferred transaction, if the request committed anything.
    pub fn take(&self) -> Option<Deferred> {
        let mut p = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let (tx, _) = p.tx.take()?;
        Some(Deferred {
            tx,
            hooks: std::mem::take(&mut p.hooks),
        })
    }

    fn take_tx(&self) -> Option<(TxConn, Vec<WriteLock>)> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .tx
            .take()
    }

    fn stash(&self, tx: TxConn, locks: Vec<WriteLock>, hooks: Vec<Hook>) {
        let mut p = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        p.tx = Some((tx, locks));
        p.hooks.extend(hooks);
    }
}

#[cfg(test)]
mod tests {
    use super::WriteLock;

    #[test]
    fn org_locks_are_integers_only() {
        let sql = WriteLock::Org("org_x'; DROP TABLE t".into()).pg_statements();
        assert!(!sql.contains('\''), "{sql}");
        assert_ne!(WriteLock::org_key("org_a"), WriteLock::org_key("org_b"));
    }
}
