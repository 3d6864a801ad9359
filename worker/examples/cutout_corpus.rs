//! Cut-out masks scored against the packshot corpus's true masks (issue 40, item 5).
//!
//! Every packshot of `scripts/packshot-corpus` (a product drawn by Chromium on a flat or
//! gradient studio ground, as PNG and as JPEG) goes through the cut-out path exactly as
//! `POST /v1/images/{id}/cutout` runs it: [`cutout_of`] on the file's bytes (probe, decode
//! under the decode budget, [`Cutter::cut`], PNG encoding, the blob store; a local one in a
//! temporary folder here), and the stored PNG is read back. Its alpha (at least one half),
//! placed at its `source_box` in the photo, is compared with the truth (the product drawn
//! on a transparent page, alpha at least one half): mask IoU, the share of the product kept
//! (recall: holes lower it) and the share of the mask that is product (precision: ground
//! or shadow kept lowers it).
//!
//! Prints Markdown tables, dev and test side by side, by ground (flat, gradient) and label
//! (light, dark), by image kind, shadow and ground style, then every image under IoU 0.95,
//! and writes one JSON line per image to `CORPUS/cutout-bench.jsonl`; `--diffs DIR` also
//! writes each image under 0.95 with what the mask lost in red and what it kept of the
//! ground in blue. The model
//! (U²-Net-P) is loaded when installed, as the server does.
//!
//!   cargo run --release -p adforge-worker --example cutout_corpus -- .tmp/packshot-corpus [--split dev] [--diffs DIR]
//!
//! Run by `scripts/bench-cutout-corpus`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use adforge_worker::blob::{BlobStore, LocalBlobStore};
use adforge_worker::cutout::Cutter;
use adforge_worker::cutout::store::cutout_of;
use bytes::Bytes;
use serde_json::{Value, json};

/// One image's score.
struct Score {
    split: String,
    ground: String,
    style: String,
    label: String,
    shadow: String,
    product: String,
    image: String,
    id: String,
    file: String,
    method: String,
    iou: f64,
    recall: f64,
    precision: f64,
    ms: f64,
}

/// The truth: pixels whose alpha is at least one half.
fn truth_mask(path: &Path) -> Result<(u32, u32, Vec<bool>), String> {
    let img = image::open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .into_rgba8();
    let (w, h) = img.dimensions();
    Ok((w, h, img.pixels().map(|p| p.0[3] >= 128).collect()))
}

/// The cut-out's mask (alpha at least one half) in the photo's `w` x `h` frame: each pixel
/// of `source_box` reads the nearest pixel of the cut-out (which is scaled down when the
/// product is larger than the matte's largest edge).
fn placed(cut: &image::RgbaImage, source_box: [u32; 4], w: u32, h: u32) -> Vec<bool> {
    let [bx, by, bw, bh] = source_box;
    let (cw, ch) = cut.dimensions();
    let mut got = vec![false; (w * h) as usize];
    if bw == 0 || bh == 0 || cw == 0 || ch == 0 {
        return got;
    }
    for y in by..(by + bh).min(h) {
        let cy = (((f64::from(y - by) + 0.5) * f64::from(ch) / f64::from(bh)) as u32).min(ch - 1);
        for x in bx..(bx + bw).min(w) {
            let cx =
                (((f64::from(x - bx) + 0.5) * f64::from(cw) / f64::from(bw)) as u32).min(cw - 1);
            got[(y * w + x) as usize] = cut.get_pixel(cx, cy).0[3] >= 128;
        }
    }
    got
}

/// IoU, recall and precision of `got` against `truth`.
fn overlap(got: &[bool], truth: &[bool]) -> (f64, f64, f64) {
    let (mut inter, mut g, mut t) = (0usize, 0usize, 0usize);
    for (a, b) in got.iter().zip(truth) {
        inter += usize::from(*a && *b);
        g += usize::from(*a);
        t += usize::from(*b);
    }
    let union = g + t - inter;
    let ratio = |n: usize, d: usize| if d == 0 { 0.0 } else { n as f64 / d as f64 };
    (ratio(inter, union), ratio(inter, t), ratio(inter, g))
}

fn text(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or("").to_owned()
}

