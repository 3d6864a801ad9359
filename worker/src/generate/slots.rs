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
//! Longer than 700 lines because it is one writer, role by role: each arm of
//! `State::slot` is a role's rules, and splitting them would scatter what one ad says; each
//! line it composes also carries the input fields it came from (issue 39's provenance).
//! Issue 41 moves the role tables, candidate selection and text helpers into files of
//! their own.

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

impl State<'_> {
    fn slot(
        &mut self,
        s: &SlotSpec,
        lead: bool,
        has_headline: bool,
        all: &[SlotSpec],
        reference: &Reference,
    ) -> SlotText {
        let f = self.facts;
        let hidden = |role: &str| SlotText {
            text: String::new(),
            role: role.to_owned(),
            shown: false,
            writer: TEMPLATE.into(),
            from: Vec::new(),
        };
        let offer_path = f
            .offer
            .as_ref()
            .and_then(|o| f.field(&["product.details.offer"], o));
        let (discount, saving) = (Some(DISCOUNT_SOURCE), Some(SAVING_SOURCE));
        let refs = s.words.as_deref().unwrap_or("").to_lowercase();
        match s.role.as_str() {
            "offer" => {
                // Words without a figure ("SUMMER SALE") name a sale; the figure is left to
                // the slot that shows one (the badge's "-30%"). With no such slot ("SALE" or
                // "Free shipping" the only offer) this one states the offer itself.
                if f.discount.is_some()
                    && !refs.is_empty()
                    && !refs.chars().any(|c| c.is_ascii_digit())
                    && all.iter().any(|o| o.key != s.key && shows_figure(o))
                {
                    let named = lines(
                        [format!("{} sale", f.brand), format!("The {} sale", f.brand)],
                        &[Some("brand.name"), discount],
                    );
                    if let Some(t) = self.choose(s, "offer", named) {
                        return t;
                    }
                }
                let mut c = Vec::new();
                if let Some(d) = f.discount {
                    if refs.starts_with('-') {
                        c.push(line(format!("-{d}%"), &[discount]));
                    }
                    if refs.contains("save") {
                        c.push(line(format!("Save {d}%"), &[discount]));
                    }
                    c.extend(lines(
                        [format!("{d}% off"), format!("-{d}%"), format!("Save {d}%")],
                        &[discount],
                    ));
                    if let Some(sv) = &f.saving {
                        c.push(line(format!("Save {}", sv.text), &[saving]));
                    }
                    c.push(line(
                        format!("{d}% off {}", f.name),
                        &[discount, Some("product.name")],
                    ));
                }
                if let Some(o) = &f.offer {
                    c.extend(lines(shorter(o), &[offer_path.as_deref()]));
                    if urgent(s, reference) {
                        c.extend(self.ends_lines());
                    }
                }
                if let Some(o) = &f.prompt_offer {
                    c.push(line(o.clone(), &[Some("prompt")]));
                }
                if let Some(t) = self.choose(s, "offer", c) {
                    return t;
                }
                // No offer: a lead becomes the headline; a badge shows the price or a
                // figure; elsewhere the slot is left out.
                if lead && !has_headline {
                    return self.headline(s, all, reference, "headline");
                }
                if s.on.as_deref() == Some("badge") || s.key == "badge_label" {
                    if let Some(p) = &f.price
                        && let Some(t) = self.choose(
                            s,
                            "price",
                            vec![line(p.text.clone(), &[Some(PRICE_SOURCE)])],
                        )
                    {
                        return t;
                    }
                    if let Some(st) = f.stats.first() {
                        let from = f.field(&["product.details.stats"], &st.value);
                        if let Some(t) =
                            self.choose(s, "stat", vec![line(st.value.clone(), &[from.as_deref()])])
                        {
                            return t;
                        }
                    }
                }
                if !lead && s.key != "badge_label" {
                    let c = self.eyebrows();
                    if let Some(t) = self.choose(s, "eyebrow", c) {
                        return t;
                    }
                }
                hidden("offer")
            }
            "price" => {
                let mut c = Vec::new();
                if let Some(p) = &f.price {
                    if refs.contains("from") {
                        c.push(line(format!("From {}", p.text), &[Some(PRICE_SOURCE)]));
                    }
                    c.push(line(p.text.clone(), &[Some(PRICE_SOURCE)]));
                }
                if let Some(t) = self.choose(s, "price", c) {
                    return t;
                }
                if lead && !has_headline {
                    return self.headline(s, all, reference, "headline");
                }
                hidden("price")
            }
            "compare_at_price" => {
                let c = match (&f.price, &f.compare_at) {
                    (Some(_), Some(ca)) => vec![line(ca.text.clone(), &[Some(COMPARE_AT_SOURCE)])],
                    _ => Vec::new(),
                };
                self.choose(s, "compare_at_price", c)
                    .unwrap_or_else(|| hidden("compare_at_price"))
            }
            "quote" => {
                let pick = self.review_index();
                let mut c = Vec::new();
                if let Some(r) = pick.map(|i| &f.reviews[i]) {
                    let from = f.field(&["product.details.reviews"], &r.text);
                    for cut in shorter(&r.text) {
                        c.push(line(format!("\u{201c}{cut}\u{201d}"), &[from.as_deref()]));
                    }
                }
                if let Some(t) = self.choose_as_given(s, "quote", c) {
                    return t;
                }
                // No review: the product's own words, not in quotation marks.
                let role = if lead && !has_headline {
                    "headline"
                } else {
                    "supporting"
                };
                if role == "headline" {
                    self.headline(s, all, reference, role)
                } else {
                    let c = self.supporting_lines();
                    self.choose(s, role, c).unwrap_or_else(|| hidden("quote"))
                }
            }
            "quote_author" => {
                let author = self
                    .review_index()
                    .and_then(|i| f.reviews[i].author.clone());
                let dash = s
                    .words
                    .as_deref()
                    .is_some_and(|w| w.trim_start().starts_with(['—', '–', '-', '~']));
                let c = author
                    .map(|a| {
                        let from = f.field(&["product.details.reviews"], &a);
                        let both = if dash {
                            vec![format!("\u{2014} {a}"), a]
                        } else {
                            vec![a.clone(), format!("\u{2014} {a}")]
                        };
                        lines(both, &[from.as_deref()])
                    })
                    .unwrap_or_default();
                self.choose_as_given(s, "quote_author", c)
                    .unwrap_or_else(|| hidden("quote_author"))
            }
            "rating" => {
                let rated = self
                    .review_index()
                    .filter(|i| f.reviews[*i].rating.is_some())
                    .or_else(|| f.reviews.iter().position(|r| r.rating.is_some()));
                let rating = rated.and_then(|i| f.reviews[i].rating);
                let from = rated.map(|i| format!("product.details.reviews[{i}].rating"));
                let from = [from.as_deref()];
                // The reference's form (stars, or "4.8/5"), the other only when it does not
                // fit.
                let forms = rating.filter(|r| *r >= 1.0).map(|r| {
                    let stars = "\u{2605}".repeat(r.round() as usize);
                    if refs.contains("/5") {
                        [format!("{}/5", trim_num(r)), stars]
                    } else {
                        [stars, format!("{}/5", trim_num(r))]
                    }
                });
                let Some([first, other]) = forms else {
                    return hidden("rating");
                };
                if self.fits(s, &first)
                    && let Some(t) =
                        self.choose_as_given(s, "rating", vec![line(first.clone(), &from)])
                {
                    return t;
                }
                self.choose_as_given(s, "rating", lines([other, first], &from))
                    .unwrap_or_else(|| hidden("rating"))
            }
            "stat" => {
                let mut c = Vec::new();
                let mut label_from = None;
                if let Some(stat) = f.stats.get(self.stat_next) {
                    let alone = s
                        .words
                        .as_deref()
                        .is_some_and(|w| w.split_whitespace().count() == 1);
                    let both = clean(&format!("{} {}", stat.value, stat.label));
                    let value_from = f.field(&["product.details.stats"], &stat.value);
                    label_from = f.field(&["product.details.stats"], &stat.label);
                    // The figure alone only where a supporting line below can say what it
                    // counts (a bare "93%" beside another line would claim that line).
                    let carrier = all.iter().any(|x| x.role == "supporting");
                    if alone && carrier && !stat.label.is_empty() {
                        c.push(line(stat.value.clone(), &[value_from.as_deref()]));
                    } else {
                        c.push(line(both, &[value_from.as_deref(), label_from.as_deref()]));
                    }
                }
                if let Some(t) = self.choose(s, "stat", c) {
                    let stat = &f.stats[self.stat_next];
                    if t.text.trim() == stat.value && !stat.label.is_empty() {
                        self.stat_label = Some(line(stat.label.clone(), &[label_from.as_deref()]));
                    }
                    self.stat_next += 1;
                    return t;
                }
                if lead && !has_headline {
                    return self.headline(s, all, reference, "headline");
                }
                let c = self.supporting_lines();
                self.choose(s, "supporting", c)
                    .unwrap_or_else(|| hidden("stat"))
            }
            "list_item" => {
                let points = f.points();
                let marker = s
                    .words
                    .as_deref()
                    .and_then(|w| w.lines().next().and_then(list_marker))
                    .map(str::to_owned);
                while self.point_next < points.len() {
                    let p = &points[self.point_next];
                    self.point_next += 1;
                    if self.used.iter().any(|u| u.contains(&p.to_lowercase())) {
                        continue;
                    }
                    let n = self.list_number + 1;
                    let with_marker = |t: &str| match marker.as_deref() {
                        Some(m) if m.ends_with(['.', ')']) => {
                            format!("{n}{} {t}", &m[m.len() - 1..])
                        }
                        Some(m) => format!("{m} {t}"),
                        None => t.to_owned(),
                    };
                    let from =
                        f.field(&["product.details.benefits", "product.details.features"], p);
                    let c = lines(
                        shorter(p).iter().map(|t| with_marker(t)),
                        &[from.as_deref()],
                    );
                    if let Some(t) = self.choose(s, "list_item", c) {
                        self.list_number += 1;
                        return t;
                    }
                }
                hidden("list_item")
            }
            "headline" | "supporting" | "eyebrow" | "cta"
                if self.proposals.contains_key(&s.key) =>
            {
                match self.model_line(s) {
                    Some(t) => t,
                    None => {
                        self.proposals.remove(&s.key);
                        self.slot(s, lead, has_headline, all, reference)
                    }
                }
            }
            "headline" => self.headline(s, all, reference, "headline"),
            "supporting" => {
                // What a figure shown alone counts comes first, fitting or shrunk to fit.
                if let Some(label) = self.stat_label.take()
                    && let Some(t) = self.choose(s, "supporting", map_text(vec![label], sentence))
                {
                    return t;
                }
                if urgent(s, reference) {
                    let c = map_text(self.ends_lines(), sentence);
                    if let Some(t) = self.choose(s, "supporting", c) {
                        return t;
                    }
                }
                let c = self.supporting_lines();
                self.choose(s, "supporting", c)
                    .unwrap_or_else(|| hidden("supporting"))
            }
            "eyebrow" | "badge_label" => {
                if urgent(s, reference)
                    && let Some(t) = self.choose(s, "eyebrow", self.ends_lines())
                {
                    return t;
                }
                let c = self.eyebrows();
                self.choose(s, "eyebrow", c)
                    .unwrap_or_else(|| hidden("eyebrow"))
            }
            "cta" => {
                let c = lines(self.ctas(s), &[]);
                if let Some(t) = self.choose(s, "cta", c) {
                    return t;
                }
                // Nothing fitted or every line used a word the voice avoids: the plainest
                // calls, each checked like any other line.
                let plain = ["Shop now", "Shop", "Learn more", "Discover", "See more"];
                plain
                    .iter()
                    .map(|p| apply_case(s.case, p))
                    .find(|p| check_text(p, &s.key, f).is_ok())
                    .map_or_else(
                        || hidden("cta"),
                        |text| SlotText {
                            text,
                            role: "cta".into(),
                            shown: true,
                            writer: TEMPLATE.into(),
                            from: Vec::new(),
                        },
                    )
            }
            _ => {
                let c = vec![line(f.brand.clone(), &[Some("brand.name")])];
                self.choose(s, "brand", c)
                    .unwrap_or_else(|| hidden("brand"))
            }
        }
    }

    /// The first of the model's candidates for `s` that is grounded, new to this ad and
    /// fits the slot; the others are reported as refused.
    fn model_line(&mut self, s: &SlotSpec) -> Option<SlotText> {
        let candidates = self.proposals.get(&s.key).cloned().unwrap_or_default();
        for c in candidates {
            let c = apply_case(s.case, &clean(&c));
            if c.is_empty() || self.used.contains(&c.to_lowercase()) {
                continue;
            }
            let why = match check_text(&c, &s.key, self.facts) {
                Err(reason) => Some(reason),
                Ok(_) if !self.fits(s, &c) => {
                    Some("does not fit the slot at the reference's type size".to_owned())
                }
                Ok(_) => None,
            };
            match why {
                None => {
                    return Some(SlotText {
                        text: c,
                        role: s.role.clone(),
                        shown: true,
                        writer: "llm".into(),
                        from: Vec::new(),
                    });
                }
                Some(reason) => self.refused.push(Refusal {
                    slot: s.key.clone(),
                    text: c,
                    reason,
                    writer: "llm".into(),
                }),
            }
        }
        None
    }

    /// The review the quote, its author and the rating show (one for all three).
    fn review_index(&mut self) -> Option<usize> {
        if self.review.is_none() && !self.facts.reviews.is_empty() {
            // The best-rated review, the hash choosing among equals.
            let best = self
                .facts
                .reviews
                .iter()
                .map(|r| r.rating.unwrap_or(0.0))
                .fold(f64::MIN, f64::max);
            let top: Vec<usize> = (0..self.facts.reviews.len())
                .filter(|i| self.facts.reviews[*i].rating.unwrap_or(0.0) == best)
                .collect();
            self.review = Some(top[(self.seed % top.len() as u64) as usize]);
        }
        self.review
    }

    /// A headline in the reference's structure.
    fn headline(
        &mut self,
        s: &SlotSpec,
        all: &[SlotSpec],
        reference: &Reference,
        role: &str,
    ) -> SlotText {
        let f = self.facts;
        let refw = s.words.as_deref().unwrap_or("").trim().to_owned();
        let name = &f.name;
        // Each fact as the headline says it, with its input's path.
        let benefits: Vec<(String, Option<String>)> = f
            .benefits
            .iter()
            .filter(|b| !self.used.iter().any(|u| u.contains(&b.to_lowercase())))
            .map(|b| {
                (
                    strip_stop(b).to_owned(),
                    f.field(&["product.details.benefits"], b),
                )
            })
            .collect();
        let pains: Vec<(String, Option<String>)> = f
            .pains
            .iter()
            .map(|p| {
                (
                    lower_first(strip_stop(p)),
                    f.field(
                        &[
                            "audience.details.pain_points",
                            "audience.details.pain_point",
                        ],
                        p,
                    ),
                )
            })
            .collect();
        let motives: Vec<(String, Option<String>)> = f
            .motivations
            .iter()
            .map(|m| {
                (
                    strip_stop(m).to_owned(),
                    f.field(
                        &[
                            "audience.details.motivations",
                            "audience.details.motivation",
                        ],
                        m,
                    ),
                )
            })
            .collect();
        let who = (!f.audience.is_empty() && f.audience.chars().count() <= 28)
            .then(|| lower_first(&f.audience));
        let (product, audience) = (Some("product.name"), Some("audience.name"));
        // A phrase the prompt quotes is the headline, as written.
        if let Some(q) = quoted(&f.prompt)
            && let Some(t) = self.choose_as_given(s, role, vec![line(q, &[Some("prompt")])])
        {
            return t;
        }
        let mut c: Vec<Line> = Vec::new();
        let question = refw.ends_with('?');
        let first = refw.split_whitespace().next().unwrap_or("").to_lowercase();
        let imperative = IMPERATIVES.contains(&first.as_str());
        let list_title = reference.format.as_deref() == Some("listicle")
            || all.iter().any(|x| x.role == "list_item");
        if question {
            for (p, from) in &pains {
                let from = [from.as_deref()];
                c.push(line(format!("Tired of {p}?"), &from));
                c.push(line(format!("Still putting up with {p}?"), &from));
            }
            // Motivations are things one is ready for; benefits are often not ("Ready in
            // a minute"), so they make no question of their own.
            for (m, from) in &motives {
                c.push(line(
                    format!("Ready for {}?", lower_first(m)),
                    &[from.as_deref()],
                ));
            }
            c.push(line(format!("Have you tried {name}?"), &[product]));
            c.push(line(format!("Why {name}?"), &[product]));
        } else if list_title {
            c.push(line(format!("Why people love {name}"), &[product]));
            c.push(line(format!("Reasons to love {name}"), &[product]));
            c.push(line(format!("What makes {name} different"), &[product]));
            if let Some(w) = &who {
                c.push(line(
                    format!("Why {w} switch to {name}"),
                    &[audience, product],
                ));
            }
            c.push(line(format!("The {name} difference"), &[product]));
        } else if imperative {
            for (p, from) in &pains {
                c.push(line(format!("Say goodbye to {p}"), &[from.as_deref()]));
            }
            for (m, from) in &motives {
                let from = [from.as_deref()];
                c.push(line(format!("Wake up to {}", lower_first(m)), &from));
                c.push(line(format!("Choose {}", lower_first(m)), &from));
            }
            for l in [
                format!("Try {name}"),
                format!("Meet {name}"),
                format!("Switch to {name}"),
                format!("Treat yourself to {name}"),
            ] {
                c.push(line(l, &[product]));
            }
        } else {
            for (b, from) in &benefits {
                c.push(line(sentence(b), &[from.as_deref()]));
                c.push(line(
                    format!("{name}. {}", sentence(b)),
                    &[product, from.as_deref()],
                ));
            }
            for (p, from) in &pains {
                let from = [from.as_deref()];
                c.push(line(format!("No more {p}."), &from));
                c.push(line(format!("Say goodbye to {p}."), &from));
            }
            for (m, from) in &motives {
                c.push(line(
                    format!("{}, made easy.", capitalise(m)),
                    &[from.as_deref()],
                ));
            }
            c.push(line(format!("Meet {name}."), &[product]));
            if let Some(w) = &who {
                c.push(line(format!("Made for {w}."), &[audience]));
                c.push(line(format!("{name}, for {w}"), &[product, audience]));
            }
            c.push(line(format!("Your new favourite: {name}"), &[product]));
        }
        if !list_title {
            let about = super::voice::About {
                benefit: benefits.first().map(|b| b.0.as_str()),
                motive: motives.first().map(|m| m.0.as_str()),
                who: who.as_deref(),
            };
            let own = f.tone.headlines(name, &about, question, imperative);
            self.toned
                .extend(own.iter().map(|l| apply_case(s.case, l).to_lowercase()));
            // A tone's line may say any of these.
            let from = [
                product,
                benefits.first().and_then(|b| b.1.as_deref()),
                motives.first().and_then(|m| m.1.as_deref()),
                who.as_ref().and(audience),
            ];
            c.extend(lines(own, &from));
        }
        if c.is_empty() {
            c.push(line(format!("Meet {name}."), &[product]));
        }
        if let Some(t) = self.choose(s, role, c) {
            return t;
        }
        // The product's name, unless the voice avoids a word of it too.
        let text = apply_case(s.case, name);
        let shown = check_text(&text, &s.key, f).is_ok();
        SlotText {
            text: if shown { text } else { String::new() },
            role: role.to_owned(),
            shown,
            writer: TEMPLATE.into(),
            from: if shown {
                vec!["product.name".to_owned()]
            } else {
                Vec::new()
            },
        }
    }

    /// Lines that say when the product's offer ends (`Ends June 30`), naming the offer
    /// unless a slot already states it; none when it has no end date, or it was said.
    fn ends_lines(&self) -> Vec<Line> {
        let f = self.facts;
        let (Some(o), Some(e)) = (&f.offer, &f.offer_ends) else {
            return Vec::new();
        };
        if self.ends_shown {
            return Vec::new();
        }
        let ends = Some("product.details.offer.ends_at");
        if self.own_offer_shown {
            return lines(
                [
                    format!("Ends {e}"),
                    format!("Offer ends {e}"),
                    format!("Until {e}"),
                ],
                &[ends],
            );
        }
        let offer = f.field(&["product.details.offer"], o);
        let from = [offer.as_deref(), ends];
        shorter(o)
            .iter()
            .flat_map(|cut| {
                let cut = strip_stop(cut);
                [format!("{cut}, until {e}"), format!("{cut}. Ends {e}")]
            })
            .map(|l| line(l, &from))
            .collect()
    }

    /// Supporting lines: what the prompt asks to mention first, then the stat's label,
    /// the description, the benefits, the guarantee and shipping.
    fn supporting_lines(&self) -> Vec<Line> {
        let f = self.facts;
        let mut base: Vec<Line> = Vec::new();
        if let Some(l) = &self.stat_label {
            base.extend(map_text(vec![l.clone()], sentence));
        }
        let pain = |p: &str| {
            f.field(
                &[
                    "audience.details.pain_points",
                    "audience.details.pain_point",
                ],
                p,
            )
        };
        for p in &f.pains {
            if let Some(m) = f.motivations.first() {
                let motive = f.field(
                    &[
                        "audience.details.motivations",
                        "audience.details.motivation",
                    ],
                    m,
                );
                base.push(line(
                    format!(
                        "Less {}, more {}.",
                        lower_first(strip_stop(p)),
                        lower_first(strip_stop(m))
                    ),
                    &[pain(p).as_deref(), motive.as_deref()],
                ));
            }
        }
        if let Some(d) = f
            .sources
            .iter()
            .find(|(p, _)| p == "product.description")
            .map(|(_, d)| clean(d))
        {
            base.extend(lines(
                shorter(&d).into_iter().map(|s| sentence(&s)),
                &[Some("product.description")],
            ));
        }
        let points = f.points();
        let point = |p: &str| f.field(&["product.details.benefits", "product.details.features"], p);
        let fresh: Vec<&String> = points
            .iter()
            .filter(|p| !self.used.iter().any(|u| u.contains(&p.to_lowercase())))
            .collect();
        if fresh.len() >= 2 {
            base.push(line(
                format!(
                    "{}. {}",
                    sentence(fresh[0]).trim_end_matches('.'),
                    sentence(fresh[1])
                ),
                &[point(fresh[0]).as_deref(), point(fresh[1]).as_deref()],
            ));
        }
        for p in fresh {
            base.push(line(sentence(p), &[point(p).as_deref()]));
        }
        if let Some(g) = &f.guarantee {
            base.push(line(sentence(g), &[Some("product.details.guarantee")]));
        }
        if let Some(s) = &f.shipping {
            base.push(line(sentence(s), &[Some("product.details.shipping")]));
        }
        if !f.audience.is_empty() {
            base.push(line(
                format!("Made for {}.", lower_first(&f.audience)),
                &[Some("audience.name")],
            ));
        }
        base.push(line(
            format!("Discover what makes {} different.", f.name),
            &[Some("product.name")],
        ));
        if f.mentions.is_empty() {
            return base;
        }
        let mut out = Vec::new();
        for m in &f.mentions {
            for b in &base {
                let mut from = vec!["prompt".to_owned()];
                from.extend(b.from.iter().cloned());
                out.push(Line {
                    text: format!("{} {}", sentence(m), b.text),
                    from,
                });
            }
            out.push(line(sentence(m), &[Some("prompt")]));
        }
        out
    }

    /// Short kickers: the offer, "New" for a launch, who it is for, the brand.
    fn eyebrows(&self) -> Vec<Line> {
        let f = self.facts;
        let mut c = Vec::new();
        if let Some(d) = f.discount {
            c.push(line(format!("{d}% off"), &[Some(DISCOUNT_SOURCE)]));
        }
        if let Some(o) = &f.offer {
            let from = f.field(&["product.details.offer"], o);
            c.extend(lines(shorter(o), &[from.as_deref()]));
        }
        if let Some(o) = &f.prompt_offer {
            c.push(line(o.clone(), &[Some("prompt")]));
        }
        let p = f.prompt.to_lowercase();
        if ["launch", "new ", "introduc"].iter().any(|w| p.contains(w)) {
            c.push(line("New", &[Some("prompt")]));
        }
        if !f.audience.is_empty() {
            c.push(line(
                format!("For {}", lower_first(&f.audience)),
                &[Some("audience.name")],
            ));
        }
        c.push(line(f.brand.clone(), &[Some("brand.name")]));
        c.push(line(f.name.clone(), &[Some("product.name")]));
        c
    }

    /// Calls to action of the reference's kind.
    fn ctas(&mut self, s: &SlotSpec) -> Vec<String> {
        let refw: String = s
            .words
            .as_deref()
            .unwrap_or("")
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ')
            .collect();
        let refw = refw.trim();
        let kinds: [&[&str]; 5] = [
            &[
                "Read more",
                "Learn more",
                "Find out more",
                "Find out how",
                "See how",
            ],
            &["Swipe up", "Swipe up to shop"],
            &["Try it", "Try it now", "Try it today"],
            &["Shop now", "Buy now", "Get yours", "Order now"],
            &["Discover more", "Explore now", "Find yours"],
        ];
        let mut c: Vec<String> = Vec::new();
        if self.offer_shown {
            c.extend(["Claim offer", "Get the deal"].map(str::to_owned));
        }
        let kind = kinds
            .iter()
            .find(|k| k.iter().any(|p| p.to_lowercase() == refw))
            .copied()
            .or_else(|| CTA_PHRASES.contains(&refw).then_some(kinds[3]));
        // The voice's own calls join the buying and exploring kinds (not a reading or
        // swiping call, whose meaning they would change).
        let toned: Vec<String> = self
            .facts
            .tone
            .ctas()
            .iter()
            .map(|p| (*p).to_owned())
            .collect();
        self.toned
            .extend(toned.iter().map(|l| apply_case(s.case, l).to_lowercase()));
        match kind {
            Some(k) => {
                // The reference's kind first; an offer's call only with an offer format.
                let buying = std::ptr::eq(k, kinds[3]) || std::ptr::eq(k, kinds[4]);
                let mut k: Vec<String> = k.iter().map(|p| (*p).to_owned()).collect();
                if self.offer_shown && refw.contains("shop") {
                    k.extend(c);
                }
                if buying {
                    k.extend(toned);
                }
                k
            }
            None => {
                c.extend(kinds[3].iter().map(|p| (*p).to_owned()));
                c.extend(toned);
                c
            }
        }
    }

    /// The best candidate for `s` in the reference's case (see [`State::pick`]).
    fn choose(&mut self, s: &SlotSpec, role: &str, candidates: Vec<Line>) -> Option<SlotText> {
        let cased = map_text(candidates, |c| apply_case(s.case, c));
        self.pick(s, role, cased)
    }

    /// The best candidate for `s`, as given (quotes and names keep their case).
    fn choose_as_given(
        &mut self,
        s: &SlotSpec,
        role: &str,
        candidates: Vec<Line>,
    ) -> Option<SlotText> {
        self.pick(s, role, candidates)
    }

    /// Of the candidates that are grounded, new to this ad and fit the slot at its type
    /// size, the one nearest the reference's length (a hash breaking near-ties); else the
    /// shortest grounded one (shrink-to-fit sets it smaller).
    fn pick(&mut self, s: &SlotSpec, role: &str, candidates: Vec<Line>) -> Option<SlotText> {
        let mut ok: Vec<(String, bool)> = Vec::new();
        let mut from: Vec<Vec<String>> = Vec::new();
        for l in candidates {
            let c = clean(&l.text);
            if c.is_empty() || ok.iter().any(|(o, _)| *o == c) {
                continue;
            }
            if self.used.contains(&c.to_lowercase()) {
                continue;
            }
            if let Err(reason) = check_text_from(&c, &s.key, self.facts, &l.from) {
                if self.refused.len() < 24 {
                    self.refused.push(Refusal {
                        slot: s.key.clone(),
                        text: c,
                        reason,
                        writer: TEMPLATE.into(),
                    });
                }
                continue;
            }
            let fits = self.fits(s, &c);
            ok.push((c, fits));
            from.push(l.from);
        }
        // The brand's voice weighs the free lines (facts are what they are).
        let tone = match role {
            "headline" | "supporting" | "eyebrow" | "cta" => self.facts.tone,
            _ => super::voice::Tone::Neutral,
        };
        let target = self.target_len(s) * tone.length_factor();
        let score = |c: &str| {
            let len = c.chars().count() as f32;
            let jitter = (fnv1a(&[&self.seed.to_string(), &s.key, c]) % 1000) as f32 / 1000.0;
            // The voice's own patterns are preferred: about a third of a reference length.
            let own =
                if tone != super::voice::Tone::Neutral && self.toned.contains(&c.to_lowercase()) {
                    -0.35
                } else {
                    0.0
                };
            (len - target).abs() / target.max(8.0) + 0.5 * jitter + tone.weigh(c) + own
        };
        let best = (0..ok.len())
            .filter(|&i| ok[i].1)
            .min_by(|&a, &b| score(&ok[a].0).total_cmp(&score(&ok[b].0)))
            .or_else(|| (0..ok.len()).min_by_key(|&i| ok[i].0.chars().count()))?;
        Some(SlotText {
            text: ok[best].0.clone(),
            role: role.to_owned(),
            shown: true,
            writer: TEMPLATE.into(),
            from: std::mem::take(&mut from[best]),
        })
    }

    /// The length the slot's words should have: the reference's, else what fills its box.
    fn target_len(&self, s: &SlotSpec) -> f32 {
        if let Some(w) = &s.words {
            return w.chars().filter(|c| *c != '\n').count() as f32;
        }
        let per_line = s.width / (0.5 * s.size);
        (per_line * s.lines.max(1) as f32 * 0.8).max(4.0)
    }

    /// Whether `text` fits the slot at its type size: no broken word, within its height
    /// and at most one line more than the reference had.
    fn fits(&self, s: &SlotSpec, text: &str) -> bool {
        let (Some(r), Some(style)) = (self.renderer, &s.style) else {
            return text.chars().count() as f32 <= self.target_len(s) * 1.6 + 4.0;
        };
        let m = r.measure_text(style, text, s.size, s.width);
        // The box is the reference's glyph extent, a little less than the layout's line
        // pitch per line: count lines, not pixels (shrink-to-fit absorbs the rest).
        let pitch = m.height / m.lines.max(1) as f32;
        let room = ((s.height / pitch.max(1.0)).round() as usize).max(s.lines as usize);
        let max_lines = style
            .max_lines
            .map_or(room, |n| (n as usize).min(room.max(1)));
        !m.broke_word && m.lines <= max_lines.max(1)
    }
}

