//! A logo's ink: its opaque pixels split into parts by colour (a light disc, a dark
//! wordmark beside it), and how well each part reads against what surrounds it where it is
//! drawn.
//!
//! Issue 39 found a logo of a cream disc beside a dark brown wordmark placed on a dark brown
//! ground: the wordmark vanished, and the logo rule, which judged the pixels the logo
//! changed, saw only the disc and passed it. The mark's own pixels say what it is made of,
//! so the logo is decoded once ([`LogoInk::of`], a working copy of at most [`EDGE`] px) and:
//!
//! - its opaque pixels (alpha ≥ 128) are grouped by colour: colours within [`JOIN`] of a
//!   group's mean join it, most frequent first; a group of at least [`MIN_PART_SHARE`] of
//!   the opaque pixels is a **part** ([`InkPart`]), smaller ones (anti-aliased seams, a
//!   highlight) go with the part nearest in colour;
//! - each part's **surroundings** are the pixels within [`RING`] px of it, more than
//!   [`GAP`] px from it or from any part of nearly its colour (under [`SELF_CONTRAST`]:
//!   the shades of one gradient are one shape): the ground (transparent pixels) or other
//!   parts (a wordmark set inside a disc reads against the disc);
//! - drawn over a ground ([`LogoInk::contrasts`], a sampler of what is behind each point of
//!   the logo's box), each part's contrast is the WCAG ratio between its colour and each of
//!   its surroundings' pixels as composited; per neighbour (the ground, or another part)
//!   taking at least [`MIN_NEIGHBOUR_SHARE`] of the surroundings, the median; the part's
//!   contrast is the lowest of those medians. A part with no surroundings inside the
//!   image (the white box of a boxed logo, which ends at the image's edge) is not judged.
//!
//! The logo rule ([`super::quality::logo_rule`]) asks every part for
//! [`super::fill::MIN_LOGO_CONTRAST`] (3:1, WCAG 1.4.11's ratio for graphics).
//!
//! Rejected alternatives: the mark's mean luminance (what chose variants before: a cream
//! disc outweighs a thin dark wordmark, so the logo counted as light), and the pixels the
//! logo changes in the render (a part in the ground's colour changes none, so it is never
//! seen to be missing). Both judge what shows, not what should.

use image::DynamicImage;

use super::analyse::{Rgb, contrast};

/// Long edge of the working copy.
pub const EDGE: u32 = 256;
/// Colour distance (0..1) within which a colour joins a group.
pub const JOIN: f32 = 0.12;
/// Least share of the opaque pixels a colour group needs to be a part.
pub const MIN_PART_SHARE: f32 = 0.03;
/// Most parts judged (the largest); a logo of many colours (a photo, a gradient) is judged
/// on its largest groups.
pub const MAX_PARTS: usize = 6;
/// Parts whose colours differ by less than this ratio are one shape (shades of a
/// gradient): neither counts as the other's surroundings.
pub const SELF_CONTRAST: f32 = 1.5;
/// How far (working-copy px) around a part its surroundings reach.
pub const RING: usize = 3;
/// The pixels this close to a part are its anti-aliased edge, not its surroundings.
pub const GAP: usize = 1;
/// Least share of a part's surroundings a neighbour needs to be judged against.
pub const MIN_NEIGHBOUR_SHARE: f32 = 0.2;

/// One colour of a logo's ink.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InkPart {
    /// Its mean colour.
    pub colour: Rgb,
    /// Its share of the logo's opaque pixels (minor colours joined to it included).
    pub share: f32,
}

/// A part as drawn: its contrast against what surrounds it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PartContrast {
    pub colour: Rgb,
    pub share: f32,
    /// The lowest median ratio against a neighbour; `None` when it has no surroundings in
    /// the image.
    pub contrast: Option<f32>,
}

/// Who a surrounding pixel belongs to.
const GROUND: u8 = u8::MAX;

/// One pixel of a part's surroundings.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Around {
    /// Working-copy position.
    x: u16,
    y: u16,
    /// Its own colour and alpha (straight).
    rgba: [u8; 4],
    /// The part it belongs to, or [`GROUND`].
    owner: u8,
}

