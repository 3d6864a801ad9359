//! A [`Blueprint`] written as a layout template: the renderer's JSON tree at the blueprint's
//! design size (3840 px long edge), whose node ids are slot names and whose nodes carry the
//! layout library's `$` keys (`assets/layouts/README.md`), so it renders as it is and
//! [`crate::generate::fill::fill`] fills it like a built-in layout.
//!
//! Slots: `background` (or `photo` on a photo ground), `panel_N`, `product_image`,
//! `headline`, `supporting`, `eyebrow`, `cta` (a button frame holding `cta_label`), `badge`
//! with `badge_label`, `logo`. Text boxes are the reference's blocks widened into the free
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

use adforge_renderer::tree::{NodeBuilder, TreeBuilder, paint};
use serde_json::Value;

use super::{
    Align, Background, Blueprint, MIN_PRODUCT_SHARE, Rect, Rgb, Shape, ShapeRole, TextBlock,
    TextRole,
};

/// Least air between a text box and the next element below it in its column, in the
/// text's own font size (em): 0.75 em, a little more than the gap between two lines.
pub const MIN_TEXT_GAP_EM: f32 = 0.75;

/// Lowest an element moved down to make room may reach (fraction of the height from the
/// top): the reference's bottom margin, kept between 3 % and 10 % of the height.
fn floor_of(bp: &Blueprint) -> f32 {
    1.0 - bp.margins[3].clamp(0.03, 0.1)
}

/// A text block's font size (em) as a fraction of the canvas height.
fn em_of(t: &TextBlock) -> f32 {
    // Glyph extent of a line ≈ 0.9 em in mixed case, 0.72 em in capitals.
    t.line_height / if t.upper { 0.72 } else { 0.9 }
}

/// Whether `o` lies below `t` in the same column (their spans overlap side to side).
fn below(t: &Rect, o: &Rect) -> bool {
    o.y >= t.bottom() - 1e-4 && o.x < t.right() && o.right() > t.x
}

/// The blueprint with the elements below each drawn text block moved down, where the
/// reference leaves less than [`MIN_TEXT_GAP_EM`] between them and the canvas has room.
/// Everything below the moved element in the same column moves with it.
pub fn make_room(bp: &Blueprint) -> Blueprint {
    let mut bp = bp.clone();
    let floor = floor_of(&bp);
    let drawn = [TextRole::Headline, TextRole::Supporting, TextRole::Eyebrow];
    let mut order: Vec<usize> = (0..bp.texts.len())
        .filter(|&i| drawn.contains(&bp.texts[i].role))
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

/// The palette role standing in for a colour of the reference: light grounds stay light,
/// dark greys stay dark, colours become the brand's colour.
pub fn role_for(c: Rgb) -> &'static str {
    let l = luminance(c);
    let (mx, mn) = (
        c.iter().max().copied().unwrap_or(0),
        c.iter().min().copied().unwrap_or(0),
    );
    let sat = if mx == 0 {
        0.0
    } else {
        f32::from(mx - mn) / f32::from(mx)
    };
    if l > 0.6 {
        "background"
    } else if sat < 0.25 && l < 0.1 {
        "ink"
    } else {
        "primary"
    }
}

fn luminance(c: Rgb) -> f32 {
    crate::generate::analyse::luminance(c)
}

fn round1(v: f32) -> f64 {
    (f64::from(v) * 10.0).round() / 10.0
}

/// A colour's channels in 0..1, to 3 decimals.
fn channels(c: Rgb) -> [f64; 3] {
    c.map(|v| (f64::from(v) / 255.0 * 1000.0).round() / 1000.0)
}

fn colour(c: Rgb) -> Value {
    paint::color(channels(c))
}

fn solid(c: Rgb) -> Value {
    paint::solid(channels(c))
}

struct Writer<'a> {
    bp: &'a Blueprint,
    w: f32,
    h: f32,
    tree: TreeBuilder,
    /// Whether each node gets a `name`: its slot (see [`sample_tree`]).
    named: bool,
    children: Vec<String>,
}

