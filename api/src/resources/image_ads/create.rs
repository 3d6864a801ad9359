//! Creating an ad ([`create_from`]: POST /v1/image-ads after the scope check; design
//! templates and the web dashboard create through it too): the synchronous checks the
//! caller can fix, the relations (brand, product, audience, variant: 404 or 422, in the
//! spec's order of precedence) resolved into the job's payload and the reference URL (422
//! REFERENCE_AD_URL_INVALID); then the wallet hold, the row and its job in one transaction.
//! With `sizes`, the ad's siblings of a campaign set are made from the same prepared brief
//! ([`PreparedAd::sibling`]) and written in the same transaction, after one check that
//! the wallet holds them all ([`super::hold_all`]).

use std::sync::Arc;

use adforge_renderer::ImageFetcher;
use adforge_worker::protocol::{
    Audience as JobAudience, Brand as JobBrand, Logo, Money, Product as JobProduct,
    Variant as JobVariant,
};
use adforge_worker::{AdBrief, GenerateAdJob, Job, TargetSize};
use serde_json::{Map, Value};

use super::{ImageAd, ImageAdCreate, PROMPT_MAX, Progress, store};
use crate::blob::{NO_SUCH_FILE, OwnFile};
use crate::error::{ApiError, ApiResult, ErrorCode, FieldError};
use crate::jobs::Jobs;
use crate::resources::common::{self, check_text};
use crate::resources::{audiences, brands, images, products, variants};
use crate::state::AppState;
use crate::store::WriteTx;
use crate::wallet;

/// Creates an ad (the whole of POST /v1/image-ads after the scope check): validation,
/// relations, the reference (not checked again for an ad made from a design template,
/// whose worker does not read it), the hold, the row and its job. `template` lays the ad
/// out with a design template's tree; `size` lays it out again for another shape.
///
/// # Errors
/// Every error POST /v1/image-ads lists.
pub async fn create_from(
    state: &AppState,
    org_id: &str,
    body: &ImageAdCreate,
    template: Option<adforge_worker::TemplateLayout>,
) -> ApiResult<ImageAd> {
    create_set(state, org_id, body, &[], template).await
}

/// [`create_from`] with the `sizes` of POST /v1/image-ads: the ad at its reference's
/// shape, and one sibling of its campaign set per size ([`super::parse_sizes`]), written
/// in one transaction once the wallet holds them all. Answers the first ad.
///
/// # Errors
/// Every error POST /v1/image-ads lists.
pub async fn create_set(
    state: &AppState,
    org_id: &str,
    body: &ImageAdCreate,
    sizes: &[Value],
    template: Option<adforge_worker::TemplateLayout>,
) -> ApiResult<ImageAd> {
    let sizes = super::parse_sizes(sizes, false)?;
    let mut ad = prepare(state, org_id, body, template, None, ReferenceCheck::Check).await?;
    if !sizes.is_empty() {
        ad.size_set_id = Some(ad.id.clone());
    }
    let siblings: Vec<PreparedAd> = sizes.into_iter().map(|s| ad.sibling(s)).collect();
    let mut tx = state.db.begin_write_for(org_id).await?;
    // One ad keeps its own 402 (the hold's); a set is refused whole, naming its total.
    if !siblings.is_empty() {
        super::hold_all(
            &mut tx,
            state,
            org_id,
            std::iter::once(&ad).chain(&siblings),
        )
        .await?;
    }
    let row = insert(&mut tx, state, org_id, &ad, None).await?;
    for sibling in &siblings {
        insert(&mut tx, state, org_id, sibling, None).await?;
    }
    tx.commit().await?;
    Ok(row)
}

