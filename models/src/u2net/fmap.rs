//! Feature maps in channels-last order, the buffers they live in, and the ways a
//! convolution reads its input: as stored, upsampled or pooled on the fly, several maps side
//! by side (so concatenation, upsampling and pooling never make a copy of their own).

use super::simd::Simd;

/// Channels are read 16 at a time (one AVX-512 register; two AVX2 ones).
pub(crate) type Lanes = [f32; 16];

/// A feature map, `h x w` pixels of `c` channels, stored pixel by pixel (NHWC): the `c`
/// values of a pixel are contiguous. `data` may be longer than `h * w * c` (a reused buffer).
#[derive(Debug)]
pub(crate) struct Fm {
    pub c: usize,
    pub h: usize,
    pub w: usize,
    data: Vec<f32>,
}

impl Fm {
    /// The map's values, `h * w * c` of them.
    pub(crate) fn data(&self) -> &[f32] {
        &self.data[..self.h * self.w * self.c]
    }

    /// The map's values, to be overwritten.
    pub(crate) fn data_mut(&mut self) -> &mut [f32] {
        let len = self.h * self.w * self.c;
        &mut self.data[..len]
    }

    /// Whether `other` has the same height and width.
    pub(crate) fn same_size(&self, other: &Fm) -> bool {
        (self.h, self.w) == (other.h, other.w)
    }
}

/// The buffers of one forward pass. A map given back is handed out again for the next map
/// that fits, so a pass allocates only as many buffers as it ever holds at once, and no
/// buffer is zeroed: every producer writes every value of its map.
#[derive(Debug, Default)]
pub(crate) struct Buffers {
    free: Vec<Vec<f32>>,
}

impl Buffers {
    /// A map of `c` channels at `h x w` with unspecified contents.
    pub(crate) fn take(&mut self, c: usize, h: usize, w: usize) -> Fm {
        let len = c * h * w;
        // The smallest free buffer that is long enough and at most twice as long: a small
        // map never takes a full-resolution buffer a later full-resolution map will need
        // (that would make the pass hold three 26 MB buffers instead of two).
        let fit = (0..self.free.len())
            .filter(|&i| (len..=2 * len).contains(&self.free[i].len()))
            .min_by_key(|&i| self.free[i].len());
        let data = match fit {
            Some(i) if self.free[i].len() >= len => self.free.swap_remove(i),
            // A new buffer: zeroed by the allocator (fresh pages from the kernel), not by a
            // pass over it; a smaller free buffer is left for a smaller map.
            _ => vec![0.0; len],
        };
        Fm { c, h, w, data }
    }

    /// Gives a map's buffer back for reuse.
    pub(crate) fn give(&mut self, fm: Fm) {
        self.free.push(fm.data);
    }
}

