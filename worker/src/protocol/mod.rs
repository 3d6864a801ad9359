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
//! API routed on by guessing.
//!
//! Rejected alternative: a binary format (bincode, protobuf). Jobs are a few KiB and a
//! handful per second per node; JSON is readable with `redis-cli XRANGE` when an operator
//! debugs a stuck ad, and serde's field rules give the compatibility rule above for free.

mod copy;
mod figma;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use copy::{CopyReport, FactSource, Money, Refusal, SlotReport, Variant};
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
    /// An ad made from a design template: the template's tree to fill instead of analysing
    /// the reference's layout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<TemplateLayout>,
    /// When the ad was created (RFC 3339, UTC), as its row says: the moment its copy is
    /// written for, so an offer's `ends_at` is judged the same way on every retry of the
    /// job. Absent from older API nodes; then an offer with an end date is not stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
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

/// A job on the wire: the job plus what the queue needs to deliver it.
///
/// # Invariants
/// `job_id == job.job_id()`, `ad_id == job.ad_id()`, `version == job.version()` for envelopes
/// built by [`JobEnvelope::new`]; the copies exist so a reader that cannot decode `job` (a
/// newer variant) can still fail the right ad.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobEnvelope {
    /// Protocol version, [`PROTOCOL_VERSION`] when written by this build.
    pub v: u32,
    /// Stable id of the job, see [`Job::job_id`].
    pub job_id: String,
    /// Copy of `job.ad_id()`.
    pub ad_id: String,
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

/// What a worker reports back. Terminal events (`Completed`, `Failed`) change the ad's state
/// and travel durably (at least once); `Progress` is a superseded-by-the-next hint kept only
/// as the latest value per ad (see [`crate::JobQueue::latest_progress`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A step of the pipeline started.
    Progress(AdProgress),
    /// The ad version is rendered and stored.
    Completed(AdCompleted),
    /// The ad version failed for good; the API releases the wallet hold.
    Failed(AdFailed),
}

impl Event {
    /// The ad the event is about.
    pub fn ad_id(&self) -> &str {
        match self {
            Event::Progress(e) => &e.ad_id,
            Event::Completed(e) => &e.ad_id,
            Event::Failed(e) => &e.ad_id,
        }
    }

    /// The JSON written to the events stream: the event with `"v"` beside `"type"`.
    pub fn encode(&self) -> String {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut value {
            map.insert("v".to_owned(), Value::from(PROTOCOL_VERSION));
        }
        value.to_string()
    }

    /// Decodes what [`Event::encode`] wrote.
    ///
    /// # Errors
    /// [`Error::UnsupportedVersion`] for a newer `v`, [`Error::Decode`] for anything this
    /// build cannot read.
    pub fn decode(json: &str) -> Result<Event, Error> {
        #[derive(Deserialize)]
        struct Version {
            #[serde(default)]
            v: u32,
        }
        let version: Version = serde_json::from_str(json).map_err(|source| Error::Decode {
            what: "event",
            source,
        })?;
        if version.v > PROTOCOL_VERSION {
            return Err(Error::UnsupportedVersion {
                what: "event",
                found: version.v,
                supported: PROTOCOL_VERSION,
            });
        }
        serde_json::from_str(json).map_err(|source| Error::Decode {
            what: "event",
            source,
        })
    }
}

/// Payload of [`Event::Progress`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdProgress {
    /// The ad.
    pub ad_id: String,
    /// The version being produced.
    pub version: u32,
    /// Machine-readable step (`fetch_reference`, `layout`, `render`, ...).
    pub step: String,
    /// What a person reads.
    pub message: String,
    /// 0 to 100.
    pub percentage: u8,
}

/// Payload of [`Event::Completed`]: which subject, which version, and what the job
/// produced, typed by the kind of job ([`JobResult`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdCompleted {
    /// The subject: the ad (`ia_…`), swipe file (`sf_…`) or design template (`dt_…`).
    pub ad_id: String,
    /// The version produced.
    pub version: u32,
    /// Time the successful attempt took (filled in by the runner).
    pub duration_ms: u64,
    /// What the job produced.
    pub result: JobResult,
}

impl AdCompleted {
    /// The image ad this job rendered: a generated or re-rendered ad, or a Figma frame
    /// imported into one (unless the frame was unchanged).
    pub fn image_ad(&self) -> Option<&ImageAdRendered> {
        match &self.result {
            JobResult::ImageAd(r) => Some(r),
            JobResult::FigmaSync(sync) => match sync.as_ref() {
                FigmaSyncResult::ImageAd { rendered, .. } => rendered.as_ref(),
                FigmaSyncResult::DesignTemplate { .. } => None,
            },
            JobResult::SwipeFile(_) | JobResult::DesignTemplate(_) => None,
        }
    }

