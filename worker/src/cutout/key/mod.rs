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
//! threshold just above the border's own noise ([`GroundModel::low`]) and a little more.
//! What is cut away is only the ground that reaches the border ([`ground_reaching_border`]),
//! flooded through *plain* ground: pixels within the ramp's start, the border's own noise,
//! not within its midpoint. A pale part of the product that touches its silhouette (a
//! cream label across a jar, a light cap) lies a few hundredths from a light grey, inside
//! the ramp; a flood at the midpoint walked into it from the ground beside it and keyed it
//! away (issue 40). The flood also moves only through pixels whose 3x3 neighbourhood is
//! plain, then grows back one pixel over plain ground, so it does not pass a seam of
//! near-ground pixels narrower than three (an anti-aliased line, a highlight on a rim): the
//! product is closed before the flood. Pixels enclosed by the product (a white label on a
//! white ground) stay, as before. The soft edge is then made at the flood's boundary
//! ([`super::matte`]).
//!
//! The border does not show everything of the ground: a spot of light behind the product
//! (a vignette, a backlit sweep) is brighter than the Coons patch there, and a tight flood
//! stops at it, leaving wings of ground beside the product. So the ground the flood reached
//! corrects the model, cell by cell of [`LOCAL_CELL`] pixels, the correction spread from
//! reached cells into the rest ([`GroundModel::refine`]), and the flood runs again from
//! there, up to three rounds (`REFINE_ROUNDS` in [`super`]). The product is never reached,
//! so its colours are never learnt as ground.
//!
//! Measured on a jar drawn pixel by pixel, 1200x1000 (dark body, a cream label across it
//! touching its sides, a light cap, a soft contact shadow; generate test
//! `cutout::a_light_label_on_a_light_ground_is_kept`), mask IoU with the truth and share of
//! the label kept, before → after (the same through JPEG q80 in brackets): flat grey 0.646,
//! 13 % (0.647, 14 %) → 0.980, 100 % (0.980, 100 %); studio sweep 0.910, 90 % (0.906, 89 %)
//! → 0.982, 100 % (0.983, 100 %); a spot of light behind the jar 0.872, 71 % (0.873, 71 %)
//! → 0.981, 100 % (0.982, 100 %). The renderer's bottle on white and on a sweep stay at
//! 0.999-1.000. What still fails: the 2 % left is mostly the contact shadow, darker than
//! the ramp's start, kept with the product without the model (below); and a part of the product within the border's
//! noise of the ground (a grey cap on the same grey) goes with the ground wherever it
//! touches it. When that part lies between other parts of the product along a row or a
//! column (`bays`: the stripe of a white bag's body where its shading crosses a
//! near-white ground, from its top edge to its bottom edge), the model, when installed, is
//! asked about it and what it sees as product is given back (`fill_bays` in [`super`]);
//! on the packshot corpus (`scripts/bench-cutout-corpus`, issue 40) that took the dev
//! split's mean IoU from 0.920 to 0.949 and the product kept from 0.957 to 0.987, the
//! test split's from 0.967 to 0.968, no image worse.
//!
//! **Shadows.** A drop or contact shadow is the ground darkened by more than its noise, so
//! the key keeps it with the product (the corpus's drop shadows: test IoU 0.894, the mask
//! 11 % shadow). The colours alone cannot tell it from a shaded white body or a grey cap,
//! so two tests pick the candidates and the model decides: the pixel is the ground's own
//! colour scaled by 0.6..1 (`GroundModel::shade`), and it is reached from the ground
//! through such pixels darkening by at most `SHADOW_STEP` a pixel (`shadow_reach`: a
//! shadow fades in, a product's edge is a step), in a region that darkens the ground by
//! a tenth somewhere (a light grey lid a step off a grey ground does not); what the model
//! does not see as product there is ground (`clear_shadows` in [`super`]). On the corpus:
//! test mean IoU 0.968 → 0.993 (drop shadows 0.894 → 0.978, contact 0.963 → 0.995), dev
//! 0.949 → 0.984; the product kept moves by at most 0.7 % on any dev image (the edge of a
//! white body) and 1.9 % on one test can.
//!
//! Rejected alternative: a single border colour with a fixed tolerance. Studio photos are
//! rarely one colour edge to edge (a sweep darkens towards the top, a vignette towards the
//! corners), and a tolerance wide enough for the sweep eats the product's pale edges.
//! Rejected too: letting the flood cross pixels within the ramp's midpoint wherever the
//! colours around them run smoothly (for the spot of light): once it found one soft place
//! on a pale part's edge it took the whole part (the jar's cap on the sweep through JPEG,
//! IoU 0.944).

