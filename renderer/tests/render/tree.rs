//! Parsing: unknown fields round-trip, ids are kept, and each invalid-tree error names the
//! node and the field.

use adforge_renderer::{Error, Tree};
use serde_json::json;

fn frame(extra: serde_json::Value) -> serde_json::Value {
    let mut root = json!({"type": "FRAME", "width": 100, "height": 100, "children": ["a"]});
    let mut a = json!({"type": "RECTANGLE", "width": 10, "height": 10});
    if let (Some(a), Some(extra)) = (a.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            a.insert(k.clone(), v.clone());
        }
    }
    root["x"] = json!(0);
    json!({"nodes": {"root": root, "a": a}})
}

#[test]
fn unknown_fields_round_trip_unchanged() {
    let src = r#"{"version":7,"meta":{"author":"x","tags":[1,2]},"root":"r","nodes":{"r":{"id":"r","type":"FRAME","width":10,"height":10,"futureThing":{"deep":[true,null]},"fills":[{"type":"SOLID","color":{"r":1,"g":0,"b":0,"a":1},"boundVariables":{"color":"v1"}}],"children":["c"]},"c":{"id":"c","type":"TEXT","characters":"hi","style":{"fontFamily":"Inter","openTypeFeatures":{"liga":false}},"pluginData":"keep me"}}}"#;
    let tree = Tree::parse(src).unwrap();
    assert_eq!(tree.to_json_string(), src);
    assert_eq!(serde_json::to_string(&tree).unwrap(), src);
    let back: Tree = serde_json::from_str(src).unwrap();
    assert_eq!(back.as_value(), tree.as_value());
    let ids: Vec<&str> = tree.nodes().iter().map(|n| n.id.as_str()).collect();
    assert_eq!(ids, ["r", "c"]);
    assert_eq!(
        tree.get("c").unwrap().text.as_ref().unwrap().font_family,
        "Inter"
    );
}

fn err(v: serde_json::Value) -> (String, String, String) {
    match Tree::from_value(v) {
        Err(Error::InvalidNode {
            node,
            field,
            message,
        }) => (node, field, message),
        Err(Error::InvalidTree { field, message }) => (String::new(), field, message),
        other => panic!("expected an invalid-tree error, got {other:?}"),
    }
}

#[track_caller]
fn node_err(extra: serde_json::Value, field: &str) -> String {
    let (node, f, msg) = err(frame(extra));
    assert_eq!((node.as_str(), f.as_str()), ("a", field), "{msg}");
    msg
}

#[test]
fn wrong_type_names_node_and_field() {
    node_err(json!({"opacity": "half"}), "opacity");
    node_err(
        json!({"fills": [{"type": "SOLID", "color": {"r": "red", "g": 0, "b": 0}}]}),
        "fills[0].color.r",
    );
}

#[test]
fn unknown_node_type() {
    let msg = node_err(json!({"type": "STAR"}), "type");
    assert!(msg.contains("FRAME"), "{msg}");
}

#[test]
fn out_of_range_values() {
    node_err(json!({"opacity": 1.5}), "opacity");
    node_err(json!({"width": -1}), "width");
    node_err(json!({"cornerRadius": -2}), "cornerRadius");
    node_err(
        json!({"fills": [{"type": "SOLID", "color": {"r": 2, "g": 0, "b": 0}}]}),
        "fills[0].color.r",
    );
    node_err(
        json!({"fills": [{"type": "SOLID", "color": {"r": 1, "g": 0, "b": 0}, "opacity": -1}]}),
        "fills[0].opacity",
    );
    node_err(
        json!({"effects": [{"type": "DROP_SHADOW", "radius": -3}]}),
        "effects[0].radius",
    );
    node_err(json!({"strokeWeight": -1}), "strokeWeight");
}

