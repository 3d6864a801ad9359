//! The CPU backend: executes a display list with tiny-skia.
//!
//! Layers are pixmaps the size of their device bounds (not of the canvas), so a clipped
//! photo or a card with a shadow costs only its own area.

mod blit;
pub(crate) mod blur;
mod effects;
pub(crate) mod image;
mod pool;

use tiny_skia::{
    BlendMode as SkBlend, FillRule, GradientStop, LinearGradient, Mask, Paint, Pixmap, PixmapPaint,
    Point, RadialGradient, Shader, SpreadMode, Stroke, Transform,
};

use crate::budget::Deadline;
use crate::scene::{Clip, DrawOp, Layer, Scene, ScenePaint};
use crate::tree::{BlendMode, Color};

/// Result of executing a scene.
#[derive(Debug)]
pub struct CpuOutput {
    /// Premultiplied RGBA.
    pub pixmap: Pixmap,
    /// `(text node id, contrast ratio)` for every text op with a solid colour.
    pub contrast: Vec<(String, f32)>,
}

struct Target {
    pixmap: Pixmap,
    x: i32,
    y: i32,
    layer: Option<Layer>,
}

/// Executes `scene`. Never fails: ops that cannot be drawn (degenerate paths) are skipped.
pub fn render(scene: &Scene) -> CpuOutput {
    render_into(scene, Vec::new())
}

/// Like [`render`], drawing into `buffer` (cleared and resized) so a long-lived caller can
/// reuse one canvas allocation: fresh 4K canvases cost ~10 ms of page faults each.
pub fn render_into(scene: &Scene, buffer: Vec<u8>) -> CpuOutput {
    render_until(scene, buffer, &Deadline::NONE).0
}

