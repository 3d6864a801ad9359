//! Cross-check against resvg: fixtures with an equivalent `.svg` twin are rendered by both at
//! the same size and compared.
//!
//! Tolerance: both use tiny-skia, but curves are flattened differently (our rounded corners
//! and ellipses are cubic approximations; resvg converts arcs itself) and gradients are
//! evaluated in slightly different spaces, so anti-aliased edges may differ. We accept a
//! mean absolute difference under 1.0 (of 255) per channel and at most 1 % of pixels off by
//! more than 32.

use adforge_renderer::RenderOptions;
use resvg::usvg;
use tiny_skia::{Pixmap, Transform};

use crate::harness::{goldens_dir, renderer, write_failure};

const MEAN_TOLERANCE: f64 = 1.0;
const BAD_PIXEL_FRACTION: f64 = 0.01;
const BAD_PIXEL_DELTA: u8 = 32;

fn check(name: &str) {
    let tree_path = goldens_dir().join(format!("{name}.json"));
    let tree =
        adforge_renderer::Tree::parse(&std::fs::read_to_string(&tree_path).unwrap()).unwrap();
    let (dw, dh) = tree.design_size();
    let (w, h) = (dw as u32 * 3, dh as u32 * 3);
    let ours = renderer()
        .render(
            &tree,
            &RenderOptions {
                width: Some(w),
                encode_png: false,
            },
        )
        .unwrap()
        .pixmap;

    let svg = std::fs::read(goldens_dir().join(format!("{name}.svg"))).unwrap();
    // The twins contain no text, so no fonts are needed.
    let opt = usvg::Options::default();
    let svg_tree = usvg::Tree::from_data(&svg, &opt).unwrap();
    let mut theirs = Pixmap::new(w, h).unwrap();
    resvg::render(
        &svg_tree,
        Transform::from_scale(w as f32 / dw, h as f32 / dh),
        &mut theirs.as_mut(),
    );

    let mut sum = 0u64;
    let mut bad = 0usize;
    for (a, b) in ours.pixels().iter().zip(theirs.pixels()) {
        let d = [
            a.red().abs_diff(b.red()),
            a.green().abs_diff(b.green()),
            a.blue().abs_diff(b.blue()),
            a.alpha().abs_diff(b.alpha()),
        ];
        sum += d.iter().map(|&v| u64::from(v)).sum::<u64>();
        if d.iter().any(|&v| v > BAD_PIXEL_DELTA) {
            bad += 1;
        }
    }
    let n = (w * h) as f64;
    let mean = sum as f64 / (n * 4.0);
    let frac = bad as f64 / n;
    if mean > MEAN_TOLERANCE || frac > BAD_PIXEL_FRACTION {
        let out = write_failure(&format!("resvg_{name}"), &theirs, &ours);
        panic!(
            "{name}: mean diff {mean:.3}, {:.2} % pixels off by > {BAD_PIXEL_DELTA}; resvg | diff | ours in {}",
            frac * 100.0,
            out.display()
        );
    }
}

macro_rules! cross {
    ($($area:ident / $name:ident),* $(,)?) => {
        $(
            #[allow(non_snake_case)]
            #[test]
            fn $name() {
                check(concat!(stringify!($area), "/", stringify!($name)));
            }
        )*
    };
}

cross!(
    shapes / rectangle,
    shapes / corner_radius,
    shapes / ellipse,
    shapes / vector_path,
    shapes / vector_evenodd,
    shapes / rotation,
    shapes / opacity,
    shapes / group,
    shapes / frame_clip,
    shapes / stroke_center,
    shapes / blend_multiply,
    paints / solid_alpha,
    paints / linear_gradient,
    paints / radial_gradient,
    paints / paint_opacity
);
