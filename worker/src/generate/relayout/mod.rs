//! An ad laid out again for another shape (issue 42, item 1): a campaign set's sizes are
//! made from one ad's tree, its words, pictures and node ids kept, its layout made again
//! for the new canvas. Not scaled, not cropped.
//!
//! [`relayout`] reads the tree as units (`units.rs`): the ground, the product (with what
//! sits on it: its ground shadow, a badge on its corner), the logo (with its plate), the
//! blocks of words in reading order (top to bottom, then left to right; a row of units
//! side by side stays a row while it fits), and the shapes behind them (scrims, panels),
//! then places them (`flow.rs`):
//!
//! - **Arrangement.** Words set on the picture stay on it (the picture mapped to the new
//!   canvas in proportion; a full-bleed ground covers the new canvas). Otherwise a tall
//!   shape (width ÷ height under 0.8: 9:16, 2:3, 4:5's taller cousins, 300×600) stacks the
//!   product and the words in the order they had; a wide one (over 1.3: 1.91:1, 16:9,
//!   970×250) sets the words beside the product, on the side they had; a square-ish one
//!   keeps the source's arrangement (stacked or side by side, whichever separates its
//!   product from its words; words around a centred product stack), and stacks when its
//!   words do not fit beside the product.
//! - **Words.** Each text is wrapped again at the column's width at one type scale for all
//!   (so the headline stays the largest and the hierarchy is kept), starting (stacked)
//!   from the words' size relative to the canvas's width (its height where the shape is
//!   wider than the source), else from the ratio of the two canvases' areas, and stepped
//!   down until everything fits; a button or
//!   a badge is scaled whole with its label. No text is set under the **readable floor**
//!   ([`floor`]): [`READABLE_FLOOR`] of the new canvas's short side, and never under
//!   [`READABLE_FLOOR_PX`] pixels at the placement's own size (a 300×250 ad's words are
//!   at least 10 px there). A word longer than the column makes the type smaller, down to
//!   the floor; a shape whose words do not fit at the floor is an error naming the size.
//! - **Product.** Its box's aspect is kept (so its crop is the same). Stacked, it takes the
//!   room the words leave at their source size (at most twice its share; the type made up
//!   to 15 % smaller where that keeps its share); when the words do not fit it yields first,
//!   down to [`crate::blueprint::MIN_PRODUCT_SHARE`], and only then does the type step
//!   down. A wide shape gives the words room from the product the same way.
//! - **Logo.** The same corner (or middle of the edge) it had, scaled so that its mark
//!   stays readable (the quality rule's size), in a band the words keep clear of.
//! - **Shapes.** A scrim or panel behind units follows them, keeping its padding around
//!   them and the canvas edges it touched; a shape behind nothing is mapped in proportion
//!   and hidden where that puts it over a unit; hidden nodes are mapped in proportion.
//!
//! The caller checks the result as it checks any ad ([`check_relaid`], `job.rs`): the check render with its
//! contrast fixes and the logo measured, then every quality rule at the new shape and the
//! floor on the sizes the renderer really drew.

mod flow;
mod job;
mod units;

#[cfg(test)]
mod tests;

use std::collections::HashMap;

use adforge_renderer::tree::{Bounds, TreeDoc};
use adforge_renderer::{Renderer, Tree};
use serde_json::Value;

pub use flow::Arrangement;
pub use job::{LogoContext, check_relaid, rules, size_label};

use crate::protocol::TargetSize;
use flow::{Canvas, Move, unit_box};
use units::{Role, Source};

/// The least type size, as a share of the new canvas's short side (2.2 %: 24 px on a
/// 1080 px square, 14 px on a 1200×628 link ad).
pub const READABLE_FLOOR: f64 = 0.022;

/// The least type size in pixels of the placement's own size (its `width` × `height`).
pub const READABLE_FLOOR_PX: f64 = 10.0;

/// The air kept between the words (and the logo and product) and each edge, as a share of
/// the short side: more than the quality rule's [`super::quality::TEXT_MARGIN`].
pub const EDGE_AIR: f64 = 0.06;

