//! Placing the units of an ad on the new canvas: the words flowed as a column of blocks in
//! reading order (a text re-wrapped at the column's width, a button or a row scaled whole),
//! and that column stacked with the product (tall shapes), set beside it (wide shapes), or
//! over the ad's photo (an ad whose words sit on its picture).
//!
//! Longer than 700 lines because the three arrangements (stacked, side by side, over the
//! photo) share one set of measuring and scaling steps, and the product's yielding is tuned
//! across them; the seam to split along is one file per arrangement (not done yet).

use adforge_renderer::Renderer;
use adforge_renderer::tree::{Bounds, TextAlign, Tree};

use super::units::{Item, Role, Source};

/// How the words and the product share the canvas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrangement {
    /// The product above or below the words.
    Stack,
    /// The product beside the words.
    Side,
    /// The words over the ad's photo (or an ad without a product image).
    Overlay,
}

impl Arrangement {
    /// Its name in messages and reports.
    pub fn key(self) -> &'static str {
        match self {
            Arrangement::Stack => "stacked",
            Arrangement::Side => "side by side",
            Arrangement::Overlay => "words over the picture",
        }
    }
}

/// Where one unit goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Move {
    /// Scaled whole by `k` about its box's top-left corner, which goes to `x`, `y`.
    Rigid { k: f64, x: f64, y: f64 },
    /// A TEXT re-flowed in box `b` at type size `size`.
    Text { b: Bounds, size: f64 },
    /// Set in box `b` (the picture under the words, mapped in proportion); what rides on
    /// it scales with the smaller ratio of the two sides.
    Place { b: Bounds },
}

/// The new canvas and the rules of this size.
#[derive(Debug, Clone, Copy)]
pub(super) struct Canvas {
    pub w: f64,
    pub h: f64,
    /// The readable floor, in design pixels.
    pub floor: f64,
    /// Air kept from each edge.
    pub margin: f64,
}

impl Canvas {
    fn short(&self) -> f64 {
        self.w.min(self.h)
    }
    fn inner(&self) -> Bounds {
        Bounds {
            x: self.margin,
            y: self.margin,
            width: self.w - 2.0 * self.margin,
            height: self.h - 2.0 * self.margin,
        }
    }
}

/// A laid-out column of word blocks: each unit's move relative to the column's top-left.
#[derive(Debug, Clone, Default)]
struct Column {
    moves: Vec<(usize, Move)>,
    h: f64,
}

impl Column {
    fn shifted(&self, dx: f64, dy: f64) -> Vec<(usize, Move)> {
        self.moves
            .iter()
            .map(|&(i, m)| {
                let m = match m {
                    Move::Rigid { k, x, y } => Move::Rigid {
                        k,
                        x: x + dx,
                        y: y + dy,
                    },
                    Move::Text { b, size } => Move::Text {
                        b: Bounds {
                            x: b.x + dx,
                            y: b.y + dy,
                            ..b
                        },
                        size,
                    },
                    Move::Place { b } => Move::Place { b },
                };
                (i, m)
            })
            .collect()
    }
}

/// The plan: each unit's move, the product's share of the new canvas and the arrangement.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    pub moves: Vec<(usize, Move)>,
    pub arrangement: Arrangement,
    /// The largest share the product could have in this shape beside the words, at most
    /// the source's share.
    pub product_share: f64,
}

/// The box of unit `i` with what rides on it (the product: its own box alone).
pub(super) fn unit_box(src: &Source, i: usize) -> Bounds {
    let it = &src.items[i];
    if it.role == Role::Product {
        return it.b;
    }
    src.items
        .iter()
        .filter(|o| o.rides == Some(i))
        .fold(it.b, |b, o| b.union(&o.b))
}

