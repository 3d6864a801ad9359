//! The re-layout in the ad pipeline: a sized ad ([`crate::protocol::GenerateAdJob::size`])
//! is made as any other and its checked tree laid out again before the full-size render; a
//! resize (`size.source_tree`) lays out a completed ad's tree without reading its reference
//! or writing new words. Either way the new tree goes through the check render (contrast
//! fixes, the logo measured and placed again where it does not read) and must keep every
//! quality rule at its new shape and the readable floor on the sizes the renderer drew.

use adforge_renderer::tree::{Bounds, TreeDoc};
use adforge_renderer::{Renderer, Tree};
use serde_json::{Value, json};

use super::{Relaid, relayout};
use crate::generate::fill::{Filled, LogoChoice, LogoSlot, TextPlacement};
use crate::generate::{
    Checked, GenerateAdHandler, MAX_TREE_IMAGES, blob_key, brand, preflight_report, quality,
    render_png_timed,
};
use crate::protocol::{AdCompleted, Brand, GenerateAdJob, ImageAdRendered, JobResult, TargetSize};
use crate::runner::{JobError, ProgressSink};
use crate::services::{ShelfFetcher, blocking, node_uuid};

/// How a size is named in messages: its placement (`9:16`), else `1200×628`.
pub fn size_label(size: &TargetSize) -> String {
    size.placement
        .clone()
        .unwrap_or_else(|| format!("{}×{}", size.width, size.height))
}

/// What placing the logo again needs: the brand's measured logos, its name and colours.
#[derive(Debug, Clone)]
pub struct LogoContext {
    pub logos: Vec<LogoChoice>,
    pub brand: Brand,
    pub palette: brand::Palette,
}

/// Lays `tree` out for `size` and checks it as every ad is checked (see the module docs);
/// returns the checked tree and its check render's findings.
///
/// # Errors
/// An abort naming the size: its words do not fit at the floor, or the new layout breaks a
/// quality rule; an image of the tree that cannot be drawn.
pub fn check_relaid(
    renderer: &Renderer,
    fetcher: &ShelfFetcher,
    tree: &Value,
    size: &TargetSize,
    logo: &LogoContext,
) -> Result<(Checked, Relaid), JobError> {
    let relaid = relayout(renderer, tree, size).map_err(JobError::abort)?;
    let filled = filled(&relaid.tree, logo);
    let checked = preflight_report(renderer, fetcher, filled)?;
    rules(&checked, &relaid, size).map_err(|e| {
        JobError::abort(format!(
            "the {} size cannot be laid out without breaking a quality rule: {e}",
            size_label(size)
        ))
    })?;
    Ok((checked, relaid))
}

/// The quality rules at the new shape ([`quality::check_shape`]), and the re-layout's own:
/// no text drawn under the floor, the headline the largest text, the product's share kept
/// as planned, the logo shown.
///
/// # Errors
/// The broken rule, in words.
pub fn rules(checked: &Checked, relaid: &Relaid, size: &TargetSize) -> Result<(), String> {
    quality::check_shape(
        &checked.tree,
        &checked.report,
        size.aspect() as f32,
        checked.logo.as_ref(),
    )?;
    let doc = TreeDoc::new(checked.tree.as_value());
    let fitted = &checked.report.fitted_text;
    let is_logo = |id: &str| doc.slot(id).as_deref() == Some("logo");
    for f in fitted {
        if !is_logo(&f.node) && f64::from(f.font_size) < relaid.floor * 0.98 {
            return Err(format!(
                "text {} is drawn at {:.0} px, under the readable floor of {:.0} px",
                doc.name(&f.node).unwrap_or(&f.node),
                f.font_size,
                relaid.floor
            ));
        }
    }
    let headline = fitted
        .iter()
        .find(|f| doc.slot(&f.node).as_deref() == Some("headline"));
    if let Some(h) = headline
        && let Some(o) = fitted
            .iter()
            .find(|f| !is_logo(&f.node) && f.font_size > h.font_size * 1.001)
    {
        return Err(format!(
            "text {} is drawn larger ({:.0} px) than the headline ({:.0} px)",
            doc.name(&o.node).unwrap_or(&o.node),
            o.font_size,
            h.font_size
        ));
    }
    if relaid.source_share > 0.0 {
        let share = f64::from(quality::product_share(checked.tree.as_value()).unwrap_or(0.0));
        let want = relaid.product_share.min(relaid.source_share) * 0.97;
        if share < want {
            return Err(format!(
                "the product covers {:.1} % of the canvas (at least {:.1} %)",
                share * 100.0,
                want * 100.0
            ));
        }
    }
    Ok(())
}

/// The relaid tree as the check render takes it: each text with the scrim it sits on, and
/// the image logo's slot so it can be measured and placed again.
fn filled(tree: &Value, ctx: &LogoContext) -> Filled {
    let doc = TreeDoc::new(tree);
    let root = doc.root_id().unwrap_or_default().to_owned();
    let top = doc.children(&root);
    let scrims: Vec<(String, Bounds)> = top
        .iter()
        .filter(|id| {
            doc.name(id)
                .is_some_and(|n| n == "Scrim" || n.ends_with(" Scrim"))
        })
        .filter_map(|id| Some((id.clone(), doc.bounds(id)?)))
        .collect();
    let mut texts = Vec::new();
    for id in doc.paint_order() {
        if doc.kind(&id) != Some("TEXT") {
            continue;
        }
        let scrim = top
            .contains(&id)
            .then(|| doc.bounds(&id))
            .flatten()
            .and_then(|b| scrims.iter().find(|(_, s)| s.holds(b.centre())))
            .map(|(s, _)| s.clone());
        texts.push(TextPlacement {
            id,
            scrim,
            backdrop: None,
        });
    }
    let logo = top
        .iter()
        .find(|id| doc.slot(id).as_deref() == Some("logo"))
        .filter(|id| doc.kind(id) != Some("TEXT") && doc.has_image_fill(id))
        .filter(|_| !ctx.logos.is_empty())
        .and_then(|id| logo_slot(&doc, id, ctx));
    Filled {
        tree: tree.clone(),
        texts,
        logo,
    }
}

