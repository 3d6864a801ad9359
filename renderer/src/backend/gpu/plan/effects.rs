//! Layer effects (shadows, layer blur) and BACKGROUND_BLUR as passes of
//! `shaders/effects.wgsl` over offscreen targets, in the order and with the arithmetic of
//! `backend::cpu::effects`. The blur follows `backend::cpu::blur::passes`, so both backends
//! downsample and box-blur a plane the same way.

use tiny_skia::{FillRule, Mask, Transform};

use super::paint::PaintRecord;
use super::{Planner, Source, Unsupported};
use crate::backend::cpu::{blur, sk_color};
use crate::scene::{Clip, LayerEffect};
use crate::tree::Color;

/// Bytes of one `Effect` record in `shaders/effects.wgsl` (4 × vec4).
pub const EFFECT_BYTES: usize = 64;

const OP_COPY: u32 = 0;
const OP_BOX_H: u32 = 1;
const OP_BOX_V: u32 = 2;
const OP_DOWN: u32 = 3;
const OP_UP: u32 = 4;
const OP_SPREAD_H: u32 = 5;
const OP_SPREAD_V: u32 = 6;
const OP_TINT: u32 = 7;
const OP_MASK: u32 = 8;

const COPY_ALPHA: u32 = 1;
const COPY_INVERT: u32 = 2;
const TINT_INNER: u32 = 1;
const TINT_UP: u32 = 2;

/// The second texture an effect pass reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aux {
    None,
    /// The coverage mask atlas (clip masks).
    Atlas,
    Target(usize),
}

/// One full-target pass of the effect shader: reads `src` (and `aux`), writes `dst`,
/// replacing its pixels or, with `over`, blending source-over onto them.
#[derive(Debug, Clone, Copy)]
pub struct EffectCmd {
    pub dst: usize,
    pub src: usize,
    pub aux: Aux,
    pub record: u32,
    pub over: bool,
}

/// One effect record: op and parameters, texel offsets of source and aux, colour, and the
/// size of the full-size plane it reads or stands for.
struct Pass {
    op: [u32; 4],
    offset: [i32; 4],
    color: [u32; 4],
    size: (u32, u32),
}

impl Pass {
    fn op(op: u32, a: u32, b: u32, flags: u32) -> Self {
        Self {
            op: [op, a, b, flags],
            offset: [0; 4],
            color: [0; 4],
            size: (0, 0),
        }
    }

    fn offset(mut self, src: (i32, i32), aux: (i32, i32)) -> Self {
        self.offset = [src.0, src.1, aux.0, aux.1];
        self
    }

    fn size(mut self, size: (u32, u32)) -> Self {
        self.size = size;
        self
    }
}

/// How one shadow's plane is made from the content and drawn: the copy's flags and source
/// offset, the tint's flags and offset.
struct ShadowPlan {
    copy_flags: u32,
    copy_offset: (i32, i32),
    tint_flags: u32,
    tint_offset: (i32, i32),
    color: Color,
    sigma: f32,
    spread: f32,
}

/// A shadow colour premultiplied to 0..255 levels, as the CPU backend rounds it.
fn premultiplied(c: Color) -> [u32; 4] {
    let c = sk_color(c).premultiply().to_color_u8();
    [c.red(), c.green(), c.blue(), c.alpha()].map(u32::from)
}

impl Planner {
    fn pass(&mut self, dst: usize, src: usize, aux: Aux, pass: Pass, over: bool) {
        let e = &mut self.plan.effects;
        let record = (e.len() / EFFECT_BYTES) as u32;
        for v in pass.op {
            e.extend_from_slice(&v.to_le_bytes());
        }
        for v in pass.offset {
            e.extend_from_slice(&v.to_le_bytes());
        }
        for v in pass
            .color
            .into_iter()
            .chain([pass.size.0, pass.size.1, 0, 0])
        {
            e.extend_from_slice(&v.to_le_bytes());
        }
        self.plan.steps.push(super::Step::Effect(EffectCmd {
            dst,
            src,
            aux,
            record,
            over,
        }));
    }

    /// A scratch target of `w`×`h` (not cleared: the first pass into it replaces every
    /// pixel). Give it back with [`Planner::give`] once no later pass reads it.
    fn take(&mut self, w: u32, h: u32) -> usize {
        if let Some(i) = self
            .free
            .iter()
            .position(|&t| self.plan.targets[t] == (w, h))
        {
            return self.free.swap_remove(i);
        }
        self.plan.targets.push((w, h));
        self.plan.clear.push(false);
        self.plan.targets.len() - 1
    }

    fn give(&mut self, target: usize) {
        self.free.push(target);
    }

