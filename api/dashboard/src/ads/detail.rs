//! One ad's page: its current PNG, progress while processing, every version, and "Make
//! other sizes" with the ad's set ([`super::sizes`]).

use super::*;

fn version_card(ad_id: &str, v: &ImageAdVersion, current: bool) -> String {
    let visual = match (&v.image_url, v.status.as_str()) {
        (Some(_), _) => format!(
            r#"<img src="/dashboard/ads/{}/thumb?version={n}" width="{w}" height="{h}" alt="Version {n}">"#,
            esc(ad_id),
            w = 480,
            h = match (v.width, v.height) {
                (Some(w), Some(h)) if w > 0 => h * 480 / w,
                _ => 480,
            },
            n = v.version_number
        ),
        (None, "processing") => r#"<div class="placeholder">Rendering…</div>"#.to_string(),
        (None, _) => r#"<div class="placeholder failed">Failed</div>"#.to_string(),
    };
    let download = if v.image_url.is_some() {
        format!(
            r#" · <a href="/dashboard/ads/{}/download?version={n}" download>Download PNG</a>"#,
            esc(ad_id),
            n = v.version_number
        )
    } else {
        String::new()
    };
    format!(
        r#"<li class="version{cur}" id="version-{n}"><figure>{visual}<figcaption><strong>Version {n}</strong>{curl} <span class="status {st}">{stl}</span><br><small>{created}</small>{download}{summary}</figcaption></figure></li>"#,
        cur = if current { " current" } else { "" },
        curl = if current { " (current)" } else { "" },
        n = v.version_number,
        st = esc(&v.status),
        stl = esc(status_label(&v.status)),
        created = esc(&when(&v.created_at)),
        summary = v
            .change_summary
            .as_deref()
            .map(|t| format!(r#"<br><span class="summary">{}</span>"#, esc(t)))
            .unwrap_or_default(),
    )
}

/// GET /dashboard/ads/{id} (`?sized=N` after "Make other sizes" made N ads).
pub async fn detail(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    uri: Uri,
) -> DashResult {
    let sized = query(&uri)
        .get("sized")
        .and_then(|n| n.parse::<usize>().ok());
    let note = sized.map(|n| {
        (
            StatusCode::OK,
            format!("{n} new sizes are being made; they appear under \"This ad's sizes\"."),
        )
    });
    page(&state, &me.0, &id, note).await
}

/// The ad's page; `message` is a notice with the page's status (an error of the "Make other
/// sizes" form when the status is not 200).
pub(super) async fn page(
    state: &AppState,
    m: &SessionMember,
    id: &str,
    message: Option<(StatusCode, String)>,
) -> DashResult {
    let id = id.to_string();
    let ad = image_ads::get(&state.db, &state.jobs, &m.org_id, &id)
        .await
        .map_err(dash)?;
    let versions = image_ads::versions(&state.db, &m.org_id, &id)
        .await
        .map_err(dash)?;
    let cat = catalog(&state.db, &m.org_id).await?;
    let processing = ad.status == "processing";
    let mut urls: Vec<&str> = Vec::new();
    if let Some(u) = &ad.image_url {
        urls.push(u);
    }
    let main = match &ad.image_url {
        Some(url) => format!(
            r#"<img src="{}" width="{w}" height="{h}" alt="The ad's current image">"#,
            esc(url),
            w = 480,
            h = match (ad.width, ad.height) {
                (Some(w), Some(h)) if w > 0 => h * 480 / w,
                _ => 480,
            }
        ),
        None if processing => format!(r#"<div class="placeholder">{}</div>"#, progress_html(&ad)),
        None => r#"<div class="placeholder failed">No image</div>"#.to_string(),
    };
    let named = |list: &Named, id: &str| match name_of(list, id) {
        Some(n) => format!("{} <small><code>{}</code></small>", esc(n), esc(id)),
        None => format!("<code>{}</code>", esc(id)),
    };
    let mut fields = String::new();
    let mut row = |label: &str, value: String| {
        let _ = write!(fields, "<div><dt>{}</dt><dd>{value}</dd></div>", esc(label));
    };
    row(
        "Status",
        format!(
            r#"<span class="status {}" id="ad-status">{}</span>{}"#,
            esc(&ad.status),
            esc(status_label(&ad.status)),
            if processing {
                progress_html(&ad)
            } else {
                String::new()
            }
        ),
    );
    if let Some(e) = &ad.error {
        row(
            "Error",
            format!("<code>{}</code> {}", esc(&e.code), esc(&e.message)),
        );
    }
    row("Brand", named(&cat.brands, &ad.brand_id));
    row("Product", named(&cat.products, &ad.product_id));
    row("Audience", named(&cat.audiences, &ad.audience_id));
    if let Some(v) = &ad.product_variant_id {
        row("Variant", named(&cat.variants, v));
    }
    row(
        "Kind",
        if ad.editable {
            "Editable (PNG and JSON tree)".to_string()
        } else {
            "Flat (PNG)".to_string()
        },
    );
    row(
        "Reference",
        format!(
            r#"<a href="{u}" rel="noreferrer">{u}</a>"#,
            u = esc(&ad.reference_ad_url)
        ),
    );
    if let Some(p) = &ad.prompt {
        row("Prompt", esc(p));
    }
    if let (Some(w), Some(h)) = (ad.width, ad.height) {
        row("Size", format!("{w} × {h} px"));
    }
    row("Created", esc(&when(&ad.created_at)));
    if let Some(c) = &ad.completed_at {
        row("Completed", esc(&when(c)));
    }
    let mut actions = String::new();
    if ad.image_url.is_some() {
        let _ = write!(
            actions,
            r#"<a class="button" href="/dashboard/ads/{}/download" download>Download PNG</a> "#,
            esc(&ad.id)
        );
    }
    if ad.editable && ad.status == "completed" {
        let _ = write!(
            actions,
            r#"<a class="button secondary" href="/dashboard/ads/{0}/edit">Open in the editor</a> <a class="button secondary" href="/dashboard/ads/{0}/edit/form">Edit texts, colours and images</a>"#,
            esc(&ad.id)
        );
    } else if ad.editable && processing {
        actions.push_str(
            r#"<span class="hint">The editor opens once this version has completed.</span>"#,
        );
    }
    let versions_html = if ad.editable {
        let current = versions.last().map_or(0, |v| v.version_number);
        let mut cards = String::new();
        for v in &versions {
            if let Some(u) = &v.image_url {
                urls.push(u);
            }
            if v.status == "processing" {
                // A version renders: keep refreshing even if the ad row says otherwise.
            }
            cards.push_str(&version_card(&ad.id, v, v.version_number == current));
        }
        if versions.is_empty() {
            cards.push_str(
                r#"<li class="empty">The first version appears when the ad completes.</li>"#,
            );
        }
        format!(
            r#"<section aria-labelledby="versions-h"><h2 id="versions-h">Versions</h2><ul class="versions">{cards}</ul></section>"#
        )
    } else {
        String::new()
    };
    let (status, problem, flash) = match message {
        Some((s, text)) if s == StatusCode::OK => {
            (s, None, notice("ok", &format!("<p>{}</p>", esc(&text))))
        }
        Some((s, text)) => (s, Some(text), String::new()),
        None => (StatusCode::OK, None, String::new()),
    };
    let mut set_urls = Vec::new();
    let (sizes_html, set_processing) =
        super::sizes::section(state, m, &ad, problem.as_deref(), &mut set_urls).await?;
    urls.extend(set_urls.iter().map(String::as_str));
    let any_processing =
        processing || set_processing || versions.iter().any(|v| v.status == "processing");
    let body = format!(
        r#"{note}{flash}<p><a href="/dashboard/ads">← All ads</a></p>
<div class="ad-detail"><div class="ad-main">{main}</div>
<div><dl class="fields">{fields}</dl><p class="actions">{actions}</p></div></div>
{versions_html}{sizes_html}"#,
        note = refresh_note(any_processing),
    );
    let title = format!("Ad {}", ad.id);
    let origins = origins(urls.into_iter());
    Ok(html_with_images(
        status,
        page_with_head(
            &title,
            Some(m),
            "/dashboard/ads",
            &body,
            &refresh_head(any_processing, &format!("/dashboard/ads/{}", ad.id)),
        ),
        &origins,
    ))
}
