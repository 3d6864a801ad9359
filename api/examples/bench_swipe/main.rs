//! Swipe-file speed, printed as Markdown table rows (scripts/bench-swipe runs it on a
//! release build and prints the tables):
//!
//! - `ingest [N]`: the ingest pipeline (`Ingestor::measure`: decode, preview, EfficientNet-Lite0
//!   vector and labels, Tesseract, MiniLM caption vector) on the first N (default all) real
//!   images of `assets/samples` and `assets/swipe-default`: milliseconds per image by stage
//!   (one at a time), then images per minute with two at a time (as `--workers 2` runs
//!   them), with and without OCR. Storing the preview and SQL are not included.
//! - `search [SIZES…]` (default 10000 100000): synthetic designs (random unit vectors, 384-d
//!   caption and 1280-d image, aspect ratio and industry spread evenly, half the organisation's
//!   own uploads and half a subscribed data source's) written straight into a temporary SQLite
//!   file; then the search index (`SearchIndex::search`, what POST /v1/swipe-files/search
//!   runs after embedding the query): the first query (which loads the index) and p50/p99
//!   over 50 queries, top 20, without and with filters, for both kinds. Exact: recall 1.0 by
//!   construction. Query embedding (MiniLM, about 40 ms CPU per text query) is not included.
//!
//! - `scale [N]` (default 1000000): approximate search at scale against the exact scorer
//!   in the same run (see `scale.rs`).
//!
//! ```sh
//! cargo run --release -p adforge-api --example bench_swipe -- scale 1000000
//! cargo run --release -p adforge-api --example bench_swipe -- ingest
//! cargo run --release -p adforge-api --example bench_swipe -- search 10000 100000
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod scale;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use adforge_api::store::Db;
use adforge_api::swipe::filter::SwipeFilter;
use adforge_api::swipe::index::{Search, SearchIndex};
use adforge_api::swipe::vectors;
use adforge_worker::swipe::ingest::{Ingestor, StageTimes};
use adforge_worker::swipe::taxonomy::{ASPECT_RATIOS, INDUSTRIES};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let v = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (v >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }

    fn unit(&mut self, dim: usize) -> Vec<f32> {
        let v: Vec<f32> = (0..dim).map(|_| self.next()).collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        v.into_iter().map(|x| x / n).collect()
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    ms(sorted[i])
}

/// Resident memory of this process in MB (Linux).
fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn images() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    for dir in ["assets/samples", "assets/swipe-default"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .expect("assets folder")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| matches!(e, "png" | "jpg" | "jpeg" | "webp"))
            })
            .collect();
        files.sort();
        out.extend(files);
    }
    out
}

fn ingest(limit: Option<usize>) {
    let models_dir = adforge_models::default_models_dir();
    let models = Arc::new(
        adforge_models::Models::load(&models_dir)
            .expect("the models (run scripts/fetch-models first)"),
    );
    let blobs: Arc<dyn adforge_api::blob::BlobStore> =
        Arc::new(adforge_api::blob::LocalBlobStore::new(
            std::env::temp_dir().join("adforge-bench-unused"),
            "http://unused",
        ));
    let tesseract = Ingestor::tesseract_on_path();
    let mut files = images();
    if let Some(n) = limit {
        files.truncate(n);
    }
    let bytes: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    let with_ocr =
        Ingestor::new(models.clone(), blobs.clone(), &models_dir).with_tesseract(tesseract.clone());
    let without_ocr = Ingestor::new(models, blobs, &models_dir).with_tesseract(None);
    // Warm-up: the first pass through the models allocates their buffers.
    without_ocr.measure(&bytes[0]).unwrap();

    println!(
        "ingest: {} real images (assets/samples + assets/swipe-default), OCR {}",
        bytes.len(),
        if tesseract.is_some() {
            "by tesseract"
        } else {
            "unavailable (tesseract not on PATH)"
        }
    );
    println!(
        "| ingest | decode ms/image | model ms/image | OCR ms/image | total ms/image | images/min |"
    );
    println!("|---|---|---|---|---|---|");
    for (name, ingestor) in [
        ("one at a time, with OCR", &with_ocr),
        ("one at a time, without OCR", &without_ocr),
    ] {
        if name.contains("with OCR") && tesseract.is_none() {
            continue;
        }
        let mut sum = StageTimes::default();
        let started = Instant::now();
        for b in &bytes {
            let (_, t) = ingestor.measure(b).unwrap();
            sum.decode += t.decode;
            sum.model += t.model;
            sum.ocr += t.ocr;
        }
        let wall = started.elapsed();
        let n = bytes.len() as f64;
        println!(
            "| {name} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} |",
            ms(sum.decode) / n,
            ms(sum.model) / n,
            ms(sum.ocr) / n,
            ms(wall) / n,
            n / wall.as_secs_f64() * 60.0
        );
    }
    for (name, ingestor) in [
        ("two at a time (--workers 2), with OCR", &with_ocr),
        ("two at a time (--workers 2), without OCR", &without_ocr),
    ] {
        if name.contains("with OCR") && tesseract.is_none() {
            continue;
        }
        let next = std::sync::atomic::AtomicUsize::new(0);
        let started = Instant::now();
        std::thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(b) = bytes.get(i) else { break };
                        ingestor.measure(b).unwrap();
                    }
                });
            }
        });
        let wall = started.elapsed();
        let n = bytes.len() as f64;
        println!(
            "| {name} | | | | {:.0} (wall / images) | {:.0} |",
            ms(wall) / n,
            n / wall.as_secs_f64() * 60.0
        );
    }
}

