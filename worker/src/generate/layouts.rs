//! The built-in layout library (`assets/layouts/*.json`, format in its README) and
//! [`choose_layout`], which scores every layout against a reference's [`Analysis`].
//!
//! Layouts are compiled into the binary with `include_str!`, so a render node needs no
//! files at run time and every node has the same library. Rejected alternative: reading the
//! folder at start-up — one more path to configure on every machine, and a node with a
//! stale copy would produce different ads for the same job.

use serde::Deserialize;
use serde_json::Value;

use super::analyse::{Analysis, Aspect};

macro_rules! layouts {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/layouts/", $name, ".json")))),*]
    };
}

const SOURCES: &[(&str, &str)] = layouts![
    "centered_product",
    "framed_card",
    "full_bleed_scrim",
    "hero_bottom_panel",
    "offer_badge",
    "split_text_left",
    "split_text_right",
    "text_poster",
    "top_headline",
];

/// Where a layout puts its masses, in the unit square of the canvas.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Composition {
    /// Centre of the product image.
    pub image_center: [f32; 2],
    /// Share of the canvas the product image covers.
    pub image_area: f32,
    /// Centre of the copy block.
    pub text_center: [f32; 2],
    /// 0 (picture sells) to 1 (words sell).
    pub text_weight: f32,
}

/// One layout: a template per aspect ratio plus its composition.
#[derive(Debug, Clone, Deserialize)]
pub struct Layout {
    /// File stem, e.g. `hero_bottom_panel`.
    pub name: String,
    /// One line for people.
    pub description: String,
    /// Where the image and text masses are.
    pub composition: Composition,
    /// `"1:1"`, `"4:5"`, `"9:16"` → template tree (renderer format plus `$` slot keys).
    pub variants: serde_json::Map<String, Value>,
}

impl Layout {
    /// The template for `aspect`.
    pub fn template(&self, aspect: Aspect) -> Option<&Value> {
        self.variants.get(aspect.key())
    }
}

/// Every built-in layout, in name order. Parsed on each call (a few hundred microseconds);
/// callers that choose often keep the result.
///
/// # Errors
/// The name and JSON error of a layout file that does not parse (a build-time asset bug;
/// the crate's tests parse every file).
pub fn library() -> Result<Vec<Layout>, String> {
    SOURCES
        .iter()
        .map(|(name, src)| {
            serde_json::from_str::<Layout>(src).map_err(|e| format!("layout {name}: {e}"))
        })
        .collect()
}

/// Scores how well `layout` matches the reference (higher is better). Deterministic.
///
/// Three terms: the layout's image should sit where the reference's subject is and its copy
/// where the reference is calm (for a text-led reference: its copy where the lettering is); its text weight should match how text-led the
/// reference is. Without a product image, image-heavy layouts are ruled out.
pub fn score(layout: &Layout, analysis: &Analysis, has_product_image: bool) -> f32 {
    let c = &layout.composition;
    let dist = |a: (f32, f32), b: [f32; 2]| ((a.0 - b[0]).powi(2) + (a.1 - b[1]).powi(2)).sqrt();
    // A focused subject makes position matter; a spread-out photo matters less where.
    let focus = (0.5 + analysis.subject_focus * 4.0).min(2.0);
    // In a picture-led reference the energy is the picture: the layout's image goes there
    // and its copy into the calm space. In a text-led one the energy is the lettering: the
    // layout's copy goes there. The text score blends the two readings.
    // Without a product image the ad can only sell with words, whatever the reference does.
    let t = if has_product_image {
        analysis.text_score
    } else {
        analysis.text_score.max(0.9)
    };
    let picture =
        focus * dist(analysis.subject, c.image_center) + 0.8 * dist(analysis.calm, c.text_center);
    let lettering =
        dist(analysis.subject, c.text_center) + 0.4 * dist(analysis.calm, c.image_center);
    let mut s = -(1.0 - t) * picture - t * lettering;
    s -= 1.2 * (t - c.text_weight).abs();
    // Photos whose energy is spread everywhere (no calm space) suit full-bleed layouts.
    s -= 0.6 * (c.image_area - (1.0 - analysis.calm_share)).abs();
    if !has_product_image {
        // The image slot stays empty: only layouts whose image is a detail still work.
        s -= 3.0 * c.image_area;
    }
    s
}

/// The best layout for the reference, ties broken by name (so the choice is stable).
///
/// # Errors
/// When the library is empty or does not parse.
pub fn choose_layout(
    library: &[Layout],
    analysis: &Analysis,
    has_product_image: bool,
) -> Result<Layout, String> {
    let mut best: Option<(f32, &Layout)> = None;
    for layout in library {
        if layout.template(analysis.aspect).is_none() {
            continue;
        }
        // The product must be prominent (see `quality`): a layout whose picture is a detail
        // is only for ads without a product image.
        if has_product_image && layout.composition.image_area < crate::blueprint::MIN_PRODUCT_SHARE
        {
            continue;
        }
        let s = score(layout, analysis, has_product_image);
        if best.is_none_or(|(b, _)| s > b) {
            best = Some((s, layout));
        }
    }
    best.map(|(_, l)| l.clone())
        .ok_or_else(|| "the layout library has no layout for this aspect".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layout_parses_and_has_every_aspect() {
        let lib = library().unwrap();
        assert!(lib.len() >= 8);
        for l in &lib {
            for a in Aspect::ALL {
                let t = l
                    .template(a)
                    .unwrap_or_else(|| panic!("{} {}", l.name, a.key()));
                adforge_renderer::Tree::from_value(t.clone())
                    .unwrap_or_else(|e| panic!("{} {}: {e}", l.name, a.key()));
            }
        }
    }
}
