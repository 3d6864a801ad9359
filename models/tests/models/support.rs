//! Shared helpers: the real models, loaded once per test binary, and the sample photos.

use std::path::PathBuf;
use std::sync::OnceLock;

use adforge_models::{
    EFFICIENTNET_DIR, EfficientNetEmbedder, MINILM_DIR, MiniLmEmbedder, SalientSegmenter,
    U2NETP_DIR,
};
use image::RgbImage;

/// The repository's `assets/samples` folder.
pub fn samples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../assets/samples")
}

/// A sample photo, decoded.
pub fn sample(name: &str) -> RgbImage {
    image::open(samples_dir().join(name))
        .unwrap_or_else(|e| panic!("cannot open sample {name}: {e}"))
        .to_rgb8()
}

fn load_or_explain<T>(what: &str, r: adforge_models::Result<T>) -> T {
    r.unwrap_or_else(|e| {
        panic!(
            "cannot load the {what} model: {e}\n(the models folder is filled by \
             `scripts/fetch-models`; `scripts/test` runs it before the tests)"
        )
    })
}

/// EfficientNet-Lite0 with the real weights, shared by every test of the binary.
pub fn efficientnet() -> &'static EfficientNetEmbedder {
    static MODEL: OnceLock<EfficientNetEmbedder> = OnceLock::new();
    MODEL.get_or_init(|| {
        let dir = adforge_models::default_models_dir().join(EFFICIENTNET_DIR);
        load_or_explain("EfficientNet-Lite0", EfficientNetEmbedder::load(&dir))
    })
}

/// MiniLM with the real weights, shared by every test of the binary.
pub fn minilm() -> &'static MiniLmEmbedder {
    static MODEL: OnceLock<MiniLmEmbedder> = OnceLock::new();
    MODEL.get_or_init(|| {
        let dir = adforge_models::default_models_dir().join(MINILM_DIR);
        load_or_explain("MiniLM", MiniLmEmbedder::load(&dir))
    })
}

/// U²-Net-P with the real weights, shared by every test of the binary.
pub fn u2netp() -> &'static SalientSegmenter {
    static MODEL: OnceLock<SalientSegmenter> = OnceLock::new();
    MODEL.get_or_init(|| {
        let dir = adforge_models::default_models_dir().join(U2NETP_DIR);
        load_or_explain("U²-Net-P", SalientSegmenter::load(&dir))
    })
}

/// Dot product (cosine similarity of unit vectors).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Euclidean length.
pub fn norm(a: &[f32]) -> f32 {
    dot(a, a).sqrt()
}
