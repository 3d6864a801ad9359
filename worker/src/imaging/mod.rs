//! The one way client image bytes are decoded, in the API and in workers alike: format
//! sniffing, a completeness check, guarded decoding under a process-wide
//! memory budget, WebP thumbnails and a measured description ([`describe()`]). The
//! blocking work runs on blocking threads; [`decode_preview`] (uploads) and
//! [`decode_shrunk`] (swipe files, search by example) are the entry points that decode
//! client bytes. It lives in the worker crate because swipe-file ingest
//! ([`crate::swipe::ingest`]) decodes with it; the API turns an [`ImagingError`] into its
//! client error with one `From` impl.
//!
//! ```no_run
//! # async fn demo(bytes: bytes::Bytes) -> Result<(), Box<dyn std::error::Error>> {
//! use adforge_worker::imaging;
//!
//! // Waits for its share of the budget; refuses what is not a complete PNG, JPEG or WebP.
//! let preview = imaging::decode_preview(bytes).await?;
//! let [small, medium, large] = imaging::thumbnails(&preview.image)?;
//! # let _ = (small, medium, large);
//! # Ok(()) }
//! ```
//!
//! # Memory bound
//!
//! A small file can declare a large image (a 186 KB PNG of 16000×3000 decodes to 192 MB),
//! so what an upload costs is decided by its header, not its size. Every decode first
//! reserves its worst-case cost ([`decode_cost`]: the decoded buffer, the decoder's own
//! working memory, the resize buffer and 16 MiB of slack) against one budget of
//! [`DECODE_BUDGET_BYTES`] (512 MiB) for the whole process; a decode that does not fit
//! waits in a queue (first come, first served) until earlier ones release their share,
//! and one larger than the whole budget runs alone. The decoded image is shrunk at once
//! to [`PREVIEW_EDGE`] (1200 px, the largest thumbnail) and the full-size buffer dropped,
//! so what outlives the decode (thumbnails, description, logo theme) is at most
//! 1200×1200 RGBA (5.8 MB) per image. With the limits of [`MAX_PIXELS`] every single
//! image fits the budget (the costliest, a 50 MP progressive JPEG, reserves 470 MiB).
//!
//! Swipe-file ingest (in-process workers and `adforge worker` alike) and search by example
//! decode through the same budget with [`decode_shrunk`] at [`WORKING_EDGE`] (1600 px), so
//! a 7000×7000 16-bit PNG (392 MB decoded) reserves about 500 MB while it decodes and keeps
//! 10 MB after, and ingests in flight add at most their working-size copies (about 30 MB
//! each) to the budget.
//!
//! Worst case for image work in one API process: [`DECODE_BUDGET_BYTES`] for decodes in
//! flight, plus the bodies of the uploads being received (each at most 15 MiB), plus
//! 5.8 MB per image whose thumbnails are still being made. Tested by measuring the peak
//! RSS of a real server while a dozen 48 MP uploads arrive at once.
//!
//! Rejected alternative: decoding at reduced size in the decoder (JPEG's DCT scaling).
//! The `image` crate's JPEG decoder does not offer it and PNG has no equivalent; the
//! budget bounds every format alike.
//!
//! # Incomplete files
//!
//! One rule for the three formats: a file that ends before its format's end marker is
//! refused ([`ImagingError::Incomplete`], the API's `IMAGE_UNREADABLE`), however much of it
//! decodes. A PNG must reach its `IEND` chunk, a JPEG its end-of-image marker after the
//! image data, a WebP the length its RIFF header declares. Bytes after the end marker are
//! allowed (some cameras append data). A truncated upload is a failed transfer; storing
//! the half-grey image it decodes to would hide that from the client.

use std::io::Cursor;
use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits, RgbaImage};
use tokio::sync::Semaphore;

mod complete;
mod describe;

use complete::check_complete;
pub use describe::{describe, logo_theme};