/// Like [`render_into`], stopping when `deadline` passes: checked before every operation
/// and once per row inside blurs, shadow spreads and whole-target fills. The flag is true
/// when the render stopped early (the pixels are then unfinished).
pub fn render_until(scene: &Scene, mut buffer: Vec<u8>, deadline: &Deadline) -> (CpuOutput, bool) {
    let (w, h) = (scene.width.max(1), scene.height.max(1));
    let len = w as usize * h as usize * 4;
    // When the first op paints the whole canvas opaque (a frame's background), the old
    // contents need no clearing: that fill overwrites every pixel (one 4K pass saved).
    let painted_over = scene.ops.first().is_some_and(|op| {
        matches!(op, DrawOp::Fill { path, transform, paint, .. }
            if whole_fill_color(w, h, path, *transform, paint).is_some())
    });
    let canvas = if buffer.capacity() >= len {
        buffer.resize(len, 0);
        if !painted_over {
            blit::par_rows(&mut buffer, w as usize * 4, 0..h as usize, |_, row| {
                row.fill(0)
            });
        }
        tiny_skia::IntSize::from_wh(w, h).and_then(|size| Pixmap::from_vec(buffer, size))
    } else {
        None
    };
    let canvas = canvas
        .or_else(|| Pixmap::new(w, h))
        .unwrap_or_else(tiny_pixmap);
    let mut stack = vec![Target {
        pixmap: canvas,
        x: 0,
        y: 0,
        layer: None,
    }];
    let mut contrast = Vec::new();
    let trace = std::env::var_os("ADFORGE_TRACE_OPS").is_some();
    let mut stopped = false;
    for op in &scene.ops {
        if deadline.passed() {
            stopped = true;
            break;
        }
        let t0 = std::time::Instant::now();
        match op {
            DrawOp::Fill {
                path,
                transform,
                paint,
                even_odd,
            } => {
                let top = top(&mut stack);
                let t = transform.post_translate(-top.x as f32, -top.y as f32);
                if fill_whole(&mut top.pixmap, path, t, paint) {
                    continue;
                }
                let rule = if *even_odd {
                    FillRule::EvenOdd
                } else {
                    FillRule::Winding
                };
                fill(&mut top.pixmap, path, t, paint, rule);
            }
            DrawOp::Text {
                path,
                transform,
                paint,
                node,
                color,
            } => {
                if let Some(c) = color
                    && let Some(r) = measure_contrast(&stack, path, *transform, *c)
                {
                    contrast.push((node.clone(), r));
                }
                let top = top(&mut stack);
                let t = transform.post_translate(-top.x as f32, -top.y as f32);
                fill(&mut top.pixmap, path, t, paint, FillRule::Winding);
            }
            DrawOp::Stroke {
                path,
                transform,
                paint,
                width,
            } => {
                let top = top(&mut stack);
                let t = transform.post_translate(-top.x as f32, -top.y as f32);
                let stroke = Stroke {
                    width: *width,
                    ..Stroke::default()
                };
                let scale = (t.sx * t.sx + t.ky * t.ky).sqrt();
                let Some(visible) = visible_area(&top.pixmap, path, t, width * scale) else {
                    continue;
                };
                with_paint(paint, t, visible, |p| {
                    top.pixmap.stroke_path(path, p, &stroke, t, None)
                });
            }
            DrawOp::Bitmap {
                image,
                transform,
                opacity,
            } => {
                let top = top(&mut stack);
                let t = transform.post_translate(-top.x as f32, -top.y as f32);
                let paint = PixmapPaint {
                    opacity: *opacity,
                    quality: tiny_skia::FilterQuality::Bicubic,
                    ..PixmapPaint::default()
                };
                top.pixmap
                    .draw_pixmap(0, 0, image.as_ref().as_ref(), &paint, t, None);
            }
            DrawOp::BackdropBlur {
                sigma,
                clip,
                bounds,
            } => {
                effects::backdrop_blur(top(&mut stack), *bounds, *sigma, clip, deadline);
            }
            DrawOp::PushLayer(layer) => {
                let b = layer.bounds;
                let pixmap = pool::pixmap(b.width(), b.height()).unwrap_or_else(tiny_pixmap);
                stack.push(Target {
                    pixmap,
                    x: b.x(),
                    y: b.y(),
                    layer: Some(layer.clone()),
                });
            }
            DrawOp::PopLayer => {
                if stack.len() < 2 {
                    continue;
                }
                let Some(done) = stack.pop() else { continue };
                composite(done, top(&mut stack), deadline);
            }
        }
        if trace {
            let name = format!("{op:?}");
            eprintln!(
                "{:8.2} ms {}",
                t0.elapsed().as_secs_f64() * 1e3,
                &name[..name.len().min(60)]
            );
        }
    }
    while stack.len() > 1 {
        if let Some(done) = stack.pop() {
            if stopped {
                pool::give(done.pixmap.take());
            } else {
                composite(done, top(&mut stack), deadline);
            }
        }
    }
    let stopped = stopped || deadline.passed();
    let pixmap = stack.pop().map(|t| t.pixmap).unwrap_or_else(tiny_pixmap);
    (CpuOutput { pixmap, contrast }, stopped)
}

fn tiny_pixmap() -> Pixmap {
    // 1x1 always succeeds; used only for impossible sizes.
    Pixmap::new(1, 1).unwrap_or_else(|| unreachable!())
}

fn top(stack: &mut [Target]) -> &mut Target {
    let n = stack.len();
    &mut stack[n - 1]
}

pub(crate) fn sk_color(c: Color) -> tiny_skia::Color {
    tiny_skia::Color::from_rgba(c.r, c.g, c.b, c.a).unwrap_or(tiny_skia::Color::TRANSPARENT)
}

