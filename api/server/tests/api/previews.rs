//! POST /v1/previews: the picture equals the CPU renderer's output of the same tree at the
//! same width, WebP carries the same pixels, the boxes are where layout put the nodes, and
//! every bound (nodes, width, image bytes, render time, rate) answers a clear 4xx.

use std::sync::Arc;
use std::time::Duration;

use adforge_renderer::{FetchLimits, HttpFetcher, RenderOptions, Renderer, Tree};
use reqwest::Method;
use serde_json::{Value, json};

use crate::flows::{After, RefServer};
use crate::support::{Org, Reply, TestServer, png, send};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// An example ad of `scripts/bench-render` with its photo uploaded to this server.
async fn example(s: &TestServer, org: &Org, name: &str) -> Value {
    let text =
        std::fs::read_to_string(format!("{ROOT}/renderer/examples/ads/{name}.json")).unwrap();
    let mut tree: Value = serde_json::from_str(&text).unwrap();
    for sample in ["coffee.png", "rocket.jpg"] {
        let bytes = std::fs::read(format!("{ROOT}/assets/samples/{sample}")).unwrap();
        let relative = format!("../../../assets/samples/{sample}");
        if !text.contains(&relative) {
            continue;
        }
        let url = s.upload(org, bytes, &[]).await.expect(201, None).body["data"]["src"]
            .as_str()
            .unwrap()
            .to_string();
        let doc = adforge_renderer::tree::TreeDoc::new(tree.clone());
        for p in doc.image_paints() {
            if p.url == relative {
                adforge_renderer::tree::TreeDoc::new(&mut tree)
                    .set_image_url(&p.at, p.field, &url)
                    .unwrap();
            }
        }
    }
    tree
}

