//! The re-layout on small hand-made trees: the arrangement each shape gets, the floor, the
//! ground covering the new canvas, node ids and words kept, and a shape too small refused.

use adforge_renderer::Renderer;
use adforge_renderer::tree::TreeDoc;
use serde_json::{Value, json};

use super::*;

/// A 4:5 ad at 1080 × 1350: ground, product in the lower half, headline, supporting text
/// and a button above it, a logo top left.
fn ad(headline: &str) -> Value {
    json!({"root": "root", "nodes": {
        "root": {"type": "FRAME", "width": 1080, "height": 1350, "name": "test",
                 "children": ["bg", "logo", "headline", "supporting", "cta", "product"]},
        "bg": {"type": "RECTANGLE", "name": "Background", "x": 0, "y": 0, "width": 1080, "height": 1350,
               "fills": [{"type": "SOLID", "color": {"r": 0.96, "g": 0.92, "b": 0.86}}]},
        "logo": {"type": "RECTANGLE", "name": "Logo", "x": 60, "y": 60, "width": 200, "height": 56,
                 "fills": [{"type": "SOLID", "color": {"r": 0.1, "g": 0.1, "b": 0.1}}]},
        "headline": {"type": "TEXT", "name": "Headline", "x": 60, "y": 160, "width": 960, "height": 180,
                     "characters": headline, "fontFamily": "Inter", "fontSize": 72, "fontWeight": 700,
                     "textAutoResize": "NONE", "textFit": {"minFontSize": 30, "maxFontSize": 72},
                     "fills": [{"type": "SOLID", "color": {"r": 0.1, "g": 0.1, "b": 0.1}}]},
        "supporting": {"type": "TEXT", "name": "Supporting", "x": 60, "y": 360, "width": 960, "height": 80,
                       "characters": "Smooth, low-acid cold brew, steeped for 18 hours.",
                       "fontFamily": "Inter", "fontSize": 32, "textAutoResize": "NONE",
                       "textFit": {"minFontSize": 14, "maxFontSize": 32},
                       "fills": [{"type": "SOLID", "color": {"r": 0.2, "g": 0.2, "b": 0.2}}]},
        "cta": {"type": "FRAME", "name": "Cta", "x": 60, "y": 470, "width": 300, "height": 80, "cornerRadius": 40,
                "fills": [{"type": "SOLID", "color": {"r": 0.1, "g": 0.2, "b": 0.4}}], "children": ["label"]},
        "label": {"type": "TEXT", "name": "Cta Label", "x": 20, "y": 0, "width": 260, "height": 80,
                  "characters": "Shop now", "fontFamily": "Inter", "fontSize": 30, "textAlignHorizontal": "CENTER",
                  "textAlignVertical": "CENTER", "textAutoResize": "NONE", "textFit": {"minFontSize": 12, "maxFontSize": 30},
                  "fills": [{"type": "SOLID", "color": {"r": 1, "g": 1, "b": 1}}]},
        "product": {"type": "RECTANGLE", "name": "Product Image", "x": 240, "y": 620, "width": 600, "height": 660,
                    "fills": [{"type": "IMAGE", "imageFillUrl": "https://example.com/p.png", "scaleMode": "FILL"}]}
    }})
}

fn bounds(tree: &Value, id: &str) -> Bounds {
    TreeDoc::new(tree).bounds(id).unwrap()
}

fn size(name: &str) -> TargetSize {
    TargetSize::placement(name).unwrap()
}

