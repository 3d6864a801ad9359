//! What an ad is made from, as a worker sees it: the [`AdBrief`] (brand, product, audience,
//! the variant and its images, the caller's direction and the moment the copy is written
//! for), shared by every job that writes an ad's words ([`super::GenerateAdJob::brief`],
//! flattened into the job's object, and the Figma import that fills slots,
//! [`super::FigmaSyncJob::brief`]).

use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{GenerateAdJob, Variant};

/// The inputs an ad's copy and pictures come from, resolved by the API (relations,
/// identity, absolute URLs). A job that makes an ad carries one; nothing in it names the
/// ad, its version or how it is laid out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdBrief {
    /// The caller's optional creative direction.
    #[serde(default)]
    pub prompt: Option<String>,
    /// The brand with its identity resolved to values and URLs.
    pub brand: Brand,
    /// The product the ad sells.
    pub product: Product,
    /// The audience the ad speaks to.
    pub audience: Audience,
    /// Absolute URLs of the chosen variant's images (or the product's first variant with
    /// images), in display order.
    #[serde(default)]
    pub variant_image_urls: Vec<String>,
    /// The variant those images belong to, with its prices (the only prices the copy may
    /// state); absent from older API nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<Variant>,
    /// The moment the copy is written for (RFC 3339, UTC): an offer's `ends_at` is judged
    /// against it the same way on every retry of the job. Absent from older API nodes;
    /// then an offer with an end date is not stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
}

// The pipelines read an ad job's inputs as `job.brand`, `job.product`, …, as they did
// when the fields sat in the job itself; the brief is the job's own part, not a pointer.
impl Deref for GenerateAdJob {
    type Target = AdBrief;

    fn deref(&self) -> &AdBrief {
        &self.brief
    }
}

impl DerefMut for GenerateAdJob {
    fn deref_mut(&mut self) -> &mut AdBrief {
        &mut self.brief
    }
}

/// A brand as a worker sees it: identity resolved to values and absolute URLs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Brand {
    /// The brand id (`br_…`).
    pub id: String,
    /// Display name.
    pub name: String,
    /// The brand's `color_palettes` object as stored (free-form hex values), or null.
    #[serde(default)]
    pub color_palettes: Value,
    /// The brand's `fonts` array as stored (objects with at least `name`).
    #[serde(default)]
    pub fonts: Value,
    /// Logos, each with its public URL and light/dark theme.
    #[serde(default)]
    pub logos: Vec<Logo>,
    /// The brand's `details` object as stored (its `voice` steers the copy), or null.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub details: Value,
}

/// One brand logo.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Logo {
    /// Absolute URL of the logo image.
    pub url: String,
    /// `light` or `dark` when known.
    #[serde(default)]
    pub theme: Option<String>,
}

/// The product an ad sells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Product {
    /// The product id (`prod_…`).
    pub id: String,
    /// Name.
    pub name: String,
    /// Description, if any.
    #[serde(default)]
    pub description: Option<String>,
    /// Free-form details object as stored.
    #[serde(default)]
    pub details: Value,
}

/// The audience an ad speaks to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Audience {
    /// The audience id (`aud_…`).
    pub id: String,
    /// Name.
    pub name: String,
    /// Description, if any.
    #[serde(default)]
    pub description: Option<String>,
    /// Free-form details object as stored.
    #[serde(default)]
    pub details: Value,
}
