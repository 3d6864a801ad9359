//! Cut-outs kept in the blob store by the photo's content hash: `cutouts/v1/{sha256}.png`
//! and beside it `{sha256}.json`, which says how it was made (or why none could be). Every
//! ad and every `POST /v1/images/{id}/cutout` of the same photo bytes reuses them, on any
//! node that shares the store; the version segment changes when the way cut-outs are made
//! changes, so old ones are not reused.
//!
//! A refusal is kept too (the same photo is not analysed for every ad), but only when every
//! path was tried: a node without the model cannot speak for one with it.

use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Cutter, Method, Refusal, encode_png};
use crate::blob::BlobStore;
use crate::imaging::{self, ImagingError};

/// The folder of this version of cut-outs in the blob store.
pub const FOLDER: &str = "cutouts/v1";

/// A stored cut-out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stored {
    /// Blob key of the PNG.
    pub key: String,
    pub width: u32,
    pub height: u32,
    pub size_bytes: u64,
    pub method: Method,
    /// `(x, y, width, height)` of the cut-out in the photo's pixels.
    pub source_box: [u32; 4],
}

/// What the `.json` beside a cut-out says.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
enum Record {
    Made(Stored),
    Refused(Refusal),
}

/// Why [`cutout_of`] has no cut-out.
#[derive(Debug, thiserror::Error)]
pub enum CutoutError {
    /// No cut-out can be made of this photo ([`Refusal`] says why).
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The photo's bytes do not decode (or are not a PNG, JPEG or WebP).
    #[error(transparent)]
    Imaging(#[from] ImagingError),
    /// The blob store failed; retry.
    #[error("the blob store failed: {0}")]
    Blob(#[from] crate::Error),
    /// Encoding the PNG failed, or the blocking task ended abnormally (a bug).
    #[error("making the cut-out failed: {0}")]
    Internal(String),
}

/// The SHA-256 of `bytes` in lower-case hex.
pub fn content_hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn record_key(hash: &str) -> String {
    format!("{FOLDER}/{hash}.json")
}

/// The stored cut-out of a photo with content hash `hash`, if one was made: `Ok(None)`
/// when none was made yet, `Err(Refused)` when one was tried and refused.
///
/// # Errors
/// [`CutoutError::Refused`] for a kept refusal; [`CutoutError::Blob`] when the store fails.
pub async fn lookup(blobs: &dyn BlobStore, hash: &str) -> Result<Option<Stored>, CutoutError> {
    let Some(bytes) = blobs.get(&record_key(hash)).await? else {
        return Ok(None);
    };
    match serde_json::from_slice::<Record>(&bytes) {
        Ok(Record::Made(stored)) => Ok(Some(stored)),
        Ok(Record::Refused(why)) => Err(CutoutError::Refused(why)),
        // A record this build cannot read is made again.
        Err(_) => Ok(None),
    }
}

/// The cut-out of the photo `bytes`: the stored one (`true`), or made now and stored
/// (`false`). Decoding goes through the process-wide decode budget ([`imaging`]); the cut
/// runs on a blocking thread.
///
/// # Errors
/// [`CutoutError::Refused`] when no cut-out can be made (kept for next time when every
/// path was tried); [`CutoutError::Imaging`] for bytes that are not an image;
/// [`CutoutError::Blob`] and [`CutoutError::Internal`] otherwise.
pub async fn cutout_of(
    blobs: &dyn BlobStore,
    cutter: &Arc<Cutter>,
    bytes: Bytes,
) -> Result<(Stored, bool), CutoutError> {
    let hash = content_hash(&bytes);
    if let Some(stored) = lookup(blobs, &hash).await? {
        return Ok((stored, true));
    }
    let worker = cutter.clone();
    let made = imaging::with_decoded(bytes, move |_, photo| {
        worker.cut(&photo).map(|c| {
            let png = encode_png(&c.image);
            (c, png)
        })
    })
    .await?;
    let (cutout, png) = match made {
        Ok(made) => made,
        Err(why) => {
            let final_answer = cutter.has_model() && !matches!(why, Refusal::Model(_));
            if final_answer {
                let record = serde_json::to_vec(&Record::Refused(why.clone()))
                    .map_err(|e| CutoutError::Internal(e.to_string()))?;
                blobs.put(&record_key(&hash), Bytes::from(record)).await?;
            }
            return Err(why.into());
        }
    };
    let png = png.map_err(CutoutError::Internal)?;
    let stored = Stored {
        key: format!("{FOLDER}/{hash}.png"),
        width: cutout.image.width(),
        height: cutout.image.height(),
        size_bytes: png.len() as u64,
        method: cutout.method,
        source_box: cutout.source_box,
    };
    // The PNG first: a record is only ever written beside a complete cut-out.
    blobs.put(&stored.key, Bytes::from(png)).await?;
    let record = serde_json::to_vec(&Record::Made(stored.clone()))
        .map_err(|e| CutoutError::Internal(e.to_string()))?;
    blobs.put(&record_key(&hash), Bytes::from(record)).await?;
    Ok((stored, false))
}
