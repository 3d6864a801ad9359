//! A Figma frame (a node of `GET /v1/files/:key/nodes?geometry=paths`, as Figma's OpenAPI
//! description defines it) into our JSON tree ([`import`]), written through the tree
//! crate's builders and checked by its parser.
//!
//! How nodes map:
//!
//! | Figma | tree |
//! |---|---|
//! | FRAME, COMPONENT, COMPONENT_SET, INSTANCE, SECTION | FRAME (auto layout, clipping, radii, paints, effects) |
//! | GROUP | GROUP |
//! | RECTANGLE | RECTANGLE |
//! | ELLIPSE | ELLIPSE; an arc or ring becomes a VECTOR of its `fillGeometry` |
//! | VECTOR, STAR, REGULAR_POLYGON, BOOLEAN_OPERATION | VECTOR of `fillGeometry` (a boolean's computed result); strokes of closed paths stay strokes, those of open paths become a VECTOR of `strokeGeometry` |
//! | LINE | VECTOR of its `strokeGeometry`, filled with the stroke's paints |
//! | TEXT | TEXT with `style`, `characterStyleOverrides` and `styleOverrideTable` |
//! | a container with a mask, any other node type, a vector without geometry | a RECTANGLE drawing Figma's SVG export of the node (stored as our own file) |
//! | SLICE | left out (an export region, not drawn) |
//!
//! Positions come from `relativeTransform` (relative to the parent, also in groups, as
//! ours are), sizes from `size`, rotation from the matrix (degrees, counter-clockwise);
//! Figma fields the tree has no use for are kept on the node as they are (the tree keeps
//! unknown fields), except the geometry our fields replace (`absoluteBoundingBox`,
//! `absoluteRenderBounds`, `relativeTransform`, `size`, radians `rotation`, and the
//! `fillGeometry` of shapes the renderer draws itself). Every feature the renderer does not
//! draw as Figma does is listed in the report with the node and the reason
//! ([`crate::protocol::Unmapped`]); a value the tree refuses is moved into the node's
//! `figmaUnmapped` object and reported, never dropped ([`sanitize`]).
//!
//! Image fills and SVG exports are named by placeholders (`figma-image:REF`,
//! `figma-svg:NODE`) that the sync replaces with our own files' URLs.

mod layout;
mod paints;
mod sanitize;
mod shapes;

use std::collections::{BTreeMap, BTreeSet, HashSet};

use shapes::{is_arc, needs_export};

use adforge_renderer::tree::{SLOT_NAMES, TreeDoc};
use serde_json::{Map, Value, json};

use crate::protocol::{ImportReport, SlotNode, Unmapped};

/// How IMAGE paints name a Figma image fill until the sync stores it.
pub const IMAGE_PLACEHOLDER: &str = "figma-image:";
/// How a node drawn from Figma's SVG export names it until the sync stores it.
pub const SVG_PLACEHOLDER: &str = "figma-svg:";

/// What an import needs besides the frame.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    /// The file key: node ids are derived from it and the Figma id, so a re-sync of the same
    /// frame keeps them.
    pub file_key: &'a str,
    /// A design template: slot nodes take their slot name as id and carry the template's
    /// slot keys (`$text`, `$image`).
    pub for_template: bool,
}

/// An imported frame.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The tree, valid for the renderer once its placeholders are replaced.
    pub tree: Value,
    /// The Figma image refs its IMAGE paints name.
    pub image_refs: BTreeSet<String>,
    /// Nodes drawn from Figma's SVG export: (Figma id, our id).
    pub svg_exports: Vec<(String, String)>,
    /// What was read and what was not mapped.
    pub report: ImportReport,
}

/// Fields whose meaning our own fields replace (never copied).
const REPLACED: [&str; 11] = [
    "id",
    "type",
    "children",
    "absoluteBoundingBox",
    "absoluteRenderBounds",
    "relativeTransform",
    "size",
    "rotation",
    "background",
    "backgroundColor",
    "name",
];

/// Figma's container types that become a FRAME.
pub(super) const FRAME_LIKE: [&str; 5] =
    ["FRAME", "COMPONENT", "COMPONENT_SET", "INSTANCE", "SECTION"];

/// Where a node sits: what the placement of its children needs.
#[derive(Clone, Copy)]
pub(super) struct Parent {
    /// The parent's `absoluteBoundingBox` origin.
    pub(super) abs: Option<(f64, f64)>,
}

