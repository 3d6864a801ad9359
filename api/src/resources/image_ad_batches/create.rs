//! POST /v1/image-ad-batches: the matrix, every item checked before anything is written,
//! the wallet checked for the whole batch, then one write transaction.
//!
//! The matrix is products × audiences × layouts (references, then design templates), each
//! combination in every size; item `N` is combination `N / sizes` at size `N % sizes`. A
//! combination is checked once with the single ad's own [`prepare`] (relations, variant,
//! reference) and its other sizes are siblings of its first ad ([`PreparedAd::sibling`]:
//! the same brief, so the same words, and one campaign set, `size_set_id`). Combinations
//! are checked one after another in matrix order, so the first failing item by
//! index is the one reported. A reference shared by several combinations is checked (for
//! this server's own files a blob read and a header probe; for a remote URL a fetch) by the
//! first combination that names it only ([`ReferenceCheck`]): a batch of one remote
//! reference for 100 audiences fetched it 100 times before.

use std::collections::HashSet;

use adforge_worker::TargetSize;

use super::store::{self, NewBatch, NewItem};
use super::{BatchCounts, ImageAdBatch, ImageAdBatchCreate};
use crate::error::{ApiError, ApiResult, ErrorCode, FieldError};
use crate::resources::common::{self, check_text};
use crate::resources::image_ads::{self, ImageAdCreate, PreparedAd, ReferenceCheck, prepare};
use crate::resources::products::{self, Product, ProductFilter};
use crate::resources::variants::Price;
use crate::resources::{audiences, brands, design_templates};
use crate::state::AppState;
use crate::store::list::ListParams;
use crate::wallet;

/// The most ads one batch makes.
pub const MAX_ADS: usize = 500;
/// The most references, and the most design templates, of a batch.
const MAX_LAYOUTS: usize = 50;
/// Longest prompt (as POST /v1/image-ads).
const PROMPT_MAX: usize = 2_000;

/// A layout of the matrix.
enum Layout {
    Reference(String),
    /// Index into the batch's design templates.
    Template(usize),
}

/// One combination of the matrix (product × audience × layout), before it is checked:
/// its ads are its sizes (one ad at the layout's own shape without sizes).
struct Combination<'a> {
    product: &'a Product,
    audience_id: String,
    layout: &'a Layout,
}

impl Combination<'_> {
    /// What the combination is, for messages.
    fn describe(
        &self,
        templates: &[design_templates::TemplateRow],
        sizes: &[(String, TargetSize)],
    ) -> String {
        let layout = match self.layout {
            Layout::Reference(url) => format!("reference `{url}`"),
            Layout::Template(t) => format!("design template `{}`", templates[*t].id),
        };
        let size = if sizes.is_empty() {
            "its layout's own size".to_owned()
        } else {
            let labels: Vec<&str> = sizes.iter().map(|(l, _)| l.as_str()).collect();
            format!("sizes {}", labels.join(", "))
        };
        format!(
            "product `{}`, audience `{}`, {layout}, {size}",
            self.product.id, self.audience_id
        )
    }
}

/// The error of item `index`, its message and fields naming the item.
fn at_item(mut e: ApiError, index: usize, what: &str) -> ApiError {
    e.message = format!("items[{index}] ({what}): {}", e.message);
    for d in &mut e.details {
        d.field = format!("items[{index}].{}", d.field);
    }
    e
}

/// The error of the list entry `field[index]`.
fn at_entry(mut e: ApiError, field: &str, index: usize) -> ApiError {
    e.message = format!("{field}[{index}]: {}", e.message);
    e
}

/// The label of a size: its placement's name, or `WxH`.
fn label(t: &TargetSize) -> String {
    t.placement
        .clone()
        .unwrap_or_else(|| format!("{}x{}", t.width, t.height))
}

/// Pushes an error for each repeated value of `field`.
fn no_repeats(field: &str, values: &[String], errors: &mut Vec<FieldError>) {
    for (i, v) in values.iter().enumerate() {
        if values[..i].contains(v) {
            errors.push(FieldError::new(
                format!("{field}[{i}]"),
                format!("`{v}` is given twice; give each once"),
            ));
        }
    }
}

/// Every active product of `brand_id`, oldest first.
async fn products_of_brand(
    state: &AppState,
    org_id: &str,
    brand_id: &str,
) -> ApiResult<Vec<Product>> {
    brands::load(&state.db.read, org_id, brand_id).await?;
    let filter = ProductFilter {
        archived: false,
        brand_ids: Some(vec![brand_id.to_owned()]),
    };
    let mut out = Vec::new();
    let mut p = ListParams::new(crate::store::list::MAX_LIMIT);
    loop {
        let page = products::list(&state.db, org_id, &filter, &p).await?;
        let more = page.has_more;
        out.extend(page.items);
        if !more || out.len() > MAX_ADS {
            break;
        }
        p.starting_after = out.last().map(|p: &Product| p.id.clone());
    }
    out.reverse();
    Ok(out)
}

