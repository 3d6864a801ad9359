//! From a coarse mask to the cut-out: the product's box cropped out of the full photo and
//! scaled to at most [`MAX_EDGE`], its alpha computed at that scale, the edge feathered to
//! [`FEATHER_PX`], edge colours cleaned of the old ground, and the result trimmed to what
//! is visible.
//!
//! **Alpha.** For the colour key, the ground is flooded again at the output scale, in the
//! band of working cells along the product's outline only (cells well inside are product,
//! cells well outside ground), through plain ground as on the working copy
//! ([`super::key::flood_ground`]), judged by the median distance of each 3x3 neighbourhood
//! (a JPEG's ground rings by ten levels beside a strong edge): the edge is where the
//! photo's own pixels leave the ground, however little the product's colour differs from
//! it there (a cream label on light grey). A product pixel within [`FRINGE`] px of the
//! flooded ground takes alpha from how much of the product's colour it holds,
//! `C = B + a (F - B)`, with `B` the ground there and `F` the deeper product pixel within
//! 4 px whose line through `B` passes closest to `C`: an anti-aliased edge keeps its own
//! coverage, a pale part's edge is as opaque as the part, and the compression's ringing
//! beside the edge (no mix of the two) is dropped unless it is far from the ground (a
//! highlight on a rim). Deeper product pixels are opaque. The model's 320 px map is
//! upsampled bilinearly and becomes alpha by its signed distance to the `m = 0.5` outline,
//! `(m - 0.5) / |∇m|`, ramped over [`FEATHER_PX`] output pixels: the edge is 1.5 px soft
//! wherever it is, however blurred the upsampled map was. A photo that already has alpha
//! keeps it.
//!
//! **Edge colours.** A pixel on the edge mixes the product with the old ground; drawn on a
//! new ground it would show a halo of the old one. Every pixel of the edge band (alpha
//! below 1, or next to such a pixel) takes the mean colour of the product's interior
//! pixels within 3 px (6 px when none is that near); a thin part with no interior nearby is
//! unmixed instead, `F = (C - (1 - a) B) / a`, with `B` the ground model (colour key) or
//! the mean of the cleared pixels nearby (model).
//!
//! Rejected alternative: a closed-form matting solve (Levin et al.) on a trimap from the
//! mask. Better hair and fur, but a sparse linear system over the whole edge band costs
//! seconds at these sizes, and products are mostly hard-edged.

use fast_image_resize as fr;
use image::{DynamicImage, RgbaImage};

use super::Refusal;
use super::key::{GroundModel, dist, flood_ground};
use super::mask::{Coarse, morph};

/// Longest edge of a stored cut-out in pixels: an ad draws its product at most about
/// 2000 px tall at 4K (the blueprint's silhouette slots), so more is not shown.
pub const MAX_EDGE: u32 = 2048;

/// Width of the feathered edge in output pixels.
pub const FEATHER_PX: f32 = 1.5;

/// How far into the product (output pixels) the colour key's alpha comes from the mix of
/// the ground and the product's colour; deeper pixels are opaque.
const FRINGE: usize = 2;

/// Where the fine alpha comes from.
pub(crate) enum Fine<'a> {
    /// The photo's own alpha channel.
    SourceAlpha,
    /// The colour key against this ground, evaluated per output pixel.
    Key(&'a GroundModel),
    /// The coarse mask's soft values (the model's saliency), upsampled.
    Saliency,
}

/// The cut-out and where it was in the photo.
pub(crate) struct Matte {
    pub image: RgbaImage,
    /// `(x, y, width, height)` of the cut-out's box in the photo's pixels.
    pub source_box: [u32; 4],
}

