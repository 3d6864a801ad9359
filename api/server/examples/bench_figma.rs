//! Benchmark of design-tool sync (issue 24): the import and first 4K render of a 200-node
//! frame with 10 image fills, read from the local Figma server of the tests
//! (`tests/api/figma_server.rs`, with its response validation off: the server's own work is
//! not the importer's), run as a worker runs the job (`adforge_worker::figma::sync`), per
//! stage: `read` (GET /v1/files/:key/nodes), `import`, `assets` (the image-fill and render
//! calls, the downloads, storing them), `render` (the check render and the 4K render with
//! its PNG), `store`. Target: the whole ≤ 2 s on 2 cores.
//!
//! The frame is generated here (hand-made, in the shape Figma answers): ten cards of twenty
//! nodes each (an auto-layout column with a photo, a title, a price line, a row of shapes, a
//! star, a line), each card's photo a different image (800×600 PNG), on a 1080×1350 root.
//!
//!   RUNS=5 scripts/bench-figma

// A benchmark: a failed set-up should stop it.
#![allow(clippy::unwrap_used)]

#[path = "../tests/api/figma_server.rs"]
#[allow(dead_code)]
mod figma_server;

use std::sync::Arc;
use std::time::Instant;

use adforge_worker::figma::sync::{Parts, run_timed};
use adforge_worker::protocol::{FigmaSyncJob, FigmaTarget, token_context};
use adforge_worker::{GenerateAdHandler, GenerateConfig, Job, JobQueue, MemoryQueue, ProgressSink};
use serde_json::{Value, json};

const TOKEN: &str = "figd_bench-token-0000";
const FILE: &str = "BenchFrame200";

fn bx(x: f64, y: f64, w: f64, h: f64) -> Value {
    json!({"x": x, "y": y, "width": w, "height": h})
}

fn node(
    id: String,
    name: &str,
    kind: &str,
    abs: (f64, f64),
    rel: (f64, f64),
    (w, h): (f64, f64),
    fills: Value,
) -> Value {
    json!({
        "id": id, "name": name, "type": kind, "scrollBehavior": "SCROLLS", "blendMode": "PASS_THROUGH",
        "fills": fills, "strokes": [], "strokeWeight": 1.0, "strokeAlign": "INSIDE", "effects": [],
        "absoluteBoundingBox": bx(abs.0, abs.1, w, h), "absoluteRenderBounds": bx(abs.0, abs.1, w, h),
        "relativeTransform": [[1, 0, rel.0], [0, 1, rel.1]], "size": {"x": w, "y": h},
        "constraints": {"vertical": "TOP", "horizontal": "LEFT"},
    })
}

fn solid(r: f64, g: f64, b: f64) -> Value {
    json!([{"blendMode": "NORMAL", "type": "SOLID", "color": {"r": r, "g": g, "b": b, "a": 1}}])
}

fn text(
    id: String,
    name: &str,
    abs: (f64, f64),
    rel: (f64, f64),
    w: f64,
    chars: &str,
    size: f64,
) -> Value {
    let mut n = node(
        id,
        name,
        "TEXT",
        abs,
        rel,
        (w, size * 1.3),
        solid(0.1, 0.1, 0.15),
    );
    n["characters"] = json!(chars);
    n["characterStyleOverrides"] = json!([]);
    n["styleOverrideTable"] = json!({});
    n["lineTypes"] = json!(["NONE"]);
    n["lineIndentations"] = json!([0]);
    n["style"] = json!({"fontFamily": "Inter", "fontWeight": 600, "fontSize": size, "textAlignHorizontal": "LEFT",
        "textAlignVertical": "TOP", "letterSpacing": 0, "lineHeightPx": size * 1.3, "textAutoResize": "HEIGHT"});
    n["layoutSizingHorizontal"] = json!("FILL");
    n["layoutSizingVertical"] = json!("HUG");
    n
}

