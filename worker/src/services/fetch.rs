//! Fetching a job's images once: an ad's reference, product image and logos, a synced
//! frame's images, go through the renderer's [`HttpFetcher`] (public addresses only unless
//! the operator allows private ones, size and time limits), and the bytes are kept for the
//! render so the renderer does not download them a second time.
//!
//! Failures are sorted for the runner: a 4xx answer, a private address or bytes that are not
//! an image can never succeed (`abort`); timeouts, refused connections and 5xx answers may
//! (`retry`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use adforge_renderer::{FetchLimits, HttpFetcher, ImageFetcher};

use crate::blob::{BlobStore, OwnFile};
use crate::runner::JobError;

/// The renderer's fetcher with a per-job shelf of bytes already downloaded.
pub struct ShelfFetcher {
    http: HttpFetcher,
    shelf: Mutex<HashMap<String, Arc<Vec<u8>>>>,
    /// URLs under this prefix are our own blobs (`{public_url}/files/`), read from the
    /// store: no HTTP round trip, and no refusal by the public-address guard when the API
    /// itself runs on a loopback address (the embedded default).
    own_files: Option<(String, Arc<dyn BlobStore>)>,
    /// The runtime the store's futures run on, for calls from threads outside it (the
    /// renderer loads images on scoped threads of its own, which have no runtime context).
    runtime: Option<tokio::runtime::Handle>,
}

impl ShelfFetcher {
    /// A fetcher with these limits.
    pub fn new(limits: FetchLimits) -> Self {
        ShelfFetcher {
            http: HttpFetcher::new(limits),
            shelf: Mutex::new(HashMap::new()),
            own_files: None,
            runtime: None,
        }
    }

    /// Reads URLs of `blobs` (those starting with `blobs.url("")`) from the store itself.
    /// Call it inside a tokio runtime (it keeps that runtime's handle for reads made from
    /// threads outside it).
    pub fn with_own_files(mut self, blobs: Arc<dyn BlobStore>) -> Self {
        self.own_files = Some((blobs.url(""), blobs));
        self.runtime = tokio::runtime::Handle::try_current().ok();
        self
    }

    /// True when the bytes of `url` are on the shelf (fetched for the job being run).
    pub fn has(&self, url: &str) -> bool {
        self.shelf
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(url)
    }

    /// The bytes behind `url`: from the blob store for our own files, else over http(s).
    /// Runs on blocking threads (it blocks on the store's future for own files). An own
    /// file is never fetched over HTTP: the public-address guard would refuse a loopback
    /// API, and the render would silently lose the image (issue 14, item 5).
    fn load(&self, url: &str) -> Result<Vec<u8>, String> {
        if let Some((_, blobs)) = &self.own_files {
            let key = match blobs.own_file(url) {
                OwnFile::Foreign => return self.http.fetch(url),
                OwnFile::Invalid(why) => return Err(format!("own file: the URL {why}")),
                OwnFile::Key(key) => key,
            };
            let Some(handle) = tokio::runtime::Handle::try_current()
                .ok()
                .or_else(|| self.runtime.clone())
            else {
                return Err("io: no runtime to read the blob store from".to_owned());
            };
            return match handle.block_on(blobs.get(&key)) {
                Ok(Some(bytes)) => Ok(bytes.to_vec()),
                Ok(None) => Err(format!(
                    "http status: 404 (no file {key} in the blob store)"
                )),
                Err(e) => Err(format!("io: {e}")),
            };
        }
        self.http.fetch(url)
    }

    /// Downloads `url` (blocking) and keeps the bytes on the shelf for the render.
    ///
    /// # Errors
    /// The fetcher's message.
    pub fn fetch_and_keep(&self, url: &str) -> Result<Arc<Vec<u8>>, String> {
        let bytes = Arc::new(self.load(url)?);
        self.shelf
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(url.to_owned(), bytes.clone());
        Ok(bytes)
    }

    /// Puts bytes the job already has (a file it just stored) on the shelf under `url`, so
    /// the render does not read them back.
    pub fn keep(&self, url: &str, bytes: Vec<u8>) {
        self.shelf
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(url.to_owned(), Arc::new(bytes));
    }

    /// Forgets the bytes of `urls` (the job that fetched them is done).
    pub fn release(&self, urls: &[String]) {
        let mut shelf = self.shelf.lock().unwrap_or_else(PoisonError::into_inner);
        for u in urls {
            shelf.remove(u);
        }
    }
}

