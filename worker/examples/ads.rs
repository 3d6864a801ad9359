//! Makes an editable image ad from each reference image, through the worker's own
//! generate pipeline ([`GenerateAdHandler`] running [`Job::GenerateImageAd`] in process, the
//! files served from a local blob store), for one coffee product with facts (a price and a
//! compare-at price, a review with its author and rating, a stat, benefits, an offer), and
//! prints one JSON line per file: the layout the ad was composed on (`reference_blueprint`
//! or a fallback), and each text slot of the copy report (slot, the reference's role, the
//! role its words play, the words, shown) with its box in the ad, in unit coordinates: the
//! node's laid-out box and the ink drawn in it (the ad rendered small with and without its
//! texts, the pixels that differ inside the box). `scripts/bench-references --ads N` scores
//! these lines against the reference corpus's ground truth (message carried, text-box IoU).
//!
//! The words of references are read by `tesseract` from the PATH, as the worker reads them.
//!
//!   cargo run -p adforge-worker --example ads -- a.png b.jpg ...
//!   ls refs/*.png | cargo run -p adforge-worker --example ads        # paths on stdin
//!   cargo run -p adforge-worker --example ads -- --facts              # the product, as JSON
//!   cargo run -p adforge-worker --example ads -- --explain DIR a.png  # the blueprint's ad
//!
//! `--keep DIR` writes each ad, 540 px wide, to `DIR/<file stem>.png`. `--explain DIR` also composes each ad on the reference's own blueprint step by step, as
//! the pipeline does before it checks it (template, words, fill, check render), writes that
//! check render to `DIR/<file stem>.png` and adds the quality rule's verdict on it
//! (`blueprint_check`), for a reference whose ad fell back.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use adforge_renderer::{RenderOptions, Tree};
use adforge_worker::blob::{BlobStore, LocalBlobStore};
use adforge_worker::generate::fill::display_name;
use adforge_worker::protocol::{AdBrief, Audience, Brand, Logo, Money, Product, Variant};
use adforge_worker::{
    AdCompleted, AdProgress, Claimed, DeliveredEvent, EnqueueOutcome, Error, Event,
    GenerateAdHandler, GenerateAdJob, GenerateConfig, Job, JobQueue, MemoryQueue, ProgressSink,
    QueueConfig, QueueStats, RetryOutcome,
};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};

/// Width of the render the ink boxes are measured on.
const INK_WIDTH: u32 = 540;

/// The product's facts, as `product.details` and the variant give them.
fn details() -> Value {
    json!({
        "benefits": ["Ready in two minutes", "Ethically sourced beans", "Roasted fresh every week", "Cancel any time"],
        "stats": [{"value": "9 in 10", "label": "customers reorder within a month"}],
        "reviews": [{"author": "Maria Lopez", "text": "The smoothest espresso I have made at home. Rich and never bitter.", "rating": 5}],
        "offer": {"text": "20% off your first order"},
    })
}

fn variant() -> Variant {
    Variant {
        id: "pv_1".into(),
        name: "250 g".into(),
        price: Some(Money {
            amount: 2400,
            currency: "usd".into(),
        }),
        compare_at_price: Some(Money {
            amount: 3000,
            currency: "usd".into(),
        }),
    }
}

fn job(n: usize, reference: String, product: String, logo: String) -> GenerateAdJob {
    GenerateAdJob {
        ad_id: format!("ad_bench{n}"),
        org_id: "org_bench".into(),
        version: 1,
        editable: true,
        reference_ad_url: reference,
        brief: AdBrief {
            prompt: None,
            brand: Brand {
                id: "br_bench".into(),
                name: "Northwind".into(),
                color_palettes: json!({"primary": ["#1F3A5F", "#F4EBDD"], "accent": ["#E07A3F"]}),
                fonts: json!([{"name": "Playfair Display", "role": "heading"}, {"name": "Lato", "role": "body"}]),
                logos: vec![Logo {
                    url: logo,
                    theme: Some("dark".into()),
                }],
                details: Value::Null,
            },
            product: Product {
                id: "prod_bench".into(),
                name: "Morning Espresso".into(),
                description: Some(
                    "Whole-bean espresso roasted in small batches, smooth and never bitter.".into(),
                ),
                details: details(),
            },
            audience: Audience {
                id: "aud_bench".into(),
                name: "Home baristas".into(),
                description: Some("People who make their coffee at home".into()),
                details: json!({"pain_points": ["Bitter coffee"], "motivations": ["A better first cup"]}),
            },
            variant_image_urls: vec![product],
            variant: Some(variant()),
            created_at: Some("2026-06-01T09:00:00.000Z".into()),
        },
        template: None,
        size: None,
    }
}

