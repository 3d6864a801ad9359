//! Geometry helpers: node shapes and SVG path data as `tiny_skia::Path`.

use tiny_skia::{Path, PathBuilder, Rect};

/// Returns `Some(message)` when `data` is not valid SVG path data.
pub(crate) fn validate_svg_path(data: &str) -> Option<String> {
    for seg in svgtypes::SimplifyingPathParser::from(data) {
        if let Err(e) = seg {
            return Some(format!("invalid SVG path data: {e}"));
        }
    }
    None
}

/// Parses SVG path data (already validated) into a path.
pub(crate) fn svg_path(data: &str) -> Option<Path> {
    let mut pb = PathBuilder::new();
    for seg in svgtypes::SimplifyingPathParser::from(data) {
        let Ok(seg) = seg else { return None };
        match seg {
            svgtypes::SimplePathSegment::MoveTo { x, y } => pb.move_to(x as f32, y as f32),
            svgtypes::SimplePathSegment::LineTo { x, y } => pb.line_to(x as f32, y as f32),
            svgtypes::SimplePathSegment::Quadratic { x1, y1, x, y } => {
                pb.quad_to(x1 as f32, y1 as f32, x as f32, y as f32)
            }
            svgtypes::SimplePathSegment::CurveTo {
                x1,
                y1,
                x2,
                y2,
                x,
                y,
            } => pb.cubic_to(
                x1 as f32, y1 as f32, x2 as f32, y2 as f32, x as f32, y as f32,
            ),
            svgtypes::SimplePathSegment::ClosePath => pb.close(),
        }
    }
    pb.finish()
}

/// A rectangle with per-corner radii (top-left, top-right, bottom-right, bottom-left),
/// clamped so that adjacent radii never overlap (CSS's rule).
pub(crate) fn rounded_rect(x: f32, y: f32, w: f32, h: f32, radii: [f32; 4]) -> Option<Path> {
    if w <= 0.0 || h <= 0.0 {
        return None;
    }
    let mut r = radii.map(|v| v.max(0.0));
    let f = [
        w / (r[0] + r[1]).max(f32::EPSILON),
        h / (r[1] + r[2]).max(f32::EPSILON),
        w / (r[2] + r[3]).max(f32::EPSILON),
        h / (r[3] + r[0]).max(f32::EPSILON),
    ]
    .into_iter()
    .fold(1.0f32, f32::min);
    if f < 1.0 {
        r = r.map(|v| v * f);
    }
    if r.iter().all(|&v| v <= 0.0) {
        return Rect::from_xywh(x, y, w, h).map(PathBuilder::from_rect);
    }
    // Cubic approximation of a quarter circle.
    const K: f32 = 0.552_284_8;
    let (x1, y1) = (x + w, y + h);
    let mut pb = PathBuilder::new();
    pb.move_to(x + r[0], y);
    pb.line_to(x1 - r[1], y);
    if r[1] > 0.0 {
        pb.cubic_to(
            x1 - r[1] * (1.0 - K),
            y,
            x1,
            y + r[1] * (1.0 - K),
            x1,
            y + r[1],
        );
    }
    pb.line_to(x1, y1 - r[2]);
    if r[2] > 0.0 {
        pb.cubic_to(
            x1,
            y1 - r[2] * (1.0 - K),
            x1 - r[2] * (1.0 - K),
            y1,
            x1 - r[2],
            y1,
        );
    }
    pb.line_to(x + r[3], y1);
    if r[3] > 0.0 {
        pb.cubic_to(
            x + r[3] * (1.0 - K),
            y1,
            x,
            y1 - r[3] * (1.0 - K),
            x,
            y1 - r[3],
        );
    }
    pb.line_to(x, y + r[0]);
    if r[0] > 0.0 {
        pb.cubic_to(
            x,
            y + r[0] * (1.0 - K),
            x + r[0] * (1.0 - K),
            y,
            x + r[0],
            y,
        );
    }
    pb.close();
    pb.finish()
}

/// The ellipse inscribed in the box.
pub(crate) fn ellipse(x: f32, y: f32, w: f32, h: f32) -> Option<Path> {
    Rect::from_xywh(x, y, w, h).and_then(PathBuilder::from_oval)
}