impl ImageFetcher for ShelfFetcher {
    fn fetch(&self, url: &str) -> Result<Vec<u8>, String> {
        let kept = self
            .shelf
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(url)
            .cloned();
        match kept {
            Some(bytes) => Ok(bytes.as_ref().clone()),
            None => self.load(url),
        }
    }
}

/// Sorts a fetch failure of `what` (e.g. "reference image") at `url` into retry or abort.
pub fn classify(what: &str, url: &str, message: &str) -> JobError {
    let status = message
        .split("http status: ")
        .nth(1)
        .and_then(|s| s.get(..3))
        .and_then(|s| s.parse::<u16>().ok());
    match status {
        Some(408 | 429) => JobError::retry(format!("{what} {url}: HTTP {}", status.unwrap_or(0))),
        Some(code @ 400..=499) => JobError::abort(format!(
            "the {what} at {url} could not be fetched (HTTP {code}); use a publicly reachable image URL"
        )),
        Some(code) => JobError::retry(format!("{what} {url}: HTTP {code}")),
        // A name the resolver says does not exist will not exist on the next attempt (a
        // temporary failure, EAI_AGAIN, retries below).
        None if message.contains(adforge_renderer::image::fetch::UNRESOLVED)
            && !message.contains("Temporary failure") =>
        {
            JobError::abort(format!(
                "the {what} at {url} cannot be fetched: {}; use a URL whose host exists",
                message.trim_start_matches("io: ")
            ))
        }
        None if message.contains(adforge_renderer::address::REFUSED)
            || message.starts_with("own file:")
            || message.contains("is not a valid URL")
            || message.contains("has no host")
            || message.contains("only http and https")
            || message.contains("larger than")
            || message.contains("limit") =>
        {
            JobError::abort(format!("the {what} at {url} cannot be used: {message}"))
        }
        None => JobError::retry(format!("{what} {url}: {message}")),
    }
}

/// True when `bytes` start like an SVG document.
pub fn looks_svg(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(512)];
    head.windows(4).any(|w| w == b"<svg") || head.starts_with(b"<?xml")
}

/// Checks that `bytes` are an image the renderer can draw.
///
/// # Errors
/// An abort naming `what` and `url` when they are not.
pub fn check_image(what: &str, url: &str, bytes: &[u8]) -> Result<(), JobError> {
    image_size(what, url, bytes).map(|_| ())
}

/// The pixel size of the raster image in `bytes`, read from its header; `None` for an SVG
/// (rasterised at the size it is drawn, so bounded by the canvas).
///
/// # Errors
/// An abort naming `what` and `url` when the bytes are no image the renderer can draw.
pub fn image_size(what: &str, url: &str, bytes: &[u8]) -> Result<Option<(u32, u32)>, JobError> {
    if looks_svg(bytes) {
        return Ok(None);
    }
    image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .ok()
        .and_then(|r| r.into_dimensions().ok())
        .map(Some)
        .ok_or_else(|| {
            JobError::abort(format!(
                "the {what} at {url} is not a PNG, JPEG, WebP or SVG image"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_errors_abort_and_server_errors_retry() {
        let abort = |m: &str| matches!(classify("x", "u", m), JobError::Abort { .. });
        assert!(abort("http status: 404"));
        assert!(abort(
            "io: every address the host resolves to is not a public address (loopback, private, link-local or another non-public block)"
        ));
        assert!(abort(
            "the host `[::127.0.0.1]`: ::7f00:1 is in ::/96 (IPv4-compatible Address (deprecated)), not a public address; use a public host"
        ));
        assert!(abort(
            "own file: the URL has a query (`?…`); this server's files are addressed by their path alone: remove it"
        ));
        assert!(abort(
            "`http://a b/` is not a valid URL (invalid uri character)"
        ));
        assert!(!abort("http status: 503"));
        assert!(!abort("http status: 429"));
        assert!(!abort("io: Connection refused"));
        let unresolved = "io: the host does not resolve: `no-such-host.invalid` (failed to lookup address information: Name or service not known)";
        assert!(abort(unresolved));
        let JobError::Abort { message, .. } =
            classify("image", "https://no-such-host.invalid/x.png", unresolved)
        else {
            unreachable!()
        };
        assert!(
            message.contains("https://no-such-host.invalid/x.png")
                && message.contains("does not resolve: `no-such-host.invalid`")
                && message.contains("Name or service not known"),
            "{message}"
        );
        assert!(!abort(
            "io: the host does not resolve: `example.com` (failed to lookup address information: Temporary failure in name resolution)"
        ));
    }
}
