//! A real, throwaway PostgreSQL for tests: `initdb` in a temporary folder and a `postgres`
//! server on a free loopback port (Debian's `postgresql`, installed by scripts/test), trust
//! authentication for the `postgres` user on 127.0.0.1. Shared by the API suite's PostgreSQL
//! mode (`ADFORGE_TEST_POSTGRES=1`, one cluster per test binary through [`shared`], a fresh
//! database per test server) and the process-level crate (included there by path).
//!
//! Binaries come from `ADFORGE_PG_BIN`, else the highest `/usr/lib/postgresql/N/bin`.
//! PostgreSQL refuses to run as root, so under uid 0 `initdb` and `postgres` run as the
//! `postgres` user (`runuser -u postgres --`) in a temporary folder owned by that user.
//!
//! The server can never outlive the test process: it runs under a small `sh` watchdog whose
//! stdin is a pipe from this process. When the pipe closes (on [`Postgres::stop`], on drop,
//! or because the test process ended, killed or not, as it does for the never-dropped
//! [`shared`] instance) the watchdog stops the server with a fast shutdown and, unless told
//! `keep`, removes the temporary folder.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::support::free_port;

/// The watchdog: starts `postgres` (its arguments follow), waits for a line or the end of
/// stdin, stops the server (SIGINT: fast shutdown) and removes the folder unless the line
/// was `keep`. `$0` is the folder.
const WATCHDOG: &str = r#"root="$0"
"$@" >>"$root/log" 2>&1 </dev/null &
pid=$!
read -r cmd
kill -INT "$pid" 2>/dev/null
wait "$pid"
[ "$cmd" = keep ] || rm -rf "$root"
"#;

/// A running throwaway cluster; stopped and removed on drop.
pub struct Postgres {
    pub port: u16,
    bin: PathBuf,
    /// The temporary folder: `data/` (the cluster), the server's Unix socket and `log`.
    dir: tempfile::TempDir,
    /// The watchdog and the write end of its stdin; `None` while stopped.
    watchdog: Option<(Child, ChildStdin)>,
}