pub(super) struct Importer<'a> {
    opts: &'a Options<'a>,
    nodes: Map<String, Value>,
    image_refs: BTreeSet<String>,
    svg_exports: Vec<(String, String)>,
    report: ImportReport,
    used_ids: HashSet<String>,
}

/// Imports `frame` (the `document` of a nodes response).
///
/// # Errors
/// A frame the tree cannot hold at all (no size, a root the renderer refuses), in words.
pub fn import(frame: &Value, opts: &Options<'_>) -> Result<Imported, String> {
    let f = frame
        .as_object()
        .ok_or("the frame in Figma's answer is not an object")?;
    let mut imp = Importer {
        opts,
        nodes: Map::new(),
        image_refs: BTreeSet::new(),
        svg_exports: Vec::new(),
        report: ImportReport::default(),
        used_ids: HashSet::new(),
    };
    let kind = str_of(f, "type");
    let root = if FRAME_LIKE.contains(&kind) {
        imp.node(f, None, true)
            .into_iter()
            .next()
            .ok_or("the frame could not be imported")?
    } else {
        // Any other node is imported inside a frame of its size.
        let (w, h) = size_of(f);
        let id = imp.our_id(&format!("{}:frame", str_of(f, "id")), "Frame");
        imp.nodes.insert(id.clone(), Value::Null);
        let children = imp.node(f, Some(Parent { abs: abs_origin(f) }), false);
        imp.nodes.insert(
            id.clone(),
            json!({"id": id, "type": "FRAME", "name": str_of(f, "name"), "x": 0, "y": 0,
                   "width": w, "height": h, "clipsContent": true, "children": children}),
        );
        id
    };
    let mut tree = json!({"root": root, "nodes": Value::Object(std::mem::take(&mut imp.nodes))});
    sanitize::until_valid(&mut tree, &mut imp.report)?;
    imp.report.slots = slots_of(&tree);
    if opts.for_template {
        mark_template_slots(&mut tree, &imp.report.slots);
    }
    imp.report.image_fills = imp.image_refs.len();
    imp.report.svg_exports = imp.svg_exports.len();
    Ok(Imported {
        tree,
        image_refs: imp.image_refs,
        svg_exports: imp.svg_exports,
        report: imp.report,
    })
}

pub(super) fn str_of<'v>(f: &'v Map<String, Value>, key: &str) -> &'v str {
    f.get(key).and_then(Value::as_str).unwrap_or_default()
}

pub(super) fn num(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64).filter(|x| x.is_finite())
}

/// `size`, else `absoluteBoundingBox`'s.
pub(super) fn size_of(f: &Map<String, Value>) -> (f64, f64) {
    if let Some(s) = f.get("size") {
        return (
            num(s.get("x")).unwrap_or(0.0).max(0.0),
            num(s.get("y")).unwrap_or(0.0).max(0.0),
        );
    }
    let b = f.get("absoluteBoundingBox");
    (
        num(b.and_then(|b| b.get("width"))).unwrap_or(0.0).max(0.0),
        num(b.and_then(|b| b.get("height"))).unwrap_or(0.0).max(0.0),
    )
}

pub(super) fn abs_origin(f: &Map<String, Value>) -> Option<(f64, f64)> {
    let b = f.get("absoluteBoundingBox")?;
    Some((num(b.get("x"))?, num(b.get("y"))?))
}

/// Keeps a Figma value the tree does not draw in the node's `figmaUnmapped` object.
pub(super) fn aside(n: &mut Map<String, Value>, key: &str, value: Value) {
    if let Some(m) = n
        .entry("figmaUnmapped")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
    {
        m.insert(key.to_owned(), value);
    }
}

/// Rounds to 1/1000 of a pixel (or degree): Figma's float noise out, precision kept.
pub(super) fn r3(v: f64) -> Value {
    let r = (v * 1000.0).round() / 1000.0;
    if r == r.trunc() && r.abs() < 1e15 {
        Value::from(r as i64)
    } else {
        Value::from(r)
    }
}

/// Position relative to the parent and rotation: `(x, y, rotation°, flipped)`.
pub(super) fn placement(f: &Map<String, Value>, parent: Option<Parent>) -> (f64, f64, f64, bool) {
    if let Some(Value::Array(rows)) = f.get("relativeTransform")
        && let [Value::Array(r0), Value::Array(r1)] = rows.as_slice()
        && let (Some(a), Some(c), Some(tx)) = (num(r0.first()), num(r0.get(1)), num(r0.get(2)))
        && let (Some(b), Some(d), Some(ty)) = (num(r1.first()), num(r1.get(1)), num(r1.get(2)))
    {
        let rotation = (-b).atan2(a).to_degrees();
        let rotation = if rotation.abs() < 1e-4 { 0.0 } else { rotation };
        return (tx, ty, rotation, a * d - b * c < 0.0);
    }
    // Responses without transforms: absolute boxes, differenced.
    match (abs_origin(f), parent.and_then(|p| p.abs)) {
        (Some((x, y)), Some((px, py))) => (x - px, y - py, 0.0, false),
        _ => (0.0, 0.0, 0.0, false),
    }
}

