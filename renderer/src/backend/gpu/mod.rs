//! The GPU backend: executes the display list with wgpu and our WGSL, kept in this crate's
//! `shaders/` (`shaders/draw.wgsl` for the ops, `shaders/effects.wgsl` for shadows and blurs).
//!
//! # Design
//!
//! Work is split the way `vello_hybrid` splits it: **coverage on the CPU, everything per
//! pixel on the GPU.**
//!
//! - *Coverage.* Every path (fills, strokes, glyph runs, layer clips, emoji rectangles) is
//!   rasterised on the CPU by tiny-skia — the reference rasteriser — into an 8-bit mask,
//!   cropped to its visible device bounds and shelf-packed into one R8 atlas texture per
//!   render. Rectangles with whole-pixel edges (backgrounds, most cards and photos) need no
//!   mask at all: their coverage is 1 inside the quad. Glyphs are part of their text op's
//!   mask, as glyphon rasterises glyphs with swash on the CPU and only composites on the GPU.
//! - *Paint and compositing.* One shader draws every op as a quad: solid colour, linear and
//!   radial gradients (stops in a storage buffer, interpolated unpremultiplied like
//!   tiny-skia), and images (nearest / bilinear / Mitchell bicubic, pad or repeat). Photos
//!   are resampled onto the device grid once by the CPU backend's own resampler
//!   (`backend::cpu::image`), so both backends blend the same pixels; the GPU then copies
//!   them 1:1. Source-over uses the fixed-function premultiplied blend; the 15 other blend
//!   modes read a copy of the destination (copied texture-to-texture under the quad) and
//!   return the finished pixel.
//! - *Layers* (clip + opacity + blend mode) are offscreen textures the size of their bounds,
//!   composited into their parent as an image through the clip's mask.
//! - *Layer effects and BACKGROUND_BLUR* run in a second shader, `shaders/effects.wgsl`, as
//!   full-target passes over offscreen textures, in the CPU backend's order: the clip is
//!   applied to the finished layer, LAYER_BLUR blurs it; each drop shadow is the layer's
//!   alpha copied to a plane, spread (separable max / min passes), blurred, and drawn tinted
//!   and offset into a fresh target under the content; each inner shadow is the inverted,
//!   offset alpha spread, blurred and drawn tinted over the content, kept inside its alpha.
//!   BACKGROUND_BLUR copies what the target holds under the node, blurs the copy, and draws
//!   it back through the node's shape (a mask in the atlas) with the ordinary draw shader.
//!   The Gaussian is the CPU's (`backend::cpu::blur::passes` decides for both backends):
//!   three box blurs, each a horizontal and a vertical render pass; for sigma ≥ 5 the plane is
//!   box-averaged down by up to 16×, blurred there and scaled back with the same 8-bit
//!   bilinear weights. The passes compute on integer 0..255 levels exactly as the CPU code
//!   rounds, so a blurred plane is identical on both backends, and nothing is read back
//!   before the final canvas: one submit per render. Where no spread needs the full-size
//!   plane, the downsampling pass reads the content's alpha (or the backdrop) directly and
//!   the tint upsamples on the fly, so a shadow writes no full-size plane at all (two
//!   full-size passes instead of four per shadow). Scratch planes are reused
//!   within a render once no later pass reads them.
//!   The contrast of TEXT ops (LowContrast warnings) needs no sync either: the regions
//!   under each text are copied to buffers at their place in the command stream and
//!   measured by the CPU backend's code after the last submit.
//! - A scene the GPU path refuses outright (a canvas, layer or mask beyond the device's
//!   texture limits) or any device error (validation, out of memory, lost device, failed
//!   mapping) makes the renderer draw it on the CPU; `RenderReport::gpu.fallback` says why.
//!
//! # Rejected alternatives
//!
//! - *Full GPU path rasterisation* (vello's compute pipeline: flatten, bin, coarse and fine
//!   rasterisation in ~15 compute shaders). It is the fastest design for path-heavy scenes,
//!   but it is weeks of work, and its anti-aliasing differs from tiny-skia's, so the parity
//!   tolerance would have to be loose enough to hide real bugs. Ads are few large quads and a
//!   few text runs; their coverage is cheap on the CPU.
//! - *Tessellation* (iced_wgpu with lyon: paths → triangles, MSAA for edges). Needs MSAA
//!   targets for acceptable edges and still does not match tiny-skia's analytic coverage.
//! - *Analytic coverage in WGSL for rounded rectangles and ellipses* (iced's quad SDFs). Kept
//!   for later: an SDF edge differs from tiny-skia's by up to a few levels on every edge
//!   pixel, and the masks of these shapes are small (their bounds only).
//! - *Effects on the CPU between GPU passes* (the first version: read the layer back, run
//!   the CPU code, write it back). Exact, but a device sync and two 4K transfers per effect;
//!   replaced by the passes above.
//! - *A true separable Gaussian* (one weighted pass per axis, kernel of ±3σ taps, as
//!   iced's and most GPU blur shaders do). Cheaper per pass for small sigmas, but it is not
//!   the CPU's three-box approximation, so every shadow and blur would differ from the
//!   reference and the parity tolerance would have to absorb it, hiding real faults. Large
//!   sigmas would need the downsampling anyway.
//! - *Compute shaders for the box sums* (running sums per row in a workgroup). Fewer texel
//!   reads for large radii, but after downsampling the radii stay small (sigma / factor is
//!   below 5 up to sigma 80), and render passes reuse the targets, pipelines and bind-group layout the draws already have.
//! - *One shader per paint or blend mode.* A pipeline switch per op costs more than a
//!   uniform branch in one shader on the draw counts of an ad.
//!
//! # Lifetime
//!
//! Create one [`GpuContext`] per process and share it (`Arc`): it holds the instance, the
//! adapter, the device and queue, the pipelines (draw: source-over and blend; effects:
//! replace and source-over) and a pool of render targets. A lost
//! device is recreated on the next render.

