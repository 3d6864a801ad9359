//! Where a text box and the logo box go: a text box is widened into the free space around
//! its block, and a logo that heads a text column spans it.

use super::room::{MIN_TEXT_GAP_EM, below, em_of};
use super::writer::Writer;
use crate::blueprint::{Align, Rect, TextBlock};

impl Writer<'_> {
    /// Widens a text box into the free space around it, away from every other element.
    pub(super) fn widen(&self, t: &TextBlock, others: &[Rect], container: Rect) -> Rect {
        let m = self.bp.margins;
        let pad = 0.01;
        let lo_x = container.x.max(m[0].min(t.rect.x)) + if container.x > 0.0 { pad } else { 0.0 };
        let hi_x = container.right().min(1.0 - m[2].min(1.0 - t.rect.right()))
            - if container.right() < 1.0 { pad } else { 0.0 };
        let mut left = lo_x;
        let mut right = hi_x;
        let mut gap_limit = f32::INFINITY;
        // Air beside other elements: at least 0.12 em of the block's type (the quality
        // rules ask 0.1 em, `crate::generate::quality::SIDE_GAP_EM`), in width units.
        let side = pad.max(0.12 * em_of(t) * self.h / self.w.max(1.0));
        let bottom = (t.rect.bottom() + t.rect.h.max(t.line_height * 2.0)).min(
            container
                .bottom()
                .min(1.0 - m[3].min(1.0 - t.rect.bottom())),
        );
        for o in others {
            // Things beside the block limit its width; things below it limit its depth.
            let v_overlap = o.y < t.rect.bottom() && o.bottom() > t.rect.y;
            if v_overlap {
                if o.x >= t.rect.right() {
                    right = right.min(o.x - side);
                } else if o.right() <= t.rect.x {
                    left = left.max(o.right() + side);
                }
            } else if below(&t.rect, o) {
                // The gap rule: air above what follows (see the module docs).
                gap_limit = gap_limit.min(o.y - pad.max(MIN_TEXT_GAP_EM * em_of(t)));
            }
        }
        let (mut x0, mut x1) = match t.align {
            Align::Left => (t.rect.x, right),
            Align::Right => (left, t.rect.right()),
            Align::Center => {
                let c = t.rect.center().0;
                let half = (c - left).min(right - c);
                (c - half, c + half)
            }
        };
        if x1 - x0 < t.rect.w {
            x0 = t.rect.x;
            x1 = t.rect.right();
        }
        // A little room for the glyphs' side bearings and line gap.
        let grow = t.line_height * 0.15;
        let top = (t.rect.y - grow).max(0.0);
        // Never past what lies below (the next element less the gap, or the margin): where
        // the reference itself is tighter and [`make_room`] found no room, the box is
        // shortened, to one line at the least.
        let bottom = bottom
            .max(t.rect.bottom() + grow)
            .min(gap_limit)
            .max(top + t.line_height);
        Rect {
            x: x0,
            y: top,
            w: x1 - x0,
            h: bottom - top,
        }
    }
}

/// The text column a logo heads, if any: the span of the placed text boxes below it that
/// share its horizontal extent, with the logo's alignment in that span (the edge or centre
/// it is nearest to). None when nothing is below it, or when widening the logo box to the
/// column would run into an image or shape.
pub(super) fn logo_column(
    logo: &Rect,
    texts: &[Rect],
    blockers: &[Rect],
) -> Option<(Rect, &'static str)> {
    let below: Vec<&Rect> = texts
        .iter()
        .filter(|t| {
            t.y >= logo.bottom() - logo.h * 0.25 && t.x < logo.right() && t.right() > logo.x
        })
        .collect();
    let left = below.iter().map(|t| t.x).reduce(f32::min)?;
    let right = below.iter().map(|t| t.right()).reduce(f32::max)?;
    let (lcx, _) = logo.center();
    if lcx < left || lcx > right || right - left < logo.w {
        return None;
    }
    let col = Rect {
        x: left,
        y: logo.y,
        w: right - left,
        h: logo.h,
    };
    let hit = |b: &Rect| {
        b.x < col.right() && b.right() > col.x && b.y < col.bottom() && b.bottom() > col.y
    };
    if blockers.iter().any(hit) {
        return None;
    }
    let d_left = (logo.x - left).abs();
    let d_centre = (lcx - (left + right) / 2.0).abs();
    let d_right = (logo.right() - right).abs();
    let align = if d_left <= d_centre && d_left <= d_right {
        "LEFT"
    } else if d_centre <= d_right {
        "CENTER"
    } else {
        "RIGHT"
    };
    Some((col, align))
}