#[test]
fn unknown_enum_values_list_the_allowed_ones() {
    let msg = node_err(json!({"blendMode": "GLOW"}), "blendMode");
    assert!(msg.contains("MULTIPLY"), "{msg}");
    node_err(json!({"layoutMode": "GRID"}), "layoutMode");
    node_err(json!({"strokeAlign": "MIDDLE"}), "strokeAlign");
    node_err(
        json!({"fills": [{"type": "IMAGE", "imageFillUrl": "https://x/y.png", "scaleMode": "ZOOM"}]}),
        "fills[0].scaleMode",
    );
    node_err(
        json!({"layoutSizingHorizontal": "GROW"}),
        "layoutSizingHorizontal",
    );
    node_err(
        json!({"primaryAxisAlignItems": "START"}),
        "primaryAxisAlignItems",
    );
}

#[test]
fn base64_image_data_is_rejected() {
    let msg = node_err(
        json!({"fills": [{"type": "IMAGE", "imageFillUrl": "data:image/png;base64,iVBORw0KGgo="}]}),
        "fills[0].imageFillUrl",
    );
    assert!(msg.contains("base64"), "{msg}");
}

#[test]
fn paint_requirements() {
    node_err(json!({"fills": [{"type": "SOLID"}]}), "fills[0].color");
    node_err(
        json!({"fills": [{"type": "IMAGE"}]}),
        "fills[0].imageFillUrl",
    );
    node_err(
        json!({"fills": [{"type": "GRADIENT_LINEAR", "gradientStops": []}]}),
        "fills[0].gradientStops",
    );
    node_err(
        json!({"fills": [{"type": "GRADIENT_LINEAR", "gradientStops": [{"position": 0, "color": {"r": 0, "g": 0, "b": 0}}],
        "gradientHandlePositions": [{"x": 0, "y": 0}]}]}),
        "fills[0].gradientHandlePositions",
    );
}

#[test]
fn shape_needs_a_size() {
    let (node, field, _) = err(
        json!({"nodes": {"root": {"type": "FRAME", "width": 10, "height": 10, "children": ["a"]},
        "a": {"type": "RECTANGLE", "height": 4}}}),
    );
    assert_eq!((node.as_str(), field.as_str()), ("a", "width"));
}

#[test]
fn text_errors() {
    let t = |extra: serde_json::Value| {
        let mut a = json!({"type": "TEXT", "characters": "x", "width": 10, "height": 10});
        for (k, v) in extra.as_object().unwrap() {
            a[k] = v.clone();
        }
        err(
            json!({"nodes": {"root": {"type": "FRAME", "width": 10, "height": 10, "children": ["a"]}, "a": a}}),
        )
    };
    assert_eq!(t(json!({"fontSize": 0})).1, "fontSize");
    assert_eq!(
        t(json!({"textAlignHorizontal": "MIDDLE"})).1,
        "textAlignHorizontal"
    );
    assert_eq!(t(json!({"maxLines": 0})).1, "maxLines");
    assert_eq!(
        t(json!({"textFit": {"minFontSize": 30, "maxFontSize": 10}})).1,
        "textFit.minFontSize"
    );
    assert_eq!(
        t(json!({"lineHeight": {"value": 1, "unit": "EM"}})).1,
        "lineHeight.unit"
    );
    assert_eq!(t(json!({"textCase": "SHOUTY"})).1, "textCase");
}

#[test]
fn vector_path_data_is_checked() {
    let (node, field, msg) = err(
        json!({"nodes": {"root": {"type": "FRAME", "width": 10, "height": 10, "children": ["v"]},
        "v": {"type": "VECTOR", "vectorPaths": [{"data": "M0 0 L 10"}]}}}),
    );
    assert_eq!(
        (node.as_str(), field.as_str()),
        ("v", "vectorPaths[0].data"),
        "{msg}"
    );
}

