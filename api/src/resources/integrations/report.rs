//! How an ad or a template shows the Figma frame it was synced from (`figma`): the frame,
//! the state of its last sync, and the import report. Stored as JSON in `figma_sync`
//! beside `figma_file_key` and `figma_node_id`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The frame an ad or a template was synced from, and its last sync.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FigmaSync {
    /// The frame's link.
    pub url: String,
    /// The file key.
    pub file_key: String,
    /// The frame's node id (`1:2`).
    pub node_id: String,
    /// Whether the frame's slots were filled with the ad's inputs (`fill_slots`).
    pub fill_slots: bool,
    /// The file's name in Figma; null until the first sync completes.
    pub file_name: Option<String>,
    /// Figma's file `version` at the last sync.
    pub file_version: Option<String>,
    /// Figma's `lastModified` of the file at the last sync.
    pub last_modified: Option<String>,
    /// When the frame was last read (a re-sync of an unchanged frame updates it too).
    pub synced_at: Option<String>,
    /// Figma's own render of the frame at the last sync that imported it, stored as this
    /// server's file (for an ad also in `figma_render_url`).
    pub render_url: Option<String>,
    /// What the last import mapped and could not map; null until the first sync completes.
    pub report: Option<FigmaImportReport>,
}

/// The stored state (`figma_sync` column).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FigmaSyncState {
    #[serde(default)]
    pub fill_slots: bool,
    #[serde(default)]
    pub file_name: Option<String>,
    #[serde(default)]
    pub file_version: Option<String>,
    #[serde(default)]
    pub frame_hash: Option<String>,
    #[serde(default)]
    pub last_modified: Option<String>,
    #[serde(default)]
    pub synced_at: Option<String>,
    #[serde(default)]
    pub render_url: Option<String>,
    #[serde(default)]
    pub report: Option<FigmaImportReport>,
}

impl FigmaSync {
    /// The ad's or template's `figma` from its columns; `None` when it is not from Figma.
    pub fn from_columns(
        file_key: Option<String>,
        node_id: Option<String>,
        state: Option<&str>,
    ) -> Option<Self> {
        let (file_key, node_id) = (file_key?, node_id?);
        let state: FigmaSyncState = state
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_default();
        Some(FigmaSync {
            url: adforge_worker::figma::url::FrameRef {
                file_key: file_key.clone(),
                node_id: node_id.clone(),
            }
            .url(),
            file_key,
            node_id,
            fill_slots: state.fill_slots,
            file_name: state.file_name,
            file_version: state.file_version,
            last_modified: state.last_modified,
            synced_at: state.synced_at,
            render_url: state.render_url,
            report: state.report,
        })
    }
}

/// What an import read, mapped and could not map (the worker's report).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct FigmaImportReport {
    /// Figma nodes read, the frame included.
    pub nodes: usize,
    /// Figma node types read, with their counts (`{"FRAME": 3, "TEXT": 5, …}`).
    #[schema(value_type = Object)]
    pub kinds: std::collections::BTreeMap<String, usize>,
    /// Nodes drawn from Figma's SVG export (stored as our own files), each also in
    /// `unmapped` with the reason.
    pub svg_exports: usize,
    /// Image fills stored as our own files.
    pub image_fills: usize,
    /// What the tree does not draw as Figma does, node by node; the Figma fields are kept
    /// on the node.
    pub unmapped: Vec<FigmaUnmapped>,
    /// Font families not in the font library (drawn in the fallback family).
    pub missing_fonts: Vec<FigmaMissingFont>,
    /// Nodes named like a slot, by slot.
    pub slots: Vec<FigmaSlot>,
}

/// One feature of one node that is not drawn as in Figma.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct FigmaUnmapped {
    /// The node's id in `current_json_tree` (empty for a node left out, such as a slice).
    pub node: String,
    /// Its id in Figma.
    pub figma_id: String,
    /// Its name in Figma.
    pub name: String,
    /// The Figma feature (`isMask`, `strokeDashes`, `fills[0] GRADIENT_ANGULAR`, …).
    pub feature: String,
    /// What became of it and why.
    pub reason: String,
}

/// A font family the library does not have.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct FigmaMissingFont {
    /// The family the frame names.
    pub family: String,
    /// The family drawn instead.
    pub fallback: String,
    /// The TEXT nodes (ids in the tree) that use it.
    pub nodes: Vec<String>,
}

/// A node that is a slot (named like one: `headline`, `product_image`, `cta`, …).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct FigmaSlot {
    /// The slot.
    pub slot: String,
    /// The node's id in the tree.
    pub node: String,
    /// True when `fill_slots` filled it.
    pub filled: bool,
}
