//! Where a text box and the logo box go: a text box is widened into the free space around
//! its block, and a logo that heads a text column spans it.

use super::room::{MIN_TEXT_GAP_EM, below, em_of};
use super::writer::Writer;
use crate::blueprint::{Align, Rect, TextBlock};

impl Writer<'_> {
    /// Widens a text box into the free space around it, away from every other element.
    ///
    /// Width first, then depth, each judged against the box it will be: an element beside
    /// the block that starts above the block's own bottom plus the gap rule's air limits the
    /// width (so a box is never widened over something it would then have to stop short
    /// of); then everything below the block within the widened columns limits the depth.
    pub(super) fn widen(&self, t: &TextBlock, others: &[Rect], container: Rect) -> Rect {
        let m = self.bp.margins;
        let pad = 0.01;
        let lo_x = container.x.max(m[0].min(t.rect.x)) + if container.x > 0.0 { pad } else { 0.0 };
        let hi_x = container.right().min(1.0 - m[2].min(1.0 - t.rect.right()))
            - if container.right() < 1.0 { pad } else { 0.0 };
        let mut left = lo_x;
        let mut right = hi_x;
        // Air beside other elements: at least 0.12 em of the block's type (the quality
        // rules ask 0.1 em, `crate::generate::quality::SIDE_GAP_EM`), in width units.
        let side = pad.max(0.12 * em_of(t) * self.h / self.w.max(1.0));
        // The gap rule: air above what follows (see the module docs).
        let gap = pad.max(MIN_TEXT_GAP_EM * em_of(t));
        // A little room for the glyphs' side bearings and line gap.
        let grow = t.line_height * 0.15;
        // The depth the box keeps whatever lies below: the reference's own block.
        let own_bottom = t.rect.bottom() + grow;
        for o in others {
            let h_overlap = o.x < t.rect.right() && o.right() > t.rect.x;
            let beside = !h_overlap && o.y < own_bottom + gap && o.bottom() > t.rect.y;
            if beside {
                if o.x >= t.rect.right() {
                    right = right.min(o.x - side);
                } else if o.right() <= t.rect.x {
                    left = left.max(o.right() + side);
                }
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
        let widened = Rect {
            x: x0,
            y: t.rect.y,
            w: x1 - x0,
            h: t.rect.h,
        };
        let gap_limit = others
            .iter()
            .filter(|o| below(&widened, o))
            .map(|o| o.y - gap)
            .fold(f32::INFINITY, f32::min);
        let bottom = (t.rect.bottom() + t.rect.h.max(t.line_height * 2.0)).min(
            container
                .bottom()
                .min(1.0 - m[3].min(1.0 - t.rect.bottom())),
        );
        let top = (t.rect.y - grow).max(0.0);
        // Never past what lies below (the next element less the gap, or the margin): where
        // the reference itself is tighter and [`make_room`] found no room, the box is
        // shortened, to one line at the least.
        let bottom = bottom
            .max(own_bottom)
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
/// column would run into an image, a shape or another text box.
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
    // Nor over a text box: one beside the logo, or between it and the column below.
    if blockers.iter().chain(texts).any(hit) {
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
