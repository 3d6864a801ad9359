//! Applying a worker's ingest result to a swipe file, exactly once in effect: only a
//! `processing` design changes, so a redelivered event does nothing. The webhook event of
//! an organisation's upload and the bulk import's item state are written in the same
//! transaction.

use adforge_worker::{IngestHints, IngestSwipeFileJob, Job};

use super::imports;
use crate::store::Db;
use crate::swipe::vectors;

/// Applies a finished ingest: the measured fields, both vectors and `ready`, in one
/// transaction; only a `processing` design changes, so a redelivered event does nothing.
/// An organisation's upload also records `swipe_file.ready` (the design as GET shows it) in
/// that transaction; managed designs of a data source belong to no organisation and report
/// no event.
///
/// # Errors
/// Database failures (the event is then redelivered).
pub async fn completed(
    db: &Db,
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
pub async fn failed(
    db: &Db,
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
    let row: Option<super::SwipeRow> = crate::store::query_as(&format!(
        "SELECT {} FROM swipe_files AS t WHERE t.id = ?",
        super::COLUMNS
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

/// The ingest job of every `processing` design (uploads and bulk imports), for the API's
/// start-up to queue again; a bulk import's design keeps what its manifest said (URL,
/// hints).
///
/// # Errors
/// Database failures.
pub async fn unfinished(db: &Db) -> Result<Vec<Job>, sqlx::Error> {
    Ok(super::store::processing_ingests(db)
        .await?
        .into_iter()
        .map(|p| {
            let from_import = p.locator.is_some();
            Job::IngestSwipeFile(IngestSwipeFileJob {
                swipe_file_id: p.swipe_file_id,
                org_id: p.org_id,
                blob_key: p.blob_key,
                fetch_url: p.locator.filter(|_| p.is_url),
                hints: from_import.then_some(IngestHints {
                    industry: p.industry,
                    ad_format: p.ad_format,
                    caption: p.caption,
                }),
            })
        })
        .collect())
}
