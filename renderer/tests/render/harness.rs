//! `RenderCase::new("shapes/rectangle").check()`: render a fixture and compare it with its
//! golden PNG. A failure writes expected | diff | actual to `target/golden-failures/`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use adforge_renderer::{
    FetchLimits, FontLibrary, HttpFetcher, RenderOptions, Rendered, Renderer, Tree,
};
use tiny_skia::Pixmap;

/// Largest per-channel difference accepted. CPU output is deterministic on one machine; the
/// image resampler picks SIMD code per CPU, which may move a channel by one step.
pub const CHANNEL_TOLERANCE: u8 = 2;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn goldens_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/goldens")
}

/// One renderer for the whole test binary: bundled fonts only, images from the repository.
pub fn renderer() -> &'static Renderer {
    static R: OnceLock<Renderer> = OnceLock::new();
    R.get_or_init(|| {
        let limits = FetchLimits {
            allow_private: true,
            ..FetchLimits::default()
        };
        let fetcher = HttpFetcher::new(limits).with_local_files(repo_root());
        Renderer::new(FontLibrary::bundled(), Arc::new(fetcher))
    })
}

pub struct RenderCase {
    name: String,
    scale: u32,
}

impl RenderCase {
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            scale: 2,
        }
    }

    pub fn tree(&self) -> Tree {
        let path = goldens_dir().join(format!("{}.json", self.name));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Tree::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    pub fn render(&self) -> Rendered {
        let tree = self.tree();
        let w = tree.design_size().0 as u32 * self.scale;
        renderer()
            .render(
                &tree,
                &RenderOptions {
                    width: Some(w),
                    encode_png: true,
                },
            )
            .unwrap()
    }

    /// Renders and compares with the golden; returns the render for further checks.
    pub fn check(self) -> Rendered {
        let rendered = self.render();
        let png = rendered.png.clone().unwrap();
        let golden = goldens_dir().join(format!("{}.png", self.name));
        if std::env::var_os("UPDATE_GOLDENS").is_some() {
            std::fs::write(&golden, &png).unwrap();
            return rendered;
        }
        let expected = std::fs::read(&golden).unwrap_or_else(|_| {
            panic!(
                "missing golden {}; run with UPDATE_GOLDENS=1",
                golden.display()
            )
        });
        let expected = Pixmap::decode_png(&expected).unwrap();
        let actual = Pixmap::decode_png(&png).unwrap();
        if let Some(msg) = compare(&expected, &actual, CHANNEL_TOLERANCE) {
            let out = write_failure(&self.name, &expected, &actual);
            panic!(
                "{}: {msg}; expected | diff | actual written to {}",
                self.name,
                out.display()
            );
        }
        rendered
    }
}

/// `None` when equal within `tol`, otherwise what differs.
pub fn compare(a: &Pixmap, b: &Pixmap, tol: u8) -> Option<String> {
    if (a.width(), a.height()) != (b.width(), b.height()) {
        return Some(format!(
            "size {}x{} != {}x{}",
            a.width(),
            a.height(),
            b.width(),
            b.height()
        ));
    }
    let mut bad = 0usize;
    let mut worst = 0u8;
    for (x, y) in a.data().iter().zip(b.data()) {
        let d = x.abs_diff(*y);
        worst = worst.max(d);
        if d > tol {
            bad += 1;
        }
    }
    (bad > 0).then(|| format!("{bad} channel values differ by more than {tol} (worst {worst})"))
}

/// Writes expected | diff | actual side by side and returns the path.
pub fn write_failure(name: &str, expected: &Pixmap, actual: &Pixmap) -> PathBuf {
    let dir = repo_root().join("target/golden-failures");
    std::fs::create_dir_all(&dir).unwrap();
    let (w, h) = (
        expected.width().max(actual.width()),
        expected.height().max(actual.height()),
    );
    let mut out = Pixmap::new(w * 3, h).unwrap();
    out.fill(tiny_skia::Color::WHITE);
    let paint = tiny_skia::PixmapPaint::default();
    out.draw_pixmap(
        0,
        0,
        expected.as_ref(),
        &paint,
        tiny_skia::Transform::identity(),
        None,
    );
    out.draw_pixmap(
        (2 * w) as i32,
        0,
        actual.as_ref(),
        &paint,
        tiny_skia::Transform::identity(),
        None,
    );
    for y in 0..h.min(expected.height()).min(actual.height()) {
        for x in 0..w.min(expected.width()).min(actual.width()) {
            let (p, q) = (expected.pixel(x, y).unwrap(), actual.pixel(x, y).unwrap());
            let d = p
                .red()
                .abs_diff(q.red())
                .max(p.green().abs_diff(q.green()))
                .max(p.blue().abs_diff(q.blue()))
                .max(p.alpha().abs_diff(q.alpha()));
            let v = if d == 0 { 255 } else { 200u8.saturating_sub(d) };
            let c = tiny_skia::ColorU8::from_rgba(255, v, v, 255).premultiply();
            out.pixels_mut()[(y * w * 3 + w + x) as usize] = c;
        }
    }
    let path = dir.join(format!("{}.png", name.replace('/', "_")));
    out.save_png(&path).unwrap();
    path
}
