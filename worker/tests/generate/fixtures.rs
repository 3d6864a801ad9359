//! Test images, a tiny HTTP server and job builders.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use adforge_worker::blob::{BlobStore, LocalBlobStore};
use adforge_worker::protocol::{AdBrief, Audience, Brand, Logo, Product};
use adforge_worker::{
    AdCompleted, GenerateAdHandler, GenerateAdJob, GenerateConfig, Job, JobError, JobHandler,
    JobQueue, MemoryQueue, ProgressSink, QueueConfig,
};
use image::{Rgb, RgbImage, Rgba, RgbaImage};

/// The image ad a job rendered; panics (failing the test) on any other result.
pub fn ad(done: AdCompleted) -> adforge_worker::ImageAdRendered {
    match done.result {
        adforge_worker::JobResult::ImageAd(r) => r,
        other => panic!("expected an image ad, got {other:?}"),
    }
}
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Serves `files` (path → bytes) on 127.0.0.1; anything else is a 404.
pub async fn serve(files: HashMap<String, Vec<u8>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let files = Arc::new(files);
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let files = files.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf);
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let (status, body) = match files.get(&path) {
                    Some(b) => ("200 OK", b.clone()),
                    None => ("404 Not Found", b"not found".to_vec()),
                };
                let header = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(header.as_bytes()).await;
                let _ = sock.write_all(&body).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    format!("http://{addr}")
}

pub fn png(img: &image::DynamicImage) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

fn sample(name: &str) -> Vec<u8> {
    std::fs::read(repo().join("assets/samples").join(name)).unwrap()
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A type-led poster: flat cream ground, rows of dark letter-like strokes.
pub fn poster(w: u32, h: u32) -> Vec<u8> {
    let mut img = RgbImage::from_pixel(w, h, Rgb([246, 238, 222]));
    let lines = [
        (0.12, 0.09),
        (0.24, 0.09),
        (0.36, 0.09),
        (0.55, 0.035),
        (0.61, 0.035),
    ];
    for (row, (top, size)) in lines.iter().enumerate() {
        let y0 = (top * h as f32) as u32;
        let lh = (size * h as f32) as u32;
        let mut x = (0.08 * w as f32) as u32;
        let mut k = row as u32;
        while x < (0.92 * w as f32) as u32 {
            k = k.wrapping_mul(1103515245).wrapping_add(12345);
            let glyph = lh / 2 + (k >> 16) % (lh / 2).max(1);
            let stroke = (lh / 7).max(2);
            for y in y0..y0 + lh {
                for dx in 0..stroke {
                    img.put_pixel((x + dx).min(w - 1), y, Rgb([30, 28, 40]));
                }
            }
            for dy in [0, lh / 2, lh - stroke] {
                for y in y0 + dy..y0 + dy + stroke {
                    for xx in x..(x + glyph).min(w - 1) {
                        img.put_pixel(xx, y, Rgb([30, 28, 40]));
                    }
                }
            }
            x += glyph + lh / 3;
        }
    }
    png(&image::DynamicImage::ImageRgb8(img))
}

/// A product shot: soft grey studio gradient, one large shaded object in the centre.
pub fn centred_object(w: u32, h: u32) -> Vec<u8> {
    let img = RgbImage::from_fn(w, h, |x, y| {
        let (fx, fy) = (x as f32 / w as f32 - 0.5, y as f32 / h as f32 - 0.5);
        let r = (fx * fx + fy * fy * (h as f32 / w as f32).powi(2)).sqrt();
        if r < 0.27 {
            let shade = 1.0 - (fx + 0.1).max(-0.4) * 1.2 - fy * 0.6;
            let t = (((x / 7) ^ (y / 9)) % 5) as f32 * 6.0;
            Rgb([
                (170.0 * shade + t).clamp(0.0, 255.0) as u8,
                (60.0 * shade + t).clamp(0.0, 255.0) as u8,
                (40.0 * shade).clamp(0.0, 255.0) as u8,
            ])
        } else {
            let g = (215.0 - fy * 40.0) as u8;
            Rgb([g, g, g.saturating_add(4)])
        }
    });
    png(&image::DynamicImage::ImageRgb8(img))
}

/// A 9:16 photo reference cut from a checked-in sample.
pub fn story_photo() -> Vec<u8> {
    let img = image::load_from_memory(&sample("chelsea.png")).unwrap();
    png(&img.resize_to_fill(540, 960, image::imageops::FilterType::Triangle))
}

/// A simple logo mark: a disc and a bar in `c` on transparent ground.
pub fn logo(c: [u8; 3]) -> Vec<u8> {
    let img = RgbaImage::from_fn(360, 100, |x, y| {
        let (dx, dy) = (x as f32 - 50.0, y as f32 - 50.0);
        let disc = dx * dx + dy * dy < 40.0 * 40.0;
        let bar = (110..350).contains(&x) && (30..70).contains(&y);
        if disc || bar {
            Rgba([c[0], c[1], c[2], 255])
        } else {
            Rgba([0, 0, 0, 0])
        }
    });
    png(&image::DynamicImage::ImageRgba8(img))
}

/// The server with every fixture, and its base URL.
pub async fn server() -> String {
    let mut files = HashMap::new();
    files.insert("/ref/poster.png".into(), poster(1080, 1350));
    files.insert("/ref/object.png".into(), centred_object(1080, 1080));
    files.insert("/ref/object45.png".into(), centred_object(1080, 1350));
    files.insert("/ref/story.png".into(), story_photo());
    files.insert(
        "/ref/centred.png".into(),
        std::fs::read(repo().join("assets/swipe-default/10-centered_product-4x5.png")).unwrap(),
    );
    files.insert("/ref/rocket.jpg".into(), sample("rocket.jpg"));
    files.insert("/img/coffee.png".into(), sample("coffee.png"));
    files.insert("/logo/dark.png".into(), logo([24, 24, 32]));
    files.insert("/logo/light.png".into(), logo([250, 250, 250]));
    files.insert("/not-an-image.png".into(), b"hello, I am text".to_vec());
    serve(files).await
}

pub struct Harness {
    pub handler: GenerateAdHandler,
    pub blobs: Arc<LocalBlobStore>,
    pub base: String,
    _dir: tempfile::TempDir,
}

impl Harness {
    pub async fn new() -> Harness {
        Harness::with_config(|c| c).await
    }

    /// A harness whose handler's config is `f` of the default one.
    pub async fn with_config(f: impl FnOnce(GenerateConfig) -> GenerateConfig) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Arc::new(LocalBlobStore::new(dir.path().into(), "http://blobs.test"));
        let handler = GenerateAdHandler::new(f(GenerateConfig::new(
            blobs.clone() as Arc<dyn BlobStore>
        )
        .allow_private_urls(true)));
        Harness {
            handler,
            blobs,
            base: server().await,
            _dir: dir,
        }
    }

    /// Runs one job through a real queue claim, like the worker loop does.
    pub async fn run(&self, job: Job) -> (Result<AdCompleted, JobError>, Arc<MemoryQueue>) {
        run_with(&self.handler, job).await
    }

    pub async fn blob(&self, key: &str) -> Vec<u8> {
        self.blobs.get(key).await.unwrap().unwrap().to_vec()
    }
}

