//! EfficientNet-Lite0 with the real weights: numbers pinned from an independent reference,
//! labels a person agrees with, and near-duplicate retrieval.

use adforge_models::preprocess::Framing;
use adforge_models::{Classifier, Embedder, Error};
use image::RgbImage;

use crate::support::{dot, efficientnet, norm, sample};

// The reference numbers below come from this numpy script (float64, independent of candle:
// explicit TensorFlow "SAME" padding, unfolded batch norms, depthwise convolution by shifted
// slices), run on the converted checkpoint as
// `python3 ref_eff.py ~/.cache/adforge/models/efficientnet-lite0/{model.safetensors,labels.txt} assets/samples/chelsea.png`
// with numpy 2.4 and Pillow 13 (Pillow only decodes the PNG):
//
// import json, struct, sys
// import numpy as np
// from PIL import Image
//
// def load(path):
//     with open(path, "rb") as f:
//         n = struct.unpack("<Q", f.read(8))[0]
//         header = json.loads(f.read(n))
//         base = 8 + n
//     raw = open(path, "rb").read()
//     out = {}
//     for k, v in header.items():
//         if k == "__metadata__" or v["dtype"] != "F32":
//             continue
//         b, e = v["data_offsets"]
//         out[k] = np.frombuffer(raw[base + b:base + e], dtype="<f4").reshape(v["shape"]).astype(np.float64)
//     return out
//
// W = load(sys.argv[1])
//
// def same_pad(x, k, s):
//     # TensorFlow 'SAME': total = max((ceil(n/s)-1)*s + k - n, 0), before = total//2.
//     _, h, w = x.shape
//     def p(n):
//         t = max((-(-n // s) - 1) * s + k - n, 0)
//         return (t // 2, t - t // 2)
//     return np.pad(x, ((0, 0), p(h), p(w)))
//
// def conv(x, w, s=1):
//     # x: [C,H,W], w: [O,C,k,k], 'same' padding, no bias
//     o, c, k, _ = w.shape
//     x = same_pad(x, k, s)
//     _, hp, wp = x.shape
//     ho, wo = (hp - k) // s + 1, (wp - k) // s + 1
//     out = np.zeros((o, ho, wo))
//     for i in range(k):
//         for j in range(k):
//             patch = x[:, i:i + s * (ho - 1) + 1:s, j:j + s * (wo - 1) + 1:s]
//             out += np.einsum("oc,chw->ohw", w[:, :, i, j], patch)
//     return out
//
// def dwconv(x, w, s):
//     c, _, k, _ = w.shape
//     x = same_pad(x, k, s)
//     _, hp, wp = x.shape
//     ho, wo = (hp - k) // s + 1, (wp - k) // s + 1
//     out = np.zeros((c, ho, wo))
//     for i in range(k):
//         for j in range(k):
//             out += w[:, 0, i, j][:, None, None] * x[:, i:i + s * (ho - 1) + 1:s, j:j + s * (wo - 1) + 1:s]
//     return out
//
// def bn(x, p):
//     g, b, m, v = W[p + ".weight"], W[p + ".bias"], W[p + ".running_mean"], W[p + ".running_var"]
//     return ((x - m[:, None, None]) / np.sqrt(v[:, None, None] + 1e-3)) * g[:, None, None] + b[:, None, None]
//
// relu6 = lambda x: np.clip(x, 0, 6)
//
// # (repeats, kernel, stride, expand, in, out) of EfficientNet-Lite0
// STAGES = [(1, 3, 1, 1, 32, 16), (2, 3, 2, 6, 16, 24), (2, 5, 2, 6, 24, 40), (3, 3, 2, 6, 40, 80),
//           (3, 5, 1, 6, 80, 112), (4, 5, 2, 6, 112, 192), (1, 3, 1, 6, 192, 320)]
//
// def forward(img):
//     x = (img.astype(np.float64) - 127.0) / 128.0
//     x = x.transpose(2, 0, 1)
//     x = relu6(bn(conv(x, W["_conv_stem.weight"], 2), "_bn0"))
//     n = 0
//     for r, k, s, e, i, o in STAGES:
//         for rep in range(r):
//             cin, st = (i, s) if rep == 0 else (o, 1)
//             p = f"_blocks.{n}."
//             h = x
//             if e != 1:
//                 h = relu6(bn(conv(h, W[p + "_expand_conv.weight"]), p + "_bn0"))
//             h = relu6(bn(dwconv(h, W[p + "_depthwise_conv.weight"], st), p + "_bn1"))
//             h = bn(conv(h, W[p + "_project_conv.weight"]), p + "_bn2")
//             if st == 1 and cin == o:
//                 h = h + x
//             x = h
//             n += 1
//     x = relu6(bn(conv(x, W["_conv_head.weight"]), "_bn1"))
//     feat = x.mean(axis=(1, 2))
//     logits = W["_fc.weight"] @ feat + W["_fc.bias"]
//     return feat, logits
//
// def synthetic():
//     # pixel (y, x) = ((x*3 + y*5) % 256, (x*y) % 256, (255 - x + y) % 256)
//     y, x = np.mgrid[0:224, 0:224]
//     return np.stack([(x * 3 + y * 5) % 256, (x * y) % 256, (255 - x + y) % 256], axis=-1).astype(np.uint8)
//
// def crop224(path):
//     a = np.asarray(Image.open(path).convert("RGB"))
//     h, w, _ = a.shape
//     t, l = (h - 224) // 2, (w - 224) // 2
//     return a[t:t + 224, l:l + 224]
//
// if __name__ == "__main__":
//     labels = open(sys.argv[2]).read().splitlines()
//     LOGIT = [0, 1, 281, 282, 504, 967]
//     for name, img in [("synthetic", synthetic()), ("chelsea 224 crop", crop224(sys.argv[3]))]:
//         feat, logits = forward(img)
//         top = int(np.argmax(logits))
//         print(name, "top-1", top, labels[top])
//         big = [int(i) for i in np.argsort(-feat)[:4]]
//         print("  features", big, [round(float(feat[i]), 5) for i in big], "sum", round(float(feat.sum()), 4), "nonzero", int((feat > 0).sum()))
//         print("  logits", LOGIT, [round(float(logits[i]), 5) for i in LOGIT])
//
// Output:
// synthetic top-1 701 parachute
//   features [245, 1123, 1062, 315] [4.99152, 4.16227, 4.06249, 3.96752] sum 209.2341 nonzero 490
//   logits [0, 1, 281, 282, 504, 967] [0.30619, -0.40513, -0.09166, 0.77798, -2.00744, -3.05438]
// chelsea 224 crop top-1 282 a cat having a striped coat
//   features [287, 112, 451, 1156] [4.73851, 4.58292, 3.68752, 3.21058] sum 162.9455 nonzero 424
//   logits [0, 1, 281, 282, 504, 967] [-0.37956, 0.96023, 8.15815, 9.24987, 0.11416, -0.00341]

