//! The wallet: balance, holds and the ledger, so that an image ad is charged exactly once,
//! when it first completes, and concurrent creates can never spend more than the balance.
//!
//! `available = balance − held`. Creating a billable resource places a hold for its price
//! (refused when `available` is short); completion captures the hold as a charge; failure
//! releases it. Every movement is a ledger row. All functions run inside the caller's
//! write transaction, which serialises them per organisation (SQLite's one writer;
//! PostgreSQL's organisation lock, see [`crate::store`]), and a hold is besides one
//! conditional `UPDATE` (a row lock), so two holds can never both see the same available
//! money.

use sqlx::AnyConnection;

use crate::error::{ApiError, ApiResult, ErrorCode};

/// Prices of the SKUs, in cents (spec: flat $1.00, editable $4.00).
pub const FLAT_IMAGE_AD_CENTS: i64 = 100;
pub const EDITABLE_IMAGE_AD_CENTS: i64 = 400;

/// A wallet's totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Balance {
    pub balance_cents: i64,
    pub held_cents: i64,
}

impl Balance {
    pub fn available_cents(&self) -> i64 {
        self.balance_cents - self.held_cents
    }
}

/// `$12.34`.
pub fn dollars(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    format!("{sign}${}.{:02}", cents.abs() / 100, cents.abs() % 100)
}

/// Reads an organisation's wallet (zero when it has none yet).
///
/// # Errors
/// Database failures.
pub async fn balance(conn: &mut AnyConnection, org_id: &str) -> ApiResult<Balance> {
    let row: Option<(i64, i64)> =
        crate::store::query_as("SELECT balance_cents, held_cents FROM wallets WHERE org_id = ?")
            .bind(org_id)
            .fetch_optional(conn)
            .await?;
    let (balance_cents, held_cents) = row.unwrap_or((0, 0));
    Ok(Balance {
        balance_cents,
        held_cents,
    })
}

async fn ledger(
    conn: &mut AnyConnection,
    org_id: &str,
    kind: &str,
    cents: i64,
    reference: &str,
) -> ApiResult<()> {
    crate::store::query("INSERT INTO wallet_ledger (id, org_id, kind, amount_cents, reference, created_at) VALUES (?, ?, ?, ?, ?, ?)")
        .bind(crate::ids::new_id("wle"))
        .bind(org_id)
        .bind(kind)
        .bind(cents)
        .bind(reference)
        .bind(crate::timestamp::now())
        .execute(conn)
        .await?;
    Ok(())
}

/// Adds `cents` to an organisation's wallet, with the operator's `reference` and who made
/// it (a profile id; `None` for the admin CLI). The one top-up path: the admin CLI and the
/// dashboard's operator form both call it inside their write transaction.
///
/// # Errors
/// Database failures.
pub async fn top_up(
    conn: &mut AnyConnection,
    org_id: &str,
    cents: i64,
    reference: Option<&str>,
    created_by: Option<&str>,
) -> Result<Balance, sqlx::Error> {
    let now = crate::timestamp::now();
    crate::store::query(
        "INSERT INTO wallets (org_id, balance_cents, held_cents, updated_at) VALUES (?1, ?2, 0, ?3) \
         ON CONFLICT(org_id) DO UPDATE SET balance_cents = wallets.balance_cents + ?2, updated_at = ?3",
    )
    .bind(org_id)
    .bind(cents)
    .bind(&now)
    .execute(&mut *conn)
    .await?;
    crate::store::query("INSERT INTO wallet_ledger (id, org_id, kind, amount_cents, reference, created_at, created_by) VALUES (?, ?, 'top_up', ?, ?, ?, ?)")
        .bind(crate::ids::new_id("wle"))
        .bind(org_id)
        .bind(cents)
        .bind(reference)
        .bind(&now)
        .bind(created_by)
        .execute(&mut *conn)
        .await?;
    let (balance_cents, held_cents): (i64, i64) =
        crate::store::query_as("SELECT balance_cents, held_cents FROM wallets WHERE org_id = ?")
            .bind(org_id)
            .fetch_one(&mut *conn)
            .await?;
    Ok(Balance {
        balance_cents,
        held_cents,
    })
}

/// The kinds of ledger entries.
pub const LEDGER_KINDS: [&str; 4] = ["top_up", "hold", "charge", "release"];

/// One ledger entry.
#[derive(Debug, Clone)]
pub struct LedgerEntry {
    pub seq: i64,
    pub id: String,
    pub kind: String,
    pub amount_cents: i64,
    pub reference: Option<String>,
    pub created_at: String,
}

/// Which ledger entries to read: all bounds optional; `from`/`to` are ISO timestamps or
/// date prefixes compared as text (`to` exclusive), `before` a `seq` for paging.
#[derive(Debug, Clone, Default)]
pub struct LedgerFilter {
    pub kind: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub before: Option<i64>,
}