/// An ad's tree laid out again for a size.
#[derive(Debug, Clone)]
pub struct Relaid {
    /// The new tree (same node ids, words and pictures).
    pub tree: Value,
    /// How the words and the product share the canvas.
    pub arrangement: Arrangement,
    /// The readable floor in the tree's design pixels.
    pub floor: f64,
    /// The product's share of the source canvas (0 without one).
    pub source_share: f64,
    /// The product's share of the new canvas as planned: the source's, or less where the
    /// shape leaves no more room beside the words.
    pub product_share: f64,
}

/// The readable floor for a canvas `w` × `h` design pixels made for `size` (see the
/// module docs).
pub fn floor(size: &TargetSize, w: f64, h: f64) -> f64 {
    let per_px = w.max(h) / f64::from(size.width.max(size.height).max(1));
    (READABLE_FLOOR * w.min(h)).max(READABLE_FLOOR_PX * per_px)
}

/// The design size of `tree`'s root (width, height), if it has one.
pub fn design_size(tree: &Value) -> Option<(f64, f64)> {
    let doc = TreeDoc::new(tree);
    let b = doc.bounds(doc.root_id()?)?;
    Some((b.width, b.height))
}

/// Lays `tree` out again for `size` (see the module docs). The new canvas keeps the
/// source's long side, at the size's aspect.
///
/// # Errors
/// A message naming the size and what to change, when the words do not fit at the floor
/// or the tree has no root of known size.
pub fn relayout(renderer: &Renderer, tree: &Value, size: &TargetSize) -> Result<Relaid, String> {
    let label = size_label(size);
    let src = units::read(tree).map_err(|e| format!("the tree cannot be laid out again: {e}"))?;
    let long = src.w.max(src.h);
    let aspect = size.aspect();
    let (w, h) = if aspect >= 1.0 {
        (long, long / aspect)
    } else {
        (long * aspect, long)
    };
    let canvas = Canvas {
        w,
        h,
        floor: floor(size, w, h),
        margin: EDGE_AIR * w.min(h),
    };
    let parsed = Tree::from_value(tree.clone())
        .map_err(|e| format!("the tree cannot be laid out again: {e}"))?;
    let plan = flow::plan(renderer, &parsed, &src, &canvas).map_err(|why| {
        let px = READABLE_FLOOR_PX.max(
            READABLE_FLOOR * f64::from(size.width.min(size.height)),
        );
        format!(
            "the {label} size cannot hold this ad: {why} ({px:.0} px at {}×{}); shorten the headline or the other words, or choose a larger or less narrow size",
            size.width, size.height
        )
    })?;
    let tree = apply(tree, &src, &canvas, &plan.moves)
        .map_err(|e| format!("the tree cannot be laid out again: {e}"))?;
    Ok(Relaid {
        tree,
        arrangement: plan.arrangement,
        floor: canvas.floor,
        source_share: src.product_share(),
        product_share: plan.product_share,
    })
}

