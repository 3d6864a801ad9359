//! Image processing for uploads: format sniffing, guarded decoding, WebP thumbnails and a
//! measured description. Pure functions, run on blocking threads; they move to the worker
//! crate when the job pipelines arrive.

use std::io::Cursor;

use image::{DynamicImage, ImageFormat, ImageReader, Limits, RgbaImage};

use crate::error::{ApiError, ErrorCode};

/// Largest side accepted, in pixels.
pub const MAX_SIDE: u32 = 16_384;
/// Largest area accepted, in pixels (a decompression-bomb guard: 50 MP is 200 MB as RGBA).
pub const MAX_PIXELS: u64 = 50_000_000;

/// Long edges of the three thumbnails: small, medium, large.
pub const THUMB_EDGES: [u32; 3] = [200, 600, 1200];

/// A decoded upload.
#[derive(Debug)]
pub struct Decoded {
    pub format: ImageFormat,
    pub width: u32,
    pub height: u32,
    pub image: DynamicImage,
}

/// `png`, `jpeg` or `webp`.
pub fn format_name(f: ImageFormat) -> &'static str {
    match f {
        ImageFormat::Png => "png",
        ImageFormat::Jpeg => "jpeg",
        _ => "webp",
    }
}

pub fn extension(f: ImageFormat) -> &'static str {
    match f {
        ImageFormat::Png => "png",
        ImageFormat::Jpeg => "jpg",
        _ => "webp",
    }
}

/// Decides the format from the bytes (never from a declared MIME type), checks the
/// dimensions from the header before decoding, then decodes under allocation limits.
///
/// # Errors
/// IMAGE_INVALID_FORMAT for anything but PNG, JPEG or WebP; VALIDATION_ERROR for images
/// over the size limits; IMAGE_UNREADABLE when the bytes do not decode.
pub fn decode_upload(bytes: &[u8]) -> Result<Decoded, ApiError> {
    let format = match image::guess_format(bytes) {
        Ok(f @ (ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::WebP)) => f,
        Ok(other) => {
            return Err(ApiError::new(
                ErrorCode::ImageInvalidFormat,
                format!(
                    "The file is {}; upload PNG, JPEG or WebP",
                    other
                        .extensions_str()
                        .first()
                        .unwrap_or(&"an unsupported format")
                        .to_uppercase()
                ),
            ));
        }
        Err(_) => {
            return Err(ApiError::new(
                ErrorCode::ImageInvalidFormat,
                "The file is not a PNG, JPEG or WebP image (its first bytes match none of them); upload one of those formats",
            ));
        }
    };
    let unreadable = |e: image::ImageError| {
        ApiError::new(
            ErrorCode::ImageUnreadable,
            format!(
                "The {} file cannot be decoded ({e}); check that it is complete and not corrupted",
                format_name(format).to_uppercase()
            ),
        )
    };
    let (width, height) = ImageReader::with_format(Cursor::new(bytes), format)
        .into_dimensions()
        .map_err(unreadable)?;
    if width == 0
        || height == 0
        || width > MAX_SIDE
        || height > MAX_SIDE
        || u64::from(width) * u64::from(height) > MAX_PIXELS
    {
        return Err(ApiError::field(
            "file",
            format!(
                "the image is {width}×{height} pixels; at most {MAX_SIDE} pixels a side and {MAX_PIXELS} pixels in all are accepted"
            ),
        ));
    }
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_PIXELS * 4 + 64 * 1024 * 1024);
    reader.limits(limits);
    let image = reader.decode().map_err(unreadable)?;
    Ok(Decoded {
        format,
        width,
        height,
        image,
    })
}

/// Resizes so the long edge is at most `edge` (never enlarges), with a Lanczos filter.
pub fn fit_within(img: &RgbaImage, edge: u32) -> RgbaImage {
    let (w, h) = img.dimensions();
    let scale = f64::from(edge) / f64::from(w.max(h));
    if scale >= 1.0 {
        return img.clone();
    }
    let tw = ((f64::from(w) * scale).round() as u32).max(1);
    let th = ((f64::from(h) * scale).round() as u32).max(1);
    let mut dst = RgbaImage::new(tw, th);
    let mut resizer = fast_image_resize::Resizer::new();
    let opts = fast_image_resize::ResizeOptions::new().resize_alg(
        fast_image_resize::ResizeAlg::Convolution(fast_image_resize::FilterType::Lanczos3),
    );
    if resizer.resize(img, &mut dst, &opts).is_err() {
        // Only possible for pixel-type mismatches, which RgbaImage rules out; fall back.
        return image::imageops::resize(img, tw, th, image::imageops::FilterType::Lanczos3);
    }
    dst
}

