//! U²-Net-P: salient-object segmentation (which pixels belong to the picture's main
//! subject), for cutting a product out of its photo.
//!
//! The network of Qin et al., "U²-Net: Going Deeper with Nested U-Structure for Salient
//! Object Detection" (Pattern Recognition, 2020), in its small form (`U2NETP`, 1.1 M
//! parameters): six encoder stages and five decoder stages, each a residual U-block (RSU)
//! that is itself a little U-Net of 3x3 convolutions ([`Rsu`]); the two innermost stages
//! and the first decoder stage are the dilated, pool-free RSU-4F. Every stage's output
//! gives a one-channel side output (a 3x3 convolution, upsampled to the input size), and a
//! 1x1 convolution fuses the six into the first output, the mask. All seven pass through a
//! sigmoid.
//!
//! The weights are rembg's `u2netp.onnx` converted by `scripts/onnx-to-safetensors.py` (batch
//! norms already folded into the convolutions, so every convolution has a bias; names as in
//! the authors' PyTorch modules, `stage1.rebnconvin.conv_s1.weight`). candle-onnx cannot run
//! the graph itself (its Resize is nearest-only and refuses scales plus sizes), and a module
//! reads like the paper.
//!
//! Pooling is 2x2, stride 2, ceil mode: odd sizes are padded with one zero row or column
//! before pooling, which is exact here because every pooled tensor comes out of a ReLU (no
//! value is below zero). Upsampling is bilinear with `align_corners = false` (PyTorch's
//! `F.upsample(..., mode='bilinear')`, ONNX `pytorch_half_pixel`), to the exact size of the
//! tensor it is joined with.
//!
//! Rejected alternative: running the ONNX file through an ONNX runtime crate. It would add a
//! native dependency (or a second tensor library) for one 1.1 M-parameter network, and the
//! other models already live on candle.

use std::path::Path;

use candle_core::{Device, Tensor};
use candle_nn::VarBuilder;
use image::RgbImage;
use image::imageops::FilterType;

use crate::conv::SameConv;
use crate::efficientnet::{mmap_var_builder, require};
use crate::{Error, Result};

/// U²-Net hyper-parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct U2NetConfig {
    /// Square input size in pixels.
    pub image_size: u32,
    /// Input channels (RGB).
    pub in_channels: usize,
    /// Channels inside every RSU block.
    pub mid_channels: usize,
    /// Channels between the stages.
    pub stage_channels: usize,
    /// Per-channel mean and standard deviation applied after scaling the picture by its
    /// brightest value.
    pub mean: [f32; 3],
    /// See `mean`.
    pub std: [f32; 3],
}

impl U2NetConfig {
    /// U²-Net-P as the authors' `U2NETP(3, 1)`: RSU blocks of 16 middle and 64 outer
    /// channels, 320x320 input (`RescaleT(320)` in `u2net_test.py`). Inputs are divided by
    /// their largest value, then normalised with ImageNet's mean and standard deviation
    /// (`ToTensorLab(flag=0)` in the authors' `data_loader.py`, and rembg's
    /// `SimpleSession.predict`).
    pub fn u2netp() -> Self {
        Self {
            image_size: 320,
            in_channels: 3,
            mid_channels: 16,
            stage_channels: 64,
            mean: [0.485, 0.456, 0.406],
            std: [0.229, 0.224, 0.225],
        }
    }
}

/// A 3x3 convolution (batch norm folded in) followed by a ReLU: the authors' `REBNCONV`.
#[derive(Debug, Clone)]
struct ConvRelu(SameConv);

impl ConvRelu {
    fn new(vb: VarBuilder, in_c: usize, out_c: usize, dilation: usize) -> Result<Self> {
        let vb = vb.pp("conv_s1");
        let weight = vb.get((out_c, in_c, 3, 3), "weight")?;
        let bias = vb.get(out_c, "bias")?;
        Ok(Self(SameConv::new(&weight, &bias, dilation, true)?))
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(self.0.forward(x)?)
    }
}

