//! The published JSON Schema (`assets/schemas/json-tree.schema.json`) covers what the
//! fixtures use: every node, paint and effect field in every golden fixture is declared, and
//! every string value of a declared enum is allowed.

use serde_json::Value;

use crate::harness::{goldens_dir, repo_root};

fn schema() -> Value {
    let text =
        std::fs::read_to_string(repo_root().join("assets/schemas/json-tree.schema.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn check_object(obj: &serde_json::Map<String, Value>, def: &Value, defs: &Value, path: &str) {
    let props = def["properties"].as_object().unwrap();
    for (k, v) in obj {
        let Some(p) = props.get(k) else {
            panic!("{path}.{k} is not declared in the schema");
        };
        let p = match p.get("$ref").and_then(Value::as_str) {
            Some(r) => &defs[r.trim_start_matches("#/$defs/")],
            None => p,
        };
        if let (Some(allowed), Some(s)) = (p.get("enum").and_then(Value::as_array), v.as_str()) {
            assert!(
                allowed.iter().any(|a| a == s),
                "{path}.{k} = {s} is not in the schema's enum"
            );
        }
        let item_ref = p
            .get("items")
            .and_then(|i| i.get("$ref"))
            .and_then(Value::as_str);
        if let (Some(r), Some(items)) = (item_ref, v.as_array()) {
            let d = &defs[r.trim_start_matches("#/$defs/")];
            for (i, item) in items.iter().enumerate() {
                if let Some(o) = item.as_object() {
                    check_object(o, d, defs, &format!("{path}.{k}[{i}]"));
                }
            }
        }
    }
}

#[test]
fn schema_declares_every_field_the_fixtures_use() {
    let schema = schema();
    let defs = &schema["$defs"];
    let mut count = 0;
    for area in ["shapes", "paints", "images", "effects", "layout", "text"] {
        for entry in std::fs::read_dir(goldens_dir().join(area))
            .unwrap()
            .flatten()
        {
            let p = entry.path();
            if p.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let tree: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            for (id, node) in tree["nodes"].as_object().unwrap() {
                check_object(
                    node.as_object().unwrap(),
                    &defs["node"],
                    defs,
                    &format!("{}:{id}", p.display()),
                );
                count += 1;
            }
        }
    }
    assert!(count > 100);
}

#[test]
fn schema_node_types_match_the_parser() {
    let schema = schema();
    let types: Vec<&str> = schema["$defs"]["node"]["properties"]["type"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for t in &types {
        let json = format!(
            r#"{{"nodes":{{"r":{{"type":"FRAME","width":1,"height":1,"children":["c"]}},"c":{{"type":"{t}","width":1,"height":1}}}}}}"#
        );
        adforge_renderer::Tree::parse(&json).unwrap_or_else(|e| panic!("{t}: {e}"));
    }
    assert_eq!(types.len(), 7);
}
