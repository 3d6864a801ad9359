//! The Figma page: connect Figma (a personal access token, stored sealed by the same code
//! as PUT /v1/integrations/figma), paste a frame's link to sync it into an editable ad (the
//! code of POST /v1/image-ads/sync), and see each synced ad's render beside Figma's own
//! render of the frame, with what the import could not map and a button to sync again.
//!
//! Every action is a form POST (checked CSRF token) followed by a redirect; a page showing
//! a processing ad refreshes itself every 4 seconds, like the ads pages. Its one query (the
//! organisation's synced ads, newest first) is in `store::figma`.

use std::fmt::Write;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};

use crate::html::{csrf_field, esc, notice, page_with_head, post_button, when};
use crate::members::SessionMember;
use crate::store::catalog::{Named, catalog};
use crate::{DashResult, DashboardState, SignedIn, html_with_images, redirect};
use adforge_api::resources::image_ads::{self, ImageAd, sync::ImageAdSync};
use adforge_api::resources::integrations;

const TITLE: &str = "Figma";
const ACTIVE: &str = "/dashboard/figma";
/// Synced ads shown.
const MAX_ADS: i64 = 30;

pub fn routes() -> Router<DashboardState> {
    Router::new()
        .route("/figma", get(show))
        .route("/figma/connect", post(connect))
        .route("/figma/disconnect", post(disconnect))
        .route("/figma/sync", post(sync))
        .route("/figma/{id}/resync", post(resync))
}

/// An API failure the page cannot show as a form message: logged, the error page.
fn api_internal(e: adforge_api::error::ApiError) -> crate::DashError {
    crate::DashError::Internal(e.message)
}

fn options(items: &Named, parents: Option<&Named>) -> String {
    let mut out = String::new();
    for (id, name, parent) in items {
        let label = match parents.and_then(|p| p.iter().find(|(pid, _, _)| pid == parent)) {
            Some((_, pname, _)) => format!("{name} ({pname})"),
            None => name.clone(),
        };
        let _ = write!(
            out,
            r#"<option value="{}">{}</option>"#,
            esc(id),
            esc(&label)
        );
    }
    out
}

/// The origin (`scheme://host[:port]`) of an absolute URL, for the page's image policy.
fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let host = rest.split('/').next()?;
    Some(format!("{scheme}://{host}"))
}

fn ad_card(ad: &ImageAd, csrf: &str) -> String {
    let img = |url: &Option<String>, alt: &str| match url {
        Some(u) => format!(
            r#"<img src="{}" alt="{}" loading="lazy">"#,
            esc(u),
            esc(alt)
        ),
        None => r#"<p class="hint">Not yet</p>"#.to_owned(),
    };
    let figma = ad.figma.as_ref();
    let report = figma.and_then(|f| f.report.as_ref());
    let unmapped = report.map_or(String::new(), |r| {
        let mut items = String::new();
        for u in r.unmapped.iter().take(12) {
            let _ = write!(
                items,
                "<li><code>{}</code> {}: {}</li>",
                esc(&u.name),
                esc(&u.feature),
                esc(&u.reason)
            );
        }
        if r.unmapped.len() > 12 {
            let _ = write!(items, "<li>… and {} more</li>", r.unmapped.len() - 12);
        }
        let fonts: Vec<String> = r
            .missing_fonts
            .iter()
            .map(|f| format!("{} (drawn in {})", esc(&f.family), esc(&f.fallback)))
            .collect();
        format!(
            r#"<details><summary>{n} Figma nodes, {svg} drawn from SVG exports, {img} image fills, {u} not drawn as in Figma{fonts}</summary><ul>{items}</ul></details>"#,
            n = r.nodes,
            svg = r.svg_exports,
            img = r.image_fills,
            u = r.unmapped.len(),
            fonts = if fonts.is_empty() {
                String::new()
            } else {
                format!("; fonts not in the library: {}", fonts.join(", "))
            },
        )
    });
    let status = match (&ad.status[..], &ad.error) {
        ("failed", Some(e)) => format!(
            r#"<p class="error">Failed: <code>{}</code> {}</p>"#,
            esc(&e.code),
            esc(&e.message)
        ),
        ("processing", _) => format!(
            r#"<p class="hint">Processing: {}</p>"#,
            esc(ad
                .progress
                .as_ref()
                .map_or("queued", |p| p.message.as_str()))
        ),
        _ => String::new(),
    };
    let resync = if ad.status == "processing" {
        String::new()
    } else {
        post_button(
            &format!("/dashboard/figma/{}/resync", ad.id),
            csrf,
            "Sync again",
            "secondary",
            &format!("Sync ad {} again from its Figma frame", ad.id),
        )
    };
    format!(
        r#"<li class="card figma-sync" id="{id}"><h3><a href="/dashboard/ads/{id}">{id}</a> · <a href="{link}" rel="noreferrer">{name}</a> {synced}</h3>{status}
<div class="side-by-side"><figure>{ours}<figcaption>Our render (4K)</figcaption></figure><figure>{theirs}<figcaption>Figma's render</figcaption></figure></div>{unmapped}{resync}</li>"#,
        id = esc(&ad.id),
        link = esc(figma.map_or("", |f| f.url.as_str())),
        name = esc(figma
            .and_then(|f| f.file_name.as_deref())
            .unwrap_or("frame")),
        synced = figma
            .and_then(|f| f.synced_at.as_deref())
            .map(|t| format!("<small>synced {}</small>", esc(&when(t))))
            .unwrap_or_default(),
        ours = img(&ad.image_url, "Our render of the frame"),
        theirs = img(&ad.figma_render_url, "Figma's render of the frame"),
    )
}

