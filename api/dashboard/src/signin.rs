//! Sign-in, one-time links, sign-out and the sessions list.
//!
//! Forms shown before sign-in are protected by a double-submit cookie: the page sets
//! `adforge_csrf` (HttpOnly) and puts the same random value in the form; the POST must
//! carry both, equal. A cross-site page can neither read the cookie nor set it.
//!
//! The sessions list names each browser by a short "Chrome on Linux" (`browser_summary`, a
//! small reading of our own, no user-agent library); the stored string (its first 200
//! characters) is the cell's `title`.

use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;

use crate::DashboardState;
use crate::html::{csrf_field, esc, notice, page, post_button, when};
use crate::members;
use crate::{
    DashError, DashResult, Form, PeerAddr, SESSION_COOKIE, SignedIn, cookie, html, query, redirect,
    same_secret, set_cookie,
};

/// Sign-in attempts allowed per email address per rolling minute.
pub const PER_EMAIL_PER_MINUTE: u32 = 10;
/// Sign-in attempts allowed per client address per rolling minute.
pub const PER_IP_PER_MINUTE: u32 = 30;
const PRE_CSRF_COOKIE: &str = "adforge_csrf";
const MAX_FORM_BYTES: usize = 16 * 1024;

/// Where to go after sign-in: a plain in-site dashboard path (no open redirect, nothing a
/// `Location` header cannot carry: only visible ASCII), else the default page.
fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n)
            if n.strip_prefix("/dashboard")
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['/', '?', '#']))
                && !n.starts_with("/dashboard/sign-")
                && !n.contains("//")
                && !n.contains('\\')
                && n.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            n.to_string()
        }
        _ => "/dashboard/keys".to_string(),
    }
}

/// A response with a fresh pre-session CSRF cookie, whose value `body` embeds.
fn with_pre_csrf(
    state: &DashboardState,
    status: StatusCode,
    token: &str,
    body: String,
) -> Response {
    let mut r = html(status, body);
    if let Ok(v) = HeaderValue::from_str(&set_cookie(&state.config, PRE_CSRF_COOKIE, token, 3600)) {
        r.headers_mut().append(header::SET_COOKIE, v);
    }
    r
}

fn sign_in_page(next: &str, email: &str, csrf: &str, message: Option<String>) -> String {
    let body = format!(
        r#"<div class="narrow">{msg}<form method="post" action="/dashboard/sign-in" class="card">
{csrf}<input type="hidden" name="next" value="{next}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="{email}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>
<p class="hint">No password yet? Open the one-time sign-in link an owner or operator sent you.</p></div>"#,
        msg = message
            .map(|m| notice("error", &esc(&m)))
            .unwrap_or_default(),
        csrf = csrf_field(csrf),
        next = esc(next),
        email = esc(email),
    );
    page("Sign in", None, "", &body)
}

/// GET /dashboard/sign-in
pub async fn form(State(state): State<DashboardState>, req: Request) -> DashResult {
    if !state.config.enabled {
        return Err(DashError::Disabled);
    }
    let q = query(req.uri());
    let next = safe_next(q.get("next"));
    if let Some(t) = cookie(req.headers(), SESSION_COOKIE)
        && members::session_member(&state.db, t).await?.is_some()
    {
        return Ok(redirect(&next));
    }
    let token = members::new_token();
    Ok(with_pre_csrf(
        &state,
        StatusCode::OK,
        &token,
        sign_in_page(&next, "", &token, None),
    ))
}

async fn body_of(req: Request) -> Result<(HeaderMap, Option<PeerAddr>, Bytes), DashError> {
    let (parts, body) = req.into_parts();
    let peer = parts
        .extensions
        .get::<axum::extract::ConnectInfo<PeerAddr>>()
        .map(|c| c.0);
    let bytes = axum::body::to_bytes(body, MAX_FORM_BYTES)
        .await
        .map_err(|_| DashError::Csrf)?;
    Ok((parts.headers, peer, bytes))
}

