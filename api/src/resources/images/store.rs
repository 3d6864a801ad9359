//! Every SQL statement of `/v1/images`, as functions named for what they do. The handlers
//! in [`super`], the upload in [`super::upload`] and the background work in
//! [`super::derivatives`] call these; they hold no SQL. Functions that take
//! `&mut AnyConnection` run inside the caller's transaction (a [`WriteTx`] derefs to one),
//! so the caller keeps its transaction boundaries. The background work's statements return
//! `sqlx::Error`, which it logs.
//!
//! The texts are the portable subset both engines share (see [`crate::store`]).
//!
//! [`WriteTx`]: crate::store::WriteTx

use sqlx::{AnyConnection, FromRow};

use super::Image;
use crate::blob::BlobStore;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::http::envelope::Page;
use crate::store::Db;
use crate::store::list::{Bind, Condition, ListParams, ListQuery};

/// A row of `images` as every read selects it ([`COLUMNS`]).
#[derive(FromRow)]
pub(super) struct ImageRow {
    id: String,
    blob_key: String,
    width: i64,
    height: i64,
    format: String,
    size_bytes: i64,
    alt_text: Option<String>,
    image_type: Option<String>,
    #[sqlx(try_from = "crate::store::Flag")]
    is_ai_generated: bool,
    logo_theme: Option<String>,
    product_id: Option<String>,
    thumb_small_key: Option<String>,
    thumb_medium_key: Option<String>,
    thumb_large_key: Option<String>,
    enriched_description: Option<String>,
    cutout_of: Option<String>,
    cutout_method: Option<String>,
    created_at: String,
    updated_at: String,
}

const COLUMNS: &str = "t.id, t.blob_key, t.width, t.height, t.format, t.size_bytes, t.alt_text, t.image_type, \
                       t.is_ai_generated, t.logo_theme, t.product_id, t.thumb_small_key, t.thumb_medium_key, \
                       t.thumb_large_key, t.enriched_description, t.cutout_of, t.cutout_method, t.created_at, \
                       t.updated_at";

impl ImageRow {
    /// The blob key of the image's file.
    pub(super) fn blob_key(&self) -> &str {
        &self.blob_key
    }

    /// Whether the image is itself a cut-out.
    pub(super) fn is_cutout(&self) -> bool {
        self.cutout_of.is_some()
    }

    /// What a cut-out of this image copies from it: `(alt_text, image_type, logo_theme,
    /// product_id, is_ai_generated)`.
    pub(super) fn kept(&self) -> (Option<&str>, Option<&str>, Option<&str>, Option<&str>, bool) {
        (
            self.alt_text.as_deref(),
            self.image_type.as_deref(),
            self.logo_theme.as_deref(),
            self.product_id.as_deref(),
            self.is_ai_generated,
        )
    }

