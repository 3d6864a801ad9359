//! `POST /v1/image-ads/sync`: an editable ad from a Figma frame (202, asynchronous), and a
//! re-sync of such an ad from its frame (`image_ad_id`).
//!
//! The request only checks what the caller can fix (the link, the relations, the Figma
//! connection, the balance) and queues a [`adforge_worker::Job::SyncFigma`]; a worker reads
//! the frame, imports it and renders it ([`adforge_worker::figma`]), and [`apply`] stores
//! the result. The API never waits on Figma. Billing is the editable SKU's: the price is
//! held here and charged when the first sync completes; re-syncs are free, like the edits
//! an editable ad's price covers.
//!
//! A re-sync makes version N+1 of the ad: if Figma's frame has not changed since the last
//! sync (the file's `version`, or the frame's JSON hash, is the same) nothing new is made
//! and the ad goes back to `completed` at version N; otherwise the new import becomes
//! version N+1 (edits made with PATCH in between are replaced by the frame's state).

mod state;
mod store;

pub use state::next_state;

use adforge_worker::figma::url::{FrameRef, check_file_key, node_id, parse_link};
use adforge_worker::protocol::{FigmaFrameVersion, FigmaSyncJob, FigmaTarget};
use adforge_worker::{AdBrief, Job};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;

use super::{ImageAd, PROMPT_MAX, Progress};
use crate::auth::{Auth, Scope};
use crate::error::{ApiError, ApiResult, ErrorCode, FieldError};
use crate::http::envelope::{Envelope, Meta};
use crate::http::extract::JsonBody;
use crate::jobs::Jobs;
use crate::resources::common::{self, check_text};
use crate::resources::integrations::{FigmaSyncState, sealed_token};
use crate::state::AppState;
use crate::wallet;

/// Body of POST /v1/image-ads/sync.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageAdSync {
    /// The frame's Figma link, as Figma's "Copy link to selection" gives it
    /// (`https://www.figma.com/design/FILE_KEY/Name?node-id=1-2`; `/file/`, `/proto/` and
    /// branch links too). Or give `figma_file_key` and `figma_node_id` instead.
    #[schema(max_length = 2048)]
    pub figma_url: Option<String>,
    /// The file key (letters and digits), with `figma_node_id`, instead of `figma_url`.
    pub figma_file_key: Option<String>,
    /// The frame's node id, `1:2` (or `1-2` as links write it), with `figma_file_key`.
    pub figma_node_id: Option<String>,
    /// Re-sync this synced ad (`ia_…`) from its own frame, with its own inputs: give no
    /// other field except `fill_slots` (and, if given, the same frame).
    pub image_ad_id: Option<String>,
    /// Required for a new ad, like POST /v1/image-ads.
    pub brand_id: Option<String>,
    /// Required for a new ad; must belong to `brand_id` (else 422 PRODUCT_BRAND_MISMATCH).
    pub product_id: Option<String>,
    /// Required for a new ad; must belong to `product_id` (else 422
    /// AUDIENCE_PRODUCT_MISMATCH).
    pub audience_id: Option<String>,
    /// Use this variant's images; default: the product's oldest active variant with images.
    pub product_variant_id: Option<String>,
    /// Free-form creative direction for the words `fill_slots` writes, at most 2,000
    /// characters.
    #[schema(schema_with = super::prompt_schema)]
    pub prompt: Option<String>,
    /// Fill the frame's slot nodes (named `headline`, `supporting`, `cta`, `price`,
    /// `product_image`, `logo`, …) with this ad's brand, product and words, keeping the
    /// designer's styles. Default `false`: the frame's texts and images stay as designed.
    /// A re-sync keeps the ad's earlier choice unless this is given.
    pub fill_slots: Option<bool>,
}

