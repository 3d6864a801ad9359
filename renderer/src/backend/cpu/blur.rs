//! Gaussian blur (three box blurs) and alpha dilation / erosion for shadows.
//!
//! Every loop here checks its [`Deadline`] once per row and returns early past it (the
//! caller then stops the render), so no effect outlives its render's budget by more than
//! one row's work.

use crate::budget::Deadline;

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
pub fn gaussian_fast(
    data: &mut [u8],
    w: usize,
    h: usize,
    ch: usize,
    sigma: f32,
    deadline: &Deadline,
) {
    let plan = passes(sigma, w, h);
    let f = plan.factor;
    if f == 1 {
        boxes(data, w, h, ch, &plan.radii, deadline);
        return;
    }
    let (sw, sh) = (w.div_ceil(f), h.div_ceil(f));
    let mut acc = vec![0u32; sw * sh * ch];
    for y in 0..h {
        if deadline.passed() {
            return;
        }
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
    boxes(&mut small, sw, sh, ch, &plan.radii, deadline);
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
        if deadline.passed() {
            return;
        }
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
    boxes(data, w, h, ch, &box_radii(sigma), &Deadline::NONE);
}

/// Box blurs of the given radii, each horizontal then vertical, zero beyond the edges.
fn boxes(data: &mut [u8], w: usize, h: usize, ch: usize, radii: &[usize], deadline: &Deadline) {
    if radii.is_empty() || w == 0 || h == 0 {
        return;
    }
    let mut tmp = vec![0u8; data.len()];
    for &r in radii {
        box_h(data, &mut tmp, w, h, ch, r, deadline);
        box_v(&tmp, data, w, h, ch, r, deadline);
    }
}

fn box_h(src: &[u8], dst: &mut [u8], w: usize, h: usize, ch: usize, r: usize, deadline: &Deadline) {
    let div = (2 * r + 1) as u32;
    let half = div / 2;
    for y in 0..h {
        if deadline.passed() {
            return;
        }
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

fn box_v(src: &[u8], dst: &mut [u8], w: usize, h: usize, ch: usize, r: usize, deadline: &Deadline) {
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
        if deadline.passed() {
            return;
        }
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
/// element, separable max / min filter). Beyond the plane counts as empty (alpha 0) both
/// ways: a shrunk shape loses what is within `|d|` of the edge.
///
/// Each pass is van Herk / Gil-Werman's: the line is padded with `|d|` empty pixels on each
/// side and cut into blocks of the window's length; a running max (min) from each block's
/// start and one from its end give any window as the max of two values. Three comparisons
/// a pixel whatever the radius (the direct filter's `2|d| + 1` made a 500 px shadow spread
/// take minutes at 4K).
pub fn spread(alpha: &mut [u8], w: usize, h: usize, d: f32, deadline: &Deadline) {
    // A window wider than the plane gives what a window of the plane's size gives (grow:
    // the line's max; shrink: empty), so huge spreads cost no more than large ones.
    let r = (d.abs().round() as usize).min(w.max(h));
    if r == 0 || w == 0 || h == 0 {
        return;
    }
    let pick: fn(u8, u8) -> u8 = if d > 0.0 { u8::max } else { u8::min };
    let mut line = Filter1d::new(w.max(h), r, pick);
    let rows = |plane: &mut [u8], w: usize, h: usize, line: &mut Filter1d| {
        for y in 0..h {
            if deadline.passed() {
                return;
            }
            let row = &mut plane[y * w..(y + 1) * w];
            line.run(row.iter().copied(), w);
            row.copy_from_slice(&line.out[..w]);
        }
    };
    rows(alpha, w, h, &mut line);
    // Columns as rows of the transposed plane: reading a column of a wide plane touches a
    // cache line per pixel.
    let mut t = vec![0u8; w * h];
    transpose(alpha, &mut t, w, h);
    rows(&mut t, h, w, &mut line);
    if deadline.passed() {
        return;
    }
    transpose(&t, alpha, h, w);
}

/// `dst` (`h` × `w`) = `src` (`w` × `h`) transposed, in cache-sized tiles.
fn transpose(src: &[u8], dst: &mut [u8], w: usize, h: usize) {
    const TILE: usize = 64;
    for y0 in (0..h).step_by(TILE) {
        for x0 in (0..w).step_by(TILE) {
            for y in y0..(y0 + TILE).min(h) {
                for x in x0..(x0 + TILE).min(w) {
                    dst[x * h + y] = src[y * w + x];
                }
            }
        }
    }
}

/// Scratch lines of one [`spread`] pass, reused line after line.
struct Filter1d {
    r: usize,
    pick: fn(u8, u8) -> u8,
    padded: Vec<u8>,
    from_start: Vec<u8>,
    to_end: Vec<u8>,
    out: Vec<u8>,
}

impl Filter1d {
    fn new(longest: usize, r: usize, pick: fn(u8, u8) -> u8) -> Self {
        let m = longest + 2 * r;
        Self {
            r,
            pick,
            padded: vec![0; m],
            from_start: vec![0; m],
            to_end: vec![0; m],
            out: vec![0; longest],
        }
    }

    /// Filters the `n` values of `line` into `self.out[..n]`.
    fn run(&mut self, line: impl Iterator<Item = u8>, n: usize) {
        let (r, pick) = (self.r, self.pick);
        let k = 2 * r + 1;
        let m = n + 2 * r;
        let p = &mut self.padded[..m];
        p.fill(0);
        for (dst, v) in p[r..r + n].iter_mut().zip(line) {
            *dst = v;
        }
        let (g, hh) = (&mut self.from_start[..m], &mut self.to_end[..m]);
        for i in 0..m {
            g[i] = if i % k == 0 {
                p[i]
            } else {
                pick(g[i - 1], p[i])
            };
        }
        for i in (0..m).rev() {
            hh[i] = if i % k == k - 1 || i == m - 1 {
                p[i]
            } else {
                pick(hh[i + 1], p[i])
            };
        }
        // Output x's window is padded[x ..= x + 2r].
        for (x, o) in self.out[..n].iter_mut().enumerate() {
            *o = pick(hh[x], g[x + k - 1]);
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

    /// The direct max / min filter [`spread`] replaced, as the reference.
    fn spread_direct(alpha: &mut [u8], w: usize, h: usize, d: f32) {
        let r = d.abs().round() as usize;
        let grow = d > 0.0;
        let pick = |a: u8, b: u8| if grow { a.max(b) } else { a.min(b) };
        let mut tmp = vec![0u8; alpha.len()];
        for y in 0..h {
            for x in 0..w {
                let (lo, hi) = (x.saturating_sub(r), (x + r).min(w - 1));
                let mut v = if !grow && (x < r || x + r >= w) {
                    0
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
            let (lo, hi) = (y.saturating_sub(r), (y + r).min(h - 1));
            for x in 0..w {
                let mut v = if !grow && (y < r || y + r >= h) {
                    0
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

    #[test]
    fn spread_matches_the_direct_filter_for_every_radius_and_both_directions() {
        // A pseudo-random plane with shapes and noise, odd sizes so blocks do not align.
        let (w, h) = (37, 23);
        let mut seed = 12345u32;
        let plane: Vec<u8> = (0..w * h)
            .map(|i| {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                if (i % w) > 10 && (i % w) < 25 && (i / w) > 5 && (i / w) < 17 {
                    255
                } else {
                    (seed >> 24) as u8 / 4
                }
            })
            .collect();
        for d in [
            1.0f32, 2.0, 3.0, 5.0, 11.0, 18.0, 40.0, -1.0, -2.0, -4.0, -9.0, -12.0, -30.0,
        ] {
            let (mut fast, mut direct) = (plane.clone(), plane.clone());
            spread(&mut fast, w, h, d, &Deadline::NONE);
            spread_direct(&mut direct, w, h, d);
            assert_eq!(fast, direct, "spread {d}");
        }
    }

    #[test]
    fn a_passed_deadline_stops_the_loops_before_they_change_anything() {
        let (w, h) = (64, 64);
        let mut a = vec![0u8; w * h];
        a[32 * w + 32] = 255;
        let before = a.clone();
        let past = Deadline::at(std::time::Instant::now());
        spread(&mut a, w, h, 10.0, &past);
        gaussian_fast(&mut a, w, h, 1, 30.0, &past);
        assert_eq!(a, before);
    }
}
