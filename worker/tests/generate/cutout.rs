//! Product cut-outs on photos our renderer draws, so the truth is known: the same product
//! rendered alone on a transparent canvas. A bottle with a near-white label (enclosed by
//! the bottle, so it must stay) on white, on a studio sweep and on a busy photo; and the
//! cases that must fall back to the framed photo.

use adforge_renderer::{RenderOptions, Renderer, Tree};
use adforge_worker::cutout::{Cutter, Method, Refusal};
use image::{DynamicImage, RgbaImage};
use serde_json::{Value, json};

const SIZE: f32 = 1000.0;
/// Output width of the photos (the design is 1000x1000).
const PX: u32 = 800;

fn colour(hex: u32) -> Value {
    let ch = |s: u32| f64::from((hex >> s) & 0xff) / 255.0;
    json!({"r": ch(16), "g": ch(8), "b": ch(0), "a": 1})
}

fn solid(hex: u32) -> Value {
    json!([{"type": "SOLID", "color": colour(hex)}])
}

/// A vertical linear gradient from `top` to `bottom`.
fn sweep(top: u32, bottom: u32) -> Value {
    json!([{"type": "GRADIENT_LINEAR",
            "gradientHandlePositions": [{"x": 0.5, "y": 0}, {"x": 0.5, "y": 1}, {"x": 0, "y": 0}],
            "gradientStops": [{"position": 0, "color": colour(top)},
                              {"position": 1, "color": colour(bottom)}]}])
}

/// The product: a shaded bottle (shoulders, narrow neck) with a pale label across it.
fn product_nodes() -> Vec<(String, Value)> {
    let (x, y, w, h) = (360.0, 180.0, 280.0, 680.0);
    let path = format!(
        "M{a} 0 L{b} 0 L{b} {n} C{w} {s} {w} {s} {w} {t} L{w} {h} L0 {h} L0 {t} C0 {s} 0 {s} {a} {n} Z",
        a = w * 0.34,
        b = w * 0.66,
        n = h * 0.22,
        s = h * 0.3,
        t = h * 0.38,
    );
    vec![
        (
            "bottle".into(),
            json!({"id": "bottle", "type": "VECTOR", "x": x, "y": y, "width": w, "height": h,
                   "vectorPaths": [{"data": path, "windingRule": "NONZERO"}],
                   "fills": [{"type": "GRADIENT_LINEAR",
                              "gradientHandlePositions": [{"x": 0, "y": 0.5}, {"x": 1, "y": 0.5}, {"x": 0, "y": 1}],
                              "gradientStops": [{"position": 0, "color": colour(0x1E4A2A)},
                                                {"position": 0.4, "color": colour(0x3E8A52)},
                                                {"position": 1, "color": colour(0x10301A)}]}]}),
        ),
        (
            "label".into(),
            json!({"id": "label", "type": "RECTANGLE", "x": x + 30.0, "y": y + 380.0,
                   "width": w - 60.0, "height": 160.0, "fills": solid(0xF6F4EE)}),
        ),
    ]
}

/// A busy photo: overlapping discs of many colours over a dark-to-warm gradient.
fn busy_nodes() -> Vec<(String, Value)> {
    let mut out = vec![(
        "photo".into(),
        json!({"id": "photo", "type": "RECTANGLE", "x": 0, "y": 0, "width": SIZE, "height": SIZE,
               "fills": [{"type": "GRADIENT_LINEAR",
                          "gradientHandlePositions": [{"x": 0, "y": 0}, {"x": 1, "y": 1}, {"x": 0, "y": 1}],
                          "gradientStops": [{"position": 0, "color": colour(0x5A6E7E)},
                                            {"position": 1, "color": colour(0xC9A66B)}]}]}),
    )];
    let palette = [
        0x8C4A2F, 0xD9C5A0, 0x3B6E8F, 0xB07A50, 0xE0B050, 0x6A4E5E, 0xA8C8D8,
    ];
    let mut k: u32 = 0x9E37_79B9;
    let mut next = || {
        k ^= k << 13;
        k ^= k >> 17;
        k ^= k << 5;
        k
    };
    for i in 0..60 {
        let d = 40.0 + (next() % 120) as f32;
        let x = (next() % 1000) as f32 - d / 2.0;
        let y = (next() % 1000) as f32 - d / 2.0;
        let col = palette[(next() % palette.len() as u32) as usize];
        let id = format!("disc{i}");
        out.push((
            id.clone(),
            json!({"id": id, "type": "ELLIPSE", "x": x, "y": y, "width": d, "height": d,
                   "fills": solid(col)}),
        ));
    }
    out
}

