//! The steps of [`super::template`], one per kind of slot, in the order the nodes are
//! written: that order is the `nodes` map's order and the root's `children` (back to
//! front), so it is part of the output.

use adforge_renderer::tree::{NodeBuilder, paint};
use serde_json::Value;

use super::place::logo_column;
use super::room::{grow_to_share, inset};
use super::writer::{FULL, Writer, colour, role_for, round1, solid};
use crate::blueprint::{
    Align, Background, GroundShadow, MIN_PRODUCT_SHARE, Rect, Shape, ShapeRole, TextBlock, TextRole,
};

/// The slot of the scrim behind texts set on a photo ground ([`Writer::text_scrim`]).
pub const TEXT_SCRIM: &str = "text_scrim";

/// How dark the text scrim starts (black at this opacity), before the contrast pass.
const SCRIM_ALPHA: f64 = 0.55;

/// How far the text scrim fades out beyond the copy, in the canvas's height.
const SCRIM_FADE: f32 = 0.12;

/// A panel's slot id and box.
pub(super) type Panel = (String, Rect);

/// The blocks drawn as free text boxes, in the blueprint's order: every role but body copy,
/// the button's label and the badge's label.
pub(super) fn free_blocks(bp: &crate::blueprint::Blueprint) -> Vec<&TextBlock> {
    let inside = |role: ShapeRole, t: &TextBlock| {
        bp.shape(role)
            .is_some_and(|s| s.rect.contains_center(&t.rect))
    };
    bp.texts
        .iter()
        .filter(|t| t.role.drawn_free())
        .filter(|t| !(t.role == TextRole::Cta && inside(ShapeRole::Button, t)))
        .filter(|t| !inside(ShapeRole::Badge, t))
        .filter(|t| !wordmark(bp, t))
        .collect()
}

/// Whether `t` is the brand's wordmark read as a line of text: a supporting line or an
/// eyebrow whose centre lies in the logo's box (the logo slot shows the brand there; new
/// copy over it would overprint the logo).
fn wordmark(bp: &crate::blueprint::Blueprint, t: &TextBlock) -> bool {
    matches!(t.role, TextRole::Supporting | TextRole::Eyebrow)
        && bp.logo.is_some_and(|l| l.contains_center(&t.rect))
}

/// The slot id of the next block of `role`: the role itself, `<role>_2` for a second one,
/// and `list_item_1`, `list_item_2`, … for list items.
fn slot_id(role: &str, used: &[String]) -> String {
    if role == "list_item" {
        let n = used.iter().filter(|u| u.starts_with("list_item_")).count();
        return format!("list_item_{}", n + 1);
    }
    if !used.iter().any(|u| u == role) {
        return role.to_owned();
    }
    (2..)
        .map(|k| format!("{role}_{k}"))
        .find(|id| !used.contains(id))
        .unwrap_or_else(|| role.to_owned())
}

