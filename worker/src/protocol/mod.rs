//! The wire types between API nodes and workers: [`Job`]s go to workers inside a
//! [`JobEnvelope`]; [`Event`]s come back. Both are JSON, tagged by `"type"`, with a
//! protocol version `"v"` on the outer object.
//!
//! A job carries everything a worker needs (the resolved brand, product, audience, variant
//! image URLs, reference URL, prompt, target version), so a worker never reads SQL and can
//! run on a machine that cannot reach the database.
//!
//! # Compatibility rule
//!
//! - Readers ignore unknown fields (no `deny_unknown_fields`), so a writer may add fields.
//!   A new field must be optional on read (`Option` or `#[serde(default)]`), so a newer
//!   reader accepts what an older writer sent.
//! - New variants may be added to [`Job`] and [`Event`]. An older reader cannot decode them,
//!   so upgrade readers first: workers before API nodes for a new job type, API nodes before
//!   workers for a new event type. A worker that meets a job it cannot decode retries it
//!   (another, newer worker may take it) and, after the attempts run out, fails the ad with
//!   `PIPELINE_ERROR`; an event an API node cannot decode stays unacknowledged for a newer
//!   node.
//! - Renaming or removing a field, or changing its meaning, bumps [`PROTOCOL_VERSION`];
//!   readers refuse a higher `v` with [`Error::UnsupportedVersion`] instead of misreading it.
//!   A worker refuses a job of a higher version by putting it back as it was, for a worker
//!   that speaks it; and a bump moves the Redis job keys (`P:v2:jobs`), so that workers of
//!   the previous version never meet the new jobs (see [`crate::queue::PreviousProtocol`]).
//!
//! Version history: 1, the first; 2, [`Event::Completed`] carries a typed [`JobResult`]
//! instead of one struct of optional fields (`swipe_file`, `design_template`, `figma`) the
//! API routed on by guessing; [`Event::Failed`] names its subject's kind ([`SubjectKind`],
//! also copied into the envelope) instead of the API reading it from the id's prefix; and
//! the Figma job carries the ad's [`AdBrief`] instead of a whole `GenerateAdJob`.
//!
//! Rejected alternative: a binary format (bincode, protobuf). Jobs are a few KiB and a
//! handful per second per node; JSON is readable with `redis-cli XRANGE` when an operator
//! debugs a stuck ad, and serde's field rules give the compatibility rule above for free.

mod brief;
mod copy;
mod event;
mod figma;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use brief::{AdBrief, Audience, Brand, Logo, Product};
pub use copy::{CopyReport, FactSource, Money, Refusal, SlotReport, Variant};
pub use event::{
    AdCompleted, AdFailed, AdProgress, Event, FigmaSyncResult, ImageAdRendered, JobResult,
    RenderTimings,
};
pub use figma::{
    FigmaFrameVersion, FigmaSyncJob, FigmaSynced, FigmaTarget, ImportReport, MissingFont, SlotNode,
    Unmapped, token_context,
};

use crate::Error;

/// The protocol version this build writes and the highest it reads.
pub const PROTOCOL_VERSION: u32 = 2;

/// Work for a worker. A closed set matched exhaustively by the pipeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[expect(
    clippy::large_enum_variant,
    reason = "a few jobs per second, each moved a handful of times; boxing would only make building them noisier"
)]
pub enum Job {
    /// Generate a new image ad (version 1 of it) from the reference ad and the brand,
    /// product and audience.
    GenerateImageAd(GenerateAdJob),
    /// Render an edited JSON tree of an editable ad as a new version.
    RenderImageAdVersion(RerenderJob),
    /// Measure, embed and classify an uploaded or imported swipe file. Its subject id (what
    /// [`Job::ad_id`] returns and events carry in `ad_id`) is the swipe file id (`sf_…`),
    /// its version always 1; the result travels as [`JobResult::SwipeFile`].
    IngestSwipeFile(IngestSwipeFileJob),
    /// Analyse a design template's reference into a blueprint tree and render its preview
    /// (version 1). Its subject id is the template id (`dt_…`); the result travels as
    /// [`JobResult::DesignTemplate`].
    AnalyzeDesignTemplate(DesignTemplateJob),
    /// Render the preview of an edited design template tree (`json_tree` set) as the
    /// template's version `version`.
    RenderDesignTemplatePreview(DesignTemplateJob),
    /// Import a Figma frame into an editable ad or a design template (version `version`)
    /// and render it; the result travels as [`JobResult::FigmaSync`].
    SyncFigma(FigmaSyncJob),
}

