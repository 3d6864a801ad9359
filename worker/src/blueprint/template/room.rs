//! Room for the gap rule (see the module docs of [`super`]): moving what lies below a
//! text block down where the reference is tighter than [`MIN_TEXT_GAP_EM`], and growing a
//! small product region to its minimum share.

use crate::blueprint::{Blueprint, Rect, ShapeRole, TextBlock, TextRole};

/// Least air between a text box and the next element below it in its column, in the
/// text's own font size (em): 0.75 em, a little more than the gap between two lines.
pub const MIN_TEXT_GAP_EM: f32 = 0.75;

/// Lowest an element moved down to make room may reach (fraction of the height from the
/// top): the reference's bottom margin, kept between 3 % and 10 % of the height.
fn floor_of(bp: &Blueprint) -> f32 {
    1.0 - bp.margins[3].clamp(0.03, 0.1)
}

/// A text block's font size (em) as a fraction of the canvas height.
pub(super) fn em_of(t: &TextBlock) -> f32 {
    // Glyph extent of a line ≈ 0.9 em in mixed case, 0.72 em in capitals.
    t.line_height / if t.upper { 0.72 } else { 0.9 }
}

/// Whether `o` lies below `t` in the same column (their spans overlap side to side).
pub(super) fn below(t: &Rect, o: &Rect) -> bool {
    o.y >= t.bottom() - 1e-4 && o.x < t.right() && o.right() > t.x
}

/// The blueprint with the elements below each drawn text block moved down, where the
/// reference leaves less than [`MIN_TEXT_GAP_EM`] between them and the canvas has room.
/// Everything below the moved element in the same column moves with it.
pub fn make_room(bp: &Blueprint) -> Blueprint {
    let mut bp = bp.clone();
    let floor = floor_of(&bp);
    let mut order: Vec<usize> = (0..bp.texts.len())
        .filter(|&i| bp.texts[i].role.drawn_free() && bp.texts[i].role != TextRole::Cta)
        .collect();
    // Top to bottom, so a move made for one block is seen by the next.
    order.sort_by(|&a, &b| bp.texts[a].rect.y.total_cmp(&bp.texts[b].rect.y));
    for i in order {
        let t = bp.texts[i].clone();
        let need = MIN_TEXT_GAP_EM * em_of(&t);
        let next = bp
            .texts
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, o)| o.rect)
            .chain(
                bp.shapes
                    .iter()
                    .filter(|s| s.role != ShapeRole::Panel)
                    .map(|s| s.rect),
            )
            .chain(bp.images.iter().map(|m| m.rect))
            .filter(|o| below(&t.rect, o))
            .map(|o| o.y)
            .fold(f32::INFINITY, f32::min);
        if !next.is_finite() || next - t.rect.bottom() >= need {
            continue;
        }
        // The column below the block, from the next element down.
        let col = Rect {
            x: t.rect.x,
            y: next,
            w: t.rect.w,
            h: 1.0 - next,
        };
        let moves = |o: &Rect| o.y >= next - 1e-4 && o.x < col.right() && o.right() > col.x;
        let lowest = bp
            .texts
            .iter()
            .map(|o| o.rect)
            .chain(bp.shapes.iter().map(|s| s.rect))
            .chain(bp.images.iter().map(|m| m.rect))
            .chain(bp.logo)
            .filter(|o| moves(o))
            .map(|o| o.bottom())
            .fold(0.0, f32::max);
        let dy = (need - (next - t.rect.bottom())).min(floor - lowest);
        if dy <= 0.0 {
            continue;
        }
        // A button's label block moves with its button (it lies inside it).
        let moved: Vec<Rect> = bp
            .shapes
            .iter()
            .map(|s| s.rect)
            .filter(|o| moves(o))
            .collect();
        for r in bp
            .texts
            .iter_mut()
            .map(|o| &mut o.rect)
            .chain(bp.shapes.iter_mut().map(|s| &mut s.rect))
            .chain(bp.images.iter_mut().map(|m| &mut m.rect))
            .chain(bp.logo.iter_mut())
        {
            let inside_moved = moved.iter().any(|m| m.contains_center(r));
            if moves(r) || inside_moved {
                r.y += dy;
            }
        }
    }
    bp
}

