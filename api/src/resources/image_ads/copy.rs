//! The copy report of an image ad (`copy`): what the copywriter wrote into each text slot of
//! the ad and the input every fact it states came from. The worker writes it with the
//! completed ad (`adforge_worker::protocol::CopyReport`); these are its documented shapes.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What the copywriter wrote into the ad's first version and where each fact came from
/// (docs/copy.md). Edits (PATCH) are not reported: the caller wrote those words.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({
    "writer": "template", "format": "offer_sale", "format_from": "words", "words_read": true,
    "slots": [
        {"slot": "offer", "reference_role": "offer", "role": "offer", "text": "25% OFF", "shown": true, "writer": "template", "reference_words": "50% OFF"},
        {"slot": "headline", "reference_role": "headline", "role": "headline", "text": "Café-quality coffee at home", "shown": true, "writer": "template", "reference_words": "Summer sale"}
    ],
    "facts": [{"text": "25%", "kind": "percent", "source": "computed: discount from variant.compare_at_price and variant.price", "slot": "offer"}],
    "refused": []
}))]
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
    pub slots: Vec<CopySlot>,
    /// Every number, price, percentage, date and claim the ad states, with its source.
    #[serde(default)]
    pub facts: Vec<CopyFact>,
    /// Candidates that were not used, with the rule each broke (at most a few per slot).
    #[serde(default)]
    pub refused: Vec<CopyRefusal>,
}

/// One text slot of the ad.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CopySlot {
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
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CopyFact {
    /// As it appears in the ad.
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
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CopyRefusal {
    pub slot: String,
    pub text: String,
    /// The rule it broke (the grounding rule names the unsupported fact).
    pub reason: String,
    /// `template` or `llm`.
    pub writer: String,
}
