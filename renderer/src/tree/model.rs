//! Typed view of one node as it appears in the JSON, with Figma's field names.
//!
//! These structs only read the fields the renderer understands; everything else stays in the
//! original `serde_json::Value` kept by [`super::Tree`], so unknown fields round-trip untouched.

use serde::Deserialize;

use super::ImageField;

/// Node types. Unknown types are rejected with the list of allowed ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum NodeKind {
    /// Container with optional auto-layout, fills, strokes and clipping.
    Frame,
    /// Container without its own paint; its size defaults to the bounds of its children.
    Group,
    /// Rectangle with optional corner radii.
    Rectangle,
    /// Ellipse inscribed in the node's box.
    Ellipse,
    /// Text.
    Text,
    /// SVG path data in `vectorPaths` / `fillGeometry`.
    Vector,
    /// Adds its `effects` to its parent node (see docs/json-tree.md).
    Effect,
}

#[derive(Debug, Clone, Copy, PartialEq, Default, Deserialize)]
pub struct Rgba {
    pub r: f32,
    pub g: f32,
    pub b: f32,
    #[serde(default = "one")]
    pub a: f32,
}

#[derive(Debug, Clone, Copy, PartialEq, Default, Deserialize)]
pub struct Vec2 {
    pub x: f32,
    pub y: f32,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ColorStop {
    pub position: f32,
    pub color: Rgba,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ScaleMode {
    #[default]
    Fill,
    Fit,
    Tile,
    Stretch,
    Crop,
}

/// One paint of `fills` or `strokes`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaintSpec {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default = "yes")]
    pub visible: bool,
    #[serde(default = "one")]
    pub opacity: f32,
    #[serde(default)]
    pub color: Option<Rgba>,
    #[serde(default)]
    pub blend_mode: Option<String>,
    #[serde(default)]
    pub gradient_handle_positions: Vec<Vec2>,
    #[serde(default)]
    pub gradient_stops: Vec<ColorStop>,
    #[serde(default)]
    pub scale_mode: ScaleMode,
    #[serde(default)]
    pub image_fill_url: Option<String>,
    #[serde(default)]
    pub image_url: Option<String>,
    #[serde(default)]
    pub image_ref: Option<String>,
    /// Figma's 2x3 `imageTransform` (node unit square → image unit square), used by
    /// STRETCH/CROP to crop.
    #[serde(default)]
    pub image_transform: Option<[[f32; 3]; 2]>,
    #[serde(default)]
    pub scaling_factor: Option<f32>,
}

impl PaintSpec {
    /// The field and URL an IMAGE paint's image comes from, by the one rule
    /// ([`ImageField::pick`]).
    pub fn image_source(&self) -> Option<(ImageField, &str)> {
        ImageField::pick(|f| match f {
            ImageField::FillUrl => self.image_fill_url.as_deref(),
            ImageField::Url => self.image_url.as_deref(),
            ImageField::Ref => self.image_ref.as_deref(),
        })
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EffectSpec {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default = "yes")]
    pub visible: bool,
    #[serde(default)]
    pub radius: f32,
    #[serde(default)]
    pub color: Option<Rgba>,
    #[serde(default)]
    pub offset: Vec2,
    #[serde(default)]
    pub spread: f32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VectorPathSpec {
    #[serde(alias = "path")]
    pub data: String,
    #[serde(default)]
    pub winding_rule: Option<String>,
}

/// Our extension: shrink-to-fit text.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextFitSpec {
    pub min_font_size: f32,
    #[serde(default)]
    pub max_font_size: Option<f32>,
}

/// One entry of Figma's `styleOverrideTable`: what a range of a TEXT node's characters
/// changes from the node's own style (a TypeStyle holding only the changed fields).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StyleOverrideSpec {
    #[serde(default)]
    pub font_family: Option<String>,
    #[serde(default)]
    pub font_weight: Option<f32>,
    #[serde(default)]
    pub italic: Option<bool>,
    #[serde(default)]
    pub font_style: Option<String>,
    #[serde(default)]
    pub font_size: Option<f32>,
    #[serde(default)]
    pub letter_spacing: Option<f32>,
    #[serde(default)]
    pub text_decoration: Option<String>,
    #[serde(default)]
    pub fills: Option<Vec<PaintSpec>>,
    /// Read only to report that per-range line heights and cases are not drawn.
    #[serde(default)]
    pub line_height_px: Option<f32>,
    #[serde(default)]
    pub text_case: Option<String>,
}