/// The photo at half brightness with the product the mask lost in red and the ground or
/// shadow it kept in blue, written to `dir` as `<file name>.diff.png`.
fn write_diff(dir: &Path, photo: &Path, got: &[bool], truth: &[bool], w: u32, h: u32) {
    let Ok(img) = image::open(photo) else {
        return;
    };
    let img = img.into_rgb8();
    let out = image::RgbImage::from_fn(w, h, |x, y| {
        let i = (y * w + x) as usize;
        match (got[i], truth[i]) {
            (false, true) => image::Rgb([255, 0, 0]),
            (true, false) => image::Rgb([0, 80, 255]),
            _ => image::Rgb(img.get_pixel(x, y).0.map(|c| c / 2 + 64)),
        }
    });
    let name = photo.file_name().unwrap_or_default().to_string_lossy();
    let _ = std::fs::create_dir_all(dir);
    if let Err(e) = out.save(dir.join(format!("{name}.diff.png"))) {
        eprintln!("diff of {name} not written: {e}");
    }
}

async fn score_all(
    corpus: &Path,
    split: Option<&str>,
    diffs: Option<&Path>,
    cutter: Arc<Cutter>,
) -> Vec<Score> {
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(corpus.join("manifest.json"))
            .expect("CORPUS/manifest.json (run scripts/packshot-corpus)"),
    )
    .expect("manifest.json is JSON");
    let blob_dir = std::env::temp_dir().join(format!("cutout-corpus-{}", std::process::id()));
    let blobs = LocalBlobStore::new(blob_dir.clone(), "http://localhost/files");
    let mut scores = Vec::new();
    for shot in manifest["packshots"].as_array().expect("packshots") {
        let shot_split = text(shot, "split");
        if split.is_some_and(|s| s != shot_split) {
            continue;
        }
        let (w, h, truth) = match truth_mask(&corpus.join(text(shot, "mask"))) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("skipped {}: {e}", text(shot, "id"));
                continue;
            }
        };
        for file in shot["files"].as_array().into_iter().flatten() {
            let path: PathBuf = corpus.join(text(file, "file"));
            let bytes = Bytes::from(std::fs::read(&path).expect("packshot file"));
            let started = Instant::now();
            let made = cutout_of(&blobs, &cutter, bytes).await;
            let ms = started.elapsed().as_secs_f64() * 1e3;
            let (method, got) = match made {
                Ok((stored, _)) => {
                    let png = blobs
                        .get(&stored.key)
                        .await
                        .expect("blob store")
                        .expect("the stored cut-out");
                    let cut = image::load_from_memory(&png)
                        .expect("the cut-out decodes")
                        .into_rgba8();
                    (
                        stored.method.to_string(),
                        placed(&cut, stored.source_box, w, h),
                    )
                }
                Err(e) => (format!("refused: {e}"), vec![false; (w * h) as usize]),
            };
            let (iou, recall, precision) = overlap(&got, &truth);
            if let (Some(dir), true) = (diffs, iou < 0.95) {
                write_diff(dir, &path, &got, &truth, w, h);
            }
            scores.push(Score {
                split: shot_split.clone(),
                ground: text(shot, "ground"),
                style: text(shot, "ground_style"),
                label: text(shot, "label_class"),
                shadow: text(shot, "shadow"),
                product: text(shot, "product"),
                image: text(file, "kind"),
                id: text(shot, "id"),
                file: text(file, "file"),
                method,
                iou,
                recall,
                precision,
                ms,
            });
        }
    }
    let _ = std::fs::remove_dir_all(blob_dir);
    scores
}

fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// `dev / test` cells of one row: n, mean IoU, lowest IoU, share at IoU >= 0.95, mean
/// recall, mean precision.
fn row(label: &str, scores: &[&Score]) -> String {
    let mut cells: [Vec<String>; 6] = Default::default();
    for split in ["dev", "test"] {
        let s: Vec<&&Score> = scores.iter().filter(|s| s.split == split).collect();
        if s.is_empty() {
            for c in &mut cells {
                c.push("-".into());
            }
            continue;
        }
        let n = s.len() as f64;
        let mean = |f: fn(&Score) -> f64| s.iter().map(|x| f(x)).sum::<f64>() / n;
        cells[0].push(s.len().to_string());
        cells[1].push(format!("{:.3}", mean(|x| x.iou)));
        cells[2].push(format!(
            "{:.3}",
            s.iter().map(|x| x.iou).fold(f64::INFINITY, f64::min)
        ));
        cells[3].push(format!(
            "{:.0}%",
            100.0 * s.iter().filter(|x| x.iou >= 0.95).count() as f64 / n
        ));
        cells[4].push(format!("{:.3}", mean(|x| x.recall)));
        cells[5].push(format!("{:.3}", mean(|x| x.precision)));
    }
    let cells: Vec<String> = cells.iter().map(|c| c.join(" / ")).collect();
    format!("| {label} | {} |", cells.join(" | "))
}