/// The word blocks in reading order: rows of units side by side (their spans top to bottom
/// overlapping by half), top to bottom, each row left to right.
fn rows(src: &Source) -> Vec<Vec<usize>> {
    let mut units: Vec<usize> = src
        .with(Role::Content)
        .filter(|&i| src.items[i].rides.is_none())
        .collect();
    units.sort_by(|&a, &b| {
        let (ca, cb) = (unit_box(src, a).centre(), unit_box(src, b).centre());
        ca.1.total_cmp(&cb.1).then(ca.0.total_cmp(&cb.0))
    });
    let mut rows: Vec<Vec<usize>> = Vec::new();
    for u in units {
        let b = unit_box(src, u);
        let joins = rows.last().is_some_and(|row| {
            let r = row
                .iter()
                .map(|&i| unit_box(src, i))
                .reduce(|a, c| a.union(&c))
                .unwrap_or(b);
            let overlap = (r.y + r.height).min(b.y + b.height) - r.y.max(b.y);
            overlap > 0.5 * r.height.min(b.height)
        });
        match rows.last_mut() {
            Some(row) if joins => row.push(u),
            _ => rows.push(vec![u]),
        }
    }
    for row in &mut rows {
        row.sort_by(|&a, &b| unit_box(src, a).x.total_cmp(&unit_box(src, b).x));
    }
    rows
}

/// The box holding all word units.
pub(super) fn words_box(src: &Source) -> Option<Bounds> {
    src.with(Role::Content)
        .filter(|&i| src.items[i].rides.is_none())
        .map(|i| unit_box(src, i))
        .reduce(|a, b| a.union(&b))
}

/// Lays the words out in a column `cw` wide at type scale `t`; `None` when a block cannot
/// be set at the floor in that width.
fn column(
    renderer: &Renderer,
    parsed: &Tree,
    src: &Source,
    canvas: &Canvas,
    t: f64,
    cw: f64,
) -> Option<Column> {
    let group = words_box(src)?;
    let mut col = Column::default();
    let mut y = 0.0;
    let mut prev: Option<(f64, f64)> = None; // source bottom, new type size
    for row in rows(src) {
        let blocks = match rigid_row(src, canvas, &row, t, cw, &group) {
            Some(b) => vec![b],
            // A row too wide to scale whole: its units one under the other.
            None if row.len() > 1 => row
                .iter()
                .map(|&u| block(renderer, parsed, src, canvas, u, t, cw, &group))
                .collect::<Option<Vec<_>>>()?,
            None => vec![block(renderer, parsed, src, canvas, row[0], t, cw, &group)?],
        };
        for b in blocks {
            if let Some((bottom, size)) = prev {
                // The source's air, at most a line and a half of the larger type (a gap
                // that held a picture in the source holds none here).
                let src_gap = ((b.src_top - bottom).max(0.0) * t).min(1.5 * size.max(b.size));
                y += src_gap
                    .max(0.45 * size.max(b.size))
                    .max(0.012 * canvas.w.max(canvas.h));
            }
            prev = Some((b.src_bottom, b.size));
            for (i, m) in b.moves {
                let m = match m {
                    Move::Rigid { k, x, y: dy } => Move::Rigid { k, x, y: y + dy },
                    Move::Text { b: bx, size } => Move::Text {
                        b: Bounds { y: y + bx.y, ..bx },
                        size,
                    },
                    Move::Place { b } => Move::Place { b },
                };
                col.moves.push((i, m));
            }
            y += b.h;
        }
    }
    col.h = y;
    Some(col)
}

/// One block of the column, relative to its top-left (x within the column).
struct Block {
    moves: Vec<(usize, Move)>,
    h: f64,
    size: f64,
    src_top: f64,
    src_bottom: f64,
}

/// Where a box of width `w` goes in a column `cw` wide: where the source box sat in the
/// words' box (`group`): centred, left or right.
fn along(b: &Bounds, group: &Bounds, w: f64, cw: f64) -> f64 {
    let (left, right) = (b.x - group.x, group.x + group.width - (b.x + b.width));
    if (left - right).abs() < 0.08 * group.width {
        (cw - w) / 2.0
    } else if left < right {
        0.0
    } else {
        cw - w
    }
}

