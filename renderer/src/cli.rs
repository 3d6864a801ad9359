//! The `adforge render` command, without argument parsing (the `adforge` binary owns clap).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::image::{FetchLimits, HttpFetcher};
use crate::{BackendChoice, Error, FontLibrary, RenderOptions, Renderer, Tree, open_gpu};

/// `adforge render TREE.json -o OUT.png [--width N] [--report R.json]`.
#[derive(Debug, Clone)]
pub struct RenderCommand {
    /// The JSON tree file. Relative image paths resolve against its folder.
    pub tree: PathBuf,
    /// Where to write the PNG.
    pub output: PathBuf,
    /// Output width; default: long edge 3840 px.
    pub width: Option<u32>,
    /// Where to write the render report (JSON).
    pub report: Option<PathBuf>,
    /// Allow image URLs on loopback / private addresses (local demos).
    pub allow_private_urls: bool,
}

/// What [`run`] produced.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderSummary {
    pub width: u32,
    pub height: u32,
    pub png_bytes: usize,
    pub warnings: usize,
    pub total_ms: f64,
    /// `"cpu"` or `"gpu"`: the backend whose pixels were written.
    pub backend: &'static str,
}

/// Runs the command on the CPU, printing phases to stderr.
///
/// # Errors
/// An unreadable or invalid tree (the message names the node and the field), an impossible
/// width, or an unwritable output.
pub fn run(cmd: &RenderCommand) -> Result<RenderSummary, Error> {
    run_on(cmd, BackendChoice::Cpu)
}

/// Runs the command with the backend `backend` (`--backend auto|cpu|gpu`).
///
/// # Errors
/// As [`run`], and [`Error::GpuUnavailable`] for `gpu` without a usable Vulkan adapter.
pub fn run_on(cmd: &RenderCommand, backend: BackendChoice) -> Result<RenderSummary, Error> {
    let gpu = open_gpu(backend)?;
    if let Some(g) = &gpu {
        eprintln!("render: GPU {}", g.adapter());
    }
    let text = std::fs::read_to_string(&cmd.tree).map_err(|source| Error::Io {
        path: cmd.tree.clone(),
        source,
    })?;
    eprintln!("render: parsing {}", cmd.tree.display());
    let tree = Tree::parse(&text)?;
    let base = cmd.tree.parent().map(Path::to_path_buf).unwrap_or_default();
    let limits = FetchLimits {
        allow_private: cmd.allow_private_urls,
        ..FetchLimits::default()
    };
    let fetcher = HttpFetcher::new(limits).with_local_files(base);
    eprintln!("render: loading fonts");
    let renderer = Renderer::new(default_fonts()?, Arc::new(fetcher)).with_gpu(gpu);
    eprintln!("render: rendering");
    let rendered = renderer.render(
        &tree,
        &RenderOptions {
            width: cmd.width,
            encode_png: true,
        },
    )?;
    let png = rendered.png.unwrap_or_default();
    std::fs::write(&cmd.output, &png).map_err(|source| Error::Io {
        path: cmd.output.clone(),
        source,
    })?;
    let r = &rendered.report;
    for w in &r.warnings {
        eprintln!(
            "render: warning: {}",
            serde_json::to_string(w).unwrap_or_default()
        );
    }
    if let Some(path) = &cmd.report {
        let json = serde_json::to_string_pretty(r)?;
        std::fs::write(path, json).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
    }
    let backend = match r.backend {
        crate::BackendUsed::Cpu => "cpu",
        crate::BackendUsed::Gpu => "gpu",
    };
    if let Some(g) = &r.gpu {
        match &g.fallback {
            Some(reason) => eprintln!("render: drawn on the CPU instead of the GPU: {reason}"),
            None => eprintln!(
                "render: GPU upload {:.1} ms, draw {:.1} ms, readback {:.1} ms",
                g.upload_ms, g.draw_ms, g.readback_ms
            ),
        }
    }
    eprintln!(
        "render: wrote {} ({}x{}, {} bytes, {backend}) in {:.1} ms (images {:.1}, layout {:.1}, scene {:.1}, raster {:.1}, encode {:.1})",
        cmd.output.display(),
        r.width,
        r.height,
        png.len(),
        r.timings.total_ms,
        r.timings.images_ms,
        r.timings.layout_ms,
        r.timings.scene_ms,
        r.timings.raster_ms,
        r.timings.encode_ms
    );
    Ok(RenderSummary {
        width: r.width,
        height: r.height,
        png_bytes: png.len(),
        warnings: r.warnings.len(),
        total_ms: r.timings.total_ms,
        backend,
    })
}

#[cfg(feature = "bundled-fonts")]
fn default_fonts() -> Result<FontLibrary, Error> {
    Ok(FontLibrary::bundled())
}

#[cfg(not(feature = "bundled-fonts"))]
fn default_fonts() -> Result<FontLibrary, Error> {
    let dir = std::env::var_os("ADFORGE_FONTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("assets/fonts"));
    FontLibrary::from_dir(&dir)
}
