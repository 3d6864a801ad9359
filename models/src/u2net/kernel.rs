//! The one matrix product U²-Net's convolutions are made of, with a register-blocked
//! micro-kernel per instruction set: `c = a · b`, where the rows of `a` are tiles or pixels
//! (row-major, any row stride), `b` is `k x n` row-major with `n` a multiple of 16 (output
//! channels, padded), and `c` is `rows x n` row-major.
//!
//! The kernels hold a block of `c` in registers for the whole depth `k`: AVX-512 keeps 8 rows
//! x 32 columns (16 zmm accumulators) or 16 rows x 16 columns; AVX2+FMA keeps 4 rows x 16
//! columns (8 ymm). Each step of `k` loads one row of `b` and broadcasts one value of `a` per
//! row, so every load feeds two FMAs or more. The instruction set is detected once per
//! process ([`Isa::detect`]); the portable kernel is what other CPUs (and a test) run.
//!
//! Rejected alternative: the `gemm` crate. On these shapes (a few dozen rows, 16 to 128 deep,
//! 16 or 64 wide) its packing and dispatch cost as much as the product, and without its
//! `x86-v4` feature (which would rebuild candle for every model) it stops at AVX2.

/// An instruction set with a kernel here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Isa {
    /// x86-64 with AVX-512F.
    Avx512,
    /// x86-64 with AVX2 and FMA.
    Avx2,
    /// Anything else: plain Rust the compiler vectorises as it can.
    Portable,
}

impl Isa {
    /// The best kernel this CPU runs (checked once per process).
    pub(crate) fn detect() -> Self {
        static ISA: std::sync::OnceLock<Isa> = std::sync::OnceLock::new();
        *ISA.get_or_init(|| {
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx512f") {
                    return Isa::Avx512;
                }
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    return Isa::Avx2;
                }
            }
            Isa::Portable
        })
    }

    /// Every kernel this CPU can run, best first (for tests that compare them).
    #[cfg(test)]
    pub(crate) fn available() -> Vec<Isa> {
        let mut all = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                all.push(Isa::Avx512);
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                all.push(Isa::Avx2);
            }
        }
        all.push(Isa::Portable);
        all
    }
}

/// Rows of `a` are processed in blocks of this many; callers pad `a` and `c` to a multiple.
pub(crate) const ROW_BLOCK: usize = 16;

/// `c[r][j] = Σ_p a[r * lda + p] · b[p * n + j]` for `r < rows`, `j < n`, `p < k`.
///
/// # Panics
/// When `rows` or `n` is not a multiple of 16, or a slice is too short for its matrix
/// (checked before any unchecked access).
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul(
    isa: Isa,
    rows: usize,
    k: usize,
    a: &[f32],
    lda: usize,
    b: &[f32],
    n: usize,
    c: &mut [f32],
) {
    assert!(
        rows.is_multiple_of(ROW_BLOCK) && n.is_multiple_of(16),
        "rows {rows}, n {n}"
    );
    if rows == 0 || n == 0 {
        return;
    }
    assert!(k > 0 && lda >= k, "k {k}, lda {lda}");
    assert!(a.len() >= (rows - 1) * lda + k, "a too short");
    assert!(b.len() >= k * n, "b too short");
    assert!(c.len() >= rows * n, "c too short");
    // The feature checks are one cached load each; they keep this function sound whatever
    // `isa` a caller passes (a CPU without the feature gets the portable kernel).
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 if std::arch::is_x86_feature_detected!("avx512f") => {
            x86::avx512(rows, k, a, lda, b, n, c)
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma") =>
        {
            x86::avx2(rows, k, a, lda, b, n, c)
        }
        _ => portable(rows, k, a, lda, b, n, c),
    }
}