/// A logo decoded into its parts and their surroundings (see the module docs).
///
/// # Invariants
/// `parts` is not empty, at most [`MAX_PARTS`] long, largest first; `around` has one list
/// per part.
#[derive(Debug, Clone, PartialEq)]
pub struct LogoInk {
    width: u32,
    height: u32,
    parts: Vec<InkPart>,
    around: Vec<Vec<Around>>,
}

impl LogoInk {
    /// The ink of `img`; `None` when it has no opaque pixel.
    pub fn of(img: &DynamicImage) -> Option<LogoInk> {
        let (w, h, px) = shrink(&img.to_rgba8());
        let opaque: Vec<usize> = (0..px.len()).filter(|i| px[*i][3] >= 128).collect();
        if opaque.is_empty() {
            return None;
        }
        // Colour histogram on 5 bits a channel, most frequent first.
        let bin = |p: [u8; 4]| -> usize {
            (usize::from(p[0] >> 3) << 10) | (usize::from(p[1] >> 3) << 5) | usize::from(p[2] >> 3)
        };
        let mut hist: std::collections::HashMap<usize, ([f64; 3], u32)> =
            std::collections::HashMap::new();
        for &i in &opaque {
            let e = hist.entry(bin(px[i])).or_insert(([0.0; 3], 0));
            for (sum, v) in e.0.iter_mut().zip(&px[i][..3]) {
                *sum += f64::from(*v);
            }
            e.1 += 1;
        }
        let mut bins: Vec<(usize, [f32; 3], u32)> = hist
            .into_iter()
            .map(|(b, (s, n))| (b, s.map(|v| (v / f64::from(n)) as f32), n))
            .collect();
        bins.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
        // Greedy groups: each bin joins the nearest group within JOIN, or starts one.
        let mut groups: Vec<([f64; 3], u32)> = Vec::new();
        let mut group_of: std::collections::HashMap<usize, usize> =
            std::collections::HashMap::new();
        for (b, c, n) in &bins {
            let near = groups
                .iter()
                .enumerate()
                .map(|(g, (s, m))| (g, dist(*c, s.map(|v| (v / f64::from(*m)) as f32))))
                .filter(|(_, d)| *d < JOIN)
                .min_by(|a, b| a.1.total_cmp(&b.1));
            let g = match near {
                Some((g, _)) => g,
                None => {
                    groups.push(([0.0; 3], 0));
                    groups.len() - 1
                }
            };
            for (sum, v) in groups[g].0.iter_mut().zip(c) {
                *sum += f64::from(*v) * f64::from(*n);
            }
            groups[g].1 += n;
            group_of.insert(*b, g);
        }
        let total = opaque.len() as f32;
        let mean = |g: &([f64; 3], u32)| g.0.map(|v| (v / f64::from(g.1.max(1))) as f32);
        let mut order: Vec<usize> = (0..groups.len()).collect();
        order.sort_by(|a, b| groups[*b].1.cmp(&groups[*a].1));
        let mut major: Vec<usize> = order
            .iter()
            .copied()
            .filter(|g| groups[*g].1 as f32 >= MIN_PART_SHARE * total)
            .take(MAX_PARTS)
            .collect();
        if major.is_empty() {
            major.push(order[0]);
        }
        // Every group goes with the nearest major one in colour.
        let part_of_group: Vec<usize> = (0..groups.len())
            .map(|g| {
                let c = mean(&groups[g]);
                (0..major.len())
                    .min_by(|a, b| {
                        dist(c, mean(&groups[major[*a]]))
                            .total_cmp(&dist(c, mean(&groups[major[*b]])))
                    })
                    .unwrap_or(0)
            })
            .collect();
        let mut owner = vec![GROUND; px.len()];
        let mut count = vec![0u32; major.len()];
        for &i in &opaque {
            let p = part_of_group[group_of[&bin(px[i])]];
            owner[i] = p as u8;
            count[p] += 1;
        }
        let parts: Vec<InkPart> = major
            .iter()
            .enumerate()
            .map(|(p, g)| InkPart {
                colour: mean(&groups[*g]).map(|v| v.round().clamp(0.0, 255.0) as u8),
                share: count[p] as f32 / total,
            })
            .collect();
        // Each part's surroundings.
        let around = (0..parts.len())
            .map(|p| {
                let is_self = |o: u8| {
                    o != GROUND
                        && contrast(parts[usize::from(o)].colour, parts[p].colour) < SELF_CONTRAST
                };
                let mine: Vec<bool> = owner.iter().map(|o| usize::from(*o) == p).collect();
                let selfish: Vec<bool> = owner.iter().map(|o| is_self(*o)).collect();
                let near = grow(&mine, w, h, RING);
                let edge = grow(&selfish, w, h, GAP);
                (0..px.len())
                    .filter(|i| near[*i] && !edge[*i])
                    .map(|i| Around {
                        x: (i % w) as u16,
                        y: (i / w) as u16,
                        rgba: px[i],
                        owner: owner[i],
                    })
                    .collect()
            })
            .collect();
        Some(LogoInk {
            width: w as u32,
            height: h as u32,
            parts,
            around,
        })
    }