/// Cuts the product that `coarse` marks (checked) out of `src`.
///
/// # Errors
/// [`Refusal::Empty`] when nothing stays visible.
pub(crate) fn matte(src: &DynamicImage, coarse: &Coarse, fine: Fine<'_>) -> Result<Matte, Refusal> {
    let (sw, sh) = (src.width(), src.height());
    let empty = || Refusal::Empty { coverage: 0.0 };
    let (x0, y0, x1, y1) = coarse.bounds().ok_or_else(empty)?;
    // The box on the grid, two cells wider each way, in photo pixels.
    let to_px = |cell: usize, cells: usize, size: u32| {
        ((cell as f64 * f64::from(size) / cells as f64).round() as u32).min(size)
    };
    let bx0 = to_px(x0.saturating_sub(2), coarse.w, sw);
    let by0 = to_px(y0.saturating_sub(2), coarse.h, sh);
    let bx1 = to_px((x1 + 2).min(coarse.w), coarse.w, sw).max(bx0 + 1);
    let by1 = to_px((y1 + 2).min(coarse.h), coarse.h, sh).max(by0 + 1);
    let (bw, bh) = (bx1 - bx0, by1 - by0);
    let scale = (f64::from(MAX_EDGE) / f64::from(bw.max(bh))).min(1.0);
    let ow = ((f64::from(bw) * scale).round() as u32).max(1);
    let oh = ((f64::from(bh) * scale).round() as u32).max(1);
    let mut px = crop_scaled(src, [bx0, by0, bw, bh], ow, oh);

    let (w, h) = (ow as usize, oh as usize);
    // Output pixel -> unit-square position in the photo.
    let pos = |x: usize, y: usize| {
        (
            (f64::from(bx0) + (x as f64 + 0.5) * f64::from(bw) / w as f64) as f32 / sw as f32,
            (f64::from(by0) + (y as f64 + 0.5) * f64::from(bh) / h as f64) as f32 / sh as f32,
        )
    };
    // Cells near the product (specks dropped) and cells well inside it.
    let near = morph(&coarse.keep, coarse.w, coarse.h, 2, true);
    let inside = morph(&coarse.keep, coarse.w, coarse.h, 1, false);
    let alpha = if let Fine::Key(ground) = fine {
        let touches = [bx0 == 0, by0 == 0, bx1 == sw, by1 == sh];
        key_alpha(&px, ground, coarse, (&near, &inside), &pos, touches)
    } else {
        let mut m = vec![0f32; w * h];
        for y in 0..h {
            for x in 0..w {
                let (u, v) = pos(x, y);
                if !near[coarse.cell(u, v)] {
                    continue;
                }
                m[y * w + x] = match fine {
                    Fine::SourceAlpha => f32::from(px.get_pixel(x as u32, y as u32).0[3]) / 255.0,
                    _ => coarse.soft_at(u, v),
                };
            }
        }
        match fine {
            Fine::SourceAlpha => m,
            _ => feather(&m, w, h),
        }
    };
    if !matches!(fine, Fine::SourceAlpha) {
        let ground = |x: usize, y: usize| match fine {
            Fine::Key(g) => {
                let (u, v) = pos(x, y);
                Some(g.colour(u, v))
            }
            _ => None,
        };
        clean_edges(&mut px, &alpha, &ground);
    }
    for (p, a) in px.pixels_mut().zip(&alpha) {
        p.0[3] = (a * 255.0).round() as u8;
    }
    // Trim to the visible pixels.
    let (mut tx0, mut ty0, mut tx1, mut ty1) = (w, h, 0, 0);
    for (i, a) in alpha.iter().enumerate() {
        if *a * 255.0 >= 0.5 {
            let (x, y) = (i % w, i / w);
            tx0 = tx0.min(x);
            ty0 = ty0.min(y);
            tx1 = tx1.max(x + 1);
            ty1 = ty1.max(y + 1);
        }
    }
    if tx1 <= tx0 || ty1 <= ty0 {
        return Err(empty());
    }
    let image = image::imageops::crop_imm(
        &px,
        tx0 as u32,
        ty0 as u32,
        (tx1 - tx0) as u32,
        (ty1 - ty0) as u32,
    )
    .to_image();
    let back = |t: usize, total: usize, size: u32| {
        (t as f64 * f64::from(size) / total as f64).round() as u32
    };
    let source_box = [
        bx0 + back(tx0, w, bw),
        by0 + back(ty0, h, bh),
        back(tx1, w, bw) - back(tx0, w, bw),
        back(ty1, h, bh) - back(ty0, h, bh),
    ];
    Ok(Matte { image, source_box })
}

/// The box `[x, y, w, h]` of `src` resampled to `ow` x `oh` RGBA (Lanczos when
/// shrinking; a plain crop at the same size).
fn crop_scaled(src: &DynamicImage, [x, y, w, h]: [u32; 4], ow: u32, oh: u32) -> RgbaImage {
    if (ow, oh) == (w, h) {
        return match src {
            DynamicImage::ImageRgba8(img) => image::imageops::crop_imm(img, x, y, w, h).to_image(),
            _ => src.crop_imm(x, y, w, h).to_rgba8(),
        };
    }
    let mut dst = DynamicImage::new(ow, oh, src.color());
    let opts = fr::ResizeOptions::new()
        .crop(f64::from(x), f64::from(y), f64::from(w), f64::from(h))
        .resize_alg(fr::ResizeAlg::Convolution(fr::FilterType::Lanczos3));
    match fr::Resizer::new().resize(src, &mut dst, &opts) {
        Ok(()) => dst.into_rgba8(),
        // Pixel types the resizer does not take: through RGBA.
        Err(_) => image::imageops::resize(
            &src.crop_imm(x, y, w, h).to_rgba8(),
            ow,
            oh,
            image::imageops::FilterType::Lanczos3,
        ),
    }
}