/// 2x2 max pooling, stride 2, rounding the output size up (`ceil_mode=True`). Inputs are
/// never negative (they come out of a ReLU), so a zero row or column stands in for the
/// window's missing part.
fn pool(x: &Tensor) -> Result<Tensor> {
    let (_, _, h, w) = x.dims4()?;
    let x = x.pad_with_zeros(2, 0, h % 2)?.pad_with_zeros(3, 0, w % 2)?;
    Ok(x.max_pool2d(2)?)
}

/// `x` resized bilinearly to the spatial size of `like` (`align_corners = false`).
fn upsample_like(x: &Tensor, like: &Tensor) -> Result<Tensor> {
    let (_, _, h, w) = like.dims4()?;
    Ok(x.upsample_bilinear2d(h, w, false)?)
}

/// A residual U-block. RSU-L (`pooled`): an input convolution, then an encoder of L-1
/// convolutions with a max-pool between each, a dilated (2) convolution at the bottom, and
/// a decoder that upsamples and joins each level with the encoder's output of that level;
/// the decoder's output plus the input convolution's is the block's output. RSU-4F (not
/// `pooled`): the same shape at one resolution, with dilations 1, 2, 4, 8 instead of pools.
#[derive(Debug, Clone)]
struct Rsu {
    conv_in: ConvRelu,
    /// `rebnconv1` .. `rebnconv{L-1}`.
    down: Vec<ConvRelu>,
    /// `rebnconv{L}`, dilated.
    bottom: ConvRelu,
    /// `rebnconv{L-1}d` .. `rebnconv1d`.
    up: Vec<ConvRelu>,
    pooled: bool,
}