/// An ad checked and resolved by [`prepare`], not yet written: [`insert`] places its hold
/// and writes its row and job. Callers that create many ads in one transaction (the sizes
/// of a set, a batch) prepare each first, so nothing is written when one of them fails.
#[derive(Clone)]
pub struct PreparedAd {
    /// The new ad's id (`ia_…`).
    pub id: String,
    /// `flat_image_ad` or `editable_image_ad`.
    pub sku: &'static str,
    /// The price held now and charged when the ad first completes.
    pub price_cents: i64,
    /// The job that makes it.
    pub job: Job,
    /// The campaign set the ad joins (the id of the set's first ad; the first ad names
    /// itself), if any. [`prepare`] leaves it `None`.
    pub size_set_id: Option<String>,
    brand_id: String,
    product_id: String,
    audience_id: String,
    product_variant_id: Option<String>,
    reference_ad_url: String,
    prompt: Option<String>,
    editable: bool,
    search_name: String,
    source: Option<(String, i64)>,
    now: String,
}

/// Whether [`prepare`] checks the reference URL itself (a blob read or a fetch, and the
/// image's header probed) or its caller already did for the same URL in this request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReferenceCheck {
    /// Fetch and probe it.
    Check,
    /// The caller checked this very URL moments ago (a batch's earlier combination).
    AlreadyChecked,
}

/// Checks and resolves a create without writing anything: validation, relations and the
/// reference (skipped for an ad laid out by a design template, whose worker does not read
/// it, and where `reference` says it was checked already). `size` makes the ad at another
/// shape than its reference's.
///
/// # Errors
/// Every error POST /v1/image-ads lists but the wallet's.
pub async fn prepare(
    state: &AppState,
    org_id: &str,
    body: &ImageAdCreate,
    template: Option<adforge_worker::TemplateLayout>,
    size: Option<adforge_worker::TargetSize>,
    reference: ReferenceCheck,
) -> ApiResult<PreparedAd> {
    let mut errors: Vec<FieldError> = Vec::new();
    let prompt = check_text("prompt", body.prompt.clone(), PROMPT_MAX, &mut errors);
    if body.reference_ad_url.len() > 2048 {
        errors.push(FieldError::new(
            "reference_ad_url",
            "must be at most 2048 characters",
        ));
    }
    common::finish(errors)?;
    let r = resolve(state, org_id, body).await?;
    if template.is_none() && reference == ReferenceCheck::Check {
        check_reference(state, body.reference_ad_url.clone()).await?;
    }
    let source = template
        .as_ref()
        .map(|t| (t.template_id.clone(), i64::from(t.json_tree_version)));

    let (sku, price) = if body.editable {
        ("editable_image_ad", wallet::EDITABLE_IMAGE_AD_CENTS)
    } else {
        ("flat_image_ad", wallet::FLAT_IMAGE_AD_CENTS)
    };
    let id = crate::ids::new_id("ia");
    // The ad's creation time travels in the job: the copy is written for that moment (an
    // offer that has ended by then is not stated), the same on every retry.
    let now = crate::timestamp::now();
    let job = Job::GenerateImageAd(GenerateAdJob {
        ad_id: id.clone(),
        org_id: org_id.to_owned(),
        version: 1,
        editable: body.editable,
        reference_ad_url: body.reference_ad_url.clone(),
        brief: AdBrief {
            prompt: prompt.clone(),
            brand: r.brand,
            product: r.product,
            audience: r.audience,
            variant_image_urls: r.variant_image_urls,
            variant: Some(r.variant),
            created_at: Some(now.clone()),
        },
        template,
        size,
    });
    Ok(PreparedAd {
        id,
        sku,
        price_cents: price,
        job,
        size_set_id: None,
        brand_id: body.brand_id.clone(),
        product_id: body.product_id.clone(),
        audience_id: body.audience_id.clone(),
        product_variant_id: body.product_variant_id.as_ref().map(|_| r.variant_id),
        reference_ad_url: body.reference_ad_url.clone(),
        prompt,
        editable: body.editable,
        search_name: r.search_name,
        source,
        now,
    })
}

impl PreparedAd {
    /// Another ad of this one's campaign set, laid out at `size`: a new id, the same
    /// brief (the same creation time, so the same words), relations, price and set.
    pub fn sibling(&self, mut size: TargetSize) -> PreparedAd {
        let id = crate::ids::new_id("ia");
        let mut job = self.job.clone();
        if let Job::GenerateImageAd(j) = &mut job {
            j.ad_id = id.clone();
            // The first ad's id seeds every size's node ids: one set, one set of ids.
            size.node_seed = Some(self.id.clone());
            j.size = Some(size);
        }
        PreparedAd {
            id,
            job,
            ..self.clone()
        }
    }

