//! A `--backend gpu` render node beside a `--backend cpu` one on the same Redis (issue 10):
//! both take ads from one stream, each ad completes whichever drew it, and the ads of the
//! two backends, made from the same inputs, look alike.
//!
//! The GPU worker accepts any Vulkan adapter, Mesa's software lavapipe included
//! (`mesa-vulkan-drivers`, which `scripts/test` installs); the test skips with a printed
//! reason only where no Vulkan adapter exists at all.

use adforge_renderer::backend::gpu::{AdapterKind, GpuContext};

use crate::Operator;
use crate::cluster::Cluster;
use crate::flows::{create, ready, settled};

/// Largest per-channel difference that counts as "the same" between the two backends'
/// PNGs, and the share of channel values allowed over it: the renderer's GPU parity
/// tolerance (`renderer/tests/render/gpu.rs`), here on decoded (unpremultiplied) PNGs.
const CHANNEL_LIMIT: u8 = 2;
const SHARE_OVER: f64 = 0.001;
const CEILING: u8 = 16;

/// At most this many rounds of two ads before a worker that never drew one fails the test.
const ROUNDS: usize = 8;

/// The `rendered` lines of a worker's log that name `backend` (`Cpu` or `Gpu`).
fn drawn_by(log: &str, backend: &str) -> usize {
    log.lines()
        .map(strip_ansi)
        .filter(|l| l.contains(" rendered") && l.contains(&format!("backend={backend}")))
        .count()
}

/// A log line without its terminal colour codes.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// (values over the limit, worst difference, share over) between two RGBA images.
fn parity(a: &image::RgbaImage, b: &image::RgbaImage) -> (usize, u8, f64) {
    assert_eq!(a.dimensions(), b.dimensions());
    let mut over = 0usize;
    let mut worst = 0u8;
    for (x, y) in a.as_raw().iter().zip(b.as_raw()) {
        let d = x.abs_diff(*y);
        worst = worst.max(d);
        if d > CHANNEL_LIMIT {
            over += 1;
        }
    }
    (over, worst, over as f64 / a.as_raw().len() as f64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gpu_worker_beside_a_cpu_worker_draws_alike() {
    match GpuContext::new(AdapterKind::Any) {
        Ok(ctx) => println!("GPU worker on {}", ctx.adapter()),
        Err(e) => {
            println!("SKIPPED GPU worker beside a CPU worker: {e}");
            return;
        }
    }
    let mut cluster = Cluster::start(0).await;
    let cpu = cluster.add_worker_with(&["--backend", "cpu"]);
    let gpu = cluster.add_worker_with(&["--backend", "gpu"]);
    let log = |n: usize| {
        std::fs::read_to_string(cluster.data_dir().join(format!("worker-{n}.log")))
            .unwrap_or_default()
    };
    let org = cluster.org("Backends", "50.00");
    let r = ready(&cluster, &org).await;

    // Each worker renders one job at a time, so two ads created together go to both
    // workers once both are listening; rounds repeat until each backend has drawn one.
    let mut ads = Vec::new();
    for _ in 0..ROUNDS {
        let batch = [
            create(&cluster, &org, r.flat()).await,
            create(&cluster, &org, r.flat()).await,
        ];
        for id in &batch {
            let ad = settled(&cluster, &org, id, || cluster.logs()).await;
            assert_eq!(ad["status"], "completed", "{ad}\n{}", cluster.logs());
            ads.push(ad);
        }
        if drawn_by(&log(cpu), "Cpu") > 0 && drawn_by(&log(gpu), "Gpu") > 0 {
            break;
        }
    }
    let (on_cpu, on_gpu) = (drawn_by(&log(cpu), "Cpu"), drawn_by(&log(gpu), "Gpu"));
    println!(
        "{} ads: {on_cpu} drawn by the CPU worker, {on_gpu} by the GPU worker",
        ads.len()
    );
    assert!(on_cpu > 0, "the CPU worker drew no ad\n{}", cluster.logs());
    assert!(
        on_gpu > 0,
        "the GPU worker drew no ad on the GPU\n{}",
        cluster.logs()
    );
    assert_eq!(
        drawn_by(&log(cpu), "Gpu"),
        0,
        "--backend cpu drew on the GPU"
    );
    assert_eq!(
        drawn_by(&log(gpu), "Cpu"),
        0,
        "the GPU worker fell back to the CPU\n{}",
        log(gpu)
    );
    assert_eq!(
        on_cpu + on_gpu,
        ads.len(),
        "every ad was drawn once\n{}",
        cluster.logs()
    );

    // Same inputs, so every ad is the same picture whichever backend drew it: each PNG
    // against the first is within the parity tolerance (and at least one pair crosses
    // backends, as both drew some).
    let mut images = Vec::new();
    for ad in &ads {
        let url = ad["image_url"].as_str().expect("image_url");
        let bytes = cluster
            .http
            .get(url)
            .send()
            .await
            .expect("fetch PNG")
            .bytes()
            .await
            .expect("PNG bytes");
        images.push(image::load_from_memory(&bytes).expect("a PNG").to_rgba8());
    }
    for (ad, img) in ads.iter().zip(&images).skip(1) {
        let (over, worst, share) = parity(&images[0], img);
        println!(
            "{} vs {}: {over} values > {CHANNEL_LIMIT} ({:.4} %), worst {worst}",
            ad["id"],
            ads[0]["id"],
            share * 100.0
        );
        assert!(
            share <= SHARE_OVER && worst <= CEILING,
            "{} differs from {}: {over} values over {CHANNEL_LIMIT}, worst {worst}",
            ad["id"],
            ads[0]["id"]
        );
    }
}
