//! The [`Writer`] a template is written with: the blueprint's unit-square boxes as design
//! pixels (to tenths), the colour of a reference as paints, and the shape and text nodes
//! every step of [`super::template`] makes.

use adforge_renderer::tree::{NodeBuilder, TreeBuilder, paint};
use serde_json::Value;

use crate::blueprint::{Background, Blueprint, Rect, Rgb, Shape, TextBlock};

/// The whole canvas.
pub(super) const FULL: Rect = Rect {
    x: 0.0,
    y: 0.0,
    w: 1.0,
    h: 1.0,
};

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

/// Design pixels to tenths.
pub(super) fn round1(v: f32) -> f64 {
    (f64::from(v) * 10.0).round() / 10.0
}

/// A colour's channels in 0..1, to 3 decimals.
fn channels(c: Rgb) -> [f64; 3] {
    c.map(|v| (f64::from(v) / 255.0 * 1000.0).round() / 1000.0)
}

/// A colour of the reference as a tree colour.
pub(super) fn colour(c: Rgb) -> Value {
    paint::color(channels(c))
}

/// A colour of the reference as a SOLID paint.
pub(super) fn solid(c: Rgb) -> Value {
    paint::solid(channels(c))
}

/// The template being written.
pub(super) struct Writer<'a> {
    /// The blueprint, after [`super::make_room`].
    pub(super) bp: &'a Blueprint,
    /// Design size in pixels.
    pub(super) w: f32,
    pub(super) h: f32,
    /// The nodes so far.
    pub(super) tree: TreeBuilder,
    /// Whether each node gets a `name`: its slot (see [`super::sample_tree`]).
    pub(super) named: bool,
    /// The root's children so far, back to front.
    pub(super) children: Vec<String>,
    /// The box of the `text_scrim` behind the texts set on a photo ground, once written.
    pub(super) scrim: Option<Rect>,
}

impl<'a> Writer<'a> {
    /// A writer of `bp`'s template; `named` puts a `name` on every node.
    pub(super) fn new(bp: &'a Blueprint, named: bool) -> Self {
        Writer {
            bp,
            w: bp.width.max(1) as f32,
            h: bp.height.max(1) as f32,
            tree: TreeBuilder::new("root"),
            named,
            children: Vec::new(),
            scrim: None,
        }
    }

    /// A box in design pixels, to tenths: x, y, width, height.
    pub(super) fn px(&self, r: &Rect) -> (f64, f64, f64, f64) {
        (
            round1(r.x * self.w),
            round1(r.y * self.h),
            round1(r.w * self.w),
            round1(r.h * self.h),
        )
    }

    /// Adds a node under its slot id (with the `name` when named); `top` puts it among the
    /// root's children, in the order added (back to front).
    pub(super) fn add(&mut self, id: &str, node: NodeBuilder, top: bool) {
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

    /// A RECTANGLE (or ELLIPSE for a circle) over `r`, with its corner radius.
    pub(super) fn shape_node(&self, r: &Rect, shape: Shape) -> NodeBuilder {
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
    pub(super) fn backdrop_of(&self, r: &Rect, panels: &[(String, Rect)]) -> String {
        panels
            .iter()
            .rev()
            .find(|(_, p)| p.contains_center(r))
            .map(|(id, _)| id.clone())
            .unwrap_or_else(|| self.ground_id().to_owned())
    }

    /// The id of the ground's node.
    pub(super) fn ground_id(&self) -> &'static str {
        match self.bp.background {
            Background::Photo { .. } => "photo",
            _ => "background",
        }
    }

    /// A TEXT node of `slot` over `r`, at the block's size with shrink-to-fit, whose copy
    /// role is `role` ([`crate::blueprint::TextRole::key`]), set on the node `on`; `vcenter`
    /// centres it vertically (button and badge labels). Besides `$text` (the role) it keeps
    /// what the copywriter follows: `$words` (the reference's words, when read), `$case`
    /// and `$lines` (the reference's line count).
    pub(super) fn text_node(
        &self,
        t: &TextBlock,
        r: &Rect,
        slot: &str,
        role: &str,
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
            .set("characters", placeholder(role))
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
        if role == "compare_at_price" {
            n = n.set("textDecoration", "STRIKETHROUGH");
        }
        let case = t
            .words
            .as_deref()
            .and_then(crate::blueprint::words::casing)
            .or(t.upper.then_some(crate::blueprint::words::Casing::Upper));
        if let Some(c) = case {
            n = n.set("$case", c.key());
        }
        if let Some(w) = &t.words {
            n = n.set("$words", w.as_str());
        }
        let heading = matches!(role, "headline" | "offer" | "price" | "stat" | "quote");
        n.fills([solid(t.color)])
            .set("$text", role)
            .set("$lines", t.lines)
            .set("$on", on)
            .set("$font", if heading { "heading" } else { "body" })
    }
}
fn placeholder(role: &str) -> &'static str {
    match role {
        "headline" => "Your headline goes here",
        "supporting" => "A line or two of supporting copy about the product.",
        "eyebrow" | "badge_label" => "NEW",
        "cta" => "Shop now",
        "offer" => "-20%",
        "price" => "$24",
        "compare_at_price" => "$32",
        "quote" => "\u{201c}A customer's words about the product.\u{201d}",
        "quote_author" => "A customer",
        "rating" => "\u{2605}\u{2605}\u{2605}\u{2605}\u{2605}",
        "list_item" => "A benefit of the product",
        "stat" => "16 cups",
        _ => "Text",
    }
}
