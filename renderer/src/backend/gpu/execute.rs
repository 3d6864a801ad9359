//! Uploads a [`Plan`], encodes its steps, and reads the canvas back (rows padded to
//! 256 bytes).

use std::collections::HashMap;
use std::time::Instant;

use tiny_skia::Pixmap;

use super::plan::{self, Plan, Step};
use super::{DeviceState, GpuFailure, GpuOutput, GpuTimings, TARGET_FORMAT};
use crate::backend::cpu;
use plan::Aux;

fn ms(since: Instant) -> f64 {
    (since.elapsed().as_secs_f64() * 1e5).round() / 100.0
}

fn storage_buffer(state: &DeviceState, label: &str, data: &[u8]) -> wgpu::Buffer {
    let buffer = state.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        // At least one record of any array the shaders bind.
        size: (data.len().max(256) as u64).next_multiple_of(16),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    state.queue.write_buffer(&buffer, 0, data);
    buffer
}

/// Uploads, draws and reads back one plan. `t0` is when planning (mask rasterisation) began.
pub(super) fn execute(
    state: &DeviceState,
    plan: &Plan,
    t0: Instant,
) -> Result<GpuOutput, GpuFailure> {
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
    let effects = storage_buffer(state, "effects", &plan.effects);
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
        if plan.clear[i] {
            clear_pass(&mut encoder, view);
        }
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
            Step::Effect(cmd) => {
                let aux = match cmd.aux {
                    Aux::None => &state.dummy,
                    Aux::Atlas => &atlas_view,
                    Aux::Target(t) => &views[t],
                };
                let group = dev.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: None,
                    layout: &state.effect_layout,
                    entries: &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: effects.as_entire_binding(),
                        },
                        wgpu::BindGroupEntry {
                            binding: 1,
                            resource: wgpu::BindingResource::TextureView(&views[cmd.src]),
                        },
                        wgpu::BindGroupEntry {
                            binding: 2,
                            resource: wgpu::BindingResource::TextureView(aux),
                        },
                    ],
                });
                let mut pass = begin(&mut encoder, &views[cmd.dst]);
                pass.set_pipeline(if cmd.over {
                    &state.effect_over
                } else {
                    &state.effect_replace
                });
                pass.set_bind_group(0, &group, &[]);
                pass.draw(0..4, cmd.record..cmd.record + 1);
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
