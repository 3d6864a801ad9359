//! The rules an ad built on a reference's blueprint must keep before it is accepted, judged
//! on the renderer's report of the final preflight render:
//!
//! - no text that overflows its box or was truncated ([`Warning::TextOverflow`],
//!   [`Warning::TextTruncated`]);
//! - no text under 4.5:1 against the pixels really behind it ([`Warning::LowContrast`];
//!   the renderer applies 4.5:1 to all text, stricter than WCAG's 3:1 for large text);
//! - the output's aspect ratio within 3 % of the reference's;
//! - the product image (when the ad has one) covering at least
//!   [`MIN_PRODUCT_SHARE`] of the canvas.
//!
//! The logo's 3:1 against its backdrop is kept where it is placed
//! ([`super::fill`] only uses a logo variant with ≥ 3:1 against the backdrop colour, else
//! sets the brand name as a wordmark, which the text rules above then cover).

use adforge_renderer::{RenderReport, Tree, Warning};
use serde_json::Value;

use crate::blueprint::{Blueprint, MIN_PRODUCT_SHARE};

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
