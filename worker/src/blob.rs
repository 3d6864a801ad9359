//! Blob storage behind a small trait, chosen once at start-up. The default keeps blobs in
//! a local folder that the API serves under `/files/...`; object storage comes later
//! behind the same trait. Keys are `/`-separated paths of `[A-Za-z0-9._-]` segments.
//!
//! It lives here, below the API, because workers write their outputs (rendered ads,
//! thumbnails) to the same store the API serves from.

use std::path::PathBuf;

use bytes::Bytes;
use futures_util::future::BoxFuture;

/// Where blobs live.
pub trait BlobStore: Send + Sync {
    /// Stores `bytes` under `key`, replacing what was there (writes are atomic).
    fn put<'a>(&'a self, key: &'a str, bytes: Bytes) -> BoxFuture<'a, Result<(), crate::Error>>;
    /// The blob, or `None` when there is none.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Bytes>, crate::Error>>;
    /// The absolute public URL a client fetches the blob from.
    fn url(&self, key: &str) -> String;
}

/// Checks a key is a safe relative path.
pub fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 512
        && key.split('/').all(|seg| {
            !seg.is_empty()
                && seg != "."
                && seg != ".."
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
        })
}

/// Content type by file extension, for serving.
pub fn content_type_for(key: &str) -> &'static str {
    match key.rsplit('.').next().unwrap_or("") {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "json" => "application/json",
        _ => "application/octet-stream",
    }
}

/// Blobs in a local folder, served by this API at `{public_url}/files/{key}`.
pub struct LocalBlobStore {
    root: PathBuf,
    public_url: String,
}

impl LocalBlobStore {
    pub fn new(root: PathBuf, public_url: &str) -> Self {
        Self {
            root,
            public_url: public_url.trim_end_matches('/').to_string(),
        }
    }

    fn path(&self, key: &str) -> Result<PathBuf, crate::Error> {
        if valid_key(key) {
            Ok(self.root.join(key))
        } else {
            Err(crate::Error::InvalidBlobKey(key.to_string()))
        }
    }
}

impl BlobStore for LocalBlobStore {
    fn put<'a>(&'a self, key: &'a str, bytes: Bytes) -> BoxFuture<'a, Result<(), crate::Error>> {
        Box::pin(async move {
            let path = self.path(key)?;
            if let Some(dir) = path.parent() {
                tokio::fs::create_dir_all(dir)
                    .await
                    .map_err(crate::Error::Blob)?;
            }
            let tmp = path.with_extension(format!("tmp-{}", uuid::Uuid::new_v4().simple()));
            tokio::fs::write(&tmp, &bytes)
                .await
                .map_err(crate::Error::Blob)?;
            tokio::fs::rename(&tmp, &path)
                .await
                .map_err(crate::Error::Blob)?;
            Ok(())
        })
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Bytes>, crate::Error>> {
        Box::pin(async move {
            let path = self.path(key)?;
            match tokio::fs::read(&path).await {
                Ok(b) => Ok(Some(Bytes::from(b))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(crate::Error::Blob(e)),
            }
        })
    }

    fn url(&self, key: &str) -> String {
        format!("{}/files/{key}", self.public_url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_checked() {
        assert!(valid_key("images/img_1/original.png"));
        for bad in ["", "../x", "a//b", "a/./b", "/abs", "a\\b", "sp ace"] {
            assert!(!valid_key(bad), "{bad}");
        }
        assert_eq!(content_type_for("a/b.webp"), "image/webp");
    }
}
