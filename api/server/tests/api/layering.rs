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

/// `text` without its line comments (doc comments included), so a module that only
/// mentions another in its docs does not count as naming it. A `//` inside a string cuts
/// the rest of that line too, which can only hide a name, never invent one.
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| l.find("//").map_or(l, |at| &l[..at]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules of `api/src`: module path (`["resources", "image_ads"]`) → file, relative to
/// `api/src`. Files of unit tests (`tests.rs`) are left out: a test may set up its data
/// through a feature above the module it tests.
fn api_modules() -> BTreeMap<Vec<String>, String> {
    let src = repo_root().join("api/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .into_iter()
        .filter_map(|f| {
            let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
            let mut parts: Vec<String> = rel
                .trim_end_matches(".rs")
                .split('/')
                .map(str::to_owned)
                .collect();
            if parts.last().is_some_and(|p| p == "tests") {
                return None;
            }
            if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
                parts.pop();
            }
            Some((parts, rel))
        })
        .collect()
}

/// The paths `code` names from the crate's root: `crate::a::b`, each item of
/// `crate::{a::b, c}`, and `super::`/`self::` paths seen from the module `at`.
fn named_paths(code: &str, at: &[String]) -> Vec<Vec<String>> {
    let ident = |s: &str| -> Vec<String> {
        s.split("::")
            .map(str::trim)
            .take_while(|p| {
                !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
            .map(str::to_owned)
            .collect()
    };
    // The module `super` names (a `mod.rs` is its folder's module, so the same rule holds).
    let parent: Vec<String> = at[..at.len().saturating_sub(1)].to_vec();
    let this: Vec<String> = at.to_vec();
    let mut out = Vec::new();
    for (prefix, base) in [
        ("crate::", Vec::new()),
        ("super::", parent),
        ("self::", this),
    ] {
        for (i, _) in code.match_indices(prefix) {
            // `adforge_api::crate::` cannot occur; skip `foo_crate::` and the like.
            if code[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                continue;
            }
            let rest = &code[i + prefix.len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    let p = ident(item.trim().trim_start_matches('{'));
                    if !p.is_empty() && p[0] != "self" {
                        out.push([base.clone(), p].concat());
                    }
                }
            } else {
                let p = ident(rest);
                if !p.is_empty() {
                    out.push([base.clone(), p].concat());
                }
            }
        }
    }
    out
}

/// The file a path names: its longest prefix that is a module.
fn resolve<'m>(modules: &'m BTreeMap<Vec<String>, String>, path: &[String]) -> Option<&'m String> {
    (1..=path.len()).rev().find_map(|n| modules.get(&path[..n]))
}

/// Each file of `api/src` (unit tests aside) → the files of the crate its code names.
fn api_imports() -> BTreeMap<String, BTreeSet<String>> {
    let modules = api_modules();
    let src = repo_root().join("api/src");
    let mut edges = BTreeMap::new();
    for (at, rel) in &modules {
        let text = std::fs::read_to_string(src.join(rel)).unwrap();
        // Unit tests inline at the end of a file are that file's tests, not its code.
        let text = text
            .find("#[cfg(test)]\nmod ")
            .map_or(text.as_str(), |i| &text[..i]);
        let code = code_of(text);
        let targets = named_paths(&code, at)
            .iter()
            .filter_map(|p| resolve(&modules, p))
            .filter(|t| *t != rel)
            .cloned()
            .collect();
        edges.insert(rel.clone(), targets);
    }
    edges
}

