//! Turns a display list into a [`Plan`]: CPU-side coverage masks packed into one atlas, one
//! 128-byte draw record per quad, gradient stops, images to upload and an ordered list of
//! commands. Nothing here touches the device, so a display list the GPU path cannot draw
//! yet is refused ([`Unsupported`]) before any GPU work starts.
//!
//! Longer than 600 lines because it is one translation, `DrawOp` by `DrawOp`, into the
//! records the shaders read; its helpers already live in submodules.

use tiny_skia::{FillRule, Mask, Path, Pixmap, Stroke, Transform};

use crate::scene::{DrawOp, Layer, Scene, ScenePaint};
use crate::tree::Color;

mod effects;
mod paint;

pub use effects::{Aux, EffectCmd};

use paint::{PaintRecord, blend_index};

/// Why a scene is drawn by the CPU backend instead (reported in the render report).
#[derive(Debug, Clone, PartialEq)]
pub struct Unsupported(pub String);

const CLEAR: Color = Color {
    r: 0.0,
    g: 0.0,
    b: 0.0,
    a: 0.0,
};

/// Bytes of one `Draw` record in `shaders/draw.wgsl` (8 × vec4).
pub const RECORD_BYTES: usize = 128;

/// Width of the mask atlas texture (its height grows per render up to the device limit).
pub const ATLAS_WIDTH: u32 = 4096;

/// What a draw samples as its image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    None,
    /// Index into [`Plan::images`].
    Image(usize),
    /// A finished layer: index into [`Plan::targets`].
    Target(usize),
}

/// One quad drawn into `target`.
#[derive(Debug, Clone, Copy)]
pub struct DrawCmd {
    pub target: usize,
    pub record: u32,
    pub source: Source,
    /// Non-normal blend: the shader reads a copy of the target under `rect`.
    pub backdrop: Option<[u32; 4]>,
}

/// One step of a plan, in order.
#[derive(Debug, Clone)]
pub enum Step {
    Draw(DrawCmd),
    /// A pass of the effect shader (shadows, blurs, clip masks of layers with effects).
    Effect(EffectCmd),
    /// Contrast of a TEXT op against the targets under it (`(target, x, y)` from the
    /// canvas up), measured by the CPU backend's code on read-back regions.
    Contrast {
        stack: Vec<(usize, i32, i32)>,
        path: Path,
        transform: Transform,
        color: Color,
        node: String,
    },
}

/// A coverage mask placed in the atlas at (`x`, `y`).
pub struct MaskUpload {
    pub x: u32,
    pub y: u32,
    pub mask: Mask,
}

/// Everything needed to draw one scene.
pub struct Plan {
    /// Sizes of the render targets; 0 is the canvas, the rest are layers and the scratch
    /// planes of effects.
    pub targets: Vec<(u32, u32)>,
    /// Per target: cleared before the first draw (scratch planes are overwritten instead).
    pub clear: Vec<bool>,
    /// `Effect` records of `shaders/effects.wgsl`.
    pub effects: Vec<u8>,
    pub records: Vec<u8>,
    pub stops: Vec<u8>,
    pub masks: Vec<MaskUpload>,
    /// Atlas rows in use.
    pub atlas_height: u32,
    pub images: Vec<Pixmap>,
    pub steps: Vec<Step>,
}

struct Frame {
    target: usize,
    x: i32,
    y: i32,
    layer: Option<Layer>,
}

