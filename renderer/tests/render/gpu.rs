//! The GPU backend against the CPU reference, fixture by fixture (vello's
//! `compare_gpu_cpu` habit): one test body renders every golden fixture on both backends.
//!
//! Tolerance, GPU against CPU: a channel may differ by at most [`GPU_CHANNEL_LIMIT`] levels
//! on all but [`GPU_SHARE_OVER`] of the channel values, and by at most
//! [`GPU_CHANNEL_CEILING`] anywhere. Coverage comes from the same rasteriser on both sides
//! (same transform order, so the same edge samples); what differs is float vs 8/16-bit
//! fixed-point paint arithmetic. Effects (shadows, blurs) use the CPU's integer arithmetic on
//! both sides. Measured on lavapipe, effects on the GPU: 18 fixtures identical, 67
//! within 1 level, 1 within 2; the 4K benchmark ads (shadows, background blur) within 2. The share and the ceiling leave room
//! for hardware GPUs' float rounding. A swapped
//! blend mode, a missing shadow or a glyph shifted by one pixel moves hundreds of values by
//! tens of levels and fails (`broken_blend_shader_is_caught` and
//! `broken_shadow_shader_is_caught` break a shader on purpose).
//!
//! These tests run on any Vulkan adapter, Mesa's software lavapipe included
//! (`mesa-vulkan-drivers`); without one they print why and pass without checking.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use adforge_renderer::backend::gpu::{AdapterKind, DRAW_WGSL, EFFECTS_WGSL, GpuContext};
use adforge_renderer::{
    BackendUsed, FetchLimits, FontLibrary, HttpFetcher, RenderOptions, Renderer, Tree,
};
use tiny_skia::Pixmap;

use crate::harness::{self, CHANNEL_TOLERANCE, RenderCase};

/// Largest per-channel difference that counts as "the same" between GPU and CPU.
pub const GPU_CHANNEL_LIMIT: u8 = 2;
/// Share of channel values allowed over [`GPU_CHANNEL_LIMIT`].
pub const GPU_SHARE_OVER: f64 = 0.001;
/// No channel value may differ by more than this.
pub const GPU_CHANNEL_CEILING: u8 = 16;

fn gpu_renderer(ctx: Arc<GpuContext>) -> Renderer {
    let limits = FetchLimits {
        allow_private: true,
        ..FetchLimits::default()
    };
    let fetcher = HttpFetcher::new(limits).with_local_files(harness::repo_root());
    Renderer::new(FontLibrary::bundled(), Arc::new(fetcher)).with_gpu(Some(ctx))
}

