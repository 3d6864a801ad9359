//! U²-Net's convolutions: 3x3 with "same" zero padding, stride 1, a bias and an optional
//! ReLU and residual, on channels-last maps read through [`Source`]s.
//!
//! - **Undilated** (all but nine small ones, and 99.9 % of the arithmetic): Winograd's
//!   F(4x4, 3x3) (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks",
//!   2016). Each 6x6 input tile is transformed (`Bᵀ d B`), multiplied element by element
//!   with the transformed weights (`G g Gᵀ`, computed once at load) and summed over input
//!   channels, which for the 36 positions of the tile is 36 matrix products over a block of
//!   tiles ([`kernel::matmul`]); the inverse transform (`Aᵀ m A`) gives a 4x4 output tile.
//!   That is 36 multiplications per 16 outputs and input channel instead of 144: 4x fewer.
//! - **Dilated** (the RSU-4F blocks at 20x20 and 10x10 and the RSU bottoms at 10x10):
//!   the taps of a block of pixels are gathered into rows (im2col over a few hundred pixels)
//!   and multiplied the same way.
//!
//! Work is split into bands of output rows, one task per band on rayon's pool; each worker
//! thread keeps its scratch (transformed tiles, products) between calls, so a pass does not
//! allocate per layer.
//!
//! Numbers: Winograd F(4x4, 3x3) in f32 rounds differently from the direct sum; against
//! candle's `conv2d` the difference is a few 1e-6 relative (the test below), and the whole
//! network still matches ONNX Runtime within the pinned tolerances.

use std::cell::RefCell;

use rayon::prelude::*;

use super::fmap::{Fm, Source};
use super::kernel::{self, Isa, ROW_BLOCK};
#[cfg(target_arch = "x86_64")]
use super::simd::{Avx2, Avx512};
use super::simd::{Portable, Simd};

/// Tiles (Winograd) or pixels (im2col) per block of matrix rows: 16 tiles of 128 channels
/// keep the transformed inputs (36 x 16 x 128 floats, 295 KB) and products in L2, and one
/// position's rows (8 KB) beside its weights (32 KB) in L1. (32 measured the same within
/// noise, 64 slower.)
const BLOCK: usize = 16;

/// A 3x3 convolution with its weights in the form its algorithm wants.
#[derive(Debug, Clone)]
pub(crate) struct Conv3 {
    /// Input channels, a multiple of 16 (the first layer's 3 are padded with zeros).
    ci: usize,
    /// Input channels of the original layer.
    ci_real: usize,
    /// Output channels.
    co: usize,
    /// `co` rounded up to 16.
    co_pad: usize,
    dilation: usize,
    relu: bool,
    /// `co_pad` values.
    bias: Vec<f32>,
    /// Winograd: `[36][ci][co_pad]`; dilated: `[9 * ci][co_pad]` (tap-major rows).
    weight: Vec<f32>,
}

/// `G`, the weight transform of F(4x4, 3x3).
const G: [[f64; 3]; 6] = [
    [1.0 / 4.0, 0.0, 0.0],
    [-1.0 / 6.0, -1.0 / 6.0, -1.0 / 6.0],
    [-1.0 / 6.0, 1.0 / 6.0, -1.0 / 6.0],
    [1.0 / 24.0, 1.0 / 12.0, 1.0 / 6.0],
    [1.0 / 24.0, -1.0 / 12.0, 1.0 / 6.0],
    [0.0, 0.0, 1.0],
];

