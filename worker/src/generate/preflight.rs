//! The preflight: the filled tree rendered small and fixed until the renderer reports no
//! low contrast and no overflowing text, then its logo measured on the pixels and placed
//! again where it does not read. Every completed ad has been checked this way before its
//! 4K render.

use adforge_renderer::tree::ImageField;
use adforge_renderer::{Rendered, Renderer, Tree, Warning};
use serde_json::Value;

use super::{fill, quality};
use crate::runner::JobError;
use crate::services::{ShelfFetcher, image_failures, render};

/// Width of the preflight render that checks contrast and fit before the 4K render.
const PREFLIGHT_WIDTH: u32 = crate::services::CHECK_WIDTH;

/// Renders small, fixes low contrast and overflowing text, and repeats (at most 3 times)
/// until the renderer reports neither; then measures the logo on the pixels and, when it
/// does not read, places it again against what was measured behind it
/// ([`fill::relogo`]). Returns the parsed tree to render at 4K.
///
/// # Errors
/// An abort when the filled tree does not parse (a layout asset bug); an image of the tree
/// that cannot be drawn (see [`image_failures`]).
pub fn preflight(
    renderer: &Renderer,
    fetcher: &ShelfFetcher,
    filled: fill::Filled,
) -> Result<Tree, JobError> {
    preflight_report(renderer, fetcher, filled).map(|c| c.tree)
}

/// What the check render of [`preflight_report`] found.
pub struct Checked {
    /// The tree to render at 4K.
    pub tree: Tree,
    /// The report of its check render (the quality rules are judged on it).
    pub report: adforge_renderer::RenderReport,
    /// Its image logo as drawn ([`quality::measure_logo`]); `None` when it shows none.
    pub logo: Option<quality::LogoMeasure>,
}

/// [`preflight`], also returning what its last check render found.
///
/// # Errors
/// As [`preflight`].
pub fn preflight_report(
    renderer: &Renderer,
    fetcher: &ShelfFetcher,
    mut filled: fill::Filled,
) -> Result<Checked, JobError> {
    // Three rounds of text fixes, and one more after the logo is placed again.
    const ROUNDS: usize = 5;
    let mut relogoed = false;
    let mut text_rounds = 0;
    for round in 0..ROUNDS {
        let tree = parse(&filled.tree)?;
        let out = render(renderer, &tree, Some(PREFLIGHT_WIDTH), false)?;
        image_failures(fetcher, &out.report.warnings)?;
        let last = round + 1 == ROUNDS;
        let (mut low, mut overflow) = (Vec::new(), Vec::new());
        for w in &out.report.warnings {
            match w {
                Warning::LowContrast { node, .. } => low.push(node.clone()),
                Warning::TextOverflow { node, .. } => overflow.push(node.clone()),
                _ => {}
            }
        }
        if !last && text_rounds < 3 && !(low.is_empty() && overflow.is_empty()) {
            let low: Vec<_> = low
                .into_iter()
                .map(|id| {
                    let behind = out
                        .boxes
                        .iter()
                        .find(|b| b.id == id)
                        .and_then(|b| behind_text(&out, b, &filled.tree["nodes"][&id]));
                    (id, behind)
                })
                .collect();
            fill::strengthen(&mut filled, &low);
            fill::loosen_fit(&mut filled, &overflow);
            text_rounds += 1;
            continue;
        }
        let logo = logo_measure(renderer, &filled, &out)?;
        if !last
            && !relogoed
            && let Some(m) = &logo
            && quality::logo_rule(m).is_err()
            && fill::relogo(&mut filled, m.ground)
        {
            relogoed = true;
            continue;
        }
        return Ok(Checked {
            tree,
            report: out.report,
            logo,
        });
    }
    unreachable!("the last round returns")
}

