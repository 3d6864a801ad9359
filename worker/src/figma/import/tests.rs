use serde_json::{Map, Value, json};

use super::{Parent, is_arc, needs_export, placement};

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn placement_reads_figmas_matrix() {
    // A node rotated 90° counter-clockwise on screen (its x axis points up), as the Radix
    // Icons file has them: Figma writes [[cos, sin, tx], [-sin, cos, ty]].
    let f = obj(json!({"relativeTransform": [[-4.371e-8, 1.0, 0.99], [-1.0, -4.371e-8, 14.0]]}));
    let (x, y, rotation, flipped) = placement(&f, None);
    assert_eq!((x, y), (0.99, 14.0));
    assert!((rotation - 90.0).abs() < 1e-3, "{rotation}");
    assert!(!flipped);
    // A mirrored node is reported as such.
    let f = obj(json!({"relativeTransform": [[-1.0, 0.0, 10.0], [0.0, 1.0, 0.0]]}));
    assert!(placement(&f, None).3);
    // Without a matrix: the difference of the absolute boxes.
    let f =
        obj(json!({"absoluteBoundingBox": {"x": 130.0, "y": 40.0, "width": 5.0, "height": 5.0}}));
    let p = Parent {
        abs: Some((100.0, 10.0)),
    };
    assert_eq!(placement(&f, Some(p)), (30.0, 30.0, 0.0, false));
}

#[test]
fn arcs_and_rings_are_not_whole_ellipses() {
    let whole = obj(
        json!({"arcData": {"startingAngle": 0.0, "endingAngle": 6.2831854820251465, "innerRadius": 0.0}}),
    );
    let ring = obj(
        json!({"arcData": {"startingAngle": 0.0, "endingAngle": 6.2831854820251465, "innerRadius": 0.5}}),
    );
    let arc =
        obj(json!({"arcData": {"startingAngle": 0.0, "endingAngle": 3.0, "innerRadius": 0.0}}));
    assert!(!is_arc(&whole) && is_arc(&ring) && is_arc(&arc));
}

#[test]
fn only_containers_of_unimportable_nodes_are_exported_whole() {
    let vector = json!({"type": "VECTOR", "fills": []});
    let with_geometry = json!({"type": "VECTOR", "fills": [], "fillGeometry": []});
    let text = json!({"type": "TEXT"});
    assert!(needs_export(&obj(vector.clone())));
    assert!(!needs_export(&obj(with_geometry.clone())));
    assert!(needs_export(&obj(
        json!({"type": "COMPONENT", "children": [vector.clone()]})
    )));
    assert!(!needs_export(&obj(
        json!({"type": "COMPONENT", "children": [vector.clone(), text]})
    )));
    assert!(!needs_export(&obj(
        json!({"type": "GROUP", "children": [with_geometry]})
    )));
    // A painted container keeps its own paint node by node.
    let painted = json!({"type": "FRAME", "fills": [{"type": "SOLID"}], "children": [vector]});
    assert!(!needs_export(&obj(painted)));
    assert!(!needs_export(&obj(
        json!({"type": "FRAME", "children": []})
    )));
}

#[test]
fn values_the_tree_refuses_are_moved_aside_and_reported() {
    // A blend mode no renderer draws, a stroke alignment the tree does not know, and a
    // text case on `style`: each is moved into figmaUnmapped, the tree then parses.
    let frame = json!({
        "id": "1:1", "name": "F", "type": "FRAME", "size": {"x": 100.0, "y": 50.0},
        "fills": [], "children": [
            {"id": "1:2", "name": "T", "type": "TEXT", "characters": "Hi",
             "relativeTransform": [[1, 0, 5], [0, 1, 5]], "size": {"x": 50.0, "y": 20.0},
             "strokeAlign": "SIDEWAYS", "style": {"fontSize": 12.0, "textCase": "SHOUTING"},
             "fills": [], "characterStyleOverrides": [], "styleOverrideTable": {}}
        ]
    });
    let imp = super::import(
        &frame,
        &super::Options {
            file_key: "K",
            for_template: false,
        },
    )
    .unwrap();
    adforge_renderer::Tree::from_value(imp.tree.clone()).unwrap();
    let (_, text) = imp.tree["nodes"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, n)| n["figmaId"] == "1:2")
        .unwrap();
    assert_eq!(text["figmaUnmapped"]["strokeAlign"], "SIDEWAYS");
    assert_eq!(text["figmaUnmapped"]["textCase"], "SHOUTING");
    let features: Vec<&str> = imp
        .report
        .unmapped
        .iter()
        .map(|u| u.feature.as_str())
        .collect();
    assert!(
        features.contains(&"strokeAlign") && features.contains(&"textCase"),
        "{features:?}"
    );
}
