//! The SQL store: one SQLite file in WAL mode with embedded migrations. Reads go through a
//! pool of connections; writes through a single connection, the SQLite way to avoid
//! `SQLITE_BUSY` between writers of one process (other processes, such as the admin CLI,
//! wait on the busy timeout). SQL stays portable for the PostgreSQL backend to come.
//!
//! Create one [`Db`] per process; it is cheap to clone.

pub mod list;
mod tx;

pub use tx::{Deferred, DeferredCommit, WriteTx};

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, SqlitePool, Transaction};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Handle to the database.
#[derive(Clone)]
pub struct Db {
    /// Pool for reads (and for single-statement writes that need no ordering).
    pub read: SqlitePool,
    /// The single writer connection; take it with [`Db::begin_write`].
    pub write: SqlitePool,
}

impl Db {
    /// Opens (creating if needed) `DIR/adforge.sqlite3` and runs pending migrations.
    ///
    /// # Errors
    /// When the file cannot be opened or a migration fails.
    pub async fn open(data_dir: &Path) -> Result<Self, sqlx::Error> {
        std::fs::create_dir_all(data_dir).map_err(sqlx::Error::Io)?;
        let path = data_dir.join("adforge.sqlite3");
        let opts = SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10))
            .pragma("cache_size", "-16000");
        let write = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(opts.clone())
            .await?;
        MIGRATOR.run(&write).await?;
        let read = SqlitePoolOptions::new()
            .max_connections(8)
            .min_connections(2)
            .connect_with(opts.read_only(true))
            .await?;
        Ok(Self { read, write })
    }

    /// Starts a write transaction that takes SQLite's write lock at once (`BEGIN
    /// IMMEDIATE`), so it cannot fail half-way with a lock upgrade error. Inside an
    /// idempotent request its commit is deferred (see [`DeferredCommit`]).
    ///
    /// # Errors
    /// When the lock cannot be had within the busy timeout.
    pub async fn begin_write(&self) -> Result<WriteTx, sqlx::Error> {
        WriteTx::begin(&self.write).await
    }

    /// A read transaction: one consistent snapshot for a count and a page.
    ///
    /// # Errors
    /// When no connection can be had.
    pub async fn begin_read(&self) -> Result<Transaction<'static, Sqlite>, sqlx::Error> {
        self.read.begin().await
    }
}

/// Serialises a JSON-able value for a TEXT column.
pub fn to_json_text<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".to_string())
}
