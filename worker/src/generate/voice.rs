//! The brand's voice (`brand.details.voice`): its `description` steers which phrase
//! patterns the template writer ([`super::slots`]) prefers, and its `avoid` words are never
//! written (the grounding rule refuses them, [`super::grounding::check_text`]).
//!
//! The description is read for a [`Tone`] by its words, first match wins: `minimal`
//! ("minimal", "understated", "sparse", "quiet", "concise", "simple", "clean"), then
//! `formal` ("formal", "professional", "refined", "elegant", "premium", "luxury",
//! "sophisticated", "expert", "authoritative", "classic"), then `playful` ("playful", "fun",
//! "cheeky", "witty", "quirky", "bold", "energetic", "cheerful", "upbeat", "bubbly"). A tone
//! adds its own patterns to the candidates of headlines, supporting lines and calls to
//! action ([`Tone::headlines`], [`Tone::ctas`]) and weighs every candidate
//! ([`Tone::weigh`]): playful lines with an exclamation, a question or "you" are preferred;
//! formal lines without exclamations or contractions; minimal lines short and plain. The
//! weighing is a pure function of the words, so the choice stays deterministic.
//!
//! Rejected: embedding the description and comparing it with the candidates (the text
//! model is not loaded on every render node, and a few words name a tone plainly enough).

use serde_json::Value;

/// How the brand speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tone {
    /// No description, or one that names no tone: the patterns are weighed alike.
    #[default]
    Neutral,
    Playful,
    Formal,
    Minimal,
}

/// Words of a description naming each tone, in the order they are tried.
const TONE_WORDS: [(Tone, &[&str]); 3] = [
    (
        Tone::Minimal,
        &[
            "minimal",
            "minimalist",
            "understated",
            "sparse",
            "quiet",
            "concise",
            "simple",
            "clean",
            "spare",
            "terse",
        ],
    ),
    (
        Tone::Formal,
        &[
            "formal",
            "professional",
            "refined",
            "elegant",
            "premium",
            "luxury",
            "luxurious",
            "sophisticated",
            "expert",
            "authoritative",
            "classic",
            "serious",
        ],
    ),
    (
        Tone::Playful,
        &[
            "playful",
            "fun",
            "cheeky",
            "witty",
            "quirky",
            "bold",
            "energetic",
            "cheerful",
            "upbeat",
            "bubbly",
            "irreverent",
            "silly",
        ],
    ),
];

impl Tone {
    /// The tone a voice `description` names (see the module docs).
    pub fn from_description(description: &str) -> Tone {
        let words: Vec<String> = description
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        TONE_WORDS
            .iter()
            .find(|(_, names)| words.iter().any(|w| names.contains(&w.as_str())))
            .map_or(Tone::Neutral, |(t, _)| *t)
    }

    /// The tone of a brand's `details` (`voice.description`, or `voice` as a string).
    pub fn of_brand(details: &Value) -> Tone {
        match details.get("voice") {
            Some(Value::String(s)) => Tone::from_description(s),
            Some(Value::Object(v)) => v
                .get("description")
                .and_then(Value::as_str)
                .map_or(Tone::Neutral, Tone::from_description),
            _ => Tone::Neutral,
        }
    }

