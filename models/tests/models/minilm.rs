//! MiniLM with the real weights.

use adforge_models::{Embedder, Error};
use image::RgbImage;

use crate::support::{dot, minilm, norm};

// Reference: this numpy script (float64, numpy 2.4) implements BERT from the formulas of
// transformers' modeling_bert.py, with sentence-transformers' mean pooling and normalisation,
// and reads the same weights (`python3 ref_minilm.py ~/.cache/adforge/models/minilm-l6-v2`):
//
// import json, math, struct, sys
// import numpy as np
//
// def load(path):
//     raw = open(path, "rb").read()
//     n = struct.unpack("<Q", raw[:8])[0]
//     header = json.loads(raw[8:8 + n])
//     return {k: np.frombuffer(raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], dtype="<f4").reshape(v["shape"]).astype(np.float64)
//             for k, v in header.items() if k != "__metadata__" and v["dtype"] == "F32"}
//
// d = sys.argv[1]
// W = load(d + "/model.safetensors")
// vocab = json.load(open(d + "/tokenizer.json"))["model"]["vocab"]
// erf = np.vectorize(math.erf)
//
// def ln(x, p):
//     m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
//     return (x - m) / np.sqrt(v + 1e-12) * W[p + ".weight"] + W[p + ".bias"]
//
// def dense(x, p):
//     return x @ W[p + ".weight"].T + W[p + ".bias"]
//
// def embed(text):
//     # Lower-case words that are whole entries of the WordPiece vocabulary.
//     ids = [vocab["[CLS]"]] + [vocab[w] for w in text.lower().split()] + [vocab["[SEP]"]]
//     x = W["embeddings.word_embeddings.weight"][ids] + W["embeddings.position_embeddings.weight"][:len(ids)] + W["embeddings.token_type_embeddings.weight"][0]
//     x = ln(x, "embeddings.LayerNorm")
//     for l in range(6):
//         p = f"encoder.layer.{l}."
//         q, k, v = (dense(x, p + "attention.self." + n) for n in ("query", "key", "value"))
//         heads = []
//         for h in range(12):
//             s = slice(32 * h, 32 * h + 32)
//             a = q[:, s] @ k[:, s].T / math.sqrt(32)
//             a = np.exp(a - a.max(-1, keepdims=True)); a /= a.sum(-1, keepdims=True)
//             heads.append(a @ v[:, s])
//         x = ln(x + dense(np.concatenate(heads, -1), p + "attention.output.dense"), p + "attention.output.LayerNorm")
//         i = dense(x, p + "intermediate.dense")
//         i = 0.5 * i * (1 + erf(i / math.sqrt(2)))
//         x = ln(x + dense(i, p + "output.dense"), p + "output.LayerNorm")
//     m = x.mean(0)
//     return ids, m / np.linalg.norm(m)
//
// for t in ["a cup of coffee", "a rocket launch"]:
//     ids, e = embed(t)
//     print(t, ids, [round(float(e[i]), 6) for i in (0, 1, 2, 100, 383)])
//
// Output:
// a cup of coffee [101, 1037, 2452, 1997, 4157, 102] [-0.033568, 0.06589, 0.02798, -0.017982, -0.073768]
// a rocket launch [101, 1037, 7596, 4888, 102] [-0.015174, 0.032721, -0.000776, -0.011263, 0.088078]
#[test]
fn minilm_vectors_match_the_numpy_reference() {
    let v = minilm()
        .embed_texts(&["a cup of coffee", "A rocket launch"])
        .unwrap();
    let pinned: [(usize, [f32; 5]); 2] = [
        (0, [-0.033568, 0.06589, 0.02798, -0.017982, -0.073768]),
        (1, [-0.015174, 0.032721, -0.000776, -0.011263, 0.088078]),
    ];
    for (row, want) in pinned {
        for (&i, w) in [0usize, 1, 2, 100, 383].iter().zip(want) {
            let got = v[row][i];
            assert!(
                (got - w).abs() < 1e-4,
                "text {row}, dim {i}: got {got}, reference {w}"
            );
        }
    }
}

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