impl Writer<'_> {
    fn px(&self, r: &Rect) -> (f64, f64, f64, f64) {
        (
            round1(r.x * self.w),
            round1(r.y * self.h),
            round1(r.w * self.w),
            round1(r.h * self.h),
        )
    }

    fn add(&mut self, id: &str, node: NodeBuilder, top: bool) {
        let node = node.set("id", id);
        let node = if self.named {
            node.set("name", id)
        } else {
            node
        };
        self.tree.node(id, node);
        if top {
            self.children.push(id.to_owned());
        }
    }

    fn shape_node(&self, r: &Rect, shape: Shape) -> NodeBuilder {
        let (x, y, w, h) = self.px(r);
        let ty = if matches!(shape, Shape::Circle) {
            "ELLIPSE"
        } else {
            "RECTANGLE"
        };
        let n = NodeBuilder::new(ty).bounds(x, y, w, h);
        match shape {
            Shape::Rounded { radius } => n.set(
                "cornerRadius",
                round1(radius * r.w.min(r.h * self.h / self.w) * self.w),
            ),
            _ => n,
        }
    }

    /// The backdrop slot of a point: the panel under it, else the ground.
    fn backdrop_of(&self, r: &Rect, panels: &[(String, Rect)]) -> String {
        panels
            .iter()
            .rev()
            .find(|(_, p)| p.contains_center(r))
            .map(|(id, _)| id.clone())
            .unwrap_or_else(|| self.ground_id().to_owned())
    }

    fn ground_id(&self) -> &'static str {
        match self.bp.background {
            Background::Photo { .. } => "photo",
            _ => "background",
        }
    }

    /// Widens a text box into the free space around it, away from every other element.
    fn widen(&self, t: &TextBlock, others: &[Rect], container: Rect) -> Rect {
        let m = self.bp.margins;
        let pad = 0.01;
        let lo_x = container.x.max(m[0].min(t.rect.x)) + if container.x > 0.0 { pad } else { 0.0 };
        let hi_x = container.right().min(1.0 - m[2].min(1.0 - t.rect.right()))
            - if container.right() < 1.0 { pad } else { 0.0 };
        let mut left = lo_x;
        let mut right = hi_x;
        let mut gap_limit = f32::INFINITY;
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
                    right = right.min(o.x - pad);
                } else if o.right() <= t.rect.x {
                    left = left.max(o.right() + pad);
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

    fn text_node(
        &self,
        t: &TextBlock,
        r: &Rect,
        slot: &str,
        on: &str,
        vcenter: bool,
    ) -> NodeBuilder {
        let (x, y, w, h) = self.px(r);
        // Glyph extent of a line ≈ 0.9 em in mixed case, 0.72 em in capitals.
        let em = t.line_height * self.h / if t.upper { 0.72 } else { 0.9 };
        let pitch = if t.lines >= 2 {
            ((t.rect.h - t.line_height) / (t.lines - 1) as f32 * self.h / em * 100.0)
                .clamp(95.0, 170.0)
        } else {
            115.0
        };
        let mut n = NodeBuilder::new("TEXT")
            .bounds(x, y, w, h)
            .set("characters", placeholder(slot))
            .set("fontFamily", "Inter")
            .set("fontSize", round1(em))
            .set("fontWeight", t.weight)
            .line_height_percent(pitch.round())
            .set("textAlignHorizontal", t.align.figma())
            .set("textAlignVertical", if vcenter { "CENTER" } else { "TOP" })
            .set("textAutoResize", "NONE")
            .text_fit(round1(em * 0.35), round1(em));
        if t.upper {
            n = n.set("textCase", "UPPER");
        }
        if slot == "cta_label" {
            // A button label stays on one line: longer copy (or an edit) shrinks it instead
            // of wrapping it inside the pill. (A badge's label may wrap: badges are round.)
            n = n.set("maxLines", 1);
        }
        let copy_slot = match slot {
            "badge_label" => "eyebrow",
            "cta_label" => "cta",
            s => s,
        };
        n.fills([solid(t.color)])
            .set("$text", copy_slot)
            .set("$on", on)
            .set(
                "$font",
                if slot == "headline" {
                    "heading"
                } else {
                    "body"
                },
            )
    }
}

/// The text column a logo heads, if any: the span of the placed text boxes below it that
/// share its horizontal extent, with the logo's alignment in that span (the edge or centre
/// it is nearest to). None when nothing is below it, or when widening the logo box to the
/// column would run into an image or shape.
fn logo_column(logo: &Rect, texts: &[Rect], blockers: &[Rect]) -> Option<(Rect, &'static str)> {
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

fn placeholder(slot: &str) -> &'static str {
    match slot {
        "headline" => "Your headline goes here",
        "supporting" => "A line or two of supporting copy about the product.",
        "eyebrow" => "NEW",
        "cta_label" => "Shop now",
        "badge_label" => "-20%",
        _ => "Text",
    }
}

