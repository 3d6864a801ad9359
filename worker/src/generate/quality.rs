//! The rules an ad built on a reference's blueprint must keep before it is accepted, judged
//! on the renderer's report of the final preflight render:
//!
//! - no text that overflows its box or was truncated ([`Warning::TextOverflow`],
//!   [`Warning::TextTruncated`]);
//! - no text under 4.5:1 against the pixels really behind it ([`Warning::LowContrast`];
//!   the renderer applies 4.5:1 to all text, stricter than WCAG's 3:1 for large text);
//! - the output's aspect ratio within 3 % of the reference's;
//! - every text box inside the margins ([`text_margin`]): at least [`TEXT_MARGIN`] of the
//!   canvas's short side (4 %) from each edge, so the words, as written or as edited later,
//!   never run to the edge; the template keeps it ([`crate::blueprint::template`]), the
//!   library's layouts are drawn inside it, and this rule catches what those could not;
//! - the product image (when the ad has one) covering at least
//!   [`MIN_PRODUCT_SHARE`] of the canvas;
//! - no text box that overlaps or nearly touches another slot's box ([`crowded_text`]):
//!   at least [`MIN_CHECKED_GAP_EM`] of the text's font size above or below a box in the
//!   same column, [`SIDE_GAP_EM`] from a box beside it. The template keeps more
//!   ([`crate::blueprint::template::MIN_TEXT_GAP_EM`]); this rule catches what that could not.
//!
//! - the brand's logo, when it is an image ([`logo_rule`], measured by [`measure_logo_ink`]
//!   on the pixels of the check render): its mark at least [`MIN_LOGO_HEIGHT`] of the
//!   canvas tall or [`MIN_LOGO_WIDTH`] wide, and **every part of its ink** (a disc, a
//!   wordmark beside it: [`super::ink`]) at least [`MIN_LOGO_CONTRAST`] (3:1, WCAG 1.4.11's
//!   ratio for graphics) against what surrounds that part as drawn: the ground, a plate,
//!   or another part it sits on. The check render is drawn twice, with and without the
//!   logo: the pixels the logo changes are its mark (its size), and the other render holds
//!   what is behind it, photo, solid or plate alike. The parts come from the logo's own
//!   pixels, not from what changed: a wordmark in the ground's colour changes nothing, and
//!   judging only what changed passed a logo whose wordmark had vanished (issue 39). An SVG
//!   logo (not decoded) is judged on the median pixel of the mark. A wordmark (the brand's
//!   name set as text, when no logo reads even on a plate) is text, and the text rules
//!   above cover it.

use adforge_renderer::{RenderReport, Tree, Warning};
use serde_json::Value;

use super::analyse::luminance;
use super::ink::{LogoInk, PartContrast, least};
use crate::blueprint::{Blueprint, MIN_PRODUCT_SHARE};

pub use super::fill::MIN_LOGO_CONTRAST;

/// Least height of a logo's mark, as a share of the canvas height (unless it is at least
/// [`MIN_LOGO_WIDTH`] wide): under it the brand does not read.
pub const MIN_LOGO_HEIGHT: f32 = 0.02;

/// Least width of a logo's mark, as a share of the canvas width (unless it is at least
/// [`MIN_LOGO_HEIGHT`] tall).
pub const MIN_LOGO_WIDTH: f32 = 0.10;

/// Least air between a text box and another slot's box above or below it in the same column,
/// in the text's largest font size (em); less counts as touching.
pub const MIN_CHECKED_GAP_EM: f32 = 0.25;

/// Least air between a text box and a box beside it (their spans overlap top to bottom), in
/// the same em.
pub const SIDE_GAP_EM: f32 = 0.1;

/// Largest relative difference between the ad's and the reference's aspect ratios.
pub const MAX_ASPECT_ERROR: f32 = 0.03;

/// Least distance from a text box to each edge of the canvas, as a share of the canvas's
/// short side (4 %: 43 px of a 1080 px square, 154 px at 4K). A share of the canvas, so it
/// holds at every size an ad is rendered at.
pub const TEXT_MARGIN: f32 = 0.04;

