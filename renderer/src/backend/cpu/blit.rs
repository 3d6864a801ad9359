//! Fast paths for the two most expensive things in an ad: compositing a same-scale layer
//! (source-over at an integer offset) and filling a shape with a photo whose pixels have
//! been resampled onto the device grid. Both avoid tiny-skia's general float pipeline, which
//! costs several times more per pixel for patterns.

use tiny_skia::{FillRule, Path, Pixmap, Transform};

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
    par_rows(
        dst.data_mut(),
        dw as usize * 4,
        y0 as usize..y1 as usize,
        |dy, drow| {
            let dy = dy as i32;
            let sy = dy - y;
            let srow =
                &sdata[((sy * sw + (x0 - x)) * 4) as usize..((sy * sw + (x1 - x)) * 4) as usize];
            let drow = &mut drow[(x0 * 4) as usize..(x1 * 4) as usize];
            let crow =
                coverage.map(|c| &c[(sy * sw + (x0 - x)) as usize..(sy * sw + (x1 - x)) as usize]);
            // A fully covered row of opaque pixels (a photo's inside) is a copy. Both checks
            // are branch-free folds, so they cost a fraction of the per-pixel loop.
            if op == 255
                && crow.is_none_or(|c| c.iter().fold(255u8, |m, &v| m & v) == 255)
                && srow.chunks_exact(4).fold(255u8, |m, p| m & p[3]) == 255
            {
                drow.copy_from_slice(srow);
                return;
            }
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
        },
    );
}

/// Runs `f(y, row)` for the rows `rows` of `data` (rows of `stride` bytes each), spread over
/// rayon's pool: every row is computed exactly as on one thread, so the pixels do not
/// depend on the number of threads. Small areas stay on the calling thread.
pub fn par_rows(
    data: &mut [u8],
    stride: usize,
    rows: std::ops::Range<usize>,
    f: impl Fn(usize, &mut [u8]) + Sync + Send,
) {
    use rayon::prelude::*;
    // Below this many bytes (a 4K ad's photo or shade is tens of megabytes) the work stays
    // here: a hand-off costs little by itself, but after each one the pool's threads spin
    // a while before sleeping, and a render made of many small hand-offs (the worker's
    // 540 px check renders) then ran at half speed beside them on two cores.
    const MIN_BYTES: usize = 2 * 1024 * 1024;
    let first = rows.start;
    let area = &mut data[rows.start * stride..rows.end * stride];
    if area.len() < MIN_BYTES {
        for (i, row) in area.chunks_exact_mut(stride).enumerate() {
            f(first + i, row);
        }
        return;
    }
    let min_rows = (64 * 1024 / stride.max(1)).max(1);
    area.par_chunks_exact_mut(stride)
        .with_min_len(min_rows)
        .enumerate()
        .for_each(|(i, row)| f(first + i, row));
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
    let Some(mut mask) = super::pool::mask(w, h) else {
        return;
    };
    mask.fill_path(path, rule, true, t.post_translate(-x as f32, -y as f32));
    blend_over(dst, image, x, y, opacity, Some(mask.data()));
    super::pool::give(mask.take());
}

/// Fills `path` with a linear or radial gradient (gradient space → path space `g`, path →
/// device `t`) through a 1024-entry colour table: the gradient parameter is affine (linear)
/// or a distance (radial) per pixel, so this costs a few nanoseconds a pixel instead of
/// tiny-skia's float pipeline. Colours are interpolated unpremultiplied, then premultiplied
/// (as tiny-skia does). `None` when the transform is not invertible.
pub fn fill_gradient(
    dst: &mut Pixmap,
    path: &Path,
    t: Transform,
    rule: FillRule,
    stops: &[(f32, crate::tree::Color)],
    g: Transform,
    radial: bool,
) -> Option<()> {
    const N: usize = 1024;
    let inv = t.pre_concat(g).invert()?;
    let b = path.clone().transform(t)?.bounds();
    let x0 = b.left().floor().max(0.0) as i32;
    let y0 = b.top().floor().max(0.0) as i32;
    let x1 = (b.right().ceil() as i32).min(dst.width() as i32);
    let y1 = (b.bottom().ceil() as i32).min(dst.height() as i32);
    if x1 <= x0 || y1 <= y0 {
        return Some(());
    }
    let (w, h) = ((x1 - x0) as u32, (y1 - y0) as u32);
    let mut mask = super::pool::mask(w, h)?;
    mask.fill_path(path, rule, true, t.post_translate(-x0 as f32, -y0 as f32));
    let lut: Vec<[u32; 4]> = (0..N)
        .map(|i| {
            let c = sample(stops, i as f32 / (N - 1) as f32);
            let a = c.a.clamp(0.0, 1.0);
            [c.r * a, c.g * a, c.b * a, a].map(|v| (v * 255.0 + 0.5) as u32)
        })
        .collect();
    let dw = dst.width() as usize;
    let m = mask.data();
    let (x0u, x1u) = (x0 as usize, x1 as usize);
    par_rows(
        dst.data_mut(),
        dw * 4,
        y0 as usize..y1 as usize,
        |yy, row| {
            let y = yy - y0 as usize;
            let py = yy as f32 + 0.5;
            // Gradient-space coordinates of the first pixel centre and their step along x.
            let (mut gx, mut gy) = (
                inv.sx * (x0 as f32 + 0.5) + inv.kx * py + inv.tx,
                inv.ky * (x0 as f32 + 0.5) + inv.sy * py + inv.ty,
            );
            let (sx, sy) = (inv.sx, inv.ky);
            let row = &mut row[x0u * 4..x1u * 4];
            let mrow = &m[y * w as usize..(y + 1) * w as usize];
            if !radial && inv.sx == 0.0 {
                // The parameter does not change along the row (a vertical gradient): one colour
                // for the row, and a branch-free loop (coverage 0 leaves the pixel as it was).
                let s = lut[((gx.clamp(0.0, 1.0) * (N - 1) as f32) + 0.5) as usize];
                if mrow.iter().fold(255u8, |m, &v| m & v) == 255 {
                    // Fully covered (the inside of a shade): one colour over the whole row.
                    over_solid(row, s.map(|v| v as u8));
                    return;
                }
                for (d, &cov) in row.chunks_exact_mut(4).zip(mrow) {
                    over_covered(d, s, u32::from(cov));
                }
                return;
            }
            for (d, &cov) in row.chunks_exact_mut(4).zip(mrow) {
                if cov != 0 {
                    let p = if radial {
                        (gx * gx + gy * gy).sqrt()
                    } else {
                        gx
                    };
                    let s = lut[((p.clamp(0.0, 1.0) * (N - 1) as f32) + 0.5) as usize];
                    over_covered(d, s, u32::from(cov));
                }
                gx += sx;
                gy += sy;
            }
        },
    );
    super::pool::give(mask.take());
    Some(())
}

