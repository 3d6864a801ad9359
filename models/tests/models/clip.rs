//! CLIP loading and inference on a tiny checkpoint with deterministic weights, against numbers
//! from an independent numpy implementation. No pretrained CLIP weights can be fetched here, so
//! this checks the code path (config parsing, tensor names, tokenizer, pooling, projection,
//! normalisation) rather than what a real CLIP finds.

use std::collections::HashMap;
use std::path::Path;

use adforge_models::{ClipEmbedder, Embedder, Error};
use candle_core::{Device, Tensor};
use image::RgbImage;

// Reference: this numpy script (float64; python3 ref_clip.py, numpy 2.4) implements the same
// tiny CLIP forward pass from the formulas of transformers' modeling_clip.py, with the same
// weight generator as `param` below:
//
// import numpy as np
//
// T = dict(vocab=12, d=16, inter=32, layers=2, heads=2, pos=8)
// V = dict(d=16, inter=32, layers=2, heads=2, image=16, patch=8)
// PROJ = 8
//
// def seed(name):
//     return sum((i + 1) * b for i, b in enumerate(name.encode())) % 1000
//
// def param(name, shape):
//     # 64-bit LCG (Knuth's MMIX constants) seeded per tensor name, top 24 bits -> [-1, 1)
//     n = int(np.prod(shape))
//     state = seed(name)
//     s = np.empty(n)
//     for k in range(n):
//         state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
//         s[k] = (state >> 40) / 2**23 - 1.0
//     if name.endswith("norm1.weight") or name.endswith("norm2.weight") or name.endswith("layrnorm.weight") or name.endswith("layernorm.weight") or name.endswith("layer_norm.weight"):
//         v = 1.0 + 0.1 * s
//     elif name.endswith(".bias"):
//         v = 0.05 * s
//     else:
//         v = 0.2 * s
//     return v.astype(np.float32).astype(np.float64).reshape(shape)
//
// def ln(x, p):
//     m = x.mean(-1, keepdims=True)
//     var = ((x - m) ** 2).mean(-1, keepdims=True)
//     return (x - m) / np.sqrt(var + 1e-5) * param(p + ".weight", (x.shape[-1],)) + param(p + ".bias", (x.shape[-1],))
//
// def linear(x, p, i, o):
//     return x @ param(p + ".weight", (o, i)).T + param(p + ".bias", (o,))
//
// def encoder(x, p, c, causal):
//     L, d = x.shape
//     hd = d // c["heads"]
//     for l in range(c["layers"]):
//         q = f"{p}.encoder.layers.{l}."
//         r = x
//         h = ln(x, q + "layer_norm1")
//         Q = linear(h, q + "self_attn.q_proj", d, d) * hd ** -0.5
//         K = linear(h, q + "self_attn.k_proj", d, d)
//         Vv = linear(h, q + "self_attn.v_proj", d, d)
//         outs = []
//         for hh in range(c["heads"]):
//             sl = slice(hh * hd, (hh + 1) * hd)
//             s = Q[:, sl] @ K[:, sl].T
//             if causal:
//                 s = s + np.triu(np.full((L, L), -1e30), 1)
//             s = np.exp(s - s.max(-1, keepdims=True)); s /= s.sum(-1, keepdims=True)
//             outs.append(s @ Vv[:, sl])
//         x = r + linear(np.concatenate(outs, -1), q + "self_attn.out_proj", d, d)
//         r = x
//         h = ln(x, q + "layer_norm2")
//         h = linear(h, q + "mlp.fc1", d, c["inter"])
//         h = h / (1 + np.exp(-1.702 * h))  # quick_gelu: h * sigmoid(1.702 h)
//         x = r + linear(h, q + "mlp.fc2", c["inter"], d)
//     return x
//
// def text(ids):
//     d = T["d"]
//     x = param("text_model.embeddings.token_embedding.weight", (T["vocab"], d))[ids]
//     x = x + param("text_model.embeddings.position_embedding.weight", (T["pos"], d))[: len(ids)]
//     x = ln(encoder(x, "text_model", T, True), "text_model.final_layer_norm")
//     pooled = x[int(np.argmax(ids))]
//     f = param("text_projection.weight", (PROJ, d)) @ pooled
//     return f / np.linalg.norm(f)
//
// def image(img):
//     d, p = V["d"], V["patch"]
//     mean = np.array([0.48145466, 0.4578275, 0.40821073]); std = np.array([0.26862954, 0.26130258, 0.27577711])
//     x = ((img / 255.0 - mean) / std).transpose(2, 0, 1)
//     w = param("vision_model.embeddings.patch_embedding.weight", (d, 3, p, p))
//     g = V["image"] // p
//     patches = [np.einsum("dcij,cij->d", w, x[:, gy * p:(gy + 1) * p, gx * p:(gx + 1) * p]) for gy in range(g) for gx in range(g)]
//     x = np.stack([param("vision_model.embeddings.class_embedding", (d,))] + patches)
//     x = x + param("vision_model.embeddings.position_embedding.weight", (g * g + 1, d))
//     x = encoder(ln(x, "vision_model.pre_layrnorm"), "vision_model", V, False)
//     pooled = ln(x[0], "vision_model.post_layernorm")
//     f = param("visual_projection.weight", (PROJ, d)) @ pooled
//     return f / np.linalg.norm(f)
//
// def test_image(k):
//     y, x = np.mgrid[0:16, 0:16]
//     if k == 0:
//         return np.stack([(x * 16 + y * 7) % 256, (x * y * 3) % 256, (200 + 9 * y + 251 * x) % 256], -1).astype(np.float64)
//     return np.stack([(x * y * 5 + 31) % 256, (255 - 15 * y) % 256, (x * 13) % 256], -1).astype(np.float64)
//
// np.set_printoptions(precision=6, suppress=True)
// print("text [10,1,2,3,4,11]", text(np.array([10, 1, 2, 3, 4, 11])))
// print("text [10,5,6,11]", text(np.array([10, 5, 6, 11])))
// print("image 0", image(test_image(0)))
// print("image 1", image(test_image(1)))
//
// Output:
// text [10,1,2,3,4,11] [ 0.35749   0.249341  0.303628  0.379582 -0.746792 -0.057579  0.078221
//  -0.081394]
// text [10,5,6,11] [ 0.021345  0.248428  0.188662  0.799867  0.001034 -0.134826  0.105265
//  -0.482895]
// image 0 [-0.022656  0.360146 -0.044693  0.370647 -0.479596 -0.535368  0.154098
//   0.435921]
// image 1 [-0.098733  0.296979 -0.024766  0.359346 -0.534322 -0.549011  0.187123
//   0.387795]

