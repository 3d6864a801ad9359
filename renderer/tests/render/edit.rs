//! The tree-editing API (`tree::{TreeDoc, TreeBuilder, NodeBuilder, paint}`): one test per
//! operation, on raw JSON, with the exact text the writers produce.

use adforge_renderer::Error;
use adforge_renderer::tree::{
    ImageField, ImagePaint, NodeBuilder, PaintAt, PaintList, Slot, TreeBuilder, TreeDoc, paint,
};
use serde_json::{Value, json};

fn at(node: &str, list: PaintList, index: usize) -> PaintAt {
    PaintAt {
        node: node.into(),
        list,
        index,
    }
}

/// Root `r` with children `b`, `a` (in that order), a node `lost` nobody reaches and a
/// child id `ghost` that is not a node.
fn tree() -> Value {
    json!({"root": "r", "nodes": {
        "lost": {"type": "TEXT", "characters": "unreached", "name": "  "},
        "a": {"type": "TEXT", "characters": "Hello", "name": "Headline",
              "fills": [{"type": "SOLID", "color": {"g": 0.2, "r": 0.1, "b": 0.3, "a": 0.5}}]},
        "r": {"type": "FRAME", "width": 100, "height": 100, "children": ["b", "ghost", "a", "b"],
              "fills": [{"type": "SOLID", "color": {"r": 1.5, "g": -1, "b": 0.5}},
                        {"type": "IMAGE", "visible": false, "imageUrl": "http://x/hidden.png"}]},
        "b": {"type": "RECTANGLE", "children": ["r"],
              "fills": [{"type": "IMAGE", "imageFillUrl": null, "imageUrl": "http://x/u.png",
                         "imageRef": "http://x/ref.png"},
                        {"type": "IMAGE"},
                        {"type": "GRADIENT_LINEAR"}],
              "strokes": [{"type": "IMAGE", "imageRef": "http://x/stroke.png"}]},
        "n": 5
    }})
}

#[test]
fn the_image_rule_prefers_fill_url_then_url_then_ref() {
    let p = json!({"imageRef": "c", "imageUrl": "b", "imageFillUrl": "a"});
    assert_eq!(ImageField::of_paint(&p), Some((ImageField::FillUrl, "a")));
    let p = json!({"imageRef": "c", "imageUrl": "b", "imageFillUrl": null});
    assert_eq!(ImageField::of_paint(&p), Some((ImageField::Url, "b")));
    assert_eq!(
        ImageField::of_paint(&json!({"imageRef": "c"})),
        Some((ImageField::Ref, "c"))
    );
    assert_eq!(ImageField::of_paint(&json!({"imageUrl": 3})), None);
    let keys = ImageField::PRECEDENCE.map(ImageField::key);
    assert_eq!(keys, ["imageFillUrl", "imageUrl", "imageRef"]);
    // The renderer reads the same rule: `imageUrl` wins over `imageRef`.
    let t = adforge_renderer::Tree::from_value(json!({"nodes": {"root": {"type": "FRAME",
        "width": 10, "height": 10,
        "fills": [{"type": "IMAGE", "imageRef": "http://x/r.png", "imageUrl": "http://x/u.png"}]}}}))
    .unwrap();
    assert_eq!(
        adforge_renderer::image::image_urls(&t),
        vec!["http://x/u.png".to_string()]
    );
}

#[test]
fn nodes_are_found_by_id_and_walked_in_paint_order() {
    let t = tree();
    let doc = TreeDoc::new(&t);
    assert_eq!(doc.root_id(), Some("r"));
    assert_eq!(doc.node("a").unwrap()["characters"], "Hello");
    assert!(doc.node("ghost").is_none());
    // Not an object: not a node.
    assert!(doc.node("n").is_none());
    assert_eq!(
        doc.node_ids().collect::<Vec<_>>(),
        ["lost", "a", "r", "b", "n"]
    );
    // Root first, children in order, each once (`b` twice and the cycle b → r are cut);
    // then what the walk missed, in map order.
    assert_eq!(doc.paint_order(), ["r", "b", "a", "lost", "n"]);
    let none = json!({"root": "r"});
    assert!(TreeDoc::new(&none).paint_order().is_empty());
    let rootless = json!({"nodes": {"x": {}, "y": {}}});
    assert_eq!(TreeDoc::new(&rootless).paint_order(), ["x", "y"]);
}

