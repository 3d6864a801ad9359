//! The paint half of a draw record: solid colours, gradient stops, and images resampled by
//! the CPU backend's own code (so both backends blend the same pixels).

use tiny_skia::Transform;

use super::{CLEAR, Planner, Source, Unsupported};
use crate::backend::cpu::image as cpu_image;
use crate::scene::ScenePaint;
use crate::tree::{BlendMode, Color};

/// The paint part of a draw record.
pub(super) struct PaintRecord {
    pub(super) kind: u32,
    pub(super) first_stop: u32,
    pub(super) stop_count: u32,
    pub(super) filter: u32,
    pub(super) spread: u32,
    pub(super) color: [f32; 4],
    /// Target pixel → paint space.
    pub(super) inverse: Transform,
    pub(super) image_size: (f32, f32),
    pub(super) opacity: f32,
    pub(super) source: Source,
}

impl PaintRecord {
    pub(super) fn solid(c: Color) -> Self {
        Self {
            kind: 0,
            first_stop: 0,
            stop_count: 0,
            filter: 0,
            spread: 0,
            color: [c.r, c.g, c.b, c.a],
            inverse: Transform::identity(),
            image_size: (1.0, 1.0),
            opacity: 1.0,
            source: Source::None,
        }
    }

    pub(super) fn image(index: usize, size: (u32, u32), inverse: Transform, filter: u32) -> Self {
        // tiny-skia's pattern rules: a translate-only mapping samples the nearest texel, and
        // so does bilinear under a whole-pixel translate.
        let translate =
            inverse.sx == 1.0 && inverse.sy == 1.0 && inverse.kx == 0.0 && inverse.ky == 0.0;
        let whole = inverse.tx == inverse.tx.trunc() && inverse.ty == inverse.ty.trunc();
        let filter = if translate && (filter == 2 || whole) {
            0
        } else {
            filter
        };
        Self {
            kind: 3,
            filter,
            image_size: (size.0 as f32, size.1 as f32),
            inverse,
            source: Source::Image(index),
            ..Self::solid(CLEAR)
        }
    }
}

impl Planner {
    /// The paint record for `paint` drawn under `t` (path → target pixels), or `None` when
    /// nothing would be drawn (as the CPU backend skips it).
    pub(super) fn paint(
        &mut self,
        paint: &ScenePaint,
        t: Transform,
        visible: tiny_skia::IntRect,
        aligned: bool,
        rect: &mut [f32; 4],
    ) -> Result<Option<PaintRecord>, Unsupported> {
        Ok(match paint {
            ScenePaint::Solid(c) => Some(PaintRecord::solid(*c)),
            ScenePaint::LinearGradient { stops, transform }
            | ScenePaint::RadialGradient { stops, transform } => {
                if stops.is_empty() {
                    return Ok(None);
                }
                if stops.len() == 1 {
                    return Ok(Some(PaintRecord::solid(stops[0].1)));
                }
                let Some(inverse) = t.pre_concat(*transform).invert() else {
                    return Ok(None);
                };
                let first = self.stop_count;
                // tiny-skia sorts nothing but clamps each position to the previous one.
                let mut last = 0.0f32;
                for (pos, c) in stops {
                    last = pos.clamp(last, 1.0);
                    self.push_stop(last, *c);
                }
                let radial = matches!(paint, ScenePaint::RadialGradient { .. });
                Some(PaintRecord {
                    kind: if radial { 2 } else { 1 },
                    first_stop: first,
                    stop_count: stops.len() as u32,
                    inverse,
                    ..PaintRecord::solid(CLEAR)
                })
            }
            ScenePaint::Image {
                image,
                transform,
                tile,
                opacity,
            } => {
                let to_device = t.pre_concat(*transform);
                let vis = visible.to_rect();
                if aligned
                    && !*tile
                    && let Some((img, x, y)) = cpu_image::prepare_aligned(image, to_device, vis)
                {
                    // Drawn 1:1: only inside the resampled rectangle.
                    // The mask's origin is the image's, as in `blit::fill_aligned`.
                    let (iw, ih) = (img.width(), img.height());
                    *rect = [
                        x as f32,
                        y as f32,
                        (x + iw as i32) as f32,
                        (y + ih as i32) as f32,
                    ];
                    self.plan.images.push(img);
                    let mut rec = PaintRecord::image(
                        self.plan.images.len() - 1,
                        (iw, ih),
                        Transform::from_translate(-x as f32, -y as f32),
                        0,
                    );
                    rec.opacity = *opacity;
                    return Ok(Some(rec));
                }
                let Some(prepared) = cpu_image::prepare(image, to_device, *tile, vis) else {
                    return Ok(None);
                };
                let Some(inverse) = prepared.to_device.invert() else {
                    return Ok(None);
                };
                let filter = match prepared.quality {
                    tiny_skia::FilterQuality::Nearest => 0,
                    tiny_skia::FilterQuality::Bilinear => 1,
                    tiny_skia::FilterQuality::Bicubic => 2,
                };
                let size = (prepared.pixmap.width(), prepared.pixmap.height());
                self.plan.images.push(prepared.pixmap);
                let mut rec = PaintRecord::image(self.plan.images.len() - 1, size, inverse, filter);
                rec.spread = u32::from(*tile);
                rec.opacity = *opacity;
                Some(rec)
            }
        })
    }
}

/// The `mode.y` value of `shaders/draw.wgsl` for a blend mode.
pub fn blend_index(b: BlendMode) -> u32 {
    match b {
        BlendMode::Normal => 0,
        BlendMode::Multiply => 1,
        BlendMode::Screen => 2,
        BlendMode::Overlay => 3,
        BlendMode::Darken => 4,
        BlendMode::Lighten => 5,
        BlendMode::ColorDodge => 6,
        BlendMode::ColorBurn => 7,
        BlendMode::HardLight => 8,
        BlendMode::SoftLight => 9,
        BlendMode::Difference => 10,
        BlendMode::Exclusion => 11,
        BlendMode::Hue => 12,
        BlendMode::Saturation => 13,
        BlendMode::Color => 14,
        BlendMode::Luminosity => 15,
    }
}
