//! Whether a picture holds a distinct object at all, asked twice: of the picture before any
//! mask is made ([`flatness`]), and of the model's saliency map after it ran
//! ([`confidence`]).
//!
//! Both guard against the same failure: every path that makes a mask finds *something*. The
//! colour key finds nothing on a blank picture and says so, but the model is then asked for
//! a second opinion, and U²-Net-P's output is min–max scaled (as rembg does): on an
//! all-black picture the network answers a faint, smooth blob of probabilities around
//! 0.1, which the scaling stretches into a confident-looking ellipse. Issue 39 found exactly
//! that: a 16384x3000 black image cut out "by the model" into a black ellipse.
//!
//! - Before the mask: a picture whose colours, averaged over 8 x 8 blocks of the working
//!   copy (so sensor noise and grain average out), all lie within [`FLAT_SPREAD`] of its
//!   median colour, except at most [`super::mask::MIN_COVERAGE`] of the blocks (a product
//!   smaller than that is refused anyway), has nothing to cut out. It is refused before the
//!   model runs.
//! - After the model: its own probabilities (before the scaling, [`SaliencyMap::raw_low`]
//!   and `raw_high`) must reach [`SURE`] on at least [`MIN_SURE_SHARE`] of the map, and the
//!   undecided values ([`UNSURE_LOW`]..[`SURE`]) must not outnumber the sure ones
//!   [`MAX_UNSURE_PER_SURE`] to one: a real subject comes out of U²-Net-P nearly saturated,
//!   with a thin undecided rim.
//!
//! What U²-Net-P answers (320 px input, its probabilities before the scaling; measured on
//! this build, 2026-11-28): on blank, noisy and gradient pictures its greatest
//! probability is 0.0015–0.058 (black 0.058: the scaled map then shows an ellipse over
//! 1.2 % of the frame, enough for the mask's sanity check), so nothing reaches [`SURE`];
//! on photos with a subject it reaches 0.999–1.0, sure of 1.7 % (the small rocket of
//! `rocket.jpg`) to 59 % (`chelsea.png`) of the map, with 0.02–0.65 undecided values per
//! sure one (`coffee.png` 0.02, `chelsea.png` 0.25, `rocket.jpg` 0.65).
//!
//! Rejected alternative: a threshold on the scaled map's shape (an ellipse, a centred
//! blob). A centred product is often an ellipse-like blob too; the network's own certainty
//! tells the two apart, the shape does not.

use adforge_models::SaliencyMap;
use image::RgbImage;

use super::key::dist;
use super::mask::MIN_COVERAGE;

/// Side of the blocks the picture is averaged over before its spread is measured (working
/// copy pixels, at most 512 on the long edge).
const BLOCK: u32 = 8;

/// Largest colour distance (0..1, [`dist`]; a grey step of `d` levels is about `d / 255`)
/// between the picture's blocks and its median colour for it to count as blank: about 10
/// grey levels. A white mug on white still differs by more where its shadow falls (20 and
/// more levels); uniform noise of ±12 levels averages to ±1 to 4 levels over a block.
pub const FLAT_SPREAD: f32 = 0.04;

/// A probability the model is sure of as the subject.
pub const SURE: f32 = 0.8;
/// Below this the model says "not the subject"; between it and [`SURE`] it is undecided.
pub const UNSURE_LOW: f32 = 0.2;
/// Least share of the map the model must be sure of: the product's least size
/// ([`MIN_COVERAGE`]).
pub const MIN_SURE_SHARE: f32 = MIN_COVERAGE;
/// Most undecided values per sure one.
pub const MAX_UNSURE_PER_SURE: f32 = 1.5;

/// How far the picture's colours spread (0..1, [`dist`]): the distance from its median
/// colour that all but [`MIN_COVERAGE`] of its 8 x 8 blocks stay within.
pub(crate) fn flatness(img: &RgbImage) -> f32 {
    let (w, h) = img.dimensions();
    if w == 0 || h == 0 {
        return 0.0;
    }
    let mut blocks: Vec<[f32; 3]> = Vec::new();
    for by in (0..h).step_by(BLOCK as usize) {
        for bx in (0..w).step_by(BLOCK as usize) {
            let (mut sum, mut n) = ([0.0f32; 3], 0.0f32);
            for y in by..(by + BLOCK).min(h) {
                for x in bx..(bx + BLOCK).min(w) {
                    let p = img.get_pixel(x, y).0;
                    for k in 0..3 {
                        sum[k] += f32::from(p[k]);
                    }
                    n += 1.0;
                }
            }
            blocks.push(sum.map(|s| s / n));
        }
    }
    let median = [0, 1, 2].map(|k| {
        let mut ch: Vec<f32> = blocks.iter().map(|b| b[k]).collect();
        ch.sort_by(f32::total_cmp);
        ch[ch.len() / 2]
    });
    let mut d: Vec<f32> = blocks.iter().map(|b| dist(*b, median)).collect();
    d.sort_by(f32::total_cmp);
    let at = ((d.len() as f32 * (1.0 - MIN_COVERAGE)).floor() as usize).min(d.len() - 1);
    d[at]
}

