//! Every SQL statement of `/v1/design-packs`, as functions named for what they do. The
//! handlers in [`super`] and [`super::items`] parse, call these and respond; they hold no
//! SQL. Functions that take `&mut AnyConnection` run inside the caller's transaction (a
//! [`WriteTx`] derefs to one), so the caller keeps its transaction boundaries. Which designs
//! an organisation sees, and the swipe-file filters' conditions, come from
//! `crate::swipe::filter`, shared with the swipe-file lists and search.
//!
//! The texts are the portable subset both engines share (see [`crate::store`]).
//!
//! [`WriteTx`]: crate::store::WriteTx

use sqlx::{AnyConnection, FromRow};

use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::http::envelope::Page;
use crate::store::Db;
use crate::store::list::{Bind, bind_as, bind_scalar};
use crate::swipe::filter::{SUBSCRIBED_SOURCES, SwipeFilter, and_all, visible};

/// A pack as every read selects it, with its visible item count and, when listed with
/// swipe-file filters, the count of its items that match them (`matched`).
#[derive(FromRow)]
pub(super) struct PackRow {
    pub id: String,
    pub org_id: Option<String>,
    pub title: String,
    pub description: Option<String>,
    pub created_by_profile: Option<String>,
    pub created_by_name: Option<String>,
    pub archived_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub item_count: i64,
    pub matched: i64,
}

/// Packs (alias `p`) the organisation sees: its own and those of subscribed sources.
fn visible_packs(org_id: &str) -> (String, Vec<Bind>) {
    (
        format!(
            "(p.org_id = ? OR (p.org_id IS NULL AND p.data_source_id IN ({SUBSCRIBED_SOURCES})))"
        ),
        vec![Bind::Text(org_id.into()), Bind::Text(org_id.into())],
    )
}

/// SQL counting pack `p`'s visible, active designs that meet `extra` (over alias `t`).
fn count_items(org_id: &str, extra: &str, extra_binds: &[Bind]) -> (String, Vec<Bind>) {
    let v = visible(org_id);
    let sql = format!(
        "(SELECT COUNT(*) FROM design_pack_items i JOIN swipe_files t ON t.id = i.swipe_file_id \
         WHERE i.pack_id = p.id AND t.archived_at IS NULL AND ({}) AND {extra})",
        v.sql
    );
    let mut binds = v.binds;
    binds.extend(extra_binds.iter().cloned());
    (sql, binds)
}

/// `SELECT … FROM design_packs p` with item_count and matched columns, and its binds.
fn select_packs(org_id: &str, filter: Option<&SwipeFilter>) -> (String, Vec<Bind>) {
    let (count_sql, mut binds) = count_items(org_id, "1 = 1", &[]);
    let (matched_sql, matched_binds) = match filter {
        Some(f) => {
            let (w, b) = and_all(&f.conditions());
            count_items(org_id, &w, &b)
        }
        None => ("0".to_string(), vec![]),
    };
    binds.extend(matched_binds);
    (
        format!(
            "SELECT p.seq, p.id, p.org_id, p.title, p.description, p.created_by_profile, p.created_by_name, \
             p.archived_at, p.created_at, p.updated_at, {count_sql} AS item_count, {matched_sql} AS matched \
             FROM design_packs p"
        ),
        binds,
    )
}

/// One of a pack's previews: (swipe file id, blob key, width, height).
pub(super) type PreviewRow = (String, String, Option<i64>, Option<i64>);

/// The 4 most recently added visible, active designs of `pack_id`, newest first.
///
/// # Errors
/// Database failures.
pub(super) async fn previews(db: &Db, org_id: &str, pack_id: &str) -> ApiResult<Vec<PreviewRow>> {
    let v = visible(org_id);
    let sql = format!(
        "SELECT t.id, t.blob_key, t.width, t.height FROM design_pack_items i JOIN swipe_files t ON t.id = i.swipe_file_id \
         WHERE i.pack_id = ? AND t.archived_at IS NULL AND ({}) ORDER BY i.seq DESC LIMIT 4",
        v.sql
    );
    let mut binds = vec![Bind::Text(pack_id.into())];
    binds.extend(v.binds);
    Ok(bind_as(crate::store::query_as(&sql), &binds)
        .fetch_all(&db.read)
        .await?)
}