/// Why client image bytes were refused or could not be decoded. The `Display` text of each
/// variant is the message the API sends (its `From<ImagingError> for ApiError` chooses the
/// code), so it is written for the person who uploaded the file.
#[derive(Debug, thiserror::Error)]
pub enum ImagingError {
    /// The bytes are an image format other than PNG, JPEG or WebP (GIF, BMP, TIFF, …),
    /// recognised from their first bytes. Convert the image to PNG, JPEG or WebP.
    #[error("The file is {found}; upload PNG, JPEG or WebP")]
    OtherFormat {
        /// The format's usual extension in capitals (`GIF`), or `AN UNSUPPORTED FORMAT`.
        found: String,
    },
    /// The first bytes match no image format at all (a text file, an HTML error page, a
    /// file cut before its signature). Send the image file itself.
    #[error(
        "The file is not a PNG, JPEG or WebP image (its first bytes match none of them); upload one of those formats"
    )]
    UnknownFormat,
    /// The file ends before its format's end marker (PNG `IEND`, JPEG end-of-image, WebP's
    /// RIFF length), however much of it would decode: a failed or cut-off transfer. Send
    /// the whole file.
    #[error("The {} file is incomplete ({why}); upload the whole file", upper_name(.format))]
    Incomplete {
        format: ImageFormat,
        /// Where the file ends, in words (`it ends inside a chunk`).
        why: &'static str,
    },
    /// The header or the pixel data does not decode: a corrupt file, or one the decoder
    /// does not support (a JPEG in an exotic colour mode). Re-export the image.
    #[error(
        "The {} file cannot be decoded ({source}); check that it is complete and not corrupted",
        upper_name(.format)
    )]
    Undecodable {
        format: ImageFormat,
        source: image::ImageError,
    },
    /// The header declares an image over [`MAX_SIDE`] pixels a side or [`MAX_PIXELS`]
    /// pixels in all (or with a zero side). Scale the image down before sending it.
    #[error(
        "the image is {width}×{height} pixels; at most {} pixels a side and {} pixels in all are accepted",
        MAX_SIDE,
        MAX_PIXELS
    )]
    TooLarge { width: u32, height: u32 },
    /// The blocking task that probes or decodes ended abnormally (a decoder panicked), or
    /// the decode budget was closed. A bug, not the file's fault: `cause` says what
    /// happened; the text is the API's generic 500 message, which is what the client sees.
    #[error(
        "The server failed to handle the request; retry, and report meta.request_id if it persists"
    )]
    Internal {
        /// What went wrong, for the log.
        cause: String,
    },
}

impl ImagingError {
    fn internal(cause: impl std::fmt::Display) -> Self {
        Self::Internal {
            cause: cause.to_string(),
        }
    }
}

/// `PNG`, `JPEG` or `WEBP`, as the error texts name formats.
fn upper_name(format: &ImageFormat) -> String {
    format_name(*format).to_uppercase()
}

/// Largest side accepted, in pixels.
pub const MAX_SIDE: u32 = 16_384;
/// Largest area accepted, in pixels (a decompression-bomb guard: 50 MP is 200 MB as RGBA).
pub const MAX_PIXELS: u64 = 50_000_000;

/// Long edges of the three thumbnails: small, medium, large.
pub const THUMB_EDGES: [u32; 3] = [200, 600, 1200];

/// Long edge of the image kept after decoding (the largest thumbnail's).
pub const PREVIEW_EDGE: u32 = THUMB_EDGES[2];

/// Long edge of the image swipe-file work keeps after decoding (ingest, search by example):
/// enough for Tesseract to read the words printed on a design; the models see 224 px.
pub const WORKING_EDGE: u32 = 1600;

/// Memory that decodes in flight may reserve at once, process-wide (see the module docs).
pub const DECODE_BUDGET_BYTES: u64 = 512 * 1024 * 1024;

/// Reservations are counted in KiB so that the budget fits a semaphore's `u32` counts.
const BUDGET_KIB: u32 = (DECODE_BUDGET_BYTES / 1024) as u32;

/// Slack added to every reservation: decoder state, row buffers, allocator rounding.
const DECODE_SLACK_BYTES: u64 = 16 * 1024 * 1024;

static DECODE_BUDGET: LazyLock<Arc<Semaphore>> =
    LazyLock::new(|| Arc::new(Semaphore::new(BUDGET_KIB as usize)));

/// What the header of an upload says, checked against the limits.
#[derive(Debug, Clone, Copy)]
pub struct Probe {
    pub format: ImageFormat,
    pub width: u32,
    pub height: u32,
    /// Bytes reserved against the decode budget while this image is decoded and shrunk to
    /// [`PREVIEW_EDGE`].
    pub cost: u64,
    /// Bytes per decoded pixel (16-bit and alpha included).
    pub pixel_bytes: u64,
}

