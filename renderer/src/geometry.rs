//! Where the renderer put each node: its laid-out box in output pixels, the same transform
//! the display list is built with ([`crate::scene`]), so an editor can draw selection
//! outlines and handles exactly over the rendered picture.
//!
//! ```no_run
//! use adforge_renderer::{Renderer, Tree};
//! let renderer = Renderer::with_defaults();
//! let tree = Tree::parse(r#"{"root": "r", "nodes": {"r": {"type": "FRAME", "width": 200,
//!     "height": 100, "children": ["t"]}, "t": {"type": "TEXT", "x": 10, "y": 20,
//!     "characters": "Hi"}}}"#).unwrap();
//! let laid = renderer.layout_boxes(&tree, Some(400)).unwrap();
//! assert_eq!(laid.scale, 2.0);
//! let t = laid.boxes.iter().find(|b| b.id == "t").unwrap();
//! assert_eq!((t.x, t.y), (20.0, 40.0));
//! ```
//!
//! Rejected: reporting each node's axis-aligned bounding box. A rotated node's handles
//! belong on its own rotated box, so the box is given unrotated, with the position of its
//! top-left corner (the rotation's pivot, as in Figma) and the rotation in degrees.

use serde::Serialize;
use tiny_skia::{Point, Transform};

use crate::layout::Layout;
use crate::tree::{NodeKind, Tree};

/// One node's laid-out box, in output pixels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeBox {
    /// The node id (its key in `nodes`).
    pub id: String,
    /// Its `name`, if it has one.
    pub name: Option<String>,
    /// `FRAME`, `GROUP`, `RECTANGLE`, `ELLIPSE`, `TEXT` or `VECTOR`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// False when the node or one of its ancestors is hidden (`visible: false`): nothing of
    /// it is drawn, but it still has a box.
    pub visible: bool,
    /// The top-left corner of the node's unrotated box on the canvas (the rotation's pivot).
    pub x: f32,
    pub y: f32,
    /// The box's size before rotation.
    pub width: f32,
    pub height: f32,
    /// Degrees counter-clockwise on screen, the node's own rotation plus its ancestors'.
    pub rotation: f32,
    /// TEXT: how many lines the text was laid out in; `None` for other nodes.
    pub lines: Option<usize>,
    /// TEXT: the font size used (after shrink-to-fit), in output pixels.
    pub font_size: Option<f32>,
}

/// The name of a node kind as the tree writes it.
pub fn kind_name(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Frame => "FRAME",
        NodeKind::Group => "GROUP",
        NodeKind::Rectangle => "RECTANGLE",
        NodeKind::Ellipse => "ELLIPSE",
        NodeKind::Text => "TEXT",
        NodeKind::Vector => "VECTOR",
        NodeKind::Effect => "EFFECT",
    }
}

/// The boxes of every node the root reaches, parents before their children (painting
/// order), on a `width` × `height` canvas. EFFECT nodes draw nothing and have no box.
pub fn node_boxes(tree: &Tree, layout: &Layout, width: u32, height: u32) -> Vec<NodeBox> {
    let (dw, dh) = tree.design_size();
    let (sx, sy) = (width as f32 / dw, height as f32 / dh);
    let mut out = Vec::with_capacity(tree.nodes().len());
    let root = tree.root_index();
    // (node, its transform to canvas pixels, accumulated rotation, visible so far)
    let mut stack = vec![(root, Transform::from_scale(sx, sy), 0.0f32, true)];
    while let Some((i, t, rotation, visible)) = stack.pop() {
        let n = tree.node(i);
        if n.kind == NodeKind::Effect {
            continue;
        }
        let b = layout.boxes[i];
        let visible = visible && n.visible;
        let mut corner = [Point::from_xy(0.0, 0.0)];
        t.map_points(&mut corner);
        let text = layout.texts[i].as_ref();
        out.push(NodeBox {
            id: n.id.clone(),
            name: n.name.clone(),
            kind: kind_name(n.kind),
            visible,
            x: round(corner[0].x),
            y: round(corner[0].y),
            width: round(b.w * sx),
            height: round(b.h * sy),
            rotation: round(rotation),
            lines: text.map(|s| s.lines),
            font_size: text.map(|s| round(s.font_size * sy)),
        });
        for &c in n.children.iter().rev() {
            let cb = layout.boxes[c];
            let cn = tree.node(c);
            let mut ct = t.pre_translate(cb.x, cb.y);
            if cn.rotation != 0.0 {
                ct = ct.pre_concat(Transform::from_rotate(-cn.rotation));
            }
            stack.push((c, ct, rotation + cn.rotation, visible));
        }
    }
    out
}

/// Two decimals: enough for sub-pixel handles, short in JSON.
fn round(v: f32) -> f32 {
    (v * 100.0).round() / 100.0
}