/// Builds the plan, or says which op the GPU path does not draw yet.
///
/// `max_dim` is the device's largest texture side.
pub fn plan(scene: &Scene, max_dim: u32) -> Result<Plan, Unsupported> {
    let (w, h) = (scene.width.max(1), scene.height.max(1));
    if w > max_dim || h > max_dim {
        return Err(Unsupported(format!(
            "canvas {w}x{h} is larger than the device's {max_dim} px textures"
        )));
    }
    let mut p = Planner {
        plan: Plan {
            targets: vec![(w, h)],
            clear: vec![true],
            effects: Vec::new(),
            records: Vec::new(),
            stops: Vec::new(),
            masks: Vec::new(),
            atlas_height: 0,
            images: Vec::new(),
            steps: Vec::new(),
        },
        shelf: (0, 0, 0),
        max_dim,
        stop_count: 0,
        free: Vec::new(),
    };
    // A non-empty stops buffer keeps the binding valid.
    p.push_stop(0.0, CLEAR);
    let mut stack = vec![Frame {
        target: 0,
        x: 0,
        y: 0,
        layer: None,
    }];
    for op in &scene.ops {
        let top = stack.last().map_or((0, 0, 0), |f| (f.target, f.x, f.y));
        let (target, ox, oy) = top;
        let to_target = |t: &Transform| t.post_translate(-ox as f32, -oy as f32);
        match op {
            DrawOp::Fill {
                path,
                transform,
                paint,
                even_odd,
            } => {
                let rule = if *even_odd {
                    FillRule::EvenOdd
                } else {
                    FillRule::Winding
                };
                p.fill(target, path, to_target(transform), paint, rule)?;
            }
            DrawOp::Text {
                path,
                transform,
                paint,
                node,
                color,
            } => {
                if let Some(c) = color {
                    p.plan.steps.push(Step::Contrast {
                        stack: stack.iter().map(|f| (f.target, f.x, f.y)).collect(),
                        path: path.clone(),
                        transform: *transform,
                        color: *c,
                        node: node.clone(),
                    });
                }
                p.fill(target, path, to_target(transform), paint, FillRule::Winding)?;
            }
            DrawOp::Stroke {
                path,
                transform,
                paint,
                width,
            } => p.stroke(target, path, to_target(transform), paint, *width)?,
            DrawOp::Bitmap {
                image,
                transform,
                opacity,
            } => p.bitmap(target, image, to_target(transform), *opacity)?,
            DrawOp::BackdropBlur {
                sigma,
                clip,
                bounds,
            } => p.backdrop(target, (ox, oy), *bounds, *sigma, clip)?,
            DrawOp::PushLayer(layer) => {
                let b = layer.bounds;
                if b.width() > max_dim || b.height() > max_dim {
                    return Err(Unsupported(format!(
                        "layer {}x{} is larger than the device's textures",
                        b.width(),
                        b.height()
                    )));
                }
                p.plan.targets.push((b.width(), b.height()));
                p.plan.clear.push(true);
                stack.push(Frame {
                    target: p.plan.targets.len() - 1,
                    x: b.x(),
                    y: b.y(),
                    layer: Some(layer.clone()),
                });
            }
            DrawOp::PopLayer => {
                if stack.len() < 2 {
                    continue;
                }
                if let Some(done) = stack.pop() {
                    p.composite(done, &stack)?;
                }
            }
        }
    }
    while stack.len() > 1 {
        if let Some(done) = stack.pop() {
            p.composite(done, &stack)?;
        }
    }
    Ok(p.plan)
}

struct Planner {
    plan: Plan,
    /// Current shelf: x cursor, y of the shelf, shelf height.
    shelf: (u32, u32, u32),
    max_dim: u32,
    stop_count: u32,
    /// Scratch targets no later pass reads, free for the next effect.
    free: Vec<usize>,
}

/// Integer device bounds of `path` under `t` grown by `grow`, inside a `w`×`h` target.
fn visible(path: &Path, t: Transform, grow: f32, w: u32, h: u32) -> Option<tiny_skia::IntRect> {
    let b = path.clone().transform(t)?.bounds();
    let x0 = (b.left() - grow).floor().max(0.0);
    let y0 = (b.top() - grow).floor().max(0.0);
    let x1 = (b.right() + grow).ceil().min(w as f32);
    let y1 = (b.bottom() + grow).ceil().min(h as f32);
    if x1 <= x0 || y1 <= y0 {
        return None;
    }
    tiny_skia::IntRect::from_ltrb(x0 as i32, y0 as i32, x1 as i32, y1 as i32)
}

