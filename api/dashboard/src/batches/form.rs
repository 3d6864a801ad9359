//! The batch creation form: products (checkboxes of the organisation's active products, or
//! every active product of a brand), references (URLs, one a line) and design templates,
//! sizes (the named placements), editable, prompt. "Review" computes the ad count × the
//! price here, on the server, beside the wallet's available balance, and offers "Create
//! batch"; creating calls `image_ad_batches::create`, whose errors (402, an item's 4xx) are
//! shown on the form. No script.
//!
//! The count is the batch's own matrix as `create` makes it without `audience_ids` (the
//! form names none, so each product makes its ads for its first active audience): products
//! × (references + templates) × sizes (1 without sizes). A "Create batch" whose total
//! differs from the one reviewed (the form was changed after "Review") is reviewed again
//! instead of created. The review also draws the batch's id (a hidden field): a "Create
//! batch" sent twice (a double click, a retry after a lost answer) leads to the one batch
//! the first made, never a second.

use super::*;
use crate::Form;
use crate::ads::placement_checks;
use crate::html::csrf_field;
use crate::store::catalog::{Named, catalog};
use adforge_api::resources::design_templates::{self, DesignTemplate, TemplateFilter};
use adforge_api::resources::image_ad_batches::{ImageAdBatchCreate, MAX_ADS};
use adforge_api::wallet::{EDITABLE_IMAGE_AD_CENTS, FLAT_IMAGE_AD_CENTS};
use axum::body::Bytes;
use serde_json::Value;

/// Design templates the form offers (completed ones, newest first).
const TEMPLATES_SHOWN: i64 = 100;

/// What the form was sent with (kept to show it again).
#[derive(Default)]
struct BatchInput {
    products: Vec<String>,
    /// A brand whose every active product the batch is for (instead of `products`).
    brand_all: String,
    references: String,
    templates: Vec<String>,
    sizes: Vec<String>,
    editable: bool,
    prompt: String,
    /// The total (cents) the member reviewed, when "Create batch" was pressed.
    reviewed: Option<i64>,
}

impl BatchInput {
    fn of(f: &Form) -> Self {
        let owned = |v: Vec<&str>| -> Vec<String> { v.into_iter().map(str::to_string).collect() };
        Self {
            products: owned(f.all("product")),
            brand_all: f.get("brand_all").unwrap_or("").trim().to_string(),
            references: f.get("references").unwrap_or("").to_string(),
            templates: owned(f.all("template")),
            sizes: owned(f.all("size")),
            editable: f.get("editable") == Some("true"),
            prompt: f.get("prompt").unwrap_or("").to_string(),
            reviewed: f.get("reviewed").and_then(|v| v.parse().ok()),
        }
    }

    fn reference_urls(&self) -> Vec<String> {
        self.references
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    }

    fn body(&self) -> ImageAdBatchCreate {
        let brand = Some(self.brand_all.clone()).filter(|b| !b.is_empty());
        ImageAdBatchCreate {
            product_ids: brand.is_none().then(|| self.products.clone()),
            brand_id: brand,
            reference_ad_urls: self.reference_urls(),
            design_template_ids: self.templates.clone(),
            audience_ids: Vec::new(),
            sizes: self.sizes.iter().cloned().map(Value::String).collect(),
            editable: self.editable,
            prompt: Some(self.prompt.clone()).filter(|p| !p.trim().is_empty()),
        }
    }
}

/// The price of the batch the form describes, and what to change before it can be made.
struct Review {
    ads: usize,
    each: i64,
    total: i64,
    available: i64,
    problems: Vec<String>,
}

