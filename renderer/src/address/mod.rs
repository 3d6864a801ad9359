//! The one address policy for every outbound request the service makes on a user's behalf
//! (reference images, image URLs of trees, swipe-search examples, webhook deliveries):
//! only globally reachable unicast addresses, as IANA's special-purpose address registries
//! define them, are dialled.
//!
//! The policy is two tables, [`V4_SPECIAL`] and [`V6_SPECIAL`], with the registries' own
//! names; an address takes the row with the longest matching prefix. A row either refuses,
//! allows (the registries' few "globally reachable" sub-blocks of refused blocks), or reads
//! the IPv4 address that an IPv6 form carries (IPv4-mapped, NAT64, 6to4, Teredo) and judges
//! that instead, so `[::ffff:127.0.0.1]`, `[64:ff9b::7f00:1]` and `[2002:7f00:1::]` are the
//! loopback address they stand for. IPv6 outside `2000::/3` (the only block IANA allocates
//! for global unicast) is refused, IPv4-compatible forms (`[::127.0.0.1]`, deprecated by
//! RFC 4291) included.
//!
//! Deliberately stricter than the registry in one place: all of `192.0.0.0/24` is refused,
//! though two of its /32s (PCP and TURN anycast) are marked globally reachable; no image or
//! webhook is served from them.
//!
//! Where it applies: [`check_url`] decides from a URL alone (literal addresses in every
//! notation the system resolver reads, `localhost`), before any connection, and callers that
//! validate a URL when it is saved use it; names are resolved when a request is made, and the
//! resolver of every client drops refused addresses before connecting (on every redirect
//! hop too). With `allow_private` (the operator's `--allow-private-urls`) only the URL's
//! syntax and scheme are checked.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Every refusal's text contains this phrase (callers sort failures by it).
pub const REFUSED: &str = "not a public address";

/// What a row of the tables does with an address it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Not globally reachable: refused.
    Refuse,
    /// A globally reachable sub-block of a refused block: allowed.
    Allow,
    /// An IPv6 form of an IPv4 address: the IPv4 address decides.
    Embedded(Embedding),
}

/// Where an IPv6 form keeps its IPv4 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Embedding {
    /// The last 32 bits (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`).
    Last32,
    /// Bits 16–47 (6to4, `2002:AABB:CCDD::`).
    SixToFour,
    /// Teredo: the server at bits 32–63 and the client, inverted, in the last 32 bits;
    /// both must be public.
    Teredo,
}

/// One row of a special-purpose registry.
#[derive(Debug, Clone, Copy)]
pub struct Special<A> {
    /// The block's first address.
    pub address: A,
    /// Its prefix length.
    pub prefix: u8,
    /// The registry's name of the block.
    pub name: &'static str,
    /// Where it is defined.
    pub rfc: &'static str,
    pub rule: Rule,
}

const fn v4(a: [u8; 4], prefix: u8, name: &'static str, rfc: &'static str) -> Special<Ipv4Addr> {
    Special {
        address: Ipv4Addr::new(a[0], a[1], a[2], a[3]),
        prefix,
        name,
        rfc,
        rule: Rule::Refuse,
    }
}

const fn v6(
    s: [u16; 8],
    prefix: u8,
    name: &'static str,
    rfc: &'static str,
    rule: Rule,
) -> Special<Ipv6Addr> {
    Special {
        address: Ipv6Addr::new(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]),
        prefix,
        name,
        rfc,
        rule,
    }
}

