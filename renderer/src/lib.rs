//! adforge-renderer: JSON tree → crisp PNG on the CPU.
//!
//! The pipeline is four plain stages, each its own module:
//!
//! 1. [`tree`]: parse, validate and normalise the JSON tree (errors name node id + field).
//! 2. [`layout`]: auto-layout and text layout (cosmic-text).
//! 3. [`scene`]: a flat display list of [`scene::DrawOp`]s in device pixels — the contract
//!    every backend implements.
//! 4. [`backend::cpu`]: tiny-skia executes the display list; [`encode_png`] writes the PNG.
//!    [`backend::gpu`] (cargo feature `gpu`) executes the same list with wgpu; choose it with
//!    [`open_gpu`] and [`Renderer::with_gpu`] (one `GpuContext` per process).
//!
//! Once [`Tree::parse`] has accepted a tree, rendering cannot fail: a missing font or image is
//! reported in the [`RenderReport`] and skipped.
//!
//! ```no_run
//! use adforge_renderer::{RenderOptions, Renderer, Tree};
//! // One Renderer per process: it owns the font database and glyph caches.
//! let renderer = Renderer::with_defaults();
//! let tree = Tree::parse(r#"{"nodes": {"root": {"type": "FRAME", "width": 100, "height": 100,
//!     "fills": [{"type": "SOLID", "color": {"r": 1, "g": 0, "b": 0, "a": 1}}]}}}"#).unwrap();
//! let out = renderer.render(&tree, &RenderOptions { width: Some(400), encode_png: true }).unwrap();
//! assert_eq!(out.report.width, 400);
//! ```

pub mod address;
pub mod backend;
pub mod budget;
pub mod cli;
mod encode;
mod error;
pub mod fonts;
pub mod geometry;
pub mod image;
pub mod layout;
pub mod limits;
mod render;
pub mod report;
pub mod scene;
pub mod tree;

pub use budget::Deadline;
pub use encode::encode_png;
pub use encode::encode_webp;
pub use error::Error;
pub use fonts::FontLibrary;
pub use geometry::NodeBox;
pub use image::{FetchLimits, HttpFetcher, HttpReply, ImageFetcher};
pub use render::{
    BackendChoice, DEFAULT_LONG_EDGE, LaidOut, MAX_EDGE, RenderOptions, Rendered, Renderer,
    TextMeasure, open_gpu, output_size,
};
pub use report::{BackendUsed, GpuReport, RenderReport, Warning};
pub use tree::Tree;

/// Alias kept for callers that expect a tree-specific name; it is the crate's one error type.
pub type TreeError = Error;
