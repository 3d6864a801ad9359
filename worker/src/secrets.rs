//! Secrets at rest: third-party tokens (an organisation's Figma token) are sealed with
//! AES-256-GCM under the deployment's one key, `ADFORGE_SECRETS_KEY` (base64 of 32 bytes).
//!
//! A sealed value is `v1.` followed by base64 of `nonce (12 bytes) ‖ ciphertext ‖ tag`; the
//! nonce is random per seal. Every seal names a *context* (`figma-token:org_…`) that is
//! authenticated with it (AEAD associated data), so a value sealed for one organisation
//! cannot be moved to another's row and opened there.
//!
//! Where the key lives: the API seals a token when it is stored and never opens it; the
//! job that needs it carries the sealed value, and the worker opens it just before the
//! call, so the plain token is never written to SQL, Redis or a log. Every API node and
//! every worker of a deployment must hold the same key: `ADFORGE_SECRETS_KEY`, or a file
//! named by `ADFORGE_SECRETS_KEY_FILE` (a mounted secret). The embedded default (one
//! process) generates it into `DATA_DIR/secrets.key` on first use (see `load_or_create`).
//!
//! Rejected alternatives: XChaCha20-Poly1305 would need a new crate; AES-256-GCM from
//! `ring` is already in the build (through rustls), and random 96-bit nonces are safe far
//! beyond the few seals a deployment makes (one per token change). Sealing with a key
//! derived per organisation adds nothing the associated data does not already give.
//!
//! ```
//! use adforge_worker::secrets::SecretKey;
//! let key = SecretKey::generate();
//! let sealed = key.seal(b"figd_example", "figma-token:org_1");
//! assert_eq!(key.open(&sealed, "figma-token:org_1").unwrap(), b"figd_example");
//! assert!(key.open(&sealed, "figma-token:org_2").is_err());
//! ```

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

/// The environment variable that holds the key (never a flag, so it stays out of process
/// lists).
pub const ENV: &str = "ADFORGE_SECRETS_KEY";

/// The environment variable that names a file holding the key (a mounted secret), read when
/// [`ENV`] is not set.
pub const ENV_FILE: &str = "ADFORGE_SECRETS_KEY_FILE";

/// The file the embedded default keeps a generated key in, inside the data folder.
pub const KEY_FILE: &str = "secrets.key";

const PREFIX: &str = "v1.";

/// Why a key could not be read or a value could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    /// The key is not base64 of exactly 32 bytes. Generate one with
    /// `head -c 32 /dev/urandom | base64`.
    #[error("the secrets key must be base64 of exactly 32 bytes ({0})")]
    BadKey(String),
    /// The sealed value is not one this build wrote, was sealed under another key or for
    /// another context, or was changed. Store the secret again.
    #[error(
        "the sealed value cannot be opened with this key (sealed under another key, for another owner, or damaged)"
    )]
    Unopenable,
    /// Reading or writing the key file failed.
    #[error("secrets key file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
}

/// The deployment's secrets key. Its `Debug` never shows the key.
pub struct SecretKey {
    key: LessSafeKey,
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(…)")
    }
}

impl SecretKey {
    fn from_bytes(bytes: &[u8]) -> Result<Self, SecretsError> {
        if bytes.len() != 32 {
            return Err(SecretsError::BadKey(format!("{} bytes", bytes.len())));
        }
        let unbound = UnboundKey::new(&AES_256_GCM, bytes)
            .map_err(|_| SecretsError::BadKey("rejected by AES-256-GCM".into()))?;
        Ok(SecretKey {
            key: LessSafeKey::new(unbound),
        })
    }

    /// A key from its base64 text (surrounding whitespace ignored).
    ///
    /// # Errors
    /// [`SecretsError::BadKey`].
    pub fn from_base64(text: &str) -> Result<Self, SecretsError> {
        let bytes = B64
            .decode(text.trim())
            .map_err(|e| SecretsError::BadKey(e.to_string()))?;
        Self::from_bytes(&bytes)
    }

    /// A new random key.
    pub fn generate() -> Self {
        Self::generate_with_text().0
    }

