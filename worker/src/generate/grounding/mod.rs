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
//! - a duration (`30-day`, `24h`): the same figure in the same time unit in an input, or
//!   a bare figure there (a stat's `30` labelled `day trial`); a multiple (`2x`) likewise;
//! - any other number: the same bare figure in any input (list numbering `1.` and the `5`
//!   of `4.8/5` are layout, not facts); never a price or a percentage;
//! - stars: a review whose rating rounds to their count;
//! - a month or weekday: an input naming it;
//! - a claim: an input saying it (`guarantee` is supported by a product `guarantee`, `free
//!   shipping` by a `shipping` that says free, `sale` by an offer or a discount).
//!
//! Each fact is credited to the input its words came from: the copywriter hands the paths
//! of the inputs a line was composed from ([`check_text_from`], [`check_tree_from`]), and
//! where it cannot (a model's line) the input that writes the figure the same way wins
//! (issue 39: "30-day" from a guarantee was credited to a $30 former price).

use std::collections::HashMap;

use serde_json::Value;

use super::facts::Facts;
use crate::protocol::FactSource;

/// The source of the discount computed from the variant's prices.
pub const DISCOUNT_SOURCE: &str =
    "computed: discount from variant.compare_at_price and variant.price";
/// The source of the saving computed from the variant's prices.
pub const SAVING_SOURCE: &str = "computed: variant.compare_at_price minus variant.price";
/// The source of the variant's price.
pub const PRICE_SOURCE: &str = "variant.price";
/// The source of the variant's former price.
pub const COMPARE_AT_SOURCE: &str = "variant.compare_at_price";

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
/// be used (the first fact no input supports). Each figure is matched with its unit (see
/// [`check_text_from`]); no field is preferred.
///
/// # Errors
/// A sentence naming the unsupported fact.
pub fn check_text(text: &str, slot: &str, facts: &Facts) -> Result<Vec<FactSource>, String> {
    check_text_from(text, slot, facts, &[])
}