/// Where the brand goes when the reference shows no logo: a wordmark-sized box (3 % of the
/// height tall, 18 % of the width wide) in the first free corner (top left, top right,
/// bottom right, bottom left) inside the reference's margins (each taken between 4 % and
/// 12 %: a layout whose content starts halfway down still has its corner near the edge),
/// else in the first free corner 4 % in from the canvas's edges (a centred layout's
/// margins are wide, and a tall headline takes the top corners inside them while the edge
/// band is still empty). A corner is never astride a panel's edge: it lies inside the
/// panel or clear of it, so the logo has one ground.
///
/// Chosen from the reference's own elements, before the text boxes are widened, so the
/// widening keeps clear of the logo rather than the logo finding no room beside widened
/// boxes. Free: the logo box as drawn (1.4 times as tall, centred on this one) keeps 2 % of
/// air from every picture and shape, and from each drawn text block the quality rule's air
/// ([`crate::generate::quality::MIN_CHECKED_GAP_EM`] of its type, with a margin) when that
/// is more. `None` when no corner is free (the ad then carries no logo, as the reference
/// did).
pub fn corner_logo(bp: &Blueprint) -> Option<Rect> {
    let (h, w) = (0.03_f32, 0.18_f32);
    let overhang = h * 0.2;
    let corners = |l: f32, t: f32, r: f32, b: f32| {
        [
            (l, t),
            (1.0 - r - w, t),
            (1.0 - r - w, 1.0 - b - h),
            (l, 1.0 - b - h),
        ]
    };
    let m = bp.margins.map(|v| v.clamp(0.04, 0.12));
    let mut places = corners(m[0], m[1], m[2], m[3]).to_vec();
    places.extend(corners(0.04, 0.04, 0.04, 0.04));
    let air = 0.02_f32;
    let gap_em = crate::generate::quality::MIN_CHECKED_GAP_EM * 1.4;
    let blockers: Vec<(Rect, f32)> = bp
        .texts
        .iter()
        .filter(|t| t.role.drawn_free())
        .map(|t| (t.rect, air.max(gap_em * em_of(t))))
        .chain(bp.images.iter().map(|i| (i.rect, air)))
        .chain(
            bp.shapes
                .iter()
                .filter(|s| s.role != ShapeRole::Panel)
                .map(|s| (s.rect, air)),
        )
        .collect();
    let clear = |d: &Rect, o: &Rect, air: f32| {
        d.x - air >= o.right()
            || o.x >= d.right() + air
            || d.y - air >= o.bottom()
            || o.y >= d.bottom() + air
    };
    let inside = |d: &Rect, o: &Rect, by: f32| {
        d.x >= o.x + by
            && d.right() <= o.right() - by
            && d.y >= o.y + by
            && d.bottom() <= o.bottom() - by
    };
    places
        .into_iter()
        .map(|(x, y)| Rect { x, y, w, h })
        .find(|r| {
            let drawn = Rect {
                y: r.y - overhang,
                h: r.h + 2.0 * overhang,
                ..*r
            };
            blockers.iter().all(|(o, air)| clear(&drawn, o, *air))
                && bp
                    .shapes
                    .iter()
                    .filter(|s| s.role == ShapeRole::Panel)
                    .all(|p| clear(&drawn, &p.rect, 0.01) || inside(&drawn, &p.rect, 0.01))
        })
}

pub(super) fn inset(r: &Rect, by: f32) -> Rect {
    Rect {
        x: r.x + r.w * by,
        y: r.y + r.h * by,
        w: r.w * (1.0 - 2.0 * by),
        h: r.h * (1.0 - 2.0 * by),
    }
}

