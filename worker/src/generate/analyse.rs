//! Reading a reference ad: what shape it is, what colours it uses, where its subject sits,
//! where it leaves calm space, and whether it sells with words or with a picture.
//!
//! Everything is measured on a small (96 px long edge) copy of the image, so a 4K reference
//! costs the same few milliseconds as a thumbnail and the result is deterministic.
//!
//! - Palette: a fixed 4×4×4 RGB histogram; the heaviest bins (mean colour of each) are the
//!   dominant colours. Rejected: k-means, whose result depends on seeding and iteration
//!   count, and which buys nothing for picking five swatches.
//! - Saliency: gradient energy (|∂x| + |∂y| of luminance) plus colour distance from the
//!   image's border colour, summed on a [`GRID`]×[`GRID`] grid. The subject is the
//!   energy-weighted centroid; calm cells are the ones under a fraction of the mean energy.
//!   Rejected: a learned saliency model — no weights can be shipped or downloaded here, and
//!   layout choice needs only "which third holds the mass".
//! - Text-led: text is many short, sharp, high-contrast edges on flat ground. We count
//!   pixels with a strong gradient whose 3×3 neighbourhood is otherwise flat, and the share
//!   of flat area; posters score high on both, photos low.

use image::{GenericImageView, imageops::FilterType};

/// Side of the saliency grid.
pub const GRID: usize = 6;

/// The aspect ratios ads are produced in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Aspect {
    /// 1:1, 1080×1080 design.
    Square,
    /// 4:5, 1080×1350 design.
    Portrait,
    /// 9:16, 1080×1920 design.
    Story,
}

impl Aspect {
    /// All aspects, in the order layouts list them.
    pub const ALL: [Aspect; 3] = [Aspect::Square, Aspect::Portrait, Aspect::Story];

    /// The key used in layout files (`"1:1"`, `"4:5"`, `"9:16"`).
    pub fn key(self) -> &'static str {
        match self {
            Aspect::Square => "1:1",
            Aspect::Portrait => "4:5",
            Aspect::Story => "9:16",
        }
    }

    /// Width over height.
    pub fn ratio(self) -> f32 {
        match self {
            Aspect::Square => 1.0,
            Aspect::Portrait => 0.8,
            Aspect::Story => 0.5625,
        }
    }

    /// The nearest supported aspect to `width / height`, compared in log space so that
    /// 2:1 and 1:2 are equally far from 1:1. Landscape references snap to 1:1.
    pub fn nearest(width: u32, height: u32) -> Aspect {
        let r = (width.max(1) as f32 / height.max(1) as f32).ln();
        let mut best = Aspect::Square;
        for a in Aspect::ALL {
            if (a.ratio().ln() - r).abs() < (best.ratio().ln() - r).abs() {
                best = a;
            }
        }
        best
    }
}

/// An sRGB colour, 0..=255 per channel.
pub type Rgb = [u8; 3];

/// What [`analyse`] measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// Pixel size of the reference.
    pub width: u32,
    /// Pixel size of the reference.
    pub height: u32,
    /// The snapped aspect ratio the ad is produced in.
    pub aspect: Aspect,
    /// Dominant colours, heaviest first (at most 5), with their share of the image.
    pub palette: Vec<(Rgb, f32)>,
    /// Saliency energy per grid cell, row-major, normalised to sum 1.
    pub saliency: [[f32; GRID]; GRID],
    /// Energy-weighted centroid of the subject in the unit square (x, y).
    pub subject: (f32, f32),
    /// How concentrated the subject is: 0 evenly spread, 1 all in one cell.
    pub subject_focus: f32,
    /// Centroid of the calm cells (low energy) in the unit square.
    pub calm: (f32, f32),
    /// Share of cells that are calm.
    pub calm_share: f32,
    /// Mean luminance 0..1.
    pub brightness: f32,
    /// Share of pixels with almost no gradient.
    pub flat_share: f32,
    /// Share of the non-flat pixels that are hard edges.
    pub edge_ratio: f32,
    /// 0..1; above 0.5 the reference sells with words (a poster), below with a picture.
    pub text_score: f32,
}

impl Analysis {
    /// True when the reference is a text-led design.
    pub fn text_led(&self) -> bool {
        self.text_score >= 0.5
    }
}

/// Decodes `bytes` (PNG, JPEG or WebP) and measures it.
///
/// # Errors
/// A message when the bytes are not an image this build decodes, or the image is larger
/// than the renderer's decompression-bomb limit.
pub fn analyse(bytes: &[u8]) -> Result<Analysis, String> {
    Ok(analyse_decoded(&decode(bytes)?))
}

