//! Every SQL statement of `/v1/swipe-files`, as functions named for what they do. The
//! handlers in [`super`] and its submodules parse, call these and respond; they hold no
//! SQL. Functions that take `&mut AnyConnection` run inside the caller's transaction (a
//! [`WriteTx`] derefs to one), so the caller keeps its transaction boundaries. Which
//! designs an organisation sees, and the list filters' conditions, are shared with the
//! search index and live in `crate::swipe::filter`.
//!
//! The texts are the portable subset both engines share (see [`crate::store`]).
//!
//! [`WriteTx`]: crate::store::WriteTx

use sqlx::{AnyConnection, FromRow};

use super::{DataSource, SwipeFile};
use crate::blob::BlobStore;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::http::envelope::Page;
use crate::store::Db;
use crate::store::list::{Bind, ListParams, ListQuery, bind_as};
use crate::swipe::filter::{SUBSCRIBED_SOURCES, SwipeFilter, visible};
use crate::swipe::vectors;

/// A row of `swipe_files` as every read selects it ([`COLUMNS`]).
#[derive(FromRow, Clone)]
pub struct SwipeRow {
    pub id: String,
    pub org_id: Option<String>,
    pub data_source_id: Option<String>,
    pub source: String,
    pub blob_key: String,
    pub thumb_key: Option<String>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    pub aspect_ratio: Option<String>,
    pub industry: Option<String>,
    pub ad_format: Option<String>,
    pub status: String,
    pub error: Option<String>,
    pub archived_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

pub const COLUMNS: &str = "t.id, t.org_id, t.data_source_id, t.source, t.blob_key, t.thumb_key, t.width, t.height, \
     t.aspect_ratio, t.industry, t.ad_format, t.status, t.error, t.archived_at, t.created_at, t.updated_at";

impl SwipeRow {
    /// The design as the API shows it.
    pub fn into_api(self, blobs: &dyn BlobStore) -> SwipeFile {
        SwipeFile {
            image_url: blobs.url(&self.blob_key),
            thumbnail_url: self.thumb_key.map(|k| blobs.url(&k)),
            is_managed: self.org_id.is_none(),
            id: self.id,
            width: self.width,
            height: self.height,
            aspect_ratio: self.aspect_ratio,
            industry: self.industry,
            ad_format: self.ad_format,
            source: self.source,
            data_source_id: self.data_source_id,
            status: self.status,
            error: self.error,
            archived_at: self.archived_at,
            created_at: self.created_at,
            updated_at: self.updated_at,
            similarity: None,
        }
    }
}

/// The visible swipe file `id`, or 404 SWIPE_FILE_NOT_FOUND.
///
/// # Errors
/// SWIPE_FILE_NOT_FOUND; database failures.
pub async fn load(db: &Db, org_id: &str, id: &str) -> ApiResult<SwipeRow> {
    let v = visible(org_id);
    let sql = format!(
        "SELECT {COLUMNS} FROM swipe_files AS t WHERE t.id = ? AND ({})",
        v.sql
    );
    let mut binds = vec![Bind::Text(id.to_string())];
    binds.extend(v.binds);
    bind_as(crate::store::query_as::<SwipeRow>(&sql), &binds)
        .fetch_optional(&db.read)
        .await?
        .ok_or_else(|| ApiError::not_found(ErrorCode::SwipeFileNotFound, "swipe file", id))
}

/// Rows of `ids` (visible or not, callers filtered), in the order given.
pub(super) async fn rows_in_order(db: &Db, ids: &[String]) -> ApiResult<Vec<SwipeRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let marks = crate::store::marks(ids.len());
    let sql = format!("SELECT {COLUMNS} FROM swipe_files AS t WHERE t.id IN ({marks})");
    let binds: Vec<Bind> = ids.iter().cloned().map(Bind::Text).collect();
    let rows = bind_as(crate::store::query_as::<SwipeRow>(&sql), &binds)
        .fetch_all(&db.read)
        .await?;
    Ok(ids
        .iter()
        .filter_map(|id| rows.iter().find(|r| &r.id == id).cloned())
        .collect())
}

/// A new design, `processing`: an own upload (`org_id`) or a managed design
/// (`data_source_id`).
pub(super) struct NewSwipeFile<'a> {
    pub id: &'a str,
    pub org_id: Option<&'a str>,
    pub data_source_id: Option<&'a str>,
    /// upload, import, studio_concept or svc_managed.
    pub source: &'a str,
    pub blob_key: &'a str,
    /// Unknown (`None`) for a design a worker fetches from a URL.
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub now: &'a str,
}

