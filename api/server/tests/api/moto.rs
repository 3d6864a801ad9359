//! A real S3-compatible server for tests: moto's `moto_server` (PyPI `moto[server]`,
//! installed into `.venv` by scripts/test) on a free loopback port. Shared by the API's
//! blob-store tests and the process-level crate (included there by path).

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use adforge_worker::s3::{S3BlobStore, S3Options};

use crate::support::free_port;

/// A `moto_server` child process on a free loopback port; killed on drop.
pub struct Moto {
    child: Child,
    pub port: u16,
}

impl Moto {
    /// `ADFORGE_MOTO_SERVER`, else the repository's `.venv/bin/moto_server`.
    fn binary() -> PathBuf {
        std::env::var_os("ADFORGE_MOTO_SERVER").map_or_else(
            || {
                // The repository root: the nearest folder above this crate with Cargo.lock
                // (this file is shared by crates at different depths).
                let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
                let root = crate_dir
                    .ancestors()
                    .find(|d| d.join("Cargo.lock").exists())
                    .unwrap_or(&crate_dir)
                    .to_path_buf();
                root.join(".venv/bin/moto_server")
            },
            PathBuf::from,
        )
    }

    pub fn start() -> Self {
        let bin = Self::binary();
        assert!(
            bin.exists(),
            "{} is missing: scripts/test installs moto[server] into .venv (or set ADFORGE_MOTO_SERVER)",
            bin.display()
        );
        let port = free_port();
        let child = Command::new(&bin)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server starts");
        let moto = Self { child, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "moto_server did not listen");
            std::thread::sleep(Duration::from_millis(100));
        }
        moto
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Creates a bucket (moto accepts unsigned requests for this).
    pub async fn bucket(&self, name: &str) {
        let res = reqwest::Client::new()
            .put(format!("{}/{name}", self.endpoint()))
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success(), "create bucket: {}", res.status());
    }

    pub fn store(&self, url: &str, files_base: &str) -> S3BlobStore {
        S3BlobStore::new(
            &S3Options {
                url: url.to_owned(),
                endpoint: Some(self.endpoint()),
                region: Some("us-east-1".into()),
                allow_http: true,
                credentials: Some(("testing".into(), "testing".into())),
            },
            files_base,
        )
        .unwrap()
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.kill();
    }
}
