//! The brand's logo in an ad: which of the brand's logos goes in the logo slot, on what,
//! and placing it again when the check render finds that it does not read.
//!
//! Every part of a logo's ink ([`LogoInk`]: a disc, a wordmark beside it) must reach
//! [`MIN_LOGO_CONTRAST`] against what surrounds it. In that order (issue 39):
//!
//! 1. the brand's logo whose weakest part reads best on the ground, when it reaches the
//!    ratio: the brand's other logo (its other `logo_theme`) when the first does not;
//! 2. else a **plate** behind a logo: a rounded rectangle in the logo's box, the logo inset
//!    in it, in a colour every part of the ink reads on and that stands out from the ground
//!    (at least [`PLATE_STANDS_OUT`]): the brand's colours as they are first, then white or
//!    near-black, then a brand colour lightened or darkened to the luminance that suits
//!    light and dark inks at once (a cream disc beside a brown wordmark needs a mid tone),
//!    then a grey at that luminance;
//! 3. else the brand's name set as a wordmark (text, judged by the text rules).
//!
//! An SVG logo is not decoded here: it is judged by the luminance its `logo_theme` implies.

use std::sync::Arc;

use adforge_renderer::tree::paint;
use serde_json::{Map, Value, json};

use super::analyse::{Rgb, contrast, luminance};
use super::brand::{Palette, mix};
use super::fill::{Filled, TextPlacement};
use super::ink::LogoInk;

/// Least contrast of every part of a logo's ink against what surrounds it: WCAG 1.4.11's
/// ratio for graphics (3:1). Logos are exempt from WCAG's contrast rules; a brand's mark
/// that does not reach it in an ad has still, in part, disappeared.
pub const MIN_LOGO_CONTRAST: f32 = 3.0;

/// Least contrast of a plate against the ground it sits on, so that it reads as a shape
/// rather than a smudge.
pub const PLATE_STANDS_OUT: f32 = 1.5;

/// The plate's margin around the logo, as a share of the logo box's height.
pub const PLATE_PAD: f64 = 0.16;

/// The plate's corner radius, as a share of its height.
const PLATE_RADIUS: f64 = 0.22;

/// A measured logo.
#[derive(Debug, Clone, PartialEq)]
pub struct LogoChoice {
    /// Its URL.
    pub url: String,
    /// Width over height.
    pub aspect: f32,
    /// Mean luminance of its opaque pixels (0..1), or what its theme implies for an SVG.
    pub luminance: f32,
    /// Its ink by parts; `None` for an SVG (not decoded here).
    pub ink: Option<Arc<LogoInk>>,
}

impl LogoChoice {
    /// The contrast of its weakest part on the solid `ground` (an SVG: of its luminance).
    pub fn contrast_on(&self, ground: Rgb) -> f32 {
        match &self.ink {
            Some(ink) => ink.least_contrast_on(ground),
            None => {
                let (a, b) = (self.luminance, luminance(ground));
                (a.max(b) + 0.05) / (a.min(b) + 0.05)
            }
        }
    }

    /// The luminances of its parts (an SVG: its one luminance).
    fn part_luminances(&self) -> Vec<f32> {
        match &self.ink {
            Some(ink) => ink.parts().iter().map(|p| luminance(p.colour)).collect(),
            None => vec![self.luminance],
        }
    }
}

/// What placing the logo (again) needs.
#[derive(Debug, Clone)]
pub struct LogoSlot {
    /// The logo node's UUID.
    pub id: String,
    /// The UUID a plate behind it takes.
    pub(super) plate_id: String,
    /// The node as filled before the logo was placed in it.
    pub(super) node: Map<String, Value>,
    pub(super) logos: Vec<LogoChoice>,
    pub(super) brand: String,
    pub(super) palette: Palette,
    pub(super) align: String,
    pub(super) font: String,
    pub(super) scrim: Option<String>,
}

impl LogoSlot {
    /// The brand's logo drawn from `url`, when it is one of the slot's.
    pub fn logo_at(&self, url: &str) -> Option<&LogoChoice> {
        self.logos.iter().find(|l| l.url == url)
    }
}

/// A plate behind the logo: its colour and box (in the logo node's parent's coordinates).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Plate {
    colour: Rgb,
    x: f64,
    y: f64,
    width: f64,
    height: f64,
}