/// A raw POST /v1/previews: status, headers and body bytes.
async fn raw(
    s: &TestServer,
    key: &str,
    body: Value,
    accept: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let mut req = s
        .request(Method::POST, "/v1/previews")
        .header("x-api-key", key)
        .json(&body);
    if let Some(a) = accept {
        req = req.header("accept", a);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    (status, headers, res.bytes().await.unwrap().to_vec())
}

async fn preview_json(s: &TestServer, org: &Org, body: Value) -> Reply {
    send(
        s.request(Method::POST, "/v1/previews")
            .header("x-api-key", &org.key)
            .header("accept", "application/json")
            .json(&body),
    )
    .await
}

/// The renderer's parity tolerance (renderer/README.md): at most 0.1 % of channel values
/// more than 2 levels off, none more than 16.
fn assert_parity(a: &image::RgbaImage, b: &image::RgbaImage) {
    assert_eq!(a.dimensions(), b.dimensions());
    let (mut off, mut worst) = (0usize, 0u8);
    for (x, y) in a.as_raw().iter().zip(b.as_raw()) {
        let d = x.abs_diff(*y);
        worst = worst.max(d);
        off += usize::from(d > 2);
    }
    assert!(worst <= 16, "a channel is {worst} levels off");
    assert!(
        off * 1000 <= a.as_raw().len(),
        "{off} channel values more than 2 off"
    );
}

#[tokio::test]
async fn previews_equal_the_cpu_render_and_webp_has_the_same_pixels() {
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org("Acme").await;
    // The same trees through the renderer itself, their images fetched over HTTP.
    let renderer = Arc::new(Renderer::new(
        adforge_renderer::FontLibrary::bundled(),
        Arc::new(HttpFetcher::new(FetchLimits {
            allow_private: true,
            ..FetchLimits::default()
        })),
    ));
    for name in ["simple", "typical", "heavy"] {
        let tree = example(&s, &org, name).await;
        let (status, headers, body) =
            raw(&s, &org.key, json!({"tree": tree, "width": 1080}), None).await;
        assert_eq!(status, 200, "{name}: {}", String::from_utf8_lossy(&body));
        assert_eq!(headers["content-type"], "image/png");
        let ms: f64 = headers["x-render-ms"].to_str().unwrap().parse().unwrap();
        assert!(ms > 0.0);
        assert!(headers.contains_key("ratelimit-remaining"));
        let preview = image::load_from_memory(&body).unwrap().to_rgba8();
        let parsed = Tree::from_value(tree.clone()).unwrap();
        let (dw, dh) = parsed.design_size();
        assert_eq!(
            preview.dimensions(),
            (1080, (1080.0 * dh / dw).round() as u32),
            "{name}"
        );

        let r = renderer.clone();
        let direct = tokio::task::spawn_blocking(move || {
            let out = r
                .render(
                    &parsed,
                    &RenderOptions {
                        width: Some(1080),
                        encode_png: true,
                    },
                )
                .unwrap();
            let failed = out
                .report
                .warnings
                .iter()
                .any(|w| matches!(w, adforge_renderer::Warning::ImageFailed { .. }));
            assert!(!failed, "every image is drawn: {:?}", out.report.warnings);
            out.png.unwrap()
        })
        .await
        .unwrap();
        assert_parity(
            &preview,
            &image::load_from_memory(&direct).unwrap().to_rgba8(),
        );

        let (status, headers, webp) =
            raw(&s, &org.key, json!({"tree": tree}), Some("image/webp")).await;
        assert_eq!(status, 200);
        assert_eq!(headers["content-type"], "image/webp");
        let webp = image::load_from_memory_with_format(&webp, image::ImageFormat::WebP)
            .unwrap()
            .to_rgba8();
        assert_eq!(webp, preview, "{name}: lossless, the PNG's pixels");
    }
}

#[tokio::test]
async fn boxes_are_where_layout_put_the_nodes() {
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org("Acme").await;
    let solid = json!([{"type": "SOLID", "color": {"r": 0.2, "g": 0.3, "b": 0.4, "a": 1}}]);
    let tree = json!({"root": "root", "nodes": {
        "root": {"type": "FRAME", "width": 1000, "height": 500, "fills": solid, "children": ["stack", "tilted", "hidden"]},
        "stack": {"type": "FRAME", "name": "Copy", "x": 100, "y": 50, "width": 400, "height": 300,
                  "layoutMode": "VERTICAL", "paddingTop": 20, "paddingLeft": 30, "itemSpacing": 10,
                  "children": ["headline", "bar"]},
        "headline": {"type": "TEXT", "name": "Headline", "characters": "Two words\nthree lines\nhere",
                     "fontSize": 40, "width": 300, "textAutoResize": "HEIGHT", "fills": solid},
        "bar": {"type": "RECTANGLE", "width": 200, "height": 40, "fills": solid},
        "tilted": {"type": "RECTANGLE", "x": 600, "y": 100, "width": 100, "height": 50, "rotation": 30, "fills": solid},
        "hidden": {"type": "RECTANGLE", "x": 0, "y": 0, "width": 10, "height": 10, "visible": false, "fills": solid},
    }});
    let r = preview_json(&s, &org, json!({"tree": tree, "width": 500}))
        .await
        .expect(200, None);
    let b = &r.body;
    assert_eq!(
        (b["width"].as_u64(), b["height"].as_u64()),
        (Some(500), Some(250))
    );
    assert_eq!(b["scale"], 0.5);
    let node = |id: &str| {
        b["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == id)
            .unwrap_or_else(|| panic!("{id} in {b}"))
            .clone()
    };
    let ids: Vec<&str> = b["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["root", "stack", "headline", "bar", "tilted", "hidden"],
        "painting order"
    );
    let stack = node("stack");
    assert_eq!(
        (stack["x"].as_f64(), stack["y"].as_f64()),
        (Some(50.0), Some(25.0))
    );
    assert_eq!(
        (stack["width"].as_f64(), stack["height"].as_f64()),
        (Some(200.0), Some(150.0))
    );
    let headline = node("headline");
    assert_eq!(headline["slot"], "headline");
    assert_eq!(headline["type"], "TEXT");
    assert_eq!(headline["lines"], 3);
    assert_eq!(headline["font_size"], 20.0);
    // Auto-layout placed it inside the padding: (100 + 30, 50 + 20) design px.
    assert_eq!(
        (headline["x"].as_f64(), headline["y"].as_f64()),
        (Some(65.0), Some(35.0))
    );
    let bar = node("bar");
    let below = 35.0 + headline["height"].as_f64().unwrap() + 5.0;
    assert!(
        (bar["y"].as_f64().unwrap() - below).abs() < 0.02,
        "{bar} below {headline}"
    );
    assert_eq!(bar["lines"], Value::Null);
    let tilted = node("tilted");
    assert_eq!(
        (
            tilted["x"].as_f64(),
            tilted["y"].as_f64(),
            tilted["rotation"].as_f64()
        ),
        (Some(300.0), Some(50.0), Some(30.0))
    );
    assert_eq!(node("hidden")["visible"], false);
    assert_eq!(node("root")["visible"], true);
}

#[tokio::test]
async fn every_bound_answers_a_clear_4xx() {
    let s = TestServer::start_with(|a| {
        a.workers = 0;
        a.previews.preview_max_nodes = 8;
        a.previews.preview_max_image_bytes = 2_000;
        a.previews.preview_rate_limit = 12;
    })
    .await;
    let org = s.org("Acme").await;
    let frame = |children: Vec<Value>| {
        let mut nodes = serde_json::Map::new();
        let ids: Vec<String> = (0..children.len()).map(|i| format!("n{i}")).collect();
        nodes.insert(
            "root".into(),
            json!({"type": "FRAME", "width": 100, "height": 100, "children": ids}),
        );
        for (i, c) in children.into_iter().enumerate() {
            nodes.insert(format!("n{i}"), c);
        }
        json!({"root": "root", "nodes": nodes})
    };
    let rect = json!({"type": "RECTANGLE", "width": 10, "height": 10});

    let many = frame(vec![rect.clone(); 8]);
    let r = s
        .post(&org, "/v1/previews", json!({"tree": many}))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(r.body["error"]["details"][0]["field"], "tree");
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 8"),
        "{}",
        r.body
    );

    let r = s
        .post(
            &org,
            "/v1/previews",
            json!({"tree": frame(vec![]), "width": 5000}),
        )
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(r.body["error"]["details"][0]["field"], "width");
    let tall = json!({"root": "r", "nodes": {"r": {"type": "FRAME", "width": 100, "height": 300}}});
    let r = s
        .post(&org, "/v1/previews", json!({"tree": tall, "width": 1080}))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("width of at most 720"),
        "{}",
        r.body
    );

    // The PATCH checks, naming the body's field `tree`.
    let bad = frame(vec![json!({"type": "RECTANGLE", "width": 10, "height": 10,
        "fills": [{"type": "SOLID", "color": {"r": 2, "g": 0, "b": 0}}]})]);
    let r = s
        .post(&org, "/v1/previews", json!({"tree": bad}))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(r.body["error"]["details"][0]["field"], "tree");
    assert!(
        r.body["error"]["message"].as_str().unwrap().contains("n0"),
        "{}",
        r.body
    );
    let inline = frame(vec![json!({"type": "RECTANGLE", "width": 10, "height": 10,
        "fills": [{"type": "IMAGE", "imageFillUrl": "data:image/png;base64,AAAA"}]})]);
    s.post(&org, "/v1/previews", json!({"tree": inline}))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    let missing = frame(vec![json!({"type": "RECTANGLE", "width": 10, "height": 10,
        "fills": [{"type": "IMAGE", "imageFillUrl": s.url("/files/images/img_missing.png")}]})]);
    s.post(&org, "/v1/previews", json!({"tree": missing}))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    s.post(
        &org,
        "/v1/previews",
        json!({"tree": frame(vec![]), "size": 3}),
    )
    .await
    .expect(400, Some("VALIDATION_ERROR"));

    // An image over the byte limit (2,000 bytes here).
    let noisy: Vec<u8> = {
        let mut img = image::RgbImage::new(64, 64);
        for (i, p) in img.pixels_mut().enumerate() {
            *p = image::Rgb([
                (i * 37 % 251) as u8,
                (i * 91 % 241) as u8,
                (i * 13 % 239) as u8,
            ]);
        }
        let mut out = Vec::new();
        img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
            .unwrap();
        out
    };
    assert!(noisy.len() > 2_000);
    let url = s.upload(&org, noisy, &[]).await.expect(201, None).body["data"]["src"]
        .as_str()
        .unwrap()
        .to_string();
    let big = frame(vec![json!({"type": "RECTANGLE", "width": 10, "height": 10,
        "fills": [{"type": "IMAGE", "imageFillUrl": url}]})]);
    let r = s
        .post(&org, "/v1/previews", json!({"tree": big}))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 2000 bytes per image"),
        "{}",
        r.body
    );
    let small = s
        .upload(&org, png(8, 8, [1, 2, 3, 255]), &[])
        .await
        .expect(201, None)
        .body["data"]["src"]
        .as_str()
        .unwrap()
        .to_string();
    let ok = frame(vec![json!({"type": "RECTANGLE", "width": 10, "height": 10,
        "fills": [{"type": "IMAGE", "imageFillUrl": small}]})]);
    let (status, _, _) = raw(&s, &org.key, json!({"tree": ok}), None).await;
    assert_eq!(status, 200);

    // Scope, then the preview bucket: 12 a minute here, counted apart from the key's
    // general budget.
    let reader = s.key(&org.id, "brands:read", None).await;
    let (status, _, body) = raw(&s, &reader, json!({"tree": frame(vec![])}), None).await;
    assert_eq!(status, 403, "{}", String::from_utf8_lossy(&body));
    let before = s.get(&org, "/v1/brands").await.expect(200, None);
    let general: u32 = before
        .header("ratelimit-remaining")
        .unwrap()
        .parse()
        .unwrap();
    let mut last = None;
    for _ in 0..12 {
        let (status, headers, _) = raw(
            &s,
            &org.key,
            json!({"tree": frame(vec![])}),
            Some("application/json"),
        )
        .await;
        last = Some((status, headers));
        if status == 429 {
            break;
        }
    }
    let (status, headers) = last.unwrap();
    assert_eq!(status, 429);
    assert!(headers.contains_key("retry-after"));
    assert_eq!(headers["ratelimit-limit"], "12");
    let after = s.get(&org, "/v1/brands").await.expect(200, None);
    let general_after: u32 = after
        .header("ratelimit-remaining")
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        general_after,
        general - 1,
        "previews did not use the general budget"
    );
}