/// The pre-session form's CSRF check.
fn pre_csrf(headers: &HeaderMap, form: &Form) -> Result<(), DashError> {
    match (cookie(headers, PRE_CSRF_COOKIE), form.get("csrf")) {
        (Some(c), Some(f)) if !c.is_empty() && same_secret(c, f) => Ok(()),
        _ => Err(DashError::Csrf),
    }
}

/// A new session's cookie and the redirect into the dashboard.
fn signed_in(state: &DashboardState, token: &str, to: &str) -> Response {
    let mut r = redirect(to);
    let h = r.headers_mut();
    for c in [
        set_cookie(
            &state.config,
            SESSION_COOKIE,
            token,
            members::SESSION_IDLE_SECS,
        ),
        set_cookie(&state.config, PRE_CSRF_COOKIE, "", 0),
    ] {
        if let Ok(v) = HeaderValue::from_str(&c) {
            h.append(header::SET_COOKIE, v);
        }
    }
    r
}

/// POST /dashboard/sign-in
pub async fn submit(State(state): State<DashboardState>, req: Request) -> DashResult {
    if !state.config.enabled {
        return Err(DashError::Disabled);
    }
    let (headers, peer, body) = body_of(req).await?;
    let form = Form::parse(&body);
    pre_csrf(&headers, &form)?;
    let next = safe_next(form.get("next"));
    let raw_email = form.get("email").unwrap_or("");
    let password = form.get("password").unwrap_or("").to_string();
    let csrf = form.get("csrf").unwrap_or("").to_string();
    let email = members::normalize_email(raw_email).unwrap_or_default();
    let ip = peer.map_or_else(|| "unknown".to_string(), |p| p.0.ip().to_string());
    let by_ip = state
        .limiter
        .hit(&format!("dashboard-sign-in:ip:{ip}"), PER_IP_PER_MINUTE)
        .await;
    let by_email = if by_ip.allowed {
        Some(
            state
                .limiter
                .hit(
                    &format!("dashboard-sign-in:email:{email}"),
                    PER_EMAIL_PER_MINUTE,
                )
                .await,
        )
    } else {
        None
    };
    let refused = match by_email {
        Some(d) if d.allowed => None,
        Some(d) => Some(d.retry_after_secs),
        None => Some(by_ip.retry_after_secs),
    };
    if let Some(wait) = refused {
        let mut r = html(
            StatusCode::TOO_MANY_REQUESTS,
            sign_in_page(
                &next,
                raw_email,
                &csrf,
                Some(format!(
                    "Too many sign-in attempts. Wait {wait} seconds, then try again."
                )),
            ),
        );
        if let Ok(v) = HeaderValue::from_str(&wait.to_string()) {
            r.headers_mut().insert(header::RETRY_AFTER, v);
        }
        return Ok(r);
    }
    let found = if email.is_empty() {
        None
    } else {
        members::find_for_sign_in(&state.db, &email).await?
    };
    let (hash, who) = match found {
        Some((profile, hash, org)) => (hash, Some((profile, org))),
        None => (None, None),
    };
    if members::verify_password(hash, password).await
        && let Some((profile, org)) = who
    {
        let ua = headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok());
        let (token, _) = members::create_session(&state.db, &profile, &org, ua).await?;
        return Ok(signed_in(&state, &token, &next));
    }
    Ok(html(
        StatusCode::UNAUTHORIZED,
        sign_in_page(
            &next,
            raw_email,
            &csrf,
            Some("That email and password do not match an account.".into()),
        ),
    ))
}

fn link_page(token: &str, email: &str, csrf: &str, message: Option<String>) -> String {
    let body = format!(
        r#"<div class="narrow">{msg}<form method="post" action="/dashboard/sign-in/link" class="card">
{csrf}<input type="hidden" name="token" value="{token}">
<p>Choose a password for <strong>{email}</strong>. This link works once.</p>
<input type="email" name="username" autocomplete="username" value="{email}" hidden>
<label for="password">New password</label>
<input id="password" name="password" type="password" autocomplete="new-password" minlength="{min}" maxlength="{max}" required aria-describedby="pw-hint">
<p id="pw-hint" class="hint">At least {min} characters.</p>
<label for="confirm">Repeat the password</label>
<input id="confirm" name="confirm" type="password" autocomplete="new-password" required>
<button type="submit">Set password and sign in</button>
</form></div>"#,
        msg = message
            .map(|m| notice("error", &esc(&m)))
            .unwrap_or_default(),
        csrf = csrf_field(csrf),
        token = esc(token),
        email = esc(email),
        min = members::PASSWORD_MIN,
        max = members::PASSWORD_MAX,
    );
    page("Set your password", None, "", &body)
}