/// The blueprint as a template (see the module docs).
pub fn template(bp: &Blueprint) -> Value {
    write(bp, false)
}

/// The template, with a `name` on every node when `named`.
fn write(bp: &Blueprint, named: bool) -> Value {
    let bp = &make_room(bp);
    let (w, h) = (bp.width.max(1) as f32, bp.height.max(1) as f32);
    let mut wr = Writer {
        bp,
        w,
        h,
        tree: TreeBuilder::new("root"),
        named,
        children: Vec::new(),
    };
    let full = Rect {
        x: 0.0,
        y: 0.0,
        w: 1.0,
        h: 1.0,
    };

    // Ground.
    let ground = wr.shape_node(&full, Shape::Rectangle);
    match &bp.background {
        Background::Solid { color } => {
            let ground = ground.fills([solid(*color)]).set("$fill", role_for(*color));
            wr.add("background", ground, true);
        }
        Background::Gradient { from, to, vertical } => {
            use paint::point;
            let handles = if *vertical {
                [point(0.5, 0), point(0.5, 1), point(0, 0)]
            } else {
                [point(0, 0.5), point(1, 0.5), point(0, 1)]
            };
            let stops = vec![paint::stop(0, colour(*from)), paint::stop(1, colour(*to))];
            let to_role = if role_for(*from) == role_for(*to) {
                "accent"
            } else {
                role_for(*to)
            };
            let ground = ground
                .fills([paint::linear_gradient(handles, stops)])
                .set("$gradient", vec![role_for(*from), to_role]);
            wr.add("background", ground, true);
        }
        Background::Photo { mean } => {
            let ground = ground.fills([solid(*mean)]).set("$image", "product");
            wr.add("photo", ground, true);
        }
    }

    // Panels (bands, cards), then the product, then buttons and badges.
    let mut panels: Vec<(String, Rect)> = Vec::new();
    for (i, s) in bp
        .shapes
        .iter()
        .filter(|s| s.role == ShapeRole::Panel)
        .enumerate()
    {
        let id = format!("panel_{}", i + 1);
        let n = wr
            .shape_node(&s.rect, s.shape)
            .fills([solid(s.color)])
            .set("$fill", role_for(s.color));
        wr.add(&id, n, true);
        panels.push((id, s.rect));
    }
    let mut occupied: Vec<(TextRole, Rect)> = Vec::new();
    if !matches!(bp.background, Background::Photo { .. })
        && let Some(img) = bp.images.first()
    {
        let rect = grow_to_share(img.rect, MIN_PRODUCT_SHARE);
        let mut n = wr
            .shape_node(&rect, img.shape)
            .fills([solid([204, 204, 204])])
            .set("$image", "product");
        // A cut-out product's slot is filled edge to edge too: variant images are mostly
        // photos on their own ground, which FIT would letterbox to a sliver of the slot.
        if img.cutout {
            n = n.set(
                "cornerRadius",
                round1(rect.w.min(rect.h * h / w) * w * 0.06),
            );
        }
        wr.add("product_image", n, true);
        occupied.push((TextRole::Body, rect));
    }
    if let Some(s) = bp.shape(ShapeRole::Badge) {
        let n = wr
            .shape_node(&s.rect, s.shape)
            .fills([solid(s.color)])
            .set("$fill", "accent");
        wr.add("badge", n, true);
        let label = bp.text(TextRole::BadgeLabel).cloned().unwrap_or(TextBlock {
            role: TextRole::BadgeLabel,
            rect: s.rect,
            lines: 1,
            line_height: s.rect.h * 0.3,
            align: Align::Center,
            color: [255, 255, 255],
            weight: 700,
            upper: true,
        });
        let inset = inset(&s.rect, 0.15);
        let mut t = label.clone();
        t.align = Align::Center;
        let node = wr.text_node(&t, &inset, "badge_label", "badge", true);
        wr.add("badge_label", node, true);
    }
    if let Some(s) = bp.shape(ShapeRole::Button) {
        let (x, y, bw, bh) = wr.px(&s.rect);
        let mut frame = NodeBuilder::new("FRAME")
            .bounds(x, y, bw, bh)
            .fills([solid(s.color)])
            .set("$fill", "accent")
            .set("clipsContent", false);
        if let Shape::Rounded { radius } = s.shape {
            frame = frame.set("cornerRadius", round1(radius * bw.min(bh) as f32));
        } else if s.shape == Shape::Circle {
            frame = frame.set("cornerRadius", round1(bh as f32 / 2.0));
        }
        wr.add("cta", frame.children(["cta_label"]), true);
        let label = bp.text(TextRole::Cta).cloned().unwrap_or(TextBlock {
            role: TextRole::Cta,
            rect: s.rect,
            lines: 1,
            line_height: s.rect.h * 0.35,
            align: Align::Center,
            color: [255, 255, 255],
            weight: 600,
            upper: false,
        });
        let mut t = label.clone();
        t.align = Align::Center;
        // The label fills the button, in the frame's own coordinates.
        let local = Rect {
            x: s.rect.w * 0.08,
            y: 0.0,
            w: s.rect.w * 0.84,
            h: s.rect.h,
        };
        let node = wr.text_node(&t, &local, "cta_label", "cta", true);
        wr.add("cta_label", node, false);
        occupied.push((TextRole::Cta, s.rect));
    }

    // Text blocks.
    let drawn = [TextRole::Headline, TextRole::Supporting, TextRole::Eyebrow];
    let mut placed: Vec<Rect> = Vec::new();
    let blocks: Vec<&TextBlock> = bp
        .texts
        .iter()
        .filter(|t| drawn.contains(&t.role))
        .collect();
    for t in &blocks {
        let slot = match t.role {
            TextRole::Headline => "headline",
            TextRole::Supporting => "supporting",
            _ => "eyebrow",
        };
        let others: Vec<Rect> = blocks
            .iter()
            .filter(|o| o.role != t.role)
            .map(|o| o.rect)
            .chain(occupied.iter().map(|o| o.1))
            .chain(
                bp.shapes
                    .iter()
                    .filter(|s| s.role != ShapeRole::Panel)
                    .map(|s| s.rect),
            )
            .chain(bp.logo)
            .collect();
        let on = wr.backdrop_of(&t.rect, &panels);
        let container = panels
            .iter()
            .find(|(id, _)| *id == on)
            .map(|p| p.1)
            .unwrap_or(full);
        let r = wr.widen(t, &others, container);
        placed.push(r);
        let node = wr.text_node(t, &r, slot, &on, false);
        wr.add(slot, node, true);
    }

    if let Some(logo) = bp.logo {
        let (x, y, lw, lh) = wr.px(&logo);
        // A logo box a little taller than the wordmark the reference shows.
        let lh2 = (lh * 1.4).max(f64::from(h) * 0.03);
        let r1 = |v: f64| round1(v as f32);
        let on = wr.backdrop_of(&logo, &panels);
        let mut n = NodeBuilder::new("RECTANGLE")
            .bounds(
                r1(x),
                r1(y - (lh2 - lh) / 2.0),
                r1(lw.max(lh2 * 3.0)),
                r1(lh2),
            )
            .fills([])
            .set("$image", "logo")
            .set("$on", on);
        let cx = logo.center().0;
        let align = if (cx - 0.5).abs() < 0.05 {
            "CENTER"
        } else if cx > 0.5 {
            "RIGHT"
        } else {
            "LEFT"
        };
        if align == "RIGHT" {
            // Keep the box's right edge where the reference's logo ends.
            let right = x + lw;
            let bw = lw.max(lh2 * 3.0);
            n = n.set("x", r1(right - bw));
        } else if align == "CENTER" {
            let bw = lw.max(lh2 * 3.0);
            n = n.set("x", r1(x + lw / 2.0 - bw / 2.0));
        }
        n = n.set("$align", align);
        let blockers: Vec<Rect> = bp
            .images
            .iter()
            .map(|i| i.rect)
            .chain(
                bp.shapes
                    .iter()
                    .filter(|s| s.role != ShapeRole::Panel)
                    .map(|s| s.rect),
            )
            .collect();
        if let Some((col, col_align)) = logo_column(&logo, &placed, &blockers) {
            // The logo heads a text column: its box spans the column and lines up with it,
            // so a wordmark sits on one line over the headline's edge (or centre).
            let (cx, _, cw, _) = wr.px(&col);
            n = n
                .set("x", r1(cx))
                .set("width", r1(cw))
                .set("$align", col_align);
        }
        wr.add("logo", n, true);
    }

    let root = NodeBuilder::new("FRAME")
        .bounds(0, 0, bp.width, bp.height)
        .set("clipsContent", true)
        .fills([solid(bp.background.mean())])
        .children(std::mem::take(&mut wr.children));
    wr.add("root", root, false);
    wr.tree.build()
}

