//! Times the default models on this machine: `cargo run -p adforge-models --example
//! embed_timing [MODELS_DIR]`. Prints milliseconds per image / text (median of 20 runs after
//! a warm-up); a measurement, not a test.

use std::time::Instant;

use adforge_models::preprocess::Framing;
use adforge_models::{Models, default_models_dir};

fn median_ms(mut f: impl FnMut()) -> f64 {
    f();
    let mut times: Vec<f64> = (0..20)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
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
    let embed = median_ms(|| {
        models.image.embed_images(one).expect("embed");
    });
    let embed8 = median_ms(|| {
        models.image.embed_images(&batch).expect("embed");
    }) / 8.0;
    let classify = median_ms(|| {
        models
            .efficientnet
            .run(one, Framing::CenterCrop)
            .expect("classify");
    });
    let text = median_ms(|| {
        models
            .text
            .embed_texts(&["espresso coffee cup on a saucer, brown, product shot"])
            .expect("text");
    });
    println!(
        "EfficientNet-Lite0 image embedding (224, whole): {embed:.1} ms/image (batch 1), {embed8:.1} ms/image (batch 8)"
    );
    println!("EfficientNet-Lite0 classification (224, centre crop): {classify:.1} ms/image");
    println!("MiniLM text embedding: {text:.1} ms/text");
    Ok(())
}