/// The synthetic 224x224 picture of the reference script.
fn synthetic() -> RgbImage {
    RgbImage::from_fn(224, 224, |x, y| {
        image::Rgb([
            ((x * 3 + y * 5) % 256) as u8,
            ((x * y) % 256) as u8,
            ((255 - x + y) % 256) as u8,
        ])
    })
}

/// The centre 224x224 crop of a sample (pixels unchanged, so no resampling differs).
fn crop224(name: &str) -> RgbImage {
    let img = sample(name);
    let (l, t) = ((img.width() - 224) / 2, (img.height() - 224) / 2);
    image::imageops::crop_imm(&img, l, t, 224, 224).to_image()
}

struct Pinned {
    top1: usize,
    features: [(usize, f32); 4],
    feature_sum: f32,
    nonzero: usize,
    logits: [(usize, f32); 6],
}

fn check(name: &str, img: RgbImage, want: Pinned) {
    let out = efficientnet()
        .run(&[img], Framing::Whole)
        .unwrap()
        .remove(0);
    let close = |got: f32, want: f32| (got - want).abs() <= 1e-3 * want.abs().max(1.0);
    for (i, v) in want.features {
        assert!(
            close(out.features[i], v),
            "{name}: feature {i} is {}, reference {v}",
            out.features[i]
        );
    }
    let sum: f32 = out.features.iter().sum();
    assert!(
        (sum - want.feature_sum).abs() <= 1e-3 * want.feature_sum,
        "{name}: feature sum {sum}, reference {}",
        want.feature_sum
    );
    // ReLU6 before pooling: a feature is either exactly zero (all-negative map) or positive.
    let nonzero = out.features.iter().filter(|v| **v > 0.0).count();
    assert_eq!(nonzero, want.nonzero, "{name}: non-zero features");
    for (i, v) in want.logits {
        assert!(
            close(out.logits[i], v),
            "{name}: logit {i} is {}, reference {v}",
            out.logits[i]
        );
    }
    let top1 = (0..out.logits.len())
        .max_by(|&a, &b| out.logits[a].total_cmp(&out.logits[b]))
        .unwrap();
    assert_eq!(top1, want.top1, "{name}: top-1 class");
}