impl Job {
    /// The subject this job produces a version of: the ad (`ia_…`), or the swipe file
    /// (`sf_…`) of an ingest.
    pub fn ad_id(&self) -> &str {
        match self {
            Job::GenerateImageAd(j) => &j.ad_id,
            Job::RenderImageAdVersion(j) => &j.ad_id,
            Job::IngestSwipeFile(j) => &j.swipe_file_id,
            Job::AnalyzeDesignTemplate(j) | Job::RenderDesignTemplatePreview(j) => &j.template_id,
            Job::SyncFigma(j) => &j.subject_id,
        }
    }

    /// The organisation that owns the subject (empty for a managed design of a data source).
    pub fn org_id(&self) -> &str {
        match self {
            Job::GenerateImageAd(j) => &j.org_id,
            Job::RenderImageAdVersion(j) => &j.org_id,
            Job::IngestSwipeFile(j) => j.org_id.as_deref().unwrap_or(""),
            Job::AnalyzeDesignTemplate(j) | Job::RenderDesignTemplatePreview(j) => &j.org_id,
            Job::SyncFigma(j) => &j.org_id,
        }
    }

    /// What kind of subject [`Job::ad_id`] names: which feature owns the job, applies its
    /// failure and resumes it.
    pub fn subject(&self) -> SubjectKind {
        match self {
            Job::GenerateImageAd(_) | Job::RenderImageAdVersion(_) => SubjectKind::ImageAd,
            Job::IngestSwipeFile(_) => SubjectKind::SwipeFile,
            Job::AnalyzeDesignTemplate(_) | Job::RenderDesignTemplatePreview(_) => {
                SubjectKind::DesignTemplate
            }
            Job::SyncFigma(j) => match j.target {
                FigmaTarget::ImageAd => SubjectKind::ImageAd,
                FigmaTarget::DesignTemplate => SubjectKind::DesignTemplate,
            },
        }
    }

    /// The ad version this job produces (1 for a new ad and for every ingest).
    pub fn version(&self) -> u32 {
        match self {
            Job::GenerateImageAd(j) => j.version,
            Job::RenderImageAdVersion(j) => j.version,
            Job::IngestSwipeFile(_) => 1,
            Job::AnalyzeDesignTemplate(j) | Job::RenderDesignTemplatePreview(j) => j.version,
            Job::SyncFigma(j) => j.version,
        }
    }

    /// The stable id of this job: one per ad version, so enqueueing the same work twice
    /// (an outbox replayed after a crash, an API resuming processing ads at start) names the
    /// same job and the queue keeps one copy.
    pub fn job_id(&self) -> String {
        format!("{}@v{}", self.ad_id(), self.version())
    }
}

/// What a job produces a version of; it routes a [`AdFailed`] to the feature that owns the
/// subject (a completion is routed by its [`JobResult`]). Written in the job's envelope and
/// in its `Failed` event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubjectKind {
    /// An image ad (`ia_…`): generated, re-rendered or imported from Figma.
    ImageAd,
    /// A swipe file (`sf_…`) being ingested.
    SwipeFile,
    /// A design template (`dt_…`): analysed, previewed or imported from Figma.
    DesignTemplate,
    /// A kind of subject a newer release added, read from an envelope this build cannot
    /// decode (or from an envelope written before the kind was copied into it); its
    /// failure is for an API node of that release to apply.
    #[default]
    #[serde(other)]
    Unknown,
}

/// Inputs of [`Job::GenerateImageAd`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerateAdJob {
    /// The ad id (`ia_…`).
    pub ad_id: String,
    /// The owning organisation.
    pub org_id: String,
    /// The version to produce; blob keys derive from `(ad_id, version)`, so a redo
    /// overwrites instead of duplicating.
    pub version: u32,
    /// The editable pipeline also produces the JSON tree.
    pub editable: bool,
    /// The reference ad image (composition and layout), fetched by URL.
    pub reference_ad_url: String,
    /// What the ad is made from: the caller's direction, brand, product, audience, variant
    /// and its images, and the moment the copy is written for. Flattened, so its fields sit
    /// beside the others on the wire as they did before the brief was a type of its own;
    /// the job reads them through `Deref` (`job.brand`).
    #[serde(flatten)]
    pub brief: AdBrief,
    /// An ad made from a design template: the template's tree to fill instead of analysing
    /// the reference's layout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<TemplateLayout>,
    /// A size of a campaign set (issue 42): the ad is laid out again for this shape instead
    /// of its reference's. Absent: the reference's (or the template's) own shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<TargetSize>,
}