/// The slot of the image logo `id`: its box (its plate's, when it has one), its alignment
/// from where it sits on the canvas, the brand's logos and colours.
fn logo_slot(doc: &TreeDoc<&Value>, id: &str, ctx: &LogoContext) -> Option<LogoSlot> {
    let root = doc.root_id()?;
    let canvas = doc.bounds(root)?;
    let plate = doc
        .children(root)
        .into_iter()
        .find(|p| doc.name(p) == Some("Logo Plate"));
    let b = plate
        .as_deref()
        .and_then(|p| doc.bounds(p))
        .or_else(|| doc.bounds(id))?;
    let mut nodes = serde_json::Map::new();
    nodes.insert(id.to_owned(), Value::Object(doc.node(id)?.clone()));
    let mut one = json!({"root": id, "nodes": nodes});
    TreeDoc::new(&mut one).set_bounds(id, b).ok()?;
    let node = TreeDoc::new(&one).node(id)?.clone();
    let cx = b.centre().0 / canvas.width.max(1.0);
    let align = if cx < 0.36 {
        "LEFT"
    } else if cx > 0.64 {
        "RIGHT"
    } else {
        "CENTER"
    };
    Some(LogoSlot {
        id: id.to_owned(),
        plate_id: plate.unwrap_or_else(|| node_uuid(id, "logo_plate")),
        node,
        logos: ctx.logos.clone(),
        brand: ctx.brand.name.clone(),
        palette: ctx.palette.clone(),
        align: align.to_owned(),
        font: brand::fonts(&ctx.brand.fonts).0,
        scrim: None,
    })
}

impl GenerateAdHandler {
    /// A sized ad: `tree` (made and checked at its reference's shape) laid out again for
    /// `size` and checked ([`check_relaid`]).
    ///
    /// # Errors
    /// As [`check_relaid`].
    pub(in crate::generate) async fn relaid(
        &self,
        tree: Tree,
        size: &TargetSize,
        logo: LogoContext,
        progress: &ProgressSink,
    ) -> Result<Tree, JobError> {
        progress
            .report(
                "laying_out",
                &format!("Laying the ad out again for {}", size_label(size)),
                70,
            )
            .await;
        let (renderer, fetcher) = (
            self.services.renderer.clone(),
            self.services.fetcher.clone(),
        );
        let size = size.clone();
        let (checked, _) =
            blocking(move || check_relaid(&renderer, &fetcher, tree.as_value(), &size, &logo))
                .await??;
        Ok(checked.tree)
    }

    /// A resize of a completed ad: `size.source_tree` laid out again (no reference read,
    /// no new words), checked, rendered and stored.
    ///
    /// # Errors
    /// A source tree that is not a valid tree or uses too many images; as [`check_relaid`].
    pub(in crate::generate) async fn resize(
        &self,
        job: &GenerateAdJob,
        size: &TargetSize,
        progress: &ProgressSink,
        fetched: &mut Vec<String>,
    ) -> Result<AdCompleted, JobError> {
        let source = size.source_tree.clone().unwrap_or(Value::Null);
        let parsed = Tree::from_value(source.clone())
            .map_err(|e| JobError::abort(format!("the ad's tree cannot be resized: {e}")))?;
        progress
            .report("fetching_assets", "Fetching the ad's images and logos", 20)
            .await;
        let urls = adforge_renderer::image::image_urls(&parsed);
        if urls.len() > MAX_TREE_IMAGES {
            return Err(JobError::abort(format!(
                "the tree uses {} different images; at most {MAX_TREE_IMAGES} are drawn",
                urls.len()
            )));
        }
        for url in &urls {
            fetched.push(url.clone());
            self.services.fetch("image", url).await?;
        }
        let (_, logos) = self.fetch_assets(job, fetched).await?;
        let ctx = LogoContext {
            logos,
            brand: job.brand.clone(),
            palette: brand::Palette::from_brand_and_colours(&job.brand, &[]),
        };
        progress
            .report(
                "laying_out",
                &format!("Laying the ad out again for {}", size_label(size)),
                50,
            )
            .await;
        let (renderer, fetcher) = (
            self.services.renderer.clone(),
            self.services.fetcher.clone(),
        );
        let sz = size.clone();
        let (checked, _) =
            blocking(move || check_relaid(&renderer, &fetcher, &source, &sz, &ctx)).await??;
        progress.report("rendering", "Rendering at 4K", 75).await;
        let (renderer, fetcher) = (
            self.services.renderer.clone(),
            self.services.fetcher.clone(),
        );
        let tree = checked.tree;
        let to_render = tree.clone();
        let (png, width, height, timings) =
            blocking(move || render_png_timed(&renderer, &fetcher, &to_render)).await??;
        progress.report("storing", "Storing the image", 90).await;
        let key = blob_key(&job.ad_id, job.version);
        self.services.store(&key, png).await?;
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
                copy: None,
            }),
        })
    }
}
