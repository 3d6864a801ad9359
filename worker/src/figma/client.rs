//! Figma's REST API, the calls an import makes: `GET /v1/files/:key/nodes` (the frame, with
//! `geometry=paths`), `GET /v1/files/:key/images` (image fills), `GET /v1/images/:key`
//! (Figma's renders, PNG or SVG), and the downloads of the URLs those answer with.
//!
//! Every request goes through the renderer's [`HttpFetcher`], so through the one address
//! policy (`renderer::address`): the API base URL is operator configuration
//! (`--figma-api-url`), yet it and every download URL Figma answers with are dialled only
//! when public, unless the operator allows private addresses (`--allow-private-urls`, for
//! tests and air-gapped mirrors). The token travels in `X-Figma-Token` to the API base URL
//! only, never to download URLs, and never into an error message or a log line.
//!
//! Statuses become [`FigmaError`]s the job turns into the ad's error codes. A 429 is waited
//! out here, as Figma asks (`Retry-After` seconds, else 1, 2, 4 s), at most
//! [`RATE_LIMIT_RETRIES`] times and never longer than [`MAX_WAIT_SECS`] at once; beyond
//! that the job fails with `FIGMA_RATE_LIMITED` and the wait Figma asked for.

use std::time::Duration;

use adforge_renderer::{FetchLimits, HttpFetcher, ImageFetcher};
use serde_json::Value;

/// How many times a 429 is waited out before the job gives up.
pub const RATE_LIMIT_RETRIES: u32 = 3;
/// The longest single wait for a 429; a longer `Retry-After` fails the job at once.
pub const MAX_WAIT_SECS: u64 = 30;

/// Why a Figma call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FigmaError {
    /// 403: the token is invalid, expired, or has no access to the file.
    Forbidden(String),
    /// 404: no such file (or Figma hides it from this token).
    NotFound(String),
    /// 429 after the retries, with the wait Figma asked for.
    RateLimited {
        /// `Retry-After` of the last answer, seconds.
        retry_after: Option<u64>,
    },
    /// Another status; 5xx are worth retrying, 4xx are not.
    Status {
        /// The HTTP status.
        status: u16,
        /// Figma's `err` / `message`, if any.
        message: String,
    },
    /// The request did not complete (refused address, timeout, connection).
    Transport(String),
}

impl std::fmt::Display for FigmaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FigmaError::Forbidden(m) => write!(f, "Figma refused the token (403: {m})"),
            FigmaError::NotFound(m) => write!(f, "Figma has no such file (404: {m})"),
            FigmaError::RateLimited { retry_after } => match retry_after {
                Some(s) => write!(f, "Figma's rate limit: retry after {s} seconds"),
                None => write!(f, "Figma's rate limit was hit"),
            },
            FigmaError::Status { status, message } => {
                write!(f, "Figma answered {status}: {message}")
            }
            FigmaError::Transport(m) => write!(f, "Figma could not be reached: {m}"),
        }
    }
}

/// A client for one job: the base URL and the opened token.
pub struct FigmaClient {
    api: HttpFetcher,
    downloads: HttpFetcher,
    base: String,
    token: String,
}

// The token must never be printed.
impl std::fmt::Debug for FigmaClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FigmaClient")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

/// Encodes a query value (node ids carry `:` and `;`).
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b',' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

impl FigmaClient {
    /// A client of the API at `base` (`https://api.figma.com`) with `token`;
    /// `allow_private` is the operator's `--allow-private-urls`.
    pub fn new(base: &str, token: String, allow_private: bool) -> Self {
        let api = HttpFetcher::new(FetchLimits {
            // A frame's JSON with its vector paths can be large.
            max_bytes: 64 << 20,
            timeout: Duration::from_secs(60),
            allow_private,
        });
        let downloads = HttpFetcher::new(FetchLimits {
            max_bytes: 25 << 20,
            timeout: Duration::from_secs(30),
            allow_private,
        });
        FigmaClient {
            api,
            downloads,
            base: base.trim_end_matches('/').to_owned(),
            token,
        }
    }

