//! Images: fetching, decoding (PNG, JPEG, WebP via `image`, SVG via resvg) with pixel limits.

pub mod fetch;

use std::collections::HashMap;
use std::sync::Arc;

pub use fetch::{FetchLimits, HttpFetcher, HttpReply, ImageFetcher};
use tiny_skia::Pixmap;

use crate::report::Warning;
use crate::tree::{Paint, Tree};

/// Largest decoded image accepted, in pixels (decompression-bomb guard).
pub const MAX_IMAGE_PIXELS: u64 = 64_000_000;

/// A decoded image.
pub enum ImageSource {
    /// Premultiplied RGBA pixels.
    Raster(Pixmap),
    /// A vector image, rasterised by the backend at the size it is drawn.
    Svg(Box<resvg::usvg::Tree>),
}

impl std::fmt::Debug for ImageSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (w, h) = self.size();
        write!(f, "ImageSource({w}x{h})")
    }
}

impl ImageSource {
    /// Size in pixels (SVG: its viewport size).
    pub fn size(&self) -> (f32, f32) {
        match self {
            Self::Raster(p) => (p.width() as f32, p.height() as f32),
            Self::Svg(t) => (t.size().width(), t.size().height()),
        }
    }
}

/// Decoded images by URL; failures carry the reason.
pub type ImageMap = HashMap<String, Result<Arc<ImageSource>, String>>;

/// Every distinct image URL in the tree, in node order.
pub fn image_urls(tree: &Tree) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for n in tree.nodes() {
        for p in n.fills.iter().chain(&n.strokes) {
            if let Paint::Image { url, .. } = p
                && seen.insert(url.clone())
            {
                out.push(url.clone());
            }
        }
    }
    out
}

/// One [`Warning::ImageFailed`] per node whose fills or strokes use an image of `failed`
/// (URL and reason, as [`crate::Renderer::prefetch_images`] returns them), in node order:
/// what a render of `tree` reports for those images, for callers that lay a tree out
/// without drawing it (a preview's boxes).
pub fn failed_image_warnings(tree: &Tree, failed: &[(String, String)]) -> Vec<Warning> {
    let mut out = Vec::new();
    if failed.is_empty() {
        return out;
    }
    for n in tree.nodes() {
        let mut urls: Vec<&String> = n
            .fills
            .iter()
            .chain(&n.strokes)
            .filter_map(|p| match p {
                Paint::Image { url, .. } => Some(url),
                _ => None,
            })
            .collect();
        urls.dedup();
        for url in urls {
            if let Some((_, reason)) = failed.iter().find(|(u, _)| u == url) {
                out.push(Warning::ImageFailed {
                    node: n.id.clone(),
                    url: url.clone(),
                    reason: reason.clone(),
                });
            }
        }
    }
    out
}

/// Fetches and decodes all images, a few at a time.
pub fn load_images(
    urls: &[String],
    fetcher: &dyn ImageFetcher,
    svg_opts: &resvg::usvg::Options,
) -> ImageMap {
    load_images_with(urls, fetcher, &|_, bytes| {
        decode(&bytes, svg_opts).map(Arc::new)
    })
}

/// A decoder given each image's URL and bytes (see [`load_images_with`]).
pub type DecodeFn<'a> = dyn Fn(&str, Vec<u8>) -> Result<Arc<ImageSource>, String> + Sync + 'a;

/// [`load_images`] with `decode` turning each URL's fetched bytes into an image (a cache
/// keyed by the bytes decodes each distinct image once).
pub fn load_images_with(
    urls: &[String],
    fetcher: &dyn ImageFetcher,
    decode: &DecodeFn<'_>,
) -> ImageMap {
    let results: Vec<(String, Result<Arc<ImageSource>, String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = urls
            .chunks(urls.len().div_ceil(4).max(1))
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|u| (u.clone(), fetcher.fetch(u).and_then(|b| decode(u, b))))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    results.into_iter().collect()
}

