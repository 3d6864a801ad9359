//! Writing a new tree: [`TreeBuilder`] collects nodes made with [`NodeBuilder`] and paints
//! made with [`paint`] into the JSON the renderer reads.
//!
//! Keys come out in the order they are set (`serde_json`'s `preserve_order` is on) and
//! numbers as they are given: every numeric argument is `impl Into<Value>`, so `0` is
//! written `0` and `0.0` is written `0.0`. Rounding is the caller's: each writer keeps its
//! own precision. Nothing is validated here; [`super::Tree::from_value`] does that.
//!
//! ```
//! use adforge_renderer::tree::{NodeBuilder, TreeBuilder, paint};
//!
//! let mut tree = TreeBuilder::new("root");
//! tree.node(
//!     "root",
//!     NodeBuilder::new("FRAME")
//!         .bounds(0, 0, 1080, 1080)
//!         .fills([paint::solid([1.0, 1.0, 1.0])]),
//! );
//! let tree = tree.build();
//! assert_eq!(
//!     tree.to_string(),
//!     r#"{"root":"root","nodes":{"root":{"type":"FRAME","x":0,"y":0,"width":1080,"height":1080,"fills":[{"type":"SOLID","color":{"r":1.0,"g":1.0,"b":1.0,"a":1}}],"id":"root"}}}"#
//! );
//! adforge_renderer::Tree::from_value(tree).unwrap();
//! ```

use serde_json::{Map, Value};

/// A new tree: `{"root": …, "nodes": {…}}`, nodes in the order they are added.
#[derive(Clone, Debug)]
pub struct TreeBuilder {
    root: String,
    nodes: Map<String, Value>,
}

impl TreeBuilder {
    /// An empty tree whose root will be the node `root_id` (add it with [`TreeBuilder::node`]).
    pub fn new(root_id: impl Into<String>) -> Self {
        Self {
            root: root_id.into(),
            nodes: Map::new(),
        }
    }

    /// Adds (or replaces) the node `id`, setting its `id` field to `id` (appended after the
    /// builder's keys unless it set one).
    pub fn node(&mut self, id: &str, node: NodeBuilder) {
        let node = node.set("id", id);
        self.nodes.insert(id.to_owned(), node.into_value());
    }

    /// The tree's JSON.
    pub fn build(self) -> Value {
        let mut tree = Map::new();
        tree.insert("root".into(), Value::from(self.root));
        tree.insert("nodes".into(), Value::Object(self.nodes));
        Value::Object(tree)
    }
}

/// One node, key by key. Setting a key again changes its value in place.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeBuilder(Map<String, Value>);

impl NodeBuilder {
    /// A node of `kind` (`FRAME`, `RECTANGLE`, `ELLIPSE`, `TEXT`, …): `{"type": kind}`.
    pub fn new(kind: &str) -> Self {
        let mut node = Map::new();
        node.insert("type".into(), Value::from(kind));
        Self(node)
    }

    /// Sets any field, `$` template keys included.
    #[must_use]
    pub fn set(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.0.insert(key.to_owned(), value.into());
        self
    }

    /// Sets `x`, `y`, `width` and `height`, in that order.
    #[must_use]
    pub fn bounds(
        self,
        x: impl Into<Value>,
        y: impl Into<Value>,
        width: impl Into<Value>,
        height: impl Into<Value>,
    ) -> Self {
        self.set("x", x)
            .set("y", y)
            .set("width", width)
            .set("height", height)
    }

    /// Sets `fills` (build the paints with [`paint`]; none gives `[]`).
    #[must_use]
    pub fn fills(self, paints: impl IntoIterator<Item = Value>) -> Self {
        self.set("fills", Value::Array(paints.into_iter().collect()))
    }