/// IANA IPv4 Special-Purpose Address Registry (and the multicast block), refused rows only:
/// every IPv4 address outside them is globally reachable unicast.
pub const V4_SPECIAL: &[Special<Ipv4Addr>] = &[
    v4([0, 0, 0, 0], 8, "\"This network\"", "RFC 791"),
    v4([10, 0, 0, 0], 8, "Private-Use", "RFC 1918"),
    v4([100, 64, 0, 0], 10, "Shared Address Space", "RFC 6598"),
    v4([127, 0, 0, 0], 8, "Loopback", "RFC 1122"),
    v4([169, 254, 0, 0], 16, "Link Local", "RFC 3927"),
    v4([172, 16, 0, 0], 12, "Private-Use", "RFC 1918"),
    v4([192, 0, 0, 0], 24, "IETF Protocol Assignments", "RFC 6890"),
    v4([192, 0, 2, 0], 24, "Documentation (TEST-NET-1)", "RFC 5737"),
    v4(
        [192, 88, 99, 0],
        24,
        "Deprecated (6to4 Relay Anycast)",
        "RFC 7526",
    ),
    v4([192, 168, 0, 0], 16, "Private-Use", "RFC 1918"),
    v4([198, 18, 0, 0], 15, "Benchmarking", "RFC 2544"),
    v4(
        [198, 51, 100, 0],
        24,
        "Documentation (TEST-NET-2)",
        "RFC 5737",
    ),
    v4(
        [203, 0, 113, 0],
        24,
        "Documentation (TEST-NET-3)",
        "RFC 5737",
    ),
    v4([224, 0, 0, 0], 4, "Multicast", "RFC 5771"),
    v4([240, 0, 0, 0], 4, "Reserved", "RFC 1112"),
    v4([255, 255, 255, 255], 32, "Limited Broadcast", "RFC 919"),
];

const R: Rule = Rule::Refuse;
const A: Rule = Rule::Allow;

/// IANA IPv6 Special-Purpose Address Registry (and multicast), inside and outside
/// `2000::/3`; addresses outside `2000::/3` that no row names are refused too.
pub const V6_SPECIAL: &[Special<Ipv6Addr>] = &[
    v6([0; 8], 128, "Unspecified Address", "RFC 4291", R),
    v6(
        [0, 0, 0, 0, 0, 0, 0, 1],
        128,
        "Loopback Address",
        "RFC 4291",
        R,
    ),
    v6(
        [0; 8],
        96,
        "IPv4-compatible Address (deprecated)",
        "RFC 4291",
        R,
    ),
    v6(
        [0, 0, 0, 0, 0, 0xffff, 0, 0],
        96,
        "IPv4-mapped Address",
        "RFC 4291",
        Rule::Embedded(Embedding::Last32),
    ),
    v6(
        [0x64, 0xff9b, 0, 0, 0, 0, 0, 0],
        96,
        "IPv4-IPv6 Translation (NAT64)",
        "RFC 6052",
        Rule::Embedded(Embedding::Last32),
    ),
    v6(
        [0x64, 0xff9b, 1, 0, 0, 0, 0, 0],
        48,
        "Local-Use IPv4/IPv6 Translation",
        "RFC 8215",
        R,
    ),
    v6(
        [0x100, 0, 0, 0, 0, 0, 0, 0],
        64,
        "Discard-Only Address Block",
        "RFC 6666",
        R,
    ),
    v6(
        [0x100, 0, 0, 1, 0, 0, 0, 0],
        64,
        "Dummy IPv6 Prefix",
        "RFC 9780",
        R,
    ),
    v6(
        [0x2001, 0, 0, 0, 0, 0, 0, 0],
        23,
        "IETF Protocol Assignments",
        "RFC 2928",
        R,
    ),
    v6(
        [0x2001, 0, 0, 0, 0, 0, 0, 0],
        32,
        "TEREDO",
        "RFC 4380",
        Rule::Embedded(Embedding::Teredo),
    ),
    v6(
        [0x2001, 1, 0, 0, 0, 0, 0, 1],
        128,
        "Port Control Protocol Anycast",
        "RFC 7723",
        A,
    ),
    v6(
        [0x2001, 1, 0, 0, 0, 0, 0, 2],
        128,
        "Traversal Using Relays around NAT Anycast",
        "RFC 8155",
        A,
    ),
    v6(
        [0x2001, 1, 0, 0, 0, 0, 0, 3],
        128,
        "DNS-SD Service Registration Protocol Anycast",
        "RFC 9665",
        A,
    ),
    v6(
        [0x2001, 2, 0, 0, 0, 0, 0, 0],
        48,
        "Benchmarking",
        "RFC 5180",
        R,
    ),
    v6([0x2001, 3, 0, 0, 0, 0, 0, 0], 32, "AMT", "RFC 7450", A),
    v6(
        [0x2001, 4, 0x112, 0, 0, 0, 0, 0],
        48,
        "AS112-v6",
        "RFC 7535",
        A,
    ),
    v6(
        [0x2001, 0x10, 0, 0, 0, 0, 0, 0],
        28,
        "Deprecated (previously ORCHID)",
        "RFC 4843",
        R,
    ),
    v6(
        [0x2001, 0x20, 0, 0, 0, 0, 0, 0],
        28,
        "ORCHIDv2",
        "RFC 7343",
        A,
    ),
    v6(
        [0x2001, 0x30, 0, 0, 0, 0, 0, 0],
        28,
        "Drone Remote ID Protocol Entity Tags (DETs) Prefix",
        "RFC 9374",
        A,
    ),
    v6(
        [0x2001, 0xdb8, 0, 0, 0, 0, 0, 0],
        32,
        "Documentation",
        "RFC 3849",
        R,
    ),
    v6(
        [0x2002, 0, 0, 0, 0, 0, 0, 0],
        16,
        "6to4",
        "RFC 3056",
        Rule::Embedded(Embedding::SixToFour),
    ),
    v6(
        [0x3fff, 0, 0, 0, 0, 0, 0, 0],
        20,
        "Documentation",
        "RFC 9637",
        R,
    ),
    v6(
        [0x5f00, 0, 0, 0, 0, 0, 0, 0],
        16,
        "Segment Routing (SRv6) SIDs",
        "RFC 9602",
        R,
    ),
    v6(
        [0xfc00, 0, 0, 0, 0, 0, 0, 0],
        7,
        "Unique-Local",
        "RFC 4193",
        R,
    ),
    v6(
        [0xfe80, 0, 0, 0, 0, 0, 0, 0],
        10,
        "Link-Local Unicast",
        "RFC 4291",
        R,
    ),
    v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, "Multicast", "RFC 4291", R),
];