/// Inserts a new design (its aspect ratio is the nearest of the taxonomy's).
///
/// # Errors
/// Database failures.
pub(super) async fn insert(conn: &mut AnyConnection, f: &NewSwipeFile<'_>) -> ApiResult<()> {
    crate::store::query(
        "INSERT INTO swipe_files (id, org_id, data_source_id, source, blob_key, width, height, aspect_ratio, status, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'processing', ?, ?)",
    )
    .bind(f.id)
    .bind(f.org_id)
    .bind(f.data_source_id)
    .bind(f.source)
    .bind(f.blob_key)
    .bind(f.width.map(i64::from))
    .bind(f.height.map(i64::from))
    .bind(match (f.width, f.height) {
        (Some(w), Some(h)) => Some(adforge_worker::swipe::taxonomy::aspect_ratio(w, h)),
        _ => None,
    })
    .bind(f.now)
    .bind(f.now)
    .execute(conn)
    .await?;
    Ok(())
}

/// The row `id` read inside the caller's transaction: under an Idempotency-Key its commit
/// is deferred to the end of the request, so the read pool would not see the row yet.
///
/// # Errors
/// Database failures (also when the row is not there).
pub(super) async fn row_in_tx(conn: &mut AnyConnection, id: &str) -> ApiResult<SwipeRow> {
    Ok(crate::store::query_as::<SwipeRow>(&format!(
        "SELECT {COLUMNS} FROM swipe_files AS t WHERE t.id = ?"
    ))
    .bind(id)
    .fetch_one(conn)
    .await?)
}

/// One page of the designs `org_id` sees, with `filter`'s conditions, paging and the
/// facets of [`super::FACETS`].
///
/// # Errors
/// VALIDATION_ERROR for a bad cursor; database failures.
pub(super) async fn list(
    db: &Db,
    org_id: &str,
    filter: &SwipeFilter,
    p: &ListParams,
) -> ApiResult<Page<SwipeRow>> {
    ListQuery {
        table: "swipe_files",
        columns: COLUMNS,
        joins: "",
        org_id,
        conditions: filter.conditions(),
        facet_columns: &[
            ("industry", "t.industry"),
            ("ad_format", "t.ad_format"),
            ("aspect_ratio", "t.aspect_ratio"),
        ],
    }
    .fetch_visible::<SwipeRow>(db, p, visible(org_id))
    .await
}

/// The stored image vector of design `id` (model id, encoded vector), once it is ready.
///
/// # Errors
/// Database failures.
pub(super) async fn image_vector(db: &Db, id: &str) -> ApiResult<Option<(String, Vec<u8>)>> {
    Ok(crate::store::query_as(
        "SELECT model_id, vector FROM swipe_file_vectors WHERE swipe_file_id = ? AND kind = ?",
    )
    .bind(id)
    .bind(vectors::IMAGE)
    .fetch_optional(&db.read)
    .await?)
}

/// Archives (`archive`) or restores the own upload `id` of `org_id`; a design already in
/// that state is left as it is.
///
/// # Errors
/// Database failures.
pub(super) async fn set_archived(
    conn: &mut AnyConnection,
    org_id: &str,
    id: &str,
    archive: bool,
    now: &str,
) -> ApiResult<()> {
    let sql = if archive {
        "UPDATE swipe_files SET archived_at = ?, updated_at = ? WHERE id = ? AND org_id = ? AND archived_at IS NULL"
    } else {
        "UPDATE swipe_files SET archived_at = NULL, updated_at = ? WHERE id = ? AND org_id = ? AND archived_at IS NOT NULL AND ? IS NOT NULL"
    };
    let q = crate::store::query(sql);
    let q = if archive {
        q.bind(now).bind(now).bind(id).bind(org_id)
    } else {
        q.bind(now).bind(id).bind(org_id).bind(now)
    };
    q.execute(conn).await?;
    Ok(())
}

fn data_source_sql(one: bool) -> String {
    format!(
        "SELECT s.id, s.name, coalesce(u.active, s.is_default) = 1 AS subscribed, \
         (SELECT COUNT(*) FROM swipe_files f WHERE f.data_source_id = s.id AND f.status = 'ready') AS item_count \
         FROM data_sources s LEFT JOIN data_source_subscriptions u ON u.source_id = s.id AND u.org_id = ? {} ORDER BY s.seq",
        if one { "WHERE s.id = ?" } else { "" }
    )
}

/// Every data source with whether `org_id` is subscribed.
///
/// # Errors
/// Database failures.
pub(super) async fn data_sources(db: &Db, org_id: &str) -> ApiResult<Vec<DataSource>> {
    Ok(crate::store::query_as(&data_source_sql(false))
        .bind(org_id)
        .fetch_all(&db.read)
        .await?)
}