/// Grows `r` about its centre (keeping its shape, inside the canvas) until it covers
/// `share` of the canvas.
pub fn grow_to_share(r: Rect, share: f32) -> Rect {
    if r.area() >= share || r.area() <= 0.0 {
        return r;
    }
    // A hair over the share, so rounding to tenths of a pixel never lands under it.
    let k = (share * 1.01 / r.area()).sqrt();
    let (cx, cy) = r.center();
    let (nw, nh) = ((r.w * k).min(1.0), (r.h * k).min(1.0));
    Rect {
        x: (cx - nw / 2.0).clamp(0.0, 1.0 - nw),
        y: (cy - nh / 2.0).clamp(0.0, 1.0 - nh),
        w: nw,
        h: nh,
    }
}

/// Largest share of the canvas a product placed in free room takes ([`room_for_product`]).
const ROOM_MAX_SHARE: f32 = 0.3;

/// Where the product goes on a reference that shows no picture (a testimonial or a
/// statistic on a plain ground, a type poster, a comparison): the largest free box of the
/// canvas, inside a 4 % margin, clear of every text block, button, badge and the logo by
/// 2 % of the short side, no more than 1.6 times as long as it is wide either way, and at
/// most [`ROOM_MAX_SHARE`] of the canvas. `None` when the reference shows a picture or a
/// photo ground, or when the free room is under [`crate::blueprint::MIN_PRODUCT_SHARE`]
/// ([`shift_for_product`] then moves the copy to make room).
///
/// Rejected: an ad of the reference's words alone. The advertiser asked for an ad of their
/// product; a reference without a picture shows where the words go, not that the product
/// is left out.
pub fn room_for_product(bp: &Blueprint) -> Option<Rect> {
    use crate::blueprint::{Background, MIN_PRODUCT_SHARE};
    if !bp.images.is_empty() || matches!(bp.background, Background::Photo { .. }) {
        return None;
    }
    const N: usize = 40;
    let (w, h) = (bp.width.max(1) as f32, bp.height.max(1) as f32);
    let short = w.min(h);
    let (mx, my) = (0.04 * short / w, 0.04 * short / h);
    let (px, py) = (0.02 * short / w, 0.02 * short / h);
    let blockers: Vec<Rect> = bp
        .texts
        .iter()
        .map(|t| t.rect)
        .chain(
            bp.shapes
                .iter()
                .filter(|s| s.role != ShapeRole::Panel)
                .map(|s| s.rect),
        )
        .chain(bp.logo)
        .map(|r| Rect {
            x: r.x - px,
            y: r.y - py,
            w: r.w + 2.0 * px,
            h: r.h + 2.0 * py,
        })
        .collect();
    let (cw, ch) = ((1.0 - 2.0 * mx) / N as f32, (1.0 - 2.0 * my) / N as f32);
    let cell = |c: usize, r: usize| Rect {
        x: mx + c as f32 * cw,
        y: my + r as f32 * ch,
        w: cw,
        h: ch,
    };
    // Free height of each column ending at the current row.
    let mut height = [0usize; N];
    let mut best: Option<(f32, Rect)> = None;
    for row in 0..N {
        for (c, hgt) in height.iter_mut().enumerate() {
            let free = blockers.iter().all(|b| cell(c, row).overlap(b) <= 0.0);
            *hgt = if free { *hgt + 1 } else { 0 };
        }
        for c0 in 0..N {
            let mut tall = usize::MAX;
            for (c1, &column) in height.iter().enumerate().skip(c0) {
                tall = tall.min(column);
                if tall == 0 {
                    break;
                }
                let free = Rect {
                    x: mx + c0 as f32 * cw,
                    y: my + (row + 1 - tall) as f32 * ch,
                    w: (c1 + 1 - c0) as f32 * cw,
                    h: tall as f32 * ch,
                };
                let fitted = fit_aspect(&free, w, h, 1.6);
                let area = fitted.area();
                if best.as_ref().is_none_or(|(a, _)| area > *a) {
                    best = Some((area, fitted));
                }
            }
        }
    }
    let (_, r) = best?;
    // A little air inside the free box, and no bigger than the cap.
    let r = inset(&r, 0.06);
    let r = if r.area() > ROOM_MAX_SHARE {
        let k = (ROOM_MAX_SHARE / r.area()).sqrt();
        let (cx, cy) = r.center();
        Rect {
            x: cx - r.w * k / 2.0,
            y: cy - r.h * k / 2.0,
            w: r.w * k,
            h: r.h * k,
        }
    } else {
        r
    };
    (r.area() >= MIN_PRODUCT_SHARE).then_some(r)
}

