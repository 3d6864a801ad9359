//! The facts an ad's words may state, read from a job's inputs: the variant's prices (and
//! the discount computed from them), the product's documented `details` keys (benefits,
//! features, stats, reviews, offer, guarantee, shipping; `api/src/resources/facts.rs`), the
//! brand's voice, the audience and the prompt. Besides the typed facts the copywriter uses,
//! every input string is kept with its path ([`Facts::sources`]) for the grounding checker
//! ([`super::grounding`]), which accepts a number or a claim only when one of them says it.

use serde_json::Value;

use super::voice::Tone;
use crate::protocol::{GenerateAdJob, Money};

/// One customer review.
#[derive(Debug, Clone, PartialEq)]
pub struct Review {
    /// Who wrote it, as given.
    pub author: Option<String>,
    /// What they wrote.
    pub text: String,
    /// 0 to 5.
    pub rating: Option<f64>,
}

/// A figure and what it counts (`16` / `cups per bottle`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    pub value: String,
    pub label: String,
}

/// A price as the ad writes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Price {
    /// `$24`, `€19.99`, `1,200 SEK`.
    pub text: String,
    /// In major units.
    pub amount: f64,
}

/// What the copy may state, from one job.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// The product's name.
    pub name: String,
    /// The brand's name.
    pub brand: String,
    /// The variant's price.
    pub price: Option<Price>,
    /// The variant's former price (above `price`, same currency).
    pub compare_at: Option<Price>,
    /// Whole percent off, computed from the two prices.
    pub discount: Option<u32>,
    /// The amount saved, computed from the two prices.
    pub saving: Option<Price>,
    /// `details.offer` (its text), unless its `ends_at` had passed when the ad was created
    /// (then it is not stated at all, and its words are no input the grounding rule reads).
    pub offer: Option<String>,
    /// The day a live offer ends, as an ad writes it (`June 30`): the only date an
    /// urgency line ("Ends June 30") may state.
    pub offer_ends: Option<String>,
    /// An offer the prompt names ("20% off").
    pub prompt_offer: Option<String>,
    pub benefits: Vec<String>,
    pub features: Vec<String>,
    pub stats: Vec<Stat>,
    pub reviews: Vec<Review>,
    pub guarantee: Option<String>,
    pub shipping: Option<String>,
    /// Pain points and motivations of the audience.
    pub pains: Vec<String>,
    pub motivations: Vec<String>,
    /// The audience's name.
    pub audience: String,
    /// The prompt, trimmed.
    pub prompt: String,
    /// Phrases the prompt asks the ad to mention ("mention free returns" → `free returns`).
    pub mentions: Vec<String>,
    /// Words the brand's voice avoids (lower case).
    pub avoid: Vec<String>,
    /// The tone the brand's voice description names ([`Tone`]).
    pub tone: Tone,
    /// Every input string with its path (`product.details.benefits[0]`, `prompt`, …).
    pub sources: Vec<(String, String)>,
}