/// Where a convolution reads part of its input channels, at the convolution's resolution.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Source<'a> {
    /// The map as it is.
    Plain(&'a Fm),
    /// The map resized bilinearly to the convolution's size (`align_corners = false`, as
    /// PyTorch's `upsample(..., mode='bilinear')` and candle's `upsample_bilinear2d`).
    Up(&'a Fm),
    /// 2x2 max pooling of the map, stride 2, output size rounded up (`ceil_mode=True`). The
    /// map must hold no negative value (it comes out of a ReLU), so the missing part of an
    /// edge window counts as zero.
    Pool(&'a Fm),
}

impl Source<'_> {
    pub(crate) fn channels(&self) -> usize {
        match self {
            Source::Plain(m) | Source::Up(m) | Source::Pool(m) => m.c,
        }
    }

    /// Channels `cb..cb + 16` of pixel `(y, x)` of the source seen at `h x w`; zeros outside
    /// the picture (the convolution's zero padding).
    #[inline(always)]
    pub(crate) fn load(&self, h: usize, w: usize, y: isize, x: isize, cb: usize) -> Lanes {
        if y < 0 || x < 0 || y as usize >= h || x as usize >= w {
            return [0.0; 16];
        }
        let (y, x) = (y as usize, x as usize);
        match self {
            Source::Plain(m) => lanes(m, y, x, cb),
            Source::Up(m) => {
                let (y0, y1, fy) = resample(m.h, h, y);
                let (x0, x1, fx) = resample(m.w, w, x);
                let (a, b) = (lanes(m, y0, x0, cb), lanes(m, y0, x1, cb));
                let (c, d) = (lanes(m, y1, x0, cb), lanes(m, y1, x1, cb));
                let mut out = [0.0; 16];
                for l in 0..16 {
                    let top = a[l] * (1.0 - fx) + b[l] * fx;
                    let bottom = c[l] * (1.0 - fx) + d[l] * fx;
                    out[l] = top * (1.0 - fy) + bottom * fy;
                }
                out
            }
            Source::Pool(m) => {
                let mut out = lanes(m, 2 * y, 2 * x, cb);
                for (yy, xx) in [
                    (2 * y, 2 * x + 1),
                    (2 * y + 1, 2 * x),
                    (2 * y + 1, 2 * x + 1),
                ] {
                    if yy < m.h && xx < m.w {
                        let v = lanes(m, yy, xx, cb);
                        for l in 0..16 {
                            out[l] = out[l].max(v[l]);
                        }
                    }
                }
                out
            }
        }
    }
}

impl Source<'_> {
    /// The source seen at `h x w`, rows `y0 .. y0 + rows` and columns `-1 .. cols - 1`, into
    /// `out` (`rows * cols * channels` values, pixel by pixel), zeros outside the picture:
    /// what a band of a convolution reads, computed once instead of once per read (an
    /// upsampled value is read by up to nine output tiles' windows). Inlined into the
    /// convolution's instruction-set-specific code (see `simd`).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn fill<S: Simd>(
        &self,
        simd: S,
        h: usize,
        w: usize,
        y0: isize,
        rows: usize,
        cols: usize,
        out: &mut [f32],
    ) {
        let c = self.channels();
        for (r, row) in out.chunks_exact_mut(cols * c).take(rows).enumerate() {
            let y = y0 + r as isize;
            if y < 0 || y as usize >= h {
                row.fill(0.0);
                continue;
            }
            let y = y as usize;
            // Pixel `q` of the row is column `q - 1`; zeros left and right of the picture.
            row[..c].fill(0.0);
            let inside = (cols - 1).min(w);
            row[(inside + 1) * c..].fill(0.0);
            let row = &mut row[c..(inside + 1) * c];
            match self {
                Source::Plain(m) => {
                    let at = y * m.w * c;
                    row.copy_from_slice(&m.data[at..at + inside * c]);
                }
                Source::Up(m) => {
                    let (y0, y1, fy) = resample(m.h, h, y);
                    let (r0, r1) = (&m.data[y0 * m.w * c..], &m.data[y1 * m.w * c..]);
                    for (x, px) in row.chunks_exact_mut(c).enumerate() {
                        let (x0, x1, fx) = resample(m.w, w, x);
                        // Weights of the four neighbours.
                        let w00 = simd.splat((1.0 - fx) * (1.0 - fy));
                        let w01 = simd.splat(fx * (1.0 - fy));
                        let w10 = simd.splat((1.0 - fx) * fy);
                        let w11 = simd.splat(fx * fy);
                        for k in (0..c).step_by(16) {
                            let top = simd.add(
                                simd.mul(simd.load(&r0[x0 * c + k..]), w00),
                                simd.mul(simd.load(&r0[x1 * c + k..]), w01),
                            );
                            let bottom = simd.add(
                                simd.mul(simd.load(&r1[x0 * c + k..]), w10),
                                simd.mul(simd.load(&r1[x1 * c + k..]), w11),
                            );
                            simd.store(simd.add(top, bottom), &mut px[k..]);
                        }
                    }
                }
                Source::Pool(m) => {
                    let rows = if 2 * y + 1 < m.h { 2 } else { 1 };
                    for (x, px) in row.chunks_exact_mut(c).enumerate() {
                        let cols = if 2 * x + 1 < m.w { 2 } else { 1 };
                        for k in (0..c).step_by(16) {
                            let mut best = simd.splat(0.0);
                            for yy in 2 * y..2 * y + rows {
                                for xx in 2 * x..2 * x + cols {
                                    let v = simd.load(&m.data[(yy * m.w + xx) * c + k..]);
                                    best = simd.max(best, v);
                                }
                            }
                            simd.store(best, &mut px[k..]);
                        }
                    }
                }
            }
        }
    }
}

/// Channels `cb..cb + 16` of pixel `(y, x)`.
#[inline(always)]
fn lanes(m: &Fm, y: usize, x: usize, cb: usize) -> Lanes {
    let at = (y * m.w + x) * m.c + cb;
    let mut out = [0.0; 16];
    out.copy_from_slice(&m.data[at..at + 16]);
    out
}

/// The two source rows (or columns) and the weight of the second for output row `i` of
/// `to` rows made from `from` rows, as candle's `upsample_bilinear2d` computes them
/// (`align_corners = false`, source index clamped at zero).
#[inline(always)]
pub(crate) fn resample(from: usize, to: usize, i: usize) -> (usize, usize, f32) {
    let scale = from as f64 / to as f64;
    let src = (scale * (i as f64 + 0.5) - 0.5).max(0.0);
    let i0 = (src.floor() as usize).min(from - 1);
    let i1 = (i0 + 1).min(from - 1);
    (i0, i1, (src - i0 as f64).clamp(0.0, 1.0) as f32)
}

/// A one-channel map resized bilinearly to `h x w` (the side outputs to the input size).
pub(crate) fn upsample_plane(m: &Fm, h: usize, w: usize, out: &mut [f32]) {
    debug_assert_eq!(m.c, 1);
    let src = m.data();
    if (m.h, m.w) == (h, w) {
        out[..h * w].copy_from_slice(src);
        return;
    }
    let xs: Vec<(usize, usize, f32)> = (0..w).map(|x| resample(m.w, w, x)).collect();
    for (y, row) in out.chunks_exact_mut(w).take(h).enumerate() {
        let (y0, y1, fy) = resample(m.h, h, y);
        let (r0, r1) = (
            &src[y0 * m.w..(y0 + 1) * m.w],
            &src[y1 * m.w..(y1 + 1) * m.w],
        );
        for (o, &(x0, x1, fx)) in row.iter_mut().zip(&xs) {
            let top = r0[x0] * (1.0 - fx) + r0[x1] * fx;
            let bottom = r1[x0] * (1.0 - fx) + r1[x1] * fx;
            *o = top * (1.0 - fy) + bottom * fy;
        }
    }
}
