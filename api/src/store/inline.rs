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
//! Blocking the async thread is acceptable only because these statements are short: one
//! row by primary key or unique index, and a WAL reader never waits for the writer. The
//! connections have no busy timeout: in the rare moment SQLite reports `SQLITE_BUSY` to a
//! reader (a WAL reset in progress) the caller gets [`InlineError::Busy`] and retries on an
//! async held connection instead, which may wait ([`super::Db::point_read`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use sqlx::any::{AnyRow, AnyTypeInfo, AnyTypeInfoKind, AnyValue};
use sqlx_core::any::{AnyColumn, AnyValueKind};
use sqlx_core::ext::ustr::UStr;

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

    /// Runs `sql` with text parameters `args` and returns its first row, if any.
    ///
    /// # Errors
    /// [`InlineError::Busy`] when SQLite is busy; otherwise the statement's failure.
    pub fn fetch_optional<T>(&self, sql: &str, args: &[&str]) -> Result<Option<T>, InlineError>
    where
        T: for<'r> sqlx::FromRow<'r, AnyRow>,
    {
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
        drop(idle);
        row.map(|row| T::from_row(&row))
            .transpose()
            .map_err(InlineError::Sqlx)
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
