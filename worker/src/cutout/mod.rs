//! Product cut-outs: the product taken out of its photo as a PNG with alpha, for cut-out
//! slots of ads and for `POST /v1/images/{id}/cutout`.
//!
//! One [`Cutter`] per process (it holds U²-Net-P when the weights are installed). Three
//! paths, the cheapest that applies first, and the one that ran is recorded ([`Method`]):
//!
//! 1. [`Method::SourceAlpha`]: the photo already has transparency around the product (a
//!    PNG cut-out): its own alpha is used.
//! 2. [`Method::ColourKey`]: the photo's border is one flat colour or a smooth studio sweep
//!    (a packshot on white or grey): keyed on that ground ([`key`]). The model, when
//!    installed, runs only to settle what the colours cannot: ground the flood took from
//!    inside the product (`key::bays`: a white body on a near-white ground) is given back
//!    where it sees product (`fill_bays`), and the ground in shadow (a drop or contact
//!    shadow, darker than the ground, so product to the key) is taken out where it does
//!    not (`clear_shadows`).
//! 3. [`Method::Model`]: anything else goes through U²-Net-P's saliency map
//!    ([`adforge_models::SalientSegmenter`]) at 320x320. Without the weights this path is
//!    refused ([`Refusal::NoModel`]) and callers keep the framed photo.
//!
//! Before the colour key or the model, a picture with no distinct object (one colour all
//! over, or nearly: noise, grain) is refused, and after the model, a map the model is not
//! sure of ([`subject`]): every path finds *something*, and the model's min–max scaled map
//! turns a blank picture into an invented ellipse ([`Refusal::Featureless`],
//! [`Refusal::Unsure`]).
//!
//! The coarse mask of any path must pass a sanity check ([`mask::Coarse::check`]: not
//! empty, at most 95 % of the frame, at most five parts), then [`matte`] cuts at the output
//! scale: feathered edge, edge colours cleaned of the old ground, trimmed to the product.
//! [`store`] keeps cut-outs in the blob store by the photo's content hash, so every ad and
//! API call that needs the same photo's cut-out makes it once.
//!
//! ```no_run
//! # fn demo(photo: image::DynamicImage) {
//! use adforge_worker::cutout::Cutter;
//!
//! let cutter = Cutter::load(&adforge_models::default_models_dir()); // once per process
//! match cutter.cut(&photo) {
//!     Ok(cutout) => println!("{} x {} by {}", cutout.image.width(), cutout.image.height(), cutout.method),
//!     Err(why) => println!("keep the framed photo: {why}"),
//! }
//! # }
//! ```

pub mod key;
pub mod mask;
pub mod matte;
pub mod store;
pub mod subject;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use adforge_models::SalientSegmenter;
use image::{DynamicImage, RgbImage, RgbaImage};
use serde::{Deserialize, Serialize};

use key::{GroundModel, ground_reaching_border};
use mask::Coarse;
use matte::{Fine, matte};

/// Long edge of the working copy the colour key and the checks run on.
const KEY_EDGE: u32 = 512;
/// Most times the colour key's ground model is corrected by the ground its flood reached
/// and the flood run again ([`key::GroundModel::refine`]).
const REFINE_ROUNDS: usize = 3;
/// Least share of a keyed product that the flood's bays ([`key::bays`]) must make up before
/// the model is asked about them ([`fill_bays`]).
const BAY_SHARE: f32 = 0.03;
/// Least share of a keyed product that shadow-like cells reached from the ground
/// ([`clear_shadows`]) must make up before the model is asked about them.
const SHADOW_SHARE: f32 = 0.01;
/// Least darkening (a share of the ground's colour) somewhere in a shadow taken out.
const SHADOW_DEPTH: f32 = 0.1;

/// How a cut-out was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// The photo's own transparency.
    SourceAlpha,
    /// Keyed on a flat or smoothly varying border colour.
    ColourKey,
    /// U²-Net-P's saliency map.
    Model,
}