#[test]
fn names_and_texts_are_read() {
    let t = tree();
    let doc = TreeDoc::new(&t);
    assert_eq!(doc.name("a"), Some("Headline"));
    assert_eq!(doc.name("lost"), None, "a blank name is no name");
    assert_eq!(doc.name("r"), None);
    assert_eq!(doc.text("a"), Some("Hello"));
    assert_eq!(doc.text("r"), None);
}

#[test]
fn image_paints_are_listed_in_map_order_with_their_place() {
    let t = tree();
    let found = TreeDoc::new(&t).image_paints();
    assert_eq!(
        found,
        vec![
            ImagePaint {
                at: at("r", PaintList::Fills, 1),
                field: ImageField::Url,
                url: "http://x/hidden.png".into(),
                visible: false,
            },
            ImagePaint {
                at: at("b", PaintList::Fills, 0),
                field: ImageField::Url,
                url: "http://x/u.png".into(),
                visible: true,
            },
            ImagePaint {
                at: at("b", PaintList::Strokes, 0),
                field: ImageField::Ref,
                url: "http://x/stroke.png".into(),
                visible: true,
            },
        ]
    );
    assert_eq!(found[2].at.path(), "strokes[0]");
    assert_eq!(found[2].path(), "strokes[0].imageRef");
}

#[test]
fn slots_are_the_editable_values_in_paint_order() {
    let t = tree();
    let slots = TreeDoc::new(&t).slots();
    assert_eq!(
        slots,
        vec![
            // Channels clamp to 0..1 and round to 8 bits.
            Slot::Color {
                at: at("r", PaintList::Fills, 0),
                rgb: [255, 0, 128],
            },
            // Invisible images are editable too.
            Slot::Image {
                at: at("r", PaintList::Fills, 1),
                field: ImageField::Url,
                url: "http://x/hidden.png".into(),
            },
            Slot::Image {
                at: at("b", PaintList::Fills, 0),
                field: ImageField::Url,
                url: "http://x/u.png".into(),
            },
            Slot::Image {
                at: at("b", PaintList::Strokes, 0),
                field: ImageField::Ref,
                url: "http://x/stroke.png".into(),
            },
            Slot::Text {
                node: "a".into(),
                text: "Hello".into(),
            },
            Slot::Color {
                at: at("a", PaintList::Fills, 0),
                rgb: [26, 51, 77],
            },
            Slot::Text {
                node: "lost".into(),
                text: "unreached".into(),
            },
        ]
    );
    assert_eq!(slots[4].node(), "a");
    assert_eq!(slots[2].node(), "b");
}

#[test]
fn set_text_changes_characters_only() {
    let mut t = tree();
    let mut doc = TreeDoc::new(&mut t);
    doc.set_text("a", "New\nline").unwrap();
    assert!(matches!(doc.set_text("ghost", "x"), Err(Error::NodeNotFound { id }) if id == "ghost"));
    assert!(matches!(doc.set_text("r", "x"), Err(Error::NotText { id }) if id == "r"));
    let mut want = tree();
    want["nodes"]["a"]["characters"] = "New\nline".into();
    assert_eq!(t.to_string(), want.to_string());
}

