//! A batch's page: status, progress, counts and charges (`image_ad_batches::get`), its ads
//! (`image_ads::list` with `batch_id`, every page of them: a batch holds at most
//! `MAX_ADS`) filtered by `?size=` and `?product=`, the ZIP (`zip_stream`, the same stream
//! as GET /v1/image-ad-batches/{id}/download) and cancel (`image_ad_batches::cancel`).

use super::*;
use crate::ads::{REFRESH_SECS, size_label};
use crate::html::csrf_field;
use crate::store::catalog::catalog;
use crate::{html_with_images, redirect};
use adforge_api::resources::image_ads::{self, ImageAd, ImageAdFilter};
use axum::body::Bytes;
use axum::extract::Path;
use axum::http::header;
use axum::response::IntoResponse;

/// Width of an ad's thumbnail on the page, CSS pixels.
const THUMB: i64 = 200;
/// Ads read per list call.
const READ_PAGE: i64 = 100;

/// Every ad of the batch, oldest first (the batch's item order).
async fn batch_ads(
    state: &AppState,
    m: &SessionMember,
    id: &str,
) -> Result<Vec<ImageAd>, DashError> {
    let filter = ImageAdFilter {
        batch_id: Some(vec![id.to_string()]),
        ..Default::default()
    };
    let mut out: Vec<ImageAd> = Vec::new();
    loop {
        let p = ListParams {
            limit: READ_PAGE,
            starting_after: out.last().map(|a| a.id.clone()),
            ids: None,
            facets: vec![],
        };
        let page = image_ads::list(&state.db, &state.jobs, &m.org_id, &filter, &p)
            .await
            .map_err(dash)?;
        let more = page.has_more && !page.items.is_empty();
        out.extend(page.items);
        if !more {
            break;
        }
    }
    out.reverse();
    Ok(out)
}