impl Method {
    /// The name stored and shown (`source_alpha`, `colour_key`, `model`).
    pub fn as_str(self) -> &'static str {
        match self {
            Method::SourceAlpha => "source_alpha",
            Method::ColourKey => "colour_key",
            Method::Model => "model",
        }
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why no cut-out was made; the `Display` text says it to a person (a progress message,
/// an API error) and what would help.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "refused", rename_all = "snake_case")]
pub enum Refusal {
    /// The mask holds (almost) nothing: no product stands out.
    #[error(
        "no product stands out of the photo (the mask covers {:.1} % of it); use a photo of the product on a plain or uncluttered background",
        coverage * 100.0
    )]
    Empty { coverage: f32 },
    /// The mask covers more than 95 % of the photo: it is all product, or nothing could be
    /// told apart from the background.
    #[error(
        "the mask covers {:.0} % of the photo, so the product cannot be told from its background; use a photo with space around the product",
        coverage * 100.0
    )]
    FillsFrame { coverage: f32 },
    /// The mask falls apart into many pieces.
    #[error(
        "the mask falls apart into {parts} separate parts, not one product; use a photo of the product alone"
    )]
    Scattered { parts: usize },
    /// The picture is one colour all over, or nearly (noise, grain): it holds no object.
    #[error(
        "the image has no distinct object to cut out: it is one colour all over or nearly (its blocks differ from its median colour by at most {:.1} % of the colour range); upload a photo of the product on a plain ground",
        spread * 100.0
    )]
    Featureless { spread: f32 },
    /// The model is sure of no object in the picture: its probabilities stay undecided, or
    /// too little of the picture is surely the subject (a blank or blurred picture, a
    /// texture).
    #[error(
        "the image has no distinct object to cut out: the cut-out model is sure of only {:.1} % of it as an object; upload a photo of the product on a plain ground",
        sure * 100.0
    )]
    Unsure { sure: f32 },
    /// The border is not one flat colour and the model is not installed.
    #[error(
        "the photo's border is not one flat colour and the cut-out model (U²-Net-P) is not installed on this server; an operator runs scripts/fetch-models and restarts it"
    )]
    NoModel,
    /// The model failed to run (a bug or a damaged weights file).
    #[error("the cut-out model failed: {0}")]
    Model(String),
}

impl Refusal {
    /// Whether the refusal says the picture has no distinct object at all (empty mask,
    /// featureless picture, unsure model), rather than an object that could not be cut.
    pub fn no_subject(&self) -> bool {
        matches!(
            self,
            Refusal::Empty { .. } | Refusal::Featureless { .. } | Refusal::Unsure { .. }
        )
    }
}

/// A cut-out product.
#[derive(Debug, Clone)]
pub struct Cutout {
    /// The product with alpha, trimmed to what is visible; at most [`matte::MAX_EDGE`] on
    /// its long edge.
    pub image: RgbaImage,
    /// How the mask was made.
    pub method: Method,
    /// `(x, y, width, height)` of the cut-out in the photo's pixels.
    pub source_box: [u32; 4],
    /// How long each step took.
    pub timings: Timings,
}

/// How long the steps of one cut-out took (logged, and printed by `scripts/bench-cutout`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timings {
    /// Shrinking the photo to the working copy and looking for its own transparency.
    pub shrink: Duration,
    /// The coarse mask and its sanity check: the colour key, or the model (its input
    /// resized to 320x320, the network, min–max scaling).
    pub mask: Duration,
    /// Of `mask`, the model's part (zero when the model did not run).
    pub model: Duration,
    /// Cutting at the output scale: crop, alpha, feather, edge colours, trim.
    pub matte: Duration,
}

/// Makes cut-outs. One per process, shared: it holds the model when it is installed (about
/// 17 MB of weights in its convolutions' layouts, `U2Net::weight_bytes`).
#[derive(Debug, Clone, Default)]
pub struct Cutter {
    segmenter: Option<Arc<SalientSegmenter>>,
}

impl Cutter {
    /// A cutter with `segmenter` (or none: colour key and source alpha only).
    pub fn new(segmenter: Option<Arc<SalientSegmenter>>) -> Self {
        Cutter { segmenter }
    }

    /// Loads U²-Net-P from `models_dir/u2netp`; without the weights the cutter keys flat
    /// grounds only, and says so in the log.
    pub fn load(models_dir: &Path) -> Self {
        let dir = models_dir.join(adforge_models::U2NETP_DIR);
        match SalientSegmenter::load(&dir) {
            Ok(s) => {
                tracing::info!(model = SalientSegmenter::MODEL_ID, "cut-out model loaded");
                Cutter::new(Some(Arc::new(s)))
            }
            Err(e) => {
                tracing::warn!(error = %e, "cut-out model not loaded: only photos on a flat ground are cut out (scripts/fetch-models installs it)");
                Cutter::new(None)
            }
        }
    }

