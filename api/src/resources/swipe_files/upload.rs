//! Uploads: the multipart form of POST /v1/swipe-files, and [`create`], which stores a
//! design's original and writes its `processing` row with the ingest job (managed designs
//! of data sources are created through it too, by [`super::sources`]).

use std::sync::Arc;

use adforge_worker::imaging;
use axum::extract::Request;
use bytes::Bytes;

use super::store::{self, SwipeRow};
use crate::blob::BlobStore;
use crate::error::{ApiError, ApiResult, ErrorCode, FieldError};
use crate::http::extract::{FormFields, bad_form};
use crate::jobs::Jobs;
use crate::store::Db;

/// The image bytes of the upload form's one `file` field.
pub(super) async fn read_file_field(req: Request) -> ApiResult<Bytes> {
    let mut form = FormFields::open(req, "the image in a `file` field").await?;
    let mut file = None;
    let mut errors = Vec::new();
    while let Some(field) = form.next().await? {
        let name = field.name().unwrap_or("").to_string();
        if name == "file" {
            if file.is_some() {
                errors.push(FieldError::new(
                    "file",
                    "was given more than once; upload one design per request",
                ));
            }
            file = Some(field.bytes().await.map_err(bad_form)?);
        } else {
            errors.push(FieldError::new(
                name,
                "is not a field of a swipe-file upload; send only `file`",
            ));
        }
    }
    match file {
        Some(f) if errors.is_empty() => Ok(f),
        None => {
            errors.push(FieldError::new(
                "file",
                "is required: the image bytes (PNG, JPEG or WebP) as a multipart file field",
            ));
            Err(ApiError::validation(errors))
        }
        Some(_) => Err(ApiError::validation(errors)),
    }
}

/// A design's original, stored under its new id, not yet in SQL.
pub struct StoredOriginal {
    pub id: String,
    pub blob_key: String,
    pub width: u32,
    pub height: u32,
}

/// Checks and stores a design's original under a new id (WebP transcoded to PNG): the
/// first half of [`create`], which bulk imports run before their own transaction.
///
/// # Errors
/// IMAGE_INVALID_FORMAT, IMAGE_UNREADABLE, VALIDATION_ERROR (limits), IMAGE_UPLOAD_FAILED.
pub async fn store_original(blobs: &Arc<dyn BlobStore>, bytes: Bytes) -> ApiResult<StoredOriginal> {
    let decode_bytes = bytes.clone();
    let (stored, ext, width, height) =
        imaging::with_decoded(bytes.clone(), move |probed, image| {
            let (w, h) = (probed.width, probed.height);
            if probed.format == image::ImageFormat::WebP {
                let mut png = Vec::new();
                image
                    .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
                    .map_err(|e| {
                        ApiError::new(
                            ErrorCode::ImageUnreadable,
                            format!("the WebP could not be transcoded to PNG: {e}"),
                        )
                    })?;
                Ok::<_, ApiError>((Bytes::from(png), "png", w, h))
            } else {
                Ok((decode_bytes, imaging::extension(probed.format), w, h))
            }
        })
        .await??;
    let id = crate::ids::new_id("sf");
    let blob_key = format!("swipe-files/{id}/original.{ext}");
    blobs.put(&blob_key, stored).await.map_err(|e| ApiError {
        internal: Some(e.to_string()),
        ..ApiError::new(
            ErrorCode::ImageUploadFailed,
            "Storing the design failed; retry the upload",
        )
    })?;
    Ok(StoredOriginal {
        id,
        blob_key,
        width,
        height,
    })
}

/// Inserts the `processing` row of a stored original and stages its ingest job in the
/// caller's transaction: the second half of [`create`].
///
/// # Errors
/// Database failures.
pub async fn stage_stored(
    conn: &mut sqlx::AnyConnection,
    stored: &StoredOriginal,
    owner: (Option<&str>, Option<&str>),
    source: &str,
    hints: Option<adforge_worker::IngestHints>,
) -> ApiResult<()> {
    let (org_id, data_source_id) = owner;
    let now = crate::timestamp::now();
    store::insert(
        &mut *conn,
        &store::NewSwipeFile {
            id: &stored.id,
            org_id,
            data_source_id,
            source,
            blob_key: &stored.blob_key,
            width: Some(stored.width),
            height: Some(stored.height),
            now: &now,
        },
    )
    .await?;
    let job = adforge_worker::Job::IngestSwipeFile(adforge_worker::IngestSwipeFileJob {
        swipe_file_id: stored.id.clone(),
        org_id: org_id.map(str::to_string),
        blob_key: stored.blob_key.clone(),
        fetch_url: None,
        hints,
    });
    Jobs::stage(conn, &job).await?;
    Ok(())
}

/// Inserts the `processing` row of a managed design that a worker fetches from `url`
/// (through the address policy) and stages its ingest job, in the caller's transaction.
/// Its size and aspect ratio stay unknown until the ingest; its original is stored then.
/// Returns the new id.
///
/// # Errors
/// Database failures.
pub async fn stage_url(
    conn: &mut sqlx::AnyConnection,
    data_source_id: &str,
    url: &str,
    hints: Option<adforge_worker::IngestHints>,
) -> ApiResult<String> {
    let id = crate::ids::new_id("sf");
    // Where the worker stores it; the applied ingest names the file with its extension.
    let blob_key = format!("swipe-files/{id}/original");
    let now = crate::timestamp::now();
    store::insert(
        &mut *conn,
        &store::NewSwipeFile {
            id: &id,
            org_id: None,
            data_source_id: Some(data_source_id),
            source: "svc_managed",
            blob_key: &blob_key,
            width: None,
            height: None,
            now: &now,
        },
    )
    .await?;
    let job = adforge_worker::Job::IngestSwipeFile(adforge_worker::IngestSwipeFileJob {
        swipe_file_id: id.clone(),
        org_id: None,
        blob_key,
        fetch_url: Some(url.to_string()),
        hints,
    });
    Jobs::stage(conn, &job).await?;
    Ok(id)
}

/// Stores a design's original and inserts its `processing` row with the ingest job staged
/// in the outbox (one transaction). `org_id` `None` with `data_source_id` for managed
/// designs. Returns the new row; with `jobs`, wakes its dispatcher once the row is committed.
///
/// # Errors
/// IMAGE_INVALID_FORMAT, IMAGE_UNREADABLE, VALIDATION_ERROR (limits), IMAGE_UPLOAD_FAILED,
/// database failures.
pub async fn create(
    db: &Db,
    blobs: &Arc<dyn BlobStore>,
    owner: (Option<&str>, Option<&str>),
    source: &str,
    bytes: Bytes,
    jobs: Option<Jobs>,
) -> ApiResult<SwipeRow> {
    let stored = store_original(blobs, bytes).await?;
    let mut tx = db.begin_write().await?;
    stage_stored(&mut tx, &stored, owner, source, None).await?;
    // Read back inside the transaction: under an Idempotency-Key its commit is deferred to
    // the end of the request, so the read pool would not see the row yet.
    let row = store::row_in_tx(&mut tx, &stored.id).await?;
    if let Some(jobs) = jobs {
        tx.after_commit(move || jobs.kick());
    }
    tx.commit().await?;
    Ok(row)
}
