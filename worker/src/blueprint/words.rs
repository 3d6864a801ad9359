//! What the words of a text block say about its role, and how they are set (their case):
//! pure functions of the text Tesseract read, used by the blueprint's role step and by the
//! copywriter (which follows the reference's case and structure).
//!
//! Roles from words, first match wins:
//!
//! | role | the words |
//! |---|---|
//! | `quote` | open with a quotation mark (“ " « ‘) before a capital and two words, or close with one over two lines |
//! | `rating` | stars (★), "4.8/5", "5 stars", "rated 4.9" |
//! | `price` | a currency sign or code next to a number ("$24", "24 €", "from $19.99") |
//! | `offer` | a percentage with off/sale/save, "-30%", "sale", "deal", "discount", "free shipping" (set short: as a sentence, "Free shipping on orders over $30", it is the shop's terms and keeps its layout role), "buy one get one" |
//! | `list_item` | lines that start with a number ("1.", "2)") or a bullet (•, ✓, -) |
//! | `quote_author` | a short line that starts with a dash ("— Maria L.") |
//! | `stat` | a short line led by a figure ("93%", "2x faster", "16 cups", "10,000+") |
//! | `cta` | a call to action on its own ("Read more", "Swipe up", "Shop now") |
//!
//! Anything else keeps the role the layout gave it (headline, supporting, eyebrow).

use super::TextRole;

/// How a line is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Casing {
    /// ALL CAPITALS.
    Upper,
    /// Every Word Capitalised.
    Title,
    /// A capital first, then lower case.
    Sentence,
    /// all lower case.
    Lower,
}

