//! People of the dashboard: profiles, memberships, one-time sign-in links, passwords and
//! browser sessions. The admin CLI (`adforge admin member add`) and the dashboard's invite
//! form both call [`add_member`]. Their SQL lives in [`crate::store::members`]; this module
//! holds the rules (roles, tokens, emails, passwords) and re-exports the store's functions.
//!
//! - Passwords: argon2id (the `argon2` crate's defaults, OWASP's m=19 MiB, t=2, p=1) in PHC
//!   strings; hashing and verifying run on the blocking pool.
//! - Tokens (sessions, sign-in links, CSRF): two v4 UUIDs (244 random bits) in hex; only the
//!   SHA-256 of session and link tokens is stored, as for API keys.
//! - A sign-in link works once, for [`LINK_TTL_SECS`]; redeeming it sets the password and
//!   signs in.
//! - A session ends when signed out or revoked, or after [`SESSION_IDLE_SECS`] unused.

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};

pub use crate::store::members::{
    add_member, create_session, find_for_sign_in, list_members, list_sessions, open_link,
    redeem_link, revoke_session, session_member, switch_org,
};

/// How long a one-time sign-in link stays valid.
pub const LINK_TTL_SECS: i64 = 72 * 3600;
/// A session unused this long is over (the cookie's Max-Age is the same).
pub const SESSION_IDLE_SECS: i64 = 14 * 24 * 3600;
/// `last_seen_at` is written at most once per this many seconds per session.
pub const LAST_SEEN_PRECISION_SECS: i64 = 60;
/// Password length bounds (characters).
pub const PASSWORD_MIN: usize = 12;
pub const PASSWORD_MAX: usize = 256;

/// A member's role in one organisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Everything a member does, and inviting members.
    Owner,
    /// Keys and wallet of the organisation.
    Member,
}

impl Role {
    pub fn parse(s: &str) -> Option<Role> {
        match s.trim() {
            "owner" => Some(Role::Owner),
            "member" => Some(Role::Member),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Member => "member",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    /// An argument that cannot be used; the text says why.
    #[error("{0}")]
    Invalid(String),
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
}

/// What [`add_member`] made; `link_token` is the only copy of the link's secret.
#[derive(Debug, Clone)]
pub struct Added {
    pub profile_id: String,
    pub email: String,
    pub is_operator: bool,
    pub link_token: String,
    pub link_expires_at: String,
}

/// A random token: 244 random bits as 64 hex characters.
pub fn new_token() -> String {
    // Two v4 UUIDs: 244 random bits from the OS generator, plenty for a bearer token.
    let a = uuid::Uuid::new_v4().simple().to_string();
    let b = uuid::Uuid::new_v4().simple().to_string();
    format!("{a}{b}")
}

/// Lower-cases and trims an email, and checks its shape (one `@`, something either side,
/// no spaces, at most 254 characters).
pub fn normalize_email(email: &str) -> Option<String> {
    let e = email.trim().to_lowercase();
    let (local, domain) = e.split_once('@')?;
    let ok = !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains('@')
        && e.len() <= 254
        && !e.chars().any(|c| c.is_whitespace() || c.is_control());
    ok.then_some(e)
}

/// The one-time link a person opens to set their password.
pub fn link_url(public_url: &str, token: &str) -> String {
    format!(
        "{}/dashboard/sign-in/link?token={token}",
        public_url.trim_end_matches('/')
    )
}

/// Hashes a password with argon2id (on the blocking pool).
///
/// # Errors
/// Only if the hasher rejects its input (it does not for 12–256 characters).
pub async fn hash_password(password: String) -> Result<String, String> {
    tokio::task::spawn_blocking(move || {
        let salt =
            SaltString::encode_b64(uuid::Uuid::new_v4().as_bytes()).map_err(|e| e.to_string())?;
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| e.to_string())?
}

/// A fixed argon2id hash that unknown emails are checked against, so that a sign-in takes
/// as long whether or not the email exists.
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$8N4m6JqQmCI9VZxXPEeWg8/oQ3KnL2JY7b0fX0bFvE4";

/// Checks a password against a stored hash (or the dummy when there is none).
pub async fn verify_password(hash: Option<String>, password: String) -> bool {
    let known = hash.is_some();
    let hash = hash.unwrap_or_else(|| DUMMY_HASH.to_string());
    tokio::task::spawn_blocking(move || {
        PasswordHash::new(&hash).is_ok_and(|parsed| {
            Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
        })
    })
    .await
    .unwrap_or(false)
        && known
}

/// Checks a new password's length; the message says what is wrong.
pub fn check_new_password(password: &str) -> Result<(), String> {
    let n = password.chars().count();
    if n < PASSWORD_MIN {
        return Err(format!(
            "Use at least {PASSWORD_MIN} characters (a few words make a good password)."
        ));
    }
    if n > PASSWORD_MAX {
        return Err(format!("Use at most {PASSWORD_MAX} characters."));
    }
    Ok(())
}

/// A signed-in member as a live session shows them.
#[derive(Debug, Clone)]
pub struct SessionMember {
    pub session_id: String,
    pub csrf_token: String,
    pub profile_id: String,
    pub email: String,
    pub name: String,
    pub is_operator: bool,
    pub org_id: String,
    pub org_name: String,
    pub role: Role,
    /// Every organisation of the profile: (id, name), by name (the header's switcher).
    pub orgs: Vec<(String, String)>,
}

/// One row of the sessions list.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    pub id: String,
    pub user_agent: Option<String>,
    pub created_at: String,
    pub last_seen_at: String,
    pub revoked_at: Option<String>,
}

/// One row of an organisation's member list.
#[derive(Debug, Clone)]
pub struct MemberInfo {
    pub profile_id: String,
    pub email: String,
    pub name: String,
    pub role: Role,
    pub has_password: bool,
    pub since: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_normalised_and_checked() {
        assert_eq!(
            normalize_email("  Ann@Example.COM ").as_deref(),
            Some("ann@example.com")
        );
        for bad in [
            "",
            "ann",
            "@x.com",
            "ann@",
            "ann@x",
            "a b@x.com",
            "a@.x",
            "a@x.com.",
        ] {
            assert_eq!(normalize_email(bad), None, "{bad}");
        }
    }

    #[tokio::test]
    async fn passwords_verify_only_with_the_right_one() {
        let h = hash_password("correct horse battery".into()).await.unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password(Some(h.clone()), "correct horse battery".into()).await);
        assert!(!verify_password(Some(h), "wrong horse battery".into()).await);
        assert!(!verify_password(None, "correct horse battery".into()).await);
        assert!(PasswordHash::new(DUMMY_HASH).is_ok());
    }
}