impl Conv3 {
    /// From a `[co, ci_real, 3, 3]` weight (row-major) and `co` biases; `ci` is `ci_real`
    /// rounded up to 16.
    pub(crate) fn new(
        weight: &[f32],
        bias: &[f32],
        (co, ci_real): (usize, usize),
        dilation: usize,
        relu: bool,
    ) -> Self {
        let ci = ci_real.div_ceil(16) * 16;
        let co_pad = co.div_ceil(16) * 16;
        let w = |o: usize, i: usize, ky: usize, kx: usize| {
            f64::from(weight[((o * ci_real + i) * 3 + ky) * 3 + kx])
        };
        let mut out = if dilation == 1 {
            vec![0f32; 36 * ci * co_pad]
        } else {
            vec![0f32; 9 * ci * co_pad]
        };
        for o in 0..co {
            for i in 0..ci_real {
                if dilation == 1 {
                    // U = G g Gᵀ.
                    for (a, ga) in G.iter().enumerate() {
                        for (b, gb) in G.iter().enumerate() {
                            let mut u = 0.0;
                            for (ky, gay) in ga.iter().enumerate() {
                                for (kx, gbx) in gb.iter().enumerate() {
                                    u += gay * w(o, i, ky, kx) * gbx;
                                }
                            }
                            out[((a * 6 + b) * ci + i) * co_pad + o] = u as f32;
                        }
                    }
                } else {
                    for tap in 0..9 {
                        out[(tap * ci + i) * co_pad + o] = w(o, i, tap / 3, tap % 3) as f32;
                    }
                }
            }
        }
        let mut b = vec![0f32; co_pad];
        b[..co].copy_from_slice(&bias[..co]);
        Conv3 {
            ci,
            ci_real,
            co,
            co_pad,
            dilation,
            relu,
            bias: b,
            weight: out,
        }
    }

    /// Output channels.
    pub(crate) fn out_channels(&self) -> usize {
        self.co
    }

    /// Floats held (for the memory account).
    pub(crate) fn floats(&self) -> usize {
        self.weight.len() + self.bias.len()
    }

    /// Multiply-adds of the direct convolution at `h x w` (for the network's FLOP count).
    pub(crate) fn macs(&self, h: usize, w: usize) -> u64 {
        (self.co * self.ci_real * 9 * h * w) as u64
    }

    /// Convolves `sources` (side by side, in order, at `out`'s size) into `out`; with `add`,
    /// the result (after the ReLU) is added to what `out` holds instead, which is how an RSU
    /// block's residual is added without a buffer of its own (each output value is read
    /// once, just before it is written).
    ///
    /// # Panics
    /// When the sources' channels do not add up to the layer's input channels, or `out` has
    /// the wrong number of channels (bugs in the network's wiring).
    pub(crate) fn run(&self, sources: &[Source<'_>], add: bool, out: &mut Fm) {
        self.run_on(Isa::detect(), sources, add, out);
    }

    /// [`Conv3::run`] with the kernels of `isa` (which this CPU must have: the x86 ones fall
    /// back to the portable code otherwise); the tests compare every instruction set.
    pub(crate) fn run_on(&self, isa: Isa, sources: &[Source<'_>], add: bool, out: &mut Fm) {
        let total: usize = sources.iter().map(Source::channels).sum();
        assert_eq!(total, self.ci, "input channels");
        assert!(sources.iter().all(|s| s.channels() % 16 == 0));
        assert_eq!(out.c, self.co, "output channels");
        let (h, w) = (out.h, out.w);
        if h == 0 || w == 0 {
            return;
        }
        // Bands of output rows: whole Winograd tile rows, at least BLOCK tiles per band.
        let (unit, per_row) = if self.dilation == 1 {
            (4, w.div_ceil(4))
        } else {
            (1, w)
        };
        let band_rows = unit * BLOCK.div_ceil(per_row).max(1);
        let row_len = w * self.co;
        out.data_mut()
            .par_chunks_mut(band_rows * row_len)
            .enumerate()
            .for_each(|(i, band)| {
                let y0 = i * band_rows;
                let rows = band.len() / row_len;
                SCRATCH.with(|s| {
                    let s = &mut s.borrow_mut();
                    let job = Band {
                        conv: self,
                        sources,
                        h,
                        w,
                        y0,
                        rows,
                        isa,
                        add,
                    };
                    if self.dilation == 1 {
                        job.winograd(band, s);
                    } else {
                        job.im2col(band, s);
                    }
                });
            });
    }
}

/// Per-thread scratch, kept between calls (a few MB per thread at most).
#[derive(Default)]
struct Scratch {
    /// Transformed input tiles `[36][rows][ci]`, or im2col rows `[rows][9 ci]`.
    input: Vec<f32>,
    /// Products `[36][rows][co_pad]`, or `[rows][co_pad]`.
    product: Vec<f32>,
    /// Windows of upsampled and pooled sources (see [`Source::fill`]).
    window: Vec<f32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// `v` grown to at least `len` (never shrunk, never cleared).
fn at_least(v: &mut Vec<f32>, len: usize) -> &mut [f32] {
    if v.len() < len {
        v.resize(len, 0.0);
    }
    &mut v[..len]
}

/// How a band reads one source: as stored, or from its window.
enum Reader<'a> {
    Plain(&'a Fm),
    /// Rows `y0 ..` and columns `-1 ..` of the source, `cols` pixels a row, `c` channels.
    Window {
        data: &'a [f32],
        y0: isize,
        cols: usize,
        c: usize,
    },
}

impl Reader<'_> {
    fn channels(&self) -> usize {
        match self {
            Reader::Plain(m) => m.c,
            Reader::Window { c, .. } => *c,
        }
    }

    /// Channels `cb..cb + 16` of pixel `(y, x)` of the `h x w` picture; zeros outside it.
    #[inline(always)]
    fn load<S: Simd>(&self, simd: S, h: usize, w: usize, y: isize, x: isize, cb: usize) -> S::V {
        match self {
            Reader::Plain(m) => {
                if y < 0 || x < 0 || y as usize >= h || x as usize >= w {
                    return simd.splat(0.0);
                }
                let at = (y as usize * m.w + x as usize) * m.c + cb;
                simd.load(&m.data()[at..])
            }
            Reader::Window { data, y0, cols, c } => {
                let at = ((y - y0) as usize * cols + (x + 1) as usize) * c + cb;
                simd.load(&data[at..])
            }
        }
    }
}

/// One band of output rows `y0 .. y0 + rows` of one convolution.
struct Band<'a> {
    conv: &'a Conv3,
    sources: &'a [Source<'a>],
    h: usize,
    w: usize,
    y0: usize,
    rows: usize,
    isa: Isa,
    /// Add to the band's values instead of overwriting them (see [`Conv3::run`]).
    add: bool,
}