fn render(ground: Value, layers: Vec<(String, Value)>) -> RgbaImage {
    let mut nodes = serde_json::Map::new();
    let mut children = Vec::new();
    for (id, node) in layers {
        children.push(Value::from(id.clone()));
        nodes.insert(id, node);
    }
    nodes.insert(
        "root".into(),
        json!({"id": "root", "type": "FRAME", "width": SIZE, "height": SIZE, "fills": ground,
               "children": children}),
    );
    let tree = Tree::from_value(json!({"root": "root", "nodes": nodes})).unwrap();
    let out = Renderer::with_defaults()
        .render(
            &tree,
            &RenderOptions {
                width: Some(PX),
                encode_png: true,
            },
        )
        .unwrap();
    image::load_from_memory(&out.png.unwrap())
        .unwrap()
        .into_rgba8()
}

/// The product's pixels: the product alone on a transparent canvas, alpha at least one half.
fn truth() -> Vec<bool> {
    let alone = render(json!([]), product_nodes());
    let mask: Vec<bool> = alone.pixels().map(|p| p.0[3] >= 128).collect();
    let share = mask.iter().filter(|m| **m).count() as f32 / mask.len() as f32;
    assert!(
        (0.08..0.3).contains(&share),
        "the product alone covers {share} of the canvas: is the canvas transparent?"
    );
    mask
}

fn photo(ground: Value, background: Vec<(String, Value)>) -> DynamicImage {
    let mut layers = background;
    layers.extend(product_nodes());
    DynamicImage::ImageRgba8(render(ground, layers).into())
}

/// The cut-out's alpha placed back in the photo's frame (at least one half), and its IoU
/// with the truth.
fn iou(cut: &adforge_worker::cutout::Cutout, truth: &[bool]) -> f32 {
    let [bx, by, bw, bh] = cut.source_box;
    assert_eq!(
        (cut.image.width(), cut.image.height()),
        (bw, bh),
        "a photo this small is cut at its own scale"
    );
    let mut got = vec![false; (PX * PX) as usize];
    for (x, y, p) in cut.image.enumerate_pixels() {
        got[((by + y) * PX + bx + x) as usize] = p.0[3] >= 128;
    }
    let inter = got.iter().zip(truth).filter(|(a, b)| **a && **b).count();
    let union = got.iter().zip(truth).filter(|(a, b)| **a || **b).count();
    inter as f32 / union.max(1) as f32
}

fn model_cutter() -> Cutter {
    let cutter = Cutter::load(&adforge_models::default_models_dir());
    assert!(
        cutter.has_model(),
        "U²-Net-P is not installed: run scripts/fetch-models"
    );
    cutter
}

#[test]
fn a_packshot_on_white_is_keyed_without_the_model() {
    let truth = truth();
    // No model: the colour key alone must do it.
    let cut = Cutter::new(None)
        .cut(&photo(solid(0xFFFFFF), Vec::new()))
        .unwrap();
    assert_eq!(cut.method, Method::ColourKey);
    let score = iou(&cut, &truth);
    eprintln!("IoU on white: {score:.3}");
    assert!(score >= 0.9, "IoU {score} on white");
    // The pale label is enclosed by the bottle: it stays opaque.
    let [bx, by, _, _] = cut.source_box;
    let label_centre = cut
        .image
        .get_pixel(500 * PX / 1000 - bx, 640 * PX / 1000 - by);
    assert_eq!(label_centre.0[3], 255, "the label is part of the product");
    // The edge holds no white halo: every half-transparent pixel is as dark as the bottle.
    for p in cut.image.pixels().filter(|p| (20..235).contains(&p.0[3])) {
        let lum = p.0[..3].iter().map(|c| u32::from(*c)).sum::<u32>() / 3;
        assert!(lum < 200, "edge pixel {:?} keeps the white ground", p.0);
    }
}

