//! Identifiers and secrets: `prefix_` + base62 of 128 random bits (22 characters), the
//! Stripe-like shape the spec's ID prefixes imply.

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Encodes 128 bits as exactly 22 base62 characters (fixed width keeps ids uniform).
fn base62(mut n: u128) -> String {
    let mut out = [b'0'; 22];
    for slot in out.iter_mut().rev() {
        *slot = BASE62[(n % 62) as usize];
        n /= 62;
    }
    out.iter().map(|&b| b as char).collect()
}

/// A fresh random id such as `brand_4Vq1...`; `prefix` is given without the underscore.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", base62(uuid::Uuid::new_v4().as_u128()))
}

/// What every API key starts with.
pub const KEY_PREFIX: &str = "svc_live_";

/// A fresh API key secret: `svc_live_` + 44 base62 characters (two 128-bit draws).
pub fn new_api_key_secret() -> String {
    let a = base62(uuid::Uuid::new_v4().as_u128());
    let b = base62(uuid::Uuid::new_v4().as_u128());
    format!("{KEY_PREFIX}{a}{b}")
}

/// The resource kind an id names, judged by its prefix (`prod_x` → `prod`).
pub fn prefix_of(id: &str) -> Option<&str> {
    id.split_once('_').map(|(p, _)| p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_prefix_and_fixed_width() {
        let id = new_id("brand");
        assert!(id.starts_with("brand_"));
        assert_eq!(id.len(), "brand_".len() + 22);
        assert_ne!(new_id("brand"), id);
        assert_eq!(prefix_of(&id), Some("brand"));
        assert_eq!(base62(0), "0".repeat(22));
        assert_eq!(base62(u128::MAX).len(), 22);
    }
}
