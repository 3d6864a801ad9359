//! EfficientNet-Lite0 (ImageNet-1k): 1280-d image features and 1000 class scores.
//!
//! The architecture of Tan & Le, "EfficientNet: Rethinking Model Scaling for CNNs" (2019), in
//! its "Lite" form for mobile accelerators (TensorFlow's `models/official/efficientnet/lite`):
//! no squeeze-and-excitation, ReLU6 instead of swish, and the stem (32 channels) and head
//! (1280 channels) kept fixed instead of scaled. Tensor names follow `efficientnet_pytorch`
//! (`_conv_stem`, `_bn0`, `_blocks.N._expand_conv`, ..., `_conv_head`, `_bn1`, `_fc`), the
//! names of the checkpoint that `scripts/fetch-models` converts.
//!
//! Convolutions use TensorFlow's "SAME" padding (as the weights were trained with, and as
//! `efficientnet_pytorch`'s `Conv2dStaticSamePadding` reproduces): for a stride-2 layer the
//! extra padding goes to the bottom/right, which a symmetric `padding` argument cannot express,
//! so the input is zero-padded explicitly before each convolution.
//!
//! Batch norms are folded into the preceding convolution's weights and a bias at load time
//! (inference only). Depthwise convolutions are a direct loop over the CPU data instead of
//! candle's grouped `conv2d`, which runs one convolution per group (1152 groups in the last
//! stage) and is far slower on CPU; a first version built them from k² shifted tensor
//! multiply-adds, which was correct but spent most of the forward pass copying strided views.
//!
//! Longer than 600 lines because it is one network: the config, its blocks and the
//! weight loading read top to bottom as the paper lays them out.

use std::path::{Path, PathBuf};

use candle_core::{D, DType, Device, Module, Tensor};
use candle_nn::{Linear, VarBuilder};
use image::RgbImage;

use crate::preprocess::{Framing, Normalization, images_to_tensor};
use crate::{Classifier, Embedder, Error, Result};

/// One stage of MBConv blocks: `repeats` blocks, the first with `stride` and
/// `in_channels -> out_channels`, the rest stride 1 and `out_channels -> out_channels`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageConfig {
    /// Number of blocks in the stage.
    pub repeats: usize,
    /// Depthwise kernel size.
    pub kernel: usize,
    /// Stride of the stage's first block.
    pub stride: usize,
    /// Expansion ratio of the inverted bottleneck (1 = no expansion conv).
    pub expand_ratio: usize,
    /// Input channels of the stage's first block.
    pub in_channels: usize,
    /// Output channels of every block of the stage.
    pub out_channels: usize,
}

/// EfficientNet-Lite hyper-parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Square input size in pixels.
    pub image_size: u32,
    /// Output channels of the stem convolution (3x3, stride 2).
    pub stem_channels: usize,
    /// The MBConv stages.
    pub stages: Vec<StageConfig>,
    /// Channels of the 1x1 head convolution: the feature (embedding) size.
    pub head_channels: usize,
    /// Number of classes of the final linear layer.
    pub num_classes: usize,
    /// Batch-norm epsilon.
    pub batch_norm_eps: f64,
}

impl Config {
    /// EfficientNet-Lite0. The block string is `efficientnet_lite_builder.py`'s
    /// `_DEFAULT_BLOCKS_ARGS` (the same as B0's: `r1_k3_s11_e1_i32_o16`, `r2_k3_s22_e6_i16_o24`,
    /// `r2_k5_s22_e6_i24_o40`, `r3_k3_s22_e6_i40_o80`, `r3_k5_s11_e6_i80_o112`,
    /// `r4_k5_s22_e6_i112_o192`, `r1_k3_s11_e6_i192_o320`) with width and depth coefficients
    /// 1.0 and resolution 224 (`efficientnet_lite_params['efficientnet-lite0']`); stem 32 and
    /// head 1280 fixed (`fix_head_stem=True`); batch-norm epsilon 1e-3 (TensorFlow's default
    /// there); 16 blocks in all.
    pub fn lite0() -> Self {
        let stage =
            |repeats, kernel, stride, expand_ratio, in_channels, out_channels| StageConfig {
                repeats,
                kernel,
                stride,
                expand_ratio,
                in_channels,
                out_channels,
            };
        Self {
            image_size: 224,
            stem_channels: 32,
            stages: vec![
                stage(1, 3, 1, 1, 32, 16),
                stage(2, 3, 2, 6, 16, 24),
                stage(2, 5, 2, 6, 24, 40),
                stage(3, 3, 2, 6, 40, 80),
                stage(3, 5, 1, 6, 80, 112),
                stage(4, 5, 2, 6, 112, 192),
                stage(1, 3, 1, 6, 192, 320),
            ],
            head_channels: 1280,
            num_classes: 1000,
            batch_norm_eps: 1e-3,
        }
    }
}

