//! A square convolution with "same" zero padding (dilated or not, stride 1), its bias and an
//! optional ReLU, as a candle custom op for the CPU.
//!
//! The input is copied once into a zero-padded buffer (padding `dilation * (k / 2)` on each
//! side). Laid out row by row with the padded width, the input that kernel tap `(ky, kx)`
//! reads for output pixel `y * padded_width + x` is the same buffer shifted by
//! `(ky * padded_width + kx) * dilation`, so each tap is one matrix product
//! `out[co, p] += w[tap][co, ci] * padded[ci, p + shift]` over a strided view, with no
//! im2col matrix at all; the `padded_width - width` columns per row it also computes are
//! dropped when the bias and ReLU are applied. Nine products accumulate into one output.
//!
//! Rejected alternative: candle's `conv2d`, which builds im2col tiles and ran U²-Net-P about
//! 2x slower on the 2-core build machine (the tile copies cost as much as the products), and
//! whose full im2col for the 128-channel input at 320x320 would take 470 MB.

use candle_core::{CpuStorage, CustomOp1, Layout, Shape, Tensor};

/// A convolution with its weights rearranged for [`CustomOp1::cpu_fwd`].
#[derive(Debug, Clone)]
pub(crate) struct SameConv {
    /// `[tap][out][in]`, row-major: each tap's weights are one `out x in` matrix.
    weight: Vec<f32>,
    bias: Vec<f32>,
    in_c: usize,
    out_c: usize,
    kernel: usize,
    dilation: usize,
    relu: bool,
}

impl SameConv {
    /// From a `[out, in, k, k]` weight and an `[out]` bias (any float dtype on the CPU).
    ///
    /// # Errors
    /// A candle error when the shapes do not agree or the kernel is not square and odd.
    pub(crate) fn new(
        weight: &Tensor,
        bias: &Tensor,
        dilation: usize,
        relu: bool,
    ) -> candle_core::Result<Self> {
        let (out_c, in_c, kh, kw) = weight.dims4()?;
        if kh != kw || kh % 2 == 0 || bias.dims1()? != out_c || dilation == 0 {
            candle_core::bail!(
                "SameConv needs an odd square kernel, one bias per output and a dilation of at least 1, got {:?}, bias {:?}, dilation {dilation}",
                weight.dims(),
                bias.dims()
            );
        }
        // [out, in, ky, kx] -> [ky, kx, out, in].
        let weight = weight
            .permute((2, 3, 0, 1))?
            .flatten_all()?
            .to_dtype(candle_core::DType::F32)?
            .to_vec1::<f32>()?;
        let bias = bias.to_dtype(candle_core::DType::F32)?.to_vec1::<f32>()?;
        Ok(Self {
            weight,
            bias,
            in_c,
            out_c,
            kernel: kh,
            dilation,
            relu,
        })
    }

    /// Runs the convolution on a `[N, in, H, W]` f32 tensor.
    ///
    /// # Errors
    /// A candle error for another shape, dtype or device.
    pub(crate) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        x.apply_op1_no_bwd(self)
    }

    /// One image: `input` is `[in, h, w]`, `out` receives `[out, h, w]`.
    fn image(&self, input: &[f32], h: usize, w: usize, out: &mut [f32]) {
        let pad = self.dilation * (self.kernel / 2);
        let (hp, wp) = (h + 2 * pad, w + 2 * pad);
        let mut padded = vec![0f32; self.in_c * hp * wp];
        for (c, plane) in input.chunks_exact(h * w).enumerate() {
            for (y, row) in plane.chunks_exact(w).enumerate() {
                let at = (c * hp + y + pad) * wp + pad;
                padded[at..at + w].copy_from_slice(row);
            }
        }
        // Output pixel (y, x) lives at y * wp + x; the last valid one is (h-1, w-1).
        let n = (h - 1) * wp + w;
        let mut acc = vec![0f32; self.out_c * h * wp];
        let taps = self.kernel * self.kernel;
        let per_tap = self.out_c * self.in_c;
        for tap in 0..taps {
            let (ky, kx) = (tap / self.kernel, tap % self.kernel);
            let shift = (ky * wp + kx) * self.dilation;
            let lhs = &self.weight[tap * per_tap..(tap + 1) * per_tap];
            let rhs = &padded[shift..];
            accumulate(
                &mut acc,
                h * wp,
                lhs,
                self.in_c,
                rhs,
                hp * wp,
                (self.out_c, n, self.in_c),
                tap > 0,
            );
        }
        for (c, (dst, src)) in out
            .chunks_exact_mut(h * w)
            .zip(acc.chunks_exact(h * wp))
            .enumerate()
        {
            let b = self.bias[c];
            for (drow, srow) in dst.chunks_exact_mut(w).zip(src.chunks(wp)) {
                for (d, s) in drow.iter_mut().zip(srow) {
                    let v = s + b;
                    *d = if self.relu { v.max(0.0) } else { v };
                }
            }
        }
    }
}

