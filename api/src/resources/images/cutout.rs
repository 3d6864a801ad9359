//! `POST /v1/images/{id}/cutout`: the product cut out of an image, as a new image (a PNG
//! with alpha) linked to its source.
//!
//! The cut itself is the worker's ([`adforge_worker::cutout`]): the process's one
//! [`Cutter`](adforge_worker::cutout::Cutter) (U²-Net-P when installed), and cut-outs kept in
//! the blob store by the source bytes' content hash, so an ad made from the same photo and
//! this endpoint share one file. A source has one live cut-out: asking again returns it, and
//! two requests at the same moment get the same one (the unique index
//! `images_one_live_cutout` makes the second insert do nothing; the handler then answers the
//! row that won).

use axum::extract::State;
use axum::response::Response;
use bytes::Bytes;

use super::{Image, derivatives, store};
use crate::auth::{Auth, Scope};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::http::envelope::{self, Envelope};
use crate::resources::common::IdPath;
use crate::state::AppState;
use adforge_worker::cutout::store::{CutoutError, cutout_of};

/// Cut the product out of an image
///
/// Makes a new image: the product (the main subject) cut out of image `id`, a PNG with
/// alpha trimmed to the product, with a 1.5 px soft edge whose colours are cleaned of the
/// old background. It keeps the source's `image_type`, `alt_text`, `product_id`,
/// `logo_theme` and `is_ai_generated`; `cutout_of` names the source and `cutout_method`
/// how the mask was made: `colour_key` for a photo whose border is one flat colour or a
/// smooth studio sweep (a packshot on white or grey), `model` (U²-Net-P, a salient-object
/// model) otherwise, `source_alpha` when the image already has transparency around the
/// product. Thumbnails follow in the background, as for uploads.
///
/// A source has one cut-out: while it lives, asking again answers 200 with it instead of
/// making another (201), also when two requests ask at the same moment (a unique index on
/// live cut-outs; the later request answers the earlier one's image). Cut-outs are also
/// kept by the source's content hash, so a second upload of the same bytes, or an ad made
/// from them, reuses the same file. Asked of an image that is itself a cut-out, the answer
/// is that image (200).
///
/// `IMAGE_NO_SUBJECT` (422) when the image has no distinct object to cut out: it is one
/// colour all over or nearly (a blank, noise, grain), nothing stands out of it, or the
/// model is sure of no object in it (its own probabilities, before any scaling, stay
/// undecided); nothing is invented in its place. Upload a photo of the product on a plain
/// ground. `IMAGE_CUTOUT_FAILED` (422) when there is something but it cannot be cut out,
/// with the reason: the mask covers more than 95 % of the photo, it falls apart into more
/// than five parts, or the photo's border is not a flat colour and the model is not
/// installed on the server.
#[utoipa::path(post, path = "/v1/images/{id}/cutout", tag = "images",
    params(("id" = String, Path, description = "img_… to cut the product out of")),
    responses(
        (status = 200, description = "The image's existing cut-out (or the image, when it is one)", body = Envelope<Image>),
        (status = 201, description = "The new cut-out", body = Envelope<Image>),
        (status = 400, description = "IMAGE_UNREADABLE: the stored image no longer decodes", body = crate::error::ErrorBody),
        (status = 404, description = "IMAGE_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 422, description = "IMAGE_NO_SUBJECT: the image has no distinct object to cut out (uniform or nearly, or the model is sure of none); IMAGE_CUTOUT_FAILED: the product cannot be cut out (the message says why)", body = crate::error::ErrorBody),
        (status = 500, description = "IMAGE_UPLOAD_FAILED: storing the cut-out failed; retry", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["images:write"])))]
pub(super) async fn cutout_image(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::ImagesWrite)?;
    let org_id = caller.org_id.as_str();
    let source = store::load(&state.db, org_id, &id).await?;
    if source.is_cutout() {
        return Ok(envelope::ok(source.into_image(state.blobs.as_ref())));
    }
    if let Some(existing) = store::live_cutout(&state.db, org_id, &id).await? {
        return Ok(envelope::ok(existing.into_image(state.blobs.as_ref())));
    }
    let bytes: Bytes = state
        .blobs
        .get(source.blob_key())
        .await
        .map_err(ApiError::internal)?
        .ok_or_else(|| ApiError::internal(format!("the file of {id} is missing")))?;
    let (made, _reused) = cutout_of(state.blobs.as_ref(), &state.cutter, bytes)
        .await
        .map_err(|e| match e {
            CutoutError::Refused(why) if why.no_subject() => ApiError::new(
                ErrorCode::ImageNoSubject,
                format!("Nothing was cut out of image `{id}`: {why}"),
            ),
            CutoutError::Refused(why) => ApiError::new(
                ErrorCode::ImageCutoutFailed,
                format!("No product could be cut out of image `{id}`: {why}"),
            ),
            CutoutError::Imaging(e) => ApiError {
                internal: Some(e.to_string()),
                ..ApiError::new(
                    ErrorCode::ImageUnreadable,
                    format!("Image `{id}` could not be decoded to cut it out"),
                )
            },
            CutoutError::Blob(e) => ApiError {
                internal: Some(e.to_string()),
                ..ApiError::new(
                    ErrorCode::ImageUploadFailed,
                    "Storing the cut-out failed; retry",
                )
            },
            CutoutError::Internal(e) => ApiError::internal(e),
        })?;
    let (alt_text, image_type, logo_theme, product_id, is_ai_generated) = source.kept();
    let new_id = crate::ids::new_id("img");
    let mut tx = state.db.begin_write().await?;
    let now = crate::timestamp::now();
    let inserted = store::insert(
        &mut tx,
        &store::NewImage {
            id: &new_id,
            org_id,
            blob_key: &made.key,
            width: made.width,
            height: made.height,
            format: "png",
            size_bytes: i64::try_from(made.size_bytes).unwrap_or(i64::MAX),
            alt_text,
            image_type,
            is_ai_generated,
            logo_theme,
            product_id,
            cutout_of: Some(&id),
            cutout_method: Some(made.method.as_str()),
            search_text: alt_text.unwrap_or("").to_lowercase(),
            now: &now,
        },
    )
    .await?;
    if !inserted {
        // Another request cut this source out while this one was cutting: answer its row
        // (the unique index on live cut-outs kept this one from adding a second).
        let existing = store::live_cutout_with(&mut *tx, org_id, &id)
            .await?
            .ok_or_else(|| ApiError::internal(format!("the live cut-out of {id} vanished")))?;
        tx.commit().await?;
        return Ok(envelope::ok(existing.into_image(state.blobs.as_ref())));
    }
    let row = store::load_with(&mut *tx, org_id, &new_id).await?;
    let (db, blobs) = (state.db.clone(), state.blobs.clone());
    tx.after_commit(move || derivatives::spawn_derivatives(db, blobs, new_id, None));
    tx.commit().await?;
    Ok(envelope::created(row.into_image(state.blobs.as_ref())))
}