fn inset(r: &Rect, by: f32) -> Rect {
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

/// The blueprint as a design-template tree: the template with neutral sample content (the
/// reference's own colours, placeholder words, a grey product box) and every node named
/// after its slot. The `$` slot keys stay in the tree (unknown fields are kept by every
/// reader), so a generator can fill the template, as edited, later.
pub fn sample_tree(bp: &Blueprint) -> Value {
    write(bp, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blueprint::{ImageRegion, TextBlock};

    fn rect(x: f32, y: f32, w: f32, h: f32) -> Rect {
        Rect { x, y, w, h }
    }

    /// A logo over a text column spans the column and takes the edge it is nearest to, so
    /// a wordmark lines up with the headline; a blocked or lone logo keeps its own box.
    #[test]
    fn a_logo_heading_a_column_spans_it_and_lines_up() {
        let texts = [rect(0.53, 0.2, 0.42, 0.2), rect(0.53, 0.5, 0.44, 0.1)];
        let logo = rect(0.59, 0.06, 0.09, 0.04);
        let (col, align) = logo_column(&logo, &texts, &[]).unwrap();
        assert_eq!(align, "LEFT");
        assert!((col.x - 0.53).abs() < 1e-6 && (col.right() - 0.97).abs() < 1e-6);
        assert!((col.y - logo.y).abs() < 1e-6 && (col.h - logo.h).abs() < 1e-6);
        let centred = rect(0.70, 0.06, 0.1, 0.04);
        assert_eq!(logo_column(&centred, &texts, &[]).unwrap().1, "CENTER");
        // An image beside the logo, inside the column's span: the box stays as it was.
        assert!(logo_column(&logo, &texts, &[rect(0.85, 0.02, 0.1, 0.1)]).is_none());
        // Nothing below it: no column.
        assert!(logo_column(&rect(0.05, 0.9, 0.1, 0.04), &texts, &[]).is_none());
    }

    fn bp() -> Blueprint {
        Blueprint {
            source_width: 1000,
            source_height: 500,
            width: 3840,
            height: 1920,
            background: Background::Solid {
                color: [250, 250, 250],
            },
            images: vec![ImageRegion {
                rect: Rect {
                    x: 0.05,
                    y: 0.1,
                    w: 0.1,
                    h: 0.1,
                },
                shape: Shape::Circle,
                cutout: false,
            }],
            shapes: Vec::new(),
            texts: vec![TextBlock {
                role: TextRole::Headline,
                rect: Rect {
                    x: 0.5,
                    y: 0.1,
                    w: 0.2,
                    h: 0.1,
                },
                lines: 1,
                line_height: 0.1,
                align: Align::Left,
                color: [10, 10, 10],
                weight: 700,
                upper: false,
            }],
            logo: None,
            margins: [0.05, 0.1, 0.05, 0.8],
        }
    }

    #[test]
    fn a_small_product_grows_to_the_minimum_share_and_text_widens_to_the_margin() {
        let t = template(&bp());
        let p = &t["nodes"]["product_image"];
        let area = p["width"].as_f64().unwrap() * p["height"].as_f64().unwrap() / (3840.0 * 1920.0);
        assert!(area >= f64::from(MIN_PRODUCT_SHARE), "{area}");
        assert_eq!(p["type"], "ELLIPSE");
        let h = &t["nodes"]["headline"];
        // Left-aligned: starts where the reference's block starts, runs to the margin.
        assert_eq!(h["x"].as_f64().unwrap(), 1920.0);
        assert!(h["width"].as_f64().unwrap() > 0.2 * 3840.0);
        assert_eq!(t["nodes"]["background"]["$fill"], "background");
    }

    #[test]
    fn sample_trees_name_every_node_after_its_slot() {
        let t = sample_tree(&bp());
        for (id, n) in t["nodes"].as_object().unwrap() {
            assert_eq!(n["name"], Value::from(id.clone()));
        }
        adforge_renderer::Tree::from_value(t).unwrap();
    }

    /// A 16:9 blueprint: a two-line headline on the right with a button `gap` (of the
    /// height) below it, and the reference's bottom margin under the button.
    fn landscape(gap: f32) -> Blueprint {
        use crate::blueprint::SolidShape;
        let head = Rect {
            x: 0.5,
            y: 0.3,
            w: 0.4,
            h: 0.2,
        };
        let button = Rect {
            x: 0.5,
            y: head.bottom() + gap,
            w: 0.18,
            h: 0.09,
        };
        Blueprint {
            source_width: 1920,
            source_height: 1080,
            width: 3840,
            height: 2160,
            margins: [0.1, 0.3, 0.1, 1.0 - button.bottom()],
            shapes: vec![SolidShape {
                rect: button,
                shape: Shape::Rounded { radius: 0.5 },
                color: [20, 33, 61],
                role: ShapeRole::Button,
            }],
            texts: vec![TextBlock {
                role: TextRole::Headline,
                rect: head,
                lines: 2,
                line_height: 0.07,
                align: Align::Left,
                color: [255, 255, 255],
                weight: 800,
                upper: false,
            }],
            ..bp()
        }
    }

    /// Box of a node in canvas pixels: (top, bottom).
    fn span(t: &Value, id: &str) -> (f64, f64) {
        let n = &t["nodes"][id];
        let y = n["y"].as_f64().unwrap();
        (y, y + n["height"].as_f64().unwrap())
    }

    #[test]
    fn a_long_headline_above_a_button_keeps_the_gap() {
        let renderer = adforge_renderer::Renderer::with_defaults();
        // Roomy (the reference's own gap), tight with room below (the button moves down),
        // and tight at the bottom margin (the headline box is shortened).
        for (gap, moves) in [(0.12, false), (0.02, true), (0.0, false)] {
            let mut bp = landscape(gap);
            if gap == 0.0 {
                bp.margins[3] = 0.03;
                bp.shapes[0].rect.y = 0.97 - bp.shapes[0].rect.h;
                bp.texts[0].rect.y = bp.shapes[0].rect.y - bp.texts[0].rect.h;
            }
            let mut t = template(&bp);
            let head = &t["nodes"]["headline"];
            let em = head["textFit"]["maxFontSize"].as_f64().unwrap();
            let (_, head_bottom) = span(&t, "headline");
            let (cta_top, cta_bottom) = span(&t, "cta");
            let want = f64::from(MIN_TEXT_GAP_EM) * em;
            assert!(
                cta_top - head_bottom >= want - 0.2,
                "gap {gap}: {} px between headline and button, want {want}",
                cta_top - head_bottom
            );
            let ref_top = f64::from(bp.shapes[0].rect.y * 2160.0);
            assert_eq!(
                cta_top > ref_top + 1.0,
                moves,
                "gap {gap}: button at {cta_top}"
            );
            assert!(cta_bottom <= 2160.0 * 0.97 + 0.2, "{cta_bottom}");
            // A headline three times the reference's length fits its box (shrink-to-fit)
            // and no text box comes near another slot's.
            t["nodes"]["headline"]["characters"] = Value::from(
                "Our lightest, fastest and most comfortable running shoe yet, made for you",
            );
            let tree = adforge_renderer::Tree::from_value(t.clone()).unwrap();
            let report = renderer
                .render(
                    &tree,
                    &adforge_renderer::RenderOptions {
                        width: Some(540),
                        encode_png: false,
                    },
                )
                .unwrap()
                .report;
            assert!(
                !report.warnings.iter().any(|w| matches!(
                    w,
                    adforge_renderer::Warning::TextOverflow { .. }
                        | adforge_renderer::Warning::TextTruncated { .. }
                )),
                "gap {gap}: {:?}",
                report.warnings
            );
            assert!(
                report.warnings.iter().any(|w| matches!(
                    w,
                    adforge_renderer::Warning::TextShrunk { node, .. } if node == "headline"
                )),
                "gap {gap}: the long headline was not shrunk: {:?}",
                report.warnings
            );
            assert_eq!(crate::generate::quality::crowded_text(&t), None);
        }
        // The rule itself: a headline box that reaches into the button's air is reported.
        let mut t = template(&landscape(0.12));
        let (cta_top, _) = span(&t, "cta");
        let y = t["nodes"]["headline"]["y"].as_f64().unwrap();
        t["nodes"]["headline"]["height"] = Value::from(cta_top - y - 2.0);
        let why = crate::generate::quality::crowded_text(&t).unwrap();
        assert!(why.contains("headline") && why.contains("cta"), "{why}");
    }

    #[test]
    fn colours_map_to_palette_roles() {
        assert_eq!(role_for([255, 255, 255]), "background");
        assert_eq!(role_for([12, 12, 14]), "ink");
        assert_eq!(role_for([200, 30, 40]), "primary");
    }
}
