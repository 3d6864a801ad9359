//! API keys: list (scopes, last used, state), create with chosen scopes (the secret shown
//! once, on the answer to the POST, never in a URL), rotate and revoke. Every member of the
//! organisation may manage its keys. Rotation: a new key with the same scopes; the old
//! secret keeps working for [`adforge_api::auth::ROTATION_GRACE_SECS`] (24 hours), long enough to
//! deploy the new one everywhere, short enough that a leaked key does not linger.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use crate::html::{esc, notice, page, post_button, when};
use crate::members::SessionMember;
use crate::{DashError, DashResult, SignedIn, html, redirect};
use adforge_api::auth::{self, Grants, Scope};
use adforge_api::state::AppState;

fn scope_list(g: &Grants) -> String {
    match g {
        Grants::All => r#"<span class="badge">all scopes</span>"#.to_string(),
        Grants::Some(list) => list
            .iter()
            .map(|s| format!("<code>{}</code>", esc(s.name())))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

fn create_form(csrf: &str, error: Option<&str>) -> String {
    let mut boxes = String::new();
    for s in Scope::ALL {
        let id = format!("scope-{}", s.name().replace([':', '_'], "-"));
        boxes.push_str(&format!(
            r#"<label class="check" for="{id}"><input type="checkbox" id="{id}" name="scope" value="{v}"> <code>{v}</code></label>"#,
            v = esc(s.name()),
        ));
    }
    format!(
        r#"<section class="card" aria-labelledby="create-h"><h2 id="create-h">Create a key</h2>
{err}<form method="post" action="/dashboard/keys">{csrf}
<fieldset><legend>Scopes</legend>
<label class="check" for="scope-all"><input type="checkbox" id="scope-all" name="scope" value="all"> <span><strong>All scopes</strong>, including scopes added later</span></label>
<div class="scopes">{boxes}</div></fieldset>
<button type="submit">Create key</button></form></section>"#,
        err = error.map(|e| notice("error", &esc(e))).unwrap_or_default(),
        csrf = crate::html::csrf_field(csrf),
    )
}

/// The keys page, with an optional notice (the new secret) and form error on top.
async fn render(
    state: &AppState,
    m: &SessionMember,
    status: StatusCode,
    flash: Option<String>,
    form_error: Option<&str>,
) -> DashResult {
    let keys = auth::list_keys(&state.db, &m.org_id).await?;
    let mut rows = String::new();
    for k in &keys {
        let state_text = match (&k.revoked_at, &k.expires_at) {
            (Some(at), _) => format!("Revoked {}", when(at)),
            (None, Some(until)) if !k.is_active() => format!("Expired {}", when(until)),
            (None, Some(until)) => format!("Rotated: works until {}", when(until)),
            (None, None) => "Active".to_string(),
        };
        let actions = if k.is_active() {
            let rotate = if k.expires_at.is_none() {
                post_button(
                    &format!("/dashboard/keys/{}/rotate", k.id),
                    &m.csrf_token,
                    "Rotate",
                    "small",
                    &format!("Rotate key ending {}", k.last4),
                )
            } else {
                String::new()
            };
            format!(
                "{rotate}{}",
                post_button(
                    &format!("/dashboard/keys/{}/revoke", k.id),
                    &m.csrf_token,
                    "Revoke",
                    "danger small",
                    &format!("Revoke key ending {}", k.last4),
                )
            )
        } else {
            String::new()
        };
        rows.push_str(&format!(
            r#"<tr id="{id}"><td data-label="Key"><code>svc_live_…{last4}</code><br><small>{id}</small></td><td data-label="Scopes" class="scope-cell">{scopes}</td><td data-label="Created">{created}</td><td data-label="Last used">{used}</td><td data-label="State">{st}</td><td data-label="" class="actions">{actions}</td></tr>"#,
            id = esc(&k.id),
            last4 = esc(&k.last4),
            scopes = scope_list(&k.grants),
            created = esc(&when(&k.created_at)),
            used = k
                .last_used_at
                .as_deref()
                .map_or_else(|| "never".to_string(), |t| esc(&when(t))),
            st = esc(&state_text),
        ));
    }
    if keys.is_empty() {
        rows.push_str(r#"<tr><td colspan="6">No keys yet.</td></tr>"#);
    }
    let body = format!(
        r#"{flash}<p>Keys authenticate calls to the API (<code>X-API-Key</code>). A key's secret is shown once, when it is made. "Last used" is kept to the minute; a revoked key stops working within seconds. Rotating makes a new key with the same scopes; the old one keeps working for {grace} hours.</p>
<div class="table-wrap"><table class="stack"><caption class="sr-only">API keys of {org}</caption>
<thead><tr><th scope="col">Key</th><th scope="col">Scopes</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">State</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
<tbody>{rows}</tbody></table></div>
{form}"#,
        flash = flash.unwrap_or_default(),
        grace = auth::ROTATION_GRACE_SECS / 3600,
        org = esc(&m.org_name),
        form = create_form(&m.csrf_token, form_error),
    );
    Ok(html(
        status,
        page("API keys", Some(m), "/dashboard/keys", &body),
    ))
}

fn secret_notice(secret: &str, extra: &str) -> String {
    notice(
        "ok",
        &format!(
            r#"<p><strong>Copy this key now; it will not be shown again.</strong></p>
<label for="new-secret">New API key</label>
<textarea id="new-secret" class="secret" readonly rows="2" spellcheck="false">{s}</textarea>{extra}"#,
            s = esc(secret),
        ),
    )
}

/// GET /dashboard/keys
pub async fn list(State(state): State<AppState>, me: SignedIn) -> DashResult {
    render(&state, &me.0, StatusCode::OK, None, None).await
}

/// POST /dashboard/keys
pub async fn create(State(state): State<AppState>, me: SignedIn, body: Bytes) -> DashResult {
    let form = me.form(&body)?;
    let m = &me.0;
    let chosen = form.all("scope");
    let grants = if chosen.contains(&"all") {
        Ok(Grants::All)
    } else {
        Grants::parse_list(&chosen.join(","))
    };
    let grants = match grants {
        Ok(g) => g,
        Err(_) => {
            return render(
                &state,
                m,
                StatusCode::BAD_REQUEST,
                None,
                Some("Choose at least one scope, or all scopes."),
            )
            .await;
        }
    };
    let mut tx = state.db.begin_write().await?;
    let key = auth::issue_key(&mut tx, &m.org_id, &grants, None, Some(&m.profile_id), None).await?;
    tx.commit().await?;
    tracing::info!(key_id = %key.id, profile_id = %m.profile_id, "API key created in the dashboard");
    render(
        &state,
        m,
        StatusCode::CREATED,
        Some(secret_notice(&key.secret, "")),
        None,
    )
    .await
}

/// POST /dashboard/keys/{id}/revoke
pub async fn revoke(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    me.form(&body)?;
    auth::revoke_key(&state.db, Some(&me.0.org_id), &id)
        .await?
        .ok_or(DashError::NotFound)?;
    // Refused from the next request on in this process; other API nodes within the
    // cache's time (`auth::KEY_CACHE_TTL`).
    state.keys.forget_key(&id);
    Ok(redirect("/dashboard/keys"))
}

/// POST /dashboard/keys/{id}/rotate
pub async fn rotate(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    me.form(&body)?;
    let m = &me.0;
    let (key, until) = auth::rotate_key(&state.db, &m.org_id, &id, Some(&m.profile_id))
        .await?
        .ok_or(DashError::NotFound)?;
    let extra = format!(
        "<p>The old key keeps working until {}.</p>",
        esc(&when(&until))
    );
    render(
        &state,
        m,
        StatusCode::CREATED,
        Some(secret_notice(&key.secret, &extra)),
        None,
    )
    .await
}
