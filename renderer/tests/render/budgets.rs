//! The budgets a render runs under (`adforge_renderer::budget`): a deadline that stops the
//! drawing itself, and a memory bound computed from the display list before drawing.

use std::time::{Duration, Instant};

use adforge_renderer::budget::MAX_LAYER_BYTES;
use adforge_renderer::{Deadline, Error, RenderOptions, Tree};
use serde_json::json;

use crate::stress_trees::{blur_heavy, nested_frames, solid};

use crate::harness::renderer;

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