#[tokio::test]
async fn a_render_over_its_budget_is_refused() {
    let s = TestServer::start_with(|a| {
        a.workers = 0;
        a.previews.preview_render_ms = 1;
    })
    .await;
    let org = s.org("Acme").await;
    let tree = example(&s, &org, "heavy").await;
    let r = s
        .post(&org, "/v1/previews", json!({"tree": tree}))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    let msg = r.body["error"]["message"].as_str().unwrap();
    assert!(msg.contains("preview budget of 1 ms"), "{msg}");
    let unauth = s
        .call(
            Method::POST,
            "/v1/previews",
            None,
            Some(json!({"tree": tree})),
        )
        .await;
    unauth.expect(401, Some("UNAUTHORIZED"));
}

/// A tree of one 100×100 frame whose only child is filled with the image at `url`.
fn one_image(url: &str) -> Value {
    json!({"root": "root", "nodes": {
        "root": {"type": "FRAME", "width": 100, "height": 100, "children": ["photo"],
                 "fills": [{"type": "SOLID", "color": {"r": 0, "g": 0, "b": 0, "a": 1}}]},
        "photo": {"type": "RECTANGLE", "width": 100, "height": 100,
                  "fills": [{"type": "IMAGE", "imageFillUrl": url, "scaleMode": "FILL"}]},
    }})
}

