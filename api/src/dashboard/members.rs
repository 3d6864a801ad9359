//! People of the dashboard: profiles, memberships, one-time sign-in links, passwords and
//! browser sessions. The admin CLI (`adforge admin member add`) and the dashboard's invite
//! form both call [`add_member`].
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

use crate::auth::hash_key as sha256_hex;
use crate::store::Db;

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

/// Adds `email` to `org_id` with `role` (the caller checked the organisation exists):
/// creates the profile when the email is new (an existing profile keeps its password and
/// name; its role in this organisation is set to `role`), marks it an operator when asked,
/// and issues a one-time sign-in link.
///
/// # Errors
/// A malformed email; database failures.
pub async fn add_member(
    db: &Db,
    org_id: &str,
    email: &str,
    name: Option<&str>,
    role: Role,
    operator: bool,
) -> Result<Added, MemberError> {
    let email = normalize_email(email)
        .ok_or_else(|| MemberError::Invalid(format!("`{email}` is not an email address")))?;
    let name = name.map(str::trim).filter(|n| !n.is_empty()).map_or_else(
        || email.split('@').next().unwrap_or_default().to_string(),
        |n| n.chars().take(100).collect(),
    );
    let now = crate::timestamp::now();
    let mut tx = db.begin_write().await?;
    let existing: Option<(String, bool)> = crate::store::query_as::<(String, crate::store::Flag)>(
        "SELECT id, is_operator FROM profiles WHERE email = ?",
    )
    .bind(&email)
    .fetch_optional(&mut *tx)
    .await?
    .map(|(id, op)| (id, op.0));
    let (profile_id, is_operator) = match existing {
        Some((id, was)) => {
            if operator && !was {
                crate::store::query(
                    "UPDATE profiles SET is_operator = 1, updated_at = ? WHERE id = ?",
                )
                .bind(&now)
                .bind(&id)
                .execute(&mut *tx)
                .await?;
            }
            (id, was || operator)
        }
        None => {
            let id = crate::ids::new_id("prof");
            crate::store::query("INSERT INTO profiles (id, email, name, is_operator, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)")
                .bind(&id)
                .bind(&email)
                .bind(&name)
                .bind(i64::from(operator))
                .bind(&now)
                .bind(&now)
                .execute(&mut *tx)
                .await?;
            (id, operator)
        }
    };
    crate::store::query(
        "INSERT INTO memberships (profile_id, org_id, role, created_at) VALUES (?, ?, ?, ?) \
         ON CONFLICT(profile_id, org_id) DO UPDATE SET role = excluded.role",
    )
    .bind(&profile_id)
    .bind(org_id)
    .bind(role.as_str())
    .bind(&now)
    .execute(&mut *tx)
    .await?;
    let token = new_token();
    let expires = crate::timestamp::format(
        time::OffsetDateTime::now_utc() + time::Duration::seconds(LINK_TTL_SECS),
    );
    crate::store::query("INSERT INTO sign_in_links (token_hash, profile_id, org_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)")
        .bind(sha256_hex(&token))
        .bind(&profile_id)
        .bind(org_id)
        .bind(&now)
        .bind(&expires)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(Added {
        profile_id,
        email,
        is_operator,
        link_token: token,
        link_expires_at: expires,
    })
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

/// A link that can still be redeemed: (profile id, organisation id, email).
///
/// # Errors
/// Database failures.
pub async fn open_link(
    db: &Db,
    token: &str,
) -> Result<Option<(String, String, String)>, sqlx::Error> {
    crate::store::query_as(
        "SELECT l.profile_id, l.org_id, p.email FROM sign_in_links l JOIN profiles p ON p.id = l.profile_id \
         WHERE l.token_hash = ? AND l.used_at IS NULL AND l.expires_at > ?",
    )
    .bind(sha256_hex(token))
    .bind(crate::timestamp::now())
    .fetch_optional(&db.read)
    .await
}

/// Redeems a link: sets the password and marks the link used, in one transaction (a link
/// redeemed twice at once works once). Returns (profile id, organisation id).
///
/// # Errors
/// Database failures.
pub async fn redeem_link(
    db: &Db,
    token: &str,
    password_hash: &str,
) -> Result<Option<(String, String)>, sqlx::Error> {
    let now = crate::timestamp::now();
    let mut tx = db.begin_write().await?;
    let found: Option<(String, String)> = crate::store::query_as(
        "UPDATE sign_in_links SET used_at = ?1 WHERE token_hash = ?2 AND used_at IS NULL AND expires_at > ?1 \
         RETURNING profile_id, org_id",
    )
    .bind(&now)
    .bind(sha256_hex(token))
    .fetch_optional(&mut *tx)
    .await?;
    let Some((profile_id, org_id)) = found else {
        return Ok(None);
    };
    crate::store::query("UPDATE profiles SET password_hash = ?, updated_at = ? WHERE id = ?")
        .bind(password_hash)
        .bind(&now)
        .bind(&profile_id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(Some((profile_id, org_id)))
}

/// A profile that may sign in: (id, password hash, first organisation). `None` for an
/// unknown email or a profile without any membership.
///
/// # Errors
/// Database failures.
pub async fn find_for_sign_in(
    db: &Db,
    email: &str,
) -> Result<Option<(String, Option<String>, String)>, sqlx::Error> {
    crate::store::query_as(
        "SELECT p.id, p.password_hash, m.org_id FROM profiles p JOIN memberships m ON m.profile_id = p.id \
         WHERE p.email = ? ORDER BY m.created_at, m.org_id LIMIT 1",
    )
    .bind(email)
    .fetch_optional(&db.read)
    .await
}

/// A new session: (cookie token, session id).
///
/// # Errors
/// Database failures.
pub async fn create_session(
    db: &Db,
    profile_id: &str,
    org_id: &str,
    user_agent: Option<&str>,
) -> Result<(String, String), sqlx::Error> {
    let token = new_token();
    let id = crate::ids::new_id("dss");
    let now = crate::timestamp::now();
    crate::store::query("INSERT INTO dashboard_sessions (id, profile_id, org_id, token_hash, csrf_token, user_agent, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
        .bind(&id)
        .bind(profile_id)
        .bind(org_id)
        .bind(sha256_hex(&token))
        .bind(new_token())
        .bind(user_agent.map(|u| u.chars().take(200).collect::<String>()))
        .bind(&now)
        .bind(&now)
        .execute(&db.write)
        .await?;
    Ok((token, id))
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

/// The member of a live session token (also refreshing its `last_seen_at`).
///
/// # Errors
/// Database failures.
pub async fn session_member(db: &Db, token: &str) -> Result<Option<SessionMember>, sqlx::Error> {
    let idle_limit = crate::timestamp::seconds_ago(SESSION_IDLE_SECS);
    let row: Option<(String, String, String, String, String, crate::store::Flag, String, String, String, String)> =
        crate::store::query_as(
            "SELECT s.id, s.csrf_token, s.last_seen_at, p.id, p.email, p.is_operator, p.name, o.id, o.name, m.role \
             FROM dashboard_sessions s JOIN profiles p ON p.id = s.profile_id \
             JOIN memberships m ON m.profile_id = s.profile_id AND m.org_id = s.org_id \
             JOIN organizations o ON o.id = s.org_id \
             WHERE s.token_hash = ? AND s.revoked_at IS NULL AND s.last_seen_at > ?",
        )
        .bind(sha256_hex(token))
        .bind(&idle_limit)
        .fetch_optional(&db.read)
        .await?;
    let Some((
        session_id,
        csrf_token,
        last_seen,
        profile_id,
        email,
        is_operator,
        name,
        org_id,
        org_name,
        role,
    )) = row
    else {
        return Ok(None);
    };
    let is_operator = is_operator.0;
    if last_seen < crate::timestamp::seconds_ago(LAST_SEEN_PRECISION_SECS) {
        crate::store::query("UPDATE dashboard_sessions SET last_seen_at = ? WHERE id = ?")
            .bind(crate::timestamp::now())
            .bind(&session_id)
            .execute(&db.write)
            .await?;
    }
    let orgs: Vec<(String, String)> = crate::store::query_as(
        "SELECT o.id, o.name FROM memberships m JOIN organizations o ON o.id = m.org_id \
         WHERE m.profile_id = ? ORDER BY o.name, o.id",
    )
    .bind(&profile_id)
    .fetch_all(&db.read)
    .await?;
    Ok(Some(SessionMember {
        orgs,
        session_id,
        csrf_token,
        profile_id,
        email,
        name,
        is_operator,
        org_id,
        org_name,
        role: Role::parse(&role).unwrap_or(Role::Member),
    }))
}

/// Moves a session to another organisation of its profile; false when the profile is not a
/// member there.
///
/// # Errors
/// Database failures.
pub async fn switch_org(
    db: &Db,
    session_id: &str,
    profile_id: &str,
    org_id: &str,
) -> Result<bool, sqlx::Error> {
    let r = crate::store::query(
        "UPDATE dashboard_sessions SET org_id = ?1 WHERE id = ?2 AND profile_id = ?3 \
         AND EXISTS (SELECT 1 FROM memberships WHERE profile_id = ?3 AND org_id = ?1)",
    )
    .bind(org_id)
    .bind(session_id)
    .bind(profile_id)
    .execute(&db.write)
    .await?;
    Ok(r.rows_affected() > 0)
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

/// A profile's sessions, newest first (the last 50).
///
/// # Errors
/// Database failures.
pub async fn list_sessions(db: &Db, profile_id: &str) -> Result<Vec<SessionInfo>, sqlx::Error> {
    let rows: Vec<(String, Option<String>, String, String, Option<String>)> =
        crate::store::query_as(
            "SELECT id, user_agent, created_at, last_seen_at, revoked_at FROM dashboard_sessions \
         WHERE profile_id = ? ORDER BY seq DESC LIMIT 50",
        )
        .bind(profile_id)
        .fetch_all(&db.read)
        .await?;
    Ok(rows
        .into_iter()
        .map(
            |(id, user_agent, created_at, last_seen_at, revoked_at)| SessionInfo {
                id,
                user_agent,
                created_at,
                last_seen_at,
                revoked_at,
            },
        )
        .collect())
}

/// Revokes one of a profile's sessions; false when it has none of that id.
///
/// # Errors
/// Database failures.
pub async fn revoke_session(
    db: &Db,
    profile_id: &str,
    session_id: &str,
) -> Result<bool, sqlx::Error> {
    let r = crate::store::query(
        "UPDATE dashboard_sessions SET revoked_at = coalesce(revoked_at, ?) WHERE id = ? AND profile_id = ?",
    )
    .bind(crate::timestamp::now())
    .bind(session_id)
    .bind(profile_id)
    .execute(&db.write)
    .await?;
    Ok(r.rows_affected() > 0)
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

/// An organisation's members, oldest first.
///
/// # Errors
/// Database failures.
pub async fn list_members(db: &Db, org_id: &str) -> Result<Vec<MemberInfo>, sqlx::Error> {
    let rows: Vec<(String, String, String, String, crate::store::Flag, String)> = crate::store::query_as(
        "SELECT p.id, p.email, p.name, m.role, p.password_hash IS NOT NULL, m.created_at FROM memberships m \
         JOIN profiles p ON p.id = m.profile_id WHERE m.org_id = ? ORDER BY m.created_at, p.email",
    )
    .bind(org_id)
    .fetch_all(&db.read)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(profile_id, email, name, role, has_password, since)| MemberInfo {
                profile_id,
                email,
                name,
                role: Role::parse(&role).unwrap_or(Role::Member),
                has_password: has_password.0,
                since,
            },
        )
        .collect())
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