    /// The size of a set the ad is laid out for, as its row keeps it.
    fn size(&self) -> Option<(Option<&str>, u32, u32)> {
        match &self.job {
            Job::GenerateImageAd(GenerateAdJob { size: Some(s), .. }) => {
                Some((s.placement.as_deref(), s.width, s.height))
            }
            _ => None,
        }
    }
}

/// A resize of the completed ad `src` at `size` (which carries the source tree for an
/// editable ad): `job` is the source's own generation job (replayed: the same brief and
/// creation time), given a new id; the relations, SKU and price are the source's.
pub(super) fn resized(
    src: &store::ResizeSource,
    mut job: GenerateAdJob,
    size: TargetSize,
    set_id: &str,
) -> PreparedAd {
    let id = crate::ids::new_id("ia");
    job.ad_id.clone_from(&id);
    job.version = 1;
    job.size = Some(size);
    let (sku, price_cents) = if src.editable {
        ("editable_image_ad", wallet::EDITABLE_IMAGE_AD_CENTS)
    } else {
        ("flat_image_ad", wallet::FLAT_IMAGE_AD_CENTS)
    };
    PreparedAd {
        id,
        sku,
        price_cents,
        job: Job::GenerateImageAd(job),
        size_set_id: Some(set_id.to_owned()),
        brand_id: src.brand_id.clone(),
        product_id: src.product_id.clone(),
        audience_id: src.audience_id.clone(),
        product_variant_id: src.product_variant_id.clone(),
        reference_ad_url: src.reference_ad_url.clone(),
        prompt: src.prompt.clone(),
        editable: src.editable,
        search_name: src.search_name.clone(),
        source: src
            .source_design_template_id
            .clone()
            .map(|t| (t, src.source_design_template_version.unwrap_or(1))),
        now: crate::timestamp::now(),
    }
}

/// The generation job of an ad whose stored job is no longer one (an edited or synced
/// editable ad, resized from its tree): its relations resolved again (404/422 when one is
/// gone), the brief dated at the ad's creation.
///
/// # Errors
/// Those of the relations, as POST /v1/image-ads answers them.
pub(super) async fn rebuilt_job(
    state: &AppState,
    org_id: &str,
    src: &store::ResizeSource,
) -> ApiResult<GenerateAdJob> {
    let r = resolve_ids(
        state,
        org_id,
        &src.brand_id,
        &src.product_id,
        &src.audience_id,
        src.product_variant_id.as_deref(),
    )
    .await?;
    Ok(GenerateAdJob {
        ad_id: src.id.clone(),
        org_id: org_id.to_owned(),
        version: 1,
        editable: src.editable,
        reference_ad_url: src.reference_ad_url.clone(),
        brief: AdBrief {
            prompt: src.prompt.clone(),
            brand: r.brand,
            product: r.product,
            audience: r.audience,
            variant_image_urls: r.variant_image_urls,
            variant: Some(r.variant),
            created_at: Some(src.created_at.clone()),
        },
        template: None,
        size: None,
    })
}

/// Writes a [`prepare`]d ad in the caller's write transaction: the wallet hold for its
/// price (402 when the available balance does not cover it), the `processing` row (in
/// batch `batch_id` when given) and its job in the outbox, handed to the queue after the
/// commit.
///
/// # Errors
/// 402 INSUFFICIENT_BALANCE; database failures.
pub async fn insert(
    tx: &mut WriteTx,
    state: &AppState,
    org_id: &str,
    ad: &PreparedAd,
    batch_id: Option<&str>,
) -> ApiResult<ImageAd> {
    let queued = Progress {
        step: "queued".into(),
        message: "Waiting for a worker".into(),
        percentage: 0,
    };
    wallet::hold(tx, org_id, ad.price_cents, &ad.id, &state.dashboard_url).await?;
    store::insert_ad(
        tx,
        &store::NewAd {
            id: &ad.id,
            org_id,
            brand_id: &ad.brand_id,
            product_id: &ad.product_id,
            audience_id: &ad.audience_id,
            product_variant_id: ad.product_variant_id.clone(),
            reference_ad_url: &ad.reference_ad_url,
            prompt: ad.prompt.as_deref(),
            editable: ad.editable,
            sku: ad.sku,
            price_cents: ad.price_cents,
            progress: &queued,
            job: &ad.job,
            search_name: &ad.search_name,
            now: &ad.now,
            source: ad.source.clone(),
            batch_id,
            size: ad.size(),
            size_set_id: ad.size_set_id.as_deref(),
        },
    )
    .await?;
    Jobs::stage(tx, &ad.job).await?;
    let row = store::load(&mut **tx, org_id, &ad.id).await?;
    let jobs = state.jobs.clone();
    tx.after_commit(move || jobs.kick());
    Ok(row.into_ad(None))
}