/// Writes the plan into a copy of `tree`: the root's new size, each unit moved, the ground
/// covering the new canvas, backdrops following what they hold, the rest mapped.
fn apply(
    tree: &Value,
    src: &Source,
    canvas: &Canvas,
    moves: &[(usize, Move)],
) -> Result<Value, adforge_renderer::Error> {
    let mut out = tree.clone();
    let mut doc = TreeDoc::new(&mut out);
    let root = doc.bounds(&src.root).unwrap_or(Bounds {
        x: 0.0,
        y: 0.0,
        width: 0.0,
        height: 0.0,
    });
    doc.set_bounds(
        &src.root,
        Bounds {
            width: canvas.w,
            height: canvas.h,
            ..root
        },
    )?;
    let items = &src.items;
    let mut placed: HashMap<usize, Bounds> = HashMap::new();
    let riders = |i: usize| (0..items.len()).filter(move |&o| items[o].rides == Some(i));
    for &(i, m) in moves {
        match m {
            Move::Rigid { k, x, y } => {
                let ub = unit_box(src, i);
                for o in std::iter::once(i).chain(riders(i)) {
                    let b = items[o].b;
                    // Words riding on a unit scaled down (a badge on the product) keep
                    // the floor: they scale less than the unit.
                    let ko = if o != i && items[o].min_em > 0.0 {
                        k.max(canvas.floor / items[o].min_em)
                    } else {
                        k
                    };
                    let nb = Bounds {
                        x: x + (b.x - ub.x) * k,
                        y: y + (b.y - ub.y) * k,
                        width: b.width * ko,
                        height: b.height * ko,
                    };
                    doc.scale_subtree(&items[o].id, ko)?;
                    doc.set_bounds(&items[o].id, nb)?;
                    placed.insert(o, nb);
                }
            }
            Move::Text { b, size } => {
                let it = &items[i];
                if it.em > 0.0 {
                    doc.scale_node(&it.id, size / it.em)?;
                    doc.set_font_range(&it.id, canvas.floor.min(size), size)?;
                }
                doc.set_bounds(&it.id, b)?;
                placed.insert(i, b);
            }
            Move::Place { b } => {
                let src_b = items[i].b;
                let k = (b.width / src_b.width.max(1.0)).min(b.height / src_b.height.max(1.0));
                doc.set_bounds(&items[i].id, b)?;
                placed.insert(i, b);
                for o in riders(i) {
                    let ob = items[o].b;
                    let nb = Bounds {
                        x: b.x + (ob.x - src_b.x) * b.width / src_b.width.max(1.0),
                        y: b.y + (ob.y - src_b.y) * b.height / src_b.height.max(1.0),
                        width: ob.width * k,
                        height: ob.height * k,
                    };
                    doc.scale_subtree(&items[o].id, k)?;
                    doc.set_bounds(&items[o].id, nb)?;
                    placed.insert(o, nb);
                }
            }
        }
    }
    let (sx, sy) = (canvas.w / src.w, canvas.h / src.h);
    let k = sx.min(sy);
    let full = Bounds {
        x: 0.0,
        y: 0.0,
        width: canvas.w,
        height: canvas.h,
    };
    for (i, it) in items.iter().enumerate() {
        if placed.contains_key(&i) {
            continue;
        }
        match it.role {
            Role::Ground => doc.set_bounds(&it.id, full)?,
            Role::Backdrop => {
                let Some(now) = it
                    .holds
                    .iter()
                    .filter_map(|h| placed.get(h))
                    .copied()
                    .reduce(|a, b| a.union(&b))
                else {
                    continue;
                };
                let was = it
                    .holds
                    .iter()
                    .map(|&h| unit_box(src, h))
                    .reduce(|a, b| a.union(&b))
                    .unwrap_or(it.b);
                let t = (now.width / was.width.max(1.0)).min(now.height / was.height.max(1.0));
                let edge = 0.01 * src.w.max(src.h);
                let left = if it.b.x <= edge {
                    0.0
                } else {
                    (now.x - (was.x - it.b.x) * t).max(0.0)
                };
                let top = if it.b.y <= edge {
                    0.0
                } else {
                    (now.y - (was.y - it.b.y) * t).max(0.0)
                };
                let right = if it.b.x + it.b.width >= src.w - edge {
                    canvas.w
                } else {
                    (now.x + now.width + (it.b.x + it.b.width - was.x - was.width) * t)
                        .min(canvas.w)
                };
                let bottom = if it.b.y + it.b.height >= src.h - edge {
                    canvas.h
                } else {
                    (now.y + now.height + (it.b.y + it.b.height - was.y - was.height) * t)
                        .min(canvas.h)
                };
                let nb = Bounds {
                    x: left,
                    y: top,
                    width: right - left,
                    height: bottom - top,
                };
                doc.set_bounds(&it.id, nb)?;
            }
            Role::Decor | Role::Hidden => {
                let (cx, cy) = it.b.centre();
                let (w, h) = (it.b.width * k, it.b.height * k);
                let nb = Bounds {
                    x: cx * sx - w / 2.0,
                    y: cy * sy - h / 2.0,
                    width: w,
                    height: h,
                };
                doc.scale_subtree(&it.id, k)?;
                doc.set_bounds(&it.id, nb)?;
                if it.role == Role::Decor && placed.values().any(|p| p.overlaps(&nb)) {
                    doc.set_visible(&it.id, false)?;
                }
            }
            // Riders not moved with a unit (a badge label whose badge was not placed) and
            // units the plan left out keep their proportional place.
            _ => {
                let nb = Bounds {
                    x: it.b.x * sx,
                    y: it.b.y * sy,
                    width: it.b.width * k,
                    height: it.b.height * k,
                };
                doc.scale_subtree(&it.id, k)?;
                doc.set_bounds(&it.id, nb)?;
            }
        }
    }
    Ok(out)
}
