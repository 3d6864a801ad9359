//! adforge's HTTP API, SQL store and operator CLI, and the `adforge` binary.
//!
//! ```text
//! adforge serve                      # http://127.0.0.1:8080, SQLite + blobs in ./data
//! adforge admin org create --name Acme
//! ```
//!
//! Request path: request id → auth → rate limit → body limit → idempotency → resource
//! handler (`resources::*`) → SQL (`store`). One [`app::AppState`] per process holds the
//! database handle, blob store, key cache and rate limiter.

pub mod admin;
pub mod app;
pub mod auth;
pub mod blob_args;
/// Blob storage (the trait lives in the worker crate, which writes rendered ads).
pub use adforge_worker::blob;
pub mod cli;
pub mod dashboard;
pub mod error;
pub mod http;
pub mod idempotency;
pub mod ids;
pub mod jobs;
pub mod metrics;
pub mod openapi;
pub mod ops;
pub mod ratelimit;
pub mod render_node;
pub mod resources;
pub mod store;
pub mod swipe;
pub mod timestamp;
pub mod wallet;
pub mod webhooks;

/// Operational failures of the binary (start-up, admin commands); HTTP errors are
/// [`error::ApiError`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The database could not be opened, migrated or queried.
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    /// A file or socket operation failed (data dir not writable, port in use, ...).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// An operator gave an argument that cannot be used; the text says which and why.
    #[error("{0}")]
    Invalid(String),
}
