//! Every SQL statement of `/v1/image-ad-batches`, as functions named for what they do.
//! Functions taking `&mut AnyConnection` run inside the caller's transaction.
//!
//! A batch's own tables are `image_ad_batches` and `image_ad_batch_items` (one row per ad:
//! its index in the matrix and what it was made of). Its counts, the amount charged and
//! the ZIP's rows are read from `image_ads` by `batch_id`: the batch's view of its ads,
//! read-only here (an ad's writes stay in `image_ads`' store and applier).
//!
//! The texts are the portable subset both engines share (see [`crate::store`]); sums are
//! added up in Rust from grouped counts, since PostgreSQL's `sum(bigint)` is a numeric.

use std::collections::HashMap;

use sqlx::{AnyConnection, AnyPool, FromRow};

use super::{BatchCounts, ImageAdBatch, ImageAdBatchCreate};
use crate::error::{ApiResult, ErrorCode};
use crate::http::envelope::Page;
use crate::resources::common::Table;
use crate::resources::variants::Price;
use crate::store::Db;
use crate::store::list::{Condition, ListParams, ListQuery};

/// A row of `image_ad_batches` as every read selects it ([`COLUMNS`]).
#[derive(FromRow)]
pub(super) struct BatchRow {
    pub id: String,
    brand_id: Option<String>,
    request: String,
    #[sqlx(try_from = "crate::store::Flag")]
    editable: bool,
    ad_count: i64,
    total_price_cents: i64,
    pub status: String,
    cancelled_at: Option<String>,
    created_at: String,
    completed_at: Option<String>,
}

const COLUMNS: &str = "t.id, t.brand_id, t.request, t.editable, t.ad_count, t.total_price_cents, t.status, \
    t.cancelled_at, t.created_at, t.completed_at";

const TABLE: Table = Table {
    name: "image_ad_batches",
    columns: COLUMNS,
    not_found: ErrorCode::ImageAdBatchNotFound,
    kind: "image ad batch",
};

fn usd(amount: i64) -> Price {
    Price {
        amount,
        currency: "usd".to_owned(),
    }
}

impl BatchRow {
    /// The batch as the API shows it, with its ads' counts and the amount charged.
    pub(super) fn into_batch(self, counts: BatchCounts, charged_cents: i64) -> ImageAdBatch {
        let request: ImageAdBatchCreate = serde_json::from_str(&self.request).unwrap_or_default();
        let progress = if self.ad_count > 0 {
            counts.ended() as f64 / self.ad_count as f64
        } else {
            1.0
        };
        ImageAdBatch {
            id: self.id,
            status: self.status,
            ad_count: self.ad_count,
            total_price: usd(self.total_price_cents),
            amount_charged: usd(charged_cents),
            counts,
            progress,
            product_ids: request.product_ids.unwrap_or_default(),
            brand_id: self.brand_id,
            reference_ad_urls: request.reference_ad_urls,
            design_template_ids: request.design_template_ids,
            audience_ids: request.audience_ids,
            sizes: request.sizes,
            editable: self.editable,
            prompt: request.prompt,
            created_at: self.created_at,
            completed_at: self.completed_at,
            cancelled_at: self.cancelled_at,
        }
    }
}

/// A new batch.
pub(super) struct NewBatch<'a> {
    pub id: &'a str,
    pub org_id: &'a str,
    pub brand_id: Option<&'a str>,
    /// The body as accepted, product ids resolved.
    pub request: &'a ImageAdBatchCreate,
    pub ad_count: i64,
    pub total_price_cents: i64,
    pub now: &'a str,
}

/// Inserts a `processing` batch.
pub(super) async fn insert_batch(conn: &mut AnyConnection, b: &NewBatch<'_>) -> ApiResult<()> {
    crate::store::query(
        "INSERT INTO image_ad_batches (id, org_id, brand_id, request, editable, ad_count, total_price_cents, \
         status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'processing', ?, ?)",
    )
    .bind(b.id)
    .bind(b.org_id)
    .bind(b.brand_id)
    .bind(crate::store::to_json_text(b.request))
    .bind(i64::from(b.request.editable))
    .bind(b.ad_count)
    .bind(b.total_price_cents)
    .bind(b.now)
    .bind(b.now)
    .execute(conn)
    .await?;
    Ok(())
}

