//! Shapes of an import: vectors from Figma's geometry (strokes as Figma's own outline where
//! that is exact), and nodes drawn from Figma's SVG export of them.

use adforge_renderer::tree::paint;
use serde_json::{Map, Value};

use super::{FRAME_LIKE, Importer, Parent, SVG_PLACEHOLDER, num, placement, r3, size_of, str_of};

impl Importer<'_> {
    /// A node drawn from Figma's SVG export: a RECTANGLE over the node's rendered bounds
    /// whose fill is the SVG.
    pub(super) fn svg_export(
        &mut self,
        id: &str,
        f: &Map<String, Value>,
        parent: Option<Parent>,
        why: &str,
    ) -> String {
        let figma_id = str_of(f, "id").to_owned();
        // Figma's export covers the rendered bounds (strokes and effects included).
        let bounds = f
            .get("absoluteRenderBounds")
            .filter(|b| b.is_object())
            .or_else(|| f.get("absoluteBoundingBox"));
        let (x, y, w, h) = match (bounds, parent.and_then(|p| p.abs)) {
            (Some(b), Some((px, py))) => (
                num(b.get("x")).unwrap_or(px) - px,
                num(b.get("y")).unwrap_or(py) - py,
                num(b.get("width")).unwrap_or(0.0),
                num(b.get("height")).unwrap_or(0.0),
            ),
            _ => {
                let (x, y, _, _) = placement(f, parent);
                let (w, h) = size_of(f);
                (x, y, w, h)
            }
        };
        let mut n = Map::new();
        n.insert("id".into(), Value::from(id));
        n.insert("type".into(), Value::from("RECTANGLE"));
        n.insert("name".into(), Value::from(str_of(f, "name")));
        n.insert("figmaId".into(), Value::from(figma_id.clone()));
        n.insert("figmaType".into(), Value::from(str_of(f, "type")));
        n.insert("figmaExport".into(), Value::from("svg"));
        n.insert("x".into(), r3(x));
        n.insert("y".into(), r3(y));
        n.insert("width".into(), r3(w.max(0.0)));
        n.insert("height".into(), r3(h.max(0.0)));
        if let Some(v) = f.get("visible") {
            n.insert("visible".into(), v.clone());
        }
        for key in [
            "layoutPositioning",
            "layoutAlign",
            "layoutGrow",
            "layoutSizingHorizontal",
            "layoutSizingVertical",
            "constraints",
        ] {
            if let Some(v) = f.get(key) {
                n.insert(key.into(), v.clone());
            }
        }
        n.insert(
            "fills".into(),
            Value::Array(vec![paint::image(
                &format!("{SVG_PLACEHOLDER}{figma_id}"),
                "STRETCH",
            )]),
        );
        self.nodes.insert(id.to_owned(), Value::Object(n));
        self.svg_exports.push((figma_id, id.to_owned()));
        let children: Vec<&Map<String, Value>> = f
            .get("children")
            .and_then(Value::as_array)
            .map(|c| c.iter().filter_map(Value::as_object).collect())
            .unwrap_or_default();
        self.count_subtree(&children);
        self.unmapped(
            id,
            f,
            str_of(f, "type"),
            &format!("drawn from Figma's SVG export of the node (an image, not editable node by node): {why}"),
        );
        id.to_owned()
    }

    /// VECTOR and friends: the geometry, and open strokes as a geometry of their own.
    pub(super) fn vector(
        &mut self,
        f: &Map<String, Value>,
        n: &mut Map<String, Value>,
    ) -> Vec<(String, Value)> {
        let fill_geo: Vec<Value> = f
            .get("fillGeometry")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let stroke_geo: Vec<Value> = f
            .get("strokeGeometry")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        n.remove("strokeGeometry");
        n.remove("vectorPaths");
        n.insert("fillGeometry".into(), Value::Array(fill_geo.clone()));
        let visible_strokes = n.get("strokes").and_then(Value::as_array).is_some_and(|s| {
            s.iter()
                .any(|p| p.get("visible") != Some(&Value::Bool(false)))
        });
        let open = fill_geo.is_empty() || str_of(f, "type") == "LINE";
        // Figma's own outline of the stroke (caps, joins, dashes, open ends) is exact for a
        // CENTER stroke (a vector's default) and for open paths; an INSIDE or OUTSIDE
        // stroke of a closed path is the renderer's own, which aligns it.
        let center = matches!(
            n.get("strokeAlign").and_then(Value::as_str),
            None | Some("CENTER")
        );
        if !(visible_strokes && !stroke_geo.is_empty() && (open || center)) {
            return Vec::new();
        }
        // The stroke as Figma's outline of it, filled with the stroke's paints.
        let strokes = n.remove("strokes").unwrap_or(Value::Array(Vec::new()));
        if fill_geo.is_empty() {
            n.insert("fillGeometry".into(), Value::Array(stroke_geo));
            n.insert("fills".into(), strokes);
            return Vec::new();
        }
        let stroke_id = crate::services::node_uuid(
            &format!("figma:{}", self.opts.file_key),
            &format!("{}:stroke", str_of(f, "id")),
        );
        let mut s = Map::new();
        s.insert("id".into(), Value::from(stroke_id.clone()));
        s.insert("type".into(), Value::from("VECTOR"));
        s.insert(
            "name".into(),
            Value::from(format!("{} (stroke)", str_of(f, "name"))),
        );
        for key in [
            "x",
            "y",
            "width",
            "height",
            "rotation",
            "opacity",
            "visible",
            "blendMode",
            "layoutPositioning",
        ] {
            if let Some(v) = n.get(key) {
                s.insert(key.into(), v.clone());
            }
        }
        s.insert("fillGeometry".into(), Value::Array(stroke_geo));
        s.insert("fills".into(), strokes);
        for key in [
            "strokeDashes",
            "strokeCap",
            "strokeJoin",
            "strokeWeight",
            "strokeAlign",
        ] {
            if let Some(v) = n.remove(key) {
                s.insert(key.into(), v);
            }
        }
        vec![(stroke_id, Value::Object(s))]
    }
}

