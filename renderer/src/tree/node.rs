//! The normalised node model that layout and scene building read.
//!
//! # Invariants
//! Everything here has been validated: opacities and colour channels are in `0..=1`, sizes
//! and radii are finite and non-negative, enum strings are known, child indices are valid and
//! the tree is acyclic.

pub use super::model::{NodeKind, ScaleMode, Vec2};

/// A straight (not premultiplied) RGBA colour, channels in `0..=1`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Color {
    pub r: f32,
    pub g: f32,
    pub b: f32,
    pub a: f32,
}

impl Color {
    pub const BLACK: Color = Color {
        r: 0.0,
        g: 0.0,
        b: 0.0,
        a: 1.0,
    };

    /// WCAG relative luminance.
    pub fn luminance(&self) -> f32 {
        fn lin(c: f32) -> f32 {
            if c <= 0.03928 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        }
        0.2126 * lin(self.r) + 0.7152 * lin(self.g) + 0.0722 * lin(self.b)
    }
}

/// Blend modes: the subset of Figma's that tiny-skia (and later the GPU backend) implement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BlendMode {
    #[default]
    Normal,
    Multiply,
    Screen,
    Overlay,
    Darken,
    Lighten,
    ColorDodge,
    ColorBurn,
    HardLight,
    SoftLight,
    Difference,
    Exclusion,
    Hue,
    Saturation,
    Color,
    Luminosity,
}