    /// GETs `path` (`/v1/…?…`) of the API and parses the JSON; waits out 429s.
    ///
    /// # Errors
    /// [`FigmaError`].
    pub fn get_json(&self, path: &str) -> Result<Value, FigmaError> {
        let url = format!("{}{path}", self.base);
        let mut waited = 0;
        loop {
            let reply = self
                .api
                .get_with_headers(&url, &[("X-Figma-Token", &self.token)])
                .map_err(|e| FigmaError::Transport(scrub(&e, &self.token)))?;
            let message = || error_message(&reply.body, &self.token);
            match reply.status {
                200..=299 => {
                    return serde_json::from_slice(&reply.body).map_err(|e| FigmaError::Status {
                        status: reply.status,
                        message: format!("the answer is not JSON ({e})"),
                    });
                }
                403 | 401 => return Err(FigmaError::Forbidden(message())),
                404 => return Err(FigmaError::NotFound(message())),
                429 => {
                    let wait = reply.retry_after.unwrap_or(1 << waited);
                    if waited >= RATE_LIMIT_RETRIES || wait > MAX_WAIT_SECS {
                        return Err(FigmaError::RateLimited {
                            retry_after: reply.retry_after,
                        });
                    }
                    tracing::info!(wait_secs = wait, path = %path_only(path), "Figma's rate limit: waiting as asked");
                    std::thread::sleep(Duration::from_secs(wait));
                    waited += 1;
                }
                status => {
                    return Err(FigmaError::Status {
                        status,
                        message: message(),
                    });
                }
            }
        }
    }

    /// Downloads a URL Figma answered with (an image fill or a render on Figma's storage),
    /// without the token.
    ///
    /// # Errors
    /// The refusal, transport error or HTTP status, in words.
    pub fn download(&self, url: &str) -> Result<Vec<u8>, String> {
        self.downloads
            .fetch(url)
            .map_err(|e| scrub(&e, &self.token))
    }
}

/// The path of a request without its query, for logs.
fn path_only(path: &str) -> &str {
    path.split('?').next().unwrap_or(path)
}

/// Figma's error text (`err` or `message`), shortened and without the token.
fn error_message(body: &[u8], token: &str) -> String {
    let text = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| {
            v.get("err")
                .or_else(|| v.get("message"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| String::from_utf8_lossy(body).chars().take(200).collect());
    scrub(&text.chars().take(300).collect::<String>(), token)
}

/// Removes the token from a message (a server could echo it back).
fn scrub(message: &str, token: &str) -> String {
    if token.len() >= 4 {
        message.replace(token, "[token]")
    } else {
        message.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ids_are_encoded_for_queries() {
        assert_eq!(encode("1:2"), "1%3A2");
        assert_eq!(encode("I1:2;3:4,5:6"), "I1%3A2%3B3%3A4,5%3A6");
    }

    #[test]
    fn the_base_url_and_downloads_go_through_the_address_policy() {
        // Operator configuration, still dialled only when public unless private addresses
        // are allowed: no connection is attempted to these.
        let client = FigmaClient::new("http://127.0.0.1:9", "figd_x-token".into(), false);
        let e = client.get_json("/v1/files/K/nodes?ids=1%3A2").unwrap_err();
        assert!(
            matches!(&e, FigmaError::Transport(m) if m.contains(adforge_renderer::address::REFUSED)),
            "{e:?}"
        );
        assert!(matches!(
            crate::figma::sync::job_error(e, "K"),
            crate::runner::JobError::Abort { .. }
        ));
        let d = client.download("http://10.1.2.3/image.png").unwrap_err();
        assert!(d.contains(adforge_renderer::address::REFUSED), "{d}");
    }

    #[test]
    fn error_texts_never_carry_the_token() {
        let body = br#"{"status":403,"err":"Invalid token figd_SECRET123"}"#;
        assert_eq!(
            error_message(body, "figd_SECRET123"),
            "Invalid token [token]"
        );
        let client = FigmaClient::new("https://api.figma.com/", "figd_SECRET123".into(), false);
        assert!(!format!("{client:?}").contains("SECRET"));
    }
}