/// Coverage of `path` under `t` in a `size` mask whose corner is device pixel `origin`.
/// The path is transformed first and then moved by whole pixels, as tiny-skia's
/// `fill_path` transforms and then tiles: folding the offset into `t` rounds differently
/// and flips an edge sample here and there.
fn coverage(
    path: &Path,
    t: Transform,
    rule: FillRule,
    anti_alias: bool,
    origin: (i32, i32),
    size: (u32, u32),
) -> Option<Mask> {
    let device = path.clone().transform(t)?;
    let mut m = Mask::new(size.0, size.1)?;
    m.fill_path(
        &device,
        rule,
        anti_alias,
        Transform::from_translate(-origin.0 as f32, -origin.1 as f32),
    );
    Some(m)
}

/// The device rectangle of `path` when it is an axis-aligned rectangle with whole-pixel
/// edges under `t`: its coverage is exactly 1 inside, so it needs no mask.
fn pixel_rect(path: &Path, t: Transform) -> Option<[f32; 4]> {
    if t.kx != 0.0 || t.ky != 0.0 || path.len() > 5 {
        return None;
    }
    let pb = path.bounds();
    let is_rect = path.points().iter().all(|q| {
        (q.x == pb.left() || q.x == pb.right()) && (q.y == pb.top() || q.y == pb.bottom())
    });
    let b = path.clone().transform(t)?.bounds();
    let whole = |v: f32| (v - v.round()).abs() < 1e-4;
    (is_rect && whole(b.left()) && whole(b.top()) && whole(b.right()) && whole(b.bottom())).then(
        || {
            [
                b.left().round(),
                b.top().round(),
                b.right().round(),
                b.bottom().round(),
            ]
        },
    )
}

impl Planner {
    fn target_size(&self, target: usize) -> (u32, u32) {
        self.plan.targets[target]
    }

    fn push_stop(&mut self, pos: f32, c: Color) {
        for v in [pos, 0.0, 0.0, 0.0, c.r, c.g, c.b, c.a] {
            self.plan.stops.extend_from_slice(&v.to_le_bytes());
        }
        self.stop_count += 1;
    }

    /// Places a `w`×`h` mask in the atlas (shelf packing) and returns its corner.
    fn place(&mut self, mask: Mask) -> Result<(u32, u32), Unsupported> {
        let (w, h) = (mask.width(), mask.height());
        if w > ATLAS_WIDTH {
            return Err(Unsupported(format!(
                "a {w} px wide coverage mask does not fit the {ATLAS_WIDTH} px atlas"
            )));
        }
        let (mut x, mut y, mut sh) = self.shelf;
        if x + w > ATLAS_WIDTH {
            y += sh;
            x = 0;
            sh = 0;
        }
        if y + h > self.max_dim {
            return Err(Unsupported(
                "the coverage masks of this scene overflow the atlas".into(),
            ));
        }
        self.shelf = (x + w, y, sh.max(h));
        self.plan.atlas_height = self.plan.atlas_height.max(y + h);
        self.plan.masks.push(MaskUpload { x, y, mask });
        Ok((x, y))
    }

    fn push_record(
        &mut self,
        target: usize,
        rect: [f32; 4],
        mask: Option<(u32, u32)>,
        paint: &PaintRecord,
        blend: u32,
    ) {
        let (tw, th) = self.target_size(target);
        let m = paint.inverse;
        let (mx, my) = mask.unwrap_or((0, 0));
        let floats = |v: [f32; 4], out: &mut Vec<u8>| {
            for f in v {
                out.extend_from_slice(&f.to_le_bytes());
            }
        };
        let uints = |v: [u32; 4], out: &mut Vec<u8>| {
            for u in v {
                out.extend_from_slice(&u.to_le_bytes());
            }
        };
        let r = &mut self.plan.records;
        let index = (r.len() / RECORD_BYTES) as u32;
        floats(rect, r);
        floats([tw as f32, th as f32, paint.opacity, 0.0], r);
        floats([mx as f32, my as f32, 0.0, 0.0], r);
        uints(
            [paint.kind, paint.first_stop, paint.stop_count, paint.filter],
            r,
        );
        uints([paint.spread, blend, u32::from(mask.is_some()), 0], r);
        floats(paint.color, r);
        floats([m.sx, m.ky, m.kx, m.sy], r);
        floats([m.tx, m.ty, paint.image_size.0, paint.image_size.1], r);
        let backdrop = (blend != 0).then(|| {
            let x0 = rect[0].max(0.0) as u32;
            let y0 = rect[1].max(0.0) as u32;
            let x1 = (rect[2].min(tw as f32).max(0.0) as u32).max(x0);
            let y1 = (rect[3].min(th as f32).max(0.0) as u32).max(y0);
            [x0, y0, x1, y1]
        });
        self.plan.steps.push(Step::Draw(DrawCmd {
            target,
            record: index,
            source: paint.source,
            backdrop,
        }));
    }

