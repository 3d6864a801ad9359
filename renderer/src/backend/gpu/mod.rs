//! The GPU backend: executes the display list with wgpu and our WGSL (`shaders/draw.wgsl`).
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
//! - *CPU-assisted steps (not GPU shaders yet):* layer effects (drop and inner shadows,
//!   layer blur) and BACKGROUND_BLUR run the CPU backend's own code between GPU passes: the
//!   encoder is submitted, the layer is read back, the CPU computes, and the result is
//!   written back before the next pass. Output is exact, at the cost of a device sync per
//!   step; blur passes in WGSL (separable, downsampled like `backend::cpu::blur`) are the
//!   next step. The contrast of TEXT ops (LowContrast warnings) needs no sync: the regions
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
//! - *One shader per paint or blend mode.* A pipeline switch per op costs more than a
//!   uniform branch in one shader on the draw counts of an ad.
//!
//! # Lifetime
//!
//! Create one [`GpuContext`] per process and share it (`Arc`): it holds the instance, the
//! adapter, the device and queue, the two pipelines and a pool of render targets. A lost
//! device is recreated on the next render.

mod plan;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tiny_skia::Pixmap;

use crate::Error;
use crate::backend::cpu;
use crate::scene::Scene;

use plan::Step;

pub use plan::Unsupported;

/// The WGSL source of the one shader module.
pub const DRAW_WGSL: &str = include_str!("../../../../shaders/draw.wgsl");

/// Which adapters [`GpuContext::new`] accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdapterKind {
    /// A hardware GPU (integrated, discrete or virtual); software rasterisers are refused.
    Hardware,
    /// Any Vulkan adapter, including software ones such as Mesa's lavapipe (tests, CI).
    Any,
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
    /// 1×1 texture bound where a draw samples no image / no backdrop / no mask.
    dummy: wgpu::TextureView,
    lost: Arc<AtomicBool>,
    max_dim: u32,
    /// Render targets kept between renders, by size.
    pool: Mutex<Vec<wgpu::Texture>>,
}

