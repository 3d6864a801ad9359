//! The SQL store, on one of two engines chosen at start-up:
//!
//! - **SQLite** (the embedded default): one file in WAL mode. Reads go through a pool of
//!   connections; writes through a single connection, the SQLite way to avoid
//!   `SQLITE_BUSY` between writers of one process (other processes, such as the admin CLI,
//!   wait on the busy timeout).
//! - **PostgreSQL** (`--database-url postgres://…`), for many API nodes. One pool serves
//!   reads and writes; every write transaction first takes one advisory lock
//!   ([`PG_WRITE_LOCK`]), which gives all API nodes together the same single-writer
//!   guarantee SQLite gives one process: the wallet's check-then-hold, idempotency claims and
//!   the all-or-nothing duplicate keep the reasoning they were written with. Read
//!   transactions are `REPEATABLE READ READ ONLY`, so a list's count, page and facets come
//!   from one snapshot, as on SQLite.
//!
//! Both run through sqlx's `Any` driver, so the SQL is **one portable text** for both
//! engines, written in the subset they share: `?` placeholders (rewritten to `$N` by
//! [`query`], [`query_as`] and [`query_scalar`], which every query goes through), integers
//! for flags (PostgreSQL columns are `BIGINT`, never `BOOLEAN`), `instr(a, b)` (PostgreSQL
//! gets it as a SQL function in its first migration), no scalar `max(a, b)`, no bare
//! `WHERE 0`. Flag and JSON columns decode through [`Flag`] and [`JsonText`]. Each engine has
//! its own embedded migrations (`migrations/` and `migrations-postgres/`, same versions).
//!
//! Rejected: a second copy of every query per dialect (two texts drift apart and the
//! handlers would choose between them), and a query builder (a large dependency to express
//! what the shared subset already says).
//!
//! Create one [`Db`] per process; it is cheap to clone.

mod inline;
pub mod list;
mod readers;
mod sql;
mod tx;

pub use readers::{Reader, Readers};
pub use sql::{Flag, JsonText, marks, query, query_as, query_scalar};
pub use tx::{Deferred, DeferredCommit, WriteTx};

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{Any, AnyPool, Executor, Transaction};

static MIGRATOR_SQLITE: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");
static MIGRATOR_POSTGRES: sqlx::migrate::Migrator = sqlx::migrate!("./migrations-postgres");

/// The advisory lock every PostgreSQL write transaction holds until it ends.
pub const PG_WRITE_LOCK: i64 = 0x00ad_f049;

/// Which engine a [`Db`] runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

impl Engine {
    /// The name `/readyz` and logs use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }
}

/// Handle to the database.
#[derive(Clone)]
pub struct Db {
    /// Pool for reads (and for single-statement writes that need no ordering).
    pub read: AnyPool,
    /// The writer pool (one connection on SQLite); take it with [`Db::begin_write`].
    pub write: AnyPool,
    /// Connections held for point reads ([`Db::reader`]).
    readers: Arc<Readers>,
    /// On SQLite, point reads on the calling thread ([`Db::point_read`]).
    inline: Option<Arc<inline::InlineReads>>,
    engine: Engine,
}

/// Held point-read connections per process (see [`readers`]) on SQLite: enough to keep it
/// busy on a few cores (each connection is a thread of sqlx's; more only add threads).
const HELD_READERS_SQLITE: usize = 4;

/// On PostgreSQL a read waits on the network, so more held connections overlap more reads
/// (four serialised 64 concurrent reads: p99 19 -> 37 ms in `docs/performance.md`); half the
/// pool's 16, so a node holds at most 24 server connections.
const HELD_READERS_POSTGRES: usize = 8;

impl Db {
    /// Opens (creating if needed) `DIR/adforge.sqlite3` and runs pending migrations.
    ///
    /// # Errors
    /// When the file cannot be opened or a migration fails.
    pub async fn open(data_dir: &Path) -> Result<Self, sqlx::Error> {
        Self::connect(None, data_dir).await
    }

