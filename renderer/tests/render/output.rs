//! Output size, PNG properties and determinism.

use adforge_renderer::{RenderOptions, Tree, output_size};

use crate::harness::{RenderCase, renderer};

#[test]
fn default_is_4k_long_edge_at_the_roots_aspect_ratio() {
    assert_eq!(output_size((1080.0, 1080.0), None).unwrap(), (3840, 3840));
    assert_eq!(output_size((1080.0, 1350.0), None).unwrap(), (3072, 3840));
    assert_eq!(output_size((1080.0, 1920.0), None).unwrap(), (2160, 3840));
    assert_eq!(output_size((1920.0, 1080.0), None).unwrap(), (3840, 2160));
    assert_eq!(
        output_size((1080.0, 1350.0), Some(540)).unwrap(),
        (540, 675)
    );
    assert!(output_size((10.0, 10.0), Some(0)).is_err());
    assert!(output_size((10.0, 10.0), Some(20000)).is_err());
}

#[test]
fn png_is_srgb_tagged_and_deterministic() {
    let case = RenderCase::new("images/fill");
    let a = case.render().png.unwrap();
    let b = case.render().png.unwrap();
    assert_eq!(a, b, "same tree, same bytes");
    assert_eq!(&a[..8], b"\x89PNG\r\n\x1a\n");
    assert!(a.windows(4).any(|w| w == b"sRGB"), "sRGB chunk present");
}

#[test]
fn renders_the_default_4k_size() {
    let tree = Tree::parse(r#"{"nodes":{"r":{"type":"FRAME","width":1080,"height":1350,"fills":[{"type":"SOLID","color":{"r":0,"g":0.5,"b":1,"a":1}}]}}}"#).unwrap();
    let out = renderer()
        .render(
            &tree,
            &RenderOptions {
                width: None,
                encode_png: false,
            },
        )
        .unwrap();
    assert_eq!((out.pixmap.width(), out.pixmap.height()), (3072, 3840));
    assert_eq!(out.report.timings.encode_ms, 0.0);
}

#[test]
fn shapes_scale_as_vectors() {
    // A 1-design-pixel hairline rendered at 8x is 8 device pixels wide and fully opaque.
    let tree = Tree::parse(r#"{"nodes":{"r":{"type":"FRAME","width":10,"height":10,"fills":[{"type":"SOLID","color":{"r":1,"g":1,"b":1,"a":1}}],"children":["l"]},
        "l":{"type":"RECTANGLE","x":4,"y":0,"width":1,"height":10,"fills":[{"type":"SOLID","color":{"r":0,"g":0,"b":0,"a":1}}]}}}"#).unwrap();
    let out = renderer()
        .render(
            &tree,
            &RenderOptions {
                width: Some(80),
                encode_png: false,
            },
        )
        .unwrap();
    let row: Vec<u8> = (0..80)
        .map(|x| out.pixmap.pixel(x, 40).unwrap().red())
        .collect();
    assert_eq!(row.iter().filter(|&&v| v == 0).count(), 8, "{row:?}");
    assert_eq!(
        row.iter().filter(|&&v| v != 0 && v != 255).count(),
        0,
        "no blurry edge: {row:?}"
    );
}

#[test]
fn renderer_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<adforge_renderer::Renderer>();
    assert_send_sync::<adforge_renderer::Tree>();
    assert_send_sync::<adforge_renderer::Error>();
}

#[test]
fn absurd_sizes_are_refused() {
    assert_eq!(
        output_size((1.0, 1.0e6), None).unwrap(),
        (1, 3840),
        "never 0 px"
    );
    assert!(
        output_size((10000.0, 10000.0), Some(16000)).is_err(),
        "256 MP"
    );
}

#[test]
fn carriage_returns_and_ellipsis_do_not_confuse_paragraphs() {
    let tree = Tree::parse(r#"{"nodes":{"r":{"type":"FRAME","width":60,"height":40,"children":["t"]},
        "t":{"type":"TEXT","width":60,"height":40,"maxLines":2,"characters":"one\r\ntwo\rthree\n\rfour five six seven"}}}"#).unwrap();
    let out = renderer()
        .render(
            &tree,
            &RenderOptions {
                width: Some(60),
                encode_png: false,
            },
        )
        .unwrap();
    assert!(
        out.report
            .warnings
            .iter()
            .any(|w| matches!(w, adforge_renderer::Warning::TextTruncated { lines: 2, .. })),
        "{:?}",
        out.report.warnings
    );
}

#[test]
fn recycled_canvas_gives_identical_output() {
    let case = RenderCase::new("effects/drop_shadow");
    let tree = case.tree();
    let opts = RenderOptions {
        width: Some(200),
        encode_png: false,
    };
    let r = adforge_renderer::Renderer::new(
        adforge_renderer::FontLibrary::bundled(),
        std::sync::Arc::new(adforge_renderer::HttpFetcher::new(Default::default())),
    );
    let a = r.render(&tree, &opts).unwrap().pixmap;
    let expected = a.data().to_vec();
    r.recycle(a);
    let b = r.render(&tree, &opts).unwrap().pixmap;
    assert_eq!(b.data(), &expected[..]);
}

#[test]
fn font_library_from_dir_matches_the_bundled_set() {
    let dir = crate::harness::repo_root().join("assets/fonts");
    let lib = adforge_renderer::FontLibrary::from_dir(&dir).unwrap();
    assert_eq!(lib.len(), adforge_renderer::FontLibrary::bundled().len());
    assert!(adforge_renderer::FontLibrary::from_dir(std::path::Path::new("/nonexistent")).is_err());
}