/// A row of several units scaled whole (or a single unit that is not a TEXT); `None` when
/// it cannot keep the floor in the column's width, or is one TEXT (flowed instead).
fn rigid_row(
    src: &Source,
    canvas: &Canvas,
    row: &[usize],
    t: f64,
    cw: f64,
    group: &Bounds,
) -> Option<Block> {
    if row.len() == 1 && src.items[row[0]].text {
        return None;
    }
    let rb = row
        .iter()
        .map(|&i| unit_box(src, i))
        .reduce(|a, b| a.union(&b))?;
    let min_em = row
        .iter()
        .map(|&i| src.items[i].min_em)
        .filter(|e| *e > 0.0)
        .fold(f64::INFINITY, f64::min);
    let need = if min_em.is_finite() {
        canvas.floor / min_em
    } else {
        0.0
    };
    let most = cw / rb.width.max(1.0);
    let k = t.max(need).min(most);
    if k + 1e-9 < need {
        return None;
    }
    let x0 = along(&rb, group, rb.width * k, cw);
    let moves = row
        .iter()
        .map(|&i| {
            let b = unit_box(src, i);
            (
                i,
                Move::Rigid {
                    k,
                    x: x0 + (b.x - rb.x) * k,
                    y: (b.y - rb.y) * k,
                },
            )
        })
        .collect();
    let em = row.iter().map(|&i| src.items[i].em).fold(0.0, f64::max);
    Some(Block {
        moves,
        h: rb.height * k,
        size: em * k,
        src_top: rb.y,
        src_bottom: rb.y + rb.height,
    })
}

/// One unit as a block: a TEXT re-flowed, anything else scaled whole.
#[allow(clippy::too_many_arguments)]
fn block(
    renderer: &Renderer,
    parsed: &Tree,
    src: &Source,
    canvas: &Canvas,
    u: usize,
    t: f64,
    cw: f64,
    group: &Bounds,
) -> Option<Block> {
    let it: &Item = &src.items[u];
    if !it.text {
        return rigid_row(src, canvas, &[u], t, cw, group);
    }
    let style = parsed.get(&it.id)?.text.as_ref()?;
    // A text that ran across most of the words' box runs across the column; a narrower one
    // keeps its share of it.
    let w = if it.b.width >= 0.55 * group.width {
        cw
    } else {
        (it.b.width * t * 1.25).clamp((0.4 * cw).min(cw), cw)
    };
    let mut size = (it.em * t).max(canvas.floor);
    loop {
        let m = renderer.measure_text(style, &style.characters, size as f32, w as f32);
        let fits_one = style.max_lines.is_none_or(|n| m.lines <= n as usize);
        if !m.broke_word && fits_one {
            let h = f64::from(m.height) + 0.12 * size;
            let x = match style.align {
                TextAlign::Center | TextAlign::Justified if w < cw => (cw - w) / 2.0,
                TextAlign::Right => cw - w,
                _ => along(&it.b, group, w, cw),
            };
            let x = if w >= cw { 0.0 } else { x };
            return Some(Block {
                moves: vec![(
                    u,
                    Move::Text {
                        b: Bounds {
                            x,
                            y: 0.0,
                            width: w,
                            height: h,
                        },
                        size,
                    },
                )],
                h,
                size,
                src_top: it.b.y,
                src_bottom: it.b.y + it.b.height,
            });
        }
        // A word wider than the column (or a one-line label that wraps): smaller type,
        // never under the floor.
        if size <= canvas.floor + 1e-6 {
            return None;
        }
        size = (size * 0.92).max(canvas.floor);
    }
}

/// The type scales tried, largest first: the source's area ratio down to where the
/// largest type reaches the floor.
fn scales(src: &Source, canvas: &Canvas) -> Vec<f64> {
    let t0 = ((canvas.w * canvas.h) / (src.w * src.h)).sqrt().min(1.0);
    scales_from(src, canvas, t0)
}

/// The type scales of a stacked column: from the words' size relative to the canvas's
/// width (or its height, where the shape is wider than the source) down to the floor.
fn stack_scales(src: &Source, canvas: &Canvas) -> Vec<f64> {
    let t0 = (canvas.w / src.w).min(canvas.h / src.h);
    scales_from(src, canvas, t0)
}