/// A card: 20 nodes.
fn card(k: usize, x: f64, y: f64) -> Value {
    let id = |n: usize| format!("{}:{}", 100 + k, n);
    let (w, h) = (500.0, 250.0);
    let abs = (x, y);
    let at = |dx: f64, dy: f64| (x + dx, y + dy);
    let mut photo = node(
        id(2),
        "photo",
        "RECTANGLE",
        at(12.0, 12.0),
        (12.0, 12.0),
        (476.0, 120.0),
        json!([{"blendMode": "NORMAL", "type": "IMAGE", "scaleMode": "FILL", "imageRef": format!("bench-img-{k}")}]),
    );
    photo["cornerRadius"] = json!(8);
    photo["layoutSizingHorizontal"] = json!("FILL");
    let mut shapes = Vec::new();
    for s in 0..9 {
        let kind = if s % 2 == 0 { "ELLIPSE" } else { "RECTANGLE" };
        let mut n = node(
            id(10 + s),
            &format!("dot {s}"),
            kind,
            at(12.0 + 28.0 * s as f64, 210.0),
            (28.0 * s as f64, 0.0),
            (20.0, 20.0),
            solid(0.2 + 0.08 * s as f64, 0.4, 0.7),
        );
        if kind == "ELLIPSE" {
            n["arcData"] =
                json!({"startingAngle": 0, "endingAngle": 6.2831854820251465, "innerRadius": 0});
        }
        shapes.push(n);
    }
    let mut row = node(
        id(9),
        "dots",
        "FRAME",
        at(12.0, 210.0),
        (12.0, 210.0),
        (216.0, 20.0),
        json!([]),
    );
    row["layoutMode"] = json!("HORIZONTAL");
    row["itemSpacing"] = json!(8);
    row["primaryAxisSizingMode"] = json!("AUTO");
    row["counterAxisSizingMode"] = json!("AUTO");
    row["clipsContent"] = json!(false);
    row["children"] = Value::Array(shapes);
    let mut price_row = node(
        id(5),
        "price row",
        "FRAME",
        at(12.0, 175.0),
        (12.0, 175.0),
        (476.0, 26.0),
        json!([]),
    );
    price_row["layoutMode"] = json!("HORIZONTAL");
    price_row["itemSpacing"] = json!(12);
    price_row["primaryAxisSizingMode"] = json!("FIXED");
    price_row["counterAxisSizingMode"] = json!("AUTO");
    price_row["clipsContent"] = json!(false);
    price_row["layoutSizingHorizontal"] = json!("FILL");
    let mut price = text(
        id(6),
        "price",
        at(12.0, 175.0),
        (0.0, 0.0),
        120.0,
        "$19.99",
        20.0,
    );
    price["layoutSizingHorizontal"] = json!("HUG");
    price["style"]["textAutoResize"] = json!("WIDTH_AND_HEIGHT");
    let mut badge = node(
        id(7),
        "badge",
        "RECTANGLE",
        at(150.0, 178.0),
        (132.0, 3.0),
        (60.0, 20.0),
        solid(0.9, 0.3, 0.2),
    );
    badge["cornerRadius"] = json!(10);
    let mut note = text(
        id(8),
        "note",
        at(222.0, 175.0),
        (210.0, 0.0),
        200.0,
        "Free shipping",
        16.0,
    );
    note["layoutSizingHorizontal"] = json!("HUG");
    note["style"]["textAutoResize"] = json!("WIDTH_AND_HEIGHT");
    price_row["children"] = json!([price, badge, note]);
    let mut star = node(
        id(18),
        "star",
        "STAR",
        at(450.0, 200.0),
        (450.0, 200.0),
        (36.0, 36.0),
        solid(0.95, 0.75, 0.1),
    );
    star["fillGeometry"] = json!([{"path": "M18 0L22 13L36 14L25 22L29 36L18 28L7 36L11 22L0 14L14 13Z", "windingRule": "NONZERO"}]);
    star["strokeGeometry"] = json!([]);
    star["layoutPositioning"] = json!("ABSOLUTE");
    let mut line = node(
        id(19),
        "rule",
        "LINE",
        at(12.0, 244.0),
        (12.0, 244.0),
        (476.0, 0.0),
        json!([]),
    );
    line["strokes"] = solid(0.8, 0.8, 0.85);
    line["strokeAlign"] = json!("CENTER");
    line["fillGeometry"] = json!([]);
    line["strokeGeometry"] =
        json!([{"path": "M0 -0.5L476 -0.5L476 0.5L0 0.5Z", "windingRule": "NONZERO"}]);
    line["layoutPositioning"] = json!("ABSOLUTE");
    let mut c = node(
        id(1),
        &format!("card {k}"),
        "FRAME",
        abs,
        (x - 20.0, y - 20.0),
        (w, h),
        solid(1.0, 1.0, 1.0),
    );
    c["clipsContent"] = json!(true);
    c["cornerRadius"] = json!(12);
    c["layoutMode"] = json!("VERTICAL");
    c["itemSpacing"] = json!(6);
    c["paddingLeft"] = json!(12);
    c["paddingRight"] = json!(12);
    c["paddingTop"] = json!(12);
    c["paddingBottom"] = json!(12);
    c["primaryAxisSizingMode"] = json!("FIXED");
    c["counterAxisSizingMode"] = json!("FIXED");
    c["effects"] = json!([{"type": "DROP_SHADOW", "visible": true, "blendMode": "NORMAL", "color": {"r": 0, "g": 0, "b": 0, "a": 0.15},
        "offset": {"x": 0, "y": 4}, "radius": 12, "spread": 0, "showShadowBehindNode": false}]);
    c["children"] = json!([
        photo,
        text(
            id(3),
            "title",
            at(12.0, 138.0),
            (12.0, 138.0),
            476.0,
            &format!("Product number {k}"),
            18.0
        ),
        text(
            id(4),
            "subtitle",
            at(12.0, 160.0),
            (12.0, 160.0),
            476.0,
            "A short line about it",
            12.0
        ),
        price_row,
        row,
        star,
        line
    ]);
    c
}