impl Postgres {
    /// `initdb` in a new temporary folder, then a server on a free 127.0.0.1 port; returns
    /// once it accepts connections.
    pub fn start() -> Self {
        let bin = bin_dir();
        let dir = tempfile::Builder::new()
            .prefix("adforge-pg")
            .tempdir()
            .expect("temp dir");
        if as_root() {
            let (uid, gid) = postgres_user();
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))
                .expect("chown the cluster folder to the postgres user");
        }
        let data = dir.path().join("data");
        let out = run_as_server_user(&bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8"])
            .args(["--no-locale", "--no-sync"])
            .stdin(Stdio::null())
            .output()
            .expect("initdb runs");
        assert!(
            out.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut pg = Self {
            port: free_port(),
            bin,
            dir,
            watchdog: None,
        };
        pg.launch();
        pg
    }

    /// `postgres://postgres@127.0.0.1:PORT/db`.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// A fresh, uniquely named database; returns its URL.
    pub fn create_database(&self) -> String {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let name = format!(
            "adforge_test_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        self.psql("postgres", &format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        self.url(&name)
    }

    /// Runs `sql` through `psql` in `db` (a database name, or a URL as [`Postgres::url`]
    /// makes); its unaligned output, or the error.
    pub fn psql(&self, db: &str, sql: &str) -> Result<String, String> {
        // psql is a client: it runs as root too.
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", "127.0.0.1", "-U", "postgres"])
            .args(["-p", &self.port.to_string(), "-d", db, "-c", sql])
            .stdin(Stdio::null())
            .output()
            .expect("psql runs");
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }

    /// Fast shutdown (sessions are cut, open transactions roll back); the data is kept
    /// for [`Postgres::restart`]. For outage tests.
    pub fn stop(&mut self) {
        self.shut_down(true);
    }

    /// Starts the server again on the same port and data, and waits until it accepts
    /// connections.
    pub fn restart(&mut self) {
        self.shut_down(true);
        self.launch();
    }

    /// The server's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    fn launch(&mut self) {
        let root = self.dir.path();
        let mut child = run_as_server_user(Path::new("sh"))
            .arg("-c")
            .arg(WATCHDOG)
            .arg(root)
            .arg(self.bin.join("postgres"))
            .arg("-D")
            .arg(root.join("data"))
            .args(["-p", &self.port.to_string()])
            .args(["-c", "listen_addresses=127.0.0.1"])
            .arg("-c")
            .arg(format!("unix_socket_directories={}", root.display()))
            .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
            .args(["-c", "full_page_writes=off", "-c", "max_connections=200"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the postgres watchdog starts");
        let stdin = child.stdin.take().expect("watchdog stdin");
        self.watchdog = Some((child, stdin));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-U", "postgres"])
                .args(["-p", &self.port.to_string()])
                .stdin(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return;
            }
            if let Some((child, _)) = self.watchdog.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!("postgres exited ({status}); log:\n{}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "postgres did not accept connections; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Closes the watchdog's stdin (after `keep` when the data stays) and waits until the
    /// server has stopped.
    fn shut_down(&mut self, keep: bool) {
        if let Some((mut child, mut stdin)) = self.watchdog.take() {
            if keep {
                let _ = stdin.write_all(b"keep\n");
            }
            drop(stdin);
            let _ = child.wait();
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.shut_down(false);
    }
}

/// One cluster for this test binary, started on first use; stopped and removed by its
/// watchdog when the process ends.
pub fn shared() -> &'static Postgres {
    static SHARED: OnceLock<Postgres> = OnceLock::new();
    SHARED.get_or_init(Postgres::start)
}

/// `ADFORGE_PG_BIN`, else the highest `/usr/lib/postgresql/N/bin` holding `initdb`.
fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ADFORGE_PG_BIN") {
        return PathBuf::from(dir);
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin).expect(
        "no /usr/lib/postgresql/*/bin/initdb: scripts/test installs Debian's postgresql \
         (or set ADFORGE_PG_BIN)",
    )
}

/// Whether this process runs as root (the owner of `/proc/self`).
fn as_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// The `postgres` user's uid and gid (Debian's package creates the user).
fn postgres_user() -> (u32, u32) {
    let id = |flag: &str| -> u32 {
        let out: Output = Command::new("id")
            .args([flag, "postgres"])
            .output()
            .expect("id runs");
        assert!(
            out.status.success(),
            "no postgres user (Debian's postgresql package creates it)"
        );
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("numeric id")
    };
    (id("-u"), id("-g"))
}

/// `program` as a command, run as the `postgres` user when this process is root
/// (PostgreSQL's server programs refuse root).
fn run_as_server_user(program: &Path) -> Command {
    if as_root() {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

#[test]
fn a_throwaway_cluster_serves_databases_and_survives_a_restart() {
    let mut pg = Postgres::start();
    let first = pg.create_database();
    let second = pg.create_database();
    assert_ne!(first, second);
    assert!(first.starts_with(&format!("postgres://postgres@127.0.0.1:{}/", pg.port)));

    // psql connects with the URL itself, as the server will.
    pg.psql(
        &first,
        "CREATE TABLE kept (v BIGINT); INSERT INTO kept VALUES (42)",
    )
    .unwrap();
    assert_eq!(
        pg.psql(
            &second,
            "SELECT count(*) FROM pg_tables WHERE tablename = 'kept'"
        )
        .unwrap(),
        "0"
    );

    pg.stop();
    let err = pg.psql(&first, "SELECT 1").unwrap_err();
    assert!(err.contains("refused") || err.contains("connect"), "{err}");

    pg.restart();
    assert_eq!(
        pg.psql(&first, "SELECT v FROM kept").unwrap(),
        "42",
        "the data survives a stop and restart"
    );
    assert_eq!(pg.psql(&second, "SELECT 1").unwrap(), "1");

    // Dropping stops the server and removes the cluster's folder.
    let dir = pg.dir.path().to_path_buf();
    let port = pg.port;
    drop(pg);
    assert!(!dir.exists(), "{} is removed on drop", dir.display());
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
}
