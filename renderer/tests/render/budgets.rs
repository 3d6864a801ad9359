//! The budgets a render runs under (`adforge_renderer::budget`): a deadline that stops the
//! drawing itself, and a memory bound computed from the display list before drawing.

use std::time::{Duration, Instant};

use adforge_renderer::budget::MAX_LAYER_BYTES;
use adforge_renderer::{Deadline, Error, RenderOptions, Tree};
use serde_json::{Value, json};

use crate::harness::renderer;

fn solid(r: f32, g: f32, b: f32) -> Value {
    json!({"type": "SOLID", "color": {"r": r, "g": g, "b": b, "a": 1.0}})
}

/// `n` full-size rectangles, each with a large layer blur and a large spread drop shadow:
/// minutes of work at 2160 px for the direct filters, seconds with the fast ones.
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

/// `depth` clipping frames with rounded corners, each inside the last and each as large as
/// the canvas allows, with a rectangle at the bottom poking out of every frame.
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
        nodes.insert(
            id.clone(),
            json!({"id": id, "type": "FRAME", "x": if d == 0 { 0.0 } else { 0.5 }, "y": if d == 0 { 0.0 } else { 0.5 },
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

#[test]
fn a_render_past_its_deadline_stops_drawing_instead_of_finishing() {
    let tree = Tree::from_value(blur_heavy(60)).unwrap();
    let options = RenderOptions {
        width: Some(2160),
        encode_png: true,
    };
    let budget = Duration::from_millis(300);
    let start = Instant::now();
    let out = renderer().render_until(&tree, &options, &Deadline::after(budget));
    let took = start.elapsed();
    assert!(
        matches!(out, Err(Error::PastDeadline { .. })),
        "60 full-canvas blurs and 500 px shadows at 2160 px do not draw in 300 ms, so the render must stop: {:?}",
        out.map(|r| r.report.timings)
    );
    // Not a timing assertion on speed: the full render takes far longer than this bound
    // (it is the bound on *stopping*, with room for a slow, loaded machine). The stop
    // latency itself is measured by scripts/bench-render.
    assert!(
        took < budget + Duration::from_secs(10),
        "stopped only after {took:?}"
    );
}

#[test]
fn a_render_within_its_deadline_draws_the_same_pixels_as_one_without() {
    let tree = Tree::from_value(blur_heavy(2)).unwrap();
    let options = RenderOptions {
        width: Some(200),
        encode_png: false,
    };
    let plain = renderer().render(&tree, &options).unwrap();
    let timed = renderer()
        .render_until(&tree, &options, &Deadline::after(Duration::from_secs(600)))
        .unwrap();
    assert_eq!(plain.pixmap.data(), timed.pixmap.data());
}

#[test]
fn nested_clipping_frames_beyond_the_memory_bound_are_refused_naming_a_frame() {
    let tree = Tree::from_value(nested_frames(255)).unwrap();
    let err = renderer().check_memory(&tree, None, true).unwrap_err();
    let Error::TooMuchMemory {
        node, bytes, limit, ..
    } = &err
    else {
        panic!("expected TooMuchMemory, got {err}");
    };
    assert_eq!(*limit, MAX_LAYER_BYTES);
    assert!(*bytes > MAX_LAYER_BYTES, "{bytes}");
    assert!(node.starts_with('f'), "names a frame: {node}");
    let text = err.to_string();
    assert!(
        text.contains(node.as_str()) && text.contains("flatten"),
        "{text}"
    );
    // The render itself refuses it too, before drawing anything.
    let out = renderer().render(
        &tree,
        &RenderOptions {
            width: None,
            encode_png: true,
        },
    );
    assert!(matches!(out, Err(Error::TooMuchMemory { .. })));
}

#[test]
fn a_few_nested_frames_and_small_renders_of_many_fit_the_bound() {
    let few = Tree::from_value(nested_frames(4)).unwrap();
    let peak = renderer().check_memory(&few, None, true).unwrap();
    // Four full-canvas layers at 3840 px: 4 × 59 MB, plus the canvas and the encode.
    assert!(
        peak.layers >= 4 * 3840 * 3840 * 4 - 4 * 3840 * 80 * 4 * 4,
        "{peak:?}"
    );
    assert!(!peak.over());
    // Many levels are fine where they are small.
    let many = Tree::from_value(nested_frames(255)).unwrap();
    let small = renderer().check_memory(&many, Some(200), false).unwrap();
    assert!(small.layers > 0 && !small.over(), "{small:?}");
    let out = renderer()
        .render(
            &many,
            &RenderOptions {
                width: Some(200),
                encode_png: false,
            },
        )
        .unwrap();
    // The innermost rectangle is drawn, clipped by every frame: red in the middle.
    let px = out.pixmap.pixel(100, 100).unwrap();
    assert!(px.red() > 200 && px.green() < 80, "{px:?}");
}

#[test]
fn a_blend_layer_inside_a_small_clip_is_allocated_to_the_clip_not_the_canvas() {
    // A rectangle with a multiply fill inside a small rounded clipping frame: its blend
    // layer is at most the frame's size, however large the rectangle is.
    let tree = json!({"root": "root", "nodes": {
        "root": {"id": "root", "type": "FRAME", "width": 1000, "height": 1000,
                 "fills": [solid(1.0, 1.0, 1.0)], "children": ["clip"]},
        "clip": {"id": "clip", "type": "FRAME", "x": 100, "y": 100, "width": 100, "height": 100,
                 "cornerRadius": 10, "clipsContent": true, "children": ["big"]},
        "big": {"id": "big", "type": "RECTANGLE", "x": -100, "y": -100, "width": 1000, "height": 1000,
                "fills": [{"type": "SOLID", "color": {"r": 0.5, "g": 0.2, "b": 0.2, "a": 1.0},
                           "blendMode": "MULTIPLY"}]}
    }});
    let tree = Tree::from_value(tree).unwrap();
    let peak = renderer().check_memory(&tree, Some(1000), false).unwrap();
    // The clip layer (100 × 100 px) plus the blend layer inside it (at most the same).
    assert!(peak.layers <= 2 * 101 * 101 * 4 + 101 * 101, "{peak:?}");
}