/// Encodes RGBA as lossless WebP (the only WebP encoder of the pure-Rust image stack).
///
/// # Errors
/// Encoder failures.
pub fn encode_webp(img: &RgbaImage) -> Result<Vec<u8>, image::ImageError> {
    let mut out = Vec::new();
    image::codecs::webp::WebPEncoder::new_lossless(&mut out).encode(
        img.as_raw(),
        img.width(),
        img.height(),
        image::ExtendedColorType::Rgba8,
    )?;
    Ok(out)
}

/// The three thumbnails, small to large.
///
/// # Errors
/// Encoder failures.
pub fn thumbnails(img: &DynamicImage) -> Result<[Vec<u8>; 3], image::ImageError> {
    let rgba = img.to_rgba8();
    let large = fit_within(&rgba, THUMB_EDGES[2]);
    let medium = fit_within(&large, THUMB_EDGES[1]);
    let small = fit_within(&medium, THUMB_EDGES[0]);
    Ok([
        encode_webp(&small)?,
        encode_webp(&medium)?,
        encode_webp(&large)?,
    ])
}

const NAMED: [(&str, [u8; 3]); 15] = [
    ("black", [20, 20, 20]),
    ("white", [245, 245, 245]),
    ("gray", [128, 128, 128]),
    ("red", [200, 30, 40]),
    ("orange", [240, 140, 30]),
    ("yellow", [240, 220, 50]),
    ("green", [50, 160, 70]),
    ("teal", [30, 150, 150]),
    ("blue", [40, 90, 200]),
    ("navy", [20, 30, 80]),
    ("purple", [120, 60, 170]),
    ("pink", [235, 130, 180]),
    ("brown", [120, 75, 40]),
    ("beige", [225, 205, 170]),
    ("gold", [200, 165, 60]),
];

fn luminance(p: [u8; 3]) -> f64 {
    let lin = |c: u8| {
        let c = f64::from(c) / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * lin(p[0]) + 0.7152 * lin(p[1]) + 0.0722 * lin(p[2])
}

fn nearest_name(p: [u8; 3]) -> &'static str {
    let d = |a: [u8; 3], b: [u8; 3]| -> i32 {
        (0..3)
            .map(|i| (i32::from(a[i]) - i32::from(b[i])).pow(2))
            .sum()
    };
    NAMED
        .iter()
        .min_by_key(|(_, c)| d(p, *c))
        .map_or("gray", |(n, _)| n)
}

