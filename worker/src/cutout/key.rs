//! The cheap path: a photo whose border is one flat colour, or a smooth studio sweep, is cut
//! out by keying on that ground, with no model.
//!
//! The ground is modelled from the border ring alone: each side's colour profile is the
//! median of [`SEGMENTS`] stretches of the ring, and the ground at any point is the Coons
//! patch of the four profiles (each side's profile blended across the picture, less the
//! corners counted twice): one colour for a flat packshot, a smooth field for a studio
//! sweep or a vignette. The border qualifies when nearly every ring pixel lies close to the
//! model and the whole ring spans a small range of colours; a photo whose border shows
//! texture, objects or a wide range of colours (a street, a table, a bokeh background) goes
//! to the model instead.
//!
//! A pixel's key is its colour distance to the ground model there, ramped between a
//! threshold just above the border's own noise and a little more, so anti-aliased edges get
//! partial values. Pixels enclosed by the product (a white label on a white ground) are kept
//! by flooding the ground from the border: only ground that reaches the border is cut away.
//!
//! Rejected alternative: a single border colour with a fixed tolerance. Studio photos are
//! rarely one colour edge to edge (a sweep darkens towards the top, a vignette towards the
//! corners), and a tolerance wide enough for the sweep eats the product's pale edges.

use image::RgbImage;

/// Stretches each side's profile is measured in.
const SEGMENTS: usize = 16;
/// Share of ring pixels that must lie near the ground model.
const MIN_AGREEMENT: f32 = 0.95;
/// Largest colour distance (0..1) between any two points of the border profile: a flat
/// ground or a studio sweep, not a scene.
const MAX_SPAN: f32 = 0.25;
/// A ring pixel lies near the model within this distance (0..1).
const NEAR: f32 = 0.06;

/// Euclidean RGB distance scaled to 0..1 (the blueprint's measure).
pub(crate) fn dist(a: [f32; 3], b: [f32; 3]) -> f32 {
    let d: f32 = (0..3).map(|k| (a[k] - b[k]).powi(2)).sum();
    d.sqrt() / 441.7
}

fn rgb(p: &image::Rgb<u8>) -> [f32; 3] {
    p.0.map(f32::from)
}

/// The ground of a photo whose border is flat or a smooth sweep.
#[derive(Debug, Clone)]
pub(crate) struct GroundModel {
    /// Profiles along x (top, bottom) and along y (left, right), [`SEGMENTS`] points each,
    /// at the stretches' centres.
    top: Vec<[f32; 3]>,
    bottom: Vec<[f32; 3]>,
    left: Vec<[f32; 3]>,
    right: Vec<[f32; 3]>,
    /// Where a pixel starts to count as product (0..1 colour distance) and where it fully
    /// does.
    pub low: f32,
    pub high: f32,
}

/// Piecewise-linear value of `profile` (points at the centres of equal stretches) at `t`
/// in 0..1.
fn sample(profile: &[[f32; 3]], t: f32) -> [f32; 3] {
    let n = profile.len();
    let x = (t * n as f32 - 0.5).clamp(0.0, (n - 1) as f32);
    let i = (x.floor() as usize).min(n - 1);
    let j = (i + 1).min(n - 1);
    let f = x - i as f32;
    let (a, b) = (profile[i], profile[j]);
    [0, 1, 2].map(|k| a[k] + (b[k] - a[k]) * f)
}

fn median(mut v: Vec<f32>) -> f32 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}