/// The colour key's alpha at the output scale (see the module docs). `cells` are the
/// working cells near the product and well inside it; `pos` maps an output pixel to the
/// unit square; `touches` says which sides of the crop (left, top, right, bottom) are the
/// photo's own border, where plain ground seeds the flood too.
fn key_alpha(
    px: &RgbaImage,
    ground: &GroundModel,
    coarse: &Coarse,
    (near, inside): (&[bool], &[bool]),
    pos: &dyn Fn(usize, usize) -> (f32, f32),
    touches: [bool; 4],
) -> Vec<f32> {
    let (w, h) = (px.width() as usize, px.height() as usize);
    let colour = |i: usize| {
        let p = px.get_pixel((i % w) as u32, (i / w) as u32).0;
        [p[0], p[1], p[2]].map(f32::from)
    };
    let mut solid = vec![false; w * h];
    let mut far = vec![false; w * h];
    let mut d = vec![0f32; w * h];
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            let (u, v) = pos(x, y);
            let cell = coarse.cell(u, v);
            if inside[cell] {
                solid[i] = true;
                d[i] = f32::INFINITY;
            } else if !near[cell] || coarse.cleared[cell] {
                // Well outside the product, or a shadow the model cleared: ground outright.
                far[i] = true;
            } else {
                d[i] = dist(colour(i), ground.at(u, v));
            }
        }
    }
    // Plain ground by the median distance of each pixel's 3x3 neighbourhood: a photo's
    // pixels beside a strong edge ring with the compression (a JPEG's ground runs 10 levels
    // either way of its grey for several pixels), which the working copy's shrinking had
    // smoothed; the median keeps an edge, a corner and a pale part where they are.
    let mut plain = vec![false; w * h];
    let mut seed = far.clone();
    let mut window = Vec::with_capacity(9);
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            if solid[i] || far[i] {
                continue;
            }
            window.clear();
            for ny in y.saturating_sub(1)..=(y + 1).min(h - 1) {
                for nx in x.saturating_sub(1)..=(x + 1).min(w - 1) {
                    window.push(d[ny * w + nx]);
                }
            }
            window.sort_by(f32::total_cmp);
            plain[i] = ground.plain(window[window.len() / 2]);
            let frame = (x == 0 && touches[0])
                || (y == 0 && touches[1])
                || (x + 1 == w && touches[2])
                || (y + 1 == h && touches[3]);
            seed[i] = plain[i] && frame;
        }
    }
    let out = flood_ground(&plain, &seed, w, h);
    // The fringe: product pixels within [`FRINGE`] of the flooded ground. Deeper ones are
    // the product's own colours.
    let grown = morph(&out, w, h, FRINGE, true);
    let fringe: Vec<bool> = (0..w * h)
        .map(|i| grown[i] && !out[i] && !solid[i])
        .collect();
    // Product colours closer to the ground than its noise say nothing of the mix.
    let faint = (ground.low * 441.7).powi(2);
    let r = FRINGE + 2;
    (0..w * h)
        .map(|i| {
            if out[i] {
                return 0.0;
            }
            if !fringe[i] {
                return 1.0;
            }
            let (x, y) = (i % w, i / w);
            let (u, v) = pos(x, y);
            let b = ground.at(u, v);
            let c = colour(i);
            let cb = [0, 1, 2].map(|k| c[k] - b[k]);
            let cc: f32 = cb.iter().map(|t| t * t).sum();
            // The mix of the ground and a product colour nearby that explains `c` best.
            let mut best: Option<(f32, f32)> = None;
            for ny in y.saturating_sub(r)..=(y + r).min(h - 1) {
                for nx in x.saturating_sub(r)..=(x + r).min(w - 1) {
                    let j = ny * w + nx;
                    if out[j] || fringe[j] {
                        continue;
                    }
                    let f = colour(j);
                    let fb = [0, 1, 2].map(|k| f[k] - b[k]);
                    let ff: f32 = fb.iter().map(|t| t * t).sum();
                    if ff < faint {
                        continue;
                    }
                    let a = ((0..3).map(|k| cb[k] * fb[k]).sum::<f32>() / ff).clamp(0.0, 1.0);
                    let miss: f32 = (0..3).map(|k| (cb[k] - a * fb[k]).powi(2)).sum();
                    if best.is_none_or(|(m, _)| miss < m) {
                        best = Some((miss, a));
                    }
                }
            }
            match best {
                // The mix explains at least half of the pixel's departure from the ground.
                Some((miss, a)) if miss <= 0.25 * cc => a,
                // Not a mix of the ground and the product nearby: a thin part, a highlight
                // on the rim (far from the ground), or the compression's ringing beside a
                // strong edge (near it).
                _ => {
                    if ground.ramp(d[i]) >= 0.5 {
                        1.0
                    } else {
                        0.0
                    }
                }
            }
        })
        .collect()
}