/// The shared GPU renderer, or why there is none.
fn gpu() -> Result<&'static Renderer, String> {
    static R: OnceLock<Result<Renderer, String>> = OnceLock::new();
    R.get_or_init(|| {
        GpuContext::new(AdapterKind::Any)
            .map(|c| gpu_renderer(Arc::new(c)))
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(Clone::clone)
}

fn fixtures() -> Vec<String> {
    let root = harness::goldens_dir();
    let mut out = Vec::new();
    for area in std::fs::read_dir(&root).unwrap().flatten() {
        if !area.path().is_dir() {
            continue;
        }
        for f in std::fs::read_dir(area.path()).unwrap().flatten() {
            let p: PathBuf = f.path();
            if p.extension().is_some_and(|e| e == "json") && p.with_extension("png").exists() {
                let area = area.file_name().to_string_lossy().into_owned();
                let name = p.file_stem().unwrap().to_string_lossy().into_owned();
                out.push(format!("{area}/{name}"));
            }
        }
    }
    out.sort();
    out
}

/// How far `gpu` is from `cpu`: (values over the limit, worst difference, share over).
pub fn parity(cpu: &Pixmap, gpu: &Pixmap) -> (usize, u8, f64) {
    assert_eq!((cpu.width(), cpu.height()), (gpu.width(), gpu.height()));
    let mut over = 0usize;
    let mut worst = 0u8;
    for (a, b) in cpu.data().iter().zip(gpu.data()) {
        let d = a.abs_diff(*b);
        worst = worst.max(d);
        if d > GPU_CHANNEL_LIMIT {
            over += 1;
        }
    }
    (over, worst, over as f64 / cpu.data().len() as f64)
}

fn within_tolerance(p: (usize, u8, f64)) -> bool {
    p.2 <= GPU_SHARE_OVER && p.1 <= GPU_CHANNEL_CEILING
}

fn render_on(renderer: &Renderer, name: &str) -> adforge_renderer::Rendered {
    let case = RenderCase::new(name);
    let tree: Tree = case.tree();
    let w = tree.design_size().0 as u32 * 2;
    renderer
        .render(
            &tree,
            &RenderOptions {
                width: Some(w),
                encode_png: false,
            },
        )
        .unwrap()
}

#[test]
fn every_fixture_on_both_backends() {
    let gpu = match gpu() {
        Ok(r) => r,
        Err(reason) => {
            println!("SKIPPED GPU parity: {reason}");
            return;
        }
    };
    let adapter = gpu.gpu().unwrap().adapter();
    let mut failures = Vec::new();
    let mut on_gpu = 0;
    let mut fell_back = Vec::new();
    for name in fixtures() {
        // CPU: matches its golden (as the golden tests check).
        let cpu = harness::renderer().render(
            &RenderCase::new(&name).tree(),
            &RenderOptions {
                width: Some(RenderCase::new(&name).tree().design_size().0 as u32 * 2),
                encode_png: true,
            },
        );
        let cpu = cpu.unwrap();
        let golden = Pixmap::load_png(harness::goldens_dir().join(format!("{name}.png"))).unwrap();
        let decoded = Pixmap::decode_png(cpu.png.as_ref().unwrap()).unwrap();
        if let Some(msg) = harness::compare(&golden, &decoded, CHANNEL_TOLERANCE) {
            failures.push(format!("{name}: CPU vs golden: {msg}"));
        }
        // GPU: matches the CPU within the tolerance, or says why the CPU drew it.
        let out = render_on(gpu, &name);
        let report = out.report.gpu.clone().unwrap();
        if let Some(reason) = &report.fallback {
            assert_eq!(out.report.backend, BackendUsed::Cpu);
            assert!(
                reason.starts_with("not on the GPU yet"),
                "{name}: a device error, not a planned fallback: {reason}"
            );
            fell_back.push(format!("{name} ({reason})"));
            continue;
        }
        assert_eq!(out.report.backend, BackendUsed::Gpu);
        on_gpu += 1;
        let p = parity(&cpu.pixmap, &out.pixmap);
        println!(
            "{name}: {} values > {GPU_CHANNEL_LIMIT} ({:.4} %), worst {}",
            p.0,
            p.2 * 100.0,
            p.1
        );
        if !within_tolerance(p) {
            let path = harness::write_failure(&format!("gpu_{name}"), &cpu.pixmap, &out.pixmap);
            failures.push(format!(
                "{name}: GPU vs CPU: {} values differ by more than {GPU_CHANNEL_LIMIT} ({:.3} %), worst {}; cpu | diff | gpu in {}",
                p.0,
                p.2 * 100.0,
                p.1,
                path.display()
            ));
        }
    }
    println!(
        "adapter: {adapter}; {on_gpu} fixtures drawn on the GPU; CPU fallback for {}:",
        fell_back.len()
    );
    for f in &fell_back {
        println!("  {f}");
    }
    assert!(on_gpu > 0, "no fixture was drawn on the GPU");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A shader with `multiply` computing `screen` instead must fail the parity check on the
/// multiply fixtures: the tolerance is tight enough to catch a wrong blend mode.
#[test]
fn broken_blend_shader_is_caught() {
    let right = "case 1u: { return cs * cb; } // multiply";
    assert!(
        DRAW_WGSL.contains(right),
        "the multiply line moved; update this test"
    );
    let broken = DRAW_WGSL.replace(right, "case 1u: { return cb + cs - cb * cs; }");
    let ctx = match GpuContext::with_shader(AdapterKind::Any, &broken) {
        Ok(c) => c,
        Err(e) => {
            println!("SKIPPED broken-shader check: {e}");
            return;
        }
    };
    let broken_renderer = gpu_renderer(Arc::new(ctx));
    for name in ["shapes/blend_multiply", "paints/paint_blend_multiply"] {
        let cpu = render_on(harness::renderer(), name);
        let bad = render_on(&broken_renderer, name);
        assert_eq!(
            bad.report.backend,
            BackendUsed::Gpu,
            "{name}: {:?}",
            bad.report.gpu
        );
        let p = parity(&cpu.pixmap, &bad.pixmap);
        assert!(
            !within_tolerance(p),
            "{name}: a multiply drawn as screen passed the parity check: {p:?}"
        );
        // And the real shader passes the same check.
        if let Ok(good) = gpu() {
            let ok = render_on(good, name);
            assert!(within_tolerance(parity(&cpu.pixmap, &ok.pixmap)));
        }
    }
}

/// An effect shader whose drop shadows come out empty must fail the parity check on the
/// drop-shadow fixtures: a missing shadow is caught, and the real shader passes.
#[test]
fn broken_shadow_shader_is_caught() {
    let right = "return out(div255(e.color * level));";
    assert!(
        EFFECTS_WGSL.contains(right),
        "the drop-shadow tint line moved; update this test"
    );
    let broken = EFFECTS_WGSL.replace(right, "return vec4<f32>(0.0);");
    let ctx = match GpuContext::with_shaders(AdapterKind::Any, DRAW_WGSL, &broken) {
        Ok(c) => c,
        Err(e) => {
            println!("SKIPPED broken-shadow check: {e}");
            return;
        }
    };
    let broken_renderer = gpu_renderer(Arc::new(ctx));
    for name in [
        "effects/drop_shadow",
        "effects/drop_shadow_spread",
        "effects/text_shadow",
    ] {
        let cpu = render_on(harness::renderer(), name);
        let bad = render_on(&broken_renderer, name);
        assert_eq!(
            bad.report.backend,
            BackendUsed::Gpu,
            "{name}: {:?}",
            bad.report.gpu
        );
        let p = parity(&cpu.pixmap, &bad.pixmap);
        assert!(
            !within_tolerance(p),
            "{name}: a render without its drop shadow passed the parity check: {p:?}"
        );
        if let Ok(good) = gpu() {
            let ok = render_on(good, name);
            assert!(within_tolerance(parity(&cpu.pixmap, &ok.pixmap)), "{name}");
        }
    }
}

/// A lost device is recreated and the next render is drawn on the GPU again.
#[test]
fn lost_device_is_recreated() {
    let Ok(ctx) = GpuContext::new(AdapterKind::Any) else {
        println!("SKIPPED device-loss check: no Vulkan adapter");
        return;
    };
    let ctx = Arc::new(ctx);
    let r = gpu_renderer(ctx.clone());
    let first = render_on(&r, "shapes/rectangle");
    assert_eq!(first.report.backend, BackendUsed::Gpu);
    ctx.simulate_device_loss();
    let second = render_on(&r, "shapes/rectangle");
    assert_eq!(
        second.report.backend,
        BackendUsed::Gpu,
        "{:?}",
        second.report.gpu
    );
    assert_eq!(first.pixmap.data(), second.pixmap.data());
}

/// Every shader in the crate's `shaders/` is valid WGSL for naga (the validator wgpu runs),
/// with no device needed; the backend embeds exactly that file.
#[test]
fn shaders_validate_with_naga() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "wgsl") {
            continue;
        }
        let src = std::fs::read_to_string(&path).unwrap();
        let name = path.display();
        let module = naga::front::wgsl::parse_str(&src)
            .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(&src)));
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::empty(),
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        checked += 1;
    }
    assert!(checked >= 1, "no shader found in {}", dir.display());
    assert!(
        checked >= 2,
        "draw.wgsl and effects.wgsl in {}",
        dir.display()
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("draw.wgsl")).unwrap(),
        DRAW_WGSL
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("effects.wgsl")).unwrap(),
        EFFECTS_WGSL
    );
}

