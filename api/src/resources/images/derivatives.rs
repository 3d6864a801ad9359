//! Background work after an upload: the three WebP thumbnails and the measured
//! description (which `search` matches), made from the upload's 1200 px preview on a
//! blocking thread once the image's row is committed; images a stopped server left
//! without thumbnails are finished at the next start ([`resume_derivatives`]).

use std::sync::Arc;

use adforge_worker::imaging;
use bytes::Bytes;
use image::RgbaImage;

use super::store;
use crate::blob::BlobStore;
use crate::store::Db;

/// Makes thumbnails and the description in the background. `image` is the upload's
/// preview ([`imaging::decode_preview`]) when at hand; otherwise the original is read back
/// from the blob store and decoded under the same memory budget.
pub fn spawn_derivatives(db: Db, blobs: Arc<dyn BlobStore>, id: String, image: Option<RgbaImage>) {
    tokio::spawn(async move {
        if let Err(e) = make_derivatives(&db, blobs, &id, image).await {
            tracing::error!(image_id = %id, error = %e, "thumbnails failed");
        }
    });
}

async fn make_derivatives(
    db: &Db,
    blobs: Arc<dyn BlobStore>,
    id: &str,
    image: Option<RgbaImage>,
) -> Result<(), String> {
    let image = match image {
        Some(i) => i,
        None => {
            let key = store::blob_key(db, id).await.map_err(|e| e.to_string())?;
            let bytes = blobs
                .get(&key)
                .await
                .map_err(|e| e.to_string())?
                .ok_or("original missing")?;
            imaging::decode_preview(bytes)
                .await
                .map_err(|e| e.to_string())?
                .image
        }
    };
    let (thumbs, description) = tokio::task::spawn_blocking(move || {
        imaging::thumbnails(&image)
            .map(|t| (t, imaging::describe(&image)))
            .map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| e.to_string())??;
    let mut keys = Vec::new();
    for (bytes, size) in thumbs.into_iter().zip(["small", "medium", "large"]) {
        let key = format!("images/{id}/thumb_{size}.webp");
        blobs
            .put(&key, Bytes::from(bytes))
            .await
            .map_err(|e| e.to_string())?;
        keys.push(key);
    }
    // Lower-cased here, not with SQL `lower()`, which folds ASCII only: the search needle
    // is lower-cased in Rust, so `Été` must be stored as `été` to be found.
    let alt_text = store::alt_text(db, id).await.map_err(|e| e.to_string())?;
    let search_text = format!(
        "{} {}",
        alt_text.unwrap_or_default().to_lowercase(),
        description.to_lowercase()
    );
    store::set_derivatives(db, id, &keys, &description, search_text)
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// Finishes images that a stopped server left without thumbnails.
pub async fn resume_derivatives(db: &Db, blobs: &Arc<dyn BlobStore>) {
    let ids = store::without_thumbnails(db).await.unwrap_or_default();
    for id in ids {
        spawn_derivatives(db.clone(), blobs.clone(), id, None);
    }
}