/// Decodes a reference (PNG, JPEG or WebP) under the renderer's decompression-bomb limit.
///
/// # Errors
/// A message when the bytes are not an image this build decodes or are too large.
pub fn decode(bytes: &[u8]) -> Result<image::DynamicImage, String> {
    let mut reader = image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| format!("cannot read the image: {e}"))?;
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(16384);
    limits.max_image_height = Some(16384);
    limits.max_alloc = Some(adforge_renderer::image::MAX_IMAGE_PIXELS * 4);
    reader.limits(limits);
    reader
        .decode()
        .map_err(|e| format!("not a PNG, JPEG or WebP image: {e}"))
}

/// [`analyse`] of an already decoded image.
pub fn analyse_decoded(img: &image::DynamicImage) -> Analysis {
    let (width, height) = img.dimensions();
    let scale = 96.0 / width.max(height) as f32;
    let (sw, sh) = (
        ((width as f32 * scale).round() as u32).max(8),
        ((height as f32 * scale).round() as u32).max(8),
    );
    let small = img.resize_exact(sw, sh, FilterType::Triangle).to_rgb8();
    let (w, h) = (sw as usize, sh as usize);
    let px: Vec<Rgb> = small.pixels().map(|p| p.0).collect();
    let lum: Vec<f32> = px.iter().map(|p| luma(*p)).collect();

    let palette = dominant_colours(&px);
    let border = border_colour(&px, w, h);

    // Per-pixel energy: gradient plus distance from the border colour (figure vs ground).
    let mut energy = vec![0.0f32; w * h];
    let mut edges = 0usize;
    let mut flat = 0usize;
    for y in 1..h - 1 {
        for x in 1..w - 1 {
            let i = y * w + x;
            let gx = (lum[i + 1] - lum[i - 1]).abs();
            let gy = (lum[i + w] - lum[i - w]).abs();
            let g = gx + gy;
            let figure = colour_distance(px[i], border);
            energy[i] = g * 2.0 + figure * 0.5;
            if g < 0.02 {
                flat += 1;
            }
            if g > 0.12 {
                edges += 1;
            }
        }
    }
    let inner = ((w - 2) * (h - 2)).max(1) as f32;
    let flat_share = flat as f32 / inner;
    let busy = (inner - flat as f32).max(1.0);
    // Of the pixels that are not flat, how many are hard edges: text is all edge, a photo's
    // subject is mostly soft shading and texture.
    let edge_ratio = edges as f32 / busy;

    let mut saliency = [[0.0f32; GRID]; GRID];
    for y in 0..h {
        for x in 0..w {
            let (gx, gy) = (x * GRID / w, y * GRID / h);
            saliency[gy][gx] += energy[y * w + x];
        }
    }
    let total: f32 = saliency.iter().flatten().sum::<f32>().max(1e-6);
    let mut subject = (0.0, 0.0);
    for (gy, row) in saliency.iter_mut().enumerate() {
        for (gx, cell) in row.iter_mut().enumerate() {
            *cell /= total;
            subject.0 += *cell * (gx as f32 + 0.5) / GRID as f32;
            subject.1 += *cell * (gy as f32 + 0.5) / GRID as f32;
        }
    }
    let cells = (GRID * GRID) as f32;
    let max_cell = saliency.iter().flatten().fold(0.0f32, |a, b| a.max(*b));
    let subject_focus = ((max_cell - 1.0 / cells) / (1.0 - 1.0 / cells)).clamp(0.0, 1.0);
    let mut calm_n = 0usize;
    for cell in saliency.iter().flatten() {
        if *cell < 0.5 / cells {
            calm_n += 1;
        }
    }
    let calm = calm_region(&saliency);
    let brightness = lum.iter().sum::<f32>() / lum.len().max(1) as f32;
    // A poster's non-flat pixels are nearly all hard edges, and it has flat ground around
    // them; flat ground alone (a studio backdrop) says nothing.
    let text_score =
        smoothstep(0.3, 0.7, edge_ratio) * (0.5 + 0.5 * smoothstep(0.3, 0.6, flat_share));
    Analysis {
        width,
        height,
        aspect: Aspect::nearest(width, height),
        palette,
        saliency,
        subject,
        subject_focus,
        calm,
        calm_share: calm_n as f32 / cells,
        brightness,
        flat_share,
        edge_ratio,
        text_score,
    }
}

