//! `fill_slots`: an imported frame filled with an ad's inputs, like a blueprint. Nodes
//! named like our slots ([`adforge_renderer::tree::SLOT_NAMES`]: `headline`, `supporting`,
//! `eyebrow`, `cta` / `cta_label`, `price`, `badge_label`, `brand`, `copy`,
//! `product_image`, `photo`, `logo`, …; a name matches in any case, with spaces or
//! hyphens for underscores) take:
//!
//! - text slots: words written by the slot's role from the ad's facts by the same
//!   copywriter and grounding rule as every generated ad (a [`SlotWriter`], which the
//!   worker's router gives: [`crate::node::SlotCopywriter`]),
//!   measured in the node's own style; the node keeps the designer's font, size, colour
//!   and box, and shrinks to fit (`textFit`) rather than overflow. Per-range styles of the
//!   old words are dropped (they named ranges of those words);
//! - `product_image` and `photo`: the variant's first image, in the designer's scale mode;
//! - `logo`: the brand's first logo, whole (FIT).
//!
//! Everything else stays as the designer made it: colours and fonts are not re-branded.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::import::Imported;
use super::sync::Parts;
use crate::protocol::GenerateAdJob;
use crate::runner::JobError;
use crate::services::blocking;
use adforge_renderer::tree::{PaintList, TreeDoc};

/// The words one text slot shows.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotWords {
    /// The words.
    pub text: String,
    /// False when the copywriter left the slot out (no fact for its role): the node is
    /// hidden.
    pub shown: bool,
}

/// Writes the words of a frame's text slots from an ad's inputs. Declared here, where it is
/// used, and implemented where the worker is assembled by the copywriter every generated ad
/// uses ([`crate::node::SlotCopywriter`]), so design-tool sync does not depend on the
/// generate pipeline. Runs on a blocking thread (it measures text with the renderer).
pub trait SlotWriter: Send + Sync {
    /// The words of each text slot of `template` (its nodes marked `$text` with their copy
    /// role, their style fields on the node), by node id, for the ad `inputs`.
    fn write(&self, inputs: &GenerateAdJob, template: &Value) -> BTreeMap<String, SlotWords>;
}

/// The copy role a text slot is written as.
fn role_of(slot: &str) -> Option<&'static str> {
    Some(match slot {
        "headline" => "headline",
        "supporting" | "copy" => "supporting",
        "eyebrow" => "eyebrow",
        "cta" | "cta_label" => "cta",
        "price" => "price",
        "badge_label" | "badge" => "offer",
        _ => return None,
    })
}

/// Fills the slots of `imported`'s tree with `inputs`; returns the URLs fetched for it
/// (release them after the render).
///
/// # Errors
/// A product image or logo that cannot be fetched (sorted into retry and abort).
pub async fn fill(
    p: &Parts,
    inputs: &GenerateAdJob,
    imported: &mut Imported,
) -> Result<Vec<String>, JobError> {
    // Words: a template view of the tree (the text slots with their roles and the style
    // fields on the node, where the copywriter reads them).
    let mut template = imported.tree.clone();
    let mut text_slots: Vec<(String, String)> = Vec::new();
    if let Some(nodes) = template.get_mut("nodes").and_then(Value::as_object_mut) {
        for s in &imported.report.slots {
            let Some(node) = nodes.get_mut(&s.node).and_then(Value::as_object_mut) else {
                continue;
            };
            if node.get("type").and_then(Value::as_str) != Some("TEXT") {
                continue;
            }
            let Some(role) = role_of(&s.slot) else {
                continue;
            };
            if let Some(Value::Object(style)) = node.get("style").cloned() {
                for (k, v) in style {
                    node.entry(k).or_insert(v);
                }
            }
            node.insert("$text".into(), Value::from(role));
            text_slots.push((s.node.clone(), s.slot.clone()));
        }
    }
    let written = if text_slots.is_empty() {
        None
    } else {
        let (writer, job) = (p.words.clone(), inputs.clone());
        Some(blocking(move || writer.write(&job, &template)).await?)
    };

    let mut fetched = Vec::new();
    let product = inputs.variant_image_urls.first().cloned();
    let logo = inputs.brand.logos.first().map(|l| l.url.clone());
    for url in product.iter().chain(logo.iter()) {
        let got = p.services.fetch("image", url).await;
        fetched.push(url.clone());
        got?;
    }

    let slots = imported.report.slots.clone();
    let mut doc = TreeDoc::new(&mut imported.tree);
    for (k, s) in slots.iter().enumerate() {
        let is_text = doc
            .node(&s.node)
            .and_then(|n| n.get("type"))
            .and_then(Value::as_str)
            == Some("TEXT");
        let filled = if is_text {
            let Some(w) = written.as_ref().and_then(|w| w.get(&s.node)) else {
                continue;
            };
            let Some(node) = doc.node_mut(&s.node) else {
                continue;
            };
            set_words(node, &w.text, w.shown);
            true
        } else {
            match s.slot.as_str() {
                "product_image" | "photo" => product
                    .as_deref()
                    .is_some_and(|url| set_image(&mut doc, &s.node, url, None)),
                "logo" => logo
                    .as_deref()
                    .is_some_and(|url| set_image(&mut doc, &s.node, url, Some("FIT"))),
                _ => false,
            }
        };
        if filled {
            imported.report.slots[k].filled = true;
        }
    }
    Ok(fetched)
}

/// New words in a TEXT node: its own style stays, the old words' ranges go, and the size
/// may shrink to fit the box.
fn set_words(node: &mut Map<String, Value>, text: &str, shown: bool) {
    node.insert("characters".into(), Value::from(text));
    node.remove("characterStyleOverrides");
    node.remove("styleOverrideTable");
    node.remove("lineTypes");
    node.remove("lineIndentations");
    if !shown {
        node.insert("visible".into(), Value::Bool(false));
    }
    let size = node
        .get("fontSize")
        .or_else(|| node.get("style").and_then(|s| s.get("fontSize")))
        .and_then(Value::as_f64)
        .unwrap_or(16.0);
    node.insert(
        "textFit".into(),
        json!({"minFontSize": (size * 0.5).max(1.0), "maxFontSize": size}),
    );
}

/// Points the node's first image fill at `url` (adding one when it has none); `mode`
/// overrides its scale mode.
fn set_image(doc: &mut TreeDoc<&mut Value>, node: &str, url: &str, mode: Option<&str>) -> bool {
    let existing = doc
        .image_paints()
        .into_iter()
        .find(|p| p.at.node == node && p.at.list == PaintList::Fills && p.visible);
    if let Some(p) = existing {
        let ok = doc
            .set_image_url(&p.at, adforge_renderer::tree::ImageField::FillUrl, url)
            .is_ok();
        if let (Some(m), Some(n)) = (mode, doc.node_mut(node))
            && let Some(paint) = n
                .get_mut("fills")
                .and_then(|f| f.get_mut(p.at.index))
                .and_then(Value::as_object_mut)
        {
            paint.insert("scaleMode".into(), Value::from(m));
        }
        return ok;
    }
    let Some(n) = doc.node_mut(node) else {
        return false;
    };
    let paint = adforge_renderer::tree::paint::image(url, mode.unwrap_or("FILL"));
    let fills = n.entry("fills").or_insert_with(|| Value::Array(Vec::new()));
    if let Some(list) = fills.as_array_mut() {
        list.push(paint);
        return true;
    }
    false
}
