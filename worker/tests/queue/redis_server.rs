//! A throwaway `redis-server` on a free loopback port, persisting to a temporary folder with
//! an fsync'd append-only file, so that a restart on the same folder and port keeps every
//! stream, group and pending entry. Killed on drop. Shared by the tests and the dispatch
//! benchmark (`#[path]`-included there).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `redis-server` child process.
pub struct RedisServer {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
    appendfsync: &'static str,
}

impl RedisServer {
    /// Starts a server on a free port in a new temporary folder and waits until it answers.
    ///
    /// # Panics
    /// When `redis-server` is not installed or does not come up within 10 s.
    pub fn start() -> Self {
        Self::start_with_fsync("always")
    }

    /// Like [`RedisServer::start`] with another `appendfsync` policy (`always`, `everysec`,
    /// `no`); the benchmark measures Redis's default, `everysec`, beside the tests' `always`.
    pub fn start_with_fsync(appendfsync: &'static str) -> Self {
        let dir = tempfile::tempdir().expect("temporary folder for redis-server");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free loopback port")
            .port();
        let child = spawn(dir.path(), port, appendfsync);
        let server = RedisServer {
            child,
            port,
            dir,
            appendfsync,
        };
        server.wait_ready();
        server
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Kills the server with SIGKILL (no shutdown save) and starts it again on the same
    /// folder and port; the append-only file brings the data back.
    pub fn restart(&mut self) {
        self.kill();
        self.child = spawn(self.dir.path(), self.port, self.appendfsync);
        self.wait_ready();
    }

    /// Kills the server with SIGKILL and waits for it to exit.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if ping(self.port) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "redis-server did not answer PING on port {} within 10 s; log in {}",
                self.port,
                self.dir.path().join("redis.log").display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn spawn(dir: &Path, port: u16, appendfsync: &str) -> Child {
    let dir_arg = dir.to_str().expect("temporary folder path is UTF-8");
    let log = dir.join("redis.log");
    let result = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args([
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            appendfsync,
        ])
        .args([
            "--dir",
            dir_arg,
            "--logfile",
            log.to_str().expect("log path is UTF-8"),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match result {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            panic!("redis-server is not on PATH: install redis-server (scripts/test does)")
        }
        Err(e) => panic!("could not start redis-server: {e}"),
    }
}

/// True when the server answers `PING` with `PONG` (not `-LOADING` while it replays the
/// append-only file).
fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    if stream.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 16];
    matches!(stream.read(&mut buf), Ok(n) if buf[..n].starts_with(b"+PONG"))
}