#[test]
fn structure_errors() {
    assert!(matches!(Tree::parse("{"), Err(Error::Json(_))));
    assert_eq!(err(json!([])).1, "(document)");
    assert_eq!(err(json!({"nodes": {}})).1, "nodes");
    assert_eq!(
        err(json!({"root": "zz", "nodes": {"a": {"type": "FRAME", "width": 1, "height": 1}}})).1,
        "root"
    );
    // Two parentless nodes and no `root`.
    assert_eq!(err(json!({"nodes": {"a": {"type": "FRAME", "width": 1, "height": 1}, "b": {"type": "FRAME", "width": 1, "height": 1}}})).1, "root");
    let (node, field, _) = err(
        json!({"nodes": {"a": {"type": "FRAME", "width": 1, "height": 1, "children": ["nope"]}}}),
    );
    assert_eq!((node.as_str(), field.as_str()), ("a", "children[0]"));
    let (node, field, _) = err(
        json!({"nodes": {"a": {"type": "FRAME", "width": 1, "height": 1, "children": ["b", "c"]},
        "b": {"type": "FRAME", "width": 1, "height": 1, "children": ["c"]}, "c": {"type": "FRAME", "width": 1, "height": 1}}}),
    );
    assert_eq!((node.as_str(), field.as_str()), ("b", "children[0]"));
    // A cycle below the root.
    let (_, field, _) = err(
        json!({"root": "a", "nodes": {"a": {"type": "FRAME", "width": 1, "height": 1},
        "b": {"type": "FRAME", "children": ["c"]}, "c": {"type": "FRAME", "children": ["b"]}}}),
    );
    assert_eq!(field, "children");
    let (node, field, _) =
        err(json!({"nodes": {"a": {"id": "other", "type": "FRAME", "width": 1, "height": 1}}}));
    assert_eq!((node.as_str(), field.as_str()), ("a", "id"));
    let (node, field, _) = err(json!({"nodes": {"a": {"type": "FRAME", "width": 0, "height": 1}}}));
    assert_eq!((node.as_str(), field.as_str()), ("a", "width"));
    let (node, field, _) = err(json!({"nodes": {"a": "not an object"}}));
    assert_eq!((node.as_str(), field.as_str()), ("a", "(node)"));
}

#[test]
fn error_display_names_node_and_field() {
    let e = Tree::from_value(frame(json!({"opacity": 3}))).unwrap_err();
    let s = e.to_string();
    assert!(s.contains("`a`") && s.contains("`opacity`"), "{s}");
}

#[test]
fn deep_nesting_is_refused_before_it_can_overflow_the_stack() {
    let mut nodes = serde_json::Map::new();
    nodes.insert(
        "n0".into(),
        json!({"type": "FRAME", "width": 10, "height": 10, "children": ["n1"]}),
    );
    for i in 1..400 {
        nodes.insert(
            format!("n{i}"),
            json!({"type": "GROUP", "children": [format!("n{}", i + 1)]}),
        );
    }
    nodes.insert(
        "n400".into(),
        json!({"type": "RECTANGLE", "width": 1, "height": 1}),
    );
    let (_, field, msg) = err(json!({"root": "n0", "nodes": nodes}));
    assert_eq!(field, "children", "{msg}");
}

/// A root the renderer could not draw at the sizes the service renders (a 1×100000 root
/// asked for a 1080 px preview of 1×108000000) is refused by the tree's validation, naming
/// the field; every accepted aspect ratio renders at 4K and at a 540 px check size.
#[test]
fn roots_too_thin_to_render_are_refused() {
    use adforge_renderer::limits::MAX_ASPECT_RATIO;
    let root = |w: f64, h: f64| json!({"nodes": {"r": {"type": "FRAME", "width": w, "height": h}}});
    let (node, field, msg) = err(root(1.0, 100_000.0));
    assert_eq!((node.as_str(), field.as_str()), ("r", "width"), "{msg}");
    assert!(msg.contains("at most 20:1"), "{msg}");
    let (_, field, _) = err(root(100_000.0, 1.0));
    assert_eq!(field, "height");
    let edge = f64::from(MAX_ASPECT_RATIO);
    for (w, h) in [(1.0, edge), (edge, 1.0), (50.0, 50.0 * edge)] {
        let tree = Tree::from_value(root(w, h)).unwrap();
        for width in [None, Some(540), Some(27)] {
            adforge_renderer::output_size(tree.design_size(), width)
                .unwrap_or_else(|e| panic!("{w}×{h} at {width:?}: {e}"));
        }
    }
    assert!(Tree::from_value(root(1.0, edge * 1.01)).is_err());
}
