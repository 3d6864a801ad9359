//! The plain form of an editable ad (GET /dashboard/ads/{id}/edit/form, POSTed to
//! /dashboard/ads/{id}/edit): its texts, solid colours and image URLs as fields, read and
//! written through `renderer::tree`, saved as a new version through the same code as PATCH
//! /v1/image-ads/{id}. It works without scripts; the visual editor (`crate::editor`) is the
//! page `/dashboard/ads/{id}/edit` itself.

use super::*;

/// The form field's name of a slot: `text:NODE`, `color:LIST:K:NODE`,
/// `image:LIST:K:FIELD:NODE` (the node id last, so it may contain colons).
fn field_name(slot: &Slot) -> String {
    match slot {
        Slot::Text { node, .. } => format!("text:{node}"),
        Slot::Color { at, .. } => format!("color:{}:{}:{}", at.list.key(), at.index, at.node),
        Slot::Image { at, field, .. } => format!(
            "image:{}:{}:{}:{}",
            at.list.key(),
            at.index,
            field.key(),
            at.node
        ),
    }
}

/// `#rrggbb`, as `<input type="color">` reads and writes it.
fn hex_of([r, g, b]: [u8; 3]) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

fn parse_hex(s: &str) -> Option<[u8; 3]> {
    let h = s.strip_prefix('#')?;
    if h.len() != 6 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let byte = |i: usize| u8::from_str_radix(&h[i..i + 2], 16).ok();
    Some([byte(0)?, byte(2)?, byte(4)?])
}

/// A node's name for a label: its `name` (the generator's "Headline", "Call to action"),
/// else its id.
fn node_label(tree: &TreeDoc<&Value>, id: &str) -> String {
    if tree.root_id() == Some(id) {
        return "Background".to_string();
    }
    tree.name(id).unwrap_or(id).to_string()
}

/// The tree with the form's values applied to its slots (every other field kept as it
/// was): the whole new tree for PATCH.
fn apply(tree: &Value, form: &crate::Form) -> Value {
    let mut out = TreeDoc::new(tree.clone());
    for slot in TreeDoc::new(tree).slots() {
        let Some(v) = form.get(&field_name(&slot)) else {
            continue;
        };
        // Every slot was read from this same tree, so its node and paint are there: an
        // edit cannot fail, and one that did would leave that value as it was.
        let _ = match &slot {
            Slot::Text { node, text } => {
                let new = v.replace("\r\n", "\n");
                if new == *text {
                    continue;
                }
                out.set_text(node, &new)
            }
            Slot::Color { at, rgb } => {
                if v.eq_ignore_ascii_case(&hex_of(*rgb)) {
                    continue;
                }
                let Some(new) = parse_hex(v) else { continue };
                out.set_solid_rgb(at, new)
            }
            Slot::Image { at, field, url } => {
                let new = v.trim();
                if new == url {
                    continue;
                }
                out.set_image_url(at, *field, new)
            }
        };
    }
    out.into_inner()
}