/// The shape one ad of a campaign set is laid out for ([`GenerateAdJob::size`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetSize {
    /// The named placement asked for (`1:1`, `4:5`, `9:16`, `1.91:1`, `2:3`, `300x250`, …);
    /// absent for an explicit width and height.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<String>,
    /// The placement's width in pixels (its shape; the full-size render keeps this aspect).
    pub width: u32,
    /// The placement's height in pixels.
    pub height: u32,
    /// A resize of a completed ad: the source ad's tree at the version resized, laid out
    /// again with its words, pictures and node ids kept (no analysis, no new copy). Absent:
    /// the ad is made from its reference and brief like any other, then laid out at this size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_tree: Option<Value>,
    /// The ad whose id seeds the node ids of a sized ad made from its reference (the first
    /// ad of its campaign set): every size of a set made from the same inputs then has the
    /// same node ids, so an edit of one applies to its siblings by node id. Absent: the ad's
    /// own id (a resize keeps its source tree's ids whatever this says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_seed: Option<String>,
}

/// The layout of an ad made from a design template (`POST /v1/design-templates/{id}/image-ads`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemplateLayout {
    /// The template (`dt_…`).
    pub template_id: String,
    /// Its `json_tree_version` the tree is of.
    pub json_tree_version: u32,
    /// The template's tree (slot keys included), filled like a blueprint.
    pub json_tree: Value,
    /// The reference's dominant colours, heaviest first: the palette's fallback for a brand
    /// without colours.
    #[serde(default)]
    pub reference_colours: Vec<[u8; 3]>,
}

/// The named placements a campaign set is made in, each at the pixel size ad platforms ask
/// for: feed (`1:1`, `4:5`), stories and reels (`9:16`), link ads (`1.91:1`), pins (`2:3`),
/// landscape video covers (`16:9`) and the common IAB display sizes.
pub const PLACEMENTS: &[(&str, u32, u32)] = &[
    ("1:1", 1080, 1080),
    ("4:5", 1080, 1350),
    ("9:16", 1080, 1920),
    ("1.91:1", 1200, 628),
    ("2:3", 1080, 1620),
    ("16:9", 1920, 1080),
    ("300x250", 300, 250),
    ("336x280", 336, 280),
    ("300x600", 300, 600),
    ("160x600", 160, 600),
    ("970x250", 970, 250),
];

/// The widest shape a set's ad is laid out for (width ÷ height); leaderboards such as
/// 728×90 (8.1:1) and 320×50 are not supported yet: their height cannot hold a headline, a
/// call to action and the product at a readable size without dropping words.
pub const MAX_ASPECT: f64 = 4.0;
/// The tallest shape (width ÷ height): 1:4.
pub const MIN_ASPECT: f64 = 0.25;
/// The smallest and largest side of an explicit size, in pixels.
pub const SIZE_SIDE: std::ops::RangeInclusive<u32> = 100..=7680;

impl TargetSize {
    /// The named placement `name` (see [`PLACEMENTS`]), or `None`.
    pub fn placement(name: &str) -> Option<TargetSize> {
        PLACEMENTS
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|&(n, width, height)| TargetSize {
                placement: Some(n.to_owned()),
                width,
                height,
                source_tree: None,
                node_seed: None,
            })
    }

    /// An explicit size, or why it cannot be laid out (a message that says what to change).
    ///
    /// # Errors
    /// A side outside [`SIZE_SIDE`] or a shape outside [`MIN_ASPECT`]..=[`MAX_ASPECT`].
    pub fn explicit(width: u32, height: u32) -> Result<TargetSize, String> {
        if !SIZE_SIDE.contains(&width) || !SIZE_SIDE.contains(&height) {
            return Err(format!(
                "{width}×{height} has a side outside {}–{} pixels; give each side within it",
                SIZE_SIDE.start(),
                SIZE_SIDE.end()
            ));
        }
        let aspect = f64::from(width) / f64::from(height);
        if !(MIN_ASPECT..=MAX_ASPECT).contains(&aspect) {
            return Err(format!(
                "{width}×{height} is {aspect:.2}:1; sizes from 1:4 to 4:1 are supported (leaderboards such as 728×90 are not supported yet)"
            ));
        }
        Ok(TargetSize {
            placement: None,
            width,
            height,
            source_tree: None,
            node_seed: None,
        })
    }

    /// Width ÷ height.
    pub fn aspect(&self) -> f64 {
        f64::from(self.width) / f64::from(self.height)
    }
}

