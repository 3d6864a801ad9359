//! From a coarse mask to the cut-out: the product's box cropped out of the full photo and
//! scaled to at most [`MAX_EDGE`], its alpha computed at that scale, the edge feathered to
//! [`FEATHER_PX`], edge colours cleaned of the old ground, and the result trimmed to what
//! is visible.
//!
//! **Alpha.** The colour key is evaluated again at the output scale (crisp edges from the
//! photo's own pixels; the coarse mask only adds the product's enclosed parts and drops
//! specks). The model's 320 px map is upsampled bilinearly. Either soft value `m` becomes
//! alpha by its signed distance to the `m = 0.5` outline, `(m - 0.5) / |∇m|`, ramped over
//! [`FEATHER_PX`] output pixels: the edge is 1.5 px soft wherever it is, however blurred the
//! upsampled map was. A photo that already has alpha keeps it.
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
use super::key::GroundModel;
use super::mask::{Coarse, morph};

/// Longest edge of a stored cut-out in pixels: an ad draws its product at most about
/// 2000 px tall at 4K (the blueprint's silhouette slots), so more is not shown.
pub const MAX_EDGE: u32 = 2048;

/// Width of the feathered edge in output pixels.
pub const FEATHER_PX: f32 = 1.5;

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
    let mut m = vec![0f32; w * h];
    for y in 0..h {
        for x in 0..w {
            let (u, v) = pos(x, y);
            let cell = coarse.cell(u, v);
            if !near[cell] {
                continue;
            }
            let p = px.get_pixel(x as u32, y as u32).0;
            m[y * w + x] = match fine {
                Fine::SourceAlpha => f32::from(p[3]) / 255.0,
                Fine::Key(ground) => {
                    let k = ground.key([p[0], p[1], p[2]].map(f32::from), u, v);
                    if inside[cell] { 1.0 } else { k }
                }
                Fine::Saliency => coarse.soft_at(u, v),
            };
        }
    }
    let alpha = match fine {
        Fine::SourceAlpha => m,
        _ => feather(&m, w, h),
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