async fn editor_page(
    state: &AppState,
    m: &SessionMember,
    ad: &ImageAd,
    tree: &Value,
    base_version: i64,
    status: StatusCode,
    problem: Option<String>,
) -> DashResult {
    let mut texts = String::new();
    let mut colors = String::new();
    let mut imgs = String::new();
    let mut urls = Vec::new();
    let doc = TreeDoc::new(tree);
    for (i, slot) in doc.slots().iter().enumerate() {
        let name = esc(&field_name(slot));
        let label = esc(&node_label(&doc, slot.node()));
        match slot {
            Slot::Text { text, .. } => {
                let rows = text.lines().count().clamp(1, 6);
                let _ = write!(
                    texts,
                    r#"<div><label for="s{i}">{label}</label><textarea id="s{i}" name="{name}" rows="{rows}" maxlength="5000">{t}</textarea></div>"#,
                    t = esc(text)
                );
            }
            Slot::Color { at, rgb } => {
                let fills = at.list == PaintList::Fills;
                let what = if fills && at.index == 0 {
                    "colour".to_string()
                } else {
                    format!("{} {}", if fills { "fill" } else { "stroke" }, at.index + 1)
                };
                let _ = write!(
                    colors,
                    r#"<div class="color-field"><label for="s{i}">{label} <small>{what}</small></label><input id="s{i}" name="{name}" type="color" value="{h}"></div>"#,
                    h = esc(&hex_of(*rgb))
                );
            }
            Slot::Image { url, .. } => {
                urls.push(url.clone());
                let _ = write!(
                    imgs,
                    r#"<div class="image-field"><img src="{u}" alt="" width="64" height="64" loading="lazy"><div><label for="s{i}">{label} <small>image</small></label><input id="s{i}" name="{name}" type="url" value="{u}" maxlength="2048"></div></div>"#,
                    u = esc(url)
                );
            }
        }
    }
    let section = |title: &str, id: &str, content: &str, empty: &str| {
        format!(
            r#"<fieldset id="{id}"><legend>{title}</legend>{}</fieldset>"#,
            if content.is_empty() {
                format!(r#"<p class="hint">{empty}</p>"#)
            } else {
                content.to_string()
            }
        )
    };
    let body = format!(
        r#"{problem}<p><a href="/dashboard/ads/{id}">← Back to the ad</a> · <a href="/dashboard/ads/{id}/edit">Open in the visual editor</a></p>
<p>Change the texts, solid colours and image URLs of version {base_version}; saving makes version {next}, rendered in the background (editing is free for editable ads). Image URLs must be public http(s) URLs or this server's own file URLs.</p>
<form method="post" action="/dashboard/ads/{id}/edit" class="editor">{csrf}<input type="hidden" name="base_version" value="{base_version}">
{texts}{colors}{imgs}
<button type="submit">Save as version {next}</button></form>"#,
        problem = problem
            .map(|p| notice("error", &format!("<p>{p}</p>")))
            .unwrap_or_default(),
        id = esc(&ad.id),
        next = base_version + 1,
        csrf = csrf_field(&m.csrf_token),
        texts = section("Texts", "texts", &texts, "This ad has no text."),
        colors = section(
            "Colours",
            "colours",
            &colors,
            "This ad has no solid colours."
        ),
        imgs = section("Images", "images", &imgs, "This ad has no images."),
    );
    let _ = state;
    Ok(html_with_images(
        status,
        page_with_head(
            &format!("Edit ad {}", ad.id),
            Some(m),
            "/dashboard/ads",
            &body,
            "",
        ),
        &origins(urls.iter().map(String::as_str)),
    ))
}

/// The ad, its tree and its latest version number, if it can be edited now.
pub(crate) async fn editable(
    state: &AppState,
    m: &SessionMember,
    id: &str,
) -> Result<Result<(ImageAd, Value, i64), String>, DashError> {
    let ad = image_ads::get(&state.db, &state.jobs, &m.org_id, id)
        .await
        .map_err(dash)?;
    if !ad.editable {
        return Ok(Err(
            "This is a flat ad; only editable ads can be changed.".to_string()
        ));
    }
    if ad.status != "completed" {
        return Ok(Err(format!(
            "This ad is {}; it can be edited once it has completed.",
            ad.status
        )));
    }
    let versions = image_ads::versions(&state.db, &m.org_id, id)
        .await
        .map_err(dash)?;
    let base = versions.last().map_or(1, |v| v.version_number);
    match ad.current_json_tree.clone() {
        Some(tree) => Ok(Ok((ad, tree, base))),
        None => Ok(Err("This ad has no JSON tree to edit.".to_string())),
    }
}

/// GET /dashboard/ads/{id}/edit/form
pub async fn edit_form(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
) -> DashResult {
    let m = &me.0;
    match editable(&state, m, &id).await? {
        Ok((ad, tree, base)) => {
            editor_page(&state, m, &ad, &tree, base, StatusCode::OK, None).await
        }
        Err(why) => Ok(cannot_edit(m, &id, &why)),
    }
}

pub(crate) fn cannot_edit(m: &SessionMember, id: &str, why: &str) -> axum::response::Response {
    let body = format!(
        r#"{}<p><a href="/dashboard/ads/{}">Back to the ad</a></p>"#,
        notice("error", &format!("<p>{}</p>", esc(why))),
        esc(id)
    );
    crate::html(
        StatusCode::UNPROCESSABLE_ENTITY,
        page_with_head("Cannot edit this ad", Some(m), "/dashboard/ads", &body, ""),
    )
}

/// POST /dashboard/ads/{id}/edit: the whole new tree through PATCH's domain call.
pub async fn edit_submit(
    State(state): State<AppState>,
    me: SignedIn,
    Path(id): Path<String>,
    body: Bytes,
) -> DashResult {
    let form = me.form(&body)?;
    let m = &me.0;
    let (ad, tree, base) = match editable(&state, m, &id).await? {
        Ok(x) => x,
        Err(why) => return Ok(cannot_edit(m, &id, &why)),
    };
    if form.get("base_version").and_then(|v| v.parse::<i64>().ok()) != Some(base) {
        return editor_page(
            &state,
            m,
            &ad,
            &tree,
            base,
            StatusCode::CONFLICT,
            Some(format!(
                "The ad changed while you edited it: it is now at version {base}. Your changes were not saved; make them again below."
            )),
        )
        .await;
    }
    let new_tree = apply(&tree, &form);
    if new_tree == tree {
        return editor_page(
            &state,
            m,
            &ad,
            &tree,
            base,
            StatusCode::BAD_REQUEST,
            Some("Nothing was changed, so no new version was made.".to_string()),
        )
        .await;
    }
    let update = ImageAdUpdate {
        current_json_tree: new_tree.clone(),
        change_summary: Some("Edited with the plain form".to_string()),
        apply_to_siblings: false,
    };
    match image_ads::update(&state, &m.org_id, &id, &update).await {
        Ok(_) => {
            tracing::info!(ad_id = %id, profile_id = %m.profile_id, "image ad edited in the dashboard");
            Ok(redirect(&format!("/dashboard/ads/{id}#versions-h")))
        }
        Err(e) if e.code == ErrorCode::ImageAdNotFound => Err(DashError::NotFound),
        Err(e) => {
            let (status, text) = api_message(e)?;
            editor_page(&state, m, &ad, &new_tree, base, status, Some(text)).await
        }
    }
}