impl Facts {
    /// The facts of `job`.
    pub fn from_job(job: &GenerateAdJob) -> Facts {
        let p = &job.product;
        let d = &p.details;
        let mut f = Facts {
            name: clean(&p.name),
            brand: clean(&job.brand.name),
            audience: clean(&job.audience.name),
            prompt: job.prompt.as_deref().unwrap_or("").trim().to_owned(),
            ..Facts::default()
        };
        if let Some(v) = &job.variant {
            f.price = v.price.as_ref().map(price);
            if let (Some(pr), Some(ca)) = (&v.price, &v.compare_at_price)
                && ca.currency == pr.currency
                && ca.amount > pr.amount
                && pr.amount >= 0
            {
                f.compare_at = Some(price(ca));
                let pct = ((ca.amount - pr.amount) as f64 / ca.amount as f64 * 100.0).floor();
                if pct >= 1.0 {
                    f.discount = Some(pct as u32);
                }
                f.saving = Some(price(&Money {
                    amount: ca.amount - pr.amount,
                    currency: pr.currency.clone(),
                }));
            }
            f.sources.push(("variant.name".into(), v.name.clone()));
        }
        f.benefits = texts(d.get("benefits"));
        f.features = texts(d.get("features"));
        f.stats = list(d.get("stats"))
            .filter_map(|s| {
                let value = match s.get("value")? {
                    Value::String(s) => clean(s),
                    Value::Number(n) => n.to_string(),
                    _ => return None,
                };
                let label = s.get("label").and_then(Value::as_str).map(clean);
                (!value.is_empty()).then(|| Stat {
                    value,
                    label: label.unwrap_or_default(),
                })
            })
            .collect();
        f.reviews = list(d.get("reviews"))
            .filter_map(|r| {
                let text = clean(r.get("text")?.as_str()?);
                (!text.is_empty()).then(|| Review {
                    author: r
                        .get("author")
                        .and_then(Value::as_str)
                        .map(clean)
                        .filter(|a| !a.is_empty()),
                    text,
                    rating: r.get("rating").and_then(Value::as_f64),
                })
            })
            .collect();
        let ends = match d.get("offer") {
            Some(Value::Object(o)) => o.get("ends_at").and_then(Value::as_str).map(day),
            _ => None,
        };
        // An offer with an end date is live through that day (UTC) for an ad created on or
        // before it; without the ad's creation time it cannot be shown live, so it is not
        // stated.
        let live = match (&ends, job.created_at.as_deref().and_then(day)) {
            (None, _) => true,
            (Some(Some(end)), Some(created)) => created <= *end,
            _ => false,
        };
        f.offer = match d.get("offer") {
            Some(Value::String(s)) => Some(clean(s)),
            Some(Value::Object(o)) => o.get("text").and_then(Value::as_str).map(clean),
            _ => None,
        }
        .filter(|s| live && !s.is_empty());
        if f.offer.is_some() {
            f.offer_ends = ends.flatten().map(|(_, m, dd)| spoken_day(m, dd));
        }
        f.prompt_offer = super::copy::find_percent(&f.prompt);
        f.guarantee = d.get("guarantee").and_then(Value::as_str).map(clean);
        f.shipping = d.get("shipping").and_then(Value::as_str).map(clean);
        let ad = &job.audience.details;
        f.pains = texts(ad.get("pain_points").or_else(|| ad.get("pain_point")));
        f.motivations = texts(ad.get("motivations").or_else(|| ad.get("motivation")));
        f.mentions = mentions(&f.prompt);
        if let Some(Value::Object(v)) = job.brand.details.get("voice") {
            f.avoid = texts(v.get("avoid"))
                .into_iter()
                .map(|w| w.to_lowercase())
                .collect();
        }
        f.tone = Tone::of_brand(&job.brand.details);
        // Every input string, for the grounding checker.
        f.sources.push(("product.name".into(), p.name.clone()));
        if let Some(desc) = &p.description {
            f.sources.push(("product.description".into(), desc.clone()));
        }
        flatten("product.details", d, &mut f.sources);
        if f.offer.is_none() {
            // An ended offer grounds nothing: not its discount, not its date.
            f.sources
                .retain(|(path, _)| !path.starts_with("product.details.offer"));
        }
        if let Some(e) = &f.offer_ends {
            f.sources
                .push(("product.details.offer.ends_at".into(), e.clone()));
        }
        f.sources
            .push(("brand.name".into(), job.brand.name.clone()));
        flatten("brand.details", &job.brand.details, &mut f.sources);
        f.sources
            .push(("audience.name".into(), job.audience.name.clone()));
        if let Some(desc) = &job.audience.description {
            f.sources
                .push(("audience.description".into(), desc.clone()));
        }
        flatten("audience.details", &job.audience.details, &mut f.sources);
        if !f.prompt.is_empty() {
            f.sources.push(("prompt".into(), f.prompt.clone()));
        }
        f
    }

    /// The offer the ad may state: the product's, else the discount, else the prompt's.
    pub fn any_offer(&self) -> bool {
        self.offer.is_some() || self.discount.is_some() || self.prompt_offer.is_some()
    }

    /// Whether the prompt asks for an ad without the brand's logo.
    pub fn no_logo(&self) -> bool {
        no_logo(&self.prompt)
    }

    /// The facts as the copy model's brief states them.
    pub fn brief(&self) -> Value {
        serde_json::json!({
            "product": self.name,
            "brand": self.brand,
            "price": self.price.as_ref().map(|p| &p.text),
            "compare_at_price": self.compare_at.as_ref().map(|p| &p.text),
            "discount_percent": self.discount,
            "offer": self.offer,
            "offer_ends": self.offer_ends,
            "benefits": self.benefits,
            "features": self.features,
            "stats": self.stats.iter().map(|s| format!("{} {}", s.value, s.label)).collect::<Vec<_>>(),
            "guarantee": self.guarantee,
            "shipping": self.shipping,
            "audience": self.audience,
            "pain_points": self.pains,
            "motivations": self.motivations,
            "words_to_avoid": self.avoid,
            "voice": self.tone.key(),
        })
    }

    /// The path of the input (in [`Facts::sources`]) under one of `prefixes` whose words,
    /// whitespace collapsed, are `value`: where a fact the copywriter states came from
    /// (`field(&["product.details.benefits"], "Ships in 24h")` →
    /// `product.details.benefits[1]`). `None` when no input there says it.
    pub fn field(&self, prefixes: &[&str], value: &str) -> Option<String> {
        let under = |path: &str| {
            prefixes.iter().any(|pre| {
                path.strip_prefix(pre)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(['[', '.']))
            })
        };
        self.sources
            .iter()
            .find(|(path, s)| under(path) && clean(s) == value)
            .map(|(path, _)| path.clone())
    }

    /// Benefits, then features.
    pub fn points(&self) -> Vec<String> {
        self.benefits
            .iter()
            .chain(&self.features)
            .cloned()
            .collect()
    }
}

