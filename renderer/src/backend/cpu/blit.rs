//! Fast paths for the two most expensive things in an ad: compositing a same-scale layer
//! (source-over at an integer offset) and filling a shape with a photo whose pixels have
//! been resampled onto the device grid. Both avoid tiny-skia's general float pipeline, which
//! costs several times more per pixel for patterns.

use tiny_skia::{FillRule, Mask, Path, Pixmap, Transform};

#[inline]
fn div255(v: u32) -> u32 {
    (v + 128 + ((v + 128) >> 8)) >> 8
}

/// `dst = src * opacity * coverage + dst * (1 - alpha)`, premultiplied, with `src` placed at
/// `(x, y)` in `dst`. `coverage` (same size as `src`) is optional.
pub fn blend_over(
    dst: &mut Pixmap,
    src: &Pixmap,
    x: i32,
    y: i32,
    opacity: f32,
    coverage: Option<&[u8]>,
) {
    let op = (opacity.clamp(0.0, 1.0) * 255.0).round() as u32;
    if op == 0 {
        return;
    }
    let (dw, dh) = (dst.width() as i32, dst.height() as i32);
    let (sw, sh) = (src.width() as i32, src.height() as i32);
    let (x0, y0) = (x.max(0), y.max(0));
    let (x1, y1) = ((x + sw).min(dw), (y + sh).min(dh));
    if x1 <= x0 || y1 <= y0 {
        return;
    }
    let sdata = src.data();
    let ddata = dst.data_mut();
    for dy in y0..y1 {
        let sy = dy - y;
        let srow = &sdata[((sy * sw + (x0 - x)) * 4) as usize..((sy * sw + (x1 - x)) * 4) as usize];
        let drow = &mut ddata[((dy * dw + x0) * 4) as usize..((dy * dw + x1) * 4) as usize];
        let crow =
            coverage.map(|c| &c[(sy * sw + (x0 - x)) as usize..(sy * sw + (x1 - x)) as usize]);
        for (i, (s, d)) in srow
            .chunks_exact(4)
            .zip(drow.chunks_exact_mut(4))
            .enumerate()
        {
            let k = match crow {
                Some(c) => div255(u32::from(c[i]) * op),
                None => op,
            };
            if k == 0 || s[3] == 0 {
                continue;
            }
            if k == 255 && s[3] == 255 {
                d.copy_from_slice(s);
                continue;
            }
            let sa = if k == 255 {
                u32::from(s[3])
            } else {
                div255(u32::from(s[3]) * k)
            };
            let inv = 255 - sa;
            for c in 0..4 {
                let sc = if k == 255 {
                    u32::from(s[c])
                } else {
                    div255(u32::from(s[c]) * k)
                };
                d[c] = (sc + div255(u32::from(d[c]) * inv)).min(255) as u8;
            }
        }
    }
}

/// Fills `path` (under `t`, device space of `dst`) with `image`, whose pixel `(0, 0)` sits on
/// device pixel `(x, y)` at scale 1. Coverage comes from a mask of the path, so rounded
/// corners stay anti-aliased.
#[expect(
    clippy::too_many_arguments,
    reason = "a private fast path; a struct would only add noise"
)]
pub fn fill_aligned(
    dst: &mut Pixmap,
    path: &Path,
    t: Transform,
    rule: FillRule,
    image: &Pixmap,
    x: i32,
    y: i32,
    opacity: f32,
) {
    let (w, h) = (image.width(), image.height());
    let Some(mut mask) = Mask::new(w, h) else {
        return;
    };
    mask.fill_path(path, rule, true, t.post_translate(-x as f32, -y as f32));
    blend_over(dst, image, x, y, opacity, Some(mask.data()));
}