/// Why an address is refused: the registry block it falls in, and for an IPv6 form of an
/// IPv4 address, that address's own block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub address: IpAddr,
    /// `127.0.0.0/8`.
    pub block: String,
    /// `Loopback`.
    pub name: &'static str,
    /// For an IPv6 form: the IPv6 block it was read through (`IPv4-mapped Address`).
    pub via: Option<&'static str>,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.via {
            Some(via) => write!(
                f,
                "{} is an {via} form of an address in {} ({}), not a public address",
                self.address, self.block, self.name
            ),
            None => write!(
                f,
                "{} is in {} ({}), not a public address",
                self.address, self.block, self.name
            ),
        }
    }
}

fn longest<A: Copy>(
    table: &'static [Special<A>],
    matches: impl Fn(&Special<A>) -> bool,
) -> Option<&'static Special<A>> {
    table
        .iter()
        .filter(|row| matches(row))
        .max_by_key(|row| row.prefix)
}

fn in_v4(ip: Ipv4Addr, row: &Special<Ipv4Addr>) -> bool {
    let mask = u32::MAX
        .checked_shl(32 - u32::from(row.prefix))
        .unwrap_or(0);
    u32::from(ip) & mask == u32::from(row.address) & mask
}

fn in_v6(ip: Ipv6Addr, row: &Special<Ipv6Addr>) -> bool {
    let mask = u128::MAX
        .checked_shl(128 - u32::from(row.prefix))
        .unwrap_or(0);
    u128::from(ip) & mask == u128::from(row.address) & mask
}

/// Why `ip` may not be dialled, or `None` for a globally reachable unicast address.
pub fn refusal(ip: IpAddr) -> Option<Refusal> {
    match ip {
        IpAddr::V4(a) => refusal_v4(a),
        IpAddr::V6(a) => refusal_v6(a),
    }
}

fn refusal_v4(ip: Ipv4Addr) -> Option<Refusal> {
    let row = longest(V4_SPECIAL, |r| in_v4(ip, r))?;
    Some(Refusal {
        address: IpAddr::V4(ip),
        block: format!("{}/{}", row.address, row.prefix),
        name: row.name,
        via: None,
    })
}

