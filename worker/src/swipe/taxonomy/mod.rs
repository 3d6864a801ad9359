//! How a design is classified, from measured evidence only. Pure functions and value lists:
//! swipe-file ingest ([`super::ingest`]) decides with them, and the API reads the same
//! lists for its filters and display names. The evidence tables are in `tables.rs`.
//!
//! **Aspect ratio**: the nearest (in log ratio) of 1:1, 4:5, 9:16, 1.91:1, 16:9, 2:3, 3:4.
//!
//! **Industry**: the top level of the Google product taxonomy, as snake_case values
//! ([`INDUSTRIES`] lists each with the taxonomy's own name). Evidence: the five most
//! probable ImageNet labels, each voting its probability for the category its label belongs
//! to (ImageNet classes 0-396 are animals → `animals_pet_supplies`; 923-969 are dishes, fruit
//! and drinks → `food_beverages_tobacco`; other classes by the table in [`label_industry`]),
//! plus 0.3 per OCR word from a category's keyword list. The best category wins when its score
//! is at least 0.2; otherwise industry stays null.
//!
//! **Ad format**: [`AD_FORMATS`]. Words decide first (OCR: "% off", "sale" → offer_sale;
//! "before" and "after" → before_after; "vs" → comparison; "review", "stars", "customers" →
//! testimonial; "new", "introducing", "launch" → announcement; three or more numbered lines
//! → listicle; a figure with %, x or "million" → statistic). Without deciding words, the
//! picture decides: a confident object label (≥ 0.25) on a plain background → product_shot;
//! a scene, place or person label → lifestyle; a page-like label (website, menu, comic book,
//! crossword) with words read → text_only. Anything else leaves ad_format null.

mod tables;

use tables::{LABEL_TABLE, PAGE_LABELS, SCENE_LABELS, WORD_TABLE};

/// The common ad ratios and their width/height.
pub const ASPECT_RATIOS: [(&str, f64); 7] = [
    ("1:1", 1.0),
    ("4:5", 0.8),
    ("9:16", 9.0 / 16.0),
    ("1.91:1", 1.91),
    ("16:9", 16.0 / 9.0),
    ("2:3", 2.0 / 3.0),
    ("3:4", 0.75),
];

/// Industry values and the Google product taxonomy's top-level names.
pub const INDUSTRIES: [(&str, &str); 16] = [
    ("animals_pet_supplies", "Animals & Pet Supplies"),
    ("apparel_accessories", "Apparel & Accessories"),
    ("arts_entertainment", "Arts & Entertainment"),
    ("baby_toddler", "Baby & Toddler"),
    ("cameras_optics", "Cameras & Optics"),
    ("electronics", "Electronics"),
    ("food_beverages_tobacco", "Food, Beverages & Tobacco"),
    ("furniture", "Furniture"),
    ("hardware", "Hardware"),
    ("health_beauty", "Health & Beauty"),
    ("home_garden", "Home & Garden"),
    ("luggage_bags", "Luggage & Bags"),
    ("office_supplies", "Office Supplies"),
    ("sporting_goods", "Sporting Goods"),
    ("toys_games", "Toys & Games"),
    ("vehicles_parts", "Vehicles & Parts"),
];

/// Ad format values and their display names.
pub const AD_FORMATS: [(&str, &str); 10] = [
    ("product_shot", "Product shot"),
    ("lifestyle", "Lifestyle"),
    ("offer_sale", "Offer / sale"),
    ("testimonial", "Testimonial / review"),
    ("before_after", "Before and after"),
    ("comparison", "Comparison"),
    ("listicle", "Listicle"),
    ("statistic", "Statistic"),
    ("text_only", "Text only"),
    ("announcement", "Announcement"),
];

/// The display name of an industry value (the value itself when unknown).
pub fn industry_name(v: &str) -> &str {
    INDUSTRIES
        .iter()
        .find(|(k, _)| *k == v)
        .map_or(v, |(_, n)| n)
}

/// The display name of an ad format value (the value itself when unknown).
pub fn ad_format_name(v: &str) -> &str {
    AD_FORMATS
        .iter()
        .find(|(k, _)| *k == v)
        .map_or(v, |(_, n)| n)
}

/// The nearest common ad ratio.
pub fn aspect_ratio(width: u32, height: u32) -> &'static str {
    let r = (f64::from(width.max(1)) / f64::from(height.max(1))).ln();
    ASPECT_RATIOS
        .iter()
        .min_by(|a, b| {
            (a.1.ln() - r)
                .abs()
                .partial_cmp(&(b.1.ln() - r).abs())
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .map_or("1:1", |(n, _)| n)
}

/// The category of an ImageNet label (by its index in labels.txt and its name).
pub fn label_industry(index: Option<usize>, name: &str) -> Option<&'static str> {
    if let Some(i) = index {
        if i <= 396 {
            return Some("animals_pet_supplies");
        }
        if (923..=969).contains(&i) {
            return Some("food_beverages_tobacco");
        }
    }
    LABEL_TABLE
        .iter()
        .find(|(_, names)| names.contains(&name))
        .map(|(cat, _)| *cat)
}