/// Data source `id` as `org_id` sees it.
///
/// # Errors
/// DATA_SOURCE_NOT_FOUND; database failures.
pub(super) async fn data_source(db: &Db, org_id: &str, id: &str) -> ApiResult<DataSource> {
    crate::store::query_as(&data_source_sql(true))
        .bind(org_id)
        .bind(id)
        .fetch_optional(&db.read)
        .await?
        .ok_or_else(|| ApiError::not_found(ErrorCode::DataSourceNotFound, "data source", id))
}

/// Whether data source `id` exists.
///
/// # Errors
/// Database failures.
pub(super) async fn data_source_exists(conn: &mut AnyConnection, id: &str) -> ApiResult<bool> {
    let exists: Option<String> =
        crate::store::query_scalar("SELECT id FROM data_sources WHERE id = ?")
            .bind(id)
            .fetch_optional(conn)
            .await?;
    Ok(exists.is_some())
}

/// Turns data source `id` on or off for `org_id` (an upsert: idempotent).
///
/// # Errors
/// Database failures.
pub(super) async fn set_subscription(
    conn: &mut AnyConnection,
    org_id: &str,
    id: &str,
    active: bool,
) -> ApiResult<()> {
    crate::store::query(
        "INSERT INTO data_source_subscriptions (org_id, source_id, active, updated_at) VALUES (?, ?, ?, ?) \
         ON CONFLICT(org_id, source_id) DO UPDATE SET active = excluded.active, updated_at = excluded.updated_at",
    )
    .bind(org_id)
    .bind(id)
    .bind(i64::from(active))
    .bind(crate::timestamp::now())
    .execute(conn)
    .await?;
    Ok(())
}

/// Subscribed source ids of an organisation (for callers outside this module).
///
/// # Errors
/// Database failures.
pub async fn subscribed_sources(db: &Db, org_id: &str) -> ApiResult<Vec<String>> {
    Ok(crate::store::query_scalar(SUBSCRIBED_SOURCES)
        .bind(org_id)
        .fetch_all(&db.read)
        .await?)
}

/// A design as the global search labels it: (id, ad format, industry, preview blob key).
pub(super) type LabelRow = (String, Option<String>, Option<String>, Option<String>);

/// The designs `org_id` sees for the global search: with `ids`, those of `ids`; else the
/// active, non-processing ones, newest first.
///
/// # Errors
/// Database failures.
pub(super) async fn label_rows(
    db: &Db,
    org_id: &str,
    ids: Option<&[String]>,
) -> ApiResult<Vec<LabelRow>> {
    let v = visible(org_id);
    let mut binds = v.binds.clone();
    let sql = match ids {
        Some(ids) => {
            let marks = crate::store::marks(ids.len().max(1));
            binds.extend(ids.iter().cloned().map(Bind::Text));
            if ids.is_empty() {
                binds.push(Bind::Text(String::new()));
            }
            format!(
                "SELECT t.id, t.ad_format, t.industry, t.thumb_key FROM swipe_files t WHERE ({}) AND t.id IN ({marks})",
                v.sql
            )
        }
        None => format!(
            "SELECT t.id, t.ad_format, t.industry, t.thumb_key FROM swipe_files t WHERE ({}) \
             AND t.archived_at IS NULL AND t.status <> 'processing' ORDER BY t.seq DESC",
            v.sql
        ),
    };
    Ok(bind_as(crate::store::query_as(&sql), &binds)
        .fetch_all(&db.read)
        .await?)
}

/// A `processing` design with what a bulk import's manifest said of it.
pub(super) struct ProcessingIngest {
    pub swipe_file_id: String,
    pub org_id: Option<String>,
    pub blob_key: String,
    /// The import item's file path or URL, for a design of a bulk import.
    pub locator: Option<String>,
    /// The locator is a URL the worker fetches.
    pub is_url: bool,
    pub industry: Option<String>,
    pub ad_format: Option<String>,
    pub caption: Option<String>,
}

/// Every `processing` design, with its import item when it has one.
pub(super) async fn processing_ingests(db: &Db) -> Result<Vec<ProcessingIngest>, sqlx::Error> {
    type Row = (
        String,
        Option<String>,
        String,
        Option<String>,
        Option<crate::store::Flag>,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let rows: Vec<Row> = crate::store::query_as(
        "SELECT f.id, f.org_id, f.blob_key, i.locator, i.is_url, i.industry, i.ad_format, i.caption \
         FROM swipe_files f LEFT JOIN swipe_import_items i ON i.swipe_file_id = f.id \
         WHERE f.status = 'processing'",
    )
    .fetch_all(&db.read)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(swipe_file_id, org_id, blob_key, locator, is_url, industry, ad_format, caption)| {
                ProcessingIngest {
                    swipe_file_id,
                    org_id,
                    blob_key,
                    locator,
                    is_url: is_url.is_some_and(|u| u.0),
                    industry,
                    ad_format,
                    caption,
                }
            },
        )
        .collect())
}
