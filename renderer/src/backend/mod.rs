//! Stage 4: backends that execute a [`crate::scene::Scene`].
//!
//! `cpu` (tiny-skia) is the reference. A GPU backend (wgpu) is a later issue; it will
//! implement the same display list and be compared against `cpu` within a tolerance.

pub mod cpu;