    /// Whether the model is loaded.
    pub fn has_model(&self) -> bool {
        self.segmenter.is_some()
    }

    /// Cuts the product out of `photo` (see the module docs for the paths).
    ///
    /// # Errors
    /// A [`Refusal`] when no path applies or the mask fails the sanity check.
    pub fn cut(&self, photo: &DynamicImage) -> Result<Cutout, Refusal> {
        let (w, h) = (photo.width(), photo.height());
        if w == 0 || h == 0 {
            return Err(Refusal::Empty { coverage: 0.0 });
        }
        let mut timings = Timings::default();
        let started = Instant::now();
        let work = shrink(photo, KEY_EDGE);
        let alpha = source_alpha(&work);
        timings.shrink = started.elapsed();
        if let Some(mut coarse) = alpha {
            coarse.check()?;
            return finish(
                photo,
                &coarse,
                Fine::SourceAlpha,
                Method::SourceAlpha,
                timings,
            );
        }
        let started = Instant::now();
        let work_rgb = DynamicImage::ImageRgba8(work).to_rgb8();
        let spread = subject::flatness(&work_rgb);
        if spread < subject::FLAT_SPREAD {
            return Err(Refusal::Featureless { spread });
        }
        let keyed = GroundModel::fit(&work_rgb).map(|mut ground| {
            let (ww, wh) = (work_rgb.width() as usize, work_rgb.height() as usize);
            // Plain ground: the key is 0 (the colour within the border's noise).
            let flood = |ground: &GroundModel| {
                let plain: Vec<bool> = ground.mask(&work_rgb).iter().map(|k| *k <= 0.0).collect();
                ground_reaching_border(&plain, ww, wh)
            };
            let mut outside = flood(&ground);
            // The ground the flood reached corrects the model, and the flood goes on from
            // there (a backlit spot behind the product that the border does not show).
            for _ in 0..REFINE_ROUNDS {
                ground.refine(&work_rgb, &outside);
                let mut grew = false;
                for (o, more) in outside.iter_mut().zip(flood(&ground)) {
                    grew |= more && !*o;
                    *o |= more;
                }
                if !grew {
                    break;
                }
            }
            let soft: Vec<f32> = outside.iter().map(|o| if *o { 0.0 } else { 1.0 }).collect();
            let mut coarse = Coarse::from_soft(ww, wh, soft);
            coarse.check().and_then(|()| {
                if let Some(segmenter) = &self.segmenter {
                    let mut model = ModelCheck::new(segmenter, &work_rgb);
                    fill_bays(&mut model, &mut coarse);
                    clear_shadows(&mut model, &ground, &work_rgb, &mut coarse);
                    timings.model = model.time;
                }
                timings.mask = started.elapsed();
                finish(
                    photo,
                    &coarse,
                    Fine::Key(&ground),
                    Method::ColourKey,
                    timings,
                )
            })
        });
        // A keyed mask that fails the check gets a second chance from the model.
        let refused = match keyed {
            Some(Ok(cutout)) => return Ok(cutout),
            Some(Err(why)) => Some(why),
            None => None,
        };
        let Some(segmenter) = &self.segmenter else {
            return Err(refused.unwrap_or(Refusal::NoModel));
        };
        let size = segmenter.input_size();
        let model_started = Instant::now();
        let input: RgbImage = squash(&work_rgb, size);
        let map = segmenter
            .saliency(&input)
            .map_err(|e| Refusal::Model(e.to_string()))?;
        timings.model = model_started.elapsed();
        let confidence = subject::confidence(&map);
        if !confidence.holds() {
            return Err(Refusal::Unsure {
                sure: confidence.sure,
            });
        }
        let side = map.size as usize;
        let mut coarse = Coarse::from_soft(side, side, map.values);
        coarse.check()?;
        timings.mask = started.elapsed();
        finish(photo, &coarse, Fine::Saliency, Method::Model, timings)
    }
}

/// The model's saliency map of the working copy, asked for at most once, when a check of
/// the keyed mask needs it; `None` when the model fails or is unsure of the picture (the
/// keyed mask then stays as it was).
struct ModelCheck<'a> {
    segmenter: &'a SalientSegmenter,
    work: &'a RgbImage,
    map: Option<Option<adforge_models::SaliencyMap>>,
    time: Duration,
}