/// The frame a body names, checked.
fn frame_of(body: &ImageAdSync, errors: &mut Vec<FieldError>) -> Option<FrameRef> {
    match (&body.figma_url, &body.figma_file_key, &body.figma_node_id) {
        (Some(url), None, None) => {
            if url.len() > 2048 {
                errors.push(FieldError::new(
                    "figma_url",
                    "must be at most 2048 characters",
                ));
                return None;
            }
            parse_link(url)
                .map_err(|e| errors.push(FieldError::new("figma_url", e)))
                .ok()
        }
        (None, Some(key), Some(node)) => {
            let key_ok =
                check_file_key(key).map_err(|e| errors.push(FieldError::new("figma_file_key", e)));
            let node = node_id(node).map_err(|e| errors.push(FieldError::new("figma_node_id", e)));
            match (key_ok, node) {
                (Ok(()), Ok(node_id)) => Some(FrameRef {
                    file_key: key.clone(),
                    node_id,
                }),
                _ => None,
            }
        }
        (None, None, None) => None,
        (Some(_), _, _) => {
            errors.push(FieldError::new(
                "figma_url",
                "give either figma_url or figma_file_key with figma_node_id, not both",
            ));
            None
        }
        (None, Some(_), None) => {
            errors.push(FieldError::new(
                "figma_node_id",
                "is required with figma_file_key",
            ));
            None
        }
        (None, None, Some(_)) => {
            errors.push(FieldError::new(
                "figma_file_key",
                "is required with figma_node_id",
            ));
            None
        }
    }
}

fn queued() -> Progress {
    Progress {
        step: "queued".into(),
        message: "Waiting for a worker".into(),
        percentage: 0,
    }
}

/// The organisation's sealed Figma token, or 422 FIGMA_NOT_CONNECTED.
async fn token(state: &AppState, org_id: &str) -> ApiResult<String> {
    sealed_token(&state.db.read, org_id)
        .await?
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::FigmaNotConnected,
                "This organisation has not connected Figma: store a personal access token with PUT /v1/integrations/figma first",
            )
        })
}

