//! Editing an editable ad ([`update`]: PATCH /v1/image-ads/{id} after the scope check; the
//! web dashboard's editor calls it too): the new immutable version and its render job,
//! and with `apply_to_siblings` one for every other ad of its campaign set whose texts the
//! edit changes ([`super::sets`]), all in one transaction. And
//! the checks of an edited JSON tree, which design templates use too ([`validate_tree`]):
//! its size, the renderer's own validation, and every image URL the render will read, by
//! the same rules the worker's fetch applies. Pure CPU work apart from the existence of
//! this server's own files, which [`validate_tree`] asks the blob store about.

use adforge_renderer::tree::TreeDoc;
use adforge_worker::{Job, RerenderJob};
use serde_json::Value;

use super::{ImageAd, ImageAdUpdate, Progress, store};
use crate::blob::{BlobStore, NO_SUCH_FILE, OwnFile};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::jobs::Jobs;
use crate::resources::common::check_text;
use crate::resources::design_templates::CHANGE_SUMMARY_MAX;
use crate::state::AppState;

/// Largest JSON tree accepted by PATCH, serialised.
pub const MAX_TREE_BYTES: usize = 512 * 1024;

/// PATCH /v1/image-ads/{id} after the scope check (the web dashboard's editor calls it
/// too): checks, the new version, its job.
///
/// # Errors
/// Every error PATCH /v1/image-ads/{id} lists.
pub async fn update(
    state: &AppState,
    org_id: &str,
    id: &str,
    body: &ImageAdUpdate,
) -> ApiResult<ImageAd> {
    let tree = &body.current_json_tree;
    let mut errors = Vec::new();
    let summary = check_text(
        "change_summary",
        body.change_summary.clone(),
        CHANGE_SUMMARY_MAX,
        &mut errors,
    );
    crate::resources::common::finish(errors)?;
    let row = store::load(&state.db.read, org_id, id).await?;
    if !row.editable {
        return Err(ApiError::new(
            ErrorCode::ImageAdNotEditable,
            format!(
                "Image ad `{id}` is a flat ad; only editable ads can be changed (create one with editable: true)"
            ),
        ));
    }
    if row.status != "completed" {
        return Err(ApiError::new(
            ErrorCode::ImageAdNotCompleted,
            format!(
                "Image ad `{id}` is {}; wait until it is completed, then send the whole tree",
                row.status
            ),
        ));
    }
    let text = validate_saved_tree(state, tree).await?;
    // The siblings' trees are made and checked before the write transaction (the checks
    // read the blob store), then made again inside it: a sibling changed meanwhile is a
    // conflict, not an edit of a tree nobody checked.
    let planned = {
        let mut conn = state.db.read.acquire().await?;
        siblings_of(org_id, id, body, &mut conn).await?
    };
    let siblings = match planned {
        Some(siblings) => {
            let mut checked = Vec::with_capacity(siblings.len());
            for (sibling, sibling_tree) in siblings {
                let text = validate_saved_tree(state, &sibling_tree).await?;
                checked.push((sibling, sibling_tree, text));
            }
            checked
        }
        None => Vec::new(),
    };
    let mut tx = state.db.begin_write_for(org_id).await?;
    let row = store::load(&mut *tx, org_id, id).await?;
    if row.status != "completed" {
        return Err(ApiError::new(
            ErrorCode::ImageAdNotCompleted,
            format!(
                "Image ad `{id}` is {}; wait until it is completed",
                row.status
            ),
        ));
    }
    if body.apply_to_siblings {
        let again = siblings_of(org_id, id, body, &mut tx)
            .await?
            .unwrap_or_default();
        let same = again.len() == siblings.len()
            && again
                .iter()
                .zip(&siblings)
                .all(|(a, b)| a.0 == b.0 && a.1 == b.1);
        if !same {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!(
                    "Ads of the set of `{id}` changed while this edit was checked; send it again"
                ),
            ));
        }
    }
    let sibling_summary = summary
        .clone()
        .unwrap_or_else(|| format!("Text edit applied from {id}"));
    for (sibling, sibling_tree, text) in &siblings {
        let current = store::load(&mut *tx, org_id, sibling)
            .await?
            .current_version;
        new_version(
            &mut tx,
            org_id,
            sibling,
            current + 1,
            sibling_tree,
            text,
            Some(sibling_summary.as_str()),
        )
        .await?;
    }
    new_version(
        &mut tx,
        org_id,
        id,
        row.current_version + 1,
        tree,
        &text,
        summary.as_deref(),
    )
    .await?;
    let row = store::load(&mut *tx, org_id, id).await?;
    let jobs = state.jobs.clone();
    tx.after_commit(move || jobs.kick());
    tx.commit().await?;
    Ok(row.into_ad(None))
}