/// `adforge render --backend gpu` writes the GPU's pixels and says so in the report;
/// `--backend cpu` draws on the CPU with no GPU section.
#[test]
fn render_command_with_backend() {
    use adforge_renderer::BackendChoice;
    use adforge_renderer::cli::{RenderCommand, run_on};
    let dir = std::env::temp_dir().join(format!("adforge-render-gpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cmd = |out: &str| RenderCommand {
        tree: harness::goldens_dir().join("shapes/blend_multiply.json"),
        output: dir.join(format!("{out}.png")),
        width: Some(200),
        report: Some(dir.join(format!("{out}.json"))),
        allow_private_urls: false,
    };
    let cpu = run_on(&cmd("cpu"), BackendChoice::Cpu).unwrap();
    assert_eq!(cpu.backend, "cpu");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("cpu.json")).unwrap()).unwrap();
    assert_eq!(report["backend"], "cpu");
    assert!(report.get("gpu").is_none());
    if gpu().is_err() {
        let err = run_on(&cmd("gpu"), BackendChoice::Gpu).unwrap_err();
        assert!(
            matches!(err, adforge_renderer::Error::GpuUnavailable { .. }),
            "{err}"
        );
        println!("SKIPPED --backend gpu render: {err}");
        return;
    }
    let g = run_on(&cmd("gpu"), BackendChoice::Gpu).unwrap();
    assert_eq!(g.backend, "gpu");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("gpu.json")).unwrap()).unwrap();
    assert_eq!(report["backend"], "gpu");
    for k in ["upload_ms", "draw_ms", "readback_ms"] {
        assert!(report["gpu"][k].is_number(), "{k}: {report}");
    }
    assert!(report["gpu"]["adapter"].is_string());
    let a = Pixmap::load_png(dir.join("cpu.png")).unwrap();
    let b = Pixmap::load_png(dir.join("gpu.png")).unwrap();
    assert!(within_tolerance(parity(&a, &b)));
}