    /// Its name, as reports and the model's brief say it.
    pub fn key(self) -> &'static str {
        match self {
            Tone::Neutral => "neutral",
            Tone::Playful => "playful",
            Tone::Formal => "formal",
            Tone::Minimal => "minimal",
        }
    }

    /// How much nearer the reference's length a candidate must come to beat one that
    /// suits the tone better: a score to add (lower wins) for `line`, in the writer's
    /// units (a whole reference length is 1.0; the tie-breaking hash spans 0.5).
    pub fn weigh(self, line: &str) -> f32 {
        let lower = line.to_lowercase();
        let exclaims = line.contains('!');
        let asks = line.trim_end().ends_with('?');
        let you = lower
            .split(|c: char| !c.is_alphanumeric() && c != '\'')
            .any(|w| matches!(w, "you" | "your" | "you're" | "yours"));
        let contraction = lower.contains("'") || lower.contains('\u{2019}');
        let words = line.split_whitespace().count();
        match self {
            Tone::Neutral => 0.0,
            Tone::Playful => {
                let mut s = 0.0;
                if exclaims {
                    s -= 0.45;
                }
                if asks || you {
                    s -= 0.2;
                }
                if !exclaims && !asks && !you && words >= 3 {
                    s += 0.15;
                }
                s
            }
            Tone::Formal => {
                let mut s = 0.0;
                if exclaims {
                    s += 0.8;
                }
                if contraction {
                    s += 0.3;
                }
                if you {
                    s += 0.1;
                }
                s
            }
            Tone::Minimal => {
                let mut s = 0.0;
                if exclaims {
                    s += 0.8;
                }
                // Fewer words read plainer: two words score best, every word past four
                // costs a little.
                s += 0.08 * (words.saturating_sub(4) as f32);
                if words <= 3 {
                    s -= 0.2;
                }
                s
            }
        }
    }

    /// Scales the length the writer aims for: a minimal voice says less.
    pub fn length_factor(self) -> f32 {
        match self {
            Tone::Minimal => 0.7,
            _ => 1.0,
        }
    }

    /// Headline patterns of the tone for a product `name`, its first benefit, the
    /// audience's first motivation and who it is for, in the reference's structure (a
    /// question, an imperative, or a statement). No fact in them that the inputs do not
    /// hold: only these words. Questions and invitations take the motivation (a thing one
    /// is ready for: "calm starts"), not a benefit, which is often not a noun ("ready in a
    /// minute").
    pub fn headlines(
        self,
        name: &str,
        about: &About<'_>,
        question: bool,
        imperative: bool,
    ) -> Vec<String> {
        let mut c = Vec::new();
        let (benefit, motive, who) = (about.benefit, about.motive, about.who);
        match self {
            Tone::Neutral => {}
            Tone::Playful => {
                if question {
                    c.push(format!("Ready to meet {name}?"));
                    if let Some(m) = motive {
                        c.push(format!("Fancy {}?", lower_first(m)));
                        c.push(format!("Who's up for {}?", lower_first(m)));
                    }
                } else if imperative {
                    c.push(format!("Go on, try {name}!"));
                    if let Some(m) = motive {
                        c.push(format!("Say hello to {}!", lower_first(m)));
                        c.push(format!("Treat yourself to {}!", lower_first(m)));
                    }
                } else {
                    c.push(format!("Hello, {name}!"));
                    if let Some(m) = motive {
                        c.push(format!("Hello, {}!", lower_first(m)));
                    }
                    if let Some(b) = benefit {
                        c.push(format!("{}? Yes, please!", capitalise(b)));
                        c.push(format!("{}!", capitalise(b)));
                    }
                    if let Some(w) = who {
                        c.push(format!("Psst, {w}: meet {name}!"));
                    }
                }
            }
            Tone::Formal => {
                if question {
                    if let Some(m) = motive {
                        c.push(format!("Is it time for {}?", lower_first(m)));
                        c.push(format!("Seeking {}?", lower_first(m)));
                    }
                    c.push(format!("May we introduce {name}?"));
                } else if imperative {
                    c.push(format!("Discover {name}"));
                    c.push(format!("Experience {name}"));
                    if let Some(m) = motive {
                        c.push(format!("Experience {}", lower_first(m)));
                    }
                } else {
                    c.push(format!("Introducing {name}"));
                    if let Some(b) = benefit {
                        c.push(format!("{name}: {}", lower_first(b)));
                    }
                    if let Some(w) = who {
                        c.push(format!("Crafted for {w}"));
                    }
                }
            }
            Tone::Minimal => {
                if question {
                    c.push(format!("Why {name}?"));
                    if let Some(m) = motive {
                        c.push(format!("{}?", capitalise(m)));
                    }
                } else if imperative {
                    c.push(format!("Try {name}."));
                    if let Some(m) = motive {
                        c.push(format!("Choose {}.", lower_first(m)));
                    }
                } else {
                    c.push(format!("{name}."));
                    if let Some(m) = motive {
                        c.push(format!("{}.", capitalise(m)));
                    }
                    if let Some(b) = benefit {
                        c.push(format!("{}.", capitalise(b)));
                    }
                }
            }
        }
        c
    }

    /// Calls to action of the tone, tried after the reference's own kind.
    pub fn ctas(self) -> &'static [&'static str] {
        match self {
            Tone::Neutral => &[],
            Tone::Playful => &["Grab yours!", "Go on, try it!", "Treat yourself!"],
            Tone::Formal => &["Discover more", "Explore the range", "Learn more"],
            Tone::Minimal => &["Shop", "Discover", "See it"],
        }
    }
}

/// What a headline pattern may name besides the product: its first benefit, the audience's
/// first motivation and who it is for (each as the inputs say it).
#[derive(Debug, Clone, Copy, Default)]
pub struct About<'a> {
    pub benefit: Option<&'a str>,
    pub motive: Option<&'a str>,
    pub who: Option<&'a str>,
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
        (Some(f), Some(n)) if !n.is_uppercase() => f.to_lowercase().chain(c).collect(),
        _ => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_description_names_its_tone() {
        assert_eq!(
            Tone::of_brand(&json!({"voice": {"description": "Playful and warm"}})),
            Tone::Playful
        );
        assert_eq!(
            Tone::of_brand(&json!({"voice": {"description": "Refined, professional"}})),
            Tone::Formal
        );
        assert_eq!(
            Tone::of_brand(&json!({"voice": "Quiet and minimal"})),
            Tone::Minimal
        );
        assert_eq!(Tone::of_brand(&json!({})), Tone::Neutral);
        // "funnel" is not "fun".
        assert_eq!(Tone::from_description("a funnel of leads"), Tone::Neutral);
    }

    #[test]
    fn each_tone_weighs_lines_its_way() {
        assert!(Tone::Playful.weigh("Hello, mornings!") < Tone::Playful.weigh("Meet the blend."));
        assert!(
            Tone::Formal.weigh("Hello, mornings!") > Tone::Formal.weigh("Introducing the blend")
        );
        assert!(
            Tone::Minimal.weigh("The blend.")
                < Tone::Minimal.weigh("Discover what makes the blend so different.")
        );
        assert_eq!(Tone::Neutral.weigh("Anything!"), 0.0);
    }
}
