//! The crates' one-way edges (ARCHITECTURE.md), checked from cargo's own metadata so that a
//! dependency added against the grain fails the suite: the domain library (`adforge-api`)
//! knows neither the dashboard nor the binary, the dashboard does not know the binary, and
//! the worker and below know none of the API's crates.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// Each workspace package → the names of the packages it depends on (any kind).
fn workspace_edges() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter_map(|d| d["name"].as_str().map(str::to_string))
                .collect();
            (p["name"].as_str().expect("name").to_string(), deps)
        })
        .collect()
}

#[test]
fn dependencies_run_one_way() {
    let edges = workspace_edges();
    let forbidden: &[(&str, &[&str])] = &[
        ("adforge-api", &["adforge-dashboard", "adforge"]),
        ("adforge-dashboard", &["adforge"]),
        (
            "adforge-worker",
            &["adforge-api", "adforge-dashboard", "adforge"],
        ),
        (
            "adforge-renderer",
            &[
                "adforge-worker",
                "adforge-api",
                "adforge-dashboard",
                "adforge",
            ],
        ),
        (
            "adforge-models",
            &[
                "adforge-worker",
                "adforge-api",
                "adforge-dashboard",
                "adforge",
            ],
        ),
    ];
    for (package, not) in forbidden {
        let deps = edges
            .get(*package)
            .unwrap_or_else(|| panic!("no package {package} in the workspace"));
        for n in *not {
            assert!(
                !deps.contains(*n),
                "{package} depends on {n}; the crates depend one way: adforge → adforge-dashboard → adforge-api → adforge-worker → {{adforge-renderer, adforge-models}}"
            );
        }
    }
    // The edges ARCHITECTURE.md draws exist.
    for (package, dep) in [
        ("adforge", "adforge-dashboard"),
        ("adforge", "adforge-api"),
        ("adforge-dashboard", "adforge-api"),
        ("adforge-api", "adforge-worker"),
        ("adforge-worker", "adforge-renderer"),
        ("adforge-worker", "adforge-models"),
    ] {
        assert!(edges[package].contains(dep), "{package} → {dep} is missing");
    }
}
