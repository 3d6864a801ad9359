//! Reading and editing a tree as JSON: the one place outside the renderer's own parser that
//! knows where a tree keeps its nodes, texts, paints and image URLs.
//!
//! [`TreeDoc`] works on the raw `serde_json::Value`, not on a validated [`super::Tree`], so
//! it serves trees that are not (yet) valid too: layout templates with `$` slot keys, a
//! tree a person is editing. It never validates and never reorders: every key it does not
//! write keeps its value and its place (`serde_json`'s `preserve_order` is on), so an edit
//! changes exactly the fields it names. Validate the result with
//! [`super::Tree::from_value`].
//!
//! ```
//! use adforge_renderer::tree::{Slot, TreeDoc};
//! use serde_json::json;
//!
//! let mut tree = json!({"root": "root", "nodes": {
//!     "root": {"type": "FRAME", "width": 100, "height": 100, "children": ["title"]},
//!     "title": {"type": "TEXT", "characters": "Hello"}}});
//! let mut doc = TreeDoc::new(&mut tree);
//! assert!(matches!(&doc.slots()[0], Slot::Text { node, text } if node == "title" && text == "Hello"));
//! doc.set_text("title", "Hello again").unwrap();
//! assert_eq!(tree["nodes"]["title"]["characters"], "Hello again");
//! ```
//!
//! Rejected: typed structs for the whole format with a `#[serde(flatten)]` map of unknown
//! fields. They would lose unknown fields inside paints and nested objects (see the module
//! docs of [`super`]) and could not hold a template's `$` keys in arbitrary places.

use std::borrow::{Borrow, BorrowMut};
use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::Error;

/// Which field of an IMAGE paint names its image. A paint may carry several; the first
/// present one in [`ImageField::PRECEDENCE`] wins ([`ImageField::pick`], the one rule the
/// renderer, the API's checks and the editors share).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImageField {
    /// `imageFillUrl`: our own field, the one writers use.
    FillUrl,
    /// `imageUrl`.
    Url,
    /// `imageRef`: Figma's field name, accepted for exported trees.
    Ref,
}

impl ImageField {
    /// The fields in the order the rule tries them.
    pub const PRECEDENCE: [ImageField; 3] = [Self::FillUrl, Self::Url, Self::Ref];

    /// The JSON key: `imageFillUrl`, `imageUrl` or `imageRef`.
    pub fn key(self) -> &'static str {
        match self {
            Self::FillUrl => "imageFillUrl",
            Self::Url => "imageUrl",
            Self::Ref => "imageRef",
        }
    }

    /// The rule: the first field of [`ImageField::PRECEDENCE`] for which `value_of` gives a
    /// URL, with that URL. `None` when no field has one.
    pub fn pick<'a>(
        mut value_of: impl FnMut(ImageField) -> Option<&'a str>,
    ) -> Option<(ImageField, &'a str)> {
        Self::PRECEDENCE
            .into_iter()
            .find_map(|f| value_of(f).map(|url| (f, url)))
    }

    /// [`ImageField::pick`] on a raw paint object: a field counts when it holds a string.
    pub fn of_paint(paint: &Value) -> Option<(ImageField, &str)> {
        Self::pick(|f| paint.get(f.key()).and_then(Value::as_str))
    }
}

/// The slot names generated ads and design templates give their nodes ([`TreeDoc::slot`]).
pub const SLOT_NAMES: [&str; 15] = [
    "background",
    "photo",
    "product_image",
    "logo",
    "headline",
    "supporting",
    "eyebrow",
    "cta",
    "cta_label",
    "price",
    "badge",
    "badge_label",
    "brand",
    "copy",
    "scrim",
];

/// The two paint lists of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PaintList {
    /// `fills`.
    Fills,
    /// `strokes`.
    Strokes,
}

impl PaintList {
    /// Both lists, in the order they are walked.
    pub const BOTH: [PaintList; 2] = [Self::Fills, Self::Strokes];

    /// The JSON key: `fills` or `strokes`.
    pub fn key(self) -> &'static str {
        match self {
            Self::Fills => "fills",
            Self::Strokes => "strokes",
        }
    }
}

/// Where a paint sits in a tree.
///
/// `index` is the position in the JSON array, invisible paints counted; the typed
/// [`super::Node`] drops invisible paints, so its indexes can differ.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PaintAt {
    /// The node's id (its key in `nodes`).
    pub node: String,
    /// The list the paint is in.
    pub list: PaintList,
    /// Its position in the list.
    pub index: usize,
}

