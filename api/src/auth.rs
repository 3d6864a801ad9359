//! API-key authentication and scopes.
//!
//! A key is `svc_live_` + 44 base62 characters, sent whole in `X-API-Key`. Only its SHA-256
//! is stored (the secret has 260 bits of entropy, so a slow password hash buys nothing).
//! Verified keys are cached for [`KEY_CACHE_TTL`]: a new key works at once (a miss goes to
//! the database), a revoked one stops within that time, including when the admin CLI
//! revokes it from another process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::store::Db;

pub const KEY_PREFIX: &str = "svc_live_";
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
}

impl Scope {
    pub const ALL: [Scope; 20] = [
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
        }
    }

    pub fn parse(s: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|sc| sc.name() == s)
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
    let digest = Sha256::digest(key.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Cache of verified keys by hash.
#[derive(Default)]
pub struct KeyCache {
    entries: Mutex<HashMap<String, (Caller, Instant)>>,
}

impl KeyCache {
    async fn lookup(&self, db: &Db, hash: &str) -> ApiResult<Option<Caller>> {
        if let Ok(map) = self.entries.lock()
            && let Some((caller, at)) = map.get(hash)
            && at.elapsed() < KEY_CACHE_TTL
        {
            return Ok(Some(caller.clone()));
        }
        let row: Option<(String, String, String, Option<i64>)> = sqlx::query_as(
            "SELECT id, org_id, scopes, rate_limit FROM api_keys WHERE secret_hash = ? AND revoked_at IS NULL",
        )
        .bind(hash)
        .fetch_optional(&db.read)
        .await?;
        let caller = row.map(|(key_id, org_id, scopes, rate_limit)| Caller {
            key_id,
            org_id,
            grants: Grants::from_stored(&scopes),
            rate_limit: rate_limit
                .map_or(DEFAULT_RATE_LIMIT, |n| n.clamp(1, u32::MAX as i64) as u32),
        });
        if let Ok(mut map) = self.entries.lock() {
            match &caller {
                Some(c) => {
                    if map.len() > 100_000 {
                        map.clear();
                    }
                    map.insert(hash.to_string(), (c.clone(), Instant::now()));
                }
                None => {
                    map.remove(hash);
                }
            }
        }
        Ok(caller)
    }
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
pub async fn authenticate(
    State(state): State<crate::app::AppState>,
    mut req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let path = req.uri().path();
    if !(path == "/v1" || path.starts_with("/v1/")) {
        return Ok(next.run(req).await);
    }
    let key = key_from_headers(req.headers())?;
    let caller = state
        .keys
        .lookup(&state.db, &hash_key(key))
        .await?
        .ok_or_else(|| unauthorized("Unknown or revoked API key"))?;
    tracing::Span::current().record("org_id", caller.org_id.as_str());
    req.extensions_mut().insert(Arc::new(caller));
    Ok(next.run(req).await)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_parse_and_store() {
        assert_eq!(Grants::parse_list("all"), Ok(Grants::All));
        let g = Grants::parse_list("brands:read, products:write").unwrap();
        assert!(g.allows(Scope::BrandsRead) && !g.allows(Scope::BrandsWrite));
        assert_eq!(Grants::from_stored(&g.to_stored()), g);
        assert_eq!(Grants::from_stored(&Grants::All.to_stored()), Grants::All);
        assert!(Grants::parse_list("brands:nope").is_err());
        assert!(Grants::parse_list("").is_err());
        for s in Scope::ALL {
            assert_eq!(Scope::parse(s.name()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.name());
        }
    }
}
