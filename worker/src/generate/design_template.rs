//! Design templates on the worker: [`crate::Job::AnalyzeDesignTemplate`] reads a reference into
//! its blueprint (through the same content-hash cache as image ads) and writes it as a
//! template tree with a preview; [`crate::Job::RenderDesignTemplatePreview`] previews an edited
//! tree; and an image ad made from a template ([`GenerateAdJob::template`]) fills the
//! template's tree instead of analysing a reference.
//!
//! The template tree is [`blueprint::template::sample_tree`]: the renderer's format at the
//! reference's aspect ratio (3840 px long edge), node ids are slot names (`headline`,
//! `product_image`, `cta`, …) and nodes keep the layout library's `$` slot keys, so the tree
//! renders as it is (neutral sample content: placeholder words, the reference's colours, a
//! grey product box) and [`fill::fill`] fills it, as edited, for an ad. A reference whose
//! own layout is unusable (no headline or no place for a picture) gets the plain
//! composition at its shape ([`blueprint::Blueprint::generic`]); the tree's root is then
//! named [`GENERIC_LAYOUT`] instead of [`BLUEPRINT_LAYOUT`], and the event says why.
//!
//! Previews are PNGs of [`PREVIEW_EDGE`] px on the long edge. A preview never fails
//! because of an image of an edited tree: the tree passed the API's checks, and an image
//! that cannot be fetched or decoded is left out of the preview (the ad made from the
//! template would fail on it, as an edited ad's render does).

use adforge_renderer::Tree;
use adforge_renderer::tree::TreeDoc;
use serde_json::Value;

use super::{
    BLUEPRINT_LAYOUT, GENERIC_LAYOUT, GenerateAdHandler, MAX_TREE_IMAGES, blocking, brand, copy,
    fill, preflight, render, render_png_timed,
};
use crate::blueprint;
use crate::protocol::{
    AdCompleted, DesignTemplateAnalysed, DesignTemplateJob, GenerateAdJob, ImageAdRendered,
    JobResult, TemplateLayout,
};
use crate::runner::{JobError, ProgressSink};

/// Classifies a reference for a design template: `(industry, ad_format)`, each `None` when
/// undecided. Implemented where the models are loaded (the API crate's swipe-file
/// classification); a worker without one leaves templates unclassified.
pub trait Classifier: Send + Sync {
    /// The reference's industry and ad format, from its bytes.
    fn classify(&self, bytes: &[u8]) -> (Option<String>, Option<String>);
}

pub use crate::services::{PREVIEW_EDGE, preview_key};

/// The root `name` of an ad made from a design template.
pub const TEMPLATE_LAYOUT: &str = "design_template";

/// The design size (`width`, `height`) of a tree's root frame, if it has one.
fn root_size(tree: &Value) -> Option<(u32, u32)> {
    let doc = TreeDoc::new(tree);
    let root = match doc.root_id() {
        Some(r) => doc.node(r)?,
        None => doc
            .node_ids()
            .filter_map(|id| doc.node(id))
            .find(|n| n.get("type").and_then(Value::as_str) == Some("FRAME"))?,
    };
    let w = root.get("width")?.as_f64()?;
    let h = root.get("height")?.as_f64()?;
    (w >= 1.0 && h >= 1.0).then(|| (w.round() as u32, h.round() as u32))
}

/// The render width that gives a preview of [`PREVIEW_EDGE`] px on its long edge.
fn preview_width(width: u32, height: u32) -> u32 {
    crate::services::preview_width(f64::from(width), f64::from(height))
}

impl GenerateAdHandler {
    /// [`crate::Job::AnalyzeDesignTemplate`]: reference → blueprint (cached) → template tree →
    /// preview.
    pub async fn analyse_template(
        &self,
        job: DesignTemplateJob,
        progress: ProgressSink,
    ) -> Result<AdCompleted, JobError> {
        let url = job.reference_image_url.clone();
        let result = self.analyse_template_inner(&job, &progress).await;
        self.services.fetcher.release(&[url]);
        result
    }

