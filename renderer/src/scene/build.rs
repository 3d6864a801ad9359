//! Tree + layout → display list, in device pixels.
//!
//! Longer than 600 lines because it is one walk of the tree, node kind by node kind, each
//! emitting its draw operations; splitting it would split that one match.

use tiny_skia::{IntRect, Path, PathBuilder, Rect, Transform};

use super::path::{ellipse, rounded_rect, svg_path};
use super::text::text_offset;
use super::{Clip, DrawOp, Layer, LayerEffect, Scene, ScenePaint};
use crate::image::ImageMap;
use crate::layout::{Layout, TextEngine};
use crate::report::Warning;
use crate::tree::{BlendMode, Color, Effect, Node, NodeKind, Paint, ScaleMode, StrokeAlign, Tree};

/// Builds the display list for a `width` × `height` canvas.
pub fn build_scene(
    tree: &Tree,
    layout: &Layout,
    images: &ImageMap,
    engine: &mut TextEngine,
    width: u32,
    height: u32,
    warnings: &mut Vec<Warning>,
) -> Scene {
    let (dw, dh) = tree.design_size();
    let base = Transform::from_scale(width as f32 / dw, height as f32 / dh);
    let mut b = Builder {
        tree,
        layout,
        images,
        engine,
        warnings,
        ops: Vec::with_capacity(tree.nodes().len() * 2),
        canvas: IntRect::from_xywh(0, 0, width, height).unwrap_or_else(unreachable_rect),
        within: IntRect::from_xywh(0, 0, width, height).unwrap_or_else(unreachable_rect),
        current: tree.root_index(),
        scale: (width as f32 / dw).min(height as f32 / dh),
    };
    b.node(tree.root_index(), base, b.canvas);
    Scene {
        width,
        height,
        ops: b.ops,
    }
}

fn unreachable_rect() -> IntRect {
    // width and height are validated to be >= 1 before building.
    IntRect::from_xywh(0, 0, 1, 1).unwrap_or_else(|| unreachable!())
}

pub(super) struct Builder<'a> {
    pub(super) tree: &'a Tree,
    pub(super) layout: &'a Layout,
    pub(super) images: &'a ImageMap,
    pub(super) engine: &'a mut TextEngine,
    pub(super) warnings: &'a mut Vec<Warning>,
    pub(super) ops: Vec<DrawOp>,
    pub(super) canvas: IntRect,
    /// The bounds what is drawn now is clipped to (the innermost layer's or clip's): a
    /// layer pushed for one paint is allocated to these, never to the whole canvas.
    pub(super) within: IntRect,
    /// The node being drawn (an index into the tree's nodes), named by its layers.
    pub(super) current: usize,
    pub(super) scale: f32,
}

fn map_rect(t: Transform, r: Rect) -> Option<Rect> {
    let mut pts = [
        tiny_skia::Point::from_xy(r.left(), r.top()),
        tiny_skia::Point::from_xy(r.right(), r.top()),
        tiny_skia::Point::from_xy(r.right(), r.bottom()),
        tiny_skia::Point::from_xy(r.left(), r.bottom()),
    ];
    t.map_points(&mut pts);
    Rect::from_points(&pts)
}

fn union(a: Option<Rect>, b: Option<Rect>) -> Option<Rect> {
    match (a, b) {
        (Some(a), Some(b)) => Rect::from_ltrb(
            a.left().min(b.left()),
            a.top().min(b.top()),
            a.right().max(b.right()),
            a.bottom().max(b.bottom()),
        ),
        (a, None) => a,
        (None, b) => b,
    }
}

fn outset(r: Rect, d: f32) -> Option<Rect> {
    Rect::from_ltrb(r.left() - d, r.top() - d, r.right() + d, r.bottom() + d)
}

fn to_int(r: Rect, within: IntRect) -> Option<IntRect> {
    let l = r.left().floor().max(within.left() as f32) as i32;
    let t = r.top().floor().max(within.top() as f32) as i32;
    let rr = r.right().ceil().min(within.right() as f32) as i32;
    let b = r.bottom().ceil().min(within.bottom() as f32) as i32;
    if rr <= l || b <= t {
        return None;
    }
    IntRect::from_ltrb(l, t, rr, b)
}

pub(super) fn with_alpha(c: Color, a: f32) -> Color {
    Color { a: c.a * a, ..c }
}