#[test]
fn set_solid_rgb_writes_unrounded_channels_in_place() {
    let mut t = tree();
    let mut doc = TreeDoc::new(&mut t);
    doc.set_solid_rgb(&at("a", PaintList::Fills, 0), [255, 0, 51])
        .unwrap();
    // Key order and `a` are kept.
    assert_eq!(
        doc.as_value()["nodes"]["a"]["fills"][0].to_string(),
        r#"{"type":"SOLID","color":{"g":0.0,"r":1.0,"b":0.2,"a":0.5}}"#
    );
    let err = doc
        .set_solid_rgb(&at("r", PaintList::Fills, 1), [0, 0, 0])
        .unwrap_err();
    assert!(matches!(
        err,
        Error::NoSuchPaint { ref node, list: "fills", index: 1, kind: "SOLID" } if node == "r"
    ));
    assert!(matches!(
        doc.set_solid_rgb(&at("a", PaintList::Strokes, 0), [0, 0, 0]),
        Err(Error::NoSuchPaint { .. })
    ));
    // A null colour becomes one.
    let mut t = json!({"nodes": {"x": {"fills": [{"type": "SOLID", "color": null}]}}});
    TreeDoc::new(&mut t)
        .set_solid_rgb(&at("x", PaintList::Fills, 0), [255, 255, 255])
        .unwrap();
    assert_eq!(
        t["nodes"]["x"]["fills"][0]["color"].to_string(),
        r#"{"r":1.0,"g":1.0,"b":1.0}"#
    );
}

#[test]
fn set_image_url_writes_the_given_field() {
    let mut t = tree();
    let mut doc = TreeDoc::new(&mut t);
    let place = at("b", PaintList::Fills, 0);
    doc.set_image_url(&place, ImageField::Url, "http://x/new.png")
        .unwrap();
    assert_eq!(
        doc.as_value()["nodes"]["b"]["fills"][0].to_string(),
        r#"{"type":"IMAGE","imageFillUrl":null,"imageUrl":"http://x/new.png","imageRef":"http://x/ref.png"}"#
    );
    assert!(matches!(
        doc.set_image_url(&at("b", PaintList::Fills, 2), ImageField::Url, "u"),
        Err(Error::NoSuchPaint { kind: "IMAGE", .. })
    ));
    assert!(matches!(
        doc.set_image_url(&at("b", PaintList::Fills, 9), ImageField::Url, "u"),
        Err(Error::NoSuchPaint { index: 9, .. })
    ));
}

#[test]
fn set_paints_replaces_a_list() {
    let mut t = tree();
    let mut doc = TreeDoc::new(&mut t);
    doc.set_paints("a", PaintList::Strokes, vec![paint::solid([0.0, 0.0, 0.0])])
        .unwrap();
    doc.set_paints("a", PaintList::Fills, Vec::new()).unwrap();
    assert!(matches!(
        doc.set_paints("ghost", PaintList::Fills, Vec::new()),
        Err(Error::NodeNotFound { .. })
    ));
    assert_eq!(
        t["nodes"]["a"].to_string(),
        r#"{"type":"TEXT","characters":"Hello","name":"Headline","fills":[],"strokes":[{"type":"SOLID","color":{"r":0.0,"g":0.0,"b":0.0,"a":1}}]}"#
    );
}

#[test]
fn node_mut_edits_any_field_and_owned_docs_give_their_tree_back() {
    let mut doc = TreeDoc::new(tree());
    doc.node_mut("r")
        .unwrap()
        .insert("name".into(), "Ad".into());
    assert!(doc.node_mut("n").is_none());
    let t = doc.into_inner();
    assert_eq!(t["nodes"]["r"]["name"], "Ad");
}