impl GroundModel {
    /// The ground model of `img` (a working copy, a few hundred pixels), or `None` when its
    /// border is not a flat colour or smooth sweep (see the module docs).
    pub(crate) fn fit(img: &RgbImage) -> Option<GroundModel> {
        let (w, h) = (img.width() as usize, img.height() as usize);
        if w < 16 || h < 16 {
            return None;
        }
        let ring = (w.min(h) / 64).max(2);
        // One side's profile: the median colour of each stretch of its ring.
        let profile = |along: usize, pixel: &dyn Fn(usize, usize) -> [f32; 3]| {
            (0..SEGMENTS)
                .map(|s| {
                    let (a, b) = (
                        s * along / SEGMENTS,
                        ((s + 1) * along / SEGMENTS).max(s * along / SEGMENTS + 1),
                    );
                    let mut ch: [Vec<f32>; 3] = Default::default();
                    for t in a..b.min(along) {
                        for depth in 0..ring {
                            let c = pixel(t, depth);
                            for k in 0..3 {
                                ch[k].push(c[k]);
                            }
                        }
                    }
                    let [r, g, b] = ch;
                    [median(r), median(g), median(b)]
                })
                .collect::<Vec<_>>()
        };
        let px = |x: usize, y: usize| rgb(img.get_pixel(x as u32, y as u32));
        let top = profile(w, &|t, d| px(t, d));
        let bottom = profile(w, &|t, d| px(t, h - 1 - d));
        let left = profile(h, &|t, d| px(d, t));
        let right = profile(h, &|t, d| px(w - 1 - d, t));
        let all: Vec<[f32; 3]> = [&top, &bottom, &left, &right]
            .into_iter()
            .flatten()
            .copied()
            .collect();
        let span = all
            .iter()
            .flat_map(|a| all.iter().map(move |b| dist(*a, *b)))
            .fold(0f32, f32::max);
        if span > MAX_SPAN {
            return None;
        }
        let mut model = GroundModel {
            top,
            bottom,
            left,
            right,
            low: 0.0,
            high: 0.0,
        };
        // Every ring pixel against the model: most must be near it.
        let mut residuals = Vec::with_capacity(2 * ring * (w + h));
        for y in 0..h {
            for x in 0..w {
                if x >= ring && y >= ring && x + ring < w && y + ring < h {
                    continue;
                }
                let g = model.at((x as f32 + 0.5) / w as f32, (y as f32 + 0.5) / h as f32);
                residuals.push(dist(px(x, y), g));
            }
        }
        let near = residuals.iter().filter(|r| **r <= NEAR).count();
        if (near as f32) < MIN_AGREEMENT * residuals.len() as f32 {
            return None;
        }
        residuals.sort_by(f32::total_cmp);
        let noise = residuals[residuals.len() * 9 / 10];
        model.low = (2.0 * noise + 0.01).max(0.035);
        model.high = model.low + 0.06;
        Some(model)
    }

    /// The ground's colour at `(u, v)` in the unit square: the Coons patch of the four
    /// border profiles.
    pub(crate) fn at(&self, u: f32, v: f32) -> [f32; 3] {
        let (t, b) = (sample(&self.top, u), sample(&self.bottom, u));
        let (l, r) = (sample(&self.left, v), sample(&self.right, v));
        let (tl, tr) = (sample(&self.top, 0.0), sample(&self.top, 1.0));
        let (bl, br) = (sample(&self.bottom, 0.0), sample(&self.bottom, 1.0));
        [0, 1, 2].map(|k| {
            let ruled_v = (1.0 - v) * t[k] + v * b[k];
            let ruled_u = (1.0 - u) * l[k] + u * r[k];
            let bilinear = (1.0 - u) * (1.0 - v) * tl[k]
                + u * (1.0 - v) * tr[k]
                + (1.0 - u) * v * bl[k]
                + u * v * br[k];
            (ruled_v + ruled_u - bilinear).clamp(0.0, 255.0)
        })
    }

    /// How much a pixel of colour `c` at `(u, v)` is product: 0 on the ground, 1 from
    /// [`GroundModel::high`] away from it.
    pub(crate) fn key(&self, c: [f32; 3], u: f32, v: f32) -> f32 {
        let d = dist(c, self.at(u, v));
        ((d - self.low) / (self.high - self.low)).clamp(0.0, 1.0)
    }