/// Inputs of [`Job::AnalyzeDesignTemplate`] and [`Job::RenderDesignTemplatePreview`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesignTemplateJob {
    /// The template id (`dt_…`).
    pub template_id: String,
    /// The owning organisation.
    pub org_id: String,
    /// The `json_tree_version` to produce (1 for the analysis).
    pub version: u32,
    /// The reference image, fetched by URL (analysis only).
    pub reference_image_url: String,
    /// The edited tree to preview ([`Job::RenderDesignTemplatePreview`]); `None` for the
    /// analysis.
    #[serde(default)]
    pub json_tree: Option<Value>,
    /// Classify the reference (industry, ad format) when the worker can (analysis of a
    /// reference URL; a swipe file's template copies the design's classification).
    #[serde(default)]
    pub classify: bool,
}

/// What a design-template job produced, carried back as [`JobResult::DesignTemplate`] (and
/// in [`FigmaSyncResult::DesignTemplate`]); the API derives the aspect ratio from the size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesignTemplateAnalysed {
    /// Absolute URL of the preview PNG.
    pub preview_url: String,
    /// The tree's design width.
    pub width: u32,
    /// The tree's design height.
    pub height: u32,
    /// Blob key of the preview PNG.
    pub preview_key: String,
    /// The tree (the analysis's, or the edited one previewed).
    pub json_tree: Value,
    /// True when the analysis came from the worker's cache (the same reference bytes were
    /// analysed before); false when it ran now or for a preview of an edit.
    #[serde(default)]
    pub cache_hit: bool,
    /// `reference_blueprint` when the tree follows the reference's own layout,
    /// `reference_aspect` when the analysis found no usable layout and a plain composition
    /// at the reference's shape was used.
    #[serde(default)]
    pub composition: String,
    /// Why the reference's own layout was not used, when it was not.
    #[serde(default)]
    pub note: Option<String>,
    /// The reference's dominant colours, heaviest first.
    #[serde(default)]
    pub reference_colours: Vec<[u8; 3]>,
    /// The reference's industry, when the job asked and the worker could classify it.
    #[serde(default)]
    pub industry: Option<String>,
    /// The reference's ad format, when the job asked and the worker could classify it.
    #[serde(default)]
    pub ad_format: Option<String>,
}

/// Inputs of [`Job::RenderImageAdVersion`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RerenderJob {
    /// The ad id (`ia_…`).
    pub ad_id: String,
    /// The owning organisation.
    pub org_id: String,
    /// The version to produce.
    pub version: u32,
    /// The version record id (`iav_…`), when the API created one.
    #[serde(default)]
    pub version_id: Option<String>,
    /// The entire tree to render, as the client sent it (already validated by the API).
    pub json_tree: Value,
}

/// Inputs of [`Job::IngestSwipeFile`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IngestSwipeFileJob {
    /// The swipe file id (`sf_…`).
    pub swipe_file_id: String,
    /// The owning organisation; `None` for a managed design of a data source.
    #[serde(default)]
    pub org_id: Option<String>,
    /// Blob key of the stored original (PNG or JPEG; WebP uploads were transcoded to PNG).
    /// With `fetch_url`, where the worker stores what it fetched (extension added).
    pub blob_key: String,
    /// A bulk import's design not stored yet: the worker fetches it through the address
    /// policy, stores it and reports the key in [`SwipeFileIngested::blob_key`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetch_url: Option<String>,
    /// What an import manifest said about the design; wins over what the ingest decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<IngestHints>,
}

