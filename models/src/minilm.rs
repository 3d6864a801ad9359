//! The default text model: the all-MiniLM-L6-v2 sentence encoder (a 6-layer, 384-wide BERT),
//! mean-pooled over the real tokens and L2-normalised, as sentence-transformers' `Pooling`
//! (`pooling_mode_mean_tokens`) and `Normalize` modules do for this checkpoint.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_transformers::models::bert::{BertModel, Config};
use image::RgbImage;
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use crate::efficientnet::{mmap_var_builder, require};
use crate::{Embedder, Error, Result};

/// Longest input in tokens: sentence-transformers' `max_seq_length` for this checkpoint
/// (`sentence_bert_config.json`); longer texts are truncated.
pub const MAX_TOKENS: usize = 256;

/// all-MiniLM-L6-v2 as an [`Embedder`] of texts (384-d, unit length).
///
/// Load once per process ([`MiniLmEmbedder::load`]); `Send + Sync`, share it in an `Arc`.
pub struct MiniLmEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    tokenizer_path: PathBuf,
    dim: usize,
    device: Device,
}

impl std::fmt::Debug for MiniLmEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLmEmbedder")
            .field("dim", &self.dim)
            .finish_non_exhaustive()
    }
}

impl MiniLmEmbedder {
    /// The identifier stored beside every embedding this model makes.
    pub const MODEL_ID: &'static str = "all-minilm-l6-v2";

    /// Loads `config.json`, `model.safetensors` and `tokenizer.json` from `dir` (what
    /// `scripts/fetch-models` writes into `MODELS_DIR/minilm-l6-v2`).
    ///
    /// # Errors
    /// [`Error::MissingModelFile`] naming `scripts/fetch-models` when a file is absent,
    /// [`Error::InvalidConfig`] / [`Error::Tokenizer`] for unreadable files, a candle error
    /// when the weights do not fit the configuration.
    pub fn load(dir: &Path) -> Result<Self> {
        let config_path = require(dir, "config.json")?;
        let weights = require(dir, "model.safetensors")?;
        let tokenizer_path = require(dir, "tokenizer.json")?;
        let config: Config = read_json(&config_path)?;
        let tokenizer = load_tokenizer(&tokenizer_path, MAX_TOKENS)?;
        let device = Device::Cpu;
        let vb = mmap_var_builder(&weights, &device)?;
        let model = BertModel::load(vb, &config)?;
        Ok(Self {
            model,
            tokenizer,
            tokenizer_path,
            dim: config.hidden_size,
            device,
        })
    }
}

impl Embedder for MiniLmEmbedder {
    fn model_id(&self) -> &str {
        Self::MODEL_ID
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed_images(&self, _images: &[RgbImage]) -> Result<Vec<Vec<f32>>> {
        Err(Error::UnsupportedModality {
            model_id: Self::MODEL_ID.to_owned(),
            modality: "images",
        })
    }

    fn embed_texts(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| Error::Tokenizer {
                path: self.tokenizer_path.clone(),
                message: e.to_string(),
            })?;
        let n = encodings.len();
        let len = encodings.first().map_or(0, |e| e.get_ids().len());
        let mut ids = Vec::with_capacity(n * len);
        let mut mask = Vec::with_capacity(n * len);
        for e in &encodings {
            ids.extend_from_slice(e.get_ids());
            mask.extend_from_slice(e.get_attention_mask());
        }
        let ids = Tensor::from_vec(ids, (n, len), &self.device)?;
        let mask = Tensor::from_vec(mask, (n, len), &self.device)?;
        let token_types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &token_types, Some(&mask))?;
        // Mean over the real (unpadded) tokens, then unit length.
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norm = mean
            .sqr()?
            .sum_keepdim(1)?
            .sqrt()?
            .clamp(1e-12f32, f32::MAX)?;
        Ok(mean.broadcast_div(&norm)?.to_vec2::<f32>()?)
    }
}

/// Reads and parses a JSON file.
pub(crate) fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|e| Error::InvalidConfig {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Loads a `tokenizer.json`, pads each batch to its longest text and truncates to
/// `max_tokens` (special tokens included).
pub(crate) fn load_tokenizer(path: &Path, max_tokens: usize) -> Result<Tokenizer> {
    let err = |e: tokenizers::Error| Error::Tokenizer {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let mut tokenizer = Tokenizer::from_file(path).map_err(err)?;
    let pad_id = tokenizer.get_padding().map_or(0, |p| p.pad_id);
    let pad_token = tokenizer
        .get_padding()
        .map_or_else(|| "[PAD]".to_owned(), |p| p.pad_token.clone());
    tokenizer.with_padding(Some(PaddingParams {
        strategy: PaddingStrategy::BatchLongest,
        pad_id,
        pad_token,
        ..Default::default()
    }));
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: max_tokens,
            ..Default::default()
        }))
        .map_err(err)?;
    Ok(tokenizer)
}
