//! The [`Renderer`]: runs the stages and fills the [`RenderReport`].

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tiny_skia::Pixmap;

use crate::budget::{self, Deadline, RenderBudget};
use crate::geometry::{NodeBox, node_boxes};
use crate::image::{self, FetchLimits, HttpFetcher, ImageFetcher};
use crate::layout::{self, TextEngine};
use crate::report::{RenderReport, Warning, ms};
use crate::{Error, FontLibrary, Tree, backend, encode, scene};

pub use crate::limits::{DEFAULT_LONG_EDGE, MAX_EDGE, MAX_PIXELS};

/// Options for one render.
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    /// Output width in pixels; `None`: long edge 3840 at the root's aspect ratio.
    pub width: Option<u32>,
    /// Also encode a PNG into [`Rendered::png`].
    pub encode_png: bool,
}

/// The output of [`Renderer::render`].
#[derive(Debug)]
pub struct Rendered {
    /// Premultiplied RGBA pixels.
    pub pixmap: Pixmap,
    /// PNG bytes when [`RenderOptions::encode_png`] was set.
    pub png: Option<Vec<u8>>,
    pub report: RenderReport,
    /// Where every node was drawn, in output pixels ([`crate::geometry`]).
    pub boxes: Vec<NodeBox>,
}

/// The output of [`Renderer::layout_boxes`]: the layout alone, no pixels.
#[derive(Debug, Clone, PartialEq)]
pub struct LaidOut {
    /// Output size in pixels.
    pub width: u32,
    pub height: u32,
    /// Output pixels per design pixel (`width` / the root's width).
    pub scale: f32,
    /// Every node's box, parents before children.
    pub boxes: Vec<NodeBox>,
    /// What layout could not do as asked (missing fonts, text that does not fit).
    pub warnings: Vec<Warning>,
}

/// How [`Renderer::measure_text`] found a text to come out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TextMeasure {
    /// Lines after breaking.
    pub lines: usize,
    /// The widest line.
    pub width: f32,
    /// The height of the lines.
    pub height: f32,
    /// True when a word was wider than the box and had to be broken.
    pub broke_word: bool,
}

/// Renders trees. Create one per process and share it (`&Renderer` is `Sync`): it holds the
/// font database and glyph caches, which take a moment to build. Text layout is serialised
/// through an internal mutex; rasterisation runs in parallel across threads.
pub struct Renderer {
    text: Mutex<TextEngine>,
    /// A canvas buffer handed back through [`Renderer::recycle`].
    spare: Mutex<Option<Vec<u8>>>,
    /// Decoded images kept between renders (off unless enabled).
    cache: Option<Mutex<image::ImageCache>>,
    /// Whether `cache` is keyed by the images' bytes ([`Renderer::with_content_image_cache`])
    /// rather than their URLs.
    by_content: bool,
    fetcher: Arc<dyn ImageFetcher>,
    svg_options: resvg::usvg::Options<'static>,
    /// The GPU that draws the display list, when one was chosen.
    gpu: Option<Arc<backend::gpu::GpuContext>>,
}

/// `--backend auto|cpu|gpu` (`ADFORGE_BACKEND`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BackendChoice {
    /// A hardware GPU when one is present, else the CPU. Software Vulkan (lavapipe) counts
    /// as no GPU: it is slower than the CPU backend. Without a GPU device node
    /// ([`backend::gpu::hardware_present`]) Vulkan is not loaded at all.
    #[default]
    Auto,
    Cpu,
    /// Any Vulkan adapter, software included; none is a start-up error.
    Gpu,
}

impl std::str::FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Self::Auto),
            "cpu" => Ok(Self::Cpu),
            "gpu" => Ok(Self::Gpu),
            other => Err(format!("unknown backend `{other}`: use auto, cpu or gpu")),
        }
    }
}

