//! `adforge render` through `cli::run`.

use adforge_renderer::Error;
use adforge_renderer::cli::{RenderCommand, run};

use crate::harness::goldens_dir;

fn tmp() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("adforge-render-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn renders_a_file_with_report_and_relative_image_paths() {
    let dir = tmp();
    // An image path relative to the tree file.
    std::fs::copy(goldens_dir().join("assets/tile.png"), dir.join("tile.png")).unwrap();
    let tree = r#"{"nodes":{"r":{"type":"FRAME","width":100,"height":50,"children":["i","t"],
        "fills":[{"type":"IMAGE","imageFillUrl":"tile.png","scaleMode":"TILE"}]},
        "i":{"type":"RECTANGLE","width":10,"height":10,"fills":[{"type":"IMAGE","imageFillUrl":"missing.png"}]},
        "t":{"type":"TEXT","characters":"Hi","fontFamily":"Nope","fontSize":12}}}"#;
    std::fs::write(dir.join("tree.json"), tree).unwrap();
    let cmd = RenderCommand {
        tree: dir.join("tree.json"),
        output: dir.join("out.png"),
        width: Some(200),
        report: Some(dir.join("report.json")),
        allow_private_urls: false,
    };
    let summary = run(&cmd).unwrap();
    assert_eq!((summary.width, summary.height), (200, 100));
    assert_eq!(summary.warnings, 2);
    let png = std::fs::read(dir.join("out.png")).unwrap();
    assert_eq!(png.len(), summary.png_bytes);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap();
    let kinds: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["missing_font", "image_failed"]);
    for phase in [
        "images_ms",
        "layout_ms",
        "scene_ms",
        "raster_ms",
        "encode_ms",
        "total_ms",
    ] {
        assert!(report["timings"][phase].is_number(), "{phase}");
    }
}

#[test]
fn invalid_tree_names_node_and_field() {
    let dir = tmp();
    std::fs::write(dir.join("bad.json"), r#"{"nodes":{"r":{"type":"FRAME","width":10,"height":10,"children":["x"]},"x":{"type":"TEXT","fontSize":"big"}}}"#).unwrap();
    let cmd = RenderCommand {
        tree: dir.join("bad.json"),
        output: dir.join("bad.png"),
        width: None,
        report: None,
        allow_private_urls: false,
    };
    let err = run(&cmd).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidNode { node, field, .. } if node == "x" && field == "fontSize"),
        "{err}"
    );
    assert!(!dir.join("bad.png").exists());
}

#[test]
fn missing_file_is_an_io_error() {
    let cmd = RenderCommand {
        tree: "/nonexistent/t.json".into(),
        output: "/tmp/x.png".into(),
        width: None,
        report: None,
        allow_private_urls: false,
    };
    assert!(matches!(run(&cmd), Err(Error::Io { .. })));
}
