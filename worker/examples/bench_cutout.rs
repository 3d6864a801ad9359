//! Product cut-out speed and memory (issue 22), printed as a Markdown table: the
//! U²-Net-P mask of one 320x320 picture, and the whole cut-out of a 12 MP (4000x3000)
//! product photo by each path (colour key on a white packshot, the model on a busy
//! photo), plus encoding the cut-out as PNG; resident memory after loading the model and
//! the process's peak. Run by `scripts/bench-cutout` on a release build.
//!
//! The photos are drawn here (a shaded bottle with a pale label), so the run needs no
//! files besides the model's weights.

use std::time::Instant;

use adforge_worker::cutout::{Cutter, encode_png};
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

/// A bottle (shaded body, neck, pale label) centred on `ground(x, y)`.
fn product_photo(w: u32, h: u32, ground: impl Fn(u32, u32) -> [u8; 3]) -> RgbImage {
    let (cx, bw) = (w / 2, w / 7);
    let (top, shoulder, bottom) = (h / 8, h * 3 / 8, h * 7 / 8);
    RgbImage::from_fn(w, h, |x, y| {
        let dx = x.abs_diff(cx);
        let body = dx < bw && (shoulder..bottom).contains(&y);
        let neck = dx < bw / 3 && (top..shoulder).contains(&y);
        let label = dx < bw * 4 / 5 && (h / 2..h * 5 / 8).contains(&y);
        if label {
            Rgb([246, 244, 238])
        } else if body || neck {
            let shade = 60 + (120 * dx / bw) as u8;
            Rgb([30, 200 - shade, 60])
        } else {
            Rgb(ground(x, y))
        }
    })
}

/// Overlapping coloured discs over a gradient: a busy background for the model.
fn busy(x: u32, y: u32) -> [u8; 3] {
    let (cell_x, cell_y) = (x / 500, y / 500);
    let (fx, fy) = (x % 500, y % 500);
    let r2 = (i64::from(fx) - 250).pow(2) + (i64::from(fy) - 250).pow(2);
    if r2 < 200 * 200 && (cell_x + cell_y) % 2 == 0 {
        [180, 110 + (cell_x * 20 % 100) as u8, 60]
    } else {
        [
            (90 + x / 40 % 100) as u8,
            (120 + y / 50 % 80) as u8,
            (150 - (x + y) / 80 % 90) as u8,
        ]
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let before = status_kib("VmRSS:");
    let cutter = Cutter::load(&adforge_models::default_models_dir());
    assert!(
        cutter.has_model(),
        "U²-Net-P is not installed: run scripts/fetch-models"
    );
    let loaded = status_kib("VmRSS:");
    let segmenter = adforge_models::SalientSegmenter::load(
        &adforge_models::default_models_dir().join(adforge_models::U2NETP_DIR),
    )
    .expect("model");

    let small = product_photo(320, 320, busy);
    let _ = segmenter.saliency(&small).expect("warm-up");
    let after_one_mask = status_kib("VmHWM:");
    let mask: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            segmenter.saliency(&small).expect("mask");
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();

    println!("| what | median ms | runs |");
    println!("|---|---:|---:|");
    println!(
        "| U²-Net-P mask, one 320x320 picture | {:.0} | {runs} |",
        median(mask)
    );
    for (name, photo) in [
        (
            "12 MP packshot on white (colour key)",
            product_photo(4000, 3000, |_, _| [255, 255, 255]),
        ),
        (
            "12 MP product on a busy photo (model)",
            product_photo(4000, 3000, busy),
        ),
    ] {
        let photo = DynamicImage::ImageRgb8(photo);
        let mut cut_ms = Vec::new();
        let mut png_ms = Vec::new();
        let mut method = String::new();
        let mut size = (0, 0);
        for _ in 0..runs {
            let t = Instant::now();
            let cut = cutter.cut(&photo).expect("cut-out");
            cut_ms.push(t.elapsed().as_secs_f64() * 1000.0);
            let t = Instant::now();
            encode_png(&cut.image).expect("png");
            png_ms.push(t.elapsed().as_secs_f64() * 1000.0);
            method = cut.method.to_string();
            size = (cut.image.width(), cut.image.height());
        }
        println!(
            "| {name}: cut-out ({method}, {}x{} out) | {:.0} | {runs} |",
            size.0,
            size.1,
            median(cut_ms)
        );
        println!("| {name}: PNG encoding | {:.0} | {runs} |", median(png_ms));
    }
    println!();
    println!("| memory | MiB |");
    println!("|---|---:|");
    println!(
        "| resident growth when the Cutter loads the model | {:.1} |",
        mib(loaded.saturating_sub(before))
    );
    println!(
        "| peak resident after one 320x320 mask | {:.1} |",
        mib(after_one_mask)
    );
    println!(
        "| peak resident after the 12 MP cut-outs (two 36 MB photos held) | {:.1} |",
        mib(status_kib("VmHWM:"))
    );
}