/// Scales tried, largest first, when the reference's copy has to move to make room for the
/// product ([`shift_for_product`]).
const SHIFT_SCALES: [f32; 3] = [1.0, 0.85, 0.72];

/// [`room_for_product`], and where the free room is too small, the reference's copy moved
/// as one group (every text block, button and badge; panels and the logo stay) to the top
/// or the bottom of the canvas, 6 % of the short side from the edge or 2 % below (above) a
/// logo on that side, at its own size first, then at 85 % and 72 % of it (about the group's
/// centre line), until the room left beside it takes the product. A statistic or a
/// testimonial centred on a plain ground leaves a band above and below it, each too thin
/// for the product; the ad keeps the copy's arrangement, sizes and order and shows the
/// product, where the built-in layout would have kept none of them. Of the two sides, the
/// one with more room wins (the top on a tie, copy above the product). Returns the
/// blueprint as the ad uses it (moved or not) and the product's room; `None` when the
/// reference shows a picture or a photo ground, or no move makes room.
pub fn shift_for_product(bp: &Blueprint) -> Option<(Blueprint, Rect)> {
    use crate::blueprint::Background;
    if !bp.images.is_empty() || matches!(bp.background, Background::Photo { .. }) {
        return None;
    }
    if let Some(r) = room_for_product(bp) {
        return Some((bp.clone(), r));
    }
    let moves = |s: &crate::blueprint::SolidShape| s.role != ShapeRole::Panel;
    let group = bp
        .texts
        .iter()
        .map(|t| t.rect)
        .chain(bp.shapes.iter().filter(|s| moves(s)).map(|s| s.rect))
        .reduce(|a, b| a.union(&b))?;
    let (w, h) = (bp.width.max(1) as f32, bp.height.max(1) as f32);
    let edge = 0.06 * w.min(h) / h;
    let (mut top, mut bottom) = (edge, 1.0 - edge);
    if let Some(logo) = bp.logo {
        if logo.center().1 < group.center().1 {
            top = top.max(logo.bottom() + 0.02);
        } else {
            bottom = bottom.min(logo.y - 0.02);
        }
    }
    let cx = group.center().0;
    for k in SHIFT_SCALES {
        let mut best: Option<(Blueprint, Rect)> = None;
        for anchor in [top, bottom - group.h * k] {
            let place = |r: &mut Rect| {
                r.x = cx + (r.x - cx) * k;
                r.y = anchor + (r.y - group.y) * k;
                r.w *= k;
                r.h *= k;
            };
            let mut moved = bp.clone();
            for t in &mut moved.texts {
                place(&mut t.rect);
                t.line_height *= k;
            }
            for s in moved.shapes.iter_mut().filter(|s| moves(s)) {
                place(&mut s.rect);
            }
            if let Some(r) = room_for_product(&moved)
                && best.as_ref().is_none_or(|(_, b)| r.area() > b.area())
            {
                best = Some((moved, r));
            }
        }
        if best.is_some() {
            return best;
        }
    }
    None
}

/// `r` (unit square of a `w` x `h` design) cut about its centre to at most `max` times as
/// long as wide, either way, in design pixels.
fn fit_aspect(r: &Rect, w: f32, h: f32, max: f32) -> Rect {
    let (pw, ph) = (r.w * w, r.h * h);
    let (nw, nh) = if pw > ph * max {
        (ph * max, ph)
    } else if ph > pw * max {
        (pw, pw * max)
    } else {
        (pw, ph)
    };
    let (cx, cy) = r.center();
    Rect {
        x: cx - nw / w / 2.0,
        y: cy - nh / h / 2.0,
        w: nw / w,
        h: nh / h,
    }
}