async fn render(
    state: &DashboardState,
    m: &SessionMember,
    status: StatusCode,
    problem: Option<String>,
) -> DashResult {
    let connection = integrations::get(&state.db, &m.org_id)
        .await
        .map_err(api_internal)?;
    let cat = catalog(&state.db, &m.org_id).await?;
    let ids = crate::store::figma::synced_ads(&state.db, &m.org_id, MAX_ADS).await?;
    let mut ads = Vec::new();
    for id in ids {
        if let Ok(ad) = image_ads::get(&state.db, &state.jobs, &m.org_id, &id).await {
            ads.push(ad);
        }
    }
    let csrf = csrf_field(&m.csrf_token);
    let connection_html = if connection.connected {
        format!(
            r#"<p>Connected with a token ending in <code>…{last4}</code>, stored {at}.</p>{button}"#,
            last4 = esc(connection.token_last4.as_deref().unwrap_or("")),
            at = esc(&when(connection.updated_at.as_deref().unwrap_or(""))),
            button = post_button(
                "/dashboard/figma/disconnect",
                &m.csrf_token,
                "Disconnect",
                "danger",
                "Disconnect Figma"
            ),
        )
    } else {
        r#"<p class="hint">Not connected.</p>"#.to_owned()
    };
    let mut cards = String::new();
    for ad in &ads {
        cards.push_str(&ad_card(ad, &m.csrf_token));
    }
    let list = if ads.is_empty() {
        r#"<p class="hint">No ad synced from Figma yet.</p>"#.to_owned()
    } else {
        format!(r#"<ul class="figma-syncs">{cards}</ul>"#)
    };
    let body = format!(
        r#"{problem}<section><h2>Connection</h2>{connection_html}
<form method="post" action="/dashboard/figma/connect">{csrf}<label for="f-token">Personal access token</label>
<input id="f-token" name="access_token" type="password" autocomplete="off" minlength="8" maxlength="512" required>
<p class="hint">Figma → Settings → Security → Personal access tokens, with read access to file content. It is stored sealed and never shown again.</p>
<button type="submit">{connect}</button></form></section>
<section><h2>Sync a frame</h2>
<form method="post" action="/dashboard/figma/sync">{csrf}
<label for="f-url">Frame link</label><input id="f-url" name="figma_url" type="url" maxlength="2048" required placeholder="https://www.figma.com/design/FILE_KEY/Name?node-id=1-2">
<div class="grid-form">
<div><label for="f-brand">Brand</label><select id="f-brand" name="brand_id" required><option value="">Choose a brand</option>{brands}</select></div>
<div><label for="f-product">Product</label><select id="f-product" name="product_id" required><option value="">Choose a product</option>{products}</select></div>
<div><label for="f-audience">Audience</label><select id="f-audience" name="audience_id" required><option value="">Choose an audience</option>{audiences}</select></div>
</div>
<label class="check" for="f-fill"><input type="checkbox" id="f-fill" name="fill_slots" value="true"> <span>Fill the frame's slots (nodes named headline, cta, product_image, logo, …) with this product</span></label>
<p class="hint">An editable ad ({price}, charged when it completes); syncing it again later is free.</p>
<button type="submit">Sync</button></form></section>
<section><h2>Synced ads</h2>{list}</section>"#,
        problem = problem
            .map(|p| notice("error", &format!("<p>{p}</p>")))
            .unwrap_or_default(),
        connect = if connection.connected {
            "Replace the token"
        } else {
            "Connect"
        },
        brands = options(&cat.brands, None),
        products = options(&cat.products, Some(&cat.brands)),
        audiences = options(&cat.audiences, Some(&cat.products)),
        price = adforge_api::wallet::dollars(adforge_api::wallet::EDITABLE_IMAGE_AD_CENTS),
    );
    let processing = ads.iter().any(|a| a.status == "processing");
    let head = if processing {
        r#"<meta http-equiv="refresh" content="4; url=/dashboard/figma">"#
    } else {
        ""
    };
    let mut origins: Vec<String> = ads
        .iter()
        .flat_map(|a| [a.image_url.as_deref(), a.figma_render_url.as_deref()])
        .flatten()
        .filter_map(origin)
        .collect();
    origins.sort();
    origins.dedup();
    Ok(html_with_images(
        status,
        page_with_head(TITLE, Some(m), ACTIVE, &body, head),
        &origins,
    ))
}

/// GET /dashboard/figma
pub async fn show(State(state): State<DashboardState>, me: SignedIn) -> DashResult {
    render(&state, &me.0, StatusCode::OK, None).await
}

/// An API error as the page's message (server errors become the error page).
async fn refused(
    state: &DashboardState,
    m: &SessionMember,
    e: adforge_api::error::ApiError,
) -> DashResult {
    let status = e.code.status();
    if status.is_server_error() && e.code != adforge_api::error::ErrorCode::ServiceUnavailable {
        return Err(api_internal(e));
    }
    render(state, m, status, Some(esc(&e.message))).await
}

/// POST /dashboard/figma/connect
pub async fn connect(State(state): State<DashboardState>, me: SignedIn, body: Bytes) -> DashResult {
    let form = me.form(&body)?;
    let token = form.get("access_token").unwrap_or("").trim().to_owned();
    match integrations::connect(&state, &me.0.org_id, &token).await {
        Ok(_) => Ok(redirect(ACTIVE)),
        Err(e) => refused(&state, &me.0, e).await,
    }
}

/// POST /dashboard/figma/disconnect
pub async fn disconnect(
    State(state): State<DashboardState>,
    me: SignedIn,
    body: Bytes,
) -> DashResult {
    me.form(&body)?;
    integrations::disconnect(&state.db, &me.0.org_id)
        .await
        .map_err(api_internal)?;
    Ok(redirect(ACTIVE))
}

/// POST /dashboard/figma/sync
pub async fn sync(State(state): State<DashboardState>, me: SignedIn, body: Bytes) -> DashResult {
    let form = me.form(&body)?;
    let field = |k: &str| {
        form.get(k)
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let request = ImageAdSync {
        figma_url: field("figma_url"),
        figma_file_key: None,
        figma_node_id: None,
        image_ad_id: None,
        brand_id: field("brand_id"),
        product_id: field("product_id"),
        audience_id: field("audience_id"),
        product_variant_id: None,
        prompt: None,
        fill_slots: Some(form.get("fill_slots") == Some("true")),
    };
    match image_ads::sync::sync_new(&state, &me.0.org_id, &request).await {
        Ok(ad) => Ok(redirect(&format!("{ACTIVE}#{}", ad.id))),
        Err(e) => refused(&state, &me.0, e).await,
    }
}

/// POST /dashboard/figma/{id}/resync
pub async fn resync(
    State(state): State<DashboardState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    me.form(&body)?;
    let request = ImageAdSync {
        figma_url: None,
        figma_file_key: None,
        figma_node_id: None,
        image_ad_id: Some(id.clone()),
        brand_id: None,
        product_id: None,
        audience_id: None,
        product_variant_id: None,
        prompt: None,
        fill_slots: None,
    };
    match image_ads::sync::resync(&state, &me.0.org_id, &id, &request).await {
        Ok(_) => Ok(redirect(&format!("{ACTIVE}#{id}"))),
        Err(e) if e.code == adforge_api::error::ErrorCode::ImageAdNotFound => {
            Err(crate::DashError::NotFound)
        }
        Err(e) => refused(&state, &me.0, e).await,
    }
}
