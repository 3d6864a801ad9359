//! [`crate::Job::RenderImageAdVersion`]: an edited tree's images fetched first (so a fetch
//! failure is sorted into retry and abort), bounded in number and decoded size, then the
//! tree rendered at 4K and stored.

use adforge_renderer::Tree;

use super::{
    GenerateAdHandler, MAX_TREE_IMAGE_BYTES, MAX_TREE_IMAGES, blob_key, fetch, render_png_timed,
};
use crate::protocol::{AdCompleted, ImageAdRendered, JobResult, RerenderJob};
use crate::runner::{JobError, ProgressSink};
use crate::services::blocking;

impl GenerateAdHandler {
    /// Runs [`crate::Job::RenderImageAdVersion`].
    ///
    /// # Errors
    /// An invalid tree, too many or too large images, or a failed render or store.
    pub async fn rerender(
        &self,
        job: RerenderJob,
        progress: ProgressSink,
    ) -> Result<AdCompleted, JobError> {
        let tree = Tree::from_value(job.json_tree.clone())
            .map_err(|e| JobError::abort(format!("invalid json_tree: {e}")))?;
        let urls = adforge_renderer::image::image_urls(&tree);
        let result = self.rerender_inner(job, tree, &urls, &progress).await;
        self.services.fetcher.release(&urls);
        result
    }

    /// Fetches every image of the edited tree first, like the first render does, so that a
    /// fetch failure is sorted into retry or abort (never a render without the image), then
    /// renders and stores.
    async fn rerender_inner(
        &self,
        job: RerenderJob,
        tree: Tree,
        urls: &[String],
        progress: &ProgressSink,
    ) -> Result<AdCompleted, JobError> {
        progress
            .report("fetching_assets", "Fetching the tree's images", 20)
            .await;
        if urls.len() > MAX_TREE_IMAGES {
            return Err(JobError::abort(format!(
                "the tree uses {} different images; at most {MAX_TREE_IMAGES} are drawn",
                urls.len()
            )));
        }
        let mut decoded_bytes = 0u64;
        for url in urls {
            let bytes = self.fetch("image", url).await?;
            if let Some((w, h)) = fetch::image_size("image", url, &bytes)? {
                decoded_bytes += u64::from(w) * u64::from(h) * 4;
            }
        }
        if decoded_bytes > MAX_TREE_IMAGE_BYTES {
            return Err(JobError::abort(format!(
                "the tree's images take {} MiB decoded; at most {} MiB are drawn in one ad (use fewer or smaller images)",
                decoded_bytes >> 20,
                MAX_TREE_IMAGE_BYTES >> 20
            )));
        }
        progress
            .report("rendering", "Rendering the edited tree at 4K", 50)
            .await;
        let renderer = self.services.renderer.clone();
        let fetcher = self.services.fetcher.clone();
        let (png, width, height, timings) =
            blocking(move || render_png_timed(&renderer, &fetcher, &tree)).await??;
        progress.report("storing", "Storing the image", 90).await;
        let key = blob_key(&job.ad_id, job.version);
        self.store(&key, png).await?;
        Ok(AdCompleted {
            ad_id: job.ad_id,
            version: job.version,
            duration_ms: 0,
            result: JobResult::ImageAd(ImageAdRendered {
                image_url: self.services.blobs.url(&key),
                width,
                height,
                json_tree: Some(job.json_tree),
                render: Some(timings),
                copy: None,
            }),
        })
    }
}