    async fn analyse_template_inner(
        &self,
        job: &DesignTemplateJob,
        progress: &ProgressSink,
    ) -> Result<AdCompleted, JobError> {
        progress
            .report("fetching_reference", "Fetching the reference image", 10)
            .await;
        let url = job.reference_image_url.clone();
        let reference = self.fetch("reference image", &url).await?;
        progress
            .report("analysing", "Analysing the reference's composition", 30)
            .await;
        let bytes = reference.clone();
        let (readings, cache_hit) = {
            let cache = self.blueprints.clone();
            blocking(move || cache.lookup(&reference))
                .await?
                .map_err(|e| {
                    JobError::abort(format!("the reference image at {url} cannot be used: {e}"))
                })?
        };
        let (analysis, found) = (&readings.0, &readings.1);
        let note = found.unusable().map(str::to_owned);
        let (bp, composition) = match &note {
            None => (found.clone(), BLUEPRINT_LAYOUT),
            Some(_) => (
                blueprint::Blueprint::generic(
                    analysis.width,
                    analysis.height,
                    found.background.clone(),
                    true,
                ),
                GENERIC_LAYOUT,
            ),
        };
        let mut tree = blueprint::template::sample_tree(&bp);
        if let Some(root) = TreeDoc::new(&mut tree).node_mut("root") {
            root.insert("name".into(), Value::from(composition));
        }
        let (industry, ad_format) = match (&self.classifier, job.classify) {
            (Some(classifier), true) => {
                progress
                    .report("classifying", "Classifying the reference", 50)
                    .await;
                let classifier = classifier.clone();
                blocking(move || classifier.classify(&bytes)).await?
            }
            _ => (None, None),
        };
        tracing::info!(template_id = %job.template_id, cache_hit, composition, ?industry, ?ad_format, "design template analysed");
        let (width, height) = (bp.width, bp.height);
        progress
            .report("rendering", "Rendering the preview", 70)
            .await;
        let key = preview_key(&job.template_id, job.version);
        self.render_preview(&tree, width, height, &key).await?;
        Ok(AdCompleted {
            ad_id: job.template_id.clone(),
            version: job.version,
            duration_ms: 0,
            result: JobResult::DesignTemplate(Box::new(DesignTemplateAnalysed {
                preview_url: self.services.blobs.url(&key),
                width,
                height,
                preview_key: key,
                json_tree: tree,
                cache_hit,
                composition: composition.to_owned(),
                note,
                reference_colours: analysis.palette.iter().map(|(c, _)| *c).collect(),
                industry,
                ad_format,
            })),
        })
    }

    /// [`crate::Job::RenderDesignTemplatePreview`]: the preview of an edited tree.
    pub async fn preview_template(
        &self,
        job: DesignTemplateJob,
        progress: ProgressSink,
    ) -> Result<AdCompleted, JobError> {
        let Some(tree) = job.json_tree.clone() else {
            return Err(JobError::abort("a preview job without a tree"));
        };
        let parsed = Tree::from_value(tree.clone())
            .map_err(|e| JobError::abort(format!("invalid json_tree: {e}")))?;
        let (width, height) = root_size(&tree).unwrap_or((1080, 1080));
        progress
            .report("fetching_assets", "Fetching the tree's images", 20)
            .await;
        // Images are drawn when they can be read; one that cannot is left out of the
        // preview (logged), never the reason a preview fails.
        let urls = adforge_renderer::image::image_urls(&parsed);
        for url in urls.iter().take(MAX_TREE_IMAGES) {
            if let Err(e) = self.fetch("image", url).await {
                tracing::warn!(template_id = %job.template_id, %url, error = ?e, "preview drawn without an image");
            }
        }
        progress
            .report("rendering", "Rendering the preview", 60)
            .await;
        let key = preview_key(&job.template_id, job.version);
        let rendered = self.render_preview(&tree, width, height, &key).await;
        self.services.fetcher.release(&urls);
        rendered?;
        Ok(AdCompleted {
            ad_id: job.template_id.clone(),
            version: job.version,
            duration_ms: 0,
            result: JobResult::DesignTemplate(Box::new(DesignTemplateAnalysed {
                preview_url: self.services.blobs.url(&key),
                width,
                height,
                preview_key: key,
                json_tree: tree,
                cache_hit: false,
                composition: String::new(),
                note: None,
                reference_colours: Vec::new(),
                industry: None,
                ad_format: None,
            })),
        })
    }

    /// Renders `tree` at [`PREVIEW_EDGE`] on its long edge and stores the PNG at `key`.
    async fn render_preview(
        &self,
        tree: &Value,
        width: u32,
        height: u32,
        key: &str,
    ) -> Result<(), JobError> {
        let parsed = Tree::from_value(tree.clone())
            .map_err(|e| JobError::abort(format!("invalid json_tree: {e}")))?;
        let renderer = self.services.renderer.clone();
        let target = preview_width(width, height);
        let png = blocking(move || -> Result<Vec<u8>, JobError> {
            let mut out = render(&renderer, &parsed, Some(target), true)?;
            let png = out
                .png
                .take()
                .ok_or_else(|| JobError::retry("the renderer returned no PNG"))?;
            renderer.recycle(out.pixmap);
            Ok(png)
        })
        .await??;
        self.store(key, png).await
    }

