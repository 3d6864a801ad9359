//! The wallet: balance, open holds, the ledger with filters (kind, date range, paging) and
//! its CSV export; operators top up any organisation with a required reference (online
//! payment cannot be reached from here), members see how to ask for a top-up. The
//! `INSUFFICIENT_BALANCE` message links here (`--dashboard-url`'s default). The top-up
//! picker lists organisations by name (the id only where two share a name; always as the
//! option's `title`) on a full-width row, so long entries are not cut off on a phone.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::IntoResponse;

use crate::html::{csrf_field, esc, notice, page, when};
use crate::members::SessionMember;
use crate::{DashError, DashResult, Form, SignedIn, html, query, redirect};
use adforge_api::state::AppState;
use adforge_api::wallet::{self, LEDGER_KINDS, LedgerFilter, dollars};

const PAGE_ROWS: i64 = 50;
const CSV_MAX_ROWS: i64 = 100_000;
const REFERENCE_MAX: usize = 200;

fn is_date(s: &str) -> bool {
    s.len() == 10
        && s.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        })
}

/// The ledger filter of a query string; values that are not a kind or a `YYYY-MM-DD` date
/// are ignored (and the form shows them empty).
fn filter_of(q: &Form) -> LedgerFilter {
    LedgerFilter {
        kind: q
            .get("kind")
            .filter(|k| LEDGER_KINDS.contains(k))
            .map(str::to_string),
        from: q.get("from").filter(|d| is_date(d)).map(str::to_string),
        // Inclusive of the whole `to` day: `T24` sorts after every time of that day.
        to: q
            .get("to")
            .filter(|d| is_date(d))
            .map(|d| format!("{d}T24")),
        before: q.get("before").and_then(|b| b.parse().ok()),
    }
}

fn filter_query(f: &LedgerFilter) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    if let Some(k) = &f.kind {
        s.append_pair("kind", k);
    }
    if let Some(d) = &f.from {
        s.append_pair("from", d);
    }
    if let Some(d) = &f.to {
        s.append_pair("to", d.trim_end_matches("T24"));
    }
    s.finish()
}

fn kind_label(kind: &str) -> &str {
    match kind {
        "top_up" => "Top-up",
        "hold" => "Hold",
        "charge" => "Charge",
        "release" => "Hold released",
        other => other,
    }
}