#[test]
fn a_packshot_on_a_studio_sweep_is_keyed() {
    let truth = truth();
    let cut = Cutter::new(None)
        .cut(&photo(sweep(0xEEEEEE, 0xB8B8B8), Vec::new()))
        .unwrap();
    assert_eq!(cut.method, Method::ColourKey);
    let score = iou(&cut, &truth);
    eprintln!("IoU on the studio sweep: {score:.3}");
    assert!(score >= 0.9, "IoU {score} on the studio sweep");
}

#[test]
fn a_product_on_a_busy_photo_goes_through_the_model() {
    let truth = truth();
    let busy = photo(solid(0xFFFFFF), busy_nodes());
    // Without the model a busy photo has no cut-out, and the reason says so.
    let err = Cutter::new(None).cut(&busy).unwrap_err();
    assert_eq!(err, Refusal::NoModel);
    assert!(err.to_string().contains("scripts/fetch-models"), "{err}");
    let cut = model_cutter().cut(&busy).unwrap();
    assert_eq!(cut.method, Method::Model);
    let score = iou(&cut, &truth);
    eprintln!("IoU on the busy photo: {score:.3}");
    assert!(score >= 0.75, "IoU {score} on the busy photo");
}

#[test]
fn masks_that_fail_the_sanity_check_fall_back_with_a_reason() {
    let cutter = Cutter::new(None);
    // Nothing on the ground.
    let blank = DynamicImage::ImageRgba8(render(solid(0xFFFFFF), Vec::new()).into());
    let err = cutter.cut(&blank).unwrap_err();
    assert!(matches!(err, Refusal::Empty { .. }), "{err:?}");
    assert!(err.to_string().contains("no product stands out"), "{err}");

    // A cut-out PNG whose product fills all but a 2 px transparent border (98 %).
    let full = RgbaImage::from_fn(400, 400, |x, y| {
        let inside = (2..398).contains(&x) && (2..398).contains(&y);
        image::Rgba(if inside { [136, 68, 34, 255] } else { [0; 4] })
    });
    let err = cutter.cut(&DynamicImage::ImageRgba8(full)).unwrap_err();
    assert!(matches!(err, Refusal::FillsFrame { .. }), "{err:?}");
    assert!(err.to_string().contains("cannot be told"), "{err}");

    // Thirty separate dots of equal size: not one product.
    let dots: Vec<(String, Value)> = (0..30)
        .map(|i| {
            let id = format!("dot{i}");
            let (x, y) = (
                80.0 + (i % 6) as f32 * 150.0,
                100.0 + (i / 6) as f32 * 170.0,
            );
            (
                id.clone(),
                json!({"id": id, "type": "ELLIPSE", "x": x, "y": y, "width": 60, "height": 60,
                       "fills": solid(0x2244AA)}),
            )
        })
        .collect();
    let scattered = DynamicImage::ImageRgba8(render(solid(0xFFFFFF), dots).into());
    let err = cutter.cut(&scattered).unwrap_err();
    assert!(matches!(err, Refusal::Scattered { parts: 30 }), "{err:?}");

    // An empty image.
    let err = cutter.cut(&DynamicImage::new_rgba8(0, 0)).unwrap_err();
    assert!(matches!(err, Refusal::Empty { .. }), "{err:?}");
}

#[test]
fn a_photo_with_its_own_transparency_keeps_it() {
    let truth = truth();
    let alone = DynamicImage::ImageRgba8(render(json!([]), product_nodes()).into());
    let cut = Cutter::new(None).cut(&alone).unwrap();
    assert_eq!(cut.method, Method::SourceAlpha);
    let score = iou(&cut, &truth);
    assert!(score >= 0.99, "IoU {score} from the photo's own alpha");
}