#[test]
fn each_shape_gets_its_arrangement_and_keeps_ids_words_and_the_ground() {
    let renderer = Renderer::with_defaults();
    let src = ad("Every morning deserves a better cup");
    for (name, want) in [
        ("9:16", Arrangement::Stack),
        ("1:1", Arrangement::Stack),
        ("1.91:1", Arrangement::Side),
        ("970x250", Arrangement::Side),
        ("2:3", Arrangement::Stack),
    ] {
        let s = size(name);
        let r = relayout(&renderer, &src, &s).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.arrangement, want, "{name}");
        let (w, h) = design_size(&r.tree).unwrap();
        assert!((w / h - s.aspect()).abs() < 1e-4, "{name}: {w}x{h}");
        assert_eq!(w.max(h), 1350.0, "{name}: the long side is kept");
        // Same ids, same words.
        let (a, b) = (TreeDoc::new(&src), TreeDoc::new(&r.tree));
        assert_eq!(
            a.node_ids().collect::<Vec<_>>(),
            b.node_ids().collect::<Vec<_>>()
        );
        for id in ["headline", "supporting", "label"] {
            assert_eq!(a.text(id), b.text(id), "{name}");
        }
        // The ground covers the new canvas.
        let g = bounds(&r.tree, "bg");
        assert_eq!((g.x, g.y, g.width, g.height), (0.0, 0.0, w, h), "{name}");
        // Every word box is on the canvas, inside the margins; the headline keeps the
        // largest type, at least the floor.
        let air = EDGE_AIR * w.min(h) - 0.5;
        for id in ["headline", "supporting", "cta", "product", "logo"] {
            let t = bounds(&r.tree, id);
            assert!(
                t.x >= air && t.y >= air && t.x + t.width <= w - air && t.y + t.height <= h - air,
                "{name}: {id} at {t:?} crosses the margin of {air}"
            );
        }
        let hs = b.font_size("headline").unwrap();
        assert!(hs >= b.font_size("supporting").unwrap(), "{name}");
        assert!(
            b.font_size("supporting").unwrap() >= r.floor - 1e-6,
            "{name}"
        );
        // Reading order: headline above the supporting text above the button.
        let (hl, sp, cta) = (
            bounds(&r.tree, "headline"),
            bounds(&r.tree, "supporting"),
            bounds(&r.tree, "cta"),
        );
        assert!(
            hl.y + hl.height <= sp.y && sp.y + sp.height <= cta.y,
            "{name}: order"
        );
        // Words and product do not overlap.
        let p = bounds(&r.tree, "product");
        for t in [hl, sp, cta] {
            assert!(!t.overlaps(&p), "{name}: words over the product");
        }
        if want == Arrangement::Stack {
            assert!(p.y > cta.y, "{name}: the product stays below the words");
        } else {
            assert!(
                p.x > hl.x + hl.width,
                "{name}: the product stays on the right"
            );
        }
    }
}

#[test]
fn the_product_keeps_its_share_where_the_shape_allows() {
    let renderer = Renderer::with_defaults();
    let src = ad("Every morning deserves a better cup");
    let share = 600.0 * 660.0 / (1080.0 * 1350.0);
    for name in ["9:16", "2:3", "1:1"] {
        let r = relayout(&renderer, &src, &size(name)).unwrap();
        assert!((r.source_share - share).abs() < 1e-9);
        // A square is no taller than the 4:5 source: the product takes the room the words
        // leave at their source size (at least 3/4 of its share here).
        let want = if name == "1:1" { 0.75 } else { 0.98 };
        assert!(
            r.product_share >= want * share,
            "{name}: {}",
            r.product_share
        );
        let p = bounds(&r.tree, "product");
        let (w, h) = design_size(&r.tree).unwrap();
        assert!(p.area() / (w * h) >= (want - 0.01) * share, "{name}");
        // Its aspect is kept: the same crop of the photo.
        assert!((p.width / p.height - 600.0 / 660.0).abs() < 0.01, "{name}");
    }
}

#[test]
fn the_floor_follows_the_short_side_and_the_placements_pixels() {
    // 1080 square at 1350 design px: 2.2 % of the short side.
    let f = floor(&size("1:1"), 1350.0, 1350.0);
    assert!((f - 0.022 * 1350.0).abs() < 1e-9);
    // 300×250 drawn at 3840 px: 10 px of 300 is 128 design px, more than 2.2 % of 3200.
    let f = floor(&size("300x250"), 3840.0, 3200.0);
    assert!((f - 128.0).abs() < 1e-9);
}

#[test]
fn words_that_cannot_fit_at_the_floor_are_refused_naming_the_size() {
    let renderer = Renderer::with_defaults();
    let long = "Every morning deserves a better cup of coffee, and this one is smooth, low in acid, steeped for eighteen hours, ready in a minute at home, and kind to your stomach, your wallet and your busy mornings";
    let src = ad(&[long; 40].join(" "));
    let err = relayout(&renderer, &src, &size("970x250")).unwrap_err();
    assert!(err.contains("970x250"), "{err}");
    assert!(err.contains("readable floor"), "{err}");
    assert!(err.contains("shorten"), "{err}");
}