const TEXT_COFFEE: [f32; 8] = [
    0.357490, 0.249341, 0.303628, 0.379582, -0.746792, -0.057579, 0.078221, -0.081394,
];
const TEXT_ROCKET: [f32; 8] = [
    0.021345, 0.248428, 0.188662, 0.799867, 0.001034, -0.134826, 0.105265, -0.482895,
];
const IMAGE_0: [f32; 8] = [
    -0.022656, 0.360146, -0.044693, 0.370647, -0.479596, -0.535368, 0.154098, 0.435921,
];
const IMAGE_1: [f32; 8] = [
    -0.098733, 0.296979, -0.024766, 0.359346, -0.534322, -0.549011, 0.187123, 0.387795,
];

const CONFIG: &str = r#"{
  "architectures": ["CLIPModel"],
  "projection_dim": 8,
  "text_config": {
    "vocab_size": 12, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
    "num_attention_heads": 2, "max_position_embeddings": 8, "hidden_act": "quick_gelu"
  },
  "vision_config": {
    "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
    "num_attention_heads": 2, "image_size": 16, "patch_size": 8, "hidden_act": "quick_gelu"
  }
}"#;

/// A word-level tokenizer over the test vocabulary that wraps every text in `<s> ... </s>`;
/// `</s>` has the highest id, as CLIP's end-of-text token does.
const TOKENIZER: &str = r#"{
  "version": "1.0",
  "truncation": null,
  "padding": null,
  "added_tokens": [
    {"id": 10, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 11, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
  ],
  "normalizer": {"type": "Lowercase"},
  "pre_tokenizer": {"type": "Whitespace"},
  "post_processor": {
    "type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
    "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
    "special_tokens": {
      "<s>": {"id": "<s>", "ids": [10], "tokens": ["<s>"]},
      "</s>": {"id": "</s>", "ids": [11], "tokens": ["</s>"]}
    }
  },
  "decoder": null,
  "model": {
    "type": "WordLevel",
    "vocab": {"<unk>": 0, "a": 1, "cup": 2, "of": 3, "coffee": 4, "rocket": 5, "launch": 6,
              "cat": 7, "red": 8, "blue": 9, "<s>": 10, "</s>": 11},
    "unk_token": "<unk>"
  }
}"#;

