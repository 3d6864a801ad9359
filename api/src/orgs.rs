//! Organisations and their first keys: creating one (with its empty wallet), issuing a key,
//! the default organisation of a fresh server, and the lookups the operator's tools need.
//! The server's start-up, the admin CLI, the dashboard and the tests all create
//! organisations through here, so there is one way to make one.

use serde_json::{Value, json};

use crate::Error;
use crate::auth::Grants;
use crate::store::Db;

/// An organisation as the operator's tools list it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OrgRow {
    pub id: String,
    pub name: String,
    pub created_at: String,
}

/// Every organisation, oldest first.
///
/// # Errors
/// Database failures.
pub async fn list(db: &Db) -> Result<Vec<OrgRow>, sqlx::Error> {
    crate::store::query_as("SELECT id, name, created_at FROM organizations ORDER BY created_at")
        .fetch_all(&db.read)
        .await
}

/// Whether organisation `id` exists.
///
/// # Errors
/// Database failures.
pub async fn exists(db: &Db, id: &str) -> Result<bool, sqlx::Error> {
    let found: Option<String> =
        crate::store::query_scalar("SELECT id FROM organizations WHERE id = ?")
            .bind(id)
            .fetch_optional(&db.read)
            .await?;
    Ok(found.is_some())
}

/// Fails with a message naming `org` when it does not exist.
///
/// # Errors
/// [`Error::Invalid`] for an unknown organisation; database failures.
pub async fn require(db: &Db, org: &str) -> Result<(), Error> {
    if exists(db, org).await? {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "no organization `{org}`; list them with `adforge admin org list`"
        )))
    }
}

/// Creates an organization and its empty wallet.
///
/// # Errors
/// An empty name; database failures.
pub async fn create_org(db: &Db, name: &str) -> Result<Value, Error> {
    let name = name.trim();
    if name.is_empty() {
        return Err(Error::Invalid("--name must not be empty".into()));
    }
    let id = crate::ids::new_id("org");
    let now = crate::timestamp::now();
    let mut tx = db.begin_write().await?;
    crate::store::query("INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)")
        .bind(&id)
        .bind(name)
        .bind(&now)
        .execute(&mut *tx)
        .await?;
    crate::store::query(
        "INSERT INTO wallets (org_id, balance_cents, held_cents, updated_at) VALUES (?, 0, 0, ?)",
    )
    .bind(&id)
    .bind(&now)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(json!({"id": id, "name": name}))
}

/// Issues a key; the returned JSON holds the only copy of the secret.
///
/// # Errors
/// Unknown organization, a zero rate limit, database failures.
pub async fn create_key(
    db: &Db,
    org: &str,
    grants: &Grants,
    rate_limit: Option<u32>,
) -> Result<Value, Error> {
    require(db, org).await?;
    if rate_limit == Some(0) {
        return Err(Error::Invalid("--rate-limit must be at least 1".into()));
    }
    let mut conn = db.write_conn().await?;
    let k = crate::auth::issue_key(&mut conn, org, grants, rate_limit, None, None).await?;
    Ok(
        json!({"id": k.id, "key": k.secret, "scopes": grants.names(), "org_id": org,
              "rate_limit": rate_limit.unwrap_or(crate::auth::DEFAULT_RATE_LIMIT)}),
    )
}

/// On first start with an empty database: a default organization and one all-scope key,
/// returned so `serve` can print it (once: later starts find the organization).
///
/// # Errors
/// Database failures.
pub async fn ensure_default_org(db: &Db) -> Result<Option<Value>, Error> {
    let count: i64 = crate::store::query_scalar("SELECT COUNT(*) FROM organizations")
        .fetch_one(&db.read)
        .await?;
    if count > 0 {
        return Ok(None);
    }
    let org = create_org(db, "Default organization").await?;
    let org_id = org["id"].as_str().unwrap_or_default().to_string();
    let key = create_key(db, &org_id, &Grants::All, None).await?;
    Ok(Some(json!({"organization": org, "api_key": key})))
}