/// [`check_text`] for words composed from the inputs at the paths `from` (their
/// provenance: `product.details.guarantee`, `variant.price`, …): a fact one of them holds
/// is credited to it; a fact none of them holds is matched among all inputs, by its unit
/// and form. A figure is read with what it counts: a price (a currency sign, code or
/// word beside it) is matched only with prices, a percentage only with percentages, a
/// duration (`30-day`, `24h`, `18 hours`) with the same figure of the same time unit or a
/// bare figure in an input (whose label may name the unit), a multiple (`2x`) with a
/// multiple or a bare figure; a bare figure in the ad only with a bare figure. Among the
/// inputs that hold it, the one that writes it in the same form and before the same word
/// wins (`30-day` in "30-day money-back guarantee"), then the same form, then the same
/// unit, then the first; so "30-day" is never credited to a $30 price, nor "24h" to $24.
///
/// # Errors
/// A sentence naming the unsupported fact.
pub fn check_text_from(
    text: &str,
    slot: &str,
    facts: &Facts,
    from: &[String],
) -> Result<Vec<FactSource>, String> {
    let mut out = Vec::new();
    let lower = text.to_lowercase();
    let fact = |text: &str, kind: &str, source: &str| FactSource {
        text: text.to_owned(),
        kind: kind.to_owned(),
        source: source.to_owned(),
        slot: slot.to_owned(),
    };
    let provenance = |path: &str| from.iter().any(|p| p == path);
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
        let rated: Vec<usize> = (0..facts.reviews.len())
            .filter(|&r| {
                facts.reviews[r]
                    .rating
                    .is_some_and(|v| v.round() as usize == stars)
            })
            .collect();
        let r = rated
            .iter()
            .copied()
            .find(|r| {
                let base = format!("product.details.reviews[{r}]");
                from.iter().any(|p| p.starts_with(&base))
            })
            .or_else(|| rated.first().copied())
            .ok_or_else(|| format!("{stars} stars: no review has that rating"))?;
        out.push(fact(
            &"★".repeat(stars),
            "rating",
            &format!("product.details.reviews[{r}].rating"),
        ));
    }
    // Figures, with what they count.
    let fields = figure_fields(facts);
    for found in scan(text) {
        let tok = found.tok.as_str();
        match found.unit {
            Unit::Price => {
                let amount = found.values.first().copied().unwrap_or(0.0);
                let source = best_field(&found, amount, &fields, &provenance, |_| true)
                    .ok_or_else(|| {
                        format!("the price {tok} is not the variant's price, former price or saving, nor a price in the inputs")
                    })?;
                out.push(fact(tok, "price", &source));
            }
            Unit::Percent => {
                let v = found.values.first().copied().unwrap_or(0.0);
                // A percentage stated as a discount is the computed one (the variant's
                // prices are the fact, whoever asked to say it), or the offer's or the
                // prompt's.
                let computed = found.discount && facts.discount.is_some_and(|d| f64::from(d) == v);
                let source = if computed {
                    Some(DISCOUNT_SOURCE.to_owned())
                } else {
                    best_field(&found, v, &fields, &provenance, |path| {
                        !found.discount
                            || path == DISCOUNT_SOURCE
                            || path == "prompt"
                            || path.starts_with("product.details.offer")
                    })
                };
                let what = if found.discount {
                    "discount"
                } else {
                    "percentage"
                };
                out.push(fact(tok, "percent", &source.ok_or_else(|| {
                    format!("the {what} {tok} is not computed from the variant's prices nor stated in the product's offer or the prompt")
                })?));
            }
            _ => {
                for &v in &found.values {
                    let source = best_field(&found, v, &fields, &provenance, |_| true)
                        .ok_or_else(|| {
                            format!("the figure {tok} is not in the product, the variant, the brand, the audience or the prompt")
                        })?;
                    out.push(fact(tok, "number", &source));
                }
            }
        }
    }
    // The inputs in the order a non-figure fact is looked up: the provenance first.
    let ordered: Vec<&(String, String)> = facts
        .sources
        .iter()
        .filter(|(p, _)| provenance(p))
        .chain(facts.sources.iter().filter(|(p, _)| !provenance(p)))
        .collect();
    // Dates named in words.
    for w in words_of(&lower) {
        if MONTHS.contains(&w.as_str()) && w != "may" || WEEKDAYS.contains(&w.as_str()) {
            let source = ordered
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
        let said = ordered
            .iter()
            .find(|(_, s)| {
                let s = s.to_lowercase();
                support.iter().any(|p| has_phrase(&s, p))
            })
            .map(|(p, _)| p.clone());
        let source = if claim == "sale"
            && facts.discount.is_some()
            && (provenance(DISCOUNT_SOURCE) || !said.as_deref().is_some_and(provenance))
        {
            Some(DISCOUNT_SOURCE.to_owned())
        } else {
            said
        };
        out.push(fact(
            claim,
            "claim",
            &source.ok_or_else(|| format!("the claim \"{claim}\" is not made by any input"))?,
        ));
    }
    Ok(out)
}

/// Where the words of each text node came from: node name → (the words as written, the
/// paths of the inputs they were composed from). [`check_tree_from`] credits a node's
/// facts to those inputs while its words are still the ones written.
pub type Provenance = HashMap<String, (String, Vec<String>)>;

/// The facts of every visible TEXT node of `tree` (the node's `name` as the slot), or every
/// line that breaks the rule.
///
/// # Errors
/// One sentence per refused node.
pub fn check_tree(tree: &Value, facts: &Facts) -> Result<Vec<FactSource>, Vec<String>> {
    check_tree_from(tree, facts, &Provenance::new())
}

