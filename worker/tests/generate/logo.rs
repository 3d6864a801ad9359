//! The brand's logo judged on pixels (issue 21): the quality rule measures the mark on the
//! check render against the same render without it, on photos as on solids, and checks its
//! size; an ad on a dark photo whose corner logo was first chosen for a light ground gets the
//! variant that reads there.

use std::collections::HashMap;

use adforge_renderer::{RenderOptions, Renderer, Tree};
use adforge_worker::Job;
use adforge_worker::generate::pixels;
use adforge_worker::generate::quality::{LogoMeasure, logo_rule, measure_logo};
use image::{Rgb, RgbImage};
use serde_json::{Value, json};

use crate::fixtures::{Harness, job, logo, png, serve};
use crate::formats;

/// A photo in dark (or light) tones: blotches of colour over a gradient, like a real shot.
fn photo(dark: bool, w: u32, h: u32) -> Vec<u8> {
    let base: [f32; 3] = if dark {
        [28.0, 30.0, 40.0]
    } else {
        [225.0, 220.0, 205.0]
    };
    let img = RgbImage::from_fn(w, h, |x, y| {
        let wave = ((x as f32 / 23.0).sin() + (y as f32 / 31.0).cos()) * 14.0;
        let grad = y as f32 / h as f32 * 20.0;
        let c = |k: usize| {
            (base[k] + wave + grad * if k == 2 { 1.0 } else { 0.5 }).clamp(0.0, 255.0) as u8
        };
        Rgb([c(0), c(1), c(2)])
    });
    png(&image::DynamicImage::ImageRgb8(img))
}

/// A 540 px tree: `ground` (an image URL, or a solid grey when `None`) under a logo image
/// in `bbox`.
fn tree(ground: Option<&str>, logo_url: &str, bbox: [f32; 4]) -> Value {
    let fill = match ground {
        Some(u) => json!([{"type": "IMAGE", "imageFillUrl": u, "scaleMode": "FILL"}]),
        None => json!([{"type": "SOLID", "color": {"r": 0.094, "g": 0.094, "b": 0.125, "a": 1}}]),
    };
    json!({"root": "r", "nodes": {
        "r": {"id": "r", "type": "FRAME", "width": 540, "height": 540, "children": ["g", "logo"],
              "fills": [{"type": "SOLID", "color": {"r": 1, "g": 1, "b": 1, "a": 1}}]},
        "g": {"id": "g", "type": "RECTANGLE", "x": 0, "y": 0, "width": 540, "height": 540, "fills": fill},
        "logo": {"id": "logo", "type": "RECTANGLE", "name": "Logo", "x": bbox[0], "y": bbox[1],
                 "width": bbox[2], "height": bbox[3],
                 "fills": [{"type": "IMAGE", "imageFillUrl": logo_url, "scaleMode": "FIT"}]}
    }})
}