/// Alpha from a soft mask: the signed distance to its one-half outline, in pixels
/// (`(m - 0.5) / |∇m|`), ramped over [`FEATHER_PX`]. Where the mask is flat, it is cut at
/// one half.
fn feather(m: &[f32], w: usize, h: usize) -> Vec<f32> {
    let at = |x: usize, y: usize| m[y * w + x];
    let mut out = vec![0f32; w * h];
    for y in 0..h {
        for x in 0..w {
            let v = at(x, y);
            let gx = (at((x + 1).min(w - 1), y) - at(x.saturating_sub(1), y)) * 0.5;
            let gy = (at(x, (y + 1).min(h - 1)) - at(x, y.saturating_sub(1))) * 0.5;
            let g = (gx * gx + gy * gy).sqrt();
            out[y * w + x] = if g < 1e-4 {
                if v >= 0.5 { 1.0 } else { 0.0 }
            } else {
                (0.5 + (v - 0.5) / (g * FEATHER_PX)).clamp(0.0, 1.0)
            };
        }
    }
    out
}

/// Replaces the colour of the edge band (see the module docs). `ground(x, y)` is the old
/// ground's colour there when it is known.
fn clean_edges(
    px: &mut RgbaImage,
    alpha: &[f32],
    ground: &dyn Fn(usize, usize) -> Option<[u8; 3]>,
) {
    let (w, h) = (px.width() as usize, px.height() as usize);
    let opaque = |i: usize| alpha[i] >= 1.0;
    let mut band = vec![false; w * h];
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            if alpha[i] <= 0.0 {
                continue;
            }
            band[i] = !opaque(i)
                || (x > 0 && !opaque(i - 1))
                || (x + 1 < w && !opaque(i + 1))
                || (y > 0 && !opaque(i - w))
                || (y + 1 < h && !opaque(i + w));
        }
    }
    let original = px.clone();
    // Mean colour of the pixels within `r` of (x, y) that `pick` accepts.
    let mean_near = |x: usize, y: usize, r: usize, pick: &dyn Fn(usize) -> bool| {
        let (mut sum, mut n) = ([0u32; 3], 0u32);
        for yy in y.saturating_sub(r)..=(y + r).min(h - 1) {
            for xx in x.saturating_sub(r)..=(x + r).min(w - 1) {
                let j = yy * w + xx;
                if pick(j) {
                    let p = original.get_pixel(xx as u32, yy as u32).0;
                    for k in 0..3 {
                        sum[k] += u32::from(p[k]);
                    }
                    n += 1;
                }
            }
        }
        (n > 0).then(|| sum.map(|s| (s / n) as u8))
    };
    let interior = |j: usize| opaque(j) && !band[j];
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            if !band[i] {
                continue;
            }
            let colour = mean_near(x, y, 3, &interior)
                .or_else(|| mean_near(x, y, 6, &interior))
                .or_else(|| {
                    let b = ground(x, y).or_else(|| mean_near(x, y, 6, &|j| alpha[j] <= 0.0))?;
                    let a = alpha[i].max(0.05);
                    let c = original.get_pixel(x as u32, y as u32).0;
                    Some([0, 1, 2].map(|k| {
                        ((f32::from(c[k]) - (1.0 - a) * f32::from(b[k])) / a)
                            .round()
                            .clamp(0.0, 255.0) as u8
                    }))
                });
            if let Some(c) = colour {
                let p = px.get_pixel_mut(x as u32, y as u32);
                p.0[..3].copy_from_slice(&c);
            }
        }
    }
}