fn main() {
    let mut paths = Vec::new();
    let mut explain = None;
    let mut keep = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--explain" => explain = args.next().map(std::path::PathBuf::from),
            "--keep" => keep = args.next().map(std::path::PathBuf::from),
            "--facts" => {
                let v = variant();
                println!(
                    "{}",
                    json!({"name": "Morning Espresso", "details": details(),
                           "price": v.price.map(|m| m.amount), "compare_at_price": v.compare_at_price.map(|m| m.amount),
                           "currency": "usd"})
                );
                return;
            }
            "-h" | "--help" => {
                eprintln!("usage: ads [--facts] IMAGE... (or image paths on stdin)");
                return;
            }
            _ => paths.push(arg),
        }
    }
    if paths.is_empty() {
        paths = std::io::stdin()
            .lock()
            .lines()
            .map_while(Result::ok)
            .map(|l| l.trim().to_owned())
            .filter(|l| !l.is_empty())
            .collect();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(run(paths, explain, keep));
}

async fn run(
    paths: Vec<String>,
    explain: Option<std::path::PathBuf>,
    keep: Option<std::path::PathBuf>,
) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let blobs = Arc::new(LocalBlobStore::new(dir.path().into(), "http://blobs.bench"));
    let store = blobs.clone() as Arc<dyn BlobStore>;
    let handler = Arc::new(GenerateAdHandler::new(GenerateConfig::new(store.clone())));
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let put = |key: &'static str, bytes: Vec<u8>| {
        let store = store.clone();
        async move {
            store
                .put(key, bytes.into())
                .await
                .expect("the blob store takes the file");
            store.url(key)
        }
    };
    let product = put(
        "bench/coffee.png",
        std::fs::read(root.join("assets/samples/coffee.png")).expect("assets/samples/coffee.png"),
    )
    .await;
    let logo = put("bench/logo.png", logo_png()).await;
    let stdout = std::io::stdout();
    for (n, path) in paths.into_iter().enumerate() {
        let started = Instant::now();
        let line = match std::fs::read(&path) {
            Err(e) => json!({"path": path, "error": format!("cannot read the file: {e}")}),
            Ok(bytes) => {
                let key = format!("bench/ref{n}.png");
                store
                    .put(&key, bytes.into())
                    .await
                    .expect("the blob store takes the file");
                let job = job(n, store.url(&key), product.clone(), logo.clone());
                let explained = explain.as_ref().map(|dir| {
                    let stem = std::path::Path::new(&path)
                        .file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    (dir.join(format!("{stem}.png")), job.clone())
                });
                match make(&handler, job).await {
                    Ok(mut v) => {
                        if let Some(dir) = &keep {
                            let key =
                                adforge_worker::generate::blob_key(&format!("ad_bench{n}"), 1);
                            if let Ok(Some(png)) = store.get(&key).await
                                && let Ok(img) = image::load_from_memory(&png)
                            {
                                let stem = std::path::Path::new(&path)
                                    .file_stem()
                                    .map(|s| s.to_string_lossy().into_owned())
                                    .unwrap_or_default();
                                let small =
                                    img.resize(540, 960, image::imageops::FilterType::Triangle);
                                let _ = small.save(dir.join(format!("{stem}.png")));
                            }
                        }
                        if let Some((out, job)) = explained {
                            let h = handler.clone();
                            let bytes = std::fs::read(&path).unwrap_or_default();
                            v["blueprint_check"] = tokio::task::spawn_blocking(move || {
                                blueprint_ad(&h, &job, &bytes, &out)
                            })
                            .await
                            .unwrap_or_else(|e| Err(e.to_string()))
                            .unwrap_or_else(|e| json!(e));
                        }
                        v["path"] = json!(path);
                        v["ms"] = json!(started.elapsed().as_millis() as u64);
                        v
                    }
                    Err(e) => json!({"path": path, "error": e}),
                }
            }
        };
        // A closed pipe ends the run.
        if writeln!(stdout.lock(), "{line}").is_err() {
            return;
        }
    }
}

