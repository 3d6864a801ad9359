//! Gaussian blur (three box blurs) and alpha dilation / erosion for shadows.

/// Box widths for three passes approximating a Gaussian of `sigma` (Kovesi's method).
fn box_sizes(sigma: f32) -> [usize; 3] {
    let n = 3.0;
    let w_ideal = (12.0 * sigma * sigma / n + 1.0).sqrt();
    let mut wl = w_ideal.floor() as i64;
    if wl % 2 == 0 {
        wl -= 1;
    }
    let wl = wl.max(1);
    let wu = wl + 2;
    let m_ideal = (12.0 * sigma * sigma - n * (wl * wl) as f32 - 4.0 * n * wl as f32 - 3.0 * n)
        / (-4.0 * wl as f32 - 4.0);
    let m = m_ideal.round() as i64;
    let mut out = [0usize; 3];
    for (i, o) in out.iter_mut().enumerate() {
        *o = if (i as i64) < m {
            wl as usize
        } else {
            wu as usize
        };
    }
    out
}

/// How [`gaussian_fast`] blurs a `w` × `h` plane: the factor it is box-averaged down by
/// (1: not at all) and the radii of the box blurs at that scale (each a horizontal then a
/// vertical pass). The GPU backend's blur passes follow the same plan.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Passes {
    pub factor: usize,
    pub radii: Vec<usize>,
}

/// The passes [`gaussian_fast`] runs for `sigma` on a `w` × `h` plane.
pub(crate) fn passes(sigma: f32, w: usize, h: usize) -> Passes {
    let mut f = 1usize;
    while sigma / (f as f32 * 2.0) >= 2.5 && f < 16 {
        f *= 2;
    }
    if f == 1 || w < 2 * f || h < 2 * f {
        return Passes {
            factor: 1,
            radii: box_radii(sigma),
        };
    }
    // Box averaging already contributes variance (f² - 1) / 12 in full-size pixels.
    let rest = (sigma * sigma - ((f * f) as f32 - 1.0) / 12.0)
        .max(0.0)
        .sqrt();
    Passes {
        factor: f,
        radii: box_radii(rest / f as f32),
    }
}

/// Radii of the three box blurs approximating a Gaussian of `sigma` (none below 0.3).
fn box_radii(sigma: f32) -> Vec<usize> {
    if sigma < 0.3 {
        return Vec::new();
    }
    box_sizes(sigma)
        .into_iter()
        .map(|s| s / 2)
        .filter(|&r| r > 0)
        .collect()
}

/// Gaussian blur that stays fast for large radii: for `sigma` ≥ 5 the plane is box-averaged
/// down by a power of two (up to 16), blurred there, and bilinearly scaled back. Shadows and
/// frosted glass are smooth, so the difference is invisible, and a 4K background blur costs
/// tens of milliseconds instead of hundreds.
pub fn gaussian_fast(data: &mut [u8], w: usize, h: usize, ch: usize, sigma: f32) {
    let plan = passes(sigma, w, h);
    let f = plan.factor;
    if f == 1 {
        boxes(data, w, h, ch, &plan.radii);
        return;
    }
    let (sw, sh) = (w.div_ceil(f), h.div_ceil(f));
    let mut acc = vec![0u32; sw * sh * ch];
    for y in 0..h {
        let row = &data[y * w * ch..(y + 1) * w * ch];
        let srow = &mut acc[(y / f) * sw * ch..(y / f + 1) * sw * ch];
        for (block, out) in row.chunks(f * ch).zip(srow.chunks_exact_mut(ch)) {
            for px in block.chunks_exact(ch) {
                for (o, v) in out.iter_mut().zip(px) {
                    *o += u32::from(*v);
                }
            }
        }
    }
    let mut small = vec![0u8; sw * sh * ch];
    for sy in 0..sh {
        let bh = (h - sy * f).min(f) as u32;
        for sx in 0..sw {
            let n = bh * (w - sx * f).min(f) as u32;
            for c in 0..ch {
                let i = (sy * sw + sx) * ch + c;
                small[i] = ((acc[i] + n / 2) / n) as u8;
            }
        }
    }
    boxes(&mut small, sw, sh, ch, &plan.radii);
    // Bilinear upsampling with aligned sample centres: rows first into a buffer, then
    // columns, 8-bit weights.
    let taps = |n: usize, sn: usize| -> Vec<(usize, usize, u32)> {
        (0..n)
            .map(|i| {
                let p = ((i as f32 + 0.5) / f as f32 - 0.5).clamp(0.0, (sn - 1) as f32);
                let i0 = p.floor() as usize;
                let i1 = (i0 + 1).min(sn - 1);
                (i0, i1, ((p - i0 as f32) * 256.0) as u32)
            })
            .collect()
    };
    let xs: Vec<(usize, usize, u32)> = taps(w, sw)
        .into_iter()
        .map(|(a, b, wx)| (a * ch, b * ch, wx))
        .collect();
    let ys = taps(h, sh);
    let mut rowbuf = vec![0u32; sw * ch];
    for (y, &(y0, y1, wy)) in ys.iter().enumerate() {
        let r0 = &small[y0 * sw * ch..(y0 + 1) * sw * ch];
        let r1 = &small[y1 * sw * ch..(y1 + 1) * sw * ch];
        for ((o, a), b) in rowbuf.iter_mut().zip(r0).zip(r1) {
            *o = u32::from(*a) * (256 - wy) + u32::from(*b) * wy;
        }
        let out = &mut data[y * w * ch..(y + 1) * w * ch];
        for (px, &(x0, x1, wx)) in out.chunks_exact_mut(ch).zip(&xs) {
            let (a, b) = (&rowbuf[x0..x0 + ch], &rowbuf[x1..x1 + ch]);
            for c in 0..ch {
                px[c] = ((a[c] * (256 - wx) + b[c] * wx + 32768) >> 16) as u8;
            }
        }
    }
}

