//! Integration tests of the renderer, one binary with a module per area (as tiny-skia and
//! resvg do). Golden fixtures live in `renderer/tests/goldens/<area>/<name>.{json,png}`;
//! `UPDATE_GOLDENS=1 cargo test -p adforge-renderer --test render` rewrites the PNGs.
#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

mod budgets;
mod cli;
mod cross_resvg;
mod edit;
mod fetch;
mod goldens;
#[cfg(feature = "gpu")]
mod gpu;
mod harness;
mod output;
mod robustness;
mod schema;
mod stress_trees;
mod tree;
