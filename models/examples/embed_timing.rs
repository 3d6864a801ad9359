//! Times the default models on this machine: `cargo run -p adforge-models --example
//! embed_timing [MODELS_DIR]`. Prints wall-clock milliseconds per image / text (median of 20
//! runs after a warm-up) and, on Linux, the CPU time they took (all threads), which a busy
//! shared machine inflates less than wall-clock time. A measurement, not a test.

use std::time::Instant;

use adforge_models::preprocess::Framing;
use adforge_models::{Models, default_models_dir};

/// CPU time of this process so far (user + system, all threads), in ms, from /proc.
fn cpu_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) * 10.0) // USER_HZ is 100 on Linux
}

/// Median wall-clock ms of 20 runs after a warm-up, and mean CPU ms per run.
fn measure(runs_per_item: f64, mut f: impl FnMut()) -> (f64, f64) {
    f();
    let cpu0 = cpu_ms().unwrap_or(0.0);
    let mut times: Vec<f64> = (0..20)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    let cpu = (cpu_ms().unwrap_or(0.0) - cpu0) / 20.0;
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2] / runs_per_item, cpu / runs_per_item)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .map_or_else(default_models_dir, Into::into);
    let t = Instant::now();
    let models = Models::load(&dir)?;
    println!("load: {:.0} ms", t.elapsed().as_secs_f64() * 1000.0);
    let photo = image::open(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../assets/samples/coffee.png"
    ))?
    .to_rgb8();
    let batch: Vec<_> = (0..8).map(|_| photo.clone()).collect();
    let one = std::slice::from_ref(&photo);
    let embed = measure(1.0, || {
        models.image.embed_images(one).expect("embed");
    });
    let embed8 = measure(8.0, || {
        models.image.embed_images(&batch).expect("embed");
    });
    let classify = measure(1.0, || {
        models
            .efficientnet
            .run(one, Framing::CenterCrop)
            .expect("classify");
    });
    let text = measure(1.0, || {
        models
            .text
            .embed_texts(&["espresso coffee cup on a saucer, brown, product shot"])
            .expect("text");
    });
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    println!("{cores} cores; wall ms per item (CPU ms per item, all threads)");
    println!(
        "EfficientNet-Lite0 image embedding (224, whole): {:.1} ({:.0}) at batch 1, {:.1} ({:.0}) at batch 8",
        embed.0, embed.1, embed8.0, embed8.1
    );
    println!(
        "EfficientNet-Lite0 classification (224, centre crop): {:.1} ({:.0})",
        classify.0, classify.1
    );
    println!("MiniLM text embedding: {:.1} ({:.0})", text.0, text.1);
    Ok(())
}
