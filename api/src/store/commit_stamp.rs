//! Has anything been committed to the SQLite file since a given moment? (issue 26)
//!
//! In WAL mode every commit, by any connection of any process, rewrites the header of the
//! WAL index (the `-shm` file every connection maps): its change counter, the last valid
//! frame, the salts and a checksum over them. Readers of SQLite itself start each
//! transaction by reading that header without a lock: the two copies the writer stores one
//! after the other must agree and the checksum must match, or the read is retried. The
//! format is documented and has been stable since WAL appeared (3.7.0); see "WAL-Index
//! Format" in SQLite's file format description.
//!
//! [`CommitStamp::now`] reads those 96 bytes with one `pread` (no lock, no `unsafe`, no
//! mapping of our own) and returns the header when both copies agree, it is initialised and
//! its checksum holds; `None` otherwise (a commit in progress, a recovery), which callers
//! treat as "changed". Two equal stamps mean no commit happened between them, so a row read
//! between two equal stamps is still what the database holds while the stamp stays equal:
//! that is what lets [`super::inline`] answer a repeated point read from memory without
//! SQLite's per-transaction locks (two `fcntl` calls and a process-wide mutex that the
//! read-path profile found contended between the server's threads).
//!
//! The stamp stays meaningful only while the `-shm` file is the one SQLite uses: SQLite
//! deletes or truncates it only when the last connection of the last process closes, so
//! a [`CommitStamp`] keeps a connection of its own open for as long as it lives.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OpenFlags};

/// The WAL-index header (`WalIndexHdr`, 48 bytes) as native-endian words.
pub(super) type Stamp = [u32; 12];

/// Bytes of one header copy; the file starts with two.
const HEADER: usize = 48;

/// A lock-free view of the last commit of one SQLite database in WAL mode.
pub(super) struct CommitStamp {
    shm: File,
    /// Holds the WAL index open (see the module's last paragraph); never used otherwise.
    _keeper: Mutex<Connection>,
}

impl CommitStamp {
    /// Watches the database at `db_path`; `None` when it is not in WAL mode or its WAL
    /// index cannot be read (callers then read SQLite every time).
    pub(super) fn open(db_path: &Path) -> Option<Self> {
        let keeper = Connection::open_with_flags(
            db_path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .ok()?;
        let mode: String = keeper
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .ok()?;
        if !mode.eq_ignore_ascii_case("wal") {
            return None;
        }
        // A read transaction opens (and, for the process's first connection, maps) the WAL
        // index, which this connection then keeps open.
        keeper
            .query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
                r.get::<_, i64>(0)
            })
            .ok()?;
        let mut shm_path = db_path.as_os_str().to_owned();
        shm_path.push("-shm");
        let watch = Self {
            shm: File::open(shm_path).ok()?,
            _keeper: Mutex::new(keeper),
        };
        watch.now()?;
        Some(watch)
    }

    /// The header of the last commit, or `None` when it cannot be read consistently at
    /// this moment.
    pub(super) fn now(&self) -> Option<Stamp> {
        let mut bytes = [0u8; 2 * HEADER];
        self.shm.read_exact_at(&mut bytes, 0).ok()?;
        parse(&bytes)
    }
}

/// Checks the two header copies the way SQLite's readers do (`walIndexTryHdr`).
fn parse(bytes: &[u8; 2 * HEADER]) -> Option<Stamp> {
    let (first, second) = bytes.split_at(HEADER);
    // `isInit`, the byte after `iVersion`, the unused word and `iChange`.
    if first != second || first[12] == 0 {
        return None;
    }
    let mut words = [0u32; 12];
    for (word, chunk) in words.iter_mut().zip(first.chunks_exact(4)) {
        *word = u32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
    }
    // `aCksum`, the last two words, covers the ten before it in native byte order.
    (checksum(&words[..10]) == [words[10], words[11]]).then_some(words)
}

/// SQLite's WAL checksum (`walChecksumBytes`) of native-order words, from zero.
fn checksum(words: &[u32]) -> [u32; 2] {
    let (mut s1, mut s2) = (0u32, 0u32);
    for pair in words.chunks_exact(2) {
        s1 = s1.wrapping_add(pair[0]).wrapping_add(s2);
        s2 = s2.wrapping_add(pair[1]).wrapping_add(s1);
    }
    [s1, s2]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wal_db(dir: &Path) -> (std::path::PathBuf, Connection) {
        let path = dir.join("stamp.sqlite3");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);",
        )
        .unwrap();
        (path, conn)
    }

    #[test]
    fn every_commit_changes_the_stamp_and_nothing_else_does() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = wal_db(dir.path());
        let watch = CommitStamp::open(&path).expect("a WAL database is watched");
        let before = watch.now().unwrap();
        // Reads and a rolled-back write commit nothing.
        let _: i64 = writer
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        writer
            .execute_batch("BEGIN IMMEDIATE; INSERT INTO t (v) VALUES ('x'); ROLLBACK;")
            .unwrap();
        assert_eq!(watch.now().unwrap(), before);
        let mut seen = vec![before];
        for i in 0..5 {
            writer
                .execute("INSERT INTO t (v) VALUES (?1)", [i.to_string()])
                .unwrap();
            let now = watch.now().unwrap();
            assert!(!seen.contains(&now), "commit {i} left a stamp seen before");
            seen.push(now);
        }
        // A checkpoint that restarts the log changes the header too (a conservative miss).
        writer
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .unwrap();
        assert!(!seen.contains(&watch.now().unwrap()));
    }

    #[test]
    fn a_torn_or_uninitialised_header_is_no_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _writer) = wal_db(dir.path());
        let mut shm = path.as_os_str().to_owned();
        shm.push("-shm");
        let mut bytes = [0u8; 2 * HEADER];
        File::open(shm)
            .unwrap()
            .read_exact_at(&mut bytes, 0)
            .unwrap();
        assert!(parse(&bytes).is_some(), "the live header parses");
        let mut torn = bytes;
        torn[HEADER + 16] ^= 1; // the second copy's mxFrame differs
        assert_eq!(parse(&torn), None);
        let mut both = bytes;
        both[16] ^= 1;
        both[HEADER + 16] ^= 1; // copies agree but the checksum does not
        assert_eq!(parse(&both), None);
        let mut uninit = bytes;
        uninit[12] = 0;
        uninit[HEADER + 12] = 0;
        assert_eq!(parse(&uninit), None);
    }

    #[test]
    fn a_database_outside_wal_mode_is_not_watched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rollback.sqlite3");
        Connection::open(&path)
            .unwrap()
            .execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY);")
            .unwrap();
        assert!(CommitStamp::open(&path).is_none());
    }
}
