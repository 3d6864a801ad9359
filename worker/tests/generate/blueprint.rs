//! The blueprint analysis on eight references of distinct compositions: each detected
//! region against the hand-written expectation, within a tolerance.

use adforge_renderer::Renderer;
use adforge_worker::blueprint::{
    Background, Blueprint, Rect, Shape, ShapeRole, TextRole, analyse_image,
};

use crate::references::{self, Reference};

fn ur(a: [f32; 4]) -> Rect {
    Rect {
        x: a[0],
        y: a[1],
        w: a[2],
        h: a[3],
    }
}

fn iou(a: &Rect, b: &Rect) -> f32 {
    let i = a.overlap(b);
    i / (a.area() + b.area() - i).max(1e-6)
}

/// `inner` lies inside `outer` grown by `tol` on every side.
fn inside(inner: &Rect, outer: &Rect, tol: f32) -> bool {
    inner.x >= outer.x - tol
        && inner.y >= outer.y - tol
        && inner.right() <= outer.right() + tol
        && inner.bottom() <= outer.bottom() + tol
}

/// Every way the blueprint misses the reference's expectations.
pub fn check(reference: &Reference, bp: &Blueprint) -> Vec<String> {
    let e = &reference.expect;
    let mut errs = Vec::new();
    let ground = match bp.background {
        Background::Solid { .. } => "solid",
        Background::Gradient { .. } => "gradient",
        Background::Photo { .. } => "photo",
    };
    if ground != e.ground {
        errs.push(format!("ground {ground}, expected {}", e.ground));
    }
    let (w, h) = reference.size();
    let aspect = bp.width as f32 / bp.height as f32;
    if (aspect / (w / h) - 1.0).abs() > 0.01 || bp.width.max(bp.height) != 3840 {
        errs.push(format!(
            "design size {}x{} for a {w}x{h} reference",
            bp.width, bp.height
        ));
    }
    match bp.text(TextRole::Headline) {
        None => errs.push("no headline".into()),
        Some(t) => {
            let ex = ur(e.headline);
            if !inside(&t.rect, &ex, 0.03) || (t.rect.y - ex.y).abs() > 0.05 {
                errs.push(format!("headline at {:?}, expected in {ex:?}", t.rect));
            }
        }
    }
    if let Some(sup) = e.supporting {
        match bp.text(TextRole::Supporting) {
            Some(t) if inside(&t.rect, &ur(sup), 0.03) => {}
            other => errs.push(format!(
                "supporting {:?}, expected in {sup:?}",
                other.map(|t| t.rect)
            )),
        }
    }
    match (e.product, bp.product()) {
        (Some(ex), Some(got)) if iou(&got, &ur(ex)) >= 0.75 => {}
        (None, None) => {}
        (ex, got) => errs.push(format!("product {got:?}, expected {ex:?}")),
    }
    if let Some(shape) = e.product_shape {
        let got = bp.images.first().map(|i| match i.shape {
            Shape::Rectangle => "rectangle",
            Shape::Rounded { .. } => "rounded",
            Shape::Circle => "circle",
            Shape::Silhouette => "silhouette",
        });
        if got != Some(shape) {
            errs.push(format!("product shape {got:?}, expected {shape}"));
        }
        if bp.images.first().map(|i| i.cutout) != Some(shape == "silhouette") {
            errs.push("cut-out flag wrong".into());
        }
    }
    for (role, ex, name) in [
        (ShapeRole::Button, e.cta, "button"),
        (ShapeRole::Badge, e.badge, "badge"),
    ] {
        match (ex, bp.shape(role)) {
            (Some(ex), Some(s)) if iou(&s.rect, &ur(ex)) >= 0.7 => {}
            (None, None) => {}
            (ex, got) => errs.push(format!("{name} {:?}, expected {ex:?}", got.map(|s| s.rect))),
        }
    }
    if e.cta.is_some() && bp.text(TextRole::Cta).is_none() {
        errs.push("no button label".into());
    }
    match (e.logo, bp.logo) {
        (Some(ex), Some(got)) if inside(&got, &ur(ex), 0.03) => {}
        (None, None) => {}
        (ex, got) => errs.push(format!("logo {got:?}, expected {ex:?}")),
    }
    errs
}

