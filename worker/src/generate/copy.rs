//! The copywriter: headline, supporting line, call to action and a short eyebrow, written
//! deterministically from the product, the audience and the prompt.
//!
//! It works from phrase templates filled with what the inputs say (a benefit, a pain point,
//! a motivation, an offer, a tone), keeps the candidates that fit each slot's length, and
//! picks one with a stable hash of the inputs: the same job always gets the same words,
//! different products get different templates. A quoted phrase in the prompt
//! (`"Wake up to better coffee"`) is used as the headline as written.
//!
//! Rejected alternative: a language model. None can be shipped or reached from a render
//! node, and an ad's words must not change when a job is redone after a crash.

use serde_json::Value;

use crate::protocol::{Audience, Product};

/// Longest headline, in characters.
pub const HEADLINE_MAX: usize = 42;
/// Longest supporting line.
pub const SUPPORTING_MAX: usize = 110;
/// Longest call to action.
pub const CTA_MAX: usize = 18;
/// Longest eyebrow (the small line above a headline or on a badge).
pub const EYEBROW_MAX: usize = 22;

/// The words of one ad.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdCopy {
    /// The big line.
    pub headline: String,
    /// One or two sentences under it.
    pub supporting: String,
    /// The button label.
    pub cta: String,
    /// A short kicker: an offer, "New", or who it is for.
    pub eyebrow: String,
}

/// Writes the copy for `product` aimed at `audience`, steered by `prompt`.
pub fn write_copy(product: &Product, audience: &Audience, prompt: Option<&str>) -> AdCopy {
    let prompt = prompt.unwrap_or("").trim();
    let seed = fnv1a(&[
        &product.name,
        product.description.as_deref().unwrap_or(""),
        &product.details.to_string(),
        &audience.name,
        audience.description.as_deref().unwrap_or(""),
        &audience.details.to_string(),
        prompt,
    ]);
    let name = clean(&product.name);
    let benefit = first_text(
        &product.details,
        &["benefits", "benefit", "features", "tagline"],
    )
    .or_else(|| product.description.as_deref().and_then(first_clause))
    .map(|b| trim_words(&b, 34));
    let pain = first_text(
        &audience.details,
        &["pain_points", "pain_point", "problems"],
    )
    .map(|p| trim_words(&lower_first(&p), 28));
    let motivation = first_text(&audience.details, &["motivations", "motivation", "goals"])
        .map(|m| trim_words(&m, 30));
    let who = audience_noun(audience);
    let offer = first_text(&product.details, &["offer", "discount", "promotion"])
        .or_else(|| find_percent(prompt));
    let tone = Tone::detect(prompt, &audience.details);

    let mut headlines: Vec<String> = Vec::new();
    if let Some(q) = quoted(prompt) {
        headlines.push(q);
    } else {
        if let Some(b) = &benefit {
            headlines.push(sentence(b));
            headlines.push(format!("{name}. {}", sentence(b)));
        }
        if let Some(p) = &pain {
            headlines.push(format!("Say goodbye to {}.", strip_stop(p)));
            headlines.push(format!("No more {}.", strip_stop(p)));
        }
        if let Some(m) = &motivation {
            headlines.push(format!("{}, made easy.", capitalise(strip_stop(m))));
        }
        headlines.push(format!("Meet {name}."));
        if let Some(w) = &who {
            headlines.push(format!("Made for {w}."));
        }
        headlines.push(match tone {
            Tone::Urgent => format!("{name}, while it lasts."),
            Tone::Premium => format!("{name}. Nothing less."),
            Tone::Playful => format!("Hello, {name}!"),
            Tone::Warm => format!("Your new favourite: {name}"),
        });
    }
    // Candidates are listed strongest first (benefit, pain, motivation, then generic
    // lines); the hash chooses among the strongest few that fit.
    let headline = pick(&headlines, seed, HEADLINE_MAX, 3).unwrap_or_else(|| trim_words(&name, 42));

    let mut supporting: Vec<String> = Vec::new();
    if let Some(d) = product
        .description
        .as_deref()
        .map(clean)
        .filter(|d| !d.is_empty())
    {
        supporting.push(first_sentence(&d));
    }
    if let (Some(w), Some(b)) = (&who, &benefit) {
        supporting.push(format!("{name} helps {w} {}.", lower_first(strip_stop(b))));
    }
    if let (Some(p), Some(m)) = (&pain, &motivation) {
        supporting.push(format!(
            "Less {}, more {}.",
            strip_stop(p),
            lower_first(strip_stop(m))
        ));
    }
    if let Some(w) = &who {
        supporting.push(format!("Designed for {w} who want more from every day."));
    }
    supporting.push(format!("Discover what makes {name} different."));
    let supporting_line = supporting
        .iter()
        .find(|s| s.chars().count() <= SUPPORTING_MAX)
        .cloned()
        .unwrap_or_else(|| trim_words(&supporting[0], SUPPORTING_MAX));

    let ctas: &[&str] = if offer.is_some() {
        &["Claim offer", "Shop the offer", "Get the deal"]
    } else {
        match tone {
            Tone::Urgent => &["Shop now", "Order today", "Get yours now"],
            Tone::Premium => &["Discover more", "Explore now", "Find yours"],
            Tone::Playful => &["Try it now", "Get yours", "Let's go"],
            Tone::Warm => &["Shop now", "Get yours", "Try it today", "Learn more"],
        }
    };
    let cta = ctas[(seed >> 8) as usize % ctas.len()].to_owned();

    let eyebrow = if let Some(o) = offer {
        trim_words(&o.to_uppercase(), EYEBROW_MAX)
    } else if contains_any(prompt, &["launch", "new", "introduc"]) {
        "NEW".to_owned()
    } else if let Some(w) = who.as_deref().filter(|w| {
        w.chars().count() + 4 <= EYEBROW_MAX && !headline.to_lowercase().contains(&w.to_lowercase())
    }) {
        format!("FOR {}", w.to_uppercase())
    } else {
        trim_words(&name.to_uppercase(), EYEBROW_MAX)
    };
    AdCopy {
        headline,
        supporting: supporting_line,
        cta,
        eyebrow,
    }
}

