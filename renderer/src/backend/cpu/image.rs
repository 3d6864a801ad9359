//! Image paints: resampled once to their device size with fast_image_resize (Lanczos3 /
//! Catmull-Rom) or rasterised by resvg, then drawn as a pattern.

use fast_image_resize::images::{Image, ImageRef};
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
use rayon::prelude::*;
use tiny_skia::{FilterQuality, IntSize, Pattern, Pixmap, Shader, SpreadMode, Transform};

use crate::image::ImageSource;

/// A pattern source ready to draw: the pixmap and the transform from its pixels to device
/// space.
pub struct Prepared {
    pub pixmap: Pixmap,
    pub to_device: Transform,
    pub quality: FilterQuality,
}

/// Prepares `src` for drawing with `to_device` (image pixels → device pixels). Only the
/// part of the image inside `visible` (device pixels) is resampled.
pub fn prepare(
    src: &ImageSource,
    to_device: Transform,
    tile: bool,
    visible: tiny_skia::Rect,
) -> Option<Prepared> {
    let (iw, ih) = src.size();
    let axis_aligned =
        to_device.kx == 0.0 && to_device.ky == 0.0 && to_device.sx > 0.0 && to_device.sy > 0.0;
    if !axis_aligned {
        // Rotated or skewed: sample the original with bicubic filtering (SVG at 2x its size).
        let pixmap = match src {
            ImageSource::Raster(p) => p.clone(),
            ImageSource::Svg(t) => {
                // Twice its size, but never more than 16 MP.
                let k = (2.0f32).min((16.0e6 / (iw * ih).max(1.0)).sqrt());
                rasterise_svg(
                    t,
                    (iw * k).ceil().max(1.0) as u32,
                    (ih * k).ceil().max(1.0) as u32,
                    (0.0, 0.0, iw, ih),
                )?
            }
        };
        let k = iw / pixmap.width() as f32;
        return Some(Prepared {
            pixmap,
            to_device: to_device.pre_scale(k, k),
            quality: FilterQuality::Bicubic,
        });
    }
    let (sx, sy, tx, ty) = (to_device.sx, to_device.sy, to_device.tx, to_device.ty);
    // Source rectangle that covers the visible device area (plus filter support).
    let (cx, cy, cw, ch) = if tile {
        (0.0, 0.0, iw, ih)
    } else {
        let m = 3.0;
        let x0 = (((visible.left() - tx) / sx).floor() - m).clamp(0.0, iw);
        let y0 = (((visible.top() - ty) / sy).floor() - m).clamp(0.0, ih);
        let x1 = (((visible.right() - tx) / sx).ceil() + m).clamp(0.0, iw);
        let y1 = (((visible.bottom() - ty) / sy).ceil() + m).clamp(0.0, ih);
        if x1 <= x0 || y1 <= y0 {
            return None;
        }
        (x0, y0, x1 - x0, y1 - y0)
    };
    let tw = (cw * sx).round().max(1.0) as u32;
    let th = (ch * sy).round().max(1.0) as u32;
    if u64::from(tw) * u64::from(th) > 64_000_000 {
        return None;
    }
    let whole = cx == 0.0 && cy == 0.0 && cw == iw && ch == ih;
    let resized = match src {
        ImageSource::Raster(p) if whole && p.width() == tw && p.height() == th => p.clone(),
        ImageSource::Raster(p) => resize(p, (cx, cy, cw, ch), tw, th)?,
        ImageSource::Svg(t) => rasterise_svg(t, tw, th, (cx, cy, cw, ch))?,
    };
    // Map the resized pixels onto exactly the same device rectangle.
    let fx = cw * sx / tw as f32;
    let fy = ch * sy / th as f32;
    let (pixmap, pad) = if tile {
        (resized, 0.0)
    } else {
        (with_border(&resized)?, 1.0)
    };
    let to_device = Transform::from_row(
        fx,
        0.0,
        0.0,
        fy,
        tx + cx * sx - pad * fx,
        ty + cy * sy - pad * fy,
    );
    let exact = (fx - 1.0).abs() < 1e-4
        && (fy - 1.0).abs() < 1e-4
        && (to_device.tx - to_device.tx.round()).abs() < 1e-3
        && (to_device.ty - to_device.ty.round()).abs() < 1e-3;
    Some(Prepared {
        pixmap,
        to_device,
        quality: if exact {
            FilterQuality::Nearest
        } else {
            FilterQuality::Bilinear
        },
    })
}