/// Scales from `t0` down by 8 % steps to where the largest type reaches the floor.
fn scales_from(src: &Source, canvas: &Canvas, t0: f64) -> Vec<f64> {
    let em = src
        .with(Role::Content)
        .map(|i| src.items[i].em)
        .fold(0.0, f64::max);
    let last = if em > 0.0 { canvas.floor / em } else { t0 };
    let mut out = vec![t0];
    let mut t = t0;
    while t > last && out.len() < 24 {
        t = (t * 0.92).max(last);
        out.push(t);
    }
    out
}

/// The arrangement for a canvas of aspect `aspect` (width ÷ height): words over the
/// picture stay so; else tall shapes stack, wide ones set the words beside the product, and
/// square-ish ones keep the source's arrangement.
pub(super) fn arrangement(src: &Source, aspect: f64) -> Arrangement {
    let (Some(p), Some(words)) = (src.product(), words_box(src)) else {
        return Arrangement::Overlay;
    };
    let pb = src.items[p].b;
    let on_picture = src
        .with(Role::Content)
        .any(|i| src.items[i].rides.is_none() && pb.holds(src.items[i].b.centre()));
    if on_picture || src.product_share() > 0.6 {
        return Arrangement::Overlay;
    }
    if aspect < 0.8 {
        return Arrangement::Stack;
    }
    if aspect > 1.3 {
        return Arrangement::Side;
    }
    let v_gap = (pb.y - (words.y + words.height)).max(words.y - (pb.y + pb.height));
    let h_gap = (pb.x - (words.x + words.width)).max(words.x - (pb.x + pb.width));
    // Words around the product (above and below it, a centred product) stack.
    if h_gap > v_gap && h_gap > 0.0 {
        Arrangement::Side
    } else {
        Arrangement::Stack
    }
}

/// Whether the product came first (above, or left of) the words in the source.
fn product_first(src: &Source, p: usize) -> bool {
    let pb = src.items[p].b.centre();
    let wb = words_box(src).map_or(pb, |b| b.centre());
    let (dx, dy) = (wb.0 - pb.0, wb.1 - pb.1);
    if dy.abs() * src.w >= dx.abs() * src.h {
        dy > 0.0
    } else {
        dx > 0.0
    }
}

/// The logo's place: its box scaled so its mark stays readable, in the corner (or the
/// middle of the edge) it had. Returns its move and the height of the band it takes.
fn logo(src: &Source, canvas: &Canvas, area: &Bounds, top: bool) -> Option<((usize, Move), f64)> {
    let l = src.logo()?;
    let b = unit_box(src, l);
    let short = (canvas.short() / src.w.min(src.h)).min(1.0);
    // Readable: at least 2.6 % of the canvas tall or 13 % wide (the rule: 2 % or 10 %).
    let readable = (0.026 * canvas.h / b.height.max(1.0)).min(0.13 * canvas.w / b.width.max(1.0));
    let k = short
        .max(readable)
        .min(0.45 * area.width / b.width.max(1.0));
    let (w, h) = (b.width * k, b.height * k);
    let cx = b.centre().0 / src.w;
    let x = if cx < 0.36 {
        area.x
    } else if cx > 0.64 {
        area.x + area.width - w
    } else {
        area.x + (area.width - w) / 2.0
    };
    let y = if top {
        area.y
    } else {
        area.y + area.height - h
    };
    Some(((l, Move::Rigid { k, x, y }), h + 0.035 * canvas.short()))
}

/// Lays out `src` on `canvas` (see the module docs).
///
/// # Errors
/// What cannot be set at the floor, in words (the caller names the size).
pub(super) fn plan(
    renderer: &Renderer,
    parsed: &Tree,
    src: &Source,
    canvas: &Canvas,
) -> Result<Plan, String> {
    let aspect = canvas.w / canvas.h;
    let chosen = arrangement(src, aspect);
    match plan_as(renderer, parsed, src, canvas, chosen) {
        // A square-ish shape whose words do not fit beside the product stacks them.
        Err(_) if chosen == Arrangement::Side && aspect <= 1.3 => {
            plan_as(renderer, parsed, src, canvas, Arrangement::Stack)
        }
        planned => planned,
    }
}