#[test]
fn every_reference_is_read_as_drawn() {
    let renderer = Renderer::with_defaults();
    let mut failures = Vec::new();
    for reference in references::all() {
        let png = reference.png(&renderer);
        let bp = analyse_image(&png).unwrap();
        let errs = check(&reference, &bp);
        if !errs.is_empty() {
            failures.push(format!(
                "{}:\n  {}\n  blueprint: {}",
                reference.name,
                errs.join("\n  "),
                serde_json::to_string(&bp).unwrap()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn blueprints_are_templates_the_renderer_accepts() {
    let renderer = Renderer::with_defaults();
    for reference in references::all() {
        let bp = analyse_image(&reference.png(&renderer)).unwrap();
        let t = adforge_worker::blueprint::template::template(&bp);
        adforge_renderer::Tree::from_value(t.clone())
            .unwrap_or_else(|e| panic!("{}: {e}", reference.name));
        let e = &reference.expect;
        let mut slots = vec!["root", "headline"];
        slots.push(if e.ground == "photo" {
            "photo"
        } else {
            "background"
        });
        if e.product.is_some() && e.ground != "photo" {
            slots.push("product_image");
        }
        if e.cta.is_some() {
            slots.extend(["cta", "cta_label"]);
        }
        if e.badge.is_some() {
            slots.extend(["badge", "badge_label"]);
        }
        if e.logo.is_some() {
            slots.push("logo");
        }
        if e.supporting.is_some() {
            slots.push("supporting");
        }
        for slot in slots {
            assert!(
                t["nodes"].get(slot).is_some(),
                "{}: no {slot} slot",
                reference.name
            );
        }
    }
}

#[test]
fn a_plain_ground_is_not_usable() {
    let img = image::RgbImage::from_pixel(400, 300, image::Rgb([200, 30, 30]));
    let bp = adforge_worker::blueprint::detect::analyse_rgb(&img);
    assert_eq!(
        bp.background,
        Background::Solid {
            color: [200, 30, 30]
        }
    );
    assert!(bp.unusable().is_some());
    assert_eq!((bp.width, bp.height), (3840, 2880));
}

fn node_rect(tree: &serde_json::Value, name: &str) -> Option<Rect> {
    let nodes = tree["nodes"].as_object()?;
    let root = &nodes[tree["root"].as_str()?];
    let (w, h) = (
        root["width"].as_f64()? as f32,
        root["height"].as_f64()? as f32,
    );
    let n = nodes.values().find(|n| n["name"] == name)?;
    let f = |k: &str| n[k].as_f64().unwrap_or(0.0) as f32;
    Some(Rect {
        x: f("x") / w,
        y: f("y") / h,
        w: f("width") / w,
        h: f("height") / h,
    })
}

/// Ads built on each reference: the reference's aspect, its slots where it had them, every
/// quality rule kept, all different; the second ad from a reference is a cache hit. Writes
/// a contact sheet (reference beside ad) to `target/generate-samples/blueprint-sheet.png`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ads_follow_their_reference() {
    use adforge_worker::Job;
    use adforge_worker::generate::{BLUEPRINT_LAYOUT, quality};
    use std::collections::HashMap;

    let renderer = Renderer::with_defaults();
    let refs = references::all();
    let mut files = HashMap::new();
    let mut pngs = Vec::new();
    for r in &refs {
        let png = r.png(&renderer);
        files.insert(format!("/ref/{}.png", r.name), png.clone());
        pngs.push(png);
    }
    files.insert(
        "/img/coffee.png".into(),
        std::fs::read(crate::fixtures::repo().join("assets/samples/coffee.png")).unwrap(),
    );
    files.insert("/logo/dark.png".into(), crate::fixtures::logo([24, 24, 32]));
    files.insert(
        "/logo/light.png".into(),
        crate::fixtures::logo([250, 250, 250]),
    );
    let base = crate::fixtures::serve(files).await;
    let harness = crate::fixtures::Harness::new().await;

    let mut failures = Vec::new();
    let mut sheet_rows = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, r) in refs.iter().enumerate() {
        let mut job = crate::fixtures::job(
            &base,
            &format!("ia_bp{i}"),
            &format!("/ref/{}.png", r.name),
            true,
        );
        job.reference_ad_url = format!("{base}/ref/{}.png", r.name);
        job.brand
            .logos
            .iter_mut()
            .for_each(|l| l.url = l.url.replace(&harness.base, &base));
        job.variant_image_urls = vec![format!("{base}/img/coffee.png")];
        let (res, _) = harness.run(Job::GenerateImageAd(job)).await;
        let done = crate::fixtures::ad(res.unwrap_or_else(|e| panic!("{}: {e:?}", r.name)));
        let tree = done.json_tree.clone().unwrap();
        let (rw, rh) = r.size();
        let mut errs = Vec::new();
        if ((done.width as f32 / done.height as f32) / (rw / rh) - 1.0).abs() > 0.03 {
            errs.push(format!("ad is {}x{}", done.width, done.height));
        }
        let root = &tree["nodes"][tree["root"].as_str().unwrap()];
        if root["name"] != BLUEPRINT_LAYOUT {
            errs.push(format!(
                "built on {} instead of the blueprint: {}",
                root["name"],
                why_not(&harness.handler, &pngs[i], &base)
            ));
        } else {
            let e = &r.expect;
            // The lead: the headline, or the quote, offer, price or figure that leads.
            let lead = ["Headline", "Quote", "Offer", "Price", "Stat"]
                .iter()
                .find_map(|n| node_rect(&tree, n));
            match lead {
                Some(h) if r_center_in(&h, &ur(e.headline), 0.08) => {}
                h => errs.push(format!(
                    "headline box {h:?}, reference had {:?}",
                    e.headline
                )),
            }
            if let Some(p) = e.product {
                let name = if e.ground == "photo" {
                    "Photo"
                } else {
                    "Product Image"
                };
                match node_rect(&tree, name) {
                    Some(got) if iou(&got, &ur(p)) >= 0.5 => {}
                    got => errs.push(format!("product box {got:?}, reference had {p:?}")),
                }
            }
            if let Some(c) = e.cta {
                match node_rect(&tree, "Cta") {
                    Some(got) if iou(&got, &ur(c)) >= 0.5 => {}
                    got => errs.push(format!("cta box {got:?}, reference had {c:?}")),
                }
            }
        }
        // The quality rules, judged again on the returned tree.
        let t = adforge_renderer::Tree::from_value(tree.clone()).unwrap();
        let report = harness
            .handler
            .renderer()
            .render(
                &t,
                &adforge_renderer::RenderOptions {
                    width: Some(540),
                    encode_png: false,
                },
            )
            .unwrap()
            .report;
        for w in &report.warnings {
            if matches!(
                w,
                adforge_renderer::Warning::LowContrast { .. }
                    | adforge_renderer::Warning::TextOverflow { .. }
            ) {
                errs.push(format!("{w:?}"));
            }
        }
        if let Some(why) = quality::crowded_text(&tree) {
            errs.push(why);
        }
        if let Some(share) = quality::product_share(&tree)
            && share < adforge_worker::blueprint::MIN_PRODUCT_SHARE
        {
            errs.push(format!("product share {share}"));
        }
        let key = adforge_worker::generate::blob_key(&format!("ia_bp{i}"), 1);
        let ad_png = harness.blob(&key).await;
        assert!(
            seen.insert(ad_png.clone()),
            "{}: the same ad as another reference",
            r.name
        );
        sheet_rows.push((pngs[i].clone(), ad_png));
        if !errs.is_empty() {
            failures.push(format!("{}: {}", r.name, errs.join("; ")));
        }
    }
    write_sheet(&sheet_rows, "blueprint-sheet.png");
    // A second ad from the first reference is answered from the analysis cache.
    let hits = harness.handler.blueprints().hits();
    let mut job = crate::fixtures::job(
        &base,
        "ia_again",
        &format!("/ref/{}.png", refs[0].name),
        false,
    );
    job.brand.logos.clear();
    job.variant_image_urls = vec![format!("{base}/img/coffee.png")];
    harness.run(Job::GenerateImageAd(job)).await.0.unwrap();
    assert_eq!(harness.handler.blueprints().hits(), hits + 1);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn r_center_in(inner: &Rect, outer: &Rect, tol: f32) -> bool {
    let (cx, cy) = inner.center();
    cx >= outer.x - tol
        && cx <= outer.right() + tol
        && cy >= outer.y - tol
        && cy <= outer.bottom() + tol
}

/// Reference beside ad, one row each, 260 px high.
pub fn write_sheet(rows: &[(Vec<u8>, Vec<u8>)], name: &str) {
    use image::{GenericImage, RgbaImage, imageops::FilterType};
    let row_h = 260u32;
    let scaled: Vec<(image::DynamicImage, image::DynamicImage)> = rows
        .iter()
        .map(|(a, b)| {
            let f = |p: &[u8]| {
                let i = image::load_from_memory(p).unwrap();
                let w = (i.width() as f32 * row_h as f32 / i.height() as f32).round() as u32;
                i.resize_exact(w, row_h, FilterType::Triangle)
            };
            (f(a), f(b))
        })
        .collect();
    let width = scaled
        .iter()
        .map(|(a, b)| a.width() + b.width() + 60)
        .max()
        .unwrap_or(1);
    let mut sheet = RgbaImage::from_pixel(
        width,
        (row_h + 20) * rows.len() as u32 + 20,
        image::Rgba([90, 90, 96, 255]),
    );
    for (i, (a, b)) in scaled.iter().enumerate() {
        let y = 20 + i as u32 * (row_h + 20);
        sheet.copy_from(&a.to_rgba8(), 20, y).unwrap();
        sheet.copy_from(&b.to_rgba8(), 40 + a.width(), y).unwrap();
    }
    let dir = crate::fixtures::repo().join("target/generate-samples");
    std::fs::create_dir_all(&dir).unwrap();
    sheet.save(dir.join(name)).unwrap();
}

#[test]
#[ignore = "writes the references to target/generate-samples for people to look at, and prints how long each analysis took"]
fn write_references() {
    let renderer = Renderer::with_defaults();
    let dir = crate::fixtures::repo().join("target/generate-samples");
    std::fs::create_dir_all(&dir).unwrap();
    for r in references::all() {
        let png = r.png(&renderer);
        let t = std::time::Instant::now();
        let bp = analyse_image(&png).unwrap();
        eprintln!(
            "{}: analysed in {:?} ({} texts, {} images, {} shapes)",
            r.name,
            t.elapsed(),
            bp.texts.len(),
            bp.images.len(),
            bp.shapes.len()
        );
        std::fs::write(dir.join(format!("ref-{}.png", r.name)), png).unwrap();
    }
    for r in crate::formats::all() {
        std::fs::write(dir.join(format!("format-{}.png", r.name)), r.png(&renderer)).unwrap();
    }
}

/// Why the blueprint of `png` was not used (for failure messages).
fn why_not(handler: &adforge_worker::GenerateAdHandler, png: &[u8], base: &str) -> String {
    use adforge_worker::generate::{analyse, brand, copy, fill, preflight_report, quality};
    let bp = analyse_image(png).unwrap();
    if let Some(r) = bp.unusable() {
        return r.to_owned();
    }
    let job = crate::fixtures::job(base, "ia_dbg", "/x", true);
    let analysis = analyse::analyse(png).unwrap();
    let copy = copy::write_copy(&job.product, &job.audience, job.prompt.as_deref());
    let url = format!("{base}/img/coffee.png");
    let inputs = fill::FillInputs {
        ad_id: "ia_dbg",
        layout_name: "x",
        brand: &job.brand,
        palette: brand::Palette::from_brand(&job.brand, &analysis),
        copy: &copy,
        product_image: Some(&url),
        product_cutout: None,
        logos: &[],
        slots: None,
        no_logo: false,
    };
    let template = adforge_worker::blueprint::template::template(&bp);
    let facts = adforge_worker::generate::facts::Facts::from_job(&job);
    let words = adforge_worker::generate::blueprint_words(
        &job,
        &bp,
        &template,
        &facts,
        handler.renderer(),
        None,
    );
    let inputs = fill::FillInputs {
        slots: Some(&words.slots),
        ..inputs
    };
    let filled = fill::fill(&template, &inputs).unwrap();
    let c = preflight_report(handler.renderer(), handler.fetcher(), filled).unwrap();
    format!(
        "{:?} / {:?}",
        quality::check(&c.tree, &c.report, &bp, c.logo.as_ref()),
        c.report.warnings
    )
}

/// A reference with nothing usable in a shape no library layout has (1.91:1) still gives an
/// ad of its own aspect ratio, keeping the quality rules.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_landscape_keeps_its_aspect() {
    use adforge_worker::Job;
    use adforge_worker::generate::{GENERIC_LAYOUT, quality};
    use std::collections::HashMap;

    let plain = image::RgbImage::from_pixel(1200, 628, image::Rgb([20, 40, 90]));
    let mut files = HashMap::new();
    files.insert(
        "/ref/plain.png".to_owned(),
        crate::fixtures::png(&image::DynamicImage::ImageRgb8(plain)),
    );
    files.insert(
        "/img/coffee.png".into(),
        std::fs::read(crate::fixtures::repo().join("assets/samples/coffee.png")).unwrap(),
    );
    let base = crate::fixtures::serve(files).await;
    let harness = crate::fixtures::Harness::new().await;
    let mut job = crate::fixtures::job(&base, "ia_plain", "/ref/plain.png", true);
    job.brand.logos.clear();
    let done = crate::fixtures::ad(harness.run(Job::GenerateImageAd(job)).await.0.unwrap());
    let ratio = done.width as f32 / done.height as f32;
    assert!(
        (ratio / (1200.0 / 628.0) - 1.0).abs() <= 0.03,
        "{}x{}",
        done.width,
        done.height
    );
    let png = harness
        .blob(&adforge_worker::generate::blob_key("ia_plain", 1))
        .await;
    let dir = crate::fixtures::repo().join("target/generate-samples");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("generic-landscape.png"), png).unwrap();
    let tree = done.json_tree.unwrap();
    assert_eq!(
        tree["nodes"][tree["root"].as_str().unwrap()]["name"],
        GENERIC_LAYOUT
    );
    let share = quality::product_share(&tree).unwrap();
    assert!(
        share >= adforge_worker::blueprint::MIN_PRODUCT_SHARE,
        "{share}"
    );
    let t = adforge_renderer::Tree::from_value(tree).unwrap();
    let report = harness
        .handler
        .renderer()
        .render(
            &t,
            &adforge_renderer::RenderOptions {
                width: Some(540),
                encode_png: false,
            },
        )
        .unwrap()
        .report;
    assert!(
        !report.warnings.iter().any(|w| matches!(
            w,
            adforge_renderer::Warning::LowContrast { .. }
                | adforge_renderer::Warning::TextOverflow { .. }
        )),
        "{:?}",
        report.warnings
    );
}

/// A text box is widened only where nothing lies beside it down to the depth it keeps: a
/// picture to the right that starts just below the headline's own lines is beside the box
/// that would be widened over it, so the box stops short of it (it was widened first and
/// cut in depth only by what lay below its reference's narrow block, and ran into it).
#[test]
fn a_widened_text_box_never_runs_into_a_picture_beside_it() {
    use adforge_worker::blueprint::{Align, ImageRegion, TextBlock};
    let headline = TextBlock {
        role: TextRole::Headline,
        rect: ur([0.06, 0.1, 0.3, 0.11]),
        lines: 2,
        line_height: 0.05,
        align: Align::Left,
        color: [20, 20, 20],
        weight: 800,
        upper: false,
        words: None,
    };
    for picture_top in [0.22_f32, 0.24, 0.3] {
        let bp = Blueprint {
            source_width: 1080,
            source_height: 1080,
            width: 3840,
            height: 3840,
            background: Background::Solid {
                color: [250, 248, 244],
            },
            images: vec![ImageRegion {
                rect: ur([0.5, picture_top, 0.44, 0.6]),
                shape: Shape::Rectangle,
                cutout: false,
                shadow: None,
            }],
            shapes: Vec::new(),
            texts: vec![headline.clone()],
            logo: None,
            margins: [0.06, 0.1, 0.06, 0.06],
            words_read: false,
            format: None,
            format_from: "none",
        };
        let t = adforge_worker::blueprint::template::template(&bp);
        let head = node_box(&t, "headline");
        let pic = node_box(&t, "product_image");
        let overlap = (head.right().min(pic.right()) - head.x.max(pic.x)).max(0.0)
            * (head.bottom().min(pic.bottom()) - head.y.max(pic.y)).max(0.0);
        assert_eq!(
            overlap, 0.0,
            "picture at {picture_top}: headline {head:?} runs into the picture {pic:?}"
        );
        // It still keeps the depth of the reference's block, and widens where it can.
        assert!(head.bottom() >= headline.rect.bottom() * 3840.0, "{head:?}");
        assert!(head.w >= headline.rect.w * 3840.0, "{head:?}");
        assert_eq!(adforge_worker::generate::quality::crowded_text(&t), None);
    }
}

/// A node's box in design pixels, by template key.
fn node_box(t: &serde_json::Value, key: &str) -> Rect {
    let n = &t["nodes"][key];
    let f = |k: &str| n[k].as_f64().unwrap() as f32;
    Rect {
        x: f("x"),
        y: f("y"),
        w: f("width"),
        h: f("height"),
    }
}
