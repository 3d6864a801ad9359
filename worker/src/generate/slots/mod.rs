//! The copywriter of blueprint templates: it fills each text slot by the role the reference
//! gave it ([`crate::blueprint::TextRole`]), from the job's facts ([`super::facts`]), in
//! the reference's case and structure, at the reference's type size.
//!
//! - `offer`: the product's offer, else the discount computed from the variant's former
//!   price, else an offer the prompt names, written like the reference's ("-30%", "30%
//!   off", "Save 30%"); without one the slot is re-roled (a lead becomes a headline, a badge
//!   shows the price or a figure) or left out — never a made-up discount;
//! - `price` / `compare_at_price`: the variant's prices in their currency's format;
//! - `quote` / `quote_author` / `rating`: a real review, shortened only at sentence or
//!   clause boundaries, attributed as given, stars from its rating;
//! - `list_item_N`: one benefit or feature each, with the reference's list marker;
//! - `stat`: a stat (`value` alone when the reference shows the figure alone; its label
//!   then leads the supporting line);
//! - `headline`: the reference's structure (a question stays a question, an imperative
//!   stays one, a listicle's title introduces the list) filled with the product's own
//!   benefit, pain point or motivation, its length near the reference's;
//! - `supporting`, `eyebrow`, `cta`: the prompt's mentions, the description, the offer;
//!   a call to action of the reference's kind ("Read more" → reading, "Shop now" → buying);
//!   where the slot calls for urgency, when a live offer ends ("Ends June 30");
//! - the brand's voice ([`super::voice`]) adds its own patterns to headlines and calls to
//!   action and weighs every free line; words it avoids are refused by the grounding rule.
//!
//! Every candidate passes the grounding rule ([`super::grounding`]) before it is used, and
//! the renderer's layout engine measures it at the slot's type size
//! ([`adforge_renderer::Renderer::measure_text`]): the fitting candidate nearest the
//! reference's length wins, ties broken by a hash of the job, the reference and the ad's
//! version, so the same inputs and version always give the same words and different
//! references give different ones.
//!
//! Files: [`roles`] (each role's rules, one arm of `State::slot` per role), [`candidates`]
//! (the free roles' candidate lines), [`select`] (grounded, new, fitting, nearest the
//! reference's length; the model's proposals), [`text`] (cuts, case, urgency). Each line
//! composed carries the input fields it came from (issue 39's provenance).

use std::collections::{BTreeMap, HashMap};

use adforge_renderer::{Renderer, Tree, tree::TextStyle};
use serde_json::{Map, Value, json};

use super::copy::fnv1a;
use super::facts::{Facts, clean};
use super::grounding::{
    COMPARE_AT_SOURCE, DISCOUNT_SOURCE, PRICE_SOURCE, Provenance, SAVING_SOURCE, check_text,
    check_text_from,
};
use super::llm::{Brief, BriefSlot, SlotProposer};
use crate::blueprint::words::{CTA_PHRASES, Casing, casing, list_marker};
use crate::protocol::{CopyReport, Refusal, SlotReport};

mod candidates;
mod roles;
mod select;
#[cfg(test)]
mod tests;
mod text;

use select::propose;
use text::*;

/// One text slot of a template.
#[derive(Debug, Clone)]
pub struct SlotSpec {
    /// The node key (`headline`, `list_item_2`, `badge_label`).
    pub key: String,
    /// The role the reference gave it.
    pub role: String,
    /// The reference's words there, when read.
    pub words: Option<String>,
    /// The reference's case there.
    pub case: Option<Casing>,
    /// The reference's line count.
    pub lines: u32,
    /// The node behind it (`badge`, `cta`, …).
    pub on: Option<String>,
    /// Type size in design pixels.
    pub size: f32,
    /// Box width and height in design pixels.
    pub width: f32,
    pub height: f32,
    /// The node's text style, for measuring.
    style: Option<TextStyle>,
}

/// What a slot says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotText {
    /// The words, as set.
    pub text: String,
    /// The role they play (the reference's, or the one the slot was re-roled to).
    pub role: String,
    /// False when the slot is left out (hidden).
    pub shown: bool,
    /// `template`, or `llm` when the operator's model wrote it.
    pub writer: String,
    /// The paths of the inputs its words were composed from (`product.details.guarantee`,
    /// `variant.price`, `computed: …`): the grounding rule credits each fact the words
    /// state to one of them ([`super::grounding::check_text_from`]). Empty for fixed
    /// phrases and a model's lines, whose facts are matched among all inputs.
    pub from: Vec<String>,
}