fn print_tables(scores: &[Score]) {
    println!(
        "| packshots (dev / test) | n | mean IoU | lowest IoU | IoU >= 0.95 | product kept (recall) | mask is product (precision) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let all: Vec<&Score> = scores.iter().collect();
    let pick =
        |f: &dyn Fn(&Score) -> bool| all.iter().copied().filter(|s| f(s)).collect::<Vec<_>>();
    for ground in ["flat", "gradient"] {
        for label in ["light", "dark"] {
            println!(
                "{}",
                row(
                    &format!("{ground} ground, {label} label"),
                    &pick(&|s| s.ground == ground && s.label == label)
                )
            );
        }
        println!(
            "{}",
            row(
                &format!("**{ground} ground**"),
                &pick(&|s| s.ground == ground)
            )
        );
    }
    // The jar's and the can's labels run across the body from side to side, so they touch
    // the silhouette; the other products' labels lie inside the body.
    let across = |s: &Score| matches!(s.product.as_str(), "jar" | "can");
    println!(
        "{}",
        row(
            "light label across the silhouette (jar, can)",
            &pick(&|s| across(s) && s.label == "light")
        )
    );
    println!(
        "{}",
        row(
            "light label inside the body (bottle, tube, bag, box)",
            &pick(&|s| !across(s) && s.label == "light")
        )
    );
    for image in ["png", "jpeg"] {
        println!(
            "{}",
            row(&format!("{image} images"), &pick(&|s| s.image == image))
        );
    }
    for shadow in ["none", "drop", "contact"] {
        println!(
            "{}",
            row(&format!("shadow: {shadow}"), &pick(&|s| s.shadow == shadow))
        );
    }
    let mut styles: Vec<&str> = scores.iter().map(|s| s.style.as_str()).collect();
    styles.sort_unstable();
    styles.dedup();
    for style in styles {
        println!(
            "{}",
            row(
                &format!("ground style: {style}"),
                &pick(&|s| s.style == style)
            )
        );
    }
    println!("{}", row("**all**", &all));
    println!();
    let mut methods: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for s in scores {
        let m = if s.method.starts_with("refused") {
            "refused".to_owned()
        } else {
            s.method.clone()
        };
        methods.entry((s.split.clone(), m)).or_default().push(s.ms);
    }
    println!("| path taken | split | images | p50 ms | p95 ms |");
    println!("|---|---|---:|---:|---:|");
    for ((split, method), ms) in &methods {
        println!(
            "| {method} | {split} | {} | {:.0} | {:.0} |",
            ms.len(),
            quantile(ms.clone(), 0.5),
            quantile(ms.clone(), 0.95)
        );
    }
    println!();
    let mut low: Vec<&Score> = scores.iter().filter(|s| s.iou < 0.95).collect();
    low.sort_by(|a, b| a.iou.total_cmp(&b.iou));
    println!("Under IoU 0.95: {} of {} images.", low.len(), scores.len());
    for s in low {
        println!(
            "- {} ({}): IoU {:.3}, recall {:.3}, precision {:.3}, {} ({}, {} label, shadow {})",
            s.file, s.id, s.iou, s.recall, s.precision, s.method, s.style, s.label, s.shadow
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut corpus = None;
    let mut split = None;
    let mut diffs = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--split" => split = it.next().cloned(),
            "--diffs" => diffs = it.next().map(PathBuf::from),
            "-h" | "--help" => {
                eprintln!("usage: cutout_corpus CORPUS [--split dev|test] [--diffs DIR]");
                return;
            }
            _ => corpus = Some(PathBuf::from(a)),
        }
    }
    let corpus = corpus.unwrap_or_else(|| PathBuf::from(".tmp/packshot-corpus"));
    let cutter = Arc::new(Cutter::load(&adforge_models::default_models_dir()));
    eprintln!(
        "cut-out model {}",
        if cutter.has_model() {
            "loaded"
        } else {
            "not installed: colour key and source alpha only"
        }
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let scores = runtime.block_on(score_all(
        &corpus,
        split.as_deref(),
        diffs.as_deref(),
        cutter,
    ));
    let mut lines = String::new();
    for s in &scores {
        lines.push_str(
            &json!({
                "id": s.id, "file": s.file, "split": s.split, "ground": s.ground,
                "ground_style": s.style, "label_class": s.label, "shadow": s.shadow,
                "product": s.product,
                "image": s.image, "method": s.method, "iou": s.iou, "recall": s.recall,
                "precision": s.precision, "ms": s.ms,
            })
            .to_string(),
        );
        lines.push('\n');
    }
    if let Err(e) = std::fs::write(corpus.join("cutout-bench.jsonl"), lines) {
        eprintln!("cutout-bench.jsonl not written: {e}");
    }
    print_tables(&scores);
}