fn sk_blend(b: BlendMode) -> SkBlend {
    match b {
        BlendMode::Normal => SkBlend::SourceOver,
        BlendMode::Multiply => SkBlend::Multiply,
        BlendMode::Screen => SkBlend::Screen,
        BlendMode::Overlay => SkBlend::Overlay,
        BlendMode::Darken => SkBlend::Darken,
        BlendMode::Lighten => SkBlend::Lighten,
        BlendMode::ColorDodge => SkBlend::ColorDodge,
        BlendMode::ColorBurn => SkBlend::ColorBurn,
        BlendMode::HardLight => SkBlend::HardLight,
        BlendMode::SoftLight => SkBlend::SoftLight,
        BlendMode::Difference => SkBlend::Difference,
        BlendMode::Exclusion => SkBlend::Exclusion,
        BlendMode::Hue => SkBlend::Hue,
        BlendMode::Saturation => SkBlend::Saturation,
        BlendMode::Color => SkBlend::Color,
        BlendMode::Luminosity => SkBlend::Luminosity,
    }
}

fn stops(s: &[(f32, Color)]) -> Vec<GradientStop> {
    s.iter()
        .map(|(p, c)| GradientStop::new(*p, sk_color(*c)))
        .collect()
}

/// Calls `draw` with a tiny-skia paint for `paint` drawn under `t` (path → layer pixels).
fn with_paint(
    paint: &ScenePaint,
    t: Transform,
    visible: tiny_skia::Rect,
    mut draw: impl FnMut(&Paint),
) {
    let mut p = Paint {
        anti_alias: true,
        ..Paint::default()
    };
    match paint {
        ScenePaint::Solid(c) => {
            p.shader = Shader::SolidColor(sk_color(*c));
            draw(&p);
        }
        ScenePaint::LinearGradient {
            stops: s,
            transform,
        } => {
            let shader = if s.len() == 1 {
                Some(Shader::SolidColor(sk_color(s[0].1)))
            } else {
                LinearGradient::new(
                    Point::from_xy(0.0, 0.0),
                    Point::from_xy(1.0, 0.0),
                    stops(s),
                    SpreadMode::Pad,
                    *transform,
                )
            };
            if let Some(shader) = shader {
                p.shader = shader;
                draw(&p);
            }
        }
        ScenePaint::RadialGradient {
            stops: s,
            transform,
        } => {
            let shader = if s.len() == 1 {
                Some(Shader::SolidColor(sk_color(s[0].1)))
            } else {
                RadialGradient::new(
                    Point::from_xy(0.0, 0.0),
                    0.0,
                    Point::from_xy(0.0, 0.0),
                    1.0,
                    stops(s),
                    SpreadMode::Pad,
                    *transform,
                )
            };
            if let Some(shader) = shader {
                p.shader = shader;
                draw(&p);
            }
        }
        ScenePaint::Image {
            image,
            transform,
            tile,
            opacity,
        } => {
            let to_device = t.pre_concat(*transform);
            let Some(prepared) = image::prepare(image, to_device, *tile, visible) else {
                return;
            };
            if let Some(shader) = prepared.shader(t, *tile, *opacity) {
                p.shader = shader;
                draw(&p);
            }
        }
    }
}

fn fill(
    pixmap: &mut Pixmap,
    path: &tiny_skia::Path,
    t: Transform,
    paint: &ScenePaint,
    rule: FillRule,
) {
    let Some(visible) = visible_area(pixmap, path, t, 0.0) else {
        return;
    };
    match paint {
        ScenePaint::LinearGradient { stops, transform }
        | ScenePaint::RadialGradient { stops, transform }
            if stops.len() > 1 && stops.windows(2).all(|w| w[0].0 <= w[1].0) =>
        {
            let radial = matches!(paint, ScenePaint::RadialGradient { .. });
            if blit::fill_gradient(pixmap, path, t, rule, stops, *transform, radial).is_some() {
                return;
            }
        }
        _ => {}
    }
    if let ScenePaint::Image {
        image,
        transform,
        tile: false,
        opacity,
    } = paint
        && let Some((img, x, y)) = image::prepare_aligned(image, t.pre_concat(*transform), visible)
    {
        blit::fill_aligned(pixmap, path, t, rule, &img, x, y, *opacity);
        pool::give(img.take());
        return;
    }
    with_paint(paint, t, visible, |p| {
        pixmap.fill_path(path, p, rule, t, None)
    });
}

