//! The swipe file's search engine: the models a process loaded (or why none), compact
//! vectors, the search index, visibility and filters. The features built on it (uploads,
//! data sources, bulk imports, applying a finished ingest) are the `swipe_files` resource's,
//! which sits above this engine; the ingest itself and the classification taxonomy are the
//! worker's ([`adforge_worker::swipe`]).
//!
//! - [`vectors`]: int8 vectors with a scale and exact scoring.
//! - [`index`]: the per-process search index (vectors and filter columns in compact arrays,
//!   kept fresh by change markers, exact top-k).
//! - [`filter`]: which designs an organisation sees (own uploads plus subscribed data
//!   sources) and the filters shared by lists, search and design packs.

pub mod filter;
pub mod index;
pub mod vectors;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use adforge_models::Models;

use crate::error::{ApiError, ErrorCode};

/// The models of this process, loaded once at start-up, or the reason they are missing.
#[derive(Clone)]
pub enum ModelState {
    /// Loaded; shared by the API (query embedding) and the in-process workers (ingest).
    Ready(Arc<Models>),
    /// Not loaded: swipe-file uploads and searches answer 503 with this reason.
    Missing(Arc<str>),
}

impl ModelState {
    /// Loads the default models from `dir`; a failure is kept as the reason, never fatal.
    pub fn load(dir: &Path) -> Self {
        match Models::load(dir) {
            Ok(m) => {
                tracing::info!(models_dir = %dir.display(), image = m.image.model_id(), text = m.text.model_id(), "swipe-file models loaded");
                ModelState::Ready(Arc::new(m))
            }
            Err(e) => {
                tracing::warn!(models_dir = %dir.display(), error = %e, "swipe-file models not loaded; swipe-file uploads and search answer 503 until scripts/fetch-models has run");
                ModelState::Missing(Arc::from(format!(
                    "The swipe-file models are not installed on this server ({e}). An operator runs `scripts/fetch-models` (into {}) and restarts the server.",
                    dir.display()
                )))
            }
        }
    }

    /// The models, or 503 SERVICE_UNAVAILABLE saying how to install them.
    ///
    /// # Errors
    /// SERVICE_UNAVAILABLE when the models are missing.
    pub fn require(&self) -> Result<&Arc<Models>, ApiError> {
        match self {
            ModelState::Ready(m) => Ok(m),
            ModelState::Missing(why) => Err(ApiError::new(
                ErrorCode::ServiceUnavailable,
                why.to_string(),
            )),
        }
    }

    /// The models when loaded.
    pub fn get(&self) -> Option<&Arc<Models>> {
        match self {
            ModelState::Ready(m) => Some(m),
            ModelState::Missing(_) => None,
        }
    }
}

/// `--models-dir` when given, else `$ADFORGE_MODELS_DIR`, else `~/.cache/adforge/models`.
pub fn models_dir(flag: Option<&PathBuf>) -> PathBuf {
    flag.cloned()
        .unwrap_or_else(adforge_models::default_models_dir)
}