/// Opens the GPU that `choice` asks for: `None` for `Cpu`, and for `Auto` without a
/// hardware GPU.
///
/// # Errors
/// [`Error::GpuUnavailable`] for `Gpu` when no Vulkan adapter can be opened.
pub fn open_gpu(choice: BackendChoice) -> Result<Option<Arc<backend::gpu::GpuContext>>, Error> {
    use backend::gpu::{AdapterKind, GpuContext};
    match choice {
        BackendChoice::Cpu => Ok(None),
        // No device node for a hardware GPU: nothing to ask Vulkan for
        // ([`backend::gpu::hardware_present`]).
        BackendChoice::Auto if !backend::gpu::hardware_present() => Ok(None),
        BackendChoice::Auto => Ok(GpuContext::new(AdapterKind::Hardware).ok().map(Arc::new)),
        BackendChoice::Gpu => GpuContext::new(AdapterKind::Any).map(|c| Some(Arc::new(c))),
    }
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer").finish_non_exhaustive()
    }
}

/// Output size for a design of `design` (w, h) and an optional width override.
///
/// # Errors
/// [`Error::InvalidSize`] when the result is empty or larger than [`MAX_EDGE`].
pub fn output_size(design: (f32, f32), width: Option<u32>) -> Result<(u32, u32), Error> {
    let (dw, dh) = design;
    let (w, h) = match width {
        Some(w) => (w, (w as f32 * dh / dw).round().max(1.0) as u32),
        None if dw >= dh => (
            DEFAULT_LONG_EDGE,
            (DEFAULT_LONG_EDGE as f32 * dh / dw).round().max(1.0) as u32,
        ),
        None => (
            (DEFAULT_LONG_EDGE as f32 * dw / dh).round().max(1.0) as u32,
            DEFAULT_LONG_EDGE,
        ),
    };
    if u64::from(w) * u64::from(h) > MAX_PIXELS {
        return Err(Error::InvalidSize {
            width: w,
            height: h,
            message: format!("more than {MAX_PIXELS} pixels"),
        });
    }
    if w == 0 || h == 0 || w > MAX_EDGE || h > MAX_EDGE {
        return Err(Error::InvalidSize {
            width: w,
            height: h,
            message: format!("each side must be 1..={MAX_EDGE}"),
        });
    }
    Ok((w, h))
}

impl Renderer {
    /// A renderer with these fonts and this image fetcher.
    pub fn new(fonts: FontLibrary, fetcher: Arc<dyn ImageFetcher>) -> Self {
        let svg_options = resvg::usvg::Options {
            fontdb: Arc::new(fonts.usvg_db()),
            font_family: crate::fonts::DEFAULT_FAMILY.to_owned(),
            // SVG images must not read local files or nested URLs.
            image_href_resolver: resvg::usvg::ImageHrefResolver {
                resolve_data: resvg::usvg::ImageHrefResolver::default_data_resolver(),
                resolve_string: Box::new(|_, _| None),
            },
            ..Default::default()
        };
        Self {
            text: Mutex::new(TextEngine::new(&fonts)),
            spare: Mutex::new(None),
            cache: None,
            by_content: false,
            fetcher,
            svg_options,
            gpu: None,
        }
    }

    /// Bundled fonts and an http(s) fetcher with default limits (public addresses only).
    #[cfg(feature = "bundled-fonts")]
    pub fn with_defaults() -> Self {
        Self::new(
            FontLibrary::bundled(),
            Arc::new(HttpFetcher::new(FetchLimits::default())),
        )
    }

    /// Keeps up to `max_bytes` of decoded images between renders, keyed by URL. Use it when
    /// image URLs are immutable (a blob store): re-rendering an edited ad then fetches and
    /// decodes nothing. Off by default.
    pub fn with_image_cache(mut self, max_bytes: usize) -> Self {
        self.cache = Some(Mutex::new(image::ImageCache::new(max_bytes)));
        self.by_content = false;
        self
    }

    /// Keeps up to `max_bytes` of decoded images between renders, keyed by their bytes
    /// (with the URL): every render still fetches its images, but an image whose bytes were
    /// decoded before is not decoded again, whatever the URL's content did in between. For
    /// a worker: an ad's check renders and its full-size render decode its photo and logo
    /// once, and a batch's ads of one product decode its photo once.
    pub fn with_content_image_cache(mut self, max_bytes: usize) -> Self {
        self.cache = Some(Mutex::new(image::ImageCache::new(max_bytes)));
        self.by_content = true;
        self
    }