mod execute;
mod plan;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tiny_skia::Pixmap;

use crate::Error;
use crate::scene::Scene;

pub use plan::Unsupported;

/// The WGSL source of the draw shader (every display-list op as a quad).
pub const DRAW_WGSL: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/draw.wgsl"));

/// The WGSL source of the effect shader (blur, spread, shadow and clip passes).
pub const EFFECTS_WGSL: &str =
    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/effects.wgsl"));

/// Which adapters [`GpuContext::new`] accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdapterKind {
    /// A hardware GPU (integrated, discrete or virtual); software rasterisers are refused.
    Hardware,
    /// Any Vulkan adapter, including software ones such as Mesa's lavapipe (tests, CI).
    Any,
}

/// Whether this machine has a device node through which a hardware GPU driver could be
/// reached: a DRM render node (`/dev/dri/renderD*`: AMD, Intel, Nouveau…), NVIDIA's
/// `/dev/nvidiactl`, or WSL's `/dev/dxg`. Without one no Vulkan adapter can be hardware,
/// so `--backend auto` does not load the Vulkan loader at all: on a server its implicit
/// layers only cost start-up time, and Mesa's device-select layer tries to reach a Wayland
/// and an X display, printing `error: XDG_RUNTIME_DIR is invalid or not set in the
/// environment.` twice on stderr (issue 39).
pub fn hardware_present() -> bool {
    let render_node = std::fs::read_dir("/dev/dri").is_ok_and(|dir| {
        dir.flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("renderD"))
    });
    render_node
        || std::path::Path::new("/dev/nvidiactl").exists()
        || std::path::Path::new("/dev/dxg").exists()
}

/// Milliseconds of one GPU render.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GpuTimings {
    /// Coverage masks on the CPU, plus writing masks, images and records to the device.
    pub upload_ms: f64,
    /// Encoding and executing the draws, until the device is idle.
    pub draw_ms: f64,
    /// Copying the canvas to a buffer, mapping it and unpadding its rows.
    pub readback_ms: f64,
}

/// The output of a GPU render.
#[derive(Debug)]
pub struct GpuOutput {
    /// Premultiplied RGBA, as the CPU backend's.
    pub pixmap: Pixmap,
    /// `(text node id, contrast ratio)` for every text op with a solid colour.
    pub contrast: Vec<(String, f32)>,
    pub timings: GpuTimings,
}

/// Why a render did not come from the GPU. The caller redoes it on the CPU.
#[derive(Debug, Clone, PartialEq)]
pub enum GpuFailure {
    /// The scene uses an op the GPU path does not draw yet.
    Unsupported(String),
    /// The device reported an error (validation, out of memory, lost, mapping failed).
    Device(String),
}

impl std::fmt::Display for GpuFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unsupported(s) => write!(f, "not on the GPU yet: {s}"),
            Self::Device(s) => write!(f, "GPU error: {s}"),
        }
    }
}