/// An organisation's ledger entries matching `filter`, newest first, at most `limit`.
///
/// # Errors
/// Database failures.
pub async fn ledger_entries(
    conn: &mut AnyConnection,
    org_id: &str,
    filter: &LedgerFilter,
    limit: i64,
) -> Result<Vec<LedgerEntry>, sqlx::Error> {
    let rows: Vec<(i64, String, String, i64, Option<String>, String)> = crate::store::query_as(
        "SELECT seq, id, kind, amount_cents, reference, created_at FROM wallet_ledger \
         WHERE org_id = ?1 AND (?2 IS NULL OR kind = ?2) AND (?3 IS NULL OR created_at >= ?3) \
         AND (?4 IS NULL OR created_at < ?4) AND (?5 IS NULL OR seq < ?5) ORDER BY seq DESC LIMIT ?6",
    )
    .bind(org_id)
    .bind(&filter.kind)
    .bind(&filter.from)
    .bind(&filter.to)
    .bind(filter.before)
    .bind(limit)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(seq, id, kind, amount_cents, reference, created_at)| LedgerEntry {
                seq,
                id,
                kind,
                amount_cents,
                reference,
                created_at,
            },
        )
        .collect())
}

/// Holds not yet captured or released: (reference, cents, placed at), newest first.
///
/// # Errors
/// Database failures.
pub async fn open_holds(
    conn: &mut AnyConnection,
    org_id: &str,
    limit: i64,
) -> Result<Vec<(String, i64, String)>, sqlx::Error> {
    crate::store::query_as(
        "SELECT coalesce(h.reference, ''), h.amount_cents, h.created_at FROM wallet_ledger h \
         WHERE h.org_id = ?1 AND h.kind = 'hold' AND NOT EXISTS (SELECT 1 FROM wallet_ledger x \
         WHERE x.org_id = ?1 AND x.reference = h.reference AND x.kind IN ('charge', 'release') AND x.seq > h.seq) \
         ORDER BY h.seq DESC LIMIT ?2",
    )
    .bind(org_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Places a hold of `cents` for `reference` (e.g. an image ad id).
///
/// The check and the hold are one conditional `UPDATE`: on PostgreSQL it takes the wallet's
/// row lock and re-reads the row once another hold on it commits, so two holds can never
/// both spend the same money even without the caller's organisation lock.
///
/// # Errors
/// 402 INSUFFICIENT_BALANCE with the amounts and the top-up link when the available
/// balance is short; database failures.
pub async fn hold(
    conn: &mut AnyConnection,
    org_id: &str,
    cents: i64,
    reference: &str,
    top_up_url: &str,
) -> ApiResult<Balance> {
    let held: Option<(i64, i64)> = crate::store::query_as(
        "UPDATE wallets SET held_cents = held_cents + ?1, updated_at = ?2 \
         WHERE org_id = ?3 AND balance_cents - held_cents >= ?1 RETURNING balance_cents, held_cents",
    )
    .bind(cents)
    .bind(crate::timestamp::now())
    .bind(org_id)
    .fetch_optional(&mut *conn)
    .await?;
    let after = match held {
        Some((balance_cents, held_cents)) => Balance {
            balance_cents,
            held_cents,
        },
        None => {
            let b = balance(conn, org_id).await?;
            // The UPDATE matched no row: short, or no wallet row yet (then only a hold of
            // nothing passes, as before).
            if b.available_cents() < cents {
                return Err(ApiError::new(
                    ErrorCode::InsufficientBalance,
                    format!(
                        "Insufficient balance: this costs {} and {} is available ({} balance, {} held by work in progress); top up at {top_up_url}",
                        dollars(cents),
                        dollars(b.available_cents()),
                        dollars(b.balance_cents),
                        dollars(b.held_cents),
                    ),
                ));
            }
            b
        }
    };
    ledger(conn, org_id, "hold", cents, reference).await?;
    Ok(after)
}

/// Turns a hold into a charge. Call it exactly once per billable completion (the caller's
/// state transition guarantees that).
///
/// # Errors
/// Database failures.
pub async fn capture(
    conn: &mut AnyConnection,
    org_id: &str,
    cents: i64,
    reference: &str,
) -> ApiResult<()> {
    crate::store::query(
        "UPDATE wallets SET balance_cents = balance_cents - ?1, held_cents = CASE WHEN held_cents > ?1 THEN held_cents - ?1 ELSE 0 END, updated_at = ?2 WHERE org_id = ?3",
    )
    .bind(cents)
    .bind(crate::timestamp::now())
    .bind(org_id)
    .execute(&mut *conn)
    .await?;
    ledger(conn, org_id, "charge", cents, reference).await
}

/// Releases a hold without charging (the work failed).
///
/// # Errors
/// Database failures.
pub async fn release(
    conn: &mut AnyConnection,
    org_id: &str,
    cents: i64,
    reference: &str,
) -> ApiResult<()> {
    crate::store::query(
        "UPDATE wallets SET held_cents = CASE WHEN held_cents > ?1 THEN held_cents - ?1 ELSE 0 END, updated_at = ?2 WHERE org_id = ?3",
    )
    .bind(cents)
    .bind(crate::timestamp::now())
    .bind(org_id)
    .execute(&mut *conn)
    .await?;
    ledger(conn, org_id, "release", cents, reference).await
}

/// Parses a dollar amount with at most two decimals into cents (`25`, `25.00`, `$0.5`).
pub fn parse_amount(s: &str) -> Option<i64> {
    let s = s.trim().trim_start_matches('$');
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if whole.is_empty()
        || whole.len() > 9
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || frac.len() > 2
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let cents = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<2}").parse::<i64>().ok()?
    };
    Some(whole.parse::<i64>().ok()? * 100 + cents)
}

