//! Every SQL statement of `/v1/integrations/figma`.

use adforge_worker::Job;
use sqlx::{AnyConnection, FromRow};

use crate::error::ApiResult;

/// A stored connection.
#[derive(FromRow)]
pub(super) struct ConnectionRow {
    pub token_last4: String,
    pub created_at: String,
    pub updated_at: String,
}

pub(super) async fn load<'e, E: sqlx::AnyExecutor<'e>>(
    ex: E,
    org_id: &str,
) -> ApiResult<Option<ConnectionRow>> {
    Ok(crate::store::query_as::<ConnectionRow>(
        "SELECT token_last4, created_at, updated_at FROM figma_connections WHERE org_id = ?",
    )
    .bind(org_id)
    .fetch_optional(ex)
    .await?)
}

/// The organisation's sealed token, for a sync's job; `None` when not connected.
///
/// # Errors
/// Database failures.
pub async fn sealed_token<'e, E: sqlx::AnyExecutor<'e>>(
    ex: E,
    org_id: &str,
) -> ApiResult<Option<String>> {
    Ok(crate::store::query_scalar::<String>(
        "SELECT token_sealed FROM figma_connections WHERE org_id = ?",
    )
    .bind(org_id)
    .fetch_optional(ex)
    .await?)
}

pub(super) async fn upsert(
    conn: &mut AnyConnection,
    org_id: &str,
    sealed: &str,
    last4: &str,
    now: &str,
) -> ApiResult<()> {
    crate::store::query(
        "INSERT INTO figma_connections (org_id, token_sealed, token_last4, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?) ON CONFLICT (org_id) DO UPDATE SET token_sealed = excluded.token_sealed, \
         token_last4 = excluded.token_last4, updated_at = excluded.updated_at",
    )
    .bind(org_id)
    .bind(sealed)
    .bind(last4)
    .bind(now)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

pub(super) async fn delete(conn: &mut AnyConnection, org_id: &str) -> ApiResult<()> {
    crate::store::query("DELETE FROM figma_connections WHERE org_id = ?")
        .bind(org_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Removes the sealed token from the stored jobs of the organisation's finished syncs
/// (the `job` column keeps the current job for resuming): once disconnected, no copy of
/// the token is kept, not even sealed, except in a sync still running.
pub(super) async fn scrub_jobs(conn: &mut AnyConnection, org_id: &str) -> ApiResult<()> {
    for table in ["image_ads", "design_templates"] {
        let rows: Vec<(String, String)> = crate::store::query_as(&format!(
            "SELECT id, job FROM {table} WHERE org_id = ? AND figma_file_key IS NOT NULL AND status <> 'processing'"
        ))
        .bind(org_id)
        .fetch_all(&mut *conn)
        .await?;
        for (id, job) in rows {
            let Ok(Job::SyncFigma(mut j)) = serde_json::from_str::<Job>(&job) else {
                continue;
            };
            if j.token_sealed.is_empty() {
                continue;
            }
            j.token_sealed.clear();
            crate::store::query(&format!("UPDATE {table} SET job = ? WHERE id = ?"))
                .bind(crate::store::to_json_text(&Job::SyncFigma(j)))
                .bind(&id)
                .execute(&mut *conn)
                .await?;
        }
    }
    Ok(())
}
