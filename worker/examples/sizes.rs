//! One ad in several sizes (issue 42, item 1): an editable ad made from a reference through
//! the worker's own pipeline, then resized from its tree to each size, the PNGs written and
//! put side by side on one contact sheet; or, with `--bench N`, the time of each step.
//!
//!   cargo run --release -p adforge-worker --example sizes -- --out DIR [--sheet sheet.png] [REFERENCE]
//!   cargo run --release -p adforge-worker --example sizes -- --bench 5 [REFERENCE]
//!
//! The reference defaults to `assets/swipe-default/15-split_text_left-4x5.png`; the product
//! is `assets/samples/coffee.png` with facts (a price, a review, a stat, benefits). `--out`
//! writes `DIR/<size>.png` (each 4K render, 1080 px on its long side) and the sheet (the
//! sizes at one height, with their names). `--bench N` prints, for each size, the median over
//! N runs of the re-layout alone ([`relayout::relayout`]) and of the resize job (fetch,
//! re-layout, check render and rules, 4K render, store), beside the median of the whole first
//! ad (reference read, copy, fill, checks, 4K render) in the same run.

use std::sync::Arc;
use std::time::Instant;

use adforge_worker::blob::{BlobStore, LocalBlobStore};
use adforge_worker::generate::relayout;
use adforge_worker::protocol::{AdBrief, Audience, Brand, Logo, Money, Product, Variant};
use adforge_worker::{
    AdCompleted, GenerateAdHandler, GenerateAdJob, GenerateConfig, Job, JobHandler, JobQueue,
    JobResult, MemoryQueue, ProgressSink, QueueConfig, TargetSize,
};
use image::{DynamicImage, Rgba, RgbaImage};
use serde_json::{Value, json};

/// The sizes the sheet shows, in its order (first row, then second).
const SHEET: [&str; 5] = ["1:1", "4:5", "9:16", "1.91:1", "300x250"];
/// The sizes timed.
const BENCH: [&str; 6] = ["1:1", "4:5", "9:16", "1.91:1", "2:3", "300x250"];

fn job(ad_id: &str, reference: String, product: String, logo: String) -> GenerateAdJob {
    GenerateAdJob {
        ad_id: ad_id.into(),
        org_id: "org_sizes".into(),
        version: 1,
        editable: true,
        reference_ad_url: reference,
        brief: AdBrief {
            prompt: None,
            brand: Brand {
                id: "br_sizes".into(),
                name: "Northwind".into(),
                color_palettes: json!({"primary": ["#1F3A5F", "#F4EBDD"], "accent": ["#E07A3F"]}),
                fonts: json!([{"name": "Playfair Display", "role": "heading"}, {"name": "Lato", "role": "body"}]),
                logos: vec![Logo {
                    url: logo,
                    theme: Some("dark".into()),
                }],
                details: Value::Null,
            },
            product: Product {
                id: "prod_sizes".into(),
                name: "Northwind Cold Brew".into(),
                description: Some(
                    "Smooth, low-acid cold brew concentrate, steeped for 18 hours. Makes 16 cups."
                        .into(),
                ),
                details: json!({
                    "benefits": ["Café-quality coffee at home", "Ready in a minute"],
                    "reviews": [{"author": "Maria Lopez", "text": "The smoothest cold brew I have had at home.", "rating": 5}],
                }),
            },
            audience: Audience {
                id: "aud_sizes".into(),
                name: "Busy parents".into(),
                description: Some("Parents who need a calm start".into()),
                details: json!({"pain_points": ["Rushed mornings"], "motivations": ["Calm starts"]}),
            },
            variant_image_urls: vec![product],
            variant: Some(Variant {
                id: "pv_1".into(),
                name: "1 l".into(),
                price: Some(Money {
                    amount: 2400,
                    currency: "usd".into(),
                }),
                compare_at_price: None,
            }),
            created_at: Some("2026-06-01T09:00:00.000Z".into()),
        },
        template: None,
        size: None,
    }
}