#[cfg(test)]
mod tests {
    #[test]
    fn amounts() {
        assert_eq!(super::parse_amount("25.00"), Some(2500));
        assert_eq!(super::parse_amount("25"), Some(2500));
        assert_eq!(super::parse_amount("0.5"), Some(50));
        assert_eq!(super::parse_amount("$1.99"), Some(199));
        for bad in ["", "1.999", "-5", "abc", "1.", "1e3"] {
            assert!(super::parse_amount(bad).is_none() || bad == "1.", "{bad}");
        }
    }

    use super::*;
    use crate::store::Db;

    async fn db_with_wallet(cents: i64) -> (tempfile::TempDir, Db, String) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).await.unwrap();
        let org = crate::orgs::create_org(&db, "W").await.unwrap();
        let id = org["id"].as_str().unwrap().to_string();
        crate::store::query("UPDATE wallets SET balance_cents = ? WHERE org_id = ?")
            .bind(cents)
            .bind(&id)
            .execute(&db.write)
            .await
            .unwrap();
        (dir, db, id)
    }

    #[test]
    fn dollars_format() {
        assert_eq!(dollars(400), "$4.00");
        assert_eq!(dollars(5), "$0.05");
        assert_eq!(dollars(-150), "-$1.50");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_holds_never_exceed_the_balance() {
        let (_dir, db, org) = db_with_wallet(10 * FLAT_IMAGE_AD_CENTS).await;
        let mut tasks = Vec::new();
        for i in 0..20 {
            let (db, org) = (db.clone(), org.clone());
            tasks.push(tokio::spawn(async move {
                let mut tx = db.begin_write().await.unwrap();
                let r = hold(
                    &mut tx,
                    &org,
                    FLAT_IMAGE_AD_CENTS,
                    &format!("ad_{i}"),
                    "https://example.test/billing",
                )
                .await;
                if r.is_ok() {
                    tx.commit().await.unwrap();
                }
                r.map(|_| ()).map_err(|e| e.code)
            }));
        }
        let mut ok = 0;
        for t in tasks {
            match t.await.unwrap() {
                Ok(()) => ok += 1,
                Err(code) => assert_eq!(code, ErrorCode::InsufficientBalance),
            }
        }
        assert_eq!(ok, 10);
        let mut conn = db.read.acquire().await.unwrap();
        let b = balance(&mut conn, &org).await.unwrap();
        assert_eq!(
            b,
            Balance {
                balance_cents: 1000,
                held_cents: 1000
            }
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn capture_and_release_settle_holds() {
        let (_dir, db, org) = db_with_wallet(500).await;
        let mut tx = db.begin_write().await.unwrap();
        hold(&mut tx, &org, EDITABLE_IMAGE_AD_CENTS, "ia_1", "u")
            .await
            .unwrap();
        let e = hold(
            &mut tx,
            &org,
            EDITABLE_IMAGE_AD_CENTS,
            "ia_2",
            "https://dash.test/top-up",
        )
        .await
        .unwrap_err();
        assert!(
            e.message.contains("$4.00")
                && e.message.contains("$1.00")
                && e.message.contains("https://dash.test/top-up"),
            "{}",
            e.message
        );
        hold(&mut tx, &org, FLAT_IMAGE_AD_CENTS, "ia_3", "u")
            .await
            .unwrap();
        capture(&mut tx, &org, EDITABLE_IMAGE_AD_CENTS, "ia_1")
            .await
            .unwrap();
        release(&mut tx, &org, FLAT_IMAGE_AD_CENTS, "ia_3")
            .await
            .unwrap();
        assert_eq!(
            balance(&mut tx, &org).await.unwrap(),
            Balance {
                balance_cents: 100,
                held_cents: 0
            }
        );
        let kinds: Vec<String> = crate::store::query_scalar(
            "SELECT kind FROM wallet_ledger WHERE org_id = ? ORDER BY seq",
        )
        .bind(&org)
        .fetch_all(&mut *tx)
        .await
        .unwrap();
        assert_eq!(kinds, ["hold", "hold", "charge", "release"]);
        tx.commit().await.unwrap();
    }
}