impl Band<'_> {
    /// [`Band::winograd_body`] compiled for the CPU's instruction set.
    #[allow(
        unsafe_code,
        reason = "calling a #[target_feature] function with the token that proves the feature"
    )]
    fn winograd(&self, band: &mut [f32], s: &mut Scratch) {
        #[cfg(target_arch = "x86_64")]
        match self.isa {
            Isa::Avx512 => {
                if let Some(t) = Avx512::new() {
                    // SAFETY: the token exists, so the CPU has AVX-512F.
                    return unsafe { self.winograd_avx512(t, band, s) };
                }
            }
            Isa::Avx2 => {
                if let Some(t) = Avx2::new() {
                    // SAFETY: the token exists, so the CPU has AVX2 and FMA.
                    return unsafe { self.winograd_avx2(t, band, s) };
                }
            }
            Isa::Portable => {}
        }
        self.winograd_body(Portable, band, s);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn winograd_avx512(&self, t: Avx512, band: &mut [f32], s: &mut Scratch) {
        self.winograd_body(t, band, s);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn winograd_avx2(&self, t: Avx2, band: &mut [f32], s: &mut Scratch) {
        self.winograd_body(t, band, s);
    }

    #[inline(always)]
    fn winograd_body<S: Simd>(&self, simd: S, band: &mut [f32], s: &mut Scratch) {
        let c = self.conv;
        let (h, w) = (self.h, self.w);
        let tw = w.div_ceil(4);
        let (ty0, ty1) = (self.y0 / 4, (self.y0 + self.rows).div_ceil(4));
        // Upsampled and pooled sources: the band's window computed once (6 rows of pixels
        // for a band of one tile row), read without bounds checks.
        let (wy0, wrows, wcols) = (4 * ty0 as isize - 1, 4 * (ty1 - ty0) + 2, 4 * tw + 2);
        let len: usize = self
            .sources
            .iter()
            .filter(|src| !matches!(src, Source::Plain(_)))
            .map(|src| wrows * wcols * src.channels())
            .sum();
        let mut window = at_least(&mut s.window, len);
        let mut readers = Vec::with_capacity(self.sources.len());
        for src in self.sources {
            if let Source::Plain(m) = src {
                readers.push(Reader::Plain(m));
                continue;
            }
            let n = wrows * wcols * src.channels();
            let (mine, rest) = std::mem::take(&mut window).split_at_mut(n);
            window = rest;
            src.fill(simd, h, w, wy0, wrows, wcols, mine);
            readers.push(Reader::Window {
                data: mine,
                y0: wy0,
                cols: wcols,
                c: src.channels(),
            });
        }
        let zero = simd.splat(0.0);
        let tiles = (ty1 - ty0) * tw;
        for first in (0..tiles).step_by(BLOCK) {
            let count = BLOCK.min(tiles - first);
            let rows = count.div_ceil(ROW_BLOCK) * ROW_BLOCK;
            let input = at_least(&mut s.input, 36 * rows * c.ci);
            let product = at_least(&mut s.product, 36 * rows * c.co_pad);
            // Bᵀ d B of every tile and channel block, into [pos][tile][ci]: Bᵀ down each
            // column of the 6x6 tile (cols[q]), then along each row, stored as it comes.
            for t in 0..count {
                let (ty, tx) = (ty0 + (first + t) / tw, (first + t) % tw);
                let (y, x) = (4 * ty as isize - 1, 4 * tx as isize - 1);
                let mut c0 = 0;
                for src in &readers {
                    for cb in (0..src.channels()).step_by(16) {
                        let mut cols = [[zero; 6]; 6];
                        // No closures here: a closure does not inherit the enclosing
                        // function's target features, so its intrinsics would be calls.
                        for (q, col) in cols.iter_mut().enumerate() {
                            let xq = x + q as isize;
                            *col = bt(
                                simd,
                                [
                                    src.load(simd, h, w, y, xq, cb),
                                    src.load(simd, h, w, y + 1, xq, cb),
                                    src.load(simd, h, w, y + 2, xq, cb),
                                    src.load(simd, h, w, y + 3, xq, cb),
                                    src.load(simd, h, w, y + 4, xq, cb),
                                    src.load(simd, h, w, y + 5, xq, cb),
                                ],
                            );
                        }
                        for a in 0..6 {
                            let row = bt(
                                simd,
                                [
                                    cols[0][a], cols[1][a], cols[2][a], cols[3][a], cols[4][a],
                                    cols[5][a],
                                ],
                            );
                            for (b, v) in row.into_iter().enumerate() {
                                simd.store(
                                    v,
                                    &mut input[((a * 6 + b) * rows + t) * c.ci + c0 + cb..],
                                );
                            }
                        }
                    }
                    c0 += src.channels();
                }
            }
            // Padding rows: zeros (stale scratch could hold anything, even subnormals).
            for pos in 0..36 {
                input[(pos * rows + count) * c.ci..(pos + 1) * rows * c.ci].fill(0.0);
            }
            for pos in 0..36 {
                kernel::matmul(
                    self.isa,
                    rows,
                    c.ci,
                    &input[pos * rows * c.ci..(pos + 1) * rows * c.ci],
                    c.ci,
                    &c.weight[pos * c.ci * c.co_pad..(pos + 1) * c.ci * c.co_pad],
                    c.co_pad,
                    &mut product[pos * rows * c.co_pad..(pos + 1) * rows * c.co_pad],
                );
            }
            // Aᵀ m A (Aᵀ down each column of products, then along each output row), bias,
            // ReLU, residual, into the band.
            for t in 0..count {
                let (ty, tx) = (ty0 + (first + t) / tw, (first + t) % tw);
                for cb in (0..c.co_pad).step_by(16) {
                    // rows_t[r][q]: row r of Aᵀ applied down column q.
                    let mut rows_t = [[zero; 6]; 4];
                    for q in 0..6 {
                        let at = (q * rows + t) * c.co_pad + cb;
                        let step = 6 * rows * c.co_pad;
                        let col = at6(
                            simd,
                            [
                                simd.load(&product[at..]),
                                simd.load(&product[at + step..]),
                                simd.load(&product[at + 2 * step..]),
                                simd.load(&product[at + 3 * step..]),
                                simd.load(&product[at + 4 * step..]),
                                simd.load(&product[at + 5 * step..]),
                            ],
                        );
                        for (row, v) in rows_t.iter_mut().zip(col) {
                            row[q] = v;
                        }
                    }
                    let last = (self.y0 + self.rows - 4 * ty).min(4);
                    for (r, row) in rows_t.into_iter().take(last).enumerate() {
                        let y = 4 * ty + r;
                        let out = at6(simd, row);
                        for (q, v) in out.into_iter().enumerate() {
                            if 4 * tx + q < w {
                                self.store(simd, band, y, 4 * tx + q, cb, v);
                            }
                        }
                    }
                }
            }
        }
    }

    fn im2col(&self, band: &mut [f32], s: &mut Scratch) {
        let c = self.conv;
        let k = 9 * c.ci;
        let d = c.dilation as isize;
        let pixels = self.rows * self.w;
        for first in (0..pixels).step_by(BLOCK) {
            let count = BLOCK.min(pixels - first);
            let rows = count.div_ceil(ROW_BLOCK) * ROW_BLOCK;
            let input = at_least(&mut s.input, rows * k);
            let product = at_least(&mut s.product, rows * c.co_pad);
            for p in 0..count {
                let (y, x) = (self.y0 + (first + p) / self.w, (first + p) % self.w);
                for tap in 0..9 {
                    let yy = y as isize + ((tap / 3) as isize - 1) * d;
                    let xx = x as isize + ((tap % 3) as isize - 1) * d;
                    let mut c0 = 0;
                    for src in self.sources {
                        for cb in (0..src.channels()).step_by(16) {
                            let at = p * k + tap * c.ci + c0 + cb;
                            input[at..at + 16]
                                .copy_from_slice(&src.load(self.h, self.w, yy, xx, cb));
                        }
                        c0 += src.channels();
                    }
                }
            }
            input[count * k..].fill(0.0);
            kernel::matmul(self.isa, rows, k, input, k, &c.weight, c.co_pad, product);
            for p in 0..count {
                let (y, x) = (self.y0 + (first + p) / self.w, (first + p) % self.w);
                for cb in (0..c.co_pad).step_by(16) {
                    let v = Portable.load(&product[p * c.co_pad + cb..]);
                    self.store(Portable, band, y, x, cb, v);
                }
            }
        }
    }

    /// Output pixel `(y, x)`, channels `cb..`: bias, ReLU, stored (or added, see
    /// [`Band::add`]).
    #[inline(always)]
    fn store<S: Simd>(&self, simd: S, band: &mut [f32], y: usize, x: usize, cb: usize, v: S::V) {
        let c = self.conv;
        let at = ((y - self.y0) * self.w + x) * c.co + cb;
        let mut v = simd.add(v, simd.load(&c.bias[cb..]));
        if c.relu {
            v = simd.relu(v);
        }
        if c.co - cb >= 16 {
            if self.add {
                v = simd.add(v, simd.load(&band[at..]));
            }
            simd.store(v, &mut band[at..]);
        } else {
            // A layer of fewer than 16 channels (the one-channel side outputs).
            let n = c.co - cb;
            let mut lanes = [0f32; 16];
            simd.store(v, &mut lanes);
            if self.add {
                for (l, r) in lanes.iter_mut().zip(&band[at..at + n]) {
                    *l += r;
                }
            }
            band[at..at + n].copy_from_slice(&lanes[..n]);
        }
    }
}

/// `Bᵀ` of F(4x4, 3x3) applied to six vectors.
#[inline(always)]
fn bt<S: Simd>(s: S, d: [S::V; 6]) -> [S::V; 6] {
    let (two, four, five) = (s.splat(2.0), s.splat(4.0), s.splat(5.0));
    let [d0, d1, d2, d3, d4, d5] = d;
    let (d4m2, d3m1) = (s.sub(d4, d2), s.sub(d3, d1));
    [
        s.add(s.sub(s.mul(four, d0), s.mul(five, d2)), d4),
        s.sub(s.add(d3, d4), s.mul(four, s.add(d1, d2))),
        s.add(s.sub(d4, d3), s.mul(four, s.sub(d1, d2))),
        s.add(d4m2, s.mul(two, d3m1)),
        s.sub(d4m2, s.mul(two, d3m1)),
        s.add(s.sub(s.mul(four, d1), s.mul(five, d3)), d5),
    ]
}

/// `Aᵀ` of F(4x4, 3x3) applied to six vectors.
#[inline(always)]
fn at6<S: Simd>(s: S, m: [S::V; 6]) -> [S::V; 4] {
    let (two, four, eight) = (s.splat(2.0), s.splat(4.0), s.splat(8.0));
    let [m0, m1, m2, m3, m4, m5] = m;
    let (s12, d12, s34, d34) = (s.add(m1, m2), s.sub(m1, m2), s.add(m3, m4), s.sub(m3, m4));
    [
        s.add(s.add(m0, s12), s34),
        s.add(d12, s.mul(two, d34)),
        s.add(s12, s.mul(four, s34)),
        s.add(s.add(d12, s.mul(eight, d34)), m5),
    ]
}

#[cfg(test)]
#[path = "conv_tests.rs"]
mod tests;
