//! Service-managed data sources: created and filled by operators (`adforge admin
//! data-source`), and the default collection imported at the first start.
//!
//! An import stores each image and stages its ingest job in the SQL outbox, so it works
//! from the admin CLI while a server runs on the same data dir: the server's dispatcher
//! sends the jobs within a second and its workers (or `adforge worker` processes) ingest
//! them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::Error;
use crate::blob::BlobStore;
use crate::store::Db;

/// The name of the default collection created at the first start.
pub const DEFAULT_COLLECTION_NAME: &str = "adforge starter collection";

/// The default collection's images in this source tree (`assets/swipe-default`).
pub const DEFAULT_COLLECTION_DIR: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/swipe-default");

/// Creates a data source; `is_default` subscribes every organisation that has not turned
/// it off. Returns its id.
///
/// # Errors
/// An empty name; database failures.
pub async fn create(db: &Db, name: &str, is_default: bool) -> Result<String, Error> {
    let name = name.trim();
    if name.is_empty() {
        return Err(Error::Invalid("--name must not be empty".into()));
    }
    let id = crate::ids::new_id("sfs");
    let mut tx = db.begin_write().await?;
    crate::store::query(
        "INSERT INTO data_sources (id, name, is_default, created_at) VALUES (?, ?, ?, ?)",
    )
    .bind(&id)
    .bind(name)
    .bind(i64::from(is_default))
    .bind(crate::timestamp::now())
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(id)
}

/// The PNG, JPEG and WebP files of `folder`, by name.
fn images_in(folder: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
        .map_err(|e| Error::Invalid(format!("cannot read --folder {}: {e}", folder.display())))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension().and_then(|e| e.to_str()).is_some_and(|e| {
                matches!(
                    e.to_ascii_lowercase().as_str(),
                    "png" | "jpg" | "jpeg" | "webp"
                )
            })
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Every data source as (id, name, is default, designs), oldest first (the operator's
/// listing).
///
/// # Errors
/// Database failures.
pub async fn list(db: &Db) -> Result<Vec<(String, String, crate::store::Flag, i64)>, sqlx::Error> {
    crate::store::query_as(
        "SELECT s.id, s.name, s.is_default, (SELECT COUNT(*) FROM swipe_files f WHERE f.data_source_id = s.id) \
         FROM data_sources s ORDER BY s.seq",
    )
    .fetch_all(&db.read)
    .await
}

/// Imports every image of `folder` into source `source_id` as managed designs (status
/// processing until ingested). Returns (file name, swipe file id or error) per file.
///
/// # Errors
/// Unknown source, unreadable folder, database failures.
pub async fn import_folder(
    db: &Db,
    blobs: &Arc<dyn BlobStore>,
    source_id: &str,
    folder: &Path,
) -> Result<Vec<(String, Result<String, String>)>, Error> {
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
    let mut out = Vec::new();
    for path in images_in(folder)? {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bytes = std::fs::read(&path)?;
        let result = crate::resources::swipe_files::create(
            db,
            blobs,
            (None, Some(source_id)),
            "svc_managed",
            Bytes::from(bytes),
            None,
        )
        .await
        .map(|row| row.id)
        .map_err(|e| e.message);
        out.push((name, result));
    }
    Ok(out)
}

/// At a start with no default data source: creates the default collection, imports
/// `folder` into it (when the folder exists) and groups it into curated packs by placement
/// ([`create_placement_packs`]). Returns the source id and the number of
/// designs imported.
///
/// # Errors
/// Database failures.
pub async fn ensure_default_collection(
    db: &Db,
    blobs: &Arc<dyn BlobStore>,
    folder: &Path,
) -> Result<Option<(String, usize)>, Error> {
    let existing: Option<String> =
        crate::store::query_scalar("SELECT id FROM data_sources WHERE is_default = 1 LIMIT 1")
            .fetch_optional(&db.read)
            .await?;
    if existing.is_some() || !folder.is_dir() {
        return Ok(None);
    }
    let id = create(db, DEFAULT_COLLECTION_NAME, true).await?;
    let imported = import_folder(db, blobs, &id, folder).await?;
    let ok = imported.iter().filter(|(_, r)| r.is_ok()).count();
    let packs = create_placement_packs(db, &id).await?;
    tracing::info!(data_source_id = %id, packs, "created the default collection's curated design packs");
    for (name, r) in &imported {
        if let Err(e) = r {
            tracing::warn!(file = %name, error = %e, "default collection: a file was not imported");
        }
    }
    Ok(Some((id, ok)))
}

/// The curated packs of a collection, one per placement (aspect ratio) its designs have:
/// (aspect ratio, title, description).
const PLACEMENT_PACKS: [(&str, &str, &str); 3] = [
    (
        "1:1",
        "Square feed ads (1:1)",
        "Square designs for feed placements (Instagram and Facebook feed, LinkedIn), one per layout of the starter collection.",
    ),
    (
        "4:5",
        "Portrait feed ads (4:5)",
        "Portrait designs that take the most room in mobile feeds.",
    ),
    (
        "9:16",
        "Stories and Reels (9:16)",
        "Full-screen vertical designs for Stories, Reels and TikTok, with their text clear of the top and bottom bars.",
    ),
];

/// Creates the service-curated design packs of data source `source_id`: one per placement
/// of [`PLACEMENT_PACKS`] holding every design of the source with that aspect ratio (known
/// at import, before ingest). Read-only for organisations (`is_managed`), visible while
/// they are subscribed to the source, marked in the global search. Returns how many packs
/// were created.
///
/// # Errors
/// Database failures.
pub async fn create_placement_packs(db: &Db, source_id: &str) -> Result<usize, Error> {
    let mut tx = db.begin_write().await?;
    let now = crate::timestamp::now();
    let mut created = 0;
    for (ratio, title, description) in PLACEMENT_PACKS {
        let designs: Vec<String> = crate::store::query_scalar(
            "SELECT id FROM swipe_files WHERE data_source_id = ? AND aspect_ratio = ? ORDER BY seq",
        )
        .bind(source_id)
        .bind(ratio)
        .fetch_all(&mut *tx)
        .await?;
        if designs.is_empty() {
            continue;
        }
        let pack = crate::ids::new_id("dp");
        crate::store::query(
            "INSERT INTO design_packs (id, data_source_id, title, description, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(&pack)
        .bind(source_id)
        .bind(title)
        .bind(description)
        .bind(&now)
        .bind(&now)
        .execute(&mut *tx)
        .await?;
        for design in designs
            .iter()
            .take(crate::resources::design_packs::PACK_MAX as usize)
        {
            crate::store::query(
                "INSERT INTO design_pack_items (pack_id, swipe_file_id, added_at) VALUES (?, ?, ?)",
            )
            .bind(&pack)
            .bind(design)
            .bind(&now)
            .execute(&mut *tx)
            .await?;
        }
        created += 1;
    }
    tx.commit().await?;
    Ok(created)
}
