//! "Make other sizes" on an ad's page (issue 42, item 4): the named placements as
//! checkboxes, posted to `/dashboard/ads/{id}/sizes`, which calls
//! `image_ads::resize` (what POST /v1/image-ads/{id}/resize calls), so the price, the
//! wallet check and every error are the API's; then the ad's set (its siblings, listed by
//! `size_set_id` through `image_ads::list`) on the same page.

use adforge_worker::protocol::PLACEMENTS;

use super::*;
use crate::Form;

/// The most siblings the set's section lists (a set holds at most 1 + 10 sizes a resize).
const SET_SHOWN: i64 = 100;

/// A size's label: the placement's name, else `W×H`.
pub(crate) fn size_label(ad: &ImageAd) -> Option<String> {
    ad.size.as_ref().map(|s| {
        s.placement
            .clone()
            .unwrap_or_else(|| format!("{}x{}", s.width, s.height))
    })
}

/// The placement checkboxes of a form, `checked` ticked; ids start with `prefix`.
pub(crate) fn placement_checks(prefix: &str, checked: &[&str]) -> String {
    let mut out = String::new();
    for (i, (name, w, h)) in PLACEMENTS.iter().enumerate() {
        let on = if checked.contains(name) {
            " checked"
        } else {
            ""
        };
        let _ = write!(
            out,
            r#"<label class="check" for="{prefix}-{i}"><input type="checkbox" id="{prefix}-{i}" name="size" value="{v}"{on}> <span>{v} <small class="hint">{w} × {h}</small></span></label>"#,
            v = esc(name),
        );
    }
    out
}

/// The ad page's "Make other sizes" form (completed ads only) and its set's ads.
///
/// # Errors
/// Database failures of the set's list.
pub(crate) async fn section(
    state: &AppState,
    m: &SessionMember,
    ad: &ImageAd,
    problem: Option<&str>,
    urls: &mut Vec<String>,
) -> Result<(String, bool), DashError> {
    let mut out = String::new();
    let mut processing = false;
    if ad.status == "completed" {
        let price = if ad.editable {
            adforge_api::wallet::EDITABLE_IMAGE_AD_CENTS
        } else {
            adforge_api::wallet::FLAT_IMAGE_AD_CENTS
        };
        let _ = write!(
            out,
            r#"<section class="card" aria-labelledby="sizes-h" id="sizes"><h2 id="sizes-h">Make other sizes</h2>{problem}
<p class="hint">Each size is a new {kind} ad with this ad's words, brand and product, laid out again for its shape ({price} each, held now and charged when it completes).</p>
<form method="post" action="/dashboard/ads/{id}/sizes">{csrf}<fieldset><legend>Placements</legend><div class="scopes">{checks}</div></fieldset>
<button type="submit">Make these sizes</button></form></section>"#,
            problem = problem
                .map(|p| notice("error", &format!("<p>{p}</p>")))
                .unwrap_or_default(),
            kind = if ad.editable { "editable" } else { "flat" },
            price = adforge_api::wallet::dollars(price),
            id = esc(&ad.id),
            csrf = csrf_field(&m.csrf_token),
            checks = placement_checks("size", &[]),
        );
    }
    let Some(set_id) = &ad.size_set_id else {
        return Ok((out, false));
    };
    let filter = image_ads::ImageAdFilter {
        size_set_id: Some(vec![set_id.clone()]),
        ..Default::default()
    };
    let p = ListParams {
        limit: SET_SHOWN,
        starting_after: None,
        ids: None,
        facets: vec![],
    };
    let set = image_ads::list(&state.db, &state.jobs, &m.org_id, &filter, &p)
        .await
        .map_err(dash)?;
    let mut cards = String::new();
    for sib in set.items.iter().rev() {
        processing |= sib.status == "processing";
        let label = size_label(sib).unwrap_or_else(|| "Own size".to_string());
        let visual = match &sib.image_url {
            Some(url) => {
                urls.push(url.clone());
                let h = match (sib.width, sib.height) {
                    (Some(w), Some(h)) if w > 0 => h * 160 / w,
                    _ => 160,
                };
                format!(
                    r#"<img src="/dashboard/ads/{}/thumb?of={}" width="160" height="{h}" loading="lazy" alt="{} size">"#,
                    esc(&sib.id),
                    esc(url.rsplit('/').next().unwrap_or("")),
                    esc(&label)
                )
            }
            None if sib.status == "processing" => {
                format!(r#"<div class="placeholder">{}</div>"#, progress_html(sib))
            }
            None => r#"<div class="placeholder failed">Failed</div>"#.to_string(),
        };
        let this = if sib.id == ad.id { " (this ad)" } else { "" };
        let _ = write!(
            cards,
            r#"<li class="ad-card" id="set-{id}"><a href="/dashboard/ads/{id}" class="thumb">{visual}</a><div class="ad-meta"><a href="/dashboard/ads/{id}"><strong>{label}</strong></a>{this} <span class="status {st}">{stl}</span></div></li>"#,
            id = esc(&sib.id),
            label = esc(&label),
            st = esc(&sib.status),
            stl = esc(status_label(&sib.status)),
        );
    }
    let _ = write!(
        out,
        r#"<section aria-labelledby="set-h" id="set"><h2 id="set-h">This ad's sizes</h2><p class="hint">{n} ads in campaign set <code>{set}</code>.</p><ul class="gallery set">{cards}</ul></section>"#,
        n = set.total_count,
        set = esc(set_id),
    );
    Ok((out, processing))
}

/// POST /dashboard/ads/{id}/sizes: the checked placements through `image_ads::resize`; an
/// error is shown on the ad's page, on the form.
pub async fn make_sizes(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    let form: Form = me.form(&body)?;
    let m = &me.0;
    let sizes: Vec<Value> = form
        .all("size")
        .into_iter()
        .map(|s| Value::String(s.to_string()))
        .collect();
    if sizes.is_empty() {
        return super::detail::page(
            &state,
            m,
            &id,
            Some((
                StatusCode::BAD_REQUEST,
                "Choose at least one placement to make.".to_string(),
            )),
        )
        .await;
    }
    match image_ads::resize(&state, &m.org_id, &id, &sizes).await {
        Ok(ads) => {
            tracing::info!(ad_id = %id, sizes = ads.len(), profile_id = %m.profile_id, "other sizes made in the dashboard");
            Ok(redirect(&format!(
                "/dashboard/ads/{}?sized={}#set",
                form_urlencoded::byte_serialize(id.as_bytes()).collect::<String>(),
                ads.len()
            )))
        }
        Err(e) if e.code == ErrorCode::ImageAdNotFound => Err(DashError::NotFound),
        Err(e) => {
            let problem = api_message(e)?;
            super::detail::page(&state, m, &id, Some(problem)).await
        }
    }
}
