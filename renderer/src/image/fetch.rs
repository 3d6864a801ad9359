//! Fetching image bytes: http(s) with a public-address guard, size and time limits, and
//! (for the command line) local files relative to the tree file.

use std::net::IpAddr;
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
                .map_err(|e| e.to_string());
        }
        let Some(base) = &self.base_dir else {
            return Err("only http and https URLs are accepted".to_owned());
        };
        let path = url.strip_prefix("file://").unwrap_or(url);
        let path = base.join(path);
        let meta = std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if meta.len() > self.limits.max_bytes {
            return Err(format!(
                "{} is larger than {} bytes",
                path.display(),
                self.limits.max_bytes
            ));
        }
        std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// Checks, without touching the network, that [`HttpFetcher`] may fetch `url`: an http(s)
/// URL whose host is not `localhost` and not a literal private, loopback or link-local
/// address ([`is_private`]) in any form the system resolver reads as an address: dotted
/// (`127.0.0.1`), one number (`2130706433`), octal (`0177.0.0.1`), hex (`0x7f000001`),
/// shortened (`127.1`), IPv6 (`[::1]`) and IPv4-mapped IPv6 (`[::ffff:127.0.0.1]`). Host
/// names are resolved and their addresses checked when fetched (the same guard, after DNS).
/// With `allow_private` only the scheme and the URL's syntax are checked.
///
/// This is the guard's check for what can be decided from the URL alone: a server that
/// validates URLs before a fetch (an edited tree) calls it so that it accepts no URL the
/// fetch would refuse for its address.
///
/// # Errors
/// Why the URL is refused, naming the address; private refusals contain "private".
pub fn check_url(url: &str, allow_private: bool) -> Result<(), String> {
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err("only http and https URLs are accepted".to_owned());
    }
    let uri: ureq::http::Uri = url
        .parse()
        .map_err(|e| format!("`{url}` is not a valid URL ({e})"))?;
    let Some(host) = uri.host().filter(|h| !h.is_empty()) else {
        return Err(format!("`{url}` has no host"));
    };
    if allow_private {
        return Ok(());
    }
    let refuse = |what: String| {
        Err(format!(
            "the host `{host}` is {what}, a private, loopback or link-local address; use a public host"
        ))
    };
    let ip = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        match v6.parse::<std::net::Ipv6Addr>() {
            Ok(ip) => IpAddr::V6(ip),
            Err(_) => return refuse("an IPv6 address with a zone or in an unknown form".into()),
        }
    } else if let Some(v4) = numeric_ipv4(host) {
        IpAddr::V4(v4)
    } else {
        let name = host.trim_end_matches('.').to_ascii_lowercase();
        if name == "localhost" || name.ends_with(".localhost") {
            return refuse("`localhost`".into());
        }
        return Ok(());
    };
    if is_private(ip) {
        return refuse(format!("{ip}"));
    }
    Ok(())
}

/// Reads `host` as an IPv4 address the way `inet_aton` (and so the system resolver) and
/// browsers do: one to four dot-separated parts, each decimal, octal (leading `0`) or hex
/// (`0x`), the last part filling the remaining bytes. `None` for anything else (a name).
fn numeric_ipv4(host: &str) -> Option<std::net::Ipv4Addr> {
    // Browsers allow one trailing dot (`127.0.0.1.`).
    let host = host.strip_suffix('.').unwrap_or(host);
    let parts: Vec<&str> = host.split('.').collect();
    if parts.len() > 4 {
        return None;
    }
    let mut nums = Vec::with_capacity(parts.len());
    for p in parts {
        nums.push(numeric_part(p)?);
    }
    let (last, init) = nums.split_last()?;
    if init.iter().any(|&n| n > 255) {
        return None;
    }
    let rest_bits = 8 * (4 - init.len() as u32);
    if *last >= 1u64 << rest_bits {
        return None;
    }
    let mut value = *last;
    for (i, n) in init.iter().enumerate() {
        value |= n << (24 - 8 * i as u32);
    }
    u32::try_from(value).ok().map(std::net::Ipv4Addr::from)
}

fn numeric_part(p: &str) -> Option<u64> {
    let (digits, radix) = if let Some(h) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
        if h.is_empty() {
            return Some(0);
        }
        (h, 16)
    } else if p.len() > 1 && p.starts_with('0') {
        (&p[1..], 8)
    } else {
        (p, 10)
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// True for addresses a server must not fetch from on a user's behalf.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local() // includes 169.254.169.254 (cloud metadata)
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64) // carrier-grade NAT
                || (o[0] == 198 && (o[1] & 0xfe) == 18) // benchmarking
                || o[0] >= 240
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_private(IpAddr::V4(v4));
            }
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link local
                || s[0] == 0xfd00 && s[1] == 0x0ec2 // AWS metadata (fd00:ec2::254)
        }
    }
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
        let all = DefaultResolver::default().resolve(uri, config, timeout)?;
        if self.allow_private {
            return Ok(all);
        }
        let mut out = self.empty();
        for a in all.iter() {
            if !is_private(a.ip()) {
                out.push(*a);
            }
        }
        if out.is_empty() {
            return Err(ureq::Error::Io(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "the host resolves only to private, loopback or link-local addresses",
            )));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_private_addresses_are_refused_in_every_form() {
        for bad in [
            "http://127.0.0.1/x.png",
            "http://2130706433/x.png",
            "http://2130706433:8080/x.png",
            "http://0177.0.0.1/x.png",
            "http://0x7f000001/x.png",
            "http://0x7f.0.0.1/x.png",
            "http://127.1/x.png",
            "http://127.0.0.1./x.png",
            "http://0/x.png",
            "http://169.254.169.254/latest",
            "http://[::1]/x.png",
            "http://[::ffff:127.0.0.1]/x.png",
            "http://user@2130706433/x.png",
            "http://LOCALHOST:80/x.png",
            "http://a.localhost/x.png",
            "http://10.1/x.png",
        ] {
            let e = check_url(bad, false).expect_err(bad);
            assert!(e.contains("private"), "{bad}: {e}");
            assert!(check_url(bad, true).is_ok(), "{bad} with private allowed");
        }
        for ok in [
            "https://example.com/x.png",
            "http://93.184.215.14/x.png",
            "http://1572394766/x.png",
            "http://1.2.3.example/x.png",
            "http://0x.example/x.png",
        ] {
            assert!(check_url(ok, false).is_ok(), "{ok}");
        }
        assert!(check_url("file:///etc/passwd", true).is_err());
        assert!(check_url("http://a b/x", true).is_err());
        assert_eq!(numeric_ipv4("256.0.0.1"), None);
        assert_eq!(numeric_ipv4("1.2.3.4.5"), None);
        assert_eq!(numeric_ipv4("+1"), None);
    }
}
