//! The parts of the wire types that carry copy: the variant's prices a job hands the
//! copywriter, and the report of what it wrote (and from which inputs) that comes back in
//! [`super::ImageAdRendered::copy`]. Both follow the compatibility rule of [`super`]: every field
//! is optional on read.
//!
//! The report is also what the API answers in an ad's `copy`: with the `utoipa` feature
//! (the API crate turns it on) these types carry their OpenAPI schemas, named `CopyReport`,
//! `CopySlot`, `CopyFact` and `CopyRefusal` there, so the shape is written once.

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

/// What the copywriter wrote into the ad's first version and where each fact came from
/// (docs/copy.md). Edits (PATCH) are not reported: the caller wrote those words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "utoipa", schema(example = json!({
    "writer": "template", "format": "offer_sale", "format_from": "words", "words_read": true,
    "slots": [
        {"slot": "offer", "reference_role": "offer", "role": "offer", "text": "25% OFF", "shown": true, "writer": "template", "reference_words": "50% OFF"},
        {"slot": "headline", "reference_role": "headline", "role": "headline", "text": "Café-quality coffee at home", "shown": true, "writer": "template", "reference_words": "Summer sale"}
    ],
    "facts": [{"text": "25%", "kind": "percent", "source": "computed: discount from variant.compare_at_price and variant.price", "slot": "offer"}],
    "refused": []
})))]
pub struct CopyReport {
    /// `template` (the built-in phrase writer), or `llm:<model>` when the operator's model
    /// wrote at least one slot.
    pub writer: String,
    /// The reference's ad format, as the swipe file classifies it (`offer_sale`,
    /// `testimonial`, `listicle`, `statistic`, …); null when undecided.
    #[serde(default)]
    pub format: Option<String>,
    /// What decided the format: `words` (read on the reference), `layout`, or `none`.
    #[serde(default)]
    pub format_from: String,
    /// Whether the reference's words were read (Tesseract on the worker).
    #[serde(default)]
    pub words_read: bool,
    /// One entry per text slot of the layout.
    #[serde(default)]
    pub slots: Vec<SlotReport>,
    /// Every number, price, percentage, date and claim the ad states, with its source.
    #[serde(default)]
    pub facts: Vec<FactSource>,
    /// Candidates that were not used, with the rule each broke (at most a few per slot).
    #[serde(default)]
    pub refused: Vec<Refusal>,
}

/// One text slot of the ad.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema), schema(as = CopySlot))]
pub struct SlotReport {
    /// The slot: `headline`, `supporting`, `cta`, `eyebrow`, `price`, `compare_at_price`,
    /// `offer`, `quote`, `quote_author`, `rating`, `stat`, `list_item_N`, `badge_label`, …
    pub slot: String,
    /// The role the reference gave the slot.
    pub reference_role: String,
    /// The role its words play in the ad: the reference's, or another one when the inputs
    /// hold no fact for it (an offer slot without an offer becomes a headline).
    pub role: String,
    /// The words as set; empty when the slot was left out.
    pub text: String,
    /// False when the slot was left out (no fact for it).
    pub shown: bool,
    /// `template` or `llm`.
    #[serde(default)]
    pub writer: String,
    /// The words the reference had there, when read.
    #[serde(default)]
    pub reference_words: Option<String>,
}

/// A fact the ad states and the input it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema), schema(as = CopyFact))]
pub struct FactSource {
    /// As it appears in the ad (`$24`, `25%`, `free returns`).
    pub text: String,
    /// `price`, `percent`, `number`, `date`, `rating` or `claim`.
    pub kind: String,
    /// `variant.price`, `variant.compare_at_price`, `computed: …`, `product.details.…`,
    /// `product.description`, `prompt`, `brand.…`, `audience.…`.
    pub source: String,
    /// The slot it appears in.
    pub slot: String,
}

/// A candidate that was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema), schema(as = CopyRefusal))]
pub struct Refusal {
    /// The slot it was proposed for.
    pub slot: String,
    /// The proposed words.
    pub text: String,
    /// The rule it broke (the grounding rule names the unsupported fact).
    pub reason: String,
    /// `template` or `llm`.
    pub writer: String,
}
