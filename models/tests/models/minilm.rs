//! MiniLM with the real weights.

use adforge_models::{Embedder, Error};
use image::RgbImage;

use crate::support::{dot, minilm, norm};

#[test]
fn coffee_is_closer_to_espresso_than_to_a_rocket_launch() {
    let v = minilm()
        .embed_texts(&["coffee", "a cup of espresso", "a rocket launch"])
        .unwrap();
    let (espresso, rocket) = (dot(&v[0], &v[1]), dot(&v[0], &v[2]));
    eprintln!("coffee~espresso {espresso:.3}, coffee~rocket {rocket:.3}");
    assert!(
        espresso > rocket + 0.1,
        "espresso {espresso}, rocket {rocket}"
    );
}

#[test]
fn text_embeddings_are_unit_length_384_d_and_deterministic() {
    let model = minilm();
    assert_eq!(model.dim(), 384);
    assert_eq!(model.model_id(), "all-minilm-l6-v2");
    let texts = ["Summer sale: 50% off all sneakers", "a cat"];
    let a = model.embed_texts(&texts).unwrap();
    assert_eq!(a, model.embed_texts(&texts).unwrap());
    for v in &a {
        assert_eq!(v.len(), 384);
        assert!((norm(v) - 1.0).abs() < 1e-4);
    }
    assert!(model.embed_texts(&[]).unwrap().is_empty());
}

/// Padding a short text to the length of a long one in the same batch must not change its
/// vector: the mean runs over real tokens only.
#[test]
fn batching_with_a_longer_text_does_not_change_a_vector() {
    let model = minilm();
    let alone = model.embed_texts(&["coffee"]).unwrap().remove(0);
    let batched = model
        .embed_texts(&[
            "coffee",
            "a much longer sentence about rockets, launches, engines and the people who fly them",
        ])
        .unwrap()
        .remove(0);
    let diff = alone
        .iter()
        .zip(&batched)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(diff < 1e-4, "max difference {diff}");
}

#[test]
fn a_text_longer_than_the_model_reads_is_truncated_not_an_error() {
    let long = "espresso ".repeat(2000);
    let v = minilm().embed_texts(&[long.as_str()]).unwrap();
    assert_eq!(v[0].len(), 384);
}

#[test]
fn minilm_embeds_no_image_and_says_so() {
    let err = minilm().embed_images(&[RgbImage::new(4, 4)]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::UnsupportedModality {
                modality: "images",
                ..
            }
        ),
        "{err}"
    );
}