#[test]
fn outputs_match_the_numpy_reference_on_a_synthetic_picture() {
    check(
        "synthetic",
        synthetic(),
        Pinned {
            top1: 701,
            features: [
                (245, 4.99152),
                (1123, 4.16227),
                (1062, 4.06249),
                (315, 3.96752),
            ],
            feature_sum: 209.2341,
            nonzero: 490,
            logits: [
                (0, 0.30619),
                (1, -0.40513),
                (281, -0.09166),
                (282, 0.77798),
                (504, -2.00744),
                (967, -3.05438),
            ],
        },
    );
}

#[test]
fn outputs_match_the_numpy_reference_on_a_photo() {
    check(
        "chelsea 224 crop",
        crop224("chelsea.png"),
        Pinned {
            top1: 282,
            features: [
                (287, 4.73851),
                (112, 4.58292),
                (451, 3.68752),
                (1156, 3.21058),
            ],
            feature_sum: 162.9455,
            nonzero: 424,
            logits: [
                (0, -0.37956),
                (1, 0.96023),
                (281, 8.15815),
                (282, 9.24987),
                (504, 0.11416),
                (967, -0.00341),
            ],
        },
    );
}

/// Top-1 labels of the sample photos (framed as `classify` frames them: the evaluation centre
/// crop) are what a person sees in them. ImageNet has no "rocket" class: a launch is a
/// "missile" to it (classes 657 and 744 both read "missile"), which a person would accept;
/// "space shuttle" would do too.
#[test]
fn top1_labels_of_the_sample_photos_are_what_a_person_sees() {
    let model = efficientnet();
    let cases: [(&str, &[&str]); 3] = [
        (
            "chelsea.png",
            &["tabby cat", "a cat having a striped coat", "Egyptian Mau"],
        ),
        ("coffee.png", &["espresso", "coffee mug", "cup"]),
        ("rocket.jpg", &["missile", "space shuttle"]),
    ];
    for (file, accepted) in cases {
        let labels = model.classify(&sample(file), 3).unwrap();
        eprintln!("{file}: {labels:?}");
        assert_eq!(labels.len(), 3);
        let (top, p) = &labels[0];
        assert!(
            accepted.contains(&top.as_str()),
            "{file}: top-1 is {top:?} ({p:.3}); expected one of {accepted:?}"
        );
        assert!(
            labels.windows(2).all(|w| w[0].1 >= w[1].1),
            "sorted by probability"
        );
        let total: f32 = labels.iter().map(|l| l.1).sum();
        assert!(total <= 1.0 + 1e-5 && *p > 0.1, "probabilities: {labels:?}");
    }
}

