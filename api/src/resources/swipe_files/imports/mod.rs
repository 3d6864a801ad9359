//! Bulk imports into a data source (`adforge admin data-source import`, the dashboard's
//! Imports page): a folder, or a manifest of JSON lines or CSV, each item a file path or a
//! URL with optional `industry`, `ad_format` and `caption`.
//!
//! The importer does the little that must happen where the files are and leaves the rest
//! to the workers: a file is checked and stored in the blob store, a URL is checked by the
//! address policy only (a worker fetches it, through the same policy); then each item's
//! design row, its ingest job (in the SQL outbox, so the running API's dispatcher hands it
//! to the shared queue and every worker process of every node takes a share) and the
//! item's row are written in one transaction, a few items per transaction.
//!
//! Resumable: an import is its data source and the folder or manifest it reads (`origin`),
//! so running the same command again finds it; items already `queued` or `ready` are
//! skipped, failed ones are tried again (a design that failed its ingest is re-queued
//! under the same id). A killed importer loses at most its current transaction (the
//! stored originals of that batch are left unreferenced); the re-run never stages an item
//! twice, because each item is checked again inside the transaction that stages it.
//! Progress is counted from the items' states, which the event applier updates in the
//! transaction that applies each ingest ([`item_finished`]).

use std::sync::Arc;

use adforge_worker::IngestHints;
use bytes::Bytes;
use serde::Serialize;

use crate::Error;
use crate::blob::BlobStore;
use crate::store::Db;

mod entries;

use entries::truncate;
pub use entries::{Entry, Locator, folder_entries, manifest_entries};

/// An import as stored.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Import {
    pub id: String,
    pub data_source_id: String,
    pub origin: String,
    pub total: i64,
    pub created_at: String,
    pub updated_at: String,
}

/// How far an import is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Progress {
    pub total: i64,
    /// Not attempted yet (the importer has not reached them).
    pub pending: i64,
    /// Staged: the ingest is queued or running.
    pub queued: i64,
    pub ready: i64,
    pub failed: i64,
}

impl Progress {
    /// Whether nothing is left to stage or ingest.
    pub fn finished(&self) -> bool {
        self.pending == 0 && self.queued == 0
    }
}

/// A failed item and why.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Failure {
    pub item: i64,
    pub locator: String,
    pub swipe_file_id: Option<String>,
    pub error: Option<String>,
}

/// Finds the import of `source_id` reading `origin`, or creates it; records `total`.
///
/// # Errors
/// An unknown source; database failures.
pub async fn open(db: &Db, source_id: &str, origin: &str, total: i64) -> Result<Import, Error> {
    let found: Option<String> =
        crate::store::query_scalar("SELECT id FROM data_sources WHERE id = ?")
            .bind(source_id)
            .fetch_optional(&db.read)
            .await?;
    if found.is_none() {
        return Err(Error::Invalid(format!(
            "no data source `{source_id}`; list them with `adforge admin data-source list`"
        )));
    }
    let now = crate::timestamp::now();
    let mut tx = db.begin_write().await?;
    crate::store::query(
        "INSERT INTO swipe_imports (id, data_source_id, origin, total, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) \
         ON CONFLICT (data_source_id, origin) DO UPDATE SET total = excluded.total, updated_at = excluded.updated_at",
    )
    .bind(crate::ids::new_id("sfi"))
    .bind(source_id)
    .bind(origin)
    .bind(total)
    .bind(&now)
    .bind(&now)
    .execute(&mut *tx)
    .await?;
    let import: Import = crate::store::query_as(
        "SELECT id, data_source_id, origin, total, created_at, updated_at FROM swipe_imports WHERE data_source_id = ? AND origin = ?",
    )
    .bind(source_id)
    .bind(origin)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(import)
}