/// What every combination of a batch shares.
#[derive(Clone, Copy)]
struct Shared<'a> {
    body: &'a ImageAdBatchCreate,
    prompt: Option<&'a str>,
    templates: &'a [design_templates::TemplateRow],
    sizes: &'a [(String, TargetSize)],
}

/// Checks one combination and prepares its ads, one per size in order (its first ad's
/// siblings for the sizes after the first).
async fn check(
    state: &AppState,
    org_id: &str,
    batch: &Shared<'_>,
    combo: &Combination<'_>,
    reference_check: ReferenceCheck,
) -> ApiResult<Vec<PreparedAd>> {
    let Shared {
        body,
        prompt,
        templates,
        sizes,
    } = *batch;
    let (reference, template) = match combo.layout {
        Layout::Reference(url) => (url.clone(), None),
        Layout::Template(t) => (
            templates[*t].reference_image_url.clone(),
            Some(design_templates::ads::layout_of(&templates[*t])?),
        ),
    };
    let one = ImageAdCreate {
        reference_ad_url: reference,
        brand_id: body
            .brand_id
            .clone()
            .unwrap_or_else(|| combo.product.brand_id.clone()),
        product_id: combo.product.id.clone(),
        audience_id: combo.audience_id.clone(),
        editable: body.editable,
        product_variant_id: None,
        prompt: prompt.map(str::to_owned),
    };
    let first_size = sizes.first().map(|(_, t)| t.clone());
    let mut first = prepare(state, org_id, &one, template, first_size, reference_check).await?;
    if sizes.is_empty() {
        return Ok(vec![first]);
    }
    // One campaign set: the first ad names itself, its siblings name it.
    first.size_set_id = Some(first.id.clone());
    let mut ads = Vec::with_capacity(sizes.len());
    ads.push(first.clone());
    for (_, size) in &sizes[1..] {
        ads.push(first.sibling(size.clone()));
    }
    Ok(ads)
}

/// Creates the batch (the whole of POST /v1/image-ad-batches after the scope check).
///
/// # Errors
/// VALIDATION_ERROR (fields, sizes, no layout, a product without audience, over
/// [`MAX_ADS`]); the 404s and 422s of its relations and of each item (naming it);
/// INSUFFICIENT_BALANCE for the whole batch; database failures.
pub async fn create(
    state: &AppState,
    org_id: &str,
    body: &ImageAdBatchCreate,
) -> ApiResult<ImageAdBatch> {
    create_as(state, org_id, body, None).await
}