/// With `apply_to_siblings`, the trees the edit gives the other ads of the ad's set
/// ([`super::sets::siblings_edit`]), read on `conn`; `None` without it.
///
/// # Errors
/// 400 VALIDATION_ERROR when the ad is in no set; those of `siblings_edit`.
async fn siblings_of(
    org_id: &str,
    id: &str,
    body: &ImageAdUpdate,
    conn: &mut sqlx::AnyConnection,
) -> ApiResult<Option<Vec<(String, Value)>>> {
    if !body.apply_to_siblings {
        return Ok(None);
    }
    let row = store::load(&mut *conn, org_id, id).await?;
    let Some(set_id) = row.size_set_id.as_deref() else {
        return Err(ApiError::field(
            "apply_to_siblings",
            format!(
                "image ad `{id}` is in no campaign set (its size_set_id is null); send the edit without apply_to_siblings, or make other sizes with POST /v1/image-ads/{id}/resize first"
            ),
        ));
    };
    let current: Value = row
        .current_json_tree
        .as_deref()
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or(Value::Null);
    super::sets::siblings_edit(conn, org_id, id, set_id, &current, &body.current_json_tree)
        .await
        .map(Some)
}

/// Writes version `version` of ad `id` (`processing`, tree `tree` whose stored text is
/// `text`) and stages its render job, in the caller's transaction.
async fn new_version(
    tx: &mut crate::store::WriteTx,
    org_id: &str,
    id: &str,
    version: i64,
    tree: &Value,
    text: &str,
    summary: Option<&str>,
) -> ApiResult<()> {
    let version_id = crate::ids::new_id("iav");
    let job = Job::RenderImageAdVersion(RerenderJob {
        ad_id: id.to_owned(),
        org_id: org_id.to_owned(),
        version: u32::try_from(version).unwrap_or(u32::MAX),
        version_id: Some(version_id.clone()),
        json_tree: tree.clone(),
    });
    let now = crate::timestamp::now();
    let queued = Progress {
        step: "queued".into(),
        message: "Waiting for a worker".into(),
        percentage: 0,
    };
    store::start_version(
        tx,
        &store::NewVersion {
            version_id: &version_id,
            ad_id: id,
            org_id,
            version,
            tree: text,
            change_summary: summary,
            progress: &queued,
            job: &job,
            now: &now,
        },
    )
    .await?;
    Jobs::stage(tx, &job).await?;
    Ok(())
}

/// An edited tree that passed [`checked_tree`]: its text as stored, and as the renderer
/// parsed it.
pub struct CheckedTree {
    pub text: String,
    pub tree: adforge_renderer::Tree,
}

/// Checks an edited tree as PATCH /v1/image-ads/{id} does (size, the renderer's validation,
/// image URLs by the fetch rules, own files present) and returns its text. Design templates
/// check their trees with this too.
///
/// # Errors
/// VALIDATION_ERROR on `current_json_tree` naming the node and field.
pub async fn validate_tree(state: &AppState, tree: &Value) -> ApiResult<String> {
    Ok(checked_tree(state, tree).await?.text)
}

