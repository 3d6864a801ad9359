//! The assets of an ad: the product image and the brand's logos fetched for the job, and
//! the product cut out of its photo for a cut-out slot.

use std::sync::Arc;

use bytes::Bytes;

use super::{GenerateAdHandler, fetch, fill};
use crate::cutout::store::{CutoutError, cutout_of};
use crate::protocol::GenerateAdJob;
use crate::runner::{JobError, ProgressSink};

impl GenerateAdHandler {
    /// Fetches the product image (checked to be an image; its URL and bytes) and the
    /// brand's logos (measured; a logo that cannot be fetched is skipped), noting each URL
    /// in `fetched`.
    pub(super) async fn fetch_assets(
        &self,
        job: &GenerateAdJob,
        fetched: &mut Vec<String>,
    ) -> Result<(Option<(String, Arc<Vec<u8>>)>, Vec<fill::LogoChoice>), JobError> {
        let mut product = None;
        if let Some(url) = job.variant_image_urls.first() {
            fetched.push(url.clone());
            let bytes = self.fetch("product image", url).await?;
            fetch::check_image("product image", url, &bytes)?;
            product = Some((url.clone(), bytes));
        }
        let mut logos = Vec::new();
        for logo in job.brand.logos.iter().take(4) {
            fetched.push(logo.url.clone());
            match self.fetch("logo", &logo.url).await {
                Ok(bytes) => logos.extend(fetch::measure_logo(logo, &bytes)),
                // A missing logo is not worth failing an ad for: the brand name is set
                // as a wordmark instead.
                Err(e) => {
                    tracing::warn!(ad_id = %job.ad_id, url = %logo.url, error = ?e, "logo skipped")
                }
            }
        }
        Ok((product, logos))
    }

    /// The product cut out of its photo (`bytes`, fetched from `url`) for a `$cutout`
    /// slot: the stored cut-out of the same bytes, or one made now and stored, kept on the
    /// shelf for the renders. `None` (the slot shows the framed photo) when no cut-out can
    /// be made; the progress message says which path ran, or why there is none.
    pub(super) async fn product_cutout(
        &self,
        url: &str,
        bytes: &Arc<Vec<u8>>,
        progress: &ProgressSink,
        fetched: &mut Vec<String>,
    ) -> Option<fill::ProductCutout> {
        progress
            .report("cutting_out", "Cutting the product out of its photo", 45)
            .await;
        let made = cutout_of(
            self.services.blobs.as_ref(),
            &self.cutter,
            Bytes::from(bytes.as_ref().clone()),
        )
        .await;
        let (stored, reused) = match made {
            Ok(made) => made,
            Err(e) => {
                let why = match &e {
                    CutoutError::Refused(why) => why.to_string(),
                    other => {
                        tracing::warn!(url, error = %other, "product cut-out failed");
                        other.to_string()
                    }
                };
                progress
                    .report(
                        "cutting_out",
                        &format!("The product photo is shown framed, not cut out: {why}"),
                        48,
                    )
                    .await;
                return None;
            }
        };
        let cut_url = self.services.blobs.url(&stored.key);
        fetched.push(cut_url.clone());
        if let Err(e) = self.fetch("product cut-out", &cut_url).await {
            tracing::warn!(url = %cut_url, error = ?e, "stored product cut-out unreadable");
            progress
                .report(
                    "cutting_out",
                    "The product photo is shown framed, not cut out: the stored cut-out could not be read",
                    48,
                )
                .await;
            return None;
        }
        let how = match stored.method {
            crate::cutout::Method::SourceAlpha => "from the photo's own transparency",
            crate::cutout::Method::ColourKey => "by keying out its plain background",
            crate::cutout::Method::Model => "by the U²-Net-P salient-object model",
        };
        let when = if reused {
            ", reusing the cut-out made earlier"
        } else {
            ""
        };
        progress
            .report(
                "cutting_out",
                &format!("The product is cut out of its photo {how}{when}"),
                48,
            )
            .await;
        Some(fill::ProductCutout {
            url: cut_url,
            width: stored.width,
            height: stored.height,
        })
    }
}