impl<'a> ModelCheck<'a> {
    fn new(segmenter: &'a SalientSegmenter, work: &'a RgbImage) -> Self {
        ModelCheck {
            segmenter,
            work,
            map: None,
            time: Duration::ZERO,
        }
    }

    /// The saliency at cell `i` of a `w` x `h` grid, for every cell of `cells`.
    fn saliency(&mut self, cells: &[bool], w: usize, h: usize) -> Option<Vec<f32>> {
        if self.map.is_none() {
            let started = Instant::now();
            self.map = Some(
                match self
                    .segmenter
                    .saliency(&squash(self.work, self.segmenter.input_size()))
                {
                    Ok(map) if subject::confidence(&map).holds() => Some(map),
                    Ok(_) => None,
                    Err(e) => {
                        tracing::debug!(error = %e, "the model could not check the keyed mask");
                        None
                    }
                },
            );
            self.time += started.elapsed();
        }
        let map = self.map.as_ref()?.as_ref()?;
        let side = map.size as usize;
        let at = |t: usize, n: usize| {
            (((t as f32 + 0.5) * side as f32 / n as f32) as usize).min(side - 1)
        };
        Some(
            (0..w * h)
                .map(|i| {
                    if cells[i] {
                        map.values[at(i / w, h) * side + at(i % w, w)]
                    } else {
                        0.0
                    }
                })
                .collect(),
        )
    }
}

/// Gives back to a keyed mask the cells the flood took from inside the product
/// ([`key::bays`]) where the model sees the product, when those cells are at least
/// [`BAY_SHARE`] of the product: where a white body meets a near-white ground (or a dark
/// one black), nothing in the colours stops the flood, while the model sees the body's
/// shading and outline. The model runs only then.
fn fill_bays(model: &mut ModelCheck<'_>, coarse: &mut Coarse) {
    let (w, h) = (coarse.w, coarse.h);
    let bay = key::bays(&coarse.keep, w, h);
    let taken = bay.iter().filter(|b| **b).count();
    let kept = coarse.keep.iter().filter(|k| **k).count();
    if (taken as f32) < BAY_SHARE * kept as f32 {
        return;
    }
    let Some(seen) = model.saliency(&bay, w, h) else {
        return;
    };
    for i in 0..w * h {
        if bay[i] && seen[i] >= 0.5 {
            coarse.keep[i] = true;
            coarse.soft[i] = 1.0;
        }
    }
}

/// Takes out of a keyed mask the shadow on the ground: product cells that are the ground
/// darkened ([`key::GroundModel::shade`]), reached from the ground through such cells
/// darkening step by step ([`key::shadow_reach`]), where the model does not see the product, when they are at least
/// [`SHADOW_SHARE`] of the product. The colours alone cannot tell a shadow from a shaded
/// white body or a grey cap, so the model decides.
fn clear_shadows(
    model: &mut ModelCheck<'_>,
    ground: &GroundModel,
    work: &RgbImage,
    coarse: &mut Coarse,
) {
    let (w, h) = (coarse.w, coarse.h);
    let shade: Vec<Option<f32>> = (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            let c = work.get_pixel(x as u32, y as u32).0.map(f32::from);
            ground.shade(c, (x as f32 + 0.5) / w as f32, (y as f32 + 0.5) / h as f32)
        })
        .collect();
    let outside: Vec<bool> = coarse.keep.iter().map(|k| !k).collect();
    let reached = key::shadow_reach(&outside, &shade, w, h);
    let mut candidates: Vec<bool> = (0..w * h).map(|i| reached[i] && coarse.keep[i]).collect();
    // A shadow worth the name darkens the ground by [`SHADOW_DEPTH`] somewhere; a pale part
    // of the product a step off the ground (a light grey lid on grey) does not.
    for part in mask::components(&candidates, w, h) {
        let darkest = part
            .iter()
            .filter_map(|i| shade[*i])
            .fold(f32::INFINITY, f32::min);
        if darkest > 1.0 - SHADOW_DEPTH {
            for i in part {
                candidates[i] = false;
            }
        }
    }
    let n = candidates.iter().filter(|c| **c).count();
    let kept = coarse.keep.iter().filter(|k| **k).count();
    if (n as f32) < SHADOW_SHARE * kept as f32 {
        return;
    }
    let Some(seen) = model.saliency(&candidates, w, h) else {
        return;
    };
    for i in 0..w * h {
        if candidates[i] && seen[i] < 0.5 {
            coarse.keep[i] = false;
            coarse.soft[i] = 0.0;
            coarse.cleared[i] = true;
        }
    }
}

