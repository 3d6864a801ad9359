//! The grounding rule: every number, price, percentage, date, star rating and claim ("free
//! shipping", "guarantee", "sale", "best-selling", …) in an ad's words must come from the
//! job's inputs — the product (name, description, details), the variant (its prices, and
//! the discount and saving computed from them), the brand, the audience and the prompt.
//! [`check_text`] judges one line and names the source of each fact it states;
//! [`check_tree`] judges every visible TEXT node of a tree, and the pipeline runs it on
//! every ad before it is accepted, like the contrast rule. Words the brand's voice avoids
//! are refused here too.
//!
//! What counts as support:
//! - a price: the variant's price or former price, the saving, or the same amount written
//!   as a price in an input (`"Free shipping over $40"`);
//! - a percentage stated as a discount (`50% off`, `-30%`, `save 25%`): the discount
//!   computed from the variant's prices, or the same percentage in the product's offer or
//!   the prompt; any other percentage: the same figure in any input;
//! - any other number: the same figure in any input (list numbering `1.` and the `5` of
//!   `4.8/5` are layout, not facts);
//! - stars: a review whose rating rounds to their count;
//! - a month or weekday: an input naming it;
//! - a claim: an input saying it (`guarantee` is supported by a product `guarantee`, `free
//!   shipping` by a `shipping` that says free, `sale` by an offer or a discount).

use serde_json::Value;

use super::facts::Facts;
use crate::blueprint::words::prices;
use crate::protocol::FactSource;

const DISCOUNT_SOURCE: &str = "computed: discount from variant.compare_at_price and variant.price";
const SAVING_SOURCE: &str = "computed: variant.compare_at_price minus variant.price";

