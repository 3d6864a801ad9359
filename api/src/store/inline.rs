//! Point reads on SQLite run on the calling thread (issue 26).
//!
//! sqlx runs every SQLite connection on a thread of its own: a statement is a message to
//! that thread and its row a message back, two thread wake-ups per read. For the reads that
//! take one row by key (the API key behind a request on a cache miss, `GET
//! /v1/{resource}/{id}`) those wake-ups cost several times what SQLite spends reading the
//! row: the read-path profile in `docs/performance.md` found half of a read's time in the
//! kernel's scheduler. Here such reads run through rusqlite, on the same bundled SQLite
//! library sqlx links, on the thread that serves the request, with each connection's
//! statements prepared once (`prepare_cached`).
//!
//! The row comes back as sqlx's [`AnyRow`], built from the values the way sqlx's own SQLite
//! driver builds it (INTEGER → `BigInt`, REAL → `Double`, TEXT, BLOB, NULL), so every
//! resource keeps its one `FromRow` mapping for both engines and both paths. `AnyRow`'s
//! fields are public for drivers and exempt from semver; `Cargo.lock` pins the version, and
//! a change there fails to compile here rather than misbehaving.
//!
//! A row read this way is kept in memory with the [`CommitStamp`] of the database at the
//! time: while the stamp stays equal (no connection of any process has committed since), a
//! repeated read of the same statement with the same parameters is answered from memory,
//! without a SQLite transaction. Any commit anywhere changes the stamp and every kept row
//! is read again, so the answer is always what SQLite would return at that moment; a row
//! is kept only when the stamp was the same before and after it was read.
//!
//! Blocking the async thread is acceptable only because these statements are short: one
//! row by primary key or unique index, and a WAL reader never waits for the writer. The
//! connections have no busy timeout: in the rare moment SQLite reports `SQLITE_BUSY` to a
//! reader (a WAL reset in progress) the caller gets [`InlineError::Busy`] and retries on an
//! async held connection instead, which may wait ([`super::Db::point_read`]).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher, RandomState};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use sqlx::any::{AnyRow, AnyTypeInfo, AnyTypeInfoKind, AnyValue};
use sqlx_core::any::{AnyColumn, AnyValueKind};
use sqlx_core::ext::ustr::UStr;

use super::commit_stamp::{CommitStamp, Stamp};

/// Idle connections kept for reuse; more may be open at once under load (one per thread
/// reading at that moment), the rest are closed when returned.
const MAX_IDLE: usize = 8;

/// Why an inline read did not answer.
#[derive(Debug)]
pub enum InlineError {
    /// SQLite was busy for a moment; read on an async connection instead.
    Busy,
    /// Anything else, as sqlx reports database failures.
    Sqlx(sqlx::Error),
}

/// Read-only connections to the SQLite file, used on the caller's thread.
pub struct InlineReads {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    /// Each statement's column names, made once: the point reads are a few fixed texts,
    /// and a row would otherwise allocate every name anew.
    columns: RwLock<HashMap<Box<str>, Arc<Columns>>>,
    /// Rows read since the last commit; `None` when the database is not in WAL mode.
    rows: Option<RowCache>,
}

/// Shards of the row cache, so the server's threads seldom meet on one lock.
const ROW_SHARDS: usize = 16;
/// Rows kept per shard before the shard is emptied.
const ROW_SHARD_CAP: usize = 512;
/// Text and blob bytes kept per shard before the shard is emptied: with [`ROW_SHARD_CAP`], a
/// bound on memory whatever the mix of reads (16 × 1 MiB).
const ROW_SHARD_BYTES: usize = 1 << 20;
/// Rows with more text and blob bytes than this are never kept.
const MAX_KEPT_BYTES: usize = 16 * 1024;

/// Point reads by statement and parameters, each valid while the database's commit stamp
/// equals the one it was read under.
struct RowCache {
    stamp: CommitStamp,
    hasher: RandomState,
    shards: Box<[RwLock<Shard>]>,
    #[cfg(test)]
    hits: std::sync::atomic::AtomicU64,
}

/// Some kept answers, and their text and blob bytes.
#[derive(Default)]
struct Shard {
    kept: HashMap<u64, Kept>,
    bytes: usize,
}