/// An image fill whose host does not resolve (RFC 2606 keeps `.invalid` from ever
/// resolving; nothing is contacted) is an `image_failed` warning naming the node, the URL
/// and the reason, not a silent gap in the picture.
#[tokio::test]
async fn an_image_whose_host_does_not_resolve_is_a_warning() {
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org("Acme").await;
    let url = "https://no-such-host.invalid/x.png";
    let r = preview_json(&s, &org, json!({"tree": one_image(url), "width": 100}))
        .await
        .expect(200, None);
    let warnings = r.body["warnings"].as_array().unwrap();
    let failed: Vec<&Value> = warnings
        .iter()
        .filter(|w| w["kind"] == "image_failed")
        .collect();
    assert_eq!(failed.len(), 1, "{}", r.body);
    assert_eq!(failed[0]["node"], "photo", "{}", r.body);
    assert_eq!(failed[0]["url"], url, "{}", r.body);
    let reason = failed[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("does not resolve: `no-such-host.invalid`"),
        "{reason}"
    );
    // The picture is drawn without the fill: the frame's black ground shows.
    let (status, _, body) = raw(
        &s,
        &org.key,
        json!({"tree": one_image(url), "width": 100}),
        Some("image/png"),
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let img = image::load_from_memory(&body).unwrap().to_rgba8();
    assert_eq!(img.get_pixel(50, 50).0, [0, 0, 0, 255]);
}

#[tokio::test]
async fn fetched_images_are_cached_for_previews() {
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org("Acme").await;
    // Serves its PNG once, then refuses every connection: a second preview draws the
    // picture only if the first one's image was kept.
    let reference = RefServer::start(After::Refuse).await;
    let tree = one_image(&reference.url);
    let mut pictures = Vec::new();
    for _ in 0..2 {
        let (status, _, body) = raw(
            &s,
            &org.key,
            json!({"tree": tree, "width": 100}),
            Some("image/png"),
        )
        .await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let img = image::load_from_memory(&body).unwrap().to_rgba8();
        assert_eq!(img.get_pixel(50, 50).0, [240, 200, 30, 255], "the image");
        pictures.push(img);
    }
    assert_eq!(pictures[0], pictures[1]);

    // Previews ignore Idempotency-Key: a retry renders again, in the format it accepts.
    for (accept, kind) in [("image/png", "image/png"), ("image/webp", "image/webp")] {
        let res = s
            .request(Method::POST, "/v1/previews")
            .header("x-api-key", &org.key)
            .header("idempotency-key", "one-key")
            .header("accept", accept)
            .json(&json!({"tree": tree, "width": 100}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers()["content-type"], kind);
        assert!(!res.headers().contains_key("idempotent-replayed"));
    }
}

#[tokio::test]
async fn loading_images_over_their_budget_is_refused() {
    let s = TestServer::start_with(|a| {
        a.workers = 0;
        a.previews.preview_image_ms = 300;
    })
    .await;
    let org = s.org("Acme").await;
    // Answers its first request at once (taken here), every later one after 5 s.
    let reference = RefServer::start(After::Stall(Duration::from_secs(5))).await;
    reqwest::get(&reference.url)
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let r = s
        .post(
            &org,
            "/v1/previews",
            json!({"tree": one_image(&reference.url)}),
        )
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    let msg = r.body["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("preview budget of 300 ms to load the images"),
        "{msg}"
    );
    assert_eq!(r.body["error"]["details"][0]["field"], "tree");
}

#[tokio::test]
async fn a_preview_that_finds_no_free_render_slot_is_503() {
    let s = TestServer::start_with(|a| {
        a.workers = 0;
        a.previews.preview_slots = 1;
        a.previews.preview_queue_ms = 200;
        a.previews.preview_image_ms = 3_000;
    })
    .await;
    let org = s.org("Acme").await;
    // A host that accepts and never answers: the first preview holds the only render slot
    // while it waits for its image; it says when the fetch has begun.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/slow.png", listener.local_addr().unwrap());
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let host = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            open.push(stream);
            let _ = tx.send(()).await;
        }
    });
    let first = raw(&s, &org.key, json!({"tree": one_image(&url)}), None);
    let second = async {
        rx.recv().await.unwrap();
        let plain =
            json!({"root": "r", "nodes": {"r": {"type": "FRAME", "width": 10, "height": 10}}});
        raw(&s, &org.key, json!({"tree": plain}), None).await
    };
    let ((status1, _, body1), (status2, headers2, body2)) = tokio::join!(first, second);
    host.abort();
    let body2: Value = serde_json::from_slice(&body2).unwrap();
    assert_eq!(status2, 503, "{body2}");
    assert_eq!(body2["error"]["code"], "SERVICE_UNAVAILABLE");
    assert!(headers2.contains_key("retry-after"));
    assert!(
        body2["error"]["message"]
            .as_str()
            .unwrap()
            .contains("stayed busy for 200 ms"),
        "{body2}"
    );
    let body1: Value = serde_json::from_slice(&body1).unwrap();
    assert_eq!(status1, 400, "{body1}");
    assert!(
        body1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("3000 ms to load the images"),
        "{body1}"
    );
}