async fn render(
    state: &AppState,
    m: &SessionMember,
    uri: &Uri,
    status: StatusCode,
    top_up_error: Option<&str>,
) -> DashResult {
    let q = query(uri);
    let filter = filter_of(&q);
    let mut conn = state.db.read.acquire().await?;
    let b = wallet::balance(&mut conn, &m.org_id)
        .await
        .map_err(|e| DashError::Internal(e.message))?;
    let holds = wallet::open_holds(&mut conn, &m.org_id, 20).await?;
    let entries = wallet::ledger_entries(&mut conn, &m.org_id, &filter, PAGE_ROWS + 1).await?;
    drop(conn);
    let more = entries.len() as i64 > PAGE_ROWS;
    let shown = &entries[..entries.len().min(PAGE_ROWS as usize)];

    let mut hold_rows = String::new();
    for (reference, cents, at) in &holds {
        hold_rows.push_str(&format!(
            r#"<tr><td data-label="For"><code>{}</code></td><td data-label="Amount" class="num">{}</td><td data-label="Since">{}</td></tr>"#,
            esc(reference),
            esc(&dollars(*cents)),
            esc(&when(at))
        ));
    }
    if holds.is_empty() {
        hold_rows.push_str(r#"<tr><td colspan="3">No work in progress holds money.</td></tr>"#);
    }
    let mut ledger_rows = String::new();
    for e in shown {
        ledger_rows.push_str(&format!(
            r#"<tr><td data-label="When">{}</td><td data-label="Kind">{}</td><td data-label="Amount" class="num">{}</td><td data-label="Reference">{}</td></tr>"#,
            esc(&when(&e.created_at)),
            esc(kind_label(&e.kind)),
            esc(&dollars(e.amount_cents)),
            e.reference
                .as_deref()
                .map(|r| format!("<code>{}</code>", esc(r)))
                .unwrap_or_default(),
        ));
    }
    if shown.is_empty() {
        ledger_rows.push_str(r#"<tr><td colspan="4">No entries match.</td></tr>"#);
    }
    let fq = filter_query(&filter);
    let older = match (more, shown.last()) {
        (true, Some(last)) => format!(
            r#"<p><a href="/dashboard/wallet?{}{}before={}#ledger-h">Older entries</a></p>"#,
            esc(&fq),
            if fq.is_empty() { "" } else { "&amp;" },
            last.seq
        ),
        _ => String::new(),
    };
    let mut kind_options = String::from(r#"<option value="">All kinds</option>"#);
    for k in LEDGER_KINDS {
        let sel = if filter.kind.as_deref() == Some(k) {
            " selected"
        } else {
            ""
        };
        kind_options.push_str(&format!(
            r#"<option value="{k}"{sel}>{}</option>"#,
            kind_label(k)
        ));
    }
    let top_up = if m.is_operator {
        operator_section(state, m, top_up_error).await?
    } else {
        format!(
            r#"<section class="card" aria-labelledby="topup-h"><h2 id="topup-h">Adding money</h2>
<p>Top-ups are made by the service's operators; online payment is not available here. To ask for one, write to your account contact with your organisation id <code>{}</code> and the amount; the top-up appears in the ledger below with its reference.</p></section>"#,
            esc(&m.org_id)
        )
    };
    let body = format!(
        r#"<section aria-labelledby="bal-h"><h2 id="bal-h" class="sr-only">Balance</h2>
<dl class="stats">
<div><dt>Available</dt><dd id="available">{avail}</dd></div>
<div><dt>Balance</dt><dd id="balance">{bal}</dd></div>
<div><dt>Held by work in progress</dt><dd id="held">{held}</dd></div>
</dl>
<p class="hint">An ad is charged when it completes (flat {flat}, editable {editable}); until then its price is held. A failed ad is not charged.</p></section>
{top_up}
<section aria-labelledby="holds-h"><h2 id="holds-h">Open holds</h2>
<div class="table-wrap"><table class="stack"><thead><tr><th scope="col">For</th><th scope="col" class="num">Amount</th><th scope="col">Since</th></tr></thead><tbody>{hold_rows}</tbody></table></div></section>
<section aria-labelledby="ledger-h"><h2 id="ledger-h">Ledger</h2>
<form method="get" action="/dashboard/wallet" class="filters" role="search" aria-label="Filter the ledger">
<div><label for="kind">Kind</label><select id="kind" name="kind">{kind_options}</select></div>
<div><label for="from">From</label><input id="from" name="from" type="date" value="{from}"></div>
<div><label for="to">To</label><input id="to" name="to" type="date" value="{to}"></div>
<div class="filter-actions"><button type="submit">Filter</button> <a class="button secondary" href="/dashboard/wallet/ledger.csv{csvq}" download>Export CSV</a></div>
</form>
<div class="table-wrap"><table class="stack"><thead><tr><th scope="col">When</th><th scope="col">Kind</th><th scope="col" class="num">Amount</th><th scope="col">Reference</th></tr></thead><tbody>{ledger_rows}</tbody></table></div>
{older}</section>"#,
        avail = esc(&dollars(b.available_cents())),
        bal = esc(&dollars(b.balance_cents)),
        held = esc(&dollars(b.held_cents)),
        flat = dollars(wallet::FLAT_IMAGE_AD_CENTS),
        editable = dollars(wallet::EDITABLE_IMAGE_AD_CENTS),
        from = esc(filter.from.as_deref().unwrap_or("")),
        to = esc(filter.to.as_deref().unwrap_or("").trim_end_matches("T24")),
        csvq = if fq.is_empty() {
            String::new()
        } else {
            format!("?{}", esc(&fq))
        },
    );
    Ok(html(
        status,
        page("Wallet", Some(m), "/dashboard/wallet", &body),
    ))
}

async fn operator_section(
    state: &AppState,
    m: &SessionMember,
    error: Option<&str>,
) -> Result<String, DashError> {
    let orgs = crate::store::wallet::organizations(&state.db).await?;
    let recent = crate::store::wallet::recent_top_ups(&state.db, 10).await?;
    // Options carry the name alone, so a long "Name (org_…)" is not cut off in a narrow
    // select; the id follows only where two organisations share a name, and is the
    // option's `title` either way.
    let mut options = String::new();
    for (id, name) in &orgs {
        let sel = if *id == m.org_id { " selected" } else { "" };
        let shared = orgs.iter().filter(|(_, n)| n == name).count() > 1;
        let text = if shared {
            format!("{name} ({id})")
        } else {
            name.clone()
        };
        options.push_str(&format!(
            r#"<option value="{}" title="{}"{sel}>{}</option>"#,
            esc(id),
            esc(id),
            esc(&text)
        ));
    }
    let mut rows = String::new();
    for (org_id, name, cents, reference, at) in &recent {
        rows.push_str(&format!(
            r#"<tr><td data-label="When">{}</td><td data-label="Organisation">{} <small>{}</small></td><td data-label="Amount" class="num">{}</td><td data-label="Reference">{}</td></tr>"#,
            esc(&when(at)),
            esc(name),
            esc(org_id),
            esc(&dollars(*cents)),
            esc(reference.as_deref().unwrap_or("")),
        ));
    }
    if recent.is_empty() {
        rows.push_str(r#"<tr><td colspan="4">No top-ups yet.</td></tr>"#);
    }
    Ok(format!(
        r#"<section class="card" aria-labelledby="topup-h"><h2 id="topup-h">Top up a wallet <span class="badge">operator</span></h2>
{err}<form method="post" action="/dashboard/wallet/top-up" class="grid-form">{csrf}
<div class="full-row"><label for="org">Organisation</label><select id="org" name="org" required aria-describedby="org-hint">{options}</select><p id="org-hint" class="hint">Listed by name (the id follows where two share a name); the one you are signed in to, <code>{this_org}</code>, is preselected.</p></div>
<div><label for="amount">Amount in dollars</label><input id="amount" name="amount" inputmode="decimal" placeholder="25.00" required pattern="\$?[0-9]{{1,9}}(\.[0-9]{{1,2}})?"></div>
<div><label for="reference">Reference</label><input id="reference" name="reference" required maxlength="{rmax}" placeholder="Invoice or payment id" aria-describedby="ref-hint"></div>
<div><button type="submit">Top up</button></div></form>
<p id="ref-hint" class="hint">The reference is stored on the ledger entry the organisation sees.</p>
<h3>Recent top-ups, all organisations</h3>
<div class="table-wrap"><table class="stack"><thead><tr><th scope="col">When</th><th scope="col">Organisation</th><th scope="col" class="num">Amount</th><th scope="col">Reference</th></tr></thead><tbody>{rows}</tbody></table></div></section>"#,
        err = error.map(|e| notice("error", &esc(e))).unwrap_or_default(),
        csrf = csrf_field(&m.csrf_token),
        rmax = REFERENCE_MAX,
        this_org = esc(&m.org_id),
    ))
}

/// GET /dashboard/wallet
pub async fn show(State(state): State<AppState>, me: SignedIn, uri: Uri) -> DashResult {
    render(&state, &me.0, &uri, StatusCode::OK, None).await
}

/// A CSV cell: quoted, and defused when a spreadsheet would read it as a formula.
fn cell(s: &str) -> String {
    let s = if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{s}")
    } else {
        s.to_string()
    };
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// GET /dashboard/wallet/ledger.csv (the page's filters, every matching row up to 100,000).
pub async fn csv(State(state): State<AppState>, me: SignedIn, uri: Uri) -> DashResult {
    let m = &me.0;
    let mut filter = filter_of(&query(&uri));
    filter.before = None;
    let mut conn = state.db.read.acquire().await?;
    let entries = wallet::ledger_entries(&mut conn, &m.org_id, &filter, CSV_MAX_ROWS).await?;
    let mut out = String::from("id,created_at,kind,amount_cents,amount,reference\r\n");
    for e in &entries {
        out.push_str(&format!(
            "{},{},{},{},{},{}\r\n",
            cell(&e.id),
            cell(&e.created_at),
            cell(&e.kind),
            e.amount_cents,
            cell(&dollars(e.amount_cents)),
            cell(e.reference.as_deref().unwrap_or("")),
        ));
    }
    let mut r = out.into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Ok(v) =
        HeaderValue::from_str(&format!("attachment; filename=\"ledger-{}.csv\"", m.org_id))
    {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(r)
}

/// POST /dashboard/wallet/top-up (operators only)
pub async fn top_up(
    State(state): State<AppState>,
    me: SignedIn,
    uri: Uri,
    body: Bytes,
) -> DashResult {
    let form = me.form(&body)?;
    let m = &me.0;
    if !m.is_operator {
        return Err(DashError::Forbidden(
            "Only the service's operators can top up wallets.",
        ));
    }
    let org = form.get("org").unwrap_or("").trim();
    let reference = form.get("reference").unwrap_or("").trim();
    let amount = form.get("amount").unwrap_or("");
    let known = adforge_api::orgs::exists(&state.db, org).await?;
    let cents = adforge_api::wallet::parse_amount(amount).filter(|c| *c > 0);
    let problem = if !known {
        Some("Choose an organisation.")
    } else if cents.is_none() {
        Some("The amount must be a positive dollar amount such as 25.00.")
    } else if reference.is_empty() || reference.chars().count() > REFERENCE_MAX {
        Some("A reference (an invoice or payment id, at most 200 characters) is required.")
    } else {
        None
    };
    if let Some(p) = problem {
        return render(&state, m, &uri, StatusCode::BAD_REQUEST, Some(p)).await;
    }
    let cents = cents.unwrap_or_default();
    let mut tx = state.db.begin_write().await?;
    wallet::top_up(&mut tx, org, cents, Some(reference), Some(&m.profile_id)).await?;
    tx.commit().await?;
    tracing::info!(org_id = %org, cents, profile_id = %m.profile_id, "wallet topped up in the dashboard");
    Ok(redirect("/dashboard/wallet"))
}