/// The process's GPU: instance, adapter, device, queue, pipelines. `Sync`; share it.
pub struct GpuContext {
    adapter: wgpu::Adapter,
    info: wgpu::AdapterInfo,
    shader: String,
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
        Self::with_shader(kind, DRAW_WGSL)
    }

    /// Like [`GpuContext::new`] with another WGSL source for the draw shader. For tests that
    /// break the shader on purpose to prove the parity check catches it.
    #[doc(hidden)]
    pub fn with_shader(kind: AdapterKind, wgsl: &str) -> Result<Self, Error> {
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
        let state = create_device(&adapter, wgsl)?;
        Ok(Self {
            adapter,
            info,
            shader: wgsl.to_owned(),
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
            let fresh = create_device(&self.adapter, &self.shader)
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
        state
            .device
            .push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        state.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let result = execute(&state, &plan, t0);
        let validation = pollster::block_on(state.device.pop_error_scope());
        let oom = pollster::block_on(state.device.pop_error_scope());
        if let Some(e) = validation.or(oom) {
            return Err(GpuFailure::Device(e.to_string()));
        }
        if state.lost.load(Ordering::SeqCst) {
            return Err(GpuFailure::Device("the device was lost".into()));
        }
        result
    }
}

fn create_device(adapter: &wgpu::Adapter, wgsl: &str) -> Result<DeviceState, Error> {
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
    device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("draw.wgsl"),
        source: wgpu::ShaderSource::Wgsl(wgsl.into()),
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
    let pipeline = |entry: &str, blend: Option<wgpu::BlendState>| {
        device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some(entry),
            layout: Some(&pipeline_layout),
            vertex: wgpu::VertexState {
                module: &module,
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
                module: &module,
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
    let over = pipeline(
        "fs_over",
        Some(wgpu::BlendState::PREMULTIPLIED_ALPHA_BLENDING),
    );
    let blend = pipeline("fs_blend", None);
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
        dummy,
        lost,
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

fn ms(since: Instant) -> f64 {
    (since.elapsed().as_secs_f64() * 1e5).round() / 100.0
}

fn storage_buffer(state: &DeviceState, label: &str, data: &[u8]) -> wgpu::Buffer {
    let buffer = state.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: (data.len().max(16) as u64).next_multiple_of(16),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    state.queue.write_buffer(&buffer, 0, data);
    buffer
}

/// Uploads, draws and reads back one plan. `t0` is when planning (mask rasterisation) began.
fn execute(state: &DeviceState, plan: &plan::Plan, t0: Instant) -> Result<GpuOutput, GpuFailure> {
    let dev = &state.device;
    // Upload: atlas, images, records, stops.
    let atlas = state.texture_with(
        "mask atlas",
        wgpu::TextureFormat::R8Unorm,
        plan::ATLAS_WIDTH,
        plan.atlas_height,
    );
    for m in &plan.masks {
        state.write(
            &atlas,
            (m.x, m.y),
            (m.mask.width(), m.mask.height()),
            1,
            m.mask.data(),
        );
    }
    let atlas_view = atlas.create_view(&Default::default());
    let images: Vec<wgpu::TextureView> = plan
        .images
        .iter()
        .map(|p| {
            let t = state.texture_with("image", TARGET_FORMAT, p.width(), p.height());
            state.write(&t, (0, 0), (p.width(), p.height()), 4, p.data());
            t.create_view(&Default::default())
        })
        .collect();
    let records = storage_buffer(state, "draws", &plan.records);
    let stops = storage_buffer(state, "stops", &plan.stops);
    let targets: Vec<wgpu::Texture> = plan
        .targets
        .iter()
        .map(|&(w, h)| state.target(w, h))
        .collect();
    let views: Vec<wgpu::TextureView> = targets
        .iter()
        .map(|t| t.create_view(&Default::default()))
        .collect();
    state.queue.submit([]);
    let upload_ms = ms(t0);

    let t1 = Instant::now();
    let mut encoder = dev.create_command_encoder(&Default::default());
    let mut cleared = vec![false; targets.len()];
    let mut groups: HashMap<(plan::Source, bool), wgpu::BindGroup> = HashMap::new();
    let mut backdrops: Vec<wgpu::Texture> = Vec::new();
    let bind = |source: plan::Source, backdrop: Option<&wgpu::TextureView>| {
        let image = match source {
            plan::Source::None => &state.dummy,
            plan::Source::Image(i) => &images[i],
            plan::Source::Target(i) => &views[i],
        };
        dev.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &state.layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: records.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: stops.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: wgpu::BindingResource::TextureView(&atlas_view),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: wgpu::BindingResource::TextureView(image),
                },
                wgpu::BindGroupEntry {
                    binding: 4,
                    resource: wgpu::BindingResource::TextureView(backdrop.unwrap_or(&state.dummy)),
                },
            ],
        })
    };
    let clear_pass = |encoder: &mut wgpu::CommandEncoder, view: &wgpu::TextureView| {
        encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("clear"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color::TRANSPARENT),
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
        });
    };
    for (i, view) in views.iter().enumerate() {
        clear_pass(&mut encoder, view);
        cleared[i] = true;
    }
    let mut contrast = Vec::new();
    let mut probes = Vec::new();
    let mut i = 0;
    while i < plan.steps.len() {
        match &plan.steps[i] {
            Step::Draw(cmd) if cmd.backdrop.is_some() => {
                // Non-normal blend: copy the destination under the quad, then draw alone.
                let [x0, y0, x1, y1] = cmd.backdrop.unwrap_or_default();
                let (tw, th) = plan.targets[cmd.target];
                let copy = state.target(tw, th);
                if x1 > x0 && y1 > y0 {
                    encoder.copy_texture_to_texture(
                        whole(&targets[cmd.target], x0, y0),
                        whole(&copy, x0, y0),
                        extent(x1 - x0, y1 - y0),
                    );
                }
                let copy_view = copy.create_view(&Default::default());
                let group = bind(cmd.source, Some(&copy_view));
                {
                    let mut pass = begin(&mut encoder, &views[cmd.target]);
                    pass.set_pipeline(&state.blend);
                    pass.set_bind_group(0, &group, &[]);
                    pass.draw(0..4, cmd.record..cmd.record + 1);
                }
                backdrops.push(copy);
                i += 1;
            }
            Step::Draw(cmd) => {
                // A run of source-over draws into one target shares a pass.
                let mut run = Vec::new();
                while let Some(Step::Draw(c)) = plan.steps.get(i) {
                    if c.target != cmd.target || c.backdrop.is_some() {
                        break;
                    }
                    groups
                        .entry((c.source, false))
                        .or_insert_with(|| bind(c.source, None));
                    run.push(*c);
                    i += 1;
                }
                let mut pass = begin(&mut encoder, &views[cmd.target]);
                pass.set_pipeline(&state.over);
                for c in &run {
                    if let Some(g) = groups.get(&(c.source, false)) {
                        pass.set_bind_group(0, g, &[]);
                        pass.draw(0..4, c.record..c.record + 1);
                    }
                }
            }
            Step::LayerEffects {
                target,
                x,
                y,
                clip,
                effects,
            } => {
                submit_and_wait(state, &mut encoder)?;
                let (w, h) = plan.targets[*target];
                let layer = read_region(state, &targets[*target], 0, 0, w, h)?;
                let out = cpu::layer_with_effects(layer, *x, *y, clip.as_ref(), effects);
                state.write(&targets[*target], (0, 0), (w, h), 4, out.data());
                i += 1;
            }
            Step::Backdrop {
                target,
                x,
                y,
                bounds,
                sigma,
                clip,
            } => {
                submit_and_wait(state, &mut encoder)?;
                let (w, h) = plan.targets[*target];
                let below = read_region(state, &targets[*target], 0, 0, w, h)?;
                let out = cpu::backdrop_blur_on(below, *x, *y, *bounds, *sigma, clip);
                state.write(&targets[*target], (0, 0), (w, h), 4, out.data());
                i += 1;
            }
            Step::Contrast {
                stack,
                path,
                transform,
                color,
                node,
            } => {
                // The regions under the text are copied out at this point of the encoder;
                // they are read and measured after the last submit (no sync here).
                let mut reads = Vec::new();
                if let Some(b) = path.clone().transform(*transform).map(|p| p.bounds()) {
                    for &(t, ox, oy) in stack {
                        let (w, h) = plan.targets[t];
                        let x0 = ((b.left().floor() as i32) - ox).clamp(0, w as i32) as u32;
                        let y0 = ((b.top().floor() as i32) - oy).clamp(0, h as i32) as u32;
                        let x1 = ((b.right().ceil() as i32) - ox).clamp(0, w as i32) as u32;
                        let y1 = ((b.bottom().ceil() as i32) - oy).clamp(0, h as i32) as u32;
                        if x1 > x0 && y1 > y0 {
                            let read = encode_read(
                                state,
                                &mut encoder,
                                &targets[t],
                                (x0, y0),
                                (x1 - x0, y1 - y0),
                            );
                            reads.push((read, ox + x0 as i32, oy + y0 as i32));
                        }
                    }
                }
                probes.push((reads, path, *transform, *color, node));
                i += 1;
            }
        }
    }
    state.queue.submit([encoder.finish()]);
    dev.poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| GpuFailure::Device(format!("waiting for the draws: {e}")))?;
    for (reads, path, transform, color, node) in probes {
        let mut regions = Vec::new();
        for (read, x, y) in reads {
            regions.push((finish_read(state, read)?, x, y));
        }
        if let Some(r) = cpu::contrast_against(regions, path, transform, color) {
            contrast.push((node.clone(), r));
        }
    }
    let draw_ms = ms(t1);

    // Readback: rows padded to 256 bytes.
    let t2 = Instant::now();
    let (w, h) = plan.targets[0];
    let pixmap = read_region(state, &targets[0], 0, 0, w, h)?;
    let readback_ms = ms(t2);
    state.give_back(targets);
    state.give_back(backdrops);
    Ok(GpuOutput {
        pixmap,
        contrast,
        timings: GpuTimings {
            upload_ms,
            draw_ms,
            readback_ms,
        },
    })
}