/// [`validate_tree`], keeping the parsed tree for callers that render or measure it (a
/// preview, the memory check) so it is parsed once.
///
/// # Errors
/// Those of [`validate_tree`].
pub async fn checked_tree(state: &AppState, tree: &Value) -> ApiResult<CheckedTree> {
    // Validating a tree of up to 512 KiB is CPU work: keep it off the async runtime.
    let (tree, allow, blobs) = (tree.clone(), state.allow_private_urls, state.blobs.clone());
    let (checked, own_images) =
        tokio::task::spawn_blocking(move || check_tree(&tree, allow, blobs.as_ref()))
            .await
            .map_err(ApiError::internal)??;
    // Own files are read from the blob store when rendering: each must be there now.
    for image in &own_images {
        if !state
            .blobs
            .exists(&image.key)
            .await
            .map_err(ApiError::internal)?
        {
            return Err(ApiError::field(
                "current_json_tree",
                format!("{}: image URL `{}` {NO_SUCH_FILE}", image.place, image.url),
            ));
        }
    }
    Ok(checked)
}

/// [`validate_tree`] for a tree that is saved and then rendered at 4K (PATCH of an ad or a
/// design template): also refuses a tree whose 4K render would hold more memory than one
/// render may (layers nested in layers), naming the node, before a version is made.
///
/// # Errors
/// Those of [`validate_tree`]; VALIDATION_ERROR on `current_json_tree` naming the node
/// whose layers take the render over its memory bound.
pub async fn validate_saved_tree(state: &AppState, tree: &Value) -> ApiResult<String> {
    let CheckedTree { text, tree } = checked_tree(state, tree).await?;
    state
        .previews
        .check_memory(tree, None, "current_json_tree")
        .await?;
    Ok(text)
}

/// An image of an edited tree that is one of this server's own files.
struct OwnImage {
    /// Where the tree names it: "node `…`, field `fills[0].imageFillUrl`".
    place: String,
    url: String,
    key: String,
}

/// Checks an edited tree: size, the renderer's validation, and every image URL the
/// renderer will fetch, by the rules the worker's fetch applies: this server's own files
/// map to blob keys by [`BlobStore::own_file`] (no `..`, query, fragment or user info), any
/// other URL must pass the fetcher's address guard ([`adforge_renderer::image::fetch::check_url`]:
/// no private, loopback or link-local host in any notation, unless private URLs are
/// allowed). Returns the tree's text, the parsed tree and the own files, whose existence the
/// caller checks.
fn check_tree(
    tree: &Value,
    allow_private: bool,
    blobs: &dyn BlobStore,
) -> ApiResult<(CheckedTree, Vec<OwnImage>)> {
    let text = crate::store::to_json_text(tree);
    if text.len() > MAX_TREE_BYTES {
        return Err(ApiError::field(
            "current_json_tree",
            format!(
                "is {} bytes; at most {MAX_TREE_BYTES} are accepted",
                text.len()
            ),
        ));
    }
    let parsed = adforge_renderer::Tree::parse(&text)
        .map_err(|e| ApiError::field("current_json_tree", e.to_string()))?;
    let places = image_places(tree);
    let mut own = Vec::new();
    for url in adforge_renderer::image::image_urls(&parsed) {
        let place = places
            .get(&url)
            .cloned()
            .unwrap_or_else(|| "an IMAGE paint".to_string());
        let refuse = |why: &str| {
            ApiError::field(
                "current_json_tree",
                format!("{place}: image URL `{url}` {why}"),
            )
        };
        match blobs.own_file(&url) {
            OwnFile::Key(key) => own.push(OwnImage { place, url, key }),
            OwnFile::Invalid(why) => return Err(refuse(&why)),
            OwnFile::Foreign => {
                adforge_renderer::image::fetch::check_url(&url, allow_private)
                    .map_err(|e| refuse(&format!("cannot be fetched: {e}")))?;
            }
        }
    }
    Ok((CheckedTree { text, tree: parsed }, own))
}

/// Where each image URL first appears among the tree's visible IMAGE paints, as the
/// renderer's errors name places: "node `id`, field `fills[0].imageFillUrl`".
fn image_places(tree: &Value) -> std::collections::HashMap<String, String> {
    let mut out = std::collections::HashMap::new();
    for p in TreeDoc::new(tree).image_paints() {
        if p.visible {
            let place = format!("node `{}`, field `{}`", p.at.node, p.path());
            out.entry(p.url).or_insert(place);
        }
    }
    out
}
