//! The Rust verification example of docs/webhooks.md, verbatim, so it stays compilable:
//! `cargo run -p adforge-api --example verify_webhook`.

use hmac::{Hmac, Mac};
use sha2::Sha256;

const TOLERANCE_SECS: i64 = 300;

/// True when `header` (Adforge-Signature) signs `body` with `secret`, at most 5 minutes
/// away from `now` (Unix seconds).
pub fn verify(secret: &str, header: &str, body: &[u8], now: i64) -> bool {
    let mut t = None;
    let mut sigs = Vec::new();
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", v)) => t = v.parse::<i64>().ok(),
            Some(("v1", v)) => sigs.push(v),
            _ => {}
        }
    }
    let Some(t) = t else { return false };
    if (now - t).abs() > TOLERANCE_SECS {
        return false;
    }
    sigs.iter().any(|sig| {
        let Ok(bytes) = hex_decode(sig) else {
            return false;
        };
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
            return false;
        };
        mac.update(format!("{t}.").as_bytes());
        mac.update(body);
        mac.verify_slice(&bytes).is_ok() // constant-time comparison
    })
}

fn hex_decode(s: &str) -> Result<Vec<u8>, ()> {
    if !s.len().is_multiple_of(2) {
        return Err(());
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2).ok_or(())?, 16).map_err(|_| ()))
        .collect()
}

fn main() {
    let header = "t=1700000000,v1=c89214b5b5da833daed6f0b8c5bb6bd58cea9022bd80ccc78230f3942d632925";
    assert!(verify(
        "whsec_test",
        header,
        br#"{"id":"evt_1"}"#,
        1_700_000_000
    ));
    assert!(!verify(
        "whsec_test",
        header,
        br#"{"id":"evt_2"}"#,
        1_700_000_000
    ));
    assert!(!verify(
        "whsec_test",
        header,
        br#"{"id":"evt_1"}"#,
        1_700_000_301
    ));
    println!("ok");
}
