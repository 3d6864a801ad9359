//! U²-Net-P with the real weights: its seven outputs against numbers from ONNX Runtime
//! running the original ONNX file, and the saliency map of a product photo.

use adforge_models::SalientSegmenter;
use image::RgbImage;

use crate::support::{sample, u2netp};

// The reference numbers below come from ONNX Runtime running rembg's original
// `u2netp.onnx` (not our conversion), with the preprocessing of `SalientSegmenter::input`
// done in numpy, run as
// `python3 ref_u2netp.py u2netp.onnx assets/samples/coffee.png` in a throwaway venv with
// onnxruntime 1.32, numpy 2.4 and Pillow 13 (Pillow only decodes the PNG):
//
// import sys
// import numpy as np
// import onnxruntime as ort
// from PIL import Image
//
// session = ort.InferenceSession(sys.argv[1])
//
// def synthetic():
//     # pixel (y, x) = ((x*7 + y*3) % 256, (x*y) % 256, (200 - x + 2*y) % 256), a bright disc
//     y, x = np.mgrid[0:320, 0:320]
//     img = np.stack([(x * 7 + y * 3) % 256, (x * y) % 256, (200 - x + 2 * y) % 256], axis=-1)
//     disc = (x - 170) ** 2 + (y - 150) ** 2 < 70 ** 2
//     img[disc] = [230, 60, 40]
//     return img.astype(np.uint8)
//
// def crop320(path):
//     a = np.asarray(Image.open(path).convert("RGB"))
//     h, w, _ = a.shape
//     t, l = (h - 320) // 2, (w - 320) // 2
//     return a[t:t + 320, l:l + 320]
//
// def run(img):
//     a = img.astype(np.float64)
//     a = a / a.max()
//     mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
//     x = ((a - mean) / std).transpose(2, 0, 1)[None].astype(np.float32)
//     return [o[0, 0].astype(np.float64) for o in session.run(None, {"input.1": x})]
//
// PIXELS = [(0, 0), (150, 170), (40, 300), (319, 319), (200, 100)]
// for name, img in [("synthetic", synthetic()), ("coffee 320 crop", crop320(sys.argv[2]))]:
//     outs = run(img)
//     print(name)
//     print("  fused at", PIXELS, [round(float(outs[0][y, x]), 5) for y, x in PIXELS])
//     print("  means", [round(float(o.mean()), 5) for o in outs])
//     m = outs[0]
//     m = (m - m.min()) / (m.max() - m.min())
//     print("  min-max scaled > 0.5:", int((m > 0.5).sum()))
//
// Output:
// synthetic
//   fused at [(0, 0), (150, 170), (40, 300), (319, 319), (200, 100)] [0.00086, 0.99994, 0.00019, 0.003, 0.01131]
//   means [0.16183, 0.16193, 0.15899, 0.16246, 0.16623, 0.16906, 0.13409]
//   min-max scaled > 0.5: 16242
// coffee 320 crop
//   fused at [(0, 0), (150, 170), (40, 300), (319, 319), (200, 100)] [0.00328, 0.99987, 6e-05, 0.00058, 0.60978]
//   means [0.51298, 0.51296, 0.51392, 0.51487, 0.50642, 0.50233, 0.50925]
//   min-max scaled > 0.5: 54313

/// The synthetic 320x320 picture of the reference script.
fn synthetic() -> RgbImage {
    RgbImage::from_fn(320, 320, |x, y| {
        let (xi, yi) = (i64::from(x), i64::from(y));
        if (xi - 170).pow(2) + (yi - 150).pow(2) < 70 * 70 {
            return image::Rgb([230, 60, 40]);
        }
        image::Rgb([
            ((x * 7 + y * 3) % 256) as u8,
            ((x * y) % 256) as u8,
            ((200 - xi + 2 * yi).rem_euclid(256)) as u8,
        ])
    })
}

/// The centre 320x320 crop of a sample (pixels unchanged, so no resampling differs).
fn crop320(name: &str) -> RgbImage {
    let img = sample(name);
    let (l, t) = ((img.width() - 320) / 2, (img.height() - 320) / 2);
    image::imageops::crop_imm(&img, l, t, 320, 320).to_image()
}

