//! The README's walk-through runs as written: its shell blocks (each marked with a
//! `<!-- walk-through: … -->` line) run in one `bash`, in order, against this build.
//!
//! What stands in for a newcomer's machine: `cargo` on the PATH is a shim that runs this
//! package's build of the binary for `cargo run --release --bin adforge -- ARGS…` (and
//! refuses any other cargo command, so a walk-through that needs another would fail here);
//! the working folder is a fresh temporary one holding `assets/samples` (all the blocks
//! read), so `./data` and the files the blocks write start empty; `ADFORGE_LISTEN` picks a
//! free port, which the walk-through's `API=` line reads. The shell runs with `set -euo
//! pipefail` and `curl` as `curl --fail-with-body`, so a command that fails or an HTTP
//! error stops the run and names itself, where a newcomer's `curl -s` would go on quietly.

use std::path::Path;
use std::time::{Duration, Instant};

const MARKER: &str = "<!-- walk-through:";

/// The shell blocks of `readme` that follow a walk-through marker line, in order.
fn walkthrough_blocks(readme: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        if !line.starts_with(MARKER) {
            continue;
        }
        let fence = lines.next().unwrap_or("");
        assert_eq!(
            fence, "```sh",
            "a walk-through marker must precede a ```sh block"
        );
        let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        blocks.push(body.join("\n"));
    }
    blocks
}

/// A shell line without its comment (`# …` at the start, or after two or more spaces, as
/// the README writes them; a `#` inside a value such as `"#3B2416"` stays).
fn command_of(line: &str) -> &str {
    if line.trim_start().starts_with('#') {
        return "";
    }
    match line.find("  #") {
        Some(i) => line[..i].trim_end(),
        None => line,
    }
}

/// Stands in for `cargo run --release --bin adforge -- ARGS…`.
const CARGO_SHIM: &str = r#"#!/bin/sh
[ "$1" = run ] || { echo "walk-through test: only 'cargo run … -- ARGS' is stood in for, not: cargo $*" >&2; exit 2; }
while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
[ $# -gt 0 ] && shift
exec "$ADFORGE_BIN" "$@"
"#;

#[test]
fn the_readme_walkthrough_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let blocks = walkthrough_blocks(&readme);
    assert!(
        blocks.len() >= 2,
        "the README marks {} walk-through blocks",
        blocks.len()
    );
    for line in blocks.iter().flat_map(|b| b.lines()) {
        assert!(
            !command_of(line).contains('…'),
            "a walk-through command keeps a placeholder: {line}"
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("clone");
    std::fs::create_dir_all(work.join("assets")).unwrap();
    std::os::unix::fs::symlink(
        root.join("assets/samples").canonicalize().unwrap(),
        work.join("assets/samples"),
    )
    .unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let shim = bin.join("cargo");
    std::fs::write(&shim, CARGO_SHIM).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();

    let script = format!(
        "set -euo pipefail\n\
         trap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n\
         curl() {{ command curl --fail-with-body \"$@\"; }}\n\
         {}\n",
        blocks.join("\n")
    );
    std::fs::write(dir.path().join("walkthrough.sh"), &script).unwrap();
    let port = crate::support::free_port();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(dir.path().join("walkthrough.sh"))
        .current_dir(&work)
        .env("PATH", path)
        .env("ADFORGE_BIN", env!("CARGO_BIN_EXE_adforge-e2e"))
        .env("ADFORGE_LISTEN", format!("127.0.0.1:{port}"))
        .env("ADFORGE_LOG", "warn")
        .stdout(crate::log_file(dir.path(), "stdout"))
        .stderr(crate::log_file(dir.path(), "stderr"));
    // A clean environment for the server: none of the caller's ADFORGE_* settings.
    for (k, _) in std::env::vars() {
        if k.starts_with("ADFORGE_") && !["ADFORGE_LISTEN", "ADFORGE_LOG"].contains(&k.as_str()) {
            cmd.env_remove(k);
        }
    }
    // Its own process group, so the server it starts in the background goes with it
    // whatever way the run ends.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let child = cmd.spawn().unwrap();
    let mut child = Group(child);
    // A generous deadline, not a timing assertion: two ads and a re-render in a debug build.
    let deadline = Instant::now() + Duration::from_secs(600);
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let out = std::fs::read_to_string(dir.path().join("stdout")).unwrap_or_default();
    let err = std::fs::read_to_string(dir.path().join("stderr")).unwrap_or_default();
    assert!(
        status.is_some_and(|s| s.success()),
        "the walk-through failed ({status:?}):\n--- script\n{script}\n--- stdout\n{out}\n--- stderr\n{err}"
    );
    // What it left behind is what the README says it makes.
    let png = std::fs::read(work.join("ad.png")).unwrap();
    let ad = image::load_from_memory(&png).unwrap();
    assert_eq!(ad.width().max(ad.height()), 3840, "the flat ad is 4K");
    assert!(out.contains("\"version_number\":2"), "{out}");
    assert!(out.contains("\"change_summary\":\"New headline\""), "{out}");
}

/// A process group led by the child: dropping it kills the whole group.
struct Group(std::process::Child);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.wait();
    }
}

#[test]
fn walkthrough_blocks_are_the_marked_ones() {
    let text = "x\n<!-- walk-through: t -->\n```sh\na\nb\n```\n```sh\nnot\n```\n<!-- walk-through: t -->\n```sh\nc\n```\n";
    assert_eq!(walkthrough_blocks(text), ["a\nb", "c"]);
    assert_eq!(command_of("# → {\"id\": \"brand_…\"}"), "");
    assert_eq!(
        command_of(r##"curl -d '{"c": "#3B2416"}'   # → brand_…"##),
        r##"curl -d '{"c": "#3B2416"}'"##
    );
}
