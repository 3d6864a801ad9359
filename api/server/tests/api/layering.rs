//! The crates' one-way edges (ARCHITECTURE.md), checked from cargo's own metadata so that a
//! dependency added against the grain fails the suite: the domain library (`adforge-api`)
//! knows neither the dashboard nor the binary, the dashboard does not know the binary, and
//! the worker and below know none of the API's crates. From the sources: the dashboard's
//! SQL sits only in its `store/`, and no crate compiles in a file from outside its folder
//! (the workspace's shared `assets/` aside).

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

/// The repository's root (this crate is `api/server`).
fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`, build outputs and hidden folders left out (links are not
/// followed).
fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().unwrap().is_dir() {
            if name != "target" && name != "node_modules" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The text a dashboard module would hold if it ran SQL itself: the query builders and the
/// statements' opening words (upper case, as every statement here is written; the pages'
/// HTML has `<select>`, never `SELECT `).
const SQL_MARKERS: &[&str] = &[
    "sqlx::query",
    "store::query",
    "SELECT ",
    "INSERT INTO",
    "UPDATE ",
    "DELETE FROM",
];

/// Which of [`SQL_MARKERS`] occur in `text`.
fn sql_in(text: &str) -> Vec<&'static str> {
    SQL_MARKERS
        .iter()
        .copied()
        .filter(|m| text.contains(m))
        .collect()
}

/// The dashboard's SQL sits in `api/dashboard/src/store/` (ARCHITECTURE.md): no page
/// module builds or holds a statement. Before issue 41 `cutouts.rs` held its query.
#[test]
fn dashboard_sql_only_in_its_store() {
    let src = repo_root().join("api/dashboard/src");
    let store = src.join("store");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(
        files.len() > 10,
        "the dashboard's modules under {}",
        src.display()
    );
    let mut found = Vec::new();
    for file in files.iter().filter(|f| !f.starts_with(&store)) {
        let text = std::fs::read_to_string(file).unwrap();
        let markers = sql_in(&text);
        if !markers.is_empty() {
            found.push(format!("{} holds {markers:?}", file.display()));
        }
    }
    assert!(
        found.is_empty(),
        "SQL of the dashboard outside api/dashboard/src/store/ (move each statement into a store module and call it):\n{}",
        found.join("\n")
    );
    // The markers find what they are meant to: the store itself holds SQL.
    let catalog = std::fs::read_to_string(store.join("catalog.rs")).unwrap();
    assert!(sql_in(&catalog).contains(&"SELECT "));
    assert_eq!(
        sql_in("let rows = adforge_api::store::query_as(\"SELECT 1\")"),
        ["store::query", "SELECT "]
    );
}

/// Folders outside a crate that it may compile in: the workspace's checked-in `assets/`
/// (fonts, layouts, the dashboard's scripts and styles; shared with the tests, which load
/// fonts only from there, with their licence files).
const SHARED_INCLUDE_DIRS: &[&str] = &["assets"];

/// The directory of the crate holding `file`: the nearest folder above it whose
/// `Cargo.toml` declares a package (the root one is only the workspace).
fn crate_dir(file: &std::path::Path) -> Option<std::path::PathBuf> {
    file.ancestors().skip(1).find_map(|dir| {
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
        manifest.contains("[package]").then(|| dir.to_path_buf())
    })
}

/// `path` with `.` and `..` resolved by their names (the file need not exist).
fn lexical(path: &std::path::Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut out = std::path::PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The folder or file each `include_str!`/`include_bytes!` of `text` (the source of `file`,
/// in the crate at `crate_dir`) names, where its argument says: a string literal (relative to
/// the file), or `concat!` of `env!("CARGO_MANIFEST_DIR")` or literals (the leading
/// literals, which name the folder where a macro argument follows). Other arguments
/// (`env!("OUT_DIR")`, a macro's variable alone) name build outputs and are skipped.
fn included_paths(
    text: &str,
    file: &std::path::Path,
    crate_dir: &std::path::Path,
) -> Vec<std::path::PathBuf> {
    let mut paths = Vec::new();
    let file_dir = file.parent().unwrap();
    for mac in ["include_str", "include_bytes"] {
        let needle = format!("{mac}!(");
        for (at, _) in text.match_indices(&needle) {
            let mut rest = text[at + needle.len()..].trim_start();
            let mut base = file_dir.to_path_buf();
            if let Some(inner) = rest.strip_prefix("concat!(") {
                rest = inner.trim_start();
                if let Some(after) = rest.strip_prefix("env!(\"CARGO_MANIFEST_DIR\")") {
                    base = crate_dir.to_path_buf();
                    rest = after.trim_start().trim_start_matches(',').trim_start();
                }
            }
            // The leading run of string literals.
            let mut literal = String::new();
            while let Some(inner) = rest.strip_prefix('"') {
                let Some(end) = inner.find('"') else { break };
                literal.push_str(&inner[..end]);
                rest = inner[end + 1..]
                    .trim_start()
                    .trim_start_matches(',')
                    .trim_start();
            }
            if literal.is_empty() {
                continue;
            }
            let literal = literal.trim_start_matches('/');
            paths.push(lexical(&base.join(literal)));
        }
    }
    paths
}

/// A crate compiles in only its own files (STYLE.md: a crate owns the assets it compiles in,
/// as vello_shaders owns its shaders) or the shared `assets/`: no `include_str!` or
/// `include_bytes!` reaches with `../` into another crate or a loose top-level folder.
/// Before issue 41 the GPU backend included `../../../../shaders/draw.wgsl`.
#[test]
fn includes_stay_inside_their_crate() {
    let root = lexical(&std::fs::canonicalize(repo_root()).unwrap());
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let shared: Vec<_> = SHARED_INCLUDE_DIRS.iter().map(|d| root.join(d)).collect();
    let mut checked = 0;
    let mut outside = Vec::new();
    for file in &files {
        let Some(krate) = crate_dir(file) else {
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for path in included_paths(&text, file, &krate) {
            checked += 1;
            if !path.starts_with(&krate) && !shared.iter().any(|s| path.starts_with(s)) {
                outside.push(format!(
                    "{} includes {} (outside {})",
                    file.display(),
                    path.display(),
                    krate.display()
                ));
            }
        }
    }
    assert!(
        checked >= 5,
        "only {checked} includes found under {}",
        root.display()
    );
    assert!(
        outside.is_empty(),
        "files compiled in from outside their crate (move them into the crate that compiles them):\n{}",
        outside.join("\n")
    );
    // The old shader include is caught; a crate's own file and the shared assets are not.
    let gpu = root.join("renderer/src/backend/gpu/mod.rs");
    let renderer = root.join("renderer");
    let old = format!("{}!(\"../../../../shaders/draw.wgsl\")", "include_str");
    assert_eq!(
        included_paths(&old, &gpu, &renderer),
        [root.join("shaders/draw.wgsl")]
    );
    let new = format!(
        "{}!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/shaders/draw.wgsl\"))",
        "include_str"
    );
    assert_eq!(
        included_paths(&new, &gpu, &renderer),
        [renderer.join("shaders/draw.wgsl")]
    );
}
