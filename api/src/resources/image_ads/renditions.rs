//! Renditions: the files ad platforms take, beside the 4K PNG of each completed version.
//! JPEG and WebP at 1080 px wide (the ad's own aspect) and at its placement's standard
//! size: the one of 1080×1080, 1080×1350, 1080×1920 and 1200×628 whose aspect is nearest
//! the ad's.
//!
//! # Fitting an ad to its placement's size
//! An ad within 1% of the placement's aspect is scaled to it (a stretch of at most 1%,
//! nothing cut). Any other ad is scaled to fit inside the placement's size, keeping its
//! aspect, and centred on a band of the mean colour of the ad's outer pixels
//! ("letterboxed"): nothing is cut, so no text is ever clipped. A cover-crop was rejected
//! because it cuts whatever lies near the edges (headlines, logos, the CTA); a true
//! re-layout for another shape is what `POST /v1/image-ads/{id}/resize` is for.
//! When the 1080-wide size is the placement's size (an ad of exactly 1:1, 4:5 or 9:16),
//! it is offered once.
//!
//! # Where and when they are made
//! Lazily, by the API, on the first request of any of a version's rendition URLs
//! ([`made_on_request`], called by `GET /files/{key}` when the key is missing): the PNG is
//! decoded once under the process-wide decode budget and every rendition of the version is
//! encoded and stored in the blob store under keys derived from the PNG's own key
//! (`image-ads/{id}/v{n}.png` → `image-ads/{id}/v{n}/{w}x{h}.{jpg,webp}`), so they are made
//! once per version and served like any other blob afterwards. The list of renditions
//! ([`listed`]) is a pure function of the ad's `image_url`, width and height, so
//! `GET /v1/image-ads/{id}`, the list and webhook events all carry it without I/O.
//! Making them in the worker when the ad completes was rejected: it would add four
//! encodes to every ad's "POST → completed" time (and to every batch ad) for files many
//! ads never have downloaded, and it would grow the typed job result. The cost: the first
//! download of a version's renditions waits for them (one decode and four to eight
//! encodes), and with `--blob-public-url` (a CDN or public bucket in front of the store) a
//! miss never reaches this API, so there the renditions' URLs answer 404 until made (left to
//! do: make them in the background once the ad completes, or ask through `/files/`).
//! One version's renditions are made at a time per process (a mutex), which bounds the
//! memory and CPU a burst of first downloads takes and makes concurrent first requests
//! of one version wait for the one making instead of encoding twice.

use std::io::Cursor;

use bytes::Bytes;
use image::{DynamicImage, RgbaImage};
use serde::Serialize;
use utoipa::ToSchema;

use adforge_worker::blob::BlobStore;
use adforge_worker::imaging;

use crate::error::{ApiError, ApiResult};

/// Output width of the size that keeps the ad's aspect.
pub const WIDE: u32 = 1080;
/// The placements' standard sizes: feed 1:1 and 4:5, stories and reels 9:16, link ads
/// 1.91:1.
pub const PLACEMENTS: [(u32, u32); 4] = [(1080, 1080), (1080, 1350), (1080, 1920), (1200, 628)];
/// The largest aspect difference (relative) scaled without letterboxing.
const SAME_ASPECT: f64 = 0.01;
/// JPEG quality: visually lossless for flat graphics and photos at this size.
const JPEG_QUALITY: u8 = 90;
/// Where ad PNGs live in the blob store (the worker's `services::blob_key`).
const AD_PREFIX: &str = "image-ads/";

/// A file format of a rendition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum RenditionFormat {
    /// `image/jpeg`, quality 90, no alpha.
    Jpeg,
    /// `image/webp`, lossless.
    Webp,
}

impl RenditionFormat {
    const ALL: [Self; 2] = [Self::Jpeg, Self::Webp];

    fn extension(self) -> &'static str {
        match self {
            Self::Jpeg => "jpg",
            Self::Webp => "webp",
        }
    }

    fn from_extension(ext: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.extension() == ext)
    }
}

/// One file of a completed ad for ad platforms: JPEG or WebP at 1080 px wide or at its
/// placement's standard size. Made on the first request of its URL, then kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Rendition {
    /// jpeg or webp.
    pub format: RenditionFormat,
    pub width: u32,
    pub height: u32,
    /// A public URL, like `image_url`'s; fixed for this version of the ad.
    pub url: String,
}

/// How a source is brought to one size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fit {
    /// Scaled to the size (aspect kept, or changed by at most [`SAME_ASPECT`]).
    Scale,
    /// Scaled to fit inside, centred on bands of the ad's edge colour.
    Letterbox,
}