impl Probe {
    /// What decoding this image and shrinking it to `edge` reserves ([`decode_cost`]).
    pub fn cost_at(&self, edge: u32) -> u64 {
        decode_cost_to(self.format, self.width, self.height, self.pixel_bytes, edge)
    }
}

/// An image decoded and shrunk to at most [`PREVIEW_EDGE`] (or the edge asked for) on its
/// long edge.
#[derive(Debug)]
pub struct Preview {
    pub format: ImageFormat,
    /// Size of the original image.
    pub width: u32,
    pub height: u32,
    /// The image, never enlarged, at most [`PREVIEW_EDGE`] (or the edge asked for) on its
    /// long edge.
    pub image: RgbaImage,
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

fn unreadable(format: ImageFormat, source: image::ImageError) -> ImagingError {
    ImagingError::Undecodable { format, source }
}

/// Decides the format from the bytes (never from a declared MIME type), checks that the
/// file is complete and reads the dimensions from the header, without decoding pixels.
///
/// # Errors
/// [`ImagingError::OtherFormat`] or [`ImagingError::UnknownFormat`] for anything but PNG,
/// JPEG or WebP; [`ImagingError::Incomplete`] or [`ImagingError::Undecodable`] for files
/// that are incomplete or whose header does not parse; [`ImagingError::TooLarge`] for
/// images over the size limits.
pub fn probe(bytes: &[u8]) -> Result<Probe, ImagingError> {
    let format = match image::guess_format(bytes) {
        Ok(f @ (ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::WebP)) => f,
        Ok(other) => {
            return Err(ImagingError::OtherFormat {
                found: other
                    .extensions_str()
                    .first()
                    .unwrap_or(&"an unsupported format")
                    .to_uppercase(),
            });
        }
        Err(_) => return Err(ImagingError::UnknownFormat),
    };
    check_complete(format, bytes).map_err(|why| ImagingError::Incomplete { format, why })?;
    let decoder = ImageReader::with_format(Cursor::new(bytes), format)
        .into_decoder()
        .map_err(|e| unreadable(format, e))?;
    let (width, height) = decoder.dimensions();
    if width == 0
        || height == 0
        || width > MAX_SIDE
        || height > MAX_SIDE
        || u64::from(width) * u64::from(height) > MAX_PIXELS
    {
        return Err(ImagingError::TooLarge { width, height });
    }
    let pixel_bytes = u64::from(decoder.color_type().bytes_per_pixel());
    Ok(Probe {
        format,
        width,
        height,
        cost: decode_cost(format, width, height, pixel_bytes),
        pixel_bytes,
    })
}

/// The most memory decoding a `width`×`height` image of `format` into pixels of
/// `pixel_bytes` bytes and shrinking it to [`PREVIEW_EDGE`] can take at once: the decoded
/// buffer; the decoder's working memory (JPEG: up to 6 bytes a pixel of 16-bit DCT
/// coefficients for progressive files; WebP: a 4-byte-a-pixel ARGB or YUV buffer; PNG
/// decodes into the output row by row); the resizer's one intermediate buffer (see
/// `shrink`); and [`DECODE_SLACK_BYTES`].
pub fn decode_cost(format: ImageFormat, width: u32, height: u32, pixel_bytes: u64) -> u64 {
    decode_cost_to(format, width, height, pixel_bytes, PREVIEW_EDGE)
}

/// [`decode_cost`] for a shrink to `edge` instead of [`PREVIEW_EDGE`].
fn decode_cost_to(
    format: ImageFormat,
    width: u32,
    height: u32,
    pixel_bytes: u64,
    edge: u32,
) -> u64 {
    let (w, h) = (u64::from(width), u64::from(height));
    let pixels = w * h;
    let working = match format {
        ImageFormat::Jpeg => 6 * pixels,
        ImageFormat::WebP => 4 * pixels,
        _ => 0,
    };
    let (tw, th) = fitted(width, height, edge);
    let resize = if (tw, th) == (width, height) {
        // No resize: the conversion to RGBA of an image of at most edge².
        pixels * 4
    } else {
        (w * u64::from(th)).max(u64::from(tw) * h) * pixel_bytes
    };
    pixels * pixel_bytes + working + resize + DECODE_SLACK_BYTES
}

/// Checks, then decodes `bytes` under the process-wide decode budget (waiting for its
/// share, see the module docs) and shrinks the result to [`PREVIEW_EDGE`]. The one way
/// client image bytes are decoded in the API.
///
/// # Errors
/// Those of [`probe`]; [`ImagingError::Undecodable`] when the pixel data does not decode;
/// [`ImagingError::Internal`] when the blocking task ends abnormally.
pub async fn decode_preview(bytes: Bytes) -> Result<Preview, ImagingError> {
    decode_shrunk(bytes, PREVIEW_EDGE).await
}

/// [`decode_preview`] shrinking to `edge` instead: checks, then decodes under the
/// process-wide decode budget (reserving the worst case of this image from its header,
/// 16-bit and alpha included) and shrinks to `edge` at once, dropping the full-size pixels
/// before the budget share is released. Swipe-file ingest and search by example decode
/// through this with [`WORKING_EDGE`].
///
/// # Errors
/// Those of [`probe`]; [`ImagingError::Undecodable`] when the pixel data does not decode;
/// [`ImagingError::Internal`] when the blocking task ends abnormally.
pub async fn decode_shrunk(bytes: Bytes, edge: u32) -> Result<Preview, ImagingError> {
    let probe_bytes = bytes.clone();
    let probed = tokio::task::spawn_blocking(move || probe(&probe_bytes))
        .await
        .map_err(ImagingError::internal)??;
    let kib = u32::try_from(probed.cost_at(edge).div_ceil(1024))
        .unwrap_or(u32::MAX)
        .min(BUDGET_KIB);
    let permit = DECODE_BUDGET
        .clone()
        .acquire_many_owned(kib)
        .await
        .map_err(ImagingError::internal)?;
    tokio::task::spawn_blocking(move || {
        let out = decode_probed_to(&bytes, &probed, edge);
        drop(permit);
        out
    })
    .await
    .map_err(ImagingError::internal)?
}

/// Checks and decodes `bytes` at full size under the decode budget, and runs `work` on the
/// image on a blocking thread while the budget share is still held (so what `work` makes
/// from the full-size pixels is covered too). For uses that need the whole image: swipe
/// files (WebP transcoded to PNG, embeddings, reading words).
///
/// # Errors
/// Those of [`probe`]; [`ImagingError::Undecodable`] when the pixel data does not decode;
/// [`ImagingError::Internal`] when the blocking task ends abnormally.
pub async fn with_decoded<R: Send + 'static>(
    bytes: Bytes,
    work: impl FnOnce(&Probe, DynamicImage) -> R + Send + 'static,
) -> Result<R, ImagingError> {
    let probe_bytes = bytes.clone();
    let probed = tokio::task::spawn_blocking(move || probe(&probe_bytes))
        .await
        .map_err(ImagingError::internal)??;
    let kib = u32::try_from(probed.cost.div_ceil(1024))
        .unwrap_or(u32::MAX)
        .min(BUDGET_KIB);
    let permit = DECODE_BUDGET
        .clone()
        .acquire_many_owned(kib)
        .await
        .map_err(ImagingError::internal)?;
    tokio::task::spawn_blocking(move || {
        let out = decode_full_probed(&bytes, &probed).map(|img| work(&probed, img));
        drop(permit);
        out
    })
    .await
    .map_err(ImagingError::internal)?
}

