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

use std::process::Command;

#[path = "../../api/tests/api/support.rs"]
#[allow(dead_code)]
mod support;

#[path = "../../api/tests/api/flows.rs"]
#[allow(dead_code)]
mod flows;

#[path = "../../api/tests/api/webhook_receiver.rs"]
#[allow(dead_code)]
mod webhook_receiver;

#[path = "../../worker/tests/queue/redis_server.rs"]
#[allow(dead_code)]
mod redis_server;

#[path = "../../api/tests/api/moto.rs"]
mod moto;

#[path = "../../api/tests/api/postgres.rs"]
#[allow(dead_code)]
mod postgres;

mod cluster;
mod crash;
mod gpu_worker;
mod memory;
mod restart;
mod s3;
mod scale_out;
mod shared_limits;
mod shutdown;
mod webhooks;

/// A command for the `adforge` binary (this package's build of its `main`, see
/// `bin/adforge.rs`).
pub fn adforge() -> Command {
    Command::new(env!("CARGO_BIN_EXE_adforge-e2e"))
}
