//! Product cut-out speed and memory (issue 22), printed as Markdown tables: the U²-Net-P
//! mask of one 320x320 picture (by step), the whole cut-out of a 12 MP (4000x3000) product
//! photo by each path (colour key on a white packshot, the model on a busy photo) by step,
//! PNG encoding, resident memory, and last the network's arithmetic against the machine's
//! measured matrix-product speed. Run by `scripts/bench-cutout` on a release build.
//!
//! `bench_cutout photos DIR N` instead writes N packshots on white and N products on a busy
//! photo (1600x1200 PNGs, each slightly different, so no two share a cut-out) for the ad
//! part of `scripts/bench-cutout`.
//!
//! The photos are drawn here (a shaded bottle with a pale label), so the run needs no
//! files besides the model's weights.

use std::time::{Duration, Instant};

use adforge_worker::cutout::{Cutter, encode_png};
use candle_core::{Device, Tensor};
use image::{DynamicImage, Rgb, RgbImage};

/// Kibibytes of a `/proc/self/status` field (`VmRSS`, `VmHWM`).
fn status_kib(field: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    text.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// A bottle (shaded body, neck, label of colour `label`) centred on `ground(x, y)`.
fn product_photo(w: u32, h: u32, label: [u8; 3], ground: impl Fn(u32, u32) -> [u8; 3]) -> RgbImage {
    let (cx, bw) = (w / 2, w / 7);
    let (top, shoulder, bottom) = (h / 8, h * 3 / 8, h * 7 / 8);
    RgbImage::from_fn(w, h, |x, y| {
        let dx = x.abs_diff(cx);
        let body = dx < bw && (shoulder..bottom).contains(&y);
        let neck = dx < bw / 3 && (top..shoulder).contains(&y);
        let on_label = dx < bw * 4 / 5 && (h / 2..h * 5 / 8).contains(&y);
        if on_label {
            Rgb(label)
        } else if body || neck {
            let shade = 60 + (120 * dx / bw) as u8;
            Rgb([30, 200 - shade, 60])
        } else {
            Rgb(ground(x, y))
        }
    })
}

/// Overlapping coloured discs over a gradient, drawn for a `w`-wide photo: a busy
/// background for the model.
fn busy(w: u32) -> impl Fn(u32, u32) -> [u8; 3] {
    let cell = (w / 8).max(1);
    move |x, y| {
        let (cell_x, cell_y) = (x / cell, y / cell);
        let (fx, fy) = (x % cell, y % cell);
        let r2 = (i64::from(fx) - i64::from(cell / 2)).pow(2)
            + (i64::from(fy) - i64::from(cell / 2)).pow(2);
        if r2 < i64::from(cell * 2 / 5).pow(2) && (cell_x + cell_y) % 2 == 0 {
            [180, 110 + (cell_x * 20 % 100) as u8, 60]
        } else {
            let s = 4000 / w.max(1);
            [
                (90 + x * s / 40 % 100) as u8,
                (120 + y * s / 50 % 80) as u8,
                (150 - (x + y) * s / 80 % 90) as u8,
            ]
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Nanoseconds of CPU time every thread of this process has run (`schedstat`).
fn cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| {
            let text = std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok()?;
            text.split_whitespace().next()?.parse::<u64>().ok()
        })
        .sum()
}

/// Runs `f` `runs` times; the medians of wall-clock and of CPU milliseconds (all threads).
fn time_and_cpu_ms(runs: usize, mut f: impl FnMut()) -> (f64, f64) {
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (t, c) = (Instant::now(), cpu_ns());
        f();
        wall.push(ms(t.elapsed()));
        cpu.push(cpu_ns().saturating_sub(c) as f64 / 1e6);
    }
    (median(wall), median(cpu))
}

/// GFLOP/s of candle's matrix product (the `gemm` crate, on the process's thread pool) for
/// `batch` products of `[m, k] x [k, n]`: wall-clock, and per CPU-second (all threads).
fn matmul_gflops(runs: usize, batch: usize, m: usize, k: usize, n: usize) -> (f64, f64) {
    let dev = Device::Cpu;
    let a = Tensor::randn(0f32, 1.0, (batch, m, k), &dev).expect("a");
    let b = Tensor::randn(0f32, 1.0, (batch, k, n), &dev).expect("b");
    let _ = a.matmul(&b).expect("warm-up");
    let (wall, cpu) = time_and_cpu_ms(runs, || {
        a.matmul(&b).expect("matmul");
    });
    let gflop = 2.0 * (batch * m * k * n) as f64 / 1e9;
    (gflop / (wall / 1000.0), gflop / (cpu / 1000.0))
}

fn write_photos(dir: &std::path::Path, n: u32) {
    std::fs::create_dir_all(dir).expect("photo folder");
    for i in 0..n {
        let label = [246, 244 - (i % 40) as u8, 238 - (i / 40) as u8];
        let plain = product_photo(1600, 1200, label, |_, _| [255, 255, 255]);
        plain
            .save(dir.join(format!("white-{i:02}.png")))
            .expect("save");
        let busy_photo = product_photo(1600, 1200, label, busy(1600));
        busy_photo
            .save(dir.join(format!("busy-{i:02}.png")))
            .expect("save");
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("photos") {
        let dir = args.get(2).expect("bench_cutout photos DIR N");
        let n = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(10);
        write_photos(std::path::Path::new(dir), n);
        return;
    }
    let runs: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let models_dir = adforge_models::default_models_dir();
    let before = status_kib("VmRSS:");
    let cutter = Cutter::load(&models_dir);
    assert!(
        cutter.has_model(),
        "U²-Net-P is not installed: run scripts/fetch-models"
    );
    let loaded = status_kib("VmRSS:");
    let segmenter =
        adforge_models::SalientSegmenter::load(&models_dir.join(adforge_models::U2NETP_DIR))
            .expect("model");
    let net = segmenter.network();
    let both_loaded = status_kib("VmRSS:");

    let small = product_photo(320, 320, [246, 244, 238], busy(320));
    let _ = segmenter.saliency(&small).expect("warm-up");
    let after_one_mask = status_kib("VmHWM:");
    let input = segmenter.input(&small).expect("input");
    let prep = time_and_cpu_ms(runs, || {
        segmenter.input(&small).expect("input");
    });
    let pass = time_and_cpu_ms(runs, || {
        net.forward(&input).expect("forward");
    });
    let mask = time_and_cpu_ms(runs, || {
        segmenter.saliency(&small).expect("mask");
    });
    let after_masks = status_kib("VmRSS:");
    let macs = net.macs(320, 320);
    let gflop = 2.0 * macs as f64 / 1e9;

    println!("| U²-Net-P mask, one 320x320 picture | median ms | CPU ms (all threads) | runs |");
    println!("|---|---:|---:|---:|");
    for (what, (wall, cpu)) in [
        ("input: normalise into a tensor", prep),
        ("network: all seven outputs (`U2Net::forward`)", pass),
        ("whole mask (`saliency`: input, network, min–max)", mask),
    ] {
        println!("| {what} | {wall:.1} | {cpu:.1} | {runs} |");
    }
    println!();
    println!(
        "| 12 MP cut-out | path | shrink ms | mask ms | of which model ms | matte ms | whole cut-out ms | PNG ms | out size |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---|");
    for (name, photo) in [
        (
            "packshot on white",
            product_photo(4000, 3000, [246, 244, 238], |_, _| [255, 255, 255]),
        ),
        (
            "product on a busy photo",
            product_photo(4000, 3000, [246, 244, 238], busy(4000)),
        ),
    ] {
        let photo = DynamicImage::ImageRgb8(photo);
        let mut steps: [Vec<f64>; 6] = Default::default();
        let mut method = String::new();
        let mut size = (0, 0);
        for _ in 0..runs {
            let t = Instant::now();
            let cut = cutter.cut(&photo).expect("cut-out");
            let whole = ms(t.elapsed());
            let t = Instant::now();
            encode_png(&cut.image).expect("png");
            let png = ms(t.elapsed());
            let tm = cut.timings;
            for (v, x) in steps.iter_mut().zip([
                ms(tm.shrink),
                ms(tm.mask),
                ms(tm.model),
                ms(tm.matte),
                whole,
                png,
            ]) {
                v.push(x);
            }
            method = cut.method.to_string();
            size = (cut.image.width(), cut.image.height());
        }
        let [s, m, mo, ma, wh, p] = steps.map(median);
        println!(
            "| {name} | {method} | {s:.0} | {m:.0} | {mo:.0} | {ma:.0} | {wh:.0} | {p:.0} | {}x{} |",
            size.0, size.1
        );
    }
    println!();
    println!("| memory | MiB |");
    println!("|---|---:|");
    println!(
        "| the network's weights, in its convolutions' layouts | {:.1} |",
        net.weight_bytes() as f64 / (1024.0 * 1024.0)
    );
    println!(
        "| resident growth when the Cutter loads the model | {:.1} |",
        mib(loaded.saturating_sub(before))
    );
    println!("| resident before the model loads | {:.1} |", mib(before));
    println!(
        "| peak resident after one 320x320 mask (two copies of the model loaded) | {:.1} |",
        mib(after_one_mask)
    );
    println!(
        "| of which the first pass's maps and scratch (peak over resident before it) | {:.1} |",
        mib(after_one_mask.saturating_sub(both_loaded))
    );
    println!(
        "| resident after the masks (per-thread scratch kept between passes included) | {:.1} |",
        mib(after_masks)
    );
    println!(
        "| peak resident after the 12 MP cut-outs (two 36 MB photos held) | {:.1} |",
        mib(status_kib("VmHWM:"))
    );
    println!();
    println!("| arithmetic | value |");
    println!("|---|---:|");
    println!(
        "| one pass, counted as direct convolutions | {:.2} G multiply-adds = {gflop:.1} GFLOP |",
        macs as f64 / 1e9
    );
    println!(
        "| the network's rate, counted that way, per CPU-second | {:.0} GFLOP/s |",
        gflop / (pass.1 / 1000.0)
    );
    println!(
        "| the network's rate, counted that way, wall-clock | {:.0} GFLOP/s |",
        gflop / (pass.0 / 1000.0)
    );
    // Last: these products' inputs (472 MB for the im2col one) would swamp the peaks above.
    // The largest layer (stage1d's input convolution, 128 -> 64 channels at 320x320) as
    // one plain product: im2col [102400 x 1152] x [1152 x 64]; and as Winograd F(4x4, 3x3)
    // does it: 36 products [6400 x 128] x [128 x 64].
    let direct = matmul_gflops(runs, 1, 102_400, 1152, 64);
    let wino = matmul_gflops(runs, 36, 6400, 128, 64);
    println!(
        "| candle/gemm matmul [102400 x 1152] x [1152 x 64] (the largest layer as im2col) | {:.0} GFLOP/s wall, {:.0} per CPU-second |",
        direct.0, direct.1
    );
    println!(
        "| candle/gemm matmul 36 x [6400 x 128] x [128 x 64] (that layer's Winograd products) | {:.0} GFLOP/s wall, {:.0} per CPU-second |",
        wino.0, wino.1
    );
    println!(
        "| the whole pass as direct convolutions at that rate, two cores | at least {:.0} ms |",
        gflop / (2.0 * direct.1) * 1000.0
    );
}
