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