fn frame() -> Value {
    let mut cards = Vec::new();
    for k in 0..10 {
        let (x, y) = (20.0 + 540.0 * (k % 2) as f64, 20.0 + 264.0 * (k / 2) as f64);
        cards.push(card(k, x, y));
    }
    let mut root = node(
        "1:1".into(),
        "Bench frame",
        "FRAME",
        (0.0, 0.0),
        (0.0, 0.0),
        (1080.0, 1350.0),
        solid(0.96, 0.95, 0.93),
    );
    root["clipsContent"] = json!(true);
    root["children"] = Value::Array(cards);
    json!({"name": "bench", "lastModified": "2026-05-01T00:00:00Z", "thumbnailUrl": "", "version": "1",
           "role": "owner", "editorType": "figma",
           "nodes": {"1:1": {"document": root, "components": {}, "componentSets": {}, "schemaVersion": 0, "styles": {}}}})
}

fn count(n: &Value) -> usize {
    1 + n["children"]
        .as_array()
        .map_or(0, |c| c.iter().map(count).sum())
}

fn photo(k: usize) -> Vec<u8> {
    let img = image::RgbImage::from_fn(800, 600, |x, y| {
        image::Rgb([
            ((x * 255 / 800) as u8).wrapping_add((k * 40) as u8),
            (y * 255 / 600) as u8,
            ((x + y) % 256) as u8,
        ])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let server = figma_server::FigmaServer::start(TOKEN).await;
    server.set_validation(false);
    let frame = frame();
    let nodes = count(&frame["nodes"]["1:1"]["document"]);
    server.put_file(FILE, frame);
    for k in 0..10 {
        server.put_image(&format!("bench-img-{k}"), photo(k));
    }
    server.put_render("1:1", photo(99));

    let dir = tempfile::tempdir().unwrap();
    let blobs: Arc<dyn adforge_worker::blob::BlobStore> =
        Arc::new(adforge_api::blob::LocalBlobStore::with_files_base(
            dir.path().join("blobs"),
            "http://127.0.0.1:9/files",
        ));
    let key = Arc::new(adforge_worker::secrets::SecretKey::generate());
    let handler = GenerateAdHandler::new(
        GenerateConfig::new(blobs.clone())
            .allow_private_urls(true)
            .with_secrets(Some(key.clone())),
    );
    let queue: Arc<dyn JobQueue> = Arc::new(MemoryQueue::new(Default::default()));
    let mut totals = Vec::new();
    let mut stages: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    let mut render_stages: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for run in 0..runs {
        let job = FigmaSyncJob {
            subject_id: format!("ia_bench{run}"),
            org_id: "org_bench".into(),
            version: 1,
            target: FigmaTarget::ImageAd,
            api_url: server.base.clone(),
            file_key: FILE.into(),
            node_id: "1:1".into(),
            token_sealed: key.seal(TOKEN.as_bytes(), &token_context("org_bench")),
            previous: None,
            fill_slots: false,
            brief: None,
        };
        queue.enqueue(Job::SyncFigma(job.clone())).await.unwrap();
        let claimed = queue
            .claim("bench", std::time::Duration::from_secs(1))
            .await
            .unwrap()
            .unwrap();
        let progress = ProgressSink::new(queue.clone(), &claimed);
        let parts: Parts = adforge_worker::node::figma_parts(&handler);
        let t = Instant::now();
        let (done, times) = run_timed(&parts, &job, &progress).await.unwrap();
        totals.push(t.elapsed().as_secs_f64() * 1000.0);
        for (k, v) in times {
            stages.entry(k).or_default().push(v);
        }
        let ad = done.image_ad().expect("the frame is imported into the ad");
        if let Some(r) = &ad.render {
            for (k, v) in &r.stages_ms {
                render_stages.entry(k.clone()).or_default().push(*v);
            }
        }
        assert_eq!((ad.width, ad.height), (3072, 3840));
        let _ = queue.ack(&claimed).await;
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "Figma sync of a {nodes}-node frame with 10 image fills, {runs} runs, medians, ms (cores: {}, load: {})",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!("| stage | median ms |");
    println!("|---|---|");
    // In the order the job runs them.
    for k in ["read", "import", "assets", "render", "store"] {
        if let Some(v) = stages.get(k) {
            println!("| {k} | {:.1} |", median(v.clone()));
        }
    }
    for k in ["images", "layout", "scene", "raster", "encode"] {
        if let Some(v) = render_stages.get(k) {
            println!(
                "| … of which the 4K render's {k} | {:.1} |",
                median(v.clone())
            );
        }
    }
    let total = median(totals.clone());
    println!("| **total** | **{total:.1}** |");
    println!(
        "target ≤ 2000 ms: {}",
        if total <= 2000.0 { "met" } else { "missed" }
    );
}
