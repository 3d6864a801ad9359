//! The last step of an import: the tree's own parser judges the result, and a value it
//! refuses (a field whose value the renderer does not accept: an unknown enum value, a
//! number out of range) is moved, as it was, into the node's `figmaUnmapped` object and
//! reported, until the parser accepts the tree. So no Figma value is silently dropped and
//! no odd value fails an import.

use adforge_renderer::tree::TreeDoc;
use adforge_renderer::{Error, Tree};
use serde_json::{Map, Value};

use crate::protocol::{ImportReport, Unmapped};

/// Image placeholders are not URLs the parser accepts yet; a stand-in is checked instead.
const STAND_IN: &str = "https://figma.invalid/placeholder.png";

/// Most values moved aside before giving up (a frame of thousands of odd values).
const MAX_ROUNDS: usize = 500;

/// Moves refused values aside until the tree parses.
///
/// # Errors
/// A tree-level refusal (no size, a root the renderer cannot draw), in words.
pub(super) fn until_valid(tree: &mut Value, report: &mut ImportReport) -> Result<(), String> {
    for _ in 0..MAX_ROUNDS {
        match Tree::from_value(with_stand_ins(tree)) {
            Ok(_) => return Ok(()),
            Err(Error::InvalidNode {
                node,
                field,
                message,
            }) => {
                if !move_aside(tree, &node, &field) {
                    return Err(format!(
                        "the imported node {node} cannot be drawn: field {field}: {message}"
                    ));
                }
                let (figma_id, name) = tree["nodes"][&node]
                    .as_object()
                    .map(|n| {
                        (
                            super::str_of(n, "figmaId").to_owned(),
                            super::str_of(n, "name").to_owned(),
                        )
                    })
                    .unwrap_or_default();
                report.unmapped.push(Unmapped {
                    node,
                    figma_id,
                    name,
                    feature: field,
                    reason: format!("kept in figmaUnmapped, not drawn: {message}"),
                });
            }
            Err(e) => return Err(format!("the frame cannot be drawn: {e}")),
        }
    }
    Err("the frame has too many values the renderer refuses".to_owned())
}

/// The tree with every placeholder image URL replaced by a valid stand-in.
fn with_stand_ins(tree: &Value) -> Value {
    let mut doc = TreeDoc::new(tree.clone());
    for p in doc.image_paints() {
        if p.url.starts_with("figma-") {
            let _ = doc.set_image_url(&p.at, p.field, STAND_IN);
        }
    }
    doc.into_inner()
}

/// Moves the value at `field` (`fills[2].color.r`, `textCase`, a `style` field) of `node`
/// into its `figmaUnmapped`; false when there is nothing to move.
fn move_aside(tree: &mut Value, node: &str, field: &str) -> bool {
    let Some(n) = tree
        .get_mut("nodes")
        .and_then(|m| m.get_mut(node))
        .and_then(Value::as_object_mut)
    else {
        return false;
    };
    let top_end = field.find(['.', '[']).unwrap_or(field.len());
    let top = &field[..top_end];
    let index = field[top_end..]
        .strip_prefix('[')
        .and_then(|r| r.split(']').next())
        .and_then(|i| i.parse::<usize>().ok());
    let moved = match (n.get_mut(top), index) {
        (Some(Value::Array(items)), Some(i)) if i < items.len() => {
            // Paints and effects keep their places (a hidden stand-in), so the indexes of
            // the others, and of the renderer's messages about them, hold.
            let stand_in = match top {
                "fills" | "strokes" => Some(serde_json::json!(
                    {"type": "SOLID", "visible": false, "color": {"r": 0, "g": 0, "b": 0, "a": 0}}
                )),
                "effects" => Some(serde_json::json!({"type": "LAYER_BLUR", "visible": false})),
                _ => None,
            };
            Some(match stand_in {
                Some(v) => std::mem::replace(&mut items[i], v),
                None => items.remove(i),
            })
        }
        (Some(_), _) => n.remove(top),
        (None, _) => n
            .get_mut("style")
            .and_then(Value::as_object_mut)
            .and_then(|s| s.remove(top)),
    };
    let Some(value) = moved else {
        return false;
    };
    let aside = n
        .entry("figmaUnmapped")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(aside) = aside.as_object_mut() {
        aside.insert(field.to_owned(), value);
    }
    true
}