/// The centre of the calmest of four bands (top, bottom, left, right thirds); ties go to
/// the earlier band. A centroid of calm cells would land on the subject when calm space
/// surrounds it, so bands are compared instead.
fn calm_region(saliency: &[[f32; GRID]; GRID]) -> (f32, f32) {
    let third = GRID / 3;
    let band = |rows: std::ops::Range<usize>, cols: std::ops::Range<usize>| -> f32 {
        rows.flat_map(|r| cols.clone().map(move |c| (r, c)))
            .map(|(r, c)| saliency[r][c])
            .sum()
    };
    let candidates = [
        (band(0..third, 0..GRID), (0.5, 1.0 / 6.0)),
        (band(GRID - third..GRID, 0..GRID), (0.5, 5.0 / 6.0)),
        (band(0..GRID, 0..third), (1.0 / 6.0, 0.5)),
        (band(0..GRID, GRID - third..GRID), (5.0 / 6.0, 0.5)),
    ];
    let mut best = candidates[0];
    for c in candidates {
        if c.0 < best.0 - 1e-4 {
            best = c;
        }
    }
    best.1
}

fn smoothstep(lo: f32, hi: f32, x: f32) -> f32 {
    let t = ((x - lo) / (hi - lo)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// Relative luminance (WCAG) of an sRGB colour, 0..1.
pub fn luminance(c: Rgb) -> f32 {
    let lin = |v: u8| {
        let s = f32::from(v) / 255.0;
        if s <= 0.04045 {
            s / 12.92
        } else {
            ((s + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2])
}

/// WCAG contrast ratio between two colours (1..21).
pub fn contrast(a: Rgb, b: Rgb) -> f32 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// Perceptual-ish brightness (Rec. 601 luma on gamma values), 0..1; cheap and monotonic.
fn luma(c: Rgb) -> f32 {
    (0.299 * f32::from(c[0]) + 0.587 * f32::from(c[1]) + 0.114 * f32::from(c[2])) / 255.0
}

/// Euclidean RGB distance scaled to 0..1.
pub fn colour_distance(a: Rgb, b: Rgb) -> f32 {
    let d: f32 = (0..3)
        .map(|k| (f32::from(a[k]) - f32::from(b[k])).powi(2))
        .sum();
    d.sqrt() / 441.7
}

fn border_colour(px: &[Rgb], w: usize, h: usize) -> Rgb {
    let mut sum = [0u64; 3];
    let mut n = 0u64;
    for y in 0..h {
        for x in 0..w {
            if x == 0 || y == 0 || x == w - 1 || y == h - 1 {
                for k in 0..3 {
                    sum[k] += u64::from(px[y * w + x][k]);
                }
                n += 1;
            }
        }
    }
    sum.map(|s| (s / n.max(1)) as u8)
}

fn dominant_colours(px: &[Rgb]) -> Vec<(Rgb, f32)> {
    let mut bins = vec![([0u64; 3], 0u64); 64];
    for p in px {
        let i = usize::from(p[0] >> 6) * 16 + usize::from(p[1] >> 6) * 4 + usize::from(p[2] >> 6);
        for (sum, v) in bins[i].0.iter_mut().zip(p) {
            *sum += u64::from(*v);
        }
        bins[i].1 += 1;
    }
    let mut order: Vec<usize> = (0..64).filter(|i| bins[*i].1 > 0).collect();
    // Heaviest first; ties by bin index so the order is total and deterministic.
    order.sort_by(|a, b| bins[*b].1.cmp(&bins[*a].1).then(a.cmp(b)));
    let n = px.len().max(1) as f32;
    order
        .into_iter()
        .take(5)
        .map(|i| {
            let (sum, count) = bins[i];
            (sum.map(|s| (s / count) as u8), count as f32 / n)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aspects_snap_to_the_nearest() {
        assert_eq!(Aspect::nearest(1000, 1000), Aspect::Square);
        assert_eq!(Aspect::nearest(1920, 1080), Aspect::Square);
        assert_eq!(Aspect::nearest(1080, 1350), Aspect::Portrait);
        assert_eq!(Aspect::nearest(1080, 1920), Aspect::Story);
        assert_eq!(Aspect::nearest(900, 1200), Aspect::Portrait);
    }

    #[test]
    fn contrast_matches_wcag() {
        assert!((contrast([0, 0, 0], [255, 255, 255]) - 21.0).abs() < 0.01);
        assert!((contrast([119, 119, 119], [255, 255, 255]) - 4.48).abs() < 0.02);
    }
}