/// What can be measured about an image, in words: orientation, dominant named colours,
/// brightness and transparency. Used for image search and, later, embeddings.
pub fn describe(img: &DynamicImage) -> String {
    let small = fit_within(&img.to_rgba8(), 48);
    let (w, h) = (img.width(), img.height());
    let orientation = if w.abs_diff(h) * 20 < w.max(h) {
        "square"
    } else if w > h {
        "landscape"
    } else {
        "portrait"
    };
    let mut counts: Vec<(&str, usize)> = Vec::new();
    let (mut lum, mut opaque, mut total) = (0.0, 0usize, 0usize);
    for px in small.pixels() {
        total += 1;
        if px[3] < 128 {
            continue;
        }
        opaque += 1;
        let rgb = [px[0], px[1], px[2]];
        lum += luminance(rgb);
        let name = nearest_name(rgb);
        match counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => *c += 1,
            None => counts.push((name, 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let colours: Vec<&str> = counts
        .iter()
        .filter(|(_, c)| *c * 10 >= opaque.max(1))
        .take(3)
        .map(|(n, _)| *n)
        .collect();
    // Perceived lightness L* (0-100) of the mean luminance.
    let mean = if opaque > 0 { lum / opaque as f64 } else { 0.0 };
    let lightness = if mean > 0.008856 {
        116.0 * mean.cbrt() - 16.0
    } else {
        903.3 * mean
    };
    let brightness = if lightness > 70.0 {
        "bright"
    } else if lightness < 30.0 {
        "dark"
    } else {
        "mid-tone"
    };
    let mut out = format!(
        "{orientation} image, mostly {}, {brightness}",
        join_words(&colours)
    );
    if opaque * 10 < total * 9 {
        out.push_str(", with transparent areas");
    }
    out
}

fn join_words(words: &[&str]) -> String {
    match words {
        [] => "no dominant colour".to_string(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `light` when the logo's marks are light (made for dark backgrounds), else `dark`.
/// The marks are the opaque pixels, or for images without transparency the pixels that
/// differ clearly from the border colour.
pub fn logo_theme(img: &DynamicImage) -> &'static str {
    let small = fit_within(&img.to_rgba8(), 96);
    let (w, h) = small.dimensions();
    let has_alpha = small.pixels().any(|p| p[3] < 200);
    let border: Vec<[u8; 3]> = small
        .enumerate_pixels()
        .filter(|(x, y, _)| *x == 0 || *y == 0 || *x + 1 == w || *y + 1 == h)
        .map(|(_, _, p)| [p[0], p[1], p[2]])
        .collect();
    let n = border.len().max(1) as u32;
    let bg = [0, 1, 2].map(|i| (border.iter().map(|p| u32::from(p[i])).sum::<u32>() / n) as u8);
    let (mut lum, mut marks) = (0.0, 0usize);
    for p in small.pixels() {
        let rgb = [p[0], p[1], p[2]];
        let is_mark = if has_alpha {
            p[3] >= 128
        } else {
            (0..3)
                .map(|i| (i32::from(rgb[i]) - i32::from(bg[i])).abs())
                .sum::<i32>()
                > 90
        };
        if is_mark {
            lum += luminance(rgb);
            marks += 1;
        }
    }
    if marks > 0 && lum / marks as f64 > 0.45 {
        "light"
    } else {
        "dark"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(img: &RgbaImage) -> Vec<u8> {
        let mut out = Vec::new();
        img.write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
            .unwrap();
        out
    }

    #[test]
    fn sniffs_and_rejects() {
        let img = RgbaImage::from_pixel(40, 20, image::Rgba([10, 40, 200, 255]));
        let d = decode_upload(&png(&img)).unwrap();
        assert_eq!((d.width, d.height, format_name(d.format)), (40, 20, "png"));
        assert_eq!(
            decode_upload(b"GIF89a....").unwrap_err().code,
            ErrorCode::ImageInvalidFormat
        );
        assert_eq!(
            decode_upload(b"hello world").unwrap_err().code,
            ErrorCode::ImageInvalidFormat
        );
        let truncated = &png(&img)[..60];
        assert_eq!(
            decode_upload(truncated).unwrap_err().code,
            ErrorCode::ImageUnreadable
        );
    }

    #[test]
    fn describes_and_themes() {
        let blue = DynamicImage::ImageRgba8(RgbaImage::from_pixel(
            300,
            100,
            image::Rgba([40, 90, 200, 255]),
        ));
        assert_eq!(describe(&blue), "landscape image, mostly blue, mid-tone");
        let mut logo = RgbaImage::from_pixel(100, 100, image::Rgba([0, 0, 0, 0]));
        for x in 30..70 {
            for y in 30..70 {
                logo.put_pixel(x, y, image::Rgba([250, 250, 250, 255]));
            }
        }
        assert_eq!(logo_theme(&DynamicImage::ImageRgba8(logo)), "light");
        let mut on_white = RgbaImage::from_pixel(100, 100, image::Rgba([255, 255, 255, 255]));
        for x in 30..70 {
            on_white.put_pixel(x, 50, image::Rgba([10, 10, 10, 255]));
        }
        assert_eq!(logo_theme(&DynamicImage::ImageRgba8(on_white)), "dark");
    }

    #[test]
    fn thumbnails_fit_their_edges() {
        let img = DynamicImage::ImageRgba8(RgbaImage::from_pixel(
            1600,
            800,
            image::Rgba([200, 10, 10, 255]),
        ));
        let [s, m, l] = thumbnails(&img).unwrap();
        for (bytes, edge) in [(s, 200), (m, 600), (l, 1200)] {
            let t = image::load_from_memory_with_format(&bytes, ImageFormat::WebP).unwrap();
            assert_eq!((t.width(), t.height()), (edge, edge / 2));
        }
    }
}
