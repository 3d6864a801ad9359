//! Where nodes sit and how large they are drawn, read and written on a raw tree: the part of
//! [`TreeDoc`] a re-layout uses (a node's box, its children, its type sizes), so that the
//! worker moves and scales nodes without knowing the format's key names.
//!
//! Scaling ([`TreeDoc::scale_node`]) multiplies every length of a node that the format
//! stores in design pixels: its box, type sizes (`fontSize`, `textFit`, pixel
//! `letterSpacing` and `lineHeight`, the sizes of `styleOverrideTable`), corner radii,
//! stroke weight, auto-layout padding and spacing, and the blur, spread and offset of its
//! effects. Vector path data is not rewritten (a VECTOR keeps its drawing at its old size).
//!
//! ```
//! use adforge_renderer::tree::{Bounds, TreeDoc};
//! use serde_json::json;
//!
//! let mut tree = json!({"root": "root", "nodes": {
//!     "root": {"type": "FRAME", "width": 100, "height": 100, "children": ["t"]},
//!     "t": {"type": "TEXT", "x": 10, "y": 10, "width": 50, "height": 20, "fontSize": 12}}});
//! let mut doc = TreeDoc::new(&mut tree);
//! doc.scale_node("t", 2.0).unwrap();
//! assert_eq!(doc.bounds("t"), Some(Bounds { x: 20.0, y: 20.0, width: 100.0, height: 40.0 }));
//! assert_eq!(doc.font_size("t"), Some(24.0));
//! ```

use std::borrow::{Borrow, BorrowMut};

use serde_json::{Map, Value};

use super::TreeDoc;
use crate::Error;

/// A node's box in its parent's coordinates, in design pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

impl Bounds {
    /// The centre point.
    pub fn centre(&self) -> (f64, f64) {
        (self.x + self.width / 2.0, self.y + self.height / 2.0)
    }

    /// Whether `(x, y)` lies inside (edges included).
    pub fn holds(&self, (x, y): (f64, f64)) -> bool {
        x >= self.x && x <= self.x + self.width && y >= self.y && y <= self.y + self.height
    }

    /// The smallest box holding both.
    pub fn union(&self, o: &Bounds) -> Bounds {
        let (x, y) = (self.x.min(o.x), self.y.min(o.y));
        Bounds {
            x,
            y,
            width: (self.x + self.width).max(o.x + o.width) - x,
            height: (self.y + self.height).max(o.y + o.height) - y,
        }
    }

    /// Whether the two boxes share some area.
    pub fn overlaps(&self, o: &Bounds) -> bool {
        self.x < o.x + o.width
            && o.x < self.x + self.width
            && self.y < o.y + o.height
            && o.y < self.y + self.height
    }

    /// Width × height.
    pub fn area(&self) -> f64 {
        self.width.max(0.0) * self.height.max(0.0)
    }
}

/// Keys holding one length in design pixels, scaled as they are.
const LENGTHS: [&str; 13] = [
    "width",
    "height",
    "fontSize",
    "cornerRadius",
    "strokeWeight",
    "paddingLeft",
    "paddingRight",
    "paddingTop",
    "paddingBottom",
    "itemSpacing",
    "counterAxisSpacing",
    "lineHeightPx",
    "paragraphSpacing",
];

fn num(node: &Map<String, Value>, key: &str) -> Option<f64> {
    node.get(key).and_then(Value::as_f64)
}

/// `v` to hundredths of a design pixel, as a JSON number.
fn px(v: f64) -> Value {
    Value::from((v * 100.0).round() / 100.0)
}

/// Multiplies the number at `key` of `obj` by `k`, when there is one.
fn scale_key(obj: &mut Map<String, Value>, key: &str, k: f64) {
    if let Some(v) = num(obj, key) {
        obj.insert(key.into(), px(v * k));
    }
}

impl<T: Borrow<Value>> TreeDoc<T> {
    /// A node's `type` (`FRAME`, `TEXT`, …).
    pub fn kind(&self, id: &str) -> Option<&str> {
        self.node(id)?.get("type").and_then(Value::as_str)
    }

