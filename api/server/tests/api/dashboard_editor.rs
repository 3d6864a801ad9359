//! The dashboard's visual editor over real HTTP (its script is tested in Chromium by
//! tests/browser/editor.py): the page carries the stored tree and the brand's choices, its
//! modules are served as JavaScript, previews and saves need the session and its CSRF
//! token in a header, previews are the renderer's picture with its boxes and have their own
//! bucket per member, and Save makes the next version through PATCH's code with its change
//! summary (409 when the design moved on meanwhile). Also the `change_summary` that PATCH
//! /v1/image-ads/{id} now takes.

use adforge_dashboard::members::Role;
use serde_json::{Value, json};

use crate::dashboard::{Browser, Page, member};
use crate::dashboard_ads::{Client, top_up};
use crate::flows::{self, ready};
use crate::support::{Org, Reply, TestServer, jpeg, png};

/// The editor page's data block (`#ed-data`).
fn data_of(p: &Page) -> Value {
    let open = r#"<script type="application/json" id="ed-data">"#;
    let start = p
        .text
        .find(open)
        .unwrap_or_else(|| panic!("no data block in {}", p.text))
        + open.len();
    let end = p.text[start..].find("</script>").unwrap() + start;
    serde_json::from_str(&p.text[start..end]).unwrap()
}

/// A JSON POST of the editor's script: the session cookie, and the CSRF header if given.
async fn post_json(b: &Browser, path: &str, csrf: Option<&str>, body: &Value) -> Reply {
    let mut req = b
        .http
        .post(format!("{}{path}", b.base))
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(t) = csrf {
        req = req.header("x-csrf-token", t);
    }
    let p = b.send(req).await;
    let status = p.status;
    let body = serde_json::from_str(&p.text).unwrap_or(Value::Null);
    Reply {
        status,
        headers: p.headers,
        body,
    }
}

/// Decodes standard base64 (the test's own few lines, to check the server's).
fn unbase64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let bytes: Vec<u8> = s.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::new();
    for chunk in bytes.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &c)| n | (u32::from(val(c)) << (18 - 6 * i)));
        for i in 0..chunk.len() - 1 {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    out
}