pub async fn run_with(
    handler: &GenerateAdHandler,
    job: Job,
) -> (Result<AdCompleted, JobError>, Arc<MemoryQueue>) {
    let queue = Arc::new(MemoryQueue::new(QueueConfig::default()));
    queue.enqueue(job).await.unwrap();
    let claimed = queue
        .claim("test", Duration::from_secs(1))
        .await
        .unwrap()
        .unwrap();
    let sink = ProgressSink::new(queue.clone() as Arc<dyn JobQueue>, &claimed);
    (handler.handle(claimed.job, sink).await, queue)
}

pub fn job(base: &str, ad_id: &str, reference: &str, editable: bool) -> GenerateAdJob {
    GenerateAdJob {
        ad_id: ad_id.into(),
        org_id: "org_1".into(),
        version: 1,
        editable,
        reference_ad_url: format!("{base}{reference}"),
        brief: AdBrief {
            prompt: Some("Warm and inviting, morning ritual".into()),
            brand: Brand {
                id: "br_1".into(),
                name: "Northwind".into(),
                color_palettes: json!({"primary": ["#1F3A5F", "#F4EBDD"], "accent": ["#E07A3F"]}),
                fonts: json!([{"name": "Playfair Display", "role": "heading"}, {"name": "Lato", "role": "body"}]),
                logos: vec![
                    Logo {
                        url: format!("{base}/logo/dark.png"),
                        theme: Some("dark".into()),
                    },
                    Logo {
                        url: format!("{base}/logo/light.png"),
                        theme: Some("light".into()),
                    },
                ],
                details: serde_json::Value::Null,
            },
            product: Product {
                id: "prod_1".into(),
                name: "Northwind Cold Brew".into(),
                description: Some(
                    "Smooth, low-acid cold brew concentrate, steeped for 18 hours. Makes 16 cups."
                        .into(),
                ),
                details: json!({"benefits": ["Café-quality coffee at home"]}),
            },
            audience: Audience {
                id: "aud_1".into(),
                name: "Busy parents".into(),
                description: Some("Parents who need a calm start".into()),
                details: json!({"pain_points": ["Rushed mornings"], "motivations": ["Calm starts"]}),
            },
            variant_image_urls: vec![format!("{base}/img/coffee.png")],
            variant: None,
            created_at: Some("2026-06-01T09:00:00.000Z".into()),
        },
        template: None,
        size: None,
    }
}
