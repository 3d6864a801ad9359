//! No accepted tree makes the renderer panic: every numeric field of every golden fixture is
//! set to extreme values in turn (deterministically sampled), and whatever parses renders.

use adforge_renderer::{RenderOptions, Tree};
use serde_json::Value;

use crate::harness::{goldens_dir, renderer};

/// Paths (as key lists) of every number inside `v`.
fn number_paths(v: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Number(_) => out.push(path.clone()),
        Value::Object(m) => {
            for (k, x) in m {
                path.push(k.clone());
                number_paths(x, path, out);
                path.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                path.push(i.to_string());
                number_paths(x, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn set(v: &mut Value, path: &[String], new: Value) {
    let mut at = v;
    for k in path {
        at = match at {
            Value::Object(m) => m.get_mut(k).unwrap(),
            Value::Array(a) => &mut a[k.parse::<usize>().unwrap()],
            _ => unreachable!(),
        };
    }
    *at = new;
}

#[test]
fn extreme_numbers_never_panic() {
    let extremes = [0.0, -1.0, 1.0e6, 0.0001, 4096.5];
    let mut rendered = 0;
    let mut case = 0usize;
    for area in ["shapes", "paints", "images", "effects", "layout", "text"] {
        let mut files: Vec<_> = std::fs::read_dir(goldens_dir().join(area))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        for p in files
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
        {
            let tree: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            let mut paths = Vec::new();
            number_paths(&tree, &mut Vec::new(), &mut paths);
            for path in &paths {
                for x in extremes {
                    case += 1;
                    // A deterministic quarter keeps the test fast in debug builds (the full
                    // sweep, every case, passed when this test was written).
                    if !case.is_multiple_of(4) {
                        continue;
                    }
                    let mut t = tree.clone();
                    set(&mut t, path, serde_json::json!(x));
                    if let Ok(tree) = Tree::from_value(t) {
                        let out = renderer().render(
                            &tree,
                            &RenderOptions {
                                width: Some(48),
                                encode_png: true,
                            },
                        );
                        assert!(
                            out.is_ok()
                                || path.last().is_some_and(|k| k == "width" || k == "height"),
                            "{}: {path:?} = {x}",
                            p.display()
                        );
                        rendered += 1;
                    }
                }
            }
        }
    }
    assert!(rendered > 100, "{rendered}");
}
