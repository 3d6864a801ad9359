//! `adforge admin data-source import` and `import-status`: stages a folder's or a
//! manifest's items through [`adforge_api::resources::swipe_files::imports`] and reports progress on stderr,
//! a bar when stderr is a terminal and JSON lines otherwise, then one JSON object on
//! stdout (as every admin command prints).

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use adforge_api::Error;
use adforge_api::blob::BlobStore;
use adforge_api::resources::swipe_files::imports::{self, Progress};
use adforge_api::store::Db;

/// Entries of `imported` printed at most (the counts are always whole).
const LISTED: usize = 1000;

/// How progress is shown.
struct Reporter {
    bar: bool,
    last: Option<Instant>,
}

impl Reporter {
    fn new() -> Self {
        Self {
            bar: std::io::stderr().is_terminal(),
            last: None,
        }
    }

    /// At most one line a second, and always the last one (`force`).
    fn show(&mut self, import_id: &str, phase: &str, p: &Progress, force: bool) {
        if !force
            && self
                .last
                .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return;
        }
        self.last = Some(Instant::now());
        let mut err = std::io::stderr().lock();
        if self.bar {
            let done = p.ready + p.failed;
            let width = 30usize;
            let filled = if p.total > 0 {
                (done as usize * width) / p.total as usize
            } else {
                width
            };
            let _ = write!(
                err,
                "\r{phase:<8} [{}{}] {done}/{} ready {} failed {} queued {} pending {}   ",
                "#".repeat(filled.min(width)),
                "-".repeat(width - filled.min(width)),
                p.total,
                p.ready,
                p.failed,
                p.queued,
                p.pending
            );
            if force {
                let _ = writeln!(err);
            }
        } else {
            let _ = writeln!(
                err,
                "{}",
                json!({"import_id": import_id, "phase": phase, "progress": p})
            );
        }
        let _ = err.flush();
    }
}

/// Runs an import (see `DataSourceCommand::Import`).
///
/// # Errors
/// An unknown source, an unreadable folder or manifest, database failures.
pub async fn run(
    db: &Db,
    blobs: &Arc<dyn BlobStore>,
    source_id: &str,
    folder: Option<&Path>,
    manifest: Option<&Path>,
    wait: bool,
    allow_private_urls: bool,
) -> Result<Value, Error> {
    let (origin, entries) = match (folder, manifest) {
        (Some(f), None) => (
            format!("folder:{}", absolute(f).display()),
            imports::folder_entries(f)?,
        ),
        (None, Some(m)) => (
            format!("manifest:{}", absolute(m).display()),
            imports::manifest_entries(m)?,
        ),
        _ => {
            return Err(Error::Invalid(
                "give exactly one of --folder and --manifest".into(),
            ));
        }
    };
    let import = imports::open(db, source_id, &origin, entries.len() as i64).await?;
    let mut reporter = Reporter::new();
    let started = Instant::now();
    let mut progress = imports::progress(db, &import).await?;
    reporter.show(&import.id, "staging", &progress, true);
    let before = progress;
    let staged = imports::stage(db, blobs, &import, &entries, allow_private_urls, |st| {
        // During staging the counts come from the run itself (no query per batch).
        let p = Progress {
            pending: (before.pending
                - st.staged.len() as i64
                - st.rejected.len() as i64
                - st.retried as i64)
                .max(0),
            queued: before.queued + st.staged.len() as i64 + st.retried as i64,
            failed: (before.failed + st.rejected.len() as i64 - st.retried as i64).max(0),
            ..before
        };
        reporter.show(&import.id, "staging", &p, false);
    })
    .await?;
    progress = imports::progress(db, &import).await?;
    reporter.show(&import.id, "staged", &progress, true);
    if wait {
        while !progress.finished() {
            tokio::time::sleep(Duration::from_millis(500)).await;
            progress = imports::progress(db, &import).await?;
            reporter.show(&import.id, "ingest", &progress, false);
        }
        reporter.show(&import.id, "done", &progress, true);
    }
    let failures = imports::failures(db, &import.id, LISTED as i64).await?;
    let name = |locator: &str| match folder {
        // A folder's items are named by file name, as before manifests existed.
        Some(_) => Path::new(locator)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| locator.to_string()),
        None => locator.to_string(),
    };
    Ok(json!({
        "import_id": import.id,
        "data_source_id": source_id,
        "origin": origin,
        "progress": progress,
        "staged_now": staged.staged.len(),
        "skipped": staged.skipped,
        "retried": staged.retried,
        "seconds": (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        "imported": staged.staged.iter().take(LISTED).map(|(item, l, id)| json!({"item": item, "file": name(l), "id": id})).collect::<Vec<_>>(),
        "rejected": failures.iter().map(|f| json!({"item": f.item, "file": name(&f.locator), "id": f.swipe_file_id, "error": f.error})).collect::<Vec<_>>(),
    }))
}

/// `import-status`: progress and failures of one import.
///
/// # Errors
/// An unknown import; database failures.
pub async fn status(db: &Db, import_id: &str) -> Result<Value, Error> {
    let Some(s) = imports::get(db, import_id).await? else {
        return Err(Error::Invalid(format!(
            "no import `{import_id}`; `adforge admin data-source import` prints the id of the one it runs"
        )));
    };
    let failures = imports::failures(db, import_id, LISTED as i64).await?;
    Ok(json!({
        "import_id": s.import.id,
        "data_source_id": s.import.data_source_id,
        "origin": s.import.origin,
        "progress": s.progress,
        "failures": failures,
    }))
}

fn absolute(p: &Path) -> std::path::PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}