fn whole(texture: &wgpu::Texture, x: u32, y: u32) -> wgpu::TexelCopyTextureInfo<'_> {
    wgpu::TexelCopyTextureInfo {
        texture,
        mip_level: 0,
        origin: wgpu::Origin3d { x, y, z: 0 },
        aspect: wgpu::TextureAspect::All,
    }
}

fn extent(width: u32, height: u32) -> wgpu::Extent3d {
    wgpu::Extent3d {
        width,
        height,
        depth_or_array_layers: 1,
    }
}

/// Submits what `encoder` holds, waits for the device, and starts a fresh encoder (before a
/// step that reads pixels back).
fn submit_and_wait(
    state: &DeviceState,
    encoder: &mut wgpu::CommandEncoder,
) -> Result<(), GpuFailure> {
    let done = std::mem::replace(
        encoder,
        state.device.create_command_encoder(&Default::default()),
    );
    state.queue.submit([done.finish()]);
    state
        .device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| GpuFailure::Device(format!("waiting for the device: {e}")))?;
    Ok(())
}

/// A copy of a texture region into a mappable buffer, encoded but not yet read.
struct PendingRead {
    buffer: wgpu::Buffer,
    w: u32,
    h: u32,
    padded: u32,
}

/// Encodes a copy of `w`×`h` texels at (`x`, `y`) of `texture` into a buffer whose rows are
/// padded to 256 bytes, as copies require.
fn encode_read(
    state: &DeviceState,
    encoder: &mut wgpu::CommandEncoder,
    texture: &wgpu::Texture,
    (x, y): (u32, u32),
    (w, h): (u32, u32),
) -> PendingRead {
    let padded = (w * 4).next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
    let buffer = state.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("readback"),
        size: u64::from(padded) * u64::from(h),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    encoder.copy_texture_to_buffer(
        whole(texture, x, y),
        wgpu::TexelCopyBufferInfo {
            buffer: &buffer,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(padded),
                rows_per_image: Some(h),
            },
        },
        extent(w, h),
    );
    PendingRead {
        buffer,
        w,
        h,
        padded,
    }
}