/// The kernel in plain Rust, 4 rows x 16 columns at a time.
fn portable(rows: usize, k: usize, a: &[f32], lda: usize, b: &[f32], n: usize, c: &mut [f32]) {
    for r0 in (0..rows).step_by(4) {
        for j0 in (0..n).step_by(16) {
            let mut acc = [[0f32; 16]; 4];
            for p in 0..k {
                let brow: &[f32; 16] = b[p * n + j0..p * n + j0 + 16]
                    .try_into()
                    .unwrap_or(&[0.0; 16]);
                for (r, acc) in acc.iter_mut().enumerate() {
                    let av = a[(r0 + r) * lda + p];
                    for (o, bv) in acc.iter_mut().zip(brow) {
                        *o += av * bv;
                    }
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                let at = (r0 + r) * n + j0;
                c[at..at + 16].copy_from_slice(acc);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(
    unsafe_code,
    reason = "SIMD intrinsics and unchecked loads inside bounds that `matmul` asserts"
)]
mod x86 {
    use std::arch::x86_64::*;

    /// AVX-512: 8 rows x 32 columns while two column blocks of 16 remain, else 16 x 16.
    pub(super) fn avx512(
        rows: usize,
        k: usize,
        a: &[f32],
        lda: usize,
        b: &[f32],
        n: usize,
        c: &mut [f32],
    ) {
        // SAFETY: `matmul` checked that the CPU has AVX-512F and that every index below
        // `rows`, `k` and `n` lies inside the slices.
        unsafe { avx512_impl(rows, k, a.as_ptr(), lda, b.as_ptr(), n, c.as_mut_ptr()) }
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn avx512_impl(
        rows: usize,
        k: usize,
        a: *const f32,
        lda: usize,
        b: *const f32,
        n: usize,
        c: *mut f32,
    ) {
        let mut j0 = 0;
        while j0 + 32 <= n {
            for r0 in (0..rows).step_by(8) {
                // SAFETY: r0 + 8 <= rows and j0 + 32 <= n (see the caller).
                unsafe {
                    let mut acc = [[_mm512_setzero_ps(); 2]; 8];
                    for p in 0..k {
                        let brow = b.add(p * n + j0);
                        let b0 = _mm512_loadu_ps(brow);
                        let b1 = _mm512_loadu_ps(brow.add(16));
                        for (r, acc) in acc.iter_mut().enumerate() {
                            let av = _mm512_set1_ps(*a.add((r0 + r) * lda + p));
                            acc[0] = _mm512_fmadd_ps(av, b0, acc[0]);
                            acc[1] = _mm512_fmadd_ps(av, b1, acc[1]);
                        }
                    }
                    for (r, acc) in acc.iter().enumerate() {
                        let crow = c.add((r0 + r) * n + j0);
                        _mm512_storeu_ps(crow, acc[0]);
                        _mm512_storeu_ps(crow.add(16), acc[1]);
                    }
                }
            }
            j0 += 32;
        }
        if j0 < n {
            for r0 in (0..rows).step_by(16) {
                // SAFETY: r0 + 16 <= rows and j0 + 16 == n.
                unsafe {
                    let mut acc = [_mm512_setzero_ps(); 16];
                    for p in 0..k {
                        let b0 = _mm512_loadu_ps(b.add(p * n + j0));
                        for (r, acc) in acc.iter_mut().enumerate() {
                            let av = _mm512_set1_ps(*a.add((r0 + r) * lda + p));
                            *acc = _mm512_fmadd_ps(av, b0, *acc);
                        }
                    }
                    for (r, acc) in acc.iter().enumerate() {
                        _mm512_storeu_ps(c.add((r0 + r) * n + j0), *acc);
                    }
                }
            }
        }
    }

    /// AVX2 + FMA: 4 rows x 16 columns (8 ymm accumulators).
    pub(super) fn avx2(
        rows: usize,
        k: usize,
        a: &[f32],
        lda: usize,
        b: &[f32],
        n: usize,
        c: &mut [f32],
    ) {
        // SAFETY: as for `avx512`, with AVX2 and FMA checked by `matmul`.
        unsafe { avx2_impl(rows, k, a.as_ptr(), lda, b.as_ptr(), n, c.as_mut_ptr()) }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2_impl(
        rows: usize,
        k: usize,
        a: *const f32,
        lda: usize,
        b: *const f32,
        n: usize,
        c: *mut f32,
    ) {
        for j0 in (0..n).step_by(16) {
            for r0 in (0..rows).step_by(4) {
                // SAFETY: r0 + 4 <= rows and j0 + 16 <= n.
                unsafe {
                    let mut acc = [[_mm256_setzero_ps(); 2]; 4];
                    for p in 0..k {
                        let brow = b.add(p * n + j0);
                        let b0 = _mm256_loadu_ps(brow);
                        let b1 = _mm256_loadu_ps(brow.add(8));
                        for (r, acc) in acc.iter_mut().enumerate() {
                            let av = _mm256_set1_ps(*a.add((r0 + r) * lda + p));
                            acc[0] = _mm256_fmadd_ps(av, b0, acc[0]);
                            acc[1] = _mm256_fmadd_ps(av, b1, acc[1]);
                        }
                    }
                    for (r, acc) in acc.iter().enumerate() {
                        let crow = c.add((r0 + r) * n + j0);
                        _mm256_storeu_ps(crow, acc[0]);
                        _mm256_storeu_ps(crow.add(8), acc[1]);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kernel this CPU has against a plain triple loop, on odd depths and strides.
    #[test]
    fn every_kernel_agrees_with_the_definition() {
        let (rows, k, lda) = (48, 37, 41);
        for n in [16, 32, 48, 64] {
            let a: Vec<f32> = (0..rows * lda)
                .map(|i| ((i * 7 % 13) as f32) - 6.0)
                .collect();
            let b: Vec<f32> = (0..k * n)
                .map(|i| ((i * 5 % 11) as f32) * 0.25 - 1.0)
                .collect();
            let mut want = vec![0f32; rows * n];
            for r in 0..rows {
                for j in 0..n {
                    want[r * n + j] = (0..k).map(|p| a[r * lda + p] * b[p * n + j]).sum();
                }
            }
            for isa in Isa::available() {
                let mut got = vec![f32::NAN; rows * n];
                matmul(isa, rows, k, &a, lda, &b, n, &mut got);
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g - w).abs() <= 1e-3 * w.abs().max(1.0),
                        "{isa:?} n {n} at {i}: {g} vs {w}"
                    );
                }
            }
        }
    }
}
