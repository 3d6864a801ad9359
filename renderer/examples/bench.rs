//! Render benchmark: three ads at 4K (3072x3840, 4:5), ours against resvg rendering the
//! equivalent SVG at the same size in the same run. Run through `scripts/bench-render`.
//!
//! Render time is everything after parsing: image decode, layout, display list and
//! rasterisation (resvg's time likewise covers image decode and rasterisation after parsing).
//! Encode time is our PNG encoder on the rendered pixmap. Each number is the median of
//! `--runs` runs (default 7) after one warm-up. Between runs the canvas is handed back with
//! `Renderer::recycle`, as a worker does. `resvg/total` is resvg's render over our render +
//! encode. `--only NAME` benches one ad; `--stages` adds a line per ad with the median of
//! each stage of our render (image fetch + decode, layout, scene building, rasterisation) as
//! `RenderReport::timings` measures them, the profile of where a render's time goes.
//!
//! GPU columns (when a Vulkan adapter exists; `--no-gpu` skips them): the same ads drawn by
//! the wgpu backend in the same run — upload (CPU coverage masks + writes to the device),
//! draw (every pass, the shadow, layer-blur and background-blur passes of
//! `shaders/effects.wgsl` included, until the device is idle), readback, the whole render,
//! and CPU render / GPU render. On a software adapter
//! (lavapipe) these columns check the path, they are not a speed claim.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use adforge_renderer::{
    FetchLimits, FontLibrary, HttpFetcher, RenderOptions, Renderer, Tree, encode_png,
};
use resvg::usvg;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(7usize)
        .max(1);
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let stages = args.iter().any(|a| a == "--stages");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/ads");
    let fonts = FontLibrary::bundled();
    let fetcher = HttpFetcher::new(FetchLimits::default()).with_local_files(dir.clone());
    let renderer = Renderer::new(fonts.clone(), Arc::new(fetcher));
    let mut svg_opts = usvg::Options {
        resources_dir: Some(dir.clone()),
        fontdb: Arc::new(fonts.usvg_db()),
        ..Default::default()
    };
    svg_opts.image_href_resolver = usvg::ImageHrefResolver::default();
    let gpu = if args.iter().any(|a| a == "--no-gpu") {
        None
    } else {
        match adforge_renderer::open_gpu(adforge_renderer::BackendChoice::Gpu) {
            Ok(g) => g,
            Err(e) => {
                println!("GPU columns skipped: {e}");
                None
            }
        }
    };
    let gpu_renderer = gpu.as_ref().map(|g| {
        let fetcher = HttpFetcher::new(FetchLimits::default()).with_local_files(dir.clone());
        println!(
            "GPU: {}{}",
            g.adapter(),
            if g.is_software() {
                " (software: not a speed claim)"
            } else {
                ""
            }
        );
        Renderer::new(fonts.clone(), Arc::new(fetcher)).with_gpu(Some(g.clone()))
    });

    println!(
        "{:<9} {:>10} {:>10} {:>10} {:>10} {:>13} {:>12} {:>9} | {:>8} {:>8} {:>8} {:>10} {:>9}",
        "ad",
        "render ms",
        "encode ms",
        "total ms",
        "resvg ms",
        "resvg/render",
        "resvg/total",
        "png KiB",
        "gpu up",
        "gpu draw",
        "gpu read",
        "gpu render",
        "cpu/gpu"
    );
    for name in ["simple", "typical", "heavy"] {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let tree = Tree::parse(&read(&dir.join(format!("{name}.json"))))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let svg = usvg::Tree::from_str(&read(&dir.join(format!("{name}.svg"))), &svg_opts)
            .unwrap_or_else(|e| panic!("{name}.svg: {e}"));
        let opts = RenderOptions {
            width: None,
            encode_png: false,
        };
        let first = renderer
            .render(&tree, &opts)
            .unwrap_or_else(|e| panic!("{e}"));
        let (w, h) = (first.pixmap.width(), first.pixmap.height());
        let mut png_len = 0;
        let (mut render, mut encode, mut theirs) = (Vec::new(), Vec::new(), Vec::new());
        let mut stage: [Vec<f64>; 4] = Default::default();
        for _ in 0..runs {
            let t = Instant::now();
            let out = renderer
                .render(&tree, &opts)
                .unwrap_or_else(|e| panic!("{e}"));
            render.push(ms(t));
            let tm = &out.report.timings;
            for (v, x) in
                stage
                    .iter_mut()
                    .zip([tm.images_ms, tm.layout_ms, tm.scene_ms, tm.raster_ms])
            {
                v.push(x);
            }
            let t = Instant::now();
            png_len = encode_png(&out.pixmap).map(|p| p.len()).unwrap_or(0);
            encode.push(ms(t));
            // A long-lived worker hands the canvas back; the next render reuses it.
            renderer.recycle(out.pixmap);
            let t = Instant::now();
            let mut pixmap = tiny_skia::Pixmap::new(w, h).unwrap_or_else(|| panic!("pixmap"));
            let s = svg.size();
            resvg::render(
                &svg,
                tiny_skia::Transform::from_scale(w as f32 / s.width(), h as f32 / s.height()),
                &mut pixmap.as_mut(),
            );
            theirs.push(ms(t));
        }
        let (r, e, t) = (median(render), median(encode), median(theirs));
        let gpu_cols = gpu_renderer
            .as_ref()
            .map(|g| gpu_columns(g, &tree, &opts, runs, r))
            .unwrap_or_default();
        println!(
            "{:<9} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>12.2}x {:>11.2}x {:>9} | {}",
            name,
            r,
            e,
            r + e,
            t,
            t / r,
            t / (r + e),
            png_len / 1024,
            gpu_cols
        );
        if stages {
            let [i, l, s, x] = stage.map(median);
            println!(
                "  {name} stages: images {i:.1} ms, layout {l:.1}, scene {s:.1}, raster {x:.1}"
            );
        }
        if std::env::var_os("BENCH_SAVE").is_some() {
            let _ = std::fs::write(
                format!("/tmp/bench-{name}.png"),
                encode_png(&first.pixmap).unwrap_or_default(),
            );
            let mut pixmap = tiny_skia::Pixmap::new(w, h).unwrap_or_else(|| panic!("pixmap"));
            let s = svg.size();
            resvg::render(
                &svg,
                tiny_skia::Transform::from_scale(w as f32 / s.width(), h as f32 / s.height()),
                &mut pixmap.as_mut(),
            );
            let _ = pixmap.save_png(format!("/tmp/bench-{name}-resvg.png"));
        }
    }
    println!(
        "({w}x{h} each; median of {runs} runs; {} CPU threads; ours on {} rayon threads, resvg on 1)",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        rayon::current_num_threads(),
        w = 3072,
        h = 3840
    );
}

/// Median GPU upload / draw / readback / render, and CPU render over GPU render; or why the
/// CPU drew the ad.
fn gpu_columns(g: &Renderer, tree: &Tree, opts: &RenderOptions, runs: usize, cpu: f64) -> String {
    let warm = g.render(tree, opts).unwrap_or_else(|e| panic!("{e}"));
    if let Some(reason) = warm.report.gpu.as_ref().and_then(|r| r.fallback.clone()) {
        return format!("CPU fallback: {reason}");
    }
    let (mut up, mut draw, mut read, mut total) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = Instant::now();
        let out = g.render(tree, opts).unwrap_or_else(|e| panic!("{e}"));
        total.push(ms(t));
        if let Some(r) = out.report.gpu {
            up.push(r.upload_ms);
            draw.push(r.draw_ms);
            read.push(r.readback_ms);
        }
    }
    let total = median(total);
    format!(
        "{:>8.1} {:>8.1} {:>8.1} {:>10.1} {:>8.2}x",
        median(up),
        median(draw),
        median(read),
        total,
        cpu / total
    )
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}
