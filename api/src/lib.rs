//! adforge's domain and `/v1` API as a library: resources (one module per resource with
//! its handlers and its SQL store), auth and scopes, rate limits, idempotency, the wallet,
//! jobs and their event applier, webhooks, the swipe file's search, and the OpenAPI
//! description. The web dashboard (`adforge-dashboard`) and the `adforge` binary (which
//! assembles the routers and holds the CLI) are crates above this one; nothing here
//! imports them.
//!
//! ```no_run
//! # async fn demo() -> Result<(), adforge_api::Error> {
//! let db = adforge_api::store::Db::open(std::path::Path::new("./data")).await?;
//! let org = adforge_api::orgs::create_org(&db, "Acme").await?;
//! let router = adforge_api::v1::api_router(); // every /v1 route with its OpenAPI
//! # let _ = (org, router); Ok(()) }
//! ```
//!
//! Request path (wired by the server): request id → auth → rate limit → body limit →
//! idempotency → resource handler (`resources::*`) → SQL (`store`). One
//! [`state::AppState`] per process holds the database handle, blob store, key cache, rate
//! limiter and job queue; it lives as long as the server.

pub mod auth;
/// Blob storage (the trait lives in the worker crate, which writes rendered ads).
pub use adforge_worker::blob;
pub mod error;
pub mod http;
pub mod idempotency;
pub mod ids;
pub mod jobs;
pub mod metrics;
pub mod openapi;
pub mod ops;
pub mod orgs;
pub mod ratelimit;
pub mod resources;
pub mod results;
pub mod state;
pub mod store;
pub mod swipe;
pub mod timestamp;
pub mod v1;
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