/// Sync an image ad from Figma
///
/// Without `image_ad_id`: creates an editable ad (`editable_image_ad`, $4.00, charged when
/// it completes, like POST /v1/image-ads with `editable: true`) whose tree is the Figma
/// frame, imported by a worker (every node kind, text with per-range styles, auto layout,
/// paints, effects; image fills and SVG exports stored as this server's files; what cannot
/// be mapped is kept on the node and listed in `figma.report`) and rendered at 4K.
/// `initial_figma_render_url` is Figma's own render of the frame at the first sync and
/// `figma_render_url` the latest, both stored as this server's files. With `image_ad_id`:
/// re-reads the ad's frame; an unchanged frame changes nothing, a changed one becomes a new
/// version. Answers 202 with the ad `processing`; poll GET /v1/image-ads/{id}. Figma's
/// refusals end the ad `failed` with `error.code` FIGMA_TOKEN_INVALID (403: token invalid
/// or without access), FIGMA_NOT_FOUND (404: no such file or node) or FIGMA_RATE_LIMITED
/// (429 after waiting the `Retry-After` Figma asked for, up to 3 times and 30 s each).
#[utoipa::path(post, path = "/v1/image-ads/sync", tag = "image ads", request_body = ImageAdSync,
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe")),
    responses(
        (status = 202, description = "Accepted; the ad is processing", body = Envelope<ImageAd>),
        (status = 400, description = "VALIDATION_ERROR: a bad link or node id, a missing input, inputs given with image_ad_id", body = crate::error::ErrorBody),
        (status = 402, description = "INSUFFICIENT_BALANCE (a new ad)", body = crate::error::ErrorBody),
        (status = 404, description = "IMAGE_AD_NOT_FOUND, BRAND_NOT_FOUND, PRODUCT_NOT_FOUND, AUDIENCE_NOT_FOUND, PRODUCT_VARIANT_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 422, description = "FIGMA_NOT_CONNECTED; IMAGE_AD_NOT_SYNCED (image_ad_id names an ad not made from Figma); IMAGE_AD_NOT_COMPLETED (it is processing, or never completed); PRODUCT_BRAND_MISMATCH, AUDIENCE_PRODUCT_MISMATCH, PRODUCT_VARIANT_NO_IMAGES", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["image_ads:write"])))]
pub(super) async fn sync_ads(
    State(state): State<AppState>,
    Auth(caller): Auth,
    body: JsonBody<ImageAdSync>,
) -> ApiResult<Response> {
    caller.require(Scope::ImageAdsWrite)?;
    let body = body.parse()?;
    let ad = match &body.image_ad_id {
        Some(id) => resync(&state, &caller.org_id, id, &body).await?,
        None => sync_new(&state, &caller.org_id, &body).await?,
    };
    let body = Envelope {
        data: ad,
        meta: Meta::current(),
    };
    Ok((StatusCode::ACCEPTED, axum::Json(body)).into_response())
}

/// A new synced ad (POST /v1/image-ads/sync without `image_ad_id`, after the scope check).
///
/// # Errors
/// Every error the endpoint lists for a new ad.
pub async fn sync_new(state: &AppState, org_id: &str, body: &ImageAdSync) -> ApiResult<ImageAd> {
    let mut errors = Vec::new();
    let frame = frame_of(body, &mut errors);
    if frame.is_none() && errors.is_empty() {
        errors.push(FieldError::new(
            "figma_url",
            "give the frame: figma_url, or figma_file_key with figma_node_id",
        ));
    }
    let prompt = check_text("prompt", body.prompt.clone(), PROMPT_MAX, &mut errors);
    for (field, v) in [
        ("brand_id", &body.brand_id),
        ("product_id", &body.product_id),
        ("audience_id", &body.audience_id),
    ] {
        if v.as_deref().is_none_or(str::is_empty) {
            errors.push(FieldError::new(field, "is required for a new synced ad"));
        }
    }
    common::finish(errors)?;
    let (Some(frame), Some(brand_id), Some(product_id), Some(audience_id)) =
        (frame, &body.brand_id, &body.product_id, &body.audience_id)
    else {
        return Err(ApiError::internal("checked above"));
    };
    let r = super::create::resolve_ids(
        state,
        org_id,
        brand_id,
        product_id,
        audience_id,
        body.product_variant_id.as_deref(),
    )
    .await?;
    let token_sealed = token(state, org_id).await?;
    let fill_slots = body.fill_slots.unwrap_or(false);
    let id = crate::ids::new_id("ia");
    let url = frame.url();
    let brief = AdBrief {
        prompt: prompt.clone(),
        brand: r.brand,
        product: r.product,
        audience: r.audience,
        variant_image_urls: r.variant_image_urls,
        variant: Some(r.variant),
        // The moment the copy is written for (an offer's end date is judged against it on
        // every retry of the job).
        created_at: Some(crate::timestamp::now()),
    };
    let job = Job::SyncFigma(FigmaSyncJob {
        subject_id: id.clone(),
        org_id: org_id.to_owned(),
        version: 1,
        target: FigmaTarget::ImageAd,
        api_url: state.figma.api_url.clone(),
        file_key: frame.file_key.clone(),
        node_id: frame.node_id.clone(),
        token_sealed,
        previous: None,
        fill_slots,
        brief: Some(Box::new(brief)),
    });
    let (sku, price) = ("editable_image_ad", wallet::EDITABLE_IMAGE_AD_CENTS);
    let progress = queued();
    let mut tx = state.db.begin_write().await?;
    wallet::hold(&mut tx, org_id, price, &id, &state.dashboard_url).await?;
    let now = crate::timestamp::now();
    super::store::insert_ad(
        &mut tx,
        &super::store::NewAd {
            id: &id,
            org_id,
            brand_id,
            product_id,
            audience_id,
            product_variant_id: body
                .product_variant_id
                .as_ref()
                .map(|_| r.variant_id.clone()),
            reference_ad_url: &url,
            prompt: prompt.as_deref(),
            editable: true,
            sku,
            price_cents: price,
            progress: &progress,
            job: &job,
            search_name: &r.search_name,
            now: &now,
            source: None,
            batch_id: None,
            size: None,
            size_set_id: None,
        },
    )
    .await?;
    let sync_state = FigmaSyncState {
        fill_slots,
        ..Default::default()
    };
    store::set_frame(&mut tx, &id, &frame, &sync_state).await?;
    Jobs::stage(&mut tx, &job).await?;
    let row = super::store::load(&mut *tx, org_id, &id).await?;
    let jobs = state.jobs.clone();
    tx.after_commit(move || jobs.kick());
    tx.commit().await?;
    Ok(row.into_ad(None))
}

/// A re-sync of a synced ad (POST /v1/image-ads/sync with `image_ad_id`).
///
/// # Errors
/// Every error the endpoint lists for a re-sync.
pub async fn resync(
    state: &AppState,
    org_id: &str,
    id: &str,
    body: &ImageAdSync,
) -> ApiResult<ImageAd> {
    let mut errors = Vec::new();
    for (field, given) in [
        ("brand_id", body.brand_id.is_some()),
        ("product_id", body.product_id.is_some()),
        ("audience_id", body.audience_id.is_some()),
        ("product_variant_id", body.product_variant_id.is_some()),
        ("prompt", body.prompt.is_some()),
    ] {
        if given {
            errors.push(FieldError::new(
                field,
                "a re-sync (image_ad_id) uses the ad's own inputs; leave this out, or sync a new ad without image_ad_id",
            ));
        }
    }
    let frame = frame_of(body, &mut errors);
    common::finish(errors)?;
    let ad = store::load_synced(&state.db.read, org_id, id).await?;
    let (Some(file_key), Some(node)) = (ad.figma_file_key.clone(), ad.figma_node_id.clone()) else {
        return Err(ApiError::new(
            ErrorCode::ImageAdNotSynced,
            format!(
                "Image ad `{id}` was not made from a Figma frame; sync a new ad from the frame without image_ad_id"
            ),
        ));
    };
    if let Some(f) = &frame
        && (f.file_key != file_key || f.node_id != node)
    {
        return Err(ApiError::field(
            "figma_url",
            format!(
                "image ad `{id}` is synced from frame {node} of file {file_key}; an ad keeps its frame (sync a new ad for another frame)"
            ),
        ));
    }
    if ad.status == "processing" {
        return Err(ApiError::new(
            ErrorCode::ImageAdNotCompleted,
            format!(
                "Image ad `{id}` is processing; poll GET /v1/image-ads/{id} until it is completed or failed, then sync again"
            ),
        ));
    }
    if ad.charged_at.is_none() {
        return Err(ApiError::new(
            ErrorCode::ImageAdNotCompleted,
            format!(
                "The first sync of image ad `{id}` failed, so it has nothing to re-sync; sync the frame again as a new ad (without image_ad_id)"
            ),
        ));
    }
    let token_sealed = token(state, org_id).await?;
    let mut sync_state: FigmaSyncState = ad
        .figma_sync
        .as_deref()
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default();
    let fill_slots = body.fill_slots.unwrap_or(sync_state.fill_slots);
    // A change of `fill_slots` changes the tree even when the frame did not.
    let previous = match (&sync_state.file_version, &sync_state.frame_hash) {
        (Some(v), Some(h)) if fill_slots == sync_state.fill_slots => Some(FigmaFrameVersion {
            file_version: v.clone(),
            frame_hash: h.clone(),
        }),
        _ => None,
    };
    sync_state.fill_slots = fill_slots;
    let version = store::next_version(&state.db.read, id, ad.current_version).await?;
    let version_u32 = u32::try_from(version).unwrap_or(u32::MAX);
    // The ad's inputs as they are now (a brand's new logo fills the logo slot), resolved
    // as a new ad's are.
    let r = super::create::resolve_ids(
        state,
        org_id,
        &ad.brand_id,
        &ad.product_id,
        &ad.audience_id,
        ad.product_variant_id.as_deref(),
    )
    .await?;
    let brief = Some(Box::new(AdBrief {
        prompt: ad.prompt.clone(),
        brand: r.brand,
        product: r.product,
        audience: r.audience,
        variant_image_urls: r.variant_image_urls,
        variant: Some(r.variant),
        // A re-sync writes a new version now: an offer that has ended since is not stated.
        created_at: Some(crate::timestamp::now()),
    }));
    let job = Job::SyncFigma(FigmaSyncJob {
        subject_id: id.to_owned(),
        org_id: org_id.to_owned(),
        version: version_u32,
        target: FigmaTarget::ImageAd,
        api_url: state.figma.api_url.clone(),
        file_key: file_key.clone(),
        node_id: node.clone(),
        token_sealed,
        previous,
        fill_slots,
        brief,
    });
    let mut tx = state.db.begin_write().await?;
    let started = store::start_resync(
        &mut tx,
        &store::Resync {
            id,
            org_id,
            version,
            progress: &queued(),
            job: &job,
            state: &sync_state,
            now: &crate::timestamp::now(),
        },
    )
    .await?;
    if !started {
        return Err(ApiError::new(
            ErrorCode::ImageAdNotCompleted,
            format!(
                "Image ad `{id}` is processing; poll until it is completed or failed, then sync again"
            ),
        ));
    }
    Jobs::stage(&mut tx, &job).await?;
    let row = super::store::load(&mut *tx, org_id, id).await?;
    let jobs = state.jobs.clone();
    tx.after_commit(move || jobs.kick());
    tx.commit().await?;
    Ok(row.into_ad(None))
}
