//! API-key authentication and scopes.
//!
//! A key is `svc_live_` + 44 base62 characters, sent whole in `X-API-Key`. Only its SHA-256
//! is stored (the secret has 260 bits of entropy, so a slow password hash buys nothing).
//! Verified keys are cached for [`KEY_CACHE_TTL`]: a new key works at once (a miss goes to
//! the database), a revoked one stops within that time, including when the admin CLI
//! revokes it from another process.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::header;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::store::Db;

use crate::ids::KEY_PREFIX;
/// How long a verified key is trusted without asking the database again.
pub const KEY_CACHE_TTL: Duration = Duration::from_secs(2);
/// Requests per rolling 60 s for keys without an override.
pub const DEFAULT_RATE_LIMIT: u32 = 100;

/// Every scope a key can carry. `all` on a key grants each of them, including scopes
/// added in later versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
pub enum Scope {
    #[serde(rename = "brands:read")]
    BrandsRead,
    #[serde(rename = "brands:write")]
    BrandsWrite,
    #[serde(rename = "products:read")]
    ProductsRead,
    #[serde(rename = "products:write")]
    ProductsWrite,
    #[serde(rename = "product_variants:read")]
    ProductVariantsRead,
    #[serde(rename = "product_variants:write")]
    ProductVariantsWrite,
    #[serde(rename = "audiences:read")]
    AudiencesRead,
    #[serde(rename = "audiences:write")]
    AudiencesWrite,
    #[serde(rename = "images:read")]
    ImagesRead,
    #[serde(rename = "images:write")]
    ImagesWrite,
    #[serde(rename = "image_ads:read")]
    ImageAdsRead,
    #[serde(rename = "image_ads:write")]
    ImageAdsWrite,
    #[serde(rename = "design_templates:read")]
    DesignTemplatesRead,
    #[serde(rename = "design_templates:write")]
    DesignTemplatesWrite,
    #[serde(rename = "swipe_files:read")]
    SwipeFilesRead,
    #[serde(rename = "swipe_files:write")]
    SwipeFilesWrite,
    #[serde(rename = "design_packs:read")]
    DesignPacksRead,
    #[serde(rename = "design_packs:write")]
    DesignPacksWrite,
    /// Webhook endpoints, their deliveries, and events.
    #[serde(rename = "webhooks:read")]
    WebhooksRead,
    /// Create, change, delete and rotate webhook endpoints; redeliver events.
    #[serde(rename = "webhooks:write")]
    WebhooksWrite,
    /// See the organisation's design-tool connections (never their tokens).
    #[serde(rename = "integrations:read")]
    IntegrationsRead,
    /// Connect and disconnect design tools (store and remove their tokens).
    #[serde(rename = "integrations:write")]
    IntegrationsWrite,
}