impl Casing {
    /// The key templates and reports write (`upper`, `title`, `sentence`, `lower`).
    pub fn key(self) -> &'static str {
        match self {
            Casing::Upper => "upper",
            Casing::Title => "title",
            Casing::Sentence => "sentence",
            Casing::Lower => "lower",
        }
    }

    /// The casing named `key`.
    pub fn from_key(key: &str) -> Option<Casing> {
        [
            Casing::Upper,
            Casing::Title,
            Casing::Sentence,
            Casing::Lower,
        ]
        .into_iter()
        .find(|c| c.key() == key)
    }

    /// `text` set in this case (title case leaves short joining words lower case).
    pub fn apply(self, text: &str) -> String {
        match self {
            Casing::Upper => text.to_uppercase(),
            Casing::Lower => text.to_lowercase(),
            Casing::Sentence => text.to_owned(),
            Casing::Title => text
                .split(' ')
                .enumerate()
                .map(|(i, w)| {
                    let small = [
                        "a", "an", "and", "at", "for", "in", "of", "on", "or", "the", "to", "with",
                    ];
                    if i > 0 && small.contains(&w) {
                        w.to_owned()
                    } else {
                        let mut c = w.chars();
                        c.next()
                            .map(|f| f.to_uppercase().chain(c).collect())
                            .unwrap_or_default()
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// The case of `text`: `None` when it has fewer than two letters.
pub fn casing(text: &str) -> Option<Casing> {
    let letters: Vec<char> = text.chars().filter(|c| c.is_alphabetic()).collect();
    if letters.len() < 2 {
        return None;
    }
    if letters.iter().all(|c| c.is_uppercase()) {
        return Some(Casing::Upper);
    }
    // "3 reasons to switch" is a sentence led by a figure, not lower case.
    let led_by_letter = text
        .trim_start()
        .chars()
        .find(|c| c.is_alphanumeric())
        .is_some_and(char::is_alphabetic);
    if letters.iter().all(|c| c.is_lowercase()) {
        if !led_by_letter {
            return Some(Casing::Sentence);
        }
        return Some(Casing::Lower);
    }
    let words: Vec<&str> = text
        .split_whitespace()
        .filter(|w| w.chars().any(char::is_alphabetic) && w.chars().count() > 3)
        .collect();
    let capitalised = |w: &&str| {
        w.chars()
            .find(|c| c.is_alphabetic())
            .is_some_and(char::is_uppercase)
    };
    if words.len() >= 2 && words.iter().all(capitalised) {
        Some(Casing::Title)
    } else {
        Some(Casing::Sentence)
    }
}

/// Currency signs and codes a price is written with.
const CURRENCY_SIGNS: [char; 6] = ['$', '€', '£', '¥', '₹', '₩'];
const CURRENCY_CODES: [&str; 8] = ["usd", "eur", "gbp", "chf", "cad", "aud", "sek", "jpy"];

/// Calls to action a line can be on its own.
pub const CTA_PHRASES: [&str; 22] = [
    "shop now",
    "buy now",
    "order now",
    "learn more",
    "read more",
    "swipe up",
    "try it",
    "try it now",
    "get yours",
    "get started",
    "sign up",
    "subscribe",
    "book now",
    "download",
    "discover more",
    "find out more",
    "see more",
    "shop the sale",
    "claim offer",
    "get the deal",
    "start now",
    "join now",
];

/// True when `text` holds a price: a currency sign or code next to a number.
pub fn has_price(text: &str) -> bool {
    !prices(text).is_empty()
}

/// The amounts of the prices written in `text` ("$24" → 24.0; "€19,99" → 19.99).
pub fn prices(text: &str) -> Vec<f64> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let number_at = |start: usize| -> Option<(f64, usize)> {
        let mut end = start;
        while end < chars.len() && (chars[end].is_ascii_digit() || ",.".contains(chars[end])) {
            end += 1;
        }
        let s: String = chars[start..end].iter().collect();
        let s = s.trim_end_matches([',', '.']);
        if !s.chars().next()?.is_ascii_digit() {
            return None;
        }
        parse_amount(s).map(|v| (v, end))
    };
    for (i, c) in chars.iter().enumerate() {
        if CURRENCY_SIGNS.contains(c) {
            let mut j = i + 1;
            while j < chars.len() && chars[j] == ' ' {
                j += 1;
            }
            if let Some((v, _)) = number_at(j) {
                out.push(v);
                continue;
            }
            // "24 €", "24€"
            let mut k = i;
            while k > 0 && chars[k - 1] == ' ' {
                k -= 1;
            }
            let mut start = k;
            while start > 0
                && (chars[start - 1].is_ascii_digit() || ",.".contains(chars[start - 1]))
            {
                start -= 1;
            }
            if start < k
                && let Some((v, _)) = number_at(start)
            {
                out.push(v);
            }
        }
    }
    let lower = text.to_lowercase();
    let tokens: Vec<&str> = lower.split_whitespace().collect();
    for (i, t) in tokens.iter().enumerate() {
        let code = t.trim_matches(|c: char| !c.is_alphabetic());
        if CURRENCY_CODES.contains(&code) {
            for n in [i.checked_sub(1), Some(i + 1)].into_iter().flatten() {
                if let Some(v) = tokens.get(n).and_then(|t| {
                    parse_amount(
                        t.trim_matches(|c: char| !c.is_ascii_digit() && c != '.' && c != ','),
                    )
                }) {
                    out.push(v);
                }
            }
        }
    }
    out
}

/// "1,299.00" → 1299.0, "19,99" → 19.99.
fn parse_amount(s: &str) -> Option<f64> {
    if s.is_empty() {
        return None;
    }
    let normalised = match (s.rfind('.'), s.rfind(',')) {
        (Some(d), Some(c)) if c > d => s.replace('.', "").replace(',', "."),
        (None, Some(c)) if s.len() - c == 3 => s.replace(',', "."),
        _ => s.replace(',', ""),
    };
    normalised.parse().ok()
}

/// Lower-case words of `text` (letters, digits, `%`).
fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '%' && c != '.')
        .map(|w| w.trim_matches('.').to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// True when `text` states a discount or deal.
pub fn has_offer(text: &str) -> bool {
    let lower = text.to_lowercase();
    let ws = tokens(&lower);
    let has = |w: &str| ws.iter().any(|x| x == w);
    let percent = lower.contains('%');
    (percent && (has("off") || has("sale") || has("save") || lower.contains("-")))
        || has("sale")
        || has("deal")
        || has("deals")
        || has("discount")
        || has("coupon")
        || has("bogo")
        || lower.contains("free shipping")
        || lower.contains("free delivery")
        || lower.contains("buy one")
        || lower.contains("buy 1")
        || (has("off")
            && ws
                .iter()
                .any(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit())))
        || (has("save") && (percent || has_price(text)))
}

/// Opening marks, single ones included: Tesseract reads a script face's “ as ‘.
fn starts_with_quote(t: &str) -> bool {
    t.starts_with(['“', '"', '«', '„', '”', '‘', '’'])
}

/// A quotation opens a sentence: a capital or a figure right after its mark, and two words
/// or more unless a closing mark ends it ("“Wow.”"). A mark before one word or a lower-case
/// fragment ("‘ttle", "“Roast", "‘it risk-free") is a stray stroke read as a mark (a
/// photo's edge, a script face's swash), not a quote.
fn quoted_sentence(t: &str) -> bool {
    let body = t.trim_start_matches(['“', '"', '«', '„', '”', '‘', '’', ' ']);
    let capital = body
        .chars()
        .next()
        .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit());
    capital && (body.split_whitespace().count() >= 2 || ends_with_quote(body))
}

/// A shop's standing terms set as a sentence ("Free shipping on orders over $30", "Free
/// returns within 30 days"): supporting copy, not the ad's deal (a short "FREE SHIPPING" set
/// on its own is one), and its threshold is not the product's price.
pub(super) fn standing_terms(text: &str) -> bool {
    let lower = text.to_lowercase();
    let perk = ["free shipping", "free delivery", "free returns"]
        .iter()
        .any(|p| lower.contains(p));
    perk && !lower.contains('%') && tokens(&lower).len() >= 4
}

fn ends_with_quote(t: &str) -> bool {
    t.trim_end_matches(['.', ' '])
        .ends_with(['”', '"', '»', '“', '’'])
}

/// A list line: a number with "." or ")", or a bullet, then words.
pub fn list_marker(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    // "1." or "2)" before the item's words; "5.0" is a score, not a marker.
    if digits > 0
        && digits <= 2
        && t[digits..].starts_with(['.', ')'])
        && !t[digits + 1..].starts_with(|c: char| c.is_ascii_digit())
    {
        return Some(&t[..digits + 1]);
    }
    let first = t.chars().next()?;
    if ['•', '·', '▪', '✓', '✔', '✗', '✘', '×', '-', '*', '>', '–'].contains(&first)
        && t[first.len_utf8()..].starts_with(' ')
    {
        return Some(&t[..first.len_utf8()]);
    }
    None
}

/// True when `text` is a rating: stars or a score out of five.
pub fn has_rating(text: &str) -> bool {
    let lower = text.to_lowercase();
    let ws = tokens(&lower);
    lower.contains('★')
        || lower.contains('☆')
        || lower.contains("/5")
        || lower.contains("out of 5")
        || (ws.iter().any(|w| w == "stars" || w == "star")
            && ws.iter().any(|w| w.parse::<f32>().is_ok()))
        || (ws.iter().any(|w| w == "rated") && ws.iter().any(|w| w.parse::<f32>().is_ok()))
}

/// True when `text` is a score and nothing else ("4.9/5", "4.8 out of 5"): set alone, with
/// no stars, it is a figure the ad leads with; a rating shows its stars (the detector finds
/// a row of stars by its shapes).
fn bare_score(text: &str) -> bool {
    let t = text.trim();
    let score = t
        .strip_suffix("out of 5")
        .or_else(|| t.strip_suffix("/5"))
        .or_else(|| t.strip_suffix("/10"))
        .map(str::trim_end);
    score.is_some_and(|n| {
        !n.is_empty()
            && n.chars().all(|c| c.is_ascii_digit() || c == '.')
            && n.parse::<f32>().is_ok()
    })
}

/// True when `text` is a short line led by a figure.
pub fn is_stat(text: &str) -> bool {
    let ws: Vec<&str> = text.split_whitespace().collect();
    let Some(first) = ws.first() else {
        return false;
    };
    // "3 ways to …" leads a listicle's headline, not a figure.
    let listicle = [
        "ways", "reasons", "things", "tips", "steps", "signs", "secrets",
    ];
    if ws
        .get(1)
        .is_some_and(|w| listicle.contains(&w.to_lowercase().as_str()))
    {
        return false;
    }
    // "1 acid, ready in a": a bare figure whose next word ends a clause is a sentence's
    // fragment (a line read in part), not a figure set on its own.
    if first.chars().all(|c| c.is_ascii_digit()) && ws.get(1).is_some_and(|w| w.ends_with(',')) {
        return false;
    }
    let lead = first.trim_start_matches(['+', '~']);
    let digits = lead
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',' || *c == '.')
        .count();
    digits > 0
        && lead[digits..]
            .trim_end_matches(['+', '.'])
            .chars()
            .all(|c| matches!(c, '%' | 'x' | 'X' | 'k' | 'K' | 'm' | 'M' | '×'))
        && ws.len() <= 7
}

/// The role `text` (the words of one block) says the block plays, if it says one.
pub fn role_of(text: &str) -> Option<TextRole> {
    let t = text.trim();
    if t.chars().filter(|c| c.is_alphanumeric()).count() == 0 && !t.contains('★') {
        return None;
    }
    let lines: Vec<&str> = t.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if (starts_with_quote(t) && quoted_sentence(t)) || (ends_with_quote(t) && lines.len() >= 2) {
        return Some(TextRole::Quote);
    }
    if bare_score(t) {
        return Some(TextRole::Stat);
    }
    if has_rating(t) {
        return Some(TextRole::Rating);
    }
    // "— Maria Lopez": one short line, a dash, then a capitalised name.
    if lines.len() == 1
        && t.starts_with(['—', '–', '-', '~'])
        && t.split_whitespace().count() <= 6
        && t.trim_start_matches(['—', '–', '-', '~', ' '])
            .chars()
            .next()
            .is_some_and(char::is_uppercase)
    {
        return Some(TextRole::QuoteAuthor);
    }
    // "2. Free delivery" is an item of a list before it is an offer; an item's words may
    // wrap onto lines of their own.
    if lines.first().is_some_and(|l| list_marker(l).is_some()) {
        return Some(TextRole::ListItem);
    }
    // A whole call to action ("Shop the sale", "Claim offer") is one before it is an
    // offer: its words name the offer, the button asks for the click.
    let plain: String = t
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ')
        .collect();
    if CTA_PHRASES.contains(&plain.trim()) {
        return Some(TextRole::Cta);
    }
    if standing_terms(t) {
        return None;
    }
    if has_price(t) && !has_offer(t) {
        return Some(TextRole::Price);
    }
    if has_offer(t) {
        return Some(TextRole::Offer);
    }
    if !lines.is_empty()
        && lines.iter().filter(|l| list_marker(l).is_some()).count() * 2 > lines.len()
    {
        return Some(TextRole::ListItem);
    }
    if lines.len() <= 2 && is_stat(lines.first().copied().unwrap_or_default()) {
        return Some(TextRole::Stat);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_decide_roles() {
        for (t, r) in [
            (
                "“The only coffee my\nwhole team agrees on.”",
                Some(TextRole::Quote),
            ),
            // A script face's “ read as ‘.
            (
                "‘The only coffee my whole team agrees en.’",
                Some(TextRole::Quote),
            ),
            ("★★★★★ 4.9/5", Some(TextRole::Rating)),
            ("$24", Some(TextRole::Price)),
            ("From 19,99 €", Some(TextRole::Price)),
            ("50% OFF\nALL WEEK", Some(TextRole::Offer)),
            ("-30% this week", Some(TextRole::Offer)),
            ("SUMMER SALE", Some(TextRole::Offer)),
            ("Save $8 today", Some(TextRole::Offer)),
            ("FREE SHIPPING", Some(TextRole::Offer)),
            ("Free shipping on orders over $30", None),
            ("Free shipping on orders\nover $30", None),
            // Stray marks before a word or a fragment are not quotes.
            ("‘ttle", None),
            ("“Roast", None),
            ("‘it risk-free for 30 days", None),
            ("“Wow.”", Some(TextRole::Quote)),
            (
                "1. Brew it cold\n2. Pour over ice\n3. Enjoy",
                Some(TextRole::ListItem),
            ),
            ("— Maria Lopez", Some(TextRole::QuoteAuthor)),
            ("- Maria Lopez", Some(TextRole::QuoteAuthor)),
            ("- free returns", Some(TextRole::ListItem)),
            ("93% of users", Some(TextRole::Stat)),
            ("4.9/5", Some(TextRole::Stat)),
            ("4.8 out of 5", Some(TextRole::Stat)),
            ("Rated 4.9/5", Some(TextRole::Rating)),
            ("1 acid, ready ina", None),
            ("Shop the sale", Some(TextRole::Cta)),
            ("Claim offer", Some(TextRole::Cta)),
            ("2x faster", Some(TextRole::Stat)),
            ("3 ways to sleep better", None),
            ("READ MORE", Some(TextRole::Cta)),
            ("Swipe up", Some(TextRole::Cta)),
            ("Wake up to better coffee", None),
            ("Is your coffee too bitter?", None),
            ("Fresh coffee, delivered weekly", None),
        ] {
            assert_eq!(role_of(t), r, "{t}");
        }
        assert_eq!(prices("was $32.00 now $24"), vec![32.0, 24.0]);
        assert_eq!(prices("1.299,00 EUR"), vec![1299.0]);
    }

    #[test]
    fn casing_is_read_and_applied() {
        assert_eq!(casing("SUMMER SALE 50%"), Some(Casing::Upper));
        assert_eq!(casing("Wake Up To Better Coffee"), Some(Casing::Title));
        assert_eq!(casing("Wake up to better coffee"), Some(Casing::Sentence));
        assert_eq!(casing("slow morning guide"), Some(Casing::Lower));
        assert_eq!(casing("3 reasons to\nswitch today"), Some(Casing::Sentence));
        assert_eq!(casing("$24"), None);
        assert_eq!(
            Casing::Title.apply("coffee for the road"),
            "Coffee for the Road"
        );
    }
}