    /// The keyed mask of `img` (the working copy the model was fitted on), one value per
    /// pixel, row by row.
    pub(crate) fn mask(&self, img: &RgbImage) -> Vec<f32> {
        let (w, h) = (img.width() as usize, img.height() as usize);
        let mut out = Vec::with_capacity(w * h);
        for y in 0..h {
            let v = (y as f32 + 0.5) / h as f32;
            for x in 0..w {
                let u = (x as f32 + 0.5) / w as f32;
                out.push(self.key(rgb(img.get_pixel(x as u32, y as u32)), u, v));
            }
        }
        out
    }

    /// The colour the ground has at `(u, v)`, as 8-bit RGB.
    pub(crate) fn colour(&self, u: f32, v: f32) -> [u8; 3] {
        self.at(u, v).map(|c| c.round() as u8)
    }
}

/// Which pixels of a keyed mask are ground: those below one half that connect to the
/// border through other such pixels (4-connected). Everything else is product, holes
/// included.
pub(crate) fn ground_reaching_border(mask: &[f32], w: usize, h: usize) -> Vec<bool> {
    let mut ground = vec![false; w * h];
    let mut stack = Vec::new();
    for y in 0..h {
        for x in 0..w {
            if (x == 0 || y == 0 || x + 1 == w || y + 1 == h) && mask[y * w + x] < 0.5 {
                ground[y * w + x] = true;
                stack.push((x, y));
            }
        }
    }
    while let Some((x, y)) = stack.pop() {
        let mut visit = |nx: usize, ny: usize| {
            let j = ny * w + nx;
            if !ground[j] && mask[j] < 0.5 {
                ground[j] = true;
                stack.push((nx, ny));
            }
        };
        if x > 0 {
            visit(x - 1, y);
        }
        if y > 0 {
            visit(x, y - 1);
        }
        if x + 1 < w {
            visit(x + 1, y);
        }
        if y + 1 < h {
            visit(x, y + 1);
        }
    }
    ground
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bottle_on(ground: impl Fn(u32, u32) -> [u8; 3]) -> RgbImage {
        RgbImage::from_fn(300, 200, |x, y| {
            let inside = (120..180).contains(&x) && (40..180).contains(&y);
            image::Rgb(if inside { [160, 60, 30] } else { ground(x, y) })
        })
    }

    #[test]
    fn a_flat_ground_and_a_sweep_are_keyed_a_scene_is_not() {
        let flat = GroundModel::fit(&bottle_on(|_, _| [250, 250, 250])).unwrap();
        assert!(flat.key([250.0; 3], 0.1, 0.1) == 0.0);
        assert!(flat.key([160.0, 60.0, 30.0], 0.5, 0.5) == 1.0);

        // A grey studio sweep: lighter at the bottom.
        let sweep = GroundModel::fit(&bottle_on(|_, y| {
            let g = 170 + (y * 60 / 200) as u8;
            [g, g, g]
        }))
        .unwrap();
        assert!(
            sweep.key([200.0; 3], 0.3, 0.5) < 0.01,
            "the sweep's middle is ground"
        );

        // Stripes of many colours along the border: not a ground.
        let scene = bottle_on(|x, y| [((x * 37) % 255) as u8, ((y * 53) % 255) as u8, 90]);
        assert!(GroundModel::fit(&scene).is_none());
    }

    #[test]
    fn an_enclosed_hole_is_product() {
        // A ring of product around a hole of ground colour.
        let (w, h) = (20usize, 20usize);
        let mask: Vec<f32> = (0..w * h)
            .map(|i| {
                let (x, y) = ((i % w) as i32 - 10, (i / w) as i32 - 10);
                let r2 = x * x + y * y;
                if (9..49).contains(&r2) { 1.0 } else { 0.0 }
            })
            .collect();
        let ground = ground_reaching_border(&mask, w, h);
        assert!(ground[0], "the corner is ground");
        assert!(!ground[10 * w + 10], "the enclosed centre is not");
    }
}