    /// How many decoded images the cache holds (0 without one).
    pub fn cached_images(&self) -> usize {
        self.cache
            .as_ref()
            .and_then(|c| c.lock().ok().map(|c| c.len()))
            .unwrap_or(0)
    }

    /// Draws the display list on `gpu` (see [`open_gpu`]); a render the GPU cannot draw is
    /// redone on the CPU and reported in [`crate::RenderReport::gpu`].
    pub fn with_gpu(mut self, gpu: Option<Arc<backend::gpu::GpuContext>>) -> Self {
        self.gpu = gpu;
        self
    }

    /// The GPU this renderer draws with, if any.
    pub fn gpu(&self) -> Option<&Arc<backend::gpu::GpuContext>> {
        self.gpu.as_ref()
    }

    fn load_images(&self, urls: &[String]) -> image::ImageMap {
        let Some(cache) = &self.cache else {
            return image::load_images(urls, self.fetcher.as_ref(), &self.svg_options);
        };
        if self.by_content {
            let decode = |url: &str, bytes: Vec<u8>| {
                let key = image::content_key(url, &bytes);
                if let Some(img) = cache.lock().ok().and_then(|mut c| c.get(&key)) {
                    return Ok(img);
                }
                let img = Arc::new(image::decode(&bytes, &self.svg_options)?);
                if let Ok(mut c) = cache.lock() {
                    c.insert(&key, img.clone());
                }
                Ok(img)
            };
            return image::load_images_with(urls, self.fetcher.as_ref(), &decode);
        }
        let mut out = image::ImageMap::new();
        let mut missing = Vec::new();
        if let Ok(mut c) = cache.lock() {
            for u in urls {
                match c.get(u) {
                    Some(img) => {
                        out.insert(u.clone(), Ok(img));
                    }
                    None => missing.push(u.clone()),
                }
            }
        } else {
            missing = urls.to_vec();
        }
        let loaded = image::load_images(&missing, self.fetcher.as_ref(), &self.svg_options);
        if let Ok(mut c) = cache.lock() {
            for (u, r) in &loaded {
                if let Ok(img) = r {
                    c.insert(u, img.clone());
                }
            }
        }
        out.extend(loaded);
        out
    }

    /// Sets `characters` in `style` (a TEXT node's font, weight, line height, case and
    /// letter spacing, as [`Tree`] parsed it; its own `characters`, `maxLines` and ellipsis
    /// are ignored) at `font_size` in a box `width` wide, and says how the layout engine
    /// breaks it, without drawing anything. A copywriter uses it to choose words that fit a
    /// slot at the reference's type size. Takes the text engine's lock (microseconds).
    pub fn measure_text(
        &self,
        style: &crate::tree::TextStyle,
        characters: &str,
        font_size: f32,
        width: f32,
    ) -> TextMeasure {
        let mut style = style.clone();
        style.characters = characters.to_owned();
        style.max_lines = None;
        style.ellipsis = false;
        let mut engine = self
            .text
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let s = engine.shape(&style, font_size, Some(width.max(1.0)), None);
        TextMeasure {
            lines: s.lines,
            width: s.width,
            height: s.height,
            broke_word: s.broke_word,
        }
    }

    /// Fetches and decodes the images of `tree` ahead of a render, so that with an image
    /// cache ([`Renderer::with_image_cache`]) the render finds them there. Returns the URL
    /// and the reason of each image that failed (the render would skip it and warn).
    pub fn prefetch_images(&self, tree: &Tree) -> Vec<(String, String)> {
        let urls = image::image_urls(tree);
        let mut failed: Vec<(String, String)> = self
            .load_images(&urls)
            .into_iter()
            .filter_map(|(url, r)| r.err().map(|why| (url, why)))
            .collect();
        failed.sort();
        failed
    }