/// `auto` never picks a software rasteriser; `cpu` opens nothing; names parse.
#[test]
fn backend_choice() {
    use adforge_renderer::{BackendChoice, open_gpu};
    assert!(open_gpu(BackendChoice::Cpu).unwrap().is_none());
    if let Some(g) = open_gpu(BackendChoice::Auto).unwrap() {
        assert!(!g.is_software(), "auto chose {}", g.adapter());
    }
    assert_eq!("gpu".parse::<BackendChoice>(), Ok(BackendChoice::Gpu));
    assert_eq!("auto".parse::<BackendChoice>(), Ok(BackendChoice::Auto));
    assert!(
        "metal"
            .parse::<BackendChoice>()
            .unwrap_err()
            .contains("auto, cpu or gpu")
    );
}

/// The benchmark ads at full 4K size (3072×3840): photos, gradients, shadows, background
/// blur and text on a canvas near the texture limits, GPU within the same tolerance.
#[test]
fn benchmark_ads_at_4k_match() {
    let Ok(gpu) = gpu() else {
        println!("SKIPPED 4K GPU parity: no Vulkan adapter");
        return;
    };
    let dir = harness::repo_root().join("renderer/examples/ads");
    let fetcher = HttpFetcher::new(FetchLimits::default()).with_local_files(dir.clone());
    let cpu = Renderer::new(FontLibrary::bundled(), Arc::new(fetcher));
    let fetcher = HttpFetcher::new(FetchLimits::default()).with_local_files(dir.clone());
    let on_gpu =
        Renderer::new(FontLibrary::bundled(), Arc::new(fetcher)).with_gpu(gpu.gpu().cloned());
    for name in ["typical", "heavy"] {
        let text = std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap();
        let tree = Tree::parse(&text).unwrap();
        let opts = RenderOptions {
            width: None,
            encode_png: false,
        };
        let a = cpu.render(&tree, &opts).unwrap();
        let b = on_gpu.render(&tree, &opts).unwrap();
        assert_eq!(
            b.report.backend,
            BackendUsed::Gpu,
            "{name}: {:?}",
            b.report.gpu
        );
        assert_eq!((a.pixmap.width(), a.pixmap.height()), (3072, 3840));
        let p = parity(&a.pixmap, &b.pixmap);
        if std::env::var_os("GPU_DEBUG").is_some() {
            for (i, (x, y)) in a.pixmap.data().iter().zip(b.pixmap.data()).enumerate() {
                if x.abs_diff(*y) > 8 {
                    let px = i / 4;
                    println!(
                        "  ({}, {}) ch {}: cpu {x} gpu {y}",
                        px % 3072,
                        px / 3072,
                        i % 4
                    );
                }
            }
        }
        println!(
            "{name} 4K: {} values > {GPU_CHANNEL_LIMIT}, worst {}",
            p.0, p.1
        );
        assert!(within_tolerance(p), "{name}: {p:?}");
        // The contrast warnings come out the same.
        let low = |r: &adforge_renderer::Rendered| {
            r.report
                .warnings
                .iter()
                .filter(|w| matches!(w, adforge_renderer::Warning::LowContrast { .. }))
                .count()
        };
        assert_eq!(low(&a), low(&b), "{name}");
    }
}