#[test]
fn builders_write_keys_in_order_and_numbers_as_given() {
    let mut tree = TreeBuilder::new("root");
    tree.node(
        "title",
        NodeBuilder::new("TEXT")
            .bounds(1.5, 2.0, 100, 20)
            .set("characters", "Hi")
            .line_height_percent(115.0f32)
            .text_fit(7.7, 22.0)
            .fills([paint::solid([0.1, 0.2, 0.3])])
            .set("$text", "headline")
            .set("x", 3.0),
    );
    tree.node(
        "root",
        NodeBuilder::new("FRAME")
            .bounds(0, 0, 200, 100)
            .fills([paint::linear_gradient(
                [
                    paint::point(0.5, 0),
                    paint::point(0.5, 1),
                    paint::point(0, 0),
                ],
                vec![
                    paint::stop(0, paint::color([1.0, 1.0, 1.0])),
                    paint::stop(1, paint::color([0.0, 0.0, 0.0])),
                ],
            )])
            .set("$gradient", vec!["background", "ink"])
            .children(["title"]),
    );
    let v = tree.build();
    assert_eq!(
        v.to_string(),
        concat!(
            r#"{"root":"root","nodes":{"title":{"type":"TEXT","x":3.0,"y":2.0,"width":100,"height":20,"#,
            r#""characters":"Hi","lineHeight":{"value":115.0,"unit":"PERCENT"},"#,
            r#""textFit":{"minFontSize":7.7,"maxFontSize":22.0},"#,
            r#""fills":[{"type":"SOLID","color":{"r":0.1,"g":0.2,"b":0.3,"a":1}}],"$text":"headline","id":"title"},"#,
            r#""root":{"type":"FRAME","x":0,"y":0,"width":200,"height":100,"fills":[{"type":"GRADIENT_LINEAR","#,
            r#""gradientHandlePositions":[{"x":0.5,"y":0},{"x":0.5,"y":1},{"x":0,"y":0}],"#,
            r#""gradientStops":[{"position":0,"color":{"r":1.0,"g":1.0,"b":1.0,"a":1}},"#,
            r#"{"position":1,"color":{"r":0.0,"g":0.0,"b":0.0,"a":1}}]}],"$gradient":["background","ink"],"#,
            r#""children":["title"],"id":"root"}}}"#
        )
    );
    adforge_renderer::Tree::from_value(v).unwrap();
    assert_eq!(
        paint::image("http://x/p.png", "FIT").to_string(),
        r#"{"type":"IMAGE","imageFillUrl":"http://x/p.png","scaleMode":"FIT"}"#
    );
    assert_eq!(
        NodeBuilder::new("RECTANGLE")
            .fills([])
            .into_value()
            .to_string(),
        r#"{"type":"RECTANGLE","fills":[]}"#
    );
}

#[test]
fn a_node_slot_comes_from_template_keys_then_id_then_name() {
    let doc = json!({"root": "r", "nodes": {
        "r": {"type": "FRAME", "width": 100, "height": 100,
              "children": ["t", "label", "p", "logo", "panel_2", "n", "other"]},
        "t": {"type": "TEXT", "$text": "headline", "characters": "Hi"},
        "label": {"type": "TEXT", "$text": "cta", "characters": "Buy"},
        "p": {"type": "RECTANGLE", "$image": "product"},
        "logo": {"type": "RECTANGLE"},
        "panel_2": {"type": "FRAME"},
        "n": {"type": "FRAME", "name": "Cta Label"},
        "other": {"type": "FRAME", "name": "Decoration"}
    }});
    let doc = TreeDoc::new(&doc);
    let slot = |id: &str| doc.slot(id);
    assert_eq!(slot("t").as_deref(), Some("headline"));
    assert_eq!(
        slot("label").as_deref(),
        Some("cta_label"),
        "a label in its button"
    );
    assert_eq!(slot("p").as_deref(), Some("product_image"));
    assert_eq!(
        slot("logo").as_deref(),
        Some("logo"),
        "template ids are slot names"
    );
    assert_eq!(slot("panel_2").as_deref(), Some("panel_2"));
    assert_eq!(
        slot("n").as_deref(),
        Some("cta_label"),
        "a generated ad's name"
    );
    assert_eq!(slot("other"), None);
    assert_eq!(slot("missing"), None);
}
