//! End-to-end tests of the API over real HTTP on loopback, against real SQLite files.
//! One binary with a module per area (STYLE.md).

// Test helpers may unwrap: a panic is the failure report.
#![allow(clippy::unwrap_used)]

mod support;

mod auth;
mod blob_store;
mod cluster;
mod crash;
mod envelope;
mod error_shapes;
mod image_ads;
mod images;
mod isolation;
mod limits;
mod openapi_doc;
mod ops;
mod own_files;
mod paging;
mod resources;
mod search;
mod shared_limits;
mod swipe;
mod text;
mod webhooks;
