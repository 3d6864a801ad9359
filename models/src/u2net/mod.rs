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
//! Pooling is 2x2, stride 2, ceil mode: the missing part of an edge window counts as zero,
//! which is exact here because every pooled map comes out of a ReLU (no value is below zero).
//! Upsampling is bilinear with `align_corners = false` (PyTorch's
//! `F.upsample(..., mode='bilinear')`, ONNX `pytorch_half_pixel`), to the exact size of the
//! map it is joined with.
//!
//! How it runs (CPU, f32): the weights are read with candle's `VarBuilder` and then held in
//! the layouts of [`conv`] (Winograd-transformed for the undilated 3x3 convolutions, which
//! carry 99.9 % of the arithmetic). Maps are channels-last ([`fmap::Fm`]); a convolution
//! reads its input through [`fmap::Source`]s, so joining two maps, upsampling the lower one
//! and pooling are done while reading, never as copies; the residual add of an RSU block
//! happens in its last convolution's output step. Each convolution splits into bands of rows
//! on rayon's pool. One pass at 320x320 is 19.76 G multiply-adds counted as direct
//! convolutions ([`U2Net::macs`]; 39.5 GFLOP), of which Winograd does a quarter.
//!
//! Rejected alternative: running the ONNX file through an ONNX runtime crate. It would add a
//! native dependency (or a second tensor library) for one 1.1 M-parameter network, and the
//! other models already live on candle.

use std::path::Path;

use candle_core::{Device, Tensor};
use candle_nn::VarBuilder;
use image::RgbImage;
use image::imageops::FilterType;

use crate::efficientnet::{mmap_var_builder, require};
use crate::{Error, Result};

mod conv;
mod fmap;
mod kernel;
mod simd;

use conv::Conv3;
use fmap::{Buffers, Fm, Source, upsample_plane};

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

/// A 3x3 convolution (batch norm folded in) from `vb`: `weight [out, in, 3, 3]` and `bias`.
fn conv(vb: VarBuilder, in_c: usize, out_c: usize, dilation: usize, relu: bool) -> Result<Conv3> {
    let weight = vb.get((out_c, in_c, 3, 3), "weight")?;
    let bias = vb.get(out_c, "bias")?;
    Ok(Conv3::new(
        &weight.flatten_all()?.to_vec1::<f32>()?,
        &bias.to_vec1::<f32>()?,
        (out_c, in_c),
        dilation,
        relu,
    ))
}

/// A 3x3 convolution followed by a ReLU: the authors' `REBNCONV` (`<name>.conv_s1`).
fn rebnconv(vb: VarBuilder, in_c: usize, out_c: usize, dilation: usize) -> Result<Conv3> {
    conv(vb.pp("conv_s1"), in_c, out_c, dilation, true)
}

