//! The SQL store, on one of two engines chosen at start-up:
//!
//! - **SQLite** (the embedded default): one file in WAL mode with `synchronous = NORMAL`.
//!   Reads go through a pool of connections; write transactions through a single
//!   connection held outside the pool ([`writer`]: no acquire or ping per write; under
//!   load the writers waiting at one moment commit as one group, each in a savepoint of
//!   one SQLite transaction, and each request still answers only after the `COMMIT` that
//!   holds its writes), the SQLite way to avoid `SQLITE_BUSY` between writers of one
//!   process (other processes, such as the admin CLI, wait on the busy timeout).
//!   **Durability**: in WAL mode with `synchronous = NORMAL` a commit appends to the WAL
//!   without waiting for the disk; the WAL is synced at each checkpoint. A committed write
//!   survives the process being killed (the WAL is in the OS's cache), but the last commits
//!   before a power cut or an OS crash may be lost; the database is never corrupted
//!   (SQLite's documented guarantee for this mode).
//! - **PostgreSQL** (`--database-url postgres://…`), for many API nodes. One pool serves
//!   reads and writes. A write transaction names what it writes ([`WriteLock`]): one
//!   organisation's rows ([`Db::begin_write_for`]: the cluster lock [`PG_WRITE_LOCK`]
//!   shared plus an exclusive lock per organisation) or anything ([`Db::begin_write`]: the
//!   cluster lock exclusively). All API nodes together so keep, per organisation, the
//!   single-writer guarantee SQLite gives one process — the wallet's check-then-hold
//!   (itself one conditional `UPDATE`, a row lock), idempotency claims, the caps (a design
//!   pack's 500) — while different organisations' writes commit in parallel and share WAL
//!   flushes. Writes that touch shared data (swipe files and their index revision, data
//!   sources, keys, members, the job applier, webhook deliveries, housekeeping) keep the
//!   exclusive lock. Tested across two nodes in `api/server/tests/api/write_locks.rs`. An
//!   organisation's writes go through a connection held for it ([`writer`], for up to eight
//!   organisations writing at once per process; others' through the pool), where, as on
//!   SQLite, the writers waiting at one moment share one transaction, each in a savepoint,
//!   and so share its locks' hold and one WAL flush. Read
//!   transactions are `REPEATABLE READ READ ONLY`, so a list's count, page and facets come
//!   from one snapshot, as on SQLite. Reads of one row by id that wait at the same moment
//!   go out as one statement ([`batch`]).
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

mod batch;
mod commit_stamp;
mod inline;
pub mod list;
mod readers;
mod sql;
mod tx;
mod writer;

pub use readers::{Reader, Readers};
pub use sql::{Flag, JsonText, marks, query, query_as, query_scalar};
pub use tx::{Deferred, DeferredCommit, TxConn, WriteLock, WriteTx};
use writer::Writer;
pub use writer::{HeldConn, HeldTx};

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection, AnyPool, Executor, Transaction};

static MIGRATOR_SQLITE: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");
static MIGRATOR_POSTGRES: sqlx::migrate::Migrator = sqlx::migrate!("./migrations-postgres");

/// The cluster's advisory lock: every PostgreSQL write transaction holds it until it ends,
/// shared ([`Db::begin_write_for`]) or exclusively ([`Db::begin_write`]).
pub const PG_WRITE_LOCK: i64 = 0x00ad_f049;

/// First key of the per-organisation advisory locks (PostgreSQL's two-key form, a space of
/// its own beside [`PG_WRITE_LOCK`]'s one-key form); the second is a hash of the org id.
pub const PG_ORG_LOCK_CLASS: i32 = 0x00ad_f04a;

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

/// Handle to the database: one `Arc`, so the clone every request makes of every state that
/// holds it (each `State` extractor, each layer) is one reference count, not five.
#[derive(Clone)]
pub struct Db(Arc<DbInner>);

impl std::ops::Deref for Db {
    type Target = DbInner;

    fn deref(&self) -> &DbInner {
        &self.0
    }
}