/// The progress of an import.
///
/// # Errors
/// Database failures.
pub async fn progress(db: &Db, import: &Import) -> Result<Progress, sqlx::Error> {
    let total: i64 = crate::store::query_scalar("SELECT total FROM swipe_imports WHERE id = ?")
        .bind(&import.id)
        .fetch_optional(&db.read)
        .await?
        .unwrap_or(import.total);
    let rows: Vec<(String, i64)> = crate::store::query_as(
        "SELECT state, COUNT(*) FROM swipe_import_items WHERE import_id = ? GROUP BY state",
    )
    .bind(&import.id)
    .fetch_all(&db.read)
    .await?;
    let mut p = Progress {
        total,
        ..Progress::default()
    };
    for (state, n) in rows {
        match state.as_str() {
            "queued" => p.queued = n,
            "ready" => p.ready = n,
            _ => p.failed += n,
        }
    }
    p.pending = (total - p.queued - p.ready - p.failed).max(0);
    Ok(p)
}

/// Failed items of an import with their reasons, by place, at most `limit`.
///
/// # Errors
/// Database failures.
pub async fn failures(db: &Db, import_id: &str, limit: i64) -> Result<Vec<Failure>, sqlx::Error> {
    crate::store::query_as(
        "SELECT item, locator, swipe_file_id, error FROM swipe_import_items \
         WHERE import_id = ? AND state = 'failed' ORDER BY item LIMIT ?",
    )
    .bind(import_id)
    .bind(limit)
    .fetch_all(&db.read)
    .await
}

/// An import with its source's name and progress (the dashboard's list).
#[derive(Debug, Clone, Serialize)]
pub struct ImportSummary {
    pub import: Import,
    pub source_name: String,
    pub progress: Progress,
}

/// The most recent imports, newest first, at most `limit`.
///
/// # Errors
/// Database failures.
pub async fn recent(db: &Db, limit: i64) -> Result<Vec<ImportSummary>, sqlx::Error> {
    let rows: Vec<(String, String, String, i64, String, String, String)> = crate::store::query_as(
        "SELECT i.id, i.data_source_id, i.origin, i.total, i.created_at, i.updated_at, s.name \
         FROM swipe_imports i JOIN data_sources s ON s.id = i.data_source_id ORDER BY i.seq DESC LIMIT ?",
    )
    .bind(limit)
    .fetch_all(&db.read)
    .await?;
    let mut out = Vec::new();
    for (id, data_source_id, origin, total, created_at, updated_at, source_name) in rows {
        let import = Import {
            id,
            data_source_id,
            origin,
            total,
            created_at,
            updated_at,
        };
        let progress = progress(db, &import).await?;
        out.push(ImportSummary {
            import,
            source_name,
            progress,
        });
    }
    Ok(out)
}

/// One import by id.
///
/// # Errors
/// Database failures.
pub async fn get(db: &Db, import_id: &str) -> Result<Option<ImportSummary>, sqlx::Error> {
    let row: Option<(String, String, String, i64, String, String, String)> =
        crate::store::query_as(
            "SELECT i.id, i.data_source_id, i.origin, i.total, i.created_at, i.updated_at, s.name \
         FROM swipe_imports i JOIN data_sources s ON s.id = i.data_source_id WHERE i.id = ?",
        )
        .bind(import_id)
        .fetch_optional(&db.read)
        .await?;
    let Some((id, data_source_id, origin, total, created_at, updated_at, source_name)) = row else {
        return Ok(None);
    };
    let import = Import {
        id,
        data_source_id,
        origin,
        total,
        created_at,
        updated_at,
    };
    let progress = progress(db, &import).await?;
    Ok(Some(ImportSummary {
        import,
        source_name,
        progress,
    }))
}