/// Claims an ad may make only when an input makes them: (phrase as found, the words an
/// input must contain, or `None` for the phrase itself).
const CLAIMS: [(&str, &[&str]); 22] = [
    (
        "free shipping",
        &["free shipping", "ships free", "free delivery"],
    ),
    (
        "free delivery",
        &["free delivery", "free shipping", "delivered free"],
    ),
    ("ships free", &["free shipping", "ships free"]),
    ("free returns", &["free returns", "free return"]),
    ("money-back", &["money-back", "money back"]),
    ("money back", &["money-back", "money back"]),
    ("guarantee", &["guarantee"]),
    ("warranty", &["warranty"]),
    ("risk-free", &["risk-free", "risk free"]),
    ("sale", &["sale"]),
    ("clearance", &["clearance"]),
    ("limited time", &["limited time", "limited-time"]),
    ("limited edition", &["limited edition"]),
    (
        "best-selling",
        &["best-selling", "bestseller", "best seller", "best selling"],
    ),
    ("bestseller", &["best-selling", "bestseller", "best seller"]),
    ("award-winning", &["award"]),
    ("#1", &["#1", "number one", "no. 1"]),
    ("number one", &["#1", "number one", "no. 1"]),
    ("clinically proven", &["clinically"]),
    ("certified", &["certified"]),
    ("organic", &["organic"]),
    ("free gift", &["free gift"]),
];

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// The facts `text` (the words of slot `slot`) states and their sources, or why it may not
/// be used (the first fact no input supports).
///
/// # Errors
/// A sentence naming the unsupported fact.
pub fn check_text(text: &str, slot: &str, facts: &Facts) -> Result<Vec<FactSource>, String> {
    let mut out = Vec::new();
    let lower = text.to_lowercase();
    let fact = |text: &str, kind: &str, source: &str| FactSource {
        text: text.to_owned(),
        kind: kind.to_owned(),
        source: source.to_owned(),
        slot: slot.to_owned(),
    };
    // A word or phrase the voice avoids, on word boundaries ("game changer" too).
    let plain = lower.replace('\u{2019}', "'");
    for avoided in &facts.avoid {
        if has_phrase(&plain, avoided) {
            return Err(format!("\"{avoided}\" is a word the brand's voice avoids"));
        }
    }
    // Stars.
    let stars = text.chars().filter(|c| *c == '★').count();
    if stars > 0 {
        let r = facts
            .reviews
            .iter()
            .position(|r| r.rating.is_some_and(|v| v.round() as usize == stars))
            .ok_or_else(|| format!("{stars} stars: no review has that rating"))?;
        out.push(fact(
            &"★".repeat(stars),
            "rating",
            &format!("product.details.reviews[{r}].rating"),
        ));
    }
    // Figures, line by line (a list's own numbering is not a fact).
    for line in text.lines() {
        let body = match crate::blueprint::words::list_marker(line) {
            Some(m) => &line.trim_start()[m.len()..],
            None => line,
        };
        let tokens: Vec<&str> = body.split_whitespace().collect();
        for (i, raw) in tokens.iter().enumerate() {
            let tok = raw.trim_matches(|c: char| {
                matches!(
                    c,
                    '"' | '“' | '”' | '(' | ')' | ',' | '!' | '?' | ';' | ':' | '…'
                )
            });
            let tok = tok.trim_end_matches('.');
            if !tok.chars().any(|c| c.is_ascii_digit()) {
                continue;
            }
            let near = |w: &str| {
                [i.checked_sub(1), Some(i + 1), Some(i + 2)]
                    .into_iter()
                    .flatten()
                    .filter_map(|j| tokens.get(j))
                    .any(|t| t.to_lowercase().trim_matches(|c: char| !c.is_alphabetic()) == w)
            };
            let currency_next = tokens.get(i + 1).is_some_and(|t| {
                let t = t.to_lowercase();
                t.starts_with(['€', '$', '£', '¥'])
                    || ["usd", "eur", "gbp", "sek", "chf", "cad", "aud", "jpy"]
                        .contains(&t.trim_matches('.'))
            });
            let currency_prev = i > 0 && ["$", "€", "£", "¥"].contains(&tokens[i - 1]);
            if tok.contains(['$', '€', '£', '¥', '₹', '₩']) || currency_next || currency_prev
            {
                let amount = numbers(tok).first().copied().unwrap_or(0.0);
                out.push(fact(tok, "price", &price_source(amount, facts).ok_or_else(|| {
                    format!("the price {tok} is not the variant's price, former price or saving, nor a price in the inputs")
                })?));
                continue;
            }
            if tok.ends_with('%') {
                let v = numbers(tok).first().copied().unwrap_or(0.0);
                let discount = tok.starts_with('-')
                    || near("off")
                    || near("save")
                    || near("discount")
                    || near("sale");
                let source = if facts.discount.is_some_and(|d| f64::from(d) == v) {
                    Some(DISCOUNT_SOURCE.to_owned())
                } else {
                    facts
                        .sources
                        .iter()
                        .filter(|(path, _)| {
                            !discount
                                || path == "prompt"
                                || path.starts_with("product.details.offer")
                        })
                        .find(|(_, s)| percents(s).contains(&v))
                        .map(|(p, _)| p.clone())
                };
                let what = if discount { "discount" } else { "percentage" };
                out.push(fact(tok, "percent", &source.ok_or_else(|| {
                    format!("the {what} {tok} is not computed from the variant's prices nor stated in the product's offer or the prompt")
                })?));
                continue;
            }
            // "4.8/5": the figure before the slash is the fact.
            let figures = match tok.split_once('/') {
                Some((a, "5")) => numbers(a),
                _ => numbers(tok),
            };
            for v in figures {
                let source = number_source(v, facts).ok_or_else(|| {
                    format!("the figure {tok} is not in the product, the variant, the brand, the audience or the prompt")
                })?;
                out.push(fact(tok, "number", &source));
            }
        }
    }
    // Dates named in words.
    for w in words_of(&lower) {
        if MONTHS.contains(&w.as_str()) && w != "may" || WEEKDAYS.contains(&w.as_str()) {
            let source = facts
                .sources
                .iter()
                .find(|(_, s)| words_of(&s.to_lowercase()).contains(&w))
                .map(|(p, _)| p.clone())
                .ok_or_else(|| format!("the date \"{w}\" is not in the inputs"))?;
            out.push(fact(&w, "date", &source));
        }
    }
    // Claims.
    let norm = lower.replace('’', "'");
    let mut covered: Vec<&str> = Vec::new();
    for (claim, support) in CLAIMS {
        if !has_phrase(&norm, claim) || covered.iter().any(|c| c.contains(claim)) {
            continue;
        }
        covered.push(claim);
        let source = if claim == "sale" && (facts.discount.is_some()) {
            Some(DISCOUNT_SOURCE.to_owned())
        } else {
            facts
                .sources
                .iter()
                .find(|(_, s)| {
                    let s = s.to_lowercase();
                    support.iter().any(|p| has_phrase(&s, p))
                })
                .map(|(p, _)| p.clone())
        };
        out.push(fact(
            claim,
            "claim",
            &source.ok_or_else(|| format!("the claim \"{claim}\" is not made by any input"))?,
        ));
    }
    Ok(out)
}