/// What a [`Db`] holds.
pub struct DbInner {
    /// Pool for reads (and for single-statement writes that need no ordering).
    pub read: AnyPool,
    /// The writer pool (one connection on SQLite, used by migrations and tests; the server
    /// writes through [`Db::begin_write`] and [`Db::write_conn`]).
    pub write: AnyPool,
    /// SQLite's writer connection, held outside the pool; `None` on PostgreSQL.
    writer: Option<Arc<Writer>>,
    /// PostgreSQL's writer connections of busy organisations; `None` on SQLite.
    org_writers: Option<writer::OrgWriters>,
    /// Connections held for point reads ([`Db::reader`]).
    readers: Arc<Readers>,
    /// On SQLite, point reads on the calling thread ([`Db::point_read`]).
    inline: Option<Arc<inline::InlineReads>>,
    /// On PostgreSQL, reads by id sent together ([`batch`]).
    batches: Option<batch::Batches>,
    engine: Engine,
}

/// Held point-read connections per process (see [`readers`]) on SQLite: enough to keep it
/// busy on a few cores (each connection is a thread of sqlx's; more only add threads).
const HELD_READERS_SQLITE: usize = 4;

/// On PostgreSQL a read waits on the network, so more held connections overlap more reads
/// (four serialised 64 concurrent reads: p99 19 -> 37 ms in `docs/performance.md`); half the
/// pool's 16, so with the writers of up to eight organisations ([`writer`]) a node holds at
/// most 32 server connections.
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
        let write = pool_options()
            .max_connections(1)
            .acquire_timeout(Duration::from_secs(30))
            .after_connect(|conn, _| Box::pin(sqlite_pragmas(conn)))
            .connect_with(url("rwc").parse::<AnyConnectOptions>()?)
            .await?;
        MIGRATOR_SQLITE.run(&write).await?;
        let ro = url("ro").parse::<AnyConnectOptions>()?;
        let read = pool_options()
            .max_connections(8)
            .min_connections(2)
            .after_connect(|conn, _| Box::pin(sqlite_pragmas(conn)))
            .connect_with(ro.clone())
            .await?;
        Ok(Self(Arc::new(DbInner {
            read,
            write,
            writer: Some(Arc::new(Writer::new(
                url("rw").parse::<AnyConnectOptions>()?,
                writer::Flavour::Sqlite,
            ))),
            org_writers: None,
            readers: Arc::new(Readers::new(ro, HELD_READERS_SQLITE, true)),
            inline: Some(Arc::new(inline::InlineReads::new(&path))),
            batches: None,
            engine: Engine::Sqlite,
        })))
    }

    async fn open_postgres(url: &str) -> Result<Self, sqlx::Error> {
        let options = url.parse::<AnyConnectOptions>()?;
        let pool = pool_options()
            .max_connections(16)
            .min_connections(1)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options.clone())
            .await?;
        // Migrations of several nodes starting at once are serialised by sqlx's own
        // advisory lock on PostgreSQL.
        MIGRATOR_POSTGRES.run(&pool).await?;
        let readers = Arc::new(Readers::new(options.clone(), HELD_READERS_POSTGRES, false));
        Ok(Self(Arc::new(DbInner {
            read: pool.clone(),
            write: pool,
            writer: None,
            org_writers: Some(writer::OrgWriters::new(options.clone())),
            batches: Some(batch::Batches::new(readers.clone())),
            readers,
            inline: None,
            engine: Engine::Postgres,
        })))
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
        // A held connection the server closed (a restart) fails its next statement and is
        // reopened: the read is tried again, at most once per held connection.
        let mut tries = self.readers.count() + 1;
        loop {
            let mut reader = self.reader().await?;
            let mut q = query_as::<T>(sql);
            for a in args {
                q = q.bind(*a);
            }
            let row = q.fetch_optional(reader.conn()?).await;
            match reader.check(row) {
                Err(e) if tries > 1 && readers::lost(&e) => tries -= 1,
                r => return r,
            }
        }
    }

    /// The row `id` of organisation `org_id` in `table` (aliased `t` in `columns`), only a
    /// live one (`deleted_at IS NULL`) when `live_only`, as a [`Db::point_read`]; a row of
    /// another organisation is `None`.
    ///
    /// The statement selects by id alone and the organisation is checked on the row, so the
    /// only index PostgreSQL can use is the one on `id`: with `t.org_id = ?` in the
    /// statement, the generic plan a held connection settles on while a table is near empty
    /// may walk the organisation's index instead, and keeps doing so after the table grows
    /// until the next `ANALYZE` (a read of 10,000 brands' organisation took 30× as long; see
    /// `engines::postgres_point_reads_use_the_primary_key_after_the_table_grows`).
    ///
    /// On PostgreSQL the reads waiting at one moment go out as one statement ([`batch`]).
    ///
    /// # Errors
    /// Database failures.
    pub async fn point_read_of<T>(
        &self,
        columns: &'static str,
        table: &'static str,
        live_only: bool,
        id: &str,
        org_id: &str,
    ) -> Result<Option<T>, sqlx::Error>
    where
        T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin + 'static,
    {
        let texts = PointTexts::of(columns, table, live_only);
        if let Some(answered) = self.batches.as_ref().and_then(|b| b.read(texts.batch, id)) {
            // A failed batch (or a driver gone with its runtime): read alone below.
            if let Ok(Ok(row)) = answered.await {
                let row = row
                    .as_ref()
                    .map(<OfOrg<T> as sqlx::FromRow<_>>::from_row)
                    .transpose()?;
                return Ok(row.filter(|r| r.org_id == org_id).map(|r| r.row));
            }
        }
        let row: Option<OfOrg<T>> = self.point_read(texts.single, &[id]).await?;
        Ok(row.filter(|r| r.org_id == org_id).map(|r| r.row))
    }

    /// The engine this handle runs on.
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// Starts a write transaction that may touch anything (shared data, several
    /// organisations): SQLite `BEGIN IMMEDIATE` on the writer; PostgreSQL [`PG_WRITE_LOCK`]
    /// exclusively, so it never interleaves with another writer of any node. It cannot
    /// fail half-way with a lock upgrade error. Inside an idempotent request its commit is
    /// deferred (see [`DeferredCommit`]). Writes of one organisation's rows use
    /// [`Db::begin_write_for`].
    ///
    /// On SQLite the writer is one connection held outside sqlx's pool: a pooled
    /// connection costs an acquire and, on every release, a spawned task that pings the
    /// connection (a round trip to its thread) while the next writer waits.
    ///
    /// # Errors
    /// When the lock cannot be had within the busy timeout.
    pub async fn begin_write(&self) -> Result<WriteTx, sqlx::Error> {
        self.begin_with(WriteLock::Cluster).await
    }

    /// Starts a write transaction that touches rows of organisation `org_id` only (its
    /// resources, its wallet, outbox rows of its jobs). On PostgreSQL it takes the cluster
    /// lock shared and the organisation's lock exclusively: writes of other organisations
    /// run beside it, writes of the same one wait. On SQLite it is [`Db::begin_write`].
    ///
    /// # Errors
    /// As [`Db::begin_write`].
    pub async fn begin_write_for(&self, org_id: &str) -> Result<WriteTx, sqlx::Error> {
        self.begin_with(WriteLock::Org(org_id.to_owned())).await
    }

    async fn begin_with(&self, lock: WriteLock) -> Result<WriteTx, sqlx::Error> {
        if let Some(w) = &self.writer {
            return WriteTx::begin(tx::Source::Held(w), lock).await;
        }
        if let (Some(writers), WriteLock::Org(org)) = (&self.org_writers, &lock)
            && let Some(w) = writers.get(org, || {
                format!("BEGIN; {}; SAVEPOINT w", lock.pg_statements())
            })
        {
            return WriteTx::begin(tx::Source::Held(&w), lock).await;
        }
        WriteTx::begin(tx::Source::Pool(&self.write), lock).await
    }

    /// A writing connection in autocommit, for single statements that need no lock of
    /// ours (one statement is atomic): SQLite's held writer, or a pooled connection.
    ///
    /// # Errors
    /// When no connection can be had.
    pub async fn write_conn(&self) -> Result<WriteConn, sqlx::Error> {
        match &self.writer {
            Some(w) => Ok(WriteConn::Held(w.autocommit().await?)),
            None => Ok(WriteConn::Pool(self.write.acquire().await?)),
        }
    }

    /// A read transaction: one consistent snapshot for a count and a page.
    ///
    /// # Errors
    /// When no connection can be had.
    pub async fn begin_read(&self) -> Result<Transaction<'static, Any>, sqlx::Error> {
        let statement = match self.engine {
            Engine::Sqlite => "BEGIN",
            Engine::Postgres => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
        };
        begin_whole(&self.read, statement.into()).await
    }
}