impl Rsu {
    /// RSU-`height` (7, 6, 5 or 4), or RSU-4F when `pooled` is false.
    fn new(
        vb: VarBuilder,
        height: usize,
        pooled: bool,
        in_c: usize,
        mid: usize,
        out_c: usize,
    ) -> Result<Self> {
        // Dilation of level i (1-based): 1 throughout an RSU-L (its bottom takes 2);
        // doubling per level in an RSU-4F.
        let dilation = |level: usize| if pooled { 1 } else { 1 << (level - 1) };
        let conv_in = ConvRelu::new(vb.pp("rebnconvin"), in_c, out_c, 1)?;
        let mut down = Vec::with_capacity(height - 1);
        for level in 1..height {
            let c_in = if level == 1 { out_c } else { mid };
            down.push(ConvRelu::new(
                vb.pp(format!("rebnconv{level}")),
                c_in,
                mid,
                dilation(level),
            )?);
        }
        let bottom_dilation = if pooled { 2 } else { dilation(height) };
        let bottom = ConvRelu::new(
            vb.pp(format!("rebnconv{height}")),
            mid,
            mid,
            bottom_dilation,
        )?;
        let mut up = Vec::with_capacity(height - 1);
        for level in (1..height).rev() {
            let c_out = if level == 1 { out_c } else { mid };
            up.push(ConvRelu::new(
                vb.pp(format!("rebnconv{level}d")),
                2 * mid,
                c_out,
                dilation(level),
            )?);
        }
        Ok(Self {
            conv_in,
            down,
            bottom,
            up,
            pooled,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let hx_in = self.conv_in.forward(x)?;
        let mut skips: Vec<Tensor> = Vec::with_capacity(self.down.len());
        let mut h = hx_in.clone();
        for (i, conv) in self.down.iter().enumerate() {
            if self.pooled && i > 0 {
                h = pool(&h)?;
            }
            h = conv.forward(&h)?;
            skips.push(h.clone());
        }
        let mut d = self.bottom.forward(&h)?;
        for (conv, skip) in self.up.iter().zip(skips.iter().rev()) {
            if d.dims()[2..] != skip.dims()[2..] {
                d = upsample_like(&d, skip)?;
            }
            d = conv.forward(&Tensor::cat(&[&d, skip], 1)?)?;
        }
        Ok((d + hx_in)?)
    }
}

/// A one-channel 3x3 side output (or the 1x1 fusion), with bias, no activation.
#[derive(Debug, Clone)]
struct Head(SameConv);

impl Head {
    fn new(vb: VarBuilder, in_c: usize, kernel: usize) -> Result<Self> {
        let weight = vb.get((1, in_c, kernel, kernel), "weight")?;
        let bias = vb.get(1, "bias")?;
        Ok(Self(SameConv::new(&weight, &bias, 1, false)?))
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(self.0.forward(x)?)
    }
}

/// The U²-Net network. Create one per process and share it: it is immutable, and its
/// weights are memory-mapped from the safetensors file.
#[derive(Debug, Clone)]
pub struct U2Net {
    /// `stage1` .. `stage6`.
    encoder: Vec<Rsu>,
    /// `stage5d` .. `stage1d`.
    decoder: Vec<Rsu>,
    /// `side1` .. `side6`.
    sides: Vec<Head>,
    fuse: Head,
}

impl U2Net {
    /// Builds the network from `vb` (tensor names as the authors' modules, see the module
    /// docs).
    ///
    /// # Errors
    /// A candle error when a tensor is missing or has an unexpected shape.
    pub fn new(vb: VarBuilder, cfg: &U2NetConfig) -> Result<Self> {
        let (mid, out) = (cfg.mid_channels, cfg.stage_channels);
        // (height, pooled) of stages 1..6; the decoder mirrors stages 5..1.
        let shapes = [
            (7, true),
            (6, true),
            (5, true),
            (4, true),
            (4, false),
            (4, false),
        ];
        let mut encoder = Vec::with_capacity(6);
        for (i, &(height, pooled)) in shapes.iter().enumerate() {
            let in_c = if i == 0 { cfg.in_channels } else { out };
            encoder.push(Rsu::new(
                vb.pp(format!("stage{}", i + 1)),
                height,
                pooled,
                in_c,
                mid,
                out,
            )?);
        }
        let mut decoder = Vec::with_capacity(5);
        for stage in (1..=5).rev() {
            let (height, pooled) = shapes[stage - 1];
            decoder.push(Rsu::new(
                vb.pp(format!("stage{stage}d")),
                height,
                pooled,
                2 * out,
                mid,
                out,
            )?);
        }
        let sides = (1..=6)
            .map(|i| Head::new(vb.pp(format!("side{i}")), out, 3))
            .collect::<Result<Vec<_>>>()?;
        let fuse = Head::new(vb.pp("outconv"), 6, 1)?;
        Ok(Self {
            encoder,
            decoder,
            sides,
            fuse,
        })
    }

    /// The seven sigmoid outputs of a normalised `[N, 3, H, W]` batch, each `[N, 1, H, W]`:
    /// the fused mask first, then the side outputs of stages 1 to 6.
    ///
    /// # Errors
    /// A candle error on a badly shaped input.
    pub fn forward(&self, x: &Tensor) -> Result<Vec<Tensor>> {
        // Encoder: stage outputs hx1..hx6, a pool between stages.
        let mut stages: Vec<Tensor> = Vec::with_capacity(6);
        let mut h = x.clone();
        for (i, stage) in self.encoder.iter().enumerate() {
            if i > 0 {
                h = pool(&h)?;
            }
            h = stage.forward(&h)?;
            stages.push(h.clone());
        }
        // Decoder: hx5d..hx1d, each from the level below upsampled and joined with the
        // encoder's output of its level.
        let mut decoded: Vec<Tensor> = Vec::with_capacity(6);
        let mut d = h;
        decoded.push(d.clone());
        for (stage, skip) in self.decoder.iter().zip(stages[..5].iter().rev()) {
            let up = upsample_like(&d, skip)?;
            d = stage.forward(&Tensor::cat(&[&up, skip], 1)?)?;
            decoded.push(d.clone());
        }
        // decoded = [hx6, hx5d, hx4d, hx3d, hx2d, hx1d]; side i reads level i.
        let full = &stages[0];
        let mut sides = Vec::with_capacity(6);
        for (i, head) in self.sides.iter().enumerate() {
            let level = &decoded[5 - i];
            sides.push(upsample_like(&head.forward(level)?, full)?);
        }
        let fused = self.fuse.forward(&Tensor::cat(&sides, 1)?)?;
        let mut out = Vec::with_capacity(7);
        out.push(candle_nn::ops::sigmoid(&fused)?);
        for s in &sides {
            out.push(candle_nn::ops::sigmoid(s)?);
        }
        Ok(out)
    }
}

/// A saliency map: one value per pixel of the model's square input, min–max scaled to
/// 0..1 (1 = the subject), row by row.
#[derive(Debug, Clone, PartialEq)]
pub struct SaliencyMap {
    /// Width and height in pixels.
    pub size: u32,
    /// `size * size` values.
    pub values: Vec<f32>,
}

/// U²-Net-P with its weights: turns a picture into a [`SaliencyMap`].
///
/// Load once per process ([`SalientSegmenter::load`]); `Send + Sync`, share it in an `Arc`.
/// The weights take 4.5 MB; one pass at 320x320 took the bench process (`scripts/bench-cutout`)
/// to a peak of about 260 MB resident (full-resolution padded buffers of 64 and 128 channels).
#[derive(Debug)]
pub struct SalientSegmenter {
    model: U2Net,
    config: U2NetConfig,
    device: Device,
}

impl SalientSegmenter {
    /// The identifier of the model (stored beside what it made).
    pub const MODEL_ID: &'static str = "u2netp";

    /// Loads `DIR/model.safetensors`, as written by `scripts/fetch-models` into
    /// `MODELS_DIR/u2netp`.
    ///
    /// # Errors
    /// [`Error::MissingModelFile`] naming `scripts/fetch-models` when the file is absent, a
    /// candle error when the weights do not fit the architecture.
    pub fn load(dir: &Path) -> Result<Self> {
        let config = U2NetConfig::u2netp();
        let weights = require(dir, "model.safetensors")?;
        let device = Device::Cpu;
        let vb = mmap_var_builder(&weights, &device)?;
        let model = U2Net::new(vb, &config)?;
        Ok(Self {
            model,
            config,
            device,
        })
    }

    /// The model's square input size (320).
    pub fn input_size(&self) -> u32 {
        self.config.image_size
    }

    /// The input tensor of one picture: resized to the input size (bilinear, unless it has
    /// that size already: callers that shrink large photos faster do so first), divided by
    /// its brightest value, normalised.
    ///
    /// # Errors
    /// [`Error::EmptyImage`] for an image with no pixels.
    pub fn input(&self, image: &RgbImage) -> Result<Tensor> {
        if image.width() == 0 || image.height() == 0 {
            return Err(Error::EmptyImage {
                width: image.width(),
                height: image.height(),
            });
        }
        let size = self.config.image_size;
        let resized;
        let image = if image.dimensions() == (size, size) {
            image
        } else {
            resized = image::imageops::resize(image, size, size, FilterType::Triangle);
            &resized
        };
        let raw = image.as_raw();
        let max = f32::from(raw.iter().copied().max().unwrap_or(0).max(1));
        let plane = (size * size) as usize;
        let mut data = Vec::with_capacity(3 * plane);
        for c in 0..3 {
            let (mean, std) = (self.config.mean[c], self.config.std[c]);
            data.extend(
                raw.chunks_exact(3)
                    .map(|px| (f32::from(px[c]) / max - mean) / std),
            );
        }
        Ok(Tensor::from_vec(
            data,
            (1, 3, size as usize, size as usize),
            &self.device,
        )?)
    }

    /// The saliency map of `image` (the fused output, min–max scaled as rembg does).
    ///
    /// # Errors
    /// [`Error::EmptyImage`] for an image with no pixels; a candle error otherwise.
    pub fn saliency(&self, image: &RgbImage) -> Result<SaliencyMap> {
        let x = self.input(image)?;
        let outputs = self.model.forward(&x)?;
        let fused = outputs
            .first()
            .ok_or_else(|| candle_core::Error::Msg("U²-Net returned no output".into()))?;
        let mut values = fused.flatten_all()?.to_vec1::<f32>()?;
        let (lo, hi) = values
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(*v), hi.max(*v))
            });
        let span = hi - lo;
        for v in &mut values {
            *v = if span > 0.0 { (*v - lo) / span } else { 0.0 };
        }
        Ok(SaliencyMap {
            size: self.config.image_size,
            values,
        })
    }

    /// The network, for callers that want all seven outputs ([`U2Net::forward`]).
    pub fn network(&self) -> &U2Net {
        &self.model
    }
}
