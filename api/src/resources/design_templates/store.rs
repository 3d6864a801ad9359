//! Every SQL statement of `/v1/design-templates`, as functions named for what they do: the
//! handlers in [`super`], the versions in [`super::versions`] and the worker results in
//! [`super::apply`] call these; they hold no SQL. Functions that take `&mut AnyConnection`
//! run inside the caller's transaction (a [`WriteTx`] or a read snapshot derefs to one), so
//! the caller keeps its transaction boundaries.
//!
//! The texts are the portable subset both engines share (see [`crate::store`]).
//!
//! [`WriteTx`]: crate::store::WriteTx

use adforge_worker::Job;
use serde_json::Value;
use sqlx::{AnyConnection, FromRow};

use super::DesignTemplate;
use super::versions::DesignTemplateVersion;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::http::envelope::Page;
use crate::store::Db;
use crate::store::list::{Bind, Condition, ListParams, ListQuery};

/// A row of `design_templates` as every read selects it ([`COLUMNS`]).
#[derive(FromRow, Clone)]
pub(crate) struct TemplateRow {
    pub id: String,
    pub reference_image_url: String,
    pub swipe_file_id: Option<String>,
    pub status: String,
    pub current_json_tree: Option<String>,
    pub json_tree_version: i64,
    pub change_summary: Option<String>,
    pub version_created_at: String,
    pub preview_url: Option<String>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    pub aspect_ratio: Option<String>,
    pub industry: Option<String>,
    pub ad_format: Option<String>,
    pub duration_ms: Option<i64>,
    pub error: Option<String>,
    pub analysis: Option<String>,
    pub reference_colours: Option<String>,
    pub deleted_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub figma_file_key: Option<String>,
    pub figma_node_id: Option<String>,
    pub figma_sync: Option<String>,
}

pub(crate) const COLUMNS: &str = "t.id, t.reference_image_url, t.swipe_file_id, t.status, t.current_json_tree, \
    t.json_tree_version, t.change_summary, t.version_created_at, t.preview_url, t.width, t.height, t.aspect_ratio, \
    t.industry, t.ad_format, t.duration_ms, t.error, t.analysis, t.reference_colours, t.deleted_at, t.created_at, \
    t.updated_at, t.figma_file_key, t.figma_node_id, t.figma_sync";

impl TemplateRow {
    /// The template as the API shows it.
    pub(crate) fn into_api(self) -> DesignTemplate {
        DesignTemplate {
            current_json_tree: self
                .current_json_tree
                .and_then(|t| serde_json::from_str(&t).ok()),
            analysis: self.analysis.and_then(|a| serde_json::from_str(&a).ok()),
            figma: crate::resources::integrations::FigmaSync::from_columns(
                self.figma_file_key,
                self.figma_node_id,
                self.figma_sync.as_deref(),
            ),
            deleted: self.deleted_at.is_some(),
            id: self.id,
            reference_image_url: self.reference_image_url,
            swipe_file_id: self.swipe_file_id,
            status: self.status,
            json_tree_version: self.json_tree_version,
            preview_url: self.preview_url,
            width: self.width,
            height: self.height,
            aspect_ratio: self.aspect_ratio,
            industry: self.industry,
            ad_format: self.ad_format,
            duration_ms: self.duration_ms,
            error: self.error,
            deleted_at: self.deleted_at,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// Which rows [`load_row`] finds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Deletion {
    /// Live templates only (edits and ads: restore a deleted template first).
    LiveOnly,
    /// Soft-deleted ones too (GET, DELETE, restore).
    Any,
}

/// The template `id` of `org_id`, or 404 DESIGN_TEMPLATE_NOT_FOUND.
pub(crate) async fn load_row<'e, E: sqlx::AnyExecutor<'e>>(
    ex: E,
    org_id: &str,
    id: &str,
    deletion: Deletion,
) -> ApiResult<TemplateRow> {
    crate::store::query_as::<TemplateRow>(&by_id(deletion))
        .bind(id)
        .bind(org_id)
        .fetch_optional(ex)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(ErrorCode::DesignTemplateNotFound, "design template", id)
        })
}

/// The organisation's template `id`, deleted or not, as a point read (`GET
/// /v1/design-templates/{id}`, see [`crate::store::Db::point_read`]).
///
/// # Errors
/// 404 DESIGN_TEMPLATE_NOT_FOUND; database failures.
pub(crate) async fn read_row(
    db: &crate::store::Db,
    org_id: &str,
    id: &str,
) -> ApiResult<TemplateRow> {
    db.point_read_of::<TemplateRow>(COLUMNS, "design_templates", false, id, org_id)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(ErrorCode::DesignTemplateNotFound, "design template", id)
        })
}