/// Lower-case words of OCR text.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '%')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The industry from labels (with probabilities and label indices) and OCR words.
pub fn industry(labels: &[(String, f32, Option<usize>)], words: &[String]) -> Option<&'static str> {
    let mut scores: Vec<(&'static str, f32)> = Vec::new();
    let mut add = |cat: &'static str, s: f32| match scores.iter_mut().find(|(c, _)| *c == cat) {
        Some((_, v)) => *v += s,
        None => scores.push((cat, s)),
    };
    for (name, p, index) in labels.iter().take(5) {
        if let Some(cat) = label_industry(*index, name) {
            add(cat, *p);
        }
    }
    for w in words {
        for (cat, keys) in WORD_TABLE {
            if keys.contains(&w.as_str()) {
                add(cat, 0.3);
            }
        }
    }
    scores.sort_by(|a, b| {
        b.1.partial_cmp(&a.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.0.cmp(b.0))
    });
    scores.first().filter(|(_, s)| *s >= 0.2).map(|(c, _)| *c)
}

/// The ad format from OCR text, labels and whether the background is plain.
pub fn ad_format(
    ocr: Option<&str>,
    labels: &[(String, f32, Option<usize>)],
    plain_background: bool,
) -> Option<&'static str> {
    let text = ocr.unwrap_or("").to_lowercase();
    let ws = words(&text);
    let has = |w: &str| ws.iter().any(|x| x == w);
    if text.contains('%') && (has("off") || has("sale") || has("save"))
        || has("sale")
        || has("discount")
        || has("coupon")
        || has("deal")
        || has("deals")
        || text.contains("free shipping")
    {
        return Some("offer_sale");
    }
    if has("before") && has("after") {
        return Some("before_after");
    }
    if has("vs") || has("versus") || text.contains("compared to") {
        return Some("comparison");
    }
    if has("review")
        || has("reviews")
        || has("stars")
        || has("customers")
        || text.contains('★')
        || text.contains('“')
    {
        return Some("testimonial");
    }
    if has("introducing")
        || has("new")
        || has("launch")
        || has("launching")
        || text.contains("now available")
        || text.contains("just landed")
        || text.contains("just dropped")
        || text.contains("coming soon")
    {
        return Some("announcement");
    }
    let numbered = text
        .lines()
        .filter(|l| {
            let l = l.trim_start();
            let digits = l.chars().take_while(char::is_ascii_digit).count();
            digits > 0 && l[digits..].starts_with(['.', ')'])
        })
        .count();
    if numbered >= 3 {
        return Some("listicle");
    }
    if ws.iter().any(|w| {
        w.ends_with('%') && w.len() > 1
            || (w.ends_with('x')
                && w[..w.len() - 1].chars().all(|c| c.is_ascii_digit())
                && w.len() > 1)
    }) || has("million")
        || has("billion")
    {
        return Some("statistic");
    }
    let top = labels.first()?;
    if PAGE_LABELS.contains(&top.0.as_str()) && ws.len() >= 4 {
        return Some("text_only");
    }
    if labels.iter().take(3).any(|(n, p, i)| {
        *p >= 0.15
            && (SCENE_LABELS.contains(&n.as_str()) || i.is_some_and(|i| (970..=979).contains(&i)))
    }) {
        return Some("lifestyle");
    }
    if top.1 >= 0.25 && plain_background && !PAGE_LABELS.contains(&top.0.as_str()) {
        return Some("product_shot");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aspect_ratios_snap_to_the_nearest() {
        assert_eq!(aspect_ratio(1080, 1080), "1:1");
        assert_eq!(aspect_ratio(1080, 1350), "4:5");
        assert_eq!(aspect_ratio(1080, 1920), "9:16");
        assert_eq!(aspect_ratio(1200, 628), "1.91:1");
        assert_eq!(aspect_ratio(1920, 1080), "16:9");
        assert_eq!(aspect_ratio(1000, 1500), "2:3");
        assert_eq!(aspect_ratio(900, 1200), "3:4");
    }

    #[test]
    fn formats_follow_the_words_first() {
        let labels = vec![("espresso".to_string(), 0.6, Some(967))];
        assert_eq!(
            ad_format(Some("SUMMER SALE 30% OFF"), &labels, true),
            Some("offer_sale")
        );
        assert_eq!(
            ad_format(Some("Before and after 4 weeks"), &labels, true),
            Some("before_after")
        );
        assert_eq!(ad_format(None, &labels, true), Some("product_shot"));
        assert_eq!(ad_format(None, &labels, false), None);
        assert_eq!(industry(&labels, &[]), Some("food_beverages_tobacco"));
        assert_eq!(industry(&[("missile".into(), 0.5, Some(657))], &[]), None);
    }
}
