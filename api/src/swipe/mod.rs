//! The API side of the swipe file: the models a process loaded (or why none), compact
//! vectors, the search index, visibility and filters, data sources, and applying a finished
//! ingest. The ingest itself and the classification taxonomy are the worker's
//! ([`adforge_worker::swipe`]).
//!
//! - [`vectors`]: int8 vectors with a scale and exact scoring.
//! - [`index`]: the per-process search index (vectors and filter columns in compact arrays,
//!   kept fresh by change markers, exact top-k).
//! - [`imports`]: bulk imports into a data source (resumable, progress counted in SQL).
//! - [`filter`]: which designs an organisation sees (own uploads plus subscribed data
//!   sources) and the filters shared by lists, search and design packs.

pub mod filter;
pub mod imports;
pub mod index;
pub mod sources;
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

/// Applies a finished ingest: the measured fields, both vectors and `ready`, in one
/// transaction; only a `processing` design changes, so a redelivered event does nothing.
/// An organisation's upload also records `swipe_file.ready` (the design as GET shows it) in
/// that transaction; managed designs of a data source belong to no organisation and report
/// no event.
///
/// # Errors
/// Database failures (the event is then redelivered).
pub async fn apply_ingested(
    db: &crate::store::Db,
    blobs: &dyn crate::blob::BlobStore,
    id: &str,
    r: &adforge_worker::SwipeFileIngested,
) -> crate::error::ApiResult<bool> {
    let mut tx = db.begin_write().await?;
    let now = crate::timestamp::now();
    let changed = crate::store::query(
        "UPDATE swipe_files SET status = 'ready', error = NULL, thumb_key = ?, blob_key = coalesce(?, blob_key), \
         width = ?, height = ?, aspect_ratio = ?, industry = ?, ad_format = ?, caption = ?, labels = ?, ocr_text = ?, updated_at = ? \
         WHERE id = ? AND status = 'processing'",
    )
    .bind(&r.thumb_key)
    .bind(&r.blob_key)
    .bind(i64::from(r.width))
    .bind(i64::from(r.height))
    .bind(&r.aspect_ratio)
    .bind(&r.industry)
    .bind(&r.ad_format)
    .bind(&r.caption)
    .bind(crate::store::to_json_text(&r.labels))
    .bind(&r.ocr_text)
    .bind(&now)
    .bind(id)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if changed == 1 {
        for (kind, model, v) in [
            (vectors::IMAGE, &r.image_model, &r.image_vector),
            (vectors::TEXT, &r.text_model, &r.text_vector),
        ] {
            crate::store::query(
                "INSERT INTO swipe_file_vectors (swipe_file_id, kind, model_id, dim, vector) VALUES (?, ?, ?, ?, ?) \
                 ON CONFLICT(swipe_file_id, kind) DO UPDATE SET model_id = excluded.model_id, dim = excluded.dim, vector = excluded.vector",
            )
            .bind(id)
            .bind(kind)
            .bind(model)
            .bind(v.len() as i64)
            .bind(vectors::encode(v))
            .execute(&mut *tx)
            .await?;
        }
        record_event(&mut tx, blobs, id, "swipe_file.ready").await?;
        imports::item_finished(&mut tx, id, None).await?;
    }
    tx.commit().await?;
    Ok(changed == 1)
}

/// Marks a `processing` design `failed` with `error`; an organisation's upload records
/// `swipe_file.failed` in the same transaction.
///
/// # Errors
/// Database failures.
pub async fn apply_failed(
    db: &crate::store::Db,
    blobs: &dyn crate::blob::BlobStore,
    id: &str,
    error: &str,
) -> crate::error::ApiResult<bool> {
    let mut tx = db.begin_write().await?;
    let changed = crate::store::query(
        "UPDATE swipe_files SET status = 'failed', error = ?, updated_at = ? WHERE id = ? AND status = 'processing'",
    )
    .bind(error)
    .bind(crate::timestamp::now())
    .bind(id)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if changed == 1 {
        record_event(&mut tx, blobs, id, "swipe_file.failed").await?;
        imports::item_finished(&mut tx, id, Some(error)).await?;
    }
    tx.commit().await?;
    Ok(changed == 1)
}

/// Writes the webhook event of an upload's state change, with the design as GET shows it
/// now; nothing for a managed design (no organisation to tell).
async fn record_event(
    conn: &mut sqlx::AnyConnection,
    blobs: &dyn crate::blob::BlobStore,
    id: &str,
    event_type: &str,
) -> crate::error::ApiResult<()> {
    let row: Option<crate::resources::swipe_files::SwipeRow> = crate::store::query_as(&format!(
        "SELECT {} FROM swipe_files AS t WHERE t.id = ?",
        crate::resources::swipe_files::COLUMNS
    ))
    .bind(id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else { return Ok(()) };
    let Some(org_id) = row.org_id.clone() else {
        return Ok(());
    };
    let object =
        serde_json::to_value(row.into_api(blobs)).map_err(crate::error::ApiError::internal)?;
    crate::webhooks::record(conn, &org_id, event_type, id, object).await?;
    Ok(())
}