/// An org with a brand (palette, fonts, a logo), a product whose variant has a photo, and
/// a completed editable ad; a member's browser signed in.
async fn editable_ad(s: &TestServer) -> (Org, String, Browser, Value) {
    let org = s.org("Acme").await;
    let api = Client {
        s,
        http: reqwest::Client::new(),
    };
    let c = ready(&api, &org).await;
    let logo = s
        .upload(
            &org,
            png(40, 20, [10, 10, 10, 255]),
            &[("image_type", "logo")],
        )
        .await
        .expect(201, None)
        .id();
    s.patch(
        &org,
        &format!("/v1/brands/{}", c.brand),
        json!({
            "color_palettes": {"accent": ["#E4572E"], "primary": ["#0B3D2E", "#f2a541cc", "#abc"]},
            "fonts": [{"name": "lato", "role": "heading"}, {"name": "Comic Neue"}],
            "logo_image_ids": [logo],
        }),
    )
    .await
    .expect(200, None);
    top_up(s, &org, 1_000).await;
    let id = flows::create(
        &api,
        &org,
        json!({"reference_ad_url": c.reference, "brand_id": c.brand, "product_id": c.product,
               "audience_id": c.audience, "editable": true}),
    )
    .await;
    let ad = flows::settled(&api, &org, &id, String::new).await;
    assert_eq!(ad["status"], "completed", "{ad}");
    let b = member(s, &org.id, "ed@example.com", Role::Member, false).await;
    (org, id, b, ad)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editor_page_carries_the_tree_and_the_brands_choices() {
    let s = TestServer::start().await;
    let (org, id, b, ad) = editable_ad(&s).await;
    // A photo of the product (a dark box on white) and its cut-out.
    let shot = image::RgbaImage::from_fn(300, 240, |x, y| {
        if (100..200).contains(&x) && (60..200).contains(&y) {
            image::Rgba([20, 70, 40, 255])
        } else {
            image::Rgba([255, 255, 255, 255])
        }
    });
    let mut bytes = Vec::new();
    shot.write_to(
        &mut std::io::Cursor::new(&mut bytes),
        image::ImageFormat::Png,
    )
    .unwrap();
    let product_id = ad["product_id"].as_str().unwrap();
    let photo = s
        .upload(
            &org,
            bytes,
            &[
                ("image_type", "product"),
                ("alt_text", "Green box"),
                ("product_id", product_id),
            ],
        )
        .await
        .expect(201, None)
        .id();
    s.call(
        reqwest::Method::POST,
        &format!("/v1/images/{photo}/cutout"),
        Some(&org.key),
        None,
    )
    .await
    .expect(201, None);

    let p = b.get(&format!("/dashboard/ads/{id}/edit")).await;
    assert_eq!(p.status, 200, "{}", p.text);
    let csp = p.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("script-src 'self';"), "{csp}");
    assert!(!csp.contains("unsafe"), "{csp}");
    assert!(
        p.text
            .contains(r#"<script type="module" src="/dashboard/assets/editor/main.js"></script>"#)
    );
    assert!(p.text.contains(r#"href="/dashboard/assets/editor.css""#));
    assert!(p.text.contains("Save as version 2"));
    let d = data_of(&p);
    assert_eq!(d["kind"], "ad");
    assert_eq!(d["version"], 1);
    assert_eq!(d["save_url"], format!("/dashboard/ads/{id}/edit/save"));
    let tree: Value = serde_json::from_str(d["tree"].as_str().unwrap()).unwrap();
    assert_eq!(tree, ad["current_json_tree"], "the stored tree");
    // Palettes: primary first, colours as #rrggbb.
    assert_eq!(
        d["palettes"],
        json!([{"name": "primary", "colors": ["#0b3d2e", "#f2a541", "#aabbcc"]},
               {"name": "accent", "colors": ["#e4572e"]}])
    );
    // Fonts: the brand's that the renderer has first, by the renderer's spelling; then the rest.
    assert_eq!(d["fonts"][0], json!({"name": "Lato", "brand": true}));
    let fonts: Vec<&str> = d["fonts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(
        fonts.contains(&"Inter") && !fonts.contains(&"Comic Neue"),
        "{fonts:?}"
    );
    // Images: the product's (the variant's photo, the photo of the product), their cut-out,
    // the brand's logo.
    let images: Vec<(&str, &str, &str)> = d["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["group"].as_str().unwrap(),
                i["label"].as_str().unwrap(),
                i["url"].as_str().unwrap(),
            )
        })
        .collect();
    let groups: Vec<&str> = images.iter().map(|i| i.0).collect();
    assert_eq!(
        groups,
        [
            "Product images",
            "Product images",
            "Cut-outs",
            "Brand logos"
        ],
        "{images:?}"
    );
    assert_eq!(images[1].1, "Green box");
    assert_eq!(images[2].1, "Cut-out of Green box");
    assert!(images.iter().all(|i| i.2.contains("/files/")), "{images:?}");

    // The modules and the stylesheet are served with their types; unknown names are 404.
    for file in [
        "main.js",
        "model.js",
        "history.js",
        "preview.js",
        "canvas.js",
        "layers.js",
        "panel.js",
        "paint.js",
        "dom.js",
    ] {
        let r = b.get(&format!("/dashboard/assets/editor/{file}")).await;
        assert_eq!(r.status, 200, "{file}");
        assert_eq!(
            r.headers["content-type"], "text/javascript; charset=utf-8",
            "{file}"
        );
    }
    let css = b.get("/dashboard/assets/editor.css").await;
    assert_eq!(css.headers["content-type"], "text/css; charset=utf-8");
    assert_eq!(b.get("/dashboard/assets/editor/x.js").await.status, 404);
    assert_eq!(
        b.get("/dashboard/assets/editor/..%2Fdashboard.css")
            .await
            .status,
        404
    );

    // The detail page links the editor and keeps the plain form.
    let detail = b.get(&format!("/dashboard/ads/{id}")).await;
    assert!(detail.text.contains(&format!(
        r#"href="/dashboard/ads/{id}/edit">Open in the editor"#
    )));
    let form = b.get(&format!("/dashboard/ads/{id}/edit/form")).await;
    assert_eq!(form.status, 200);
    assert!(form.text.contains("text:"), "the plain form's fields");

    // Another organisation's member: the 404 page.
    let other = s.org("Other").await;
    let ob = member(&s, &other.id, "o@example.com", Role::Member, false).await;
    assert_eq!(
        ob.get(&format!("/dashboard/ads/{id}/edit")).await.status,
        404
    );
    let _ = org;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editor_previews_need_the_session_and_its_token_and_have_a_bucket() {
    let s = TestServer::start_with(|a| a.previews.preview_rate_limit = 4).await;
    let org = s.org("Acme").await;
    let b = member(&s, &org.id, "ed@example.com", Role::Member, false).await;
    let page = b.get("/dashboard/templates").await;
    let csrf = page.field("csrf");
    let tree = json!({"root": "r", "nodes": {
        "r": {"type": "FRAME", "width": 200, "height": 100, "children": ["t", "box"],
              "fills": [{"type": "SOLID", "color": {"r": 1, "g": 1, "b": 1}}]},
        "t": {"type": "TEXT", "name": "headline", "x": 10, "y": 10, "width": 180, "characters": "Hello", "fontSize": 20},
        "box": {"type": "RECTANGLE", "x": 20, "y": 50, "width": 40, "height": 30,
                "fills": [{"type": "SOLID", "color": {"r": 0.9, "g": 0.1, "b": 0.1}}]}}});
    let body = json!({"tree": tree, "width": 300});

    // Signed out: 401 in the API's shape; no token or a wrong one: 403.
    let anon = Browser::new(&s);
    let r = post_json(&anon, "/dashboard/editor/preview", Some(&csrf), &body).await;
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(r.body["error"]["code"], "UNAUTHORIZED");
    let r = post_json(&b, "/dashboard/editor/preview", None, &body).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.body["error"]["code"], "FORBIDDEN");
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("X-CSRF-Token")
    );
    let r = post_json(&b, "/dashboard/editor/preview", Some("x"), &body).await;
    assert_eq!(r.status, 403);

    // The picture and its boxes in one answer.
    let r = post_json(&b, "/dashboard/editor/preview", Some(&csrf), &body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.headers["cache-control"], "no-store");
    let image = r.body["image"].as_str().unwrap();
    let bytes = unbase64(image.strip_prefix("data:image/png;base64,").unwrap());
    let picture = image::load_from_memory(&bytes).unwrap().to_rgba8();
    assert_eq!(picture.dimensions(), (300, 150));
    let layout = &r.body["layout"];
    assert_eq!(
        (layout["width"].as_u64(), layout["scale"].as_f64()),
        (Some(300), Some(1.5))
    );
    let rect = layout["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == "box")
        .unwrap();
    assert_eq!(
        (
            rect["x"].as_f64(),
            rect["y"].as_f64(),
            rect["width"].as_f64()
        ),
        (Some(30.0), Some(75.0), Some(60.0))
    );
    // The box is where the picture is red.
    let px = picture.get_pixel(60, 100);
    assert!(px[0] > 200 && px[1] < 60, "{px:?}");
    assert!(r.body["render_ms"].as_f64().unwrap() > 0.0);
    let head = layout["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == "t")
        .unwrap();
    assert_eq!(head["slot"], "headline");

    // A tree the renderer refuses: PATCH's check, naming the field.
    let mut bad = tree.clone();
    bad["nodes"]["box"]["fills"][0]["color"]["r"] = json!(3);
    let r = post_json(
        &b,
        "/dashboard/editor/preview",
        Some(&csrf),
        &json!({"tree": bad}),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.body["error"]["code"], "VALIDATION_ERROR");
    assert_eq!(r.body["error"]["details"][0]["field"], "tree");
    assert!(
        r.body["error"]["details"][0]["message"]
            .as_str()
            .unwrap()
            .contains("box")
    );
    // Not JSON: named too.
    let r = b
        .send(
            b.http
                .post(format!("{}/dashboard/editor/preview", b.base))
                .header("x-csrf-token", &csrf)
                .body("tree"),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text);

    // The member's bucket, 4 a minute here: the picture and the two refused bodies counted
    // (signed-out and token failures never reach it), so one more fits.
    let r = post_json(&b, "/dashboard/editor/preview", Some(&csrf), &body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = post_json(&b, "/dashboard/editor/preview", Some(&csrf), &body).await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(r.body["error"]["code"], "RATE_LIMIT_EXCEEDED");
    assert!(r.headers.contains_key("retry-after"));
    // Another member has a bucket of their own; the API key's preview bucket is untouched.
    let b2 = member(&s, &org.id, "two@example.com", Role::Member, false).await;
    let csrf2 = b2.get("/dashboard/templates").await.field("csrf");
    let r = post_json(&b2, "/dashboard/editor/preview", Some(&csrf2), &body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = s.post(&org, "/v1/previews", body.clone()).await;
    assert_eq!(r.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saving_from_the_editor_makes_the_next_version_with_its_summary() {
    let s = TestServer::start().await;
    let (org, id, b, ad) = editable_ad(&s).await;
    let p = b.get(&format!("/dashboard/ads/{id}/edit")).await;
    let csrf = data_of(&p)["csrf"].as_str().unwrap().to_string();
    assert_eq!(csrf, p.field("csrf"), "the session's form token");
    let mut tree = ad["current_json_tree"].clone();
    let (node, _) = tree["nodes"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, n)| n["type"] == "TEXT")
        .map(|(k, n)| (k.clone(), n.clone()))
        .unwrap();
    tree["nodes"][&node]["characters"] = json!("Grip on wet <rock>");
    tree["nodes"][&node]["x"] = json!(42);
    let save = format!("/dashboard/ads/{id}/edit/save");
    let body = json!({"tree": tree, "base_version": 1, "change_summary": "Moved Headline; Changed the text of Headline"});

    let r = post_json(&b, &save, None, &body).await;
    assert_eq!(r.status, 403, "{}", r.body);
    let too_long = json!({"tree": tree, "base_version": 1, "change_summary": "x".repeat(501)});
    let r = post_json(&b, &save, Some(&csrf), &too_long).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.body["error"]["details"][0]["field"], "change_summary");
    let r = post_json(&b, &save, Some(&csrf), &json!({"tree": tree})).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.body["error"]["details"][0]["field"], "base_version");

    let r = post_json(&b, &save, Some(&csrf), &body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body,
        json!({"version": 2, "url": format!("/dashboard/ads/{id}#version-2")})
    );
    // A second save from the same start: the ad has moved on.
    let r = post_json(&b, &save, Some(&csrf), &body).await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.body["error"]["code"], "CONFLICT");
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("version 2")
    );

    let api = Client {
        s: &s,
        http: reqwest::Client::new(),
    };
    let done = flows::settled(&api, &org, &id, String::new).await;
    assert_eq!(done["status"], "completed", "{done}");
    let versions = s
        .get(&org, &format!("/v1/image-ads/{id}/versions"))
        .await
        .expect(200, None);
    let list = versions.body["data"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["change_summary"], Value::Null);
    assert_eq!(
        list[1]["change_summary"],
        "Moved Headline; Changed the text of Headline"
    );
    assert_eq!(list[1]["json_tree"], tree);
    let detail = b.get(&format!("/dashboard/ads/{id}")).await;
    assert!(
        detail
            .text
            .contains("Moved Headline; Changed the text of Headline")
    );

    // Other organisations' ads are not found; flat ads cannot be saved.
    let other = s.org("Other").await;
    let ob = member(&s, &other.id, "o@example.com", Role::Member, false).await;
    let ocsrf = ob.get("/dashboard/ads").await.field("csrf");
    let r = post_json(
        &ob,
        &save,
        Some(&ocsrf),
        &json!({"tree": tree, "base_version": 2}),
    )
    .await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(r.body["error"]["code"], "IMAGE_AD_NOT_FOUND");

    // PATCH /v1/image-ads/{id} takes a change summary too, checked the same way.
    let mut t3 = tree.clone();
    t3["nodes"][&node]["characters"] = json!("Version three");
    let r = s
        .patch(
            &org,
            &format!("/v1/image-ads/{id}"),
            json!({"current_json_tree": t3, "change_summary": "bad \u{202e} override"}),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.body["error"]["details"][0]["field"], "change_summary");
    s.patch(
        &org,
        &format!("/v1/image-ads/{id}"),
        json!({"current_json_tree": t3, "change_summary": "From the API"}),
    )
    .await
    .expect(200, None);
    let v3 = s
        .get(&org, &format!("/v1/image-ads/{id}/versions"))
        .await
        .expect(200, None);
    assert_eq!(v3.body["data"][2]["change_summary"], "From the API");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn templates_are_opened_and_saved_from_the_editor() {
    let s = TestServer::start().await;
    let org = s.org("Acme").await;
    let reference = s
        .upload(&org, jpeg(120, 150, [30, 60, 90]), &[])
        .await
        .expect(201, None)
        .body["data"]["src"]
        .as_str()
        .unwrap()
        .to_string();
    let id = s
        .post(
            &org,
            "/v1/design-templates",
            json!({"reference_image_url": reference}),
        )
        .await
        .expect(202, None)
        .id();
    let mut t = Value::Null;
    for _ in 0..1800 {
        t = s
            .get(&org, &format!("/v1/design-templates/{id}"))
            .await
            .expect(200, None)
            .body["data"]
            .clone();
        if t["status"] != "processing" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(t["status"], "completed", "{t}");
    let b = member(&s, &org.id, "ed@example.com", Role::Member, false).await;
    let page = b.get(&format!("/dashboard/templates/{id}")).await;
    assert!(
        page.text
            .contains(&format!(r#"href="/dashboard/templates/{id}/edit""#))
    );
    let p = b.get(&format!("/dashboard/templates/{id}/edit")).await;
    assert_eq!(p.status, 200, "{}", p.text);
    let d = data_of(&p);
    assert_eq!(d["kind"], "template");
    let tree: Value = serde_json::from_str(d["tree"].as_str().unwrap()).unwrap();
    assert_eq!(tree, t["current_json_tree"]);
    let csrf = d["csrf"].as_str().unwrap();
    let save = format!("/dashboard/templates/{id}/edit/save");
    let r = post_json(
        &b,
        &save,
        Some(csrf),
        &json!({"tree": tree, "base_version": 1, "change_summary": "Aligned Headline centre"}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["version"], 2);
    let r = post_json(
        &b,
        &save,
        Some(csrf),
        &json!({"tree": tree, "base_version": 1}),
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.body);
    let versions = s
        .get(&org, &format!("/v1/design-templates/{id}/versions"))
        .await
        .expect(200, None);
    let list = versions.body["data"].as_array().unwrap();
    assert!(
        list.iter()
            .any(|v| v["change_summary"] == "Aligned Headline centre"),
        "{}",
        versions.body
    );
}