/// The script's `seed`.
fn seed(name: &str) -> u64 {
    name.bytes()
        .enumerate()
        .map(|(i, b)| (i as u64 + 1) * u64::from(b))
        .sum::<u64>()
        % 1000
}

/// The script's `param`: a 64-bit LCG per tensor name, scaled by the tensor's role.
fn param(name: &str, shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let mut state = seed(name);
    let is_norm_weight = [
        "norm1.weight",
        "norm2.weight",
        "layrnorm.weight",
        "layernorm.weight",
        "layer_norm.weight",
    ]
    .iter()
    .any(|s| name.ends_with(s));
    let values: Vec<f32> = (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let s = (state >> 40) as f64 / f64::from(1u32 << 23) - 1.0;
            let v = if is_norm_weight {
                1.0 + 0.1 * s
            } else if name.ends_with(".bias") {
                0.05 * s
            } else {
                0.2 * s
            };
            v as f32
        })
        .collect();
    Tensor::from_vec(values, shape, &Device::Cpu).unwrap()
}

/// Every tensor of the tiny checkpoint, named as in transformers' `CLIPModel`.
fn tensors() -> HashMap<String, Tensor> {
    let mut t = HashMap::new();
    let mut add = |name: String, shape: &[usize]| {
        let v = param(&name, shape);
        t.insert(name, v);
    };
    let d = 16;
    let inter = 32;
    for tower in ["text_model", "vision_model"] {
        for l in 0..2 {
            let p = format!("{tower}.encoder.layers.{l}.");
            for proj in ["q_proj", "k_proj", "v_proj", "out_proj"] {
                add(format!("{p}self_attn.{proj}.weight"), &[d, d]);
                add(format!("{p}self_attn.{proj}.bias"), &[d]);
            }
            for norm in ["layer_norm1", "layer_norm2"] {
                add(format!("{p}{norm}.weight"), &[d]);
                add(format!("{p}{norm}.bias"), &[d]);
            }
            add(format!("{p}mlp.fc1.weight"), &[inter, d]);
            add(format!("{p}mlp.fc1.bias"), &[inter]);
            add(format!("{p}mlp.fc2.weight"), &[d, inter]);
            add(format!("{p}mlp.fc2.bias"), &[d]);
        }
    }
    add(
        "text_model.embeddings.token_embedding.weight".into(),
        &[12, d],
    );
    add(
        "text_model.embeddings.position_embedding.weight".into(),
        &[8, d],
    );
    add("text_model.final_layer_norm.weight".into(), &[d]);
    add("text_model.final_layer_norm.bias".into(), &[d]);
    add("vision_model.embeddings.class_embedding".into(), &[d]);
    add(
        "vision_model.embeddings.patch_embedding.weight".into(),
        &[d, 3, 8, 8],
    );
    add(
        "vision_model.embeddings.position_embedding.weight".into(),
        &[5, d],
    );
    for norm in ["pre_layrnorm", "post_layernorm"] {
        add(format!("vision_model.{norm}.weight"), &[d]);
        add(format!("vision_model.{norm}.bias"), &[d]);
    }
    add("visual_projection.weight".into(), &[8, d]);
    add("text_projection.weight".into(), &[8, d]);
    t
}

