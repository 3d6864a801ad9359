//! A pack's designs: checking the id lists of add and remove, the visibility check of
//! added designs, and [`add_designs`] / [`remove_designs`] (POST and DELETE
//! /v1/design-packs/{id}/items; the dashboard calls them too). The cap of [`PACK_MAX`]
//! counts every link, hidden designs included.

use super::store;
use super::{Added, PACK_MAX, PER_CALL_MAX, Removed, own_pack};
use crate::error::{ApiError, ApiResult, ErrorCode, FieldError};
use crate::store::Db;

/// De-duplicated `ids`; an error in `errors` when there are more than [`PER_CALL_MAX`].
pub(super) fn check_ids(ids: &[String], errors: &mut Vec<FieldError>) -> Vec<String> {
    if ids.len() > PER_CALL_MAX {
        errors.push(FieldError::new(
            "swipe_file_ids",
            format!(
                "names {} designs; at most {PER_CALL_MAX} per call",
                ids.len()
            ),
        ));
    }
    let mut out: Vec<String> = Vec::new();
    for id in ids {
        if !out.contains(id) {
            out.push(id.clone());
        }
    }
    out
}

/// SWIPE_FILE_NOT_FOUND listing each of `ids` the organisation does not see.
pub(super) async fn require_designs(
    conn: &mut sqlx::AnyConnection,
    org_id: &str,
    ids: &[String],
) -> ApiResult<()> {
    let mut missing = Vec::new();
    for id in ids {
        if !store::design_visible(&mut *conn, org_id, id).await? {
            missing.push(FieldError::new(
                "swipe_file_ids",
                format!("`{id}` is not in the swipe file"),
            ));
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(ApiError {
        details: missing,
        ..ApiError::new(
            ErrorCode::SwipeFileNotFound,
            "Some swipe_file_ids are not in the swipe file; details lists each",
        )
    })
}

/// Adds `ids` (checked visible) to `pack_id`; returns (added, already_present).
pub(super) async fn add(
    conn: &mut sqlx::AnyConnection,
    pack_id: &str,
    ids: &[String],
) -> ApiResult<(Vec<String>, Vec<String>)> {
    let mut present = Vec::new();
    let mut new = Vec::new();
    for id in ids {
        if store::has_item(&mut *conn, pack_id, id).await? {
            present.push(id.clone());
        } else {
            new.push(id.clone());
        }
    }
    let total = store::link_count(&mut *conn, pack_id).await?;
    if total + new.len() as i64 > PACK_MAX {
        return Err(ApiError::new(
            ErrorCode::DesignPackFull,
            format!(
                "The pack holds {total} designs; adding {} would pass the limit of {PACK_MAX}",
                new.len()
            ),
        ));
    }
    let now = crate::timestamp::now();
    for id in &new {
        store::insert_item(&mut *conn, pack_id, id, &now).await?;
    }
    if !new.is_empty() {
        store::touch(&mut *conn, pack_id, &now).await?;
    }
    Ok((new, present))
}

pub(super) fn check_items(ids: &[String]) -> ApiResult<Vec<String>> {
    let mut errors = Vec::new();
    if ids.is_empty() {
        errors.push(FieldError::new(
            "swipe_file_ids",
            "must name at least one design",
        ));
    }
    let ids = check_ids(ids, &mut errors);
    crate::resources::common::finish(errors)?;
    Ok(ids)
}

/// Adds designs to an own pack (what POST /v1/design-packs/{id}/items does).
///
/// # Errors
/// VALIDATION_ERROR; DESIGN_PACK_NOT_FOUND; SWIPE_FILE_NOT_FOUND; DESIGN_PACK_FULL;
/// CONFLICT for a service-curated pack; database failures.
pub async fn add_designs(db: &Db, org_id: &str, id: &str, ids: &[String]) -> ApiResult<Added> {
    let ids = check_items(ids)?;
    own_pack(db, org_id, id).await?;
    let mut tx = db.begin_write_for(org_id).await?;
    require_designs(&mut tx, org_id, &ids).await?;
    let (added, already_present) = add(&mut tx, id, &ids).await?;
    // The response is read back through the read pool: commit now (see `commit_now`).
    tx.commit_now().await?;
    let item_count = store::load(db, org_id, id).await?.item_count;
    Ok(Added {
        added,
        already_present,
        item_count,
    })
}

/// Removes designs from an own pack (what DELETE /v1/design-packs/{id}/items does).
///
/// # Errors
/// VALIDATION_ERROR; DESIGN_PACK_NOT_FOUND; CONFLICT for a service-curated pack; database
/// failures.
pub async fn remove_designs(db: &Db, org_id: &str, id: &str, ids: &[String]) -> ApiResult<Removed> {
    let ids = check_items(ids)?;
    own_pack(db, org_id, id).await?;
    let mut tx = db.begin_write_for(org_id).await?;
    let (mut removed, mut not_present) = (Vec::new(), Vec::new());
    for sf in ids {
        if store::remove_item(&mut tx, id, &sf).await? {
            removed.push(sf);
        } else {
            not_present.push(sf);
        }
    }
    if !removed.is_empty() {
        store::touch(&mut tx, id, &crate::timestamp::now()).await?;
    }
    // The response is read back through the read pool: commit now (see `commit_now`).
    tx.commit_now().await?;
    let item_count = store::load(db, org_id, id).await?.item_count;
    Ok(Removed {
        removed,
        not_present,
        item_count,
    })
}
