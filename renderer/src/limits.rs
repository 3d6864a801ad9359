//! What the renderer accepts, in one place: the tree's validation ([`crate::tree`]) refuses
//! a root the renderer could not draw at the sizes the service renders, and
//! [`crate::render::output_size`] refuses an output over these bounds, from the same numbers.

/// Default long edge of the output: 4K.
pub const DEFAULT_LONG_EDGE: u32 = 3840;
/// Largest accepted output edge.
pub const MAX_EDGE: u32 = 16384;
/// Largest accepted output area (a 10000 x 10000 canvas).
pub const MAX_PIXELS: u64 = 100_000_000;
/// Largest ratio of the root's long side to its short side. At 20:1 a root renders at every
/// long edge the service uses (a 540 px check render, a 1080 px preview, 4K) with a short
/// side of at least 27 px, and a width chosen for its long edge never asks for a height
/// over [`MAX_EDGE`]; banners (728×90 is 8:1) fit well inside it.
pub const MAX_ASPECT_RATIO: f32 = 20.0;