/// `Ok` when the ad keeps every rule; else the first rule it breaks, in words. `logo` is
/// the measure of its image logo ([`measure_logo`]), `None` when it shows none.
///
/// # Errors
/// The broken rule.
pub fn check(
    tree: &Tree,
    report: &RenderReport,
    bp: &Blueprint,
    logo: Option<&LogoMeasure>,
) -> Result<(), String> {
    let want = bp.source_width.max(1) as f32 / bp.source_height.max(1) as f32;
    check_shape(tree, report, want, logo)
}

/// [`check`] for an ad of aspect `want` (width ÷ height): a size of a campaign set is
/// judged at its own shape, not its reference's.
///
/// # Errors
/// The broken rule.
pub fn check_shape(
    tree: &Tree,
    report: &RenderReport,
    want: f32,
    logo: Option<&LogoMeasure>,
) -> Result<(), String> {
    for w in &report.warnings {
        match w {
            Warning::TextOverflow { node, .. } => {
                return Err(format!("text {node} does not fit its box"));
            }
            Warning::TextTruncated { node, .. } => {
                return Err(format!("text {node} was truncated"));
            }
            Warning::LowContrast { node, ratio } => {
                return Err(format!("text {node} has contrast {ratio}:1"));
            }
            _ => {}
        }
    }
    let got = report.width.max(1) as f32 / report.height.max(1) as f32;
    if (got / want - 1.0).abs() > MAX_ASPECT_ERROR {
        return Err(format!(
            "aspect {got:.3} differs from the reference's {want:.3}"
        ));
    }
    if let Some(why) = crowded_text(tree.as_value()) {
        return Err(why);
    }
    if let Some(why) = text_margin(tree.as_value()) {
        return Err(why);
    }
    let share = product_share(tree.as_value());
    if let Some(share) = share
        && share < MIN_PRODUCT_SHARE
    {
        return Err(format!(
            "the product image covers {:.1} % of the canvas (at least {:.0} %)",
            share * 100.0,
            MIN_PRODUCT_SHARE * 100.0
        ));
    }
    if let Some(m) = logo {
        logo_rule(m)?;
    }
    Ok(())
}

/// An RGBA view of a render (premultiplied, as the renderer's canvas; an ad's canvas is
/// opaque, so the values are the colours).
#[derive(Debug, Clone, Copy)]
pub struct Pixels<'a> {
    pub width: u32,
    pub height: u32,
    pub rgba: &'a [u8],
}

impl Pixels<'_> {
    fn at(&self, x: u32, y: u32) -> [u8; 3] {
        let i = ((y * self.width + x) * 4) as usize;
        match self.rgba.get(i..i + 3) {
            Some(p) => [p[0], p[1], p[2]],
            None => [0, 0, 0],
        }
    }
}

/// The brand's logo as the check render shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct LogoMeasure {
    /// The logo node's id.
    pub node: String,
    /// WCAG contrast of the mark against what is behind it: its weakest part's
    /// ([`LogoMeasure::parts`]) when its ink is known, else the median over the mark's
    /// pixels of each pixel's ratio (1.0 when nothing of the logo shows).
    pub contrast: f32,
    /// The mark's extent (the pixels it changes) as shares of the canvas's width and height.
    pub width: f32,
    pub height: f32,
    /// The median colour behind the logo's box (what a better-reading variant is chosen
    /// against).
    pub ground: [u8; 3],
    /// Each part of the logo's ink and its contrast against what surrounds it as drawn;
    /// empty when the ink is not known (an SVG).
    pub parts: Vec<PartContrast>,
}

