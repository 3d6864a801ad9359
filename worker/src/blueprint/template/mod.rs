//! A [`Blueprint`] written as a layout template: the renderer's JSON tree at the blueprint's
//! design size (3840 px long edge), whose node ids are slot names and whose nodes carry the
//! layout library's `$` keys (`assets/layouts/README.md`), so it renders as it is and
//! [`crate::generate::fill::fill`] fills it like a built-in layout.
//!
//! Slots: `background` (or `photo` on a photo ground), `panel_N`, `product_image` (on a
//! reference without a picture, in its largest free room: [`room_for_product`]),
//! `headline`, `supporting`, `eyebrow`, `cta` (a button frame holding `cta_label`), `badge`
//! with `badge_label`, `logo`; `text_scrim` behind the texts set on a photo ground;
//! `product_shadow` under a cut-out product that stands on a ground shadow. Text boxes are the reference's blocks widened into the free
//! space around them (new copy is rarely as short as the reference's), with shrink-to-fit
//! down to 35 % of the reference's size.
//!
//! **Gap rule.** A text box keeps at least [`MIN_TEXT_GAP_EM`] of its own font size (the
//! reference's size, the largest shrink-to-fit may use) of air above the next element below
//! it in the same column (button, supporting text, picture). Where the reference is tighter
//! than that, the elements below are moved down while the canvas has room above its bottom
//! margin ([`make_room`]); what room is still missing is taken from the text box, so the
//! copy shrinks (shrink-to-fit, then the preflight's lower minimum) rather than come close.
//! The quality rules ([`crate::generate::quality`]) reject any text box that overlaps or
//! nearly touches another slot's box.
//!
//! **Margin rule.** Every text box, and the logo box (a wordmark is text), lies at least
//! [`crate::generate::quality::TEXT_MARGIN`] of the canvas's short side (4 %) inside each
//! edge, whatever the reference does: a reference's words may run to its edges, and a box
//! widened into the free space may reach them. After the template is written each box
//! that crosses a margin is shortened from that side, or moved in whole when shortening
//! would take more than half of it (`margins`); the quality rule checks it on every ad.

//!
//! The template is written in named steps ([`template`] reads as the list of them), each a
//! method of the writer in `steps`: the ground, the panels, the product image, the badge,
//! the button, the text blocks and the logo, then the root. Their order is the `nodes`
//! map's order and the root's `children`, so it is part of the output.

mod gaps;
mod margins;
mod place;
mod room;
mod steps;
mod writer;

use serde_json::Value;

use super::Blueprint;
pub use room::{MIN_TEXT_GAP_EM, grow_to_share, make_room, room_for_product, shift_for_product};
pub use steps::{shadow_box, shadow_core};
pub use writer::role_for;

/// The blueprint as a template (see the module docs).
pub fn template(bp: &Blueprint) -> Value {
    write(bp, false)
}

/// The blueprint as a design-template tree: the template with neutral sample content (the
/// reference's own colours, placeholder words, a grey product box) and every node named
/// after its slot. The `$` slot keys stay in the tree (unknown fields are kept by every
/// reader), so a generator can fill the template, as edited, later.
pub fn sample_tree(bp: &Blueprint) -> Value {
    write(bp, true)
}

/// The template, with a `name` on every node when `named`.
fn write(bp: &Blueprint, named: bool) -> Value {
    let mut bp = make_room(bp);
    // Every ad carries the brand: where the reference shows no logo, a free corner.
    if bp.logo.is_none() {
        bp.logo = room::corner_logo(&bp);
    }
    // A reference without a picture: the product goes in its largest free room, made by
    // moving the copy where there is too little.
    if let Some((moved, rect)) = shift_for_product(&bp) {
        bp = moved;
        bp.images.push(super::ImageRegion {
            rect,
            shape: super::Shape::Rounded { radius: 0.06 },
            cutout: false,
            shadow: None,
        });
    }
    let bp = &bp;
    let mut wr = writer::Writer::new(bp, named);
    wr.ground();
    let panels = wr.panels();
    let mut occupied = Vec::new();
    occupied.extend(wr.product_image());
    wr.badge();
    occupied.extend(wr.button());
    let placed = wr.text_blocks(&panels, &occupied);
    wr.logo(&panels, &placed);
    let mut tree = wr.finish();
    margins::keep_margins(&mut tree);
    gaps::keep_gaps(&mut tree);
    tree
}

#[cfg(test)]
mod tests;