/// How long a pooled connection may have been idle before its acquire checks it.
const PING_IDLE_AFTER: Duration = Duration::from_secs(1);

/// A pool's options: sqlx pings every connection on release (a round trip that also flushes
/// a rollback a cancelled statement left) and, by default, again on every acquire. The
/// second ping is kept only for connections idle for [`PING_IDLE_AFTER`] or more (a
/// PostgreSQL restarted or a proxy timed them out meanwhile): under load a connection goes
/// from release to acquire in microseconds, and its ping cost PostgreSQL's writes one round
/// trip of four (docs/performance.md §2).
fn pool_options() -> AnyPoolOptions {
    AnyPoolOptions::new()
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= PING_IDLE_AFTER {
                    sqlx::Connection::ping(conn).await?;
                }
                Ok(true)
            })
        })
}

/// `pool.begin_with(statement)`, run to its end even when the caller stops waiting (its
/// client hung up): the statement is sent on a pooled connection, and a caller dropped
/// before sqlx has counted the transaction as open would hand that connection back to the
/// pool inside it, holding whatever it locked (PostgreSQL's advisory locks: every later
/// write of the organisation waited for it) and starting the next user's transaction
/// inside a stale one. Run in a task of its own, the `BEGIN` always completes as a sqlx
/// [`Transaction`], which, when nobody takes it, is dropped there and so rolled back before
/// its connection is reused.
pub(crate) async fn begin_whole(
    pool: &AnyPool,
    statement: String,
) -> Result<Transaction<'static, Any>, sqlx::Error> {
    let pool = pool.clone();
    let (send, begun) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        // A send to a caller that has gone hands the transaction back: dropped, it rolls back.
        drop(send.send(pool.begin_with(statement).await));
    });
    begun
        .await
        .map_err(|_| sqlx::Error::Protocol("the task beginning a transaction stopped".into()))?
}

