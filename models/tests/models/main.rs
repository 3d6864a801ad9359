//! Tests of the models crate. The EfficientNet, MiniLM and U²-Net-P tests read the real weights from the
//! models folder (`ADFORGE_MODELS_DIR`, default `~/.cache/adforge/models`), which
//! `scripts/test` fills with `scripts/fetch-models` first; without them they fail and say so.
//! The CLIP tests build a tiny checkpoint themselves.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

mod clip;
mod efficientnet;
mod load;
mod minilm;
mod support;
mod u2net;
