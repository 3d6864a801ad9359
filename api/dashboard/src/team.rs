//! Members of the organisation; owners invite people (the same [`members::add_member`] as
//! `adforge admin member add`), and the one-time sign-in link is shown once, to hand over.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;

use crate::DashboardState;
use crate::html::{csrf_field, esc, notice, page, when};
use crate::members::{self, Role, SessionMember};
use crate::{DashError, DashResult, SignedIn, html};

async fn render(
    state: &DashboardState,
    m: &SessionMember,
    status: StatusCode,
    flash: Option<String>,
) -> DashResult {
    let list = members::list_members(&state.db, &m.org_id).await?;
    let mut rows = String::new();
    for p in &list {
        rows.push_str(&format!(
            r#"<tr><td data-label="Name">{}</td><td data-label="Email">{}</td><td data-label="Role">{}</td><td data-label="Since">{}</td><td data-label="Password">{}</td></tr>"#,
            esc(&p.name),
            esc(&p.email),
            p.role.as_str(),
            esc(&when(&p.since)),
            if p.has_password { "set" } else { "invited" },
        ));
    }
    let invite = if m.role == Role::Owner {
        format!(
            r#"<section class="card" aria-labelledby="invite-h"><h2 id="invite-h">Invite someone</h2>
<form method="post" action="/dashboard/members" class="grid-form">{csrf}
<div><label for="inv-email">Email</label><input id="inv-email" name="email" type="email" required></div>
<div><label for="inv-name">Name</label><input id="inv-name" name="name" maxlength="100"></div>
<div><label for="inv-role">Role</label><select id="inv-role" name="role"><option value="member">Member</option><option value="owner">Owner</option></select></div>
<div><button type="submit">Create sign-in link</button></div></form>
<p class="hint">The link is shown once and works once, for {hours} hours; send it to the person yourself.</p></section>"#,
            csrf = csrf_field(&m.csrf_token),
            hours = members::LINK_TTL_SECS / 3600,
        )
    } else {
        r#"<p class="hint">Owners of the organisation can invite members.</p>"#.to_string()
    };
    let body = format!(
        r#"{flash}<div class="table-wrap"><table class="stack"><caption class="sr-only">Members of {org}</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Since</th><th scope="col">Password</th></tr></thead>
<tbody>{rows}</tbody></table></div>{invite}"#,
        flash = flash.unwrap_or_default(),
        org = esc(&m.org_name),
    );
    Ok(html(
        status,
        page("Members", Some(m), "/dashboard/members", &body),
    ))
}

/// GET /dashboard/members
pub async fn list(State(state): State<DashboardState>, me: SignedIn) -> DashResult {
    render(&state, &me.0, StatusCode::OK, None).await
}

/// POST /dashboard/org: work in another of the member's organisations.
pub async fn switch_org(
    State(state): State<DashboardState>,
    me: SignedIn,
    body: Bytes,
) -> DashResult {
    let form = me.form(&body)?;
    let org = form.get("org").unwrap_or("");
    if !members::switch_org(&state.db, &me.0.session_id, &me.0.profile_id, org).await? {
        return Err(DashError::NotFound);
    }
    Ok(crate::redirect("/dashboard/keys"))
}

/// POST /dashboard/members (owners only)
pub async fn invite(State(state): State<DashboardState>, me: SignedIn, body: Bytes) -> DashResult {
    let form = me.form(&body)?;
    let m = &me.0;
    if m.role != Role::Owner {
        return Err(DashError::Forbidden(
            "Only owners of the organisation can invite members.",
        ));
    }
    let role = Role::parse(form.get("role").unwrap_or("member")).unwrap_or(Role::Member);
    let added = members::add_member(
        &state.db,
        &m.org_id,
        form.get("email").unwrap_or(""),
        form.get("name"),
        role,
        false,
    )
    .await;
    match added {
        Ok(a) => {
            let link = members::link_url(&state.config.public_url, &a.link_token);
            let flash = notice(
                "ok",
                &format!(
                    r#"<p><strong>Send this link to {email}; it is shown only now.</strong></p><label for="invite-link">Sign-in link</label><textarea id="invite-link" class="secret" readonly rows="3" spellcheck="false">{link}</textarea>"#,
                    email = esc(&a.email),
                    link = esc(&link),
                ),
            );
            render(&state, m, StatusCode::CREATED, Some(flash)).await
        }
        Err(members::MemberError::Invalid(msg)) => {
            render(
                &state,
                m,
                StatusCode::BAD_REQUEST,
                Some(notice("error", &esc(&msg))),
            )
            .await
        }
        Err(members::MemberError::Db(e)) => Err(e.into()),
    }
}
