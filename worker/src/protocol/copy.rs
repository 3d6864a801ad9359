//! The parts of the wire types that carry copy: the variant's prices a job hands the
//! copywriter, and the report of what it wrote (and from which inputs) that comes back in
//! [`super::AdCompleted::copy`]. Both follow the compatibility rule of [`super`]: every field
//! is optional on read.

use serde::{Deserialize, Serialize};

/// An amount of money in minor units of a currency (`{"amount": 2400, "currency": "usd"}`
/// is $24.00).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Money {
    /// Minor units (cents).
    pub amount: i64,
    /// ISO 4217 code, lower case.
    pub currency: String,
}

/// The variant an ad shows: its name and prices, the only prices its copy may state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Variant {
    /// The variant id (`pv_…`).
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it costs.
    #[serde(default)]
    pub price: Option<Money>,
    /// The former price shown crossed out; the discount is computed from the two.
    #[serde(default)]
    pub compare_at_price: Option<Money>,
}

/// What the copywriter wrote into an ad, and where every fact in it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct CopyReport {
    /// The writer whose words the ad carries: `template`, or `llm:<model>` when the
    /// operator's model wrote at least one slot.
    pub writer: String,
    /// The reference's ad format (the swipe file's values), when decided.
    #[serde(default)]
    pub format: Option<String>,
    /// What decided the format: `words` (the words read on the reference), `layout`, or
    /// `none`.
    #[serde(default)]
    pub format_from: String,
    /// Whether the reference's words were read (Tesseract on the worker).
    #[serde(default)]
    pub words_read: bool,
    /// One entry per text slot of the layout.
    #[serde(default)]
    pub slots: Vec<SlotReport>,
    /// Every fact the ad states (numbers, prices, percentages, dates, claims) and the input
    /// it came from.
    #[serde(default)]
    pub facts: Vec<FactSource>,
    /// Candidates that were refused (at most a few per slot), with the rule they broke.
    #[serde(default)]
    pub refused: Vec<Refusal>,
}

/// One text slot of an ad.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlotReport {
    /// The slot (the template's node key: `headline`, `price`, `list_item_2`, …).
    pub slot: String,
    /// The role the reference gave it (`headline`, `offer`, `quote`, …).
    pub reference_role: String,
    /// The role its words play in the ad: the reference's, or another when the inputs hold
    /// no fact for it (an offer slot without an offer becomes a `headline`).
    pub role: String,
    /// The words, as set (empty when the slot is left out).
    pub text: String,
    /// False when the slot was left out (no fact for it and nothing else fits there).
    pub shown: bool,
    /// `template` or `llm`.
    #[serde(default)]
    pub writer: String,
    /// The words the reference had in this slot, when they were read.
    #[serde(default)]
    pub reference_words: Option<String>,
}

/// A fact an ad states and the input it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactSource {
    /// The fact as it appears in the ad (`$24`, `25%`, `free returns`).
    pub text: String,
    /// `price`, `percent`, `number`, `date`, `rating` or `claim`.
    pub kind: String,
    /// Where it came from: `variant.price`, `variant.compare_at_price`,
    /// `computed: discount from variant.compare_at_price and variant.price`,
    /// `product.details.offer`, `prompt`, …
    pub source: String,
    /// The slot it appears in.
    pub slot: String,
}

/// A candidate line that was not used, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// The slot it was proposed for.
    pub slot: String,
    /// The proposed words.
    pub text: String,
    /// The rule it broke (the grounding rule names the unsupported fact).
    pub reason: String,
    /// Who proposed it: `template` or `llm`.
    pub writer: String,
}