struct DeviceState {
    device: wgpu::Device,
    queue: wgpu::Queue,
    over: wgpu::RenderPipeline,
    blend: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    effect_replace: wgpu::RenderPipeline,
    effect_over: wgpu::RenderPipeline,
    effect_layout: wgpu::BindGroupLayout,
    /// 1×1 texture bound where a draw samples no image / no backdrop / no mask.
    dummy: wgpu::TextureView,
    lost: Arc<AtomicBool>,
    /// Set by the device's handler for errors outside an error scope (instead of wgpu's
    /// default, which panics); the render in progress is then redone on the CPU.
    uncaptured: Arc<AtomicBool>,
    /// One render at a time per device: wgpu 27's error scopes are a per-device stack, so
    /// interleaved renders would read each other's errors. Coverage masks are rasterised
    /// before taking it.
    busy: Mutex<()>,
    max_dim: u32,
    /// Render targets kept between renders, by size.
    pool: Mutex<Vec<wgpu::Texture>>,
}

/// The process's GPU: instance, adapter, device, queue, pipelines. `Sync`; share it.
pub struct GpuContext {
    adapter: wgpu::Adapter,
    info: wgpu::AdapterInfo,
    /// WGSL of the draw and the effect shaders.
    shaders: (String, String),
    state: Mutex<Arc<DeviceState>>,
    /// Test hook: the next render fails as a device error would.
    fail_next: AtomicBool,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext")
            .field("adapter", &self.info.name)
            .finish_non_exhaustive()
    }
}

const TARGET_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

impl GpuContext {
    /// Opens the first Vulkan adapter of `kind` and creates the device and pipelines.
    ///
    /// # Errors
    /// [`Error::GpuUnavailable`] when no such adapter exists or the device cannot be created.
    pub fn new(kind: AdapterKind) -> Result<Self, Error> {
        Self::with_shaders(kind, DRAW_WGSL, EFFECTS_WGSL)
    }

    /// Like [`GpuContext::new`] with another WGSL source for the draw shader. For tests that
    /// break the shader on purpose to prove the parity check catches it.
    #[doc(hidden)]
    pub fn with_shader(kind: AdapterKind, wgsl: &str) -> Result<Self, Error> {
        Self::with_shaders(kind, wgsl, EFFECTS_WGSL)
    }

    /// Like [`GpuContext::new`] with other WGSL sources for the draw and effect shaders.
    #[doc(hidden)]
    pub fn with_shaders(kind: AdapterKind, draw: &str, effects: &str) -> Result<Self, Error> {
        let instance = wgpu::Instance::new(&wgpu::InstanceDescriptor {
            backends: wgpu::Backends::VULKAN,
            ..Default::default()
        });
        let adapters = instance.enumerate_adapters(wgpu::Backends::VULKAN);
        let names: Vec<String> = adapters
            .iter()
            .map(|a| {
                let i = a.get_info();
                format!("{} ({:?})", i.name, i.device_type)
            })
            .collect();
        let adapter = adapters
            .into_iter()
            .filter(|a| {
                kind == AdapterKind::Any || a.get_info().device_type != wgpu::DeviceType::Cpu
            })
            .min_by_key(|a| match a.get_info().device_type {
                wgpu::DeviceType::DiscreteGpu => 0,
                wgpu::DeviceType::IntegratedGpu => 1,
                wgpu::DeviceType::VirtualGpu => 2,
                wgpu::DeviceType::Other => 3,
                wgpu::DeviceType::Cpu => 4,
            })
            .ok_or_else(|| Error::GpuUnavailable {
                reason: if names.is_empty() {
                    "no Vulkan adapter (install a GPU driver, or mesa-vulkan-drivers for \
                     the software one)"
                        .to_owned()
                } else {
                    format!(
                        "no hardware GPU among the Vulkan adapters: {}",
                        names.join(", ")
                    )
                },
            })?;
        let info = adapter.get_info();
        let shaders = (draw.to_owned(), effects.to_owned());
        let state = create_device(&adapter, &shaders)?;
        Ok(Self {
            adapter,
            info,
            shaders,
            state: Mutex::new(Arc::new(state)),
            fail_next: AtomicBool::new(false),
        })
    }

    /// The adapter's name and type, e.g. `llvmpipe (LLVM 15.0.6, 256 bits) (Cpu)`.
    pub fn adapter(&self) -> String {
        format!("{} ({:?})", self.info.name, self.info.device_type)
    }

