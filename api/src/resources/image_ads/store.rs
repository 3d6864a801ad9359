//! Every SQL statement of `/v1/image-ads`, as functions named for what they do. The
//! handlers in [`super`] parse, call these and respond; they hold no SQL. Functions that
//! take `&mut AnyConnection` run inside the caller's transaction (a [`WriteTx`] derefs to
//! one), so the caller keeps its transaction boundaries; reads of one row take any executor.
//!
//! The texts are the portable subset both engines share (see [`crate::store`]).
//!
//! [`WriteTx`]: crate::store::WriteTx

use adforge_worker::Job;
use serde_json::Value;
use sqlx::{AnyConnection, FromRow};

use super::{AdError, ImageAd, ImageAdSize, ImageAdVersion, Progress, SourceDesignTemplate};
use crate::error::{ApiResult, ErrorCode};
use crate::http::envelope::Page;
use crate::resources::common::Table;
use crate::store::Db;
use crate::store::list::{Bind, Condition, ListParams, ListQuery};

mod sets;
pub(super) use sets::{ResizeSource, SetMember, join_set, resize_source, set_members};

/// A row of `image_ads` as every read selects it ([`COLUMNS`]).
#[derive(FromRow)]
pub(super) struct AdRow {
    pub id: String,
    reference_ad_url: String,
    brand_id: String,
    product_id: String,
    audience_id: String,
    design_template_id: Option<String>,
    source_design_template_id: Option<String>,
    source_design_template_version: Option<i64>,
    product_variant_id: Option<String>,
    prompt: Option<String>,
    options: Option<String>,
    #[sqlx(try_from = "crate::store::Flag")]
    pub editable: bool,
    sku_code: String,
    pub status: String,
    progress: Option<String>,
    image_url: Option<String>,
    width: Option<i64>,
    height: Option<i64>,
    pub current_json_tree: Option<String>,
    pub current_version: i64,
    figma_render_url: Option<String>,
    initial_figma_render_url: Option<String>,
    figma_file_key: Option<String>,
    figma_node_id: Option<String>,
    figma_sync: Option<String>,
    error_code: Option<String>,
    error_message: Option<String>,
    duration_ms: Option<i64>,
    copy_report: Option<String>,
    batch_id: Option<String>,
    size_placement: Option<String>,
    size_width: Option<i64>,
    size_height: Option<i64>,
    pub size_set_id: Option<String>,
    created_at: String,
    completed_at: Option<String>,
}

const COLUMNS: &str = "t.id, t.reference_ad_url, t.brand_id, t.product_id, t.audience_id, t.design_template_id, \
    t.source_design_template_id, t.source_design_template_version, t.product_variant_id, t.prompt, t.options, t.editable, t.sku_code, t.status, t.progress, t.image_url, t.width, \
    t.height, t.current_json_tree, t.current_version, t.figma_render_url, t.initial_figma_render_url, \
    t.figma_file_key, t.figma_node_id, t.figma_sync, t.error_code, \
    t.error_message, t.duration_ms, t.copy_report, t.batch_id, t.size_placement, t.size_width, t.size_height, \
    t.size_set_id, t.created_at, t.completed_at";