async fn review(
    state: &AppState,
    m: &SessionMember,
    input: &BatchInput,
    products: &Named,
    audiences: &Named,
) -> Result<Review, DashError> {
    let mut problems = Vec::new();
    let chosen: Vec<&(String, String, String)> = if input.brand_all.is_empty() {
        products
            .iter()
            .filter(|(id, _, _)| input.products.contains(id))
            .collect()
    } else {
        if !input.products.is_empty() {
            problems.push("Choose products or a whole brand, not both: untick the products or set “Whole brand” back to “The products ticked below”.".to_string());
        }
        products
            .iter()
            .filter(|(_, _, brand)| *brand == input.brand_all)
            .collect()
    };
    if chosen.is_empty() {
        problems.push(if input.brand_all.is_empty() {
            "Tick at least one product, or choose a whole brand.".to_string()
        } else {
            "This brand has no active products: add one, or tick products instead.".to_string()
        });
    }
    for (id, name, _) in &chosen {
        if !audiences.iter().any(|(_, _, p)| p == id) {
            problems.push(format!(
                "{} has no active audience: add one to the product, or untick it.",
                esc(name)
            ));
        }
    }
    let layouts = input.reference_urls().len() + input.templates.len();
    if layouts == 0 {
        problems.push(
            "Give at least one reference ad URL or tick a design template to lay the ads out."
                .to_string(),
        );
    }
    let ads = chosen.len() * layouts * input.sizes.len().max(1);
    if ads > MAX_ADS {
        problems.push(format!(
            "This batch would make {ads} ads; at most {MAX_ADS} are allowed: choose fewer products, layouts or sizes, or split it."
        ));
    }
    let each = if input.editable {
        EDITABLE_IMAGE_AD_CENTS
    } else {
        FLAT_IMAGE_AD_CENTS
    };
    let total = i64::try_from(ads).unwrap_or(i64::MAX).saturating_mul(each);
    let available = {
        let mut conn = state.db.read.acquire().await?;
        adforge_api::wallet::balance(&mut conn, &m.org_id)
            .await
            .map_err(|e| DashError::Internal(e.message))?
            .available_cents()
    };
    if ads > 0 && available < total {
        problems.push(format!(
            r#"The wallet has {} available and this batch costs {}: <a href="/dashboard/wallet">top up</a>, or make a smaller batch."#,
            money(available),
            money(total)
        ));
    }
    Ok(Review {
        ads,
        each,
        total,
        available,
        problems,
    })
}

fn review_html(r: &Review, changed: bool) -> String {
    let problems = if r.problems.is_empty() {
        String::new()
    } else {
        let items: String = r.problems.iter().map(|p| format!("<li>{p}</li>")).collect();
        notice(
            "error",
            &format!("<p>Before this batch can be made:</p><ul>{items}</ul>"),
        )
    };
    let changed = if changed {
        notice(
            "warn",
            "<p>The form changed since its review: check the new price, then create the batch.</p>",
        )
    } else {
        String::new()
    };
    let create = if r.problems.is_empty() {
        format!(
            r#"<input type="hidden" name="reviewed" value="{}"><input type="hidden" name="batch" value="{}"><button type="submit" name="step" value="create">Create batch</button>"#,
            r.total,
            esc(&adforge_api::ids::new_id("iab")),
        )
    } else {
        String::new()
    };
    format!(
        r#"<section class="card review" aria-labelledby="review-h" id="review"><h2 id="review-h">Review</h2>{changed}
<dl class="fields"><div><dt>Ads</dt><dd id="review-ads">{ads}</dd></div><div><dt>Price each</dt><dd>{each}</dd></div><div><dt>Total</dt><dd id="review-total"><strong>{total}</strong></dd></div><div><dt>Available in the wallet</dt><dd id="review-available">{available}</dd></div></dl>
<p class="hint">The total is held from the wallet when the batch is created; each ad is charged when it completes, and a failed or cancelled ad is not charged.</p>{problems}{create}</section>"#,
        ads = r.ads,
        each = money(r.each),
        total = money(r.total),
        available = money(r.available),
    )
}