impl PaintAt {
    /// The paint's field path inside its node, as the renderer's errors name fields:
    /// `fills[0]`.
    pub fn path(&self) -> String {
        format!("{}[{}]", self.list.key(), self.index)
    }
}

/// An IMAGE paint with a URL, found by [`TreeDoc::image_paints`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImagePaint {
    /// Where it is.
    pub at: PaintAt,
    /// The field its URL came from ([`ImageField::pick`]).
    pub field: ImageField,
    /// The URL, as written.
    pub url: String,
    /// False when the paint has `"visible": false` (the renderer skips it).
    pub visible: bool,
}

impl ImagePaint {
    /// The URL's field path inside its node, as the renderer's errors name fields:
    /// `fills[0].imageFillUrl`.
    pub fn path(&self) -> String {
        format!("{}.{}", self.at.path(), self.field.key())
    }
}

/// One value of a tree a person can change in an editor, found by [`TreeDoc::slots`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slot {
    /// A TEXT node's `characters`; change it with [`TreeDoc::set_text`].
    Text {
        /// The node's id.
        node: String,
        /// The text.
        text: String,
    },
    /// A SOLID paint's colour as 8-bit sRGB (each channel clamped to 0..1 and rounded);
    /// change it with [`TreeDoc::set_solid_rgb`].
    Color {
        /// Where the paint is.
        at: PaintAt,
        /// Red, green, blue.
        rgb: [u8; 3],
    },
    /// An IMAGE paint's URL (visible or not); change it with [`TreeDoc::set_image_url`].
    Image {
        /// Where the paint is.
        at: PaintAt,
        /// The field the URL is in.
        field: ImageField,
        /// The URL.
        url: String,
    },
}

impl Slot {
    /// The id of the node the value belongs to.
    pub fn node(&self) -> &str {
        match self {
            Slot::Text { node, .. } => node,
            Slot::Color { at, .. } | Slot::Image { at, .. } => &at.node,
        }
    }
}

/// A JSON tree being read (`TreeDoc<&Value>`), edited in place (`TreeDoc<&mut Value>`) or
/// owned (`TreeDoc<Value>`). Build a new tree with [`super::TreeBuilder`].
///
/// Reading never fails: a tree without `nodes`, or a node that is not an object, reads as
/// having fewer nodes. The doc is as cheap as the reference it wraps; make one per use.
#[derive(Clone, Debug)]
pub struct TreeDoc<T = Value> {
    raw: T,
}

impl<T: Borrow<Value>> TreeDoc<T> {
    /// Wraps a tree (a reference to read or edit it in place, or the value itself).
    pub fn new(raw: T) -> Self {
        Self { raw }
    }

    /// The JSON.
    pub fn as_value(&self) -> &Value {
        self.raw.borrow()
    }

    /// Gives the wrapped tree back.
    pub fn into_inner(self) -> T {
        self.raw
    }

    fn nodes(&self) -> Option<&Map<String, Value>> {
        self.as_value().get("nodes").and_then(Value::as_object)
    }

    /// The `root` field: the id of the root node, if the tree names one.
    pub fn root_id(&self) -> Option<&str> {
        self.as_value().get("root").and_then(Value::as_str)
    }

    /// A node by id, if it exists and is an object.
    pub fn node(&self, id: &str) -> Option<&Map<String, Value>> {
        self.nodes()?.get(id)?.as_object()
    }

    /// The ids of all nodes, in the order of the `nodes` map.
    pub fn node_ids(&self) -> impl Iterator<Item = &str> {
        self.nodes()
            .into_iter()
            .flat_map(|nodes| nodes.keys().map(String::as_str))
    }

    /// The node ids in painting order: depth first from the root, each node before its
    /// `children` in their order; then the nodes that walk does not reach, in map order.
    /// Every id comes once, even where `children` repeat or form a cycle.
    pub fn paint_order(&self) -> Vec<String> {
        let Some(nodes) = self.nodes() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut stack: Vec<&str> = self.root_id().into_iter().collect();
        while let Some(id) = stack.pop() {
            if !seen.insert(id) {
                continue;
            }
            if let Some(children) = nodes
                .get(id)
                .and_then(|n| n.get("children"))
                .and_then(Value::as_array)
            {
                stack.extend(children.iter().rev().filter_map(Value::as_str));
            }
            if nodes.contains_key(id) {
                out.push(id.to_owned());
            }
        }
        out.extend(
            nodes
                .keys()
                .filter(|id| !seen.contains(id.as_str()))
                .cloned(),
        );
        out
    }