/// The pack `id` if the organisation sees it.
///
/// # Errors
/// DESIGN_PACK_NOT_FOUND; database failures.
pub(super) async fn load(db: &Db, org_id: &str, id: &str) -> ApiResult<PackRow> {
    let (select, mut binds) = select_packs(org_id, None);
    let (vis, vis_binds) = visible_packs(org_id);
    binds.push(Bind::Text(id.into()));
    binds.extend(vis_binds);
    bind_as(
        crate::store::query_as::<PackRow>(&format!("{select} WHERE p.id = ? AND {vis}")),
        &binds,
    )
    .fetch_optional(&db.read)
    .await?
    .ok_or_else(|| ApiError::not_found(ErrorCode::DesignPackNotFound, "design pack", id))
}

/// Whether the organisation sees pack `id`.
///
/// # Errors
/// Database failures.
pub(super) async fn is_visible(db: &Db, org_id: &str, id: &str) -> ApiResult<bool> {
    let (vis, vis_binds) = visible_packs(org_id);
    let mut binds = vec![Bind::Text(id.into())];
    binds.extend(vis_binds);
    let found: Option<String> = bind_scalar(
        crate::store::query_scalar(&format!(
            "SELECT p.id FROM design_packs p WHERE p.id = ? AND {vis}"
        )),
        &binds,
    )
    .fetch_optional(&db.read)
    .await?;
    Ok(found.is_some())
}

/// One page of the organisation's packs, most recently updated first: archived ones or
/// active ones, and with `filter` only those holding a matching visible design. Count and
/// page come from one read snapshot.
///
/// # Errors
/// VALIDATION_ERROR for a `starting_after` that is not a pack the organisation sees;
/// database failures.
pub(super) async fn list(
    db: &Db,
    org: &str,
    archived: bool,
    filter: Option<&SwipeFilter>,
    after: Option<&str>,
    limit: i64,
) -> ApiResult<Page<PackRow>> {
    let matched = filter.is_some();
    let (select, mut binds) = select_packs(org, filter);
    let (vis, vis_binds) = visible_packs(org);
    binds.extend(vis_binds);
    let inner = format!(
        "{select} WHERE {vis} AND p.archived_at IS {} NULL",
        if archived { "NOT" } else { "" }
    );
    let base = if matched {
        format!("SELECT * FROM ({inner}) AS x WHERE matched > 0")
    } else {
        format!("SELECT * FROM ({inner}) AS x WHERE 1 = 1")
    };
    let mut tx = db.begin_read().await?;
    let total_count: i64 = bind_scalar(
        crate::store::query_scalar(&format!("SELECT COUNT(*) FROM ({base}) AS c")),
        &binds,
    )
    .fetch_one(&mut *tx)
    .await?;
    let mut page_sql = base.clone();
    let mut page_binds = binds.clone();
    if let Some(after) = after {
        let (vis, vis_binds) = visible_packs(org);
        let mut b = vec![Bind::Text(after.to_string())];
        b.extend(vis_binds);
        let cursor: Option<(String, i64)> = bind_as(
            crate::store::query_as(&format!(
                "SELECT p.updated_at, p.seq FROM design_packs p WHERE p.id = ? AND {vis}"
            )),
            &b,
        )
        .fetch_optional(&mut *tx)
        .await?;
        let Some((updated, seq)) = cursor else {
            return Err(ApiError::field(
                "starting_after",
                format!(
                    "`{after}` is not an id from this list; pass the id of the last item of the previous page"
                ),
            ));
        };
        page_sql.push_str(" AND (updated_at < ? OR (updated_at = ? AND seq < ?))");
        page_binds.extend([
            Bind::Text(updated.clone()),
            Bind::Text(updated),
            Bind::Int(seq),
        ]);
    }
    page_sql.push_str(" ORDER BY updated_at DESC, seq DESC LIMIT ?");
    page_binds.push(Bind::Int(limit + 1));
    let mut rows: Vec<PackRow> = bind_as(crate::store::query_as(&page_sql), &page_binds)
        .fetch_all(&mut *tx)
        .await?;
    tx.commit().await?;
    let has_more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    Ok(Page {
        items: rows,
        has_more,
        total_count,
        facets: None,
    })
}