/// The form, with `input`'s values; `extra` (a review, an error) above its buttons.
async fn form_page(
    state: &AppState,
    m: &SessionMember,
    input: &BatchInput,
    status: StatusCode,
    extra: &str,
) -> DashResult {
    let cat = catalog(&state.db, &m.org_id).await?;
    let templates = completed_templates(state, m).await;
    let mut products = String::new();
    for (bid, bname, _) in &cat.brands {
        let mut boxes = String::new();
        for (i, (pid, pname, brand)) in cat.products.iter().enumerate() {
            if brand != bid {
                continue;
            }
            let on = if input.products.contains(pid) {
                " checked"
            } else {
                ""
            };
            let _ = write!(
                boxes,
                r#"<label class="check" for="b-product-{i}"><input type="checkbox" id="b-product-{i}" name="product" value="{v}"{on}> <span>{n}</span></label>"#,
                v = esc(pid),
                n = esc(pname),
            );
        }
        if !boxes.is_empty() {
            let _ = write!(
                products,
                r#"<fieldset class="brand-products"><legend>{}</legend><div class="scopes">{boxes}</div></fieldset>"#,
                esc(bname)
            );
        }
    }
    if products.is_empty() {
        products.push_str(r#"<p class="empty">No active products yet: add a brand and its products first (<a href="/dashboard/brands">Brands</a>).</p>"#);
    }
    let mut brand_options = String::new();
    for (bid, bname, _) in &cat.brands {
        let sel = if *bid == input.brand_all {
            " selected"
        } else {
            ""
        };
        let _ = write!(
            brand_options,
            r#"<option value="{}"{sel}>Every active product of {}</option>"#,
            esc(bid),
            esc(bname)
        );
    }
    let mut template_boxes = String::new();
    for (i, t) in templates.iter().enumerate() {
        let on = if input.templates.contains(&t.id) {
            " checked"
        } else {
            ""
        };
        let _ = write!(
            template_boxes,
            r#"<label class="check" for="b-template-{i}"><input type="checkbox" id="b-template-{i}" name="template" value="{v}"{on}> <span><code>{v}</code> <small class="hint">{shape}</small></span></label>"#,
            v = esc(&t.id),
            shape = esc(t.aspect_ratio.as_deref().unwrap_or("")),
        );
    }
    let templates_html = if template_boxes.is_empty() {
        r#"<p class="hint">No completed design templates; <a href="/dashboard/templates">make one</a> to use it here.</p>"#.to_string()
    } else {
        format!(r#"<div class="scopes">{template_boxes}</div>"#)
    };
    let sizes: Vec<&str> = input.sizes.iter().map(String::as_str).collect();
    let body = format!(
        r#"<p><a href="/dashboard/batches">← All batches</a></p>
<form method="post" action="/dashboard/batches/new" class="batch-form">{csrf}
<fieldset><legend>Products</legend>
<label for="b-brand">Whole brand</label><select id="b-brand" name="brand_all"><option value="">The products ticked below</option>{brand_options}</select>
{products}</fieldset>
<fieldset><legend>Layouts</legend>
<label for="b-refs">Reference ad URLs, one a line</label><textarea id="b-refs" name="references" rows="3" maxlength="110000" placeholder="https://…" aria-describedby="b-refs-hint">{refs}</textarea>
<p class="hint" id="b-refs-hint">Public PNG, JPEG or WebP images whose composition the ads follow (at most 50).</p>
<fieldset><legend>Design templates</legend>{templates_html}</fieldset></fieldset>
<fieldset><legend>Sizes</legend><p class="hint">Each product and layout is made in every size ticked, one campaign set; none ticked: one ad at its layout's own shape.</p><div class="scopes">{size_checks}</div></fieldset>
<label for="b-prompt">Creative direction (optional)</label><textarea id="b-prompt" name="prompt" rows="3" maxlength="2000">{prompt}</textarea>
<label class="check" for="b-editable"><input type="checkbox" id="b-editable" name="editable" value="true"{ed}> <span>Editable ads: PNG and JSON tree ({editable_price} each; flat {flat_price})</span></label>
{extra}
<p><button type="submit" name="step" value="review" class="secondary">Review</button></p></form>"#,
        csrf = csrf_field(&m.csrf_token),
        refs = esc(&input.references),
        size_checks = placement_checks("b-size", &sizes),
        prompt = esc(&input.prompt),
        ed = if input.editable { " checked" } else { "" },
        editable_price = money(EDITABLE_IMAGE_AD_CENTS),
        flat_price = money(FLAT_IMAGE_AD_CENTS),
    );
    Ok(html(status, batch_page(m, "New batch", &body)))
}

/// The organisation's completed design templates; none when the list fails (the form
/// still works with references).
async fn completed_templates(state: &AppState, m: &SessionMember) -> Vec<DesignTemplate> {
    let filter = TemplateFilter {
        status: Some(vec!["completed".to_string()]),
        ..Default::default()
    };
    match design_templates::list(
        &state.db,
        &m.org_id,
        &filter,
        &ListParams::new(TEMPLATES_SHOWN),
    )
    .await
    {
        Ok(p) => p.items,
        Err(e) => {
            tracing::warn!(code = ?e.code, message = %e.message, "design templates not listed on the batch form");
            Vec::new()
        }
    }
}

/// GET /dashboard/batches/new
pub(super) async fn new_form(State(state): State<AppState>, me: SignedIn) -> DashResult {
    form_page(&state, &me.0, &BatchInput::default(), StatusCode::OK, "").await
}

/// POST /dashboard/batches/new: `step=review` shows the price; `step=create` creates the
/// batch (reviewing again when the total changed) and goes to its page.
pub(super) async fn submit(State(state): State<AppState>, me: SignedIn, body: Bytes) -> DashResult {
    let form = me.form(&body)?;
    let m = &me.0;
    let input = BatchInput::of(&form);
    let cat = catalog(&state.db, &m.org_id).await?;
    let r = review(&state, m, &input, &cat.products, &cat.audiences).await?;
    let create = form.get("step") == Some("create");
    let changed = create && input.reviewed != Some(r.total);
    if !create || changed {
        let status = if r.problems.is_empty() || !create {
            StatusCode::OK
        } else {
            StatusCode::BAD_REQUEST
        };
        return form_page(&state, m, &input, status, &review_html(&r, changed)).await;
    }
    // The review drew the batch's id: a "Create batch" sent again (a double click, a retry
    // after a lost answer) finds the batch the first one made instead of making another.
    let drawn = form
        .get("batch")
        .filter(|id| image_ad_batches::is_batch_id(id));
    let made_already = async |id: Option<&str>| match id {
        Some(id) => image_ad_batches::get(&state.db, &m.org_id, id).await.ok(),
        None => None,
    };
    if let Some(batch) = made_already(drawn).await {
        return Ok(crate::redirect(&format!("/dashboard/batches/{}", batch.id)));
    }
    let created = match image_ad_batches::create_as(&state, &m.org_id, &input.body(), drawn).await {
        Ok(batch) => {
            tracing::info!(batch_id = %batch.id, ads = batch.ad_count, profile_id = %m.profile_id, "batch created in the dashboard");
            Ok(batch)
        }
        // The same form sent twice at once: the other request created it (this one's
        // insert failed on the id and wrote nothing).
        Err(e) => made_already(drawn).await.ok_or(e),
    };
    match created {
        Ok(batch) => Ok(crate::redirect(&format!("/dashboard/batches/{}", batch.id))),
        Err(e) => {
            let (status, text) = crate::ads::api_message(e)?;
            let extra = format!(
                "{}{}",
                notice(
                    "error",
                    &format!(
                        "<p>The batch was not created: {text}</p><p>Change what it names, review again and create it.</p>"
                    )
                ),
                review_html(&r, false)
            );
            form_page(&state, m, &input, status, &extra).await
        }
    }
}
