//! Budgets that stop the work they bound, on a real `adforge serve` process: SIGTERM ends
//! a server that is drawing a preview nobody can finish within its bound, and trees of
//! nested clipping frames are refused (or drawn) without the process's peak memory
//! growing past the documented bound.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::shutdown::serve_process as serve;
use crate::status_kib;
use crate::stress_trees::{blur_heavy, nested_frames};
use crate::support::{free_port, send, wait_up};

/// CPU time the process has used, in clock ticks (utime + stime from /proc).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// The documented bound: `--shutdown-timeout-secs` (2 s here; 30 s by default) for
/// requests in flight, then at most 5 s for blocking work that was told to stop.
const SHUTDOWN_BOUND: Duration = Duration::from_secs(2 + 5);

/// SIGTERM while the server draws a preview that would take minutes: with a preview
/// budget too long to end it (10 minutes), only the shutdown can stop the drawing, and the
/// process exits within the documented bound (the shutdown timeout, then the renders
/// stop). Before, the process hung in the blocking pool's shutdown until the render ended
/// by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_a_server_that_is_drawing_a_heavy_preview_within_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let (mut server, key, log) = serve(
        dir.path(),
        port,
        &[
            "--preview-render-ms",
            "600000",
            "--preview-max-nodes",
            "600",
            "--shutdown-timeout-secs",
            "2",
        ],
    );
    assert!(wait_up(&base).await, "server did not start");
    let pid = server.0.id();
    let http = reqwest::Client::new();
    let request = http
        .post(format!("{base}/v1/previews"))
        .header("x-api-key", &key)
        .json(&json!({"tree": blur_heavy(499), "width": 2160}));
    let preview = tokio::spawn(async move { request.send().await.map(|r| r.status()) });
    // Drawing: the process burns CPU for a while (two seconds of it).
    let start = cpu_ticks(pid);
    let busy_by = Instant::now() + Duration::from_secs(120);
    while cpu_ticks(pid) < start + 200 {
        assert!(
            Instant::now() < busy_by,
            "the preview never started drawing"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let killed = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let signalled = Instant::now();
    let status = loop {
        if let Some(status) = server.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            signalled.elapsed() < SHUTDOWN_BOUND + Duration::from_secs(30),
            "adforge serve was still running {:?} after SIGTERM",
            signalled.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let took = signalled.elapsed();
    let lines: Vec<String> = log.try_iter().collect();
    eprintln!("exited {took:?} after SIGTERM with {status}");
    assert!(
        took <= SHUTDOWN_BOUND,
        "exited {took:?} after SIGTERM; the bound is {SHUTDOWN_BOUND:?}; log: {lines:#?}"
    );
    assert!(status.success(), "adforge serve exited with {status}");
    assert!(
        lines.iter().any(|l| l.contains("shutting down")),
        "{lines:?}"
    );
    // The client got an answer or a closed connection, never a hang.
    let answered = tokio::time::timeout(Duration::from_secs(10), preview).await;
    assert!(answered.is_ok(), "the preview request hung after the exit");
}

/// Trees of nested rounded clipping frames through the preview: 255 at 1080 px and 200 at
/// 2160 px are refused before drawing (400 naming a frame), 200 at 540 px is drawn, and the
/// process's peak resident set grows by at most 512 MiB over its idle size (unbounded,
/// 200 frames at 2160 px reached 1.7 GB).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_clipping_frames_stay_within_the_memory_bound() {
    const BOUND_MIB: u64 = 512;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let (server, key, _log) = serve(dir.path(), port, &["--preview-max-nodes", "600"]);
    assert!(wait_up(&base).await, "server did not start");
    let pid = server.0.id();
    let http = reqwest::Client::new();
    let preview = |tree: Value, width: u32| {
        send(
            http.post(format!("{base}/v1/previews"))
                .header("x-api-key", &key)
                .json(&json!({"tree": tree, "width": width})),
        )
    };
    // Warm up the renderer (fonts, caches) with a small tree, so idle means ready.
    preview(nested_frames(3), 540).await.expect(200, None);
    let idle = status_kib(pid, "VmRSS:");
    for (depth, width) in [(255, 1080), (200, 2160), (255, 2160)] {
        let reply = preview(nested_frames(depth), width)
            .await
            .expect(400, Some("VALIDATION_ERROR"));
        let message = reply.body["error"]["details"][0]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert_eq!(reply.body["error"]["details"][0]["field"], "tree");
        assert!(
            message.contains("node `f") && message.contains("MiB"),
            "{depth} frames at {width}: {message}"
        );
    }
    // Small enough to draw: drawn (a PNG).
    let drawn = preview(nested_frames(200), 540).await;
    assert_eq!(drawn.status, 200, "{}", drawn.body["error"]);
    let peak = status_kib(pid, "VmHWM:");
    let grown = peak.saturating_sub(idle) / 1024;
    eprintln!(
        "nested frames: peak {} MiB, {grown} MiB over {} MiB idle",
        peak / 1024,
        idle / 1024
    );
    assert!(
        grown <= BOUND_MIB,
        "peak RSS grew by {grown} MiB over idle; the bound is {BOUND_MIB} MiB"
    );
}