/// Voice of the copy, from the audience's `tone` or words in the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tone {
    Warm,
    Urgent,
    Premium,
    Playful,
}

impl Tone {
    fn detect(prompt: &str, audience: &Value) -> Tone {
        let tone = first_text(audience, &["tone", "voice"]).unwrap_or_default();
        let text = format!("{prompt} {tone}");
        if contains_any(&text, &["urgent", "sale", "limited", "hurry", "today only"]) {
            Tone::Urgent
        } else if contains_any(
            &text,
            &["luxur", "premium", "elegant", "refined", "minimal"],
        ) {
            Tone::Premium
        } else if contains_any(&text, &["playful", "fun", "bold", "energetic", "cheeky"]) {
            Tone::Playful
        } else {
            Tone::Warm
        }
    }
}

pub use crate::services::fnv1a;

/// The candidate at the hashed index among the first `among` that fit `max` characters.
fn pick(candidates: &[String], seed: u64, max: usize, among: usize) -> Option<String> {
    let fitting: Vec<&String> = candidates
        .iter()
        .filter(|c| !c.is_empty() && c.chars().count() <= max)
        .take(among)
        .collect();
    if fitting.is_empty() {
        return None;
    }
    Some(fitting[(seed % fitting.len() as u64) as usize].clone())
}

/// The first string in `details[key]` for the first key present (a string, or the first
/// string of an array).
fn first_text(details: &Value, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| {
        let v = details.get(k)?;
        let s = match v {
            Value::String(s) => s.clone(),
            Value::Array(a) => a.iter().find_map(Value::as_str)?.to_owned(),
            Value::Number(n) => n.to_string(),
            _ => return None,
        };
        let s = clean(&s);
        (!s.is_empty()).then_some(s)
    })
}

