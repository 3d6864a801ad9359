//! Design templates over real HTTP: analysis of a reference (a URL of this server, or a
//! swipe file) by the in-process worker into a tree and preview, the analysis cache, edits
//! and versions, soft delete and restore, lists with filters, facets and paging, scopes,
//! isolation, DESIGN_TEMPLATE_NOT_READY, the webhook event, and an image ad made from a
//! template.

use std::sync::Arc;

use adforge_renderer::{FetchLimits, HttpFetcher, RenderOptions, Renderer, Tree};
use serde_json::{Map, Value, json};

use crate::support::{Org, Reply, TestServer, ids_of, png};

fn solid(rgb: [f64; 3]) -> Value {
    json!([{"type": "SOLID", "color": {"r": rgb[0], "g": rgb[1], "b": rgb[2], "a": 1}}])
}

/// A 1.91:1 reference ad drawn by our renderer: a textured photo on the left, a two-line
/// headline, a line of copy and a button on the right, on a plain light ground.
fn reference_png() -> Vec<u8> {
    let (w, h) = (1910.0, 1000.0);
    let mut nodes = Map::new();
    let mut children = Vec::new();
    let mut add =
        |id: &str, mut node: Value, parent: Option<&str>, nodes: &mut Map<String, Value>| {
            node["id"] = json!(id);
            nodes.insert(id.to_string(), node);
            match parent {
                None => children.push(json!(id)),
                Some(p) => nodes[p]["children"].as_array_mut().unwrap().push(json!(id)),
            }
        };
    add(
        "photo",
        json!({"type": "FRAME", "x": 60, "y": 60, "width": 820, "height": 880, "clipsContent": true,
               "children": [],
               "fills": [{"type": "GRADIENT_LINEAR",
                          "gradientHandlePositions": [{"x": 0, "y": 0}, {"x": 1, "y": 1}, {"x": 0, "y": 1}],
                          "gradientStops": [{"position": 0, "color": {"r": 0.18, "g": 0.37, "b": 0.3, "a": 1}},
                                            {"position": 1, "color": {"r": 0.79, "g": 0.65, "b": 0.42, "a": 1}}]}]}),
        None,
        &mut nodes,
    );
    let mut k: u32 = 2_654_435_761;
    let mut next = || {
        k ^= k << 13;
        k ^= k >> 17;
        k ^= k << 5;
        k
    };
    let colours = [
        [0.55, 0.29, 0.18],
        [0.85, 0.77, 0.63],
        [0.23, 0.43, 0.56],
        [0.42, 0.56, 0.23],
        [0.88, 0.69, 0.31],
    ];
    for i in 0..40 {
        let d = 820.0 * (0.08 + f64::from(next() % 100) / 400.0);
        let x = f64::from(next() % 1000) / 1000.0 * 820.0 - d / 2.0;
        let y = f64::from(next() % 1000) / 1000.0 * 880.0 - d / 2.0;
        let c = colours[(next() % 5) as usize];
        add(
            &format!("disc{i}"),
            json!({"type": "ELLIPSE", "x": x, "y": y, "width": d, "height": d, "fills": solid(c)}),
            Some("photo"),
            &mut nodes,
        );
    }
    let text =
        |x: f64, y: f64, tw: f64, th: f64, s: &str, size: f64, weight: u32, ink: [f64; 3]| {
            json!({"type": "TEXT", "x": x, "y": y, "width": tw, "height": th, "characters": s,
               "fontSize": size, "fontWeight": weight, "fontFamily": "Inter",
               "lineHeight": {"value": 115, "unit": "PERCENT"}, "textAlignHorizontal": "LEFT",
               "textAutoResize": "NONE", "fills": solid(ink)})
        };
    add(
        "headline",
        text(
            980.0,
            150.0,
            880.0,
            260.0,
            "Fresh coffee,\ndelivered weekly",
            96.0,
            700,
            [0.1, 0.1, 0.1],
        ),
        None,
        &mut nodes,
    );
    add(
        "copy",
        text(
            980.0,
            460.0,
            820.0,
            110.0,
            "Roasted on Monday, at your door by Friday.",
            40.0,
            400,
            [0.2, 0.2, 0.25],
        ),
        None,
        &mut nodes,
    );
    add(
        "button",
        json!({"type": "RECTANGLE", "x": 980, "y": 720, "width": 400, "height": 130, "cornerRadius": 65,
               "fills": solid([0.12, 0.23, 0.37])}),
        None,
        &mut nodes,
    );
    add(
        "label",
        json!({"type": "TEXT", "x": 980, "y": 720, "width": 400, "height": 130, "characters": "Shop now",
               "fontSize": 48, "fontWeight": 600, "fontFamily": "Inter", "textAlignHorizontal": "CENTER",
               "textAlignVertical": "CENTER", "textAutoResize": "NONE", "fills": solid([1.0, 1.0, 1.0])}),
        None,
        &mut nodes,
    );
    nodes.insert(
        "root".into(),
        json!({"id": "root", "type": "FRAME", "width": w, "height": h,
               "fills": solid([0.98, 0.97, 0.95]), "children": children}),
    );
    let tree = Tree::from_value(json!({"root": "root", "nodes": nodes})).unwrap();
    let renderer = Renderer::new(
        adforge_renderer::FontLibrary::bundled(),
        Arc::new(HttpFetcher::new(FetchLimits::default())),
    );
    renderer
        .render(
            &tree,
            &RenderOptions {
                width: Some(955),
                encode_png: true,
            },
        )
        .unwrap()
        .png
        .unwrap()
}