    /// Lays `tree` out at `width` (as [`Renderer::render`] would) without drawing it: the
    /// boxes of every node in output pixels. Reads no images (they do not change layout).
    ///
    /// # Errors
    /// [`Error::InvalidSize`] for an impossible `width`.
    pub fn layout_boxes(&self, tree: &Tree, width: Option<u32>) -> Result<LaidOut, Error> {
        let (w, h) = output_size(tree.design_size(), width)?;
        let mut warnings = Vec::new();
        let mut fitted = Vec::new();
        let layout = {
            let mut engine = self
                .text
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            layout::layout(tree, &mut engine, &mut warnings, &mut fitted)
        };
        dedup(&mut warnings);
        Ok(LaidOut {
            width: w,
            height: h,
            scale: w as f32 / tree.design_size().0,
            boxes: node_boxes(tree, &layout, w, h),
            warnings,
        })
    }

    /// Hands a finished canvas back for reuse by the next render (optional; saves the page
    /// faults of a fresh 4K allocation, about 10 ms). Keeps at most one buffer.
    pub fn recycle(&self, pixmap: Pixmap) {
        if let Ok(mut spare) = self.spare.lock() {
            *spare = Some(pixmap.take());
        }
    }

    /// The worst case memory of rendering `tree` at `width` ([`budget::peak_bytes`]), from
    /// its layout and display list (no image is fetched or drawn: tens of milliseconds for
    /// a large tree). Call it where trees are accepted, so a tree that no render could draw
    /// within [`budget::MAX_LAYER_BYTES`] is refused when it is sent.
    ///
    /// # Errors
    /// [`Error::InvalidSize`] for an impossible `width`; [`Error::TooMuchMemory`] naming
    /// the node whose layer takes the render over the bound.
    pub fn check_memory(
        &self,
        tree: &Tree,
        width: Option<u32>,
        encode_png: bool,
    ) -> Result<budget::Peak, Error> {
        let (w, h) = output_size(tree.design_size(), width)?;
        let mut warnings = Vec::new();
        let mut fitted = Vec::new();
        let mut engine = self
            .text
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let layout = layout::layout(tree, &mut engine, &mut warnings, &mut fitted);
        let images = image::ImageMap::new();
        let scene = scene::build_scene(tree, &layout, &images, &mut engine, w, h, &mut warnings);
        drop(engine);
        let peak = budget::peak_bytes(&scene, encode_png);
        over_memory(tree, &peak, w, h)?;
        Ok(peak)
    }

    /// Renders `tree`. Missing fonts, failed images and unsupported features become warnings
    /// in the report; they never fail the render.
    ///
    /// # Errors
    /// [`Error::InvalidSize`] for an impossible `width`, [`Error::TooMuchMemory`] for a tree
    /// whose layers would hold more than [`budget::MAX_LAYER_BYTES`], [`Error::Stopped`]
    /// when the process is shutting down, [`Error::Encode`] if PNG encoding fails.
    pub fn render(&self, tree: &Tree, options: &RenderOptions) -> Result<Rendered, Error> {
        self.render_until(tree, options, &Deadline::NONE)
    }

