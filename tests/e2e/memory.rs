//! Peak memory of a real `adforge serve` process under concurrent large uploads (its own
//! resident set, read from `/proc`, so it needs a process of its own).

use std::process::Stdio;

use reqwest::multipart::{Form, Part};

use crate::support::{Process, eventually, free_port, wait_up};
use crate::{adforge, status_kib};

/// Peak memory: a real `adforge serve` process receives eight uploads at once, each a
/// 200 KB PNG that declares 16000×3000 RGBA (48 MP, under the limit: 192 MB decoded). Its
/// peak resident set (VmHWM) may grow by at most the documented bound: the 512 MiB decode
/// budget, the previews kept for thumbnails (5.8 MB each) and the bodies, plus 64 MiB for
/// the process's own growth (threads, allocator arenas). Unbounded, eight reach 4.8 GB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_large_uploads_at_once_stay_within_the_memory_bound() {
    const UPLOADS: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let server = Process(
        adforge()
            .arg("serve")
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--listen", &format!("127.0.0.1:{port}"), "--log", "warn"])
            .args(["--workers", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(wait_up(&base).await, "server did not start");
    let pid = server.0.id();
    let db = adforge_api::store::Db::open(dir.path()).await.unwrap();
    let org = adforge_api::orgs::create_org(&db, "Memory").await.unwrap();
    let key = adforge_api::orgs::create_key(
        &db,
        org["id"].as_str().unwrap(),
        &adforge_api::auth::Grants::All,
        Some(100_000),
    )
    .await
    .unwrap()["key"]
        .as_str()
        .unwrap()
        .to_string();

    // The bomb: all-zero RGBA at the best compression (about 1000:1).
    let bomb = {
        use image::ImageEncoder;
        let (w, h) = (16_000u32, 3_000u32);
        let pixels = vec![0u8; (w * h * 4) as usize];
        let mut out = Vec::new();
        image::codecs::png::PngEncoder::new_with_quality(
            &mut out,
            image::codecs::png::CompressionType::Best,
            image::codecs::png::FilterType::NoFilter,
        )
        .write_image(&pixels, w, h, image::ExtendedColorType::Rgba8)
        .unwrap();
        out
    };
    assert!(bomb.len() < 400_000, "the bomb is {} bytes", bomb.len());

    let before = status_kib(pid, "VmRSS:");

    let http = reqwest::Client::new();
    let uploads = (0..UPLOADS).map(|i| {
        let form = Form::new().part(
            "file",
            Part::bytes(bomb.clone()).file_name(format!("big{i}.png")),
        );
        crate::support::send(
            http.post(format!("{base}/v1/images"))
                .header("x-api-key", &key)
                .multipart(form),
        )
    });
    let mut ids = Vec::new();
    for reply in futures_util::future::join_all(uploads).await {
        let reply = reply.expect(201, None);
        assert_eq!(
            (
                reply.body["data"]["width"].as_i64(),
                reply.body["data"]["height"].as_i64()
            ),
            (Some(16_000), Some(3_000))
        );
        ids.push(reply.id());
    }
    // Thumbnails are made after the responses: wait for them too.
    for id in &ids {
        let done = eventually(|| async {
            let d = crate::support::send(
                http.get(format!("{base}/v1/images/{id}"))
                    .header("x-api-key", &key),
            )
            .await
            .expect(200, None)
            .body["data"]
                .clone();
            d["thumbnail_large_src"].is_string()
        })
        .await;
        assert!(done, "image {id} never got its thumbnails");
    }
    let peak = status_kib(pid, "VmHWM:");
    let grown_mib = peak.saturating_sub(before) / 1024;
    eprintln!(
        "{UPLOADS} uploads of {} bytes at once: peak RSS {} MiB, {grown_mib} MiB over the {} MiB before",
        bomb.len(),
        peak / 1024,
        before / 1024
    );
    let bound_mib = adforge_worker::imaging::DECODE_BUDGET_BYTES / (1 << 20)
        + (UPLOADS as u64 * (6 << 20) + UPLOADS as u64 * bomb.len() as u64) / (1 << 20)
        + 64;
    assert!(
        grown_mib <= bound_mib,
        "peak RSS grew by {grown_mib} MiB ({} → {} MiB); the bound is {bound_mib} MiB",
        before / 1024,
        peak / 1024
    );
}

/// Swipe-file ingest decodes through the same process-wide budget as `/v1/images` and
/// shrinks at once to its working size: a real `adforge serve` (in-process workers, the
/// real models) receives two 7000×7000 16-bit RGBA PNGs at once (about 400 KB each, 392 MB
/// decoded). Its peak resident set may grow past the peak of a warm-up ingest by at most
/// the decode budget, the three bodies, 32 MiB per design of working-size pixels, and
/// 64 MiB for the process's own growth. Before, one such upload raised the peak by 850 MB
/// and three by 1.3 GB (the full-size image was copied four times).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_swipe_file_ingests_stay_within_the_decode_budget() {
    const DESIGNS: usize = 2;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let server = Process(
        adforge()
            .arg("serve")
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--listen", &format!("127.0.0.1:{port}"), "--log", "warn"])
            // No default collection: its ingest would queue ahead of ours.
            .args(["--default-collection", "/nonexistent-default-collection"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(wait_up(&base).await, "server did not start");
    let pid = server.0.id();
    let db = adforge_api::store::Db::open(dir.path()).await.unwrap();
    let org = adforge_api::orgs::create_org(&db, "Ingest").await.unwrap();
    let key = adforge_api::orgs::create_key(
        &db,
        org["id"].as_str().unwrap(),
        &adforge_api::auth::Grants::All,
        Some(100_000),
    )
    .await
    .unwrap()["key"]
        .as_str()
        .unwrap()
        .to_string();
    let http = reqwest::Client::new();
    let upload = |bytes: Vec<u8>| {
        let form = Form::new().part("file", Part::bytes(bytes).file_name("design.png"));
        crate::support::send(
            http.post(format!("{base}/v1/swipe-files"))
                .header("x-api-key", &key)
                .multipart(form),
        )
    };
    let settle = |id: String| {
        let (http, base, key) = (http.clone(), base.clone(), key.clone());
        async move {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
            loop {
                let d = crate::support::send(
                    http.get(format!("{base}/v1/swipe-files/{id}"))
                        .header("x-api-key", &key),
                )
                .await
                .expect(200, None)
                .body["data"]
                    .clone();
                if d["status"] != "processing" {
                    return d;
                }
                assert!(std::time::Instant::now() < deadline, "{id} never settled");
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
        }
    };

    // Warm up: the models load and one small design is ingested.
    let small = {
        let mut out = Vec::new();
        image::RgbImage::from_fn(400, 300, |x, y| image::Rgb([x as u8, y as u8, 90]))
            .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
            .unwrap();
        out
    };
    let warm = upload(small).await.expect(202, None).id();
    assert_eq!(settle(warm).await["status"], "ready");
    let before = status_kib(pid, "VmHWM:");

    // The big one: 16-bit RGBA, all zero (about 1000:1 at the best compression).
    let big = {
        use image::ImageEncoder;
        let (w, h) = (7_000u32, 7_000u32);
        let bytes = vec![0u8; (w * h * 8) as usize];
        let mut out = Vec::new();
        image::codecs::png::PngEncoder::new_with_quality(
            &mut out,
            image::codecs::png::CompressionType::Best,
            image::codecs::png::FilterType::NoFilter,
        )
        .write_image(&bytes, w, h, image::ExtendedColorType::Rgba16)
        .unwrap();
        out
    };
    assert!(big.len() < 1_000_000, "the design is {} bytes", big.len());
    let replies = futures_util::future::join_all((0..DESIGNS).map(|_| upload(big.clone()))).await;
    let ids: Vec<String> = replies
        .into_iter()
        .map(|r| r.expect(202, None).id())
        .collect();
    for id in ids {
        let d = settle(id).await;
        assert_eq!(d["status"], "ready", "{d}");
        assert_eq!(
            (d["width"].as_i64(), d["height"].as_i64()),
            (Some(7000), Some(7000))
        );
    }
    let peak = status_kib(pid, "VmHWM:");
    let grown_mib = peak.saturating_sub(before) / 1024;
    let bound_mib = adforge_worker::imaging::DECODE_BUDGET_BYTES / (1 << 20)
        + (DESIGNS as u64 * (32 << 20) + DESIGNS as u64 * big.len() as u64) / (1 << 20)
        + 64;
    eprintln!(
        "{DESIGNS} swipe files of {} bytes (7000×7000 RGBA16): peak RSS {} MiB, {grown_mib} MiB over the warm peak of {} MiB (bound {bound_mib} MiB)",
        big.len(),
        peak / 1024,
        before / 1024
    );
    assert!(
        grown_mib <= bound_mib,
        "peak RSS grew by {grown_mib} MiB ({} → {} MiB); the bound is {bound_mib} MiB",
        before / 1024,
        peak / 1024
    );
}