/// An opaque solid rectangle covering the whole target (backgrounds) is a plain fill.
fn fill_whole(
    pixmap: &mut Pixmap,
    path: &tiny_skia::Path,
    t: Transform,
    paint: &ScenePaint,
) -> bool {
    match whole_fill_color(pixmap.width(), pixmap.height(), path, t, paint) {
        Some(c) => {
            // As `Pixmap::fill` does, spread over the pool.
            let c = sk_color(c).premultiply().to_color_u8();
            let px = [c.red(), c.green(), c.blue(), c.alpha()];
            let (w, h) = (pixmap.width() as usize, pixmap.height() as usize);
            blit::par_rows(pixmap.data_mut(), w * 4, 0..h, |_, row| {
                for d in row.chunks_exact_mut(4) {
                    d.copy_from_slice(&px);
                }
            });
            true
        }
        None => false,
    }
}

/// The colour of an opaque solid rectangle that covers a `w`×`h` target, if `path` is one.
fn whole_fill_color(
    w: u32,
    h: u32,
    path: &tiny_skia::Path,
    t: Transform,
    paint: &ScenePaint,
) -> Option<Color> {
    let ScenePaint::Solid(c) = paint else {
        return None;
    };
    if c.a < 1.0 || t.kx != 0.0 || t.ky != 0.0 || path.len() > 5 {
        return None;
    }
    let b = path.clone().transform(t)?.bounds();
    let covers =
        b.left() <= 0.0 && b.top() <= 0.0 && b.right() >= w as f32 && b.bottom() >= h as f32;
    // A rectangle path has at most 5 verbs; its bounds equal its area only if it is one.
    let is_rect = path.points().iter().all(|p| {
        let q = [p.x, p.y];
        let pb = path.bounds();
        (q[0] == pb.left() || q[0] == pb.right()) && (q[1] == pb.top() || q[1] == pb.bottom())
    });
    (covers && is_rect).then_some(*c)
}

/// Device bounds of `path` under `t`, grown by `grow`, intersected with the pixmap.
fn visible_area(
    pixmap: &Pixmap,
    path: &tiny_skia::Path,
    t: Transform,
    grow: f32,
) -> Option<tiny_skia::Rect> {
    let b = path.clone().transform(t)?.bounds();
    tiny_skia::Rect::from_ltrb(
        (b.left() - grow).max(0.0),
        (b.top() - grow).max(0.0),
        (b.right() + grow).min(pixmap.width() as f32),
        (b.bottom() + grow).min(pixmap.height() as f32),
    )
}

fn clip_mask(clip: &Clip, w: u32, h: u32, x: i32, y: i32) -> Option<Mask> {
    let mut mask = pool::mask(w, h)?;
    mask.fill_path(
        &clip.path,
        FillRule::Winding,
        true,
        clip.transform.post_translate(-x as f32, -y as f32),
    );
    if clip.inverse {
        mask.invert();
    }
    Some(mask)
}

fn composite(done: Target, parent: &mut Target, deadline: &Deadline) {
    let Some(layer) = done.layer else { return };
    let mut content = done.pixmap;
    let mut mask = layer
        .clip
        .as_ref()
        .and_then(|clip| clip_mask(clip, content.width(), content.height(), done.x, done.y));
    if !layer.effects.is_empty() {
        if let Some(m) = mask.take() {
            content.apply_mask(&m);
            pool::give(m.take());
        }
        content = effects::apply_effects(content, &layer.effects, deadline);
        if deadline.passed() {
            // The render stops here: its pixels are dropped, so skip the blend.
            pool::give(content.take());
            return;
        }
    }
    let (x, y) = (done.x - parent.x, done.y - parent.y);
    if layer.blend_mode == BlendMode::Normal {
        blit::blend_over(
            &mut parent.pixmap,
            &content,
            x,
            y,
            layer.opacity,
            mask.as_ref().map(Mask::data),
        );
    } else {
        if let Some(m) = &mask {
            content.apply_mask(m);
        }
        let paint = PixmapPaint {
            opacity: layer.opacity,
            blend_mode: sk_blend(layer.blend_mode),
            ..PixmapPaint::default()
        };
        parent
            .pixmap
            .draw_pixmap(x, y, content.as_ref(), &paint, Transform::identity(), None);
    }
    pool::give(content.take());
    if let Some(m) = mask {
        pool::give(m.take());
    }
}

