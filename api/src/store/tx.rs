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

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, PoisonError};

use sqlx::{Any, AnyConnection, Transaction};

use super::{Engine, PG_WRITE_LOCK};

type Hook = Box<dyn FnOnce() + Send>;

tokio::task_local! {
    static DEFER: DeferredCommit;
}

/// An open write transaction. Dropped without [`commit`](Self::commit), it rolls back.
pub struct WriteTx {
    tx: Transaction<'static, Any>,
    hooks: Vec<Hook>,
}

impl WriteTx {
    pub(super) async fn begin(pool: &sqlx::AnyPool, engine: Engine) -> Result<Self, sqlx::Error> {
        if let Ok(Some(tx)) = DEFER.try_with(DeferredCommit::take_tx) {
            return Ok(Self {
                tx,
                hooks: Vec::new(),
            });
        }
        let tx = match engine {
            Engine::Sqlite => pool.begin_with("BEGIN IMMEDIATE").await?,
            Engine::Postgres => {
                let mut tx = pool.begin().await?;
                super::query("SELECT pg_advisory_xact_lock(?)")
                    .bind(PG_WRITE_LOCK)
                    .execute(&mut *tx)
                    .await?;
                tx
            }
        };
        Ok(Self {
            tx,
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
        let Self { tx, hooks } = self;
        match DEFER.try_with(Clone::clone) {
            Ok(deferred) => {
                deferred.stash(tx, hooks);
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
    tx: Option<Transaction<'static, Any>>,
    hooks: Vec<Hook>,
}

/// The commits of one request, held back until its owner decides.
#[derive(Clone, Default)]
pub struct DeferredCommit(Arc<Mutex<Pending>>);

/// A transaction whose commit was deferred, with the work to run after it.
pub struct Deferred {
    pub tx: Transaction<'static, Any>,
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
        let tx = p.tx.take()?;
        Some(Deferred {
            tx,
            hooks: std::mem::take(&mut p.hooks),
        })
    }

    fn take_tx(&self) -> Option<Transaction<'static, Any>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .tx
            .take()
    }

    fn stash(&self, tx: Transaction<'static, Any>, hooks: Vec<Hook>) {
        let mut p = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        p.tx = Some(tx);
        p.hooks.extend(hooks);
    }
}