/// The facts of every visible TEXT node of `tree` (the node's `name` as the slot), or every
/// line that breaks the rule.
///
/// # Errors
/// One sentence per refused node.
pub fn check_tree(tree: &Value, facts: &Facts) -> Result<Vec<FactSource>, Vec<String>> {
    let mut found = Vec::new();
    let mut errors = Vec::new();
    let Some(nodes) = tree.get("nodes").and_then(Value::as_object) else {
        return Ok(found);
    };
    for (id, n) in nodes {
        if n.get("type").and_then(Value::as_str) != Some("TEXT")
            || n.get("visible").and_then(Value::as_bool) == Some(false)
        {
            continue;
        }
        let text = n.get("characters").and_then(Value::as_str).unwrap_or("");
        let slot = n.get("name").and_then(Value::as_str).unwrap_or(id);
        match check_text(text, slot, facts) {
            Ok(f) => found.extend(f),
            Err(e) => errors.push(format!("{slot} (\"{text}\"): {e}")),
        }
    }
    if errors.is_empty() {
        Ok(found)
    } else {
        Err(errors)
    }
}

/// Where a price of `amount` comes from.
fn price_source(amount: f64, facts: &Facts) -> Option<String> {
    let same = |a: f64| (a - amount).abs() < 0.005;
    if facts.price.as_ref().is_some_and(|p| same(p.amount)) {
        return Some("variant.price".into());
    }
    if facts.compare_at.as_ref().is_some_and(|p| same(p.amount)) {
        return Some("variant.compare_at_price".into());
    }
    if facts.saving.as_ref().is_some_and(|p| same(p.amount)) {
        return Some(SAVING_SOURCE.into());
    }
    facts
        .sources
        .iter()
        .find(|(_, s)| prices(s).into_iter().any(same))
        .map(|(p, _)| p.clone())
}

/// Where a plain figure `v` comes from.
fn number_source(v: f64, facts: &Facts) -> Option<String> {
    if facts.discount.is_some_and(|d| f64::from(d) == v) {
        return Some(DISCOUNT_SOURCE.into());
    }
    if let Some(p) = price_source(v, facts) {
        return Some(p);
    }
    if let Some(i) = facts
        .reviews
        .iter()
        .position(|r| r.rating.is_some_and(|x| (x - v).abs() < 1e-6))
    {
        return Some(format!("product.details.reviews[{i}].rating"));
    }
    facts
        .sources
        .iter()
        .find(|(_, s)| numbers(s).iter().any(|x| (x - v).abs() < 1e-6))
        .map(|(p, _)| p.clone())
}