    /// The image as the API shows it.
    pub(super) fn into_image(self, blobs: &dyn BlobStore) -> Image {
        let url = |k: Option<String>| k.map(|k| blobs.url(&k));
        Image {
            src: blobs.url(&self.blob_key),
            id: self.id,
            width: self.width,
            height: self.height,
            format: self.format,
            size_bytes: self.size_bytes,
            alt_text: self.alt_text,
            image_type: self.image_type,
            is_ai_generated: self.is_ai_generated,
            logo_theme: self.logo_theme,
            product_id: self.product_id,
            thumbnail_small_src: url(self.thumb_small_key),
            thumbnail_medium_src: url(self.thumb_medium_key),
            thumbnail_large_src: url(self.thumb_large_key),
            enriched_description: self.enriched_description,
            cutout_of: self.cutout_of,
            cutout_method: self.cutout_method,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// The live image `id` of `org_id`.
///
/// # Errors
/// IMAGE_NOT_FOUND; database failures.
pub(super) async fn load(db: &Db, org_id: &str, id: &str) -> ApiResult<ImageRow> {
    load_with(&db.read, org_id, id).await
}

/// [`load`] through any connection (inside a transaction, it sees the transaction's writes).
pub(super) async fn load_with<'c>(
    ex: impl sqlx::AnyExecutor<'c>,
    org_id: &str,
    id: &str,
) -> ApiResult<ImageRow> {
    crate::store::query_as::<ImageRow>(&format!(
        "SELECT {COLUMNS} FROM images AS t WHERE t.id = ? AND t.org_id = ? AND t.deleted_at IS NULL"
    ))
    .bind(id)
    .bind(org_id)
    .fetch_optional(ex)
    .await?
    .ok_or_else(|| ApiError::not_found(ErrorCode::ImageNotFound, "image", id))
}

/// A new image of an organisation.
pub(super) struct NewImage<'a> {
    pub id: &'a str,
    pub org_id: &'a str,
    pub blob_key: &'a str,
    pub width: u32,
    pub height: u32,
    /// `png`, `jpeg` or `webp`.
    pub format: &'a str,
    pub size_bytes: i64,
    pub alt_text: Option<&'a str>,
    pub image_type: Option<&'a str>,
    pub is_ai_generated: bool,
    pub logo_theme: Option<&'a str>,
    pub product_id: Option<&'a str>,
    /// For a cut-out: the image it was cut out of, and how (`source_alpha`, `colour_key`,
    /// `model`).
    pub cutout_of: Option<&'a str>,
    pub cutout_method: Option<&'a str>,
    /// Lower-cased text `search` matches (the alt text, until enrichment adds more).
    pub search_text: String,
    pub now: &'a str,
}

/// Inserts a new image (no thumbnails yet). Returns `false`, inserting nothing, for a
/// cut-out whose source already has a live cut-out (the unique index
/// `images_one_live_cutout`, migration 0092): the caller answers that one instead.
///
/// # Errors
/// Database failures.
pub(super) async fn insert(conn: &mut AnyConnection, i: &NewImage<'_>) -> ApiResult<bool> {
    let done = crate::store::query(
        "INSERT INTO images (id, org_id, blob_key, width, height, format, size_bytes, alt_text, image_type, \
         is_ai_generated, logo_theme, product_id, cutout_of, cutout_method, search_text, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
         ON CONFLICT (cutout_of) WHERE cutout_of IS NOT NULL AND deleted_at IS NULL DO NOTHING",
    )
    .bind(i.id)
    .bind(i.org_id)
    .bind(i.blob_key)
    .bind(i64::from(i.width))
    .bind(i64::from(i.height))
    .bind(i.format)
    .bind(i.size_bytes)
    .bind(i.alt_text)
    .bind(i.image_type)
    .bind(i64::from(i.is_ai_generated))
    .bind(i.logo_theme)
    .bind(i.product_id)
    .bind(i.cutout_of)
    .bind(i.cutout_method)
    .bind(&i.search_text)
    .bind(i.now)
    .bind(i.now)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The live cut-out of image `source` of `org_id`, if one was made.
///
/// # Errors
/// Database failures.
pub(super) async fn live_cutout(
    db: &Db,
    org_id: &str,
    source: &str,
) -> ApiResult<Option<ImageRow>> {
    live_cutout_with(&db.read, org_id, source).await
}

/// [`live_cutout`] through any connection (inside a transaction, it sees the transaction's
/// writes and, on a write transaction, every write committed before it).
pub(super) async fn live_cutout_with<'c>(
    ex: impl sqlx::AnyExecutor<'c>,
    org_id: &str,
    source: &str,
) -> ApiResult<Option<ImageRow>> {
    Ok(crate::store::query_as::<ImageRow>(&format!(
        "SELECT {COLUMNS} FROM images AS t WHERE t.cutout_of = ? AND t.org_id = ? AND t.deleted_at IS NULL \
         ORDER BY t.seq LIMIT 1"
    ))
    .bind(source)
    .bind(org_id)
    .fetch_optional(ex)
    .await?)
}

/// `(blob_key, logo_theme)` of the live image `id` of `org_id`, if there is one.
///
/// # Errors
/// Database failures.
pub(super) async fn live_key(
    db: &Db,
    org_id: &str,
    id: &str,
) -> ApiResult<Option<(String, Option<String>)>> {
    Ok(crate::store::query_as("SELECT blob_key, logo_theme FROM images WHERE id = ? AND org_id = ? AND deleted_at IS NULL")
        .bind(id)
        .bind(org_id)
        .fetch_optional(&db.read)
        .await?)
}

/// The blob key of image `id`'s original.
///
/// # Errors
/// Database failures (also when there is no such image).
pub(super) async fn blob_key(db: &Db, id: &str) -> Result<String, sqlx::Error> {
    crate::store::query_scalar("SELECT blob_key FROM images WHERE id = ?")
        .bind(id)
        .fetch_one(&db.read)
        .await
}

/// Image `id`'s alt text.
///
/// # Errors
/// Database failures (also when there is no such image).
pub(super) async fn alt_text(db: &Db, id: &str) -> Result<Option<String>, sqlx::Error> {
    crate::store::query_scalar("SELECT alt_text FROM images WHERE id = ?")
        .bind(id)
        .fetch_one(&db.read)
        .await
}

/// Records image `id`'s thumbnails (small, medium, large blob keys), its measured
/// description and the text `search` matches. A single statement on the writer pool.
///
/// # Errors
/// Database failures.
pub(super) async fn set_derivatives(
    db: &Db,
    id: &str,
    thumb_keys: &[String],
    description: &str,
    search_text: String,
) -> Result<(), sqlx::Error> {
    crate::store::query(
        "UPDATE images SET thumb_small_key = ?, thumb_medium_key = ?, thumb_large_key = ?, enriched_description = ?, \
         search_text = ? WHERE id = ?",
    )
    .bind(&thumb_keys[0])
    .bind(&thumb_keys[1])
    .bind(&thumb_keys[2])
    .bind(description)
    .bind(search_text)
    .bind(id)
    .execute(&mut *db.write_conn().await?)
    .await?;
    Ok(())
}

/// Live images without thumbnails (left so by a stopped server).
///
/// # Errors
/// Database failures.
pub(super) async fn without_thumbnails(db: &Db) -> Result<Vec<String>, sqlx::Error> {
    crate::store::query_scalar(
        "SELECT id FROM images WHERE thumb_small_key IS NULL AND deleted_at IS NULL",
    )
    .fetch_all(&db.read)
    .await
}

/// The filters of GET /v1/images, parsed and checked by the handler.
#[derive(Default)]
pub(super) struct ListFilter {
    pub product_id: Option<Vec<String>>,
    pub image_type: Option<Vec<String>>,
    /// Lower-cased; matched in the alt text and the enriched description.
    pub search: Option<String>,
}

/// One page of `org_id`'s images with `filter`'s conditions, paging and facets
/// (`image_type`).
///
/// # Errors
/// VALIDATION_ERROR for a bad cursor; database failures.
pub(super) async fn list(
    db: &Db,
    org_id: &str,
    filter: &ListFilter,
    p: &ListParams,
) -> ApiResult<Page<ImageRow>> {
    let mut conditions = Vec::new();
    if let Some(ids) = &filter.product_id {
        conditions.push(Condition::any_of(None, "t.product_id", ids));
    }
    if let Some(types) = &filter.image_type {
        conditions.push(Condition::any_of(Some("image_type"), "t.image_type", types));
    }
    if let Some(needle) = &filter.search {
        conditions.push(Condition::new(
            "instr(t.search_text, ?) > 0",
            vec![Bind::Text(needle.clone())],
        ));
    }
    ListQuery {
        table: "images",
        columns: COLUMNS,
        joins: "",
        org_id,
        conditions,
        facet_columns: &[("image_type", "t.image_type")],
    }
    .fetch::<ImageRow>(db, p)
    .await
}

/// Soft-deletes the live image `id` of `org_id` and removes it from its brands'
/// `logo_image_ids` and its variants' `image_ids`; `false` when there is no such image
/// (nothing changed).
///
/// # Errors
/// Database failures.
pub(super) async fn delete(conn: &mut AnyConnection, org_id: &str, id: &str) -> ApiResult<bool> {
    let exists: Option<String> = crate::store::query_scalar(
        "SELECT id FROM images WHERE id = ? AND org_id = ? AND deleted_at IS NULL",
    )
    .bind(id)
    .bind(org_id)
    .fetch_optional(&mut *conn)
    .await?;
    if exists.is_none() {
        return Ok(false);
    }
    let now = crate::timestamp::now();
    crate::store::query("UPDATE images SET deleted_at = ? WHERE id = ?")
        .bind(&now)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    let quoted = format!("%\"{id}\"%");
    for (table, column) in [
        ("brands", "logo_image_ids"),
        ("product_variants", "image_ids"),
    ] {
        let rows: Vec<(String, String)> = crate::store::query_as(&format!(
            "SELECT id, {column} FROM {table} WHERE org_id = ? AND {column} LIKE ?"
        ))
        .bind(org_id)
        .bind(&quoted)
        .fetch_all(&mut *conn)
        .await?;
        for (rid, json) in rows {
            let ids: Vec<String> = serde_json::from_str(&json).unwrap_or_default();
            let kept: Vec<&String> = ids.iter().filter(|i| *i != id).collect();
            crate::store::query(&format!(
                "UPDATE {table} SET {column} = ?, updated_at = ? WHERE id = ?"
            ))
            .bind(crate::store::to_json_text(&kept))
            .bind(&now)
            .bind(&rid)
            .execute(&mut *conn)
            .await?;
        }
    }
    Ok(true)
}
