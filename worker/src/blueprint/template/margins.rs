//! The margin every text box of a template keeps from the canvas's edges:
//! [`crate::generate::quality::TEXT_MARGIN`] of the canvas's short side on each edge, the
//! quality rule's margin ([`crate::generate::quality::text_margin`]). A reference's text may
//! run to its edges, and a box widened into the free space around it may reach them; an
//! edited line would then end at the edge. Every text box (and the logo box, which may be
//! set as a wordmark) is brought inside the margins after the template is written.

use std::collections::HashMap;

use serde_json::Value;

use crate::generate::quality::TEXT_MARGIN;

/// Brings every text box (`$text`) and the `logo` box of `tree` (a written template at its
/// design size, `root` its canvas) inside the margins: an edge that crosses one moves in,
/// while that keeps at least half of the box's span; a box that would lose more (a block
/// set inside the margin band) is moved in whole, as large as the span inside allows.
pub(super) fn keep_margins(tree: &mut Value) {
    let Some(nodes) = tree.get_mut("nodes").and_then(Value::as_object_mut) else {
        return;
    };
    let num = |n: &Value, k: &str| n.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let Some(root) = nodes.get("root") else {
        return;
    };
    let (w, h) = (num(root, "width"), num(root, "height"));
    let m = f64::from(TEXT_MARGIN) * w.min(h);
    let mut parent: HashMap<String, String> = HashMap::new();
    for (id, n) in nodes.iter() {
        for c in n
            .get("children")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            parent.insert(c.to_owned(), id.clone());
        }
    }
    let boxes: Vec<String> = nodes
        .iter()
        .filter(|(id, n)| n.get("$text").is_some() || id.as_str() == "logo")
        .map(|(id, _)| id.clone())
        .collect();
    for id in boxes {
        // The node's origin: the sum of its frames' positions (a depth bound for cycles).
        let (mut ox, mut oy) = (0.0, 0.0);
        let mut up = parent.get(&id);
        for _ in 0..32 {
            let Some(p) = up.filter(|p| p.as_str() != "root") else {
                break;
            };
            ox += num(&nodes[p], "x");
            oy += num(&nodes[p], "y");
            up = parent.get(p);
        }
        let Some(n) = nodes.get_mut(&id).and_then(Value::as_object_mut) else {
            continue;
        };
        let get = |k: &str| n.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        let (x, bw) = inside(ox + get("x"), get("width"), m, w - m);
        let (y, bh) = inside(oy + get("y"), get("height"), m, h - m);
        for (k, v) in [("x", x - ox), ("y", y - oy), ("width", bw), ("height", bh)] {
            n.insert(k.into(), Value::from(tenths(v)));
        }
    }
}

/// The span `[lo, lo + len]` kept inside `[min, max]` (see [`keep_margins`]): start and
/// length.
fn inside(lo: f64, len: f64, min: f64, max: f64) -> (f64, f64) {
    let (a, b) = (lo.max(min), (lo + len).min(max));
    if b - a >= 0.5 * len {
        return (a, b - a);
    }
    let len = len.min(max - min).max(0.0);
    (lo.clamp(min, (max - len).max(min)), len)
}

/// Design pixels to tenths, as the template writes them (the quality rule allows half a
/// pixel).
fn tenths(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_that_crosses_a_margin_is_shortened_or_moved_in() {
        // The headline: 266.7 wide to the edge of 3840, margin 153.6.
        let (x, w) = inside(266.7, 3573.3, 153.6, 3840.0 - 153.6);
        assert!(
            (x - 266.7).abs() < 1e-9 && (x + w - 3686.4).abs() < 1e-6,
            "{x} {w}"
        );
        // A line set in the margin band is moved in whole.
        let (y, h) = inside(3800.0, 30.0, 153.6, 3686.4);
        assert!(
            (y - 3656.4).abs() < 1e-6 && (h - 30.0).abs() < 1e-9,
            "{y} {h}"
        );
        // Inside already: unchanged.
        assert_eq!(inside(200.0, 100.0, 153.6, 3686.4), (200.0, 100.0));
    }
}