/// Runs the job through a queue claim, as the worker loop does, and describes the ad.
async fn make(handler: &Arc<GenerateAdHandler>, job: GenerateAdJob) -> Result<Value, String> {
    use adforge_worker::JobHandler;
    let queue = Arc::new(MemoryQueue::new(QueueConfig::default()));
    queue
        .enqueue(Job::GenerateImageAd(job))
        .await
        .map_err(|e| e.to_string())?;
    let claimed = queue
        .claim("bench", Duration::from_secs(60))
        .await
        .map_err(|e| e.to_string())?
        .ok_or("the job was not claimed")?;
    let recorder = Arc::new(Recorder {
        inner: queue.clone(),
        said: std::sync::Mutex::new(Vec::new()),
    });
    let sink = ProgressSink::new(recorder.clone() as Arc<dyn JobQueue>, &claimed);
    let done = handler
        .handle(claimed.job, sink)
        .await
        .map_err(|e| format!("{e:?}"))?;
    // Why the reference's own layout was not used, as the progress message said it.
    let said = recorder.said.lock().map(|s| s.clone()).unwrap_or_default();
    let why_not = said.iter().find_map(|m| {
        m.split_once("(the reference's own layout was not used: ")
            .map(|(_, why)| why.trim_end_matches(')').to_owned())
    });
    let adforge_worker::JobResult::ImageAd(done) = done.result else {
        return Err("the job did not render an image ad".into());
    };
    let tree = done.json_tree.ok_or("the ad has no tree")?;
    let copy = done.copy.ok_or("the ad has no copy report")?;
    let layout = tree["nodes"][tree["root"].as_str().unwrap_or("")]["name"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    let h = handler.clone();
    let t = tree.clone();
    let boxes = tokio::task::spawn_blocking(move || ink_boxes(&h, &t))
        .await
        .map_err(|e| e.to_string())??;
    let slots: Vec<Value> = copy
        .slots
        .iter()
        .map(|s| {
            let name = display_name(&s.slot);
            let b = boxes.iter().find(|b| b.0 == name);
            json!({
                "slot": s.slot,
                "reference_role": s.reference_role,
                "role": s.role,
                "text": s.text,
                "shown": s.shown,
                "reference_words": s.reference_words,
                "box": b.map(|b| b.1),
                "ink": b.and_then(|b| b.2),
            })
        })
        .collect();
    Ok(json!({
        "layout": layout,
        "fell_back": layout != adforge_worker::generate::BLUEPRINT_LAYOUT,
        "why_not": why_not,
        "format": copy.format,
        "width": done.width,
        "height": done.height,
        "slots": slots,
    }))
}

/// The ad composed on the blueprint of `reference` as the pipeline composes it before its
/// checks (without a cut-out), its check render written to `out`; the quality rule's and
/// the grounding rule's verdicts.
fn blueprint_ad(
    handler: &GenerateAdHandler,
    job: &GenerateAdJob,
    reference: &[u8],
    out: &std::path::Path,
) -> Result<Value, String> {
    use adforge_worker::generate::{
        blueprint_words, brand, copy, facts, fill, grounding, preflight_report, quality,
    };
    let readings = handler.blueprints().get_or_analyse(reference)?;
    let (analysis, bp) = (&readings.0, &readings.1);
    if let Some(why) = bp.unusable() {
        return Ok(json!({"unusable": why}));
    }
    let template = adforge_worker::blueprint::template::template(bp);
    let facts = facts::Facts::from_job(job);
    let words = blueprint_words(job, bp, &template, &facts, handler.renderer(), None);
    let copy = copy::write_copy(&job.product, &job.audience, job.prompt.as_deref());
    let inputs = fill::FillInputs {
        ad_id: &job.ad_id,
        layout_name: adforge_worker::generate::BLUEPRINT_LAYOUT,
        brand: &job.brand,
        palette: brand::Palette::from_brand(&job.brand, analysis),
        copy: &copy,
        product_image: job.variant_image_urls.first().map(String::as_str),
        product_cutout: None,
        logos: &[],
        slots: Some(&words.slots),
        no_logo: false,
    };
    let filled = fill::fill(&template, &inputs)?;
    for url in &job.variant_image_urls {
        handler.fetcher().fetch_and_keep(url)?;
    }
    let c = preflight_report(handler.renderer(), handler.fetcher(), filled)
        .map_err(|e| format!("{e:?}"))?;
    let png = handler
        .renderer()
        .render(
            &c.tree,
            &RenderOptions {
                width: Some(INK_WIDTH),
                encode_png: true,
            },
        )
        .map_err(|e| e.to_string())?
        .png
        .unwrap_or_default();
    std::fs::write(out, png).map_err(|e| e.to_string())?;
    let named: Vec<Value> = c
        .tree
        .as_value()
        .get("nodes")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, n)| n["type"] == "TEXT")
        .map(|(id, n)| json!([id, n["name"], n["characters"]]))
        .collect();
    Ok(json!({
        "quality": quality::check(&c.tree, &c.report, bp, c.logo.as_ref()).err(),
        "grounding": grounding::check_tree(c.tree.as_value(), &facts).err(),
        "texts": named,
    }))
}