impl Importer<'_> {
    /// The node id for a Figma id: stable per (file, node); in a template a slot node
    /// takes its slot name.
    fn our_id(&mut self, figma_id: &str, name: &str) -> String {
        if self.opts.for_template {
            let snake = name.trim().to_lowercase().replace([' ', '-'], "_");
            if SLOT_NAMES.contains(&snake.as_str()) && self.used_ids.insert(snake.clone()) {
                return snake;
            }
        }
        let id = crate::services::node_uuid(&format!("figma:{}", self.opts.file_key), figma_id);
        self.used_ids.insert(id.clone());
        id
    }

    pub(super) fn unmapped(
        &mut self,
        node: &str,
        f: &Map<String, Value>,
        feature: &str,
        reason: &str,
    ) {
        self.report.unmapped.push(Unmapped {
            node: node.to_owned(),
            figma_id: str_of(f, "id").to_owned(),
            name: str_of(f, "name").to_owned(),
            feature: feature.to_owned(),
            reason: reason.to_owned(),
        });
    }

    /// Imports one Figma node (and its subtree); returns the ids to list as the parent's
    /// children (none for a left-out node, two for a vector whose open stroke is split).
    fn node(
        &mut self,
        f: &Map<String, Value>,
        parent: Option<Parent>,
        is_root: bool,
    ) -> Vec<String> {
        let kind = str_of(f, "type").to_owned();
        self.report.nodes += 1;
        *self.report.kinds.entry(kind.clone()).or_default() += 1;
        let figma_id = str_of(f, "id").to_owned();
        let name = str_of(f, "name").to_owned();
        if kind == "SLICE" {
            self.unmapped(
                "",
                f,
                "SLICE",
                "left out: a slice is an export region, not drawn",
            );
            return Vec::new();
        }
        let id = self.our_id(&figma_id, &name);
        // Reserve the node's place so parents come before their children in `nodes`.
        self.nodes.insert(id.clone(), Value::Null);
        let children: Vec<&Map<String, Value>> = f
            .get("children")
            .and_then(Value::as_array)
            .map(|c| c.iter().filter_map(Value::as_object).collect())
            .unwrap_or_default();
        let has_mask = children
            .iter()
            .any(|c| c.get("isMask").and_then(Value::as_bool) == Some(true));
        let has_geometry = f.contains_key("fillGeometry") || f.contains_key("strokeGeometry");
        let vector_like = matches!(
            kind.as_str(),
            "VECTOR" | "STAR" | "REGULAR_POLYGON" | "BOOLEAN_OPERATION" | "LINE"
        );
        let partial_ellipse = kind == "ELLIPSE" && is_arc(f);
        let container = FRAME_LIKE.contains(&kind.as_str()) || kind == "GROUP";
        let export = if !is_root && has_mask {
            Some("a mask (the tree has no masks)")
        } else if !is_root && container && needs_export(f) {
            Some(
                "nothing inside it can be imported node by node (no vector geometry in Figma's answer)",
            )
        } else if (vector_like || partial_ellipse) && !has_geometry {
            Some("no vector geometry in Figma's answer")
        } else if !container
            && !matches!(kind.as_str(), "RECTANGLE" | "ELLIPSE" | "TEXT")
            && !vector_like
        {
            Some("a node type the tree has no equivalent of")
        } else {
            None
        };
        if let Some(why) = export {
            return vec![self.svg_export(&id, f, parent, why)];
        }

        let mut n = Map::new();
        for (k, v) in f {
            if !REPLACED.contains(&k.as_str()) {
                n.insert(k.clone(), v.clone());
            }
        }
        let (w, h) = size_of(f);
        let (x, y, rotation, flipped) = if is_root {
            (0.0, 0.0, 0.0, false)
        } else {
            placement(f, parent)
        };
        if flipped {
            self.unmapped(
                &id,
                f,
                "relativeTransform",
                "mirrored: drawn unmirrored (the tree has no flips)",
            );
        }
        let our_kind = if FRAME_LIKE.contains(&kind.as_str()) {
            "FRAME"
        } else if vector_like || partial_ellipse {
            "VECTOR"
        } else {
            kind.as_str()
        };
        n.insert("id".into(), Value::from(id.clone()));
        n.insert("type".into(), Value::from(our_kind));
        n.insert("name".into(), Value::from(name.clone()));
        n.insert("figmaId".into(), Value::from(figma_id.clone()));
        if our_kind != kind {
            n.insert("figmaType".into(), Value::from(kind.clone()));
        }
        n.insert("x".into(), r3(x));
        n.insert("y".into(), r3(y));
        n.insert("width".into(), r3(w));
        n.insert("height".into(), r3(h));
        if rotation != 0.0 {
            n.insert("rotation".into(), r3(rotation));
        }
        self.paints_and_effects(&id, f, &mut n);
        if our_kind == "FRAME" {
            self.frame(&id, f, &mut n, is_root);
        } else {
            n.remove("clipsContent");
        }
        if kind == "TEXT" {
            self.text(&id, f);
        }
        let mut extra = Vec::new();
        if our_kind == "VECTOR" {
            extra = self.vector(f, &mut n);
        } else {
            n.remove("fillGeometry");
            n.remove("strokeGeometry");
        }
        if f.get("isMask").and_then(Value::as_bool) == Some(true) {
            // Only a mask at the top level of the frame gets here (others are exported).
            n.insert("visible".into(), Value::Bool(false));
            self.unmapped(&id, f, "isMask", "a mask at the frame's top level: the mask shape is hidden and the layers it masks are drawn unmasked");
        }
        // Children: a boolean operation's operands are its geometry, not drawn.
        if kind != "BOOLEAN_OPERATION" && !children.is_empty() && our_kind != "VECTOR" {
            let here = Parent { abs: abs_origin(f) };
            let ids: Vec<Value> = children
                .iter()
                .flat_map(|c| self.node(c, Some(here), false))
                .map(Value::from)
                .collect();
            n.insert("children".into(), Value::Array(ids));
        } else if kind == "BOOLEAN_OPERATION" {
            self.count_subtree(&children);
        }
        self.nodes.insert(id.clone(), Value::Object(n));
        let mut out = vec![id];
        for (extra_id, node) in extra {
            self.nodes.insert(extra_id.clone(), node);
            out.push(extra_id);
        }
        out
    }

    /// Counts the nodes of a subtree that is read but not imported node by node.
    pub(super) fn count_subtree(&mut self, children: &[&Map<String, Value>]) {
        for c in children {
            self.report.nodes += 1;
            *self
                .report
                .kinds
                .entry(str_of(c, "type").to_owned())
                .or_default() += 1;
            let grand: Vec<&Map<String, Value>> = c
                .get("children")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_object).collect())
                .unwrap_or_default();
            self.count_subtree(&grand);
        }
    }
}