impl Writer<'_> {
    /// The ground: `background` (solid or gradient, with its palette roles) or `photo`
    /// (the product image fills the canvas).
    pub(super) fn ground(&mut self) {
        let ground = self.shape_node(&FULL, Shape::Rectangle);
        match &self.bp.background {
            Background::Solid { color } => {
                let ground = ground.fills([solid(*color)]).set("$fill", role_for(*color));
                self.add("background", ground, true);
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
                self.add("background", ground, true);
            }
            Background::Photo { mean } => {
                let ground = ground.fills([solid(*mean)]).set("$image", "product");
                self.add("photo", ground, true);
            }
        }
    }

    /// The panels (bands, cards): `panel_1`, `panel_2`, … Returns them, for the texts and
    /// the logo set on them.
    pub(super) fn panels(&mut self) -> Vec<Panel> {
        let mut panels = Vec::new();
        let bp = self.bp;
        for (i, s) in bp
            .shapes
            .iter()
            .filter(|s| s.role == ShapeRole::Panel)
            .enumerate()
        {
            let id = format!("panel_{}", i + 1);
            let n = self
                .shape_node(&s.rect, s.shape)
                .fills([solid(s.color)])
                .set("$fill", role_for(s.color));
            self.add(&id, n, true);
            panels.push((id, s.rect));
        }
        panels
    }

    /// The `product_image` slot on a plain ground: the largest image region, grown to
    /// [`MIN_PRODUCT_SHARE`]. Returns its box.
    ///
    /// A cut-out product's slot (`$cutout`) is filled with the product cut out of its photo
    /// when that works; its rounded corners are what the slot falls back to, the photo
    /// filling the slot edge to edge (a photo on its own ground would be letterboxed to a
    /// sliver of the slot by `FIT`). When the reference's product stands on a ground
    /// shadow, a `product_shadow` (a blurred ellipse, `$shadow` saying where it sits
    /// relative to the product) goes behind it, drawn only with a cut-out.
    pub(super) fn product_image(&mut self) -> Option<Rect> {
        let img = match self.bp.background {
            Background::Photo { .. } => None,
            _ => self.bp.images.first(),
        }?;
        let rect = grow_to_share(img.rect, MIN_PRODUCT_SHARE);
        let mut n = self
            .shape_node(&rect, img.shape)
            .fills([solid([204, 204, 204])])
            .set("$image", "product");
        if img.cutout {
            let (w, h) = (self.w, self.h);
            n = n
                .set(
                    "cornerRadius",
                    round1(rect.w.min(rect.h * h / w) * w * 0.06),
                )
                .set("$cutout", true);
            if let Some(shadow) = img.shadow {
                self.product_shadow(&img.rect, &rect, &shadow);
            }
        }
        self.add("product_image", n, true);
        Some(rect)
    }

    /// The `product_shadow` under a cut-out product: the reference's shadow measured
    /// against its product (`product`), placed the same way under the slot (`slot`). Its
    /// `$shadow` keeps the measure (in the product's width: `w`, `h`, `dx` of the centre
    /// from the product's centre; `dy` of the centre below the product's bottom, in the
    /// shadow's height) for filling to place it under the cut-out as drawn.
    fn product_shadow(&mut self, product: &Rect, slot: &Rect, shadow: &GroundShadow) {
        // Unit-square sizes in design pixels, so ratios hold on any aspect.
        let pw = product.w * self.w;
        let (sw, sh) = (shadow.rect.w * self.w, shadow.rect.h * self.h);
        let (scx, scy) = (
            shadow.rect.center().0 * self.w,
            shadow.rect.center().1 * self.h,
        );
        let ratios = serde_json::json!({
            "w": round3(sw / pw.max(1.0)),
            "h": round3(sh / pw.max(1.0)),
            "dx": round3((scx - product.center().0 * self.w) / pw.max(1.0)),
            "dy": round3((scy - product.bottom() * self.h) / sh.max(1.0)),
            "strength": shadow.strength,
        });
        let placed = shadow_box(slot, self.w, self.h, &ratios);
        let n = shadow_node(placed, shadow.strength).set("$shadow", ratios);
        self.add("product_shadow", n, true);
    }

    /// The `badge` and its `badge_label` (the reference's block inside the badge, or one
    /// filling it); the label's copy role is its block's (an offer unless its words said
    /// otherwise).
    pub(super) fn badge(&mut self) {
        let Some(s) = self.bp.shape(ShapeRole::Badge) else {
            return;
        };
        let n = self
            .shape_node(&s.rect, s.shape)
            .fills([solid(s.color)])
            .set("$fill", "accent");
        self.add("badge", n, true);
        let label = self
            .bp
            .texts
            .iter()
            .find(|t| t.role != TextRole::Body && s.rect.contains_center(&t.rect))
            .cloned()
            .unwrap_or(TextBlock {
                role: TextRole::Offer,
                rect: s.rect,
                lines: 1,
                line_height: s.rect.h * 0.3,
                align: Align::Center,
                color: [255, 255, 255],
                weight: 700,
                upper: true,
                words: None,
            });
        let inset = inset(&s.rect, 0.15);
        let mut t = label.clone();
        t.align = Align::Center;
        let node = self.text_node(&t, &inset, "badge_label", t.role.key(), "badge", true);
        self.add("badge_label", node, true);
    }

    /// The `cta` button: a frame holding its `cta_label`. Returns its box.
    pub(super) fn button(&mut self) -> Option<Rect> {
        let s = self.bp.shape(ShapeRole::Button)?;
        let (x, y, bw, bh) = self.px(&s.rect);
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
        self.add("cta", frame.children(["cta_label"]), true);
        let label = self
            .bp
            .texts
            .iter()
            .find(|t| t.role == TextRole::Cta && s.rect.contains_center(&t.rect))
            .cloned()
            .unwrap_or(TextBlock {
                role: TextRole::Cta,
                rect: s.rect,
                lines: 1,
                line_height: s.rect.h * 0.35,
                align: Align::Center,
                color: [255, 255, 255],
                weight: 600,
                upper: false,
                words: None,
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
        let node = self.text_node(&t, &local, "cta_label", "cta", "cta", true);
        self.add("cta_label", node, false);
        Some(s.rect)
    }

    /// The free text boxes (every block but body copy and the labels of the button and
    /// the badge): `headline`, `supporting`, `eyebrow`, `price`, `offer`, `quote`, …, a
    /// second block of one role `<role>_2`, list items `list_item_1`, `list_item_2`, … Each
    /// is widened into the free space of its panel (or the canvas) away from `occupied`
    /// boxes, the other blocks, buttons, badges and the logo. Returns the boxes placed.
    pub(super) fn text_blocks(&mut self, panels: &[Panel], occupied: &[Rect]) -> Vec<Rect> {
        let bp = self.bp;
        let mut placed: Vec<Rect> = Vec::new();
        let blocks = free_blocks(bp);
        let mut used: Vec<String> = Vec::new();
        // The texts set straight on a photo ground: a scrim goes behind them.
        let mut on_photo: Vec<(String, Rect)> = Vec::new();
        for (i, t) in blocks.iter().enumerate() {
            let role = t.role.key();
            // A call to action set as a line of text (no button) is `cta_text`: `cta` is the
            // button's frame.
            let slot = if t.role == TextRole::ListItem {
                // List items are numbered top to bottom.
                let rank = blocks
                    .iter()
                    .filter(|o| {
                        o.role == TextRole::ListItem && (o.rect.y, o.rect.x) < (t.rect.y, t.rect.x)
                    })
                    .count();
                format!("list_item_{}", rank + 1)
            } else {
                slot_id(if role == "cta" { "cta_text" } else { role }, &used)
            };
            used.push(slot.clone());
            let others: Vec<Rect> = blocks
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, o)| o.rect)
                .chain(occupied.iter().copied())
                .chain(
                    bp.shapes
                        .iter()
                        .filter(|s| s.role != ShapeRole::Panel)
                        .map(|s| s.rect),
                )
                .chain(bp.logo)
                .collect();
            let on = self.backdrop_of(&t.rect, panels);
            let container = panels
                .iter()
                .find(|(id, _)| *id == on)
                .map(|p| p.1)
                .unwrap_or(FULL);
            let r = self.widen(t, &others, container);
            placed.push(r);
            let on = if on == "photo" {
                on_photo.push((slot.clone(), r));
                TEXT_SCRIM.to_owned()
            } else {
                on
            };
            let node = self.text_node(t, &r, &slot, role, &on, false);
            self.add(&slot, node, true);
        }
        self.text_scrim(&on_photo);
        placed
    }

    /// The `text_scrim` behind the texts set on a photo ground (`on_photo`: their slots
    /// and boxes), painted just under the first of them: a dark band across the canvas
    /// over their extent and a little air, fading out towards the photo where it does not
    /// reach the canvas's edge. The ad's photo is not the reference's, so whether or not
    /// the reference darkened its photo, light copy on a darkened band is what keeps it
    /// legible on any photo; the contrast pass darkens the band further where it must
    /// ([`crate::generate::fill::strengthen`]), and the fill sets the texts on it light.
    fn text_scrim(&mut self, on_photo: &[(String, Rect)]) {
        let Some(first) = on_photo.first() else {
            return;
        };
        let (top, bottom) = on_photo.iter().fold((1.0f32, 0.0f32), |(t, b), (_, r)| {
            (t.min(r.y), b.max(r.bottom()))
        });
        // Fully dark over the copy and a little air (5 % of the canvas's short side), then
        // fading out over 12 % of the height; a band that comes near an edge runs to it
        // (no sliver of bare photo).
        let pad = 0.05 * self.w.min(self.h) / self.h;
        let (core0, core1) = ((top - pad).max(0.0), (bottom + pad).min(1.0));
        let (mut y0, mut y1) = (core0 - SCRIM_FADE, core1 + SCRIM_FADE);
        if y0 < 0.06 {
            y0 = 0.0;
        }
        if y1 > 0.94 {
            y1 = 1.0;
        }
        let band = Rect {
            x: 0.0,
            y: y0,
            w: 1.0,
            h: (y1 - y0).max(0.01),
        };
        let (at_top, at_bottom) = (y0 <= 0.0, y1 >= 1.0);
        let dark = |a: f64| {
            let mut c = paint::color([0.0, 0.0, 0.0]);
            c["a"] = serde_json::json!(a);
            c
        };
        let at = |y: f32| round3(((y - y0) / band.h).clamp(0.0, 1.0));
        let mut stops = Vec::new();
        if at_top {
            stops.push(paint::stop(0, dark(SCRIM_ALPHA)));
        } else {
            stops.push(paint::stop(0, dark(0.0)));
            stops.push(paint::stop(at(core0), dark(SCRIM_ALPHA)));
        }
        if at_bottom {
            stops.push(paint::stop(1, dark(SCRIM_ALPHA)));
        } else {
            stops.push(paint::stop(at(core1), dark(SCRIM_ALPHA)));
            stops.push(paint::stop(1, dark(0.0)));
        }
        use paint::point;
        let node = self
            .shape_node(&band, Shape::Rectangle)
            .fills([paint::linear_gradient(
                [point(0.5, 0), point(0.5, 1), point(0, 0)],
                stops,
            )])
            .set("$scrim", true);
        let at = self
            .children
            .iter()
            .position(|c| *c == first.0)
            .unwrap_or(self.children.len());
        self.add(TEXT_SCRIM, node, false);
        self.children.insert(at, TEXT_SCRIM.to_owned());
        self.scrim = Some(band);
    }

    /// The `logo` box: a little taller than the reference's wordmark, aligned as it was, or
    /// spanning the text column it heads (`placed`: the text boxes).
    pub(super) fn logo(&mut self, panels: &[Panel], placed: &[Rect]) {
        let bp = self.bp;
        let Some(logo) = bp.logo else {
            return;
        };
        let (x, y, lw, lh) = self.px(&logo);
        // A logo box a little taller than the wordmark the reference shows.
        let lh2 = (lh * 1.4).max(f64::from(self.h) * 0.03);
        let r1 = |v: f64| round1(v as f32);
        let on = match self.scrim {
            Some(band) if band.contains_center(&logo) && self.ground_id() == "photo" => {
                TEXT_SCRIM.to_owned()
            }
            _ => self.backdrop_of(&logo, panels),
        };
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
        if let Some((col, col_align)) = logo_column(&logo, placed, &blockers) {
            // The logo heads a text column: its box spans the column and lines up with it,
            // so a wordmark sits on one line over the headline's edge (or centre).
            let (cx, _, cw, _) = self.px(&col);
            n = n
                .set("x", r1(cx))
                .set("width", r1(cw))
                .set("$align", col_align);
        }
        self.add("logo", n, true);
    }

    /// The `root` frame at the design size, holding every top-level slot, and the tree.
    pub(super) fn finish(mut self) -> Value {
        let bp = self.bp;
        let root = NodeBuilder::new("FRAME")
            .bounds(0, 0, bp.width, bp.height)
            .set("clipsContent", true)
            .fills([solid(bp.background.mean())])
            .children(std::mem::take(&mut self.children));
        self.add("root", root, false);
        self.tree.build()
    }
}