/// The logo of `t` measured as the pipeline does: its render beside the render without it.
fn measured(renderer: &Renderer, t: &Value) -> LogoMeasure {
    let opts = RenderOptions {
        width: Some(540),
        encode_png: false,
    };
    let with = renderer
        .render(&Tree::from_value(t.clone()).unwrap(), &opts)
        .unwrap();
    let mut hidden = t.clone();
    hidden["nodes"]["logo"]["visible"] = json!(false);
    let without = renderer
        .render(&Tree::from_value(hidden).unwrap(), &opts)
        .unwrap();
    let b = with.boxes.iter().find(|b| b.id == "logo").unwrap();
    measure_logo(
        "logo",
        pixels(&with),
        pixels(&without),
        [b.x, b.y, b.width, b.height],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_logo_is_judged_on_the_pixels_behind_it() {
    let mut files = HashMap::new();
    files.insert("/photo/dark.png".to_owned(), photo(true, 540, 540));
    files.insert("/photo/light.png".to_owned(), photo(false, 540, 540));
    files.insert("/logo/dark.png".to_owned(), logo([24, 24, 32]));
    files.insert("/logo/light.png".to_owned(), logo([250, 250, 250]));
    let base = serve(files).await;
    let h = Harness::new().await;
    let r = h.handler.renderer();
    let u = |p: &str| format!("{base}{p}");
    let corner = [24.0, 24.0, 90.0, 25.0];

    // A dark mark on a dark photo: the colours say nothing (a photo has none), the pixels do.
    let m = measured(
        r,
        &tree(Some(&u("/photo/dark.png")), &u("/logo/dark.png"), corner),
    );
    let why = logo_rule(&m).unwrap_err();
    assert!(why.contains("contrast"), "{why} {m:?}");
    assert!(
        m.ground.iter().all(|c| *c < 90),
        "the dark photo behind it: {m:?}"
    );
    // The light variant on it, and the dark one on a light photo, read.
    let m = measured(
        r,
        &tree(Some(&u("/photo/dark.png")), &u("/logo/light.png"), corner),
    );
    assert!(logo_rule(&m).is_ok(), "{m:?}");
    assert!(m.contrast > 5.0, "{m:?}");
    let m = measured(
        r,
        &tree(Some(&u("/photo/light.png")), &u("/logo/dark.png"), corner),
    );
    assert!(logo_rule(&m).is_ok(), "{m:?}");
    // Its size is the mark's, measured: the 90 x 25 px box holds a 3.6:1 mark 25 px tall
    // (4.6 % of 540) and 90 px wide.
    assert!(
        (m.height - 25.0 / 540.0).abs() < 0.01 && (m.width - 90.0 / 540.0).abs() < 0.01,
        "{m:?}"
    );
    // A mark drawn too small is refused, though it reads.
    let m = measured(
        r,
        &tree(
            Some(&u("/photo/light.png")),
            &u("/logo/dark.png"),
            [24.0, 24.0, 36.0, 10.0],
        ),
    );
    let why = logo_rule(&m).unwrap_err();
    assert!(why.contains("tall"), "{why} {m:?}");
    // A mark in the colour of its ground does not show at all.
    let m = measured(r, &tree(None, &u("/logo/dark.png"), corner));
    let why = logo_rule(&m).unwrap_err();
    assert!(
        why.contains("does not show") || why.contains("contrast"),
        "{why} {m:?}"
    );
}

/// The logo node of an ad's tree.
fn logo_node(tree: &Value) -> Value {
    tree["nodes"]
        .as_object()
        .unwrap()
        .values()
        .find(|n| n["name"] == "Logo")
        .cloned()
        .expect("a logo")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corner_logo_on_a_photo_is_chosen_by_the_pixels_behind_it() {
    // The story reference has a photo ground and no logo: the logo goes in a free corner, on
    // the product photo that fills the canvas. Its variant is chosen for what is there.
    let renderer = Renderer::with_defaults();
    let story = formats::all()
        .into_iter()
        .find(|r| r.name == "story")
        .unwrap()
        .png(&renderer);
    let mut files = HashMap::new();
    files.insert("/ref/story.png".to_owned(), story);
    files.insert("/img/dark.png".to_owned(), photo(true, 800, 1200));
    files.insert("/img/light.png".to_owned(), photo(false, 800, 1200));
    files.insert("/logo/dark.png".to_owned(), logo([24, 24, 32]));
    files.insert("/logo/light.png".to_owned(), logo([250, 250, 250]));
    let base = serve(files).await;
    let h = Harness::new().await;
    for (shot, want) in [("dark", "/logo/light.png"), ("light", "/logo/dark.png")] {
        let mut j = job(&base, &format!("ia_logo_{shot}"), "/ref/story.png", true);
        j.variant_image_urls = vec![format!("{base}/img/{shot}.png")];
        let done = h
            .run(Job::GenerateImageAd(j))
            .await
            .0
            .unwrap_or_else(|e| panic!("{shot}: {e:?}"));
        let tree = done.json_tree.unwrap();
        assert_eq!(
            tree["nodes"][tree["root"].as_str().unwrap()]["name"],
            adforge_worker::generate::BLUEPRINT_LAYOUT,
            "{shot}: the reference's own layout keeps the rules"
        );
        let l = logo_node(&tree);
        assert_ne!(l["visible"], false, "{shot}");
        let url = l["fills"][0]["imageFillUrl"].as_str().unwrap_or_default();
        assert!(url.ends_with(want), "{shot} photo: logo {url}, want {want}");
        // And measured on the ad as delivered, it keeps the rule.
        let t = Tree::from_value(tree.clone()).unwrap();
        let opts = RenderOptions {
            width: Some(540),
            encode_png: false,
        };
        let with = h.handler.renderer().render(&t, &opts).unwrap();
        let mut hidden = tree.clone();
        let id = l["id"].as_str().unwrap().to_owned();
        hidden["nodes"][&id]["visible"] = json!(false);
        let without = h
            .handler
            .renderer()
            .render(&Tree::from_value(hidden).unwrap(), &opts)
            .unwrap();
        let b = with.boxes.iter().find(|b| b.id == id).unwrap();
        let m = measure_logo(
            &id,
            pixels(&with),
            pixels(&without),
            [b.x, b.y, b.width, b.height],
        );
        assert!(logo_rule(&m).is_ok(), "{shot}: {m:?}");
    }
}