    /// A node's `children`, in painting order (ids that are not strings are left out).
    pub fn children(&self, id: &str) -> Vec<String> {
        self.node(id)
            .and_then(|n| n.get("children"))
            .and_then(Value::as_array)
            .map(|c| {
                c.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The id of the node that lists `id` among its children.
    pub fn parent(&self, id: &str) -> Option<String> {
        self.node_ids()
            .find(|p| self.children(p).iter().any(|c| c == id))
            .map(str::to_owned)
    }

    /// A node's box in its parent's coordinates (`x` and `y` default to 0); `None` when it
    /// has no numeric `width` and `height` (a hugging frame, an EFFECT).
    pub fn bounds(&self, id: &str) -> Option<Bounds> {
        let n = self.node(id)?;
        Some(Bounds {
            x: num(n, "x").unwrap_or(0.0),
            y: num(n, "y").unwrap_or(0.0),
            width: num(n, "width")?,
            height: num(n, "height")?,
        })
    }

    /// False when the node has `"visible": false`.
    pub fn visible(&self, id: &str) -> bool {
        self.node(id)
            .is_some_and(|n| n.get("visible").and_then(Value::as_bool) != Some(false))
    }

    /// The largest size a TEXT node's type is drawn at: its shrink-to-fit maximum, else
    /// its `fontSize`.
    pub fn font_size(&self, id: &str) -> Option<f64> {
        let n = self.node(id)?;
        if n.get("type").and_then(Value::as_str) != Some("TEXT") {
            return None;
        }
        n.get("textFit")
            .and_then(|f| f.get("maxFontSize"))
            .and_then(Value::as_f64)
            .or_else(|| num(n, "fontSize"))
    }

    /// Whether the node has a visible IMAGE fill.
    pub fn has_image_fill(&self, id: &str) -> bool {
        self.node(id)
            .and_then(|n| n.get("fills"))
            .and_then(Value::as_array)
            .is_some_and(|f| {
                f.iter().any(|p| {
                    p.get("type").and_then(Value::as_str) == Some("IMAGE")
                        && p.get("visible").and_then(Value::as_bool) != Some(false)
                })
            })
    }

    /// The node and all its descendants, each once, the node first.
    pub fn subtree(&self, id: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![id.to_owned()];
        while let Some(n) = stack.pop() {
            if out.contains(&n) || self.node(&n).is_none() {
                continue;
            }
            stack.extend(self.children(&n).into_iter().rev());
            out.push(n);
        }
        out
    }
}

impl<T: BorrowMut<Value>> TreeDoc<T> {
    fn node_or_err_mut(&mut self, id: &str) -> Result<&mut Map<String, Value>, Error> {
        self.node_mut(id)
            .ok_or_else(|| Error::NodeNotFound { id: id.to_owned() })
    }

    /// Moves and sizes a node: sets its `x`, `y`, `width` and `height` (to hundredths).
    ///
    /// # Errors
    /// [`Error::NodeNotFound`].
    pub fn set_bounds(&mut self, id: &str, b: Bounds) -> Result<(), Error> {
        let n = self.node_or_err_mut(id)?;
        for (k, v) in [
            ("x", b.x),
            ("y", b.y),
            ("width", b.width),
            ("height", b.height),
        ] {
            n.insert(k.into(), px(v));
        }
        Ok(())
    }

    /// Shows or hides a node (`visible`).
    ///
    /// # Errors
    /// [`Error::NodeNotFound`].
    pub fn set_visible(&mut self, id: &str, visible: bool) -> Result<(), Error> {
        self.node_or_err_mut(id)?
            .insert("visible".into(), Value::Bool(visible));
        Ok(())
    }

    /// Sets a TEXT node's type size: `fontSize` is `max`, and shrink-to-fit (`textFit`)
    /// runs from `min` to `max`.
    ///
    /// # Errors
    /// [`Error::NodeNotFound`]; [`Error::NotText`] when the node is not TEXT.
    pub fn set_font_range(&mut self, id: &str, min: f64, max: f64) -> Result<(), Error> {
        let n = self.node_or_err_mut(id)?;
        if n.get("type").and_then(Value::as_str) != Some("TEXT") {
            return Err(Error::NotText { id: id.to_owned() });
        }
        n.insert("fontSize".into(), px(max));
        let mut fit = Map::new();
        fit.insert("minFontSize".into(), px(min.min(max)));
        fit.insert("maxFontSize".into(), px(max));
        n.insert("textFit".into(), Value::Object(fit));
        Ok(())
    }

    /// Multiplies every length of one node by `k` (see the module docs), its `x` and `y`
    /// included (they are in its parent's coordinates, which scale with it).
    ///
    /// # Errors
    /// [`Error::NodeNotFound`].
    pub fn scale_node(&mut self, id: &str, k: f64) -> Result<(), Error> {
        let n = self.node_or_err_mut(id)?;
        for key in ["x", "y"].into_iter().chain(LENGTHS) {
            scale_key(n, key, k);
        }
        if let Some(fit) = n.get_mut("textFit").and_then(Value::as_object_mut) {
            scale_key(fit, "minFontSize", k);
            scale_key(fit, "maxFontSize", k);
        }
        if let Some(radii) = n
            .get_mut("rectangleCornerRadii")
            .and_then(Value::as_array_mut)
        {
            for r in radii.iter_mut() {
                if let Some(v) = r.as_f64() {
                    *r = px(v * k);
                }
            }
        }
        for key in ["letterSpacing", "lineHeight"] {
            match n.get_mut(key) {
                Some(v @ Value::Number(_)) => {
                    *v = px(v.as_f64().unwrap_or(0.0) * k);
                }
                Some(Value::Object(o))
                    if o.get("unit").and_then(Value::as_str) == Some("PIXELS") =>
                {
                    scale_key(o, "value", k);
                }
                _ => {}
            }
        }
        if let Some(table) = n
            .get_mut("styleOverrideTable")
            .and_then(Value::as_object_mut)
        {
            for style in table.values_mut().filter_map(Value::as_object_mut) {
                for key in ["fontSize", "letterSpacing", "lineHeightPx"] {
                    scale_key(style, key, k);
                }
            }
        }
        if let Some(effects) = n.get_mut("effects").and_then(Value::as_array_mut) {
            for e in effects.iter_mut().filter_map(Value::as_object_mut) {
                scale_key(e, "radius", k);
                scale_key(e, "spread", k);
                if let Some(o) = e.get_mut("offset").and_then(Value::as_object_mut) {
                    scale_key(o, "x", k);
                    scale_key(o, "y", k);
                }
            }
        }
        Ok(())
    }

    /// Scales a node's subtree by `k` about the node's own top-left corner: every length of
    /// the node and of its descendants, and the descendants' positions; the node's `x` and
    /// `y` stay (place it with [`TreeDoc::set_bounds`]).
    ///
    /// # Errors
    /// [`Error::NodeNotFound`].
    pub fn scale_subtree(&mut self, id: &str, k: f64) -> Result<(), Error> {
        let b = self.bounds(id);
        for n in self.subtree(id) {
            self.scale_node(&n, k)?;
        }
        if let (Some(b), Some(n)) = (b, self.node_mut(id)) {
            n.insert("x".into(), px(b.x));
            n.insert("y".into(), px(b.y));
        }
        Ok(())
    }
}
