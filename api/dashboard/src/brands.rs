//! Brands and products: the catalogue read and edited — a brand's name, description,
//! colour palettes, fonts and logos, and its products' names and descriptions. Every change
//! is a PATCH through the functions the `/v1/brands` and `/v1/products` handlers call
//! (`brands::update`, `products::update`); a logo is uploaded through the same code as
//! POST /v1/images with `image_type=logo` (`images::upload_logo`) and then added to
//! `logo_image_ids`.
//!
//! Form formats (the API's shapes written as lines): palettes one per line as
//! `name: #RRGGBB, #RRGGBB`; fonts one per line as `Family` or `Family (heading)` /
//! `Family (body)`.

use std::fmt::Write;

use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::http::StatusCode;
use serde_json::{Map, Value};

use crate::html::{csrf_field, esc, page, post_button, when};
use crate::members::SessionMember;
use crate::swipe::{api_error, blob_origins, error_box};
use crate::{DashError, DashResult, SignedIn, html_with_images, redirect, same_secret};
use adforge_api::error::{ApiError, FieldError};
use adforge_api::resources::brands::{self, Brand, BrandFont, BrandUpdate, FontRole};
use adforge_api::resources::common::Patch;
use adforge_api::resources::{images, products};
use adforge_api::state::AppState;
use adforge_api::store::list::ListParams;

const TITLE: &str = "Brands and products";
const ACTIVE: &str = "/dashboard/brands";

fn palettes_text(b: &Brand) -> String {
    let mut out = String::new();
    if let Some(p) = &b.color_palettes {
        for (name, colours) in p {
            let list: Vec<&str> = colours
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let _ = writeln!(out, "{name}: {}", list.join(", "));
        }
    }
    out
}