/// Collapses whitespace and trims.
fn clean(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Cuts at a word boundary to at most `max` characters, without an ellipsis.
fn trim_words(s: &str, max: usize) -> String {
    let s = clean(s);
    if s.chars().count() <= max {
        return s;
    }
    let mut out = String::new();
    for word in s.split(' ') {
        if out.chars().count() + word.chars().count() + usize::from(!out.is_empty()) > max {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    if out.is_empty() {
        out = s.chars().take(max).collect();
    }
    out.trim_end_matches([',', ';', ':', '-', '–']).to_owned()
}

fn first_sentence(s: &str) -> String {
    let end = s
        .char_indices()
        .find(|(i, c)| matches!(c, '.' | '!' | '?') && *i > 20)
        .map(|(i, c)| i + c.len_utf8());
    let sentence = end.map_or(s, |e| &s[..e]);
    if sentence.chars().count() <= SUPPORTING_MAX {
        sentence.to_owned()
    } else {
        format!("{}.", trim_words(sentence, SUPPORTING_MAX - 1))
    }
}

fn first_clause(s: &str) -> Option<String> {
    let clause = s.split(['.', '!', '?', ';', '—']).next()?.trim();
    (!clause.is_empty()).then(|| clause.to_owned())
}

fn strip_stop(s: &str) -> &str {
    s.trim_end_matches(['.', '!', '?', ' '])
}

fn sentence(s: &str) -> String {
    let s = capitalise(strip_stop(s));
    format!("{s}.")
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match (c.next(), c.clone().next()) {
        // Keep acronyms ("UV", "AI") as they are.
        (Some(f), Some(n)) if !n.is_uppercase() => f.to_lowercase().chain(c).collect(),
        _ => s.to_owned(),
    }
}

fn contains_any(text: &str, words: &[&str]) -> bool {
    let t = text.to_lowercase();
    words.iter().any(|w| t.contains(w))
}

/// A phrase in straight or curly double quotes, if it fits a headline.
fn quoted(prompt: &str) -> Option<String> {
    let start = prompt.find(['"', '“'])?;
    let rest = &prompt[start..];
    let open = rest.chars().next()?.len_utf8();
    let end = rest[open..].find(['"', '”'])?;
    let q = clean(&rest[open..open + end]);
    (!q.is_empty() && q.chars().count() <= HEADLINE_MAX).then_some(q)
}

/// An offer the prompt names, "20% off" style ("save 20%", "-20%" keep their figure).
pub(super) fn find_percent(prompt: &str) -> Option<String> {
    let words: Vec<&str> = prompt.split_whitespace().collect();
    let i = words.iter().position(|w| w.contains('%'))?;
    let mut s = words[i]
        .trim_matches(|c: char| !c.is_alphanumeric() && c != '%')
        .to_owned();
    if words
        .get(i + 1)
        .is_some_and(|w| w.to_lowercase().starts_with("off"))
    {
        s.push_str(" off");
    }
    Some(s)
}

/// The audience as a plural noun phrase for "made for …": its name, lower-cased unless it
/// looks like a proper noun.
fn audience_noun(audience: &Audience) -> Option<String> {
    let n = clean(&audience.name);
    if n.is_empty() || n.chars().count() > 28 {
        return None;
    }
    Some(lower_first(&n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn product() -> Product {
        Product {
            id: "prod_1".into(),
            name: "Northwind Cold Brew".into(),
            description: Some("Smooth, low-acid cold brew concentrate. Makes 16 cups.".into()),
            details: json!({"benefits": ["Barista-grade coffee at home"]}),
        }
    }

    fn audience() -> Audience {
        Audience {
            id: "aud_1".into(),
            name: "Busy parents".into(),
            description: None,
            details: json!({"pain_points": ["Rushed mornings"], "motivations": ["Calm starts"]}),
        }
    }

    #[test]
    fn copy_is_deterministic_and_fits() {
        let a = write_copy(&product(), &audience(), Some("warm, homely"));
        assert_eq!(a, write_copy(&product(), &audience(), Some("warm, homely")));
        assert!(a.headline.chars().count() <= HEADLINE_MAX);
        assert!(a.supporting.chars().count() <= SUPPORTING_MAX);
        assert!(a.cta.chars().count() <= CTA_MAX);
        assert!(a.eyebrow.chars().count() <= EYEBROW_MAX);
    }

    #[test]
    fn quoted_prompt_becomes_the_headline_and_offers_drive_the_cta() {
        let c = write_copy(
            &product(),
            &audience(),
            Some("Use \"Mornings, sorted\" — 20% off"),
        );
        assert_eq!(c.headline, "Mornings, sorted");
        assert_eq!(c.eyebrow, "20% OFF");
        assert!(["Claim offer", "Shop the offer", "Get the deal"].contains(&c.cta.as_str()));
    }
}