    /// Gaussian blur of `target` in place, as `blur::gaussian_fast`.
    fn blur(&mut self, target: usize, sigma: f32) {
        let (w, h) = self.target_size(target);
        let plan = blur::passes(sigma, w as usize, h as usize);
        let f = plan.factor as u32;
        if f == 1 {
            if plan.radii.is_empty() {
                return;
            }
            let tmp = self.take(w, h);
            self.boxes(target, tmp, &plan.radii);
            self.give(tmp);
            return;
        }
        let (sw, sh) = (w.div_ceil(f), h.div_ceil(f));
        let small = self.take(sw, sh);
        let tmp = self.take(sw, sh);
        let down = Pass::op(OP_DOWN, f, 0, 0).size((w, h));
        self.pass(small, target, Aux::None, down, false);
        self.boxes(small, tmp, &plan.radii);
        self.pass(target, small, Aux::None, Pass::op(OP_UP, f, 0, 0), false);
        self.give(tmp);
        self.give(small);
    }

    /// Box blurs of `radii` on `target` (horizontal into `tmp`, vertical back).
    fn boxes(&mut self, target: usize, tmp: usize, radii: &[usize]) {
        for &r in radii {
            let r = r as u32;
            self.pass(tmp, target, Aux::None, Pass::op(OP_BOX_H, r, 0, 0), false);
            self.pass(target, tmp, Aux::None, Pass::op(OP_BOX_V, r, 0, 0), false);
        }
    }

    /// Grows (`d > 0`) or shrinks an alpha plane by `|d|` pixels, as `blur::spread`.
    fn spread(&mut self, target: usize, d: f32) {
        let r = d.abs().round() as u32;
        if r == 0 {
            return;
        }
        let (w, h) = self.target_size(target);
        let grow = u32::from(d > 0.0);
        let tmp = self.take(w, h);
        self.pass(
            tmp,
            target,
            Aux::None,
            Pass::op(OP_SPREAD_H, r, grow, 0),
            false,
        );
        self.pass(
            target,
            tmp,
            Aux::None,
            Pass::op(OP_SPREAD_V, r, grow, 0),
            false,
        );
        self.give(tmp);
    }

    /// The finished layer `content` with its clip applied and its effects drawn, as the CPU
    /// backend composites a layer with effects; returns the target to composite.
    pub(super) fn layer_effects(
        &mut self,
        content: usize,
        (x, y): (i32, i32),
        clip: Option<&Clip>,
        effects: &[LayerEffect],
    ) -> Result<usize, Unsupported> {
        let (w, h) = self.target_size(content);
        let mut content = content;
        let mut scratch = Vec::new();
        if let Some(clip) = clip {
            let corner = self.clip_mask(clip, (w, h), (x, y))?;
            let clipped = self.take(w, h);
            let pass =
                Pass::op(OP_MASK, 0, 0, 0).offset((0, 0), (corner.0 as i32, corner.1 as i32));
            self.pass(clipped, content, Aux::Atlas, pass, false);
            content = clipped;
            scratch.push(clipped);
        }
        for e in effects {
            if let LayerEffect::Blur { sigma } = e {
                self.blur(content, *sigma);
            }
        }
        let shadows = effects.iter().any(|e| {
            matches!(
                e,
                LayerEffect::DropShadow { .. } | LayerEffect::InnerShadow { .. }
            )
        });
        if !shadows {
            for t in scratch {
                self.give(t);
            }
            return Ok(content);
        }
        // Shadows go under (drop) or over (inner) the content in a fresh, cleared target.
        self.plan.targets.push((w, h));
        self.plan.clear.push(true);
        let out = self.plan.targets.len() - 1;
        let drops = effects.iter().filter_map(|e| match e {
            LayerEffect::DropShadow {
                color,
                dx,
                dy,
                sigma,
                spread,
            } => Some(ShadowPlan {
                copy_flags: COPY_ALPHA,
                copy_offset: (0, 0),
                tint_flags: 0,
                tint_offset: (-(dx.round() as i32), -(dy.round() as i32)),
                color: *color,
                sigma: *sigma,
                spread: *spread,
            }),
            _ => None,
        });
        for plan in drops.collect::<Vec<_>>() {
            self.shadow(out, content, &plan);
        }
        self.pass(out, content, Aux::None, Pass::op(OP_COPY, 0, 0, 0), true);
        // Inner shadows: the outside of the shape (alpha inverted; beyond the layer counts
        // as outside), moved by the offset, grown by the spread, blurred, then kept only
        // inside the content.
        let inners = effects.iter().filter_map(|e| match e {
            LayerEffect::InnerShadow {
                color,
                dx,
                dy,
                sigma,
                spread,
            } => Some(ShadowPlan {
                copy_flags: COPY_ALPHA | COPY_INVERT,
                copy_offset: (-(dx.round() as i32), -(dy.round() as i32)),
                tint_flags: TINT_INNER,
                tint_offset: (0, 0),
                color: *color,
                sigma: *sigma,
                spread: *spread,
            }),
            _ => None,
        });
        for plan in inners.collect::<Vec<_>>() {
            self.shadow(out, content, &plan);
        }
        for t in scratch {
            self.give(t);
        }
        Ok(out)
    }