fn fonts_text(b: &Brand) -> String {
    b.fonts
        .iter()
        .map(|f| match f.role {
            Some(FontRole::Heading) => format!("{} (heading)", f.name),
            Some(FontRole::Body) => format!("{} (body)", f.name),
            None => f.name.clone(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `name: #a, #b` lines → the API's palette object; a line without `:` is a form error.
fn parse_palettes(text: &str) -> Result<Option<Map<String, Value>>, ApiError> {
    let mut map = Map::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let Some((name, colours)) = line.split_once(':') else {
            return Err(ApiError::field(
                "color_palettes",
                format!("`{line}`: write each palette as `name: #RRGGBB, #RRGGBB`"),
            ));
        };
        let list: Vec<Value> = colours
            .split([',', ' '])
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(|c| Value::String(c.to_string()))
            .collect();
        map.insert(name.trim().to_string(), Value::Array(list));
    }
    Ok((!map.is_empty()).then_some(map))
}

fn parse_fonts(text: &str) -> Vec<BrandFont> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| {
            let lower = l.to_ascii_lowercase();
            let (name, role) = if lower.ends_with("(heading)") {
                (&l[..l.len() - "(heading)".len()], Some(FontRole::Heading))
            } else if lower.ends_with("(body)") {
                (&l[..l.len() - "(body)".len()], Some(FontRole::Body))
            } else {
                (l, None)
            };
            BrandFont {
                name: name.trim().to_string(),
                role,
            }
        })
        .collect()
}

fn swatches(b: &Brand) -> String {
    let mut out = String::new();
    if let Some(p) = &b.color_palettes {
        for (name, colours) in p {
            let mut chips = String::new();
            for c in colours
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                // Colours were validated by the API as hex; shown as text beside a chip
                // whose colour is an SVG data image (the content policy allows no inline
                // styles).
                let hex = c.trim_start_matches('#');
                let chip = if hex.chars().all(|ch| ch.is_ascii_hexdigit()) {
                    format!(
                        r#"<img class="chip" alt="" width="16" height="16" src="data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='16' height='16'%3E%3Crect width='16' height='16' fill='%23{hex}'/%3E%3C/svg%3E">"#
                    )
                } else {
                    String::new()
                };
                let _ = write!(
                    chips,
                    r#"<span class="swatch">{chip}<code>{}</code></span>"#,
                    esc(c)
                );
            }
            let _ = write!(
                out,
                r#"<div class="palette"><span class="hint">{}</span> {chips}</div>"#,
                esc(name)
            );
        }
    }
    if out.is_empty() {
        out.push_str(r#"<p class="hint">No colours yet.</p>"#);
    }
    out
}

async fn logos(
    state: &AppState,
    m: &SessionMember,
    b: &Brand,
) -> Result<Vec<(String, String)>, ApiError> {
    let mut out = Vec::new();
    for id in b.logo_image_ids.iter().flatten() {
        if let Some(url) = images::live_urls(
            &state.db,
            state.blobs.as_ref(),
            &m.org_id,
            std::slice::from_ref(id),
        )
        .await?
        .pop()
        {
            out.push((id.clone(), url));
        }
    }
    Ok(out)
}

/// The active products of brand `id`.
fn of_brand(id: &str) -> products::ProductFilter {
    products::ProductFilter {
        archived: false,
        brand_ids: Some(vec![id.to_string()]),
    }
}

/// GET /dashboard/brands
pub async fn list(State(state): State<AppState>, me: SignedIn) -> DashResult {
    let m = &me.0;
    let all = match brands::list(&state.db, &m.org_id, &ListParams::new(100)).await {
        Ok(p) => p,
        Err(e) => return api_error(m, TITLE, ACTIVE, e),
    };
    let mut cards = String::new();
    for b in &all.items {
        let logo_html = match logos(&state, m, b).await {
            Ok(l) => l
                .iter()
                .map(|(_, u)| {
                    format!(
                        r#"<img class="logo" src="{}" alt="Logo of {}">"#,
                        esc(u),
                        esc(&b.name)
                    )
                })
                .collect::<String>(),
            Err(e) => return api_error(m, TITLE, ACTIVE, e),
        };
        let prods = match products::list(
            &state.db,
            &m.org_id,
            &of_brand(&b.id),
            &ListParams::new(100),
        )
        .await
        {
            Ok(p) => p,
            Err(e) => return api_error(m, TITLE, ACTIVE, e),
        };
        let names = prods
            .items
            .iter()
            .map(|p| esc(&p.name))
            .collect::<Vec<_>>()
            .join(", ");
        let fonts = if b.fonts.is_empty() {
            "—".to_string()
        } else {
            esc(&fonts_text(b).replace('\n', ", "))
        };
        let _ = write!(
            cards,
            r#"<li class="card brand-card" id="{id}"><div class="brand-head">{logo_html}<h2><a href="/dashboard/brands/{id}">{name}</a></h2></div>
<div>{sw}</div><p><span class="hint">Fonts</span> {fonts}</p><p><span class="hint">Products ({n})</span> {names}</p>
<p><a class="button secondary small" href="/dashboard/brands/{id}" aria-label="Edit {name}">Edit</a></p></li>"#,
            id = esc(&b.id),
            name = esc(&b.name),
            sw = swatches(b),
            n = prods.total_count,
        );
    }
    if all.items.is_empty() {
        cards.push_str(
            r#"<li class="empty">No brands yet: create them with the API (POST /v1/brands).</li>"#,
        );
    }
    let body = format!(
        r#"<p>The catalogue the ads are made from. Brands and products are created through the API; their details are edited here.</p><ul class="brands">{cards}</ul>"#
    );
    Ok(html_with_images(
        StatusCode::OK,
        page(TITLE, Some(m), ACTIVE, &body),
        &blob_origins(&state),
    ))
}

async fn render_brand(
    state: &AppState,
    m: &SessionMember,
    id: &str,
    status: StatusCode,
    flash: String,
) -> DashResult {
    let b = match brands::load(&state.db.read, &m.org_id, id).await {
        Ok(b) => b,
        Err(e) => return api_error(m, TITLE, ACTIVE, e),
    };
    let logo_list = match logos(state, m, &b).await {
        Ok(l) => l,
        Err(e) => return api_error(m, TITLE, ACTIVE, e),
    };
    let prods = match products::list(
        &state.db,
        &m.org_id,
        &of_brand(&b.id),
        &ListParams::new(100),
    )
    .await
    {
        Ok(p) => p,
        Err(e) => return api_error(m, TITLE, ACTIVE, e),
    };
    let bid = esc(&b.id);
    let csrf = csrf_field(&m.csrf_token);
    let mut logo_html = String::new();
    for (lid, url) in &logo_list {
        let _ = write!(
            logo_html,
            r#"<li><img class="logo" src="{u}" alt="Logo {l}">{rm}</li>"#,
            u = esc(url),
            l = esc(lid),
            rm = post_button(
                &format!("/dashboard/brands/{}/logos/{}/remove", b.id, lid),
                &m.csrf_token,
                "Remove",
                "danger small",
                &format!("Remove logo {lid}"),
            ),
        );
    }
    if logo_html.is_empty() {
        logo_html.push_str(r#"<li class="hint">No logo yet.</li>"#);
    }
    let mut prod_html = String::new();
    for p in &prods.items {
        let _ = write!(
            prod_html,
            r#"<li class="card" id="{pid}"><form method="post" action="/dashboard/products/{pid}">{csrf}<div class="grid-form">
<div><label for="pn-{pid}">Product name</label><input id="pn-{pid}" name="name" required maxlength="200" value="{name}"></div>
<div><label for="pd-{pid}">Description</label><input id="pd-{pid}" name="description" value="{desc}"></div>
<div><button type="submit" aria-label="Save product {name}">Save</button></div></div></form><p class="hint"><code>{pid}</code> · updated {upd}</p></li>"#,
            pid = esc(&p.id),
            name = esc(&p.name),
            desc = esc(p.description.as_deref().unwrap_or("")),
            upd = esc(&when(&p.updated_at)),
        );
    }
    if prods.items.is_empty() {
        prod_html.push_str(r#"<li class="hint">No products of this brand.</li>"#);
    }
    let body = format!(
        r#"{flash}<p><a href="/dashboard/brands">← All brands</a></p>
<section class="card" aria-labelledby="brand-h"><h2 id="brand-h">{name}</h2>{sw}
<form method="post" action="/dashboard/brands/{bid}">{csrf}
<label for="b-name">Name</label><input id="b-name" name="name" required maxlength="200" value="{name}">
<label for="b-desc">Description</label><input id="b-desc" name="description" value="{desc}">
<label for="b-pal">Colour palettes</label><textarea id="b-pal" name="color_palettes" rows="3" aria-describedby="b-pal-h">{pal}</textarea>
<p class="hint" id="b-pal-h">One palette a line: <code>primary: #0A2540, #635BFF</code>. The palette named <code>primary</code> is used first.</p>
<label for="b-fonts">Fonts</label><textarea id="b-fonts" name="fonts" rows="2" aria-describedby="b-fonts-h">{fonts}</textarea>
<p class="hint" id="b-fonts-h">One family a line, optionally with its role: <code>Inter (heading)</code>, <code>Source Serif (body)</code>.</p>
<button type="submit">Save brand</button></form></section>
<section class="card" aria-labelledby="logos-h"><h2 id="logos-h">Logos</h2><ul class="logos">{logo_html}</ul>
<form method="post" action="/dashboard/brands/{bid}/logos" enctype="multipart/form-data">{csrf}
<label for="b-logo">Add a logo (PNG, JPEG or WebP)</label><input type="file" id="b-logo" name="file" accept="image/png,image/jpeg,image/webp" required>
<button type="submit">Upload logo</button></form></section>
<h2>Products ({n})</h2><ul class="products">{prod_html}</ul>"#,
        name = esc(&b.name),
        sw = swatches(&b),
        desc = esc(b.description.as_deref().unwrap_or("")),
        pal = esc(&palettes_text(&b)),
        fonts = esc(&fonts_text(&b)),
        n = prods.total_count,
    );
    Ok(html_with_images(
        status,
        page(TITLE, Some(m), ACTIVE, &body),
        &blob_origins(state),
    ))
}

/// GET /dashboard/brands/{id}
pub async fn show(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
) -> DashResult {
    render_brand(&state, &me.0, &id, StatusCode::OK, String::new()).await
}

/// Shows an API error of a brand form above the brand (404 and server faults as pages).
async fn form_error(state: &AppState, m: &SessionMember, id: &str, e: ApiError) -> DashResult {
    let status = e.code.status();
    if status == StatusCode::NOT_FOUND && e.details.is_empty() || status.is_server_error() {
        return api_error(m, TITLE, ACTIVE, e);
    }
    render_brand(state, m, id, status, error_box(&e)).await
}

/// POST /dashboard/brands/{id}: name, description, palettes and fonts as one PATCH.
pub async fn update(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    let form = me.form(&body)?;
    let m = &me.0;
    let palettes = match parse_palettes(form.get("color_palettes").unwrap_or("")) {
        Ok(Some(p)) => Patch::Value(p),
        Ok(None) => Patch::Null,
        Err(e) => return form_error(&state, m, &id, e).await,
    };
    let description = match form.get("description").map(str::trim) {
        Some("") | None => Patch::Null,
        Some(d) => Patch::Value(d.to_string()),
    };
    let patch = BrandUpdate {
        name: Patch::Value(form.get("name").unwrap_or("").to_string()),
        description,
        color_palettes: palettes,
        fonts: Patch::Value(parse_fonts(form.get("fonts").unwrap_or(""))),
        logo_image_ids: Patch::Missing,
        details: Patch::Missing,
    };
    match brands::update(&state.db, &m.org_id, &id, patch).await {
        Ok(_) => Ok(redirect(&format!("/dashboard/brands/{id}"))),
        Err(e) => form_error(&state, m, &id, e).await,
    }
}

/// POST /dashboard/brands/{id}/logos: multipart `csrf` and `file`; the image is stored as
/// POST /v1/images stores it and appended to the brand's logos.
pub async fn add_logo(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    req: Request,
) -> DashResult {
    let m = &me.0;
    let Ok(mut mp) = Multipart::from_request(req, &()).await else {
        return Err(DashError::Csrf);
    };
    let (mut csrf, mut file) = (None, None);
    while let Ok(Some(field)) = mp.next_field().await {
        let name = field.name().unwrap_or("").to_string();
        let Ok(data) = field.bytes().await else {
            break;
        };
        match name.as_str() {
            "csrf" => csrf = Some(String::from_utf8_lossy(&data).into_owned()),
            "file" if !data.is_empty() => file = Some(data),
            _ => {}
        }
    }
    match csrf {
        Some(t) if same_secret(&t, &m.csrf_token) => {}
        _ => return Err(DashError::Csrf),
    }
    let b = match brands::load(&state.db.read, &m.org_id, &id).await {
        Ok(b) => b,
        Err(e) => return api_error(m, TITLE, ACTIVE, e),
    };
    let Some(bytes) = file else {
        let e = ApiError::validation(vec![FieldError::new("file", "choose an image to upload")]);
        return form_error(&state, m, &id, e).await;
    };
    let image = match images::upload_logo(&state.db, &state.blobs, &m.org_id, bytes).await {
        Ok(i) => i,
        Err(e) => return form_error(&state, m, &id, e).await,
    };
    let mut ids = b.logo_image_ids.unwrap_or_default();
    ids.push(image.id);
    let patch = BrandUpdate {
        name: Patch::Missing,
        description: Patch::Missing,
        color_palettes: Patch::Missing,
        fonts: Patch::Missing,
        logo_image_ids: Patch::Value(ids),
        details: Patch::Missing,
    };
    match brands::update(&state.db, &m.org_id, &id, patch).await {
        Ok(_) => Ok(redirect(&format!("/dashboard/brands/{id}"))),
        Err(e) => form_error(&state, m, &id, e).await,
    }
}

/// POST /dashboard/brands/{id}/logos/{image}/remove: takes the image off the brand's
/// logos (the image itself stays).
pub async fn remove_logo(
    State(state): State<AppState>,
    me: SignedIn,
    Path((id, image)): Path<(String, String)>,
    body: Bytes,
) -> DashResult {
    me.form(&body)?;
    let m = &me.0;
    let b = match brands::load(&state.db.read, &m.org_id, &id).await {
        Ok(b) => b,
        Err(e) => return api_error(m, TITLE, ACTIVE, e),
    };
    let ids: Vec<String> = b
        .logo_image_ids
        .unwrap_or_default()
        .into_iter()
        .filter(|i| *i != image)
        .collect();
    let patch = BrandUpdate {
        name: Patch::Missing,
        description: Patch::Missing,
        color_palettes: Patch::Missing,
        fonts: Patch::Missing,
        logo_image_ids: if ids.is_empty() {
            Patch::Null
        } else {
            Patch::Value(ids)
        },
        details: Patch::Missing,
    };
    match brands::update(&state.db, &m.org_id, &id, patch).await {
        Ok(_) => Ok(redirect(&format!("/dashboard/brands/{id}"))),
        Err(e) => form_error(&state, m, &id, e).await,
    }
}

/// POST /dashboard/products/{id}: name and description as one PATCH.
pub async fn update_product(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    let form = me.form(&body)?;
    let m = &me.0;
    let description = match form.get("description").map(str::trim) {
        Some("") | None => Patch::Null,
        Some(d) => Patch::Value(d.to_string()),
    };
    let patch = products::ProductUpdate {
        name: Patch::Value(form.get("name").unwrap_or("").to_string()),
        description,
        details: Patch::Missing,
    };
    match products::update(&state.db, &m.org_id, &id, patch).await {
        Ok(p) => Ok(redirect(&format!(
            "/dashboard/brands/{}#{}",
            p.brand_id, p.id
        ))),
        Err(e) => api_error(m, TITLE, ACTIVE, e),
    }
}

/// The routes of this page.
pub fn routes() -> axum::Router<crate::DashboardState> {
    use axum::routing::{get, post};
    axum::Router::new()
        .route("/brands", get(list))
        .route("/brands/{id}", get(show).post(update))
        .route("/brands/{id}/logos", post(add_logo))
        .route("/brands/{id}/logos/{image}/remove", post(remove_logo))
        .route("/products/{id}", post(update_product))
}
