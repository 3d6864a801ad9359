//! Air between text boxes that lie one above the other: a reference's blocks may touch (a
//! tight eyebrow over its headline, a detector's boxes that overlap), and the quality rule
//! ([`crate::generate::quality::crowded_text`]) refuses an ad whose text boxes come closer
//! than [`crate::generate::quality::MIN_CHECKED_GAP_EM`] of the smaller type. After the
//! template is written, the upper of two such boxes is shortened to leave a little more
//! than that (its text shrinks to fit, down to one line at its smallest size); where it
//! cannot give that much, the lower box gives the rest from its top. A text box keeps the
//! same air from the other boxes above or below it (a panel it straddles the edge of, the
//! product image, the logo, a button): it gives up its bottom to what lies below its
//! centre and its top to what lies above.

use serde_json::Value;

use crate::generate::quality::MIN_CHECKED_GAP_EM;

/// The air kept: a little over the quality rule's, so rounding never lands under it.
const GAP_EM: f64 = MIN_CHECKED_GAP_EM as f64 * 1.2;

/// Slots that are what texts are set on, never what they keep air from.
const GROUNDS: [&str; 4] = ["background", "photo", "text_scrim", "product_shadow"];

/// Leaves [`GAP_EM`] between every two top-level text boxes (`$text`) of `tree` whose
/// spans overlap side to side and that lie one above the other, and between each text box
/// and the other boxes above or below it (see the module docs).
pub(super) fn keep_gaps(tree: &mut Value) {
    let Some(nodes) = tree.get_mut("nodes").and_then(Value::as_object_mut) else {
        return;
    };
    let top_level: Vec<String> = nodes
        .get("root")
        .and_then(|r| r.get("children"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|id| nodes.get(*id).is_some_and(|n| n.get("$text").is_some()))
        .map(str::to_owned)
        .collect();
    let num = |n: &Value, k: &str| n.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    // (x, y, w, h, the largest type size, the smallest)
    let boxes = |nodes: &serde_json::Map<String, Value>, id: &str| {
        let n = &nodes[id];
        let fit = n.get("textFit");
        let max = fit
            .and_then(|f| f.get("maxFontSize"))
            .and_then(Value::as_f64)
            .unwrap_or_else(|| num(n, "fontSize"));
        let min = fit
            .and_then(|f| f.get("minFontSize"))
            .and_then(Value::as_f64)
            .unwrap_or(max);
        (
            num(n, "x"),
            num(n, "y"),
            num(n, "width"),
            num(n, "height"),
            max,
            min,
        )
    };
    for a in &top_level {
        for b in &top_level {
            if a == b {
                continue;
            }
            let (ax, ay, aw, ah, aem, amin) = boxes(nodes, a);
            let (bx, by, bw, bh, bem, bmin) = boxes(nodes, b);
            let side = bx < ax + aw && bx + bw > ax;
            // `a` above `b`: its top is higher and its centre is not inside `b`.
            if !side || ay >= by || ay + ah / 2.0 >= by {
                continue;
            }
            let need = GAP_EM * aem.min(bem);
            let gap = by - (ay + ah);
            if gap >= need {
                continue;
            }
            let missing = need - gap;
            // The upper box keeps one line at its smallest size.
            let a_floor = amin * 1.2;
            let give_a = missing.min((ah - a_floor).max(0.0));
            let give_b = (missing - give_a).min((bh - bmin * 1.2).max(0.0));
            let r1 = |v: f64| (v * 10.0).floor() / 10.0;
            if give_a > 0.0 {
                nodes[a]["height"] = Value::from(r1(ah - give_a));
            }
            if give_b > 0.0 {
                let moved = (give_b * 10.0).ceil() / 10.0;
                nodes[b]["y"] = Value::from(by + moved);
                nodes[b]["height"] = Value::from(r1(bh - moved));
            }
        }
    }
    let others: Vec<String> = nodes
        .get("root")
        .and_then(|r| r.get("children"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|id| {
            !GROUNDS.contains(id)
                && nodes
                    .get(*id)
                    .is_some_and(|n| n.get("$text").is_none() && n.get("$scrim").is_none())
        })
        .map(str::to_owned)
        .collect();
    for a in &top_level {
        for o in &others {
            let (ax, ay, aw, ah, aem, amin) = boxes(nodes, a);
            let n = &nodes[o];
            let (ox, oy, ow, oh) = (num(n, "x"), num(n, "y"), num(n, "width"), num(n, "height"));
            let (cx, cy) = (ax + aw / 2.0, ay + ah / 2.0);
            let holds = cx >= ox && cx <= ox + ow && cy >= oy && cy <= oy + oh;
            if ow <= 0.0 || oh <= 0.0 || holds || !(ox < ax + aw && ox + ow > ax) {
                continue;
            }
            let need = GAP_EM * aem;
            let floor = amin * 1.2;
            if oy >= cy {
                // Below the text: its bottom comes up.
                let missing = need - (oy - (ay + ah));
                if missing > 0.0 {
                    let h = (ah - missing).max(floor.min(ah));
                    nodes[a]["height"] = Value::from((h * 10.0).floor() / 10.0);
                }
            } else if oy + oh <= cy {
                // Above it: its top goes down.
                let missing = need - (ay - (oy + oh));
                let give = missing.min((ah - floor).max(0.0));
                if give > 0.0 {
                    let give = (give * 10.0).ceil() / 10.0;
                    nodes[a]["y"] = Value::from(ay + give);
                    nodes[a]["height"] = Value::from(((ah - give) * 10.0).floor() / 10.0);
                }
            }
        }
    }
}