/// Places the logo in `n` (the slot's node) against `bg` (see the module docs): sizes the
/// box to the chosen logo's aspect, or turns the slot into a wordmark. Returns the plate to
/// put behind it, if it needs one.
pub(super) fn place_logo(n: &mut Map<String, Value>, slot: &LogoSlot, bg: Rgb) -> Option<Plate> {
    let (align, font) = (slot.align.as_str(), slot.font.as_str());
    let num = |n: &Map<String, Value>, k: &str| n.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let (x, y, w, h) = (num(n, "x"), num(n, "y"), num(n, "width"), num(n, "height"));
    let along = |width: f64| match align {
        "CENTER" => x + (w - width) / 2.0,
        "RIGHT" => x + w - width,
        _ => x,
    };
    let best = slot
        .logos
        .iter()
        .map(|l| (l, l.contrast_on(bg)))
        .filter(|(_, c)| *c >= MIN_LOGO_CONTRAST)
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((logo, _)) = best {
        let lw = (h * f64::from(logo.aspect)).clamp(h * 0.6, w);
        n.insert("x".into(), json!(round2(along(lw))));
        n.insert("width".into(), json!(round2(lw)));
        n.insert(
            "fills".into(),
            Value::Array(vec![paint::image(&logo.url, "FIT")]),
        );
        return None;
    }
    let plated = slot
        .logos
        .iter()
        .find_map(|l| plate_colour(l, &slot.palette, bg).map(|c| (l, c)));
    if let Some((logo, colour)) = plated {
        let pad = h * PLATE_PAD;
        let inner_h = h - 2.0 * pad;
        let inner_w =
            (inner_h * f64::from(logo.aspect)).clamp(inner_h * 0.6, (w - 2.0 * pad).max(1.0));
        let plate_w = inner_w + 2.0 * pad;
        let px = along(plate_w);
        n.insert("x".into(), json!(round2(px + pad)));
        n.insert("y".into(), json!(round2(y + pad)));
        n.insert("width".into(), json!(round2(inner_w)));
        n.insert("height".into(), json!(round2(inner_h)));
        n.insert(
            "fills".into(),
            Value::Array(vec![paint::image(&logo.url, "FIT")]),
        );
        return Some(Plate {
            colour,
            x: round2(px),
            y: round2(y),
            width: round2(plate_w),
            height: round2(h),
        });
    }
    n.insert("type".into(), Value::from("TEXT"));
    n.insert("characters".into(), Value::from(slot.brand.clone()));
    n.insert("fontFamily".into(), Value::from(font.to_owned()));
    n.insert("fontWeight".into(), json!(700));
    n.insert("fontSize".into(), json!(round2(h * 0.62)));
    n.insert("textAutoResize".into(), Value::from("NONE"));
    n.insert("textAlignHorizontal".into(), Value::from(align));
    n.insert("textAlignVertical".into(), Value::from("CENTER"));
    n.insert(
        "textFit".into(),
        json!({"minFontSize": round2(h * 0.3), "maxFontSize": round2(h * 0.62)}),
    );
    n.insert("fills".into(), solid(slot.palette.text_on(bg)));
    None
}

/// The colour of a plate that `logo` reads on in every part, standing out from `ground`
/// (see the module docs for the order); `None` when no plate makes every part read.
fn plate_colour(logo: &LogoChoice, palette: &Palette, ground: Rgb) -> Option<Rgb> {
    let target = best_luminance(&logo.part_luminances());
    let brand = [
        palette.background,
        palette.primary,
        palette.accent,
        palette.ink,
    ];
    let neutral = [[255, 255, 255], [17, 17, 17]];
    let tuned = [tune(palette.primary, target), tune(palette.accent, target)];
    let grey = [tune([128, 128, 128], target)];
    let reads = |c: &Rgb| logo.contrast_on(*c) >= MIN_LOGO_CONTRAST;
    let score = |c: &Rgb| logo.contrast_on(*c).min(contrast(*c, ground));
    for tier in [&brand[..], &neutral[..], &tuned[..], &grey[..]] {
        let chosen = tier
            .iter()
            .filter(|c| reads(c) && contrast(**c, ground) >= PLATE_STANDS_OUT)
            .max_by(|a, b| score(a).total_cmp(&score(b)));
        if let Some(c) = chosen {
            return Some(*c);
        }
    }
    // Every part reads, though the plate is close to the ground.
    brand
        .iter()
        .chain(&neutral)
        .chain(&tuned)
        .chain(&grey)
        .filter(|c| reads(c))
        .max_by(|a, b| logo.contrast_on(**a).total_cmp(&logo.contrast_on(**b)))
        .copied()
}

/// The plate luminance at which the weakest of inks of luminances `inks` reads best: black,
/// white, or the point between the lightest and darkest ink where both read alike.
fn best_luminance(inks: &[f32]) -> f32 {
    let lo = inks.iter().copied().fold(1.0f32, f32::min);
    let hi = inks.iter().copied().fold(0.0f32, f32::max);
    let weakest = |l: f32| {
        inks.iter()
            .map(|i| (i.max(l) + 0.05) / (i.min(l) + 0.05))
            .fold(f32::INFINITY, f32::min)
    };
    let between = ((hi + 0.05) * (lo + 0.05)).sqrt() - 0.05;
    [0.0, 1.0, between]
        .into_iter()
        .max_by(|a, b| weakest(*a).total_cmp(&weakest(*b)))
        .unwrap_or(1.0)
}