/// Maps a read whose copy has been submitted and unpads its rows into a pixmap.
fn finish_read(state: &DeviceState, read: PendingRead) -> Result<Pixmap, GpuFailure> {
    let PendingRead {
        buffer,
        w,
        h,
        padded,
    } = read;
    let row = w * 4;
    let (tx, rx) = std::sync::mpsc::channel();
    buffer.slice(..).map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    state
        .device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| GpuFailure::Device(format!("waiting for the readback: {e}")))?;
    rx.recv()
        .map_err(|_| GpuFailure::Device("the readback was dropped".into()))?
        .map_err(|e| GpuFailure::Device(format!("mapping the readback: {e}")))?;
    let mut pixmap =
        Pixmap::new(w, h).ok_or_else(|| GpuFailure::Device(format!("no {w}x{h} pixmap")))?;
    {
        let mapped = buffer.slice(..).get_mapped_range();
        for (dst, src) in pixmap
            .data_mut()
            .chunks_exact_mut(row as usize)
            .zip(mapped.chunks_exact(padded as usize))
        {
            dst.copy_from_slice(&src[..row as usize]);
        }
    }
    buffer.unmap();
    Ok(pixmap)
}

/// Reads `w`×`h` texels at (`x`, `y`) of `texture` now (submits and waits).
fn read_region(
    state: &DeviceState,
    texture: &wgpu::Texture,
    x: u32,
    y: u32,
    w: u32,
    h: u32,
) -> Result<Pixmap, GpuFailure> {
    let mut encoder = state.device.create_command_encoder(&Default::default());
    let read = encode_read(state, &mut encoder, texture, (x, y), (w, h));
    state.queue.submit([encoder.finish()]);
    finish_read(state, read)
}

fn begin<'a>(
    encoder: &'a mut wgpu::CommandEncoder,
    view: &'a wgpu::TextureView,
) -> wgpu::RenderPass<'a> {
    encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some("draw"),
        color_attachments: &[Some(wgpu::RenderPassColorAttachment {
            view,
            depth_slice: None,
            resolve_target: None,
            ops: wgpu::Operations {
                load: wgpu::LoadOp::Load,
                store: wgpu::StoreOp::Store,
            },
        })],
        depth_stencil_attachment: None,
        timestamp_writes: None,
        occlusion_query_set: None,
    })
}