async fn search(sizes: Vec<usize>) {
    println!(
        "search: exact (int8 dot products over every candidate that passes the filters, top-k heap), recall 1.0 by construction; top 20; 50 queries after the first"
    );
    println!("| designs | vectors | filter | first query (loads the index) ms | p50 ms | p99 ms |");
    println!("|---|---|---|---|---|---|");
    for n in sizes {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = Db::open(dir.path()).await.expect("db");
        let org = adforge_api::orgs::create_org(&db, "bench")
            .await
            .expect("org");
        let org_id = org["id"].as_str().expect("org id").to_string();
        let source =
            adforge_api::resources::swipe_files::sources::create(&db, "bench collection", true)
                .await
                .expect("source");
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let started = Instant::now();
        for chunk in (0..n).collect::<Vec<_>>().chunks(5000) {
            let mut tx = db.begin_write().await.expect("tx");
            for &i in chunk {
                let id = format!("sf_bench{i:07}");
                let own = i % 2 == 0;
                adforge_api::store::query(
                    "INSERT INTO swipe_files (id, org_id, data_source_id, source, blob_key, status, aspect_ratio, industry, created_at, updated_at) \
                     VALUES (?, ?, ?, ?, 'x', 'ready', ?, ?, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
                )
                .bind(&id)
                .bind(own.then_some(org_id.as_str()))
                .bind((!own).then_some(source.as_str()))
                .bind(if own { "upload" } else { "svc_managed" })
                .bind(ASPECT_RATIOS[i % ASPECT_RATIOS.len()].0)
                .bind(INDUSTRIES[i % INDUSTRIES.len()].0)
                .execute(&mut *tx)
                .await
                .expect("insert");
                for (kind, dim) in [(vectors::TEXT, 384), (vectors::IMAGE, 1280)] {
                    adforge_api::store::query("INSERT INTO swipe_file_vectors (swipe_file_id, kind, model_id, dim, vector) VALUES (?, ?, 'bench', ?, ?)")
                        .bind(&id)
                        .bind(kind)
                        .bind(dim as i64)
                        .bind(vectors::encode(&rng.unit(dim)))
                        .execute(&mut *tx)
                        .await
                        .expect("insert vector");
                }
            }
            tx.commit().await.expect("commit");
        }
        eprintln!(
            "{n} synthetic designs written in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let ready = SwipeFilter {
            include_own: true,
            status: Some("ready".into()),
            ..SwipeFilter::default()
        };
        let filters = [
            ("none", ready.clone()),
            (
                "aspect_ratio=1:1",
                SwipeFilter {
                    aspect_ratio: vec!["1:1".into()],
                    ..ready.clone()
                },
            ),
            (
                "industry (2 values) + aspect_ratio (2 values)",
                SwipeFilter {
                    aspect_ratio: vec!["1:1".into(), "4:5".into()],
                    industry: vec![INDUSTRIES[0].0.into(), INDUSTRIES[6].0.into()],
                    ..ready.clone()
                },
            ),
            (
                "data_source_ids= (own uploads only)",
                SwipeFilter {
                    data_source_ids: Some(vec![]),
                    ..ready.clone()
                },
            ),
        ];
        let index = SearchIndex::default();
        let before = rss_mb();
        for (kind, dim, label) in [
            (vectors::TEXT, 384, "caption 384-d (text query)"),
            (vectors::IMAGE, 1280, "image 1280-d (by example)"),
        ] {
            for (name, filter) in &filters {
                let mut times = Vec::new();
                let mut first = Duration::ZERO;
                for q in 0..51 {
                    let query = vectors::Query::new("bench", &rng.unit(dim));
                    let t = Instant::now();
                    let hits = index
                        .search(
                            &db,
                            &Search {
                                org_id: &org_id,
                                filter,
                                kind,
                                query: &query,
                                exclude: None,
                                min: -1.0,
                                limit: 20,
                            },
                        )
                        .await
                        .expect("search");
                    let took = t.elapsed();
                    assert_eq!(hits.len(), 20);
                    if q == 0 {
                        first = took;
                    } else {
                        times.push(took);
                    }
                }
                times.sort();
                println!(
                    "| {n} | {label} | {name} | {:.0} | {:.1} | {:.1} |",
                    ms(first),
                    pct(&times, 0.5),
                    pct(&times, 0.99)
                );
            }
        }
        eprintln!(
            "{n} designs: the index of both kinds added {:.0} MB of resident memory",
            rss_mb() - before
        );
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("ingest") => ingest(args.get(1).and_then(|a| a.parse().ok())),
        Some("search") | None => {
            let sizes: Vec<usize> = args.iter().skip(1).filter_map(|a| a.parse().ok()).collect();
            search(if sizes.is_empty() {
                vec![10_000, 100_000]
            } else {
                sizes
            })
            .await;
        }
        Some("scale") => {
            scale::scale(
                args.get(1)
                    .and_then(|a| a.parse().ok())
                    .unwrap_or(1_000_000),
            )
            .await;
        }
        Some("scale-query") => {
            scale::query_child(std::path::Path::new(args.get(1).map_or("", String::as_str))).await;
        }
        Some(other) => {
            eprintln!("unknown mode `{other}`: use `ingest [N]`, `search [SIZES…]` or `scale [N]`");
            std::process::exit(2);
        }
    }
}