const PIXELS: [(usize, usize); 5] = [(0, 0), (150, 170), (40, 300), (319, 319), (200, 100)];

fn check(name: &str, img: &RgbImage, fused: [f32; 5], means: [f32; 7], above_half: usize) {
    let model = u2netp();
    let x = model.input(img).unwrap();
    let outs = model.network().forward(&x).unwrap();
    assert_eq!(outs.len(), 7, "{name}: fused mask and six side outputs");
    let maps: Vec<Vec<f32>> = outs
        .iter()
        .map(|o| {
            assert_eq!(o.dims(), &[1, 1, 320, 320]);
            o.flatten_all().unwrap().to_vec1::<f32>().unwrap()
        })
        .collect();
    for ((y, x), want) in PIXELS.into_iter().zip(fused) {
        let got = maps[0][y * 320 + x];
        assert!(
            (got - want).abs() <= 1e-3,
            "{name}: fused mask at ({y}, {x}) is {got}, ONNX Runtime says {want}"
        );
    }
    for (i, (map, want)) in maps.iter().zip(means).enumerate() {
        let got = map.iter().sum::<f32>() / map.len() as f32;
        assert!(
            (got - want).abs() <= 1e-4,
            "{name}: mean of output {i} is {got}, ONNX Runtime says {want}"
        );
    }
    let saliency = model.saliency(img).unwrap();
    assert_eq!(saliency.size, 320);
    let above = saliency.values.iter().filter(|v| **v > 0.5).count();
    // Pixels within float noise of one half may fall either way.
    assert!(
        above.abs_diff(above_half) <= 20,
        "{name}: {above} pixels above 0.5, ONNX Runtime has {above_half}"
    );
}

#[test]
fn outputs_match_onnx_runtime_on_a_synthetic_picture() {
    check(
        "synthetic",
        &synthetic(),
        [0.00086, 0.99994, 0.00019, 0.003, 0.01131],
        [
            0.16183, 0.16193, 0.15899, 0.16246, 0.16623, 0.16906, 0.13409,
        ],
        16242,
    );
}

#[test]
fn outputs_match_onnx_runtime_on_a_photo() {
    check(
        "coffee 320 crop",
        &crop320("coffee.png"),
        [0.00328, 0.99987, 6e-05, 0.00058, 0.60978],
        [
            0.51298, 0.51296, 0.51392, 0.51487, 0.50642, 0.50233, 0.50925,
        ],
        54313,
    );
}

/// The whole coffee photo (resized to 320x320 by `input`): the cup and saucer are the
/// subject, the wooden table in the corners is not, and the map spans 0..1.
#[test]
fn the_cup_is_the_subject_of_the_coffee_photo() {
    let map = u2netp().saliency(&sample("coffee.png")).unwrap();
    let at = |x: f32, y: f32| map.values[(y * 320.0) as usize * 320 + (x * 320.0) as usize];
    let (lo, hi) = map
        .values
        .iter()
        .fold((1f32, 0f32), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    assert!(lo == 0.0 && hi == 1.0, "min-max scaled: {lo}..{hi}");
    // The cup's rim and the saucer's middle; the table at the corners.
    for (x, y) in [(0.45, 0.3), (0.5, 0.75)] {
        assert!(at(x, y) > 0.9, "({x}, {y}) = {}", at(x, y));
    }
    for (x, y) in [(0.03, 0.05), (0.97, 0.95), (0.03, 0.95), (0.97, 0.05)] {
        assert!(at(x, y) < 0.1, "({x}, {y}) = {}", at(x, y));
    }
}

#[test]
fn an_empty_image_is_refused_and_a_missing_folder_names_the_fetch_script() {
    let err = u2netp().saliency(&RgbImage::new(0, 4)).unwrap_err();
    assert!(
        matches!(err, adforge_models::Error::EmptyImage { .. }),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let err = SalientSegmenter::load(&dir.path().join("u2netp")).unwrap_err();
    assert!(err.to_string().contains("scripts/fetch-models"), "{err}");
}