/// A residual U-block. RSU-L (`pooled`): an input convolution, then an encoder of L-1
/// convolutions with a max-pool between each, a dilated (2) convolution at the bottom, and
/// a decoder that upsamples and joins each level with the encoder's output of that level;
/// the decoder's output plus the input convolution's is the block's output. RSU-4F (not
/// `pooled`): the same shape at one resolution, with dilations 1, 2, 4, 8 instead of pools.
#[derive(Debug, Clone)]
struct Rsu {
    conv_in: Conv3,
    /// `rebnconv1` .. `rebnconv{L-1}`.
    down: Vec<Conv3>,
    /// `rebnconv{L}`, dilated.
    bottom: Conv3,
    /// `rebnconv{L-1}d` .. `rebnconv1d`.
    up: Vec<Conv3>,
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
        let conv_in = rebnconv(vb.pp("rebnconvin"), in_c, out_c, 1)?;
        let mut down = Vec::with_capacity(height - 1);
        for level in 1..height {
            let c_in = if level == 1 { out_c } else { mid };
            let vb = vb.pp(format!("rebnconv{level}"));
            down.push(rebnconv(vb, c_in, mid, dilation(level))?);
        }
        let bottom_dilation = if pooled { 2 } else { dilation(height) };
        let bottom = rebnconv(
            vb.pp(format!("rebnconv{height}")),
            mid,
            mid,
            bottom_dilation,
        )?;
        let mut up = Vec::with_capacity(height - 1);
        for level in (1..height).rev() {
            let c_out = if level == 1 { out_c } else { mid };
            let vb = vb.pp(format!("rebnconv{level}d"));
            up.push(rebnconv(vb, 2 * mid, c_out, dilation(level))?);
        }
        Ok(Self {
            conv_in,
            down,
            bottom,
            up,
            pooled,
        })
    }

    /// The sizes of the encoder's levels for an `h x w` block input.
    fn levels(&self, h: usize, w: usize) -> Vec<(usize, usize)> {
        let mut sizes = vec![(h, w)];
        for _ in 1..self.down.len() {
            let (lh, lw) = sizes[sizes.len() - 1];
            sizes.push(if self.pooled {
                (lh.div_ceil(2), lw.div_ceil(2))
            } else {
                (lh, lw)
            });
        }
        sizes
    }

    /// The block's input convolution (`out_c` channels at `h x w`) of `input` seen at
    /// `h x w`: the only reader of `input`, so the caller may give its maps back after it.
    fn enter(&self, input: &[Source<'_>], h: usize, w: usize, bufs: &mut Buffers) -> Fm {
        let mut hx_in = bufs.take(self.conv_in.out_channels(), h, w);
        self.conv_in.run(input, false, &mut hx_in);
        hx_in
    }

    /// The block's output from its input convolution's (see [`Rsu::enter`]).
    fn finish(&self, hx_in: Fm, bufs: &mut Buffers) -> Fm {
        let (h, w) = (hx_in.h, hx_in.w);
        let mut skips: Vec<Fm> = Vec::with_capacity(self.down.len());
        for (conv, (lh, lw)) in self.down.iter().zip(self.levels(h, w)) {
            let mut out = bufs.take(conv.out_channels(), lh, lw);
            let src = match skips.last() {
                None => Source::Plain(&hx_in),
                Some(prev) if self.pooled => Source::Pool(prev),
                Some(prev) => Source::Plain(prev),
            };
            conv.run(&[src], false, &mut out);
            skips.push(out);
        }
        let Some(last) = skips.last() else {
            unreachable!("an RSU block has at least three encoder levels")
        };
        let mut d = bufs.take(self.bottom.out_channels(), last.h, last.w);
        self.bottom.run(&[Source::Plain(last)], false, &mut d);
        let n = self.up.len();
        // The last decoder convolution adds its output to the input convolution's in place
        // (the block's residual), so no third full-size map is needed.
        let mut hx_in = Some(hx_in);
        for (k, conv) in self.up.iter().enumerate() {
            let Some(skip) = skips.pop() else {
                unreachable!("one skip per decoder level")
            };
            let last = k + 1 == n;
            let mut next = match hx_in.take_if(|_| last) {
                Some(residual) => residual,
                None => bufs.take(conv.out_channels(), skip.h, skip.w),
            };
            let below = if d.same_size(&skip) {
                Source::Plain(&d)
            } else {
                Source::Up(&d)
            };
            conv.run(&[below, Source::Plain(&skip)], last, &mut next);
            bufs.give(skip);
            bufs.give(std::mem::replace(&mut d, next));
        }
        d
    }

    /// Multiply-adds of one pass at `h x w`.
    fn macs(&self, h: usize, w: usize) -> u64 {
        let levels = self.levels(h, w);
        let (bh, bw) = levels[levels.len() - 1];
        self.conv_in.macs(h, w)
            + self.bottom.macs(bh, bw)
            + self
                .down
                .iter()
                .zip(&levels)
                .chain(self.up.iter().zip(levels.iter().rev()))
                .map(|(c, &(lh, lw))| c.macs(lh, lw))
                .sum::<u64>()
    }

    fn floats(&self) -> usize {
        [&self.conv_in, &self.bottom]
            .into_iter()
            .chain(&self.down)
            .chain(&self.up)
            .map(Conv3::floats)
            .sum()
    }
}

/// The U²-Net network. Create one per process and share it: it is immutable. Its weights
/// are copied out of the safetensors file into the layout the convolutions want (see
/// `conv`), about 20 MB for U²-Net-P.
#[derive(Debug, Clone)]
pub struct U2Net {
    /// `stage1` .. `stage6`.
    encoder: Vec<Rsu>,
    /// `stage5d` .. `stage1d`.
    decoder: Vec<Rsu>,
    /// `side1` .. `side6`.
    sides: Vec<Conv3>,
    /// `outconv`: six weights and a bias.
    fuse: ([f32; 6], f32),
    in_channels: usize,
}

