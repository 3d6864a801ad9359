//! Sixteen f32 lanes as one value, for the convolutions' transforms and output step: one
//! AVX-512 register, a pair of AVX2 registers, or a plain array. Written once against
//! [`Simd`], the code is compiled for each instruction set inside a
//! `#[target_feature]` function (see `conv::Band`), so a lane-wise add is one instruction.
//!
//! A token type per instruction set can only be made when the CPU has it (`new` checks),
//! so a method that runs its instructions is never reached on a CPU without them.
//!
//! Rejected alternative: `[f32; 16]` arrays everywhere and the compiler's vectoriser.
//! Arrays of six or more such values are moved through memory with `memcpy` calls, which
//! cost more than the arithmetic of the transforms.

/// Operations on 16 lanes of f32. `self` is the token that proves the instruction set.
pub(crate) trait Simd: Copy {
    type V: Copy;
    fn splat(self, v: f32) -> Self::V;
    /// The first 16 values of `s`.
    fn load(self, s: &[f32]) -> Self::V;
    /// Into the first 16 values of `s`.
    fn store(self, v: Self::V, s: &mut [f32]);
    fn add(self, a: Self::V, b: Self::V) -> Self::V;
    fn sub(self, a: Self::V, b: Self::V) -> Self::V;
    fn mul(self, a: Self::V, b: Self::V) -> Self::V;
    fn max(self, a: Self::V, b: Self::V) -> Self::V;
    /// `max(a, 0)`.
    fn relu(self, a: Self::V) -> Self::V;
}

/// Plain Rust arrays (any CPU).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Portable;

impl Simd for Portable {
    type V = [f32; 16];

    #[inline(always)]
    fn splat(self, v: f32) -> Self::V {
        [v; 16]
    }
    #[inline(always)]
    fn load(self, s: &[f32]) -> Self::V {
        let mut out = [0.0; 16];
        out.copy_from_slice(&s[..16]);
        out
    }
    #[inline(always)]
    fn store(self, v: Self::V, s: &mut [f32]) {
        s[..16].copy_from_slice(&v);
    }
    #[inline(always)]
    fn add(self, a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|l| a[l] + b[l])
    }
    #[inline(always)]
    fn sub(self, a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|l| a[l] - b[l])
    }
    #[inline(always)]
    fn mul(self, a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|l| a[l] * b[l])
    }
    #[inline(always)]
    fn max(self, a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|l| if a[l] > b[l] { a[l] } else { b[l] })
    }
    #[inline(always)]
    fn relu(self, a: Self::V) -> Self::V {
        std::array::from_fn(|l| if a[l] > 0.0 { a[l] } else { 0.0 })
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{Avx2, Avx512};

#[cfg(target_arch = "x86_64")]
#[allow(
    unsafe_code,
    reason = "SIMD intrinsics; a token proves the CPU has them, slices are bounds-checked"
)]
mod x86 {
    use std::arch::x86_64::*;

    use super::Simd;

    /// AVX-512F: one zmm register.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct Avx512(());

    impl Avx512 {
        /// The token, when this CPU has AVX-512F.
        pub(crate) fn new() -> Option<Self> {
            std::arch::is_x86_feature_detected!("avx512f").then_some(Avx512(()))
        }
    }

    // SAFETY (every method): an `Avx512` exists only where `new` found AVX-512F, and every
    // slice is indexed with bounds checks before the pointer is used.
    impl Simd for Avx512 {
        type V = __m512;

        #[inline(always)]
        fn splat(self, v: f32) -> __m512 {
            unsafe { _mm512_set1_ps(v) }
        }
        #[inline(always)]
        fn load(self, s: &[f32]) -> __m512 {
            let s = &s[..16];
            unsafe { _mm512_loadu_ps(s.as_ptr()) }
        }
        #[inline(always)]
        fn store(self, v: __m512, s: &mut [f32]) {
            let s = &mut s[..16];
            unsafe { _mm512_storeu_ps(s.as_mut_ptr(), v) }
        }
        #[inline(always)]
        fn add(self, a: __m512, b: __m512) -> __m512 {
            unsafe { _mm512_add_ps(a, b) }
        }
        #[inline(always)]
        fn sub(self, a: __m512, b: __m512) -> __m512 {
            unsafe { _mm512_sub_ps(a, b) }
        }
        #[inline(always)]
        fn mul(self, a: __m512, b: __m512) -> __m512 {
            unsafe { _mm512_mul_ps(a, b) }
        }
        #[inline(always)]
        fn max(self, a: __m512, b: __m512) -> __m512 {
            unsafe { _mm512_max_ps(a, b) }
        }
        #[inline(always)]
        fn relu(self, a: __m512) -> __m512 {
            unsafe { _mm512_max_ps(a, _mm512_setzero_ps()) }
        }
    }

    /// AVX2: two ymm registers.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct Avx2(());

    impl Avx2 {
        /// The token, when this CPU has AVX2 and FMA.
        pub(crate) fn new() -> Option<Self> {
            (std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma"))
            .then_some(Avx2(()))
        }
    }

    // SAFETY (every method): an `Avx2` exists only where `new` found AVX2 and FMA; slices
    // are bounds-checked before their pointers are used.
    impl Simd for Avx2 {
        type V = (__m256, __m256);

        #[inline(always)]
        fn splat(self, v: f32) -> Self::V {
            unsafe { (_mm256_set1_ps(v), _mm256_set1_ps(v)) }
        }
        #[inline(always)]
        fn load(self, s: &[f32]) -> Self::V {
            let s = &s[..16];
            unsafe {
                (
                    _mm256_loadu_ps(s.as_ptr()),
                    _mm256_loadu_ps(s.as_ptr().add(8)),
                )
            }
        }
        #[inline(always)]
        fn store(self, v: Self::V, s: &mut [f32]) {
            let s = &mut s[..16];
            unsafe {
                _mm256_storeu_ps(s.as_mut_ptr(), v.0);
                _mm256_storeu_ps(s.as_mut_ptr().add(8), v.1);
            }
        }
        #[inline(always)]
        fn add(self, a: Self::V, b: Self::V) -> Self::V {
            unsafe { (_mm256_add_ps(a.0, b.0), _mm256_add_ps(a.1, b.1)) }
        }
        #[inline(always)]
        fn sub(self, a: Self::V, b: Self::V) -> Self::V {
            unsafe { (_mm256_sub_ps(a.0, b.0), _mm256_sub_ps(a.1, b.1)) }
        }
        #[inline(always)]
        fn mul(self, a: Self::V, b: Self::V) -> Self::V {
            unsafe { (_mm256_mul_ps(a.0, b.0), _mm256_mul_ps(a.1, b.1)) }
        }
        #[inline(always)]
        fn max(self, a: Self::V, b: Self::V) -> Self::V {
            unsafe { (_mm256_max_ps(a.0, b.0), _mm256_max_ps(a.1, b.1)) }
        }
        #[inline(always)]
        fn relu(self, a: Self::V) -> Self::V {
            unsafe {
                let z = _mm256_setzero_ps();
                (_mm256_max_ps(a.0, z), _mm256_max_ps(a.1, z))
            }
        }
    }
}