    fn generate_with_text() -> (Self, String) {
        let mut bytes = [0u8; 32];
        // The system's random source failing is not something a caller can fix; fall back
        // to a key that is still unique per process rather than panicking.
        if SystemRandom::new().fill(&mut bytes).is_err() {
            let fallback = uuid::Uuid::new_v4();
            bytes[..16].copy_from_slice(fallback.as_bytes());
            bytes[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        }
        let text = B64.encode(bytes);
        // 32 bytes always make an AES-256 key.
        let key = Self::from_bytes(&bytes).expect("a 32-byte key");
        (key, text)
    }

    /// The key from `ADFORGE_SECRETS_KEY`, else from the file `ADFORGE_SECRETS_KEY_FILE`
    /// names, if either is set.
    ///
    /// # Errors
    /// A value that is not a key; a file that cannot be read.
    pub fn from_env() -> Result<Option<Self>, SecretsError> {
        match std::env::var(ENV) {
            Ok(text) if !text.trim().is_empty() => Self::from_base64(&text).map(Some),
            _ => match std::env::var_os(ENV_FILE) {
                Some(path) if !path.is_empty() => Self::from_file(Path::new(&path)).map(Some),
                _ => Ok(None),
            },
        }
    }

    /// The key in a file (base64 of 32 bytes; surrounding whitespace ignored).
    ///
    /// # Errors
    /// The file cannot be read, or holds no key.
    pub fn from_file(path: &Path) -> Result<Self, SecretsError> {
        let text = std::fs::read_to_string(path).map_err(|source| SecretsError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_base64(&text)
    }

    /// The key of the embedded default: `ADFORGE_SECRETS_KEY` when set, else the key in
    /// `data_dir/secrets.key`, generated there (mode 0600) when the file does not exist yet.
    ///
    /// # Errors
    /// A bad key in the variable or the file; the file cannot be read or written.
    pub fn load_or_create(data_dir: &Path) -> Result<Self, SecretsError> {
        if let Some(key) = Self::from_env()? {
            return Ok(key);
        }
        let path = data_dir.join(KEY_FILE);
        let io = |source| SecretsError::Io {
            path: path.display().to_string(),
            source,
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::from_base64(&text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let (key, text) = Self::generate_with_text();
                std::fs::create_dir_all(data_dir).map_err(io)?;
                write_private(&path, &text).map_err(io)?;
                tracing::warn!(path = %path.display(), "generated a secrets key for stored tokens; every API node and worker of a cluster needs the same one in ADFORGE_SECRETS_KEY");
                Ok(key)
            }
            Err(e) => Err(io(e)),
        }
    }

    /// Seals `plain` for `context` (who it belongs to): `v1.` + base64.
    pub fn seal(&self, plain: &[u8], context: &str) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        if SystemRandom::new().fill(&mut nonce).is_err() {
            nonce[..NONCE_LEN].copy_from_slice(&uuid::Uuid::new_v4().as_bytes()[..NONCE_LEN]);
        }
        let mut buf = plain.to_vec();
        // Sealing with a valid key and a fresh nonce only fails for inputs over 64 GiB.
        let sealed = self.key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(context.as_bytes()),
            &mut buf,
        );
        if sealed.is_err() {
            buf.clear();
        }
        let mut out = nonce.to_vec();
        out.extend_from_slice(&buf);
        format!("{PREFIX}{}", B64.encode(out))
    }

    /// Opens what [`SecretKey::seal`] wrote for the same `context`.
    ///
    /// # Errors
    /// [`SecretsError::Unopenable`].
    pub fn open(&self, sealed: &str, context: &str) -> Result<Vec<u8>, SecretsError> {
        let body = sealed
            .strip_prefix(PREFIX)
            .ok_or(SecretsError::Unopenable)?;
        let bytes = B64.decode(body).map_err(|_| SecretsError::Unopenable)?;
        if bytes.len() < NONCE_LEN {
            return Err(SecretsError::Unopenable);
        }
        let (nonce, rest) = bytes.split_at(NONCE_LEN);
        let nonce =
            Nonce::try_assume_unique_for_key(nonce).map_err(|_| SecretsError::Unopenable)?;
        let mut buf = rest.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(context.as_bytes()), &mut buf)
            .map_err(|_| SecretsError::Unopenable)?;
        Ok(plain.to_vec())
    }
}

#[cfg(unix)]
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())?;
    f.write_all(b"\n")
}

#[cfg(not(unix))]
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::write(path, format!("{text}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_open_only_with_the_same_key_and_context() {
        let key = SecretKey::generate();
        let sealed = key.seal(b"figd_secret-token", "figma-token:org_a");
        assert!(sealed.starts_with("v1."));
        assert!(!sealed.contains("figd_secret"));
        assert_eq!(
            key.open(&sealed, "figma-token:org_a").unwrap(),
            b"figd_secret-token"
        );
        assert!(key.open(&sealed, "figma-token:org_b").is_err());
        assert!(
            SecretKey::generate()
                .open(&sealed, "figma-token:org_a")
                .is_err()
        );
        // Two seals of the same value differ (random nonces).
        assert_ne!(sealed, key.seal(b"figd_secret-token", "figma-token:org_a"));
        let mut damaged = sealed.clone();
        damaged.pop();
        damaged.push(if sealed.ends_with('A') { 'B' } else { 'A' });
        assert!(key.open(&damaged, "figma-token:org_a").is_err());
    }

    #[test]
    fn keys_are_32_bytes_of_base64_and_never_debug_printed() {
        assert!(SecretKey::from_base64("c2hvcnQ=").is_err());
        assert!(SecretKey::from_base64("not base64!").is_err());
        let text = B64.encode([9u8; 32]);
        let key = SecretKey::from_base64(&format!(" {text}\n")).unwrap();
        assert_eq!(format!("{key:?}"), "SecretKey(…)");
    }

    #[test]
    fn the_embedded_default_generates_its_key_once() {
        let dir = tempfile::tempdir().unwrap();
        // The variable would win; tests run without it.
        if std::env::var_os(ENV).is_some() {
            return;
        }
        let a = SecretKey::load_or_create(dir.path()).unwrap();
        let sealed = a.seal(b"x", "c");
        let b = SecretKey::load_or_create(dir.path()).unwrap();
        assert_eq!(b.open(&sealed, "c").unwrap(), b"x");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