    /// How the 4K render of an ad went, when the job rendered one (the API's render
    /// metrics).
    pub fn render(&self) -> Option<&RenderTimings> {
        self.image_ad().and_then(|r| r.render.as_ref())
    }
}

/// What a finished job produced, one variant per kind of job, each with exactly its
/// fields. The API applies each with one `match`; nothing is guessed from ids or from
/// which optional fields are set. Tagged by `"kind"` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JobResult {
    /// [`Job::GenerateImageAd`] and [`Job::RenderImageAdVersion`]: the ad's PNG.
    ImageAd(ImageAdRendered),
    /// [`Job::IngestSwipeFile`]: what was measured (the subject is the swipe file).
    SwipeFile(Box<SwipeFileIngested>),
    /// [`Job::AnalyzeDesignTemplate`] and [`Job::RenderDesignTemplatePreview`]: the tree
    /// and preview (the subject is the template).
    DesignTemplate(Box<DesignTemplateAnalysed>),
    /// [`Job::SyncFigma`]: the frame's state, and what it was imported into.
    FigmaSync(Box<FigmaSyncResult>),
}

/// An image ad's rendered version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageAdRendered {
    /// Absolute URL of the PNG in the blob store.
    pub image_url: String,
    /// Pixel width of the PNG.
    pub width: u32,
    /// Pixel height of the PNG.
    pub height: u32,
    /// The tree of an editable ad (and of every re-render or Figma import); `None` for
    /// flat ads.
    #[serde(default)]
    pub json_tree: Option<Value>,
    /// How the 4K render went (the API's render metrics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<RenderTimings>,
    /// What the copywriter wrote into a generated ad and the source of every fact in it;
    /// absent from jobs that write no copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy: Option<Box<CopyReport>>,
}

/// What a Figma sync produced, by what the frame was imported into. `rendered` is `None`
/// exactly when the frame had not changed since the last sync (`synced.unchanged`): the
/// subject stays at its current version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "target", rename_all = "snake_case")]
pub enum FigmaSyncResult {
    /// An editable image ad (`ia_…`).
    ImageAd {
        /// The frame's state and the import report.
        synced: FigmaSynced,
        /// The imported ad's render.
        rendered: Option<ImageAdRendered>,
    },
    /// A design template (`dt_…`).
    DesignTemplate {
        /// The frame's state and the import report.
        synced: FigmaSynced,
        /// The imported template's tree and preview.
        rendered: Option<Box<DesignTemplateAnalysed>>,
    },
}

/// The backend and stage times of one render, as the worker measured them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RenderTimings {
    /// `cpu` or `gpu`: what drew the pixels (a GPU render redone on the CPU says `cpu`).
    pub backend: String,
    /// Milliseconds per stage: `images`, `layout`, `scene`, `raster`, `encode`, and on the
    /// GPU `gpu_upload`, `gpu_draw`, `gpu_readback`.
    pub stages_ms: std::collections::BTreeMap<String, f64>,
}