    /// Draws `paint` through the coverage of `path`.
    fn fill(
        &mut self,
        target: usize,
        path: &Path,
        t: Transform,
        paint: &ScenePaint,
        rule: FillRule,
    ) -> Result<(), Unsupported> {
        let (tw, th) = self.target_size(target);
        let Some(vis) = visible(path, t, 0.0, tw, th) else {
            return Ok(());
        };
        let mut rect = [
            vis.left() as f32,
            vis.top() as f32,
            vis.right() as f32,
            vis.bottom() as f32,
        ];
        let exact = pixel_rect(path, t);
        if let Some(r) = exact {
            rect = [
                r[0].max(rect[0]),
                r[1].max(rect[1]),
                r[2].min(rect[2]),
                r[3].min(rect[3]),
            ];
        }
        let Some(rec) = self.paint(paint, t, vis, true, &mut rect)? else {
            return Ok(());
        };
        if rect[2] <= rect[0] || rect[3] <= rect[1] {
            return Ok(());
        }
        let aligned_image = rec.kind == 3
            && rec.filter == 0
            && matches!(paint, ScenePaint::Image { tile: false, .. });
        let mask = if exact.is_some() {
            None
        } else if aligned_image {
            let (x, y) = (rect[0] as i32, rect[1] as i32);
            let Some(mut m) = Mask::new((rect[2] - rect[0]) as u32, (rect[3] - rect[1]) as u32)
            else {
                return Ok(());
            };
            m.fill_path(path, rule, true, t.post_translate(-x as f32, -y as f32));
            Some(self.place(m)?)
        } else {
            let (x, y) = (rect[0] as i32, rect[1] as i32);
            let mw = (rect[2] - rect[0]) as u32;
            let mh = (rect[3] - rect[1]) as u32;
            let Some(m) = coverage(path, t, rule, true, (x, y), (mw, mh)) else {
                return Ok(());
            };
            Some(self.place(m)?)
        };
        self.push_record(target, rect, mask, &rec, 0);
        Ok(())
    }

    fn stroke(
        &mut self,
        target: usize,
        path: &Path,
        t: Transform,
        paint: &ScenePaint,
        width: f32,
    ) -> Result<(), Unsupported> {
        let (tw, th) = self.target_size(target);
        let scale = (t.sx * t.sx + t.ky * t.ky).sqrt();
        // Miter joins reach up to 4 half-widths (tiny-skia's default miter limit).
        let Some(vis) = visible(path, t, 2.0 * width * scale + 2.0, tw, th) else {
            return Ok(());
        };
        let mut rect = [
            vis.left() as f32,
            vis.top() as f32,
            vis.right() as f32,
            vis.bottom() as f32,
        ];
        let Some(rec) = self.paint(paint, t, vis, false, &mut rect)? else {
            return Ok(());
        };
        // Coverage from tiny-skia's own stroker and rasteriser (hairlines included), taken
        // from the alpha of an opaque white stroke.
        let (x, y) = (vis.left(), vis.top());
        let stroke = Stroke {
            width,
            ..Stroke::default()
        };
        let min_scale = (t.sx * t.sx + t.ky * t.ky)
            .sqrt()
            .min((t.kx * t.kx + t.sy * t.sy).sqrt());
        if width * min_scale >= 1.0 {
            // As tiny-skia's `stroke_path`: outline in path space, then fill under `t`.
            let res = tiny_skia::PathStroker::compute_resolution_scale(&t);
            let Some(outline) = path.stroke(&stroke, res) else {
                return Ok(());
            };
            let Some(m) = coverage(
                &outline,
                t,
                FillRule::Winding,
                true,
                (x, y),
                (vis.width(), vis.height()),
            ) else {
                return Ok(());
            };
            let corner = self.place(m)?;
            let rect = [x as f32, y as f32, vis.right() as f32, vis.bottom() as f32];
            self.push_record(target, rect, Some(corner), &rec, 0);
            return Ok(());
        }
        let Some(mut scratch) = Pixmap::new(vis.width(), vis.height()) else {
            return Ok(());
        };
        let white = tiny_skia::Paint {
            anti_alias: true,
            ..tiny_skia::Paint::default()
        };
        scratch.stroke_path(
            path,
            &white,
            &stroke,
            t.post_translate(-x as f32, -y as f32),
            None,
        );
        let mask = Mask::from_pixmap(scratch.as_ref(), tiny_skia::MaskType::Alpha);
        let corner = self.place(mask)?;
        let rect = [x as f32, y as f32, vis.right() as f32, vis.bottom() as f32];
        self.push_record(target, rect, Some(corner), &rec, 0);
        Ok(())
    }

