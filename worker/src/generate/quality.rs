//! The rules an ad built on a reference's blueprint must keep before it is accepted, judged
//! on the renderer's report of the final preflight render:
//!
//! - no text that overflows its box or was truncated ([`Warning::TextOverflow`],
//!   [`Warning::TextTruncated`]);
//! - no text under 4.5:1 against the pixels really behind it ([`Warning::LowContrast`];
//!   the renderer applies 4.5:1 to all text, stricter than WCAG's 3:1 for large text);
//! - the output's aspect ratio within 3 % of the reference's;
//! - the product image (when the ad has one) covering at least
//!   [`MIN_PRODUCT_SHARE`] of the canvas;
//! - no text box that overlaps or nearly touches another slot's box ([`crowded_text`]):
//!   at least [`MIN_CHECKED_GAP_EM`] of the text's font size above or below a box in the
//!   same column, [`SIDE_GAP_EM`] from a box beside it. The template keeps more
//!   ([`crate::blueprint::template::MIN_TEXT_GAP_EM`]); this rule catches what that could not.
//!
//! The logo's 3:1 against its backdrop is kept where it is placed
//! ([`super::fill`] only uses a logo variant with ≥ 3:1 against the backdrop colour, else
//! sets the brand name as a wordmark, which the text rules above then cover).

use adforge_renderer::{RenderReport, Tree, Warning};
use serde_json::Value;

use crate::blueprint::{Blueprint, MIN_PRODUCT_SHARE};

/// Least air between a text box and another slot's box above or below it in the same column,
/// in the text's largest font size (em); less counts as touching.
pub const MIN_CHECKED_GAP_EM: f32 = 0.25;

/// Least air between a text box and a box beside it (their spans overlap top to bottom), in
/// the same em.
pub const SIDE_GAP_EM: f32 = 0.1;

/// Largest relative difference between the ad's and the reference's aspect ratios.
pub const MAX_ASPECT_ERROR: f32 = 0.03;

/// `Ok` when the ad keeps every rule; else the first rule it breaks, in words.
///
/// # Errors
/// The broken rule.
pub fn check(tree: &Tree, report: &RenderReport, bp: &Blueprint) -> Result<(), String> {
    for w in &report.warnings {
        match w {
            Warning::TextOverflow { node, .. } => {
                return Err(format!("text {node} does not fit its box"));
            }
            Warning::TextTruncated { node, .. } => {
                return Err(format!("text {node} was truncated"));
            }
            Warning::LowContrast { node, ratio } => {
                return Err(format!("text {node} has contrast {ratio}:1"));
            }
            _ => {}
        }
    }
    let want = bp.source_width.max(1) as f32 / bp.source_height.max(1) as f32;
    let got = report.width.max(1) as f32 / report.height.max(1) as f32;
    if (got / want - 1.0).abs() > MAX_ASPECT_ERROR {
        return Err(format!(
            "aspect {got:.3} differs from the reference's {want:.3}"
        ));
    }
    if let Some(why) = crowded_text(tree.as_value()) {
        return Err(why);
    }
    let share = product_share(tree.as_value());
    if let Some(share) = share
        && share < MIN_PRODUCT_SHARE
    {
        return Err(format!(
            "the product image covers {:.1} % of the canvas (at least {:.0} %)",
            share * 100.0,
            MIN_PRODUCT_SHARE * 100.0
        ));
    }
    Ok(())
}

/// The share of the canvas covered by the largest visible node with an image fill other
/// than the logo; `None` when the ad shows no product image.
pub fn product_share(tree: &Value) -> Option<f32> {
    let nodes = tree.get("nodes")?.as_object()?;
    let root = tree.get("root").and_then(Value::as_str)?;
    let num = |n: &Value, k: &str| n.get(k).and_then(Value::as_f64).unwrap_or(0.0) as f32;
    let canvas = num(&nodes[root], "width") * num(&nodes[root], "height");
    nodes
        .values()
        .filter(|n| n.get("visible") != Some(&Value::Bool(false)))
        .filter(|n| n.get("name").and_then(Value::as_str) != Some("Logo"))
        .filter(|n| {
            n.get("fills")
                .and_then(Value::as_array)
                .is_some_and(|f| f.iter().any(|p| p["type"] == "IMAGE"))
        })
        .map(|n| num(n, "width") * num(n, "height") / canvas.max(1.0))
        .fold(None, |a: Option<f32>, s| Some(a.map_or(s, |a| a.max(s))))
}

