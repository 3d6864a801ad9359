//! Campaign sets (issue 42): one design in several sizes, each size an ad of its own.
//!
//! - [`parse_sizes`] reads the `sizes` of a request (POST /v1/image-ads, the resize, a
//!   batch): named placements (`9:16`, `300x250`, …, the worker's
//!   [`adforge_worker::protocol::PLACEMENTS`]), `"WIDTHxHEIGHT"` or `{width, height}`, at
//!   most [`MAX_SIZES`], each once; a bad item is a 400 naming `sizes[i]`.
//! - [`hold_all`] refuses a set the wallet cannot hold whole (402 naming the total), before
//!   any of its ads is written.
//! - [`siblings_edit`] turns an edit of one ad into edits of the others of its set: the
//!   text changes by node id (node ids are the same in every size of a set).
//!
//! A set is the ads that share `size_set_id`, the id of its first ad (which names itself):
//! a column, not a table of its own, because a set has no state besides its ads (no name,
//! no status), and the ads list filters on it as it does on `batch_id`.

use adforge_renderer::tree::TreeDoc;
use adforge_worker::TargetSize;
use adforge_worker::protocol::PLACEMENTS;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::store::{self, SetMember};
use crate::error::{ApiError, ApiResult, ErrorCode, FieldError};
use crate::state::AppState;
use crate::store::WriteTx;
use crate::wallet;

/// The most sizes one request may ask for (Bria's resize makes up to ten).
pub const MAX_SIZES: usize = 10;

/// One size of a campaign set in a request: a named placement (`1:1`, `4:5`, `9:16`,
/// `1.91:1`, `2:3`, `16:9`, `300x250`, `336x280`, `300x600`, `160x600`, `970x250`), a
/// string `"WIDTHxHEIGHT"`, or an object `{width, height}`. Explicit sizes take 100–7680
/// pixels a side and a shape from 1:4 to 4:1.
/// A schema only: `sizes` are read from JSON by `parse_sizes`, which names the failing item.
#[derive(ToSchema)]
pub enum SizeRequest {
    /// A named placement, or `"WIDTHxHEIGHT"` (`"1200x628"`).
    Named(String),
    /// An explicit width and height in pixels.
    Explicit(ExplicitSize),
}

/// An explicit size of a campaign set, in pixels.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplicitSize {
    #[schema(minimum = 100, maximum = 7680)]
    pub width: u32,
    #[schema(minimum = 100, maximum = 7680)]
    pub height: u32,
}

/// The size an ad of a campaign set was laid out for.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct ImageAdSize {
    /// The named placement asked for (`9:16`, `300x250`, …); null for an explicit size.
    pub placement: Option<String>,
    /// The shape's width in pixels; the rendered PNG (`width`, `height` of the ad) has this
    /// aspect at 4K.
    pub width: i64,
    pub height: i64,
}

fn placement_names() -> String {
    PLACEMENTS
        .iter()
        .map(|(n, _, _)| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One item of `sizes`, or what to change about it.
fn parse_one(item: &Value) -> Result<TargetSize, String> {
    let explicit = |w: u64, h: u64| {
        let side = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        TargetSize::explicit(side(w), side(h))
    };
    match item {
        Value::String(name) => {
            let name = name.trim();
            if let Some(size) = TargetSize::placement(name) {
                return Ok(size);
            }
            let wh = name
                .split_once(['x', 'X', '×'])
                .and_then(|(w, h)| Some((w.trim().parse().ok()?, h.trim().parse().ok()?)));
            match wh {
                Some((w, h)) => explicit(w, h),
                None => Err(format!(
                    "`{name}` is not a named placement; use one of {}, \"WIDTHxHEIGHT\" or {{\"width\": …, \"height\": …}}",
                    placement_names()
                )),
            }
        }
        Value::Object(o) => {
            if let Some(k) = o.keys().find(|k| *k != "width" && *k != "height") {
                return Err(format!(
                    "has an unknown field `{k}`; give only `width` and `height`"
                ));
            }
            let side = |k: &str| {
                o.get(k)
                    .and_then(Value::as_u64)
                    .ok_or_else(|| format!("needs `{k}` as a whole number of pixels (100–7680)"))
            };
            explicit(side("width")?, side("height")?)
        }
        _ => Err(format!(
            "must be a named placement such as \"9:16\" or {{\"width\": 1200, \"height\": 628}}, not {item}"
        )),
    }
}

/// The sizes of a request's `sizes`, in order; `required` refuses an empty list (a
/// resize). Every problem is reported at once, naming `sizes` or `sizes[i]`.
///
/// # Errors
/// 400 VALIDATION_ERROR: more than [`MAX_SIZES`], none where `required`, an item that is
/// no size or cannot be laid out, or a size given twice (also as a name and its pixels).
pub fn parse_sizes(items: &[Value], required: bool) -> ApiResult<Vec<TargetSize>> {
    if items.len() > MAX_SIZES {
        return Err(ApiError::field(
            "sizes",
            format!(
                "has {} sizes; at most {MAX_SIZES} are made per request: send the others in another request",
                items.len()
            ),
        ));
    }
    if required && items.is_empty() {
        return Err(ApiError::field(
            "sizes",
            "is empty; give 1 to 10 sizes, e.g. [\"9:16\", {\"width\": 1200, \"height\": 628}]",
        ));
    }
    let mut errors = Vec::new();
    let mut sizes: Vec<TargetSize> = Vec::new();
    // The index in `items` of each size in `sizes`, to name a duplicate's first.
    let mut at: Vec<usize> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match parse_one(item) {
            Ok(size) => {
                if let Some(j) = sizes
                    .iter()
                    .position(|s| (s.width, s.height) == (size.width, size.height))
                {
                    errors.push(FieldError::new(
                        format!("sizes[{i}]"),
                        format!(
                            "is {}×{}, as sizes[{}] is; give each size once",
                            size.width, size.height, at[j]
                        ),
                    ));
                }
                sizes.push(size);
                at.push(i);
            }
            Err(why) => errors.push(FieldError::new(format!("sizes[{i}]"), why)),
        }
    }
    crate::resources::common::finish(errors)?;
    Ok(sizes)
}

/// Refuses `ads` (one request's set, or batch) unless the wallet's available balance holds
/// them all: 402 INSUFFICIENT_BALANCE naming the total, before any is written. The holds
/// themselves are placed by [`super::insert`], in the same transaction.
///
/// # Errors
/// 402 INSUFFICIENT_BALANCE; database failures.
pub async fn hold_all<'a>(
    tx: &mut WriteTx,
    state: &AppState,
    org_id: &str,
    ads: impl IntoIterator<Item = &'a super::PreparedAd>,
) -> ApiResult<()> {
    let (count, total) = ads
        .into_iter()
        .fold((0, 0), |(n, t), ad| (n + 1, t + ad.price_cents));
    let b = wallet::balance(tx, org_id).await?;
    if b.available_cents() < total {
        return Err(ApiError::new(
            ErrorCode::InsufficientBalance,
            format!(
                "Insufficient balance: these {count} ads cost {} in all and {} is available ({} balance, {} held by work in progress); nothing was created; top up at {}",
                wallet::dollars(total),
                wallet::dollars(b.available_cents()),
                wallet::dollars(b.balance_cents),
                wallet::dollars(b.held_cents),
                state.dashboard_url,
            ),
        ));
    }
    Ok(())
}

