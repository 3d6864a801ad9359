//! Text helpers of the copywriter: urgency and imperative words, cuts of a long line at its
//! sentence and clause boundaries, the reference's case, numbers, and words the prompt
//! quotes.

use super::*;

/// Words of a reference's line that make it urgent ("-30% this week", "Ends Sunday").
pub(super) const URGENCY: [&str; 12] = [
    "this week",
    "today",
    "ends",
    "until",
    "last chance",
    "limited",
    "hurry",
    "now only",
    "weekend",
    "tonight",
    "while",
    "don't miss",
];

/// Whether slot `o` shows an offer's figure: an offer or badge slot whose reference words
/// hold a digit, or were not read.
pub(super) fn shows_figure(o: &SlotSpec) -> bool {
    (o.role == "offer" || o.key == "badge_label" || o.on.as_deref() == Some("badge"))
        && o.words
            .as_deref()
            .is_none_or(|w| w.chars().any(|c| c.is_ascii_digit()))
}

/// Whether slot `s` calls for urgency: its reference words say it, or it is the eyebrow
/// or supporting line of an offer ad.
pub(super) fn urgent(s: &SlotSpec, reference: &Reference) -> bool {
    // Words on their boundaries: " ends " is not in "friends".
    let words: Vec<String> = s
        .words
        .as_deref()
        .unwrap_or("")
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect();
    let line = format!(" {} ", words.join(" "));
    URGENCY.iter().any(|u| line.contains(&format!(" {u} ")))
        || (reference.format.as_deref() == Some("offer_sale")
            && matches!(s.role.as_str(), "eyebrow" | "supporting"))
}

/// Imperative openings a headline may have.
pub(super) const IMPERATIVES: [&str; 24] = [
    "try", "get", "wake", "meet", "discover", "start", "make", "taste", "say", "feel", "enjoy",
    "switch", "upgrade", "find", "give", "treat", "shop", "brew", "sleep", "stop", "join", "see",
    "grab", "unlock",
];

/// `text` and its shorter cuts at sentence, then clause boundaries (never mid-clause).
pub(super) fn shorter(text: &str) -> Vec<String> {
    let text = clean(text);
    let mut out = vec![text.clone()];
    let mut acc = String::new();
    for part in split_keep(&text, &['.', '!', '?']) {
        acc.push_str(&part);
        let a = acc.trim().to_owned();
        if !a.is_empty() && a != text {
            out.push(a);
        }
    }
    let first = out.get(1).cloned().unwrap_or_else(|| text.clone());
    let mut acc = String::new();
    for part in split_keep(&first, &[',', ';', '—', ':']) {
        acc.push_str(&part);
        let a = acc
            .trim()
            .trim_end_matches([',', ';', '—', ':'])
            .trim()
            .to_owned();
        // Fewer than three words is a fragment more often than a clause: a comma between
        // adjectives ("A chocolatey, low-acid blend") is no clause boundary.
        if a.split_whitespace().count() >= 3 && !out.contains(&a) {
            out.push(a);
        }
    }
    out
}

/// `s` split after each of `marks`, the marks kept.
pub(super) fn split_keep(s: &str, marks: &[char]) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in s.chars() {
        cur.push(c);
        if marks.contains(&c) {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out
}

pub(super) fn apply_case(case: Option<Casing>, text: &str) -> String {
    match case {
        Some(Casing::Upper) => text.to_uppercase(),
        Some(Casing::Lower) => text.to_lowercase(),
        // A title ends without a full stop ("Ready in a Minute", not "… Minute.").
        Some(Casing::Title) => Casing::Title.apply(
            text.strip_suffix('.')
                .filter(|t| !t.ends_with('.'))
                .unwrap_or(text),
        ),
        _ => text.to_owned(),
    }
}

pub(super) fn trim_num(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{v:.1}")
    }
}

pub(super) fn strip_stop(s: &str) -> &str {
    s.trim_end_matches(['.', '!', '?', ' '])
}

pub(super) fn sentence(s: &str) -> String {
    format!("{}.", capitalise(strip_stop(s)))
}

pub(super) fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

pub(super) fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match (c.next(), c.clone().next()) {
        (Some(f), Some(n)) if !n.is_uppercase() => f.to_lowercase().chain(c).collect(),
        _ => s.to_owned(),
    }
}

/// A phrase in straight or curly double quotes in the prompt.
pub(super) fn quoted(prompt: &str) -> Option<String> {
    let start = prompt.find(['"', '“'])?;
    let rest = &prompt[start..];
    let open = rest.chars().next()?.len_utf8();
    let end = rest[open..].find(['"', '”'])?;
    let q = clean(&rest[open..open + end]);
    (!q.is_empty()).then_some(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reviews_are_cut_only_at_boundaries() {
        let cuts = shorter("The only coffee my whole team agrees on. Smooth, and never bitter.");
        assert_eq!(
            cuts[0],
            "The only coffee my whole team agrees on. Smooth, and never bitter."
        );
        assert!(cuts.contains(&"The only coffee my whole team agrees on.".to_owned()));
        for c in &cuts {
            assert!(c.ends_with(['.', '!', '?']) || !c.contains('.'), "{c}");
        }
    }

    #[test]
    fn a_comma_between_adjectives_is_not_a_clause_boundary() {
        let cuts = shorter(
            "A chocolatey, low-acid espresso blend roasted twice a week and shipped within 24 hours of roasting.",
        );
        assert!(!cuts.iter().any(|c| c == "A chocolatey"), "{cuts:?}");
        assert!(
            cuts.iter().all(|c| c.split_whitespace().count() >= 3),
            "{cuts:?}"
        );
    }
}
