//! What every pipeline of a render node uses, held once per process: the renderer (fonts,
//! glyph caches, the GPU, decoded images by content), the fetcher with its per-job shelf ([`fetch`]), the blob store,
//! the key that opens sealed tokens, the blocking-thread hand-off, the render within its
//! budget, the check render and the timed full-size render ([`render`]), and the blob keys
//! results are stored under.
//!
//! The ad generation pipeline ([`crate::generate`]) and design-tool sync ([`crate::figma`])
//! both take a [`Services`]; neither imports the other, and the router of job kinds
//! ([`crate::node::JobRouter`]) hands each job to its pipeline.
//!
//! Rejected alternative: one pipeline lending its parts to the other (until issue 41 the
//! generation handler built Figma's parts, and Figma reached into `generate` for the
//! fetcher, the keys and the render budget): each kept its own copy of the blocking
//! hand-off and of the render timings, and a change to one pipeline rebuilt the other's
//! reasons to change.
//!
//! ```no_run
//! # fn demo(blobs: std::sync::Arc<dyn adforge_worker::blob::BlobStore>) {
//! use adforge_worker::services::Services;
//! // One per process: it owns the renderer (fonts, glyph caches).
//! let services = Services::new(blobs, adforge_renderer::FontLibrary::bundled(),
//!     adforge_renderer::FetchLimits::default(), None, None);
//! # }
//! ```

pub mod fetch;
pub mod render;

use std::sync::Arc;

use adforge_renderer::{FetchLimits, FontLibrary, Renderer};
use bytes::Bytes;

use crate::blob::BlobStore;
use crate::runner::JobError;
use crate::secrets::SecretKey;
pub use fetch::ShelfFetcher;
pub use render::{
    CHECK_WIDTH, RENDER_BUDGET, TimedRender, image_failures, render, render_timed, render_within,
};

/// Most distinct images a tree may use in one render (the built-in layouts use two or
/// three).
pub const MAX_TREE_IMAGES: usize = 16;

/// Most memory the raster images of an edited tree may take decoded (RGBA, 4 bytes a
/// pixel), all of them together: the renderer holds every image of a tree at once while
/// it draws, so without this a tree could name many large images and take gigabytes.
pub const MAX_TREE_IMAGE_BYTES: u64 = 512 * 1024 * 1024;

/// Most memory the renderer's decoded images may keep between renders
/// ([`adforge_renderer::Renderer::with_content_image_cache`], keyed by the images' bytes): an
/// ad's check renders and its 4K render decode its photo and logo once instead of once a
/// render, and the ads of a batch that share a product decode its photo once.
pub const DECODED_IMAGE_BYTES: usize = 192 * 1024 * 1024;

/// Long edge of a design template's preview, in pixels.
pub const PREVIEW_EDGE: u32 = 1080;

/// The deterministic blob key of an ad version's PNG; a redo overwrites it.
pub fn blob_key(ad_id: &str, version: u32) -> String {
    format!("image-ads/{ad_id}/v{version}.png")
}

/// The blob key of a design template version's preview.
pub fn preview_key(template_id: &str, version: u32) -> String {
    format!("design-templates/{template_id}/v{version}/preview.png")
}

/// The render width that gives a preview of [`PREVIEW_EDGE`] px on its long edge, for a
/// design of `width` × `height`.
pub fn preview_width(width: f64, height: f64) -> u32 {
    if width >= height {
        PREVIEW_EDGE
    } else {
        ((f64::from(PREVIEW_EDGE) * width / height.max(1.0)).round() as u32).max(1)
    }
}

/// A v4-format UUID derived from the tree's subject (an ad id, a Figma file) and the node
/// `key` (a template node, a Figma node), so a redone job produces the same ids (the tree
/// is the same) and ids stay stable across versions.
pub fn node_uuid(subject: &str, key: &str) -> String {
    let a = fnv1a(&[subject, key]);
    let b = fnv1a(&[key, subject, "adforge-node"]);
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&a.to_be_bytes());
    bytes[8..].copy_from_slice(&b.to_be_bytes());
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .to_string()
}

/// FNV-1a over the parts (with a separator), stable across builds and platforms: the seed
/// of an ad's words and of its node ids (not for security).
pub fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.bytes().chain([0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// The services of one render node. Cheap to clone (every field is shared).
#[derive(Clone)]
pub struct Services {
    /// Draws every tree of the process (fonts, glyph caches, the GPU when chosen).
    pub renderer: Arc<Renderer>,
    /// Reads images for jobs and for the renderer, keeping a job's bytes for its renders.
    pub fetcher: Arc<ShelfFetcher>,
    /// Where results are stored.
    pub blobs: Arc<dyn BlobStore>,
    /// Opens the sealed third-party tokens jobs carry; `None`: such jobs are left to a
    /// worker that has the key.
    pub secrets: Option<Arc<SecretKey>>,
    /// Whether loopback and private addresses may be fetched (tests and local demos).
    pub allow_private: bool,
}

impl Services {
    /// The services over `blobs`: the fetcher (reading the store's own files directly),
    /// the renderer drawing with `fonts` on `gpu` (`None`: the CPU). Builds the renderer's
    /// font database (a few hundred ms); call it inside a tokio runtime.
    pub fn new(
        blobs: Arc<dyn BlobStore>,
        fonts: FontLibrary,
        fetch_limits: FetchLimits,
        gpu: Option<Arc<adforge_renderer::backend::gpu::GpuContext>>,
        secrets: Option<Arc<SecretKey>>,
    ) -> Self {
        let allow_private = fetch_limits.allow_private;
        let fetcher = Arc::new(ShelfFetcher::new(fetch_limits).with_own_files(blobs.clone()));
        let renderer = Arc::new(
            Renderer::new(fonts, fetcher.clone())
                .with_gpu(gpu)
                .with_content_image_cache(DECODED_IMAGE_BYTES),
        );
        Services {
            renderer,
            fetcher,
            blobs,
            secrets,
            allow_private,
        }
    }

    /// Fetches `url` on a blocking thread, keeping the bytes for the render; a failure is
    /// sorted into retry and abort naming `what` ([`fetch::classify`]).
    ///
    /// # Errors
    /// The fetch's failure, sorted.
    pub async fn fetch(&self, what: &str, url: &str) -> Result<Arc<Vec<u8>>, JobError> {
        let fetcher = self.fetcher.clone();
        let u = url.to_owned();
        blocking(move || fetcher.fetch_and_keep(&u))
            .await?
            .map_err(|e| fetch::classify(what, url, &e))
    }

    /// Stores `png` under `key`.
    ///
    /// # Errors
    /// A retry when the store fails.
    pub async fn store(&self, key: &str, png: Vec<u8>) -> Result<(), JobError> {
        self.blobs
            .put(key, Bytes::from(png))
            .await
            .map_err(|e| JobError::retry(format!("storing {key}: {e}")))
    }
}

/// Runs CPU-bound or blocking work off the async threads; a panic becomes a retryable
/// failure.
///
/// # Errors
/// A retry when the task panicked or was cancelled.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, JobError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| JobError::retry(format!("pipeline task failed: {e}")))
}