impl Scope {
    pub const ALL: [Scope; 22] = [
        Scope::BrandsRead,
        Scope::BrandsWrite,
        Scope::ProductsRead,
        Scope::ProductsWrite,
        Scope::ProductVariantsRead,
        Scope::ProductVariantsWrite,
        Scope::AudiencesRead,
        Scope::AudiencesWrite,
        Scope::ImagesRead,
        Scope::ImagesWrite,
        Scope::ImageAdsRead,
        Scope::ImageAdsWrite,
        Scope::DesignTemplatesRead,
        Scope::DesignTemplatesWrite,
        Scope::SwipeFilesRead,
        Scope::SwipeFilesWrite,
        Scope::DesignPacksRead,
        Scope::DesignPacksWrite,
        Scope::WebhooksRead,
        Scope::WebhooksWrite,
        Scope::IntegrationsRead,
        Scope::IntegrationsWrite,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scope::BrandsRead => "brands:read",
            Scope::BrandsWrite => "brands:write",
            Scope::ProductsRead => "products:read",
            Scope::ProductsWrite => "products:write",
            Scope::ProductVariantsRead => "product_variants:read",
            Scope::ProductVariantsWrite => "product_variants:write",
            Scope::AudiencesRead => "audiences:read",
            Scope::AudiencesWrite => "audiences:write",
            Scope::ImagesRead => "images:read",
            Scope::ImagesWrite => "images:write",
            Scope::ImageAdsRead => "image_ads:read",
            Scope::ImageAdsWrite => "image_ads:write",
            Scope::DesignTemplatesRead => "design_templates:read",
            Scope::DesignTemplatesWrite => "design_templates:write",
            Scope::SwipeFilesRead => "swipe_files:read",
            Scope::SwipeFilesWrite => "swipe_files:write",
            Scope::DesignPacksRead => "design_packs:read",
            Scope::DesignPacksWrite => "design_packs:write",
            Scope::WebhooksRead => "webhooks:read",
            Scope::WebhooksWrite => "webhooks:write",
            Scope::IntegrationsRead => "integrations:read",
            Scope::IntegrationsWrite => "integrations:write",
        }
    }

    pub fn parse(s: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|sc| sc.name() == s)
    }

    /// Every scope name, backticked and comma-separated: the README's list is this text
    /// (a test compares them, so the list cannot drift from the enum).
    pub fn markdown_list() -> String {
        Scope::ALL
            .iter()
            .map(|s| format!("`{}`", s.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What a key may do: every scope, or a listed set.
#[derive(Debug, Clone, PartialEq)]
pub enum Grants {
    All,
    Some(Vec<Scope>),
}

impl Grants {
    /// Parses `all` or `a:read,b:write`.
    ///
    /// # Errors
    /// Names the unknown scope and lists the known ones.
    pub fn parse_list(s: &str) -> Result<Self, String> {
        if s.trim() == "all" {
            return Ok(Grants::All);
        }
        let mut scopes = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match Scope::parse(part) {
                Some(sc) if !scopes.contains(&sc) => scopes.push(sc),
                Some(_) => {}
                None => {
                    let known: Vec<_> = Scope::ALL.iter().map(|s| s.name()).collect();
                    return Err(format!(
                        "unknown scope `{part}`; use `all` or some of: {}",
                        known.join(", ")
                    ));
                }
            }
        }
        if scopes.is_empty() {
            return Err("no scopes given; use `all` or a comma-separated list".into());
        }
        Ok(Grants::Some(scopes))
    }

    pub fn allows(&self, scope: Scope) -> bool {
        match self {
            Grants::All => true,
            Grants::Some(list) => list.contains(&scope),
        }
    }

    /// The stored form: a JSON array of names, `["all"]` for every scope.
    pub fn to_stored(&self) -> String {
        match self {
            Grants::All => r#"["all"]"#.to_string(),
            Grants::Some(list) => {
                crate::store::to_json_text(&list.iter().map(|s| s.name()).collect::<Vec<_>>())
            }
        }
    }

    fn from_stored(s: &str) -> Self {
        let names: Vec<String> = serde_json::from_str(s).unwrap_or_default();
        if names.iter().any(|n| n == "all") {
            return Grants::All;
        }
        Grants::Some(names.iter().filter_map(|n| Scope::parse(n)).collect())
    }

    /// Scope names, expanded.
    pub fn names(&self) -> Vec<&'static str> {
        match self {
            Grants::All => Scope::ALL.iter().map(|s| s.name()).collect(),
            Grants::Some(list) => list.iter().map(|s| s.name()).collect(),
        }
    }
}

/// The caller, as established by the auth middleware; handlers take it as an extension.
#[derive(Debug, Clone)]
pub struct Caller {
    pub key_id: String,
    pub org_id: String,
    pub grants: Grants,
    pub rate_limit: u32,
}

impl Caller {
    /// # Errors
    /// 403 FORBIDDEN naming the missing scope.
    pub fn require(&self, scope: Scope) -> ApiResult<()> {
        if self.grants.allows(scope) {
            Ok(())
        } else {
            Err(ApiError::new(
                ErrorCode::Forbidden,
                format!(
                    "This API key lacks the scope `{}` needed for this request; issue a key with that scope",
                    scope.name()
                ),
            ))
        }
    }
}

/// Hex SHA-256 of a whole key.
pub fn hash_key(key: &str) -> String {
    hex(&key_digest(key))
}

/// SHA-256 of a whole key: the cache's key (the stored form is its hex, [`hash_key`]).
fn key_digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

/// Records a key's last use, to the minute: at most one write per key and minute (only
/// cache misses get here, and only when the stored time is a minute old), off the request.
fn note_use(db: &Db, key_id: &str, last_used: Option<&str>) {
    let minute_ago = crate::timestamp::seconds_ago(LAST_USED_PRECISION_SECS);
    if last_used.is_some_and(|t| t > minute_ago.as_str()) {
        return;
    }
    let (db, key_id) = (db.clone(), key_id.to_string());
    tokio::spawn(async move {
        let r = match db.write_conn().await {
            Ok(mut conn) => {
                crate::store::query("UPDATE api_keys SET last_used_at = ? WHERE id = ?")
                    .bind(crate::timestamp::now())
                    .bind(&key_id)
                    .execute(&mut *conn)
                    .await
                    .map(|_| ())
            }
            Err(e) => Err(e),
        };
        if let Err(e) = r {
            tracing::warn!(error = %e, key_id, "cannot record the key's last use");
        }
    });
}

/// `last_used_at` is kept to this many seconds.
pub const LAST_USED_PRECISION_SECS: i64 = 60;
/// How long the old secret of a rotated key keeps working.
pub const ROTATION_GRACE_SECS: i64 = 24 * 3600;

/// A freshly issued key; `secret` is its only copy.
#[derive(Debug, Clone)]
pub struct NewKey {
    pub id: String,
    pub secret: String,
    pub org_id: String,
    pub grants: Grants,
    pub rate_limit: Option<u32>,
}

/// A stored key as the admin CLI and the dashboard list it (never its secret).
#[derive(Debug, Clone)]
pub struct KeyInfo {
    pub id: String,
    pub last4: String,
    pub grants: Grants,
    pub rate_limit: Option<u32>,
    pub created_at: String,
    pub revoked_at: Option<String>,
    /// Set on a rotated key: the end of its grace period.
    pub expires_at: Option<String>,
    pub last_used_at: Option<String>,
    pub rotated_from: Option<String>,
}

impl KeyInfo {
    /// Neither revoked nor past its rotation grace period.
    pub fn is_active(&self) -> bool {
        self.revoked_at.is_none()
            && self
                .expires_at
                .as_ref()
                .is_none_or(|t| t.as_str() > crate::timestamp::now().as_str())
    }
}

/// Issues a key of `org_id` (which the caller has checked exists). The one way keys are
/// made: the admin CLI, the first start and the dashboard all call it.
///
/// # Errors
/// Database failures.
pub async fn issue_key(
    conn: &mut sqlx::AnyConnection,
    org_id: &str,
    grants: &Grants,
    rate_limit: Option<u32>,
    created_by: Option<&str>,
    rotated_from: Option<&str>,
) -> Result<NewKey, sqlx::Error> {
    let id = crate::ids::new_id("key");
    let secret = crate::ids::new_api_key_secret();
    crate::store::query(
        "INSERT INTO api_keys (id, org_id, secret_hash, last4, scopes, rate_limit, created_at, created_by, rotated_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&id)
    .bind(org_id)
    .bind(hash_key(&secret))
    .bind(&secret[secret.len() - 4..])
    .bind(grants.to_stored())
    .bind(rate_limit.map(i64::from))
    .bind(crate::timestamp::now())
    .bind(created_by)
    .bind(rotated_from)
    .execute(conn)
    .await?;
    Ok(NewKey {
        id,
        secret,
        org_id: org_id.to_string(),
        grants: grants.clone(),
        rate_limit,
    })
}

/// Revokes a key (of `org_id` when given); `None` when there is no such key there. It stops
/// working within [`KEY_CACHE_TTL`] (at once in a process that also calls
/// [`KeyCache::forget_key`]).
///
/// # Errors
/// Database failures.
pub async fn revoke_key(
    db: &Db,
    org_id: Option<&str>,
    key_id: &str,
) -> Result<Option<String>, sqlx::Error> {
    let mut tx = db.begin_write().await?;
    let r = crate::store::query(
        "UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ? AND (?3 IS NULL OR org_id = ?3)",
    )
    .bind(crate::timestamp::now())
    .bind(key_id)
    .bind(org_id)
    .execute(&mut *tx)
    .await?;
    if r.rows_affected() == 0 {
        return Ok(None);
    }
    let at: Option<String> =
        crate::store::query_scalar("SELECT revoked_at FROM api_keys WHERE id = ?")
            .bind(key_id)
            .fetch_one(&mut *tx)
            .await?;
    tx.commit().await?;
    Ok(at)
}

/// Rotates an active key of `org_id`: a new key with the same scopes and rate limit, while
/// the old secret keeps working for [`ROTATION_GRACE_SECS`] (or less, if it was already
/// due to end sooner). `None` when the organisation has no such active key.
///
/// # Errors
/// Database failures.
pub async fn rotate_key(
    db: &Db,
    org_id: &str,
    key_id: &str,
    created_by: Option<&str>,
) -> Result<Option<(NewKey, String)>, sqlx::Error> {
    let mut tx = db.begin_write().await?;
    let now = crate::timestamp::now();
    let old: Option<(String, Option<i64>, Option<String>)> = crate::store::query_as(
        "SELECT scopes, rate_limit, expires_at FROM api_keys WHERE id = ? AND org_id = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)",
    )
    .bind(key_id)
    .bind(org_id)
    .bind(&now)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((scopes, rate_limit, expires_at)) = old else {
        return Ok(None);
    };
    let grace_end = crate::timestamp::format(
        time::OffsetDateTime::now_utc() + time::Duration::seconds(ROTATION_GRACE_SECS),
    );
    let ends = match expires_at {
        Some(e) if e < grace_end => e,
        _ => grace_end,
    };
    let rate_limit = rate_limit.map(|n| n.clamp(1, u32::MAX as i64) as u32);
    let new = issue_key(
        &mut tx,
        org_id,
        &Grants::from_stored(&scopes),
        rate_limit,
        created_by,
        Some(key_id),
    )
    .await?;
    crate::store::query("UPDATE api_keys SET expires_at = ? WHERE id = ?")
        .bind(&ends)
        .bind(key_id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(Some((new, ends)))
}

/// An organisation's keys, newest first.
///
/// # Errors
/// Database failures.
pub async fn list_keys(db: &Db, org_id: &str) -> Result<Vec<KeyInfo>, sqlx::Error> {
    let rows: Vec<(
        String,
        String,
        String,
        Option<i64>,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    )> = crate::store::query_as(
        "SELECT id, last4, scopes, rate_limit, created_at, revoked_at, expires_at, last_used_at, rotated_from FROM api_keys WHERE org_id = ? ORDER BY created_at DESC, id",
    )
    .bind(org_id)
    .fetch_all(&db.read)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(
                id,
                last4,
                scopes,
                rate_limit,
                created_at,
                revoked_at,
                expires_at,
                last_used_at,
                rotated_from,
            )| KeyInfo {
                id,
                last4,
                grants: Grants::from_stored(&scopes),
                rate_limit: rate_limit.map(|n| n.clamp(1, u32::MAX as i64) as u32),
                created_at,
                revoked_at,
                expires_at,
                last_used_at,
                rotated_from,
            },
        )
        .collect())
}

fn unauthorized(message: &str) -> ApiError {
    ApiError::new(ErrorCode::Unauthorized, message)
}

/// Parses the `X-API-Key` header into a key, or says precisely what is wrong with it.
fn key_from_headers(headers: &axum::http::HeaderMap) -> Result<&str, ApiError> {
    let Some(raw) = headers.get("x-api-key") else {
        if headers.contains_key(header::AUTHORIZATION) {
            return Err(unauthorized(
                "The Authorization header is not accepted; send the API key in the `X-API-Key` header",
            ));
        }
        return Err(unauthorized(
            "Missing API key; send it in the `X-API-Key` header",
        ));
    };
    let key = raw
        .to_str()
        .map_err(|_| unauthorized("The `X-API-Key` header holds characters that no API key has"))?;
    if key.trim() != key {
        return Err(unauthorized(
            "The API key in `X-API-Key` has surrounding whitespace or a newline; send it exactly as issued",
        ));
    }
    let Some(secret) = key.strip_prefix(KEY_PREFIX) else {
        return Err(unauthorized(
            "Malformed API key: a key begins with `svc_live_`",
        ));
    };
    if secret.len() < 16 || !secret.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(unauthorized(
            "Malformed API key: check that it was copied whole",
        ));
    }
    Ok(key)
}

/// Authenticates every `/v1` request and puts the [`Caller`] into the request extensions.
pub async fn authenticate<N, F>(
    db: &Db,
    keys: &KeyCache,
    mut req: Request,
    next: N,
) -> Result<Response, ApiError>
where
    N: FnOnce(Request) -> F,
    F: Future<Output = Response>,
{
    let path = req.uri().path();
    if !(path == "/v1" || path.starts_with("/v1/")) {
        return Ok(next(req).await);
    }
    let key = key_from_headers(req.headers())?;
    let caller = keys
        .lookup(db, &key_digest(key))
        .await?
        .ok_or_else(|| unauthorized("Unknown or revoked API key"))?;
    tracing::Span::current().record("org_id", caller.org_id.as_str());
    req.extensions_mut().insert(caller);
    Ok(next(req).await)
}

/// Extractor for the authenticated caller of a `/v1` handler.
pub struct Auth(pub Arc<Caller>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Auth {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Arc<Caller>>()
            .cloned()
            .map(Auth)
            .ok_or_else(|| unauthorized("Missing API key; send it in the `X-API-Key` header"))
    }
}

pub mod cache;
pub use cache::KeyCache;

#[cfg(test)]
mod tests;