/// Uploads `bytes` as an image of this server and returns its URL.
async fn upload(s: &TestServer, org: &Org, bytes: Vec<u8>) -> String {
    let r = s.upload(org, bytes, &[]).await.expect(201, None);
    r.body["data"]["src"].as_str().unwrap().to_string()
}

async fn create(s: &TestServer, org: &Org, body: Value) -> Reply {
    s.post(org, "/v1/design-templates", body).await
}

/// Polls until the template leaves `processing` (the worker's analysis and preview run in
/// a debug build on a shared machine: allow minutes).
async fn settled(s: &TestServer, org: &Org, id: &str) -> Value {
    for _ in 0..1800 {
        let r = s
            .get(org, &format!("/v1/design-templates/{id}"))
            .await
            .expect(200, None);
        if r.body["data"]["status"] != "processing" {
            return r.body["data"].clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{id} still processing");
}

async fn ad_settled(s: &TestServer, org: &Org, id: &str) -> Value {
    for _ in 0..3000 {
        let r = s
            .get(org, &format!("/v1/image-ads/{id}"))
            .await
            .expect(200, None);
        if r.body["data"]["status"] != "processing" {
            return r.body["data"].clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{id} still processing");
}

fn png_size(bytes: &[u8]) -> (u32, u32) {
    let img = image::load_from_memory(bytes).unwrap();
    (img.width(), img.height())
}

async fn top_up(s: &TestServer, org: &Org, cents: i64) {
    adforge_api::store::query(
        "UPDATE wallets SET balance_cents = balance_cents + ? WHERE org_id = ?",
    )
    .bind(cents)
    .bind(&org.id)
    .execute(&s.db.write)
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analyse_edit_version_and_make_an_ad() {
    let s = TestServer::start().await;
    let org = s.org_unlimited("Templates").await;
    let bytes = reference_png();
    let url = upload(&s, &org, bytes.clone()).await;

    // Create: 202, Location, processing, nothing charged.
    let r = create(&s, &org, json!({"reference_image_url": url}))
        .await
        .expect(202, None);
    let id = r.id();
    assert!(id.starts_with("dt_"), "{id}");
    assert_eq!(
        r.header("location"),
        Some(format!("/v1/design-templates/{id}").as_str())
    );
    let d = &r.body["data"];
    assert_eq!(d["status"], "processing");
    assert_eq!(d["json_tree_version"], 1);
    assert!(d["current_json_tree"].is_null());
    assert_eq!(d["reference_image_url"], url.as_str());
    assert!(d["swipe_file_id"].is_null());

    // Completed: the tree at the reference's aspect (3840 px long edge), its slots, a
    // 1080 px preview.
    let t = settled(&s, &org, &id).await;
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(
        (t["width"].as_i64(), t["height"].as_i64()),
        (Some(3840), Some(2010))
    );
    assert_eq!(t["aspect_ratio"], "1.91:1");
    assert_eq!(t["json_tree_version"], 1);
    assert!(t["duration_ms"].as_i64().is_some(), "{t}");
    assert!(t["error"].is_null());
    // Classified by the worker's swipe-file models, exactly as the same bytes are as a
    // swipe file.
    let twin = crate::swipe::upload_swipe(&s, &org, bytes.clone())
        .await
        .expect(202, None)
        .id();
    let twin = crate::swipe::wait_ready(&s, &org, &twin).await;
    assert_eq!(t["industry"], twin["industry"], "{t}");
    assert_eq!(t["ad_format"], twin["ad_format"], "{t}");
    assert!(t["ad_format"].is_string(), "{t}");
    assert_eq!(t["analysis"]["cache_hit"], false, "{t}");
    let composition = t["analysis"]["composition"].as_str().unwrap().to_string();
    // The reference's own layout was read: the photo on the left, the headline and the
    // button on the right, the button below the headline.
    assert_eq!(composition, "reference_blueprint", "{t}");
    let tree = t["current_json_tree"].clone();
    assert_eq!(tree["nodes"]["root"]["name"], composition.as_str());
    assert_eq!(tree["nodes"]["root"]["width"], 3840);
    for slot in ["headline", "product_image"] {
        assert!(tree["nodes"][slot].is_object(), "no {slot} slot in {tree}");
    }
    assert_eq!(tree["nodes"]["headline"]["$text"], "headline");
    let centre = |slot: &str| {
        let n = &tree["nodes"][slot];
        let f = |k: &str| n[k].as_f64().unwrap_or_else(|| panic!("{slot}.{k} in {n}"));
        (
            (f("x") + f("width") / 2.0) / 3840.0,
            (f("y") + f("height") / 2.0) / 2010.0,
        )
    };
    let (product, headline, cta) = (centre("product_image"), centre("headline"), centre("cta"));
    assert!(product.0 < 0.5, "product at {product:?}");
    assert!(headline.0 > 0.5 && cta.0 > 0.5, "{headline:?} {cta:?}");
    assert!(cta.1 > headline.1 + 0.2, "{headline:?} {cta:?}");
    let preview_v1 = t["preview_url"].as_str().unwrap().to_string();
    let (status, _, preview) = s.fetch(&preview_v1).await;
    assert_eq!(status.as_u16(), 200);
    assert_eq!(png_size(&preview), (1080, 565));

    // The same bytes uploaded again (another URL): the worker's cached analysis is used.
    let again_url = upload(&s, &org, bytes.clone()).await;
    assert_ne!(again_url, url);
    let again = create(&s, &org, json!({"reference_image_url": again_url}))
        .await
        .expect(202, None)
        .id();
    let a = settled(&s, &org, &again).await;
    assert_eq!(a["status"], "completed", "{a}");
    assert_eq!(a["analysis"]["cache_hit"], true, "{a}");
    assert_eq!(a["current_json_tree"], tree);

    // The webhook event of each completion was recorded, with the template as GET shows it.
    let events = s
        .get(&org, "/v1/events?type=design_template.completed")
        .await
        .expect(200, None);
    let objects: Vec<&Value> = events.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["data"]["object"])
        .collect();
    assert_eq!(objects.len(), 2, "{}", events.body);
    let ours = objects.iter().find(|o| o["id"] == id.as_str()).unwrap();
    assert_eq!(ours["status"], "completed");
    assert_eq!(ours["preview_url"], preview_v1.as_str());
    // An endpoint subscribed to template events gets a delivery of the next one (the
    // address refuses connections; the delivery row is what is checked).
    s.post(
        &org,
        "/v1/webhook-endpoints",
        json!({"url": "http://127.0.0.1:9/hook", "events": ["design_template.completed", "design_template.failed"]}),
    )
    .await
    .expect(201, None);

    // Invalid edits change nothing.
    let path = format!("/v1/design-templates/{id}");
    let mut base64_tree = tree.clone();
    base64_tree["nodes"]["product_image"]["fills"] = json!([{"type": "IMAGE",
        "imageFillUrl": "data:image/png;base64,iVBORw0KGgo="}]);
    // A root the renderer could not draw at the preview's size (1×100000 was accepted,
    // then its preview failed with "invalid output size").
    let mut thin_tree = tree.clone();
    thin_tree["nodes"]["root"]["width"] = json!(1);
    thin_tree["nodes"]["root"]["height"] = json!(100_000);
    for (body, field) in [
        (json!({"current_json_tree": thin_tree}), "current_json_tree"),
        (
            json!({"current_json_tree": tree, "change_summary": "x".repeat(501)}),
            "change_summary",
        ),
        (
            json!({"current_json_tree": base64_tree}),
            "current_json_tree",
        ),
        (json!({"change_summary": "no tree"}), "current_json_tree"),
        (
            json!({"current_json_tree": {"nodes": 5}}),
            "current_json_tree",
        ),
        (json!({"current_json_tree": tree, "unknown": 1}), "unknown"),
    ] {
        let r = s
            .patch(&org, &path, body)
            .await
            .expect(400, Some("VALIDATION_ERROR"));
        assert!(
            r.body["error"]["details"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["field"] == field),
            "{field}: {}",
            r.body
        );
    }
    let unchanged = s.get(&org, &path).await.expect(200, None);
    assert_eq!(unchanged.body["data"]["json_tree_version"], 1);
    assert_eq!(unchanged.body["data"]["current_json_tree"], tree);
    let versions = s
        .get(&org, &format!("{path}/versions"))
        .await
        .expect(200, None);
    assert_eq!(versions.body["data"].as_array().unwrap().len(), 1);

    // A valid edit: the headline moves, a field we do not know is kept; exactly 500
    // characters of summary are accepted.
    let mut edited = tree.clone();
    edited["nodes"]["headline"]["y"] = json!(100);
    edited["nodes"]["headline"]["x_editor_note"] = json!({"keep": ["me", 1]});
    let summary = format!("Moved the headline up{}", ".".repeat(479));
    assert_eq!(summary.chars().count(), 500);
    let r = s
        .patch(
            &org,
            &path,
            json!({"current_json_tree": edited, "change_summary": summary}),
        )
        .await
        .expect(200, None);
    assert_eq!(r.body["data"]["json_tree_version"], 2);
    assert_eq!(r.body["data"]["status"], "processing");
    let t2 = settled(&s, &org, &id).await;
    assert_eq!(t2["status"], "completed", "{t2}");
    assert_eq!(t2["json_tree_version"], 2);
    assert_eq!(t2["current_json_tree"], edited);
    let deliveries: i64 = adforge_api::store::query_scalar(
        "SELECT COUNT(*) FROM webhook_deliveries WHERE event_type = 'design_template.completed' AND object_id = ?",
    )
    .bind(&id)
    .fetch_one(&s.db.read)
    .await
    .unwrap();
    assert_eq!(deliveries, 1);
    let preview_v2 = t2["preview_url"].as_str().unwrap().to_string();
    assert_ne!(preview_v2, preview_v1);
    let (status, _, preview) = s.fetch(&preview_v2).await;
    assert_eq!(status.as_u16(), 200);
    assert_eq!(png_size(&preview), (1080, 565));

    // Versions: the snapshot of version 1 as it was, then the current version 2 with the
    // summary of the edit that made it.
    let versions = s
        .get(&org, &format!("{path}/versions"))
        .await
        .expect(200, None);
    let v = versions.body["data"].as_array().unwrap();
    assert_eq!(v.len(), 2, "{}", versions.body);
    assert_eq!(v[0]["json_tree_version"], 1);
    assert_eq!(v[0]["json_tree"], tree);
    assert_eq!(v[0]["preview_url"], preview_v1.as_str());
    assert!(v[0]["change_summary"].is_null());
    assert_eq!(v[0]["current"], false);
    assert_eq!(v[1]["json_tree_version"], 2);
    assert_eq!(v[1]["json_tree"], edited);
    assert_eq!(v[1]["change_summary"], summary.as_str());
    assert_eq!(v[1]["current"], true);
    let one = s
        .get(&org, &format!("{path}/versions/1"))
        .await
        .expect(200, None);
    assert_eq!(one.body["data"], v[0]);
    s.get(&org, &format!("{path}/versions/3"))
        .await
        .expect(404, Some("DESIGN_TEMPLATE_VERSION_NOT_FOUND"));
    s.get(&org, &format!("{path}/versions/first"))
        .await
        .expect(400, Some("VALIDATION_ERROR"));

    // An ad from the template: the template's shape, its origin recorded, charged once.
    let c = s.catalog(&org).await;
    let shot = s
        .upload(
            &org,
            png(64, 64, [200, 40, 40, 255]),
            &[("image_type", "product")],
        )
        .await
        .expect(201, None);
    s.patch(
        &org,
        &format!("/v1/product-variants/{}", c.variant),
        json!({"image_ids": [shot.id()]}),
    )
    .await
    .expect(200, None);
    let body = json!({"brand_id": c.brand, "product_id": c.product, "audience_id": c.audience, "editable": true});
    s.post(&org, &format!("{path}/image-ads"), body.clone())
        .await
        .expect(402, Some("INSUFFICIENT_BALANCE"));
    top_up(&s, &org, 1_000).await;
    let mut wrong = body.clone();
    wrong["audience_id"] = json!("aud_nope");
    s.post(&org, &format!("{path}/image-ads"), wrong)
        .await
        .expect(404, Some("AUDIENCE_NOT_FOUND"));
    let mut extra = body.clone();
    extra["reference_ad_url"] = json!(url);
    s.post(&org, &format!("{path}/image-ads"), extra)
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    let r = s
        .post(&org, &format!("{path}/image-ads"), body)
        .await
        .expect(202, None);
    let ad_id = r.id();
    assert_eq!(
        r.header("location"),
        Some(format!("/v1/image-ads/{ad_id}").as_str())
    );
    assert!(r.body["data"]["design_template_id"].is_null());
    assert_eq!(r.body["data"]["source_design_template"]["id"], id.as_str());
    assert_eq!(
        r.body["data"]["source_design_template"]["json_tree_version"],
        2
    );
    let ad = ad_settled(&s, &org, &ad_id).await;
    assert_eq!(ad["status"], "completed", "{ad}");
    assert!(ad["design_template_id"].is_null());
    assert_eq!(ad["reference_ad_url"], url.as_str());
    let (w, h) = (
        ad["width"].as_f64().unwrap(),
        ad["height"].as_f64().unwrap(),
    );
    assert!((w / h / (3840.0 / 2010.0) - 1.0).abs() < 0.01, "{w}×{h}");
    let (status, _, image) = s.fetch(ad["image_url"].as_str().unwrap()).await;
    assert_eq!(status.as_u16(), 200);
    assert_eq!(png_size(&image), (w as u32, h as u32));
    let (balance, held): (i64, i64) = adforge_api::store::query_as(
        "SELECT balance_cents, held_cents FROM wallets WHERE org_id = ?",
    )
    .bind(&org.id)
    .fetch_one(&s.db.read)
    .await
    .unwrap();
    assert_eq!((balance, held), (600, 0));
    // The ad's tree is the edited template's, filled: its nodes keep the template's boxes.
    let nodes = ad["current_json_tree"]["nodes"].as_object().unwrap();
    let named = |name: &str| {
        nodes
            .values()
            .find(|n| n["name"] == name)
            .unwrap_or_else(|| panic!("no node {name}"))
    };
    let root = ad["current_json_tree"]["root"].as_str().unwrap();
    assert_eq!(nodes[root]["name"], "design_template");
    assert_eq!(named("Headline")["y"], 100);
    assert_eq!(named("Headline")["x"], edited["nodes"]["headline"]["x"]);
    assert_eq!(named("Cta")["x"], edited["nodes"]["cta"]["x"]);
    let fill = &named("Product Image")["fills"][0];
    assert_eq!(fill["type"], "IMAGE");
    assert_eq!(fill["imageFillUrl"], shot.body["data"]["src"]);
    // Ordinary ads name no template.
    let listed = s
        .get(&org, &format!("/v1/image-ads?ids={ad_id}"))
        .await
        .expect(200, None);
    assert_eq!(
        listed.body["data"][0]["source_design_template"]["id"],
        id.as_str()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swipe_files_failures_and_create_rules() {
    let s = TestServer::start().await;
    let org = s.org_unlimited("Sources").await;

    // From a swipe file: its stored image is analysed and its classification copied.
    let sample = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../assets/samples/coffee.png"
    ))
    .unwrap();
    let sf = crate::swipe::upload_swipe(&s, &org, sample)
        .await
        .expect(202, None)
        .id();
    let design = crate::swipe::wait_ready(&s, &org, &sf).await;
    assert_eq!(design["status"], "ready", "{design}");
    let r = create(&s, &org, json!({"swipe_file_id": sf}))
        .await
        .expect(202, None);
    let t = settled(&s, &org, &r.id()).await;
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(t["swipe_file_id"], sf.as_str());
    assert_eq!(t["reference_image_url"], design["image_url"]);
    assert_eq!(t["industry"], design["industry"]);
    assert_eq!(t["ad_format"], design["ad_format"]);
    assert_eq!(t["aspect_ratio"], design["aspect_ratio"], "{t}");
    assert!(t["current_json_tree"]["nodes"]["headline"].is_object());

    // A reference that is not an image: failed, with the reason; no workflow runs on it.
    let bad = create(
        &s,
        &org,
        json!({"reference_image_url": format!("{}/openapi.json", s.base)}),
    )
    .await
    .expect(202, None)
    .id();
    let f = settled(&s, &org, &bad).await;
    assert_eq!(f["status"], "failed", "{f}");
    assert!(
        f["error"].as_str().unwrap().contains("cannot be used"),
        "{f}"
    );
    assert!(f["current_json_tree"].is_null() && f["preview_url"].is_null());
    let r = s
        .patch(
            &org,
            &format!("/v1/design-templates/{bad}"),
            json!({"current_json_tree": t["current_json_tree"]}),
        )
        .await
        .expect(422, Some("DESIGN_TEMPLATE_NOT_READY"));
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("failed")
    );
    s.post(
        &org,
        &format!("/v1/design-templates/{bad}/image-ads"),
        json!({"brand_id": "brand_x", "product_id": "prod_x", "audience_id": "aud_x"}),
    )
    .await
    .expect(422, Some("DESIGN_TEMPLATE_NOT_READY"));
    let failed_events = s
        .get(&org, "/v1/events?type=design_template.failed")
        .await
        .expect(200, None);
    assert_eq!(
        failed_events.body["data"][0]["data"]["object"]["id"],
        bad.as_str()
    );

    // Create rules, each checked before anything is written.
    for (body, status, code) in [
        (json!({}), 400, "VALIDATION_ERROR"),
        (
            json!({"reference_image_url": design["image_url"], "swipe_file_id": sf}),
            400,
            "VALIDATION_ERROR",
        ),
        (
            json!({"reference_image_url": "ftp://example.com/a.png"}),
            400,
            "VALIDATION_ERROR",
        ),
        (
            json!({"reference_image_url": format!("{}/files/images/none/original.png", s.base)}),
            400,
            "VALIDATION_ERROR",
        ),
        (
            json!({"reference_image_url": format!("https://example.com/{}", "a".repeat(2100))}),
            400,
            "VALIDATION_ERROR",
        ),
        (
            json!({"swipe_file_id": "sf_nope"}),
            404,
            "SWIPE_FILE_NOT_FOUND",
        ),
        (json!({"reference_image_url": 5}), 400, "VALIDATION_ERROR"),
    ] {
        create(&s, &org, body).await.expect(status, Some(code));
    }
    let all = s
        .get(&org, "/v1/design-templates?limit=100")
        .await
        .expect(200, None);
    assert_eq!(all.body["total_count"], 2);

    // A server that refuses private addresses refuses them for references too.
    let guarded = TestServer::start_with(|a| {
        a.allow_private_urls = false;
        a.workers = 0;
    })
    .await;
    let g = guarded.org("Guarded").await;
    for private in [
        "http://127.0.0.1:9/a.png",
        "http://10.0.0.1/a.png",
        "http://2130706433/a.png",
    ] {
        let r = create(&guarded, &g, json!({"reference_image_url": private}))
            .await
            .expect(400, Some("VALIDATION_ERROR"));
        assert_eq!(
            r.body["error"]["details"][0]["field"],
            "reference_image_url"
        );
    }
}

/// With no worker running, templates stay `processing`: what needs a ready template is
/// refused, and lists, facets, paging, deletion, scopes and isolation are checked on rows
/// made through the API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processing_lists_facets_deletion_scopes_and_isolation() {
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org_unlimited("Lists").await;
    let url = upload(&s, &org, png(300, 300, [10, 120, 200, 255])).await;

    let mut ids = Vec::new();
    for _ in 0..6 {
        ids.push(
            create(&s, &org, json!({"reference_image_url": url}))
                .await
                .expect(202, None)
                .id(),
        );
    }
    let first = ids[0].clone();
    let path = format!("/v1/design-templates/{first}");

    // A retry with the same Idempotency-Key replays the 202, Location included, and
    // creates nothing.
    let keyed = || {
        s.request(reqwest::Method::POST, "/v1/design-templates")
            .header("x-api-key", &org.key)
            .header("idempotency-key", "dt-create-1")
            .json(&json!({"reference_image_url": url}))
    };
    let once = crate::support::send(keyed()).await.expect(202, None);
    let again = crate::support::send(keyed()).await.expect(202, None);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.id(), once.id());
    assert_eq!(again.header("location"), once.header("location"));
    assert_eq!(
        once.header("location"),
        Some(format!("/v1/design-templates/{}", once.id()).as_str())
    );
    ids.push(once.id());

    // Processing: edits and ads are refused with DESIGN_TEMPLATE_NOT_READY.
    let r = s
        .patch(
            &org,
            &path,
            json!({"current_json_tree": {"root": "root", "nodes": {"root": {"id": "root", "type": "FRAME", "width": 100, "height": 100}}}}),
        )
        .await
        .expect(422, Some("DESIGN_TEMPLATE_NOT_READY"));
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("processing")
    );
    s.post(
        &org,
        &format!("{path}/image-ads"),
        json!({"brand_id": "brand_x", "product_id": "prod_x", "audience_id": "aud_x"}),
    )
    .await
    .expect(422, Some("DESIGN_TEMPLATE_NOT_READY"));
    let versions = s
        .get(&org, &format!("{path}/versions"))
        .await
        .expect(200, None);
    assert_eq!(versions.body["data"], json!([]));
    s.get(&org, "/v1/design-templates/dt_nope")
        .await
        .expect(404, Some("DESIGN_TEMPLATE_NOT_FOUND"));
    for p in [
        "/v1/design-templates/dt_nope/versions",
        "/v1/design-templates/dt_nope/restore",
    ] {
        let r = if p.ends_with("restore") {
            s.post(&org, p, json!({})).await
        } else {
            s.get(&org, p).await
        };
        r.expect(404, Some("DESIGN_TEMPLATE_NOT_FOUND"));
    }
    s.delete(&org, "/v1/design-templates/dt_nope")
        .await
        .expect(404, Some("DESIGN_TEMPLATE_NOT_FOUND"));

    // Spread the classification over the rows. Templates made from URLs are not classified
    // and swipe-file ingest needs a worker, so the values a swipe file would have given are
    // written into the real database here.
    let spread = [
        ("food", "product_shot", "processing"),
        ("food", "offer_sale", "completed"),
        ("food", "product_shot", "completed"),
        ("apparel", "product_shot", "failed"),
        ("apparel", "testimonial", "completed"),
        ("home", "product_shot", "processing"),
    ];
    for (id, (industry, format, status)) in ids.iter().zip(spread) {
        adforge_api::store::query(
            "UPDATE design_templates SET industry = ?, ad_format = ?, status = ? WHERE id = ?",
        )
        .bind(industry)
        .bind(format)
        .bind(status)
        .bind(id)
        .execute(&s.db.write)
        .await
        .unwrap();
    }
    // ids[6] (the idempotent create) stays processing and unclassified.
    let rows: Vec<(Option<&str>, Option<&str>, &str)> = spread
        .iter()
        .map(|(i, f, st)| (Some(*i), Some(*f), *st))
        .chain([(None, None, "processing")])
        .collect();

    let expect_facet = |pick: &dyn Fn(&(Option<&str>, Option<&str>, &str)) -> Option<String>,
                        keep: &dyn Fn(&(Option<&str>, Option<&str>, &str)) -> bool|
     -> Vec<(String, i64)> {
        let mut counts: std::collections::BTreeMap<String, i64> = Default::default();
        for r in rows.iter().filter(|r| keep(r)) {
            if let Some(v) = pick(r) {
                *counts.entry(v).or_default() += 1;
            }
        }
        let mut v: Vec<(String, i64)> = counts.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    };
    let facet_of = |reply: &Reply, dim: &str| -> Vec<(String, i64)> {
        reply.body["facets"][dim]
            .as_array()
            .unwrap_or_else(|| panic!("no facet {dim}: {}", reply.body))
            .iter()
            .map(|f| {
                (
                    f["value"].as_str().unwrap().to_string(),
                    f["count"].as_i64().unwrap(),
                )
            })
            .collect()
    };

    // Filter by industry=food and status=completed,processing; each facet leaves its own
    // filter out.
    let r = s
        .get(
            &org,
            "/v1/design-templates?industry=food&status=completed,processing&facets=industry,ad_format,status",
        )
        .await
        .expect(200, None);
    let in_status =
        |r: &(Option<&str>, Option<&str>, &str)| ["completed", "processing"].contains(&r.2);
    let is_food = |r: &(Option<&str>, Option<&str>, &str)| r.0 == Some("food");
    assert_eq!(
        r.body["total_count"],
        rows.iter().filter(|r| in_status(r) && is_food(r)).count()
    );
    assert_eq!(
        facet_of(&r, "industry"),
        expect_facet(&|r| r.0.map(str::to_string), &in_status)
    );
    assert_eq!(
        facet_of(&r, "status"),
        expect_facet(&|r| Some(r.2.to_string()), &is_food)
    );
    assert_eq!(
        facet_of(&r, "ad_format"),
        expect_facet(&|r| r.1.map(str::to_string), &|r| in_status(r)
            && is_food(r))
    );
    // A dimension with nothing to count is an empty array; an unknown one is refused.
    let r = s
        .get(&org, "/v1/design-templates?industry=toys&facets=ad_format")
        .await
        .expect(200, None);
    assert_eq!(r.body["facets"]["ad_format"], json!([]));
    assert_eq!(r.body["total_count"], 0);
    for bad in [
        "facets=aspect_ratio",
        "status=ready",
        "deleted=maybe",
        "colour=red",
        "limit=0",
        "starting_after=dt_nope",
    ] {
        s.get(&org, &format!("/v1/design-templates?{bad}"))
            .await
            .expect(400, Some("VALIDATION_ERROR"));
    }

    // Paging: newest first, every template once, has_more until the end.
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let q = match &after {
            Some(a) => format!("/v1/design-templates?limit=3&starting_after={a}"),
            None => "/v1/design-templates?limit=3".to_string(),
        };
        let page = s.get(&org, &q).await.expect(200, None);
        assert_eq!(page.body["total_count"], 7);
        let got = ids_of(&page);
        seen.extend(got.clone());
        if page.body["has_more"] == false {
            break;
        }
        after = got.last().cloned();
    }
    let mut newest_first = ids.clone();
    newest_first.reverse();
    assert_eq!(seen, newest_first);
    let picked = s
        .get(
            &org,
            &format!("/v1/design-templates?ids={},{}&limit=1", ids[1], ids[4]),
        )
        .await
        .expect(200, None);
    assert_eq!(ids_of(&picked), vec![ids[4].clone(), ids[1].clone()]);

    // Soft delete: out of the default list, in deleted=true, still readable, not editable;
    // deleting again answers the same; restore brings it back.
    let del = s.delete(&org, &path).await.expect(200, None);
    assert_eq!(del.body["deleted"], true);
    assert_eq!(del.body["id"], first.as_str());
    s.delete(&org, &path).await.expect(200, None);
    let live = s
        .get(&org, "/v1/design-templates?limit=100")
        .await
        .expect(200, None);
    assert_eq!(live.body["total_count"], 6);
    assert!(!ids_of(&live).contains(&first));
    let gone = s
        .get(&org, "/v1/design-templates?deleted=true&facets=status")
        .await
        .expect(200, None);
    assert_eq!(ids_of(&gone), vec![first.clone()]);
    assert_eq!(
        gone.body["facets"]["status"],
        json!([{"value": "processing", "count": 1}])
    );
    let read = s.get(&org, &path).await.expect(200, None);
    assert_eq!(read.body["data"]["deleted"], true);
    assert!(read.body["data"]["deleted_at"].is_string());
    s.patch(
        &org,
        &path,
        json!({"current_json_tree": {"root": "root", "nodes": {}}}),
    )
    .await
    .expect(404, Some("DESIGN_TEMPLATE_NOT_FOUND"));
    let restored = s
        .post(&org, &format!("{path}/restore"), json!({}))
        .await
        .expect(200, None);
    assert_eq!(restored.body["data"]["deleted"], false);
    assert!(restored.body["data"]["deleted_at"].is_null());
    let live = s
        .get(&org, "/v1/design-templates?limit=100")
        .await
        .expect(200, None);
    assert_eq!(live.body["total_count"], 7);
    let gone = s
        .get(&org, "/v1/design-templates?deleted=true")
        .await
        .expect(200, None);
    assert_eq!(gone.body["total_count"], 0);

    // Scopes.
    let read_only = s.key(&org.id, "design_templates:read", None).await;
    let write_only = s.key(&org.id, "design_templates:write", None).await;
    let ads_only = s.key(&org.id, "image_ads:write", None).await;
    let call = |key: &str, method: reqwest::Method, p: String, body: Option<Value>| {
        let key = key.to_string();
        let s = &s;
        async move { s.call(method, &p, Some(&key), body).await }
    };
    use reqwest::Method;
    // Bodies are valid, so the only thing wrong is the scope.
    let ad_body = json!({"brand_id": "b", "product_id": "p", "audience_id": "a"});
    call(&read_only, Method::GET, path.clone(), None)
        .await
        .expect(200, None);
    call(&read_only, Method::GET, format!("{path}/versions"), None)
        .await
        .expect(200, None);
    for (method, p, body) in [
        (
            Method::POST,
            "/v1/design-templates".to_string(),
            Some(json!({"reference_image_url": url})),
        ),
        (
            Method::PATCH,
            path.clone(),
            Some(json!({"current_json_tree": {"nodes": {}}})),
        ),
        (Method::DELETE, path.clone(), None),
        (Method::POST, format!("{path}/restore"), Some(json!({}))),
        (
            Method::POST,
            format!("{path}/image-ads"),
            Some(ad_body.clone()),
        ),
    ] {
        call(&read_only, method, p, body)
            .await
            .expect(403, Some("FORBIDDEN"));
    }
    for p in [
        path.clone(),
        "/v1/design-templates".to_string(),
        format!("{path}/versions"),
    ] {
        call(&write_only, Method::GET, p, None)
            .await
            .expect(403, Some("FORBIDDEN"));
    }
    // An ad from a template needs both image_ads:write and design_templates:read; a
    // template from a swipe file also needs swipe_files:read.
    call(
        &ads_only,
        Method::POST,
        format!("{path}/image-ads"),
        Some(ad_body.clone()),
    )
    .await
    .expect(403, Some("FORBIDDEN"));
    call(
        &write_only,
        Method::POST,
        format!("{path}/image-ads"),
        Some(ad_body.clone()),
    )
    .await
    .expect(403, Some("FORBIDDEN"));
    call(
        &write_only,
        Method::POST,
        "/v1/design-templates".to_string(),
        Some(json!({"swipe_file_id": "sf_x"})),
    )
    .await
    .expect(403, Some("FORBIDDEN"));
    call(
        &write_only,
        Method::POST,
        "/v1/design-templates".to_string(),
        Some(json!({"reference_image_url": url})),
    )
    .await
    .expect(202, None);

    // Isolation: another organisation sees none of it and changes nothing.
    let other = s.org("Other").await;
    for p in [
        path.clone(),
        format!("{path}/versions"),
        format!("{path}/versions/1"),
    ] {
        s.get(&other, &p)
            .await
            .expect(404, Some("DESIGN_TEMPLATE_NOT_FOUND"));
    }
    s.delete(&other, &path)
        .await
        .expect(404, Some("DESIGN_TEMPLATE_NOT_FOUND"));
    s.post(&other, &format!("{path}/restore"), json!({}))
        .await
        .expect(404, Some("DESIGN_TEMPLATE_NOT_FOUND"));
    s.patch(&other, &path, json!({"current_json_tree": {"nodes": {}}}))
        .await
        .expect(404, Some("DESIGN_TEMPLATE_NOT_FOUND"));
    s.post(
        &other,
        &format!("{path}/image-ads"),
        json!({"brand_id": "b", "product_id": "p", "audience_id": "a"}),
    )
    .await
    .expect(404, Some("DESIGN_TEMPLATE_NOT_FOUND"));
    let theirs = s
        .get(&other, "/v1/design-templates")
        .await
        .expect(200, None);
    assert_eq!(theirs.body["total_count"], 0);
    let by_id = s
        .get(&other, &format!("/v1/design-templates?ids={first}"))
        .await
        .expect(200, None);
    assert_eq!(by_id.body["total_count"], 0);
    s.get(
        &other,
        &format!("/v1/design-templates?starting_after={first}"),
    )
    .await
    .expect(400, Some("VALIDATION_ERROR"));
    let mine = s.get(&org, &path).await.expect(200, None);
    assert_eq!(mine.body["data"]["deleted"], false);
    assert_eq!(mine.body["data"]["json_tree_version"], 1);
}