/// One kept answer (`None`: no row).
struct Kept {
    bytes: usize,
    sql: Box<str>,
    args: Box<[Box<str>]>,
    stamp: Stamp,
    row: Option<Arc<AnyRow>>,
}

impl RowCache {
    fn key(&self, sql: &str, args: &[&str]) -> u64 {
        let mut h = self.hasher.build_hasher();
        sql.hash(&mut h);
        args.hash(&mut h);
        h.finish()
    }

    fn shard(&self, key: u64) -> &RwLock<Shard> {
        &self.shards[(key % self.shards.len() as u64) as usize]
    }

    /// The kept answer for this statement, if it was read under `stamp`.
    fn get(
        &self,
        key: u64,
        sql: &str,
        args: &[&str],
        stamp: &Stamp,
    ) -> Option<Option<Arc<AnyRow>>> {
        let shard = self
            .shard(key)
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let kept = shard.kept.get(&key)?;
        let same = kept.stamp == *stamp
            && *kept.sql == *sql
            && kept.args.len() == args.len()
            && kept.args.iter().zip(args).all(|(a, b)| **a == **b);
        if !same {
            return None;
        }
        #[cfg(test)]
        self.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(kept.row.clone())
    }

    fn put(&self, key: u64, sql: &str, args: &[&str], stamp: Stamp, row: Option<Arc<AnyRow>>) {
        let bytes: usize = row.as_ref().map_or(0, |r| {
            r.values
                .iter()
                .map(|v| match &v.kind {
                    AnyValueKind::Text(t) => t.len(),
                    AnyValueKind::Blob(b) => b.len(),
                    _ => 0,
                })
                .sum()
        });
        if bytes > MAX_KEPT_BYTES {
            return;
        }
        let mut shard = self
            .shard(key)
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(old) = shard.kept.remove(&key) {
            shard.bytes -= old.bytes;
        }
        if shard.kept.len() >= ROW_SHARD_CAP || shard.bytes + bytes > ROW_SHARD_BYTES {
            *shard = Shard::default();
        }
        shard.bytes += bytes;
        shard.kept.insert(
            key,
            Kept {
                bytes,
                sql: sql.into(),
                args: args.iter().map(|a| Box::from(*a)).collect(),
                stamp,
                row,
            },
        );
    }
}

/// A statement's column names, as `AnyRow` holds them.
struct Columns {
    names: Vec<UStr>,
    index: Arc<sqlx_core::HashMap<UStr, usize>>,
}

impl InlineReads {
    pub(super) fn new(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            idle: Mutex::new(Vec::new()),
            columns: RwLock::new(HashMap::new()),
            rows: CommitStamp::open(path).map(|stamp| RowCache {
                stamp,
                hasher: RandomState::new(),
                shards: (0..ROW_SHARDS).map(|_| RwLock::default()).collect(),
                #[cfg(test)]
                hits: std::sync::atomic::AtomicU64::new(0),
            }),
        }
    }

    fn columns(&self, sql: &str, stmt: &rusqlite::Statement<'_>) -> Arc<Columns> {
        if let Some(c) = self
            .columns
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(sql)
        {
            return c.clone();
        }
        let names: Vec<UStr> = stmt
            .column_names()
            .into_iter()
            .map(|n| UStr::Shared(Arc::from(n)))
            .collect();
        let index = Arc::new(
            names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), i))
                .collect(),
        );
        let made = Arc::new(Columns { names, index });
        self.columns
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(sql.into(), made.clone());
        made
    }

    fn open(&self) -> rusqlite::Result<Connection> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.execute_batch("PRAGMA cache_size = -16000; PRAGMA busy_timeout = 0;")?;
        Ok(conn)
    }

    /// Runs `sql` with text parameters `args` and returns its first row, if any: from
    /// memory when the same read was made since the last commit (see the module's text).
    ///
    /// # Errors
    /// [`InlineError::Busy`] when SQLite is busy; otherwise the statement's failure.
    pub fn fetch_optional<T>(&self, sql: &str, args: &[&str]) -> Result<Option<T>, InlineError>
    where
        T: for<'r> sqlx::FromRow<'r, AnyRow>,
    {
        let row = match &self.rows {
            None => self.read(sql, args)?.map(Arc::new),
            Some(rows) => {
                let key = rows.key(sql, args);
                let before = rows.stamp.now();
                match before.as_ref().and_then(|s| rows.get(key, sql, args, s)) {
                    Some(kept) => kept,
                    None => {
                        let row = self.read(sql, args)?.map(Arc::new);
                        if let Some(before) = before
                            && rows.stamp.now() == Some(before)
                        {
                            rows.put(key, sql, args, before, row.clone());
                        }
                        row
                    }
                }
            }
        };
        row.map(|row| T::from_row(&row))
            .transpose()
            .map_err(InlineError::Sqlx)
    }

    /// Reads the row from SQLite on an idle connection (or a new one).
    fn read(&self, sql: &str, args: &[&str]) -> Result<Option<AnyRow>, InlineError> {
        let taken = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let conn = match taken {
            Some(conn) => conn,
            None => self.open().map_err(from_rusqlite)?,
        };
        // A connection whose statement failed is closed rather than reused.
        let row = self.read_row(&conn, sql, args).map_err(from_rusqlite)?;
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
        Ok(row)
    }
}