/// Only the resources, the router that merges them (`v1.rs`), the state (which holds their
/// services) and the result router (which hands each job result to its feature) name
/// `crate::resources`: the layers below them (store, jobs' outbox, auth, the swipe search
/// engine, webhooks…) never reach up into a feature. Before issue 41 `jobs.rs` applied
/// every resource's results and `swipe/` held features that create swipe files.
#[test]
fn only_the_resources_and_their_wiring_name_resources() {
    const ALLOWED: &[&str] = &["v1.rs", "state.rs", "results.rs"];
    let modules = api_modules();
    assert!(modules.len() > 80, "api/src's modules: {}", modules.len());
    let src = repo_root().join("api/src");
    let mut found = Vec::new();
    for rel in modules.values() {
        if rel.starts_with("resources/") || ALLOWED.contains(&rel.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(src.join(rel)).unwrap();
        let text = text
            .find("#[cfg(test)]\nmod ")
            .map_or(text.as_str(), |i| &text[..i]);
        let code = code_of(text);
        let at: Vec<String> = modules
            .iter()
            .find(|(_, r)| *r == rel)
            .map(|(m, _)| m.clone())
            .unwrap();
        if named_paths(&code, &at)
            .iter()
            .any(|p| p.first().is_some_and(|m| m == "resources"))
        {
            found.push(rel.clone());
        }
    }
    assert!(
        found.is_empty(),
        "modules below the resources that name `crate::resources` (move the code into its resource, or have the resource call down): {found:?}"
    );
    // The scanner sees what it is for: the old applier's call, and a grouped import.
    let at = ["jobs".to_owned()];
    let old = "let changed = crate::resources::design_templates::apply::failed(db, f).await?;";
    assert_eq!(
        named_paths(&code_of(old), &at)[0][..2],
        ["resources", "design_templates"]
    );
    let grouped = "use crate::{error::ApiResult, resources::image_ads};";
    assert!(
        named_paths(grouped, &at)
            .iter()
            .any(|p| p[0] == "resources")
    );
    assert!(named_paths(&code_of("/// see crate::resources::images"), &at).is_empty());
}

/// `state.rs` is a leaf of the crate's module graph: nothing it names reaches it back, so
/// a module that imports the state is never imported back through it. Before issue 41 it
/// named jobs, ops, the rate limiter, previews and swipe, and sat in a 35-file circle.
#[test]
fn the_state_is_a_leaf() {
    let edges = api_imports();
    let state = "state.rs".to_owned();
    assert!(
        edges[&state].len() >= 5,
        "the state names its services: {:?}",
        edges[&state]
    );
    // Everything the state reaches, with the way there.
    let mut reached: BTreeMap<&String, &String> = BTreeMap::new();
    let mut todo: Vec<&String> = edges[&state].iter().collect();
    for t in &todo {
        reached.insert(t, &state);
    }
    while let Some(file) = todo.pop() {
        for next in edges.get(file).into_iter().flatten() {
            if !reached.contains_key(next) {
                reached.insert(next, file);
                todo.push(next);
            }
        }
    }
    if reached.contains_key(&state) {
        let mut way = vec![state.clone()];
        let mut at = reached[&state];
        while *at != state {
            way.push(at.clone());
            at = reached[at];
        }
        way.push(state.clone());
        way.reverse();
        panic!(
            "state.rs is imported back through what it names ({}): move the service it needs into a module that does not import the state",
            way.join(" → ")
        );
    }
}

/// No source file of the API crate is over 700 lines (STYLE.md), unless it is a file of
/// unit tests or says why in a comment ("Longer than 700 lines because …"), as the
/// worker's layering test asks of the worker and the renderer.
#[test]
fn no_source_file_of_the_api_is_over_700_lines() {
    let root = repo_root();
    let mut files = Vec::new();
    rust_files(&root.join("api/src"), &mut files);
    assert!(files.len() > 80, "found only {} files", files.len());
    let mut failures = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let lines = text.lines().count();
        let tests = f.file_name().is_some_and(|n| n == "tests.rs");
        if lines <= 700 || tests || text.contains("Longer than 700 lines because") {
            continue;
        }
        failures.push(format!(
            "{} has {lines} lines: split it along its seams, or say in its module doc why it is \"Longer than 700 lines because …\"",
            f.strip_prefix(&root).unwrap_or(&f).display()
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