/// `dst[i, j] (+)= lhs[i, k] * rhs[k, j]` for `i < m, j < n, k < depth`, row-major with the
/// given row strides (columns contiguous); `accumulate` adds to `dst` instead of overwriting.
///
/// # Panics
/// When a slice is too short for its matrix (checked before the unchecked product runs).
#[allow(
    unsafe_code,
    reason = "gemm takes raw pointers and strides; the bounds are asserted just above the call"
)]
#[allow(clippy::too_many_arguments)]
fn accumulate(
    dst: &mut [f32],
    dst_rs: usize,
    lhs: &[f32],
    lhs_rs: usize,
    rhs: &[f32],
    rhs_rs: usize,
    (m, n, depth): (usize, usize, usize),
    accumulate: bool,
) {
    if m == 0 || n == 0 || depth == 0 {
        return;
    }
    // The last element each matrix touches must lie inside its slice.
    assert!((m - 1) * dst_rs + n <= dst.len(), "dst too short");
    assert!((m - 1) * lhs_rs + depth <= lhs.len(), "lhs too short");
    assert!((depth - 1) * rhs_rs + n <= rhs.len(), "rhs too short");
    // SAFETY: the asserts above keep every index gemm computes from these strides and sizes
    // inside the three slices; `dst` is borrowed mutably and the inputs immutably, so they do
    // not overlap.
    unsafe {
        gemm::gemm(
            m,
            n,
            depth,
            dst.as_mut_ptr(),
            1,
            dst_rs as isize,
            accumulate,
            lhs.as_ptr(),
            1,
            lhs_rs as isize,
            rhs.as_ptr(),
            1,
            rhs_rs as isize,
            1.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::Rayon(0),
        );
    }
}

impl CustomOp1 for SameConv {
    fn name(&self) -> &'static str {
        "same-conv"
    }

    fn cpu_fwd(
        &self,
        storage: &CpuStorage,
        layout: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (b, c, h, w) = layout.shape().dims4()?;
        if c != self.in_c {
            candle_core::bail!("SameConv expects {} input channels, got {c}", self.in_c);
        }
        let CpuStorage::F32(data) = storage else {
            candle_core::bail!("SameConv runs on f32 tensors");
        };
        let Some((start, end)) = layout.contiguous_offsets() else {
            candle_core::bail!("SameConv needs a contiguous input");
        };
        let input = &data[start..end];
        let mut out = vec![0f32; b * self.out_c * h * w];
        if h > 0 && w > 0 {
            for (img, dst) in input
                .chunks_exact(c * h * w)
                .zip(out.chunks_exact_mut(self.out_c * h * w))
            {
                self.image(img, h, w, dst);
            }
        }
        Ok((CpuStorage::F32(out), Shape::from((b, self.out_c, h, w))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    /// Against candle's own conv2d, on odd sizes, with and without dilation, ReLU and a
    /// 1x1 kernel.
    #[test]
    fn agrees_with_candles_conv2d() -> candle_core::Result<()> {
        let dev = Device::Cpu;
        for (cin, cout, k, d, relu, (h, w)) in [
            (3, 5, 3, 1, true, (7, 9)),
            (4, 2, 3, 2, false, (6, 5)),
            (6, 1, 1, 1, false, (4, 4)),
            (2, 3, 3, 8, true, (5, 11)),
        ] {
            let x = Tensor::randn(0f32, 1.0, (2, cin, h, w), &dev)?;
            let wt = Tensor::randn(0f32, 1.0, (cout, cin, k, k), &dev)?;
            let bias = Tensor::randn(0f32, 1.0, cout, &dev)?;
            let pad = d * (k / 2);
            let mut want = x
                .conv2d(&wt, pad, 1, d, 1)?
                .broadcast_add(&bias.reshape((1, cout, 1, 1))?)?;
            if relu {
                want = want.relu()?;
            }
            let got = SameConv::new(&wt, &bias, d, relu)?.forward(&x)?;
            assert_eq!(got.dims(), want.dims());
            let diff = (got - want)?
                .abs()?
                .flatten_all()?
                .max(0)?
                .to_scalar::<f32>()?;
            assert!(
                diff < 1e-4,
                "{cin}->{cout} k{k} d{d}: max difference {diff}"
            );
        }
        Ok(())
    }
}
