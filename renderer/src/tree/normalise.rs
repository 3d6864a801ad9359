//! Validation and normalisation: JSON value → `Vec<Node>`.

use serde_json::Value;

use super::model::{NodeKind, NodeSpec};
use super::node::*;
use super::text::text_style;
use super::values::{align, blend, check_range, choice, effect, paint, sizing};
use crate::Error;

/// Largest accepted design coordinate / size (in design pixels).
pub(super) const MAX_COORD: f32 = 1.0e6;
/// Deepest accepted nesting (keeps the recursive stages far from the stack limit).
const MAX_DEPTH: usize = 256;

pub(super) fn normalise(raw: &Value) -> Result<(Vec<Node>, usize), Error> {
    let obj = raw
        .as_object()
        .ok_or_else(|| Error::tree("(document)", "the tree must be a JSON object"))?;
    let nodes_map = obj
        .get("nodes")
        .and_then(Value::as_object)
        .ok_or_else(|| Error::tree("nodes", "required: an object mapping node id to node"))?;
    if nodes_map.is_empty() {
        return Err(Error::tree("nodes", "the tree has no nodes"));
    }
    let mut specs = Vec::with_capacity(nodes_map.len());
    let mut index = std::collections::HashMap::with_capacity(nodes_map.len());
    for (i, (id, value)) in nodes_map.iter().enumerate() {
        if id.is_empty() {
            return Err(Error::tree("nodes", "a node id must not be empty"));
        }
        let spec = parse_spec(id, value)?;
        specs.push((id.as_str(), spec));
        index.insert(id.as_str(), i);
    }
    // Children, parents, EFFECT folding.
    let mut parent: Vec<Option<usize>> = vec![None; specs.len()];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); specs.len()];
    let mut effect_children: Vec<Vec<usize>> = vec![Vec::new(); specs.len()];
    for (i, (id, spec)) in specs.iter().enumerate() {
        for (k, child) in spec.children.iter().enumerate() {
            let field = format!("children[{k}]");
            let &c = index
                .get(child.as_str())
                .ok_or_else(|| Error::node(id, &field, format!("no node with id `{child}`")))?;
            if c == i {
                return Err(Error::node(id, field, "a node cannot be its own child"));
            }
            if let Some(p) = parent[c] {
                return Err(Error::node(
                    id,
                    field,
                    format!("node `{child}` is already a child of `{}`", specs[p].0),
                ));
            }
            parent[c] = Some(i);
            if specs[c].1.kind == NodeKind::Effect {
                effect_children[i].push(c);
            } else {
                children[i].push(c);
            }
        }
    }
    let root = find_root(obj, &specs, &index, &parent)?;
    // Cycle check: walk up from every node; a path longer than the node count is a cycle.
    for start in 0..specs.len() {
        let mut steps = 0;
        let mut at = start;
        while let Some(p) = parent[at] {
            at = p;
            steps += 1;
            if steps > MAX_DEPTH {
                return Err(Error::node(
                    specs[start].0,
                    "children",
                    format!("nested deeper than {MAX_DEPTH} levels (or the children form a cycle)"),
                ));
            }
            if steps > specs.len() {
                return Err(Error::node(
                    specs[start].0,
                    "children",
                    "the children form a cycle",
                ));
            }
        }
    }
    let mut nodes = Vec::with_capacity(specs.len());
    for (i, (id, spec)) in specs.iter().enumerate() {
        let mut node = convert(id, spec)?;
        node.children = std::mem::take(&mut children[i]);
        for &e in &effect_children[i] {
            let (eid, espec) = &specs[e];
            if espec.visible {
                for (k, eff) in espec.effects.iter().enumerate() {
                    node.effects.push(effect(eid, k, eff)?);
                }
            }
        }
        nodes.push(node);
    }
    // Legacy auto-layout child fields: layoutGrow = 1 → FILL on the parent's primary axis,
    // layoutAlign = STRETCH → FILL on the counter axis (only when layoutSizing* is absent).
    for (i, (_, spec)) in specs.iter().enumerate() {
        let Some(axis) = parent[i].and_then(|p| nodes[p].auto_layout.as_ref().map(|a| a.axis))
        else {
            continue;
        };
        let grow = spec.layout_grow > 0.0;
        let stretch = spec.layout_align.as_deref() == Some("STRETCH");
        let (primary_set, counter_set) = match axis {
            Axis::Horizontal => (
                spec.layout_sizing_horizontal.is_some(),
                spec.layout_sizing_vertical.is_some(),
            ),
            Axis::Vertical => (
                spec.layout_sizing_vertical.is_some(),
                spec.layout_sizing_horizontal.is_some(),
            ),
        };
        let n = &mut nodes[i];
        let (primary, counter) = match axis {
            Axis::Horizontal => (&mut n.sizing_h, &mut n.sizing_v),
            Axis::Vertical => (&mut n.sizing_v, &mut n.sizing_h),
        };
        if grow && !primary_set {
            *primary = Sizing::Fill;
        }
        if stretch && !counter_set {
            *counter = Sizing::Fill;
        }
    }
    let r = &nodes[root];
    if r.kind == NodeKind::Effect || r.kind == NodeKind::Text {
        return Err(Error::node(
            &r.id,
            "type",
            "the root must be a FRAME, GROUP or shape",
        ));
    }
    for (field, v) in [("width", r.width), ("height", r.height)] {
        if !v.is_some_and(|v| v >= 1.0) {
            return Err(Error::node(
                &r.id,
                field,
                "the root node needs a size of at least 1",
            ));
        }
    }
    let (w, h) = (r.width.unwrap_or(1.0), r.height.unwrap_or(1.0));
    let ratio = w.max(h) / w.min(h);
    if ratio > crate::limits::MAX_ASPECT_RATIO {
        return Err(Error::node(
            &r.id,
            if w > h { "height" } else { "width" },
            format!(
                "the root is {w}×{h}, {ratio:.0} times longer than it is wide; at most {}:1 can be rendered, so make the short side at least 1/{} of the long one",
                crate::limits::MAX_ASPECT_RATIO,
                crate::limits::MAX_ASPECT_RATIO
            ),
        ));
    }
    Ok((nodes, root))
}