/// Asks `proposer` for the free lines of `specs` (a failure is logged and ignored).
fn propose(
    proposer: &dyn SlotProposer,
    specs: &[SlotSpec],
    facts: &Facts,
    reference: &Reference,
    seed: u64,
) -> HashMap<String, Vec<String>> {
    let slots: Vec<BriefSlot> = specs
        .iter()
        .filter(|s| {
            matches!(
                s.role.as_str(),
                "headline" | "supporting" | "eyebrow" | "cta"
            )
        })
        .map(|s| BriefSlot {
            key: s.key.clone(),
            role: s.role.clone(),
            reference_words: s.words.clone(),
            max_chars: (s.width / (0.5 * s.size) * s.lines.max(1) as f32) as usize,
        })
        .collect();
    if slots.is_empty() {
        return HashMap::new();
    }
    let brief = Brief {
        slots,
        facts: facts.brief(),
        prompt: facts.prompt.clone(),
        format: reference.format.clone(),
        seed,
    };
    match proposer.propose(&brief) {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(writer = %proposer.name(), error = %e, "the copy model proposed nothing; the template writer's words are used");
            HashMap::new()
        }
    }
}

/// Words of a reference's line that make it urgent ("-30% this week", "Ends Sunday").
const URGENCY: [&str; 12] = [
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
fn shows_figure(o: &SlotSpec) -> bool {
    (o.role == "offer" || o.key == "badge_label" || o.on.as_deref() == Some("badge"))
        && o.words
            .as_deref()
            .is_none_or(|w| w.chars().any(|c| c.is_ascii_digit()))
}

/// Whether slot `s` calls for urgency: its reference words say it, or it is the eyebrow
/// or supporting line of an offer ad.
fn urgent(s: &SlotSpec, reference: &Reference) -> bool {
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
const IMPERATIVES: [&str; 24] = [
    "try", "get", "wake", "meet", "discover", "start", "make", "taste", "say", "feel", "enjoy",
    "switch", "upgrade", "find", "give", "treat", "shop", "brew", "sleep", "stop", "join", "see",
    "grab", "unlock",
];

/// `text` and its shorter cuts at sentence, then clause boundaries (never mid-clause).
fn shorter(text: &str) -> Vec<String> {
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
fn split_keep(s: &str, marks: &[char]) -> Vec<String> {
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

fn apply_case(case: Option<Casing>, text: &str) -> String {
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

fn trim_num(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{v:.1}")
    }
}

fn strip_stop(s: &str) -> &str {
    s.trim_end_matches(['.', '!', '?', ' '])
}

fn sentence(s: &str) -> String {
    format!("{}.", capitalise(strip_stop(s)))
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

/// A phrase in straight or curly double quotes in the prompt.
fn quoted(prompt: &str) -> Option<String> {
    let start = prompt.find(['"', '“'])?;
    let rest = &prompt[start..];
    let open = rest.chars().next()?.len_utf8();
    let end = rest[open..].find(['"', '”'])?;
    let q = clean(&rest[open..open + end]);
    (!q.is_empty()).then_some(q)
}

#[cfg(test)]
mod roles;

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
