//! End-to-end tests of the API over real HTTP on loopback, against real SQLite files, with
//! the server in this process. One binary with a module per area (STYLE.md). Tests that run
//! separate `adforge` server and worker processes (with a real `redis-server`) live in the
//! top-level `tests/` crate.

// Test helpers may unwrap: a panic is the failure report.
#![allow(clippy::unwrap_used)]

mod support;

#[path = "../../../../renderer/tests/render/stress_trees.rs"]
#[allow(dead_code)]
mod stress_trees;

mod auth;
mod batches;
mod blob_store;
mod copy_facts;
mod cutouts;
mod dashboard;
mod dashboard_ads;
mod dashboard_batches;
mod dashboard_editor;
mod dashboard_library;
mod dashboard_sizes;
mod design_templates;
mod embedded;
mod engines;
mod envelope;
mod error_shapes;
mod figma;
mod figma_connection;
mod figma_errors;
// Also `#[path]`-included by the Figma benchmark.
#[allow(dead_code)]
mod figma_server;
// Shared with the process-level tests of `tests/`, which use the helpers this binary does not.
#[allow(dead_code)]
mod flows;
mod hardening;
mod image_ad_sets;
mod image_ads;
mod images;
mod isolation;
mod layering;
mod limits;
mod moto;
mod openapi_doc;
mod ops;
mod own_files;
mod paging;
mod postgres;
mod previews;
mod renditions;
mod resources;
mod results;
mod search;
mod swipe;
mod swipe_index;
mod text;
// Shared with the process-level tests of `tests/` (which answer `Hang`).
#[allow(dead_code)]
mod webhook_receiver;
mod webhooks;
mod write_locks;
