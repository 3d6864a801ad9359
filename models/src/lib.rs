//! Image and text models for the swipe file, on candle (CPU).
//!
//! Three models sit behind two small traits, chosen once at start-up and held as
//! `Arc<dyn ...>`:
//!
//! - [`EfficientNetEmbedder`] (default image model): EfficientNet-Lite0 trained on
//!   ImageNet-1k. Its 1280-d pooled features are the image embedding (a design finds its
//!   look-alikes), and its 1000 ImageNet classes are evidence of what a picture shows
//!   ([`Classifier`]).
//! - [`MiniLmEmbedder`] (default text model): all-MiniLM-L6-v2, 384-d sentence embeddings.
//!   Text queries meet images through captions built from what was measured in each image.
//! - [`ClipEmbedder`] (optional): a CLIP checkpoint embeds images and texts into one space
//!   and replaces both embedders.
//!
//! Apart from them, [`SalientSegmenter`] (U²-Net-P) marks the main subject of a photo, for
//! cutting products out; it is loaded on its own ([`SalientSegmenter::load`]), so a machine
//! without its weights still embeds.
//!
//! Weights live in one models folder per machine (`--models-dir` / `ADFORGE_MODELS_DIR`,
//! default `~/.cache/adforge/models`, see [`default_models_dir`]), filled by
//! `scripts/fetch-models`.
//!
//! ```no_run
//! use adforge_models::{Models, default_models_dir};
//!
//! let models = Models::load(&default_models_dir())?; // once per process
//! let photo = image::open("coffee.png").map_err(|e| e.to_string())?.to_rgb8();
//! let look_alike_vector = models.image.embed_images(&[photo.clone()])?;
//! let labels = models.classifier.classify(&photo, 5)?; // [("espresso", 0.8), ...]
//! let query_vector = models.text.embed_texts(&["a cup of coffee"])?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Models are immutable after loading, `Send + Sync`, and meant to live as long as the
//! process: loading reads (memory-maps) the weights and builds the network, which takes a
//! fraction of a second; running them takes the CPU, so callers on an async runtime run them
//! on a blocking thread.
//!
//! Rejected alternative: one `Embedder` that always embeds both modalities. The default models
//! live in two different spaces (1280-d image features, 384-d sentence vectors), and a vector of
//! one is meaningless next to the other; an embedder therefore says which modality it cannot
//! embed ([`Error::UnsupportedModality`]) rather than returning vectors that do not compare.

mod clip;
mod efficientnet;
mod error;
mod minilm;
pub mod preprocess;
mod u2net;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use image::RgbImage;

pub use clip::{ClipEmbedder, read_config as read_clip_config};
pub use efficientnet::{Config, EfficientNetEmbedder, EfficientNetLite, ImageOutputs, StageConfig};
pub use error::{Error, Result};
pub use minilm::{MAX_TOKENS, MiniLmEmbedder};
pub use u2net::{SaliencyMap, SalientSegmenter, U2Net, U2NetConfig};

/// Turns images and/or texts into unit-length vectors; similar inputs get a high dot product.
pub trait Embedder: Send + Sync {
    /// A stable identifier of the model, stored beside each vector so that vectors of
    /// different models are never compared.
    fn model_id(&self) -> &str;

    /// The length of every vector this embedder returns.
    fn dim(&self) -> usize;

    /// One vector per image, in order.
    ///
    /// # Errors
    /// [`Error::UnsupportedModality`] for a text-only model, [`Error::EmptyImage`] for an image
    /// without pixels, a candle error otherwise.
    fn embed_images(&self, images: &[RgbImage]) -> Result<Vec<Vec<f32>>>;

    /// One vector per text, in order.
    ///
    /// # Errors
    /// [`Error::UnsupportedModality`] for an image-only model, [`Error::Tokenizer`] when a text
    /// cannot be tokenised, a candle error otherwise.
    fn embed_texts(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
}

/// Says what a picture shows, as labels with probabilities.
pub trait Classifier: Send + Sync {
    /// The `top_k` most probable labels of `image`, most probable first, with their
    /// probabilities (softmax over all labels, so they sum to at most 1).
    ///
    /// # Errors
    /// [`Error::EmptyImage`] for an image without pixels, a candle error otherwise.
    fn classify(&self, image: &RgbImage, top_k: usize) -> Result<Vec<(String, f32)>>;
}

/// The folder of the default image model inside the models folder.
pub const EFFICIENTNET_DIR: &str = "efficientnet-lite0";
/// The folder of the default text model inside the models folder.
pub const MINILM_DIR: &str = "minilm-l6-v2";
/// The folder of the salient-object model (product cut-outs) inside the models folder.
pub const U2NETP_DIR: &str = "u2netp";

/// `$ADFORGE_MODELS_DIR` if set and not empty, else `~/.cache/adforge/models` (the folder
/// `scripts/fetch-models` fills by default).
pub fn default_models_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ADFORGE_MODELS_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join(".cache").join("adforge").join("models")
}

/// The models a process uses, chosen once at start-up.
#[derive(Clone)]
pub struct Models {
    /// Embeds images for design-to-design similarity.
    pub image: Arc<dyn Embedder>,
    /// Embeds texts: captions of designs and search queries. With CLIP this is the same model
    /// as `image`, and a text vector compares directly with an image vector.
    pub text: Arc<dyn Embedder>,
    /// Names what a picture shows (ImageNet classes), as evidence for captions and industry.
    pub classifier: Arc<dyn Classifier>,
    /// The EfficientNet model behind `classifier` (always) and `image` (default), for callers
    /// that want its raw features and logits ([`EfficientNetEmbedder::run`]).
    pub efficientnet: Arc<EfficientNetEmbedder>,
}

impl std::fmt::Debug for Models {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Models")
            .field("image", &self.image.model_id())
            .field("text", &self.text.model_id())
            .finish_non_exhaustive()
    }
}

impl Models {
    /// The default models from `models_dir`: EfficientNet-Lite0 for images and labels, MiniLM
    /// for texts.
    ///
    /// # Errors
    /// [`Error::MissingModelFile`] (whose message says to run `scripts/fetch-models`) when
    /// the folder has not been filled; any loading error of the models.
    pub fn load(models_dir: &Path) -> Result<Self> {
        let efficientnet = Arc::new(EfficientNetEmbedder::load(
            &models_dir.join(EFFICIENTNET_DIR),
        )?);
        let text = Arc::new(MiniLmEmbedder::load(&models_dir.join(MINILM_DIR))?);
        Ok(Self {
            image: efficientnet.clone(),
            text,
            classifier: efficientnet.clone(),
            efficientnet,
        })
    }

    /// CLIP from `clip_dir` for both images and texts; the classifier stays EfficientNet-Lite0
    /// from `models_dir` (CLIP has no fixed label set).
    ///
    /// # Errors
    /// As [`Models::load`] and [`ClipEmbedder::load`].
    pub fn load_with_clip(models_dir: &Path, clip_dir: &Path) -> Result<Self> {
        let efficientnet = Arc::new(EfficientNetEmbedder::load(
            &models_dir.join(EFFICIENTNET_DIR),
        )?);
        let clip = Arc::new(ClipEmbedder::load(clip_dir)?);
        Ok(Self {
            image: clip.clone(),
            text: clip,
            classifier: efficientnet.clone(),
            efficientnet,
        })
    }
}