/// TensorFlow "SAME" padding of one spatial dimension: `(before, after)`.
fn same_padding(size: usize, kernel: usize, stride: usize) -> (usize, usize) {
    let out = size.div_ceil(stride);
    let total = ((out - 1) * stride + kernel).saturating_sub(size);
    (total / 2, total - total / 2)
}

/// Loads `conv.weight` and the batch norm `bn`, and folds the norm into a weight and a bias:
/// `w' = w * g / sqrt(var + eps)`, `b' = beta - mean * g / sqrt(var + eps)`.
fn folded_conv_bn(
    conv: VarBuilder,
    bn: VarBuilder,
    shape: (usize, usize, usize, usize),
    eps: f64,
) -> Result<(Tensor, Tensor)> {
    let out = shape.0;
    let weight = conv.get(shape, "weight")?;
    let gamma = bn.get(out, "weight")?;
    let beta = bn.get(out, "bias")?;
    let mean = bn.get(out, "running_mean")?;
    let var = bn.get(out, "running_var")?;
    let scale = gamma.div(&(var + eps)?.sqrt()?)?;
    let weight = weight.broadcast_mul(&scale.reshape((out, 1, 1, 1))?)?;
    let bias = beta.sub(&mean.mul(&scale)?)?;
    Ok((weight, bias.reshape((1, out, 1, 1))?))
}

fn relu6(x: &Tensor) -> Result<Tensor> {
    Ok(x.clamp(0f32, 6f32)?)
}

/// A dense convolution with its batch norm folded in, "SAME" padding.
#[derive(Debug, Clone)]
struct ConvBn {
    weight: Tensor,
    bias: Tensor,
    kernel: usize,
    stride: usize,
}

