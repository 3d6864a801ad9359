//! The worker's layering, read from the source files (issue 41, item 5; the crates' edges
//! are checked from cargo's metadata by `api/server/tests/api/layering.rs`):
//!
//! - the two pipelines, `generate` and `figma`, never name each other: what both use is in
//!   `services`, and what one lends the other is wired by the router (`node`);
//! - no file outside the renderer writes a tree's image field by its name: the tree crate
//!   owns its keys (`renderer::tree`: `TreeDoc::set_image_url`, `paint::image`);
//! - no source file of the worker or the renderer is over 700 lines, unless it is a file of
//!   tests or says why in a comment ("Longer than 700 lines because …").

use std::path::{Path, PathBuf};

/// The repository's root (this crate is `worker`).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the worker crate sits in the workspace")
        .to_path_buf()
}

/// Every `.rs` file under `dir` (build outputs and hidden folders left out).
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "target" || name == "node_modules" {
            continue;
        }
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            rust_files(&path, out);
        } else if kind.is_file() && name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// `text` with comments and the insides of string and char literals blanked out (kept as
/// spaces, so positions and line numbers stay), for looking at code alone.
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        if c == '/' && b.get(i + 1) == Some(&'/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && b.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && matches!(b.get(i + 1), Some('"') | Some('#')) && raw_start(&b, i) {
            // r"…" or r#"…"#
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            out.extend(std::iter::repeat_n(' ', j - i + 1));
            i = j + 1;
            while i < b.len() {
                if b[i] == '"' && (0..hashes).all(|k| b.get(i + 1 + k) == Some(&'#')) {
                    out.extend(std::iter::repeat_n(' ', hashes + 1));
                    i += hashes + 1;
                    break;
                }
                out.push(blank(b[i]));
                i += 1;
            }
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
            if i < b.len() {
                out.push('"');
                i += 1;
            }
        } else if c == '\'' && (b.get(i + 1) == Some(&'\\') || b.get(i + 2) == Some(&'\'')) {
            // A char literal ('x', '"', '\n'); a lifetime ('a) is code.
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != '\'' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(' ');
                    i += 1;
                }
            }
            if i < b.len() {
                out.push(' ');
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// True when the `r` at `i` opens a raw string (not the end of an identifier like `bar`).
fn raw_start(b: &[char], i: usize) -> bool {
    let before = i.checked_sub(1).map(|j| b[j]);
    !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
        && b[i + 1..]
            .iter()
            .find(|c| **c != '#')
            .is_some_and(|c| *c == '"')
}

/// The line (1-based) of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// Where `code` (from [`code_only`]) names the module `module` as a path: `module::…`
/// (`crate::module::`, `super::module::`, `adforge_worker::module::`), or `module` inside a
/// `use` declaration (`use crate::{module, …}`). Lines, 1-based.
fn names_module(code: &str, module: &str) -> Vec<usize> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut lines = Vec::new();
    for (at, _) in code.match_indices(module) {
        let before = code[..at].chars().next_back();
        let after = &code[at + module.len()..];
        if before.is_some_and(is_ident) || after.starts_with(is_ident) {
            continue;
        }
        // A field or method of that name (`self.figma`, `x.generate(…)`) is not the module.
        if before == Some('.') {
            continue;
        }
        let path = after.trim_start().starts_with("::");
        // Inside a `use` declaration: the statement this occurrence is in starts with `use`.
        let start = code[..at].rfind([';', '}']).map_or(0, |s| s + 1);
        let statement = code[start..at].trim_start();
        let in_use = ["use ", "pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .any(|u| statement.starts_with(u));
        if path || in_use {
            lines.push(line_of(code, at));
        }
    }
    lines
}

/// A tree's image fields: the keys of `renderer::tree::ImageField`. They come with a rule
/// (which one wins when several are set) that only the tree crate applies, so a write by
/// name elsewhere is how a URL ends up in a field the renderer does not draw.
const TREE_IMAGE_KEYS: [&str; 3] = ["\"imageFillUrl\"", "\"imageUrl\"", "\"imageRef\""];

/// Where `text` (a source file; comments blanked) writes one of [`TREE_IMAGE_KEYS`] by its
/// name: any use of the literal except a read (`.get("imageRef")`, as the Figma importer
/// reads Figma's own document). Lines, 1-based.
fn writes_tree_key(text: &str) -> Vec<(usize, &'static str)> {
    let code = strip_comments(text);
    let mut found = Vec::new();
    for key in TREE_IMAGE_KEYS {
        for (at, _) in code.match_indices(key) {
            if code[..at].ends_with(".get(") {
                continue;
            }
            found.push((line_of(&code, at), key));
        }
    }
    found
}

/// `text` with `//` and `/* */` comments blanked, string literals kept (their words are
/// what [`writes_tree_key`] looks for).
fn strip_comments(text: &str) -> String {
    // `code_only` keeps one char per char, blanking only the insides of literals: put them
    // back from `text`.
    let mut in_str = false;
    code_only(text)
        .chars()
        .zip(text.chars())
        .map(|(c, t)| {
            if c == '"' {
                in_str = !in_str;
                t
            } else if in_str {
                t
            } else {
                c
            }
        })
        .collect()
}

/// A file of tests: under a `tests` folder, or named `tests.rs` (a module's unit tests
/// moved beside it).
fn is_test_file(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "tests.rs")
        || path.components().any(|c| c.as_os_str() == "tests")
}

