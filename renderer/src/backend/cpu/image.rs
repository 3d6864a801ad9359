//! Image paints: resampled once to their device size with fast_image_resize (Lanczos3 /
//! Catmull-Rom) or rasterised by resvg, then drawn as a pattern.

use fast_image_resize::images::{Image, ImageRef};
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
use tiny_skia::{FilterQuality, IntSize, Pattern, Pixmap, Shader, SpreadMode, Transform};

use crate::image::ImageSource;

/// A pattern source ready to draw: the pixmap and the transform from its pixels to device
/// space.
pub struct Prepared {
    pub pixmap: Pixmap,
    pub to_device: Transform,
    pub quality: FilterQuality,
}

/// Prepares `src` for drawing with `to_device` (image pixels → device pixels).
pub fn prepare(src: &ImageSource, to_device: Transform, tile: bool) -> Option<Prepared> {
    let (iw, ih) = src.size();
    let axis_aligned =
        to_device.kx == 0.0 && to_device.ky == 0.0 && to_device.sx > 0.0 && to_device.sy > 0.0;
    if !axis_aligned {
        // Rotated or skewed: sample the original with bicubic filtering (SVG at 2x its size).
        let pixmap = match src {
            ImageSource::Raster(p) => p.clone(),
            ImageSource::Svg(t) => {
                rasterise_svg(t, (iw * 2.0).ceil() as u32, (ih * 2.0).ceil() as u32)?
            }
        };
        let k = iw / pixmap.width() as f32;
        return Some(Prepared {
            pixmap,
            to_device: to_device.pre_scale(k, k),
            quality: FilterQuality::Bicubic,
        });
    }
    let tw = (iw * to_device.sx).round().max(1.0) as u32;
    let th = (ih * to_device.sy).round().max(1.0) as u32;
    if u64::from(tw) * u64::from(th) > 200_000_000 {
        return None;
    }
    let resized = match src {
        ImageSource::Raster(p) if p.width() == tw && p.height() == th => p.clone(),
        ImageSource::Raster(p) => resize(p, tw, th)?,
        ImageSource::Svg(t) => rasterise_svg(t, tw, th)?,
    };
    // Map the resized pixels onto exactly the same device rectangle.
    let fx = iw * to_device.sx / tw as f32;
    let fy = ih * to_device.sy / th as f32;
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
        to_device.tx - pad * fx,
        to_device.ty - pad * fy,
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

fn resize(p: &Pixmap, tw: u32, th: u32) -> Option<Pixmap> {
    let src = ImageRef::new(p.width(), p.height(), p.data(), PixelType::U8x4).ok()?;
    let mut dst = Image::new(tw, th, PixelType::U8x4);
    let filter = if tw < p.width() {
        FilterType::Lanczos3
    } else {
        FilterType::CatmullRom
    };
    // The pixels are premultiplied already, so no alpha handling is needed.
    let opts = ResizeOptions::new()
        .resize_alg(ResizeAlg::Convolution(filter))
        .use_alpha(false);
    Resizer::new().resize(&src, &mut dst, &opts).ok()?;
    let mut data = dst.into_vec();
    // Ringing can push a colour channel above alpha; keep the premultiplied invariant.
    for px in data.chunks_exact_mut(4) {
        let a = px[3];
        for c in &mut px[..3] {
            *c = (*c).min(a);
        }
    }
    Pixmap::from_vec(data, IntSize::from_wh(tw, th)?)
}

fn rasterise_svg(t: &resvg::usvg::Tree, w: u32, h: u32) -> Option<Pixmap> {
    let mut pixmap = Pixmap::new(w, h)?;
    let s = t.size();
    resvg::render(
        t,
        Transform::from_scale(w as f32 / s.width(), h as f32 / s.height()),
        &mut pixmap.as_mut(),
    );
    Some(pixmap)
}
