//! The one error type of this crate.

use std::path::PathBuf;

/// Everything that can go wrong while loading a model or running it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file a model needs is not in the models folder. The default models are fetched once
    /// per machine with `scripts/fetch-models [DIR]` (DIR defaults to `$ADFORGE_MODELS_DIR`,
    /// else `~/.cache/adforge/models`); a CLIP folder must hold `config.json`,
    /// `model.safetensors` and `tokenizer.json`.
    #[error("model file {path} is missing: {fix}")]
    MissingModelFile {
        /// The file that was looked for.
        path: PathBuf,
        /// How to get it: for the default models, the `scripts/fetch-models` command that
        /// fills this models folder.
        fix: String,
    },

    /// A file exists but could not be read (permissions, I/O error). Check the file.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },

    /// A `config.json` or the labels file is not what the model expects (malformed JSON, a
    /// missing field, an unsupported activation, a wrong number of labels). Re-fetch the
    /// models, or fix the checkpoint's configuration.
    #[error("invalid model configuration in {path}: {message}")]
    InvalidConfig {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },

    /// A `tokenizer.json` could not be loaded, or a text could not be tokenised.
    #[error("tokenizer error ({path}): {message}")]
    Tokenizer {
        /// The tokenizer file.
        path: PathBuf,
        /// The tokenizer library's message.
        message: String,
    },

    /// An image with no pixels was passed in. Decode the image fully before embedding it.
    #[error("image is empty ({width}x{height})")]
    EmptyImage {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
    },

    /// The embedder was asked for a modality it does not have: EfficientNet embeds only
    /// images, MiniLM only texts. Ask the embedder for that modality instead (see
    /// `Models`), or load a CLIP checkpoint, which embeds both into one space.
    #[error("{model_id} cannot embed {modality}")]
    UnsupportedModality {
        /// The embedder's `model_id()`.
        model_id: String,
        /// `"images"` or `"texts"`.
        modality: &'static str,
    },

    /// A tensor operation failed inside candle: a weight with an unexpected shape or a
    /// missing tensor in a checkpoint (re-fetch or fix the checkpoint), or an internal bug.
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
}

/// This crate's result type.
pub type Result<T> = std::result::Result<T, Error>;