/// A visible node's box in canvas coordinates.
struct Placed {
    /// Its `name`, else its id.
    name: String,
    text: bool,
    /// Largest font size of a text (its shrink-to-fit maximum, else its size).
    em: f32,
    x: f32,
    y: f32,
    w: f32,
    h: f32,
    /// Blurred all over (`LAYER_BLUR`, a product's ground shadow): no edge for text to keep
    /// clear of.
    soft: bool,
}

/// Every visible node below the root, with its box in canvas coordinates (children of a
/// frame are placed in the frame's coordinates).
fn placed(tree: &Value) -> Vec<Placed> {
    let mut out = Vec::new();
    let (Some(nodes), Some(root)) = (
        tree.get("nodes").and_then(Value::as_object),
        tree.get("root").and_then(Value::as_str),
    ) else {
        return out;
    };
    let num = |n: &Value, k: &str| n.get(k).and_then(Value::as_f64).unwrap_or(0.0) as f32;
    let kids = |n: &Value| -> Vec<String> {
        n.get("children")
            .and_then(Value::as_array)
            .map(|c| {
                c.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    // (node id, parent's origin), depth first; a depth bound guards against cycles.
    let mut stack: Vec<(String, f32, f32, usize)> = kids(&nodes[root])
        .into_iter()
        .map(|c| (c, 0.0, 0.0, 0))
        .collect();
    while let Some((id, ox, oy, depth)) = stack.pop() {
        let Some(n) = nodes.get(&id) else { continue };
        if n.get("visible") == Some(&Value::Bool(false)) || depth > 32 {
            continue;
        }
        let (x, y) = (ox + num(n, "x"), oy + num(n, "y"));
        let text = n.get("type").and_then(Value::as_str) == Some("TEXT");
        let em = n
            .get("textFit")
            .and_then(|f| f.get("maxFontSize"))
            .and_then(Value::as_f64)
            .map_or_else(|| num(n, "fontSize"), |v| v as f32);
        out.push(Placed {
            name: n
                .get("name")
                .and_then(Value::as_str)
                .map_or_else(|| id.clone(), str::to_owned),
            text,
            em,
            x,
            y,
            w: num(n, "width"),
            h: num(n, "height"),
            soft: n
                .get("effects")
                .and_then(Value::as_array)
                .is_some_and(|e| e.iter().any(|e| e["type"] == "LAYER_BLUR")),
        });
        stack.extend(kids(n).into_iter().map(|c| (c, x, y, depth + 1)));
    }
    out
}

/// The first text box that overlaps or nearly touches another slot's box, in words; `None`
/// when every text keeps its air.
///
/// Boxes that hold the text's centre are what it is set on (the ground, a band, a button,
/// a badge, a scrim) and are not counted, nor are blurred shapes (a ground shadow). Above or
/// below a box whose span overlaps its own, a text keeps [`MIN_CHECKED_GAP_EM`] of its font
/// size (the smaller of the two, between two texts); side by side, [`SIDE_GAP_EM`].
pub fn crowded_text(tree: &Value) -> Option<String> {
    let all = placed(tree);
    for t in all.iter().filter(|t| t.text && t.w > 0.0 && t.h > 0.0) {
        let (cx, cy) = (t.x + t.w / 2.0, t.y + t.h / 2.0);
        for o in &all {
            if std::ptr::eq(o, t) || o.w <= 0.0 || o.h <= 0.0 || o.soft {
                continue;
            }
            if cx >= o.x && cx <= o.x + o.w && cy >= o.y && cy <= o.y + o.h {
                continue;
            }
            let em = if o.text { t.em.min(o.em) } else { t.em };
            let gap = MIN_CHECKED_GAP_EM * em;
            let h_overlap = o.x < t.x + t.w && o.x + o.w > t.x;
            let v_gap = (o.y - (t.y + t.h)).max(t.y - (o.y + o.h));
            let h_gap = (o.x - (t.x + t.w)).max(t.x - (o.x + o.w));
            if h_overlap && v_gap < gap {
                return Some(format!(
                    "text {} is {:.0} px from {} (at least {:.0} px, {} em)",
                    t.name,
                    v_gap.max(0.0),
                    o.name,
                    gap,
                    MIN_CHECKED_GAP_EM
                ));
            }
            if !h_overlap && v_gap < 0.0 && h_gap < SIDE_GAP_EM * em {
                return Some(format!(
                    "text {} is {:.0} px beside {} (at least {:.0} px)",
                    t.name,
                    h_gap,
                    o.name,
                    SIDE_GAP_EM * em
                ));
            }
        }
    }
    None
}
