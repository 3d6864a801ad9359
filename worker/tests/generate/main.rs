//! Generation pipeline tests: a local HTTP server serves reference, product and logo
//! images; the handler (with private URLs allowed) generates ads into a temporary blob
//! store. Sample outputs are written to `target/generate-samples/` for people to look at.

// Test helpers outside #[test] functions unwrap too: a failed setup should stop the test.
#![allow(clippy::unwrap_used)]

mod blueprint;
mod contrast;
mod copy;
mod cutout;
mod figma;
mod fixtures;
mod formats;
mod layering;
mod llm;
mod logo;
mod margins;
mod pipeline;
mod references;
mod roles;
mod sizes;