/// [`check_tree`], each node's facts credited to the inputs its words were composed from
/// ([`Provenance`]) where it holds them.
///
/// # Errors
/// One sentence per refused node.
pub fn check_tree_from(
    tree: &Value,
    facts: &Facts,
    provenance: &Provenance,
) -> Result<Vec<FactSource>, Vec<String>> {
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
        let from = provenance
            .get(slot)
            .filter(|(written, _)| written == text)
            .map_or(&[][..], |(_, from)| from.as_slice());
        match check_text_from(text, slot, facts, from) {
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

/// What a figure counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    /// A currency sign or code beside it.
    Price,
    /// `%`, or `percent` after it.
    Percent,
    /// A length of time (`30-day`, `24h`, `18 hours`): the time unit.
    Time(&'static str),
    /// A multiple (`2x`, `3 times`).
    Times,
    /// Anything else (`16`, `10,000+`, `#1`, `4.8/5`).
    Plain,
}

/// A figure as written, with what it counts and its neighbours.
#[derive(Debug, Clone)]
struct Found {
    /// The word it is written in, punctuation trimmed (`30-day`, `$24`, `-30%`).
    tok: String,
    unit: Unit,
    /// Its numbers ("24/7": 24 and 7; "4.8/5": 4.8).
    values: Vec<f64>,
    /// The word in lower case without a leading sign: what "the same form" compares.
    form: String,
    /// The next word, lower case, letters and digits only.
    next: String,
    /// Stated as a discount (`-30%`, `30% off`, `save 30%`).
    discount: bool,
    /// Stated as a saving (`save $8`).
    saving: bool,
}

/// The figures of `text`, line by line (a list's own numbering is not a fact).
fn scan(text: &str) -> Vec<Found> {
    let mut out = Vec::new();
    for line in text.lines() {
        let body = match crate::blueprint::words::list_marker(line) {
            Some(m) => &line.trim_start()[m.len()..],
            None => line,
        };
        let tokens: Vec<&str> = body.split_whitespace().collect();
        let word = |j: usize| -> String {
            tokens
                .get(j)
                .map(|t| {
                    t.to_lowercase()
                        .trim_matches(|c: char| !c.is_alphanumeric())
                        .to_owned()
                })
                .unwrap_or_default()
        };
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
                    .any(|j| word(j) == w)
            };
            let currency_next = tokens.get(i + 1).is_some_and(|t| {
                let t = t.to_lowercase();
                t.starts_with(['€', '$', '£', '¥'])
                    || [
                        "usd", "eur", "gbp", "sek", "chf", "cad", "aud", "jpy", "dollars",
                        "dollar", "euros", "euro", "pounds", "bucks",
                    ]
                    .contains(&t.trim_matches(|c: char| !c.is_alphanumeric()))
            });
            let currency_prev = i > 0 && ["$", "€", "£", "¥"].contains(&tokens[i - 1]);
            let lower = tok.to_lowercase();
            let next = word(i + 1);
            let (unit, values) =
                if tok.contains(['$', '€', '£', '¥', '₹', '₩']) || currency_next || currency_prev
                {
                    (Unit::Price, numbers(tok).into_iter().take(1).collect())
                } else if tok.ends_with('%') || next == "percent" {
                    (Unit::Percent, numbers(tok).into_iter().take(1).collect())
                } else {
                    // "4.8/5": the figure before the slash is the fact.
                    let values = match tok.split_once('/') {
                        Some((a, "5")) => numbers(a),
                        _ => numbers(tok),
                    };
                    // What follows the last digit ("-day", "h", "x"), else the next word.
                    let after = lower
                        .rfind(|c: char| c.is_ascii_digit())
                        .map_or("", |k| &lower[k + 1..])
                        .trim_start_matches(['-', '–', '+', ' ']);
                    let of = |w: &str| {
                        time_unit(w)
                            .map(Unit::Time)
                            .or_else(|| matches!(w, "x" | "×" | "times").then_some(Unit::Times))
                    };
                    let unit = if after.is_empty() {
                        of(&next)
                    } else {
                        of(after)
                    };
                    (unit.unwrap_or(Unit::Plain), values)
                };
            out.push(Found {
                tok: tok.to_owned(),
                unit,
                values,
                form: lower.trim_start_matches(['-', '−', '+', '~']).to_owned(),
                next,
                discount: unit == Unit::Percent
                    && (tok.starts_with('-')
                        || near("off")
                        || near("save")
                        || near("discount")
                        || near("sale")),
                saving: near("save") || near("saving") || near("savings"),
            });
        }
    }
    out
}

