//! The swipe page's actions: uploads (one request per file from the page's script, or the
//! whole form), archive and restore, and data-source toggles.

use super::*;

/// POST /dashboard/swipe/upload: multipart with `csrf` and one or more `file` parts. The
/// page's script sends one file per request; the plain form sends them all at once.
pub async fn upload(State(state): State<AppState>, me: SignedIn, req: Request) -> DashResult {
    let m = &me.0;
    let bad = |why: String| {
        html(
            StatusCode::BAD_REQUEST,
            page(
                "Swipe file",
                Some(m),
                "/dashboard/swipe",
                &notice("error", &format!("<p>{}</p>", esc(&why))),
            ),
        )
    };
    let Ok(mut mp) = Multipart::from_request(req, &()).await else {
        return Err(DashError::Csrf);
    };
    let mut csrf = None;
    let mut files: Vec<(String, Bytes)> = Vec::new();
    loop {
        let field = match mp.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => return Ok(bad(format!("The upload was cut short or malformed: {e}"))),
        };
        let name = field.name().unwrap_or("").to_string();
        let file_name = field.file_name().unwrap_or("").to_string();
        let data = match field.bytes().await {
            Ok(d) => d,
            Err(e) => return Ok(bad(format!("The upload was cut short or malformed: {e}"))),
        };
        match name.as_str() {
            "csrf" => csrf = Some(String::from_utf8_lossy(&data).into_owned()),
            "file" if !(data.is_empty() && file_name.is_empty()) => {
                files.push((file_name, data));
            }
            _ => {}
        }
    }
    match csrf {
        Some(t) if crate::same_secret(&t, &m.csrf_token) => {}
        _ => return Err(DashError::Csrf),
    }
    let uri: Uri = "/dashboard/swipe".parse().unwrap_or_default();
    if files.is_empty() {
        let flash = notice("error", "<p>Choose at least one image to upload.</p>");
        return render(&state, m, &uri, StatusCode::BAD_REQUEST, flash).await;
    }
    if let Err(e) = state.models.require() {
        let flash = error_box(&e);
        return render(&state, m, &uri, e.code.status(), flash).await;
    }
    let mut ok = 0usize;
    let mut failed = String::new();
    for (name, bytes) in files {
        match swipe_files::create(
            &state.db,
            &state.blobs,
            (Some(&m.org_id), None),
            "upload",
            bytes,
            Some(state.jobs.clone()),
        )
        .await
        {
            Ok(row) => {
                ok += 1;
                tracing::info!(swipe_file_id = %row.id, profile_id = %m.profile_id, "swipe file uploaded in the dashboard");
            }
            Err(e) => {
                let _ = write!(
                    failed,
                    "<li>{}: {}</li>",
                    esc(if name.is_empty() { "file" } else { &name }),
                    esc(&e.message)
                );
            }
        }
    }
    if failed.is_empty() {
        // All stored: to the grid (a reload there repeats nothing), which says so.
        return Ok(redirect(&format!("/dashboard/swipe?uploaded={ok}")));
    }
    let mut flash = uploaded_notice(ok);
    flash.push_str(&notice(
        "error",
        &format!("<p>Not uploaded:</p><ul>{failed}</ul>"),
    ));
    let status = if ok == 0 {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::ACCEPTED
    };
    render(&state, m, &uri, status, flash).await
}

pub(super) async fn archive_or_restore(
    state: &AppState,
    me: &SignedIn,
    id: &str,
    body: &[u8],
    archive: bool,
) -> DashResult {
    me.form(body)?;
    let m = &me.0;
    if let Err(e) = swipe_files::set_archived(&state.db, &m.org_id, id, archive).await {
        return api_error(m, "Swipe file", "/dashboard/swipe", e);
    }
    Ok(redirect(if archive {
        "/dashboard/swipe"
    } else {
        "/dashboard/swipe?archived=true"
    }))
}

/// POST /dashboard/swipe/{id}/archive
pub async fn archive(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    archive_or_restore(&state, &me, &id, &body, true).await
}

/// POST /dashboard/swipe/{id}/restore
pub async fn restore(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    archive_or_restore(&state, &me, &id, &body, false).await
}

/// POST /dashboard/swipe/sources/{id}: `active` true or false.
pub async fn subscription(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    let form = me.form(&body)?;
    let m = &me.0;
    let active = form.get("active") == Some("true");
    if let Err(e) = swipe_files::subscribe(&state.db, &m.org_id, &id, active).await {
        return api_error(m, "Swipe file", "/dashboard/swipe", e);
    }
    Ok(redirect(&format!("/dashboard/swipe#{id}")))
}
