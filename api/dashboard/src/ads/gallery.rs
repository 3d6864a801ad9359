//! The gallery: the organisation's ads with their status facet, filters and paging, through
//! the API's typed list (`image_ads::list`).

use super::*;

const FILTERS: [&str; 5] = ["status", "brand_id", "product_id", "editable", "search"];

/// The gallery's filters (`FILTERS`, from the page's query) as the API's typed filter.
///
/// # Errors
/// VALIDATION_ERROR naming `editable` when it is neither `true` nor `false`.
fn gallery_filter(value: &dyn Fn(&str) -> String) -> Result<image_ads::ImageAdFilter, ApiError> {
    let csv = |k: &str| crate::csv(&value(k));
    let editable = match value("editable").as_str() {
        "" => None,
        "true" => Some(true),
        "false" => Some(false),
        other => {
            return Err(ApiError::field(
                "editable",
                format!("must be one of true, false, not `{other}`"),
            ));
        }
    };
    let search = Some(value("search")).filter(|s| !s.is_empty());
    Ok(image_ads::ImageAdFilter {
        status: csv("status"),
        brand_id: csv("brand_id"),
        product_id: csv("product_id"),
        editable,
        search,
        ..Default::default()
    })
}

/// GET /dashboard/ads
pub async fn gallery(State(state): State<AppState>, me: SignedIn, uri: Uri) -> DashResult {
    let m = &me.0;
    let q = query(&uri);
    let q_string = uri.query().unwrap_or("").to_string();
    let value = |k: &str| q.get(k).unwrap_or("").trim().to_string();
    // The page's filters as the API's typed filter, status facets, the cursor.
    let after = value("starting_after");
    let kept = {
        let mut kept = form_urlencoded::Serializer::new(String::new());
        for f in FILTERS {
            let v = value(f);
            if !v.is_empty() {
                kept.append_pair(f, &v);
            }
        }
        kept.finish()
    };
    let cat = catalog(&state.db, &m.org_id).await?;
    let listed = match gallery_filter(&value) {
        Ok(filter) => {
            let p = ListParams {
                limit: GALLERY_PAGE,
                starting_after: Some(after.clone()).filter(|a| !a.is_empty()),
                ids: None,
                facets: vec!["status"],
            };
            image_ads::list(&state.db, &state.jobs, &m.org_id, &filter, &p).await
        }
        Err(e) => Err(e),
    };
    let (status, problem, page) = match listed {
        Ok(p) => (StatusCode::OK, None, Some(p)),
        Err(e) => {
            let (s, text) = api_message(e)?;
            (s, Some(text), None)
        }
    };

    // Status facet: "All" and one link per status with its count.
    let mut facet_links = String::new();
    let current_status = value("status");
    let facet_counts: Vec<(String, i64)> = page
        .as_ref()
        .and_then(|p| p.facets.as_ref())
        .and_then(|f| f.get("status"))
        .map(|v| v.iter().map(|f| (f.value.clone(), f.count)).collect())
        .unwrap_or_default();
    let without_status = {
        let mut s = form_urlencoded::Serializer::new(String::new());
        for f in FILTERS.iter().filter(|f| **f != "status") {
            let v = value(f);
            if !v.is_empty() {
                s.append_pair(f, &v);
            }
        }
        s.finish()
    };
    let all_count: i64 = facet_counts.iter().map(|(_, n)| n).sum();
    let link = |label: &str, status: &str, count: i64| {
        let mut qs = without_status.clone();
        if !status.is_empty() {
            if !qs.is_empty() {
                qs.push('&');
            }
            qs.push_str("status=");
            qs.push_str(status);
        }
        let cur = if current_status == status {
            r#" aria-current="true""#
        } else {
            ""
        };
        format!(
            r#"<li><a href="/dashboard/ads{sep}{qs}"{cur} id="facet-{id}">{label} <span class="count">{count}</span></a></li>"#,
            sep = if qs.is_empty() { "" } else { "?" },
            qs = esc(&qs),
            id = if status.is_empty() { "all" } else { status },
            label = esc(label),
        )
    };
    facet_links.push_str(&link("All", "", all_count));
    for s in ["processing", "completed", "failed"] {
        let n = facet_counts
            .iter()
            .find(|(v, _)| v == s)
            .map_or(0, |(_, n)| *n);
        facet_links.push_str(&link(status_label(s), s, n));
    }

    let mut cards = String::new();
    let mut any_processing = false;
    let mut image_urls: Vec<String> = Vec::new();
    if let Some(p) = &page {
        for ad in &p.items {
            let product = name_of(&cat.products, &ad.product_id).unwrap_or(&ad.product_id);
            let visual = match (&ad.image_url, ad.status.as_str()) {
                (Some(url), _) => {
                    image_urls.push(url.clone());
                    let h = match (ad.width, ad.height) {
                        (Some(w), Some(h)) if w > 0 => h * THUMB_WIDTH / w,
                        _ => THUMB_WIDTH,
                    };
                    format!(
                        r#"<img src="/dashboard/ads/{}/thumb?of={}" width="{THUMB_WIDTH}" height="{h}" loading="lazy" decoding="async" alt="Ad for {}">"#,
                        esc(&ad.id),
                        esc(url.rsplit('/').next().unwrap_or("")),
                        esc(product)
                    )
                }
                (None, "processing") => {
                    any_processing = true;
                    format!(r#"<div class="placeholder">{}</div>"#, progress_html(ad))
                }
                (None, _) => {
                    let why = ad.error.as_ref().map_or("No image", |e| e.message.as_str());
                    format!(r#"<div class="placeholder failed">{}</div>"#, esc(why))
                }
            };
            if ad.status == "processing" {
                any_processing = true;
            }
            let extra = if ad.status == "processing" && ad.image_url.is_some() {
                progress_html(ad)
            } else {
                String::new()
            };
            let _ = write!(
                cards,
                r#"<li class="ad-card" id="{id}"><a href="/dashboard/ads/{id}" class="thumb">{visual}</a>
<div class="ad-meta"><a href="/dashboard/ads/{id}"><strong>{product}</strong></a>
<span class="status {st}">{stl}</span>{ed}<br><small>{id} · {created}</small>{extra}</div></li>"#,
                id = esc(&ad.id),
                product = esc(product),
                st = esc(&ad.status),
                stl = esc(status_label(&ad.status)),
                ed = if ad.editable {
                    r#" <span class="badge">editable</span>"#
                } else {
                    ""
                },
                created = esc(&when(&ad.created_at)),
            );
        }
        if p.items.is_empty() {
            cards.push_str(r#"<li class="empty">No ads match.</li>"#);
        }
    }
    let next = match &page {
        Some(p) if p.has_more => p.items.last().map_or_else(String::new, |last| {
            format!(
                r#"<p class="pager"><a class="button secondary" href="/dashboard/ads?{}{}starting_after={}">Older ads</a></p>"#,
                esc(&kept),
                if kept.is_empty() { "" } else { "&amp;" },
                esc(&last.id)
            )
        }),
        _ => String::new(),
    };
    let first = if after.is_empty() {
        String::new()
    } else {
        format!(
            r#"<p class="pager"><a href="/dashboard/ads{}{}">Back to the newest</a></p>"#,
            if kept.is_empty() { "" } else { "?" },
            esc(&kept)
        )
    };
    let editable = value("editable");
    let sel = |v: &str| if editable == v { " selected" } else { "" };
    let total = page.as_ref().map_or(0, |p| p.total_count);
    let body = format!(
        r#"{note}{problem}<p class="toolbar"><a class="button" href="/dashboard/ads/new">Create an ad</a></p>
<form method="get" action="/dashboard/ads" class="filters" role="search" aria-label="Filter the ads">
<input type="hidden" name="status" value="{status}">
<div><label for="f-brand">Brand</label><select id="f-brand" name="brand_id"><option value="">All brands</option>{brands}</select></div>
<div><label for="f-product">Product</label><select id="f-product" name="product_id"><option value="">All products</option>{products}</select></div>
<div><label for="f-editable">Kind</label><select id="f-editable" name="editable"><option value="">Flat and editable</option><option value="true"{se_t}>Editable</option><option value="false"{se_f}>Flat</option></select></div>
<div><label for="f-search">Search</label><input id="f-search" name="search" type="search" value="{search}" maxlength="200" placeholder="Ad id or product name"></div>
<div class="filter-actions"><button type="submit">Filter</button> <a class="button secondary" href="/dashboard/ads">Clear</a></div>
</form>
<nav aria-label="Status"><ul class="status-facets">{facet_links}</ul></nav>
<p class="hint" id="ad-count">{count_text}</p>
{first}<ul class="gallery" aria-label="Image ads">{cards}</ul>{next}"#,
        note = refresh_note(any_processing),
        problem = problem
            .map(|p| notice("error", &format!("<p>{p}</p>")))
            .unwrap_or_default(),
        status = esc(&current_status),
        brands = options(&cat.brands, None, &value("brand_id")),
        products = options(&cat.products, Some(&cat.brands), &value("product_id")),
        se_t = sel("true"),
        se_f = sel("false"),
        search = esc(&value("search")),
        count_text = if total == 1 {
            "1 ad matches.".to_string()
        } else {
            format!("{total} ads match.")
        },
    );
    let here = if q_string.is_empty() {
        "/dashboard/ads".to_string()
    } else {
        format!("/dashboard/ads?{q_string}")
    };
    let head = refresh_head(any_processing, &here);
    Ok(html_with_images(
        status,
        page_with_head("Image ads", Some(m), "/dashboard/ads", &body, &head),
        &origins(image_urls.iter().map(String::as_str)),
    ))
}
