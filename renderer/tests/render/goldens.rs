//! One golden image per behaviour.

use adforge_renderer::Warning;

use crate::harness::RenderCase;

macro_rules! goldens {
    ($area:ident: $($name:ident),* $(,)?) => {
        mod $area {
            $(
                #[test]
                fn $name() {
                    crate::harness::RenderCase::new(concat!(stringify!($area), "/", stringify!($name))).check();
                }
            )*
        }
    };
}

goldens!(shapes: rectangle, corner_radius, rectangle_corner_radii, ellipse, vector_path, vector_evenodd, vector_stroke_inside, vector_stroke_outside, rotation,
    opacity, invisible, group, frame_clip, frame_no_clip, stroke_inside, stroke_center, stroke_outside, blend_multiply);
goldens!(paints: solid_alpha, linear_gradient, linear_gradient_diagonal, radial_gradient, paint_opacity, multiple_fills, paint_blend_multiply);
goldens!(images: fill, fit, stretch, crop, tile, jpeg, webp, svg, image_opacity, rotated);
goldens!(effects: drop_shadow, drop_shadow_spread, inner_shadow, layer_blur, background_blur, effect_node, text_shadow, stacked);
goldens!(layout: horizontal_hug, vertical_hug, fixed_center, fixed_max, space_between, fill_children, layout_grow_legacy,
    wrap, absolute_child, hug_text_button, text_fill_width, baseline);
goldens!(text: basic, bold_italic, family_serif, family_bebas, align_center, align_right, justified, vertical_center,
    vertical_bottom, line_height, letter_spacing, upper_case, title_case, underline, strikethrough, rtl_arabic,
    rtl_fallback_hebrew, bidi_mixed, emoji, auto_width, gradient_fill, stroke, rotated, style_ranges);

fn has(r: &adforge_renderer::Rendered, f: impl Fn(&Warning) -> bool) -> bool {
    r.report.warnings.iter().any(f)
}

#[test]
fn unsupported_paint_is_reported() {
    let r = RenderCase::new("paints/unsupported_angular").check();
    assert!(has(
        &r,
        |w| matches!(w, Warning::Unsupported { feature, .. } if feature.contains("GRADIENT_ANGULAR"))
    ));
}

#[test]
fn missing_image_is_reported_and_skipped() {
    let r = RenderCase::new("images/missing").check();
    assert!(
        has(
            &r,
            |w| matches!(w, Warning::ImageFailed { node, .. } if node == "r")
        ),
        "{:?}",
        r.report.warnings
    );
}

#[test]
fn missing_family_falls_back_and_is_reported() {
    let r = RenderCase::new("text/missing_family").check();
    assert!(has(
        &r,
        |w| matches!(w, Warning::MissingFont { family, fallback, .. } if family == "Comic Sans Neue" && fallback == "Inter")
    ));
}

#[test]
fn shrink_to_fit_reports_the_size_used() {
    let r = RenderCase::new("text/shrink_to_fit").check();
    let fitted = &r.report.fitted_text;
    assert_eq!(fitted.len(), 1);
    assert!(
        fitted[0].font_size < 40.0 && fitted[0].font_size >= 8.0,
        "{fitted:?}"
    );
    assert!(has(
        &r,
        |w| matches!(w, Warning::TextShrunk { from, to, .. } if *from == 40.0 && *to == fitted[0].font_size)
    ));
    assert!(
        !has(&r, |w| matches!(w, Warning::TextOverflow { .. })),
        "{:?}",
        r.report.warnings
    );
}

#[test]
fn shrink_that_cannot_fit_reports_overflow() {
    let r = RenderCase::new("text/shrink_overflow").check();
    assert_eq!(r.report.fitted_text[0].font_size, 14.0);
    assert!(
        has(&r, |w| matches!(w, Warning::TextOverflow { .. })),
        "{:?}",
        r.report.warnings
    );
}

#[test]
fn max_lines_ellipsis() {
    let r = RenderCase::new("text/max_lines_ellipsis").check();
    assert!(
        has(&r, |w| matches!(w, Warning::TextTruncated { lines: 2, .. })),
        "{:?}",
        r.report.warnings
    );
}

#[test]
fn truncate_to_height() {
    let r = RenderCase::new("text/truncate_height").check();
    assert!(
        has(&r, |w| matches!(w, Warning::TextTruncated { .. })),
        "{:?}",
        r.report.warnings
    );
}