impl Builder<'_> {
    fn local(&self, i: usize, parent: Transform) -> Transform {
        if i == self.tree.root_index() {
            return parent;
        }
        let b = self.layout.boxes[i];
        let n = self.tree.node(i);
        let t = parent.pre_translate(b.x, b.y);
        if n.rotation != 0.0 {
            t.pre_concat(Transform::from_rotate(-n.rotation))
        } else {
            t
        }
    }

    fn drawable(&self, i: usize) -> bool {
        let n = self.tree.node(i);
        n.visible && n.opacity > 0.0 && n.kind != NodeKind::Effect
    }

    /// Device bounds of a node and everything it draws.
    fn bounds(&self, i: usize, t: Transform) -> Option<Rect> {
        let n = self.tree.node(i);
        let b = self.layout.boxes[i];
        let mut r =
            Rect::from_xywh(0.0, 0.0, b.w.max(0.01), b.h.max(0.01)).and_then(|r| map_rect(t, r));
        if let Some(s) = &self.layout.texts[i] {
            let oy = text_offset(n, b.h, s);
            // Line boxes plus 0.3 em for overhangs (italics, accents, swashes): generous
            // enough for real fonts, tight enough that a big headline's shadow layer is
            // not twice its size.
            let m = s.font_size * 0.3;
            let ink = Rect::from_xywh(
                s.min_x.min(0.0) - m,
                oy - m,
                s.width.max(b.w) + 2.0 * m,
                s.height + 2.0 * m,
            );
            r = union(r, ink.and_then(|ink| map_rect(t, ink)));
        }
        if !n.strokes.is_empty() {
            r = r.and_then(|r| outset(r, n.stroke_weight * self.scale * 1.5 + 1.0));
        }
        if !n.clips_content {
            for &c in &n.children {
                if self.drawable(c) {
                    r = union(r, self.bounds(c, self.local(c, t)));
                }
            }
        }
        let mut grow = 0.0f32;
        for e in &n.effects {
            grow = grow.max(match e {
                Effect::DropShadow {
                    offset,
                    radius,
                    spread,
                    ..
                } => offset.x.abs().max(offset.y.abs()) + radius * 1.5 + spread.max(0.0),
                Effect::LayerBlur { radius } => radius * 1.5,
                _ => 0.0,
            });
        }
        if grow > 0.0 {
            r.and_then(|r| outset(r, grow * self.scale + 2.0))
        } else {
            r
        }
    }

    fn node(&mut self, i: usize, parent: Transform, clip_bounds: IntRect) {
        if !self.drawable(i) {
            return;
        }
        let n = self.tree.node(i);
        let t = self.local(i, parent);
        let b = self.layout.boxes[i];
        self.current = i;
        let kids: Vec<usize> = n
            .children
            .iter()
            .copied()
            .filter(|&c| self.drawable(c))
            .collect();
        let stroke_paints = if n.stroke_weight > 0.0 {
            n.strokes.len()
        } else {
            0
        };
        let paint_count = n.fills.len() + stroke_paints;
        let effects: Vec<LayerEffect> =
            n.effects.iter().filter_map(|e| self.effect(n, e)).collect();
        let backdrop = n.effects.iter().find_map(|e| match e {
            Effect::BackgroundBlur { radius } if *radius > 0.0 => Some(*radius),
            _ => None,
        });
        let needs_layer = n.blend_mode != BlendMode::Normal
            || !effects.is_empty()
            || (n.opacity < 1.0
                && (!kids.is_empty() || paint_count > 1 || n.kind == NodeKind::Text));
        let fold = if needs_layer { 1.0 } else { n.opacity };
        let shape = self.shape(n, b.w, b.h);
        let mut layer_bounds = clip_bounds;
        // BACKGROUND_BLUR blurs what is already painted behind the node's shape; it needs no
        // layer of its own.
        if let (Some(r), Some(p)) = (backdrop, &shape)
            && let Some(bounds) = map_rect(t, p.bounds()).and_then(|r| to_int(r, clip_bounds))
        {
            self.ops.push(DrawOp::BackdropBlur {
                sigma: r / 2.0 * self.scale,
                clip: Clip {
                    path: p.clone(),
                    transform: t,
                    inverse: false,
                },
                bounds,
            });
        }
        if needs_layer {
            let Some(bounds) = self.bounds(i, t).and_then(|r| to_int(r, clip_bounds)) else {
                return;
            };
            layer_bounds = bounds;
            self.ops.push(DrawOp::PushLayer(Layer {
                bounds,
                node: i,
                opacity: n.opacity,
                blend_mode: n.blend_mode,
                clip: None,
                effects,
            }));
        }
        for feature in &n.unsupported {
            self.warnings.push(Warning::Unsupported {
                node: n.id.clone(),
                feature: feature.clone(),
            });
        }
        for e in &n.effects {
            if let Effect::Unsupported { kind } = e {
                self.warnings.push(Warning::Unsupported {
                    node: n.id.clone(),
                    feature: format!("effect {kind} (not supported yet)"),
                });
            }
        }
        self.within = layer_bounds;
        // Fills.
        if n.kind == NodeKind::Text {
            self.text(i, t, fold);
        } else if n.kind == NodeKind::Vector {
            for vp in &n.vector_paths {
                if let Some(p) = svg_path(&vp.data) {
                    for (k, paint) in n.fills.iter().enumerate() {
                        if let Some(sp) = self.paint(n, paint, b.w, b.h, fold) {
                            let layer = self.push_paint_blend(n.fill_blends.get(k), &p, t, 0.0);
                            self.ops.push(DrawOp::Fill {
                                path: p.clone(),
                                transform: t,
                                paint: sp,
                                even_odd: vp.even_odd,
                            });
                            self.pop_if(layer);
                        }
                    }
                }
            }
        } else if n.kind != NodeKind::Group
            && let Some(p) = &shape
        {
            for (k, paint) in n.fills.iter().enumerate() {
                if let Some(sp) = self.paint(n, paint, b.w, b.h, fold) {
                    let layer = self.push_paint_blend(n.fill_blends.get(k), p, t, 0.0);
                    self.ops.push(DrawOp::Fill {
                        path: p.clone(),
                        transform: t,
                        paint: sp,
                        even_odd: false,
                    });
                    self.pop_if(layer);
                }
            }
        }
        // Children, clipped.
        if !kids.is_empty() {
            let clip = if n.clips_content
                && n.kind != NodeKind::Group
                && !self.kids_inside(n, &kids, t, b.w, b.h)
            {
                shape.clone()
            } else {
                None
            };
            let pushed = match clip {
                Some(p) => self.push_clip(p, t, layer_bounds),
                None => Some(None),
            };
            if let Some(inner) = pushed {
                let inner_bounds = inner.unwrap_or(layer_bounds);
                for c in kids {
                    self.node(c, t, inner_bounds);
                }
                if inner.is_some() {
                    self.ops.push(DrawOp::PopLayer);
                }
            }
        }
        // Strokes on top, within this node's bounds again (the children moved them).
        self.current = i;
        self.within = layer_bounds;
        if stroke_paints > 0 {
            self.strokes(i, t, b.w, b.h, fold);
        }
        if needs_layer {
            self.ops.push(DrawOp::PopLayer);
        }
    }

    /// Pushes a clip layer. `None`: nothing visible; `Some(None)`: no layer needed (the clip
    /// covers everything); `Some(Some(bounds))`: a layer was pushed.
    fn push_clip(&mut self, path: Path, t: Transform, within: IntRect) -> Option<Option<IntRect>> {
        let dev = map_rect(t, path.bounds())?;
        let bounds = to_int(dev, within)?;
        let axis_aligned = t.kx == 0.0 && t.ky == 0.0;
        let is_rect = path.len() <= 5;
        let pixel_exact = [dev.left(), dev.top(), dev.right(), dev.bottom()]
            .iter()
            .all(|v| (v - v.round()).abs() < 0.01);
        if axis_aligned && is_rect && pixel_exact && bounds == within {
            return Some(None);
        }
        let clip = if axis_aligned && is_rect && pixel_exact {
            None
        } else {
            Some(Clip {
                path,
                transform: t,
                inverse: false,
            })
        };
        self.ops.push(DrawOp::PushLayer(Layer {
            bounds,
            node: self.current,
            opacity: 1.0,
            blend_mode: BlendMode::Normal,
            clip,
            effects: Vec::new(),
        }));
        Some(Some(bounds))
    }

    /// True when every child's bounds lie inside the node's box minus its largest corner
    /// radius, so clipping would change nothing and its layer can be skipped.
    fn kids_inside(&self, n: &Node, kids: &[usize], t: Transform, w: f32, h: f32) -> bool {
        if t.kx != 0.0 || t.ky != 0.0 || n.kind == NodeKind::Ellipse || n.kind == NodeKind::Vector {
            return false;
        }
        let r = n
            .radii
            .iter()
            .fold(0.0f32, |a, &b| a.max(b))
            .min(w.min(h) / 2.0);
        let Some(inner) =
            Rect::from_xywh(r, r, w - 2.0 * r, h - 2.0 * r).and_then(|x| map_rect(t, x))
        else {
            return false;
        };
        kids.iter().all(|&c| {
            self.bounds(c, self.local(c, t)).is_some_and(|b| {
                b.left() >= inner.left() - 0.01
                    && b.top() >= inner.top() - 0.01
                    && b.right() <= inner.right() + 0.01
                    && b.bottom() <= inner.bottom() + 0.01
            })
        })
    }

    /// A paint with its own blend mode is drawn in a layer composited with that mode.
    pub(super) fn push_paint_blend(
        &mut self,
        blend: Option<&BlendMode>,
        path: &Path,
        t: Transform,
        grow: f32,
    ) -> bool {
        let Some(&blend_mode) = blend.filter(|b| **b != BlendMode::Normal) else {
            return false;
        };
        let Some(bounds) = map_rect(t, path.bounds())
            .and_then(|r| outset(r, grow * self.scale + 2.0))
            .and_then(|r| to_int(r, self.within))
        else {
            return false;
        };
        self.ops.push(DrawOp::PushLayer(Layer {
            bounds,
            node: self.current,
            opacity: 1.0,
            blend_mode,
            clip: None,
            effects: Vec::new(),
        }));
        true
    }

    pub(super) fn pop_if(&mut self, pushed: bool) {
        if pushed {
            self.ops.push(DrawOp::PopLayer);
        }
    }

    fn shape(&self, n: &Node, w: f32, h: f32) -> Option<Path> {
        match n.kind {
            NodeKind::Ellipse => ellipse(0.0, 0.0, w, h),
            NodeKind::Vector => {
                let mut pb = PathBuilder::new();
                for vp in &n.vector_paths {
                    if let Some(p) = svg_path(&vp.data) {
                        pb.push_path(&p);
                    }
                }
                pb.finish()
            }
            NodeKind::Text | NodeKind::Effect => {
                Rect::from_xywh(0.0, 0.0, w, h).map(PathBuilder::from_rect)
            }
            _ => rounded_rect(0.0, 0.0, w, h, n.radii),
        }
    }

    fn effect(&self, n: &Node, e: &Effect) -> Option<LayerEffect> {
        let s = self.scale;
        match e {
            Effect::DropShadow {
                color,
                offset,
                radius,
                spread,
            } => Some(LayerEffect::DropShadow {
                color: *color,
                dx: offset.x * s,
                dy: offset.y * s,
                sigma: radius / 2.0 * s,
                spread: spread * s,
            }),
            Effect::InnerShadow {
                color,
                offset,
                radius,
                spread,
            } => Some(LayerEffect::InnerShadow {
                color: *color,
                dx: offset.x * s,
                dy: offset.y * s,
                sigma: radius / 2.0 * s,
                spread: spread * s,
            }),
            Effect::LayerBlur { radius } if *radius > 0.0 => Some(LayerEffect::Blur {
                sigma: radius / 2.0 * s,
            }),
            _ => {
                let _ = n;
                None
            }
        }
    }

    fn stops(stops: &[crate::tree::GradientStop], a: f32) -> Vec<(f32, Color)> {
        stops
            .iter()
            .map(|s| (s.position, with_alpha(s.color, a)))
            .collect()
    }

    pub(super) fn paint(
        &mut self,
        n: &Node,
        p: &Paint,
        w: f32,
        h: f32,
        fold: f32,
    ) -> Option<ScenePaint> {
        let grad = |handles: &[crate::tree::Vec2; 3]| {
            let [h0, h1, h2] = handles;
            let (ax, ay) = ((h1.x - h0.x) * w, (h1.y - h0.y) * h);
            let (mut bx, mut by) = ((h2.x - h0.x) * w, (h2.y - h0.y) * h);
            if (ax * by - ay * bx).abs() < 1e-6 {
                (bx, by) = (-ay, ax);
            }
            Transform::from_row(ax, ay, bx, by, h0.x * w, h0.y * h)
        };
        Some(match p {
            Paint::Solid { color, opacity } => {
                ScenePaint::Solid(with_alpha(*color, opacity * fold))
            }
            Paint::LinearGradient {
                handles,
                stops,
                opacity,
            } => ScenePaint::LinearGradient {
                stops: Self::stops(stops, opacity * fold),
                transform: grad(handles),
            },
            Paint::RadialGradient {
                handles,
                stops,
                opacity,
            } => ScenePaint::RadialGradient {
                stops: Self::stops(stops, opacity * fold),
                transform: grad(handles),
            },
            Paint::Image {
                url,
                scale_mode,
                transform,
                scaling_factor,
                opacity,
            } => {
                let img = match self.images.get(url) {
                    Some(Ok(img)) => img.clone(),
                    Some(Err(reason)) => {
                        self.warnings.push(Warning::ImageFailed {
                            node: n.id.clone(),
                            url: url.clone(),
                            reason: reason.clone(),
                        });
                        return None;
                    }
                    None => return None,
                };
                let (iw, ih) = img.size();
                if iw <= 0.0 || ih <= 0.0 || w <= 0.0 || h <= 0.0 {
                    return None;
                }
                let (t, tile) = match scale_mode {
                    ScaleMode::Fill | ScaleMode::Fit => {
                        let s = if *scale_mode == ScaleMode::Fill {
                            (w / iw).max(h / ih)
                        } else {
                            (w / iw).min(h / ih)
                        };
                        (
                            Transform::from_row(
                                s,
                                0.0,
                                0.0,
                                s,
                                (w - iw * s) / 2.0,
                                (h - ih * s) / 2.0,
                            ),
                            false,
                        )
                    }
                    ScaleMode::Tile => (
                        Transform::from_scale(*scaling_factor, *scaling_factor),
                        true,
                    ),
                    ScaleMode::Stretch | ScaleMode::Crop => {
                        // imageTransform maps the node's unit square into the image's unit
                        // square; invert it to place the image.
                        let crop = transform
                            .map(|[[a, c, e], [b, d, f]]| Transform::from_row(a, b, c, d, e, f))
                            .and_then(|m| m.invert())
                            .unwrap_or_default();
                        (
                            Transform::from_scale(w, h)
                                .pre_concat(crop)
                                .pre_scale(1.0 / iw, 1.0 / ih),
                            false,
                        )
                    }
                };
                ScenePaint::Image {
                    image: img,
                    transform: t,
                    tile,
                    opacity: opacity * fold,
                }
            }
            Paint::Unsupported { kind } => {
                self.warnings.push(Warning::Unsupported {
                    node: n.id.clone(),
                    feature: format!("paint {kind} (not supported yet)"),
                });
                return None;
            }
        })
    }

    fn strokes(&mut self, i: usize, t: Transform, w: f32, h: f32, fold: f32) {
        let n = self.tree.node(i);
        let sw = n.stroke_weight;
        let d = match n.stroke_align {
            StrokeAlign::Inside => sw / 2.0,
            StrokeAlign::Center => 0.0,
            StrokeAlign::Outside => -sw / 2.0,
        };
        let path = match n.kind {
            NodeKind::Ellipse => ellipse(d, d, w - 2.0 * d, h - 2.0 * d),
            NodeKind::Rectangle | NodeKind::Frame | NodeKind::Group => rounded_rect(
                d,
                d,
                w - 2.0 * d,
                h - 2.0 * d,
                n.radii
                    .map(|r| if r > 0.0 { (r - d).max(0.0) } else { 0.0 }),
            ),
            NodeKind::Vector => self.shape(n, w, h),
            NodeKind::Text => self.layout.texts[i]
                .as_ref()
                .and_then(|s| self.glyph_path(n, s, h).0),
            NodeKind::Effect => None,
        };
        let Some(path) = path else { return };
        // Glyphs and vector paths cannot be inset exactly, so INSIDE / OUTSIDE strokes are a
        // double-width centred stroke clipped to (the outside of) the shape.
        let clipped = matches!(n.kind, NodeKind::Vector | NodeKind::Text)
            && n.stroke_align != StrokeAlign::Center;
        let width = if clipped { sw * 2.0 } else { sw };
        let mut pushed = false;
        if clipped {
            let grow = width * self.scale + 2.0;
            if let Some(bounds) = map_rect(t, path.bounds())
                .and_then(|r| outset(r, grow))
                .and_then(|r| to_int(r, self.within))
            {
                let clip = Clip {
                    path: path.clone(),
                    transform: t,
                    inverse: n.stroke_align == StrokeAlign::Outside,
                };
                self.ops.push(DrawOp::PushLayer(Layer {
                    bounds,
                    node: i,
                    opacity: 1.0,
                    blend_mode: BlendMode::Normal,
                    clip: Some(clip),
                    effects: Vec::new(),
                }));
                pushed = true;
            }
        }
        for (k, p) in n.strokes.iter().enumerate() {
            if let Some(sp) = self.paint(n, p, w, h, fold) {
                let layer = self.push_paint_blend(n.stroke_blends.get(k), &path, t, width);
                self.ops.push(DrawOp::Stroke {
                    path: path.clone(),
                    transform: t,
                    paint: sp,
                    width,
                });
                self.pop_if(layer);
            }
        }
        if pushed {
            self.ops.push(DrawOp::PopLayer);
        }
    }
}