/// `money` as an ad writes it: the currency's sign before the amount where it has a common
/// one (`$24`, `€19.99`, `£8`, `¥2400`), else the amount and the code (`1,200 SEK`); cents
/// only when there are any.
pub fn price(money: &Money) -> Price {
    let code = money.currency.to_lowercase();
    let zero_decimal = ["jpy", "krw", "vnd", "clp", "isk"].contains(&code.as_str());
    let amount = if zero_decimal {
        money.amount as f64
    } else {
        money.amount as f64 / 100.0
    };
    let number = if zero_decimal || money.amount % 100 == 0 {
        group(money.amount / if zero_decimal { 1 } else { 100 })
    } else {
        format!(
            "{}.{:02}",
            group(money.amount / 100),
            (money.amount % 100).abs()
        )
    };
    let text = match code.as_str() {
        "usd" => format!("${number}"),
        "eur" => format!("€{number}"),
        "gbp" => format!("£{number}"),
        "jpy" => format!("¥{number}"),
        "inr" => format!("₹{number}"),
        "krw" => format!("₩{number}"),
        "cad" => format!("CA${number}"),
        "aud" => format!("A${number}"),
        _ => format!("{number} {}", code.to_uppercase()),
    };
    Price { text, amount }
}

/// The calendar day of an ISO 8601 date or timestamp (its first ten characters,
/// `YYYY-MM-DD`, as the API checked them), for comparing.
fn day(s: &str) -> Option<(i32, u32, u32)> {
    let d = s.trim().get(..10)?;
    let mut parts = d.split('-');
    let y: i32 = parts.next()?.parse().ok()?;
    let m: u32 = parts.next()?.parse().ok()?;
    let dd: u32 = parts.next()?.parse().ok()?;
    ((1..=12).contains(&m) && (1..=31).contains(&dd)).then_some((y, m, dd))
}

/// A day as an ad says it: `June 30`.
fn spoken_day(month: u32, day: u32) -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    format!("{} {day}", MONTHS[(month.clamp(1, 12) - 1) as usize])
}

/// 1200 → "1,200".
fn group(n: i64) -> String {
    let s = n.abs().to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// The strings of a string or an array of strings.
fn texts(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![clean(s)],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(clean).collect(),
        _ => Vec::new(),
    }
    .into_iter()
    .filter(|s| !s.is_empty())
    .collect()
}

/// The objects of an object or an array of objects.
fn list(v: Option<&Value>) -> Box<dyn Iterator<Item = &Value> + '_> {
    match v {
        Some(Value::Array(a)) => Box::new(a.iter().filter(|x| x.is_object())),
        Some(o @ Value::Object(_)) => Box::new(std::iter::once(o)),
        _ => Box::new(std::iter::empty()),
    }
}

/// Every string and number under `v`, with its path.
fn flatten(path: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) => out.push((path.to_owned(), s.clone())),
        Value::Number(n) => out.push((path.to_owned(), n.to_string())),
        Value::Bool(b) => out.push((path.to_owned(), format!("{b}"))),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(&format!("{path}[{i}]"), x, out);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                flatten(&format!("{path}.{k}"), x, out);
            }
        }
        Value::Null => {}
    }
}

/// Whether `prompt` asks for no logo ("no logo", "without the logo", "hide the logo").
pub fn no_logo(prompt: &str) -> bool {
    let p = prompt.to_lowercase();
    [
        "no logo",
        "without logo",
        "without the logo",
        "without a logo",
        "hide the logo",
        "no brand logo",
        "without our logo",
    ]
    .iter()
    .any(|w| p.contains(w))
}

/// Collapses whitespace and trims.
pub fn clean(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What "mention …" in the prompt asks the ad to say: up to the end of its clause.
fn mentions(prompt: &str) -> Vec<String> {
    let lower = prompt.to_lowercase();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = lower[from..].find("mention") {
        let start = from + i + "mention".len();
        let rest = &prompt[start..];
        let rest = rest.trim_start_matches(|c: char| c.is_alphabetic()); // "mentions", "mentioning"
        let end = rest
            .find(['.', ',', ';', '!', '?', '\n'])
            .unwrap_or(rest.len());
        let phrase = clean(rest[..end].trim_matches(|c: char| !c.is_alphanumeric()));
        let phrase = phrase
            .strip_prefix("that ")
            .or_else(|| phrase.strip_prefix("the "))
            .unwrap_or(&phrase)
            .to_owned();
        if !phrase.is_empty() && phrase.split(' ').count() <= 6 {
            out.push(phrase);
        }
        from = start;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_are_written_in_their_currency() {
        let m = |amount, c: &str| {
            price(&Money {
                amount,
                currency: c.into(),
            })
            .text
        };
        assert_eq!(m(2400, "usd"), "$24");
        assert_eq!(m(1999, "eur"), "€19.99");
        assert_eq!(m(2400, "jpy"), "¥2,400");
        assert_eq!(m(120000, "sek"), "1,200 SEK");
    }

    #[test]
    fn the_prompt_names_mentions_and_offers() {
        assert_eq!(
            mentions("Warm tone, mention free returns. Keep it short"),
            vec!["free returns".to_owned()]
        );
        assert_eq!(
            crate::generate::copy::find_percent("push the 20% off deal"),
            Some("20% off".into())
        );
    }
}