/// The two statements of [`Db::point_read_of`] for one table and select list, made once.
struct PointTexts {
    /// One row by id.
    single: &'static str,
    /// The rows of several ids ([`batch`]), each with its id as `batch_key`.
    batch: &'static str,
}

type PointKey = (&'static str, &'static str, bool);

static POINT_TEXTS: std::sync::LazyLock<std::sync::RwLock<HashMap<PointKey, &'static PointTexts>>> =
    std::sync::LazyLock::new(Default::default);

impl PointTexts {
    /// The texts for `columns` of `table`, only live rows when `live_only` (a bounded set:
    /// the resources' constants).
    fn of(columns: &'static str, table: &'static str, live_only: bool) -> &'static Self {
        let key = (columns, table, live_only);
        if let Some(t) = POINT_TEXTS
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return t;
        }
        let live = if live_only {
            " AND t.deleted_at IS NULL"
        } else {
            ""
        };
        let select = format!("SELECT {columns}, t.org_id AS row_org_id");
        let texts = Box::leak(Box::new(Self {
            single: format!("{select} FROM {table} AS t WHERE t.id = ?{live}").leak(),
            // One index lookup per id, whatever the table's statistics say: a plain
            // `WHERE t.id = ANY(string_to_array(?, …))` gets a generic plan that scans the
            // whole table once its statistics show a few hundred rows, and evaluates
            // `string_to_array` again on every row (1.1 ms for 40 ids among 500 brands,
            // 41 ms once the table has grown to 20,000 before its next `ANALYZE`). Here the
            // `LIMIT 1` keeps the lookup a subquery run once per id, on the id's unique index.
            batch: format!(
                "{select}, t.id AS batch_key FROM unnest(string_to_array(?, chr(31))) AS k(id) \
                 CROSS JOIN LATERAL (SELECT * FROM {table} AS t WHERE t.id = k.id{live} LIMIT 1) AS t"
            )
            .leak(),
        }));
        POINT_TEXTS
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_insert(texts)
    }
}

/// A row and the organisation it belongs to ([`Db::point_read_of`]).
struct OfOrg<T> {
    org_id: String,
    row: T,
}

impl<'r, T: sqlx::FromRow<'r, sqlx::any::AnyRow>> sqlx::FromRow<'r, sqlx::any::AnyRow>
    for OfOrg<T>
{
    fn from_row(row: &'r sqlx::any::AnyRow) -> Result<Self, sqlx::Error> {
        use sqlx::Row as _;
        Ok(Self {
            org_id: row.try_get("row_org_id")?,
            row: T::from_row(row)?,
        })
    }
}

/// A writing connection in autocommit (see [`Db::write_conn`]).
pub enum WriteConn {
    Pool(PoolConnection<Any>),
    Held(writer::HeldConn),
}

impl std::ops::Deref for WriteConn {
    type Target = AnyConnection;
    fn deref(&self) -> &AnyConnection {
        match self {
            Self::Pool(c) => c,
            Self::Held(g) => g,
        }
    }
}

impl std::ops::DerefMut for WriteConn {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        match self {
            Self::Pool(c) => c,
            Self::Held(g) => g,
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
