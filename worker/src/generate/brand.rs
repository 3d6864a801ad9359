//! A brand's identity as an ad uses it: colours by role ([`Palette`]) and the heading and
//! body fonts, mapped onto what the renderer has.
//!
//! Roles rather than raw swatches: a layout asks for "the primary field" or "the accent
//! button", and the palette answers from the brand's colours (a palette named `primary`
//! first), completing what the brand lacks (a tinted ink, a light ground, an accent) from
//! the primary colour or the reference's colours. Rejected alternative: using the brand's
//! colours in the order given — brands list white or black first often enough that the
//! ad would come out as a white field with no colour in it.

use adforge_renderer::fonts::FAMILIES as BUNDLED_FAMILIES;
use serde_json::Value;

use super::analyse::{Analysis, Rgb, contrast, luminance};
use crate::protocol::Brand;

/// The colours of one ad, by role.
#[derive(Debug, Clone, PartialEq)]
pub struct Palette {
    /// The brand's main colour: colour fields and panels.
    pub primary: Rgb,
    /// A second colour that differs from `primary`: buttons, badges, rules.
    pub accent: Rgb,
    /// A near-black tinted towards the brand: text on light grounds, dark fields.
    pub ink: Rgb,
    /// A light ground tinted towards the brand.
    pub background: Rgb,
}

impl Palette {
    /// The brand's palette (`color_palettes`: a palette named `primary` first, then the
    /// others in order), completed from the reference's colours when the brand has none.
    pub fn from_brand(brand: &Brand, analysis: &Analysis) -> Palette {
        let refs: Vec<Rgb> = analysis.palette.iter().map(|(c, _)| *c).collect();
        Palette::from_brand_and_colours(brand, &refs)
    }

    /// [`Palette::from_brand`] with the reference's dominant colours given directly (an ad
    /// made from a design template carries them instead of the reference).
    pub fn from_brand_and_colours(brand: &Brand, reference_colours: &[Rgb]) -> Palette {
        let mut colours = brand_colours(&brand.color_palettes);
        if colours.is_empty() {
            // The most colourful of the reference's dominant colours.
            let mut refs: Vec<Rgb> = reference_colours.to_vec();
            refs.sort_by(|a, b| saturation(*b).total_cmp(&saturation(*a)));
            colours.extend(refs.into_iter().take(2));
        }
        let primary = colours.first().copied().unwrap_or([30, 64, 175]);
        let accent = colours
            .iter()
            .skip(1)
            .copied()
            .filter(|c| super::analyse::colour_distance(*c, primary) > 0.25)
            .max_by(|a, b| saturation(*a).total_cmp(&saturation(*b)))
            .unwrap_or_else(|| {
                if luminance(primary) < 0.3 {
                    [245, 196, 66]
                } else {
                    mix(primary, [0, 0, 0], 0.75)
                }
            });
        let ink = colours
            .iter()
            .copied()
            .filter(|c| luminance(*c) < 0.03)
            .min_by(|a, b| luminance(*a).total_cmp(&luminance(*b)))
            .unwrap_or_else(|| mix(primary, [10, 10, 14], 0.88));
        let background = colours
            .iter()
            .copied()
            .filter(|c| luminance(*c) > 0.8)
            .max_by(|a, b| luminance(*a).total_cmp(&luminance(*b)))
            .unwrap_or_else(|| mix(primary, [255, 255, 255], 0.92));
        Palette {
            primary,
            accent,
            ink,
            background,
        }
    }

    /// The colour of a template role; unknown roles are white.
    pub fn role(&self, role: &str) -> Rgb {
        match role {
            "primary" | "surface" => self.primary,
            "accent" => self.accent,
            "ink" => self.ink,
            "background" => self.background,
            _ => [255, 255, 255],
        }
    }

    /// The most on-brand text colour readable (≥ 4.5:1) on `backdrop`.
    pub fn text_on(&self, backdrop: Rgb) -> Rgb {
        let dark = luminance(backdrop) > 0.18;
        let prefs = if dark {
            [self.ink, [17, 17, 17], [0, 0, 0]]
        } else {
            [[255, 255, 255], self.background, [255, 255, 255]]
        };
        prefs
            .into_iter()
            .find(|c| contrast(*c, backdrop) >= 4.6)
            .unwrap_or(
                if contrast([0, 0, 0], backdrop) > contrast([255, 255, 255], backdrop) {
                    [0, 0, 0]
                } else {
                    [255, 255, 255]
                },
            )
    }
}

