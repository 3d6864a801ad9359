//! The importer on every fixture: node kinds, text ranges, auto layout, image fills, what
//! cannot be mapped, real frames.

use adforge_renderer::tree::TreeDoc;
use serde_json::Value;

use super::spec::{self, validate_response};
use super::{fixture, frame, import, our_id, pixel, render, renderer};

/// Every fixture with the response schema it is an answer of, and how a real response
/// differs from Figma's own description of it (each a piece of the validator's message
/// that every such error contains; the test fails if one finds nothing or an error matches
/// none). The 2022 response predates fields the 2026 description requires.
const FIXTURES: &[(&str, &str, &[&str])] = &[
    (
        "grida-vector-frame.nodes.json",
        "GetFileNodesResponse",
        &["$: `thumbnailUrl` is required"],
    ),
    ("grida-stroke.nodes.json", "GetFileNodesResponse", &[]),
    ("radix-title.nodes.json", "GetFileNodesResponse", &[]),
    ("radix-logos.nodes.json", "GetFileNodesResponse", &[]),
    ("radix-instance.nodes.json", "GetFileNodesResponse", &[]),
    (
        "movch-icons.nodes.json",
        "GetFileNodesResponse",
        &[
            ": `scrollBehavior` is required",
            ": `absoluteRenderBounds` is required",
            ": `remote` is required",
        ],
    ),
    ("movch-icons.images.json", "GetImagesResponse", &[]),
    ("handmade-ad.nodes.json", "GetFileNodesResponse", &[]),
    ("handmade-ad.v2.nodes.json", "GetFileNodesResponse", &[]),
];

#[test]
fn fixtures_follow_figmas_openapi_description() {
    let mut report = String::new();
    for (name, response, deviations) in FIXTURES {
        let errors = validate_response(&fixture(name), response);
        let unexpected: Vec<&String> = errors
            .iter()
            .filter(|e| !deviations.iter().any(|d| e.contains(d)))
            .collect();
        let missing: Vec<&&str> = deviations
            .iter()
            .filter(|d| !errors.iter().any(|e| e.contains(*d)))
            .collect();
        if !unexpected.is_empty() || !missing.is_empty() {
            report.push_str(&format!(
                "{name}: unexpected {unexpected:#?}, listed but not found {missing:?}\n"
            ));
        }
    }
    assert!(report.is_empty(), "{report}");
}

fn node<'a>(tree: &'a Value, id: &str) -> &'a Value {
    &tree["nodes"][id]
}

fn reported(imp: &adforge_worker::figma::import::Imported, figma_id: &str, feature: &str) -> bool {
    imp.report
        .unmapped
        .iter()
        .any(|u| u.figma_id == figma_id && u.feature.contains(feature))
}