impl InlineReads {
    fn read_row(
        &self,
        conn: &Connection,
        sql: &str,
        args: &[&str],
    ) -> rusqlite::Result<Option<AnyRow>> {
        let mut stmt = conn.prepare_cached(sql)?;
        let columns = self.columns(sql, &stmt);
        let mut rows = stmt.query(rusqlite::params_from_iter(args.iter()))?;
        let Some(row) = rows.next()? else {
            return Ok(None);
        };
        let n = columns.names.len();
        let mut out = AnyRow {
            column_names: columns.index.clone(),
            columns: Vec::with_capacity(n),
            values: Vec::with_capacity(n),
        };
        for (ordinal, name) in columns.names.iter().enumerate() {
            let kind = match row.get_ref(ordinal)? {
                ValueRef::Null => AnyValueKind::Null(AnyTypeInfoKind::Null),
                ValueRef::Integer(i) => AnyValueKind::BigInt(i),
                ValueRef::Real(f) => AnyValueKind::Double(f),
                ValueRef::Text(t) => AnyValueKind::Text(
                    std::str::from_utf8(t)
                        .map_err(rusqlite::Error::Utf8Error)?
                        .to_owned()
                        .into(),
                ),
                ValueRef::Blob(b) => AnyValueKind::Blob(b.to_vec().into()),
            };
            let type_info = AnyTypeInfo {
                kind: match &kind {
                    AnyValueKind::BigInt(_) => AnyTypeInfoKind::BigInt,
                    AnyValueKind::Double(_) => AnyTypeInfoKind::Double,
                    AnyValueKind::Text(_) => AnyTypeInfoKind::Text,
                    AnyValueKind::Blob(_) => AnyTypeInfoKind::Blob,
                    _ => AnyTypeInfoKind::Null,
                },
            };
            out.columns.push(AnyColumn {
                ordinal,
                name: name.clone(),
                type_info,
            });
            out.values.push(AnyValue { kind });
        }
        Ok(Some(out))
    }
}