/// Resamples the part of `src` that lands in the integer device rectangle covering
/// `visible` onto the device grid exactly: the result is drawn 1:1 at the returned offset.
/// `None` when `to_device` rotates or skews (use [`prepare`]).
pub fn prepare_aligned(
    src: &ImageSource,
    to_device: Transform,
    visible: tiny_skia::Rect,
) -> Option<(Pixmap, i32, i32)> {
    let (sx, sy, tx, ty) = (to_device.sx, to_device.sy, to_device.tx, to_device.ty);
    if to_device.kx != 0.0 || to_device.ky != 0.0 || sx <= 0.0 || sy <= 0.0 {
        return None;
    }
    let (iw, ih) = src.size();
    // Device pixels covered by both the visible area and the image.
    let x0 = visible.left().floor().max(tx.floor());
    let y0 = visible.top().floor().max(ty.floor());
    let x1 = visible.right().ceil().min((tx + iw * sx).ceil());
    let y1 = visible.bottom().ceil().min((ty + ih * sy).ceil());
    if x1 <= x0 || y1 <= y0 {
        return None;
    }
    let (tw, th) = ((x1 - x0) as u32, (y1 - y0) as u32);
    // The source rectangle behind those device pixels (clamped at the image edge).
    let cx = ((x0 - tx) / sx).clamp(0.0, iw);
    let cy = ((y0 - ty) / sy).clamp(0.0, ih);
    let cw = (((x1 - tx) / sx).clamp(0.0, iw) - cx).max(1e-3);
    let ch = (((y1 - ty) / sy).clamp(0.0, ih) - cy).max(1e-3);
    let pixmap = match src {
        ImageSource::Raster(p) => resize(p, (cx, cy, cw, ch), tw, th)?,
        ImageSource::Svg(t) => rasterise_svg(t, tw, th, (cx, cy, cw, ch))?,
    };
    Some((pixmap, x0 as i32, y0 as i32))
}

impl Prepared {
    /// A shader for a path drawn with `path_transform`.
    pub fn shader(
        &self,
        path_transform: Transform,
        tile: bool,
        opacity: f32,
    ) -> Option<Shader<'_>> {
        let local = path_transform.invert()?.pre_concat(self.to_device);
        Some(Pattern::new(
            self.pixmap.as_ref(),
            if tile {
                SpreadMode::Repeat
            } else {
                SpreadMode::Pad
            },
            self.quality,
            opacity,
            local,
        ))
    }
}

/// A copy with a one-pixel transparent border, so `SpreadMode::Pad` fades out at the edge
/// instead of smearing the outermost pixels (needed for FIT).
fn with_border(p: &Pixmap) -> Option<Pixmap> {
    let (w, h) = (p.width() as usize, p.height() as usize);
    let mut out = Pixmap::new(w as u32 + 2, h as u32 + 2)?;
    let stride = (w + 2) * 4;
    let src = p.data();
    let dst = out.data_mut();
    for y in 0..h {
        let o = (y + 1) * stride + 4;
        dst[o..o + w * 4].copy_from_slice(&src[y * w * 4..(y + 1) * w * 4]);
    }
    Some(out)
}

fn resize(p: &Pixmap, crop: (f32, f32, f32, f32), tw: u32, th: u32) -> Option<Pixmap> {
    let src = ImageRef::new(p.width(), p.height(), p.data(), PixelType::U8x4).ok()?;
    // The resize writes every byte.
    let mut data = super::pool::take_dirty(tw as usize * th as usize * 4);
    let filter = if (tw as f32) < crop.2 {
        FilterType::Lanczos3
    } else {
        FilterType::CatmullRom
    };
    let (cx, cy, cw, ch) = (
        f64::from(crop.0),
        f64::from(crop.1),
        f64::from(crop.2),
        f64::from(crop.3),
    );
    // A large output (a 4K ad's photo is 7 MP) is made as two halves of rows on rayon's
    // pool, each from the source rows behind it; always two, so the pixels do not depend
    // on the machine. The filter's window may reach past a half's crop into the rest of
    // the source, so the seam matches a single pass (tested below, byte for byte). Small
    // ones stay on this thread: a
    // hand-off per image in the worker's small check renders cost more than it saved.
    if u64::from(tw) * u64::from(th) >= 4_000_000 && th >= 2 {
        let h1 = th / 2;
        let ch1 = ch * f64::from(h1) / f64::from(th);
        let (top, bottom) = data.split_at_mut(h1 as usize * tw as usize * 4);
        let (a, b) = rayon::join(
            || resize_part(&src, (cx, cy, cw, ch1), filter, top, tw, h1),
            || {
                resize_part(
                    &src,
                    (cx, cy + ch1, cw, ch - ch1),
                    filter,
                    bottom,
                    tw,
                    th - h1,
                )
            },
        );
        a.and(b)?;
    } else {
        resize_part(&src, (cx, cy, cw, ch), filter, &mut data, tw, th)?;
    }
    // Ringing can push a colour channel above alpha; keep the premultiplied invariant.
    // Nothing to do where every alpha is 255 (a photo): checked first, branch-free.
    let is_opaque = |b: &[u8]| b.chunks_exact(4).fold(255u8, |m, p| m & p[3]) == 255;
    let opaque = if data.len() >= 1 << 21 {
        data.par_chunks(1 << 16).all(is_opaque)
    } else {
        data.chunks(4096).all(is_opaque)
    };
    for px in data.chunks_exact_mut(4).filter(|_| !opaque) {
        let a = px[3];
        for c in &mut px[..3] {
            *c = (*c).min(a);
        }
    }
    Pixmap::from_vec(data, IntSize::from_wh(tw, th)?)
}