    /// [`Renderer::render`] within a time budget: past `deadline` the render stops (between
    /// draw operations and, inside blurs and shadows, between rows) and answers
    /// [`Error::PastDeadline`], freeing its thread and its share of the memory budget.
    ///
    /// # Errors
    /// Those of [`Renderer::render`], and [`Error::PastDeadline`].
    pub fn render_until(
        &self,
        tree: &Tree,
        options: &RenderOptions,
        deadline: &Deadline,
    ) -> Result<Rendered, Error> {
        let start = Instant::now();
        let (width, height) = output_size(tree.design_size(), options.width)?;
        if deadline.passed() {
            return Err(deadline.error("starting"));
        }
        let mut report = RenderReport {
            width,
            height,
            ..Default::default()
        };

        let t = Instant::now();
        let urls = image::image_urls(tree);
        let images = self.load_images(&urls);
        report.timings.images_ms = ms(t);

        let mut engine = self
            .text
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let t = Instant::now();
        let layout = layout::layout(
            tree,
            &mut engine,
            &mut report.warnings,
            &mut report.fitted_text,
        );
        report.timings.layout_ms = ms(t);
        let boxes = node_boxes(tree, &layout, width, height);

        let t = Instant::now();
        let scene = scene::build_scene(
            tree,
            &layout,
            &images,
            &mut engine,
            width,
            height,
            &mut report.warnings,
        );
        drop(engine);
        report.timings.scene_ms = ms(t);

        // Reserve the worst case before drawing: a scene over the bound is refused, and
        // one that does not fit beside the renders in flight waits its turn.
        let peak = budget::peak_bytes(&scene, options.encode_png);
        over_memory(tree, &peak, width, height)?;
        let _reserved = RenderBudget::global()
            .reserve(peak.bytes, deadline)
            .ok_or_else(|| deadline.error("waiting for memory"))?;

        let t = Instant::now();
        let buffer = self
            .spare
            .lock()
            .map(|mut s| s.take())
            .ok()
            .flatten()
            .unwrap_or_default();
        if deadline.passed() {
            return Err(deadline.error("drawing"));
        }
        let gpu_out = self.gpu.as_ref().map(|g| {
            let r = g.render(&scene);
            (g.adapter(), r)
        });
        let out = match gpu_out {
            Some((adapter, Ok(o))) => {
                report.backend = crate::report::BackendUsed::Gpu;
                report.gpu = Some(crate::report::GpuReport {
                    adapter,
                    upload_ms: o.timings.upload_ms,
                    draw_ms: o.timings.draw_ms,
                    readback_ms: o.timings.readback_ms,
                    fallback: None,
                });
                backend::cpu::CpuOutput {
                    pixmap: o.pixmap,
                    contrast: o.contrast,
                }
            }
            Some((adapter, Err(failure))) => {
                report.gpu = Some(crate::report::GpuReport {
                    adapter,
                    fallback: Some(failure.to_string()),
                    ..Default::default()
                });
                cpu_until(&scene, buffer, deadline)?
            }
            None => cpu_until(&scene, buffer, deadline)?,
        };
        report.timings.raster_ms = ms(t);
        for (node, ratio) in out.contrast {
            if ratio < 4.5
                && !report
                    .warnings
                    .iter()
                    .any(|w| matches!(w, Warning::LowContrast { node: n, .. } if *n == node))
            {
                report.warnings.push(Warning::LowContrast {
                    node,
                    ratio: (ratio * 100.0).round() / 100.0,
                });
            }
        }
        dedup(&mut report.warnings);

        let png = if options.encode_png {
            if deadline.passed() {
                return Err(deadline.error("encoding"));
            }
            let t = Instant::now();
            let bytes = encode::encode_png(&out.pixmap)?;
            report.timings.encode_ms = ms(t);
            Some(bytes)
        } else {
            None
        };
        report.timings.total_ms = ms(start);
        Ok(Rendered {
            pixmap: out.pixmap,
            png,
            report,
            boxes,
        })
    }
}

/// The CPU backend within `deadline`.
fn cpu_until(
    scene: &scene::Scene,
    buffer: Vec<u8>,
    deadline: &Deadline,
) -> Result<backend::cpu::CpuOutput, Error> {
    match backend::cpu::render_until(scene, buffer, deadline) {
        (out, false) => Ok(out),
        (_, true) => Err(deadline.error("drawing")),
    }
}

/// [`Error::TooMuchMemory`] when `peak` is over the bound.
fn over_memory(tree: &Tree, peak: &budget::Peak, width: u32, height: u32) -> Result<(), Error> {
    if !peak.over() {
        return Ok(());
    }
    let node = peak.node.map_or_else(
        || tree.node(tree.root_index()).id.clone(),
        |i| tree.node(i).id.clone(),
    );
    Err(Error::TooMuchMemory {
        node,
        bytes: peak.bytes,
        limit: budget::MAX_LAYER_BYTES,
        width,
        height,
    })
}

fn dedup(w: &mut Vec<Warning>) {
    let mut seen = Vec::with_capacity(w.len());
    w.retain(|x| {
        if seen.contains(x) {
            false
        } else {
            seen.push(x.clone());
            true
        }
    });
}