/// WCAG contrast of `color` against what is painted behind the text, taken as the worst of
/// a 3×3 grid of regions over the text's bounds (each region the mean of 8×8 samples).
/// One mean over the whole box was rejected: text that straddles a dark photo and a light
/// panel averaged to "readable" while half of it was not.
fn measure_contrast(
    stack: &[Target],
    path: &tiny_skia::Path,
    t: Transform,
    color: Color,
) -> Option<f32> {
    let b = path.clone().transform(t)?.bounds();
    let (x0, y0, x1, y1) = (b.left().max(0.0), b.top().max(0.0), b.right(), b.bottom());
    if x1 <= x0 || y1 <= y0 {
        return None;
    }
    const CELLS: usize = 3;
    const PER: usize = 8;
    const N: usize = CELLS * PER;
    let mut sums = [[0.0f32; 3]; CELLS * CELLS];
    for j in 0..N {
        for i in 0..N {
            let x = x0 + (x1 - x0) * (i as f32 + 0.5) / N as f32;
            let y = y0 + (y1 - y0) * (j as f32 + 0.5) / N as f32;
            // Composite the stack at this point (source-over, white page underneath).
            let mut c = [1.0f32; 3];
            for target in stack {
                let (px, py) = (x as i32 - target.x, y as i32 - target.y);
                if px < 0 || py < 0 {
                    continue;
                }
                if let Some(p) = target.pixmap.pixel(px as u32, py as u32) {
                    let a = f32::from(p.alpha()) / 255.0;
                    let s = [p.red(), p.green(), p.blue()].map(|v| f32::from(v) / 255.0);
                    for k in 0..3 {
                        c[k] = s[k] + c[k] * (1.0 - a);
                    }
                }
            }
            let cell = &mut sums[(j / PER) * CELLS + i / PER];
            for k in 0..3 {
                cell[k] += c[k];
            }
        }
    }
    let count = (PER * PER) as f32;
    sums.iter()
        .map(|sum| {
            let bg = Color {
                r: sum[0] / count,
                g: sum[1] / count,
                b: sum[2] / count,
                a: 1.0,
            };
            let fg = Color {
                r: color.r * color.a + bg.r * (1.0 - color.a),
                g: color.g * color.a + bg.g * (1.0 - color.a),
                b: color.b * color.a + bg.b * (1.0 - color.a),
                a: 1.0,
            };
            let (l1, l2) = (fg.luminance(), bg.luminance());
            (l1.max(l2) + 0.05) / (l1.min(l2) + 0.05)
        })
        .reduce(f32::min)
}

/// For the GPU backend: the contrast of a TEXT op against `stack`, the targets under it
/// (each a pixmap whose top-left corner is at device `x`, `y`), as [`render`] measures it.
#[cfg(feature = "gpu")]
pub(crate) fn contrast_against(
    stack: Vec<(Pixmap, i32, i32)>,
    path: &tiny_skia::Path,
    t: Transform,
    color: Color,
) -> Option<f32> {
    let targets: Vec<Target> = stack
        .into_iter()
        .map(|(pixmap, x, y)| Target {
            pixmap,
            x,
            y,
            layer: None,
        })
        .collect();
    measure_contrast(&targets, path, t, color)
}