/// The nodes named like slots, in painting order.
fn slots_of(tree: &Value) -> Vec<SlotNode> {
    let doc = TreeDoc::new(tree);
    let mut seen: BTreeMap<String, ()> = BTreeMap::new();
    let mut out = Vec::new();
    for id in doc.paint_order() {
        if let Some(slot) = doc.slot(&id)
            && seen.insert(format!("{slot}/{id}"), ()).is_none()
        {
            out.push(SlotNode {
                slot,
                node: id,
                filled: false,
            });
        }
    }
    out
}

/// A template's slot keys on its slot nodes: `$text` (the slot as copy role) on TEXT
/// slots, `$image` on picture slots, so an ad made from the template fills them.
fn mark_template_slots(tree: &mut Value, slots: &[SlotNode]) {
    let mut doc = TreeDoc::new(tree);
    for s in slots {
        let Some(node) = doc.node_mut(&s.node) else {
            continue;
        };
        let is_text = node.get("type").and_then(Value::as_str) == Some("TEXT");
        match s.slot.as_str() {
            "product_image" | "photo" if !is_text => {
                node.insert("$image".into(), Value::from("product"));
            }
            "logo" if !is_text => {
                node.insert("$image".into(), Value::from("logo"));
            }
            "cta_label" | "cta" if is_text => {
                node.insert("$text".into(), Value::from("cta"));
            }
            "copy" if is_text => {
                node.insert("$text".into(), Value::from("supporting"));
            }
            slot if is_text && !matches!(slot, "background" | "scrim" | "logo" | "photo") => {
                node.insert("$text".into(), Value::from(slot));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
