//! Stage 1: parse, validate and normalise a JSON tree (like usvg does for SVG).
//!
//! A [`Tree`] keeps the original `serde_json::Value` next to the typed, normalised nodes, so
//! serialising it gives back exactly what came in: unknown fields and node ids survive. The
//! alternative, a `#[serde(flatten)] extra` map on every struct, was rejected because it
//! loses unknown fields inside paints, effects and nested objects unless every nested struct
//! carries one too.
//!
//! Reading and writing a tree as JSON, without validating it, is [`TreeDoc`] (find nodes
//! and editable values, set texts, colours and image URLs) and [`TreeBuilder`] with
//! [`NodeBuilder`] and [`paint`] (write a new one): the one API other crates use instead of
//! walking the JSON themselves, as usvg has its writer beside its parser.
//!
//! # Errors
//! Every error names the node id and the field path (`fills[0].color.r`), see [`Error`].

mod build;
mod edit;
mod model;
pub mod node;
mod normalise;
mod place;
mod text;
mod values;

use std::collections::HashMap;

pub use build::{NodeBuilder, TreeBuilder, paint};
pub use edit::{ImageField, ImagePaint, PaintAt, PaintList, SLOT_NAMES, Slot, TreeDoc};
pub use node::*;
pub use place::Bounds;
use serde::Serialize;
use serde_json::Value;

use crate::Error;

/// A validated, normalised JSON tree.
///
/// # Invariants
/// `nodes[root]` exists; every child index is valid; every node has one parent except the
/// root; no cycles. Rendering an accepted tree cannot fail.
#[derive(Debug, Clone)]
pub struct Tree {
    raw: Value,
    nodes: Vec<Node>,
    root: usize,
    index: HashMap<String, usize>,
}

impl Tree {
    /// Parses a JSON document.
    ///
    /// # Errors
    /// [`Error::Json`] for bad syntax, [`Error::InvalidTree`] and [`Error::InvalidNode`] for
    /// a document that does not follow the format.
    pub fn parse(json: &str) -> Result<Tree, Error> {
        let value: Value = serde_json::from_str(json)?;
        Self::from_value(value)
    }

    /// Validates and normalises an already parsed JSON value (taking ownership of it).
    ///
    /// # Errors
    /// As [`Tree::parse`].
    pub fn from_value(raw: Value) -> Result<Tree, Error> {
        let (nodes, root) = normalise::normalise(&raw)?;
        let index = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.clone(), i))
            .collect();
        Ok(Tree {
            raw,
            nodes,
            root,
            index,
        })
    }

    /// The JSON exactly as it was given (unknown fields included).
    pub fn as_value(&self) -> &Value {
        &self.raw
    }

    /// Serialises back to JSON text (key order preserved).
    pub fn to_json_string(&self) -> String {
        self.raw.to_string()
    }

    /// All nodes, in the order of the `nodes` map.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Index of the root node in [`Tree::nodes`].
    pub fn root_index(&self) -> usize {
        self.root
    }

    /// The root node.
    pub fn root(&self) -> &Node {
        &self.nodes[self.root]
    }

    /// A node by index.
    pub fn node(&self, index: usize) -> &Node {
        &self.nodes[index]
    }

    /// A node by id.
    pub fn get(&self, id: &str) -> Option<&Node> {
        self.index.get(id).map(|&i| &self.nodes[i])
    }

    /// Design size of the root frame (width, height).
    pub fn design_size(&self) -> (f32, f32) {
        let r = self.root();
        (r.width.unwrap_or(0.0), r.height.unwrap_or(0.0))
    }
}

impl Serialize for Tree {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for Tree {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Tree::from_value(v).map_err(serde::de::Error::custom)
    }
}