/// Decodes PNG, JPEG, WebP or SVG bytes.
///
/// # Errors
/// A message when the format is unknown, the data is corrupt or the image is too large.
pub fn decode(bytes: &[u8], svg_opts: &resvg::usvg::Options) -> Result<ImageSource, String> {
    let head = &bytes[..bytes.len().min(512)];
    let looks_svg = head.windows(4).any(|w| w == b"<svg") || head.starts_with(b"<?xml");
    if looks_svg {
        let tree =
            resvg::usvg::Tree::from_data(bytes, svg_opts).map_err(|e| format!("SVG: {e}"))?;
        return Ok(ImageSource::Svg(Box::new(tree)));
    }
    let mut reader = image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| e.to_string())?;
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(16384);
    limits.max_image_height = Some(16384);
    limits.max_alloc = Some(MAX_IMAGE_PIXELS * 4);
    reader.limits(limits);
    let (w, h) = reader.into_dimensions().map_err(|e| e.to_string())?;
    if u64::from(w) * u64::from(h) > MAX_IMAGE_PIXELS {
        return Err(format!("{w}x{h} is more than {MAX_IMAGE_PIXELS} pixels"));
    }
    let mut reader = image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| e.to_string())?;
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(MAX_IMAGE_PIXELS * 8);
    reader.limits(limits);
    let img = reader.decode().map_err(|e| e.to_string())?.into_rgba8();
    let (w, h) = img.dimensions();
    let mut data = img.into_raw();
    for px in data.chunks_exact_mut(4) {
        let a = u16::from(px[3]);
        if a < 255 {
            for c in &mut px[..3] {
                *c = ((u16::from(*c) * a + 127) / 255) as u8;
            }
        }
    }
    let size = tiny_skia::IntSize::from_wh(w, h).ok_or("empty image")?;
    Pixmap::from_vec(data, size)
        .map(ImageSource::Raster)
        .ok_or_else(|| "bad image size".to_owned())
}

/// The key of an image in an [`ImageCache`] keyed by content: its URL, its length and a
/// 64-bit SipHash of its bytes. Two different images at one URL with the same length and
/// hash would be confused; only whoever serves the URL could make them, and they decide
/// what it shows anyway.
pub(crate) fn content_key(url: &str, bytes: &[u8]) -> String {
    use std::hash::Hasher;
    let mut h = std::hash::DefaultHasher::new();
    h.write(bytes);
    format!("{url}\u{0}{}:{:016x}", bytes.len(), h.finish())
}

/// Decoded images kept between renders, least recently used dropped first once `max_bytes`
/// is exceeded. Only successes are kept; keys are URLs (use it for immutable URLs: blob
/// stores) or [`content_key`]s (any URL: the bytes are fetched and hashed each time, only
/// the decode is saved).
#[derive(Debug)]
pub(crate) struct ImageCache {
    max_bytes: usize,
    used: usize,
    tick: u64,
    entries: HashMap<String, (Arc<ImageSource>, usize, u64)>,
}

impl ImageCache {
    pub(crate) fn new(max_bytes: usize) -> Self {
        Self {
            max_bytes,
            used: 0,
            tick: 0,
            entries: HashMap::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn get(&mut self, url: &str) -> Option<Arc<ImageSource>> {
        self.tick += 1;
        let tick = self.tick;
        self.entries.get_mut(url).map(|e| {
            e.2 = tick;
            e.0.clone()
        })
    }

    pub(crate) fn insert(&mut self, url: &str, image: Arc<ImageSource>) {
        let bytes = match image.as_ref() {
            ImageSource::Raster(p) => p.data().len(),
            ImageSource::Svg(_) => 64 << 10,
        };
        if bytes > self.max_bytes {
            return;
        }
        self.tick += 1;
        if let Some(old) = self
            .entries
            .insert(url.to_owned(), (image, bytes, self.tick))
        {
            self.used -= old.1;
        }
        self.used += bytes;
        while self.used > self.max_bytes {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.2)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(e) = self.entries.remove(&oldest) {
                self.used -= e.1;
            }
        }
    }
}
