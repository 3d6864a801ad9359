//! Stage 3: the display list — the one contract every backend implements.
//!
//! A [`Scene`] is a flat list of [`DrawOp`]s in device pixels, painted in order. Layers
//! nest with `PushLayer` / `PopLayer`; everything between them is composited as one group
//! (opacity, blend mode, clip, effects). Geometry uses `tiny_skia::Path` and
//! `tiny_skia::Transform` (plain f32 data, no rasteriser state), so the GPU backend can read
//! the same list.
//!
//! Rejected alternative: a retained tree of render nodes (as usvg builds). A flat list is
//! trivially serialisable for debugging, cheap to walk, and maps directly onto a GPU command
//! encoder.

mod build;
pub(crate) mod path;
mod text;

use std::sync::Arc;

pub use build::build_scene;
use tiny_skia::{IntRect, Path, Transform};

use crate::image::ImageSource;
use crate::tree::{BlendMode, Color};

/// How a path is filled.
#[derive(Debug, Clone)]
pub enum ScenePaint {
    /// Straight-alpha colour (paint opacity already multiplied into `a`).
    Solid(Color),
    /// Gradient from `(0,0)` to `(1,0)` in gradient space; `transform` maps gradient space to
    /// the path's space.
    LinearGradient {
        stops: Vec<(f32, Color)>,
        transform: Transform,
    },
    /// Circle of radius 1 at the origin of gradient space.
    RadialGradient {
        stops: Vec<(f32, Color)>,
        transform: Transform,
    },
    /// An image; `transform` maps image pixels to the path's space.
    Image {
        image: Arc<ImageSource>,
        transform: Transform,
        tile: bool,
        opacity: f32,
    },
}

/// A layer effect, in device pixels.
#[derive(Debug, Clone, PartialEq)]
pub enum LayerEffect {
    /// Shadow of the layer's alpha, drawn below it.
    DropShadow {
        color: Color,
        dx: f32,
        dy: f32,
        sigma: f32,
        spread: f32,
    },
    /// Shadow inside the layer's alpha, drawn above it.
    InnerShadow {
        color: Color,
        dx: f32,
        dy: f32,
        sigma: f32,
        spread: f32,
    },
    /// Gaussian blur of the layer itself.
    Blur { sigma: f32 },
}

/// A clip: only pixels inside `path` (under `transform`) stay, or outside with `inverse`.
#[derive(Debug, Clone)]
pub struct Clip {
    pub path: Path,
    pub transform: Transform,
    /// Keep what is *outside* the path instead (OUTSIDE strokes of glyphs and vectors).
    pub inverse: bool,
}

/// Parameters of a layer.
#[derive(Debug, Clone)]
pub struct Layer {
    /// Device-space bounds; nothing in the layer is drawn outside them.
    pub bounds: IntRect,
    /// The node (an index into the tree's nodes) this layer is drawn for.
    pub node: usize,
    pub opacity: f32,
    pub blend_mode: BlendMode,
    /// `None` when `bounds` alone is the clip (or there is none).
    pub clip: Option<Clip>,
    pub effects: Vec<LayerEffect>,
}

/// One drawing command.
#[derive(Debug, Clone)]
pub enum DrawOp {
    Fill {
        path: Path,
        transform: Transform,
        paint: ScenePaint,
        even_odd: bool,
    },
    Stroke {
        path: Path,
        transform: Transform,
        paint: ScenePaint,
        width: f32,
    },
    /// Glyph outlines of one TEXT node. Like `Fill`, plus the node id and text colour so a
    /// backend can measure contrast against what is behind.
    Text {
        path: Path,
        transform: Transform,
        paint: ScenePaint,
        node: String,
        color: Option<Color>,
    },
    /// A bitmap (colour emoji): image pixels mapped by `transform` to device space.
    Bitmap {
        image: Arc<tiny_skia::Pixmap>,
        transform: Transform,
        opacity: f32,
    },
    /// BACKGROUND_BLUR: blur what is already painted inside `clip` (within `bounds`) with a
    /// Gaussian of `sigma` device pixels.
    BackdropBlur {
        sigma: f32,
        clip: Clip,
        bounds: IntRect,
    },
    PushLayer(Layer),
    PopLayer,
}

/// A display list for a `width` × `height` device canvas.
#[derive(Debug, Clone)]
pub struct Scene {
    pub width: u32,
    pub height: u32,
    pub ops: Vec<DrawOp>,
}
