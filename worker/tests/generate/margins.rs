//! The margin rule (issue 39): every text box of a generated ad keeps
//! [`quality::TEXT_MARGIN`] of the canvas's short side from each edge, at every aspect,
//! even when the reference's words run from edge to edge; and the quality rule fails an ad
//! whose text box crosses it.

use std::collections::HashMap;

use adforge_renderer::Renderer;
use adforge_worker::Job;
use adforge_worker::generate::quality::{self, TEXT_MARGIN};
use serde_json::{Value, json};

use crate::fixtures::{Harness, job, logo, repo, serve};
use crate::references::{B, Reference, solid};

/// A reference of `w` × `h` whose words run from edge to edge: a headline set from the left
/// edge across the whole width, a supporting line across it too, and a photo that bleeds
/// off the right and bottom edges (so the reference's own margins there are nil).
fn edge_to_edge(name: &'static str, w: f32, h: f32) -> Reference {
    let mut b = B::new();
    let size = w.min(h) * 0.085;
    b.text(
        [0.0, h * 0.04, w, size * 2.4],
        "EVERY MORNING DESERVES A BETTER CUP OF COFFEE",
        size,
        800,
        0x1A1A1A,
        "LEFT",
    );
    b.text(
        [0.0, h * 0.04 + size * 2.7, w, size * 0.8],
        "Cold brew concentrate, smooth and low in acid, ready in a minute at home",
        size * 0.4,
        400,
        0x333333,
        "LEFT",
    );
    b.photo([w * 0.35, h * 0.45, w * 0.65, h * 0.55], 0.0, 7);
    Reference {
        name,
        tree: b.done(w, h, solid(0xF4EBDD)),
        expect: crate::references::all().remove(0).expect,
    }
}