/// Whether `id` is one [`crate::ids::new_id`] could have made for a batch (`iab_` and up to
/// 22 base62 characters).
pub fn is_batch_id(id: &str) -> bool {
    id.strip_prefix("iab_").is_some_and(|rest| {
        (1..=22).contains(&rest.len()) && rest.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// [`create`] under an id its caller drew beforehand ([`is_batch_id`]; `None`: a fresh
/// one). The dashboard draws it when it shows the review, so a "Create batch" sent twice
/// names one batch: the second insert fails on the batch's primary key and writes nothing
/// (the caller then finds the batch the first made).
///
/// # Errors
/// Those of [`create`]; VALIDATION_ERROR when `id` is malformed; CONFLICT when a batch
/// with this id exists (its insert's unique violation), nothing written.
pub async fn create_as(
    state: &AppState,
    org_id: &str,
    body: &ImageAdBatchCreate,
    id: Option<&str>,
) -> ApiResult<ImageAdBatch> {
    if let Some(id) = id
        && !is_batch_id(id)
    {
        return Err(ApiError::validation(vec![FieldError::new(
            "id",
            "must be a batch id (iab_ and up to 22 letters or digits)",
        )]));
    }
    let mut errors = Vec::new();
    let prompt = check_text("prompt", body.prompt.clone(), PROMPT_MAX, &mut errors);
    match &body.product_ids {
        None if body.brand_id.is_none() => errors.push(FieldError::new(
            "product_ids",
            "give product_ids, or brand_id for every active product of a brand",
        )),
        Some(ids) if ids.is_empty() => errors.push(FieldError::new(
            "product_ids",
            "must name at least one product (or leave it out and give brand_id)",
        )),
        Some(ids) if ids.len() > MAX_ADS => errors.push(FieldError::new(
            "product_ids",
            format!(
                "names {} products; at most {MAX_ADS} are allowed",
                ids.len()
            ),
        )),
        Some(ids) => no_repeats("product_ids", ids, &mut errors),
        None => {}
    }
    for (field, list) in [
        ("reference_ad_urls", &body.reference_ad_urls),
        ("design_template_ids", &body.design_template_ids),
    ] {
        if list.len() > MAX_LAYOUTS {
            errors.push(FieldError::new(
                field,
                format!("names {}; at most {MAX_LAYOUTS} are allowed", list.len()),
            ));
        }
        no_repeats(field, list, &mut errors);
    }
    for (i, url) in body.reference_ad_urls.iter().enumerate() {
        if url.len() > 2048 {
            errors.push(FieldError::new(
                format!("reference_ad_urls[{i}]"),
                "must be at most 2048 characters",
            ));
        }
    }
    if body.reference_ad_urls.is_empty() && body.design_template_ids.is_empty() {
        errors.push(FieldError::new(
            "reference_ad_urls",
            "give at least one reference ad URL or design template id (design_template_ids) to lay the ads out",
        ));
    }
    no_repeats("audience_ids", &body.audience_ids, &mut errors);
    common::finish(errors)?;
    let sizes: Vec<(String, TargetSize)> = image_ads::parse_sizes(&body.sizes, false)?
        .into_iter()
        .map(|t| (label(&t), t))
        .collect();

    // Products, then each product's audiences.
    let products: Vec<Product> = match &body.product_ids {
        Some(ids) => {
            let mut out = Vec::with_capacity(ids.len());
            for (i, id) in ids.iter().enumerate() {
                out.push(
                    products::load(&state.db.read, org_id, id)
                        .await
                        .map_err(|e| at_entry(e, "product_ids", i))?,
                );
            }
            out
        }
        None => {
            let brand_id = body.brand_id.as_deref().unwrap_or_default();
            let out = products_of_brand(state, org_id, brand_id).await?;
            if out.is_empty() {
                return Err(ApiError::field(
                    "brand_id",
                    format!(
                        "brand `{brand_id}` has no active products; add one or give product_ids"
                    ),
                ));
            }
            out
        }
    };
    let mut named: Vec<Vec<String>> = vec![Vec::new(); products.len()];
    for (i, id) in body.audience_ids.iter().enumerate() {
        let a = audiences::load(&state.db.read, org_id, id)
            .await
            .map_err(|e| at_entry(e, "audience_ids", i))?;
        let Some(p) = products.iter().position(|p| p.id == a.product_id) else {
            return Err(ApiError::new(
                ErrorCode::AudienceProductMismatch,
                format!(
                    "audience_ids[{i}]: audience `{id}` belongs to product `{}`, which is not one of the batch's products",
                    a.product_id
                ),
            ));
        };
        named[p].push(a.id);
    }
    for (i, p) in products.iter().enumerate() {
        if named[i].is_empty() {
            let mut conn = state.db.read.acquire().await?;
            let first = audiences::active_of_product(&mut conn, &p.id).await?;
            let Some(first) = first.into_iter().next() else {
                return Err(ApiError::field(
                    "audience_ids",
                    format!(
                        "product `{}` has no active audience; add one (POST /v1/audiences) or name one in audience_ids",
                        p.id
                    ),
                ));
            };
            named[i].push(first.id);
        }
    }

    let layouts: Vec<Layout> = body
        .reference_ad_urls
        .iter()
        .cloned()
        .map(Layout::Reference)
        .chain((0..body.design_template_ids.len()).map(Layout::Template))
        .collect();
    let per_audience = layouts.len() * sizes.len().max(1);
    let ad_count: usize = named.iter().map(|a| a.len() * per_audience).sum();
    if ad_count > MAX_ADS {
        return Err(ApiError::field(
            "product_ids",
            format!(
                "this batch makes {ad_count} ads ({} products and their audiences × {} layouts × {} sizes); at most {MAX_ADS} are allowed: split it",
                products.len(),
                layouts.len(),
                sizes.len().max(1)
            ),
        ));
    }

    let mut templates = Vec::with_capacity(body.design_template_ids.len());
    for (i, id) in body.design_template_ids.iter().enumerate() {
        let row = design_templates::load_row(
            &state.db.read,
            org_id,
            id,
            design_templates::Deletion::LiveOnly,
        )
        .await
        .map_err(|e| at_entry(e, "design_template_ids", i))?;
        design_templates::require_ready(&row, "make ads")
            .map_err(|e| at_entry(e, "design_template_ids", i))?;
        templates.push(row);
    }

    // The matrix: product × audience × layout, each in every size. A combination is
    // checked once; its other sizes are siblings of its first ad (the same brief and words),
    // one campaign set.
    let mut combinations = Vec::new();
    for (p, product) in products.iter().enumerate() {
        for audience_id in &named[p] {
            for layout in &layouts {
                combinations.push(Combination {
                    product,
                    audience_id: audience_id.clone(),
                    layout,
                });
            }
        }
    }
    let per = sizes.len().max(1);
    let templates = &templates;
    let sizes = &sizes;
    let prompt = &prompt;
    // One combination at a time: a check reads the store and may fetch a reference, and a
    // batch is bounded (MAX_ADS); checks side by side made the handler's future lose `Send`
    // through the closures' borrowed lifetimes.
    // A reference URL is fetched and probed by the first combination that names it; the
    // others trust that check (a failing reference fails its first item, which is the one
    // reported, so skipping the rest changes no answer).
    let shared = Shared {
        body,
        prompt: prompt.as_deref(),
        templates,
        sizes,
    };
    let mut checked: HashSet<&str> = HashSet::new();
    let mut prepared: Vec<Vec<PreparedAd>> = Vec::with_capacity(combinations.len());
    for (c, combo) in combinations.iter().enumerate() {
        // Marked checked before its check: a failing check ends the loop.
        let reference = match combo.layout {
            Layout::Reference(url) if !checked.insert(url.as_str()) => {
                ReferenceCheck::AlreadyChecked
            }
            _ => ReferenceCheck::Check,
        };
        let ads = check(state, org_id, &shared, combo, reference)
            .await
            .map_err(|e| at_item(e, c * per, &combo.describe(templates, sizes)))?;
        prepared.push(ads);
    }
    let prepared_count: usize = prepared.iter().map(Vec::len).sum();

    let total: i64 = prepared.iter().flatten().map(|a| a.price_cents).sum();
    let id = id.map_or_else(|| crate::ids::new_id("iab"), str::to_owned);
    let now = crate::timestamp::now();
    let mut request = body.clone();
    request.product_ids = Some(products.iter().map(|p| p.id.clone()).collect());
    request.prompt = prompt.clone();
    let mut tx = state.db.begin_write_for(org_id).await?;
    let balance = wallet::balance(&mut tx, org_id).await?;
    if balance.available_cents() < total {
        return Err(ApiError::new(
            ErrorCode::InsufficientBalance,
            format!(
                "Insufficient balance: this batch of {} ads costs {} and {} is available ({} balance, {} held by work in progress); top up at {}, or make a smaller batch",
                prepared_count,
                wallet::dollars(total),
                wallet::dollars(balance.available_cents()),
                wallet::dollars(balance.balance_cents),
                wallet::dollars(balance.held_cents),
                state.dashboard_url
            ),
        ));
    }
    store::insert_batch(
        &mut tx,
        &NewBatch {
            id: &id,
            org_id,
            brand_id: body.brand_id.as_deref(),
            request: &request,
            ad_count: i64::try_from(prepared_count).unwrap_or(i64::MAX),
            total_price_cents: total,
            now: &now,
        },
    )
    .await?;
    for (c, (combo, ads)) in combinations.iter().zip(&prepared).enumerate() {
        let layout = match combo.layout {
            Layout::Reference(url) => url.as_str(),
            Layout::Template(t) => templates[*t].id.as_str(),
        };
        for (k, ad) in ads.iter().enumerate() {
            image_ads::insert(&mut tx, state, org_id, ad, Some(id.as_str())).await?;
            store::insert_item(
                &mut tx,
                &id,
                &NewItem {
                    item: i64::try_from(c * per + k).unwrap_or(i64::MAX),
                    ad_id: &ad.id,
                    product_id: &combo.product.id,
                    product_name: &combo.product.name,
                    layout,
                    size: sizes.get(k).map(|(l, _)| l.as_str()),
                },
            )
            .await?;
        }
    }
    tx.commit().await?;
    // Built here rather than read back: inside an idempotent request the commit happens
    // after this answer is made.
    let n = i64::try_from(prepared_count).unwrap_or(i64::MAX);
    Ok(ImageAdBatch {
        id,
        status: "processing".to_owned(),
        ad_count: n,
        total_price: Price {
            amount: total,
            currency: "usd".to_owned(),
        },
        amount_charged: Price {
            amount: 0,
            currency: "usd".to_owned(),
        },
        counts: BatchCounts {
            processing: n,
            ..BatchCounts::default()
        },
        progress: 0.0,
        product_ids: request.product_ids.unwrap_or_default(),
        brand_id: request.brand_id,
        reference_ad_urls: request.reference_ad_urls,
        design_template_ids: request.design_template_ids,
        audience_ids: request.audience_ids,
        sizes: request.sizes,
        editable: request.editable,
        prompt: request.prompt,
        created_at: now,
        completed_at: None,
        cancelled_at: None,
    })
}

#[cfg(test)]
mod tests {
    use super::is_batch_id;

    #[test]
    fn only_ids_new_id_could_draw_are_batch_ids() {
        assert!(is_batch_id(&crate::ids::new_id("iab")));
        for bad in [
            "",
            "iab_",
            "ia_abc",
            "iab_abc def",
            "iab_../x",
            "iab_abcdefghijklmnopqrstuvw",
        ] {
            assert!(!is_batch_id(bad), "{bad:?}");
        }
    }
}