/// (node name, laid-out box, ink box) of every visible text node of `tree`, in unit
/// coordinates of the canvas.
type InkBox = (String, [f32; 4], Option<[f32; 4]>);

fn ink_boxes(handler: &GenerateAdHandler, tree: &Value) -> Result<Vec<InkBox>, String> {
    let renderer = handler.renderer();
    let opts = RenderOptions {
        width: Some(INK_WIDTH),
        encode_png: false,
    };
    let parsed = Tree::from_value(tree.clone()).map_err(|e| e.to_string())?;
    let with = renderer.render(&parsed, &opts).map_err(|e| e.to_string())?;
    let mut bare = tree.clone();
    if let Some(nodes) = bare["nodes"].as_object_mut() {
        for n in nodes.values_mut() {
            if n["type"] == "TEXT" {
                n["visible"] = json!(false);
            }
        }
    }
    let bare = Tree::from_value(bare).map_err(|e| e.to_string())?;
    let without = renderer.render(&bare, &opts).map_err(|e| e.to_string())?;
    let (w, h) = (with.pixmap.width() as usize, with.pixmap.height() as usize);
    let (a, b) = (with.pixmap.data(), without.pixmap.data());
    let mut out = Vec::new();
    for nb in &with.boxes {
        if nb.kind != "TEXT" || !nb.visible {
            continue;
        }
        let Some(name) = nb.name.clone() else {
            continue;
        };
        let x0 = nb.x.max(0.0).floor() as usize;
        let y0 = nb.y.max(0.0).floor() as usize;
        let x1 = ((nb.x + nb.width).ceil().max(0.0) as usize).min(w);
        let y1 = ((nb.y + nb.height).ceil().max(0.0) as usize).min(h);
        let mut ink: Option<[usize; 4]> = None;
        for y in y0..y1 {
            for x in x0..x1 {
                let i = (y * w + x) * 4;
                let d = (0..3)
                    .map(|c| (i32::from(a[i + c]) - i32::from(b[i + c])).abs())
                    .max()
                    .unwrap_or(0);
                if d > 32 {
                    ink = Some(match ink {
                        None => [x, y, x, y],
                        Some(r) => [r[0].min(x), r[1].min(y), r[2].max(x), r[3].max(y)],
                    });
                }
            }
        }
        let (fw, fh) = (w as f32, h as f32);
        out.push((
            name,
            [nb.x / fw, nb.y / fh, nb.width / fw, nb.height / fh],
            ink.map(|r| {
                [
                    r[0] as f32 / fw,
                    r[1] as f32 / fh,
                    (r[2] + 1 - r[0]) as f32 / fw,
                    (r[3] + 1 - r[1]) as f32 / fh,
                ]
            }),
        ));
    }
    Ok(out)
}