/// Every visible TEXT node's box in canvas coordinates: (name, x, y, width, height).
fn text_boxes(tree: &Value) -> Vec<(String, f64, f64, f64, f64)> {
    let nodes = tree["nodes"].as_object().unwrap();
    let mut parent: HashMap<&str, &str> = HashMap::new();
    for (id, n) in nodes {
        for c in n["children"].as_array().into_iter().flatten() {
            parent.insert(c.as_str().unwrap(), id);
        }
    }
    let root = tree["root"].as_str().unwrap();
    let f = |n: &Value, k: &str| n[k].as_f64().unwrap_or(0.0);
    nodes
        .iter()
        .filter(|(_, n)| n["type"] == "TEXT" && n["visible"] != false)
        .map(|(id, n)| {
            let (mut x, mut y) = (f(n, "x"), f(n, "y"));
            let mut up = parent.get(id.as_str());
            while let Some(p) = up.filter(|p| **p != root) {
                x += f(&nodes[*p], "x");
                y += f(&nodes[*p], "y");
                up = parent.get(p);
            }
            let name = n["name"].as_str().unwrap_or(id).to_owned();
            (name, x, y, f(n, "width"), f(n, "height"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_boxes_keep_the_margins_at_every_aspect() {
    let renderer = Renderer::with_defaults();
    let refs = [
        edge_to_edge("square", 1080.0, 1080.0),
        edge_to_edge("portrait", 1080.0, 1350.0),
        edge_to_edge("story", 1080.0, 1920.0),
        edge_to_edge("landscape", 1910.0, 1000.0),
    ];
    let mut files = HashMap::new();
    for r in &refs {
        files.insert(format!("/ref/{}.png", r.name), r.png(&renderer));
    }
    files.insert(
        "/img/coffee.png".into(),
        std::fs::read(repo().join("assets/samples/coffee.png")).unwrap(),
    );
    files.insert("/logo/dark.png".into(), logo([24, 24, 32]));
    files.insert("/logo/light.png".into(), logo([250, 250, 250]));
    let base = serve(files).await;
    let h = Harness::new().await;
    let mut failures = Vec::new();
    let mut layouts = Vec::new();
    for r in &refs {
        let j = job(
            &base,
            &format!("ia_m_{}", r.name),
            &format!("/ref/{}.png", r.name),
            true,
        );
        let done = h
            .run(Job::GenerateImageAd(j))
            .await
            .0
            .unwrap_or_else(|e| panic!("{}: {e:?}", r.name));
        let done = crate::fixtures::ad(done);
        // For people to look at: target/generate-samples/margins-<aspect>.png.
        let png = h
            .blob(&adforge_worker::generate::blob_key(
                &format!("ia_m_{}", r.name),
                1,
            ))
            .await;
        let dir = repo().join("target/generate-samples");
        std::fs::create_dir_all(&dir).unwrap();
        image::load_from_memory(&png)
            .unwrap()
            .thumbnail(1080, 1080)
            .save(dir.join(format!("margins-{}.png", r.name)))
            .unwrap();
        let tree = done.json_tree.expect("an editable ad returns its tree");
        let root = &tree["nodes"][tree["root"].as_str().unwrap()];
        let (w, h) = (
            root["width"].as_f64().unwrap(),
            root["height"].as_f64().unwrap(),
        );
        layouts.push(format!("{}: {}", r.name, root["name"]));
        let m = f64::from(TEXT_MARGIN) * w.min(h);
        let boxes = text_boxes(&tree);
        assert!(!boxes.is_empty(), "{}: no text", r.name);
        for (name, x, y, bw, bh) in boxes {
            let air = [x, y, w - (x + bw), h - (y + bh)];
            if air.iter().any(|a| *a < m - 0.5) {
                failures.push(format!(
                    "{}: {name} at ({x}, {y}) {bw} × {bh} on {w} × {h}: {air:?} from the edges, margin {m:.1}",
                    r.name
                ));
            }
        }
        assert_eq!(quality::text_margin(&tree), None, "{}", r.name);
    }
    // The references' own layouts were kept (the margin is kept by the template, not by
    // falling back to the library).
    let blueprint = layouts
        .iter()
        .filter(|l| l.contains(adforge_worker::generate::BLUEPRINT_LAYOUT))
        .count();
    assert!(blueprint >= 3, "{layouts:?}");
    assert!(failures.is_empty(), "{}\n{layouts:?}", failures.join("\n"));
}

#[test]
fn the_rule_fails_a_text_box_that_touches_an_edge() {
    let tree = |x: f64, w: f64| {
        json!({"root": "r", "nodes": {
            "r": {"id": "r", "type": "FRAME", "width": 3840, "height": 3840, "children": ["f"]},
            "f": {"id": "f", "type": "FRAME", "x": 200, "y": 200, "width": 3000, "height": 3000,
                  "children": ["t"]},
            "t": {"id": "t", "type": "TEXT", "name": "Headline", "characters": "Headline",
                  "x": x, "y": 100, "width": w, "height": 300}
        }})
    };
    // The issue's headline: to the canvas's edge (inside a frame, so the frame's offset
    // counts).
    let why = quality::text_margin(&tree(66.7, 3573.3)).expect("a box to the edge fails");
    assert!(
        why.contains("Headline") && why.contains("right edge"),
        "{why}"
    );
    // 6 px short of the edge fails too; 4 % of the short side (153.6 px) passes.
    assert!(quality::text_margin(&tree(66.7, 3567.3)).is_some());
    assert_eq!(
        quality::text_margin(&tree(0.0, 3840.0 - 153.6 - 200.0)),
        None
    );
    // Left of the margin fails.
    let why = quality::text_margin(&tree(-100.0, 1000.0)).expect("left of the margin");
    assert!(why.contains("left edge"), "{why}");
}

#[test]
fn the_library_layouts_keep_the_margins() {
    // The layouts an ad falls back to are drawn inside the margin at every aspect.
    for layout in adforge_worker::generate::layouts::library().unwrap() {
        for (aspect, template) in &layout.variants {
            assert!(!text_boxes(template).is_empty(), "{} {aspect}", layout.name);
            assert_eq!(
                quality::text_margin(template),
                None,
                "{} {aspect}",
                layout.name
            );
        }
    }
}