const TEMPLATE: &str = "template";

/// A candidate line and the inputs its words were composed from ([`SlotText::from`]).
#[derive(Debug, Clone)]
struct Line {
    text: String,
    from: Vec<String>,
}

/// `text`, composed from the inputs at the paths `from` (a `None`, an input not found, is
/// left out).
fn line(text: impl Into<String>, from: &[Option<&str>]) -> Line {
    Line {
        text: text.into(),
        from: from.iter().flatten().map(|p| (*p).to_owned()).collect(),
    }
}

/// Each of `texts`, composed from the inputs at `from`.
fn lines(texts: impl IntoIterator<Item = String>, from: &[Option<&str>]) -> Vec<Line> {
    texts.into_iter().map(|t| line(t, from)).collect()
}

/// The same lines, with `text` changed by `f`.
fn map_text(c: Vec<Line>, f: impl Fn(&str) -> String) -> Vec<Line> {
    c.into_iter()
        .map(|l| Line {
            text: f(&l.text),
            from: l.from,
        })
        .collect()
}

/// The words of every slot, and the report of them.
#[derive(Debug, Clone)]
pub struct Written {
    pub slots: BTreeMap<String, SlotText>,
    pub report: CopyReport,
}

impl Written {
    /// Where each shown slot's words came from, by the name its filled node has
    /// ([`super::fill::display_name`]), for [`super::grounding::check_tree_from`].
    pub fn provenance(&self) -> Provenance {
        self.slots
            .iter()
            .filter(|(_, t)| t.shown)
            .map(|(key, t)| {
                (
                    super::fill::display_name(key),
                    (t.text.clone(), t.from.clone()),
                )
            })
            .collect()
    }
}

/// The text slots of `template` (nodes with `$text`), top to bottom, measured in the brand's
/// `heading` and `body` fonts.
pub fn specs(template: &Value, heading: &str, body: &str) -> Vec<SlotSpec> {
    let Some(nodes) = template.get("nodes").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out: Vec<(f32, SlotSpec)> = Vec::new();
    for (key, n) in nodes {
        let Some(role) = n.get("$text").and_then(Value::as_str) else {
            continue;
        };
        let num = |k: &str| n.get(k).and_then(Value::as_f64).unwrap_or(0.0) as f32;
        let font = if n.get("$font").and_then(Value::as_str) == Some("heading") {
            heading
        } else {
            body
        };
        let mut node: Map<String, Value> = n
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !k.starts_with('$'))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        node.insert("id".into(), json!("t"));
        node.insert("fontFamily".into(), json!(font));
        node.insert("x".into(), json!(0));
        node.insert("y".into(), json!(0));
        let (w, h) = (num("width").max(1.0), num("height").max(1.0));
        let style = Tree::from_value(json!({
            "root": "r",
            "nodes": {"r": {"id": "r", "type": "FRAME", "width": w, "height": h, "children": ["t"]}, "t": node}
        }))
        .ok()
        .and_then(|t| t.get("t").and_then(|n| n.text.clone()));
        let words = n.get("$words").and_then(Value::as_str).map(str::to_owned);
        out.push((
            num("y"),
            SlotSpec {
                key: key.clone(),
                role: role.to_owned(),
                case: n
                    .get("$case")
                    .and_then(Value::as_str)
                    .and_then(Casing::from_key)
                    .or_else(|| words.as_deref().and_then(casing)),
                words,
                lines: n.get("$lines").and_then(Value::as_u64).unwrap_or(1) as u32,
                on: n.get("$on").and_then(Value::as_str).map(str::to_owned),
                size: num("fontSize").max(1.0),
                width: w,
                height: h,
                style,
            },
        ));
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out.into_iter().map(|(_, s)| s).collect()
}

/// What the writer knows of the reference besides its slots.
#[derive(Debug, Clone, Default)]
pub struct Reference {
    pub format: Option<String>,
    pub format_from: String,
    pub words_read: bool,
}

