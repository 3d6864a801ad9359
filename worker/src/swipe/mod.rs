//! The worker side of the swipe file: what a worker does with an uploaded design.
//!
//! - [`ingest`]: [`crate::Job::IngestSwipeFile`] with the process's models: decode, measure,
//!   embed, classify, caption.
//! - [`taxonomy`]: aspect ratios, industries (Google product taxonomy top level) and ad
//!   formats, and how each is decided from measured evidence.
//!
//! Storing, searching and showing swipe files is the API's (`adforge_api::swipe`); a worker
//! never opens SQL, so an ingest's result travels back as an event.

pub mod ingest;
pub mod taxonomy;