/// The numbers written in `s` ("1,200" → 1200, "19.99" → 19.99, "2x" → 2).
pub fn numbers(s: &str) -> Vec<f64> {
    let mut out = Vec::new();
    let mut run = String::new();
    for c in s.chars().chain([' ']) {
        if c.is_ascii_digit() || (!run.is_empty() && (c == '.' || c == ',')) {
            run.push(c);
        } else if !run.is_empty() {
            let r = run.trim_end_matches(['.', ',']);
            let r = if r.contains(',')
                && !r.contains('.')
                && r.len() - r.rfind(',').unwrap_or(0) == 3
            {
                r.replace(',', ".")
            } else {
                r.replace(',', "")
            };
            if let Ok(v) = r.parse() {
                out.push(v);
            }
            run.clear();
        }
    }
    out
}

/// The percentages written in `s`.
fn percents(s: &str) -> Vec<f64> {
    s.split_whitespace()
        .filter_map(|w| {
            let w = w.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '%');
            let i = w.find('%')?;
            numbers(&w[..i]).last().copied()
        })
        .collect()
}

/// Lower-case words (letters and digits; hyphens split).
fn words_of(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether `phrase` occurs in `text` (both lower case) on word boundaries.
fn has_phrase(text: &str, phrase: &str) -> bool {
    let mut from = 0;
    while let Some(i) = text[from..].find(phrase) {
        let start = from + i;
        let end = start + phrase.len();
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
        if boundary(before) && boundary(after) {
            return true;
        }
        from = start + phrase.len().max(1);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::facts::{Price, Review};

    fn facts() -> Facts {
        Facts {
            name: "Cold Brew".into(),
            price: Some(Price {
                text: "$24".into(),
                amount: 24.0,
            }),
            compare_at: Some(Price {
                text: "$48".into(),
                amount: 48.0,
            }),
            discount: Some(50),
            saving: Some(Price {
                text: "$24".into(),
                amount: 24.0,
            }),
            reviews: vec![Review {
                author: None,
                text: "Great".into(),
                rating: Some(5.0),
            }],
            sources: vec![
                ("product.details.stats[0].value".into(), "16".into()),
                (
                    "product.details.shipping".into(),
                    "Free shipping over $40".into(),
                ),
                ("product.details.benefits[0]".into(), "50% less acid".into()),
            ],
            ..Facts::default()
        }
    }

    #[test]
    fn grounded_facts_name_their_source() {
        let f = facts();
        let got = check_text("50% OFF today", "offer", &f).unwrap();
        assert_eq!(got[0].source, DISCOUNT_SOURCE);
        let got = check_text("Now $24, was $48", "price", &f).unwrap();
        assert_eq!(got[0].source, "variant.price");
        assert_eq!(got[1].source, "variant.compare_at_price");
        assert!(check_text("★★★★★", "rating", &f).is_ok());
        assert!(check_text("16 cups in every bottle", "stat", &f).is_ok());
        assert!(check_text("Free shipping over $40", "supporting", &f).is_ok());
        assert!(check_text("1. Smooth, never bitter", "list_item_1", &f).is_ok());
        assert!(check_text("50% less acid", "list_item_2", &f).is_ok());
    }

    #[test]
    fn invented_facts_are_refused() {
        let mut f = facts();
        f.discount = None;
        f.compare_at = None;
        f.saving = None;
        // 50% appears in a benefit ("50% less acid"), but not as an offer.
        assert!(check_text("50% off this week", "offer", &f).is_err());
        assert!(check_text("Only $19", "price", &f).is_err());
        assert!(check_text("30-day guarantee", "supporting", &f).is_err());
        assert!(check_text("Free returns", "supporting", &f).is_err());
        assert!(check_text("★★★★", "rating", &f).is_err());
        assert!(check_text("Ends Sunday", "eyebrow", &f).is_err());
        assert!(check_text("2x faster", "stat", &f).is_err());
    }
}