/// A chosen review: its index.
struct State<'a> {
    /// The operator's model's candidates per slot key.
    proposals: HashMap<String, Vec<String>>,
    facts: &'a Facts,
    seed: u64,
    renderer: Option<&'a Renderer>,
    used: Vec<String>,
    refused: Vec<Refusal>,
    review: Option<usize>,
    /// The label of a stat shown as its figure alone (the supporting line leads with it),
    /// with its input.
    stat_label: Option<Line>,
    stat_next: usize,
    point_next: usize,
    list_number: usize,
    /// Whether a slot shows an offer (only then may the call to action claim one).
    offer_shown: bool,
    /// Whether a shown slot states the product's own offer (`details.offer`): only then
    /// may a line say when it ends without naming it again.
    own_offer_shown: bool,
    /// Whether a shown line says when the offer ends (it is said once).
    ends_shown: bool,
    /// The lines of the brand's voice's own patterns (lower case), preferred by [`State::pick`].
    toned: Vec<String>,
}

/// Writes every slot of `specs` from `facts`. `seed` is a hash of the job, the reference
/// and the ad's version.
pub fn write(
    specs: &[SlotSpec],
    facts: &Facts,
    reference: &Reference,
    seed: u64,
    renderer: Option<&Renderer>,
    proposer: Option<&dyn SlotProposer>,
) -> Written {
    let proposals = proposer
        .map(|p| propose(p, specs, facts, reference, seed))
        .unwrap_or_default();
    let mut st = State {
        proposals,
        facts,
        seed,
        renderer,
        used: Vec::new(),
        refused: Vec::new(),
        review: None,
        stat_label: None,
        stat_next: 0,
        point_next: 0,
        list_number: 0,
        offer_shown: false,
        own_offer_shown: false,
        ends_shown: false,
        toned: Vec::new(),
    };
    // The lead: the largest free text (not a button's or a badge's label).
    let lead = specs
        .iter()
        .filter(|s| !matches!(s.on.as_deref(), Some("cta" | "badge")) && s.role != "cta")
        .max_by(|a, b| a.size.total_cmp(&b.size))
        .map(|s| s.key.clone());
    let has_headline = specs.iter().any(|s| s.role == "headline");
    // Facts first (they decide what the free lines say), then the lines around them.
    let order = |s: &SlotSpec| match s.role.as_str() {
        "offer" | "price" | "compare_at_price" | "quote" | "quote_author" | "rating" | "stat" => 0,
        "list_item" => 1,
        "headline" => 2,
        "supporting" => 3,
        _ => 4,
    };
    let mut queue: Vec<&SlotSpec> = specs.iter().collect();
    queue.sort_by_key(|s| order(s));
    let mut slots = BTreeMap::new();
    for s in queue {
        let is_lead = lead.as_deref() == Some(s.key.as_str());
        let t = st.slot(s, is_lead, has_headline, specs, reference);
        if t.shown {
            st.used.push(t.text.to_lowercase());
            st.offer_shown |= t.role == "offer";
            if let (Some(o), Some(e)) = (&facts.offer, &facts.offer_ends) {
                let lower = t.text.to_lowercase();
                st.own_offer_shown |= shorter(o).iter().any(|c| lower.contains(&c.to_lowercase()));
                st.ends_shown |= lower.contains(&e.to_lowercase());
            }
        }
        slots.insert(s.key.clone(), t);
    }
    let by_llm = slots
        .values()
        .any(|t: &SlotText| t.shown && t.writer == "llm");
    let report = CopyReport {
        writer: match proposer {
            Some(p) if by_llm => p.name(),
            _ => TEMPLATE.into(),
        },
        format: reference.format.clone(),
        format_from: reference.format_from.clone(),
        words_read: reference.words_read,
        slots: specs
            .iter()
            .map(|s| {
                let t = &slots[&s.key];
                SlotReport {
                    slot: s.key.clone(),
                    reference_role: s.role.clone(),
                    role: t.role.clone(),
                    text: if t.shown {
                        t.text.clone()
                    } else {
                        String::new()
                    },
                    shown: t.shown,
                    writer: t.writer.clone(),
                    reference_words: s.words.clone(),
                }
            })
            .collect(),
        facts: Vec::new(),
        refused: st.refused,
    };
    Written { slots, report }
}