fn from_rusqlite(e: rusqlite::Error) -> InlineError {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            InlineError::Busy
        }
        _ => InlineError::Sqlx(sqlx::Error::AnyDriverError(Box::new(e))),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

    use super::*;

    const READ: &str = "SELECT id, n FROM counter WHERE id = ?";

    fn counter_db(dir: &Path) -> (PathBuf, Connection) {
        let path = dir.join("reads.sqlite3");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
             CREATE TABLE counter (id TEXT PRIMARY KEY, n INTEGER NOT NULL);
             INSERT INTO counter VALUES ('c', 0);",
        )
        .unwrap();
        (path, conn)
    }

    fn n(reads: &InlineReads) -> i64 {
        let row: Option<(String, i64)> = reads.fetch_optional(READ, &["c"]).unwrap();
        row.unwrap().1
    }

    fn hits(reads: &InlineReads) -> u64 {
        reads.rows.as_ref().unwrap().hits.load(Ordering::Relaxed)
    }

    #[test]
    fn a_repeated_read_is_kept_until_any_commit() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = counter_db(dir.path());
        let reads = InlineReads::new(&path);
        assert_eq!(n(&reads), 0);
        assert_eq!(n(&reads), 0);
        assert_eq!(hits(&reads), 1, "the second read came from memory");
        let missing: Option<(String, i64)> = reads.fetch_optional(READ, &["nope"]).unwrap();
        let again: Option<(String, i64)> = reads.fetch_optional(READ, &["nope"]).unwrap();
        assert_eq!(
            (missing, again, hits(&reads)),
            (None, None, 2),
            "absence is kept too"
        );

        // A commit to another table still changes what may be read: every row is read anew.
        writer
            .execute_batch("CREATE TABLE other (x); INSERT INTO other VALUES (1);")
            .unwrap();
        assert_eq!(n(&reads), 0);
        assert_eq!(hits(&reads), 2);
        writer.execute("UPDATE counter SET n = 7", []).unwrap();
        assert_eq!(n(&reads), 7);
        writer
            .execute("INSERT INTO counter VALUES ('nope', 1)", [])
            .unwrap();
        let found: Option<(String, i64)> = reads.fetch_optional(READ, &["nope"]).unwrap();
        assert_eq!(found, Some(("nope".into(), 1)));
    }

    #[test]
    fn kept_rows_stay_within_their_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = counter_db(dir.path());
        writer
            .execute_batch("CREATE TABLE big (id TEXT PRIMARY KEY, body TEXT NOT NULL);")
            .unwrap();
        writer.execute_batch("BEGIN").unwrap();
        for i in 1..=600 {
            writer
                .execute(
                    "INSERT INTO big VALUES (?1, ?2)",
                    [format!("b{i}"), "x".repeat(12 * 1024)],
                )
                .unwrap();
        }
        writer.execute_batch("COMMIT").unwrap();
        let reads = InlineReads::new(&path);
        for i in 1..=600 {
            let row: Option<(String, String)> = reads
                .fetch_optional("SELECT id, body FROM big WHERE id = ?", &[&format!("b{i}")])
                .unwrap();
            assert_eq!(row.unwrap().1.len(), 12 * 1024);
        }
        let rows = reads.rows.as_ref().unwrap();
        let (mut kept, mut bytes) = (0, 0);
        for shard in &rows.shards {
            let shard = shard.read().unwrap();
            assert!(shard.bytes <= ROW_SHARD_BYTES && shard.kept.len() <= ROW_SHARD_CAP);
            assert_eq!(
                shard.bytes,
                shard.kept.values().map(|k| k.bytes).sum::<usize>()
            );
            kept += shard.kept.len();
            bytes += shard.bytes;
        }
        assert!(
            kept > 0 && bytes <= ROW_SHARDS * ROW_SHARD_BYTES,
            "{kept} rows, {bytes} bytes"
        );
    }

    #[test]
    fn a_commit_by_another_process_is_seen_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _writer) = counter_db(dir.path());
        let reads = InlineReads::new(&path);
        assert_eq!((n(&reads), n(&reads)), (0, 0));
        let status = std::process::Command::new("python3")
            .arg("-c")
            .arg(
                "import sqlite3, sys\n\
                 c = sqlite3.connect(sys.argv[1])\n\
                 c.execute('UPDATE counter SET n = 41')\n\
                 c.commit()\n",
            )
            .arg(&path)
            .status()
            .expect("python3 runs (a prerequisite of the project)");
        assert!(status.success());
        assert_eq!(n(&reads), 41);
    }

    /// Linearizable under load: a read that starts after a commit returned sees it, while
    /// some reads are still answered from memory.
    #[test]
    fn reads_never_miss_a_commit_that_returned_before_them() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = counter_db(dir.path());
        let reads = Arc::new(InlineReads::new(&path));
        let committed = Arc::new(AtomicI64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let (reads, committed, done) = (reads.clone(), committed.clone(), done.clone());
                std::thread::spawn(move || {
                    let mut count = 0u64;
                    while !done.load(Ordering::SeqCst) {
                        let floor = committed.load(Ordering::SeqCst);
                        let seen = n(&reads);
                        assert!(
                            seen >= floor,
                            "read {seen} after commit {floor} had returned"
                        );
                        count += 1;
                    }
                    count
                })
            })
            .collect();
        for i in 1..=300 {
            writer.execute("UPDATE counter SET n = ?1", [i]).unwrap();
            committed.store(i, Ordering::SeqCst);
            if i % 3 == 0 {
                std::thread::sleep(std::time::Duration::from_micros(300));
            }
        }
        done.store(true, Ordering::SeqCst);
        let total: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
        assert_eq!(n(&reads), 300);
        assert!(hits(&reads) > 0, "{total} reads, none from memory");
    }
}
