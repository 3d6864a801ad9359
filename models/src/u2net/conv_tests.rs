//! Tests of `conv`: against candle's own `conv2d`, upsample and max-pool.

use super::super::fmap::Buffers;
use super::*;
use candle_core::{Device, Tensor};

/// Against candle's own conv2d, on odd sizes, with and without dilation, ReLU, residual,
/// a padded first layer (3 channels), two sources side by side, and upsampled and
/// pooled sources; once with every instruction set this CPU has (AVX-512, AVX2, and the
/// portable code every other CPU runs).
#[test]
fn agrees_with_candles_conv2d() -> candle_core::Result<()> {
    for isa in Isa::available() {
        agrees_on(isa)?;
    }
    Ok(())
}

/// The SIMD code against the portable code on a whole layer (the same sums in the same
/// order up to FMA rounding: much closer than to candle's direct convolution).
#[test]
fn every_instruction_set_agrees_with_the_portable_code() -> candle_core::Result<()> {
    let dev = Device::Cpu;
    for (cin, cout, d, (h, w)) in [
        (128, 64, 1, (23, 30)),
        (32, 16, 4, (12, 9)),
        (64, 1, 1, (7, 11)),
    ] {
        let x = Tensor::randn(0f32, 1.0, (1, cin, h, w), &dev)?;
        let wt = Tensor::randn(0f32, 1.0, (cout, cin, 3, 3), &dev)?;
        let bias = Tensor::randn(0f32, 1.0, cout, &dev)?;
        let conv = Conv3::new(
            &wt.flatten_all()?.to_vec1()?,
            &bias.to_vec1()?,
            (cout, cin),
            d,
            true,
        );
        let mut bufs = Buffers::default();
        let input = to_fm(&x, &mut bufs)?;
        let mut want = bufs.take(cout, h, w);
        conv.run_on(Isa::Portable, &[Source::Plain(&input)], false, &mut want);
        let scale = want.data().iter().fold(1f32, |m, v| m.max(v.abs()));
        for isa in Isa::available() {
            let mut got = bufs.take(cout, h, w);
            conv.run_on(isa, &[Source::Plain(&input)], false, &mut got);
            for (i, (g, e)) in got.data().iter().zip(want.data()).enumerate() {
                assert!(
                    (g - e).abs() <= 1e-5 * scale,
                    "{isa:?} {cin}->{cout} d{d}: value {i}: {g} vs {e}"
                );
            }
        }
    }
    Ok(())
}

