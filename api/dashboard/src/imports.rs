//! Bulk imports for the service's operators: every import into a data source (`adforge
//! admin data-source import`) with its progress, and one import's failures with their
//! reasons. Read-only (imports are started from the command line, where the files are);
//! the page reloads itself every 5 seconds while an import is under way. Its reads are the
//! domain's ([`adforge_api::resources::swipe_files::imports`]).

use axum::extract::{Path, State};
use axum::http::StatusCode;

use adforge_api::resources::swipe_files::imports::{self, ImportSummary, Progress};
use adforge_api::state::AppState;

use crate::html::{esc, page_with_head, when};
use crate::{DashError, DashResult, SignedIn, html};

/// Imports listed, newest first.
const MAX_IMPORTS: i64 = 100;
/// Failures listed on an import's page.
const MAX_FAILURES: i64 = 500;

fn forbid(me: &SignedIn) -> Result<(), DashError> {
    if me.0.is_operator {
        Ok(())
    } else {
        Err(DashError::Forbidden(
            "Only the service's operators can see imports.",
        ))
    }
}

fn bar(p: &Progress) -> String {
    let done = p.ready + p.failed;
    format!(
        r#"<progress max="{total}" value="{done}" aria-label="{done} of {total} done">{done} of {total}</progress> {ready} ready, {failed} failed, {queued} queued, {pending} pending"#,
        total = p.total.max(1),
        ready = p.ready,
        failed = p.failed,
        queued = p.queued,
        pending = p.pending,
    )
}

fn refresh_head(running: bool) -> &'static str {
    if running {
        r#"<meta http-equiv="refresh" content="5">"#
    } else {
        ""
    }
}

fn row(s: &ImportSummary) -> String {
    format!(
        r#"<tr id="{id}"><td><a href="/dashboard/imports/{id}"><code>{id}</code></a></td><td>{source}</td><td><code>{origin}</code></td><td>{bar}</td><td>{started}</td></tr>"#,
        id = esc(&s.import.id),
        source = esc(&s.source_name),
        origin = esc(&s.import.origin),
        bar = bar(&s.progress),
        started = esc(&when(&s.import.created_at)),
    )
}

/// GET /dashboard/imports (operators)
pub async fn list(State(state): State<AppState>, me: SignedIn) -> DashResult {
    forbid(&me)?;
    let all = imports::recent(&state.db, MAX_IMPORTS).await?;
    let running = all.iter().any(|s| !s.progress.finished());
    let body = if all.is_empty() {
        r#"<p class="hint">No imports yet. Run <code>adforge admin data-source import --id sfs_… --folder DIR</code> (or <code>--manifest FILE</code>) where the files are; every worker shares the ingest.</p>"#.to_string()
    } else {
        format!(
            r#"<table><caption>Imports into data sources, newest first</caption><thead><tr><th scope="col">Import</th><th scope="col">Data source</th><th scope="col">From</th><th scope="col">Progress</th><th scope="col">Started</th></tr></thead><tbody>{}</tbody></table>"#,
            all.iter().map(row).collect::<String>()
        )
    };
    Ok(html(
        StatusCode::OK,
        page_with_head(
            "Imports",
            Some(&me.0),
            "/dashboard/imports",
            &body,
            refresh_head(running),
        ),
    ))
}

/// GET /dashboard/imports/{id} (operators)
pub async fn detail(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
) -> DashResult {
    forbid(&me)?;
    let Some(s) = imports::get(&state.db, &id).await? else {
        return Err(DashError::NotFound);
    };
    let failures = imports::failures(&state.db, &id, MAX_FAILURES).await?;
    let mut items = String::new();
    for f in &failures {
        items.push_str(&format!(
            "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
            f.item,
            esc(&f.locator),
            f.swipe_file_id
                .as_deref()
                .map(|d| format!("<code>{}</code>", esc(d)))
                .unwrap_or_default(),
            esc(f.error.as_deref().unwrap_or("")),
        ));
    }
    let failed = if failures.is_empty() {
        "<p>No failures.</p>".to_string()
    } else {
        format!(
            r#"<table><caption>Failed items (run the same import again to retry them)</caption><thead><tr><th scope="col">Item</th><th scope="col">File or URL</th><th scope="col">Design</th><th scope="col">Reason</th></tr></thead><tbody>{items}</tbody></table>"#
        )
    };
    let body = format!(
        r#"<section class="card"><h2>Import <code>{id}</code></h2><p>Into <strong>{source}</strong> (<code>{source_id}</code>) from <code>{origin}</code>, started {started}.</p><p>{bar}</p></section>{failed}"#,
        id = esc(&s.import.id),
        source = esc(&s.source_name),
        source_id = esc(&s.import.data_source_id),
        origin = esc(&s.import.origin),
        started = esc(&when(&s.import.created_at)),
        bar = bar(&s.progress),
    );
    Ok(html(
        StatusCode::OK,
        page_with_head(
            "Import",
            Some(&me.0),
            "/dashboard/imports",
            &body,
            refresh_head(!s.progress.finished()),
        ),
    ))
}
