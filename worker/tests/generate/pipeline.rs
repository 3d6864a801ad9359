//! End-to-end behaviour of `GenerateAdHandler`.

use adforge_renderer::{RenderOptions, Tree, Warning};
use adforge_worker::generate::{analyse, blob_key, copy, layouts};
use adforge_worker::protocol::RerenderJob;
use adforge_worker::{Job, JobError, JobQueue};
use serde_json::Value;

use crate::fixtures::{self, Harness, job};

fn samples_dir() -> std::path::PathBuf {
    let dir = fixtures::repo().join("target/generate-samples");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes a sample and a 720 px preview of it for people to look at.
fn save_sample(name: &str, png: &[u8]) {
    std::fs::write(samples_dir().join(format!("{name}.png")), png).unwrap();
    let preview = image::load_from_memory(png).unwrap().thumbnail(720, 720);
    preview
        .save(samples_dir().join(format!("{name}.preview.png")))
        .unwrap();
}

fn assert_uuid_ids(tree: &Value) {
    let nodes = tree["nodes"].as_object().unwrap();
    assert!(nodes.len() > 5);
    for (id, node) in nodes {
        let u = uuid::Uuid::parse_str(id).unwrap_or_else(|_| panic!("{id} is not a UUID"));
        assert_eq!(u.get_version_num(), 4);
        assert_eq!(node["id"], Value::from(id.clone()));
        for child in node["children"].as_array().into_iter().flatten() {
            assert!(nodes.contains_key(child.as_str().unwrap()));
        }
    }
    assert!(nodes.contains_key(tree["root"].as_str().unwrap()));
}

/// Generates an editable ad from `reference`, checks size, tree and re-render, returns
/// (layout name, tree).
async fn editable_ad(h: &Harness, ad_id: &str, reference: &str, size: (u32, u32)) -> String {
    let (done, queue) = h
        .run(Job::GenerateImageAd(job(&h.base, ad_id, reference, true)))
        .await;
    let done = crate::fixtures::ad(done.unwrap());
    assert_eq!((done.width, done.height), size, "{reference}");
    let key = blob_key(ad_id, 1);
    assert_eq!(done.image_url, format!("http://blobs.test/files/{key}"));
    let png = h.blob(&key).await;
    let decoded = image::load_from_memory(&png).unwrap();
    assert_eq!((decoded.width(), decoded.height()), size);
    let progress = queue.latest_progress(ad_id).await.unwrap().unwrap();
    assert_eq!(
        (progress.step.as_str(), progress.percentage),
        ("storing", 90)
    );

    let tree_json = done.json_tree.expect("editable ads return their tree");
    assert_uuid_ids(&tree_json);
    // The returned tree is exactly what was rendered: it re-renders to the same PNG, and
    // the renderer reports no low contrast and no overflowing text.
    let tree = Tree::parse(&tree_json.to_string()).unwrap();
    let again = h
        .handler
        .renderer()
        .render(
            &tree,
            &RenderOptions {
                width: None,
                encode_png: true,
            },
        )
        .unwrap();
    assert!(
        again.png.as_deref() == Some(png.as_slice()),
        "re-render differs for {reference}"
    );
    for w in &again.report.warnings {
        assert!(
            !matches!(
                w,
                Warning::LowContrast { .. }
                    | Warning::TextOverflow { .. }
                    | Warning::ImageFailed { .. }
                    | Warning::MissingFont { .. }
            ),
            "{reference}: {w:?}"
        );
    }
    save_sample(ad_id, &png);
    std::fs::write(
        samples_dir().join(format!("{ad_id}.json")),
        serde_json::to_string_pretty(&tree_json).unwrap(),
    )
    .unwrap();
    tree_json["nodes"][tree_json["root"].as_str().unwrap()]["name"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editable_ads_in_every_aspect_are_4k_and_rerender_identically() {
    let h = Harness::new().await;
    let square = editable_ad(&h, "ia_square", "/ref/object.png", (3840, 3840)).await;
    let portrait = editable_ad(&h, "ia_poster", "/ref/poster.png", (3072, 3840)).await;
    let story = editable_ad(&h, "ia_story", "/ref/story.png", (2160, 3840)).await;
    eprintln!("layouts: {square} {portrait} {story}");

    // A re-render job of the returned tree stores version 2 with the same pixels.
    let v1 = h.blob(&blob_key("ia_poster", 1)).await;
    let tree: Value = serde_json::from_str(
        &std::fs::read_to_string(samples_dir().join("ia_poster.json")).unwrap(),
    )
    .unwrap();
    let (done, _) = h
        .run(Job::RenderImageAdVersion(RerenderJob {
            ad_id: "ia_poster".into(),
            org_id: "org_1".into(),
            version: 2,
            version_id: None,
            json_tree: tree,
        }))
        .await;
    let done = crate::fixtures::ad(done.unwrap());
    assert_eq!((done.width, done.height), (3072, 3840));
    assert_eq!(h.blob(&blob_key("ia_poster", 2)).await, v1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flat_ads_have_no_tree_and_a_redo_overwrites_the_same_key() {
    let h = Harness::new().await;
    for (ad, reference, size) in [
        // A 640×427 photo: no library layout has 3:2, so the ad keeps the reference's shape.
        ("ia_flat", "/ref/rocket.jpg", (3840, 2562)),
        ("ia_flat45", "/ref/object45.png", (3072, 3840)),
        ("ia_flat916", "/ref/story.png", (2160, 3840)),
    ] {
        let (done, _) = h
            .run(Job::GenerateImageAd(job(&h.base, ad, reference, false)))
            .await;
        let done = crate::fixtures::ad(done.unwrap());
        assert!(done.json_tree.is_none());
        assert_eq!((done.width, done.height), size);
        let png = h.blob(&blob_key(ad, 1)).await;
        let decoded = image::load_from_memory(&png).unwrap();
        assert_eq!((decoded.width(), decoded.height()), size);
        save_sample(ad, &png);
    }
    // A redo (the job delivered again) writes the same bytes to the same key.
    let png = h.blob(&blob_key("ia_flat", 1)).await;
    let (redo, _) = h
        .run(Job::GenerateImageAd(job(
            &h.base,
            "ia_flat",
            "/ref/rocket.jpg",
            false,
        )))
        .await;
    assert_eq!(
        crate::fixtures::ad(redo.unwrap()).image_url,
        format!("http://blobs.test/files/{}", blob_key("ia_flat", 1))
    );
    assert_eq!(
        h.blob(&blob_key("ia_flat", 1)).await,
        png,
        "generation is deterministic"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn different_compositions_choose_different_layouts() {
    let lib = layouts::library().unwrap();
    let poster = analyse::analyse(&fixtures::poster(1080, 1350)).unwrap();
    let object = analyse::analyse(&fixtures::centred_object(1080, 1350)).unwrap();
    assert!(poster.text_led(), "poster: {poster:?}");
    assert!(!object.text_led(), "object: {object:?}");
    assert_eq!(poster.aspect, object.aspect);
    let a = layouts::choose_layout(&lib, &poster, true).unwrap();
    let b = layouts::choose_layout(&lib, &object, true).unwrap();
    assert_ne!(a.name, b.name);
    // The object sits in the middle; the poster's ink is in its upper half.
    assert!((object.subject.0 - 0.5).abs() < 0.1 && (object.subject.1 - 0.5).abs() < 0.1);
    assert!(poster.subject.1 < 0.5);

    // Same product, same everything but the reference: the generated trees differ in layout.
    let h = Harness::new().await;
    let mut names = Vec::new();
    for (ad, reference) in [("ia_a", "/ref/poster.png"), ("ia_b", "/ref/object45.png")] {
        let (done, _) = h
            .run(Job::GenerateImageAd(job(&h.base, ad, reference, true)))
            .await;
        let tree = crate::fixtures::ad(done.unwrap()).json_tree.unwrap();
        names.push(tree["nodes"][tree["root"].as_str().unwrap()]["name"].clone());
        save_sample(ad, &h.blob(&blob_key(ad, 1)).await);
    }
    assert_ne!(names[0], names[1]);
}

#[test]
fn copy_is_deterministic_and_follows_the_prompt() {
    let j = job("http://x", "ia_1", "/r.png", false);
    let a = copy::write_copy(&j.product, &j.audience, j.prompt.as_deref());
    assert_eq!(
        a,
        copy::write_copy(&j.product, &j.audience, j.prompt.as_deref())
    );
    let quoted = copy::write_copy(
        &j.product,
        &j.audience,
        Some("Lead with \"Mornings, sorted\""),
    );
    assert_eq!(quoted.headline, "Mornings, sorted");
    assert!(a.headline.chars().count() <= copy::HEADLINE_MAX);
}

async fn expect_abort(h: &Harness, job: Job) -> String {
    match h.run(job).await.0 {
        Err(JobError::Abort { code, message }) => {
            assert_eq!(code, "PIPELINE_ERROR");
            message
        }
        other => panic!("expected an abort, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_inputs_abort_and_unreachable_hosts_retry() {
    let h = Harness::new().await;
    let msg = expect_abort(
        &h,
        Job::GenerateImageAd(job(&h.base, "ia_404", "/missing.png", true)),
    )
    .await;
    assert!(msg.contains("404"), "{msg}");
    let msg = expect_abort(
        &h,
        Job::GenerateImageAd(job(&h.base, "ia_txt", "/not-an-image.png", true)),
    )
    .await;
    assert!(msg.contains("reference"), "{msg}");
    let mut j = job(&h.base, "ia_var", "/ref/object.png", true);
    j.variant_image_urls = vec![format!("{}/img/gone.png", h.base)];
    let msg = expect_abort(&h, Job::GenerateImageAd(j)).await;
    assert!(msg.contains("product image"), "{msg}");
    let msg = expect_abort(
        &h,
        Job::RenderImageAdVersion(RerenderJob {
            ad_id: "ia_bad".into(),
            org_id: "org_1".into(),
            version: 2,
            version_id: None,
            json_tree: serde_json::json!({"nodes": {"a": {"type": "FRAME", "width": 10, "height": 10, "opacity": 3}}}),
        }),
    )
    .await;
    assert!(msg.contains("opacity"), "{msg}");

    // Nothing listens on port 9 of loopback: a transient network failure.
    let j = job("http://127.0.0.1:9", "ia_down", "/ref/object.png", true);
    assert!(matches!(
        h.run(Job::GenerateImageAd(j)).await.0,
        Err(JobError::Retry { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_addresses_are_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = std::sync::Arc::new(adforge_worker::blob::LocalBlobStore::new(
        dir.path().into(),
        "http://blobs.test",
    ));
    let handler =
        adforge_worker::GenerateAdHandler::new(adforge_worker::GenerateConfig::new(blobs));
    let base = fixtures::server().await;
    let (out, _) = fixtures::run_with(
        &handler,
        Job::GenerateImageAd(job(&base, "ia_p", "/ref/object.png", true)),
    )
    .await;
    match out {
        Err(JobError::Abort { message, .. }) => {
            assert!(message.contains("not a public address"), "{message}")
        }
        other => panic!("expected an abort, got {other:?}"),
    }
}

#[test]
#[ignore = "prints the analysis of every fixture, for tuning"]
fn print_analyses() {
    let samples = fixtures::repo().join("assets/samples");
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("poster", fixtures::poster(1080, 1350)),
        ("object", fixtures::centred_object(1080, 1350)),
        ("story", fixtures::story_photo()),
        ("rocket", std::fs::read(samples.join("rocket.jpg")).unwrap()),
        ("coffee", std::fs::read(samples.join("coffee.png")).unwrap()),
        (
            "chelsea",
            std::fs::read(samples.join("chelsea.png")).unwrap(),
        ),
    ];
    let lib = layouts::library().unwrap();
    for (name, bytes) in files {
        let a = analyse::analyse(&bytes).unwrap();
        let l = layouts::choose_layout(&lib, &a, true).unwrap();
        eprintln!(
            "{name}: flat {:.2} edge {:.2} text {:.2} subject ({:.2},{:.2}) focus {:.2} calm ({:.2},{:.2}) {:.2} -> {}",
            a.flat_share,
            a.edge_ratio,
            a.text_score,
            a.subject.0,
            a.subject.1,
            a.subject_focus,
            a.calm.0,
            a.calm.1,
            a.calm_share,
            l.name
        );
    }
}

/// Every layout in every aspect, filled with the test brand: after the preflight pass the
/// renderer reports no low contrast, overflow, failed image or missing font. Previews of
/// all of them land in `target/generate-samples/layouts/`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_layout_fills_cleanly_in_every_aspect() {
    use adforge_worker::generate::{fill, preflight};
    let h = Harness::new().await;
    let j = job(&h.base, "ia_lib", "/ref/object.png", true);
    let reference = analyse::analyse(&fixtures::centred_object(1080, 1080)).unwrap();
    let copy = copy::write_copy(&j.product, &j.audience, j.prompt.as_deref());
    let logos = vec![
        fill::LogoChoice {
            url: j.brand.logos[0].url.clone(),
            aspect: 3.6,
            luminance: 0.02,
            ink: None,
        },
        fill::LogoChoice {
            url: j.brand.logos[1].url.clone(),
            aspect: 3.6,
            luminance: 0.95,
            ink: None,
        },
    ];
    let dir = samples_dir().join("layouts");
    std::fs::create_dir_all(&dir).unwrap();
    let renderer = h.handler.renderer().clone();
    let fetcher = h.handler.fetcher().clone();
    for layout in h.handler.layouts() {
        for aspect in analyse::Aspect::ALL {
            let inputs = fill::FillInputs {
                ad_id: "ia_lib",
                layout_name: &layout.name,
                brand: &j.brand,
                palette: adforge_worker::generate::brand::Palette::from_brand(&j.brand, &reference),
                copy: &copy,
                product_image: j.variant_image_urls.first().map(String::as_str),
                product_cutout: None,
                logos: &logos,
                slots: None,
                no_logo: false,
            };
            let filled = fill::fill(layout.template(aspect).unwrap(), &inputs).unwrap();
            let r = renderer.clone();
            let f = fetcher.clone();
            let (tree, out) = tokio::task::spawn_blocking(move || {
                let tree = preflight(&r, &f, filled).unwrap();
                let out = r
                    .render(
                        &tree,
                        &RenderOptions {
                            width: Some(540),
                            encode_png: true,
                        },
                    )
                    .unwrap();
                (tree, out)
            })
            .await
            .unwrap();
            let label = format!("{}_{}", layout.name, aspect.key().replace(':', "x"));
            for w in &out.report.warnings {
                assert!(
                    !matches!(
                        w,
                        Warning::LowContrast { .. }
                            | Warning::TextOverflow { .. }
                            | Warning::ImageFailed { .. }
                            | Warning::MissingFont { .. }
                    ),
                    "{label}: {w:?}"
                );
            }
            assert_uuid_ids(tree.as_value());
            // The logo variant contrasts with its backdrop: the dark mark on light grounds,
            // the light mark on dark ones.
            let logo = tree.as_value()["nodes"]
                .as_object()
                .unwrap()
                .values()
                .find(|n| n["name"] == "Logo")
                .unwrap();
            let url = logo["fills"][0]["imageFillUrl"].as_str().unwrap();
            let expected = match layout.name.as_str() {
                "split_text_left" | "split_text_right" | "top_headline" | "framed_card" => "dark",
                _ => "light",
            };
            assert!(
                url.ends_with(&format!("/logo/{expected}.png")),
                "{label}: {url}"
            );
            std::fs::write(dir.join(format!("{label}.png")), out.png.unwrap()).unwrap();
        }
    }
}

/// No palette, fonts, logos, variant images, details or prompt: the ad still completes,
/// with the reference's colours, bundled fonts and the brand name as a wordmark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bare_brand_still_gets_a_complete_ad() {
    let h = Harness::new().await;
    let mut j = job(&h.base, "ia_bare", "/ref/rocket.jpg", true);
    j.brand.color_palettes = Value::Null;
    j.brand.fonts = Value::Null;
    j.brand.logos.clear();
    j.variant_image_urls.clear();
    j.prompt = None;
    j.product.details = Value::Null;
    j.audience.details = Value::Null;
    let (done, _) = h.run(Job::GenerateImageAd(j)).await;
    let tree_json = crate::fixtures::ad(done.unwrap()).json_tree.unwrap();
    assert_uuid_ids(&tree_json);
    let nodes = tree_json["nodes"].as_object().unwrap();
    assert!(
        nodes
            .values()
            .any(|n| n["type"] == "TEXT" && n["characters"] == "Northwind")
    );
    assert!(!tree_json.to_string().contains("imageFillUrl"));
    // With nothing to show, the ad is led by its words, in the (3:2) reference's shape.
    assert_eq!(
        tree_json["nodes"][tree_json["root"].as_str().unwrap()]["name"],
        adforge_worker::generate::GENERIC_LAYOUT
    );
    let tree = Tree::from_value(tree_json).unwrap();
    let out = h
        .handler
        .renderer()
        .render(
            &tree,
            &RenderOptions {
                width: Some(540),
                encode_png: false,
            },
        )
        .unwrap();
    for w in &out.report.warnings {
        assert!(
            !matches!(
                w,
                Warning::LowContrast { .. }
                    | Warning::TextOverflow { .. }
                    | Warning::MissingFont { .. }
            ),
            "{w:?}"
        );
    }
    save_sample("ia_bare", &h.blob(&blob_key("ia_bare", 1)).await);
}

/// A one-image tree: a white 200×100 frame whose left half is filled with `url`.
fn image_tree(url: &str) -> Value {
    serde_json::json!({"root": "f", "nodes": {
        "f": {"type": "FRAME", "width": 200, "height": 100, "children": ["i"],
              "fills": [{"type": "SOLID", "color": {"r": 1, "g": 1, "b": 1, "a": 1}}]},
        "i": {"type": "RECTANGLE", "x": 0, "y": 0, "width": 100, "height": 100,
              "fills": [{"type": "IMAGE", "imageFillUrl": url, "scaleMode": "FILL"}]}
    }})
}

fn rerender_job(ad_id: &str, url: &str) -> Job {
    Job::RenderImageAdVersion(RerenderJob {
        ad_id: ad_id.into(),
        org_id: "org_1".into(),
        version: 2,
        version_id: None,
        json_tree: image_tree(url),
    })
}

/// Issue 14, item 5: a re-render reads the tree's images before drawing. This server's own
/// files come from the blob store (the renderer loads images on threads of its own, where
/// the store was once unreachable and the image silently dropped); an image that cannot be
/// read fails the job rather than completing without it: a transient fetch failure
/// retries, anything else aborts naming the image and the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerenders_draw_own_files_and_fail_on_images_they_cannot_read() {
    use adforge_worker::blob::BlobStore;
    let h = Harness::new().await;
    let red = fixtures::png(&image::DynamicImage::ImageRgba8(
        image::RgbaImage::from_pixel(64, 64, image::Rgba([200, 30, 40, 255])),
    ));
    let own = |key: &str| h.blobs.url(key);
    h.blobs
        .put("images/img_red/original.png", red.clone().into())
        .await
        .unwrap();
    h.blobs
        .put(
            "images/img_cut/original.png",
            red[..red.len() / 2].to_vec().into(),
        )
        .await
        .unwrap();

    let done = h
        .run(rerender_job("ia_own", &own("images/img_red/original.png")))
        .await
        .0
        .unwrap();
    let done = crate::fixtures::ad(done);
    let png = h.blob(&blob_key("ia_own", 2)).await;
    let img = image::load_from_memory(&png).unwrap().to_rgba8();
    assert_eq!((img.width(), img.height()), (done.width, done.height));
    let (w, h_px) = img.dimensions();
    assert_eq!(
        img.get_pixel(w / 4, h_px / 2).0,
        [200, 30, 40, 255],
        "the own file is drawn"
    );
    assert_eq!(img.get_pixel(w * 3 / 4, h_px / 2).0, [255, 255, 255, 255]);

    let abort = |r: Result<_, JobError>| match r {
        Err(JobError::Abort { code, message }) => {
            assert_eq!(code, "PIPELINE_ERROR");
            message
        }
        other => panic!("expected an abort, got {other:?}"),
    };
    let gone = own("images/img_gone/original.png");
    let msg = abort(h.run(rerender_job("ia_gone", &gone)).await.0);
    assert!(msg.contains(&gone) && msg.contains("404"), "{msg}");
    let cut = own("images/img_cut/original.png");
    let msg = abort(h.run(rerender_job("ia_cut", &cut)).await.0);
    assert!(msg.contains(&cut) && msg.contains("decoded"), "{msg}");
    let missing = format!("{}/missing.png", h.base);
    let msg = abort(h.run(rerender_job("ia_404", &missing)).await.0);
    assert!(msg.contains(&missing) && msg.contains("404"), "{msg}");
    let text = format!("{}/not-an-image.png", h.base);
    let msg = abort(h.run(rerender_job("ia_txt", &text)).await.0);
    assert!(msg.contains(&text), "{msg}");
    // Nothing listens on port 9 of loopback: transient, so the job is retried.
    match h
        .run(rerender_job("ia_down", "http://127.0.0.1:9/x.png"))
        .await
        .0
    {
        Err(JobError::Retry { message }) => assert!(message.contains("127.0.0.1:9"), "{message}"),
        other => panic!("expected a retry, got {other:?}"),
    }
    for ad in ["ia_gone", "ia_cut", "ia_404", "ia_txt", "ia_down"] {
        assert!(
            h.blobs.get(&blob_key(ad, 2)).await.unwrap().is_none(),
            "{ad}: nothing is stored for a failed render"
        );
    }
}

/// A PNG whose header claims `w`×`h` over almost no data (it never decodes; only its header
/// is read before the render is refused).
fn claimed_png(w: u32, h: u32) -> Vec<u8> {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = 0xFFFF_FFFFu32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8; 4], data: &[u8]| {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut body = kind.to_vec();
        body.extend_from_slice(data);
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32(&body).to_be_bytes());
    };
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]);
    chunk(b"IHDR", &ihdr);
    // A zlib stream of one empty stored block: the decoder reads the header up to here.
    chunk(
        b"IDAT",
        &[
            0x78, 0x01, 0x01, 0x00, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01,
        ],
    );
    chunk(b"IEND", &[]);
    out
}

/// An edited tree may not make the worker hold more images than it can afford: at most
/// `MAX_TREE_IMAGES` distinct images and `MAX_TREE_IMAGE_BYTES` of them decoded, checked
/// from the headers before anything is decoded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edited_trees_are_refused_images_beyond_the_memory_limit() {
    use adforge_worker::blob::BlobStore;
    use adforge_worker::generate::{MAX_TREE_IMAGE_BYTES, MAX_TREE_IMAGES};
    let h = Harness::new().await;
    let abort = |r: Result<_, JobError>| match r {
        Err(JobError::Abort { message, .. }) => message,
        other => panic!("expected an abort, got {other:?}"),
    };

    let mut many = image_tree("unused");
    let nodes = many["nodes"].as_object_mut().unwrap();
    let mut children = Vec::new();
    for i in 0..=MAX_TREE_IMAGES {
        let id = format!("i{i}");
        nodes.insert(
            id.clone(),
            serde_json::json!({"type": "RECTANGLE", "width": 10, "height": 10,
                "fills": [{"type": "IMAGE", "imageFillUrl": format!("{}/img/{i}.png", h.base), "scaleMode": "FILL"}]}),
        );
        children.push(Value::from(id));
    }
    nodes.remove("i");
    nodes["f"]["children"] = Value::from(children);
    let job = Job::RenderImageAdVersion(RerenderJob {
        ad_id: "ia_many".into(),
        org_id: "org_1".into(),
        version: 2,
        version_id: None,
        json_tree: many,
    });
    let msg = abort(h.run(job).await.0);
    assert!(msg.contains("different images"), "{msg}");

    // 12,000² RGBA is 549 MiB decoded: over the limit, refused from its header.
    let side = 12_000u32;
    assert!(u64::from(side) * u64::from(side) * 4 > MAX_TREE_IMAGE_BYTES);
    h.blobs
        .put(
            "images/img_huge/original.png",
            claimed_png(side, side).into(),
        )
        .await
        .unwrap();
    let url = h.blobs.url("images/img_huge/original.png");
    let msg = abort(h.run(rerender_job("ia_huge", &url)).await.0);
    assert!(msg.contains("MiB decoded"), "{msg}");
}