    /// A colour emoji: the bitmap's rectangle (not anti-aliased, as tiny-skia's
    /// `draw_pixmap`) filled with the bitmap, bicubic.
    fn bitmap(
        &mut self,
        target: usize,
        image: &Pixmap,
        t: Transform,
        opacity: f32,
    ) -> Result<(), Unsupported> {
        let (tw, th) = self.target_size(target);
        let Some(path) =
            tiny_skia::Rect::from_xywh(0.0, 0.0, image.width() as f32, image.height() as f32)
                .map(tiny_skia::PathBuilder::from_rect)
        else {
            return Ok(());
        };
        let Some(vis) = visible(&path, t, 0.0, tw, th) else {
            return Ok(());
        };
        let Some(inverse) = t.invert() else {
            return Ok(());
        };
        let Some(m) = coverage(
            &path,
            t,
            FillRule::Winding,
            false,
            (vis.left(), vis.top()),
            (vis.width(), vis.height()),
        ) else {
            return Ok(());
        };
        let corner = self.place(m)?;
        self.plan.images.push(image.clone());
        let mut rec = PaintRecord::image(
            self.plan.images.len() - 1,
            (image.width(), image.height()),
            inverse,
            2,
        );
        rec.opacity = opacity;
        let rect = [
            vis.left() as f32,
            vis.top() as f32,
            vis.right() as f32,
            vis.bottom() as f32,
        ];
        self.push_record(target, rect, Some(corner), &rec, 0);
        Ok(())
    }

    /// Composites a finished layer into its parent: clip mask, opacity, blend mode.
    fn composite(&mut self, done: Frame, stack: &[Frame]) -> Result<(), Unsupported> {
        let Some(layer) = done.layer else {
            return Ok(());
        };
        let Some(parent) = stack.last() else {
            return Ok(());
        };
        let b = layer.bounds;
        let source = if layer.effects.is_empty() {
            done.target
        } else {
            self.layer_effects(
                done.target,
                (b.x(), b.y()),
                layer.clip.as_ref(),
                &layer.effects,
            )?
        };
        let mask = match &layer.clip {
            Some(_) if !layer.effects.is_empty() => None,
            Some(clip) => {
                let Some(mut m) = Mask::new(b.width(), b.height()) else {
                    return Ok(());
                };
                m.fill_path(
                    &clip.path,
                    FillRule::Winding,
                    true,
                    clip.transform.post_translate(-b.x() as f32, -b.y() as f32),
                );
                if clip.inverse {
                    m.invert();
                }
                Some(self.place(m)?)
            }
            None => None,
        };
        let (x, y) = (b.x() - parent.x, b.y() - parent.y);
        let rect = [
            x as f32,
            y as f32,
            (x + b.width() as i32) as f32,
            (y + b.height() as i32) as f32,
        ];
        let rec = PaintRecord {
            opacity: layer.opacity,
            source: Source::Target(source),
            ..PaintRecord::image(
                0,
                (b.width(), b.height()),
                Transform::from_translate(-x as f32, -y as f32),
                0,
            )
        };
        self.push_record(
            parent.target,
            rect,
            mask,
            &rec,
            blend_index(layer.blend_mode),
        );
        Ok(())
    }
}