fn dead_link() -> Response {
    html(
        StatusCode::NOT_FOUND,
        page(
            "Link not valid",
            None,
            "",
            r#"<p>This sign-in link has expired or was already used. Ask an owner of your organisation (or the service's operators) for a new one.</p><p><a href="/dashboard/sign-in">Sign in</a></p>"#,
        ),
    )
}

/// GET /dashboard/sign-in/link?token=…
pub async fn link_form(State(state): State<DashboardState>, req: Request) -> DashResult {
    if !state.config.enabled {
        return Err(DashError::Disabled);
    }
    let q = query(req.uri());
    let token = q.get("token").unwrap_or("");
    let Some((_, _, email)) = members::open_link(&state.db, token).await? else {
        return Ok(dead_link());
    };
    let csrf = members::new_token();
    Ok(with_pre_csrf(
        &state,
        StatusCode::OK,
        &csrf,
        link_page(token, &email, &csrf, None),
    ))
}

/// POST /dashboard/sign-in/link
pub async fn link_submit(State(state): State<DashboardState>, req: Request) -> DashResult {
    if !state.config.enabled {
        return Err(DashError::Disabled);
    }
    let (headers, _, body) = body_of(req).await?;
    let form = Form::parse(&body);
    pre_csrf(&headers, &form)?;
    let token = form.get("token").unwrap_or("");
    let Some((_, _, email)) = members::open_link(&state.db, token).await? else {
        return Ok(dead_link());
    };
    let password = form.get("password").unwrap_or("");
    let problem = members::check_new_password(password).err().or_else(|| {
        (form.get("confirm") != Some(password)).then(|| "The two passwords differ.".to_string())
    });
    if let Some(p) = problem {
        return Ok(html(
            StatusCode::BAD_REQUEST,
            link_page(token, &email, form.get("csrf").unwrap_or(""), Some(p)),
        ));
    }
    let hash = members::hash_password(password.to_string())
        .await
        .map_err(DashError::Internal)?;
    let Some((profile, org)) = members::redeem_link(&state.db, token, &hash).await? else {
        return Ok(dead_link());
    };
    let ua = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok());
    let (session, _) = members::create_session(&state.db, &profile, &org, ua).await?;
    Ok(signed_in(&state, &session, "/dashboard/keys"))
}

/// POST /dashboard/sign-out
pub async fn sign_out(
    State(state): State<DashboardState>,
    me: SignedIn,
    body: Bytes,
) -> DashResult {
    me.form(&body)?;
    members::revoke_session(&state.db, &me.0.profile_id, &me.0.session_id).await?;
    let mut r = redirect("/dashboard/sign-in");
    if let Ok(v) = HeaderValue::from_str(&set_cookie(&state.config, SESSION_COOKIE, "", 0)) {
        r.headers_mut().append(header::SET_COOKIE, v);
    }
    Ok(r)
}

