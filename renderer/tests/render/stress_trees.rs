//! Trees that stress a render's budgets (issue 39), shared by the renderer's tests, its
//! `bench_budget` example and the API and process-level tests (each includes this file by
//! path, so the trees are written once).

use serde_json::{Value, json};

/// A SOLID paint of this colour.
pub fn solid(r: f32, g: f32, b: f32) -> Value {
    json!({"type": "SOLID", "color": {"r": r, "g": g, "b": b, "a": 1.0}})
}

/// `n` full-size rectangles on a 1000 × 1000 root, each with a 500 px layer blur and a drop
/// shadow of 500 px blur and spread: the tree of issue 39's report (499 such nodes took a
/// core for minutes at 2160 px), about 200 ms a node at 2160 px today.
pub fn blur_heavy(n: usize) -> Value {
    let mut nodes = serde_json::Map::new();
    let kids: Vec<String> = (0..n).map(|i| format!("n{i}")).collect();
    nodes.insert(
        "root".into(),
        json!({"id": "root", "type": "FRAME", "width": 1000, "height": 1000,
               "fills": [solid(0.9, 0.9, 0.9)], "children": kids}),
    );
    for (i, id) in kids.iter().enumerate() {
        nodes.insert(
            id.clone(),
            json!({"id": id, "type": "RECTANGLE", "x": (i % 7) as f32, "y": 0, "width": 1000, "height": 1000,
                   "fills": [solid(0.2, 0.3, 0.8)],
                   "effects": [
                       {"type": "LAYER_BLUR", "radius": 500},
                       {"type": "DROP_SHADOW", "radius": 500, "spread": 500, "offset": {"x": 3, "y": 3}}
                   ]}),
        );
    }
    json!({"root": "root", "nodes": nodes})
}

/// `depth` rounded clipping frames, each inside the last and nearly as large, with a
/// rectangle poking out of all of them: every frame needs a layer of its own (issue 39:
/// 255 of them took 6.4 GB to draw at 4K).
pub fn nested_frames(depth: usize) -> Value {
    let mut nodes = serde_json::Map::new();
    for d in 0..depth {
        let id = if d == 0 {
            "root".to_owned()
        } else {
            format!("f{d}")
        };
        let child = if d + 1 < depth {
            format!("f{}", d + 1)
        } else {
            "leaf".to_owned()
        };
        let at = if d == 0 { 0.0 } else { 0.5 };
        nodes.insert(
            id.clone(),
            json!({"id": id, "type": "FRAME", "x": at, "y": at,
                   "width": 1000.0 - d as f32, "height": 1000.0 - d as f32,
                   "cornerRadius": 40, "clipsContent": true,
                   "fills": [solid(0.1 + (d % 10) as f32 * 0.08, 0.5, 0.6)], "children": [child]}),
        );
    }
    nodes.insert(
        "leaf".into(),
        json!({"id": "leaf", "type": "RECTANGLE", "x": -20, "y": -20, "width": 2000, "height": 2000,
               "fills": [solid(0.9, 0.2, 0.2)]}),
    );
    json!({"root": "root", "nodes": nodes})
}