/// Resamples the `crop` rectangle of `src` into `out` (`tw`×`th` RGBA).
fn resize_part(
    src: &ImageRef<'_>,
    crop: (f64, f64, f64, f64),
    filter: FilterType,
    out: &mut [u8],
    tw: u32,
    th: u32,
) -> Option<()> {
    let mut dst = Image::from_slice_u8(tw, th, out, PixelType::U8x4).ok()?;
    // The pixels are premultiplied already, so no alpha handling is needed.
    let opts = ResizeOptions::new()
        .resize_alg(ResizeAlg::Convolution(filter))
        .use_alpha(false)
        .crop(crop.0, crop.1, crop.2, crop.3);
    // One resizer per thread: it keeps its intermediate buffer (one pass's output, a few
    // megabytes for a photo in a 4K ad) between images instead of faulting in a fresh one
    // each time. A resize whose intermediate would be larger than `KEEP_BYTES` gets a
    // resizer of its own, so no thread holds on to tens of megabytes after a huge image.
    const KEEP_BYTES: f64 = 16.0 * 1024.0 * 1024.0;
    thread_local! {
        static RESIZER: std::cell::RefCell<Resizer> = std::cell::RefCell::new(Resizer::new());
    }
    let intermediate = 4.0 * (f64::from(tw) * crop.3).max(crop.2 * f64::from(th));
    if intermediate <= KEEP_BYTES {
        RESIZER
            .with_borrow_mut(|r| r.resize(src, &mut dst, &opts))
            .ok()
    } else {
        Resizer::new().resize(src, &mut dst, &opts).ok()
    }
}

fn rasterise_svg(
    t: &resvg::usvg::Tree,
    w: u32,
    h: u32,
    crop: (f32, f32, f32, f32),
) -> Option<Pixmap> {
    let mut pixmap = Pixmap::new(w, h)?;
    let (cx, cy, cw, ch) = crop;
    let transform = Transform::from_scale(w as f32 / cw, h as f32 / ch).pre_translate(-cx, -cy);
    resvg::render(t, transform, &mut pixmap.as_mut());
    Some(pixmap)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 4K-sized resample made as two halves equals the single pass, byte for byte, both
    /// up (Catmull-Rom) and down (Lanczos3), from a crop that starts inside the image.
    #[test]
    fn halves_equal_one_pass() {
        let source = |w: u32, h: u32| {
            let mut p = Pixmap::new(w, h).unwrap_or_else(|| unreachable!());
            for (i, px) in p.data_mut().chunks_exact_mut(4).enumerate() {
                let v = (i as u32).wrapping_mul(2_654_435_761) >> 7;
                let a = 128 + (v % 128) as u8;
                px[3] = a;
                for (c, o) in px[..3].iter_mut().enumerate() {
                    *o = ((v >> (8 * c)) as u8).min(a);
                }
            }
            p
        };
        for (p, crop, tw, th) in [
            (
                source(613, 411),
                (33.3f32, 1.7f32, 533.3f32, 399.1f32),
                3072u32,
                2304u32,
            ),
            (source(2600, 2000), (10.5, 3.25, 2580.0, 1990.0), 2100, 1950),
        ] {
            assert!(
                u64::from(tw) * u64::from(th) >= 4_000_000,
                "takes the split"
            );
            let split = resize(&p, crop, tw, th).unwrap_or_else(|| unreachable!());
            let mut whole = vec![0u8; tw as usize * th as usize * 4];
            let c = (
                f64::from(crop.0),
                f64::from(crop.1),
                f64::from(crop.2),
                f64::from(crop.3),
            );
            let filter = if (tw as f32) < crop.2 {
                FilterType::Lanczos3
            } else {
                FilterType::CatmullRom
            };
            let src = ImageRef::new(p.width(), p.height(), p.data(), PixelType::U8x4)
                .unwrap_or_else(|_| unreachable!());
            assert!(resize_part(&src, c, filter, &mut whole, tw, th).is_some());
            for px in whole.chunks_exact_mut(4) {
                let a = px[3];
                for v in &mut px[..3] {
                    *v = (*v).min(a);
                }
            }
            assert!(split.data() == whole.as_slice(), "{tw}x{th}");
        }
    }
}