/// A `<select>` of a filter: "All" and each value with its count, `current` selected.
fn filter_select(
    id: &str,
    name: &str,
    label: &str,
    all: &str,
    values: &[(String, String, usize)],
    current: &str,
) -> String {
    let mut opts = format!(r#"<option value="">{}</option>"#, esc(all));
    for (v, text, n) in values {
        let sel = if v == current { " selected" } else { "" };
        let _ = write!(
            opts,
            r#"<option value="{}"{sel}>{} ({n})</option>"#,
            esc(v),
            esc(text)
        );
    }
    format!(
        r#"<div><label for="{id}">{label}</label><select id="{id}" name="{name}">{opts}</select></div>"#
    )
}

fn card(ad: &ImageAd, product: &str, urls: &mut Vec<String>) -> String {
    let size = size_label(ad).unwrap_or_else(|| "Own size".to_string());
    let visual = match (&ad.image_url, ad.status.as_str()) {
        (Some(url), _) => {
            urls.push(url.clone());
            let h = match (ad.width, ad.height) {
                (Some(w), Some(h)) if w > 0 => h * THUMB / w,
                _ => THUMB,
            };
            format!(
                r#"<img src="/dashboard/ads/{}/thumb?of={}" width="{THUMB}" height="{h}" loading="lazy" decoding="async" alt="{} ad, {}">"#,
                esc(&ad.id),
                esc(url.rsplit('/').next().unwrap_or("")),
                esc(product),
                esc(&size)
            )
        }
        (None, "processing") => format!(
            r#"<div class="placeholder">{}</div>"#,
            crate::ads::progress_html(ad)
        ),
        (None, _) => {
            let why = ad.error.as_ref().map_or("No image", |e| e.message.as_str());
            format!(r#"<div class="placeholder failed">{}</div>"#, esc(why))
        }
    };
    let st = if ad
        .error
        .as_ref()
        .is_some_and(|e| e.code == image_ad_batches::CANCELLED)
    {
        "cancelled"
    } else {
        ad.status.as_str()
    };
    format!(
        r#"<li class="ad-card" id="{id}"><a href="/dashboard/ads/{id}" class="thumb">{visual}</a>
<div class="ad-meta"><a href="/dashboard/ads/{id}"><strong>{product}</strong></a> <span class="status {st}">{stl}</span><br><small>{size} · {id}</small></div></li>"#,
        id = esc(&ad.id),
        product = esc(product),
        size = esc(&size),
        st = esc(st),
        stl = esc(status_label(st)),
    )
}

/// GET /dashboard/batches/{id}?size=&product=
pub(super) async fn show(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    uri: Uri,
) -> DashResult {
    render(&state, &me.0, &id, &uri, None).await
}

async fn render(
    state: &AppState,
    m: &SessionMember,
    id: &str,
    uri: &Uri,
    problem: Option<(StatusCode, String)>,
) -> DashResult {
    let b = image_ad_batches::get(&state.db, &m.org_id, id)
        .await
        .map_err(dash)?;
    let ads = batch_ads(state, m, id).await?;
    let cat = catalog(&state.db, &m.org_id).await?;
    let q = query(uri);
    let want_size = q.get("size").unwrap_or("").trim().to_string();
    let want_product = q.get("product").unwrap_or("").trim().to_string();
    let product_name = |pid: &str| {
        cat.products
            .iter()
            .find(|(i, _, _)| i == pid)
            .map_or_else(|| pid.to_string(), |(_, n, _)| n.clone())
    };

    // The filters' options: every size and product among the batch's ads, with counts.
    let mut sizes: Vec<(String, String, usize)> = Vec::new();
    let mut products: Vec<(String, String, usize)> = Vec::new();
    for ad in &ads {
        let s = size_label(ad).unwrap_or_default();
        match sizes.iter_mut().find(|(v, _, _)| *v == s) {
            Some(e) => e.2 += 1,
            None => sizes.push((
                s.clone(),
                if s.is_empty() {
                    "Own size".to_string()
                } else {
                    s.clone()
                },
                1,
            )),
        }
        match products.iter_mut().find(|(v, _, _)| *v == ad.product_id) {
            Some(e) => e.2 += 1,
            None => products.push((ad.product_id.clone(), product_name(&ad.product_id), 1)),
        }
    }
    let shown: Vec<&ImageAd> = ads
        .iter()
        .filter(|a| want_size.is_empty() || size_label(a).unwrap_or_default() == want_size)
        .filter(|a| want_product.is_empty() || a.product_id == want_product)
        .collect();

    let mut urls = Vec::new();
    let mut cards = String::new();
    for ad in &shown {
        cards.push_str(&card(ad, &product_name(&ad.product_id), &mut urls));
    }
    if shown.is_empty() {
        cards.push_str(r#"<li class="empty">No ads of this batch match.</li>"#);
    }
    let processing = b.status == "processing";
    let c = &b.counts;
    let summary = format!(
        r#"<dl class="fields batch-counts"><div><dt>Status</dt><dd><span class="status {st}" id="batch-status">{stl}</span></dd></div>
<div><dt>Progress</dt><dd>{progress}</dd></div>
<div><dt>Ads</dt><dd><span id="count-completed">{done}</span> completed · <span id="count-processing">{running}</span> processing · <span id="count-failed">{failed}</span> failed · <span id="count-cancelled">{cancelled}</span> cancelled</dd></div>
<div><dt>Charged so far</dt><dd id="batch-charged">{charged} <small>of {total} if every ad completes</small></dd></div>
<div><dt>Kind</dt><dd>{kind}</dd></div><div><dt>Created</dt><dd>{created}</dd></div>{ended}</dl>"#,
        st = esc(&b.status),
        stl = esc(status_label(&b.status)),
        progress = progress_bar(&b),
        done = c.completed,
        running = c.processing,
        failed = c.failed,
        cancelled = c.cancelled,
        charged = money(b.amount_charged.amount),
        total = money(b.total_price.amount),
        kind = if b.editable { "Editable" } else { "Flat" },
        created = esc(&when(&b.created_at)),
        ended = b
            .completed_at
            .as_deref()
            .map(|t| format!("<div><dt>Ended</dt><dd>{}</dd></div>", esc(&when(t))))
            .unwrap_or_default(),
    );
    let download = if c.completed > 0 {
        format!(
            r#"<a class="button" id="batch-download" href="/dashboard/batches/{}/download" download>Download ZIP</a> <span class="hint">{} completed ads, PNG and JPEG, with a CSV manifest{}.</span>"#,
            esc(&b.id),
            c.completed,
            if processing {
                "; download again later for the rest"
            } else {
                ""
            }
        )
    } else {
        r#"<span class="hint">The ZIP download appears when the first ad completes.</span>"#
            .to_string()
    };
    let cancel = if processing {
        format!(
            r#"<form method="post" action="/dashboard/batches/{}/cancel" class="inline">{}<button type="submit" class="secondary danger">Cancel the ads not started</button></form>"#,
            esc(&b.id),
            csrf_field(&m.csrf_token)
        )
    } else {
        String::new()
    };
    let here = uri.query().map_or_else(
        || format!("/dashboard/batches/{}", b.id),
        |q| format!("/dashboard/batches/{}?{q}", b.id),
    );
    let live = if processing {
        format!(
            r#"<p id="live-note" class="hint processing-note" role="status">This batch is processing: each ad appears here as it completes; the page updates itself every {REFRESH_SECS} seconds. <a href="{}">Refresh</a></p>"#,
            esc(&here)
        )
    } else {
        String::new()
    };
    let (status, problem) = match problem {
        Some((s, p)) => (s, notice("error", &format!("<p>{p}</p>"))),
        None => (StatusCode::OK, String::new()),
    };
    let cancelled_note = if q.get("cancelled").is_some() {
        notice(
            "ok",
            "<p>Cancel asked: the ads no worker had started are cancelled and not charged; running ads finish.</p>",
        )
    } else {
        String::new()
    };
    let body = format!(
        r#"{problem}{cancelled_note}<p><a href="/dashboard/batches">← All batches</a></p>{live}
<section aria-labelledby="summary-h"><h2 id="summary-h" class="sr-only">Summary</h2><div id="batch-summary" data-live>{summary}</div>
<div class="actions batch-actions" id="batch-actions" data-live>{download} {cancel}</div></section>
<section aria-labelledby="ads-h"><h2 id="ads-h">Ads</h2>
<form method="get" action="/dashboard/batches/{id}" class="filters" role="search" aria-label="Filter the batch's ads">
{size_select}{product_select}
<div class="filter-actions"><button type="submit">Filter</button> <a class="button secondary" href="/dashboard/batches/{id}">Clear</a></div></form>
<div id="batch-ads" data-live><p class="hint" id="shown-count">{n_shown} of {n_all} ads shown.</p><ul class="gallery" aria-label="Ads of the batch">{cards}</ul></div></section>
{script}"#,
        id = esc(&b.id),
        size_select = filter_select("f-size", "size", "Size", "All sizes", &sizes, &want_size),
        product_select = filter_select(
            "f-product",
            "product",
            "Product",
            "All products",
            &products,
            &want_product
        ),
        n_shown = shown.len(),
        n_all = ads.len(),
        script = if processing {
            r#"<script src="/dashboard/assets/dashboard.js" defer></script>"#
        } else {
            ""
        },
    );
    let title = format!("Batch {}", b.id);
    Ok(html_with_images(
        status,
        batch_page(m, &title, &body),
        &crate::ads::origins(urls.iter().map(String::as_str)),
    ))
}

/// GET /dashboard/batches/{id}/download: the batch's ZIP, streamed.
pub(super) async fn download(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
) -> DashResult {
    let m = &me.0;
    let body = image_ad_batches::zip_stream(&state.db, state.blobs.clone(), &m.org_id, &id)
        .await
        .map_err(dash)?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/zip".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!(
                    "attachment; filename=\"{}.zip\"",
                    id.replace(['"', '\\'], "")
                ),
            ),
            (header::CACHE_CONTROL, "no-store".to_string()),
        ],
        body,
    )
        .into_response())
}

/// POST /dashboard/batches/{id}/cancel
pub(super) async fn cancel(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    uri: Uri,
    body: Bytes,
) -> DashResult {
    me.form(&body)?;
    let m = &me.0;
    match image_ad_batches::cancel(&state.db, &state.jobs, &m.org_id, &id).await {
        Ok(b) => {
            tracing::info!(batch_id = %b.id, profile_id = %m.profile_id, "batch cancelled in the dashboard");
            Ok(redirect(&format!(
                "/dashboard/batches/{}?cancelled=1",
                b.id
            )))
        }
        Err(e) if e.code == ErrorCode::Conflict => {
            let (status, text) = crate::ads::api_message(e)?;
            let page_uri: Uri = format!("/dashboard/batches/{id}").parse().unwrap_or(uri);
            render(&state, m, &id, &page_uri, Some((status, text))).await
        }
        Err(e) => Err(dash(e)),
    }
}
