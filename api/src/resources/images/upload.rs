//! Uploads: the multipart form of POST /v1/images, read and checked field by field, and
//! [`store_upload`], which decodes under the memory budget, stores the original, inserts
//! the row and starts the thumbnails once it is committed. The dashboard uploads through
//! `upload_bytes` and `upload_logo` in [`super`], which call it too.

use adforge_worker::imaging;
use axum::extract::Request;
use bytes::Bytes;

use super::{IMAGE_TYPES, Image, derivatives, store};
use crate::blob::BlobStore;
use crate::error::{ApiError, ApiResult, ErrorCode, FieldError};
use crate::http::extract::{FormFields, bad_form};
use crate::resources::{common, products};
use crate::store::Db;
use std::sync::Arc;

const ALT_TEXT_MAX: usize = 1_000;

/// The fields of an upload form, checked.
#[derive(Default)]
pub(super) struct UploadForm {
    pub file: Option<Bytes>,
    pub image_type: Option<String>,
    pub alt_text: Option<String>,
    pub product_id: Option<String>,
    pub logo_theme: Option<String>,
    pub is_ai_generated: bool,
}

/// Reads and checks the multipart form of POST /v1/images.
pub(super) async fn read_form(req: Request) -> ApiResult<UploadForm> {
    let mut fields = FormFields::open(req, "the image in a `file` field").await?;
    let mut form = UploadForm::default();
    let mut errors = Vec::new();
    while let Some(field) = fields.next().await? {
        let name = field.name().unwrap_or("").to_string();
        if name == "file" {
            if form.file.is_some() {
                errors.push(FieldError::new(
                    "file",
                    "was given more than once; upload one image per request",
                ));
            }
            form.file = Some(field.bytes().await.map_err(bad_form)?);
            continue;
        }
        let raw = field.text().await.map_err(bad_form)?;
        let text = raw.trim().to_string();
        match name.as_str() {
            "image_type" => {
                if IMAGE_TYPES.contains(&text.as_str()) {
                    form.image_type = Some(text);
                } else {
                    errors.push(FieldError::new("image_type", format!("must be one of {}, not `{text}`", IMAGE_TYPES.join(", "))));
                }
            }
            "alt_text" => {
                // Length and characters as sent (as for names); stored trimmed.
                if raw.chars().count() > ALT_TEXT_MAX {
                    errors.push(FieldError::new("alt_text", format!("must be at most {ALT_TEXT_MAX} characters")));
                }
                common::check_chars("alt_text", &raw, common::Lines::Single, &mut errors);
                form.alt_text = Some(text).filter(|t| !t.is_empty());
            }
            "product_id" => form.product_id = Some(text).filter(|t| !t.is_empty()),
            "logo_theme" => match text.as_str() {
                "light" | "dark" => form.logo_theme = Some(text),
                _ => errors.push(FieldError::new("logo_theme", "must be `light` or `dark`")),
            },
            "is_ai_generated" => match text.as_str() {
                "true" => form.is_ai_generated = true,
                "false" => form.is_ai_generated = false,
                _ => errors.push(FieldError::new("is_ai_generated", "must be `true` or `false`")),
            },
            other => errors.push(FieldError::new(
                other,
                "is not a field of an image upload; allowed: file, image_type, alt_text, product_id, logo_theme, is_ai_generated",
            )),
        }
    }
    if form.file.is_none() {
        errors.push(FieldError::new(
            "file",
            "is required: the image bytes (PNG, JPEG or WebP) as a multipart file field",
        ));
    }
    if errors.is_empty() {
        Ok(form)
    } else {
        Err(ApiError::validation(errors))
    }
}

/// POST /v1/images after the form is read.
pub(super) async fn store_upload(
    db: &Db,
    blobs: &Arc<dyn BlobStore>,
    org_id: &str,
    form: UploadForm,
) -> ApiResult<Image> {
    let bytes = form.file.clone().unwrap_or_default();
    if let Some(pid) = &form.product_id {
        products::load(&db.read, org_id, pid).await?;
    }
    let size = bytes.len() as i64;
    let decoded = imaging::decode_preview(bytes.clone()).await?;
    let logo_theme = match (&form.logo_theme, form.image_type.as_deref()) {
        (Some(t), _) => Some(t.clone()),
        (None, Some("logo")) => {
            let img = decoded.image.clone();
            Some(
                tokio::task::spawn_blocking(move || imaging::logo_theme(&img))
                    .await
                    .map_err(ApiError::internal)?
                    .to_string(),
            )
        }
        _ => None,
    };
    let id = crate::ids::new_id("img");
    let blob_key = format!(
        "images/{id}/original.{}",
        imaging::extension(decoded.format)
    );
    blobs.put(&blob_key, bytes).await.map_err(|e| ApiError {
        internal: Some(e.to_string()),
        ..ApiError::new(
            ErrorCode::ImageUploadFailed,
            "Storing the image failed; retry the upload",
        )
    })?;
    let search_text = form.alt_text.as_deref().unwrap_or("").to_lowercase();
    // Timestamps are taken under the write lock, so they agree with list order.
    let mut tx = db.begin_write().await?;
    let now = crate::timestamp::now();
    store::insert(
        &mut tx,
        &store::NewImage {
            id: &id,
            org_id,
            blob_key: &blob_key,
            width: decoded.width,
            height: decoded.height,
            format: imaging::format_name(decoded.format),
            size_bytes: size,
            alt_text: form.alt_text.as_deref(),
            image_type: form.image_type.as_deref(),
            is_ai_generated: form.is_ai_generated,
            logo_theme: logo_theme.as_deref(),
            product_id: form.product_id.as_deref(),
            cutout_of: None,
            cutout_method: None,
            search_text,
            now: &now,
        },
    )
    .await?;
    // Read back inside the transaction: under an Idempotency-Key its commit is deferred.
    let row = store::load_with(&mut *tx, org_id, &id).await?;
    // Thumbnails start once the row is really committed: under an Idempotency-Key the commit
    // waits for the middleware, and a task started earlier could read the row before it exists.
    let (later_db, later_blobs, image) = (db.clone(), blobs.clone(), decoded.image);
    tx.after_commit(move || derivatives::spawn_derivatives(later_db, later_blobs, id, Some(image)));
    tx.commit().await?;
    Ok(row.into_image(blobs.as_ref()))
}