fn decode_full_probed(bytes: &[u8], probed: &Probe) -> Result<DynamicImage, ImagingError> {
    let format = probed.format;
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(probed.cost);
    reader.limits(limits);
    reader.decode().map_err(|e| unreadable(format, e))
}

/// Decodes an image that [`probe`] accepted and shrinks it; blocking. Call it through
/// [`decode_preview`], which holds the budget while this runs.
///
/// # Errors
/// [`ImagingError::Undecodable`] when the pixel data does not decode.
pub fn decode_probed(bytes: &[u8], probed: &Probe) -> Result<Preview, ImagingError> {
    decode_probed_to(bytes, probed, PREVIEW_EDGE)
}

/// [`decode_probed`] shrinking to `edge`; blocking, outside the budget (call it through
/// [`decode_shrunk`], or where the caller's concurrency bounds memory: benchmarks, tests).
///
/// # Errors
/// [`ImagingError::Undecodable`] when the pixel data does not decode.
pub fn decode_probed_to(bytes: &[u8], probed: &Probe, edge: u32) -> Result<Preview, ImagingError> {
    let full = decode_full_probed(bytes, probed)?;
    Ok(Preview {
        format: probed.format,
        width: probed.width,
        height: probed.height,
        image: shrink(full, edge),
    })
}

