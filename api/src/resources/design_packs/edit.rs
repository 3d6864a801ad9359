//! Creating, renaming and archiving packs ([`create`], [`update`], [`set_archived`]: what
//! POST, PATCH and archive/unarchive of /v1/design-packs do after the scope check; the web
//! dashboard calls them too), with the checks of a pack's title and description. Each
//! writes in one transaction and answers the pack as read back afterwards.

use super::{
    DESCRIPTION_MAX, DesignPack, PackCreate, PackUpdate, TITLE_MAX, items, own_pack, respond, store,
};
use crate::blob::BlobStore;
use crate::error::{ApiResult, FieldError};
use crate::resources::common::{self, Patch};
use crate::store::Db;

fn check_title(title: &str, errors: &mut Vec<FieldError>) -> String {
    let t = title.trim().to_string();
    let n = t.chars().count();
    if n == 0 || n > TITLE_MAX {
        errors.push(FieldError::new(
            "title",
            format!("must be 1 to {TITLE_MAX} characters"),
        ));
    }
    t
}

fn check_description(d: Option<String>, errors: &mut Vec<FieldError>) -> Option<String> {
    let d = d.map(|d| d.trim().to_string()).filter(|d| !d.is_empty());
    if d.as_ref()
        .is_some_and(|d| d.chars().count() > DESCRIPTION_MAX)
    {
        errors.push(FieldError::new(
            "description",
            format!("must be at most {DESCRIPTION_MAX} characters"),
        ));
    }
    d
}

/// Creates a pack of the organisation (what POST /v1/design-packs does) and answers it.
/// `created_by` is the dashboard's signed-in profile `(profile_id, name)`; `None` for API
/// keys.
///
/// # Errors
/// VALIDATION_ERROR; SWIPE_FILE_NOT_FOUND; DESIGN_PACK_FULL; database failures.
pub async fn create(
    db: &Db,
    blobs: &dyn BlobStore,
    org_id: &str,
    body: PackCreate,
    created_by: Option<(&str, &str)>,
) -> ApiResult<DesignPack> {
    let mut errors = Vec::new();
    let title = check_title(&body.title, &mut errors);
    let description = check_description(body.description, &mut errors);
    let ids = items::check_ids(&body.swipe_file_ids.unwrap_or_default(), &mut errors);
    common::finish(errors)?;
    let id = crate::ids::new_id("dp");
    let mut tx = db.begin_write_for(org_id).await?;
    items::require_designs(&mut tx, org_id, &ids).await?;
    let now = crate::timestamp::now();
    store::insert_pack(
        &mut tx,
        &store::NewPack {
            id: &id,
            org_id,
            title: &title,
            description: description.as_deref(),
            created_by,
            now: &now,
        },
    )
    .await?;
    items::add(&mut tx, &id, &ids).await?;
    // The response is read back through the read pool: commit now. A crash between this
    // commit and the stored response lets a retry create a second pack (see `commit_now`).
    tx.commit_now().await?;
    respond(db, blobs, org_id, &id).await
}

/// Renames or re-describes an own pack (what PATCH /v1/design-packs/{id} does).
///
/// # Errors
/// VALIDATION_ERROR; DESIGN_PACK_NOT_FOUND; CONFLICT for a service-curated pack; database
/// failures.
pub async fn update(
    db: &Db,
    blobs: &dyn BlobStore,
    org_id: &str,
    id: &str,
    body: PackUpdate,
) -> ApiResult<DesignPack> {
    let mut errors = Vec::new();
    let title = body
        .title
        .required("title", &mut errors)
        .map(|t| check_title(&t, &mut errors));
    let mut new_description = None;
    let touched = body.description != Patch::Missing;
    body.description.apply_nullable(&mut new_description);
    let description = touched.then(|| check_description(new_description, &mut errors));
    common::finish(errors)?;
    let row = own_pack(db, org_id, id).await?;
    let mut tx = db.begin_write_for(org_id).await?;
    store::set_text(
        &mut tx,
        id,
        title.unwrap_or(row.title),
        description.unwrap_or(row.description),
    )
    .await?;
    // The response is read back through the read pool: commit now (see `commit_now`).
    tx.commit_now().await?;
    respond(db, blobs, org_id, id).await
}

/// Archives (`archive`) or unarchives an own pack and answers it.
///
/// # Errors
/// DESIGN_PACK_NOT_FOUND; CONFLICT for a service-curated pack; database failures.
pub async fn set_archived(
    db: &Db,
    blobs: &dyn BlobStore,
    org_id: &str,
    id: &str,
    archive: bool,
) -> ApiResult<DesignPack> {
    own_pack(db, org_id, id).await?;
    let now = crate::timestamp::now();
    let mut tx = db.begin_write_for(org_id).await?;
    store::set_archived(&mut tx, id, archive, &now).await?;
    // The response is read back through the read pool: commit now (see `commit_now`).
    tx.commit_now().await?;
    respond(db, blobs, org_id, id).await
}