/// Writes the tiny checkpoint into `dir`.
fn write_checkpoint(dir: &Path, config: &str) {
    std::fs::write(dir.join("config.json"), config).unwrap();
    std::fs::write(dir.join("tokenizer.json"), TOKENIZER).unwrap();
    candle_core::safetensors::save(&tensors(), dir.join("model.safetensors")).unwrap();
}

/// The script's `test_image(k)`.
fn test_image(k: u32) -> RgbImage {
    RgbImage::from_fn(16, 16, |x, y| {
        let px = if k == 0 {
            [
                (x * 16 + y * 7) % 256,
                (x * y * 3) % 256,
                (200 + 9 * y + 251 * x) % 256,
            ]
        } else {
            [(x * y * 5 + 31) % 256, (255 - 15 * y) % 256, (x * 13) % 256]
        };
        image::Rgb(px.map(|v| v as u8))
    })
}

fn assert_close(name: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{name}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() < 1e-4,
            "{name}[{i}]: got {g}, reference {w}\n{got:?}"
        );
    }
}

fn tiny_clip() -> (tempfile::TempDir, ClipEmbedder) {
    let dir = tempfile::Builder::new()
        .prefix("tiny-clip")
        .tempdir()
        .unwrap();
    write_checkpoint(dir.path(), CONFIG);
    let clip = ClipEmbedder::load(dir.path()).unwrap();
    (dir, clip)
}

#[test]
fn clip_text_and_image_embeddings_match_the_numpy_reference() {
    let (_dir, clip) = tiny_clip();
    assert_eq!(clip.dim(), 8);
    assert!(
        clip.model_id().starts_with("clip:tiny-clip"),
        "{}",
        clip.model_id()
    );
    assert_eq!(
        clip.token_ids("a cup of Coffee").unwrap(),
        [10, 1, 2, 3, 4, 11]
    );
    assert_eq!(clip.token_ids("rocket launch").unwrap(), [10, 5, 6, 11]);

    let texts = clip
        .embed_texts(&["a cup of Coffee", "rocket launch"])
        .unwrap();
    assert_close("text coffee", &texts[0], &TEXT_COFFEE);
    assert_close("text rocket", &texts[1], &TEXT_ROCKET);

    let images = clip.embed_images(&[test_image(0), test_image(1)]).unwrap();
    assert_close("image 0", &images[0], &IMAGE_0);
    assert_close("image 1", &images[1], &IMAGE_1);

    // Deterministic, and a batch gives the single images' vectors.
    assert_eq!(
        clip.embed_images(&[test_image(0), test_image(1)]).unwrap(),
        images
    );
    assert_close(
        "image 1 alone",
        &clip.embed_images(&[test_image(1)]).unwrap()[0],
        &IMAGE_1,
    );
}

#[test]
fn clip_texts_longer_than_the_positions_are_truncated() {
    let (_dir, clip) = tiny_clip();
    let long = "red blue ".repeat(20);
    let ids = clip.token_ids(&long).unwrap();
    assert_eq!(ids.len(), 8, "{ids:?}");
    assert_eq!(ids.last(), Some(&11), "end-of-text kept: {ids:?}");
    assert_eq!(clip.embed_texts(&[long.as_str()]).unwrap()[0].len(), 8);
}

#[test]
fn clip_with_an_unsupported_activation_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    write_checkpoint(
        dir.path(),
        &CONFIG.replace(
            "\"hidden_act\": \"quick_gelu\"\n  }\n}",
            "\"hidden_act\": \"gelu\"\n  }\n}",
        ),
    );
    let err = ClipEmbedder::load(dir.path()).unwrap_err();
    assert!(matches!(err, Error::InvalidConfig { .. }), "{err}");
    assert!(
        err.to_string().contains("vision_config.hidden_act"),
        "{err}"
    );
}

#[test]
fn clip_without_weights_names_the_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.json"), CONFIG).unwrap();
    let err = ClipEmbedder::load(dir.path()).unwrap_err();
    assert!(
        matches!(err, Error::MissingModelFile { ref path, .. } if path.ends_with("model.safetensors")),
        "{err}"
    );
}