use image::RgbImage;

use super::mask::morph;

/// Stretches each side's profile is measured in.
const SEGMENTS: usize = 16;
/// Share of ring pixels that must lie near the ground model.
const MIN_AGREEMENT: f32 = 0.95;
/// Largest colour distance (0..1) between any two points of the border profile: a flat
/// ground or a studio sweep, not a scene.
const MAX_SPAN: f32 = 0.25;
/// A ring pixel lies near the model within this distance (0..1).
const NEAR: f32 = 0.06;
/// Side of the cells (working-copy pixels) in which the ground the flood reached corrects
/// the border's model ([`GroundModel::refine`]).
const LOCAL_CELL: usize = 16;
/// Largest correction (0..1 colour distance) of the border's model: the ground may drift
/// this far from what its border says (a backlit spot behind the product), no further.
const MAX_LOCAL: f32 = 0.12;
/// Darkest a shadow makes the ground (a share of its colour).
const SHADOW_LEAST: f32 = 0.6;
/// Most a shadow darkens the ground from one working cell to the next (a share of its
/// colour): a shadow fades out, a product's edge is a step.
const SHADOW_STEP: f32 = 0.06;

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
    /// Corrections of the border's model learnt from the ground the flood reached
    /// ([`GroundModel::refine`]), one colour offset a cell of [`LOCAL_CELL`] working-copy
    /// pixels, `local_w` x `local_h` cells (empty before any refinement), and the cells a
    /// unit of `u` and `v` spans.
    local: Vec<[f32; 3]>,
    local_w: usize,
    local_h: usize,
    cells_per_unit: (f32, f32),
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
            local: Vec::new(),
            local_w: 0,
            local_h: 0,
            cells_per_unit: (0.0, 0.0),
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
    /// border profiles, corrected by what the flood found inside ([`GroundModel::refine`]).
    pub(crate) fn at(&self, u: f32, v: f32) -> [f32; 3] {
        let border = self.border_at(u, v);
        if self.local.is_empty() {
            return border;
        }
        let (cx, cy) = self.cells_per_unit;
        let fx = (u * cx - 0.5).clamp(0.0, (self.local_w - 1) as f32);
        let fy = (v * cy - 0.5).clamp(0.0, (self.local_h - 1) as f32);
        let (x0, y0) = (fx as usize, fy as usize);
        let (x1, y1) = (
            (x0 + 1).min(self.local_w - 1),
            (y0 + 1).min(self.local_h - 1),
        );
        let (tx, ty) = (fx - x0 as f32, fy - y0 as f32);
        let cell = |x: usize, y: usize| self.local[y * self.local_w + x];
        [0, 1, 2].map(|k| {
            let top = cell(x0, y0)[k] + (cell(x1, y0)[k] - cell(x0, y0)[k]) * tx;
            let bottom = cell(x0, y1)[k] + (cell(x1, y1)[k] - cell(x0, y1)[k]) * tx;
            (border[k] + top + (bottom - top) * ty).clamp(0.0, 255.0)
        })
    }

    /// Corrects the model by the ground the flood reached (`reached`, over `img`, the
    /// working copy): each cell of [`LOCAL_CELL`] pixels a quarter or more of which was
    /// reached takes the mean offset of those pixels from the border's model (at most
    /// [`MAX_LOCAL`]); the other cells take the mean of their known neighbours, spreading
    /// inwards. Ground the border does not predict (a backlit spot behind the product, a
    /// vignette) is then near the model, while the product, never reached, is not learnt.
    pub(crate) fn refine(&mut self, img: &RgbImage, reached: &[bool]) {
        let (w, h) = (img.width() as usize, img.height() as usize);
        let (lw, lh) = (w.div_ceil(LOCAL_CELL), h.div_ceil(LOCAL_CELL));
        let mut sum = vec![[0f32; 3]; lw * lh];
        let mut count = vec![0usize; lw * lh];
        for y in 0..h {
            let v = (y as f32 + 0.5) / h as f32;
            for x in 0..w {
                if !reached[y * w + x] {
                    continue;
                }
                let u = (x as f32 + 0.5) / w as f32;
                let (c, b) = (rgb(img.get_pixel(x as u32, y as u32)), self.border_at(u, v));
                let cell = (y / LOCAL_CELL) * lw + x / LOCAL_CELL;
                for k in 0..3 {
                    sum[cell][k] += c[k] - b[k];
                }
                count[cell] += 1;
            }
        }
        let most = MAX_LOCAL * 441.7;
        let mut local: Vec<Option<[f32; 3]>> = (0..lw * lh)
            .map(|i| {
                let (cx, cy) = (i % lw, i / lw);
                let area = ((cx + 1) * LOCAL_CELL)
                    .min(w)
                    .saturating_sub(cx * LOCAL_CELL)
                    * ((cy + 1) * LOCAL_CELL)
                        .min(h)
                        .saturating_sub(cy * LOCAL_CELL);
                (count[i] * 4 >= area.max(1)).then(|| {
                    let mean = sum[i].map(|t| t / count[i] as f32);
                    let len = mean.iter().map(|t| t * t).sum::<f32>().sqrt();
                    let scale = if len > most { most / len } else { 1.0 };
                    mean.map(|t| t * scale)
                })
            })
            .collect();
        if local.iter().all(Option::is_none) {
            return;
        }
        while local.iter().any(Option::is_none) {
            let known = local.clone();
            for i in 0..lw * lh {
                if known[i].is_some() {
                    continue;
                }
                let (cx, cy) = (i % lw, i / lw);
                let (mut acc, mut n) = ([0f32; 3], 0f32);
                for ny in cy.saturating_sub(1)..=(cy + 1).min(lh - 1) {
                    for nx in cx.saturating_sub(1)..=(cx + 1).min(lw - 1) {
                        if let Some(o) = known[ny * lw + nx] {
                            for k in 0..3 {
                                acc[k] += o[k];
                            }
                            n += 1.0;
                        }
                    }
                }
                if n > 0.0 {
                    local[i] = Some(acc.map(|t| t / n));
                }
            }
        }
        self.local = local.into_iter().map(Option::unwrap_or_default).collect();
        self.local_w = lw;
        self.local_h = lh;
        self.cells_per_unit = (w as f32 / LOCAL_CELL as f32, h as f32 / LOCAL_CELL as f32);
    }

    /// The border's own model at `(u, v)`: the Coons patch of the four profiles.
    fn border_at(&self, u: f32, v: f32) -> [f32; 3] {
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
        self.ramp(dist(c, self.at(u, v)))
    }

    /// The key of a pixel `d` (0..1 colour distance) from the ground.
    pub(crate) fn ramp(&self, d: f32) -> f32 {
        ((d - self.low) / (self.high - self.low)).clamp(0.0, 1.0)
    }

    /// Whether a pixel `d` from the ground is plain ground, one the flood may cross: within
    /// the border's own noise ([`GroundModel::low`]), where the key is 0.
    pub(crate) fn plain(&self, d: f32) -> bool {
        d <= self.low
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

    /// How much of the ground's light a pixel of colour `c` at `(u, v)` holds when it looks
    /// like the ground in shadow: the ground's colour scaled by `k` in [`SHADOW_LEAST`]..1
    /// (just over 1 for the ground itself), off that line by no more than the border's
    /// noise; `None` for any other colour.
    pub(crate) fn shade(&self, c: [f32; 3], u: f32, v: f32) -> Option<f32> {
        let b = self.at(u, v);
        let bb: f32 = b.iter().map(|t| t * t).sum();
        if bb < 1.0 {
            return None;
        }
        let k = (0..3).map(|i| c[i] * b[i]).sum::<f32>() / bb;
        let off = dist(c, b.map(|t| t * k));
        ((SHADOW_LEAST..=1.05).contains(&k) && off <= self.low).then_some(k)
    }

    /// The colour the ground has at `(u, v)`, as 8-bit RGB.
    pub(crate) fn colour(&self, u: f32, v: f32) -> [u8; 3] {
        self.at(u, v).map(|c| c.round() as u8)
    }
}