    /// The parts, largest first.
    pub fn parts(&self) -> &[InkPart] {
        &self.parts
    }

    /// Each part's contrast when the logo is drawn over `ground`, which answers the colour
    /// behind a point of the logo's image given as shares `(u, v)` of its width and height.
    pub fn contrasts(&self, ground: &dyn Fn(f32, f32) -> Rgb) -> Vec<PartContrast> {
        let (w, h) = (self.width as f32, self.height as f32);
        self.parts
            .iter()
            .zip(&self.around)
            .map(|(part, around)| {
                let mut by_owner: Vec<(u8, Vec<f32>)> = Vec::new();
                for a in around {
                    let g = ground((f32::from(a.x) + 0.5) / w, (f32::from(a.y) + 0.5) / h);
                    let shown = over(a.rgba, g);
                    let ratio = contrast(part.colour, shown);
                    match by_owner.iter_mut().find(|(o, _)| *o == a.owner) {
                        Some((_, v)) => v.push(ratio),
                        None => by_owner.push((a.owner, vec![ratio])),
                    }
                }
                let n = around.len() as f32;
                let judged = by_owner
                    .iter_mut()
                    .filter(|(_, v)| v.len() as f32 >= MIN_NEIGHBOUR_SHARE * n)
                    .map(|(_, v)| median(v))
                    .min_by(f32::total_cmp);
                PartContrast {
                    colour: part.colour,
                    share: part.share,
                    contrast: judged,
                }
            })
            .collect()
    }

    /// The lowest contrast of any part drawn on the solid `ground` (infinite when no part
    /// has surroundings).
    pub fn least_contrast_on(&self, ground: Rgb) -> f32 {
        least(&self.contrasts(&|_, _| ground))
    }
}

/// The lowest judged contrast of `parts` (infinite when none is judged).
pub fn least(parts: &[PartContrast]) -> f32 {
    parts
        .iter()
        .filter_map(|p| p.contrast)
        .fold(f32::INFINITY, f32::min)
}

/// `rgba` (straight alpha) over the opaque `ground`.
fn over(rgba: [u8; 4], ground: Rgb) -> Rgb {
    let a = f32::from(rgba[3]) / 255.0;
    [0, 1, 2].map(|k| (f32::from(rgba[k]) * a + f32::from(ground[k]) * (1.0 - a)).round() as u8)
}

fn median(v: &mut [f32]) -> f32 {
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}