/// The cut-out from a checked coarse mask, timed.
fn finish(
    photo: &DynamicImage,
    coarse: &Coarse,
    fine: Fine<'_>,
    method: Method,
    mut timings: Timings,
) -> Result<Cutout, Refusal> {
    let started = Instant::now();
    let m = matte(photo, coarse, fine)?;
    timings.matte = started.elapsed();
    tracing::debug!(
        %method,
        shrink_ms = timings.shrink.as_secs_f64() * 1e3,
        mask_ms = timings.mask.as_secs_f64() * 1e3,
        model_ms = timings.model.as_secs_f64() * 1e3,
        matte_ms = timings.matte.as_secs_f64() * 1e3,
        "cut-out made"
    );
    Ok(Cutout {
        image: m.image,
        method,
        source_box: m.source_box,
        timings,
    })
}

/// `photo` as RGBA with its long edge at most `edge` (bilinear; never enlarged).
fn shrink(photo: &DynamicImage, edge: u32) -> RgbaImage {
    let (w, h) = (photo.width(), photo.height());
    let scale = (f64::from(edge) / f64::from(w.max(h))).min(1.0);
    if scale >= 1.0 {
        return photo.to_rgba8();
    }
    let tw = ((f64::from(w) * scale).round() as u32).max(1);
    let th = ((f64::from(h) * scale).round() as u32).max(1);
    let mut dst = DynamicImage::new(tw, th, photo.color());
    let opts = fast_image_resize::ResizeOptions::new().resize_alg(
        fast_image_resize::ResizeAlg::Convolution(fast_image_resize::FilterType::Bilinear),
    );
    match fast_image_resize::Resizer::new().resize(photo, &mut dst, &opts) {
        Ok(()) => dst.into_rgba8(),
        Err(_) => image::imageops::resize(
            &photo.to_rgba8(),
            tw,
            th,
            image::imageops::FilterType::Triangle,
        ),
    }
}

/// `img` resized to `size` x `size` (the model's squashed input, as rembg feeds it).
fn squash(img: &RgbImage, size: u32) -> RgbImage {
    if img.dimensions() == (size, size) {
        return img.clone();
    }
    let mut dst = RgbImage::new(size, size);
    let opts = fast_image_resize::ResizeOptions::new().resize_alg(
        fast_image_resize::ResizeAlg::Convolution(fast_image_resize::FilterType::Lanczos3),
    );
    match fast_image_resize::Resizer::new().resize(img, &mut dst, &opts) {
        Ok(()) => dst,
        Err(_) => image::imageops::resize(img, size, size, image::imageops::FilterType::Lanczos3),
    }
}

/// The photo's own alpha as a coarse mask, when it has transparency around the product:
/// most of its border at least half transparent.
fn source_alpha(work: &RgbaImage) -> Option<Coarse> {
    let (w, h) = (work.width() as usize, work.height() as usize);
    let alpha: Vec<f32> = work.pixels().map(|p| f32::from(p.0[3]) / 255.0).collect();
    let border: Vec<f32> = (0..w * h)
        .filter(|i| {
            let (x, y) = (i % w, i / w);
            x == 0 || y == 0 || x + 1 == w || y + 1 == h
        })
        .map(|i| alpha[i])
        .collect();
    let clear = border.iter().filter(|a| **a < 0.5).count();
    (clear * 2 > border.len()).then(|| Coarse::from_soft(w, h, alpha))
}

/// Encodes a cut-out as PNG (fast compression: cut-outs are made on the request path).
///
/// # Errors
/// The encoder's message.
pub fn encode_png(image: &RgbaImage) -> Result<Vec<u8>, String> {
    use image::ImageEncoder;
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new_with_quality(
        &mut out,
        image::codecs::png::CompressionType::Fast,
        image::codecs::png::FilterType::Adaptive,
    )
    .write_image(
        image.as_raw(),
        image.width(),
        image.height(),
        image::ExtendedColorType::Rgba8,
    )
    .map_err(|e| e.to_string())?;
    Ok(out)
}