    /// Draws one shadow of `content` into `out` (source-over): the plane `plan` describes,
    /// spread, blurred and tinted. Without a spread and with a downsampled blur, the plane
    /// is averaged down straight from the content and upsampled inside the tint, so no
    /// full-size plane is written.
    fn shadow(&mut self, out: usize, content: usize, plan: &ShadowPlan) {
        let (w, h) = self.target_size(content);
        let passes = blur::passes(plan.sigma, w as usize, h as usize);
        let f = passes.factor as u32;
        let color = premultiplied(plan.color);
        let aux = if plan.tint_flags & TINT_INNER != 0 {
            Aux::Target(content)
        } else {
            Aux::None
        };
        if plan.spread.abs().round() == 0.0 && f > 1 {
            let (sw, sh) = (w.div_ceil(f), h.div_ceil(f));
            let small = self.take(sw, sh);
            let tmp = self.take(sw, sh);
            let down = Pass::op(OP_DOWN, f, 0, plan.copy_flags)
                .offset(plan.copy_offset, (0, 0))
                .size((w, h));
            self.pass(small, content, Aux::None, down, false);
            self.boxes(small, tmp, &passes.radii);
            let tint = Pass {
                color,
                ..Pass::op(OP_TINT, f, 0, plan.tint_flags | TINT_UP)
                    .offset(plan.tint_offset, (0, 0))
                    .size((w, h))
            };
            self.pass(out, small, aux, tint, true);
            self.give(tmp);
            self.give(small);
            return;
        }
        let plane = self.take(w, h);
        let copy = Pass::op(OP_COPY, 0, 0, plan.copy_flags).offset(plan.copy_offset, (0, 0));
        self.pass(plane, content, Aux::None, copy, false);
        self.spread(plane, plan.spread);
        self.blur(plane, plan.sigma);
        let tint = Pass {
            color,
            ..Pass::op(OP_TINT, 0, 0, plan.tint_flags).offset(plan.tint_offset, (0, 0))
        };
        self.pass(out, plane, aux, tint, true);
        self.give(plane);
    }

    /// BACKGROUND_BLUR: what `target` (top-left at device `origin`) holds under `bounds`,
    /// blurred and drawn back through the node's shape, as `backend::cpu::effects`.
    pub(super) fn backdrop(
        &mut self,
        target: usize,
        origin: (i32, i32),
        bounds: tiny_skia::IntRect,
        sigma: f32,
        shape: &Clip,
    ) -> Result<(), Unsupported> {
        let (tw, th) = self.target_size(target);
        let (rx, ry) = (bounds.x() - origin.0, bounds.y() - origin.1);
        // The CPU backend takes the part of the region inside the target (`clone_rect`) and
        // draws it back with its corner at the region's.
        let (x0, y0) = (rx.max(0), ry.max(0));
        let x1 = (rx + bounds.width() as i32).min(tw as i32);
        let y1 = (ry + bounds.height() as i32).min(th as i32);
        if x1 <= x0 || y1 <= y0 {
            return Ok(());
        }
        let (w, h) = ((x1 - x0) as u32, (y1 - y0) as u32);
        let region = self.take(w, h);
        let passes = blur::passes(sigma, w as usize, h as usize);
        let f = passes.factor as u32;
        if f > 1 {
            // Averaged down straight from the target: the full-size copy is never made.
            let (sw, sh) = (w.div_ceil(f), h.div_ceil(f));
            let small = self.take(sw, sh);
            let tmp = self.take(sw, sh);
            let down = Pass::op(OP_DOWN, f, 0, 0)
                .offset((x0, y0), (0, 0))
                .size((w, h));
            self.pass(small, target, Aux::None, down, false);
            self.boxes(small, tmp, &passes.radii);
            self.pass(region, small, Aux::None, Pass::op(OP_UP, f, 0, 0), false);
            self.give(tmp);
            self.give(small);
        } else {
            let copy = Pass::op(OP_COPY, 0, 0, 0).offset((x0, y0), (0, 0));
            self.pass(region, target, Aux::None, copy, false);
            self.blur(region, sigma);
        }
        let corner = self.clip_mask(shape, (w, h), (bounds.x(), bounds.y()))?;
        let rect = [
            rx as f32,
            ry as f32,
            (rx + w as i32) as f32,
            (ry + h as i32) as f32,
        ];
        let rec = PaintRecord {
            source: Source::Target(region),
            ..PaintRecord::image(
                0,
                (w, h),
                Transform::from_translate(-rx as f32, -ry as f32),
                0,
            )
        };
        self.push_record(target, rect, Some(corner), &rec, 0);
        self.give(region);
        Ok(())
    }

    /// Coverage of `clip` in a `size` mask whose corner is device pixel `origin`, placed in
    /// the atlas; returns its corner there.
    fn clip_mask(
        &mut self,
        clip: &Clip,
        size: (u32, u32),
        origin: (i32, i32),
    ) -> Result<(u32, u32), Unsupported> {
        let Some(mut m) = Mask::new(size.0, size.1) else {
            return Err(Unsupported(format!("no {}x{} clip mask", size.0, size.1)));
        };
        m.fill_path(
            &clip.path,
            FillRule::Winding,
            true,
            clip.transform
                .post_translate(-origin.0 as f32, -origin.1 as f32),
        );
        if clip.inverse {
            m.invert();
        }
        self.place(m)
    }
}