/// A dark wordmark-like logo on transparency.
fn logo_png() -> Vec<u8> {
    let mut img = image::RgbaImage::new(240, 80);
    for (x, y, p) in img.enumerate_pixels_mut() {
        let bar = (x / 20) % 2 == 0 && (10..70).contains(&y);
        *p = if bar {
            image::Rgba([24, 24, 32, 255])
        } else {
            image::Rgba([0, 0, 0, 0])
        };
    }
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgba8(img)
        .write_to(&mut out, image::ImageFormat::Png)
        .expect("a PNG");
    out.into_inner()
}

/// The queue the pipeline reports its progress to: every message is kept (the memory queue
/// keeps only the latest), the rest is the memory queue's.
struct Recorder {
    inner: Arc<MemoryQueue>,
    said: std::sync::Mutex<Vec<String>>,
}

impl JobQueue for Recorder {
    fn config(&self) -> &QueueConfig {
        self.inner.config()
    }
    fn enqueue(&self, job: Job) -> BoxFuture<'_, Result<EnqueueOutcome, Error>> {
        self.inner.enqueue(job)
    }
    fn claim<'a>(
        &'a self,
        consumer: &'a str,
        max_wait: Duration,
    ) -> BoxFuture<'a, Result<Option<Claimed>, Error>> {
        self.inner.claim(consumer, max_wait)
    }
    fn claim_interactive<'a>(
        &'a self,
        consumer: &'a str,
        max_wait: Duration,
    ) -> BoxFuture<'a, Result<Option<Claimed>, Error>> {
        self.inner.claim_interactive(consumer, max_wait)
    }
    fn heartbeat<'a>(&'a self, claimed: &'a Claimed) -> BoxFuture<'a, Result<bool, Error>> {
        self.inner.heartbeat(claimed)
    }
    fn complete<'a>(
        &'a self,
        claimed: &'a Claimed,
        completed: AdCompleted,
    ) -> BoxFuture<'a, Result<(), Error>> {
        self.inner.complete(claimed, completed)
    }
    fn ack<'a>(&'a self, claimed: &'a Claimed) -> BoxFuture<'a, Result<(), Error>> {
        self.inner.ack(claimed)
    }
    fn release<'a>(&'a self, claimed: &'a Claimed) -> BoxFuture<'a, Result<(), Error>> {
        self.inner.release(claimed)
    }
    fn retry<'a>(
        &'a self,
        claimed: &'a Claimed,
        backoff: Duration,
        reason: &'a str,
    ) -> BoxFuture<'a, Result<RetryOutcome, Error>> {
        self.inner.retry(claimed, backoff, reason)
    }
    fn fail<'a>(
        &'a self,
        claimed: &'a Claimed,
        code: &'a str,
        message: &'a str,
    ) -> BoxFuture<'a, Result<(), Error>> {
        self.inner.fail(claimed, code, message)
    }
    fn publish(&self, event: Event) -> BoxFuture<'_, Result<(), Error>> {
        if let (Event::Progress(p), Ok(mut said)) = (&event, self.said.lock()) {
            said.push(p.message.clone());
        }
        self.inner.publish(event)
    }
    fn read_events<'a>(
        &'a self,
        consumer: &'a str,
        max: usize,
        max_wait: Duration,
    ) -> BoxFuture<'a, Result<Vec<DeliveredEvent>, Error>> {
        self.inner.read_events(consumer, max, max_wait)
    }
    fn ack_event<'a>(&'a self, delivered: &'a DeliveredEvent) -> BoxFuture<'a, Result<(), Error>> {
        self.inner.ack_event(delivered)
    }
    fn retire<'a>(&'a self, consumer: &'a str) -> BoxFuture<'a, Result<(), Error>> {
        self.inner.retire(consumer)
    }
    fn stats(&self) -> BoxFuture<'_, Result<QueueStats, Error>> {
        self.inner.stats()
    }
    fn latest_progress<'a>(
        &'a self,
        ad_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<AdProgress>, Error>> {
        self.inner.latest_progress(ad_id)
    }
}