/// Figma-style line height object `{ "value": 120, "unit": "PERCENT" }` or a bare number of
/// pixels.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum LineHeightSpec {
    Pixels(f32),
    Object {
        #[serde(default)]
        value: f32,
        unit: String,
    },
}

/// Every field the renderer reads from a node, all optional.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSpec {
    #[serde(rename = "type")]
    pub kind: NodeKind,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub children: Vec<String>,
    #[serde(default)]
    pub x: f32,
    #[serde(default)]
    pub y: f32,
    #[serde(default)]
    pub width: Option<f32>,
    #[serde(default)]
    pub height: Option<f32>,
    #[serde(default)]
    pub rotation: f32,
    #[serde(default = "one")]
    pub opacity: f32,
    #[serde(default = "yes")]
    pub visible: bool,
    #[serde(default)]
    pub clips_content: Option<bool>,
    #[serde(default)]
    pub corner_radius: f32,
    #[serde(default)]
    pub rectangle_corner_radii: Option<[f32; 4]>,
    #[serde(default)]
    pub fills: Vec<PaintSpec>,
    #[serde(default)]
    pub strokes: Vec<PaintSpec>,
    #[serde(default)]
    pub stroke_weight: Option<f32>,
    #[serde(default)]
    pub stroke_align: Option<String>,
    #[serde(default)]
    pub blend_mode: Option<String>,
    #[serde(default)]
    pub effects: Vec<EffectSpec>,
    // auto-layout
    #[serde(default)]
    pub layout_mode: Option<String>,
    #[serde(default)]
    pub layout_wrap: Option<String>,
    #[serde(default)]
    pub item_spacing: f32,
    #[serde(default)]
    pub counter_axis_spacing: Option<f32>,
    #[serde(default)]
    pub padding_left: f32,
    #[serde(default)]
    pub padding_right: f32,
    #[serde(default)]
    pub padding_top: f32,
    #[serde(default)]
    pub padding_bottom: f32,
    #[serde(default)]
    pub primary_axis_align_items: Option<String>,
    #[serde(default)]
    pub counter_axis_align_items: Option<String>,
    #[serde(default)]
    pub layout_sizing_horizontal: Option<String>,
    #[serde(default)]
    pub layout_sizing_vertical: Option<String>,
    #[serde(default)]
    pub layout_positioning: Option<String>,
    #[serde(default)]
    pub layout_grow: f32,
    #[serde(default)]
    pub layout_align: Option<String>,
    // text
    #[serde(default)]
    pub characters: Option<String>,
    #[serde(default)]
    pub font_size: Option<f32>,
    #[serde(default)]
    pub font_family: Option<String>,
    #[serde(default)]
    pub font_weight: Option<f32>,
    #[serde(default)]
    pub italic: Option<bool>,
    #[serde(default)]
    pub font_style: Option<String>,
    #[serde(default)]
    pub line_height: Option<LineHeightSpec>,
    #[serde(default)]
    pub line_height_px: Option<f32>,
    #[serde(default)]
    pub line_height_percent_font_size: Option<f32>,
    #[serde(default)]
    pub letter_spacing: f32,
    #[serde(default)]
    pub text_align_horizontal: Option<String>,
    #[serde(default)]
    pub text_align_vertical: Option<String>,
    #[serde(default)]
    pub text_case: Option<String>,
    #[serde(default)]
    pub text_decoration: Option<String>,
    #[serde(default)]
    pub text_auto_resize: Option<String>,
    #[serde(default)]
    pub max_lines: Option<u32>,
    #[serde(default)]
    pub text_truncation: Option<String>,
    #[serde(default)]
    pub text_fit: Option<TextFitSpec>,
    /// Figma's per-character style ids (0: the node's own style), one per UTF-16 code unit
    /// of `characters`; trailing zeros may be left out.
    #[serde(default)]
    pub character_style_overrides: Vec<u32>,
    /// Figma's style id → the fields that style changes.
    #[serde(default)]
    pub style_override_table: std::collections::BTreeMap<String, Option<StyleOverrideSpec>>,
    // vector
    #[serde(default)]
    pub vector_paths: Vec<VectorPathSpec>,
    #[serde(default)]
    pub fill_geometry: Vec<VectorPathSpec>,
}

fn one() -> f32 {
    1.0
}

fn yes() -> bool {
    true
}