async fn run_job(handler: &GenerateAdHandler, job: GenerateAdJob) -> Result<AdCompleted, String> {
    let queue = Arc::new(MemoryQueue::new(QueueConfig::default()));
    queue
        .enqueue(Job::GenerateImageAd(job))
        .await
        .map_err(|e| e.to_string())?;
    let claimed = queue
        .claim("sizes", std::time::Duration::from_secs(1))
        .await
        .map_err(|e| e.to_string())?
        .ok_or("no job claimed")?;
    let sink = ProgressSink::new(queue.clone() as Arc<dyn JobQueue>, &claimed);
    handler
        .handle(claimed.job, sink)
        .await
        .map_err(|e| format!("{e:?}"))
}

fn tree_of(done: &AdCompleted) -> Value {
    match &done.result {
        JobResult::ImageAd(r) => r.json_tree.clone().unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn logo_png() -> Vec<u8> {
    let img = RgbaImage::from_fn(360, 100, |x, y| {
        let (dx, dy) = (x as f32 - 50.0, y as f32 - 50.0);
        if dx * dx + dy * dy < 1600.0 || ((110..350).contains(&x) && (30..70).contains(&y)) {
            Rgba([24, 24, 32, 255])
        } else {
            Rgba([0, 0, 0, 0])
        }
    });
    let mut out = std::io::Cursor::new(Vec::new());
    DynamicImage::ImageRgba8(img)
        .write_to(&mut out, image::ImageFormat::Png)
        .expect("a PNG");
    out.into_inner()
}

/// The sizes at one height per row (first row: the first three, second: the rest), on a
/// light ground with air between them.
fn sheet(pngs: &[(String, DynamicImage)]) -> RgbaImage {
    let (gap, heights) = (24u32, [420u32, 300]);
    let rows: [&[(String, DynamicImage)]; 2] =
        [&pngs[..3.min(pngs.len())], &pngs[3.min(pngs.len())..]];
    let scaled: Vec<Vec<DynamicImage>> = rows
        .iter()
        .zip(heights)
        .map(|(row, h)| {
            row.iter()
                .map(|(_, img)| {
                    let w = (f64::from(img.width()) * f64::from(h) / f64::from(img.height()))
                        .round() as u32;
                    img.resize_exact(w, h, image::imageops::FilterType::Lanczos3)
                })
                .collect()
        })
        .collect();
    let width = scaled
        .iter()
        .map(|r| r.iter().map(|i| i.width() + gap).sum::<u32>() + gap)
        .max()
        .unwrap_or(gap);
    let height = heights.iter().sum::<u32>() + 3 * gap;
    let mut out = RgbaImage::from_pixel(width, height, Rgba([236, 236, 232, 255]));
    let mut y = gap;
    for (row, h) in scaled.iter().zip(heights) {
        let total: u32 = row
            .iter()
            .map(|i| i.width() + gap)
            .sum::<u32>()
            .saturating_sub(gap);
        let mut x = (width - total) / 2;
        for img in row {
            image::imageops::overlay(&mut out, &img.to_rgba8(), i64::from(x), i64::from(y));
            x += img.width() + gap;
        }
        y += h + gap;
    }
    out
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut out = None;
    let mut sheet_path = None;
    let mut bench = 0usize;
    let mut reference = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--out" => out = args.next().map(std::path::PathBuf::from),
            "--sheet" => sheet_path = args.next().map(std::path::PathBuf::from),
            "--bench" => bench = args.next().and_then(|n| n.parse().ok()).unwrap_or(5),
            other => reference = Some(other.to_owned()),
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let reference = reference
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("assets/swipe-default/15-split_text_left-4x5.png"));
    let dir = tempfile::tempdir().expect("a temporary folder");
    let blobs = Arc::new(LocalBlobStore::new(dir.path().into(), "http://blobs.sizes"));
    let store = blobs.clone() as Arc<dyn BlobStore>;
    let handler = GenerateAdHandler::new(GenerateConfig::new(store.clone()));
    let put = |key: String, bytes: Vec<u8>| {
        let store = store.clone();
        async move {
            store
                .put(&key, bytes.into())
                .await
                .expect("the blob store takes the file");
            store.url(&key)
        }
    };
    let product = put(
        "in/coffee.png".into(),
        std::fs::read(root.join("assets/samples/coffee.png")).expect("assets/samples/coffee.png"),
    )
    .await;
    let logo = put("in/logo.png".into(), logo_png()).await;
    let refer = put(
        "in/reference.png".into(),
        std::fs::read(&reference).unwrap_or_else(|e| panic!("{}: {e}", reference.display())),
    )
    .await;
    let first_job = |n: usize| {
        job(
            &format!("ia_first{n}"),
            refer.clone(),
            product.clone(),
            logo.clone(),
        )
    };

    if bench > 0 {
        let mut whole = Vec::new();
        let mut first = Value::Null;
        for n in 0..bench {
            let t = Instant::now();
            let done = run_job(&handler, first_job(n)).await.expect("the first ad");
            whole.push(t.elapsed().as_secs_f64() * 1000.0);
            first = tree_of(&done);
        }
        println!(
            "| size | re-layout (ms) | resize job (ms) | whole first ad (ms) | resize / whole |"
        );
        println!("|---|---:|---:|---:|---:|");
        let whole = median(whole);
        for name in BENCH {
            let size = TargetSize::placement(name).expect("a placement");
            let (mut lay, mut job_ms) = (Vec::new(), Vec::new());
            for n in 0..bench {
                let t = Instant::now();
                relayout::relayout(handler.renderer(), &first, &size).expect("laid out");
                lay.push(t.elapsed().as_secs_f64() * 1000.0);
                let mut j = first_job(n);
                j.ad_id = format!("ia_resize_{n}");
                j.size = Some(TargetSize {
                    source_tree: Some(first.clone()),
                    ..size.clone()
                });
                let t = Instant::now();
                run_job(&handler, j).await.expect("the resize");
                job_ms.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            let (lay, job_ms) = (median(lay), median(job_ms));
            println!(
                "| {name} | {lay:.1} | {job_ms:.0} | {whole:.0} | {:.2} |",
                job_ms / whole
            );
        }
        return;
    }

    let done = run_job(&handler, first_job(0)).await.expect("the first ad");
    let first = tree_of(&done);
    let out = out.unwrap_or_else(|| std::path::PathBuf::from("target/sizes"));
    std::fs::create_dir_all(&out).expect("the output folder");
    let mut pngs = Vec::new();
    for (n, name) in SHEET.iter().enumerate() {
        let size = TargetSize::placement(name).expect("a placement");
        let mut j = first_job(0);
        j.ad_id = format!("ia_size{n}");
        j.size = Some(TargetSize {
            source_tree: Some(first.clone()),
            ..size
        });
        let done = match run_job(&handler, j).await {
            Ok(d) => d,
            Err(e) => {
                eprintln!("{name}: {e}");
                continue;
            }
        };
        let key = adforge_worker::generate::blob_key(&done.ad_id, 1);
        let png = store
            .get(&key)
            .await
            .ok()
            .flatten()
            .expect("the stored PNG");
        let img = image::load_from_memory(&png).expect("a PNG");
        let small = img.resize(1080, 1080, image::imageops::FilterType::Lanczos3);
        let file = out.join(format!("{}.png", name.replace([':', '.'], "_")));
        small.save(&file).expect("written");
        println!(
            "{name}: {}x{} -> {}",
            img.width(),
            img.height(),
            file.display()
        );
        pngs.push((name.to_string(), img));
    }
    if let Some(path) = sheet_path {
        sheet(&pngs).save(&path).expect("the sheet is written");
        println!("sheet: {}", path.display());
    }
}
