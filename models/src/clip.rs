//! CLIP (candle-transformers' `clip`): images and texts embedded into one space, used instead
//! of the default models when `--clip-model DIR` points at a checkpoint.
//!
//! The folder holds a Hugging Face-style `config.json` (a `CLIPModel` configuration with
//! `text_config` and `vision_config`), `model.safetensors` (tensor names as in
//! `transformers`' `CLIPModel`) and `tokenizer.json`. Fields missing from `config.json` take
//! `transformers`' defaults (`configuration_clip.py`, the ViT-B/32 sizes). Images are resized
//! whole to `vision_config.image_size` ([`crate::preprocess::Framing::Whole`]) and normalised with
//! OpenAI's CLIP mean/std; texts are tokenised one at a time, with the tokenizer's own special
//! tokens, truncated to `max_position_embeddings`, and pooled at the highest token id (the
//! end-of-text token in CLIP's vocabulary, as candle and the original CLIP do).

use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};
use candle_transformers::models::clip::text_model::{Activation, ClipTextConfig};
use candle_transformers::models::clip::vision_model::ClipVisionConfig;
use candle_transformers::models::clip::{ClipConfig, ClipModel};
use image::RgbImage;
use serde::Deserialize;
use tokenizers::Tokenizer;

use crate::efficientnet::{mmap_var_builder, require_or};
use crate::minilm::{load_tokenizer, read_json};
use crate::preprocess::{Framing, Normalization, images_to_tensor};
use crate::{Embedder, Error, Result};

// Defaults of transformers' `CLIPTextConfig` / `CLIPVisionConfig` (configuration_clip.py).
fn text_vocab_size() -> usize {
    49408
}
fn text_hidden_size() -> usize {
    512
}
fn text_intermediate_size() -> usize {
    2048
}
fn text_layers() -> usize {
    12
}
fn text_heads() -> usize {
    8
}
fn text_max_positions() -> usize {
    77
}
fn vision_hidden_size() -> usize {
    768
}
fn vision_intermediate_size() -> usize {
    3072
}
fn vision_layers() -> usize {
    12
}
fn vision_heads() -> usize {
    12
}
fn vision_channels() -> usize {
    3
}
fn vision_image_size() -> usize {
    224
}
fn vision_patch_size() -> usize {
    32
}
fn projection_dim() -> usize {
    512
}
fn quick_gelu() -> String {
    "quick_gelu".to_owned()
}
fn logit_scale_init() -> f32 {
    2.6592
}

/// `config.json`'s `text_config`.
#[derive(Debug, Clone, Deserialize)]
struct TextConfigJson {
    #[serde(default = "text_vocab_size")]
    vocab_size: usize,
    #[serde(default = "text_hidden_size")]
    hidden_size: usize,
    #[serde(default = "text_intermediate_size")]
    intermediate_size: usize,
    #[serde(default = "text_layers")]
    num_hidden_layers: usize,
    #[serde(default = "text_heads")]
    num_attention_heads: usize,
    #[serde(default = "text_max_positions")]
    max_position_embeddings: usize,
    #[serde(default = "quick_gelu")]
    hidden_act: String,
}

/// `config.json`'s `vision_config`.
#[derive(Debug, Clone, Deserialize)]
struct VisionConfigJson {
    #[serde(default = "vision_hidden_size")]
    hidden_size: usize,
    #[serde(default = "vision_intermediate_size")]
    intermediate_size: usize,
    #[serde(default = "vision_layers")]
    num_hidden_layers: usize,
    #[serde(default = "vision_heads")]
    num_attention_heads: usize,
    #[serde(default = "vision_channels")]
    num_channels: usize,
    #[serde(default = "vision_image_size")]
    image_size: usize,
    #[serde(default = "vision_patch_size")]
    patch_size: usize,
    #[serde(default = "quick_gelu")]
    hidden_act: String,
}

/// A Hugging Face `CLIPModel` `config.json`.
#[derive(Debug, Clone, Deserialize)]
struct ClipConfigJson {
    text_config: TextConfigJson,
    vision_config: VisionConfigJson,
    #[serde(default = "projection_dim")]
    projection_dim: usize,
    #[serde(default = "logit_scale_init")]
    logit_scale_init_value: f32,
}