/// The size of an image `w`×`h` fitted within `edge` on its long edge (never enlarged).
fn fitted(w: u32, h: u32, edge: u32) -> (u32, u32) {
    let scale = f64::from(edge) / f64::from(w.max(h));
    if scale >= 1.0 {
        return (w, h);
    }
    (
        ((f64::from(w) * scale).round() as u32).max(1),
        ((f64::from(h) * scale).round() as u32).max(1),
    )
}

/// Shrinks so the long edge is at most `edge` (never enlarges) in the image's own pixel
/// type, consuming the full-size image. No full-size copy is made: alpha is premultiplied
/// in place (the resizer would premultiply into a copy), and the resizer's one buffer is
/// the source's width × the target's height (8-bit) or the target's width × the source's
/// height (16-bit).
fn shrink(mut full: DynamicImage, edge: u32) -> RgbaImage {
    let (w, h) = (full.width(), full.height());
    let (tw, th) = fitted(w, h, edge);
    if (tw, th) == (w, h) {
        return full.into_rgba8();
    }
    let mul_div = fast_image_resize::MulDiv::new();
    // Fails only for pixel types without alpha, which need no premultiplying.
    let premultiplied = mul_div.multiply_alpha_inplace(&mut full).is_ok();
    let mut dst = DynamicImage::new(tw, th, full.color());
    let opts = fast_image_resize::ResizeOptions::new()
        .resize_alg(fast_image_resize::ResizeAlg::Convolution(
            fast_image_resize::FilterType::Lanczos3,
        ))
        .use_alpha(false);
    match fast_image_resize::Resizer::new().resize(&full, &mut dst, &opts) {
        Ok(()) => {
            if premultiplied {
                let _ = mul_div.divide_alpha_inplace(&mut dst);
            }
            dst.into_rgba8()
        }
        // Pixel types the resizer does not take (none of PNG, JPEG or WebP's): via RGBA.
        Err(_) => {
            if premultiplied {
                let _ = mul_div.divide_alpha_inplace(&mut full);
            }
            fit_within(&full.into_rgba8(), edge)
        }
    }
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

/// Resizes to exactly `width` × `height` with a Lanczos filter, reading the image in its own
/// pixel type (no full-size RGBA copy of an RGB source), and returns RGBA at the new size.
/// The caller chooses the size, so the aspect may change: keep it within what it means to
/// stretch (the API's renditions stay within 1%).
pub fn resize_exact(img: &DynamicImage, width: u32, height: u32) -> RgbaImage {
    let mut dst = DynamicImage::new(width.max(1), height.max(1), img.color());
    let opts = fast_image_resize::ResizeOptions::new().resize_alg(
        fast_image_resize::ResizeAlg::Convolution(fast_image_resize::FilterType::Lanczos3),
    );
    match fast_image_resize::Resizer::new().resize(img, &mut dst, &opts) {
        Ok(()) => dst.into_rgba8(),
        // Pixel types the resizer does not take (none of PNG, JPEG or WebP's): via RGBA.
        Err(_) => image::imageops::resize(
            &img.to_rgba8(),
            width.max(1),
            height.max(1),
            image::imageops::FilterType::Lanczos3,
        ),
    }
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
pub fn thumbnails(img: &RgbaImage) -> Result<[Vec<u8>; 3], image::ImageError> {
    let large = fit_within(img, THUMB_EDGES[2]);
    let medium = fit_within(&large, THUMB_EDGES[1]);
    let small = fit_within(&medium, THUMB_EDGES[0]);
    Ok([
        encode_webp(&small)?,
        encode_webp(&medium)?,
        encode_webp(&large)?,
    ])
}

#[cfg(test)]
mod tests;
