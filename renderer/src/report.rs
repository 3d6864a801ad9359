//! The render report: warnings and per-phase timings (`--report r.json`).

use serde::Serialize;

/// Something the renderer could not do as asked. Rendering went on without it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Warning {
    /// The font family is not in the font library; `fallback` was used.
    MissingFont {
        node: String,
        family: String,
        fallback: String,
    },
    /// An image could not be fetched or decoded; the paint was skipped.
    ImageFailed {
        node: String,
        url: String,
        reason: String,
    },
    /// Shrink-to-fit reduced the font size.
    TextShrunk { node: String, from: f32, to: f32 },
    /// Text does not fit its box even at the minimum size (it is drawn in full, not clipped,
    /// unless an ancestor clips).
    TextOverflow { node: String, message: String },
    /// Lines were dropped (maxLines / TRUNCATE), with or without an ellipsis.
    TextTruncated { node: String, lines: usize },
    /// Text colour against the pixels behind it is under WCAG's 4.5:1.
    LowContrast { node: String, ratio: f32 },
    /// A feature of the format that this renderer does not draw yet.
    Unsupported { node: String, feature: String },
}

/// Final font size of each TEXT node that uses `textFit`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FittedText {
    pub node: String,
    pub font_size: f32,
}

/// Milliseconds per phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Timings {
    pub images_ms: f64,
    pub layout_ms: f64,
    pub scene_ms: f64,
    pub raster_ms: f64,
    pub encode_ms: f64,
    pub total_ms: f64,
}

/// Which backend drew the pixels of a render.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendUsed {
    #[default]
    Cpu,
    Gpu,
}

/// The GPU side of a render: present when the renderer has a GPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GpuReport {
    /// Adapter name and type.
    pub adapter: String,
    /// Masks rasterised on the CPU and written to the device, images and records uploaded.
    pub upload_ms: f64,
    /// Draws encoded and executed.
    pub draw_ms: f64,
    /// Canvas copied out, mapped and unpadded.
    pub readback_ms: f64,
    /// Why the CPU drew this render instead (an op not on the GPU yet, a device error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

/// What happened during one render.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RenderReport {
    pub width: u32,
    pub height: u32,
    pub warnings: Vec<Warning>,
    pub fitted_text: Vec<FittedText>,
    pub timings: Timings,
    /// The backend whose pixels these are.
    pub backend: BackendUsed,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuReport>,
}

pub(crate) fn ms(since: std::time::Instant) -> f64 {
    (since.elapsed().as_secs_f64() * 1e5).round() / 100.0
}