/// An import manifest's own words about a design (`adforge admin data-source import`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IngestHints {
    /// A taxonomy industry key, checked by the importer.
    #[serde(default)]
    pub industry: Option<String>,
    /// A taxonomy ad format key, checked by the importer.
    #[serde(default)]
    pub ad_format: Option<String>,
    /// The caption; the text vector embeds it instead of the generated one.
    #[serde(default)]
    pub caption: Option<String>,
}

/// What an ingest measured, carried back as [`JobResult::SwipeFile`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwipeFileIngested {
    /// Pixel width of the original.
    pub width: u32,
    /// Pixel height of the original.
    pub height: u32,
    /// Blob key of the 200 px WebP preview.
    pub thumb_key: String,
    /// Where a fetched original was stored ([`IngestSwipeFileJob::fetch_url`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob_key: Option<String>,
    /// Nearest common ad ratio (1:1, 4:5, 9:16, 1.91:1, 16:9, 2:3, 3:4).
    pub aspect_ratio: String,
    /// Top-level retail category, `None` when undecided.
    #[serde(default)]
    pub industry: Option<String>,
    /// Creative format, `None` when undecided.
    #[serde(default)]
    pub ad_format: Option<String>,
    /// The caption built from what was measured; the text vector embeds it.
    pub caption: String,
    /// The top ImageNet labels with probabilities.
    #[serde(default)]
    pub labels: Vec<(String, f32)>,
    /// Words read by OCR, when Tesseract was available.
    #[serde(default)]
    pub ocr_text: Option<String>,
    /// The image model's id and the unit image vector.
    pub image_model: String,
    /// Unit-length image embedding.
    pub image_vector: Vec<f32>,
    /// The text model's id.
    pub text_model: String,
    /// Unit-length embedding of `caption`.
    pub text_vector: Vec<f32>,
}

/// A job on the wire: the job plus what the queue needs to deliver it.
///
/// # Invariants
/// `job_id == job.job_id()`, `ad_id == job.ad_id()`, `subject == job.subject()`,
/// `version == job.version()` for envelopes built by [`JobEnvelope::new`]; the copies exist
/// so a reader that cannot decode `job` (a newer variant) can still fail the right subject.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobEnvelope {
    /// Protocol version, [`PROTOCOL_VERSION`] when written by this build.
    pub v: u32,
    /// Stable id of the job, see [`Job::job_id`].
    pub job_id: String,
    /// Copy of `job.ad_id()`.
    pub ad_id: String,
    /// Copy of `job.subject()`.
    #[serde(default)]
    pub subject: SubjectKind,
    /// Copy of `job.version()`.
    pub version: u32,
    /// Which attempt this delivery starts from (1-based); a retry writes `attempt + 1`.
    pub attempt: u32,
    /// The work.
    pub job: Job,
}

/// The fields of a [`JobEnvelope`] that any version can read.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct EnvelopeHeader {
    pub v: u32,
    pub job_id: String,
    pub ad_id: String,
    #[serde(default)]
    pub subject: SubjectKind,
    pub version: u32,
    pub attempt: u32,
}

impl JobEnvelope {
    /// Wraps `job` for its first attempt.
    pub fn new(job: Job) -> Self {
        JobEnvelope {
            v: PROTOCOL_VERSION,
            job_id: job.job_id(),
            ad_id: job.ad_id().to_owned(),
            subject: job.subject(),
            version: job.version(),
            attempt: 1,
            job,
        }
    }

    /// The JSON written to the queue.
    pub fn encode(&self) -> String {
        // A struct of strings, numbers and `Value`s always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Reads the header of an encoded envelope, refusing newer protocol versions.
pub(crate) fn decode_header(json: &str) -> Result<EnvelopeHeader, Error> {
    let header: EnvelopeHeader = serde_json::from_str(json).map_err(|source| Error::Decode {
        what: "job",
        source,
    })?;
    if header.v > PROTOCOL_VERSION {
        return Err(Error::UnsupportedVersion {
            what: "job",
            found: header.v,
            supported: PROTOCOL_VERSION,
        });
    }
    Ok(header)
}

/// Decodes a whole envelope (after its header was accepted).
pub(crate) fn decode_envelope(json: &str) -> Result<JobEnvelope, Error> {
    serde_json::from_str(json).map_err(|source| Error::Decode {
        what: "job",
        source,
    })
}

#[cfg(test)]
mod tests;
