//! The wire types of design-tool sync ([`super::Job::SyncFigma`]): what the API sends a
//! worker to import a Figma frame, and what comes back in [`super::FigmaSyncResult`].

use serde::{Deserialize, Serialize};

use super::{AdBrief, GenerateAdJob};

/// What a Figma frame is imported into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FigmaTarget {
    /// An editable image ad (`ia_…`): the imported tree rendered at 4K.
    ImageAd,
    /// A design template (`dt_…`): the imported tree, its slots marked, with a preview.
    DesignTemplate,
}

/// Inputs of [`super::Job::SyncFigma`].
///
/// # Invariants
/// `token_sealed` is the organisation's Figma token sealed with the deployment's secrets
/// key for the context [`token_context`]`(org_id)`; the plain token never travels.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct FigmaSyncJob {
    /// The ad (`ia_…`) or template (`dt_…`) the frame is imported into.
    pub subject_id: String,
    /// The owning organisation.
    pub org_id: String,
    /// The version to produce (the ad's version, the template's `json_tree_version`).
    pub version: u32,
    /// What the frame becomes.
    pub target: FigmaTarget,
    /// Figma's API base URL (the API node's `--figma-api-url`).
    pub api_url: String,
    /// The file key.
    pub file_key: String,
    /// The frame's node id (`1:2`).
    pub node_id: String,
    /// The organisation's token, sealed ([`crate::secrets`]).
    pub token_sealed: String,
    /// The file version and frame hash the subject was last synced from: a re-sync whose
    /// frame is unchanged produces nothing new.
    #[serde(default)]
    pub previous: Option<FigmaFrameVersion>,
    /// Fill the frame's slots with the ad's inputs (`fill_slots`), like a blueprint.
    #[serde(default)]
    pub fill_slots: bool,
    /// The ad's brief (brand, product, audience, variant images, prompt), for filling
    /// slots and for the copy's facts; `None` for design templates.
    #[serde(default)]
    pub brief: Option<Box<AdBrief>>,
}

impl FigmaSyncJob {
    /// What the slots of an image ad's frame are filled from: the brief, as the job of
    /// the ad's version this sync produces (the copywriter seeds its words with the ad's
    /// version, as a generated ad's). `None` without a brief (design templates).
    pub fn ad_inputs(&self) -> Option<GenerateAdJob> {
        let brief = self.brief.as_deref()?.clone();
        Some(GenerateAdJob {
            ad_id: self.subject_id.clone(),
            org_id: self.org_id.clone(),
            version: self.version,
            editable: true,
            // An imported frame is laid out by its designer: no reference is read.
            reference_ad_url: String::new(),
            brief,
            template: None,
            size: None,
        })
    }
}

// The sealed token is not secret without the key, but it has no business in logs either.
impl std::fmt::Debug for FigmaSyncJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FigmaSyncJob")
            .field("subject_id", &self.subject_id)
            .field("org_id", &self.org_id)
            .field("version", &self.version)
            .field("target", &self.target)
            .field("api_url", &self.api_url)
            .field("file_key", &self.file_key)
            .field("node_id", &self.node_id)
            .field("token_sealed", &"…")
            .field("previous", &self.previous)
            .field("fill_slots", &self.fill_slots)
            .finish_non_exhaustive()
    }
}

/// The sealing context of an organisation's Figma token.
pub fn token_context(org_id: &str) -> String {
    format!("figma-token:{org_id}")
}

/// Which state of a frame a subject holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FigmaFrameVersion {
    /// The file's `version` from Figma.
    pub file_version: String,
    /// SHA-256 (hex) of the frame's node JSON as Figma sent it: the frame is unchanged when
    /// it is equal, even if other parts of the file changed.
    pub frame_hash: String,
}

/// The frame's state after a sync, carried back in [`super::FigmaSyncResult`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigmaSynced {
    /// True when the frame had not changed since the last sync: nothing else in the event
    /// is new, and the subject stays at its current version.
    pub unchanged: bool,
    /// The frame's state now.
    pub frame: FigmaFrameVersion,
    /// The file's name and `lastModified`.
    pub file_name: String,
    pub last_modified: String,
    /// Blob key of Figma's own render of the frame (PNG), when Figma made one.
    #[serde(default)]
    pub figma_render_key: Option<String>,
    /// Its absolute URL.
    #[serde(default)]
    pub figma_render_url: Option<String>,
    /// What was imported and what could not be.
    pub report: ImportReport,
}

/// What an import read, mapped, exported as images and could not map.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ImportReport {
    /// Figma nodes read, the frame included.
    pub nodes: usize,
    /// Figma node types read, with their counts.
    pub kinds: std::collections::BTreeMap<String, usize>,
    /// Nodes drawn from Figma's SVG export of them (stored as our own file), because the
    /// tree cannot express them; each is also listed in `unmapped` with the reason.
    pub svg_exports: usize,
    /// Image fills stored as our own files.
    pub image_fills: usize,
    /// What the tree does not draw as Figma does, node by node. The Figma fields are kept
    /// in the node as they were (the tree keeps unknown fields).
    pub unmapped: Vec<Unmapped>,
    /// Font families the frame uses that are not in the font library, with the nodes that
    /// use them; they are drawn in the renderer's fallback family.
    pub missing_fonts: Vec<MissingFont>,
    /// Nodes named like a slot (`headline`, `product_image`, `cta`, …), by slot.
    pub slots: Vec<SlotNode>,
}

/// One thing of one node that is not drawn as in Figma.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unmapped {
    /// The node's id in our tree (empty when the node was left out of it).
    pub node: String,
    /// Its Figma id.
    pub figma_id: String,
    /// Its name in Figma.
    pub name: String,
    /// The Figma feature (`isMask`, `strokeDashes`, `GRADIENT_ANGULAR`, …).
    pub feature: String,
    /// What became of it, and why.
    pub reason: String,
}

/// A font family the library does not have.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissingFont {
    /// The family Figma names.
    pub family: String,
    /// The family drawn instead.
    pub fallback: String,
    /// Our ids of the TEXT nodes that use it.
    pub nodes: Vec<String>,
}

/// A node that is a slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotNode {
    /// The slot (`headline`, `product_image`, …).
    pub slot: String,
    /// Our node id.
    pub node: String,
    /// True when `fill_slots` filled it.
    #[serde(default)]
    pub filled: bool,
}
