//! Built without the `gpu` feature: the same API, and [`GpuContext::new`] says why it
//! cannot open a device.

use tiny_skia::Pixmap;

use crate::Error;
use crate::scene::Scene;

/// Which adapters [`GpuContext::new`] accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdapterKind {
    Hardware,
    Any,
}

/// Milliseconds of one GPU render.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GpuTimings {
    pub upload_ms: f64,
    pub draw_ms: f64,
    pub readback_ms: f64,
}

/// The output of a GPU render.
#[derive(Debug)]
pub struct GpuOutput {
    pub pixmap: Pixmap,
    pub contrast: Vec<(String, f32)>,
    pub timings: GpuTimings,
}

/// Why a render did not come from the GPU.
#[derive(Debug, Clone, PartialEq)]
pub enum GpuFailure {
    Unsupported(String),
    Device(String),
}

impl std::fmt::Display for GpuFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unsupported(s) | Self::Device(s) => f.write_str(s),
        }
    }
}

/// Never constructed without the `gpu` feature.
#[derive(Debug)]
pub struct GpuContext {
    never: std::convert::Infallible,
}

impl GpuContext {
    /// # Errors
    /// Always [`Error::GpuUnavailable`]: this build has no GPU backend.
    pub fn new(_kind: AdapterKind) -> Result<Self, Error> {
        Err(Error::GpuUnavailable {
            reason: "adforge was built without the `gpu` cargo feature".into(),
        })
    }

    pub fn adapter(&self) -> String {
        match self.never {}
    }

    pub fn is_software(&self) -> bool {
        match self.never {}
    }

    /// # Errors
    /// Never returns: no value of this type exists.
    pub fn render(&self, _scene: &Scene) -> Result<GpuOutput, GpuFailure> {
        match self.never {}
    }
}
