//! Reads reference images into blueprints, as the worker does for an image ad, and prints
//! one JSON line per file: the blueprint's text blocks (box, role, words), its picture
//! regions (box, outline, cut-out or framed), its solid shapes, logo slot and ground, the
//! ad format it classified, whether the ad would fall back to the built-in layout
//! (`Blueprint::unusable`) and why, and the analysis time. Boxes are in the reference's
//! own pixels (`[x, y, w, h]`). `scripts/bench-references` scores these lines against the
//! reference corpus's ground truth.
//!
//! The words are read by `tesseract` from the PATH, as the worker reads them (a reference
//! is analysed without its words when it is missing, or with `--no-ocr`).
//!
//! `--crops-only` reads words as the detector did before issue 40: only in the crops of the
//! blocks the shapes found (no whole-page read, no sheet of panels), for timing and scoring
//! today's detector against that one in one run.
//!
//!   cargo run -p adforge-worker --example analyse -- [--no-ocr|--crops-only] a.png b.jpg ...
//!   ls refs/*.png | cargo run -p adforge-worker --example analyse     # paths on stdin

use std::io::{BufRead, Write};
use std::time::Instant;

use adforge_worker::blueprint::detect::WordReader;
use adforge_worker::blueprint::{Background, Blueprint, Rect, analyse_image_with};
use adforge_worker::ocr::Tesseract;
use serde_json::{Value, json};

fn main() {
    let mut ocr = true;
    let mut crops_only = false;
    let mut paths = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--no-ocr" => ocr = false,
            "--crops-only" => crops_only = true,
            "-h" | "--help" => {
                eprintln!(
                    "usage: analyse [--no-ocr|--crops-only] IMAGE... (or image paths on stdin)"
                );
                return;
            }
            _ => paths.push(arg),
        }
    }
    if paths.is_empty() {
        paths = std::io::stdin()
            .lock()
            .lines()
            .map_while(Result::ok)
            .map(|l| l.trim().to_owned())
            .filter(|l| !l.is_empty())
            .collect();
    }
    let tesseract = if ocr {
        let t = Tesseract::on_path().map(Tesseract::warm);
        if t.is_none() {
            eprintln!("tesseract is not on PATH: references are analysed without their words");
        }
        t
    } else {
        None
    };
    let crops = tesseract.as_ref().map(CropsOnly);
    let reader = match (&tesseract, &crops) {
        (Some(_), Some(c)) if crops_only => Some(c as &dyn WordReader),
        (Some(t), _) => Some(t as &dyn WordReader),
        _ => None,
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for path in paths {
        let line = match std::fs::read(&path) {
            Err(e) => json!({"path": path, "error": format!("cannot read the file: {e}")}),
            Ok(bytes) => {
                let started = Instant::now();
                match analyse_image_with(&bytes, reader) {
                    Ok(bp) => describe(&path, &bp, started.elapsed().as_secs_f64() * 1000.0),
                    Err(e) => json!({"path": path, "error": e}),
                }
            }
        };
        // A closed pipe ends the run.
        if writeln!(out, "{line}").is_err() {
            return;
        }
    }
}

/// A reader of block crops only (the pages and sheets it is asked for read as nothing).
struct CropsOnly<'a>(&'a Tesseract);

impl WordReader for CropsOnly<'_> {
    fn read_crops(&self, crops: &[image::GrayImage]) -> Option<Vec<Vec<String>>> {
        self.0.read_crops(crops)
    }
}

/// The blueprint as one JSON object, boxes in the reference's pixels.
fn describe(path: &str, bp: &Blueprint, ms: f64) -> Value {
    let (sw, sh) = (bp.source_width as f32, bp.source_height as f32);
    let px = |r: &Rect| {
        json!([
            round(r.x * sw),
            round(r.y * sh),
            round(r.w * sw),
            round(r.h * sh)
        ])
    };
    let texts: Vec<Value> = bp
        .texts
        .iter()
        .map(|t| {
            json!({
                "box": px(&t.rect),
                "role": t.role.key(),
                "words": t.words,
                "lines": t.lines,
                "upper": t.upper,
                "align": t.align,
            })
        })
        .collect();
    let images: Vec<Value> = bp
        .images
        .iter()
        .map(|i| {
            json!({
                "box": px(&i.rect),
                "shape": i.shape,
                "kind": if i.cutout { "cutout_product" } else { "framed_photo" },
            })
        })
        .collect();
    let shapes: Vec<Value> = bp
        .shapes
        .iter()
        .map(|s| json!({"box": px(&s.rect), "role": s.role, "shape": s.shape}))
        .collect();
    let ground = match bp.background {
        Background::Solid { .. } => "solid",
        Background::Gradient { .. } => "gradient",
        Background::Photo { .. } => "photo",
    };
    let unusable = bp.unusable();
    json!({
        "path": path,
        "width": bp.source_width,
        "height": bp.source_height,
        "ground": ground,
        "texts": texts,
        "images": images,
        "shapes": shapes,
        "logo": bp.logo.as_ref().map(px),
        "words_read": bp.words_read,
        "format": bp.format,
        "format_from": bp.format_from,
        "fell_back": unusable.is_some(),
        "fallback_reason": unusable,
        "ms": round(ms as f32),
    })
}

/// `v` to one decimal.
fn round(v: f32) -> f64 {
    (f64::from(v) * 10.0).round() / 10.0
}