/// GET /dashboard/sessions
pub async fn sessions(State(state): State<DashboardState>, me: SignedIn) -> DashResult {
    let m = &me.0;
    let list = members::list_sessions(&state.db, &m.profile_id).await?;
    let mut rows = String::new();
    for s in &list {
        let this = s.id == m.session_id;
        let status = match (&s.revoked_at, this) {
            (Some(at), _) => format!("Revoked {}", esc(&when(at))),
            (None, true) => "This browser".to_string(),
            (None, false) => "Active".to_string(),
        };
        let action = if s.revoked_at.is_none() {
            post_button(
                &format!("/dashboard/sessions/{}/revoke", s.id),
                &m.csrf_token,
                "Revoke",
                "danger small",
                &format!("Revoke session {}", s.id),
            )
        } else {
            String::new()
        };
        rows.push_str(&format!(
            r#"<tr><td data-label="Browser"><span title="{ua}">{short}</span></td><td data-label="Signed in">{created}</td><td data-label="Last seen">{seen}</td><td data-label="Status">{status}</td><td data-label="">{action}</td></tr>"#,
            ua = esc(s.user_agent.as_deref().unwrap_or("unknown")),
            short = esc(&browser_summary(s.user_agent.as_deref().unwrap_or(""))),
            created = esc(&when(&s.created_at)),
            seen = esc(&when(&s.last_seen_at)),
        ));
    }
    let body = format!(
        r#"<p>Where you are signed in as <strong>{email}</strong>. Revoking a session signs that browser out at its next request. Sessions end after {days} days without use.</p>
<div class="table-wrap"><table class="stack"><caption class="sr-only">Your sessions</caption>
<thead><tr><th scope="col">Browser</th><th scope="col">Signed in</th><th scope="col">Last seen</th><th scope="col">Status</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
<tbody>{rows}</tbody></table></div>"#,
        email = esc(&m.email),
        days = members::SESSION_IDLE_SECS / 86400,
    );
    Ok(html(
        StatusCode::OK,
        page("Sessions", Some(m), "/dashboard/sessions", &body),
    ))
}

/// POST /dashboard/sessions/{id}/revoke
pub async fn revoke(
    State(state): State<DashboardState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    me.form(&body)?;
    if !members::revoke_session(&state.db, &me.0.profile_id, &id).await? {
        return Err(DashError::NotFound);
    }
    Ok(redirect("/dashboard/sessions"))
}

/// A short "Chrome on Linux" for a session's user-agent string: our own small reading of the
/// common browsers and systems (the full string stays in the cell's `title`). Order matters:
/// Edge, Opera and Samsung Internet also name Chrome; Chrome also names Safari; Android also
/// names Linux; iOS also names Mac OS X.
pub fn browser_summary(ua: &str) -> String {
    let has = |s: &str| ua.contains(s);
    let browser = if has("Edg/") || has("EdgA/") || has("EdgiOS/") {
        Some("Edge")
    } else if has("OPR/") || has("Opera") {
        Some("Opera")
    } else if has("SamsungBrowser/") {
        Some("Samsung Internet")
    } else if has("Firefox/") || has("FxiOS/") {
        Some("Firefox")
    } else if has("Chrome/") || has("CriOS/") || has("Chromium/") {
        Some("Chrome")
    } else if has("Safari/") && has("Version/") {
        Some("Safari")
    } else if ua.starts_with("curl/") {
        Some("curl")
    } else {
        None
    };
    let os = if has("iPhone") || has("iPad") || has("iPod") {
        Some("iOS")
    } else if has("Android") {
        Some("Android")
    } else if has("Windows") {
        Some("Windows")
    } else if has("CrOS") {
        Some("ChromeOS")
    } else if has("Macintosh") || has("Mac OS X") {
        Some("macOS")
    } else if has("Linux") || has("X11") {
        Some("Linux")
    } else {
        None
    };
    match (browser, os) {
        (Some(b), Some(o)) => format!("{b} on {o}"),
        (Some(b), None) => b.to_string(),
        (None, Some(o)) => format!("A browser on {o}"),
        (None, None) if ua.trim().is_empty() => "Unknown browser".to_string(),
        (None, None) => "Other browser".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::browser_summary;

    #[test]
    fn summarises_common_user_agents() {
        let cases = [
            (
                "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
                "Chrome on Linux",
            ),
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
                "Edge on Windows",
            ),
            (
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15",
                "Safari on macOS",
            ),
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1",
                "Safari on iOS",
            ),
            (
                "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
                "Chrome on Android",
            ),
            (
                "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0",
                "Firefox on Linux",
            ),
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36 OPR/115.0.0.0",
                "Opera on Windows",
            ),
            ("curl/8.5.0", "curl"),
            ("", "Unknown browser"),
            ("something-else/1.0", "Other browser"),
        ];
        for (ua, want) in cases {
            assert_eq!(browser_summary(ua), want, "{ua}");
        }
    }
}