/// The sizes made for an ad of `width` × `height`: 1080 wide, then its placement's size
/// (once, when they are the same).
fn sizes(width: u32, height: u32) -> Vec<(u32, u32, Fit)> {
    let (w, h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let wide_h = ((f64::from(WIDE) * h / w).round() as u32).max(1);
    let mut out = vec![(WIDE, wide_h, Fit::Scale)];
    let aspect = (w / h).ln();
    let distance = |&(pw, ph): &(u32, u32)| ((f64::from(pw) / f64::from(ph)).ln() - aspect).abs();
    let nearest = PLACEMENTS
        .iter()
        .min_by(|a, b| distance(a).total_cmp(&distance(b)))
        .copied()
        .unwrap_or(PLACEMENTS[0]);
    let fit = if distance(&nearest) <= (1.0 + SAME_ASPECT).ln() {
        Fit::Scale
    } else {
        Fit::Letterbox
    };
    if (nearest.0, nearest.1) != (WIDE, wide_h) {
        out.push((nearest.0, nearest.1, fit));
    }
    out
}

/// The renditions of an ad whose `image_url` is this server's PNG of one version; empty
/// while it is not completed (or for an image that is not an ad PNG of this server).
pub fn listed(
    status: &str,
    image_url: Option<&str>,
    width: Option<i64>,
    height: Option<i64>,
) -> Vec<Rendition> {
    let (Some(url), Some(w), Some(h)) = (image_url, width, height) else {
        return Vec::new();
    };
    let (Ok(w), Ok(h)) = (u32::try_from(w), u32::try_from(h)) else {
        return Vec::new();
    };
    let Some(stem) = url.strip_suffix(".png") else {
        return Vec::new();
    };
    if status != "completed" || !stem.contains(&format!("/{AD_PREFIX}")) {
        return Vec::new();
    }
    sizes(w, h)
        .into_iter()
        .flat_map(|(width, height, _)| {
            RenditionFormat::ALL
                .into_iter()
                .map(move |format| Rendition {
                    format,
                    width,
                    height,
                    url: format!("{stem}/{width}x{height}.{}", format.extension()),
                })
        })
        .collect()
}

/// What a blob key names if it is a rendition: the PNG's key, the size and the format.
fn parse_key(key: &str) -> Option<(String, u32, u32, RenditionFormat)> {
    if !key.starts_with(AD_PREFIX) {
        return None;
    }
    let (folder, file) = key.rsplit_once('/')?;
    let (size, ext) = file.rsplit_once('.')?;
    let format = RenditionFormat::from_extension(ext)?;
    let (w, h) = size.split_once('x')?;
    let (w, h) = (w.parse().ok()?, h.parse().ok()?);
    Some((format!("{folder}.png"), w, h, format))
}

fn key_of(png_key: &str, width: u32, height: u32, format: RenditionFormat) -> String {
    let stem = png_key.strip_suffix(".png").unwrap_or(png_key);
    format!("{stem}/{width}x{height}.{}", format.extension())
}

/// One version's renditions are made at a time in this process (see the module docs).
static MAKING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// For a missing blob `key`: when it names a rendition of an ad PNG this store holds, at a
/// size that PNG has, makes every rendition of that version, stores them, and answers
/// `true` (the blob is now there). `false` for any other key (the caller answers 404).
///
/// # Errors
/// Blob store failures; the stored PNG not decoding or an encoder failing (internal).
pub async fn made_on_request(blobs: &dyn BlobStore, key: &str) -> ApiResult<bool> {
    let Some((png_key, width, height, _)) = parse_key(key) else {
        return Ok(false);
    };
    let _making = MAKING.lock().await;
    // Made while this request waited for another's making.
    if blobs.exists(key).await.map_err(ApiError::internal)? {
        return Ok(true);
    }
    let Some(png) = blobs.get(&png_key).await.map_err(ApiError::internal)? else {
        return Ok(false);
    };
    // The header alone says which sizes this version has: a size it has not costs no decode.
    let probed = imaging::probe(&png).map_err(ApiError::internal)?;
    let planned = sizes(probed.width, probed.height);
    if !planned.iter().any(|&(w, h, _)| (w, h) == (width, height)) {
        return Ok(false);
    }
    let files = imaging::with_decoded(png, move |_, img| encode_all(&img, &planned))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
    for (w, h, format, bytes) in files {
        blobs
            .put(&key_of(&png_key, w, h, format), bytes)
            .await
            .map_err(ApiError::internal)?;
    }
    Ok(true)
}

type Encoded = (u32, u32, RenditionFormat, Bytes);

/// Every size in both formats; blocking.
fn encode_all(
    img: &DynamicImage,
    planned: &[(u32, u32, Fit)],
) -> Result<Vec<Encoded>, image::ImageError> {
    let mut out = Vec::with_capacity(planned.len() * 2);
    for &(w, h, fit) in planned {
        let pixels = match fit {
            Fit::Scale => imaging::resize_exact(img, w, h),
            Fit::Letterbox => letterboxed(img, w, h),
        };
        out.push((w, h, RenditionFormat::Jpeg, Bytes::from(jpeg(&pixels)?)));
        out.push((
            w,
            h,
            RenditionFormat::Webp,
            Bytes::from(imaging::encode_webp(&pixels)?),
        ));
    }
    Ok(out)
}

/// The ad scaled to fit inside `w` × `h`, centred on the mean colour of its outer pixels.
fn letterboxed(img: &DynamicImage, w: u32, h: u32) -> RgbaImage {
    let (sw, sh) = (
        f64::from(img.width().max(1)),
        f64::from(img.height().max(1)),
    );
    let scale = (f64::from(w) / sw).min(f64::from(h) / sh);
    let iw = ((sw * scale).round() as u32).clamp(1, w);
    let ih = ((sh * scale).round() as u32).clamp(1, h);
    let inner = imaging::resize_exact(img, iw, ih);
    let mut canvas = RgbaImage::from_pixel(w, h, edge_colour(&inner));
    image::imageops::replace(
        &mut canvas,
        &inner,
        i64::from((w - iw) / 2),
        i64::from((h - ih) / 2),
    );
    canvas
}

/// The mean of the image's outermost ring of pixels.
fn edge_colour(img: &RgbaImage) -> image::Rgba<u8> {
    let (w, h) = img.dimensions();
    let mut sum = [0u64; 4];
    let mut n = 0u64;
    for (x, y, p) in img.enumerate_pixels() {
        if x == 0 || y == 0 || x + 1 == w || y + 1 == h {
            for (s, c) in sum.iter_mut().zip(p.0) {
                *s += u64::from(c);
            }
            n += 1;
        }
    }
    let mean = |s: u64| u8::try_from(s / n.max(1)).unwrap_or(u8::MAX);
    image::Rgba([mean(sum[0]), mean(sum[1]), mean(sum[2]), mean(sum[3])])
}

/// Baseline JPEG of the pixels composited over white (JPEG has no alpha).
fn jpeg(img: &RgbaImage) -> Result<Vec<u8>, image::ImageError> {
    let rgb = image::RgbImage::from_fn(img.width(), img.height(), |x, y| {
        let [r, g, b, a] = img.get_pixel(x, y).0;
        let over = |c: u8| {
            let (c, a) = (u32::from(c), u32::from(a));
            u8::try_from((c * a + 255 * (255 - a) + 127) / 255).unwrap_or(u8::MAX)
        };
        image::Rgb([over(r), over(g), over(b)])
    });
    let mut out = Cursor::new(Vec::new());
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY)
        .encode_image(&rgb)?;
    Ok(out.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_the_nearest_placement() {
        // 4:5 exactly: 1080 wide is the placement's size, offered once.
        assert_eq!(sizes(3456, 4320), vec![(1080, 1350, Fit::Scale)]);
        // 1.91:1 within 1%: scaled to 1200×628.
        assert_eq!(
            sizes(3840, 2010),
            vec![(1080, 565, Fit::Scale), (1200, 628, Fit::Scale)]
        );
        // 2:3 is nearest 9:16 (0.667 against 0.5625 and 0.8) but 19% off it: letterboxed,
        // never cropped.
        assert_eq!(
            sizes(2560, 3840),
            vec![(1080, 1620, Fit::Scale), (1080, 1920, Fit::Letterbox)]
        );
        // 1:2 is nearest 9:16: letterboxed (bands at the sides).
        assert_eq!(
            sizes(2000, 4000),
            vec![(1080, 2160, Fit::Scale), (1080, 1920, Fit::Letterbox)]
        );
    }

    #[test]
    fn keys_name_their_png_and_size() {
        assert_eq!(
            parse_key("image-ads/ia_1/v2/1080x1350.webp"),
            Some((
                "image-ads/ia_1/v2.png".to_owned(),
                1080,
                1350,
                RenditionFormat::Webp
            ))
        );
        assert_eq!(parse_key("images/img_1/1080x1350.jpg"), None);
        assert_eq!(parse_key("image-ads/ia_1/v2/1080x1350.png"), None);
        assert_eq!(parse_key("image-ads/ia_1/v2/axb.jpg"), None);
        assert_eq!(
            key_of("image-ads/ia_1/v2.png", 1200, 628, RenditionFormat::Jpeg),
            "image-ads/ia_1/v2/1200x628.jpg"
        );
    }

    #[test]
    fn listed_only_when_completed() {
        let url = "http://x/files/image-ads/ia_1/v1.png";
        assert!(listed("processing", Some(url), Some(3840), Some(3840)).is_empty());
        let done = listed("completed", Some(url), Some(3840), Some(3840));
        assert_eq!(done.len(), 2);
        assert_eq!(
            done[0].url,
            "http://x/files/image-ads/ia_1/v1/1080x1080.jpg"
        );
        assert_eq!(done[1].format, RenditionFormat::Webp);
    }
}