fn find_root(
    obj: &serde_json::Map<String, Value>,
    specs: &[(&str, NodeSpec)],
    index: &std::collections::HashMap<&str, usize>,
    parent: &[Option<usize>],
) -> Result<usize, Error> {
    if let Some(r) = obj.get("root") {
        let id = r
            .as_str()
            .ok_or_else(|| Error::tree("root", "must be a node id (string)"))?;
        let &i = index
            .get(id)
            .ok_or_else(|| Error::tree("root", format!("no node with id `{id}`")))?;
        if let Some(p) = parent[i] {
            return Err(Error::tree(
                "root",
                format!("`{id}` is a child of `{}`", specs[p].0),
            ));
        }
        return Ok(i);
    }
    let tops: Vec<usize> = (0..specs.len()).filter(|&i| parent[i].is_none()).collect();
    match tops.as_slice() {
        [one] => Ok(*one),
        [] => Err(Error::tree(
            "root",
            "every node is a child: the children form a cycle",
        )),
        many => Err(Error::tree(
            "root",
            format!(
                "{} nodes have no parent ({}); set `root` or nest them",
                many.len(),
                many.iter()
                    .take(5)
                    .map(|&i| specs[i].0)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

fn parse_spec(id: &str, value: &Value) -> Result<NodeSpec, Error> {
    let obj = value
        .as_object()
        .ok_or_else(|| Error::node(id, "(node)", "a node must be a JSON object"))?;
    if let Some(v) = obj.get("id")
        && v.as_str() != Some(id)
    {
        return Err(Error::node(
            id,
            "id",
            "must equal the node's key in `nodes`",
        ));
    }
    // Figma keeps text properties in `style`; fields on the node itself win.
    let merged;
    let value = match obj.get("style").and_then(Value::as_object) {
        Some(style) => {
            let mut m = style.clone();
            for (k, v) in obj {
                m.insert(k.clone(), v.clone());
            }
            merged = Value::Object(m);
            &merged
        }
        None => value,
    };
    serde_path_to_error::deserialize::<_, NodeSpec>(value).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." {
            "(node)".to_owned()
        } else {
            path
        };
        let msg = e.into_inner().to_string();
        let msg = msg.split(" at line ").next().unwrap_or_default().to_owned();
        Error::node(id, field, msg)
    })
}

fn convert(id: &str, s: &NodeSpec) -> Result<Node, Error> {
    let mut unsupported = Vec::new();
    for (f, v) in [("x", s.x), ("y", s.y)] {
        check_range(id, f, v, -MAX_COORD, MAX_COORD)?;
    }
    for (f, v) in [("width", s.width), ("height", s.height)] {
        if let Some(v) = v {
            check_range(id, f, v, 0.0, MAX_COORD)?;
        }
    }
    check_range(id, "rotation", s.rotation, -36000.0, 36000.0)?;
    let opacity = check_range(id, "opacity", s.opacity, 0.0, 1.0)?;
    let mut radii = [s.corner_radius; 4];
    check_range(id, "cornerRadius", s.corner_radius, 0.0, MAX_COORD)?;
    if let Some(r) = s.rectangle_corner_radii {
        for (k, v) in r.iter().enumerate() {
            check_range(
                id,
                &format!("rectangleCornerRadii[{k}]"),
                *v,
                0.0,
                MAX_COORD,
            )?;
        }
        radii = r;
    }
    let fills = s
        .fills
        .iter()
        .enumerate()
        .filter(|(_, p)| p.visible)
        .map(|(k, p)| paint(id, &format!("fills[{k}]"), p))
        .collect::<Result<Vec<_>, _>>()?;
    let strokes = s
        .strokes
        .iter()
        .enumerate()
        .filter(|(_, p)| p.visible)
        .map(|(k, p)| paint(id, &format!("strokes[{k}]"), p))
        .collect::<Result<Vec<_>, _>>()?;
    let stroke_weight = check_range(
        id,
        "strokeWeight",
        s.stroke_weight.unwrap_or(1.0),
        0.0,
        10000.0,
    )?;
    let stroke_align = match choice(
        id,
        "strokeAlign",
        s.stroke_align.as_deref(),
        &["INSIDE", "OUTSIDE", "CENTER"],
    )? {
        Some("CENTER") => StrokeAlign::Center,
        Some("OUTSIDE") => StrokeAlign::Outside,
        Some(_) => StrokeAlign::Inside,
        // Figma: frames and shapes default to INSIDE, vectors and text to CENTER / OUTSIDE.
        None if s.kind == NodeKind::Vector => StrokeAlign::Center,
        None if s.kind == NodeKind::Text => StrokeAlign::Outside,
        None => StrokeAlign::Inside,
    };
    let blend_mode = blend(id, "blendMode", s.blend_mode.as_deref())?;
    let effects = s
        .effects
        .iter()
        .enumerate()
        .map(|(k, e)| effect(id, k, e))
        .filter(|e| !matches!(e, Ok(Effect::Unsupported { kind }) if kind.is_empty()))
        .collect::<Result<Vec<_>, _>>()?;
    let primary_align = align(
        id,
        "primaryAxisAlignItems",
        s.primary_axis_align_items.as_deref(),
        &["MIN", "CENTER", "MAX", "SPACE_BETWEEN"],
    )?;
    let counter_align = align(
        id,
        "counterAxisAlignItems",
        s.counter_axis_align_items.as_deref(),
        &["MIN", "CENTER", "MAX", "BASELINE"],
    )?;
    if s.layout_wrap.as_deref() == Some("WRAP") && s.layout_mode.as_deref() == Some("VERTICAL") {
        unsupported.push(
            "layoutWrap WRAP on a VERTICAL layout (Figma wraps only HORIZONTAL; ignored)"
                .to_owned(),
        );
    }
    let wrap = choice(
        id,
        "layoutWrap",
        s.layout_wrap.as_deref(),
        &["NO_WRAP", "WRAP"],
    )? == Some("WRAP");
    let auto_layout = match choice(
        id,
        "layoutMode",
        s.layout_mode.as_deref(),
        &["NONE", "HORIZONTAL", "VERTICAL"],
    )? {
        Some("HORIZONTAL") | Some("VERTICAL") => {
            if s.kind == NodeKind::Text || s.kind == NodeKind::Vector {
                return Err(Error::node(
                    id,
                    "layoutMode",
                    "only FRAME, GROUP and shapes can use auto-layout",
                ));
            }
            let axis = if s.layout_mode.as_deref() == Some("HORIZONTAL") {
                Axis::Horizontal
            } else {
                Axis::Vertical
            };
            for (f, v) in [
                ("paddingLeft", s.padding_left),
                ("paddingTop", s.padding_top),
                ("paddingRight", s.padding_right),
                ("paddingBottom", s.padding_bottom),
            ] {
                check_range(id, f, v, 0.0, MAX_COORD)?;
            }
            check_range(id, "itemSpacing", s.item_spacing, -MAX_COORD, MAX_COORD)?;
            Some(AutoLayout {
                axis,
                wrap,
                spacing: s.item_spacing,
                counter_spacing: s.counter_axis_spacing.unwrap_or(s.item_spacing),
                padding: [
                    s.padding_left,
                    s.padding_top,
                    s.padding_right,
                    s.padding_bottom,
                ],
                primary_align,
                counter_align,
            })
        }
        _ => None,
    };
    choice(
        id,
        "layoutAlign",
        s.layout_align.as_deref(),
        &["INHERIT", "STRETCH", "MIN", "CENTER", "MAX"],
    )?;
    let absolute = choice(
        id,
        "layoutPositioning",
        s.layout_positioning.as_deref(),
        &["AUTO", "ABSOLUTE"],
    )? == Some("ABSOLUTE");
    let mut sizing_h = sizing(
        id,
        "layoutSizingHorizontal",
        s.layout_sizing_horizontal.as_deref(),
    )?;
    let mut sizing_v = sizing(
        id,
        "layoutSizingVertical",
        s.layout_sizing_vertical.as_deref(),
    )?;
    let text = if s.kind == NodeKind::Text {
        Some(text_style(id, s, &mut unsupported)?)
    } else {
        None
    };
    if let Some(t) = &text {
        match t.auto_resize {
            AutoResize::WidthAndHeight => {
                sizing_h.get_or_insert(Sizing::Hug);
                sizing_v.get_or_insert(Sizing::Hug);
            }
            AutoResize::Height => {
                sizing_v.get_or_insert(Sizing::Hug);
            }
            _ => {}
        }
    }
    if auto_layout.is_some() {
        if s.width.is_none() {
            sizing_h.get_or_insert(Sizing::Hug);
        }
        if s.height.is_none() {
            sizing_v.get_or_insert(Sizing::Hug);
        }
    }
    let needs_size = matches!(s.kind, NodeKind::Rectangle | NodeKind::Ellipse);
    if needs_size {
        if s.width.is_none() && sizing_h != Some(Sizing::Fill) {
            return Err(Error::node(
                id,
                "width",
                "required for this node type (or use layoutSizingHorizontal FILL)",
            ));
        }
        if s.height.is_none() && sizing_v != Some(Sizing::Fill) {
            return Err(Error::node(
                id,
                "height",
                "required for this node type (or use layoutSizingVertical FILL)",
            ));
        }
    }
    let mut vector_paths = Vec::new();
    for (list, name) in [
        (&s.vector_paths, "vectorPaths"),
        (&s.fill_geometry, "fillGeometry"),
    ] {
        for (k, p) in list.iter().enumerate() {
            let field = format!("{name}[{k}]");
            let even_odd = choice(
                id,
                &format!("{field}.windingRule"),
                p.winding_rule.as_deref(),
                &["NONZERO", "EVENODD", "NONE"],
            )? == Some("EVENODD");
            if let Some(e) = crate::scene::path::validate_svg_path(&p.data) {
                return Err(Error::node(id, format!("{field}.data"), e));
            }
            vector_paths.push(VectorPath {
                data: p.data.clone(),
                even_odd,
            });
        }
    }
    Ok(Node {
        id: id.to_owned(),
        kind: s.kind,
        name: s.name.clone(),
        children: Vec::new(),
        x: s.x,
        y: s.y,
        width: s.width,
        height: s.height,
        rotation: s.rotation,
        opacity,
        visible: s.visible,
        clips_content: s.clips_content.unwrap_or(s.kind == NodeKind::Frame),
        radii,
        fill_blends: blends(&s.fills),
        stroke_blends: blends(&s.strokes),
        fills,
        strokes,
        stroke_weight,
        stroke_align,
        blend_mode,
        effects,
        auto_layout,
        sizing_h: sizing_h.unwrap_or_default(),
        sizing_v: sizing_v.unwrap_or_default(),
        absolute,
        text,
        vector_paths,
        unsupported,
    })
}

/// Blend modes of the visible paints (already validated by `paint`).
fn blends(paints: &[super::model::PaintSpec]) -> Vec<BlendMode> {
    paints
        .iter()
        .filter(|p| p.visible)
        .map(|p| {
            p.blend_mode
                .as_deref()
                .and_then(BlendMode::from_name)
                .unwrap_or_default()
        })
        .collect()
}