fn round3(v: f32) -> f64 {
    (f64::from(v) * 1000.0).round() / 1000.0
}

/// Where a ground shadow with `ratios` (see [`Writer::product_shadow`]) sits under a
/// product drawn over `product` (unit square of a `w` x `h` design): `[x, y, width,
/// height]` in design pixels.
pub fn shadow_box(product: &Rect, w: f32, h: f32, ratios: &Value) -> [f64; 4] {
    let r = |k: &str| ratios.get(k).and_then(Value::as_f64).unwrap_or(0.0) as f32;
    let pw = product.w * w;
    let (sw, sh) = (r("w") * pw, r("h") * pw);
    let cx = product.center().0 * w + r("dx") * pw;
    let cy = product.bottom() * h + r("dy") * sh;
    [
        round1(cx - sw / 2.0),
        round1(cy - sh / 2.0),
        round1(sw),
        round1(sh),
    ]
}

/// The ellipse of a ground shadow whose soft extent is `[x, y, width, height]`: its core
/// (inset by the blur, which spreads it back out) and its blur radius, in design pixels.
pub fn shadow_core([x, y, w, h]: [f64; 4]) -> ([f64; 4], f64) {
    let blur = (h * 0.3).max(1.0);
    let (iw, ih) = ((w - 1.4 * blur).max(w * 0.5), (h - 1.4 * blur).max(h * 0.4));
    let r = |v: f64| (v * 10.0).round() / 10.0;
    (
        [r(x + (w - iw) / 2.0), r(y + (h - ih) / 2.0), r(iw), r(ih)],
        r(blur),
    )
}

/// A blurred black ellipse over a ground shadow's extent, as dark as the reference's.
fn shadow_node(extent: [f64; 4], strength: f32) -> NodeBuilder {
    let ([x, y, w, h], blur) = shadow_core(extent);
    let mut fill = paint::solid([0.0, 0.0, 0.0]);
    fill["opacity"] = serde_json::json!(shadow_opacity(strength));
    NodeBuilder::new("ELLIPSE")
        .bounds(x, y, w, h)
        .fills([fill])
        .set(
            "effects",
            serde_json::json!([{"type": "LAYER_BLUR", "radius": blur, "visible": true}]),
        )
}

/// The opacity of a black shadow core that darkens the ground by `strength` once blurred.
pub fn shadow_opacity(strength: f32) -> f64 {
    round3((strength * 1.15).clamp(0.08, 0.7))
}