/// The time unit a word names (`day`, `hrs`, `h`, `weeks`, …).
fn time_unit(w: &str) -> Option<&'static str> {
    Some(match w {
        "d" | "day" | "days" => "day",
        "h" | "hr" | "hrs" | "hour" | "hours" => "hour",
        "min" | "mins" | "minute" | "minutes" => "minute",
        "sec" | "secs" | "second" | "seconds" => "second",
        "wk" | "wks" | "week" | "weeks" => "week",
        "mo" | "month" | "months" => "month",
        "yr" | "yrs" | "year" | "years" => "year",
        "night" | "nights" => "night",
        _ => return None,
    })
}

/// Every input that can hold a figure, with its figures: the computed discount, the
/// variant's prices and the saving, then every input string ([`Facts::sources`]).
fn figure_fields(facts: &Facts) -> Vec<(String, Vec<Found>)> {
    let figure = |value: f64, unit: Unit, form: String, next: &str| Found {
        tok: form.clone(),
        unit,
        values: vec![value],
        form,
        next: next.to_owned(),
        discount: false,
        saving: false,
    };
    let mut out = Vec::new();
    if let Some(d) = facts.discount {
        out.push((
            DISCOUNT_SOURCE.to_owned(),
            vec![figure(f64::from(d), Unit::Percent, format!("{d}%"), "off")],
        ));
    }
    for (path, p) in [
        (PRICE_SOURCE, &facts.price),
        (COMPARE_AT_SOURCE, &facts.compare_at),
        (SAVING_SOURCE, &facts.saving),
    ] {
        if let Some(p) = p {
            out.push((
                path.to_owned(),
                vec![figure(p.amount, Unit::Price, p.text.to_lowercase(), "")],
            ));
        }
    }
    out.extend(facts.sources.iter().map(|(p, s)| (p.clone(), scan(s))));
    out
}

/// The input that holds the figure `v` of `found`, among `fields` that `allowed` lets
/// through: one of the words' own inputs (`provenance`) first, then the one that writes
/// it in the same form and with the same next word, the same form, the same unit, a
/// compatible one; the first on a tie. A saving ("save $8") prefers the computed saving.
fn best_field(
    found: &Found,
    v: f64,
    fields: &[(String, Vec<Found>)],
    provenance: &dyn Fn(&str) -> bool,
    allowed: impl Fn(&str) -> bool,
) -> Option<String> {
    let same = |x: f64| {
        if found.unit == Unit::Price {
            (x - v).abs() < 0.005
        } else {
            (x - v).abs() < 1e-6
        }
    };
    // A bare figure in an input may have its unit in a label beside it (a stat's `16` and
    // `cups per bottle`), so a duration or a multiple may be one; a bare figure in the ad
    // is no duration's or multiple's.
    let compatible = |s: Unit| match (found.unit, s) {
        (Unit::Time(a), Unit::Time(b)) => a == b,
        (Unit::Time(_) | Unit::Times | Unit::Plain, Unit::Plain) => true,
        (a, b) => a == b,
    };
    fields
        .iter()
        .enumerate()
        .filter(|(_, (path, _))| allowed(path))
        .filter_map(|(i, (path, figures))| {
            let score = figures
                .iter()
                .filter(|s| compatible(s.unit) && s.values.iter().any(|x| same(*x)))
                .map(|s| {
                    if s.form == found.form && s.next == found.next {
                        0
                    } else if s.form == found.form {
                        1
                    } else if s.unit == found.unit {
                        2
                    } else {
                        3
                    }
                })
                .min()?;
            let score = if found.saving && path == SAVING_SOURCE {
                -1
            } else {
                score
            };
            Some(((!provenance(path), score, i), path))
        })
        .min_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, p)| p.clone())
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
mod tests;