/// What the model was sure of in `map`: the share of it at or above [`SURE`], and the
/// undecided values per sure one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Confidence {
    pub sure: f32,
    pub unsure_per_sure: f32,
}

impl Confidence {
    /// Whether the map shows a subject the model is sure of (see the module docs).
    pub(crate) fn holds(self) -> bool {
        self.sure >= MIN_SURE_SHARE && self.unsure_per_sure <= MAX_UNSURE_PER_SURE
    }
}

/// The model's confidence in `map`, read from its probabilities before the scaling.
pub(crate) fn confidence(map: &SaliencyMap) -> Confidence {
    let span = map.raw_high - map.raw_low;
    let n = map.values.len().max(1) as f32;
    let (mut sure, mut unsure) = (0usize, 0usize);
    for v in &map.values {
        let p = map.raw_low + v * span;
        if p >= SURE {
            sure += 1;
        } else if p >= UNSURE_LOW {
            unsure += 1;
        }
    }
    Confidence {
        sure: sure as f32 / n,
        unsure_per_sure: if sure == 0 {
            f32::INFINITY
        } else {
            unsure as f32 / sure as f32
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::Rgb;

    #[test]
    fn a_blank_or_noisy_picture_is_flat_and_a_product_is_not() {
        assert_eq!(
            flatness(&RgbImage::from_pixel(512, 94, Rgb([0, 0, 0]))),
            0.0
        );
        let mut k: u32 = 0x9E37_79B9;
        let mut next = move || {
            k ^= k << 13;
            k ^= k >> 17;
            k ^= k << 5;
            k
        };
        let noise = RgbImage::from_fn(512, 512, |_, _| {
            let v = 116 + (next() % 25) as u8;
            Rgb([v, v, v])
        });
        assert!(flatness(&noise) < FLAT_SPREAD, "{}", flatness(&noise));
        // A faint grey product (20 levels under white) of 2 % of the frame is not flat.
        let faint = RgbImage::from_fn(512, 512, |x, y| {
            let inside = (230..300).contains(&x) && (220..300).contains(&y);
            if inside {
                Rgb([235, 235, 235])
            } else {
                Rgb([255, 255, 255])
            }
        });
        assert!(flatness(&faint) > FLAT_SPREAD, "{}", flatness(&faint));
    }

    #[test]
    fn the_model_must_be_sure_of_enough_of_the_map() {
        let map = |raw: &dyn Fn(usize) -> f32| {
            let raw: Vec<f32> = (0..100 * 100).map(raw).collect();
            let (lo, hi) = raw
                .iter()
                .fold((f32::MAX, f32::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
            SaliencyMap {
                size: 100,
                values: raw.iter().map(|v| (v - lo) / (hi - lo)).collect(),
                raw_low: lo,
                raw_high: hi,
            }
        };
        // A saturated subject with a thin rim.
        let subject = confidence(&map(&|i| {
            let (x, y) = ((i % 100) as f32 - 50.0, (i / 100) as f32 - 50.0);
            let r = (x * x + y * y).sqrt();
            (1.0 - (r - 25.0) / 3.0).clamp(0.01, 0.99)
        }));
        assert!(subject.holds(), "{subject:?}");
        // A faint blob: scaled, it looks the same; the model was sure of none of it.
        let faint = confidence(&map(&|i| {
            let (x, y) = ((i % 100) as f32 - 50.0, (i / 100) as f32 - 50.0);
            0.05 + 0.1 * (-(x * x + y * y) / 800.0).exp()
        }));
        assert!(!faint.holds(), "{faint:?}");
        // A wide undecided haze around a small sure core.
        let haze = confidence(&map(&|i| {
            let (x, y) = ((i % 100) as f32 - 50.0, (i / 100) as f32 - 50.0);
            let r = (x * x + y * y).sqrt();
            if r < 6.0 {
                0.95
            } else if r < 35.0 {
                0.5
            } else {
                0.02
            }
        }));
        assert!(!haze.holds(), "{haze:?}");
    }
}