    /// Whether the adapter is a software rasteriser (lavapipe): correct, not fast.
    pub fn is_software(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    /// The current device, recreated first if it was lost.
    fn device(&self) -> Result<Arc<DeviceState>, GpuFailure> {
        let mut guard = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if guard.lost.load(Ordering::SeqCst) {
            let fresh = create_device(&self.adapter, &self.shaders)
                .map_err(|e| GpuFailure::Device(format!("recreating the lost device: {e}")))?;
            *guard = Arc::new(fresh);
        }
        Ok(guard.clone())
    }

    /// Marks the device lost, as the driver's callback does (tests of the recovery path).
    #[doc(hidden)]
    pub fn simulate_device_loss(&self) {
        if let Ok(s) = self.state.lock() {
            s.lost.store(true, Ordering::SeqCst);
        }
    }

    /// Makes the next render fail with a device error (tests of the CPU redo path).
    #[doc(hidden)]
    pub fn fail_next_render(&self) {
        self.fail_next.store(true, Ordering::SeqCst);
    }

    /// Draws `scene` on the GPU and reads it back.
    ///
    /// # Errors
    /// [`GpuFailure::Unsupported`] when the scene uses an op that is not on the GPU yet,
    /// [`GpuFailure::Device`] when the device fails; redo the render on the CPU.
    pub fn render(&self, scene: &Scene) -> Result<GpuOutput, GpuFailure> {
        if self.fail_next.swap(false, Ordering::SeqCst) {
            return Err(GpuFailure::Device("simulated device error".into()));
        }
        let state = self.device()?;
        let t0 = Instant::now();
        let plan = plan::plan(scene, state.max_dim)
            .map_err(|Unsupported(s)| GpuFailure::Unsupported(s))?;
        let _busy = state
            .busy
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state.uncaptured.store(false, Ordering::SeqCst);
        state
            .device
            .push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        state.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let result = execute::execute(&state, &plan, t0);
        let validation = pollster::block_on(state.device.pop_error_scope());
        let oom = pollster::block_on(state.device.pop_error_scope());
        if let Some(e) = validation.or(oom) {
            return Err(GpuFailure::Device(e.to_string()));
        }
        if state.lost.load(Ordering::SeqCst) {
            return Err(GpuFailure::Device("the device was lost".into()));
        }
        if state.uncaptured.load(Ordering::SeqCst) {
            return Err(GpuFailure::Device("the device reported an error".into()));
        }
        result
    }
}

fn create_device(
    adapter: &wgpu::Adapter,
    (wgsl, effects_wgsl): &(String, String),
) -> Result<DeviceState, Error> {
    let unavailable = |reason: String| Error::GpuUnavailable { reason };
    // The adapter's own limits, not the downlevel defaults: 4K canvases need 4096+ px
    // textures and the atlas grows to the largest side the device allows.
    let limits = adapter.limits();
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("adforge"),
        required_features: wgpu::Features::empty(),
        required_limits: limits.clone(),
        ..Default::default()
    }))
    .map_err(|e| unavailable(format!("creating the device: {e}")))?;
    let lost = Arc::new(AtomicBool::new(false));
    let flag = lost.clone();
    device.set_device_lost_callback(move |_, _| flag.store(true, Ordering::SeqCst));
    let uncaptured = Arc::new(AtomicBool::new(false));
    let seen = uncaptured.clone();
    device.on_uncaptured_error(Arc::new(move |e| {
        eprintln!("adforge gpu: uncaptured device error: {e}");
        seen.store(true, Ordering::SeqCst);
    }));
    device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("draw.wgsl"),
        source: wgpu::ShaderSource::Wgsl(wgsl.into()),
    });
    let effects_module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("effects.wgsl"),
        source: wgpu::ShaderSource::Wgsl(effects_wgsl.into()),
    });
    let texture = |binding| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::FRAGMENT,
        ty: wgpu::BindingType::Texture {
            sample_type: wgpu::TextureSampleType::Float { filterable: false },
            view_dimension: wgpu::TextureViewDimension::D2,
            multisampled: false,
        },
        count: None,
    };
    let storage = |binding| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only: true },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    };
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("draw"),
        entries: &[storage(0), storage(1), texture(2), texture(3), texture(4)],
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("draw"),
        bind_group_layouts: &[&layout],
        push_constant_ranges: &[],
    });
    let effect_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("effects"),
        entries: &[storage(0), texture(1), texture(2)],
    });
    let effect_pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("effects"),
        bind_group_layouts: &[&effect_layout],
        push_constant_ranges: &[],
    });
    let pipeline = |module: &wgpu::ShaderModule,
                    layout: &wgpu::PipelineLayout,
                    entry: &str,
                    blend: Option<wgpu::BlendState>| {
        device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some(entry),
            layout: Some(layout),
            vertex: wgpu::VertexState {
                module,
                entry_point: Some("vs"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: wgpu::PrimitiveState {
                topology: wgpu::PrimitiveTopology::TriangleStrip,
                ..Default::default()
            },
            depth_stencil: None,
            multisample: wgpu::MultisampleState::default(),
            fragment: Some(wgpu::FragmentState {
                module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                targets: &[Some(wgpu::ColorTargetState {
                    format: TARGET_FORMAT,
                    blend,
                    write_mask: wgpu::ColorWrites::ALL,
                })],
            }),
            multiview: None,
            cache: None,
        })
    };
    let premultiplied = Some(wgpu::BlendState::PREMULTIPLIED_ALPHA_BLENDING);
    let over = pipeline(&module, &pipeline_layout, "fs_over", premultiplied);
    let blend = pipeline(&module, &pipeline_layout, "fs_blend", None);
    let effect_replace = pipeline(&effects_module, &effect_pipeline_layout, "fs", None);
    let effect_over = pipeline(
        &effects_module,
        &effect_pipeline_layout,
        "fs",
        premultiplied,
    );
    let dummy = device
        .create_texture(&wgpu::TextureDescriptor {
            label: Some("dummy"),
            size: wgpu::Extent3d {
                width: 1,
                height: 1,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: TARGET_FORMAT,
            usage: wgpu::TextureUsages::TEXTURE_BINDING,
            view_formats: &[],
        })
        .create_view(&Default::default());
    if let Some(e) = pollster::block_on(device.pop_error_scope()) {
        return Err(unavailable(format!("building the pipelines: {e}")));
    }
    Ok(DeviceState {
        device,
        queue,
        over,
        blend,
        layout,
        effect_replace,
        effect_over,
        effect_layout,
        dummy,
        lost,
        uncaptured,
        busy: Mutex::new(()),
        max_dim: limits.max_texture_dimension_2d,
        pool: Mutex::new(Vec::new()),
    })
}