/// A preview past its drawing budget stops drawing, not only answering: with one render
/// slot, the next preview gets the slot at once. Before, the first render went on in the
/// background holding the slot for minutes, and the second waited out its queue (503).
#[tokio::test]
async fn a_preview_past_its_budget_stops_and_frees_its_slot() {
    let s = TestServer::start_with(|a| {
        a.workers = 0;
        a.previews.preview_slots = 1;
        // The heavy tree takes 10-20 s to draw; a budget of 1.5 s stops it, and the small
        // preview after it has room for a loaded machine.
        a.previews.preview_render_ms = 1_500;
        a.previews.preview_queue_ms = 5_000;
    })
    .await;
    let org = s.org("Acme").await;
    let heavy = crate::stress_trees::blur_heavy(60);
    let r = s
        .post(&org, "/v1/previews", json!({"tree": heavy, "width": 2160}))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("preview budget of 1500 ms"),
        "{}",
        r.body
    );
    // The one slot is free again: a small preview is drawn (waiting at most for the
    // stopped render to return, well inside the 5 s queue; without the stop it would wait
    // for the whole render and answer 503).
    let small = json!({"root": "r", "nodes": {"r": {"type": "FRAME", "width": 100, "height": 100,
        "fills": [crate::stress_trees::solid(0.1, 0.6, 0.3)]}}});
    s.post(&org, "/v1/previews", json!({"tree": small, "width": 200}))
        .await
        .expect(200, None);
}