/// The seven maps of one picture, before the sigmoid, each `h * w` row by row: the fused
/// output, then the side outputs of stages 1 to 6.
type Logits = [Vec<f32>; 7];

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
            let vb = vb.pp(format!("stage{}", i + 1));
            encoder.push(Rsu::new(vb, height, pooled, in_c, mid, out)?);
        }
        let mut decoder = Vec::with_capacity(5);
        for stage in (1..=5).rev() {
            let (height, pooled) = shapes[stage - 1];
            let vb = vb.pp(format!("stage{stage}d"));
            decoder.push(Rsu::new(vb, height, pooled, 2 * out, mid, out)?);
        }
        let sides = (1..=6)
            .map(|i| conv(vb.pp(format!("side{i}")), out, 1, 1, false))
            .collect::<Result<Vec<_>>>()?;
        let outconv = vb.pp("outconv");
        let fuse_w = outconv.get((1, 6, 1, 1), "weight")?.flatten_all()?;
        let fuse_b = outconv.get(1, "bias")?.to_vec1::<f32>()?;
        let mut weights = [0f32; 6];
        weights.copy_from_slice(&fuse_w.to_vec1::<f32>()?);
        Ok(Self {
            encoder,
            decoder,
            sides,
            fuse: (weights, fuse_b[0]),
            in_channels: cfg.in_channels,
        })
    }

    /// The seven sigmoid outputs of a normalised `[N, 3, H, W]` f32 batch, each
    /// `[N, 1, H, W]`: the fused mask first, then the side outputs of stages 1 to 6.
    ///
    /// # Errors
    /// A candle error on a badly shaped input.
    pub fn forward(&self, x: &Tensor) -> Result<Vec<Tensor>> {
        let (n, c, h, w) = x.dims4()?;
        if c != self.in_channels || h == 0 || w == 0 {
            let msg = format!(
                "U²-Net takes [N, {}, H, W], got {:?}",
                self.in_channels,
                x.dims()
            );
            return Err(candle_core::Error::Msg(msg).into());
        }
        let data = x
            .to_dtype(candle_core::DType::F32)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        let mut outs: Vec<Vec<f32>> = (0..7).map(|_| Vec::with_capacity(n * h * w)).collect();
        for image in data.chunks_exact(c * h * w) {
            let mut bufs = Buffers::default();
            let input = channels_last(image, h, w, &mut bufs);
            for (out, logits) in outs.iter_mut().zip(self.run(input, &mut bufs)) {
                out.extend(logits.into_iter().map(sigmoid));
            }
        }
        outs.into_iter()
            .map(|v| Ok(Tensor::from_vec(v, (n, 1, h, w), x.device())?))
            .collect()
    }

    /// The fused mask (after the sigmoid) of one normalised picture given as three planes
    /// of `h * w` values: [`U2Net::forward`]'s first output without the others' sigmoids
    /// and without tensors.
    fn mask(&self, planes: &[f32], h: usize, w: usize) -> Vec<f32> {
        let mut bufs = Buffers::default();
        let input = channels_last(planes, h, w, &mut bufs);
        let [fused, ..] = self.run(input, &mut bufs);
        fused.into_iter().map(sigmoid).collect()
    }

    /// The logits of one picture, `input` holding its normalised channels first in each
    /// pixel's 16 (the rest zero).
    fn run(&self, input: Fm, bufs: &mut Buffers) -> Logits {
        let (h, w) = (input.h, input.w);
        // Encoder: stage outputs hx1..hx6, a pool between stages.
        let mut stages: Vec<Fm> = Vec::with_capacity(6);
        let mut input = Some(input);
        for stage in &self.encoder {
            let hx_in = match (stages.last(), input.take()) {
                (None, Some(x)) => {
                    let hx_in = stage.enter(&[Source::Plain(&x)], h, w, bufs);
                    bufs.give(x);
                    hx_in
                }
                (Some(prev), _) => {
                    let (ph, pw) = (prev.h.div_ceil(2), prev.w.div_ceil(2));
                    stage.enter(&[Source::Pool(prev)], ph, pw, bufs)
                }
                (None, None) => unreachable!("the input feeds the first stage"),
            };
            stages.push(stage.finish(hx_in, bufs));
        }
        // Decoder: hx5d..hx1d, each from the level below upsampled and joined with the
        // encoder's output of its level. Side i reads level i (hx6 for side 6).
        let mut sides: Vec<Fm> = Vec::with_capacity(6);
        let Some(mut d) = stages.pop() else {
            unreachable!("six encoder stages")
        };
        sides.push(self.side(5, &d, bufs));
        for stage in &self.decoder {
            let Some(skip) = stages.pop() else {
                unreachable!("one encoder stage per decoder stage")
            };
            let below = if d.same_size(&skip) {
                Source::Plain(&d)
            } else {
                Source::Up(&d)
            };
            let hx_in = stage.enter(&[below, Source::Plain(&skip)], skip.h, skip.w, bufs);
            bufs.give(skip);
            bufs.give(d);
            d = stage.finish(hx_in, bufs);
            sides.push(self.side(5 - sides.len(), &d, bufs));
        }
        bufs.give(d);
        // sides = [side6 .. side1] at their levels' sizes; upsample, then fuse.
        let mut logits: Logits = Default::default();
        for (i, side) in sides.iter().rev().enumerate() {
            logits[i + 1] = vec![0.0; h * w];
            upsample_plane(side, h, w, &mut logits[i + 1]);
        }
        let (weights, bias) = self.fuse;
        logits[0] = (0..h * w)
            .map(|p| bias + (0..6).map(|i| weights[i] * logits[i + 1][p]).sum::<f32>())
            .collect();
        for side in sides {
            bufs.give(side);
        }
        logits
    }

    /// Side output `i` (0-based) of a decoded level, one channel at the level's size.
    fn side(&self, i: usize, level: &Fm, bufs: &mut Buffers) -> Fm {
        let mut out = bufs.take(1, level.h, level.w);
        self.sides[i].run(&[Source::Plain(level)], false, &mut out);
        out
    }

    /// Multiply-adds of one pass on an `h x w` picture, every convolution counted at its
    /// own resolution as a direct convolution would do it (twice this is the FLOP count).
    pub fn macs(&self, h: usize, w: usize) -> u64 {
        let mut sizes = vec![(h, w)];
        for _ in 1..6 {
            let (lh, lw) = sizes[sizes.len() - 1];
            sizes.push((lh.div_ceil(2), lw.div_ceil(2)));
        }
        let stages: u64 = self
            .encoder
            .iter()
            .zip(&sizes)
            .chain(self.decoder.iter().zip(sizes[..5].iter().rev()))
            .map(|(s, &(lh, lw))| s.macs(lh, lw))
            .sum();
        let sides: u64 = self
            .sides
            .iter()
            .zip(&sizes)
            .map(|(s, &(lh, lw))| s.macs(lh, lw))
            .sum();
        stages + sides + 6 * (h * w) as u64
    }

    /// Bytes of weights the network holds (in its convolutions' layouts).
    pub fn weight_bytes(&self) -> usize {
        let convs: usize = self
            .encoder
            .iter()
            .chain(&self.decoder)
            .map(Rsu::floats)
            .chain(self.sides.iter().map(Conv3::floats))
            .sum();
        4 * (convs + 7)
    }
}