/// The measure of the visible image logo of `filled` in its check render `out`: the same
/// tree is rendered again without the logo, for what is behind it. `None` when the ad
/// shows no image logo (none, hidden, or a wordmark, which is text).
fn logo_measure(
    renderer: &Renderer,
    filled: &fill::Filled,
    out: &Rendered,
) -> Result<Option<quality::LogoMeasure>, JobError> {
    let Some(slot) = &filled.logo else {
        return Ok(None);
    };
    let node = &filled.tree["nodes"][&slot.id];
    let image = node["fills"]
        .as_array()
        .is_some_and(|f| f.iter().any(|p| p["type"] == "IMAGE"));
    let Some(b) = out.boxes.iter().find(|b| b.id == slot.id) else {
        return Ok(None);
    };
    if !image || !b.visible || node["visible"] == false {
        return Ok(None);
    }
    let mut without = filled.tree.clone();
    without["nodes"][&slot.id]["visible"] = Value::from(false);
    let behind = render(renderer, &parse(&without)?, Some(PREFLIGHT_WIDTH), false)?;
    let bbox = [b.x, b.y, b.width, b.height];
    let drawn = node["fills"].as_array().and_then(|f| {
        f.iter()
            .find_map(|p| ImageField::of_paint(p).map(|(_, url)| url))
            .and_then(|url| slot.logo_at(url))
    });
    let (with, without) = (pixels(out), pixels(&behind));
    let measured = match drawn.and_then(|l| Some((l.ink.as_deref()?, l.aspect))) {
        Some((ink, aspect)) => {
            quality::measure_logo_ink(&slot.id, with, without, bbox, ink, aspect)
        }
        None => quality::measure_logo(&slot.id, with, without, bbox),
    };
    Ok(Some(measured))
}

/// The pixels of a render, for the quality rules.
pub fn pixels(r: &Rendered) -> quality::Pixels<'_> {
    quality::Pixels {
        width: r.pixmap.width(),
        height: r.pixmap.height(),
        rgba: r.pixmap.data(),
    }
}

fn parse(tree: &Value) -> Result<Tree, JobError> {
    // A filled template that does not parse is a bug in a layout asset, not in the input.
    Tree::from_value(tree.clone())
        .map_err(|e| JobError::abort(format!("internal layout error: {e}")))
}

/// The colour drawn behind a text node in a check render: the median (by luminance) of its
/// box's pixels that are not near the text's own colour. `None` for a rotated box, one off
/// the canvas, or one its text fills.
fn behind_text(out: &Rendered, b: &adforge_renderer::NodeBox, node: &Value) -> Option<[u8; 3]> {
    let pixmap = &out.pixmap;
    if b.rotation.abs() > 0.5 {
        return None;
    }
    let c = &node["fills"][0]["color"];
    let ink = ["r", "g", "b"].map(|k| (c[k].as_f64().unwrap_or(-1.0) * 255.0) as f32);
    let (w, h) = (pixmap.width() as f32, pixmap.height() as f32);
    let (x0, y0) = (b.x.max(0.0) as u32, b.y.max(0.0) as u32);
    let (x1, y1) = (
        (b.x + b.width).min(w) as u32,
        (b.y + b.height).min(h) as u32,
    );
    let mut px: Vec<(f32, [u8; 3])> = Vec::new();
    for y in y0..y1 {
        for x in x0..x1 {
            let p = pixmap.pixel(x, y)?.demultiply();
            let rgb = [p.red(), p.green(), p.blue()];
            let near_ink = rgb
                .iter()
                .zip(ink)
                .map(|(a, b)| (f32::from(*a) - b).abs())
                .sum::<f32>()
                < 60.0;
            if !near_ink {
                let l = 0.2126 * f32::from(rgb[0])
                    + 0.7152 * f32::from(rgb[1])
                    + 0.0722 * f32::from(rgb[2]);
                px.push((l, rgb));
            }
        }
    }
    // A box its text fills (or nearly) says nothing of what is behind.
    let area = (x1.saturating_sub(x0) * y1.saturating_sub(y0)) as usize;
    if px.len() * 4 < area || px.is_empty() {
        return None;
    }
    px.sort_by(|a, b| a.0.total_cmp(&b.0));
    Some(px[px.len() / 2].1)
}