/// Which pixels of a `w` x `h` grid are ground reaching the border: flooded from the
/// border's plain pixels (see [`flood_ground`]). Everything else is product, holes and
/// pale parts included.
pub(crate) fn ground_reaching_border(plain: &[bool], w: usize, h: usize) -> Vec<bool> {
    let seed: Vec<bool> = (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            plain[i] && (x == 0 || y == 0 || x + 1 == w || y + 1 == h)
        })
        .collect();
    flood_ground(plain, &seed, w, h)
}

/// The ground reached from `seed` cells (ground outright) through `plain` ones (colours
/// within the border's noise of the ground), 4-connected, moving only through cells whose
/// 3x3 neighbourhood is all plain (or seed), then grown back by one cell over plain cells:
/// a seam of plain cells narrower than three does not carry the flood into the product.
pub(crate) fn flood_ground(plain: &[bool], seed: &[bool], w: usize, h: usize) -> Vec<bool> {
    let open: Vec<bool> = plain.iter().zip(seed).map(|(p, s)| *p || *s).collect();
    let core = morph(&open, w, h, 1, false);
    let mut reached = seed.to_vec();
    let mut stack: Vec<usize> = (0..w * h).filter(|i| seed[*i]).collect();
    while let Some(i) = stack.pop() {
        let (x, y) = (i % w, i / w);
        let mut visit = |j: usize| {
            if !reached[j] && core[j] {
                reached[j] = true;
                stack.push(j);
            }
        };
        if x > 0 {
            visit(i - 1);
        }
        if y > 0 {
            visit(i - w);
        }
        if x + 1 < w {
            visit(i + 1);
        }
        if y + 1 < h {
            visit(i + w);
        }
    }
    let grown = morph(&reached, w, h, 1, true);
    (0..w * h)
        .map(|i| seed[i] || (grown[i] && open[i]))
        .collect()
}

