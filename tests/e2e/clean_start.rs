//! What a fresh `adforge serve` says on stderr: nothing that reads as an error on a clean
//! start (issue 39: Mesa's Vulkan device-select layer printed `error: XDG_RUNTIME_DIR is
//! invalid or not set in the environment.` twice while `--backend auto` looked for a GPU),
//! and, after a restart, a resume line that names what it resumed (it said `resumed
//! processing image ads resumed=45` for the default collection's swipe-file ingests).

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::adforge;
use crate::support::{free_port, wait_up};

/// Starts `adforge serve` on `dir` with `extra` flags, its stderr in `dir/../{name}`, as a
/// newcomer's shell would (no `XDG_RUNTIME_DIR`, the default log level and backend).
fn serve(dir: &Path, port: u16, name: &str, extra: &[&str]) -> Child {
    let mut cmd = adforge();
    cmd.args(["serve", "--data-dir"])
        .arg(dir)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(extra)
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("ADFORGE_LOG")
        .env_remove("ADFORGE_BACKEND")
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(crate::log_file(dir.parent().unwrap(), name));
    cmd.spawn().unwrap()
}

/// SIGTERM, then the exit (a generous deadline: a hang is the failure, not a slow stop).
fn stop(mut child: Child) {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("adforge serve did not stop within 60 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The lines of a log that mention an error, in any case, without terminal colours.
fn error_lines(log: &str) -> Vec<String> {
    log.lines()
        .map(strip_ansi)
        .filter(|l| l.to_ascii_lowercase().contains("error"))
        .collect()
}

fn strip_ansi(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_start_prints_no_error_and_a_restart_names_what_it_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    // No such folder: no default collection yet (an empty folder would make an empty one).
    let none = tmp.path().join("no-collection");
    let collection = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/swipe-default");
    let read = |name: &str| std::fs::read_to_string(tmp.path().join(name)).unwrap();

    // 1. A fresh start with the defaults (one in-process worker, `--backend auto`, which
    //    looks for a GPU): nothing on stderr reads as an error.
    let port = free_port();
    let first = serve(
        &data,
        port,
        "first.log",
        &["--default-collection", none.to_str().unwrap()],
    );
    assert!(wait_up(&format!("http://127.0.0.1:{port}")).await);
    stop(first);
    let log = read("first.log");
    assert!(log.contains("adforge API listening"), "{log}");
    assert_eq!(
        error_lines(&log),
        Vec::<String>::new(),
        "a clean start: {log}"
    );

    // 2. The default collection imported with no worker running: its designs stay
    //    processing; 3. the next start resumes them and says they are swipe-file ingests.
    let port = free_port();
    let second = serve(
        &data,
        port,
        "second.log",
        &[
            "--workers",
            "0",
            "--default-collection",
            collection.to_str().unwrap(),
        ],
    );
    assert!(wait_up(&format!("http://127.0.0.1:{port}")).await);
    stop(second);
    let log = read("second.log");
    assert!(
        log.contains("imported the default swipe-file collection"),
        "{log}"
    );
    assert_eq!(error_lines(&log), Vec::<String>::new(), "{log}");
    // The count the import logged (`designs=N`) is what the next start must resume.
    let designs: usize = log
        .lines()
        .map(strip_ansi)
        .find(|l| l.contains("imported the default swipe-file collection"))
        .and_then(|l| {
            l.split("designs=")
                .nth(1)
                .and_then(|n| n.split_whitespace().next()?.parse().ok())
        })
        .expect("the import logs how many designs it staged");
    assert!(designs > 0, "{log}");

    let port = free_port();
    let third = serve(&data, port, "third.log", &["--workers", "0"]);
    assert!(wait_up(&format!("http://127.0.0.1:{port}")).await);
    stop(third);
    let log = read("third.log");
    let resumed: Vec<String> = log
        .lines()
        .map(strip_ansi)
        .filter(|l| l.contains("resumed processing"))
        .collect();
    assert_eq!(resumed.len(), 1, "{log}");
    let line = &resumed[0];
    assert!(
        line.contains(&format!("resumed processing {designs} swipe-file ingests"))
            && line.contains(&format!("swipe_file_ingests={designs}"))
            && line.contains("image_ads=0")
            && line.contains("design_templates=0")
            && !line.contains("image ads"),
        "{line}"
    );
    assert_eq!(error_lines(&log), Vec::<String>::new(), "{log}");
}
