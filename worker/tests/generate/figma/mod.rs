//! Design-tool sync: every Figma fixture (`assets/figma/fixtures`, real responses and
//! hand-made ones, each listed with its source and licence in the README there) validated
//! against Figma's OpenAPI description, imported, and rendered.

mod fidelity;
mod import;
pub mod spec;

use std::collections::HashMap;
use std::sync::Arc;

use adforge_renderer::{FontLibrary, ImageFetcher, RenderOptions, Rendered, Renderer, Tree};
use adforge_worker::figma::import::{
    self as importer, IMAGE_PLACEHOLDER, Imported, SVG_PLACEHOLDER,
};
use serde_json::Value;

/// A fixture's JSON.
pub fn fixture(name: &str) -> Value {
    let text = std::fs::read_to_string(spec::assets().join("fixtures").join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The first (only) frame of a nodes response.
pub fn frame(nodes: &Value) -> &Value {
    let (_, node) = nodes["nodes"].as_object().unwrap().iter().next().unwrap();
    &node["document"]
}

/// Imports a fixture's frame.
pub fn import(name: &str) -> Imported {
    let nodes = fixture(name);
    importer::import(
        frame(&nodes),
        &importer::Options {
            file_key: "FixtureFileKey",
            for_template: false,
        },
    )
    .unwrap()
}

/// Serves the placeholders of an imported tree from the fixtures: image refs by name,
/// SVG exports by Figma id.
pub struct FixtureImages {
    files: HashMap<String, Vec<u8>>,
}

impl FixtureImages {
    pub fn new() -> Arc<Self> {
        let root = spec::assets();
        let read = |p: &str| std::fs::read(root.join(p)).unwrap();
        let mut files = HashMap::new();
        for (placeholder, path) in [
            (
                format!("{IMAGE_PLACEHOLDER}img-photo"),
                "../samples/coffee.png",
            ),
            (
                format!("{IMAGE_PLACEHOLDER}img-cat"),
                "../samples/chelsea.png",
            ),
            (
                format!("{IMAGE_PLACEHOLDER}img-rocket"),
                "../samples/rocket.jpg",
            ),
            (
                format!("{IMAGE_PLACEHOLDER}img-logo"),
                "fixtures/images/logo.png",
            ),
            (
                format!("{IMAGE_PLACEHOLDER}img-tile"),
                "fixtures/images/tile.png",
            ),
            (format!("{SVG_PLACEHOLDER}10:23"), "fixtures/svg/masked.svg"),
        ] {
            files.insert(placeholder, read(path));
        }
        Arc::new(Self { files })
    }
}

impl ImageFetcher for FixtureImages {
    fn fetch(&self, url: &str) -> Result<Vec<u8>, String> {
        if let Some(bytes) = self.files.get(url) {
            return Ok(bytes.clone());
        }
        // Every other SVG export is the hand-made icon.
        if url.starts_with(SVG_PLACEHOLDER) {
            return Ok(std::fs::read(spec::assets().join("fixtures/svg/icon.svg")).unwrap());
        }
        Err(format!("no fixture image for {url}"))
    }
}

pub fn renderer() -> &'static Renderer {
    static R: std::sync::OnceLock<Renderer> = std::sync::OnceLock::new();
    R.get_or_init(|| Renderer::new(FontLibrary::bundled(), FixtureImages::new()))
}

/// Renders an imported tree `width` px wide.
pub fn render(imported: &Imported, width: u32) -> Rendered {
    let tree = Tree::from_value(imported.tree.clone()).unwrap();
    renderer()
        .render(
            &tree,
            &RenderOptions {
                width: Some(width),
                encode_png: false,
            },
        )
        .unwrap()
}

/// Writes a render to `target/figma-samples/NAME.png` for people to look at.
pub fn save(r: &Rendered, name: &str) {
    let img = image::RgbaImage::from_fn(r.pixmap.width(), r.pixmap.height(), |x, y| {
        image::Rgba(pixel(r, x, y))
    });
    let out = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/figma-samples");
    std::fs::create_dir_all(&out).unwrap();
    img.save(out.join(format!("{name}.png"))).unwrap();
}

/// The straight RGBA of a pixel of a render.
pub fn pixel(r: &Rendered, x: u32, y: u32) -> [u8; 4] {
    let p = r.pixmap.pixel(x, y).unwrap().demultiply();
    [p.red(), p.green(), p.blue(), p.alpha()]
}

/// The id our tree gave a Figma node.
pub fn our_id(imported: &Imported, figma_id: &str) -> String {
    imported.tree["nodes"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, n)| n["figmaId"] == figma_id)
        .map(|(k, _)| k.clone())
        .unwrap_or_else(|| panic!("no node for Figma id {figma_id}"))
}