/// Marks the import item of design `swipe_file_id` (if any) `ready`, or `failed` with
/// `error`, in the applier's transaction.
///
/// # Errors
/// Database failures.
pub async fn item_finished(
    conn: &mut sqlx::AnyConnection,
    swipe_file_id: &str,
    error: Option<&str>,
) -> Result<(), sqlx::Error> {
    crate::store::query(
        "UPDATE swipe_import_items SET state = ?, error = ?, updated_at = ? WHERE swipe_file_id = ? AND state = 'queued'",
    )
    .bind(if error.is_some() { "failed" } else { "ready" })
    .bind(error)
    .bind(crate::timestamp::now())
    .bind(swipe_file_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// What one staging run did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Staged {
    /// Items staged now: (place, locator, design id).
    pub staged: Vec<(i64, String, String)>,
    /// Items failed now: (place, locator, reason).
    pub rejected: Vec<(i64, String, String)>,
    /// Items already queued or ready (a resumed import).
    pub skipped: usize,
    /// Designs whose failed ingest was queued again.
    pub retried: usize,
}

/// Items per write transaction.
const BATCH: usize = 16;

/// What an item became before its transaction.
enum Prepared {
    Skip,
    Fail(String),
    Stored(crate::resources::swipe_files::StoredOriginal),
    Url(String),
    Retry(String),
}

/// Stages every item of `entries` not yet queued or ready, `BATCH` per transaction,
/// calling `tick` after each batch.
///
/// # Errors
/// Database failures (items before the failing batch stay staged; run again to go on).
pub async fn stage(
    db: &Db,
    blobs: &Arc<dyn BlobStore>,
    import: &Import,
    entries: &[Entry],
    allow_private_urls: bool,
    mut tick: impl FnMut(&Staged),
) -> Result<Staged, Error> {
    let known: std::collections::HashMap<i64, (String, Option<String>)> =
        crate::store::query_as::<(i64, String, Option<String>)>(
            "SELECT item, state, swipe_file_id FROM swipe_import_items WHERE import_id = ?",
        )
        .bind(&import.id)
        .fetch_all(&db.read)
        .await?
        .into_iter()
        .map(|(i, s, f)| (i, (s, f)))
        .collect();
    let mut out = Staged::default();
    for batch in entries.chunks(BATCH) {
        let mut prepared = Vec::with_capacity(batch.len());
        for e in batch {
            let p = match known.get(&e.item) {
                Some((state, _)) if state == "queued" || state == "ready" => Prepared::Skip,
                Some((_, Some(design))) => Prepared::Retry(design.clone()),
                _ => prepare(blobs, e, allow_private_urls).await,
            };
            prepared.push(p);
        }
        let mut tx = db.begin_write().await?;
        let now = crate::timestamp::now();
        let mut done = Vec::new();
        for (e, p) in batch.iter().zip(prepared) {
            // Checked again under the write lock: a concurrent or earlier run may have
            // staged it since the list above was read.
            let state: Option<(String, Option<String>)> = crate::store::query_as(
                "SELECT state, swipe_file_id FROM swipe_import_items WHERE import_id = ? AND item = ?",
            )
            .bind(&import.id)
            .bind(e.item)
            .fetch_optional(&mut *tx)
            .await?;
            let busy = state
                .as_ref()
                .is_some_and(|(s, _)| s == "queued" || s == "ready");
            let locator = e.locator.text();
            let (state, design, error) = match p {
                _ if busy => {
                    out.skipped += 1;
                    continue;
                }
                Prepared::Skip => {
                    out.skipped += 1;
                    continue;
                }
                Prepared::Fail(why) => ("failed", None, Some(why)),
                Prepared::Stored(stored) => {
                    crate::resources::swipe_files::stage_stored(
                        &mut tx,
                        &stored,
                        (None, Some(&import.data_source_id)),
                        "svc_managed",
                        hints(e),
                    )
                    .await
                    .map_err(|e| Error::Invalid(e.message))?;
                    ("queued", Some(stored.id), None)
                }
                Prepared::Url(url) => {
                    let id = crate::resources::swipe_files::stage_url(
                        &mut tx,
                        &import.data_source_id,
                        &url,
                        hints(e),
                    )
                    .await
                    .map_err(|e| Error::Invalid(e.message))?;
                    ("queued", Some(id), None)
                }
                Prepared::Retry(design) => {
                    if requeue(&mut tx, &design, e).await? {
                        out.retried += 1;
                        ("queued", Some(design), None)
                    } else {
                        out.skipped += 1;
                        continue;
                    }
                }
            };
            let (is_url, hints) = (matches!(e.locator, Locator::Url(_)), &e.hints);
            crate::store::query(
                "INSERT INTO swipe_import_items (import_id, item, locator, is_url, industry, ad_format, caption, state, swipe_file_id, error, updated_at) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
                 ON CONFLICT (import_id, item) DO UPDATE SET locator = excluded.locator, is_url = excluded.is_url, \
                 industry = excluded.industry, ad_format = excluded.ad_format, caption = excluded.caption, state = excluded.state, \
                 swipe_file_id = excluded.swipe_file_id, error = excluded.error, updated_at = excluded.updated_at",
            )
            .bind(&import.id)
            .bind(e.item)
            .bind(&locator)
            .bind(i64::from(is_url))
            .bind(&hints.industry)
            .bind(&hints.ad_format)
            .bind(&hints.caption)
            .bind(state)
            .bind(&design)
            .bind(&error)
            .bind(&now)
            .execute(&mut *tx)
            .await?;
            done.push((e.item, locator, design, error));
        }
        crate::store::query("UPDATE swipe_imports SET updated_at = ? WHERE id = ?")
            .bind(&now)
            .bind(&import.id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        for (item, locator, design, error) in done {
            match (design, error) {
                (_, Some(why)) => out.rejected.push((item, locator, why)),
                (Some(id), None) => out.staged.push((item, locator, id)),
                (None, None) => {}
            }
        }
        tick(&out);
    }
    Ok(out)
}

fn hints(e: &Entry) -> Option<IngestHints> {
    let h = &e.hints;
    (h.industry.is_some() || h.ad_format.is_some() || h.caption.is_some()).then(|| h.clone())
}

/// Checks an item and stores its original (files) before its transaction.
async fn prepare(blobs: &Arc<dyn BlobStore>, e: &Entry, allow_private_urls: bool) -> Prepared {
    if let Some(p) = &e.problem {
        return Prepared::Fail(p.clone());
    }
    match &e.locator {
        Locator::Url(u) => {
            let lower = u.to_ascii_lowercase();
            if u.len() > 2048 || !(lower.starts_with("http://") || lower.starts_with("https://")) {
                return Prepared::Fail(format!(
                    "`{}` must be an http(s) URL of at most 2048 characters",
                    truncate(u, 100)
                ));
            }
            // The one address policy, before anything is staged; the worker checks again.
            match adforge_renderer::address::check_url(u, allow_private_urls) {
                Ok(()) => Prepared::Url(u.clone()),
                Err(why) => Prepared::Fail(format!("{u} cannot be fetched: {why}")),
            }
        }
        Locator::Path(p) => match tokio::fs::read(p).await {
            Err(err) => Prepared::Fail(format!("cannot read {}: {err}", p.display())),
            Ok(bytes) => {
                match crate::resources::swipe_files::store_original(blobs, Bytes::from(bytes)).await
                {
                    Ok(stored) => Prepared::Stored(stored),
                    Err(err) => Prepared::Fail(err.message),
                }
            }
        },
    }
}

/// Puts a design whose ingest failed back to `processing` and stages its job again (the
/// same id, the item's URL and hints). False when it is not failed any more.
async fn requeue(conn: &mut sqlx::AnyConnection, design: &str, e: &Entry) -> Result<bool, Error> {
    let changed = crate::store::query(
        "UPDATE swipe_files SET status = 'processing', error = NULL, updated_at = ? WHERE id = ? AND status = 'failed'",
    )
    .bind(crate::timestamp::now())
    .bind(design)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if changed == 0 {
        return Ok(false);
    }
    let blob_key: String =
        crate::store::query_scalar("SELECT blob_key FROM swipe_files WHERE id = ?")
            .bind(design)
            .fetch_one(&mut *conn)
            .await?;
    let job = adforge_worker::Job::IngestSwipeFile(adforge_worker::IngestSwipeFileJob {
        swipe_file_id: design.to_string(),
        org_id: None,
        blob_key,
        fetch_url: match &e.locator {
            Locator::Url(u) => Some(u.clone()),
            Locator::Path(_) => None,
        },
        hints: hints(e),
    });
    crate::jobs::Jobs::stage(conn, &job)
        .await
        .map_err(|e| Error::Invalid(e.message))?;
    Ok(true)
}
