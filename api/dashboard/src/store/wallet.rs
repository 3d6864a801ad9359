//! What the operator's top-up section of the wallet page reads across organisations.

use adforge_api::store::Db;

/// Every organisation as (id, name), by name (the top-up form's choices).
///
/// # Errors
/// Database failures.
pub async fn organizations(db: &Db) -> Result<Vec<(String, String)>, sqlx::Error> {
    adforge_api::store::query_as("SELECT id, name FROM organizations ORDER BY name, id")
        .fetch_all(&db.read)
        .await
}

/// The last `limit` top-ups of every organisation, newest first: (org id, org name, cents,
/// reference, when).
///
/// # Errors
/// Database failures.
pub async fn recent_top_ups(
    db: &Db,
    limit: i64,
) -> Result<Vec<(String, String, i64, Option<String>, String)>, sqlx::Error> {
    adforge_api::store::query_as(
        "SELECT l.org_id, o.name, l.amount_cents, l.reference, l.created_at FROM wallet_ledger l \
         JOIN organizations o ON o.id = l.org_id WHERE l.kind = 'top_up' ORDER BY l.seq DESC LIMIT ?",
    )
    .bind(limit)
    .fetch_all(&db.read)
    .await
}
