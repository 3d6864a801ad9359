//! Cut-outs beside their sources: the organisation's live cut-outs (`POST
//! /v1/images/{id}/cutout`), newest first, each next to the photo it was cut out of, with
//! how its mask was made. Read-only; its one query is `store::cutouts`.

use axum::extract::State;
use axum::http::StatusCode;

use crate::html::{esc, page, when};
use crate::{DashResult, DashboardState, SignedIn, html, store};

/// Most cut-outs on the page.
const MAX_ROWS: i64 = 200;

/// What each `cutout_method` means, in words.
fn method_words(method: Option<&str>) -> &'static str {
    match method {
        Some("colour_key") => "keyed on its plain background",
        Some("model") => "by the salient-object model (U²-Net-P)",
        Some("source_alpha") => "from the photo's own transparency",
        _ => "",
    }
}

/// GET /dashboard/cutouts
pub async fn list(State(state): State<DashboardState>, me: SignedIn) -> DashResult {
    let m = &me.0;
    let rows = store::cutouts::cutouts(&state.db, &m.org_id, MAX_ROWS).await?;
    let url = |key: &str| esc(&state.blobs.url(key));
    let mut items = String::new();
    for row in &rows {
        let alt = row.alt_text.as_deref().unwrap_or("");
        items.push_str(&format!(
            r#"<li class="card cutout" id="{id}"><figure><img src="{src}" alt="{alt_src}" loading="lazy"><figcaption>Source <code>{source}</code></figcaption></figure>
<figure class="checker"><img src="{cut}" alt="{alt_cut}" loading="lazy"><figcaption>Cut-out <code>{id}</code>, {how}, {when}</figcaption></figure></li>"#,
            id = esc(&row.id),
            src = url(row.source_thumb.as_deref().unwrap_or(&row.source_key)),
            alt_src = esc(&format!("Source photo {alt}")),
            source = esc(&row.source_id),
            cut = url(&row.blob_key),
            alt_cut = esc(&format!("The product cut out {alt}")),
            how = method_words(row.cutout_method.as_deref()),
            when = esc(&when(&row.created_at)),
        ));
    }
    let body = if rows.is_empty() {
        r#"<p class="hint">No cut-outs yet. <code>POST /v1/images/{id}/cutout</code> cuts the product out of an uploaded image; ads cut out products for cut-out slots by themselves.</p>"#.to_string()
    } else {
        format!(r#"<ul class="cutouts">{items}</ul>"#)
    };
    Ok(html(
        StatusCode::OK,
        page("Cut-outs", Some(m), "/dashboard/cutouts", &body),
    ))
}