/// Payload of [`Event::Failed`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdFailed {
    /// The ad.
    pub ad_id: String,
    /// The version that failed.
    pub version: u32,
    /// Spec error code, [`crate::PIPELINE_ERROR`] unless a pipeline chose another.
    pub code: String,
    /// What went wrong, for the client.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rerender() -> Job {
        Job::RenderImageAdVersion(RerenderJob {
            ad_id: "ia_1".into(),
            org_id: "org_1".into(),
            version: 2,
            version_id: None,
            json_tree: serde_json::json!({"nodes": {}}),
        })
    }

    #[test]
    fn envelope_round_trips_and_ignores_unknown_fields() {
        let env = JobEnvelope::new(rerender());
        let mut value: Value = serde_json::from_str(&env.encode()).unwrap();
        assert_eq!(value["job"]["type"], "render_image_ad_version");
        value["added_later"] = Value::from(1);
        value["job"]["also_added_later"] = Value::from("x");
        let json = value.to_string();
        assert_eq!(decode_header(&json).unwrap().job_id, "ia_1@v2");
        assert_eq!(decode_envelope(&json).unwrap(), env);
    }

    #[test]
    fn newer_versions_are_refused_and_unknown_variants_fail_to_decode() {
        let mut value: Value =
            serde_json::from_str(&JobEnvelope::new(rerender()).encode()).unwrap();
        value["job"]["type"] = Value::from("render_video_ad");
        let header = decode_header(&value.to_string()).unwrap();
        assert_eq!(header.ad_id, "ia_1");
        assert!(matches!(
            decode_envelope(&value.to_string()),
            Err(Error::Decode { .. })
        ));
        value["v"] = Value::from(PROTOCOL_VERSION + 1);
        assert!(matches!(
            decode_header(&value.to_string()),
            Err(Error::UnsupportedVersion { .. })
        ));
    }

    /// One result of each kind, as the pipelines write them.
    pub(crate) fn one_of_each_result() -> Vec<JobResult> {
        let ad = ImageAdRendered {
            image_url: "https://cdn.example.com/ia_1.png".into(),
            width: 3072,
            height: 3840,
            json_tree: Some(serde_json::json!({"root": "r", "nodes": {}})),
            render: Some(RenderTimings {
                backend: "cpu".into(),
                stages_ms: [("raster".to_owned(), 12.5)].into_iter().collect(),
            }),
            copy: None,
        };
        let template = DesignTemplateAnalysed {
            preview_url: "https://cdn.example.com/dt_1.png".into(),
            width: 1080,
            height: 1350,
            preview_key: "design-templates/dt_1/v1.png".into(),
            json_tree: serde_json::json!({"root": "r", "nodes": {}}),
            cache_hit: true,
            composition: "reference_blueprint".into(),
            note: None,
            reference_colours: vec![[1, 2, 3]],
            industry: Some("beauty".into()),
            ad_format: None,
        };
        let synced = FigmaSynced {
            unchanged: false,
            frame: FigmaFrameVersion {
                file_version: "42".into(),
                frame_hash: "ab".into(),
            },
            file_name: "Ads".into(),
            last_modified: "2026-11-28T00:00:00Z".into(),
            figma_render_key: None,
            figma_render_url: None,
            report: ImportReport::default(),
        };
        vec![
            JobResult::ImageAd(ad.clone()),
            JobResult::SwipeFile(Box::new(SwipeFileIngested {
                width: 800,
                height: 1000,
                thumb_key: "swipe-files/sf_1/preview.webp".into(),
                blob_key: None,
                aspect_ratio: "4:5".into(),
                industry: None,
                ad_format: Some("product_shot".into()),
                caption: "a bottle".into(),
                labels: vec![("bottle".into(), 0.5)],
                ocr_text: None,
                image_model: "img".into(),
                image_vector: vec![0.6, 0.8],
                text_model: "txt".into(),
                text_vector: vec![1.0],
            })),
            JobResult::DesignTemplate(Box::new(template.clone())),
            JobResult::FigmaSync(Box::new(FigmaSyncResult::ImageAd {
                synced: synced.clone(),
                rendered: Some(ad),
            })),
            JobResult::FigmaSync(Box::new(FigmaSyncResult::ImageAd {
                synced: FigmaSynced {
                    unchanged: true,
                    ..synced.clone()
                },
                rendered: None,
            })),
            JobResult::FigmaSync(Box::new(FigmaSyncResult::DesignTemplate {
                synced,
                rendered: Some(Box::new(template)),
            })),
        ]
    }

    #[test]
    fn every_kind_of_result_round_trips_tagged_by_its_kind() {
        let kinds: Vec<String> = one_of_each_result()
            .into_iter()
            .map(|result| {
                let event = Event::Completed(AdCompleted {
                    ad_id: "ia_1".into(),
                    version: 1,
                    duration_ms: 5,
                    result,
                });
                let json = event.encode();
                assert_eq!(Event::decode(&json).unwrap(), event, "{json}");
                let value: Value = serde_json::from_str(&json).unwrap();
                let result = &value["result"];
                format!(
                    "{}{}",
                    result["kind"].as_str().unwrap(),
                    result["target"]
                        .as_str()
                        .map(|t| format!("/{t}"))
                        .unwrap_or_default()
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "image_ad",
                "swipe_file",
                "design_template",
                "figma_sync/image_ad",
                "figma_sync/image_ad",
                "figma_sync/design_template"
            ]
        );
    }

    #[test]
    fn a_completed_event_of_protocol_1_is_not_read_as_a_result() {
        // Protocol 1's shape: the result's fields beside the subject, no `result`.
        let old = r#"{"type":"completed","v":1,"ad_id":"ia_1","version":1,"image_url":"u","width":1,"height":1,"duration_ms":1}"#;
        assert!(matches!(Event::decode(old), Err(Error::Decode { .. })));
    }

    #[test]
    fn events_round_trip_with_version() {
        let event = Event::Failed(AdFailed {
            ad_id: "ia_1".into(),
            version: 1,
            code: "PIPELINE_ERROR".into(),
            message: "boom".into(),
        });
        let json = event.encode();
        let v = format!("\"v\":{PROTOCOL_VERSION}");
        assert!(json.contains(&v), "{json}");
        assert_eq!(Event::decode(&json).unwrap(), event);
        let newer = json.replace(&v, "\"v\":99");
        assert!(matches!(
            Event::decode(&newer),
            Err(Error::UnsupportedVersion { .. })
        ));
    }
}