impl ConvBn {
    fn new(
        conv: VarBuilder,
        bn: VarBuilder,
        in_c: usize,
        out_c: usize,
        kernel: usize,
        stride: usize,
        eps: f64,
    ) -> Result<Self> {
        let (weight, bias) = folded_conv_bn(conv, bn, (out_c, in_c, kernel, kernel), eps)?;
        Ok(Self {
            weight,
            bias,
            kernel,
            stride,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (b, c, h, w) = x.dims4()?;
        let y = if self.kernel == 1 && self.stride == 1 {
            // A 1x1 convolution is a matrix product over channels.
            let out_c = self.weight.dim(0)?;
            let wm = self.weight.reshape((out_c, c))?;
            if b == 1 {
                wm.matmul(&x.reshape((c, h * w))?)?
                    .reshape((1, out_c, h, w))?
            } else {
                wm.broadcast_matmul(&x.reshape((b, c, h * w))?)?
                    .reshape((b, out_c, h, w))?
            }
        } else {
            let (pt, pb) = same_padding(h, self.kernel, self.stride);
            let (pl, pr) = same_padding(w, self.kernel, self.stride);
            let x = x.pad_with_zeros(2, pt, pb)?.pad_with_zeros(3, pl, pr)?;
            x.conv2d(&self.weight, 0, self.stride, 1, 1)?
        };
        Ok(y.broadcast_add(&self.bias)?)
    }
}

/// A depthwise convolution with its batch norm folded in, "SAME" padding, and the ReLU6 that
/// always follows it in MBConv, computed by a direct loop over the (CPU) data.
#[derive(Debug, Clone)]
struct DepthwiseBn {
    /// `[C, k, k]` folded weights, row-major.
    weight: Vec<f32>,
    /// `[C]` folded biases.
    bias: Vec<f32>,
    kernel: usize,
    stride: usize,
}

impl DepthwiseBn {
    fn new(
        conv: VarBuilder,
        bn: VarBuilder,
        channels: usize,
        kernel: usize,
        stride: usize,
        eps: f64,
    ) -> Result<Self> {
        let (weight, bias) = folded_conv_bn(conv, bn, (channels, 1, kernel, kernel), eps)?;
        Ok(Self {
            weight: weight.flatten_all()?.to_vec1::<f32>()?,
            bias: bias.flatten_all()?.to_vec1::<f32>()?,
            kernel,
            stride,
        })
    }

    /// `relu6(depthwise_conv(x) + bias)`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (b, c, h, w) = x.dims4()?;
        let (k, s) = (self.kernel, self.stride);
        let (ho, wo) = (h.div_ceil(s), w.div_ceil(s));
        let (pt, _) = same_padding(h, k, s);
        let (pl, _) = same_padding(w, k, s);
        let input = x.flatten_all()?.to_vec1::<f32>()?;
        let mut out = vec![0f32; b * c * ho * wo];
        // One plane (image, channel) at a time, split across the cores.
        let plane = |idx: usize, dst: &mut [f32]| {
            let ch = idx % c;
            let src = &input[idx * h * w..(idx + 1) * h * w];
            let wts = &self.weight[ch * k * k..(ch + 1) * k * k];
            for (oy, drow) in dst.chunks_exact_mut(wo).enumerate() {
                drow.fill(self.bias[ch]);
                for ky in 0..k {
                    // Input row of this tap; rows in the padding contribute nothing.
                    let Some(iy) = (oy * s + ky).checked_sub(pt).filter(|&iy| iy < h) else {
                        continue;
                    };
                    let srow = &src[iy * w..(iy + 1) * w];
                    for kx in 0..k {
                        let wt = wts[ky * k + kx];
                        // Input column of output column ox is ox * s + kx - pl; keep the ox
                        // whose column lies inside the row.
                        let first = pl.saturating_sub(kx).div_ceil(s);
                        let Some(last_in) = (w + pl).checked_sub(kx + 1) else {
                            continue;
                        };
                        let end = (last_in / s + 1).min(wo);
                        if first >= end {
                            continue;
                        }
                        let start_col = first * s + kx - pl;
                        if s == 1 {
                            let src_run = &srow[start_col..start_col + (end - first)];
                            for (d, v) in drow[first..end].iter_mut().zip(src_run) {
                                *d += wt * v;
                            }
                        } else {
                            for (d, v) in drow[first..end]
                                .iter_mut()
                                .zip(srow[start_col..].iter().step_by(s))
                            {
                                *d += wt * v;
                            }
                        }
                    }
                }
                for d in drow.iter_mut() {
                    *d = d.clamp(0.0, 6.0);
                }
            }
        };
        let planes = b * c;
        let threads = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(planes)
            .max(1);
        let per_thread = planes.div_ceil(threads);
        std::thread::scope(|scope| {
            for (t, chunk) in out.chunks_mut(per_thread * ho * wo).enumerate() {
                let plane = &plane;
                scope.spawn(move || {
                    for (i, dst) in chunk.chunks_mut(ho * wo).enumerate() {
                        plane(t * per_thread + i, dst);
                    }
                });
            }
        });
        Ok(Tensor::from_vec(out, (b, c, ho, wo), x.device())?)
    }
}

/// One inverted-bottleneck (MBConv) block without squeeze-and-excitation.
#[derive(Debug, Clone)]
struct MbConv {
    expand: Option<ConvBn>,
    depthwise: DepthwiseBn,
    project: ConvBn,
    residual: bool,
}

impl MbConv {
    fn new(
        vb: VarBuilder,
        in_c: usize,
        out_c: usize,
        kernel: usize,
        stride: usize,
        expand_ratio: usize,
        eps: f64,
    ) -> Result<Self> {
        let mid = in_c * expand_ratio;
        let expand = if expand_ratio == 1 {
            None
        } else {
            Some(ConvBn::new(
                vb.pp("_expand_conv"),
                vb.pp("_bn0"),
                in_c,
                mid,
                1,
                1,
                eps,
            )?)
        };
        let depthwise = DepthwiseBn::new(
            vb.pp("_depthwise_conv"),
            vb.pp("_bn1"),
            mid,
            kernel,
            stride,
            eps,
        )?;
        let project = ConvBn::new(vb.pp("_project_conv"), vb.pp("_bn2"), mid, out_c, 1, 1, eps)?;
        Ok(Self {
            expand,
            depthwise,
            project,
            residual: stride == 1 && in_c == out_c,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut h = match &self.expand {
            Some(e) => relu6(&e.forward(x)?)?,
            None => x.clone(),
        };
        h = self.depthwise.forward(&h)?;
        h = self.project.forward(&h)?;
        if self.residual {
            h = (h + x)?;
        }
        Ok(h)
    }
}

/// The EfficientNet-Lite network. Create one per process and share it: it is immutable, and
/// its weights are memory-mapped from the safetensors file.
#[derive(Debug, Clone)]
pub struct EfficientNetLite {
    stem: ConvBn,
    blocks: Vec<MbConv>,
    head: ConvBn,
    fc: Linear,
}

impl EfficientNetLite {
    /// Builds the network from `vb` (tensor names as in `efficientnet_pytorch`).
    ///
    /// # Errors
    /// A candle error when a tensor is missing or has an unexpected shape.
    pub fn new(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        let eps = cfg.batch_norm_eps;
        let stem = ConvBn::new(
            vb.pp("_conv_stem"),
            vb.pp("_bn0"),
            3,
            cfg.stem_channels,
            3,
            2,
            eps,
        )?;
        let mut blocks = Vec::new();
        for stage in &cfg.stages {
            for r in 0..stage.repeats {
                let (in_c, stride) = if r == 0 {
                    (stage.in_channels, stage.stride)
                } else {
                    (stage.out_channels, 1)
                };
                blocks.push(MbConv::new(
                    vb.pp(format!("_blocks.{}", blocks.len())),
                    in_c,
                    stage.out_channels,
                    stage.kernel,
                    stride,
                    stage.expand_ratio,
                    eps,
                )?);
            }
        }
        let last = cfg
            .stages
            .last()
            .map_or(cfg.stem_channels, |s| s.out_channels);
        let head = ConvBn::new(
            vb.pp("_conv_head"),
            vb.pp("_bn1"),
            last,
            cfg.head_channels,
            1,
            1,
            eps,
        )?;
        let fc = candle_nn::linear(cfg.head_channels, cfg.num_classes, vb.pp("_fc"))?;
        Ok(Self {
            stem,
            blocks,
            head,
            fc,
        })
    }

    /// Pooled features `[N, head_channels]` and class logits `[N, num_classes]` of a
    /// normalised `[N, 3, H, W]` batch.
    ///
    /// # Errors
    /// A candle error on a badly shaped input.
    pub fn forward(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        let mut x = relu6(&self.stem.forward(x)?)?;
        for block in &self.blocks {
            x = block.forward(&x)?;
        }
        let x = relu6(&self.head.forward(&x)?)?;
        let features = x.mean(D::Minus1)?.mean(D::Minus1)?;
        let logits = self.fc.forward(&features)?;
        Ok((features, logits))
    }
}

/// Images per forward pass.
const BATCH: usize = 8;

/// The default image model: EfficientNet-Lite0 as an [`Embedder`] (its 1280-d pooled
/// features, L2-normalised) and as a [`Classifier`] over the 1000 ImageNet classes.
///
/// Load once per process ([`EfficientNetEmbedder::load`]); `Send + Sync`, share it in an
/// `Arc`.
#[derive(Debug)]
pub struct EfficientNetEmbedder {
    model: EfficientNetLite,
    config: Config,
    labels: Vec<String>,
    device: Device,
}

/// One picture's EfficientNet outputs: the raw pooled features and the class logits.
#[derive(Debug, Clone)]
pub struct ImageOutputs {
    /// The `head_channels` pooled features, before any normalisation.
    pub features: Vec<f32>,
    /// One logit per ImageNet class, in class-index order.
    pub logits: Vec<f32>,
}

impl EfficientNetEmbedder {
    /// The identifier stored beside every embedding this model makes.
    pub const MODEL_ID: &'static str = "efficientnet-lite0-imagenet1k";

    /// Loads `DIR/model.safetensors` and `DIR/labels.txt` (one class name per line, in
    /// class-index order), as written by `scripts/fetch-models` into
    /// `MODELS_DIR/efficientnet-lite0`.
    ///
    /// # Errors
    /// [`Error::MissingModelFile`] naming `scripts/fetch-models` when a file is absent,
    /// [`Error::InvalidConfig`] when the labels file does not have one name per class, a
    /// candle error when the weights do not fit the architecture.
    pub fn load(dir: &Path) -> Result<Self> {
        let config = Config::lite0();
        let weights = require(dir, "model.safetensors")?;
        let labels_path = require(dir, "labels.txt")?;
        let text = std::fs::read_to_string(&labels_path).map_err(|source| Error::Io {
            path: labels_path.clone(),
            source,
        })?;
        let labels: Vec<String> = text.lines().map(str::to_owned).collect();
        if labels.len() != config.num_classes {
            return Err(Error::InvalidConfig {
                path: labels_path,
                message: format!("{} labels, expected {}", labels.len(), config.num_classes),
            });
        }
        let device = Device::Cpu;
        let vb = mmap_var_builder(&weights, &device)?;
        let model = EfficientNetLite::new(vb, &config)?;
        Ok(Self {
            model,
            config,
            labels,
            device,
        })
    }

    /// The ImageNet class names, in class-index order.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// Runs the network on `images` framed as `framing` and returns raw features and logits.
    /// [`Embedder::embed_images`] uses [`Framing::Whole`] and [`Classifier::classify`]
    /// [`Framing::CenterCrop`], so an ingest step that wants both runs the network twice.
    ///
    /// # Errors
    /// [`Error::EmptyImage`] for an image with no pixels; a candle error otherwise.
    pub fn run(&self, images: &[RgbImage], framing: Framing) -> Result<Vec<ImageOutputs>> {
        if images.is_empty() {
            return Ok(Vec::new());
        }
        let mut outputs = Vec::with_capacity(images.len());
        // Bounded batches: the first stages' activations are ~5 MB per image.
        for chunk in images.chunks(BATCH) {
            let x = images_to_tensor(
                chunk,
                self.config.image_size,
                Normalization::EFFICIENTNET_LITE,
                framing,
                &self.device,
            )?;
            let (features, logits) = self.model.forward(&x)?;
            let features = features.to_vec2::<f32>()?;
            let logits = logits.to_vec2::<f32>()?;
            outputs.extend(
                features
                    .into_iter()
                    .zip(logits)
                    .map(|(features, logits)| ImageOutputs { features, logits }),
            );
        }
        Ok(outputs)
    }

    /// The `top_k` most probable classes of one set of logits (softmax probabilities),
    /// most probable first.
    pub fn top_labels(&self, logits: &[f32], top_k: usize) -> Vec<(String, f32)> {
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let exp: Vec<f32> = logits.iter().map(|l| (l - max).exp()).collect();
        let sum: f32 = exp.iter().sum();
        let mut order: Vec<usize> = (0..exp.len()).collect();
        order.sort_by(|&a, &b| exp[b].total_cmp(&exp[a]).then(a.cmp(&b)));
        order
            .into_iter()
            .take(top_k)
            .map(|i| {
                let label = self.labels.get(i).cloned().unwrap_or_else(|| i.to_string());
                (label, exp[i] / sum)
            })
            .collect()
    }
}

impl Embedder for EfficientNetEmbedder {
    fn model_id(&self) -> &str {
        Self::MODEL_ID
    }

    fn dim(&self) -> usize {
        self.config.head_channels
    }

    fn embed_images(&self, images: &[RgbImage]) -> Result<Vec<Vec<f32>>> {
        Ok(self
            .run(images, Framing::Whole)?
            .into_iter()
            .map(|o| l2_normalize(o.features))
            .collect())
    }

    fn embed_texts(&self, _texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Err(Error::UnsupportedModality {
            model_id: Self::MODEL_ID.to_owned(),
            modality: "texts",
        })
    }
}

impl Classifier for EfficientNetEmbedder {
    fn classify(&self, image: &RgbImage, top_k: usize) -> Result<Vec<(String, f32)>> {
        let outputs = self.run(std::slice::from_ref(image), Framing::CenterCrop)?;
        Ok(outputs
            .first()
            .map(|o| self.top_labels(&o.logits, top_k))
            .unwrap_or_default())
    }
}

/// Scales `v` to unit length (a zero vector stays zero).
pub(crate) fn l2_normalize(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// `dir/name`, or [`Error::MissingModelFile`] when it does not exist. `dir` is a default
/// model's folder inside the models folder; the error names the `scripts/fetch-models` command
/// that fills that models folder.
pub(crate) fn require(dir: &Path, name: &str) -> Result<PathBuf> {
    let models_dir = dir.parent().unwrap_or(dir);
    require_or(
        dir,
        name,
        format!(
            "run `scripts/fetch-models {}` to fetch the model weights",
            models_dir.display()
        ),
    )
}

/// `dir/name`, or [`Error::MissingModelFile`] with `fix` as the advice.
pub(crate) fn require_or(dir: &Path, name: &str, fix: String) -> Result<PathBuf> {
    let path = dir.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(Error::MissingModelFile { path, fix })
    }
}

/// A `VarBuilder` over one memory-mapped safetensors file, in f32 (candle's way: the
/// weights are read straight from the page cache, which every process on the machine shares).
#[allow(
    unsafe_code,
    reason = "candle's mmap constructor is unsafe because the file must not change while mapped"
)]
pub(crate) fn mmap_var_builder(path: &Path, device: &Device) -> Result<VarBuilder<'static>> {
    // SAFETY: the models folder is written once by scripts/fetch-models, which replaces files
    // by rename (never in place), so a mapped file's contents do not change under us.
    let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[path], DType::F32, device)? };
    Ok(vb)
}