/// Source-over of one premultiplied pixel `s` at coverage `k` (0–255) onto `d`: the alpha
/// channel is weighted like the colours, `d = s·k + d·(1 − sa·k)`.
#[inline(always)]
fn over_covered(d: &mut [u8], s: [u32; 4], k: u32) {
    let inv = 255 - div255(s[3] * k);
    for c in 0..4 {
        d[c] = (div255(s[c] * k) + div255(u32::from(d[c]) * inv)).min(255) as u8;
    }
}

/// Source-over of one premultiplied colour `s` at full coverage onto every pixel of `row`:
/// the same arithmetic as the per-pixel loops (`s + div255(d · (255 − sa))`, which cannot
/// exceed 255 for valid premultiplied pixels, so a saturating add), written in 16-bit lanes
/// with no per-pixel branch so it vectorises.
fn over_solid(row: &mut [u8], s: [u8; 4]) {
    let inv = 255 - u16::from(s[3]);
    let lane = |d: &mut u8, s: u8| {
        let v = u16::from(*d) * inv + 128;
        *d = s.saturating_add(((v + (v >> 8)) >> 8) as u8);
    };
    // Sixteen bytes (four pixels) at a time against the colour repeated four times, so the
    // loop is flat and vectorises.
    let s16: [u8; 16] = std::array::from_fn(|i| s[i % 4]);
    let mut chunks = row.chunks_exact_mut(16);
    for c in &mut chunks {
        for (d, &s) in c.iter_mut().zip(&s16) {
            lane(d, s);
        }
    }
    for (d, &s) in chunks.into_remainder().iter_mut().zip(s16.iter().cycle()) {
        lane(d, s);
    }
}

/// Colour at `p` in `0..=1` between sorted stops (padded at the ends).
fn sample(stops: &[(f32, crate::tree::Color)], p: f32) -> crate::tree::Color {
    let first = stops[0];
    if p <= first.0 {
        return first.1;
    }
    for w in stops.windows(2) {
        let ((p0, c0), (p1, c1)) = (w[0], w[1]);
        if p <= p1 {
            let f = if p1 > p0 { (p - p0) / (p1 - p0) } else { 1.0 };
            return crate::tree::Color {
                r: c0.r + (c1.r - c0.r) * f,
                g: c0.g + (c1.g - c0.g) * f,
                b: c0.b + (c1.b - c0.b) * f,
                a: c0.a + (c1.a - c0.a) * f,
            };
        }
    }
    stops[stops.len() - 1].1
}

/// Source-over of a solid `color` with per-pixel coverage `alpha` (a `w`-wide plane the size
/// of `dst`) placed at `(dx, dy)`: a shadow without building a shadow pixmap.
pub fn blend_color(
    dst: &mut Pixmap,
    alpha: &[u8],
    w: u32,
    dx: i32,
    dy: i32,
    color: crate::tree::Color,
) {
    let c = super::sk_color(color).premultiply().to_color_u8();
    let cc = [
        u32::from(c.red()),
        u32::from(c.green()),
        u32::from(c.blue()),
        u32::from(c.alpha()),
    ];
    let (dw, dh) = (dst.width() as i32, dst.height() as i32);
    let (aw, ah) = (w as i32, (alpha.len() / w.max(1) as usize) as i32);
    let (x0, y0) = (dx.max(0), dy.max(0));
    let (x1, y1) = ((dx + aw).min(dw), (dy + ah).min(dh));
    if x1 <= x0 || y1 <= y0 {
        return;
    }
    par_rows(
        dst.data_mut(),
        dw as usize * 4,
        y0 as usize..y1 as usize,
        |y, drow| {
            let y = y as i32;
            let arow =
                &alpha[((y - dy) * aw + (x0 - dx)) as usize..((y - dy) * aw + (x1 - dx)) as usize];
            let drow = &mut drow[(x0 * 4) as usize..(x1 * 4) as usize];
            for (d, &a) in drow.chunks_exact_mut(4).zip(arow) {
                if a == 0 {
                    continue;
                }
                over_covered(d, cc, u32::from(a));
            }
        },
    );
}
