//! Stage 4: backends that execute a [`crate::scene::Scene`].
//!
//! `cpu` (tiny-skia) is the reference. `gpu` (wgpu, behind the `gpu` cargo feature)
//! implements the same display list and is compared against `cpu` within a tolerance by the
//! parity tests; it hands a scene it cannot draw yet back to `cpu`.

pub mod cpu;
#[cfg(feature = "gpu")]
pub mod gpu;
#[cfg(not(feature = "gpu"))]
#[path = "gpu_off.rs"]
pub mod gpu;