/// The tolerance is tight enough for the other two faults the parity check must catch: a
/// missing shadow (the same fixture without its effects) and a glyph run shifted by one
/// device pixel both fail it.
#[test]
fn missing_shadow_and_shifted_glyphs_fail_the_tolerance() {
    let render_json = |json: &serde_json::Value| {
        let tree = Tree::parse(&json.to_string()).unwrap();
        harness::renderer()
            .render(
                &tree,
                &RenderOptions {
                    width: Some(200),
                    encode_png: false,
                },
            )
            .unwrap()
            .pixmap
    };
    let path = harness::goldens_dir().join("effects/drop_shadow.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let with_shadow = render_json(&json);
    for node in json["nodes"].as_object_mut().unwrap().values_mut() {
        node["effects"] = serde_json::json!([]);
    }
    let without = render_json(&json);
    assert!(!within_tolerance(parity(&with_shadow, &without)));

    let text = render_on(harness::renderer(), "text/basic").pixmap;
    let mut shifted = text.clone();
    let row = text.width() as usize * 4;
    for (dst, src) in shifted
        .data_mut()
        .chunks_exact_mut(row)
        .zip(text.data().chunks_exact(row))
    {
        dst[4..].copy_from_slice(&src[..row - 4]);
    }
    assert!(!within_tolerance(parity(&text, &shifted)));
}

/// A render that fails on the GPU is redone on the CPU, reported, and never lost.
#[test]
fn failed_gpu_render_is_redone_on_the_cpu() {
    let Ok(ctx) = GpuContext::new(AdapterKind::Any) else {
        println!("SKIPPED GPU failure check: no Vulkan adapter");
        return;
    };
    let ctx = Arc::new(ctx);
    let r = gpu_renderer(ctx.clone());
    ctx.fail_next_render();
    let redone = render_on(&r, "shapes/blend_multiply");
    assert_eq!(redone.report.backend, BackendUsed::Cpu);
    let reason = redone
        .report
        .gpu
        .as_ref()
        .unwrap()
        .fallback
        .clone()
        .unwrap();
    assert!(reason.contains("simulated device error"), "{reason}");
    let cpu = render_on(harness::renderer(), "shapes/blend_multiply");
    assert_eq!(redone.pixmap.data(), cpu.pixmap.data());
    // The next render is on the GPU again.
    assert_eq!(
        render_on(&r, "shapes/blend_multiply").report.backend,
        BackendUsed::Gpu
    );
}

/// One context serves renders from several threads at once; each gets its own pixels.
#[test]
fn concurrent_renders_share_one_context() {
    let Ok(gpu) = gpu() else {
        println!("SKIPPED concurrent GPU renders: no Vulkan adapter");
        return;
    };
    let names = [
        "shapes/blend_multiply",
        "paints/radial_gradient",
        "text/basic",
        "images/fill",
    ];
    let outs: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = names
            .iter()
            .map(|n| s.spawn(move || render_on(gpu, n)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (name, out) in names.iter().zip(outs) {
        assert_eq!(out.report.backend, BackendUsed::Gpu, "{name}");
        let cpu = render_on(harness::renderer(), name);
        assert!(within_tolerance(parity(&cpu.pixmap, &out.pixmap)), "{name}");
    }
}