/// `c` lightened towards white or darkened towards black until its luminance is `target`.
fn tune(c: Rgb, target: f32) -> Rgb {
    let end = if luminance(c) < target {
        [255, 255, 255]
    } else {
        [0, 0, 0]
    };
    let (mut lo, mut hi) = (0.0f32, 1.0f32);
    for _ in 0..20 {
        let t = (lo + hi) / 2.0;
        let l = luminance(mix(c, end, t));
        if (l < target) == (end == [255, 255, 255]) {
            lo = t;
        } else {
            hi = t;
        }
    }
    mix(c, end, (lo + hi) / 2.0)
}

/// Puts `plate` behind the logo of `slot` in `tree` (just before it among its parent's
/// children), or takes the plate away when `None`.
pub(super) fn set_plate(tree: &mut Value, slot: &LogoSlot, plate: Option<&Plate>) {
    let Some(nodes) = tree.get_mut("nodes").and_then(Value::as_object_mut) else {
        return;
    };
    nodes.remove(&slot.plate_id);
    for node in nodes.values_mut() {
        if let Some(children) = node.get_mut("children").and_then(Value::as_array_mut) {
            children.retain(|c| c.as_str() != Some(slot.plate_id.as_str()));
        }
    }
    let Some(p) = plate else { return };
    let Some(parent) = nodes.values_mut().find(|n| {
        n.get("children")
            .and_then(Value::as_array)
            .is_some_and(|c| c.iter().any(|c| c.as_str() == Some(slot.id.as_str())))
    }) else {
        return;
    };
    if let Some(children) = parent.get_mut("children").and_then(Value::as_array_mut) {
        let at = children
            .iter()
            .position(|c| c.as_str() == Some(slot.id.as_str()))
            .unwrap_or(0);
        children.insert(at, Value::from(slot.plate_id.clone()));
    }
    nodes.insert(
        slot.plate_id.clone(),
        json!({
            "id": slot.plate_id,
            "type": "RECTANGLE",
            "name": "Logo Plate",
            "x": p.x,
            "y": p.y,
            "width": p.width,
            "height": p.height,
            "cornerRadius": round2(p.height * PLATE_RADIUS),
            "fills": solid(p.colour),
        }),
    );
}

/// Places the logo again against `ground`, the colour the check render measured behind
/// its box (a photo's, where the template could only guess): the logo that reads best
/// there, else one on a plate, else the brand's name as a wordmark (see the module docs).
/// Returns whether the logo changed (false when the same is chosen again, or there is no
/// logo).
pub fn relogo(filled: &mut Filled, ground: Rgb) -> bool {
    let Some(slot) = filled.logo.clone() else {
        return false;
    };
    let before = (
        filled.tree["nodes"][&slot.id].clone(),
        filled.tree["nodes"].get(&slot.plate_id).cloned(),
    );
    let mut n = slot.node.clone();
    let plate = place_logo(&mut n, &slot, ground);
    let mut tree = filled.tree.clone();
    tree["nodes"][&slot.id] = Value::Object(n);
    set_plate(&mut tree, &slot, plate.as_ref());
    let after = (
        tree["nodes"][&slot.id].clone(),
        tree["nodes"].get(&slot.plate_id).cloned(),
    );
    if after == before {
        return false;
    }
    filled.tree = tree;
    filled.texts.retain(|t| t.id != slot.id);
    if filled.tree["nodes"][&slot.id]["type"] == "TEXT" {
        filled.texts.push(TextPlacement {
            id: slot.id.clone(),
            scrim: slot.scrim.clone(),
            backdrop: Some(ground),
        });
    }
    true
}

/// A `fills` list of one SOLID paint.
fn solid(c: Rgb) -> Value {
    Value::Array(vec![paint::solid(
        c.map(|v| (f64::from(v) / 255.0 * 10000.0).round() / 10000.0),
    )])
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plate_luminance_suits_light_and_dark_inks_at_once() {
        // A cream disc beside a brown wordmark: a mid tone reads for both.
        let l = best_luminance(&[luminance([0xF2, 0xE3, 0xC6]), luminance([0x3B, 0x24, 0x16])]);
        assert!((0.15..0.3).contains(&l), "{l}");
        // Dark inks only: white.
        assert_eq!(best_luminance(&[0.01, 0.05]), 1.0);
        // A tuned colour lands on the luminance asked.
        let c = tune([0x3B, 0x24, 0x16], l);
        assert!((luminance(c) - l).abs() < 0.01, "{c:?}");
    }
}
