//! A batch's end, hooked into the ad's own applier: when an ad of a batch ends (completed
//! or failed, by its worker or by the batch's cancel), [`ad_ended`] runs in the same
//! transaction and, when it was the batch's last processing ad, sets the batch's final
//! status and writes the `image_ad_batch.completed` event. The applier changes only a
//! `processing` ad and the batch only ends from `processing`, so a redelivered result
//! writes no second event.

use sqlx::AnyConnection;

use super::store;
use crate::error::{ApiError, ApiResult};

/// The event type of a batch's end.
pub const COMPLETED_EVENT: &str = "image_ad_batch.completed";

/// Called by the ads' applier in the transaction that ended ad `ad_id`.
///
/// # Errors
/// Database failures (the caller's transaction then rolls back, the ad's change included).
pub async fn ad_ended(conn: &mut AnyConnection, ad_id: &str) -> ApiResult<()> {
    let Some((org_id, batch_id)) = store::batch_of_ad(conn, ad_id).await? else {
        return Ok(());
    };
    let now = crate::timestamp::now();
    if !store::end_if_last(conn, &batch_id, &now).await? {
        return Ok(());
    }
    let row = store::load(&mut *conn, &org_id, &batch_id).await?;
    let mut counts = store::counts(&mut *conn, std::slice::from_ref(&batch_id)).await?;
    let (c, charged) = counts.remove(&batch_id).unwrap_or_default();
    let object = serde_json::to_value(row.into_batch(c, charged)).map_err(ApiError::internal)?;
    crate::webhooks::record(conn, &org_id, COMPLETED_EVENT, &batch_id, object).await?;
    Ok(())
}