    /// Sets `children`: the ids of the child nodes, back to front.
    #[must_use]
    pub fn children<S: Into<String>>(self, ids: impl IntoIterator<Item = S>) -> Self {
        let ids = ids.into_iter().map(|id| Value::String(id.into()));
        self.set("children", Value::Array(ids.collect()))
    }

    /// Sets `lineHeight` to a percentage of the font size:
    /// `{"value": percent, "unit": "PERCENT"}`.
    #[must_use]
    pub fn line_height_percent(self, percent: impl Into<Value>) -> Self {
        let mut lh = Map::new();
        lh.insert("value".into(), percent.into());
        lh.insert("unit".into(), Value::from("PERCENT"));
        self.set("lineHeight", Value::Object(lh))
    }

    /// Sets `textFit` (shrink-to-fit between two font sizes):
    /// `{"minFontSize": min, "maxFontSize": max}`.
    #[must_use]
    pub fn text_fit(self, min: impl Into<Value>, max: impl Into<Value>) -> Self {
        let mut fit = Map::new();
        fit.insert("minFontSize".into(), min.into());
        fit.insert("maxFontSize".into(), max.into());
        self.set("textFit", Value::Object(fit))
    }

    /// The node's JSON object.
    pub fn into_value(self) -> Value {
        Value::Object(self.0)
    }
}

/// Paints for `fills` and `strokes`, and their parts, as JSON values.
pub mod paint {
    use serde_json::{Map, Value};

    use super::super::ImageField;

    fn object<const N: usize>(fields: [(&str, Value); N]) -> Value {
        Value::Object(
            fields
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect::<Map<String, Value>>(),
        )
    }

    /// An opaque colour, channels in 0..1 as given: `{"r", "g", "b", "a": 1}`.
    pub fn color(rgb: [f64; 3]) -> Value {
        let [r, g, b] = rgb;
        object([
            ("r", r.into()),
            ("g", g.into()),
            ("b", b.into()),
            ("a", 1.into()),
        ])
    }

    /// A SOLID paint of an opaque colour: `{"type": "SOLID", "color": color(rgb)}`.
    pub fn solid(rgb: [f64; 3]) -> Value {
        object([("type", "SOLID".into()), ("color", color(rgb))])
    }

    /// A point in the node's unit square (a gradient handle): `{"x", "y"}`.
    pub fn point(x: impl Into<Value>, y: impl Into<Value>) -> Value {
        object([("x", x.into()), ("y", y.into())])
    }

    /// A gradient stop: `{"position", "color"}` (a colour from [`color`]).
    pub fn stop(position: impl Into<Value>, color: Value) -> Value {
        object([("position", position.into()), ("color", color)])
    }

    /// A linear gradient from its three handles ([`point`]: start, end, width) and stops
    /// ([`stop`]): `{"type": "GRADIENT_LINEAR", "gradientHandlePositions", "gradientStops"}`.
    pub fn linear_gradient(handles: [Value; 3], stops: Vec<Value>) -> Value {
        object([
            ("type", "GRADIENT_LINEAR".into()),
            ("gradientHandlePositions", Value::Array(handles.into())),
            ("gradientStops", Value::Array(stops)),
        ])
    }

    /// An IMAGE paint: `{"type": "IMAGE", "imageFillUrl": url, "scaleMode": scale_mode}`
    /// (`FILL`, `FIT`, `TILE`, `STRETCH` or `CROP`).
    pub fn image(url: &str, scale_mode: &str) -> Value {
        object([
            ("type", "IMAGE".into()),
            (ImageField::FillUrl.key(), url.into()),
            ("scaleMode", scale_mode.into()),
        ])
    }

    /// Points an IMAGE paint object that is being built (an importer's, before it is in a
    /// tree) at `url`, in the field writers use (`imageFillUrl`, [`ImageField::FillUrl`]).
    pub fn set_image_url(paint: &mut Map<String, Value>, url: impl Into<String>) {
        paint.insert(ImageField::FillUrl.key().into(), Value::String(url.into()));
    }
}