/// Reads a Hugging Face `CLIPModel` `config.json` into candle's [`ClipConfig`].
///
/// # Errors
/// [`Error::InvalidConfig`] for malformed JSON or an activation other than `quick_gelu` (the
/// only one candle's CLIP implements).
pub fn read_config(path: &Path) -> Result<ClipConfig> {
    let json: ClipConfigJson = read_json(path)?;
    for (part, act) in [
        ("text_config", &json.text_config.hidden_act),
        ("vision_config", &json.vision_config.hidden_act),
    ] {
        if act != "quick_gelu" {
            return Err(Error::InvalidConfig {
                path: path.to_path_buf(),
                message: format!("{part}.hidden_act is {act:?}; only \"quick_gelu\" is supported"),
            });
        }
    }
    let (t, v) = (&json.text_config, &json.vision_config);
    Ok(ClipConfig {
        text_config: ClipTextConfig {
            vocab_size: t.vocab_size,
            embed_dim: t.hidden_size,
            activation: Activation::QuickGelu,
            intermediate_size: t.intermediate_size,
            max_position_embeddings: t.max_position_embeddings,
            pad_with: None,
            num_hidden_layers: t.num_hidden_layers,
            num_attention_heads: t.num_attention_heads,
            projection_dim: json.projection_dim,
        },
        vision_config: ClipVisionConfig {
            embed_dim: v.hidden_size,
            activation: Activation::QuickGelu,
            intermediate_size: v.intermediate_size,
            num_hidden_layers: v.num_hidden_layers,
            num_attention_heads: v.num_attention_heads,
            projection_dim: json.projection_dim,
            num_channels: v.num_channels,
            image_size: v.image_size,
            patch_size: v.patch_size,
        },
        logit_scale_init_value: json.logit_scale_init_value,
        image_size: v.image_size,
    })
}

/// A CLIP checkpoint as an [`Embedder`] of both images and texts, into one space of
/// `projection_dim` (unit-length vectors: cosine similarity is a dot product).
///
/// Load once per process ([`ClipEmbedder::load`]); `Send + Sync`, share it in an `Arc`.
pub struct ClipEmbedder {
    model: ClipModel,
    config: ClipConfig,
    tokenizer: Tokenizer,
    tokenizer_path: PathBuf,
    model_id: String,
    device: Device,
}

impl std::fmt::Debug for ClipEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClipEmbedder")
            .field("model_id", &self.model_id)
            .finish_non_exhaustive()
    }
}

impl ClipEmbedder {
    /// Loads `config.json`, `model.safetensors` and `tokenizer.json` from `dir`. The model id
    /// is `clip:` followed by the folder's name.
    ///
    /// # Errors
    /// [`Error::MissingModelFile`] when a file is absent, [`Error::InvalidConfig`] /
    /// [`Error::Tokenizer`] for unreadable files, a candle error when the weights do not fit
    /// the configuration.
    pub fn load(dir: &Path) -> Result<Self> {
        let fix = || {
            "a CLIP folder (--clip-model) must hold config.json, model.safetensors and \
             tokenizer.json"
                .to_owned()
        };
        let config_path = require_or(dir, "config.json", fix())?;
        let weights = require_or(dir, "model.safetensors", fix())?;
        let tokenizer_path = require_or(dir, "tokenizer.json", fix())?;
        let config = read_config(&config_path)?;
        let tokenizer =
            load_tokenizer(&tokenizer_path, config.text_config.max_position_embeddings)?;
        let device = Device::Cpu;
        let vb = mmap_var_builder(&weights, &device)?;
        let model = ClipModel::new(vb, &config)?;
        let name = dir
            .file_name()
            .map_or_else(|| "model".to_owned(), |n| n.to_string_lossy().into_owned());
        Ok(Self {
            model,
            config,
            tokenizer,
            tokenizer_path,
            model_id: format!("clip:{name}"),
            device,
        })
    }

    /// The token ids CLIP reads for `text` (special tokens included, truncated).
    ///
    /// # Errors
    /// [`Error::Tokenizer`] when the tokenizer fails.
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>> {
        let encoding = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| Error::Tokenizer {
                path: self.tokenizer_path.clone(),
                message: e.to_string(),
            })?;
        Ok(encoding.get_ids().to_vec())
    }
}

fn rows_l2_normalized(x: &Tensor) -> Result<Vec<Vec<f32>>> {
    let norm = x.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12f32, f32::MAX)?;
    Ok(x.broadcast_div(&norm)?.to_vec2::<f32>()?)
}

impl Embedder for ClipEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        self.config.text_config.projection_dim
    }

    fn embed_images(&self, images: &[RgbImage]) -> Result<Vec<Vec<f32>>> {
        if images.is_empty() {
            return Ok(Vec::new());
        }
        let size = u32::try_from(self.config.image_size).map_err(|_| {
            candle_core::Error::Msg(format!("image size {} too large", self.config.image_size))
        })?;
        let x = images_to_tensor(
            images,
            size,
            Normalization::CLIP,
            Framing::Whole,
            &self.device,
        )?;
        rows_l2_normalized(&self.model.get_image_features(&x)?)
    }

    fn embed_texts(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        // One text at a time: pooling reads the highest token id, and padding would put
        // end-of-text tokens (CLIP's usual padding) before the real one in a batch.
        for text in texts {
            let ids = self.token_ids(text)?;
            let len = ids.len();
            let ids = Tensor::from_vec(ids, (1, len), &self.device)?;
            let features = self.model.get_text_features(&ids)?;
            out.extend(rows_l2_normalized(&features)?);
        }
        Ok(out)
    }
}