/// `img` shrunk by a whole factor to at most [`EDGE`] on its long edge, each pixel the
/// alpha-weighted mean of its block (so an edge keeps its ink's colour rather than darkening
/// towards the transparent pixels' black); width, height and pixels.
fn shrink(img: &image::RgbaImage) -> (usize, usize, Vec<[u8; 4]>) {
    let (iw, ih) = (img.width() as usize, img.height() as usize);
    let f = iw.max(ih).div_ceil(EDGE as usize).max(1);
    let (w, h) = (iw.div_ceil(f), ih.div_ceil(f));
    let mut out = Vec::with_capacity(w * h);
    for by in 0..h {
        for bx in 0..w {
            let (mut c, mut a, mut n) = ([0u32; 3], 0u32, 0u32);
            for y in by * f..((by + 1) * f).min(ih) {
                for x in bx * f..((bx + 1) * f).min(iw) {
                    let p = img.get_pixel(x as u32, y as u32).0;
                    let pa = u32::from(p[3]);
                    for k in 0..3 {
                        c[k] += u32::from(p[k]) * pa;
                    }
                    a += pa;
                    n += 1;
                }
            }
            let colour = c.map(|v| v.checked_div(a).map_or(0, |q| q as u8));
            out.push([colour[0], colour[1], colour[2], (a / n.max(1)) as u8]);
        }
    }
    (w, h, out)
}

/// Euclidean RGB distance scaled to 0..1.
fn dist(a: [f32; 3], b: [f32; 3]) -> f32 {
    let d: f32 = (0..3).map(|k| (a[k] - b[k]).powi(2)).sum();
    d.sqrt() / 441.7
}

/// `mask` grown by `by` cells (a square neighbourhood), along rows then along columns.
fn grow(mask: &[bool], w: usize, h: usize, by: usize) -> Vec<bool> {
    let mut rows = vec![false; w * h];
    for y in 0..h {
        let row = &mask[y * w..(y + 1) * w];
        for x in 0..w {
            rows[y * w + x] = row[x.saturating_sub(by)..=(x + by).min(w - 1)].contains(&true);
        }
    }
    let mut out = vec![false; w * h];
    for x in 0..w {
        for y in 0..h {
            out[y * w + x] = (y.saturating_sub(by)..=(y + by).min(h - 1)).any(|t| rows[t * w + x]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgba, RgbaImage};

    const CREAM: [u8; 3] = [0xF2, 0xE3, 0xC6];
    const BROWN: [u8; 3] = [0x3B, 0x24, 0x16];

    /// A cream disc beside a brown bar (a wordmark's stand-in), or the bar inside the disc.
    fn mark(inside: bool) -> DynamicImage {
        DynamicImage::ImageRgba8(RgbaImage::from_fn(300, 100, |x, y| {
            let (dx, dy) = (x as f32 - 50.0, y as f32 - 50.0);
            let disc = dx * dx + dy * dy < 45.0 * 45.0;
            let bar = if inside {
                (25..75).contains(&x) && (42..58).contains(&y)
            } else {
                (110..290).contains(&x) && (35..65).contains(&y)
            };
            let c = if bar {
                BROWN
            } else if disc {
                CREAM
            } else {
                return Rgba([0, 0, 0, 0]);
            };
            Rgba([c[0], c[1], c[2], 255])
        }))
    }

    #[test]
    fn a_wordmark_beside_a_disc_is_judged_against_the_ground() {
        let ink = LogoInk::of(&mark(false)).unwrap();
        assert_eq!(ink.parts().len(), 2, "{:?}", ink.parts());
        // On the wordmark's own colour only the disc reads.
        let parts = ink.contrasts(&|_, _| BROWN);
        let bar = parts.iter().find(|p| p.colour == BROWN).unwrap();
        assert!(bar.contrast.unwrap() < 1.1, "{parts:?}");
        assert!(least(&parts) < 1.1);
        // On white the disc is the one that fades.
        assert!(ink.least_contrast_on([255, 255, 255]) < 1.5);
        // On a mid grey both read.
        assert!(ink.least_contrast_on([118, 118, 118]) >= 3.0);
    }

    #[test]
    fn a_wordmark_inside_a_disc_is_judged_against_the_disc() {
        let ink = LogoInk::of(&mark(true)).unwrap();
        let parts = ink.contrasts(&|_, _| BROWN);
        let bar = parts.iter().find(|p| p.colour == BROWN).unwrap();
        assert!(bar.contrast.unwrap() > 8.0, "{parts:?}");
        // The disc reads against the brown ground and the brown bar alike.
        assert!(least(&parts) > 8.0, "{parts:?}");
    }
}