/// The relations of a create, resolved into what the job carries.
pub(super) struct Resolved {
    pub brand: JobBrand,
    pub product: JobProduct,
    pub audience: JobAudience,
    pub variant_id: String,
    pub variant: JobVariant,
    pub variant_image_urls: Vec<String>,
    pub search_name: String,
}

fn money(p: variants::Price) -> Money {
    Money {
        amount: p.amount,
        currency: p.currency,
    }
}

fn object(v: Option<Map<String, Value>>) -> Value {
    v.map_or(Value::Object(Map::new()), Value::Object)
}

/// Resolves and checks every relation of a create, in the spec's order of precedence.
async fn resolve(state: &AppState, org_id: &str, body: &ImageAdCreate) -> ApiResult<Resolved> {
    resolve_ids(
        state,
        org_id,
        &body.brand_id,
        &body.product_id,
        &body.audience_id,
        body.product_variant_id.as_deref(),
    )
    .await
}

/// [`resolve`] by ids (a sync from Figma resolves its inputs with it too).
pub(super) async fn resolve_ids(
    state: &AppState,
    org_id: &str,
    brand_id: &str,
    product_id: &str,
    audience_id: &str,
    product_variant_id: Option<&str>,
) -> ApiResult<Resolved> {
    let db = &state.db.read;
    let brand = brands::load(db, org_id, brand_id).await?;
    let product = products::load(db, org_id, product_id).await?;
    let audience = audiences::load(db, org_id, audience_id).await?;
    if product.brand_id != brand.id {
        return Err(ApiError::new(
            ErrorCode::ProductBrandMismatch,
            format!(
                "Product `{}` belongs to brand `{}`, not to `{}`",
                product.id, product.brand_id, brand.id
            ),
        ));
    }
    if audience.product_id != product.id {
        return Err(ApiError::new(
            ErrorCode::AudienceProductMismatch,
            format!(
                "Audience `{}` belongs to product `{}`, not to `{}`",
                audience.id, audience.product_id, product.id
            ),
        ));
    }
    let variant = match product_variant_id {
        Some(vid) => {
            let v = variants::load(db, org_id, vid).await?;
            if v.product_id != product.id {
                return Err(ApiError::field(
                    "product_variant_id",
                    format!(
                        "`{vid}` is a variant of product `{}`, not of `{}`",
                        v.product_id, product.id
                    ),
                ));
            }
            if v.image_ids.is_empty() {
                return Err(ApiError::new(
                    ErrorCode::ProductVariantNoImages,
                    format!(
                        "Variant `{vid}` has no images; attach some with PATCH /v1/product-variants/{vid} (image_ids)"
                    ),
                ));
            }
            v
        }
        None => {
            let mut conn = state.db.read.acquire().await?;
            variants::active_of_product(&mut conn, &product.id)
                .await?
                .into_iter()
                .find(|v| !v.image_ids.is_empty())
                .ok_or_else(|| {
                    ApiError::new(
                        ErrorCode::ProductVariantNoImages,
                        format!(
                            "Product `{}` has no variant with images; attach images to a variant with PATCH /v1/product-variants/{{id}} (image_ids)",
                            product.id
                        ),
                    )
                })?
        }
    };
    let variant_image_urls =
        images::live_urls(&state.db, state.blobs.as_ref(), org_id, &variant.image_ids).await?;
    if variant_image_urls.is_empty() {
        return Err(ApiError::new(
            ErrorCode::ProductVariantNoImages,
            format!("The images of variant `{}` were deleted", variant.id),
        ));
    }
    let logo_ids = brand.logo_image_ids.clone().unwrap_or_default();
    let logos = images::live_logos(&state.db, state.blobs.as_ref(), org_id, &logo_ids).await?;
    Ok(Resolved {
        search_name: product.name.to_lowercase(),
        brand: JobBrand {
            id: brand.id,
            name: brand.name,
            color_palettes: object(brand.color_palettes),
            fonts: serde_json::to_value(&brand.fonts).unwrap_or(Value::Null),
            logos: logos
                .into_iter()
                .map(|(url, theme)| Logo { url, theme })
                .collect(),
            details: brand.details.map_or(Value::Null, Value::Object),
        },
        product: JobProduct {
            id: product.id,
            name: product.name,
            description: product.description,
            details: object(product.details),
        },
        audience: JobAudience {
            id: audience.id,
            name: audience.name,
            description: audience.description,
            details: object(audience.details),
        },
        variant: JobVariant {
            id: variant.id.clone(),
            name: variant.name,
            price: variant.price.map(money),
            compare_at_price: variant.compare_at_price.map(money),
        },
        variant_id: variant.id,
        variant_image_urls,
    })
}