    /// An image ad made from a design template: the template's tree filled with the brand,
    /// product and copy (no reference analysis), checked and fixed by the preflight render
    /// (contrast and fit), rendered at 4K at the template's own size.
    pub(super) async fn generate_from_template(
        &self,
        job: &GenerateAdJob,
        layout: &TemplateLayout,
        progress: &ProgressSink,
        fetched: &mut Vec<String>,
    ) -> Result<AdCompleted, JobError> {
        progress
            .report("fetching_assets", "Fetching product images and logos", 20)
            .await;
        let (product, logos) = self.fetch_assets(job, fetched).await?;
        let product_image = product.as_ref().map(|(url, _)| url.clone());
        let cutout = match &product {
            Some((url, bytes)) if fill::wants_cutout(&layout.json_tree) => {
                self.product_cutout(url, bytes, progress, fetched).await
            }
            _ => None,
        };
        progress
            .report(
                "composing",
                &format!(
                    "Composing the ad on design template {} (version {})",
                    layout.template_id, layout.json_tree_version
                ),
                45,
            )
            .await;
        let copy = copy::write_copy(&job.product, &job.audience, job.prompt.as_deref());
        let palette = brand::Palette::from_brand_and_colours(&job.brand, &layout.reference_colours);
        let inputs = fill::FillInputs {
            ad_id: job
                .size
                .as_ref()
                .and_then(|s| s.node_seed.as_deref())
                .unwrap_or(&job.ad_id),
            layout_name: TEMPLATE_LAYOUT,
            brand: &job.brand,
            palette,
            copy: &copy,
            product_image: product_image.as_deref(),
            product_cutout: cutout.as_ref(),
            logos: &logos,
            slots: None,
            no_logo: super::facts::no_logo(job.prompt.as_deref().unwrap_or("")),
        };
        // The template's slots keep the roles of the reference it was analysed from: each
        // is written by its role, like a blueprint's.
        let facts = std::sync::Arc::new(super::facts::Facts::from_job(job));
        let words = {
            let (renderer, facts, tree, job, model) = (
                self.services.renderer.clone(),
                facts.clone(),
                layout.json_tree.clone(),
                job.clone(),
                self.copy_model.clone(),
            );
            blocking(move || {
                super::template_words(
                    &job,
                    &tree,
                    &super::slots::Reference::default(),
                    &facts,
                    &renderer,
                    model.as_deref(),
                )
            })
            .await?
        };
        let inputs = fill::FillInputs {
            slots: Some(&words.slots),
            ..inputs
        };
        let filled = fill::fill(&layout.json_tree, &inputs).map_err(|e| {
            JobError::abort(format!(
                "the tree of design template {} cannot be filled: {e}",
                layout.template_id
            ))
        })?;
        Tree::from_value(filled.tree.clone()).map_err(|e| {
            JobError::abort(format!(
                "the tree of design template {} cannot be filled: {e}",
                layout.template_id
            ))
        })?;
        let renderer = self.services.renderer.clone();
        let fetcher = self.services.fetcher.clone();
        let tree = blocking(move || preflight(&renderer, &fetcher, filled)).await??;
        // A size of a campaign set: laid out again for its shape, as any sized ad.
        let tree = match &job.size {
            Some(size) => {
                let logo = super::relayout::LogoContext {
                    logos: logos.clone(),
                    brand: job.brand.clone(),
                    palette: inputs.palette.clone(),
                };
                self.relaid(tree, size, logo, progress).await?
            }
            None => tree,
        };
        // The grounding rule, as on every ad.
        let stated =
            super::grounding::check_tree_from(tree.as_value(), &facts, &words.provenance())
                .map_err(|e| {
                    JobError::abort(format!(
                        "the ad's words state what no input supports: {}",
                        e.join("; ")
                    ))
                })?;
        let mut report = words.report;
        report.facts = super::slot_keys(stated, &report);
        progress.report("rendering", "Rendering at 4K", 75).await;
        let renderer = self.services.renderer.clone();
        let fetcher = self.services.fetcher.clone();
        let to_render = tree.clone();
        let (png, width, height, timings) =
            blocking(move || render_png_timed(&renderer, &fetcher, &to_render)).await??;
        progress.report("storing", "Storing the image", 90).await;
        let key = super::blob_key(&job.ad_id, job.version);
        self.store(&key, png).await?;
        Ok(AdCompleted {
            ad_id: job.ad_id.clone(),
            version: job.version,
            duration_ms: 0,
            result: JobResult::ImageAd(ImageAdRendered {
                image_url: self.services.blobs.url(&key),
                width,
                height,
                json_tree: job.editable.then(|| tree.as_value().clone()),
                render: Some(timings),
                copy: Some(Box::new(report)),
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_have_a_1080_long_edge_and_keys_are_per_version() {
        assert_eq!(preview_width(3840, 2010), 1080);
        assert_eq!(preview_width(2160, 3840), 608);
        assert_eq!(preview_width(3840, 3840), 1080);
        assert_eq!(
            preview_key("dt_1", 2),
            "design-templates/dt_1/v2/preview.png"
        );
        let tree = serde_json::json!({"root": "root", "nodes": {"root": {"type": "FRAME", "width": 3840, "height": 2160}}});
        assert_eq!(root_size(&tree), Some((3840, 2160)));
        assert_eq!(root_size(&serde_json::json!({"nodes": {}})), None);
    }
}
