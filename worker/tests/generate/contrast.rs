//! The preflight's contrast fix judges what the check render drew behind a text, not what
//! the layout expected there: a text placed on a dark picture whose backdrop the layout did
//! not know (it assumed white) turns white, and the ad passes the contrast rule.

use adforge_renderer::Warning;
use adforge_worker::generate::fill::{Filled, TextPlacement};
use adforge_worker::generate::{Checked, preflight_report};
use serde_json::json;

use crate::fixtures::Harness;

/// `tree`'s preflight, its text node `t` placed where the layout knew no backdrop.
async fn preflighted(h: &Harness, tree: serde_json::Value) -> Checked {
    let filled = Filled {
        tree,
        texts: vec![TextPlacement {
            id: "t".into(),
            scrim: None,
            backdrop: None,
        }],
        logo: None,
    };
    let (r, f) = (h.handler.renderer().clone(), h.handler.fetcher().clone());
    tokio::task::spawn_blocking(move || preflight_report(&r, &f, filled).unwrap())
        .await
        .unwrap()
}

fn solid(r: f64, g: f64, b: f64) -> serde_json::Value {
    json!([{"type": "SOLID", "color": {"r": r, "g": g, "b": b, "a": 1.0}}])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_on_an_unknown_dark_ground_turns_light() {
    let h = Harness::new().await;
    let tree = json!({
        "root": "root",
        "nodes": {
            "root": {"id": "root", "type": "FRAME", "width": 1080, "height": 1080,
                     "fills": solid(1.0, 1.0, 1.0), "children": ["photo", "t"]},
            // A dark picture where the layout expected the white ground.
            "photo": {"id": "photo", "type": "RECTANGLE", "x": 0, "y": 540,
                      "width": 1080, "height": 540, "fills": solid(0.08, 0.1, 0.16)},
            "t": {"id": "t", "type": "TEXT", "x": 100, "y": 700, "width": 880, "height": 120,
                  "characters": "Roasted fresh every week", "fontSize": 64,
                  "fontFamily": "Inter", "fills": solid(0.0, 0.0, 0.0)}
        }
    });
    let checked = preflighted(&h, tree).await;
    let low: Vec<&Warning> = checked
        .report
        .warnings
        .iter()
        .filter(|w| matches!(w, Warning::LowContrast { .. }))
        .collect();
    assert!(low.is_empty(), "{low:?}");
    let c = &checked.tree.as_value()["nodes"]["t"]["fills"][0]["color"];
    assert!(c["r"].as_f64().unwrap() > 0.9, "the text stayed dark: {c}");
}

/// On stripes of black and white neither ink reads: the text gets a panel of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_on_a_busy_ground_gets_a_panel() {
    let h = Harness::new().await;
    let mut nodes = serde_json::Map::new();
    let mut children = Vec::new();
    for i in 0..27 {
        let id = format!("stripe{i}");
        let v = if i % 2 == 0 { 0.0 } else { 1.0 };
        nodes.insert(
            id.clone(),
            json!({"id": id, "type": "RECTANGLE", "x": i * 40, "y": 0, "width": 40,
                   "height": 1080, "fills": solid(v, v, v)}),
        );
        children.push(json!(id));
    }
    children.push(json!("t"));
    nodes.insert(
        "root".into(),
        json!({"id": "root", "type": "FRAME", "width": 1080, "height": 1080,
               "fills": solid(1.0, 1.0, 1.0), "children": children}),
    );
    nodes.insert(
        "t".into(),
        json!({"id": "t", "type": "TEXT", "x": 100, "y": 480, "width": 880, "height": 120,
               "characters": "Roasted fresh every week", "fontSize": 64,
               "fontFamily": "Inter", "fills": solid(0.5, 0.5, 0.5)}),
    );
    let checked = preflighted(&h, json!({"root": "root", "nodes": nodes})).await;
    let low = checked
        .report
        .warnings
        .iter()
        .any(|w| matches!(w, Warning::LowContrast { .. }));
    assert!(!low, "{:?}", checked.report.warnings);
    let tree = checked.tree.as_value();
    let panels: Vec<&serde_json::Value> = tree["nodes"]
        .as_object()
        .unwrap()
        .values()
        .filter(|n| n["name"] == "Contrast Panel")
        .collect();
    assert_eq!(panels.len(), 1, "{tree}");
    // Drawn under the text: listed before it among the root's children.
    let kids: Vec<&str> = tree["nodes"]["root"]["children"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    let at = |id: &str| kids.iter().position(|k| *k == id).unwrap();
    assert!(at(panels[0]["id"].as_str().unwrap()) < at("t"));
}