#[test]
fn generate_and_figma_never_name_each_other() {
    let root = repo_root().join("worker/src");
    let mut failures = Vec::new();
    for (dir, other, also) in [
        ("generate", "figma", &[][..]),
        (
            "figma",
            "generate",
            &["GenerateAdHandler", "GenerateConfig"][..],
        ),
    ] {
        let mut files = Vec::new();
        rust_files(&root.join(dir), &mut files);
        assert!(!files.is_empty(), "no files under worker/src/{dir}");
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let code = code_only(&text);
            let mut lines = names_module(&code, other);
            for name in also {
                lines.extend(names_module(&code, name));
            }
            for line in lines {
                failures.push(format!(
                    "{}:{line} names `{other}`: move what both use into worker/src/services, or wire it in worker/src/node.rs",
                    f.strip_prefix(repo_root()).unwrap_or(&f).display()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn only_the_renderer_writes_tree_image_keys() {
    let root = repo_root();
    let mut files = Vec::new();
    for krate in [
        "worker",
        "api",
        "api/dashboard",
        "api/server",
        "models",
        "tests",
    ] {
        rust_files(&root.join(krate).join("src"), &mut files);
    }
    let mut failures = Vec::new();
    for f in files {
        if is_test_file(&f) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (line, key) in writes_tree_key(&text) {
            failures.push(format!(
                "{}:{line} writes {key} by name: use adforge_renderer::tree (TreeDoc::set_image_url, paint::image, paint::set_image_url)",
                f.strip_prefix(&root).unwrap_or(&f).display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Files that are over the bound for a reason owned elsewhere, each with that reason.
const KNOWN_LONG: [(&str, &str); 0] = [];

#[test]
fn no_source_file_of_the_worker_or_renderer_is_over_700_lines() {
    let root = repo_root();
    let mut files = Vec::new();
    for dir in ["worker/src", "renderer/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "found only {} files", files.len());
    let mut failures = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&root).unwrap_or(&f).to_path_buf();
        let text = std::fs::read_to_string(&f).unwrap();
        let lines = text.lines().count();
        if lines <= 700
            || is_test_file(&rel)
            || text.contains("Longer than 700 lines because")
            || KNOWN_LONG.iter().any(|(p, _)| rel == Path::new(p))
        {
            continue;
        }
        failures.push(format!(
            "{} has {lines} lines: split it along its seams, or say in its module doc why it is \"Longer than 700 lines because …\"",
            rel.display()
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The scanners find what they are for (so the tests above can fail).
#[test]
fn the_scanners_see_names_and_keys_in_code_but_not_in_comments() {
    let code = code_only(
        "use crate::figma::sync;\nuse crate::{blob, figma};\n// crate::figma::x\nlet s = \"figma::y\";\nself.figma.run();\nfn figma_parts() {}\n",
    );
    assert_eq!(names_module(&code, "figma"), vec![1, 2]);
    let writes = writes_tree_key(
        "p.insert(\"imageFillUrl\".into(), u);\nlet r = obj.get(\"imageRef\");\n// \"imageUrl\"\njson!({\"imageUrl\": u});\n",
    );
    assert_eq!(writes, vec![(1, "\"imageFillUrl\""), (4, "\"imageUrl\"")]);
    assert!(is_test_file(Path::new("worker/src/cutout/key/tests.rs")));
    assert!(!is_test_file(Path::new("worker/src/cutout/key/mod.rs")));
}