/// Measures the logo drawn in `bbox` (`x, y, width, height` in output pixels) from the
/// same render `with` and `without` it.
///
/// A pixel belongs to the mark when the logo changes it (a channel by more than 6 of 255);
/// the contrast is taken over its core, the pixels changed by at least half the most any
/// pixel changed (anti-aliased edges left out).
pub fn measure_logo(
    node: &str,
    with: Pixels<'_>,
    without: Pixels<'_>,
    bbox: [f32; 4],
) -> LogoMeasure {
    let (w, h) = (
        with.width.min(without.width),
        with.height.min(without.height),
    );
    let x0 = (bbox[0].max(0.0).floor() as u32).min(w);
    let y0 = (bbox[1].max(0.0).floor() as u32).min(h);
    let x1 = ((bbox[0] + bbox[2]).ceil().max(0.0) as u32).min(w);
    let y1 = ((bbox[1] + bbox[3]).ceil().max(0.0) as u32).min(h);
    let mut changed: Vec<(u32, u32, u8)> = Vec::new();
    let mut ground: Vec<[u8; 3]> = Vec::new();
    for y in y0..y1 {
        for x in x0..x1 {
            let (a, b) = (with.at(x, y), without.at(x, y));
            ground.push(b);
            let d = (0..3).map(|k| a[k].abs_diff(b[k])).max().unwrap_or(0);
            if d > 6 {
                changed.push((x, y, d));
            }
        }
    }
    let ground = median_colour(&mut ground);
    let (cw, ch) = (w.max(1) as f32, h.max(1) as f32);
    if changed.is_empty() {
        return LogoMeasure {
            node: node.to_owned(),
            contrast: 1.0,
            width: 0.0,
            height: 0.0,
            ground,
            parts: Vec::new(),
        };
    }
    let (mut lx, mut ly, mut hx, mut hy) = (u32::MAX, u32::MAX, 0, 0);
    for &(x, y, _) in &changed {
        (lx, ly, hx, hy) = (lx.min(x), ly.min(y), hx.max(x), hy.max(y));
    }
    let most = changed.iter().map(|c| c.2).max().unwrap_or(0);
    let mut ratios: Vec<f32> = changed
        .iter()
        .filter(|c| u16::from(c.2) * 2 >= u16::from(most))
        .map(|&(x, y, _)| {
            let (a, b) = (luminance(with.at(x, y)), luminance(without.at(x, y)));
            (a.max(b) + 0.05) / (a.min(b) + 0.05)
        })
        .collect();
    ratios.sort_by(f32::total_cmp);
    LogoMeasure {
        node: node.to_owned(),
        contrast: ratios[ratios.len() / 2],
        width: (hx + 1 - lx) as f32 / cw,
        height: (hy + 1 - ly) as f32 / ch,
        ground,
        parts: Vec::new(),
    }
}

/// [`measure_logo`], with every part of the logo's `ink` judged against what surrounds it
/// as drawn: the image (width over height `aspect`) fitted whole and centred in `bbox` (the
/// renderer's `FIT`), over the pixels of `without` (what is behind the logo: the ground, a
/// plate). The contrast is the weakest part's.
pub fn measure_logo_ink(
    node: &str,
    with: Pixels<'_>,
    without: Pixels<'_>,
    bbox: [f32; 4],
    ink: &LogoInk,
    aspect: f32,
) -> LogoMeasure {
    let mut m = measure_logo(node, with, without, bbox);
    let [bx, by, bw, bh] = bbox;
    let aspect = aspect.max(1e-3);
    let (dw, dh) = if aspect > bw / bh.max(1e-3) {
        (bw, bw / aspect)
    } else {
        (bh * aspect, bh)
    };
    let (ox, oy) = (bx + (bw - dw) / 2.0, by + (bh - dh) / 2.0);
    let (mx, my) = (
        without.width.saturating_sub(1) as f32,
        without.height.saturating_sub(1) as f32,
    );
    let ground = |u: f32, v: f32| {
        let x = (ox + u * dw).clamp(0.0, mx) as u32;
        let y = (oy + v * dh).clamp(0.0, my) as u32;
        without.at(x, y)
    };
    m.parts = ink.contrasts(&ground);
    let weakest = least(&m.parts);
    if weakest.is_finite() && m.width > 0.0 {
        m.contrast = weakest;
    }
    m
}

/// The logo rules (see the module docs).
///
/// # Errors
/// The broken rule, in words.
pub fn logo_rule(m: &LogoMeasure) -> Result<(), String> {
    if m.width == 0.0 {
        return Err(format!(
            "the logo {} does not show: nothing of it differs from what is behind it",
            m.node
        ));
    }
    if m.height < MIN_LOGO_HEIGHT && m.width < MIN_LOGO_WIDTH {
        return Err(format!(
            "the logo {} is {:.1} % of the canvas tall and {:.1} % wide (at least {:.0} % tall or {:.0} % wide)",
            m.node,
            m.height * 100.0,
            m.width * 100.0,
            MIN_LOGO_HEIGHT * 100.0,
            MIN_LOGO_WIDTH * 100.0
        ));
    }
    if m.width > 0.0
        && let Some(p) = m
            .parts
            .iter()
            .find(|p| p.contrast.is_some_and(|c| c < MIN_LOGO_CONTRAST))
    {
        let [r, g, b] = p.colour;
        return Err(format!(
            "part of the logo {} does not read: its ink #{r:02X}{g:02X}{b:02X} ({:.0} % of the mark) has contrast {:.2}:1 against what surrounds it (every part needs at least {MIN_LOGO_CONTRAST}:1)",
            m.node,
            p.share * 100.0,
            p.contrast.unwrap_or(1.0)
        ));
    }
    if m.contrast < MIN_LOGO_CONTRAST {
        return Err(format!(
            "the logo {} has contrast {:.2}:1 against what is behind it (at least {MIN_LOGO_CONTRAST}:1)",
            m.node, m.contrast
        ));
    }
    Ok(())
}

