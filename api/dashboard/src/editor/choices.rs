//! What the editor's panel offers beside free choice: the brand's palettes (colours are
//! offered from them first), the fonts the renderer has (the brand's first), and for image
//! slots the brand's logos, the product's images and the cut-outs made of them.

use adforge_api::resources::brands::Brand;
use adforge_api::state::AppState;
use adforge_renderer::fonts::FAMILIES;
use serde::Serialize;

use crate::DashError;
use crate::store::editor::{self, ImageRow};

#[derive(Debug, Default, Serialize)]
pub struct Choices {
    pub palettes: Vec<Palette>,
    pub fonts: Vec<FontChoice>,
    pub images: Vec<ImageChoice>,
}

/// A named palette of `#rrggbb` colours.
#[derive(Debug, Serialize)]
pub struct Palette {
    pub name: String,
    pub colors: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct FontChoice {
    pub name: String,
    /// One of the brand's fonts (listed first).
    pub brand: bool,
}

#[derive(Debug, Serialize)]
pub struct ImageChoice {
    /// What goes into the tree: the image's public URL.
    pub url: String,
    /// A small thumbnail for the chooser (the image itself until one is made).
    pub thumb: String,
    pub label: String,
    /// The chooser's heading for it ("Product images", "Cut-outs", "Brand logos").
    pub group: &'static str,
}

/// `#rgb`, `#rrggbb` or `#rrggbbaa` as `#rrggbb` (what a colour input takes).
fn six(hex: &str) -> Option<String> {
    let h = hex.trim().strip_prefix('#')?;
    if !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let full = match h.len() {
        3 => h.chars().flat_map(|c| [c, c]).collect(),
        6 | 8 => h[..6].to_string(),
        _ => return None,
    };
    Some(format!("#{}", full.to_ascii_lowercase()))
}

/// The brands' palettes, `primary` first within each brand; with several brands each name
/// says whose it is.
pub fn palettes(brands: &[Brand]) -> Vec<Palette> {
    let mut out = Vec::new();
    for b in brands {
        let Some(map) = &b.color_palettes else {
            continue;
        };
        let mut named: Vec<(&String, &serde_json::Value)> = map.iter().collect();
        named.sort_by_key(|(n, _)| n.as_str() != "primary");
        for (name, colors) in named {
            let colors: Vec<String> = colors
                .as_array()
                .map(|a| a.iter().filter_map(|c| c.as_str().and_then(six)).collect())
                .unwrap_or_default();
            if colors.is_empty() {
                continue;
            }
            let name = if brands.len() > 1 {
                format!("{} · {name}", b.name)
            } else {
                name.clone()
            };
            out.push(Palette { name, colors });
        }
    }
    out
}

/// The renderer's families, the brands' own first (those the renderer has; others would
/// be drawn in Inter).
pub fn fonts(brands: &[Brand]) -> Vec<FontChoice> {
    let mut out: Vec<FontChoice> = Vec::new();
    for f in brands.iter().flat_map(|b| &b.fonts) {
        if let Some(known) = FAMILIES
            .iter()
            .find(|k| k.eq_ignore_ascii_case(f.name.trim()))
            && !out.iter().any(|c| c.name == *known)
        {
            out.push(FontChoice {
                name: (*known).to_string(),
                brand: true,
            });
        }
    }
    for k in FAMILIES {
        if !out.iter().any(|c| c.name == *k) {
            out.push(FontChoice {
                name: (*k).to_string(),
                brand: false,
            });
        }
    }
    out
}

fn short(id: &str) -> &str {
    &id[id.len().saturating_sub(6)..]
}

fn images(state: &AppState, rows: &[ImageRow], logos: &[String]) -> Vec<ImageChoice> {
    let name = |r: &ImageRow| match r.alt_text.as_deref().map(str::trim) {
        Some(a) if !a.is_empty() => a.to_string(),
        _ => match r.image_type.as_deref() {
            Some("logo") => format!("Logo {}", short(&r.id)),
            Some("product") => format!("Product photo {}", short(&r.id)),
            _ => format!("Image {}", short(&r.id)),
        },
    };
    let mut out: Vec<ImageChoice> = rows
        .iter()
        .map(|r| {
            let (group, label) = match &r.cutout_of {
                Some(src) => {
                    let of = rows
                        .iter()
                        .find(|s| &s.id == src)
                        .map_or_else(|| short(src).to_string(), name);
                    ("Cut-outs", format!("Cut-out of {of}"))
                }
                None if logos.contains(&r.id) || r.image_type.as_deref() == Some("logo") => {
                    ("Brand logos", name(r))
                }
                None => ("Product images", name(r)),
            };
            ImageChoice {
                url: state.blobs.url(&r.blob_key),
                thumb: state
                    .blobs
                    .url(r.thumb_small_key.as_deref().unwrap_or(&r.blob_key)),
                label,
                group,
            }
        })
        .collect();
    let rank = |g: &str| match g {
        "Product images" => 0,
        "Cut-outs" => 1,
        _ => 2,
    };
    out.sort_by_key(|c| rank(c.group));
    out
}

/// The choices of an ad of `brand` selling `product_id`.
///
/// # Errors
/// Database failures.
pub async fn for_ad(
    state: &AppState,
    org_id: &str,
    brand: Option<Brand>,
    product_id: &str,
) -> Result<Choices, DashError> {
    let logos = brand
        .as_ref()
        .and_then(|b| b.logo_image_ids.clone())
        .unwrap_or_default();
    let mut ids = logos.clone();
    for id in editor::variant_image_ids(&state.db, org_id, product_id).await? {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let rows = editor::ad_images(&state.db, org_id, product_id, &ids).await?;
    let brands: Vec<Brand> = brand.into_iter().collect();
    Ok(Choices {
        palettes: palettes(&brands),
        fonts: fonts(&brands),
        images: images(state, &rows, &logos),
    })
}

/// The choices of a design template: every brand's palettes and fonts, the organisation's
/// newest product photos, logos and cut-outs.
///
/// # Errors
/// Database failures.
pub async fn for_template(
    state: &AppState,
    org_id: &str,
    brands: Vec<Brand>,
) -> Result<Choices, DashError> {
    let rows = editor::template_images(&state.db, org_id).await?;
    let logos: Vec<String> = brands
        .iter()
        .flat_map(|b| b.logo_image_ids.clone().unwrap_or_default())
        .collect();
    Ok(Choices {
        palettes: palettes(&brands),
        fonts: fonts(&brands),
        images: images(state, &rows, &logos),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn colours_become_six_digits() {
        assert_eq!(super::six("#0A2540").as_deref(), Some("#0a2540"));
        assert_eq!(super::six("#abc").as_deref(), Some("#aabbcc"));
        assert_eq!(super::six("#0A2540CC").as_deref(), Some("#0a2540"));
        assert_eq!(super::six("0A2540"), None);
        assert_eq!(super::six("#12345"), None);
    }
}