/// Blurs `ch`-channel interleaved u8 data of `w` × `h` in place.
#[cfg(test)]
fn gaussian(data: &mut [u8], w: usize, h: usize, ch: usize, sigma: f32) {
    boxes(data, w, h, ch, &box_radii(sigma));
}

/// Box blurs of the given radii, each horizontal then vertical, zero beyond the edges.
fn boxes(data: &mut [u8], w: usize, h: usize, ch: usize, radii: &[usize]) {
    if radii.is_empty() || w == 0 || h == 0 {
        return;
    }
    let mut tmp = vec![0u8; data.len()];
    for &r in radii {
        box_h(data, &mut tmp, w, h, ch, r);
        box_v(&tmp, data, w, h, ch, r);
    }
}

fn box_h(src: &[u8], dst: &mut [u8], w: usize, h: usize, ch: usize, r: usize) {
    let div = (2 * r + 1) as u32;
    let half = div / 2;
    for y in 0..h {
        let row = &src[y * w * ch..(y + 1) * w * ch];
        let out = &mut dst[y * w * ch..(y + 1) * w * ch];
        for c in 0..ch {
            let px = |x: isize| -> u32 {
                if x < 0 || x >= w as isize {
                    0
                } else {
                    u32::from(row[x as usize * ch + c])
                }
            };
            let mut acc: u32 = (0..=r as isize).map(px).sum();
            for x in 0..w {
                out[x * ch + c] = ((acc + half) / div) as u8;
                let add = x as isize + r as isize + 1;
                let sub = x as isize - r as isize;
                acc = acc + px(add) - px(sub);
            }
        }
    }
}

fn box_v(src: &[u8], dst: &mut [u8], w: usize, h: usize, ch: usize, r: usize) {
    let div = (2 * r + 1) as u32;
    let half = div / 2;
    let stride = w * ch;
    let mut acc = vec![0u32; stride];
    for y in 0..=r.min(h.saturating_sub(1)) {
        for (a, v) in acc.iter_mut().zip(&src[y * stride..(y + 1) * stride]) {
            *a += u32::from(*v);
        }
    }
    for y in 0..h {
        let out = &mut dst[y * stride..(y + 1) * stride];
        for (o, a) in out.iter_mut().zip(&acc) {
            *o = ((a + half) / div) as u8;
        }
        let add = y + r + 1;
        if add < h {
            for (a, v) in acc.iter_mut().zip(&src[add * stride..(add + 1) * stride]) {
                *a += u32::from(*v);
            }
        }
        if y >= r {
            let sub = y - r;
            for (a, v) in acc.iter_mut().zip(&src[sub * stride..(sub + 1) * stride]) {
                *a -= u32::from(*v);
            }
        }
    }
}

/// Grows (`d > 0`) or shrinks (`d < 0`) an alpha plane by `|d|` pixels (square structuring
/// element, separable max / min filter).
pub fn spread(alpha: &mut [u8], w: usize, h: usize, d: f32) {
    let r = d.abs().round() as usize;
    if r == 0 || w == 0 || h == 0 {
        return;
    }
    let grow = d > 0.0;
    let pick = |a: u8, b: u8| if grow { a.max(b) } else { a.min(b) };
    // Beyond the plane counts as empty (alpha 0) for both directions.
    let edge = 0u8;
    let mut tmp = vec![0u8; alpha.len()];
    for y in 0..h {
        for x in 0..w {
            let lo = x.saturating_sub(r);
            let hi = (x + r).min(w - 1);
            let mut v = if !grow && (x < r || x + r >= w) {
                edge
            } else {
                alpha[y * w + x]
            };
            for k in lo..=hi {
                v = pick(v, alpha[y * w + k]);
            }
            tmp[y * w + x] = v;
        }
    }
    for y in 0..h {
        let lo = y.saturating_sub(r);
        let hi = (y + r).min(h - 1);
        for x in 0..w {
            let mut v = if !grow && (y < r || y + r >= h) {
                edge
            } else {
                tmp[y * w + x]
            };
            for k in lo..=hi {
                v = pick(v, tmp[k * w + x]);
            }
            alpha[y * w + x] = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blur_keeps_total_roughly() {
        let (w, h) = (64, 64);
        let mut a = vec![0u8; w * h];
        for y in 24..40 {
            for x in 24..40 {
                a[y * w + x] = 255;
            }
        }
        let before: u32 = a.iter().map(|&v| u32::from(v)).sum();
        gaussian(&mut a, w, h, 1, 4.0);
        let after: u32 = a.iter().map(|&v| u32::from(v)).sum();
        assert!((before as f32 - after as f32).abs() / (before as f32) < 0.02);
        assert!(a[32 * w + 32] > 200 && a[10 * w + 10] == 0);
    }
}