/// One ad of a batch: its index in the matrix and what it was made of.
pub(super) struct NewItem<'a> {
    pub item: i64,
    pub ad_id: &'a str,
    pub product_id: &'a str,
    pub product_name: &'a str,
    /// The reference URL or the design template id.
    pub layout: &'a str,
    /// The placement name or `WxH`; `None`: the layout's own shape.
    pub size: Option<&'a str>,
}

/// Inserts the item rows of a batch.
pub(super) async fn insert_item(
    conn: &mut AnyConnection,
    batch_id: &str,
    i: &NewItem<'_>,
) -> ApiResult<()> {
    crate::store::query(
        "INSERT INTO image_ad_batch_items (batch_id, item, ad_id, product_id, product_name, layout, size) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(batch_id)
    .bind(i.item)
    .bind(i.ad_id)
    .bind(i.product_id)
    .bind(i.product_name)
    .bind(i.layout)
    .bind(i.size)
    .execute(conn)
    .await?;
    Ok(())
}

/// The live batch `id` of `org_id`.
///
/// # Errors
/// IMAGE_AD_BATCH_NOT_FOUND (also for another organisation's batch); database failures.
pub(super) async fn load<'e, E: sqlx::AnyExecutor<'e>>(
    ex: E,
    org_id: &str,
    id: &str,
) -> ApiResult<BatchRow> {
    TABLE.load(ex, org_id, id).await
}

/// [`load`] as a point read.
///
/// # Errors
/// As [`load`].
pub(super) async fn read(db: &Db, org_id: &str, id: &str) -> ApiResult<BatchRow> {
    TABLE.read(db, org_id, id).await
}

/// The counts of each batch's ads by state and the cents charged so far, by batch id
/// (batches with no ads are absent).
///
/// # Errors
/// Database failures.
pub(super) async fn counts<'e, E: sqlx::AnyExecutor<'e>>(
    ex: E,
    batch_ids: &[String],
) -> ApiResult<HashMap<String, (BatchCounts, i64)>> {
    let mut out: HashMap<String, (BatchCounts, i64)> = HashMap::new();
    if batch_ids.is_empty() {
        return Ok(out);
    }
    let sql = format!(
        "SELECT batch_id, status, CAST(CASE WHEN error_code = ? THEN 1 ELSE 0 END AS BIGINT), \
         CAST(CASE WHEN charged_at IS NULL THEN 0 ELSE 1 END AS BIGINT), price_cents, count(*) \
         FROM image_ads WHERE batch_id IN ({}) GROUP BY 1, 2, 3, 4, 5",
        crate::store::marks(batch_ids.len())
    );
    let mut q =
        crate::store::query_as::<(String, String, i64, i64, i64, i64)>(&sql).bind(super::CANCELLED);
    for id in batch_ids {
        q = q.bind(id);
    }
    for (batch_id, status, cancelled, charged, price, n) in q.fetch_all(ex).await? {
        let entry = out.entry(batch_id).or_default();
        match (status.as_str(), cancelled) {
            ("processing", _) => entry.0.processing += n,
            ("completed", _) => entry.0.completed += n,
            (_, 1) => entry.0.cancelled += n,
            _ => entry.0.failed += n,
        }
        if charged == 1 {
            entry.1 += price * n;
        }
    }
    Ok(out)
}

/// One page of `org_id`'s batches.
///
/// # Errors
/// VALIDATION_ERROR for a bad cursor; database failures.
pub(super) async fn list(
    db: &Db,
    org_id: &str,
    status: Option<&[String]>,
    p: &ListParams,
) -> ApiResult<Page<BatchRow>> {
    let mut conditions = Vec::new();
    if let Some(values) = status {
        conditions.push(Condition::any_of(Some("status"), "t.status", values));
    }
    ListQuery {
        table: "image_ad_batches",
        columns: COLUMNS,
        joins: "",
        org_id,
        conditions,
        facet_columns: &[("status", "t.status")],
    }
    .fetch::<BatchRow>(db, p)
    .await
}

/// Records that cancel was asked (the first time).
pub(super) async fn mark_cancelled(conn: &mut AnyConnection, id: &str, now: &str) -> ApiResult<()> {
    crate::store::query(
        "UPDATE image_ad_batches SET cancelled_at = coalesce(cancelled_at, ?), updated_at = ? WHERE id = ?",
    )
    .bind(now)
    .bind(now)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// The batch's ads still processing their first version, in matrix order.
///
/// # Errors
/// Database failures.
pub(super) async fn processing_first_versions(
    pool: &AnyPool,
    batch_id: &str,
) -> ApiResult<Vec<String>> {
    Ok(crate::store::query_scalar(
        "SELECT id FROM image_ads WHERE batch_id = ? AND status = 'processing' AND current_version = 1 ORDER BY seq",
    )
    .bind(batch_id)
    .fetch_all(pool)
    .await?)
}

/// The organisation and batch of an ad, when it belongs to one.
///
/// # Errors
/// Database failures.
pub(super) async fn batch_of_ad(
    conn: &mut AnyConnection,
    ad_id: &str,
) -> ApiResult<Option<(String, String)>> {
    let row: Option<(String, Option<String>)> =
        crate::store::query_as("SELECT org_id, batch_id FROM image_ads WHERE id = ?")
            .bind(ad_id)
            .fetch_optional(conn)
            .await?;
    Ok(row.and_then(|(org, batch)| batch.map(|b| (org, b))))
}

/// Ends the batch when none of its ads is processing any more and it has not ended yet:
/// `cancelled` when cancel was asked, `failed` when no ad completed, else `completed`.
/// `true` when this call ended it (exactly once per batch).
///
/// # Errors
/// Database failures.
pub(super) async fn end_if_last(
    conn: &mut AnyConnection,
    batch_id: &str,
    now: &str,
) -> ApiResult<bool> {
    let done = crate::store::query(
        "UPDATE image_ad_batches SET status = CASE \
           WHEN cancelled_at IS NOT NULL THEN 'cancelled' \
           WHEN EXISTS (SELECT 1 FROM image_ads a WHERE a.batch_id = ? AND a.status = 'completed') THEN 'completed' \
           ELSE 'failed' END, \
         completed_at = ?, updated_at = ? \
         WHERE id = ? AND status = 'processing' \
         AND NOT EXISTS (SELECT 1 FROM image_ads a WHERE a.batch_id = ? AND a.status = 'processing')",
    )
    .bind(batch_id)
    .bind(now)
    .bind(now)
    .bind(batch_id)
    .bind(batch_id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A completed ad of a batch as the ZIP needs it.
#[derive(FromRow)]
pub(super) struct ZipRow {
    pub item: i64,
    pub ad_id: String,
    pub product_id: String,
    pub product_name: String,
    pub layout: String,
    pub size: Option<String>,
    pub image_url: Option<String>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    pub copy_report: Option<String>,
}

/// Up to `limit` completed, live ads of the batch after item `after`, in item order.
///
/// # Errors
/// Database failures.
pub(super) async fn completed_items(
    pool: &AnyPool,
    batch_id: &str,
    after: i64,
    limit: i64,
) -> ApiResult<Vec<ZipRow>> {
    Ok(crate::store::query_as::<ZipRow>(
        "SELECT i.item, i.ad_id, i.product_id, i.product_name, i.layout, i.size, a.image_url, a.width, a.height, \
         a.copy_report FROM image_ad_batch_items i JOIN image_ads a ON a.id = i.ad_id \
         WHERE i.batch_id = ? AND i.item > ? AND a.status = 'completed' AND a.deleted_at IS NULL \
         ORDER BY i.item LIMIT ?",
    )
    .bind(batch_id)
    .bind(after)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}