#[test]
fn every_node_kind_is_imported_and_drawn() {
    let imp = import("handmade-ad.nodes.json");
    let t = &imp.tree;
    let kind = |figma: &str| {
        node(t, &our_id(&imp, figma))["type"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    for (figma, ours) in [
        ("10:1", "FRAME"),      // FRAME (the root)
        ("10:3", "FRAME"),      // auto-layout FRAME
        ("10:12", "GROUP"),     // GROUP
        ("10:13", "VECTOR"),    // STAR, from its fillGeometry
        ("10:15", "FRAME"),     // COMPONENT
        ("10:16", "FRAME"),     // INSTANCE
        ("10:17", "VECTOR"),    // BOOLEAN_OPERATION, its computed result
        ("10:18", "VECTOR"),    // LINE, its stroke outline
        ("10:19", "VECTOR"),    // VECTOR
        ("10:2", "RECTANGLE"),  // RECTANGLE
        ("10:10", "ELLIPSE"),   // ELLIPSE
        ("10:28", "VECTOR"),    // an ELLIPSE ring (arcData) from its fillGeometry
        ("10:31", "VECTOR"),    // REGULAR_POLYGON
        ("10:5", "TEXT"),       // TEXT
        ("10:23", "RECTANGLE"), // a masked GROUP, drawn from its SVG export
    ] {
        assert_eq!(kind(figma), ours, "Figma node {figma}");
    }
    assert_eq!(node(t, &our_id(&imp, "10:16"))["figmaType"], "INSTANCE");
    assert_eq!(node(t, &our_id(&imp, "10:16"))["componentId"], "10:15");
    // The boolean's operands are its geometry, not nodes of their own.
    assert!(
        t["nodes"]
            .as_object()
            .unwrap()
            .values()
            .all(|n| n["figmaId"] != "10:35")
    );
    assert_eq!(imp.report.kinds["ELLIPSE"], 5);
    // Every node of the frame is read: 42 (the slice and the mask's children included).
    assert_eq!(imp.report.nodes, 42);
    // Positions from relativeTransform, rotation in degrees: the badge's star is unrotated,
    // the card sits where Figma put it.
    let card = node(t, &our_id(&imp, "10:3"));
    assert_eq!(
        (card["x"].as_f64(), card["y"].as_f64()),
        (Some(60.0), Some(600.0))
    );

    let r = render(&imp, 540);
    super::save(&r, "handmade-ad");
    let px = |x: f32, y: f32| pixel(&r, (x / 2.0) as u32, (y / 2.0) as u32);
    // The photo (coffee) fills the top half: not the frame's cream background.
    let photo = px(540.0, 270.0);
    assert!(photo != [250, 245, 235, 255], "{photo:?}");
    // The star badge is red at its centre (under the white label's hole? no: beside it).
    let star = px(835.0, 520.0);
    assert!(star[0] > 180 && star[1] < 80, "star {star:?}");
    // The heart (boolean result) is pink where both operands overlap and where only the
    // union's outline is.
    let heart = px(940.0, 85.0);
    assert!(
        heart[0] > 180 && heart[2] > 40 && heart[1] < 120,
        "heart {heart:?}"
    );
    // The ring's hole shows what is behind it; its band is the accent colour.
    let hole = px(1020.0, 1020.0);
    let band = px(1020.0, 988.0);
    assert!(band[0] > 180 && band[1] < 130, "band {band:?}");
    assert!(hole != band, "hole {hole:?}");
    // The triangle is green at its centroid.
    let tri = px(490.0, 336.0);
    assert!(tri[1] > 140 && tri[0] < 80, "triangle {tri:?}");
    // The masked group drawn from its SVG export: blue top half, orange bottom, inside the
    // circle only.
    let top = px(765.0, 470.0);
    let bottom = px(765.0, 505.0);
    assert!(top[2] > top[0], "mask top {top:?}");
    assert!(bottom[0] > bottom[2], "mask bottom {bottom:?}");
}

#[test]
fn text_ranges_keep_their_styles() {
    let imp = import("handmade-ad.nodes.json");
    let id = our_id(&imp, "10:5");
    let headline = node(&imp.tree, &id);
    assert_eq!(headline["characters"], "Fresh coffee, delivered daily");
    assert_eq!(headline["styleOverrideTable"]["1"]["fontWeight"], 800);
    let overrides = headline["characterStyleOverrides"].as_array().unwrap();
    assert_eq!(overrides.iter().filter(|v| *v == 1).count(), "coffee".len());
    // Drawn: the range is the accent colour and underlined, the rest is ink.
    let r = render(&imp, 1080);
    let b = r.boxes.iter().find(|b| b.id == id).unwrap();
    let (mut accent, mut ink) = (0, 0);
    for y in b.y as u32..(b.y + b.height) as u32 {
        for x in b.x as u32..(b.x + b.width) as u32 {
            let p = pixel(&r, x, y);
            if p[0] > 190 && p[1] < 120 && p[2] < 80 {
                accent += 1;
            }
            if p[0] < 60 && p[1] < 60 && p[2] < 80 {
                ink += 1;
            }
        }
    }
    assert!(accent > 500 && ink > 500, "accent {accent}, ink {ink}");
}

#[test]
fn auto_layout_is_laid_out_as_figma_laid_it_out() {
    // Figma's real layout of a HORIZONTAL auto-layout frame of components (the Radix
    // Icons file): every child where Figma's absoluteBoundingBox says, within a pixel.
    let nodes = fixture("radix-logos.nodes.json");
    let f = frame(&nodes);
    let imp = import("radix-logos.nodes.json");
    let root_abs = &f["absoluteBoundingBox"];
    let tree = adforge_renderer::Tree::from_value(imp.tree.clone()).unwrap();
    let w = f["absoluteBoundingBox"]["width"].as_f64().unwrap() as u32;
    let laid = renderer().layout_boxes(&tree, Some(w)).unwrap();
    let mut checked = 0;
    for child in f["children"].as_array().unwrap() {
        let id = our_id(&imp, child["id"].as_str().unwrap());
        let b = laid.boxes.iter().find(|b| b.id == id).unwrap();
        let fx =
            child["absoluteBoundingBox"]["x"].as_f64().unwrap() - root_abs["x"].as_f64().unwrap();
        let fy =
            child["absoluteBoundingBox"]["y"].as_f64().unwrap() - root_abs["y"].as_f64().unwrap();
        assert!(
            (f64::from(b.x) - fx).abs() <= 1.0 && (f64::from(b.y) - fy).abs() <= 1.0,
            "{}: ours ({}, {}), Figma's ({fx}, {fy})",
            child["name"],
            b.x,
            b.y
        );
        checked += 1;
    }
    assert!(checked >= 10, "{checked}");

    // The hand-made card: a column with padding and spacing, a hugging row, a button that
    // hugs its label, chips that wrap.
    let imp = import("handmade-ad.nodes.json");
    let tree = adforge_renderer::Tree::from_value(imp.tree.clone()).unwrap();
    let laid = renderer().layout_boxes(&tree, Some(1080)).unwrap();
    let b = |figma: &str| {
        let id = our_id(&imp, figma);
        laid.boxes.iter().find(|b| b.id == id).unwrap().clone()
    };
    let (card, eyebrow, headline, row, cta, price) = (
        b("10:3"),
        b("10:4"),
        b("10:5"),
        b("10:6"),
        b("10:7"),
        b("10:9"),
    );
    assert_eq!((eyebrow.x, eyebrow.y), (card.x + 40.0, card.y + 40.0));
    assert!((headline.y - (eyebrow.y + eyebrow.height + 20.0)).abs() < 0.5);
    assert!(
        (headline.width - 880.0).abs() < 0.5,
        "FILL: {}",
        headline.width
    );
    assert!((row.y - (headline.y + headline.height + 20.0)).abs() < 0.5);
    assert!((price.x - (cta.x + cta.width + 16.0)).abs() < 0.5);
    let label = b("10:8");
    assert!(
        (cta.width - (label.width + 64.0)).abs() < 0.5,
        "hug: {} vs {}",
        cta.width,
        label.width
    );
    let (chip0, chip3) = (b("10:40"), b("10:43"));
    assert!(chip3.y > chip0.y + 30.0, "wrapped: {} {}", chip0.y, chip3.y);
}

#[test]
fn image_fills_keep_their_scale_modes() {
    let imp = import("handmade-ad.nodes.json");
    let paint = |figma: &str| node(&imp.tree, &our_id(&imp, figma))["fills"][0].clone();
    assert_eq!(paint("10:2")["scaleMode"], "FILL");
    assert_eq!(paint("10:2")["imageFillUrl"], "figma-image:img-photo");
    assert_eq!(paint("10:2")["imageRef"], "img-photo");
    assert_eq!(paint("10:20")["scaleMode"], "TILE");
    assert_eq!(paint("10:20")["scalingFactor"], 0.5);
    assert_eq!(paint("10:21")["scaleMode"], "STRETCH");
    assert!(paint("10:21")["imageTransform"].is_array());
    // The rocket is inside the masked group, drawn from its SVG export: not a fill of ours.
    let refs: Vec<&str> = imp.image_refs.iter().map(String::as_str).collect();
    assert_eq!(refs, ["img-cat", "img-logo", "img-photo", "img-tile"]);
    assert_eq!(imp.report.image_fills, 4);
    // Drawn: the logo (FIT, transparent ground) shows its dark squares over the cream.
    let r = render(&imp, 1080);
    let logo = pixel(&r, 90, 75);
    assert!(logo[0] < 60 || logo[0] > 200, "logo {logo:?}");
    // The cropped cat: the crop's colours, not the frame's.
    let crop = pixel(&r, 520, 500);
    assert!(crop != pixel(&r, 1070, 1075), "crop {crop:?}");
}

#[test]
fn unmappable_features_are_reported_by_node_and_kept() {
    let imp = import("handmade-ad.nodes.json");
    for (figma, feature) in [
        ("10:23", "GROUP"),            // a mask: drawn from the SVG export
        ("10:22", "GRADIENT_ANGULAR"), // an angular gradient
        ("10:22", "cornerSmoothing"),
        ("10:19", "strokeDashes"), // dashes on a closed path
        ("10:11", "lineTypes"),    // list bullets
        ("10:11", "paragraphSpacing"),
        ("10:33", "layoutMode GRID"),
        ("10:26", "blendMode LINEAR_BURN"),
        ("10:30", "SLICE"),
    ] {
        assert!(
            reported(&imp, figma, feature),
            "{figma} {feature}: {:#?}",
            imp.report.unmapped
        );
    }
    // Kept on the node as Figma sent it.
    let squiggle = node(&imp.tree, &our_id(&imp, "10:19"));
    assert_eq!(squiggle["strokeDashes"], serde_json::json!([6, 6]));
    let glass = node(&imp.tree, &our_id(&imp, "10:26"));
    assert_eq!(glass["figmaUnmapped"]["blendMode"], "LINEAR_BURN");
    let grid = node(&imp.tree, &our_id(&imp, "10:33"));
    assert_eq!(grid["figmaUnmapped"]["layoutMode"], "GRID");
    let list = node(&imp.tree, &our_id(&imp, "10:11"));
    assert_eq!(
        list["lineTypes"],
        serde_json::json!(["UNORDERED", "UNORDERED"])
    );
    assert_eq!(
        imp.svg_exports,
        vec![("10:23".to_owned(), our_id(&imp, "10:23"))]
    );
    // The dashed line (an open path) is drawn from Figma's own outline: exact, not reported.
    assert!(!reported(&imp, "10:18", "strokeDashes"));
    // The missing font is named by the render.
    let r = render(&imp, 540);
    assert!(
        r.report.warnings.iter().any(|w| matches!(w,
            adforge_renderer::Warning::MissingFont { family, node, .. }
                if family == "Helvetica Neue" && *node == our_id(&imp, "10:27"))),
        "{:?}",
        r.report.warnings
    );
}

#[test]
fn slots_are_found_by_name() {
    let imp = import("handmade-ad.nodes.json");
    let slots: Vec<(&str, String)> = imp
        .report
        .slots
        .iter()
        .map(|s| (s.slot.as_str(), s.node.clone()))
        .collect();
    for (slot, figma) in [
        ("photo", "10:2"),
        ("eyebrow", "10:4"),
        ("headline", "10:5"),
        ("cta", "10:7"),
        ("cta_label", "10:8"),
        ("price", "10:9"),
        ("supporting", "10:11"),
        ("badge_label", "10:14"),
        ("logo", "10:15"),
    ] {
        assert!(
            slots.contains(&(slot, our_id(&imp, figma))),
            "{slot}: {slots:?}"
        );
    }
    // A template marks them for ads made from it; its slot nodes take the slot's name as id.
    let nodes = fixture("handmade-ad.nodes.json");
    let t = adforge_worker::figma::import::import(
        frame(&nodes),
        &adforge_worker::figma::import::Options {
            file_key: "FixtureFileKey",
            for_template: true,
        },
    )
    .unwrap();
    assert_eq!(t.tree["nodes"]["headline"]["$text"], "headline");
    assert_eq!(t.tree["nodes"]["cta_label"]["$text"], "cta");
    assert_eq!(t.tree["nodes"]["photo"]["$image"], "product");
    assert_eq!(t.tree["nodes"]["logo"]["$image"], "logo");
}

#[test]
fn node_ids_are_stable_across_syncs_of_a_frame() {
    let (a, b) = (
        import("handmade-ad.nodes.json"),
        import("handmade-ad.v2.nodes.json"),
    );
    let ids = |i: &adforge_worker::figma::import::Imported| {
        TreeDoc::new(&i.tree)
            .node_ids()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&a), ids(&b));
    assert_ne!(a.tree, b.tree);
}

#[test]
fn real_frames_import() {
    // A frame of vectors and a text in a font the library does not have.
    let imp = import("radix-title.nodes.json");
    let text = node(&imp.tree, &our_id(&imp, "4:7741"));
    assert_eq!(text["characters"], "Radix Icons");
    let r = render(&imp, 400);
    super::save(&r, "radix-title");
    assert!(r.report.warnings.iter().any(|w| matches!(w,
        adforge_renderer::Warning::MissingFont { family, .. } if family == "Untitled Sans")));
    // An instance of a component: a frame with its expanded children.
    let imp = import("radix-instance.nodes.json");
    super::save(&render(&imp, 300), "radix-instance");
    let root = TreeDoc::new(&imp.tree).root_id().unwrap().to_owned();
    assert_eq!(node(&imp.tree, &root)["figmaType"], "INSTANCE");
    assert!(
        imp.report.kinds.contains_key("BOOLEAN_OPERATION")
            || imp.report.kinds.contains_key("VECTOR")
    );
    render(&imp, 300);
    // A response without vector geometry: each icon component is drawn from Figma's SVG
    // export of it, and the text stays text.
    let imp = import("movch-icons.nodes.json");
    super::save(&render(&imp, 400), "movch-icons");
    let exported: Vec<&str> = imp.svg_exports.iter().map(|(f, _)| f.as_str()).collect();
    assert!(exported.contains(&"508:15"), "{exported:?}");
    assert_eq!(imp.report.svg_exports, 7);
    let r = render(&imp, 400);
    assert!(
        r.report
            .warnings
            .iter()
            .all(|w| !matches!(w, adforge_renderer::Warning::ImageFailed { .. }))
    );
    // A vector with an INSIDE stroke over a fill, on its own (wrapped in a frame).
    let imp = import("grida-stroke.nodes.json");
    let v = node(&imp.tree, &our_id(&imp, "1:6"));
    assert_eq!(v["type"], "VECTOR");
    assert_eq!(v["strokeAlign"], "INSIDE");
    assert!(
        v["fillGeometry"][0]["path"]
            .as_str()
            .unwrap()
            .starts_with('M')
    );
    let _ = spec::spec();
}
