//! Process-level end-to-end tests (the design card's top-level `tests/`): a real
//! `redis-server`, `adforge serve` API processes and `adforge worker` render nodes, started
//! as separate processes (SIGKILLed where a test needs a crash) and driven over HTTP and the
//! operator CLI. One binary with a module per area. In-process HTTP tests stay with the API
//! (`api/tests/api`); the helpers both share are included from there by path, so they are
//! written once.
//!
//! No assertion here is about time: every wait is a generous polling deadline.

// Test helpers may unwrap: a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

#[path = "../../api/server/tests/api/support.rs"]
#[allow(dead_code)]
mod support;

#[path = "../../renderer/tests/render/stress_trees.rs"]
#[allow(dead_code)]
mod stress_trees;

#[path = "../../api/server/tests/api/flows.rs"]
#[allow(dead_code)]
mod flows;

#[path = "../../api/server/tests/api/webhook_receiver.rs"]
#[allow(dead_code)]
mod webhook_receiver;

#[path = "../../worker/tests/queue/redis_server.rs"]
#[allow(dead_code)]
mod redis_server;

#[path = "../../api/server/tests/api/moto.rs"]
mod moto;

#[path = "../../api/server/tests/api/postgres.rs"]
#[allow(dead_code)]
mod postgres;

mod batches;
mod budgets;
mod clean_start;
mod cluster;
mod crash;
mod gpu_worker;
mod import;
mod memory;
mod restart;
mod s3;
mod scale_out;
mod shared_limits;
mod shutdown;
mod walkthrough;
mod webhooks;

/// A command for the `adforge` binary (this package's build of its `main`, see
/// `bin/adforge.rs`).
pub fn adforge() -> Command {
    Command::new(env!("CARGO_BIN_EXE_adforge-e2e"))
}

/// A process's stdout or stderr, written to `dir/name`.
pub fn log_file(dir: &Path, name: &str) -> Stdio {
    Stdio::from(std::fs::File::create(dir.join(name)).expect("log file"))
}

/// Runs an `adforge admin …` command and parses the JSON it prints.
pub fn admin_json(mut cmd: Command, args: &[&str]) -> Value {
    let out = cmd.args(args).output().expect("adforge admin runs");
    assert!(
        out.status.success(),
        "adforge admin {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("admin prints JSON")
}

/// A deployment the operator CLI reaches: `admin` runs `adforge admin ARGS…` against its
/// store; organisations and wallets follow from that.
pub trait Operator {
    fn admin(&self, args: &[&str]) -> Value;

    /// A new organisation with an all-scope key that no test here can rate-limit, funded
    /// with `dollars` through the operator CLI.
    fn org(&self, name: &str, dollars: &str) -> support::Org {
        let org = self.admin(&["org", "create", "--name", name]);
        let id = org["id"].as_str().expect("org id").to_string();
        let key = self.admin(&[
            "key",
            "create",
            "--org",
            &id,
            "--scopes",
            "all",
            "--rate-limit",
            "1000000",
        ]);
        self.admin(&["wallet", "top-up", "--org", &id, "--amount", dollars]);
        support::Org {
            id,
            key: key["key"].as_str().expect("key").to_string(),
        }
    }

    /// `adforge admin wallet show`: balance, holds and the ledger (newest first).
    fn wallet(&self, org: &support::Org) -> Value {
        self.admin(&["wallet", "show", "--org", &org.id])
    }
}

/// Uploads `bytes` to the swipe file of `org` through `api`.
pub async fn swipe_upload(
    api: &impl flows::Api,
    org: &support::Org,
    bytes: Vec<u8>,
) -> support::Reply {
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(bytes).file_name("design.png"),
    );
    support::send(
        api.client()
            .post(format!("{}/v1/swipe-files", api.base()))
            .header("x-api-key", &org.key)
            .multipart(form),
    )
    .await
}

/// A field of `/proc/{pid}/status` in KiB (`VmRSS:`, `VmHWM:`).
pub fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}
