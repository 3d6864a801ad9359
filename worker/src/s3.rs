//! Blobs in an S3-compatible bucket (AWS S3, MinIO, Ceph RGW, R2, moto…) through the
//! `object_store` crate, behind [`BlobStore`]: render nodes on other machines write where
//! the API reads, with no shared disk.
//!
//! Key `k` is the object `{prefix}/k`. Objects are written whole (one PUT; ads and uploads
//! are at most a few MiB) with their content type and the same long-lived `Cache-Control`
//! the API sends, so a bucket or CDN serving them directly answers like `/files/`.

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use object_store::{
    Attribute, Attributes, ObjectStore, ObjectStoreExt, PutOptions, PutPayload, RetryConfig,
};

use crate::blob::{BlobStore, BlobStream, CACHE_CONTROL, content_type_for, valid_key};

/// The `object_store` crate this store is built on (tests read objects' attributes with it).
pub use object_store;

/// Where the bucket is and how to reach it. Credentials and anything not set here come from
/// the usual `AWS_*` variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
/// `AWS_SESSION_TOKEN`, `AWS_DEFAULT_REGION`, `AWS_ENDPOINT`, ...).
#[derive(Debug, Clone, Default)]
pub struct S3Options {
    /// `s3://bucket` or `s3://bucket/prefix`.
    pub url: String,
    /// An S3-compatible server's base URL (`http://127.0.0.1:9000`); requests then use
    /// path-style addressing.
    pub endpoint: Option<String>,
    /// The bucket's region (default: `AWS_DEFAULT_REGION`, else `us-east-1`).
    pub region: Option<String>,
    /// Allow a plain-http endpoint (local S3-compatible servers).
    pub allow_http: bool,
    /// Static credentials, overriding `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`.
    pub credentials: Option<(String, String)>,
}

/// Blobs in a bucket; URLs are `{files_base}/{key}`.
pub struct S3BlobStore {
    store: AmazonS3,
    /// The object name prefix, without a trailing `/` (may be empty).
    prefix: String,
    files_base: String,
    /// `s3://bucket/prefix`, for messages.
    url: String,
}

/// Splits `s3://bucket/prefix/` into bucket and prefix.
fn parse_url(url: &str) -> Result<(String, String), crate::Error> {
    let rest = url.strip_prefix("s3://").ok_or_else(|| {
        crate::Error::Blob(std::io::Error::other(format!(
            "blob URL `{url}` must start with s3://"
        )))
    })?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let prefix = prefix.trim_matches('/');
    if bucket.is_empty() || (!prefix.is_empty() && !valid_key(prefix)) {
        return Err(crate::Error::Blob(std::io::Error::other(format!(
            "blob URL `{url}` must be s3://BUCKET or s3://BUCKET/PREFIX with a prefix of [A-Za-z0-9._-] segments"
        ))));
    }
    Ok((bucket.to_owned(), prefix.to_owned()))
}

impl S3BlobStore {
    /// Configures the client (no request is made: [`BlobStore::check`] tells whether the
    /// bucket answers).
    ///
    /// # Errors
    /// A malformed URL or option.
    pub fn new(options: &S3Options, files_base: &str) -> Result<Self, crate::Error> {
        let (bucket, prefix) = parse_url(&options.url)?;
        let mut builder = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .with_retry(RetryConfig {
                max_retries: 3,
                retry_timeout: std::time::Duration::from_secs(30),
                ..RetryConfig::default()
            });
        if let Some(endpoint) = &options.endpoint {
            builder = builder.with_endpoint(endpoint.trim_end_matches('/'));
        }
        if let Some(region) = &options.region {
            builder = builder.with_region(region);
        }
        if options.allow_http {
            builder = builder.with_allow_http(true);
        }
        if let Some((key_id, secret)) = &options.credentials {
            builder = builder
                .with_access_key_id(key_id)
                .with_secret_access_key(secret);
        }
        let store = builder.build().map_err(blob_error)?;
        Ok(Self {
            store,
            prefix,
            files_base: files_base.trim_end_matches('/').to_owned(),
            url: options.url.clone(),
        })
    }

