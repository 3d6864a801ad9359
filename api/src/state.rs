//! The process's shared state ([`AppState`]). The parts of it that middleware and bodies
//! take instead of the whole (axum's `FromRef` substates) live beside the code that uses
//! them, with private fields (`auth::AuthState`, `ops::OpsState`); the single services
//! (`Db`, `Jobs`, `SharedLimiter`, the blob store) are taken from it here.
//!
//! A leaf of the crate's module graph: it names the services it holds, each from a module
//! that does not import the state back (`auth::cache`, `ops::config`,
//! `integrations::config`, `previews::render`, …), and nothing that routes or serves
//! requests, so the modules that import it are never imported back through it (a test,
//! `api/server/tests/api/layering.rs`, fails on such a circle). Created once per process
//! by the server and cloned per request (every field is a handle).

use std::sync::Arc;

use adforge_renderer::HttpFetcher;
use axum::extract::FromRef;

use crate::auth::cache::KeyCache;
use crate::blob::BlobStore;
use crate::jobs::Jobs;
use crate::ops::config::Ops;
use crate::ratelimit::SharedLimiter;
use crate::resources::integrations::config::FigmaConfig;
use crate::resources::previews::render::Previewer;
use crate::store::Db;
use crate::swipe::ModelState;
use crate::swipe::index::SearchIndex;

/// Everything a `/v1` handler may need, behind one `Arc`: every middleware layer and
/// extractor clones the state per request, and one reference count is all a clone touches
/// (the read-path profile of issue 26 found a clone of the separate handles at 7 % of a
/// point read). Derefs to its [`Services`].
#[derive(Clone)]
pub struct AppState(Arc<Services>);

impl AppState {
    pub fn new(services: Services) -> Self {
        Self(Arc::new(services))
    }
}

impl std::ops::Deref for AppState {
    type Target = Services;
    fn deref(&self) -> &Services {
        &self.0
    }
}

/// The services an [`AppState`] holds.
pub struct Services {
    pub db: Db,
    pub blobs: Arc<dyn BlobStore>,
    pub keys: Arc<KeyCache>,
    pub limiter: SharedLimiter,
    /// The job queue, outbox dispatcher and event applier.
    pub jobs: Jobs,
    /// Fetches reference ads through the public-address guard.
    pub reference_fetcher: Arc<HttpFetcher>,
    /// Where INSUFFICIENT_BALANCE sends people to top up.
    pub dashboard_url: Arc<str>,
    /// Operators may allow loopback/private URLs (tests, local demos).
    pub allow_private_urls: bool,
    /// The swipe-file models (query embedding), or why they are missing.
    pub models: ModelState,
    /// Cuts products out of their photos (`POST /v1/images/{id}/cutout`); the same one the
    /// process's workers use.
    pub cutter: Arc<adforge_worker::cutout::Cutter>,
    /// Metrics and what `/readyz` and `/metrics` need (`crate::ops`).
    pub ops: Arc<Ops>,
    /// Vectors of ready swipe files, cached per process.
    pub search_index: Arc<SearchIndex>,
    /// The preview renderer (POST /v1/previews, the dashboard's editor).
    pub previews: Arc<Previewer>,
    /// Design-tool sync: Figma's API base URL and the secrets key tokens are sealed with.
    pub figma: Arc<FigmaConfig>,
}

impl FromRef<AppState> for Db {
    fn from_ref(s: &AppState) -> Self {
        s.db.clone()
    }
}

impl FromRef<AppState> for Jobs {
    fn from_ref(s: &AppState) -> Self {
        s.jobs.clone()
    }
}

impl FromRef<AppState> for SharedLimiter {
    fn from_ref(s: &AppState) -> Self {
        s.limiter.clone()
    }
}

impl FromRef<AppState> for Arc<dyn BlobStore> {
    fn from_ref(s: &AppState) -> Self {
        s.blobs.clone()
    }
}
