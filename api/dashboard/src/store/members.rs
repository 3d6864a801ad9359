//! Every SQL statement of the dashboard's people ([`crate::members`]): profiles,
//! memberships, sign-in links and sessions, as functions named for what they do. Tokens are
//! stored as their SHA-256 only.

use crate::members::{
    Added, LAST_SEEN_PRECISION_SECS, LINK_TTL_SECS, MemberError, MemberInfo, Role,
    SESSION_IDLE_SECS, SessionInfo, SessionMember, new_token, normalize_email,
};
use adforge_api::auth::hash_key as sha256_hex;
use adforge_api::store::Db;

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
    let now = adforge_api::timestamp::now();
    let mut tx = db.begin_write().await?;
    let existing: Option<(String, bool)> =
        adforge_api::store::query_as::<(String, adforge_api::store::Flag)>(
            "SELECT id, is_operator FROM profiles WHERE email = ?",
        )
        .bind(&email)
        .fetch_optional(&mut *tx)
        .await?
        .map(|(id, op)| (id, op.0));
    let (profile_id, is_operator) = match existing {
        Some((id, was)) => {
            if operator && !was {
                adforge_api::store::query(
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
            let id = adforge_api::ids::new_id("prof");
            adforge_api::store::query("INSERT INTO profiles (id, email, name, is_operator, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)")
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
    adforge_api::store::query(
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
    let expires = adforge_api::timestamp::format(
        time::OffsetDateTime::now_utc() + time::Duration::seconds(LINK_TTL_SECS),
    );
    adforge_api::store::query("INSERT INTO sign_in_links (token_hash, profile_id, org_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)")
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

/// A link that can still be redeemed: (profile id, organisation id, email).
///
/// # Errors
/// Database failures.
pub async fn open_link(
    db: &Db,
    token: &str,
) -> Result<Option<(String, String, String)>, sqlx::Error> {
    adforge_api::store::query_as(
        "SELECT l.profile_id, l.org_id, p.email FROM sign_in_links l JOIN profiles p ON p.id = l.profile_id \
         WHERE l.token_hash = ? AND l.used_at IS NULL AND l.expires_at > ?",
    )
    .bind(sha256_hex(token))
    .bind(adforge_api::timestamp::now())
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
    let now = adforge_api::timestamp::now();
    let mut tx = db.begin_write().await?;
    let found: Option<(String, String)> = adforge_api::store::query_as(
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
    adforge_api::store::query("UPDATE profiles SET password_hash = ?, updated_at = ? WHERE id = ?")
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
    adforge_api::store::query_as(
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
    let id = adforge_api::ids::new_id("dss");
    let now = adforge_api::timestamp::now();
    adforge_api::store::query("INSERT INTO dashboard_sessions (id, profile_id, org_id, token_hash, csrf_token, user_agent, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
        .bind(&id)
        .bind(profile_id)
        .bind(org_id)
        .bind(sha256_hex(&token))
        .bind(new_token())
        .bind(user_agent.map(|u| u.chars().take(200).collect::<String>()))
        .bind(&now)
        .bind(&now)
        .execute(&mut *db.write_conn().await?)
        .await?;
    Ok((token, id))
}

/// The member of a live session token (also refreshing its `last_seen_at`).
///
/// # Errors
/// Database failures.
pub async fn session_member(db: &Db, token: &str) -> Result<Option<SessionMember>, sqlx::Error> {
    let idle_limit = adforge_api::timestamp::seconds_ago(SESSION_IDLE_SECS);
    let row: Option<(String, String, String, String, String, adforge_api::store::Flag, String, String, String, String)> =
        adforge_api::store::query_as(
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
    if last_seen < adforge_api::timestamp::seconds_ago(LAST_SEEN_PRECISION_SECS) {
        adforge_api::store::query("UPDATE dashboard_sessions SET last_seen_at = ? WHERE id = ?")
            .bind(adforge_api::timestamp::now())
            .bind(&session_id)
            .execute(&mut *db.write_conn().await?)
            .await?;
    }
    let orgs: Vec<(String, String)> = adforge_api::store::query_as(
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
    let r = adforge_api::store::query(
        "UPDATE dashboard_sessions SET org_id = ?1 WHERE id = ?2 AND profile_id = ?3 \
         AND EXISTS (SELECT 1 FROM memberships WHERE profile_id = ?3 AND org_id = ?1)",
    )
    .bind(org_id)
    .bind(session_id)
    .bind(profile_id)
    .execute(&mut *db.write_conn().await?)
    .await?;
    Ok(r.rows_affected() > 0)
}

/// A profile's sessions, newest first (the last 50).
///
/// # Errors
/// Database failures.
pub async fn list_sessions(db: &Db, profile_id: &str) -> Result<Vec<SessionInfo>, sqlx::Error> {
    let rows: Vec<(String, Option<String>, String, String, Option<String>)> =
        adforge_api::store::query_as(
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
    let r = adforge_api::store::query(
        "UPDATE dashboard_sessions SET revoked_at = coalesce(revoked_at, ?) WHERE id = ? AND profile_id = ?",
    )
    .bind(adforge_api::timestamp::now())
    .bind(session_id)
    .bind(profile_id)
    .execute(&mut *db.write_conn().await?)
    .await?;
    Ok(r.rows_affected() > 0)
}

/// An organisation's members, oldest first.
///
/// # Errors
/// Database failures.
pub async fn list_members(db: &Db, org_id: &str) -> Result<Vec<MemberInfo>, sqlx::Error> {
    let rows: Vec<(String, String, String, String, adforge_api::store::Flag, String)> = adforge_api::store::query_as(
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
