//! The HTTP resources, one module each, each exposing `router()`. Handlers are thin:
//! parse and validate → SQL → respond.

pub mod audiences;
pub mod brands;
pub mod common;
pub mod design_packs;
pub mod design_templates;
pub mod events;
pub mod facts;
pub mod files;
pub mod image_ad_batches;
pub mod image_ads;
pub mod images;
pub mod integrations;
pub mod previews;
pub mod products;
pub mod search;
pub mod swipe_files;
pub mod variants;
pub mod webhook_endpoints;