/// Fetches the reference (this server's own files from the blob store, others through
/// the public-address guard) and checks it is an image.
async fn check_reference(state: &AppState, url: String) -> ApiResult<()> {
    let fetcher: Arc<adforge_renderer::HttpFetcher> = state.reference_fetcher.clone();
    let invalid = |why: String| {
        ApiError::new(
            ErrorCode::ReferenceAdUrlInvalid,
            format!("reference_ad_url {why}; give a publicly reachable PNG, JPEG or WebP URL"),
        )
    };
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(invalid("is not an http(s) URL".into()));
    }
    // This server's own files are read from the blob store, by the one mapping of own URLs
    // to keys that the worker uses too; a malformed own URL says what to change.
    let own_invalid = |why: &str| {
        ApiError::new(
            ErrorCode::ReferenceAdUrlInvalid,
            format!("reference_ad_url {why}"),
        )
    };
    let own = match state.blobs.own_file(&url) {
        OwnFile::Foreign => None,
        OwnFile::Invalid(why) => return Err(own_invalid(&why)),
        OwnFile::Key(key) => match state.blobs.get(&key).await.map_err(ApiError::internal)? {
            Some(bytes) => Some(bytes.to_vec()),
            None => return Err(own_invalid(NO_SUCH_FILE)),
        },
    };
    let checked = tokio::task::spawn_blocking(move || -> Result<(u32, u32), String> {
        let bytes = match own {
            Some(bytes) => bytes,
            None => fetcher.fetch(&url)?,
        };
        let format = image::guess_format(&bytes).map_err(|_| "is not an image".to_string())?;
        if !matches!(
            format,
            image::ImageFormat::Png | image::ImageFormat::Jpeg | image::ImageFormat::WebP
        ) {
            return Err(format!("is a {format:?} image, not PNG, JPEG or WebP"));
        }
        image::ImageReader::with_format(std::io::Cursor::new(&bytes), format)
            .into_dimensions()
            .map_err(|e| format!("cannot be decoded ({e})"))
    })
    .await
    .map_err(ApiError::internal)?;
    match checked {
        Ok((w, h))
            if w > 0
                && h > 0
                && w <= adforge_worker::imaging::MAX_SIDE
                && h <= adforge_worker::imaging::MAX_SIDE =>
        {
            Ok(())
        }
        Ok((w, h)) => Err(invalid(format!(
            "is {w}×{h} pixels, over the limit of {} a side",
            adforge_worker::imaging::MAX_SIDE
        ))),
        Err(why) if why.starts_with("is ") || why.starts_with("cannot") => Err(invalid(why)),
        Err(why) => Err(invalid(format!("could not be fetched ({why})"))),
    }
}