/// The statement that reads one template by id and organisation.
fn by_id(deletion: Deletion) -> String {
    let live = match deletion {
        Deletion::LiveOnly => " AND t.deleted_at IS NULL",
        Deletion::Any => "",
    };
    format!("SELECT {COLUMNS} FROM design_templates AS t WHERE t.id = ? AND t.org_id = ?{live}")
}

/// A new template, `processing` at version 1 with its analysis job.
pub(super) struct NewTemplate<'a> {
    pub id: &'a str,
    pub org_id: &'a str,
    pub reference_image_url: &'a str,
    pub swipe_file_id: Option<&'a str>,
    /// A swipe-file design's classification, kept; a URL's is the analysis's to find.
    pub industry: Option<&'a str>,
    pub ad_format: Option<&'a str>,
    pub job: &'a Job,
    pub now: &'a str,
}

/// Records the Figma frame a new template is imported from.
pub(super) async fn set_figma_frame(
    conn: &mut sqlx::AnyConnection,
    id: &str,
    file_key: &str,
    node_id: &str,
) -> ApiResult<()> {
    crate::store::query(
        "UPDATE design_templates SET figma_file_key = ?, figma_node_id = ?, figma_sync = '{}' WHERE id = ?",
    )
    .bind(file_key)
    .bind(node_id)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Stores the state of a template's sync from Figma (with the completion that made it).
pub(super) async fn set_figma_sync(
    conn: &mut sqlx::AnyConnection,
    id: &str,
    f: &adforge_worker::protocol::FigmaSynced,
) -> ApiResult<()> {
    let before: Option<String> =
        crate::store::query_scalar("SELECT figma_sync FROM design_templates WHERE id = ?")
            .bind(id)
            .fetch_one(&mut *conn)
            .await?;
    let state = crate::resources::image_ads::sync::next_state(
        before.as_deref(),
        f,
        &crate::timestamp::now(),
    );
    crate::store::query("UPDATE design_templates SET figma_sync = ? WHERE id = ?")
        .bind(crate::store::to_json_text(&state))
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Inserts a new template.
///
/// # Errors
/// Database failures.
pub(super) async fn insert(conn: &mut AnyConnection, t: &NewTemplate<'_>) -> ApiResult<()> {
    crate::store::query(
        "INSERT INTO design_templates (id, org_id, reference_image_url, swipe_file_id, status, json_tree_version, \
         version_created_at, industry, ad_format, job, created_at, updated_at) \
         VALUES (?, ?, ?, ?, 'processing', 1, ?, ?, ?, ?, ?, ?)",
    )
    .bind(t.id)
    .bind(t.org_id)
    .bind(t.reference_image_url)
    .bind(t.swipe_file_id)
    .bind(t.now)
    .bind(t.industry)
    .bind(t.ad_format)
    .bind(crate::store::to_json_text(t.job))
    .bind(t.now)
    .bind(t.now)
    .execute(conn)
    .await?;
    Ok(())
}

/// One page of `org_id`'s templates with `filter`'s conditions, paging and facets.
///
/// # Errors
/// VALIDATION_ERROR for a bad cursor; database failures.
pub(super) async fn list(
    db: &Db,
    org_id: &str,
    filter: &super::TemplateFilter,
    p: &ListParams,
) -> ApiResult<Page<TemplateRow>> {
    let mut conditions = Vec::new();
    for (values, column, dim) in [
        (&filter.status, "t.status", "status"),
        (&filter.industry, "t.industry", "industry"),
        (&filter.ad_format, "t.ad_format", "ad_format"),
    ] {
        if let Some(values) = values {
            conditions.push(Condition::any_of(Some(dim), column, values));
        }
    }
    let base = Condition::new(
        if filter.deleted {
            "t.org_id = ? AND t.deleted_at IS NOT NULL"
        } else {
            "t.org_id = ? AND t.deleted_at IS NULL"
        },
        vec![Bind::Text(org_id.to_string())],
    );
    ListQuery {
        table: "design_templates",
        columns: COLUMNS,
        joins: "",
        org_id,
        conditions,
        facet_columns: &[
            ("industry", "t.industry"),
            ("ad_format", "t.ad_format"),
            ("status", "t.status"),
        ],
    }
    .fetch_visible::<TemplateRow>(db, p, base)
    .await
}

/// Keeps `row`'s current tree (with its preview and summary) as a version replaced at
/// `now`, and makes `tree` version `version` of the template, `processing` with `job`.
///
/// # Errors
/// Database failures.
pub(super) async fn start_version(
    conn: &mut AnyConnection,
    org_id: &str,
    row: &TemplateRow,
    next: &NextVersion<'_>,
) -> ApiResult<()> {
    crate::store::query(
        "INSERT INTO design_template_versions (template_id, org_id, json_tree_version, json_tree, preview_url, \
         change_summary, created_at, replaced_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&row.id)
    .bind(org_id)
    .bind(row.json_tree_version)
    .bind(row.current_json_tree.as_deref().unwrap_or("{}"))
    .bind(&row.preview_url)
    .bind(&row.change_summary)
    .bind(&row.version_created_at)
    .bind(next.now)
    .execute(&mut *conn)
    .await?;
    crate::store::query(
        "UPDATE design_templates SET status = 'processing', current_json_tree = ?, json_tree_version = ?, \
         change_summary = ?, version_created_at = ?, error = NULL, job = ?, updated_at = ? WHERE id = ?",
    )
    .bind(next.tree)
    .bind(next.version)
    .bind(next.change_summary)
    .bind(next.now)
    .bind(crate::store::to_json_text(next.job))
    .bind(next.now)
    .bind(&row.id)
    .execute(conn)
    .await?;
    Ok(())
}

/// The tree an edit makes current.
pub(super) struct NextVersion<'a> {
    pub version: i64,
    /// The tree's JSON text.
    pub tree: &'a str,
    pub change_summary: Option<&'a str>,
    pub job: &'a Job,
    pub now: &'a str,
}

/// Soft-deletes (`delete`) or restores template `id`.
///
/// # Errors
/// Database failures.
pub(super) async fn set_deleted(
    conn: &mut AnyConnection,
    id: &str,
    delete: bool,
    now: &str,
) -> ApiResult<()> {
    crate::store::query("UPDATE design_templates SET deleted_at = ?, updated_at = ? WHERE id = ?")
        .bind(delete.then(|| now.to_string()))
        .bind(now)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// A row of `design_template_versions` (a replaced tree) as reads select it.
#[derive(FromRow)]
pub(super) struct VersionRow {
    json_tree_version: i64,
    json_tree: String,
    change_summary: Option<String>,
    preview_url: Option<String>,
    created_at: String,
}

impl VersionRow {
    /// The version as the API shows it (never the current one).
    pub(super) fn into_api(self) -> DesignTemplateVersion {
        DesignTemplateVersion {
            json_tree_version: self.json_tree_version,
            json_tree: serde_json::from_str(&self.json_tree).unwrap_or(Value::Null),
            change_summary: self.change_summary,
            preview_url: self.preview_url,
            current: false,
            created_at: self.created_at,
        }
    }
}

const VERSION_COLUMNS: &str =
    "json_tree_version, json_tree, change_summary, preview_url, created_at";

/// The replaced versions of template `id`, oldest first.
///
/// # Errors
/// Database failures.
pub(super) async fn versions(
    conn: &mut AnyConnection,
    org_id: &str,
    id: &str,
) -> ApiResult<Vec<VersionRow>> {
    Ok(crate::store::query_as::<VersionRow>(&format!(
        "SELECT {VERSION_COLUMNS} FROM design_template_versions WHERE template_id = ? AND org_id = ? ORDER BY json_tree_version"
    ))
    .bind(id)
    .bind(org_id)
    .fetch_all(conn)
    .await?)
}

/// Replaced version `n` of template `id`, if there is one.
///
/// # Errors
/// Database failures.
pub(super) async fn version(
    conn: &mut AnyConnection,
    org_id: &str,
    id: &str,
    n: i64,
) -> ApiResult<Option<VersionRow>> {
    Ok(crate::store::query_as(&format!(
        "SELECT {VERSION_COLUMNS} FROM design_template_versions WHERE template_id = ? AND org_id = ? AND json_tree_version = ?"
    ))
    .bind(id)
    .bind(org_id)
    .bind(n)
    .fetch_optional(conn)
    .await?)
}

/// Where a template stands for a worker result: (org_id, status, json_tree_version).
///
/// # Errors
/// Database failures.
pub(super) async fn result_state(
    conn: &mut AnyConnection,
    id: &str,
) -> ApiResult<Option<(String, String, i64)>> {
    Ok(crate::store::query_as(
        "SELECT org_id, status, json_tree_version FROM design_templates WHERE id = ?",
    )
    .bind(id)
    .fetch_optional(conn)
    .await?)
}

/// What a finished render measured, for [`complete_analysis`] and [`complete_preview`].
pub(super) struct Rendered<'a> {
    pub id: &'a str,
    pub preview_url: &'a str,
    pub width: u32,
    pub height: u32,
    pub aspect_ratio: &'a str,
    pub duration_ms: i64,
    pub now: &'a str,
}

/// What an analysis found, besides its render.
pub(super) struct Analysed<'a> {
    pub tree: &'a Value,
    pub analysis: &'a Value,
    /// Dominant colours, heaviest first.
    pub reference_colours: &'a Vec<[u8; 3]>,
    pub industry: Option<&'a str>,
    pub ad_format: Option<&'a str>,
}

/// A completed analysis: the template is `completed` with its tree, preview, size and
/// analysis; a classification it already had is kept.
///
/// # Errors
/// Database failures.
pub(super) async fn complete_analysis(
    conn: &mut AnyConnection,
    r: &Rendered<'_>,
    a: &Analysed<'_>,
) -> ApiResult<()> {
    crate::store::query(
        "UPDATE design_templates SET status = 'completed', current_json_tree = ?, preview_url = ?, width = ?, \
         height = ?, aspect_ratio = ?, duration_ms = ?, analysis = ?, reference_colours = ?, error = NULL, \
         industry = coalesce(industry, ?), ad_format = coalesce(ad_format, ?), version_created_at = ?, \
         updated_at = ? WHERE id = ?",
    )
    .bind(crate::store::to_json_text(a.tree))
    .bind(r.preview_url)
    .bind(i64::from(r.width))
    .bind(i64::from(r.height))
    .bind(r.aspect_ratio)
    .bind(r.duration_ms)
    .bind(crate::store::to_json_text(a.analysis))
    .bind(crate::store::to_json_text(a.reference_colours))
    .bind(a.industry)
    .bind(a.ad_format)
    .bind(r.now)
    .bind(r.now)
    .bind(r.id)
    .execute(conn)
    .await?;
    Ok(())
}

/// A completed preview of an edit: the template is `completed` with the preview and the
/// (possibly changed) size of the edited tree.
///
/// # Errors
/// Database failures.
pub(super) async fn complete_preview(conn: &mut AnyConnection, r: &Rendered<'_>) -> ApiResult<()> {
    crate::store::query(
        "UPDATE design_templates SET status = 'completed', preview_url = ?, width = ?, height = ?, \
         aspect_ratio = ?, duration_ms = ?, error = NULL, updated_at = ? WHERE id = ?",
    )
    .bind(r.preview_url)
    .bind(i64::from(r.width))
    .bind(i64::from(r.height))
    .bind(r.aspect_ratio)
    .bind(r.duration_ms)
    .bind(r.now)
    .bind(r.id)
    .execute(conn)
    .await?;
    Ok(())
}

/// A failed analysis: the template is `failed` with the reason.
///
/// # Errors
/// Database failures.
pub(super) async fn fail_analysis(
    conn: &mut AnyConnection,
    id: &str,
    error: &str,
    now: &str,
) -> ApiResult<()> {
    crate::store::query(
        "UPDATE design_templates SET status = 'failed', error = ?, updated_at = ? WHERE id = ?",
    )
    .bind(error)
    .bind(now)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// A failed preview of an edit: the template is `completed` with the edited tree and no
/// preview; `error` says why.
///
/// # Errors
/// Database failures.
pub(super) async fn fail_preview(
    conn: &mut AnyConnection,
    id: &str,
    error: String,
    now: &str,
) -> ApiResult<()> {
    crate::store::query(
        "UPDATE design_templates SET status = 'completed', preview_url = NULL, error = ?, updated_at = ? WHERE id = ?",
    )
    .bind(error)
    .bind(now)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// The jobs of every template whose analysis, preview or Figma import is running (deleted
/// ones too: their result is still applied).
pub(super) async fn processing_jobs(db: &Db) -> Result<Vec<String>, sqlx::Error> {
    crate::store::query_scalar("SELECT job FROM design_templates WHERE status = 'processing'")
        .fetch_all(&db.read)
        .await
}