#[test]
fn low_contrast_is_reported() {
    let r = RenderCase::new("text/low_contrast").check();
    assert!(
        has(
            &r,
            |w| matches!(w, Warning::LowContrast { ratio, .. } if *ratio < 4.5)
        ),
        "{:?}",
        r.report.warnings
    );
    let ok = RenderCase::new("text/basic").check();
    assert!(!has(&ok, |w| matches!(w, Warning::LowContrast { .. })));
    // Text over a dark band and a light band is judged by its worst region, not the mean.
    let straddle = RenderCase::new("text/contrast_straddle").check();
    assert!(
        has(
            &straddle,
            |w| matches!(w, Warning::LowContrast { node, .. } if node == "t")
        ),
        "{:?}",
        straddle.report.warnings
    );
}

/// Writes every golden of an area side by side into `target/golden-sheet-<area>.png` for a
/// quick visual review: `cargo test -p adforge-renderer --test render -- --ignored sheet`.
#[test]
#[ignore]
fn contact_sheet() {
    for area in ["shapes", "paints", "images", "effects", "layout", "text"] {
        let dir = crate::harness::goldens_dir().join(area);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "png"))
            .collect();
        files.sort();
        let cols = 6u32;
        let rows = (files.len() as u32).div_ceil(cols);
        let mut sheet = tiny_skia::Pixmap::new(cols * 210, rows * 210).unwrap();
        sheet.fill(tiny_skia::Color::from_rgba8(128, 128, 128, 255));
        for (i, f) in files.iter().enumerate() {
            let p = tiny_skia::Pixmap::load_png(f).unwrap();
            let (x, y) = ((i as u32 % cols) * 210, (i as u32 / cols) * 210);
            sheet.draw_pixmap(
                x as i32,
                y as i32,
                p.as_ref(),
                &tiny_skia::PixmapPaint::default(),
                tiny_skia::Transform::identity(),
                None,
            );
        }
        sheet
            .save_png(crate::harness::repo_root().join(format!("target/golden-sheet-{area}.png")))
            .unwrap();
        println!(
            "{area}: {:?}",
            files
                .iter()
                .map(|f| f.file_stem().unwrap().to_string_lossy().to_string())
                .collect::<Vec<_>>()
        );
    }
}

#[test]
fn accepted_but_unsupported_features_are_reported() {
    let tree = adforge_renderer::Tree::parse(
        r#"{"nodes":{"r":{"type":"FRAME","width":50,"height":50,"layoutMode":"HORIZONTAL","children":["t"]},
        "t":{"type":"TEXT","characters":"Hi","textCase":"SMALL_CAPS","fills":[{"type":"SOLID","color":{"r":0,"g":0,"b":0},"blendMode":"MULTIPLY"}]}}}"#,
    )
    .unwrap();
    let out = crate::harness::renderer()
        .render(
            &tree,
            &adforge_renderer::RenderOptions {
                width: Some(50),
                encode_png: false,
            },
        )
        .unwrap();
    let features: Vec<&str> = out
        .report
        .warnings
        .iter()
        .filter_map(|w| match w {
            Warning::Unsupported { feature, .. } => Some(feature.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(features.len(), 1, "{features:?}");
    assert!(features.iter().all(|f| f.contains("not supported yet")));
}

/// `textFit` with `maxLines: 1` (a button label) shrinks the text onto one line instead of
/// dropping words to an ellipsis or wrapping, even where two lines would fit the height.
#[test]
fn shrink_to_fit_keeps_a_one_line_label_on_one_line() {
    let text = r#"{"root": "f", "nodes": {
        "f": {"id": "f", "type": "FRAME", "x": 0, "y": 0, "width": 200, "height": 80, "children": ["t"]},
        "t": {"id": "t", "type": "TEXT", "x": 10, "y": 0, "width": 180, "height": 80,
              "characters": "Edited with a longer label", "fontFamily": "Inter", "fontSize": 30,
              "textAutoResize": "NONE", "textAlignVertical": "CENTER", "maxLines": 1,
              "textFit": {"minFontSize": 6, "maxFontSize": 30}}}}"#;
    let tree = adforge_renderer::Tree::parse(text).unwrap();
    let r = crate::harness::renderer()
        .render(
            &tree,
            &adforge_renderer::RenderOptions {
                width: Some(200),
                encode_png: false,
            },
        )
        .unwrap();
    let fitted = &r.report.fitted_text;
    assert_eq!(fitted.len(), 1);
    assert!(fitted[0].font_size < 20.0, "{fitted:?}");
    assert!(
        !has(&r, |w| matches!(
            w,
            Warning::TextTruncated { .. } | Warning::TextOverflow { .. }
        )),
        "{:?}",
        r.report.warnings
    );
}