impl BlendMode {
    /// The modes' names in a tree (Figma's; `PASS_THROUGH` draws as `NORMAL`), which an
    /// importer also checks against.
    pub const NAMES: &'static [&'static str] = &[
        "PASS_THROUGH",
        "NORMAL",
        "MULTIPLY",
        "SCREEN",
        "OVERLAY",
        "DARKEN",
        "LIGHTEN",
        "COLOR_DODGE",
        "COLOR_BURN",
        "HARD_LIGHT",
        "SOFT_LIGHT",
        "DIFFERENCE",
        "EXCLUSION",
        "HUE",
        "SATURATION",
        "COLOR",
        "LUMINOSITY",
    ];

    pub(crate) fn from_name(s: &str) -> Option<Self> {
        Some(match s {
            "PASS_THROUGH" | "NORMAL" => Self::Normal,
            "MULTIPLY" => Self::Multiply,
            "SCREEN" => Self::Screen,
            "OVERLAY" => Self::Overlay,
            "DARKEN" => Self::Darken,
            "LIGHTEN" => Self::Lighten,
            "COLOR_DODGE" => Self::ColorDodge,
            "COLOR_BURN" => Self::ColorBurn,
            "HARD_LIGHT" => Self::HardLight,
            "SOFT_LIGHT" => Self::SoftLight,
            "DIFFERENCE" => Self::Difference,
            "EXCLUSION" => Self::Exclusion,
            "HUE" => Self::Hue,
            "SATURATION" => Self::Saturation,
            "COLOR" => Self::Color,
            "LUMINOSITY" => Self::Luminosity,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct GradientStop {
    pub position: f32,
    pub color: Color,
}

/// One fill or stroke paint.
#[derive(Debug, Clone, PartialEq)]
pub enum Paint {
    Solid {
        color: Color,
        opacity: f32,
    },
    /// Figma handles in the node's unit square: `[start, end, width]`.
    LinearGradient {
        handles: [Vec2; 3],
        stops: Vec<GradientStop>,
        opacity: f32,
    },
    /// Handles: `[centre, edge of the first radius, edge of the second radius]`.
    RadialGradient {
        handles: [Vec2; 3],
        stops: Vec<GradientStop>,
        opacity: f32,
    },
    Image {
        url: String,
        scale_mode: ScaleMode,
        /// Figma's `imageTransform` rows, for STRETCH / CROP.
        transform: Option<[[f32; 3]; 2]>,
        scaling_factor: f32,
        opacity: f32,
    },
    /// A paint type the renderer does not draw yet (e.g. GRADIENT_ANGULAR); reported and
    /// skipped.
    Unsupported {
        kind: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StrokeAlign {
    #[default]
    Inside,
    Center,
    Outside,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    DropShadow {
        color: Color,
        offset: Vec2,
        radius: f32,
        spread: f32,
    },
    InnerShadow {
        color: Color,
        offset: Vec2,
        radius: f32,
        spread: f32,
    },
    LayerBlur {
        radius: f32,
    },
    BackgroundBlur {
        radius: f32,
    },
    Unsupported {
        kind: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    Horizontal,
    Vertical,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Align {
    #[default]
    Min,
    Center,
    Max,
    SpaceBetween,
    /// Counter axis only: first text baselines on one line.
    Baseline,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sizing {
    #[default]
    Fixed,
    Hug,
    Fill,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AutoLayout {
    pub axis: Axis,
    pub wrap: bool,
    pub spacing: f32,
    pub counter_spacing: f32,
    /// left, top, right, bottom
    pub padding: [f32; 4],
    pub primary_align: Align,
    pub counter_align: Align,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TextAlign {
    #[default]
    Left,
    Center,
    Right,
    Justified,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VerticalAlign {
    #[default]
    Top,
    Center,
    Bottom,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TextCase {
    #[default]
    Original,
    Upper,
    Lower,
    Title,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TextDecoration {
    #[default]
    None,
    Underline,
    Strikethrough,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AutoResize {
    /// Fixed box.
    #[default]
    None,
    /// Width fixed, height grows with the text.
    Height,
    /// Width and height hug the text (no wrapping).
    WidthAndHeight,
    /// Fixed box; lines that do not fit are dropped and the last one ends with an ellipsis.
    Truncate,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LineHeight {
    Auto,
    Pixels(f32),
    /// Multiple of the font size (1.2 = 120 %).
    Relative(f32),
}

#[derive(Debug, Clone, PartialEq)]
pub struct TextStyle {
    pub characters: String,
    pub font_family: String,
    pub font_size: f32,
    pub font_weight: u16,
    pub italic: bool,
    pub line_height: LineHeight,
    pub letter_spacing: f32,
    pub align: TextAlign,
    pub vertical_align: VerticalAlign,
    pub case: TextCase,
    pub decoration: TextDecoration,
    pub auto_resize: AutoResize,
    pub max_lines: Option<u32>,
    pub ellipsis: bool,
    /// Our extension: `(min, max)` font size for shrink-to-fit.
    pub fit: Option<(f32, f32)>,
    /// Ranges of `characters` in another style (Figma's `characterStyleOverrides`), in
    /// order, not overlapping; the characters between them take the node's own style.
    pub spans: Vec<TextSpan>,
}

/// A range of a TEXT node's characters with its own style: each `Some` field replaces the
/// node's value for these characters.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TextSpan {
    /// Byte range in [`TextStyle::characters`] (on character boundaries).
    pub range: std::ops::Range<usize>,
    pub font_family: Option<String>,
    pub font_weight: Option<u16>,
    pub italic: Option<bool>,
    /// Design pixels.
    pub font_size: Option<f32>,
    /// Pixels.
    pub letter_spacing: Option<f32>,
    pub decoration: Option<TextDecoration>,
    /// Paints of these characters instead of the node's `fills`.
    pub fills: Option<Vec<Paint>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct VectorPath {
    pub data: String,
    pub even_odd: bool,
}

/// A validated, normalised node.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub id: String,
    pub kind: NodeKind,
    pub name: Option<String>,
    /// Indices into [`super::Tree::nodes`], painting order (first is bottom-most). EFFECT
    /// children are folded into `effects` and not listed.
    pub children: Vec<usize>,
    pub x: f32,
    pub y: f32,
    pub width: Option<f32>,
    pub height: Option<f32>,
    /// Degrees, counter-clockwise, about the node's top-left corner (Figma).
    pub rotation: f32,
    pub opacity: f32,
    pub visible: bool,
    pub clips_content: bool,
    /// top-left, top-right, bottom-right, bottom-left
    pub radii: [f32; 4],
    pub fills: Vec<Paint>,
    pub strokes: Vec<Paint>,
    /// Per-paint blend modes, index-aligned with `fills` / `strokes`.
    pub fill_blends: Vec<BlendMode>,
    pub stroke_blends: Vec<BlendMode>,
    pub stroke_weight: f32,
    pub stroke_align: StrokeAlign,
    pub blend_mode: BlendMode,
    pub effects: Vec<Effect>,
    pub auto_layout: Option<AutoLayout>,
    pub sizing_h: Sizing,
    pub sizing_v: Sizing,
    pub absolute: bool,
    pub text: Option<TextStyle>,
    pub vector_paths: Vec<VectorPath>,
    /// Accepted properties this renderer does not draw yet; reported as warnings.
    pub unsupported: Vec<String>,
}