/// Heading and body families: the brand's first fonts with those roles, mapped to bundled
/// families (a brand font that is not bundled falls back to a bundled one of its kind).
pub fn fonts(brand_fonts: &Value) -> (String, String) {
    let list: Vec<(String, String)> = brand_fonts
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| {
                    let name = f.get("name").or_else(|| f.get("family"))?.as_str()?;
                    let role = ["role", "usage", "type", "category"]
                        .iter()
                        .find_map(|k| f.get(*k).and_then(Value::as_str))
                        .unwrap_or("")
                        .to_lowercase();
                    Some((name.to_owned(), role))
                })
                .collect()
        })
        .unwrap_or_default();
    let find = |keys: &[&str]| {
        list.iter()
            .find(|(_, r)| keys.iter().any(|k| r.contains(k)))
            .map(|(n, _)| n.clone())
    };
    let heading = find(&["head", "display", "title"]).or_else(|| list.first().map(|f| f.0.clone()));
    let body = find(&["body", "text", "paragraph"])
        .or_else(|| list.get(1).map(|f| f.0.clone()))
        .or_else(|| heading.clone());
    (
        bundled_family(heading.as_deref(), "League Spartan"),
        bundled_family(body.as_deref(), "Inter"),
    )
}

fn bundled_family(name: Option<&str>, default: &str) -> String {
    let Some(name) = name else {
        return default.to_owned();
    };
    if let Some(f) = BUNDLED_FAMILIES
        .iter()
        .find(|f| f.eq_ignore_ascii_case(name.trim()))
    {
        return (*f).to_owned();
    }
    let lower = name.to_lowercase();
    if lower.contains("mono") {
        "DejaVu Sans".to_owned()
    } else if (lower.contains("serif") && !lower.contains("sans"))
        || [
            "garamond",
            "playfair",
            "georgia",
            "times",
            "baskerville",
            "didot",
        ]
        .iter()
        .any(|s| lower.contains(s))
    {
        "Noto Serif Display".to_owned()
    } else {
        default.to_owned()
    }
}

/// Every colour of a brand's `color_palettes`, `primary` first, duplicates dropped.
pub fn brand_colours(palettes: &Value) -> Vec<Rgb> {
    let mut out: Vec<Rgb> = Vec::new();
    let mut push_all = |v: &Value| {
        let items: Vec<&Value> = match v {
            Value::Array(a) => a.iter().collect(),
            other => vec![other],
        };
        for item in items {
            let hex = item
                .as_str()
                .or_else(|| item.get("hex").and_then(Value::as_str));
            if let Some(c) = hex.and_then(parse_hex)
                && !out.contains(&c)
            {
                out.push(c);
            }
        }
    };
    match palettes {
        Value::Object(map) => {
            if let Some(p) = map.get("primary") {
                push_all(p);
            }
            for (k, v) in map {
                if k != "primary" {
                    push_all(v);
                }
            }
        }
        Value::Array(_) => push_all(palettes),
        _ => {}
    }
    out
}

/// `#rgb` or `#rrggbb` (the `#` optional).
pub fn parse_hex(s: &str) -> Option<Rgb> {
    let h = s.trim().trim_start_matches('#');
    let digits: Vec<u8> = h
        .chars()
        .map(|c| c.to_digit(16).map(|d| d as u8))
        .collect::<Option<_>>()?;
    match digits.len() {
        3 => Some([digits[0] * 17, digits[1] * 17, digits[2] * 17]),
        6 | 8 => Some([
            digits[0] * 16 + digits[1],
            digits[2] * 16 + digits[3],
            digits[4] * 16 + digits[5],
        ]),
        _ => None,
    }
}

fn saturation(c: Rgb) -> f32 {
    let max = f32::from(*c.iter().max().unwrap_or(&0));
    let min = f32::from(*c.iter().min().unwrap_or(&0));
    if max == 0.0 { 0.0 } else { (max - min) / max }
}

/// `a` moved towards `b` by `t` (0..1).
pub fn mix(a: Rgb, b: Rgb, t: f32) -> Rgb {
    let mut out = [0u8; 3];
    for k in 0..3 {
        out[k] = (f32::from(a[k]) * (1.0 - t) + f32::from(b[k]) * t).round() as u8;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palettes_put_primary_first_and_fonts_fall_back() {
        let p = serde_json::json!({"accent": ["#ff5500"], "primary": ["#112233", "#fff"]});
        assert_eq!(
            brand_colours(&p),
            vec![[0x11, 0x22, 0x33], [255, 255, 255], [255, 0x55, 0]]
        );
        let f =
            serde_json::json!([{"name": "Playfair Display", "role": "heading"}, {"name": "lato"}]);
        assert_eq!(fonts(&f), ("Noto Serif Display".into(), "Lato".into()));
        assert_eq!(
            fonts(&Value::Null),
            ("League Spartan".into(), "Inter".into())
        );
    }
}