fn agrees_on(isa: Isa) -> candle_core::Result<()> {
    let dev = Device::Cpu;
    for (cin, cout, d, relu, (h, w)) in [
        (3, 64, 1, true, (37, 45)),
        (32, 16, 1, false, (6, 5)),
        (64, 1, 1, false, (9, 8)),
        (32, 16, 2, true, (10, 10)),
        (16, 16, 8, true, (20, 19)),
        (128, 64, 1, true, (33, 64)),
    ] {
        let x = Tensor::randn(0f32, 1.0, (1, cin, h, w), &dev)?;
        let wt = Tensor::randn(0f32, 1.0, (cout, cin, 3, 3), &dev)?;
        let bias = Tensor::randn(0f32, 1.0, cout, &dev)?;
        let mut want = x
            .conv2d(&wt, d, 1, d, 1)?
            .broadcast_add(&bias.reshape((1, cout, 1, 1))?)?;
        if relu {
            want = want.relu()?;
        }
        let conv = Conv3::new(
            &wt.flatten_all()?.to_vec1()?,
            &bias.to_vec1()?,
            (cout, cin),
            d,
            relu,
        );
        let mut bufs = Buffers::default();
        let input = to_fm(&x, &mut bufs)?;
        // Split the input in two sources when it has channels to split.
        let mut out = bufs.take(cout, h, w);
        if cin >= 32 {
            let (a, b) = split(&input, cin / 2, &mut bufs);
            conv.run_on(
                isa,
                &[Source::Plain(&a), Source::Plain(&b)],
                false,
                &mut out,
            );
        } else {
            conv.run_on(isa, &[Source::Plain(&input)], false, &mut out);
        }
        assert_close(&out, &want, 1e-4, &format!("{cin}->{cout} d{d} {h}x{w}"))?;
        // The same added to what the output holds (an RSU block's residual, in place).
        let mut again = bufs.take(cout, h, w);
        again.data_mut().copy_from_slice(out.data());
        if cin >= 32 {
            let (a, b) = split(&input, cin / 2, &mut bufs);
            conv.run_on(
                isa,
                &[Source::Plain(&a), Source::Plain(&b)],
                true,
                &mut again,
            );
        } else {
            conv.run_on(isa, &[Source::Plain(&input)], true, &mut again);
        }
        assert_close(&again, &(&want + &want)?, 2e-4, "residual")?;
    }
    // Upsampled and pooled sources against candle's upsample and max-pool.
    let x = Tensor::randn(0f32, 1.0, (1, 16, 5, 7), &dev)?.relu()?;
    let wt = Tensor::randn(0f32, 1.0, (16, 16, 3, 3), &dev)?;
    let bias = Tensor::zeros(16, candle_core::DType::F32, &dev)?;
    let conv = Conv3::new(
        &wt.flatten_all()?.to_vec1()?,
        &bias.to_vec1()?,
        (16, 16),
        1,
        false,
    );
    let mut bufs = Buffers::default();
    let input = to_fm(&x, &mut bufs)?;
    let up = x
        .upsample_bilinear2d(10, 13, false)?
        .conv2d(&wt, 1, 1, 1, 1)?;
    let mut out = bufs.take(16, 10, 13);
    conv.run_on(isa, &[Source::Up(&input)], false, &mut out);
    assert_close(&out, &up, 1e-4, "upsampled")?;
    let pooled = x
        .pad_with_zeros(2, 0, 1)?
        .pad_with_zeros(3, 0, 1)?
        .max_pool2d(2)?
        .conv2d(&wt, 1, 1, 1, 1)?;
    let mut out = bufs.take(16, 3, 4);
    conv.run_on(isa, &[Source::Pool(&input)], false, &mut out);
    assert_close(&out, &pooled, 1e-4, "pooled")
}

/// `[1, c, h, w]` as a channels-last map, channels padded to 16.
fn to_fm(x: &Tensor, bufs: &mut Buffers) -> candle_core::Result<Fm> {
    let (_, c, h, w) = x.dims4()?;
    let cp = c.div_ceil(16) * 16;
    let v = x.flatten_all()?.to_vec1::<f32>()?;
    let mut fm = bufs.take(cp, h, w);
    let data = fm.data_mut();
    data.fill(0.0);
    for ch in 0..c {
        for p in 0..h * w {
            data[p * cp + ch] = v[ch * h * w + p];
        }
    }
    Ok(fm)
}

/// The first `at` channels and the rest, as two maps.
fn split(fm: &Fm, at: usize, bufs: &mut Buffers) -> (Fm, Fm) {
    let mut a = bufs.take(at, fm.h, fm.w);
    let mut b = bufs.take(fm.c - at, fm.h, fm.w);
    for (p, px) in fm.data().chunks_exact(fm.c).enumerate() {
        a.data_mut()[p * at..(p + 1) * at].copy_from_slice(&px[..at]);
        b.data_mut()[p * (fm.c - at)..(p + 1) * (fm.c - at)].copy_from_slice(&px[at..]);
    }
    (a, b)
}

fn assert_close(got: &Fm, want: &Tensor, tol: f32, what: &str) -> candle_core::Result<()> {
    let (_, c, h, w) = want.dims4()?;
    assert_eq!((got.c, got.h, got.w), (c, h, w), "{what}");
    let want = want.flatten_all()?.to_vec1::<f32>()?;
    let scale = want.iter().fold(1f32, |m, v| m.max(v.abs()));
    for ch in 0..c {
        for p in 0..h * w {
            let (g, e) = (got.data()[p * c + ch], want[ch * h * w + p]);
            assert!(
                (g - e).abs() <= tol * scale,
                "{what}: channel {ch} pixel {p}: {g} vs {e}"
            );
        }
    }
    Ok(())
}