impl AdRow {
    /// The ad as the API shows it; `live` is the queue's progress, shown while processing.
    pub(super) fn into_ad(self, live: Option<Progress>) -> ImageAd {
        let parse = |s: Option<String>| s.and_then(|s| serde_json::from_str::<Value>(&s).ok());
        let stored: Option<Progress> = self.progress.and_then(|p| serde_json::from_str(&p).ok());
        let renditions = super::renditions::listed(
            &self.status,
            self.image_url.as_deref(),
            self.width,
            self.height,
        );
        ImageAd {
            progress: if self.status == "processing" {
                live.or(stored)
            } else {
                None
            },
            error: match (self.error_code, self.error_message) {
                (Some(code), message) if self.status == "failed" => Some(AdError {
                    code,
                    message: message.unwrap_or_default(),
                }),
                _ => None,
            },
            options: parse(self.options),
            current_json_tree: parse(self.current_json_tree),
            id: self.id,
            reference_ad_url: self.reference_ad_url,
            brand_id: self.brand_id,
            product_id: self.product_id,
            audience_id: self.audience_id,
            design_template_id: self.design_template_id,
            source_design_template: self
                .source_design_template_id
                .map(|id| SourceDesignTemplate {
                    id,
                    json_tree_version: self.source_design_template_version.unwrap_or(1),
                }),
            product_variant_id: self.product_variant_id,
            prompt: self.prompt,
            editable: self.editable,
            sku_code: self.sku_code,
            status: self.status,
            renditions,
            image_url: self.image_url,
            width: self.width,
            height: self.height,
            figma_render_url: self.figma_render_url,
            initial_figma_render_url: self.initial_figma_render_url,
            figma: crate::resources::integrations::FigmaSync::from_columns(
                self.figma_file_key,
                self.figma_node_id,
                self.figma_sync.as_deref(),
            ),
            duration_ms: self.duration_ms,
            copy: self.copy_report.and_then(|s| serde_json::from_str(&s).ok()),
            batch_id: self.batch_id,
            size: match (self.size_width, self.size_height) {
                (Some(width), Some(height)) => Some(ImageAdSize {
                    placement: self.size_placement,
                    width,
                    height,
                }),
                _ => None,
            },
            size_set_id: self.size_set_id,
            created_at: self.created_at,
            completed_at: self.completed_at,
        }
    }
}

/// The table's shared loaders ([`Table`]).
const TABLE: Table = Table {
    name: "image_ads",
    columns: COLUMNS,
    not_found: ErrorCode::ImageAdNotFound,
    kind: "image ad",
};

/// The live (not deleted) ad `id` of `org_id`.
///
/// # Errors
/// IMAGE_AD_NOT_FOUND (also for another organisation's ad); database failures.
pub(super) async fn load<'e, E: sqlx::AnyExecutor<'e>>(
    ex: E,
    org_id: &str,
    id: &str,
) -> ApiResult<AdRow> {
    TABLE.load(ex, org_id, id).await
}

/// [`load`] as a point read (`GET /v1/image-ads/{id}`, see [`Db::point_read`]).
///
/// # Errors
/// 404 IMAGE_AD_NOT_FOUND; database failures.
pub(super) async fn read(db: &Db, org_id: &str, id: &str) -> ApiResult<AdRow> {
    TABLE.read(db, org_id, id).await
}

/// A new ad, `processing` at version 1.
pub(super) struct NewAd<'a> {
    pub id: &'a str,
    pub org_id: &'a str,
    pub brand_id: &'a str,
    pub product_id: &'a str,
    pub audience_id: &'a str,
    pub product_variant_id: Option<String>,
    pub reference_ad_url: &'a str,
    pub prompt: Option<&'a str>,
    pub editable: bool,
    pub sku: &'a str,
    pub price_cents: i64,
    pub progress: &'a Progress,
    pub job: &'a Job,
    /// The product's name, lowercased, which `search` matches.
    pub search_name: &'a str,
    pub now: &'a str,
    /// The design template (id, tree version) that laid the ad out.
    pub source: Option<(String, i64)>,
    /// The batch the ad was made in (`iab_…`), if any.
    pub batch_id: Option<&'a str>,
    /// The size of a campaign set the ad is laid out for: (placement, width, height).
    pub size: Option<(Option<&'a str>, u32, u32)>,
    /// The campaign set (its first ad's id), if any.
    pub size_set_id: Option<&'a str>,
}

