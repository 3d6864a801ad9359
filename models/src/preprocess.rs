//! Turning pictures into the tensors the image models read.
//!
//! Two framings, chosen by what the output is for:
//!
//! - [`Framing::Whole`] (embeddings): the whole picture is resized to the model's square input
//!   (both sides to `size`, bilinear, antialiased when shrinking). An ad's content spreads over
//!   the whole canvas (headline at the top, call to action at the bottom of a 9:16 story), and
//!   a crop would cut exactly those parts off before designs are compared; CNN features
//!   tolerate the aspect distortion (a resized, recompressed copy still finds its original).
//! - [`Framing::CenterCrop`] (ImageNet labels): the centred square of `size / (size + 32)` of
//!   the shorter side, resized to `size`: the evaluation crop of TensorFlow's EfficientNet
//!   (`preprocessing.py`, `CROP_PADDING = 32`). ImageNet labels name a picture's main subject,
//!   and the weights were evaluated this way; on the sample launch photo the whole picture's
//!   lattice towers make "drilling rig" win, the crop says "missile".
//!
//! An image that already has the input size is used pixel for pixel with `Whole`, which is
//! what the reference-number tests rely on.

use candle_core::{Device, Tensor};
use image::RgbImage;
use image::imageops::FilterType;

use crate::{Error, Result};

/// How to map 8-bit RGB values to the model's input range: `(v / 255 - mean[c]) / std[c]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Normalization {
    /// Per-channel mean, in the 0..1 range.
    pub mean: [f32; 3],
    /// Per-channel standard deviation, in the 0..1 range.
    pub std: [f32; 3],
}

impl Normalization {
    /// EfficientNet-Lite's input scaling, `(v - 127) / 128` on 0..255 values:
    /// `MEAN_RGB = [127.0]*3`, `STDDEV_RGB = [128.0]*3` in TensorFlow's
    /// `models/official/efficientnet/lite/efficientnet_lite_builder.py`, where these weights were
    /// trained. (ImageNet's mean/std was tried too: it lowers the top-1 probability on two of
    /// the three sample photos.)
    pub const EFFICIENTNET_LITE: Self = Self {
        mean: [127.0 / 255.0; 3],
        std: [128.0 / 255.0; 3],
    };

    /// OpenAI CLIP's `image_mean` / `image_std` (the `preprocessor_config.json` of every
    /// `openai/clip-vit-*` checkpoint).
    pub const CLIP: Self = Self {
        mean: [0.481_454_66, 0.457_827_5, 0.408_210_73],
        std: [0.268_629_54, 0.261_302_6, 0.275_777_1],
    };
}

/// Which part of a picture the model sees; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// The whole picture, resized to the square input.
    Whole,
    /// The centred square of `size / (size + 32)` of the shorter side, resized.
    CenterCrop,
}

/// Pixels cut around the evaluation crop: TensorFlow EfficientNet's `CROP_PADDING`.
const CROP_PADDING: u32 = 32;

/// Frames and resizes one image to `size` x `size`, borrowing it when nothing changes.
fn frame(img: &RgbImage, size: u32, framing: Framing) -> std::borrow::Cow<'_, RgbImage> {
    use std::borrow::Cow;
    match framing {
        Framing::Whole if img.width() == size && img.height() == size => Cow::Borrowed(img),
        Framing::Whole => Cow::Owned(image::imageops::resize(
            img,
            size,
            size,
            FilterType::Triangle,
        )),
        Framing::CenterCrop => {
            let short = img.width().min(img.height());
            let side = ((u64::from(short) * u64::from(size)) / u64::from(size + CROP_PADDING))
                .max(1) as u32;
            let left = (img.width() - side) / 2;
            let top = (img.height() - side) / 2;
            let crop = image::imageops::crop_imm(img, left, top, side, side).to_image();
            Cow::Owned(image::imageops::resize(
                &crop,
                size,
                size,
                FilterType::CatmullRom,
            ))
        }
    }
}

/// Frames, resizes and normalises `images` into one `[N, 3, size, size]` f32 tensor.
///
/// # Errors
/// [`Error::EmptyImage`] for an image with no pixels; a candle error if the tensor cannot be
/// built.
pub fn images_to_tensor(
    images: &[RgbImage],
    size: u32,
    norm: Normalization,
    framing: Framing,
    device: &Device,
) -> Result<Tensor> {
    let plane = (size * size) as usize;
    let mut data = Vec::with_capacity(images.len() * 3 * plane);
    for img in images {
        if img.width() == 0 || img.height() == 0 {
            return Err(Error::EmptyImage {
                width: img.width(),
                height: img.height(),
            });
        }
        let img = frame(img, size, framing);
        let raw = img.as_raw();
        for c in 0..3 {
            let (mean, std) = (norm.mean[c], norm.std[c]);
            data.extend(
                raw.chunks_exact(3)
                    .map(|px| (f32::from(px[c]) / 255.0 - mean) / std),
            );
        }
    }
    let n = images.len();
    Ok(Tensor::from_vec(
        data,
        (n, 3, size as usize, size as usize),
        device,
    )?)
}