/// A new pack of an organisation; `created_by` is the dashboard's `(profile_id, name)`.
pub(super) struct NewPack<'a> {
    pub id: &'a str,
    pub org_id: &'a str,
    pub title: &'a str,
    pub description: Option<&'a str>,
    pub created_by: Option<(&'a str, &'a str)>,
    pub now: &'a str,
}

/// Inserts a new, empty pack.
///
/// # Errors
/// Database failures.
pub(super) async fn insert_pack(conn: &mut AnyConnection, p: &NewPack<'_>) -> ApiResult<()> {
    crate::store::query("INSERT INTO design_packs (id, org_id, title, description, created_by_profile, created_by_name, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
        .bind(p.id)
        .bind(p.org_id)
        .bind(p.title)
        .bind(p.description)
        .bind(p.created_by.map(|c| c.0))
        .bind(p.created_by.map(|c| c.1))
        .bind(p.now)
        .bind(p.now)
        .execute(conn)
        .await?;
    Ok(())
}

/// Sets a pack's title and description (`updated_at` now).
///
/// # Errors
/// Database failures.
pub(super) async fn set_text(
    conn: &mut AnyConnection,
    id: &str,
    title: String,
    description: Option<String>,
) -> ApiResult<()> {
    crate::store::query(
        "UPDATE design_packs SET title = ?, description = ?, updated_at = ? WHERE id = ?",
    )
    .bind(title)
    .bind(description)
    .bind(crate::timestamp::now())
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Deletes a pack and its links (the designs stay).
///
/// # Errors
/// Database failures.
pub(super) async fn delete_pack(conn: &mut AnyConnection, id: &str) -> ApiResult<()> {
    crate::store::query("DELETE FROM design_pack_items WHERE pack_id = ?")
        .bind(id)
        .execute(&mut *conn)
        .await?;
    crate::store::query("DELETE FROM design_packs WHERE id = ?")
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Archives (`archive`: `archived_at` = `now` unless already archived) or unarchives a pack.
///
/// # Errors
/// Database failures.
pub(super) async fn set_archived(
    conn: &mut AnyConnection,
    id: &str,
    archive: bool,
    now: &str,
) -> ApiResult<()> {
    if archive {
        crate::store::query(
            "UPDATE design_packs SET archived_at = ? WHERE id = ? AND archived_at IS NULL",
        )
        .bind(now)
        .bind(id)
        .execute(conn)
        .await?;
    } else {
        crate::store::query("UPDATE design_packs SET archived_at = NULL WHERE id = ?")
            .bind(id)
            .execute(conn)
            .await?;
    }
    Ok(())
}

/// Whether the organisation sees design `id` (any state).
///
/// # Errors
/// Database failures.
pub(super) async fn design_visible(
    conn: &mut AnyConnection,
    org_id: &str,
    id: &str,
) -> ApiResult<bool> {
    let v = visible(org_id);
    let mut binds = vec![Bind::Text(id.to_string())];
    binds.extend(v.binds.iter().cloned());
    let found: Option<String> = bind_scalar(
        crate::store::query_scalar(&format!(
            "SELECT t.id FROM swipe_files t WHERE t.id = ? AND ({})",
            v.sql
        )),
        &binds,
    )
    .fetch_optional(conn)
    .await?;
    Ok(found.is_some())
}

/// Whether design `id` is linked to `pack_id`.
///
/// # Errors
/// Database failures.
pub(super) async fn has_item(conn: &mut AnyConnection, pack_id: &str, id: &str) -> ApiResult<bool> {
    let there: Option<i64> = crate::store::query_scalar(
        "SELECT seq FROM design_pack_items WHERE pack_id = ? AND swipe_file_id = ?",
    )
    .bind(pack_id)
    .bind(id)
    .fetch_optional(conn)
    .await?;
    Ok(there.is_some())
}

/// Every link of `pack_id`, hidden designs included (what the size cap counts).
///
/// # Errors
/// Database failures.
pub(super) async fn link_count(conn: &mut AnyConnection, pack_id: &str) -> ApiResult<i64> {
    Ok(
        crate::store::query_scalar("SELECT COUNT(*) FROM design_pack_items WHERE pack_id = ?")
            .bind(pack_id)
            .fetch_one(conn)
            .await?,
    )
}

/// Links design `id` to `pack_id`.
///
/// # Errors
/// Database failures.
pub(super) async fn insert_item(
    conn: &mut AnyConnection,
    pack_id: &str,
    id: &str,
    now: &str,
) -> ApiResult<()> {
    crate::store::query(
        "INSERT INTO design_pack_items (pack_id, swipe_file_id, added_at) VALUES (?, ?, ?)",
    )
    .bind(pack_id)
    .bind(id)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Unlinks design `id` from `pack_id`; whether it was linked.
///
/// # Errors
/// Database failures.
pub(super) async fn remove_item(
    conn: &mut AnyConnection,
    pack_id: &str,
    id: &str,
) -> ApiResult<bool> {
    let n = crate::store::query(
        "DELETE FROM design_pack_items WHERE pack_id = ? AND swipe_file_id = ?",
    )
    .bind(pack_id)
    .bind(id)
    .execute(conn)
    .await?
    .rows_affected();
    Ok(n > 0)
}

/// Moves a pack's `updated_at` (its designs changed).
///
/// # Errors
/// Database failures.
pub(super) async fn touch(conn: &mut AnyConnection, pack_id: &str, now: &str) -> ApiResult<()> {
    crate::store::query("UPDATE design_packs SET updated_at = ? WHERE id = ?")
        .bind(now)
        .bind(pack_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Visible, active packs whose title contains `needle` (those starting with it first,
/// then newest), or in resolve mode the visible packs of `ids`; as (id, title, is_managed).
///
/// # Errors
/// Database failures.
pub(super) async fn search(
    db: &Db,
    org_id: &str,
    needle: &str,
    limit: i64,
    ids: Option<&[String]>,
) -> ApiResult<Vec<(String, String, bool)>> {
    let (vis, mut binds) = visible_packs(org_id);
    let sql = match ids {
        Some(ids) => {
            let marks = crate::store::marks(ids.len().max(1));
            binds.extend(ids.iter().cloned().map(Bind::Text));
            if ids.is_empty() {
                binds.push(Bind::Text(String::new()));
            }
            format!(
                "SELECT p.id, p.title, p.org_id IS NULL FROM design_packs p WHERE {vis} AND p.id IN ({marks})"
            )
        }
        None => {
            binds.push(Bind::Text(needle.to_string()));
            binds.push(Bind::Int(needle.chars().count() as i64));
            binds.push(Bind::Text(needle.to_string()));
            binds.push(Bind::Int(limit));
            format!(
                "SELECT p.id, p.title, p.org_id IS NULL FROM design_packs p WHERE {vis} AND p.archived_at IS NULL \
                 AND instr(lower(p.title), ?) > 0 ORDER BY substr(lower(p.title), 1, ?) = ? DESC, p.seq DESC LIMIT ?"
            )
        }
    };
    let rows: Vec<(String, String, crate::store::Flag)> =
        bind_as(crate::store::query_as(&sql), &binds)
            .fetch_all(&db.read)
            .await?;
    Ok(rows.into_iter().map(|(id, t, m)| (id, t, m.0)).collect())
}