impl DeviceState {
    fn target(&self, w: u32, h: u32) -> wgpu::Texture {
        if let Ok(mut pool) = self.pool.lock()
            && let Some(i) = pool.iter().position(|t| t.width() == w && t.height() == h)
        {
            return pool.swap_remove(i);
        }
        self.device.create_texture(&wgpu::TextureDescriptor {
            label: Some("target"),
            size: wgpu::Extent3d {
                width: w,
                height: h,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: TARGET_FORMAT,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT
                | wgpu::TextureUsages::TEXTURE_BINDING
                | wgpu::TextureUsages::COPY_SRC
                | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        })
    }

    fn give_back(&self, textures: Vec<wgpu::Texture>) {
        if let Ok(mut pool) = self.pool.lock() {
            pool.extend(textures);
            // Keep the pool small: the newest 16 targets.
            let n = pool.len();
            if n > 16 {
                pool.drain(..n - 16);
            }
        }
    }

    fn texture_with(
        &self,
        label: &str,
        format: wgpu::TextureFormat,
        w: u32,
        h: u32,
    ) -> wgpu::Texture {
        self.device.create_texture(&wgpu::TextureDescriptor {
            label: Some(label),
            size: wgpu::Extent3d {
                width: w.max(1),
                height: h.max(1),
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format,
            usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        })
    }

    fn write(
        &self,
        texture: &wgpu::Texture,
        (x, y): (u32, u32),
        (w, h): (u32, u32),
        bpp: u32,
        data: &[u8],
    ) {
        if w == 0 || h == 0 {
            return;
        }
        self.queue.write_texture(
            wgpu::TexelCopyTextureInfo {
                texture,
                mip_level: 0,
                origin: wgpu::Origin3d { x, y, z: 0 },
                aspect: wgpu::TextureAspect::All,
            },
            data,
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(w * bpp),
                rows_per_image: Some(h),
            },
            wgpu::Extent3d {
                width: w,
                height: h,
                depth_or_array_layers: 1,
            },
        );
    }
}