    /// A node's `name`, unless it is missing or blank.
    pub fn name(&self, id: &str) -> Option<&str> {
        self.node(id)?
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.trim().is_empty())
    }

    /// The slot a node fills, when it is one of [`SLOT_NAMES`] (or a blueprint's
    /// `panel_N`): a template's `$text` copy slot or `$image` (`product` →
    /// `product_image`), else its id (template ids are slot names), else its `name` in
    /// snake case (a generated ad names each node after its slot: `Cta Label`).
    pub fn slot(&self, id: &str) -> Option<String> {
        let node = self.node(id)?;
        let known = |s: &str| {
            SLOT_NAMES.contains(&s)
                || s.strip_prefix("panel_")
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        };
        if let Some(t) = node.get("$text").and_then(Value::as_str) {
            // A label inside its button is the button's copy: `cta` names the frame.
            return Some(
                if t == "cta" && node.get("type").and_then(Value::as_str) == Some("TEXT") {
                    "cta_label".to_owned()
                } else {
                    t.to_owned()
                },
            );
        }
        match node.get("$image").and_then(Value::as_str) {
            Some("product") => return Some("product_image".to_owned()),
            Some("logo") => return Some("logo".to_owned()),
            _ => {}
        }
        if known(id) {
            return Some(id.to_owned());
        }
        let snake = self
            .name(id)?
            .trim()
            .to_lowercase()
            .replace([' ', '-'], "_");
        known(&snake).then_some(snake)
    }

    /// A TEXT node's `characters`.
    pub fn text(&self, id: &str) -> Option<&str> {
        let node = self.node(id)?;
        if node.get("type").and_then(Value::as_str) != Some("TEXT") {
            return None;
        }
        node.get("characters").and_then(Value::as_str)
    }

    /// The paints of a node that are objects, fills before strokes, with where each is.
    fn paints_of<'a>(&'a self, id: &'a str) -> impl Iterator<Item = (PaintAt, &'a Value)> + 'a {
        let node = self.node(id);
        PaintList::BOTH.into_iter().flat_map(move |list| {
            node.and_then(|n| n.get(list.key()))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
                .filter_map(move |(index, p)| {
                    let at = PaintAt {
                        node: id.to_owned(),
                        list,
                        index,
                    };
                    p.is_object().then_some((at, p))
                })
        })
    }

    /// Every IMAGE paint that names a URL ([`ImageField::pick`]), visible or not: nodes in
    /// map order, then fills before strokes.
    pub fn image_paints(&self) -> Vec<ImagePaint> {
        self.node_ids()
            .flat_map(|id| self.paints_of(id))
            .filter(|(_, p)| p.get("type").and_then(Value::as_str) == Some("IMAGE"))
            .filter_map(|(at, p)| {
                let (field, url) = ImageField::of_paint(p)?;
                Some(ImagePaint {
                    field,
                    url: url.to_owned(),
                    visible: p.get("visible").and_then(Value::as_bool) != Some(false),
                    at,
                })
            })
            .collect()
    }

    /// The values an editor offers, in painting order ([`TreeDoc::paint_order`]); per node
    /// its text, then its fills' and strokes' SOLID colours (paints that have a `color`) and
    /// IMAGE URLs, visible or not.
    pub fn slots(&self) -> Vec<Slot> {
        let mut out = Vec::new();
        for id in self.paint_order() {
            if let Some(text) = self.text(&id) {
                out.push(Slot::Text {
                    node: id.clone(),
                    text: text.to_owned(),
                });
            }
            for (at, p) in self.paints_of(&id) {
                match p.get("type").and_then(Value::as_str) {
                    Some("SOLID") => {
                        if let Some(c) = p.get("color") {
                            out.push(Slot::Color { at, rgb: rgb8(c) });
                        }
                    }
                    Some("IMAGE") => {
                        if let Some((field, url)) = ImageField::of_paint(p) {
                            out.push(Slot::Image {
                                at,
                                field,
                                url: url.to_owned(),
                            });
                        }
                    }
                    _ => {}
                }
            }
        }
        out
    }
}

impl<T: BorrowMut<Value>> TreeDoc<T> {
    /// A node by id, to change it (keys it gets keep their place; new keys go last).
    pub fn node_mut(&mut self, id: &str) -> Option<&mut Map<String, Value>> {
        self.raw
            .borrow_mut()
            .get_mut("nodes")?
            .get_mut(id)?
            .as_object_mut()
    }

