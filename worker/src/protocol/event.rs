//! What comes back from a worker: [`Event`]s, and in a completed job's event its typed
//! [`JobResult`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    CopyReport, DesignTemplateAnalysed, FigmaSynced, PROTOCOL_VERSION, SubjectKind,
    SwipeFileIngested,
};
use crate::Error;

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
    /// What `ad_id` names, and so which feature applies the failure (never guessed from
    /// the id).
    pub subject: SubjectKind,
    /// The subject: the ad (`ia_…`), swipe file (`sf_…`) or design template (`dt_…`).
    pub ad_id: String,
    /// The version that failed.
    pub version: u32,
    /// Spec error code, [`crate::PIPELINE_ERROR`] unless a pipeline chose another.
    pub code: String,
    /// What went wrong, for the client.
    pub message: String,
}