/// Inserts a new ad.
///
/// # Errors
/// Database failures.
pub(super) async fn insert_ad(conn: &mut AnyConnection, ad: &NewAd<'_>) -> ApiResult<()> {
    crate::store::query(
        "INSERT INTO image_ads (id, org_id, brand_id, product_id, audience_id, product_variant_id, reference_ad_url, prompt, \
         editable, sku_code, price_cents, status, progress, current_version, job, search_name, created_at, updated_at, \
         source_design_template_id, source_design_template_version, batch_id, size_placement, size_width, size_height, \
         size_set_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'processing', ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(ad.id)
    .bind(ad.org_id)
    .bind(ad.brand_id)
    .bind(ad.product_id)
    .bind(ad.audience_id)
    .bind(ad.product_variant_id.clone())
    .bind(ad.reference_ad_url)
    .bind(ad.prompt)
    .bind(i64::from(ad.editable))
    .bind(ad.sku)
    .bind(ad.price_cents)
    .bind(crate::store::to_json_text(ad.progress))
    .bind(crate::store::to_json_text(ad.job))
    .bind(ad.search_name)
    .bind(ad.now)
    .bind(ad.now)
    .bind(ad.source.as_ref().map(|s| s.0.clone()))
    .bind(ad.source.as_ref().map(|s| s.1))
    .bind(ad.batch_id)
    .bind(ad.size.and_then(|s| s.0))
    .bind(ad.size.map(|s| i64::from(s.1)))
    .bind(ad.size.map(|s| i64::from(s.2)))
    .bind(ad.size_set_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// A new version of an edited ad.
pub(super) struct NewVersion<'a> {
    pub version_id: &'a str,
    pub ad_id: &'a str,
    pub org_id: &'a str,
    pub version: i64,
    /// The tree's JSON text.
    pub tree: &'a str,
    /// What changed, as the PATCH said (checked by the caller).
    pub change_summary: Option<&'a str>,
    pub progress: &'a Progress,
    pub job: &'a Job,
    pub now: &'a str,
}

/// Inserts version `v.version` (`processing`) and moves the ad to it: `processing` again,
/// with the new tree and its render job.
///
/// # Errors
/// Database failures.
pub(super) async fn start_version(conn: &mut AnyConnection, v: &NewVersion<'_>) -> ApiResult<()> {
    crate::store::query(
        "INSERT INTO image_ad_versions (id, ad_id, org_id, version_number, json_tree, change_summary, status, created_at) VALUES (?, ?, ?, ?, ?, ?, 'processing', ?)",
    )
    .bind(v.version_id)
    .bind(v.ad_id)
    .bind(v.org_id)
    .bind(v.version)
    .bind(v.tree)
    .bind(v.change_summary)
    .bind(v.now)
    .execute(&mut *conn)
    .await?;
    crate::store::query(
        "UPDATE image_ads SET status = 'processing', progress = ?, current_version = ?, current_json_tree = ?, job = ?, \
         updated_at = ? WHERE id = ?",
    )
    .bind(crate::store::to_json_text(v.progress))
    .bind(v.version)
    .bind(v.tree)
    .bind(crate::store::to_json_text(v.job))
    .bind(v.now)
    .bind(v.ad_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Soft-deletes the ad `id` (`deleted_at` now).
///
/// # Errors
/// Database failures.
pub(super) async fn soft_delete(conn: &mut AnyConnection, id: &str) -> ApiResult<()> {
    crate::store::query("UPDATE image_ads SET deleted_at = ? WHERE id = ?")
        .bind(crate::timestamp::now())
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

const VERSION_COLUMNS: &str = "id, ad_id AS image_ad_id, version_number, image_url, width, height, status, json_tree, change_summary, created_at, completed_at";

/// The versions of ad `id`, oldest first (the ad's existence is the caller's check).
///
/// # Errors
/// Database failures.
pub(super) async fn versions(db: &Db, org_id: &str, id: &str) -> ApiResult<Vec<ImageAdVersion>> {
    Ok(crate::store::query_as(&format!(
        "SELECT {VERSION_COLUMNS} FROM image_ad_versions WHERE ad_id = ? AND org_id = ? ORDER BY version_number"
    ))
    .bind(id)
    .bind(org_id)
    .fetch_all(&db.read)
    .await?)
}

/// Version `version_id` of ad `ad_id`, if it is one.
///
/// # Errors
/// Database failures.
pub(super) async fn version(
    db: &Db,
    org_id: &str,
    ad_id: &str,
    version_id: &str,
) -> ApiResult<Option<ImageAdVersion>> {
    Ok(crate::store::query_as(&format!(
        "SELECT {VERSION_COLUMNS} FROM image_ad_versions WHERE id = ? AND ad_id = ? AND org_id = ?"
    ))
    .bind(version_id)
    .bind(ad_id)
    .bind(org_id)
    .fetch_optional(&db.read)
    .await?)
}

/// Version number `n` of ad `ad_id`, if it has one.
///
/// # Errors
/// Database failures.
pub(super) async fn version_numbered(
    db: &Db,
    org_id: &str,
    ad_id: &str,
    n: i64,
) -> ApiResult<Option<ImageAdVersion>> {
    Ok(crate::store::query_as(&format!(
        "SELECT {VERSION_COLUMNS} FROM image_ad_versions WHERE ad_id = ? AND org_id = ? AND version_number = ?"
    ))
    .bind(ad_id)
    .bind(org_id)
    .bind(n)
    .fetch_optional(&db.read)
    .await?)
}

/// The filters of GET /v1/image-ads, parsed and checked by the handler. Comma-separated
/// filters match any of their values; filters combine with AND.
#[derive(Default)]
pub(super) struct ListFilter {
    pub status: Option<Vec<String>>,
    pub brand_id: Option<Vec<String>>,
    pub product_id: Option<Vec<String>>,
    pub product_variant_id: Option<Vec<String>>,
    pub batch_id: Option<Vec<String>>,
    pub size_set_id: Option<Vec<String>>,
    pub sku_code: Option<Vec<String>>,
    pub reference_ad_url: Option<String>,
    pub editable: Option<bool>,
    /// Lowercased; matches the ad id or the product's name.
    pub search: Option<String>,
}

/// One page of `org_id`'s ads with `filter`'s conditions, paging and facets (`status`).
///
/// # Errors
/// VALIDATION_ERROR for a bad cursor; database failures.
pub(super) async fn list(
    db: &Db,
    org_id: &str,
    filter: &ListFilter,
    p: &ListParams,
) -> ApiResult<Page<AdRow>> {
    let mut conditions = Vec::new();
    for (values, column, dim) in [
        (&filter.status, "t.status", Some("status")),
        (&filter.brand_id, "t.brand_id", None),
        (&filter.product_id, "t.product_id", None),
        (&filter.product_variant_id, "t.product_variant_id", None),
        (&filter.batch_id, "t.batch_id", None),
        (&filter.size_set_id, "t.size_set_id", None),
        (&filter.sku_code, "t.sku_code", None),
    ] {
        if let Some(values) = values {
            conditions.push(Condition::any_of(dim, column, values));
        }
    }
    if let Some(url) = &filter.reference_ad_url {
        conditions.push(Condition::new(
            "t.reference_ad_url = ?",
            vec![Bind::Text(url.clone())],
        ));
    }
    if let Some(e) = filter.editable {
        conditions.push(Condition::new(
            "t.editable = ?",
            vec![Bind::Int(i64::from(e))],
        ));
    }
    if let Some(needle) = &filter.search {
        conditions.push(Condition::new(
            "instr(lower(t.id), ?) > 0 OR instr(t.search_name, ?) > 0",
            vec![Bind::Text(needle.clone()), Bind::Text(needle.clone())],
        ));
    }
    ListQuery {
        table: "image_ads",
        columns: COLUMNS,
        joins: "",
        org_id,
        conditions,
        facet_columns: &[("status", "t.status")],
    }
    .fetch::<AdRow>(db, p)
    .await
}

/// What applying a worker's result reads of an ad before changing it.
pub(super) struct ResultState {
    pub org_id: String,
    pub status: String,
    pub current_version: i64,
    pub editable: bool,
    pub price_cents: i64,
    pub charged_at: Option<String>,
    pub figma_sync: Option<String>,
}

/// The ad's state for a result, `None` when there is no such ad.
pub(super) async fn result_state(
    conn: &mut AnyConnection,
    id: &str,
) -> ApiResult<Option<ResultState>> {
    type Row = (
        String,
        String,
        i64,
        crate::store::Flag,
        i64,
        Option<String>,
        Option<String>,
    );
    let row: Option<Row> = crate::store::query_as(
        "SELECT org_id, status, current_version, editable, price_cents, charged_at, figma_sync \
         FROM image_ads WHERE id = ?",
    )
    .bind(id)
    .fetch_optional(conn)
    .await?;
    Ok(row.map(
        |(org_id, status, current_version, editable, price_cents, charged_at, figma_sync)| {
            ResultState {
                org_id,
                status,
                current_version,
                editable: editable.0,
                price_cents,
                charged_at,
                figma_sync,
            }
        },
    ))
}

/// A rendered version as the ad's row takes it.
pub(super) struct Completion<'a> {
    pub id: &'a str,
    pub image_url: &'a str,
    pub width: u32,
    pub height: u32,
    pub duration_ms: i64,
    /// The tree, kept when given (editable ads).
    pub tree: Option<&'a str>,
    pub copy_report: Option<String>,
    /// Figma's own render of the frame (a sync), kept when given.
    pub figma_render_url: Option<&'a str>,
    /// The sync state after a sync, kept when given.
    pub figma_sync: Option<&'a str>,
    pub now: &'a str,
}

/// Makes the ad `completed` with its rendered version.
pub(super) async fn complete(conn: &mut AnyConnection, c: &Completion<'_>) -> ApiResult<()> {
    crate::store::query(
        "UPDATE image_ads SET status = 'completed', progress = NULL, image_url = ?, width = ?, height = ?, \
         duration_ms = ?, completed_at = ?, updated_at = ?, current_json_tree = coalesce(?, current_json_tree), \
         copy_report = coalesce(?, copy_report), figma_render_url = coalesce(?, figma_render_url), \
         initial_figma_render_url = coalesce(initial_figma_render_url, ?), figma_sync = coalesce(?, figma_sync), \
         error_code = NULL, error_message = NULL WHERE id = ?",
    )
    .bind(c.image_url)
    .bind(i64::from(c.width))
    .bind(i64::from(c.height))
    .bind(c.duration_ms)
    .bind(c.now)
    .bind(c.now)
    .bind(c.tree)
    .bind(&c.copy_report)
    .bind(c.figma_render_url)
    .bind(c.figma_render_url)
    .bind(c.figma_sync)
    .bind(c.id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records the completed version `version` of an ad whose job made it (a new ad's first
/// version, a Figma import's); an existing row is left as it is.
pub(super) async fn insert_completed_version(
    conn: &mut AnyConnection,
    org_id: &str,
    c: &Completion<'_>,
    version: u32,
) -> ApiResult<()> {
    crate::store::query(
        "INSERT INTO image_ad_versions (id, ad_id, org_id, version_number, json_tree, image_url, width, height, \
         status, created_at, completed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'completed', ?, ?) \
         ON CONFLICT(ad_id, version_number) DO NOTHING",
    )
    .bind(crate::ids::new_id("iav"))
    .bind(c.id)
    .bind(org_id)
    .bind(i64::from(version))
    .bind(c.tree.unwrap_or("{}"))
    .bind(c.image_url)
    .bind(i64::from(c.width))
    .bind(i64::from(c.height))
    .bind(c.now)
    .bind(c.now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Completes the version row an edit started ([`start_version`]) with its render.
pub(super) async fn complete_version(
    conn: &mut AnyConnection,
    c: &Completion<'_>,
    version: u32,
) -> ApiResult<()> {
    crate::store::query(
        "UPDATE image_ad_versions SET image_url = ?, width = ?, height = ?, status = 'completed', completed_at = ? \
         WHERE ad_id = ? AND version_number = ?",
    )
    .bind(c.image_url)
    .bind(i64::from(c.width))
    .bind(i64::from(c.height))
    .bind(c.now)
    .bind(c.id)
    .bind(i64::from(version))
    .execute(conn)
    .await?;
    Ok(())
}

/// Notes that the ad's price was captured.
pub(super) async fn mark_charged(conn: &mut AnyConnection, id: &str, now: &str) -> ApiResult<()> {
    crate::store::query("UPDATE image_ads SET charged_at = ? WHERE id = ?")
        .bind(now)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// A sync whose frame had not changed: the ad is `completed` again at its latest completed
/// version (`fallback` when it has none), with the new sync state.
pub(super) async fn back_to_latest_version(
    conn: &mut AnyConnection,
    id: &str,
    fallback: i64,
    figma_sync: &str,
    now: &str,
) -> ApiResult<()> {
    let previous: Option<i64> = crate::store::query_scalar(
        "SELECT max(version_number) FROM image_ad_versions WHERE ad_id = ? AND status = 'completed'",
    )
    .bind(id)
    .fetch_one(&mut *conn)
    .await?;
    crate::store::query(
        "UPDATE image_ads SET status = 'completed', progress = NULL, current_version = ?, figma_sync = ?, \
         error_code = NULL, error_message = NULL, updated_at = ? WHERE id = ?",
    )
    .bind(previous.unwrap_or(fallback).max(1))
    .bind(figma_sync)
    .bind(now)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Makes the ad and its version `version` `failed` with the worker's code and message.
pub(super) async fn fail(
    conn: &mut AnyConnection,
    id: &str,
    version: u32,
    code: &str,
    message: &str,
    now: &str,
) -> ApiResult<()> {
    crate::store::query(
        "UPDATE image_ads SET status = 'failed', progress = NULL, error_code = ?, error_message = ?, updated_at = ? WHERE id = ?",
    )
    .bind(code)
    .bind(message)
    .bind(now)
    .bind(id)
    .execute(&mut *conn)
    .await?;
    crate::store::query(
        "UPDATE image_ad_versions SET status = 'failed', error_code = ?, error_message = ? WHERE ad_id = ? AND version_number = ?",
    )
    .bind(code)
    .bind(message)
    .bind(id)
    .bind(i64::from(version))
    .execute(conn)
    .await?;
    Ok(())
}

/// After a failed sync of a synced ad: its current version goes back to its latest
/// completed version (a re-sync's new version was never made), so the next re-sync
/// numbers on from there. Nothing for other ads, nor for a PATCH's failed render (which
/// keeps its version row and its number).
pub(super) async fn after_failed_sync(conn: &mut AnyConnection, id: &str) -> ApiResult<()> {
    crate::store::query(
        "UPDATE image_ads SET current_version = (SELECT max(version_number) FROM image_ad_versions \
         WHERE ad_id = ? AND status = 'completed') \
         WHERE id = ? AND figma_file_key IS NOT NULL AND EXISTS (SELECT 1 FROM image_ad_versions \
         WHERE ad_id = ? AND status = 'completed') AND NOT EXISTS (SELECT 1 FROM image_ad_versions \
         WHERE ad_id = ? AND version_number = image_ads.current_version)",
    )
    .bind(id)
    .bind(id)
    .bind(id)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// The jobs of every `processing` ad, as their rows keep them.
pub(super) async fn processing_jobs(db: &Db) -> Result<Vec<String>, sqlx::Error> {
    crate::store::query_scalar(
        "SELECT job FROM image_ads WHERE status = 'processing' AND deleted_at IS NULL",
    )
    .fetch_all(&db.read)
    .await
}