    /// Connects to `database_url` (`postgres://…`), or with none opens the SQLite file in
    /// `data_dir`; then runs pending migrations.
    ///
    /// # Errors
    /// When the database cannot be reached, the URL names another engine, or a migration
    /// fails.
    pub async fn connect(database_url: Option<&str>, data_dir: &Path) -> Result<Self, sqlx::Error> {
        sqlx::any::install_default_drivers();
        match database_url {
            None => Self::open_sqlite(data_dir).await,
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Self::open_postgres(url).await
            }
            Some(url) if url.starts_with("sqlite:") => {
                Err(sqlx::Error::Configuration(
                    format!("--database-url {url:?}: SQLite is chosen by leaving --database-url out (the file is DATA_DIR/adforge.sqlite3)").into(),
                ))
            }
            Some(url) => Err(sqlx::Error::Configuration(
                format!("--database-url {url:?}: only postgres:// URLs are supported").into(),
            )),
        }
    }

    async fn open_sqlite(data_dir: &Path) -> Result<Self, sqlx::Error> {
        std::fs::create_dir_all(data_dir).map_err(sqlx::Error::Io)?;
        let path = data_dir.join("adforge.sqlite3");
        let url = |mode: &str| format!("sqlite://{}?mode={mode}", path.display());
        // The Any driver takes SQLite's options from the URL only; the rest are pragmas run
        // on every new connection.
        let write = AnyPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(Duration::from_secs(30))
            .after_connect(|conn, _| Box::pin(sqlite_pragmas(conn)))
            .connect_with(url("rwc").parse::<AnyConnectOptions>()?)
            .await?;
        MIGRATOR_SQLITE.run(&write).await?;
        let ro = url("ro").parse::<AnyConnectOptions>()?;
        let read = AnyPoolOptions::new()
            .max_connections(8)
            .min_connections(2)
            .after_connect(|conn, _| Box::pin(sqlite_pragmas(conn)))
            .connect_with(ro.clone())
            .await?;
        Ok(Self {
            read,
            write,
            readers: Arc::new(Readers::new(ro, HELD_READERS_SQLITE, true)),
            inline: Some(Arc::new(inline::InlineReads::new(&path))),
            engine: Engine::Sqlite,
        })
    }

    async fn open_postgres(url: &str) -> Result<Self, sqlx::Error> {
        let options = url.parse::<AnyConnectOptions>()?;
        let pool = AnyPoolOptions::new()
            .max_connections(16)
            .min_connections(1)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options.clone())
            .await?;
        // Migrations of several nodes starting at once are serialised by sqlx's own
        // advisory lock on PostgreSQL.
        MIGRATOR_POSTGRES.run(&pool).await?;
        Ok(Self {
            read: pool.clone(),
            write: pool,
            readers: Arc::new(Readers::new(options, HELD_READERS_POSTGRES, false)),
            inline: None,
            engine: Engine::Postgres,
        })
    }

    /// A held connection for one point read (a key, a row by id) in autocommit: cheaper than
    /// a query on [`Db::read`] (see [`readers`]). Pass the statement's result through
    /// [`Reader::check`].
    ///
    /// # Errors
    /// When a connection has to be opened and cannot be.
    pub async fn reader(&self) -> Result<Reader<'_>, sqlx::Error> {
        self.readers.get().await
    }

    /// One row by key, with text parameters (`?` placeholders): the API key behind a
    /// request, `GET /v1/{resource}/{id}`. On SQLite it runs on the calling thread
    /// ([`inline`]), or on a held connection when SQLite is busy for a moment; on PostgreSQL
    /// on a held connection ([`Db::reader`]). Only for statements that read one row by
    /// primary key or unique index: the SQLite path blocks the calling thread while it runs.
    ///
    /// # Errors
    /// Database failures.
    pub async fn point_read<T>(&self, sql: &str, args: &[&str]) -> Result<Option<T>, sqlx::Error>
    where
        T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
    {
        if let Some(inline) = &self.inline {
            match inline.fetch_optional(sql, args) {
                Ok(row) => return Ok(row),
                Err(inline::InlineError::Sqlx(e)) => return Err(e),
                Err(inline::InlineError::Busy) => {}
            }
        }
        let mut reader = self.reader().await?;
        let mut q = query_as::<T>(sql);
        for a in args {
            q = q.bind(*a);
        }
        let row = q.fetch_optional(reader.conn()?).await;
        reader.check(row)
    }

    /// The engine this handle runs on.
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// Starts a write transaction that holds the engine's write lock from its first
    /// statement (SQLite `BEGIN IMMEDIATE`; PostgreSQL [`PG_WRITE_LOCK`]), so it cannot
    /// fail half-way with a lock upgrade error and never interleaves with another writer.
    /// Inside an idempotent request its commit is deferred (see [`DeferredCommit`]).
    ///
    /// # Errors
    /// When the lock cannot be had within the busy timeout.
    pub async fn begin_write(&self) -> Result<WriteTx, sqlx::Error> {
        WriteTx::begin(&self.write, self.engine).await
    }

    /// A read transaction: one consistent snapshot for a count and a page.
    ///
    /// # Errors
    /// When no connection can be had.
    pub async fn begin_read(&self) -> Result<Transaction<'static, Any>, sqlx::Error> {
        match self.engine {
            Engine::Sqlite => self.read.begin().await,
            Engine::Postgres => {
                self.read
                    .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    .await
            }
        }
    }
}

/// SQLite's settings for every new connection (the Any driver takes only the open mode
/// from the URL).
async fn sqlite_pragmas(conn: &mut sqlx::AnyConnection) -> Result<(), sqlx::Error> {
    conn.execute(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; \
         PRAGMA busy_timeout = 10000; PRAGMA cache_size = -16000;",
    )
    .await
    .map(|_| ())
}

/// Serialises a JSON-able value for a TEXT column.
pub fn to_json_text<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".to_string())
}