/// True when a node can only be drawn from Figma's export: a vector without geometry, or
/// a container of nothing but such nodes.
pub(super) fn needs_export(f: &Map<String, Value>) -> bool {
    let kind = str_of(f, "type");
    let has_geometry = f.contains_key("fillGeometry") || f.contains_key("strokeGeometry");
    if matches!(
        kind,
        "VECTOR" | "STAR" | "REGULAR_POLYGON" | "BOOLEAN_OPERATION" | "LINE"
    ) {
        return !has_geometry;
    }
    if FRAME_LIKE.contains(&kind) || kind == "GROUP" {
        let children = f.get("children").and_then(Value::as_array);
        let has_paint = |list: &str| {
            f.get(list).and_then(Value::as_array).is_some_and(|p| {
                p.iter()
                    .any(|p| p.get("visible") != Some(&Value::Bool(false)))
            })
        };
        return !has_paint("fills")
            && !has_paint("strokes")
            && children.is_some_and(|c| {
                !c.is_empty() && c.iter().filter_map(Value::as_object).all(needs_export)
            });
    }
    false
}

/// An ELLIPSE that is an arc or a ring (not a whole ellipse).
pub(super) fn is_arc(f: &Map<String, Value>) -> bool {
    let Some(a) = f.get("arcData") else {
        return false;
    };
    let start = num(a.get("startingAngle")).unwrap_or(0.0);
    let end = num(a.get("endingAngle")).unwrap_or(std::f64::consts::TAU);
    let inner = num(a.get("innerRadius")).unwrap_or(0.0);
    inner > 1e-6 || ((end - start).abs() - std::f64::consts::TAU).abs() > 1e-4
}
