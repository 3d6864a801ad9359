//! Uploads: the multipart form of POST /v1/swipe-files, and [`create`], which stores a
//! design's original and writes its `processing` row with the ingest job (managed designs
//! of data sources are created through it too, by `crate::swipe::sources`).

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
    let (org_id, data_source_id) = owner;
    let mut tx = db.begin_write().await?;
    let now = crate::timestamp::now();
    store::insert(
        &mut tx,
        &store::NewSwipeFile {
            id: &id,
            org_id,
            data_source_id,
            source,
            blob_key: &blob_key,
            width,
            height,
            now: &now,
        },
    )
    .await?;
    let job = adforge_worker::Job::IngestSwipeFile(adforge_worker::IngestSwipeFileJob {
        swipe_file_id: id.clone(),
        org_id: org_id.map(str::to_string),
        blob_key,
    });
    Jobs::stage(&mut tx, &job).await?;
    // Read back inside the transaction: under an Idempotency-Key its commit is deferred to
    // the end of the request, so the read pool would not see the row yet.
    let row = store::row_in_tx(&mut tx, &id).await?;
    if let Some(jobs) = jobs {
        tx.after_commit(move || jobs.kick());
    }
    tx.commit().await?;
    Ok(row)
}