    fn node_or_err(&mut self, id: &str) -> Result<&mut Map<String, Value>, Error> {
        self.node_mut(id)
            .ok_or_else(|| Error::NodeNotFound { id: id.to_owned() })
    }

    /// Sets a TEXT node's `characters`.
    ///
    /// # Errors
    /// [`Error::NodeNotFound`]; [`Error::NotText`] when the node's `type` is not `TEXT`.
    pub fn set_text(&mut self, id: &str, text: &str) -> Result<(), Error> {
        let node = self.node_or_err(id)?;
        if node.get("type").and_then(Value::as_str) != Some("TEXT") {
            return Err(Error::NotText { id: id.to_owned() });
        }
        node.insert("characters".into(), Value::from(text));
        Ok(())
    }

    /// The paint object at `at` if its `type` is `kind`.
    fn paint_mut(
        &mut self,
        at: &PaintAt,
        kind: &'static str,
    ) -> Result<&mut Map<String, Value>, Error> {
        let missing = || Error::NoSuchPaint {
            node: at.node.clone(),
            list: at.list.key(),
            index: at.index,
            kind,
        };
        let paint = self
            .node_or_err(&at.node)?
            .get_mut(at.list.key())
            .and_then(|l| l.get_mut(at.index))
            .and_then(Value::as_object_mut)
            .ok_or_else(missing)?;
        if paint.get("type").and_then(Value::as_str) != Some(kind) {
            return Err(missing());
        }
        Ok(paint)
    }

    /// Sets the `r`, `g` and `b` of a SOLID paint's `color` to `byte / 255` (unrounded),
    /// keeping its `a` and any other field. A `color` that is missing or not an object
    /// becomes a new object.
    ///
    /// # Errors
    /// [`Error::NodeNotFound`]; [`Error::NoSuchPaint`] when there is no SOLID paint at `at`.
    pub fn set_solid_rgb(&mut self, at: &PaintAt, rgb: [u8; 3]) -> Result<(), Error> {
        let paint = self.paint_mut(at, "SOLID")?;
        let color = paint
            .entry("color")
            .or_insert_with(|| Value::Object(Map::new()));
        if !color.is_object() {
            *color = Value::Object(Map::new());
        }
        if let Some(color) = color.as_object_mut() {
            for (key, byte) in ["r", "g", "b"].into_iter().zip(rgb) {
                color.insert(key.into(), Value::from(f64::from(byte) / 255.0));
            }
        }
        Ok(())
    }

    /// Sets the `field` of an IMAGE paint to `url` (the other image fields stay as they are:
    /// set the field [`ImageField::pick`] chose, or the URL will not change what is drawn).
    ///
    /// # Errors
    /// [`Error::NodeNotFound`]; [`Error::NoSuchPaint`] when there is no IMAGE paint at `at`.
    pub fn set_image_url(
        &mut self,
        at: &PaintAt,
        field: ImageField,
        url: &str,
    ) -> Result<(), Error> {
        self.paint_mut(at, "IMAGE")?
            .insert(field.key().into(), Value::from(url));
        Ok(())
    }

    /// Shows or hides the IMAGE paint at `at` (`"visible"`), keeping its other fields.
    ///
    /// # Errors
    /// [`Error::NodeNotFound`]; [`Error::NoSuchPaint`] when there is no IMAGE paint at `at`.
    pub fn set_image_visible(&mut self, at: &PaintAt, visible: bool) -> Result<(), Error> {
        self.paint_mut(at, "IMAGE")?
            .insert("visible".into(), Value::Bool(visible));
        Ok(())
    }

    /// Replaces a node's `fills` or `strokes` (build paints with [`super::paint`]).
    ///
    /// # Errors
    /// [`Error::NodeNotFound`].
    pub fn set_paints(
        &mut self,
        id: &str,
        list: PaintList,
        paints: Vec<Value>,
    ) -> Result<(), Error> {
        self.node_or_err(id)?
            .insert(list.key().into(), Value::Array(paints));
        Ok(())
    }
}

/// A raw colour as 8-bit channels: each of `r`, `g`, `b` clamped to 0..1 and rounded
/// (a missing or non-number channel reads as 0).
fn rgb8(color: &Value) -> [u8; 3] {
    ["r", "g", "b"].map(|k| {
        let v = color.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        (v.clamp(0.0, 1.0) * 255.0).round() as u8
    })
}
