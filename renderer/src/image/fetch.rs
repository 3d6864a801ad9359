//! Fetching image bytes: http(s) with a public-address guard, size and time limits, and
//! (for the command line) local files relative to the tree file.

use std::path::PathBuf;
use std::time::Duration;

use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::DefaultConnector;

/// Where image bytes come from. Implement it to serve images from a blob store or a cache.
pub trait ImageFetcher: Send + Sync {
    /// Returns the bytes behind `url`, or a reason why not (it goes into the report).
    fn fetch(&self, url: &str) -> Result<Vec<u8>, String>;
}

/// Limits for [`HttpFetcher`].
#[derive(Debug, Clone)]
pub struct FetchLimits {
    /// Largest accepted body (bytes). Default 25 MiB.
    pub max_bytes: u64,
    /// Time limit for one whole request. Default 10 s.
    pub timeout: Duration,
    /// Allow loopback / private / link-local / metadata addresses (tests, local demos).
    pub allow_private: bool,
}

impl Default for FetchLimits {
    fn default() -> Self {
        Self {
            max_bytes: 25 << 20,
            timeout: Duration::from_secs(10),
            allow_private: false,
        }
    }
}

/// The default fetcher: http(s) URLs through ureq, plus local paths when `base_dir` is set.
#[derive(Debug)]
pub struct HttpFetcher {
    agent: ureq::Agent,
    limits: FetchLimits,
    base_dir: Option<PathBuf>,
}

impl HttpFetcher {
    /// A fetcher for http(s) URLs only.
    pub fn new(limits: FetchLimits) -> Self {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(limits.timeout))
            .max_redirects(3)
            .http_status_as_error(true)
            .user_agent("adforge-renderer")
            .build();
        let resolver = GuardedResolver {
            allow_private: limits.allow_private,
        };
        let agent = ureq::Agent::with_parts(config, DefaultConnector::new(), resolver);
        Self {
            agent,
            limits,
            base_dir: None,
        }
    }

    /// Also accept local file paths (absolute, `file://`, or relative to `dir`). Only for the
    /// command line: a server must never read local files named by users.
    pub fn with_local_files(mut self, dir: PathBuf) -> Self {
        self.base_dir = Some(dir);
        self
    }
}

impl HttpFetcher {
    /// POSTs the JSON `body` to the http(s) `url` through the same address policy and
    /// limits (size, time, redirects) as image fetches, with `bearer` as an
    /// `Authorization: Bearer` token when given, and returns the response body. For the
    /// worker's calls to an operator's services (the copy model's chat-completions
    /// endpoint).
    ///
    /// # Errors
    /// The refusal, the transport error or the HTTP status, in words.
    pub fn post_json(&self, url: &str, body: &str, bearer: Option<&str>) -> Result<String, String> {
        let lower = url.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Err("only http and https URLs are accepted".to_owned());
        }
        check_url(url, self.limits.allow_private)?;
        let mut req = self
            .agent
            .post(url)
            .header("content-type", "application/json");
        if let Some(key) = bearer {
            req = req.header("authorization", &format!("Bearer {key}"));
        }
        let mut resp = req.send(body).map_err(|e| e.to_string())?;
        resp.body_mut()
            .with_config()
            .limit(self.limits.max_bytes)
            .read_to_string()
            .map_err(|e| e.to_string())
    }
}

/// What [`HttpFetcher::get_with_headers`] received: any status, with the body and the
/// `Retry-After` header (seconds) of a 429 or 503.
#[derive(Debug, Clone)]
pub struct HttpReply {
    /// The HTTP status code.
    pub status: u16,
    /// `Retry-After` in whole seconds, when the server sent a number.
    pub retry_after: Option<u64>,
    /// The body, at most [`FetchLimits::max_bytes`].
    pub body: Vec<u8>,
}