/// [`plan`] in the given arrangement.
fn plan_as(
    renderer: &Renderer,
    parsed: &Tree,
    src: &Source,
    canvas: &Canvas,
    arrangement: Arrangement,
) -> Result<Plan, String> {
    let inner = canvas.inner();
    let logo_top = src
        .logo()
        .is_none_or(|l| src.items[l].b.centre().1 < 0.5 * src.h);
    let share = src.product_share();
    let canvas_area = canvas.w * canvas.h;
    let levels = scales(src, canvas);
    let fail =
        || "its words do not fit at the readable floor beside the product and the logo".to_owned();
    let has_words = words_box(src).is_some();
    match (arrangement, src.product()) {
        (Arrangement::Stack, Some(p)) => {
            let pb = src.items[p].b;
            let r = pb.width / pb.height.max(1.0);
            let (logo_move, band) = logo(src, canvas, &inner, logo_top).unzip();
            let band = band.unwrap_or(0.0);
            let region = Bounds {
                y: inner.y + if logo_top { band } else { 0.0 },
                height: inner.height - band,
                ..inner
            };
            let gap = 0.045 * canvas.short();
            // The words start at their source size relative to the canvas (its width in a
            // column as wide as the canvas, its height where the shape is wider than the
            // source), not shrunk with the area; the product takes the room left, at
            // least its share where there is room, at most twice it.
            let stacked = stack_scales(src, canvas);
            let most_h = (2.0 * share * canvas_area / r).sqrt().min(inner.width / r);
            let least_h = (MIN_SHARE * canvas_area / r).sqrt();
            let keep_h = (0.98 * share * canvas_area / r).sqrt().min(inner.width / r);
            // First the type a little smaller (at most 15 %) where that keeps the product's
            // share; then the product yields (down to the least share) and only then the
            // type steps down to the floor.
            let t0 = stacked.first().copied().unwrap_or(1.0);
            let tries = stacked
                .iter()
                .filter(|&&t| t >= 0.85 * t0)
                .map(|&t| (t, keep_h))
                .chain(stacked.iter().map(|&t| (t, least_h)));
            for (t, need_h) in tries {
                let Some(col) = column(renderer, parsed, src, canvas, t, inner.width) else {
                    continue;
                };
                let room = region.height - col.h - if has_words { gap } else { 0.0 };
                let ph = room.min(most_h);
                if ph + 1e-9 < need_h {
                    continue;
                }
                let got = ph * ph * r / canvas_area;
                let spare = (room - ph).max(0.0);
                let (y0, gap) = (region.y + spare / 3.0, gap + spare / 3.0);
                let (py, cy) = if product_first(src, p) {
                    (y0, y0 + ph + gap)
                } else {
                    (y0 + col.h + gap, y0)
                };
                let k = ph / pb.height.max(1.0);
                let mut moves = col.shifted(inner.x, cy);
                moves.push((
                    p,
                    Move::Rigid {
                        k,
                        x: inner.x + (inner.width - ph * r) / 2.0,
                        y: py,
                    },
                ));
                moves.extend(logo_move);
                return Ok(Plan {
                    moves,
                    arrangement,
                    product_share: got,
                });
            }
            Err(fail())
        }
        (Arrangement::Side, Some(p)) => {
            let pb = src.items[p].b;
            let r = pb.width / pb.height.max(1.0);
            let gap = (0.05 * canvas.short()).max(0.04 * canvas.w);
            let first = product_first(src, p);
            let target_h = (share * canvas_area / r).sqrt().min(inner.height);
            let mut ph = target_h.min(0.55 * inner.width / r);
            let mut tries = 0;
            loop {
                let pw = ph * r;
                let cw = inner.width - pw - gap;
                let text = Bounds {
                    x: if first { inner.x + pw + gap } else { inner.x },
                    width: cw,
                    ..inner
                };
                let (logo_move, band) = logo(src, canvas, &text, logo_top).unzip();
                let band = band.unwrap_or(0.0);
                let got = ph * pw / canvas_area;
                for &t in &levels {
                    let Some(col) = (cw > 0.0)
                        .then(|| column(renderer, parsed, src, canvas, t, cw))
                        .flatten()
                    else {
                        continue;
                    };
                    if col.h > inner.height - band {
                        continue;
                    }
                    let cy = inner.y
                        + if logo_top { band } else { 0.0 }
                        + (inner.height - band - col.h) / 2.0;
                    let mut moves = col.shifted(text.x, cy);
                    let k = ph / pb.height.max(1.0);
                    moves.push((
                        p,
                        Move::Rigid {
                            k,
                            x: if first {
                                inner.x
                            } else {
                                inner.x + inner.width - pw
                            },
                            y: inner.y + (inner.height - ph) / 2.0,
                        },
                    ));
                    moves.extend(logo_move);
                    return Ok(Plan {
                        moves,
                        arrangement,
                        product_share: got,
                    });
                }
                // The words need more width: the product gives some, down to the least share.
                ph *= 0.9;
                tries += 1;
                if ph * ph * r / canvas_area < MIN_SHARE || tries > 12 {
                    return Err(fail());
                }
            }
        }
        _ => overlay(renderer, parsed, src, canvas, &levels, logo_top),
    }
}