fn refusal_v6(ip: Ipv6Addr) -> Option<Refusal> {
    let Some(row) = longest(V6_SPECIAL, |r| in_v6(ip, r)) else {
        // 2000::/3 is global unicast; everything else is unallocated or reserved.
        return (ip.segments()[0] & 0xe000 != 0x2000).then(|| Refusal {
            address: IpAddr::V6(ip),
            block: "outside 2000::/3".into(),
            name: "Reserved by IETF: not global unicast",
            via: None,
        });
    };
    let bits = u128::from(ip);
    let embedded = |e: u128| Ipv4Addr::from((e & 0xffff_ffff) as u32);
    let inner = match row.rule {
        Rule::Allow => return None,
        Rule::Refuse => {
            return Some(Refusal {
                address: IpAddr::V6(ip),
                block: format!("{}/{}", row.address, row.prefix),
                name: row.name,
                via: None,
            });
        }
        Rule::Embedded(Embedding::Last32) => refusal_v4(embedded(bits)),
        Rule::Embedded(Embedding::SixToFour) => refusal_v4(embedded(bits >> 80)),
        Rule::Embedded(Embedding::Teredo) => {
            refusal_v4(embedded(bits >> 64)).or_else(|| refusal_v4(embedded(!bits)))
        }
    };
    inner.map(|r| Refusal {
        address: IpAddr::V6(ip),
        via: Some(row.name),
        ..r
    })
}

/// True when `ip` is globally reachable unicast (see the module docs).
pub fn is_public(ip: IpAddr) -> bool {
    refusal(ip).is_none()
}

/// What the host of a URL is, read as the system resolver would read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// A literal address, in any notation (`127.1`, `0x7f000001`, `[::1]`).
    Address(IpAddr),
    /// A name to resolve (lower case, without a trailing dot).
    Name(String),
}

impl Host {
    /// Reads a URL's host: `[…]` as IPv6, the IPv4 notations of `inet_aton` (one to four
    /// parts, decimal, octal or hex), anything else as a name.
    ///
    /// # Errors
    /// An IPv6 literal that does not parse (a zone id, an unknown form).
    pub fn parse(host: &str) -> Result<Host, String> {
        if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            return inner
                .parse::<Ipv6Addr>()
                .map(|a| Host::Address(IpAddr::V6(a)))
                .map_err(|_| {
                    format!("`{host}` is an IPv6 address with a zone or in an unknown form")
                });
        }
        if let Ok(a) = host.parse::<Ipv6Addr>() {
            return Ok(Host::Address(IpAddr::V6(a)));
        }
        if let Some(a) = numeric_ipv4(host) {
            return Ok(Host::Address(IpAddr::V4(a)));
        }
        Ok(Host::Name(host.trim_end_matches('.').to_ascii_lowercase()))
    }

    /// Why this host may not be dialled without resolving it: a refused literal address,
    /// or `localhost`. `None` for public literals and other names (their addresses are
    /// checked when they are resolved).
    pub fn refusal(&self) -> Option<String> {
        match self {
            Host::Address(ip) => refusal(*ip).map(|r| r.to_string()),
            Host::Name(n) if n == "localhost" || n.ends_with(".localhost") => {
                Some(format!("`{n}` is the loopback host, not a public address"))
            }
            Host::Name(_) => None,
        }
    }
}

/// Checks, without touching the network, that an outbound request may go to `url`: an
/// http(s) URL with a host, and, unless `allow_private`, a host that is not `localhost`
/// and not a refused literal address in any notation (see [`Host::parse`]). Names are
/// checked again after resolving, when the request is made.
///
/// # Errors
/// Why the URL is refused; refusals for the address say "not a public address".
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
    match Host::parse(host)?.refusal() {
        Some(why) => Err(format!("the host `{host}`: {why}; use a public host")),
        None => Ok(()),
    }
}

/// Reads `host` as an IPv4 address the way `inet_aton` (and so the system resolver) and
/// browsers do: one to four dot-separated parts, each decimal, octal (leading `0`) or hex
/// (`0x`), the last part filling the remaining bytes. `None` for anything else (a name).
pub fn numeric_ipv4(host: &str) -> Option<Ipv4Addr> {
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
    u32::try_from(value).ok().map(Ipv4Addr::from)
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

#[cfg(test)]
mod tests;