impl HttpFetcher {
    /// GETs the http(s) `url` through the same address policy and limits (size, time,
    /// redirects) as image fetches, sending `headers` (a third-party API's token header:
    /// it never appears in an error, which names only the URL), and returns the reply
    /// whatever its status, so the caller can tell a 403 from a 429. For the worker's calls
    /// to an operator-configured third-party API (Figma).
    ///
    /// # Errors
    /// The refusal or the transport error, in words.
    pub fn get_with_headers(
        &self,
        url: &str,
        headers: &[(&str, &str)],
    ) -> Result<HttpReply, String> {
        let lower = url.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Err("only http and https URLs are accepted".to_owned());
        }
        check_url(url, self.limits.allow_private)?;
        let mut req = self.agent.get(url);
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let mut resp = req
            .config()
            .http_status_as_error(false)
            .build()
            .call()
            .map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let body = resp
            .body_mut()
            .with_config()
            .limit(self.limits.max_bytes)
            .read_to_vec()
            .map_err(|e| match e {
                ureq::Error::BodyExceedsLimit(n) => too_large(n),
                e => e.to_string(),
            })?;
        Ok(HttpReply {
            status,
            retry_after,
            body,
        })
    }
}

impl ImageFetcher for HttpFetcher {
    fn fetch(&self, url: &str) -> Result<Vec<u8>, String> {
        let lower = url.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            check_url(url, self.limits.allow_private)?;
            let mut resp = self.agent.get(url).call().map_err(|e| e.to_string())?;
            return resp
                .body_mut()
                .with_config()
                .limit(self.limits.max_bytes)
                .read_to_vec()
                .map_err(|e| match e {
                    ureq::Error::BodyExceedsLimit(n) => too_large(n),
                    e => e.to_string(),
                });
        }
        let Some(base) = &self.base_dir else {
            return Err("only http and https URLs are accepted".to_owned());
        };
        let path = url.strip_prefix("file://").unwrap_or(url);
        let path = base.join(path);
        let meta = std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if meta.len() > self.limits.max_bytes {
            return Err(too_large(self.limits.max_bytes));
        }
        std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// How every fetch failure for an image over [`FetchLimits::max_bytes`] begins, so callers
/// can tell it from an unreachable host (previews answer it with a 400).
pub const TOO_LARGE: &str = "the image is larger than the limit of ";

/// The failure message for an image over `limit` bytes ([`TOO_LARGE`]).
pub fn too_large(limit: u64) -> String {
    format!("{TOO_LARGE}{limit} bytes")
}

/// Checks, without touching the network, that [`HttpFetcher`] may fetch `url`: the one
/// address policy's [`crate::address::check_url`], re-exported where fetching lives.
pub use crate::address::check_url;

/// How every fetch failure for a host the system resolver cannot resolve begins (after
/// ureq's `io: `), so callers can tell it from a refused connection: the message goes on
/// with the host and the resolver's reason, e.g. "`no-such-host.invalid` (failed to lookup
/// address information: Name or service not known)".
pub const UNRESOLVED: &str = "the host does not resolve: ";

/// A resolver failure that names the host ([`UNRESOLVED`]); a timeout stays a timeout.
fn unresolved(uri: &ureq::http::Uri, e: ureq::Error) -> ureq::Error {
    let host = uri.host().unwrap_or("");
    let why = match e {
        ureq::Error::Io(io) => io.to_string(),
        ureq::Error::HostNotFound => "no address".to_owned(),
        other => return other,
    };
    ureq::Error::Io(std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!("{UNRESOLVED}`{host}` ({why})"),
    ))
}

/// Resolves with the system resolver, then drops non-public addresses, so a name that
/// resolves to a private address cannot be fetched (also after a redirect).
#[derive(Debug)]
struct GuardedResolver {
    allow_private: bool,
}

impl Resolver for GuardedResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let all = DefaultResolver::default()
            .resolve(uri, config, timeout)
            .map_err(|e| unresolved(uri, e))?;
        if self.allow_private {
            return Ok(all);
        }
        let mut out = self.empty();
        for a in all.iter() {
            if crate::address::is_public(a.ip()) {
                out.push(*a);
            }
        }
        if out.is_empty() {
            return Err(ureq::Error::Io(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "every address the host resolves to is not a public address (loopback, private, link-local or another non-public block)",
            )));
        }
        Ok(out)
    }
}