/// The least share of the canvas the product keeps ([`crate::blueprint::MIN_PRODUCT_SHARE`]).
const MIN_SHARE: f64 = crate::blueprint::MIN_PRODUCT_SHARE as f64 * 1.1;

/// The words over the picture: the picture mapped to the new canvas in proportion (a
/// full-bleed one covers it), the words in a column at the side and height they had.
fn overlay(
    renderer: &Renderer,
    parsed: &Tree,
    src: &Source,
    canvas: &Canvas,
    levels: &[f64],
    logo_top: bool,
) -> Result<Plan, String> {
    let inner = canvas.inner();
    let (logo_move, band) = logo(src, canvas, &inner, logo_top).unzip();
    let band = band.unwrap_or(0.0);
    let region = Bounds {
        y: inner.y + if logo_top { band } else { 0.0 },
        height: inner.height - band,
        ..inner
    };
    let (sx, sy) = (canvas.w / src.w, canvas.h / src.h);
    let mut moves: Vec<(usize, Move)> = Vec::new();
    let mut product_share = 0.0;
    if let Some(p) = src.product() {
        let b = src.items[p].b;
        // Mapped in proportion; its riders scale with the smaller ratio.
        moves.push((
            p,
            Move::Place {
                b: Bounds {
                    x: b.x * sx,
                    y: b.y * sy,
                    width: b.width * sx,
                    height: b.height * sy,
                },
            },
        ));
        product_share = src.product_share();
    }
    moves.extend(logo_move);
    let Some(words) = words_box(src) else {
        return Ok(Plan {
            moves,
            arrangement: Arrangement::Overlay,
            product_share,
        });
    };
    let (cx, cy) = (words.centre().0 / src.w, words.centre().1 / src.h);
    let wide = canvas.w > 1.3 * canvas.h;
    let base = if wide {
        (words.width / src.w).max(0.5)
    } else if words.width >= 0.5 * src.w {
        1.0
    } else {
        (words.width / src.w * 1.2).max(0.6)
    };
    let widths: Vec<f64> = [base, 0.65, 0.8, 1.0]
        .into_iter()
        .filter(|f| *f >= base)
        .map(|f| f.min(1.0) * region.width)
        .collect();
    for cw in widths {
        for &t in levels {
            let Some(col) = column(renderer, parsed, src, canvas, t, cw) else {
                continue;
            };
            if col.h > region.height {
                continue;
            }
            let x = if cx < 0.4 {
                region.x
            } else if cx > 0.6 {
                region.x + region.width - cw
            } else {
                region.x + (region.width - cw) / 2.0
            };
            let y = if cy < 0.4 {
                region.y
            } else if cy > 0.6 {
                region.y + region.height - col.h
            } else {
                region.y + (region.height - col.h) / 2.0
            };
            moves.extend(col.shifted(x, y));
            return Ok(Plan {
                moves,
                arrangement: Arrangement::Overlay,
                product_share,
            });
        }
    }
    Err("its words do not fit at the readable floor".to_owned())
}