#[test]
fn image_embeddings_are_unit_length_1280_d_and_deterministic() {
    let model = efficientnet();
    assert_eq!(model.dim(), 1280);
    assert_eq!(model.model_id(), "efficientnet-lite0-imagenet1k");
    let imgs = [sample("coffee.png"), sample("rocket.jpg")];
    let a = model.embed_images(&imgs).unwrap();
    let b = model.embed_images(&imgs).unwrap();
    assert_eq!(a, b, "same input, same vectors");
    assert_eq!(a.len(), 2);
    for v in &a {
        assert_eq!(v.len(), 1280);
        assert!((norm(v) - 1.0).abs() < 1e-4);
    }
    // A batch gives the same vectors as images one at a time.
    let single = model.embed_images(&imgs[1..]).unwrap();
    assert!(dot(&single[0], &a[1]) > 0.9999);
}

/// JPEG-recompresses `img` at `quality`.
fn recompress(img: &RgbImage, quality: u8) -> RgbImage {
    let mut buf = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut buf, quality)
        .encode_image(img)
        .unwrap();
    image::load_from_memory(&buf).unwrap().to_rgb8()
}

/// A resized, recompressed copy of each photo finds the photo first among the photos and
/// the renderer's 87 golden images.
#[test]
fn a_near_duplicate_is_its_own_nearest_neighbour() {
    let model = efficientnet();
    let photos = ["chelsea.png", "coffee.png", "rocket.jpg"];
    let mut names: Vec<String> = photos.iter().map(|s| s.to_string()).collect();
    let mut library: Vec<RgbImage> = photos.iter().map(|p| sample(p)).collect();
    let goldens =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../renderer/tests/goldens");
    let mut golden_files: Vec<_> = std::fs::read_dir(&goldens)
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).into_iter().flatten())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .collect();
    golden_files.sort();
    assert!(
        golden_files.len() > 20,
        "renderer goldens found: {}",
        golden_files.len()
    );
    for f in golden_files {
        library.push(image::open(&f).unwrap().to_rgb8());
        names.push(f.display().to_string());
    }
    let vectors = model.embed_images(&library).unwrap();
    for (i, photo) in photos.iter().enumerate() {
        let img = &library[i];
        let small = image::imageops::resize(
            img,
            img.width() * 3 / 5,
            img.height() * 3 / 5,
            image::imageops::FilterType::CatmullRom,
        );
        let copy = recompress(&small, 60);
        let q = model.embed_images(&[copy]).unwrap().remove(0);
        let mut ranked: Vec<(f32, &str)> = vectors
            .iter()
            .zip(&names)
            .map(|(v, n)| (dot(&q, v), n.as_str()))
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        assert_eq!(
            ranked[0].1,
            *photo,
            "{photo}: nearest are {:?}",
            &ranked[..3]
        );
        assert!(
            ranked[0].0 > 0.9,
            "{photo}: similarity to itself {}",
            ranked[0].0
        );
    }
}

#[test]
fn efficientnet_embeds_no_text_and_says_so() {
    let err = efficientnet().embed_texts(&["coffee"]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::UnsupportedModality {
                modality: "texts",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_missing_models_folder_names_the_fetch_script() {
    let dir = tempfile::tempdir().unwrap();
    let err = adforge_models::Models::load(dir.path()).unwrap_err();
    assert!(matches!(err, Error::MissingModelFile { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("scripts/fetch-models"), "{msg}");
    assert!(msg.contains(&dir.path().display().to_string()), "{msg}");
}

#[test]
fn an_empty_image_is_an_error_not_a_panic() {
    let err = efficientnet()
        .embed_images(&[RgbImage::new(0, 0)])
        .unwrap_err();
    assert!(matches!(err, Error::EmptyImage { .. }), "{err}");
}
