//! The one error type of this crate.

use std::path::PathBuf;

/// Everything that can go wrong before or after rendering.
///
/// Rendering an accepted [`crate::Tree`] never fails: missing fonts and images become
/// warnings in the [`crate::RenderReport`]. These errors come from parsing, from editing a
/// tree ([`crate::tree::TreeDoc`]), from the command line entry and from writing files.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input is not JSON at all. Fix the syntax at the given line and column.
    #[error("the tree is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),

    /// A node has a field with the wrong type or an invalid value. The message names the node
    /// id and the field path (`fills[0].color.r`); change that field.
    #[error("node `{node}`, field `{field}`: {message}")]
    InvalidNode {
        /// Id of the offending node (its key in `nodes`).
        node: String,
        /// Path of the offending field inside the node, e.g. `fills[0].color`.
        field: String,
        /// What is wrong and what is allowed.
        message: String,
    },

    /// The tree as a whole is malformed (no `nodes`, no root, a cycle). The message says which
    /// top-level field to change.
    #[error("tree field `{field}`: {message}")]
    InvalidTree {
        /// The top-level field, e.g. `nodes` or `root`.
        field: String,
        /// What is wrong.
        message: String,
    },

    /// An edit ([`crate::tree::TreeDoc`]) names a node id that is not a key of the tree's
    /// `nodes` (or the tree has no `nodes` object). Take the id from the tree itself, e.g.
    /// from [`crate::tree::TreeDoc::slots`].
    #[error("the tree has no node `{id}`")]
    NodeNotFound {
        /// The id that was asked for.
        id: String,
    },

    /// [`crate::tree::TreeDoc::set_text`] was given a node whose `type` is not `TEXT`.
    /// Only TEXT nodes have `characters`; pick a TEXT node.
    #[error("node `{id}` is not a TEXT node")]
    NotText {
        /// The node's id.
        id: String,
    },

    /// An edit of a paint ([`crate::tree::PaintAt`]) found no paint of the needed `kind` at
    /// that place: the list is shorter, or the paint there has another `type`. Take the
    /// place from the tree itself, e.g. from [`crate::tree::TreeDoc::slots`].
    #[error("node `{node}` has no {kind} paint at `{list}[{index}]`")]
    NoSuchPaint {
        /// The node's id.
        node: String,
        /// `fills` or `strokes`.
        list: &'static str,
        /// The position in the list.
        index: usize,
        /// The paint type the edit needs: `SOLID` or `IMAGE`.
        kind: &'static str,
    },

    /// Reading the tree file or writing the PNG / report failed.
    #[error("{path}: {source}")]
    Io {
        /// The file that could not be read or written.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },

    /// PNG encoding failed (only possible for absurd sizes or an out-of-memory writer).
    #[error("PNG encoding failed: {0}")]
    Encode(String),

    /// The requested output size is zero or larger than the renderer accepts
    /// (16384 px on the long edge). Choose a smaller `--width`.
    #[error("invalid output size {width}x{height}: {message}")]
    InvalidSize {
        /// Requested width in pixels.
        width: u32,
        /// Resulting height in pixels.
        height: u32,
        /// Why it is refused.
        message: String,
    },

    /// The render ran past its [`crate::budget::Deadline`] and stopped (at `stage`). Make
    /// the tree cheaper (fewer or smaller blurs and shadows, fewer layers) or render it
    /// smaller; a caller with a budget of its own says which.
    #[error("the render took longer than its budget and was stopped while {stage}")]
    PastDeadline {
        /// What it was doing: `waiting for memory`, `drawing`, `encoding`.
        stage: &'static str,
    },

    /// The process is shutting down ([`crate::budget::stop_all`]); the render was stopped.
    /// Retry on another node or after the restart.
    #[error("the render was stopped: this process is shutting down")]
    Stopped,

    /// Drawing the tree at this size would hold more than one render may
    /// ([`crate::budget::MAX_RENDER_BYTES`]): too many layers alive at once (nested
    /// clipping frames with rounded corners, shadows, blurs, opacity or blend modes inside
    /// each other). Flatten the nesting around node `node`, or render it smaller.
    #[error(
        "node `{node}`: drawing this tree at {width}x{height} would take {} MiB at once (layers inside layers: clipping frames with rounded corners, shadows, blurs, opacity or blend modes nested in each other); one render may take at most {} MiB: flatten the nesting around this node or render it smaller",
        bytes.div_ceil(1 << 20),
        limit >> 20
    )]
    TooMuchMemory {
        /// The node whose layer took the render over the bound (the innermost one alive).
        node: String,
        /// The render's worst case, in bytes.
        bytes: u64,
        /// [`crate::budget::MAX_RENDER_BYTES`].
        limit: u64,
        /// Output size.
        width: u32,
        height: u32,
    },

    /// The GPU backend was asked for (`--backend gpu`) but no usable Vulkan adapter exists,
    /// the device could not be created, or this build lacks the `gpu` feature. Install a
    /// GPU driver (or `mesa-vulkan-drivers` for the software one) or use `--backend cpu`.
    #[error("no usable GPU: {reason}")]
    GpuUnavailable {
        /// What was tried and what was found.
        reason: String,
    },
}

impl Error {
    pub(crate) fn node(node: &str, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidNode {
            node: node.to_owned(),
            field: field.into(),
            message: message.into(),
        }
    }

    pub(crate) fn tree(field: &str, message: impl Into<String>) -> Self {
        Self::InvalidTree {
            field: field.to_owned(),
            message: message.into(),
        }
    }
}