/// The median of `colours`, channel by channel (white when there are none).
fn median_colour(colours: &mut [[u8; 3]]) -> [u8; 3] {
    if colours.is_empty() {
        return [255, 255, 255];
    }
    let mut out = [0u8; 3];
    for (k, o) in out.iter_mut().enumerate() {
        colours.sort_unstable_by_key(|c| c[k]);
        *o = colours[colours.len() / 2][k];
    }
    out
}

/// The share of the canvas covered by the largest visible node with an image fill other
/// than the logo; `None` when the ad shows no product image.
pub fn product_share(tree: &Value) -> Option<f32> {
    let nodes = tree.get("nodes")?.as_object()?;
    let root = tree.get("root").and_then(Value::as_str)?;
    let num = |n: &Value, k: &str| n.get(k).and_then(Value::as_f64).unwrap_or(0.0) as f32;
    let canvas = num(&nodes[root], "width") * num(&nodes[root], "height");
    nodes
        .values()
        .filter(|n| n.get("visible") != Some(&Value::Bool(false)))
        .filter(|n| n.get("name").and_then(Value::as_str) != Some("Logo"))
        .filter(|n| {
            n.get("fills")
                .and_then(Value::as_array)
                .is_some_and(|f| f.iter().any(|p| p["type"] == "IMAGE"))
        })
        .map(|n| num(n, "width") * num(n, "height") / canvas.max(1.0))
        .fold(None, |a: Option<f32>, s| Some(a.map_or(s, |a| a.max(s))))
}

/// The first visible text box that crosses the margin ([`TEXT_MARGIN`] of the canvas's
/// short side from each edge, half a pixel allowed for rounding), in words; `None` when
/// every text keeps it.
pub fn text_margin(tree: &Value) -> Option<String> {
    let nodes = tree.get("nodes")?.as_object()?;
    let root = nodes.get(tree.get("root")?.as_str()?)?;
    let num = |k: &str| root.get(k).and_then(Value::as_f64).unwrap_or(0.0) as f32;
    let (w, h) = (num("width"), num("height"));
    let m = TEXT_MARGIN * w.min(h);
    placed(tree)
        .iter()
        .filter(|t| t.text && t.w > 0.0 && t.h > 0.0)
        .find_map(|t| {
            let (edge, air) = [
                ("left", t.x),
                ("top", t.y),
                ("right", w - (t.x + t.w)),
                ("bottom", h - (t.y + t.h)),
            ]
            .into_iter()
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
            (air < m - 0.5).then(|| {
                format!(
                    "text {} is {:.0} px from the {edge} edge (at least {:.0} px, {:.0} % of the short side)",
                    t.name,
                    air,
                    m,
                    TEXT_MARGIN * 100.0
                )
            })
        })
}

/// A visible node's box in canvas coordinates.
struct Placed {
    /// Its `name`, else its id.
    name: String,
    text: bool,
    /// Largest font size of a text (its shrink-to-fit maximum, else its size).
    em: f32,
    x: f32,
    y: f32,
    w: f32,
    h: f32,
    /// Blurred all over (`LAYER_BLUR`, a product's ground shadow): no edge for text to keep
    /// clear of.
    soft: bool,
}