/// The text changes of an edit: each TEXT node of `edited` whose `characters` differ from
/// those of the same node in `current`, as (node id, new text).
fn text_changes(current: &Value, edited: &Value) -> Vec<(String, String)> {
    let (before, after) = (TreeDoc::new(current), TreeDoc::new(edited));
    after
        .node_ids()
        .filter_map(|id| {
            let text = after.text(id)?;
            (before.text(id).is_some_and(|old| old != text))
                .then(|| (id.to_owned(), text.to_owned()))
        })
        .collect()
}

/// The trees an edit of ad `id` (current tree `current`, edited to `edited`) gives the
/// other ads of its set `set_id`: each sibling's current tree with the edit's text changes
/// applied where it has the node (as a TEXT node). Siblings the changes leave as they are
/// get none.
///
/// # Errors
/// 422 IMAGE_AD_NOT_EDITABLE naming the flat siblings; 422 IMAGE_AD_NOT_COMPLETED naming
/// those processing or failed; database failures.
pub(super) async fn siblings_edit(
    conn: &mut sqlx::AnyConnection,
    org_id: &str,
    id: &str,
    set_id: &str,
    current: &Value,
    edited: &Value,
) -> ApiResult<Vec<(String, Value)>> {
    let members: Vec<SetMember> = store::set_members(conn, org_id, set_id)
        .await?
        .into_iter()
        .filter(|m| m.id != id)
        .collect();
    let named = |ms: Vec<&SetMember>| {
        ms.iter()
            .map(|m| format!("`{}` ({})", m.id, m.status))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let flat: Vec<&SetMember> = members.iter().filter(|m| !m.editable).collect();
    if !flat.is_empty() {
        return Err(ApiError::new(
            ErrorCode::ImageAdNotEditable,
            format!(
                "The set of `{id}` holds flat ads, which cannot be edited: {}; send the edit without apply_to_siblings",
                named(flat)
            ),
        ));
    }
    let busy: Vec<&SetMember> = members.iter().filter(|m| m.status != "completed").collect();
    if !busy.is_empty() {
        return Err(ApiError::new(
            ErrorCode::ImageAdNotCompleted,
            format!(
                "Ads of the set of `{id}` are not completed: {}; wait until they are (or delete the failed ones), then send the edit again",
                named(busy)
            ),
        ));
    }
    let changes = text_changes(current, edited);
    let mut out = Vec::new();
    for m in members {
        let Some(mut tree) = m
            .current_json_tree
            .as_deref()
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
        else {
            continue;
        };
        let mut doc = TreeDoc::new(&mut tree);
        let mut changed = false;
        for (node, text) in &changes {
            if doc.text(node).is_some_and(|t| t != text.as_str()) {
                changed |= doc.set_text(node, text).is_ok();
            }
        }
        if changed {
            out.push((m.id, tree));
        }
    }
    Ok(out)
}