    fn path(&self, key: &str) -> Result<Path, crate::Error> {
        if !valid_key(key) {
            return Err(crate::Error::InvalidBlobKey(key.to_owned()));
        }
        Ok(if self.prefix.is_empty() {
            Path::from(key)
        } else {
            Path::from(format!("{}/{key}", self.prefix))
        })
    }

    /// The `s3://…` URL this store was made from.
    pub fn location(&self) -> &str {
        &self.url
    }
}

fn blob_error(e: object_store::Error) -> crate::Error {
    crate::Error::Blob(std::io::Error::other(e))
}

impl BlobStore for S3BlobStore {
    fn put<'a>(&'a self, key: &'a str, bytes: Bytes) -> BoxFuture<'a, Result<(), crate::Error>> {
        Box::pin(async move {
            let path = self.path(key)?;
            let attributes = Attributes::from_iter([
                (Attribute::ContentType, content_type_for(key)),
                (Attribute::CacheControl, CACHE_CONTROL),
            ]);
            let options = PutOptions {
                attributes,
                ..PutOptions::default()
            };
            self.store
                .put_opts(&path, PutPayload::from_bytes(bytes), options)
                .await
                .map_err(blob_error)?;
            Ok(())
        })
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Bytes>, crate::Error>> {
        Box::pin(async move {
            let Ok(path) = self.path(key) else {
                return Ok(None);
            };
            match self.store.get(&path).await {
                Ok(result) => Ok(Some(result.bytes().await.map_err(blob_error)?)),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(blob_error(e)),
            }
        })
    }

    fn open<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<BlobStream>, crate::Error>> {
        Box::pin(async move {
            let Ok(path) = self.path(key) else {
                return Ok(None);
            };
            match self.store.get(&path).await {
                Ok(result) => Ok(Some(BlobStream {
                    len: result.meta.size,
                    chunks: result
                        .into_stream()
                        .map(|chunk| chunk.map_err(std::io::Error::other))
                        .boxed(),
                })),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(blob_error(e)),
            }
        })
    }

    fn exists<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, crate::Error>> {
        Box::pin(async move {
            let Ok(path) = self.path(key) else {
                return Ok(false);
            };
            match self.store.head(&path).await {
                Ok(_) => Ok(true),
                Err(object_store::Error::NotFound { .. }) => Ok(false),
                Err(e) => Err(blob_error(e)),
            }
        })
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), crate::Error>> {
        Box::pin(async move {
            let path = self.path(key)?;
            match self.store.delete(&path).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(blob_error(e)),
            }
        })
    }

    fn list<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<String>, crate::Error>> {
        Box::pin(async move {
            let prefix = prefix.trim_end_matches('/');
            let folder = match (self.prefix.is_empty(), prefix.is_empty()) {
                (true, true) => None,
                (false, true) => Some(Path::from(self.prefix.as_str())),
                _ => Some(self.path(prefix)?),
            };
            let strip = if self.prefix.is_empty() {
                String::new()
            } else {
                format!("{}/", self.prefix)
            };
            let mut keys = Vec::new();
            let mut listing = self.store.list(folder.as_ref());
            while let Some(meta) = listing.next().await {
                let meta = meta.map_err(blob_error)?;
                if let Some(key) = meta.location.as_ref().strip_prefix(strip.as_str()) {
                    keys.push(key.to_owned());
                }
            }
            Ok(keys)
        })
    }

    fn url(&self, key: &str) -> String {
        format!("{}/{key}", self.files_base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_bucket_and_prefix() {
        assert_eq!(
            parse_url("s3://ads/prod/blobs/").unwrap(),
            ("ads".into(), "prod/blobs".into())
        );
        assert_eq!(parse_url("s3://ads").unwrap(), ("ads".into(), "".into()));
        for bad in [
            "ads/x",
            "s3://",
            "s3:///x",
            "s3://ads/a//b",
            "s3://ads/../x",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }
}