/// Every visible node below the root, with its box in canvas coordinates (children of a
/// frame are placed in the frame's coordinates).
fn placed(tree: &Value) -> Vec<Placed> {
    let mut out = Vec::new();
    let (Some(nodes), Some(root)) = (
        tree.get("nodes").and_then(Value::as_object),
        tree.get("root").and_then(Value::as_str),
    ) else {
        return out;
    };
    let num = |n: &Value, k: &str| n.get(k).and_then(Value::as_f64).unwrap_or(0.0) as f32;
    let kids = |n: &Value| -> Vec<String> {
        n.get("children")
            .and_then(Value::as_array)
            .map(|c| {
                c.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    // (node id, parent's origin), depth first; a depth bound guards against cycles.
    let mut stack: Vec<(String, f32, f32, usize)> = kids(&nodes[root])
        .into_iter()
        .map(|c| (c, 0.0, 0.0, 0))
        .collect();
    while let Some((id, ox, oy, depth)) = stack.pop() {
        let Some(n) = nodes.get(&id) else { continue };
        if n.get("visible") == Some(&Value::Bool(false)) || depth > 32 {
            continue;
        }
        let (x, y) = (ox + num(n, "x"), oy + num(n, "y"));
        let text = n.get("type").and_then(Value::as_str) == Some("TEXT");
        let em = n
            .get("textFit")
            .and_then(|f| f.get("maxFontSize"))
            .and_then(Value::as_f64)
            .map_or_else(|| num(n, "fontSize"), |v| v as f32);
        out.push(Placed {
            name: n
                .get("name")
                .and_then(Value::as_str)
                .map_or_else(|| id.clone(), str::to_owned),
            text,
            em,
            x,
            y,
            w: num(n, "width"),
            h: num(n, "height"),
            soft: n
                .get("effects")
                .and_then(Value::as_array)
                .is_some_and(|e| e.iter().any(|e| e["type"] == "LAYER_BLUR"))
                || is_scrim(n),
        });
        stack.extend(kids(n).into_iter().map(|c| (c, x, y, depth + 1)));
    }
    out
}

/// Whether `n` is a scrim: a slot named `… Scrim` (`Scrim`, `Top Scrim`, `Text Scrim`),
/// a shade over the photo that texts are set on, not a box they keep their air from.
fn is_scrim(n: &Value) -> bool {
    n.get("type").and_then(Value::as_str) == Some("RECTANGLE")
        && n.get("name")
            .and_then(Value::as_str)
            .is_some_and(|name| name == "Scrim" || name.ends_with(" Scrim"))
}

/// The first text box that overlaps or nearly touches another slot's box, in words; `None`
/// when every text keeps its air.
///
/// Boxes that hold the text's centre are what it is set on (the ground, a band, a button,
/// a badge, a scrim) and are not counted, nor are blurred shapes (a ground shadow) and
/// scrims. Above or
/// below a box whose span overlaps its own, a text keeps [`MIN_CHECKED_GAP_EM`] of its font
/// size (the smaller of the two, between two texts); side by side, [`SIDE_GAP_EM`].
pub fn crowded_text(tree: &Value) -> Option<String> {
    let all = placed(tree);
    for t in all.iter().filter(|t| t.text && t.w > 0.0 && t.h > 0.0) {
        let (cx, cy) = (t.x + t.w / 2.0, t.y + t.h / 2.0);
        for o in &all {
            if std::ptr::eq(o, t) || o.w <= 0.0 || o.h <= 0.0 || o.soft {
                continue;
            }
            if cx >= o.x && cx <= o.x + o.w && cy >= o.y && cy <= o.y + o.h {
                continue;
            }
            let em = if o.text { t.em.min(o.em) } else { t.em };
            let gap = MIN_CHECKED_GAP_EM * em;
            let h_overlap = o.x < t.x + t.w && o.x + o.w > t.x;
            let v_gap = (o.y - (t.y + t.h)).max(t.y - (o.y + o.h));
            let h_gap = (o.x - (t.x + t.w)).max(t.x - (o.x + o.w));
            if h_overlap && v_gap < gap {
                return Some(format!(
                    "text {} is {:.0} px from {} (at least {:.0} px, {} em)",
                    t.name,
                    v_gap.max(0.0),
                    o.name,
                    gap,
                    MIN_CHECKED_GAP_EM
                ));
            }
            if !h_overlap && v_gap < 0.0 && h_gap < SIDE_GAP_EM * em {
                return Some(format!(
                    "text {} is {:.0} px beside {} (at least {:.0} px)",
                    t.name,
                    h_gap,
                    o.name,
                    SIDE_GAP_EM * em
                ));
            }
        }
    }
    None
}
