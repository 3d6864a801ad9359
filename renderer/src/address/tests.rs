//! Unit tests of the parent module.

use super::*;

/// The notations a URL may spell an IPv4 address in, each read back by [`Host::parse`]
/// to `ip`.
fn v4_notations(ip: Ipv4Addr) -> Vec<String> {
    let o = ip.octets();
    let n = u32::from(ip);
    vec![
        ip.to_string(),
        format!("{ip}."),
        n.to_string(),
        format!("0x{n:x}"),
        format!("0{n:o}"),
        format!("0{:o}.0{:o}.0{:o}.0{:o}", o[0], o[1], o[2], o[3]),
        format!("0x{:x}.0x{:x}.0x{:x}.0x{:x}", o[0], o[1], o[2], o[3]),
        format!("{}.{}", o[0], n & 0x00ff_ffff),
        format!("{}.{}.{}", o[0], o[1], n & 0xffff),
        format!("[::ffff:{ip}]"),
        format!("[64:ff9b::{ip}]"),
        format!("[2002:{:x}:{:x}::]", n >> 16, n & 0xffff),
        format!(
            "[2001:0:4136:e378:8000:63bf:{:x}:{:x}]",
            (!n) >> 16,
            (!n) & 0xffff
        ),
    ]
}

/// A representative address inside each refused IPv4 row.
#[test]
fn every_refused_ipv4_row_is_refused_in_every_notation() {
    for row in V4_SPECIAL {
        let host_bits = 32 - u32::from(row.prefix);
        let inside = u32::from(row.address) | if host_bits > 0 { 1 } else { 0 };
        let ip = Ipv4Addr::from(inside);
        for host in v4_notations(ip) {
            let parsed = Host::parse(&host).unwrap();
            let why = parsed
                .refusal()
                .unwrap_or_else(|| panic!("{host} ({}) was allowed", row.name));
            assert!(why.contains(row.name), "{host}: {why}");
            let url = format!("http://{host}:9/x.png");
            let e = check_url(&url, false).expect_err(&url);
            assert!(e.contains("not a public address"), "{url}: {e}");
            assert!(check_url(&url, true).is_ok(), "{url} with private allowed");
        }
    }
}

#[test]
fn every_ipv6_row_follows_its_rule() {
    for row in V6_SPECIAL {
        // The upper half of the block, clear of the sub-blocks registries list first.
        let ip = if row.prefix == 128 {
            row.address
        } else {
            Ipv6Addr::from(u128::from(row.address) | 1 << (127 - row.prefix) | 2)
        };
        let got = refusal(IpAddr::V6(ip));
        match row.rule {
            Rule::Refuse => {
                let r = got.unwrap_or_else(|| panic!("{ip} ({}) was allowed", row.name));
                assert_eq!(r.name, row.name, "{ip}");
                let url = format!("http://[{ip}]/x.png");
                assert!(check_url(&url, false).is_err(), "{url}");
            }
            Rule::Allow => assert!(got.is_none(), "{ip} ({}) was refused", row.name),
            // Embedded forms are exercised by the IPv4 notations above and below.
            Rule::Embedded(_) => {}
        }
    }
}

#[test]
fn the_forms_found_in_the_audit_are_refused() {
    for host in [
        "[::127.0.0.1]",
        "[64:ff9b::7f00:1]",
        "[64:ff9b:1::1]",
        "224.0.0.1",
        "[ff02::1]",
        "[2001:db8::1]",
        "192.0.0.170",
        "[::ffff:127.0.0.1]",
        "[::1]",
        "[fe80::1]",
        "[fd00:ec2::254]",
        "169.254.169.254",
        "240.0.0.1",
        "255.255.255.255",
        "198.18.0.1",
        "[2001:2::1]",
        "[3fff::1]",
        "[100::1]",
        "[fec0::1]",
        "[4000::1]",
        "localhost",
        "LOCALHOST",
        "a.localhost",
        "localhost.",
    ] {
        let e = check_url(&format!("http://{host}/x.png"), false).expect_err(host);
        assert!(e.contains("not a public address"), "{host}: {e}");
    }
}

#[test]
fn public_addresses_and_names_pass() {
    for host in [
        "example.com",
        "93.184.215.14",
        "1572394766",
        "1.2.3.example",
        "0x.example",
        "[2606:4700::1111]",
        "[64:ff9b::808:808]",
        "[2002:808:808::1]",
        "[2001:1::1]",
        "192.31.196.1",
    ] {
        assert!(
            check_url(&format!("https://{host}/x.png"), false).is_ok(),
            "{host}"
        );
    }
    assert!(check_url("file:///etc/passwd", true).is_err());
    assert!(check_url("http://a b/x", true).is_err());
    assert!(check_url("http://[fe80::1%25eth0]/x", false).is_err());
    assert_eq!(numeric_ipv4("256.0.0.1"), None);
    assert_eq!(numeric_ipv4("1.2.3.4.5"), None);
    assert_eq!(numeric_ipv4("+1"), None);
}

#[test]
fn refusals_name_the_block_and_the_form() {
    let r = refusal("::ffff:10.0.0.1".parse().unwrap()).unwrap();
    assert_eq!(r.block, "10.0.0.0/8");
    assert_eq!(r.via, Some("IPv4-mapped Address"));
    assert!(r.to_string().contains("Private-Use"), "{r}");
    let r = refusal("255.255.255.255".parse().unwrap()).unwrap();
    assert_eq!(r.name, "Limited Broadcast");
}