/// Three planes of `h * w` values as a channels-last map of 16 channels (the rest zero).
fn channels_last(planes: &[f32], h: usize, w: usize, bufs: &mut Buffers) -> Fm {
    let mut input = bufs.take(16, h, w);
    let planes: Vec<&[f32]> = planes.chunks_exact(h * w).collect();
    for (p, px) in input.data_mut().chunks_exact_mut(16).enumerate() {
        px.fill(0.0);
        for (ch, plane) in planes.iter().enumerate() {
            px[ch] = plane[p];
        }
    }
    input
}

fn sigmoid(v: f32) -> f32 {
    1.0 / (1.0 + (-v).exp())
}

/// A saliency map: one value per pixel of the model's square input, min–max scaled to
/// 0..1 (1 = the subject), row by row.
#[derive(Debug, Clone, PartialEq)]
pub struct SaliencyMap {
    /// Width and height in pixels.
    pub size: u32,
    /// `size * size` values.
    pub values: Vec<f32>,
    /// The network's own least and greatest probability (its sigmoid output) before the
    /// scaling: how sure it was. A picture with a clear subject spans nearly 0..1; a
    /// picture with nothing in it may span a sliver, which the scaling stretches into an
    /// invented shape (the cut-out's confidence check reads these).
    pub raw_low: f32,
    pub raw_high: f32,
}

/// U²-Net-P with its weights: turns a picture into a [`SaliencyMap`].
///
/// Load once per process ([`SalientSegmenter::load`]); `Send + Sync`, share it in an `Arc`.
/// It holds the weights in its convolutions' layouts ([`U2Net::weight_bytes`], 17.3 MB:
/// Winograd's transformed 3x3 weights are 4x the 4.5 MB file) and nothing else between
/// passes. A pass at 320x320 borrows about 70 MB of maps (two 64-channel maps at full
/// resolution, 26 MB each, are live at once where stage 1d reads stage 1's output), given
/// back when it ends, plus a few MB of scratch per worker thread that stays.
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
        let size = self.config.image_size as usize;
        let planes = self.planes(image)?;
        Ok(Tensor::from_vec(planes, (1, 3, size, size), &self.device)?)
    }

    /// [`SalientSegmenter::input`] as three planes of values.
    fn planes(&self, image: &RgbImage) -> Result<Vec<f32>> {
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
        Ok(data)
    }

    /// The saliency map of `image` (the fused output, min–max scaled as rembg does).
    ///
    /// # Errors
    /// [`Error::EmptyImage`] for an image with no pixels.
    pub fn saliency(&self, image: &RgbImage) -> Result<SaliencyMap> {
        let size = self.config.image_size as usize;
        let mut values = self.model.mask(&self.planes(image)?, size, size);
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
            raw_low: lo,
            raw_high: hi,
        })
    }

    /// The network, for callers that want all seven outputs ([`U2Net::forward`]).
    pub fn network(&self) -> &U2Net {
        &self.model
    }
}