/// Cells reached from `seed` cells through cells with a `shade` (see
/// [`GroundModel::shade`]), 4-connected, each step darkening by at most [`SHADOW_STEP`]:
/// a shadow on the ground, which fades out towards the ground, and not a product whose
/// edge is a step from it however close its colour (seeds included).
pub(crate) fn shadow_reach(seed: &[bool], shade: &[Option<f32>], w: usize, h: usize) -> Vec<bool> {
    let mut reached = seed.to_vec();
    let mut stack: Vec<usize> = (0..w * h)
        .filter(|i| seed[*i] && shade[*i].is_some())
        .collect();
    while let Some(i) = stack.pop() {
        let Some(k) = shade[i] else { continue };
        let (x, y) = (i % w, i / w);
        for (ok, j) in [
            (x > 0, i.wrapping_sub(1)),
            (y > 0, i.wrapping_sub(w)),
            (x + 1 < w, i + 1),
            (y + 1 < h, i + w),
        ] {
            if ok && !reached[j] && shade[j].is_some_and(|kj| (k - kj).abs() <= SHADOW_STEP) {
                reached[j] = true;
                stack.push(j);
            }
        }
    }
    reached
}

/// Ground the flood took from inside the product: cells that are not product (`keep`) but
/// lie between product cells along their row or along their column, on a `w` x `h` grid. An orthogonally convex product (a bottle, a jar, a can, a box) has none; a bay
/// means the flood found a way in where the product
/// was within the border's noise of the ground (a white body on a near-white ground, a
/// dark one on black) and took part of it ([`super::Cutter::cut`] asks the model about
/// those cells).
pub(crate) fn bays(keep: &[bool], w: usize, h: usize) -> Vec<bool> {
    let span = |cells: &mut dyn Iterator<Item = usize>| {
        let on: Vec<usize> = cells.filter(|i| keep[*i]).collect();
        (on.first().copied(), on.last().copied())
    };
    let rows: Vec<(Option<usize>, Option<usize>)> = (0..h)
        .map(|y| span(&mut (0..w).map(|x| y * w + x)))
        .collect();
    let cols: Vec<(Option<usize>, Option<usize>)> = (0..w)
        .map(|x| span(&mut (0..h).map(|y| y * w + x)))
        .collect();
    (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            let within = |(a, b): (Option<usize>, Option<usize>)| {
                a.zip(b).is_some_and(|(a, b)| a < i && i < b)
            };
            !keep[i] && (within(rows[y]) || within(cols[x]))
        })
        .collect()
}

#[cfg(test)]
mod tests;
