//! Image ads: the synchronous rules of create and edit (relations, reference URL, balance),
//! reads, lists and search. The reference ads are images this same server serves under
//! `/files/…` (the test server allows loopback URLs, as `--allow-private-urls` does).

use serde_json::{Value, json};

use crate::support::{Catalog, Org, TestServer, wait_settled};

/// A catalog whose variant has an image, a funded wallet, and a reference ad URL.
async fn ready(s: &TestServer, org: &Org, dollars: &str) -> (Catalog, String) {
    let ready = s.ad_inputs(org).await;
    top_up(s, org, dollars).await;
    ready
}

async fn top_up(s: &TestServer, org: &Org, dollars: &str) {
    let cents = adforge_api::wallet::parse_amount(dollars).unwrap();
    adforge_api::store::query(
        "UPDATE wallets SET balance_cents = balance_cents + ? WHERE org_id = ?",
    )
    .bind(cents)
    .bind(&org.id)
    .execute(&s.db.write)
    .await
    .unwrap();
}

fn create_body(c: &Catalog, reference: &str) -> Value {
    json!({"reference_ad_url": reference, "brand_id": c.brand, "product_id": c.product, "audience_id": c.audience})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_checks_relations_in_order() {
    let s = TestServer::start().await;
    let org = s.org("Ads").await;
    let (c, reference) = ready(&s, &org, "10.00").await;
    let other = s.catalog(&org).await;

    for (field, value, code) in [
        ("brand_id", "brand_nope", "BRAND_NOT_FOUND"),
        ("product_id", "prod_nope", "PRODUCT_NOT_FOUND"),
        ("audience_id", "aud_nope", "AUDIENCE_NOT_FOUND"),
        ("product_variant_id", "pv_nope", "PRODUCT_VARIANT_NOT_FOUND"),
    ] {
        let mut body = create_body(&c, &reference);
        body[field] = json!(value);
        s.post(&org, "/v1/image-ads", body)
            .await
            .expect(404, Some(code));
    }
    let mut body = create_body(&c, &reference);
    body["brand_id"] = json!(other.brand);
    s.post(&org, "/v1/image-ads", body)
        .await
        .expect(422, Some("PRODUCT_BRAND_MISMATCH"));
    let mut body = create_body(&c, &reference);
    body["audience_id"] = json!(other.audience);
    s.post(&org, "/v1/image-ads", body)
        .await
        .expect(422, Some("AUDIENCE_PRODUCT_MISMATCH"));
    // The other product's variant has no images.
    let mut body = create_body(&other, &reference);
    body["product_variant_id"] = json!(other.variant);
    s.post(&org, "/v1/image-ads", body.clone())
        .await
        .expect(422, Some("PRODUCT_VARIANT_NO_IMAGES"));
    body.as_object_mut().unwrap().remove("product_variant_id");
    s.post(&org, "/v1/image-ads", body)
        .await
        .expect(422, Some("PRODUCT_VARIANT_NO_IMAGES"));
    let mut body = create_body(&c, &reference);
    body["product_variant_id"] = json!(other.variant);
    s.post(&org, "/v1/image-ads", body)
        .await
        .expect(400, Some("VALIDATION_ERROR"));

    for bad in [
        "ftp://example.com/a.png".to_string(),
        format!("{}/files/images/none/original.png", s.base),
        format!("{}/openapi.json", s.base),
        "not a url".to_string(),
    ] {
        let r = s
            .post(&org, "/v1/image-ads", create_body(&c, &bad))
            .await
            .expect(422, Some("REFERENCE_AD_URL_INVALID"));
        assert!(
            r.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("reference_ad_url")
        );
    }
    let mut body = create_body(&c, &reference);
    body["batch_id"] = json!("batch_1");
    let r = s
        .post(&org, "/v1/image-ads", body)
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(r.body["error"]["details"][0]["field"], "batch_id");
    s.post(&org, "/v1/image-ads", json!({"brand_id": c.brand}))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    // Nothing was created or held by any of these.
    assert_eq!(s.get(&org, "/v1/image-ads").await.body["total_count"], 0);
    let held: i64 =
        adforge_api::store::query_scalar("SELECT held_cents FROM wallets WHERE org_id = ?")
            .bind(&org.id)
            .fetch_one(&s.db.read)
            .await
            .unwrap();
    assert_eq!(held, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_private_url_guard_holds_but_own_files_are_read_directly() {
    // A server without --allow-private-urls refuses loopback and private references...
    let s = TestServer::start_with(|a| a.allow_private_urls = false).await;
    let org = s.org_unlimited("Guard").await;
    let (c, reference) = ready(&s, &org, "10.00").await;
    for private in [
        "http://127.0.0.1:9/ref.png",
        "http://10.1.2.3/ref.png",
        "http://169.254.169.254/latest/meta-data",
        "http://localhost:9/a.png",
    ] {
        let r = s
            .post(&org, "/v1/image-ads", create_body(&c, private))
            .await
            .expect(422, Some("REFERENCE_AD_URL_INVALID"));
        assert!(
            r.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("fetched"),
            "{}",
            r.body
        );
    }
    // ...but its own files are read from its blob store, so the embedded default (a server
    // on 127.0.0.1) can make ads from uploaded references and product images.
    let ad = s
        .post(&org, "/v1/image-ads", create_body(&c, &reference))
        .await
        .expect(202, None)
        .id();
    let done = wait_settled(&s, &org, &ad).await;
    assert_eq!(done["status"], "completed", "{done}");
    // The same holds for image fills of an edited tree: own files yes, private hosts no.
    let mut body = create_body(&c, &reference);
    body["editable"] = json!(true);
    let ad = s
        .post(&org, "/v1/image-ads", body)
        .await
        .expect(202, None)
        .id();
    let done = wait_settled(&s, &org, &ad).await;
    let mut tree = done["current_json_tree"].clone();
    let own_url = reference.clone();
    let (img_id, _) = tree["nodes"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, n)| {
            n["fills"]
                .as_array()
                .is_some_and(|f| f.iter().any(|p| p["type"] == "IMAGE"))
        })
        .map(|(k, n)| (k.clone(), n.clone()))
        .expect("a node with an image fill");
    let fills = tree["nodes"][&img_id]["fills"].as_array_mut().unwrap();
    let image_fill = fills.iter_mut().find(|p| p["type"] == "IMAGE").unwrap();
    image_fill["imageFillUrl"] = json!("http://127.0.0.1:9/private.png");
    let path = format!("/v1/image-ads/{ad}");
    let r = s
        .patch(&org, &path, json!({"current_json_tree": tree.clone()}))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a public address"),
        "{}",
        r.body
    );
    let fills = tree["nodes"][&img_id]["fills"].as_array_mut().unwrap();
    let image_fill = fills.iter_mut().find(|p| p["type"] == "IMAGE").unwrap();
    image_fill["imageFillUrl"] = json!(own_url);
    s.patch(&org, &path, json!({"current_json_tree": tree}))
        .await
        .expect(200, None);
    assert_eq!(wait_settled(&s, &org, &ad).await["status"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insufficient_balance_is_402_with_link_and_amounts() {
    let s = TestServer::start().await;
    let org = s.org("Poor").await;
    let (c, reference) = ready(&s, &org, "3.50").await;
    let mut body = create_body(&c, &reference);
    body["editable"] = json!(true);
    let r = s
        .post(&org, "/v1/image-ads", body)
        .await
        .expect(402, Some("INSUFFICIENT_BALANCE"));
    let msg = r.body["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("$4.00")
            && msg.contains("$3.50")
            && msg.contains("https://dashboard.test/billing"),
        "{msg}"
    );
    let ok = s
        .post(&org, "/v1/image-ads", create_body(&c, &reference))
        .await
        .expect(202, None);
    assert_eq!(ok.body["data"]["status"], "processing");
    assert_eq!(ok.body["data"]["sku_code"], "flat_image_ad");
    assert_eq!(ok.body["data"]["progress"]["step"], "queued");
    assert!(ok.id().starts_with("ia_"));
    assert_eq!(ok.body["data"]["batch_id"], Value::Null);
    assert_eq!(ok.body["data"]["current_json_tree"], Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_lists_search_and_edit_rules() {
    // No workers: the ads stay processing, so the rules for processing ads can be checked.
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org("Reads").await;
    let (c, reference) = ready(&s, &org, "10.00").await;
    let flat = s
        .post(&org, "/v1/image-ads", create_body(&c, &reference))
        .await
        .expect(202, None)
        .id();
    let mut body = create_body(&c, &reference);
    body["editable"] = json!(true);
    let editable = s
        .post(&org, "/v1/image-ads", body)
        .await
        .expect(202, None)
        .id();

    let got = s
        .get(&org, &format!("/v1/image-ads/{flat}"))
        .await
        .expect(200, None);
    assert_eq!(got.body["data"]["reference_ad_url"], reference.as_str());
    s.get(&org, "/v1/image-ads/ia_nope")
        .await
        .expect(404, Some("IMAGE_AD_NOT_FOUND"));
    s.get(&org, "/v1/image-ads/ia_nope/versions")
        .await
        .expect(404, Some("IMAGE_AD_NOT_FOUND"));
    s.get(&org, &format!("/v1/image-ads/{editable}/versions/iav_nope"))
        .await
        .expect(404, Some("IMAGE_AD_VERSION_NOT_FOUND"));
    assert_eq!(
        s.get(&org, &format!("/v1/image-ads/{flat}/versions"))
            .await
            .body["data"],
        json!([])
    );

    let l = s
        .get(&org, "/v1/image-ads?editable=true")
        .await
        .expect(200, None);
    assert_eq!(l.body["total_count"], 1);
    let l = s.get(&org, "/v1/image-ads?sku_code=flat_image_ad,editable_image_ad&status=processing&facets=status").await.expect(200, None);
    assert_eq!(l.body["total_count"], 2);
    assert_eq!(
        l.body["facets"]["status"],
        json!([{"value": "processing", "count": 2}])
    );
    let l = s
        .get(&org, "/v1/image-ads?status=completed&facets=status")
        .await
        .expect(200, None);
    assert_eq!(l.body["total_count"], 0);
    assert_eq!(
        l.body["facets"]["status"],
        json!([{"value": "processing", "count": 2}]),
        "a facet ignores its own filter"
    );
    s.get(&org, "/v1/image-ads?status=done")
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    s.get(&org, "/v1/image-ads?facets=brand")
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    let l = s
        .get(&org, &format!("/v1/image-ads?ids={flat}"))
        .await
        .expect(200, None);
    assert_eq!(l.body["data"][0]["id"], flat.as_str());
    let l = s
        .get(&org, "/v1/image-ads?search=trail")
        .await
        .expect(200, None);
    assert_eq!(l.body["total_count"], 2);
    let l = s
        .get(&org, &format!("/v1/image-ads?search={}", &flat[..10]))
        .await
        .expect(200, None);
    assert_eq!(l.body["total_count"], 1);

    let found = s
        .get(&org, "/v1/search?types=image_ad&query=trail")
        .await
        .expect(200, None);
    assert_eq!(found.body["data"][0]["object"], "image_ad");
    assert_eq!(found.body["data"][0]["label"], "Trail Shoe ad");
    assert_eq!(found.body["data"][0]["hint"], found.body["data"][0]["id"]);

    // Edits: flat → not editable; processing → not completed; both checked before the tree.
    let tree = json!({"nodes": {}});
    s.patch(
        &org,
        &format!("/v1/image-ads/{flat}"),
        json!({"current_json_tree": tree}),
    )
    .await
    .expect(422, Some("IMAGE_AD_NOT_EDITABLE"));
    s.patch(
        &org,
        &format!("/v1/image-ads/{editable}"),
        json!({"current_json_tree": tree}),
    )
    .await
    .expect(422, Some("IMAGE_AD_NOT_COMPLETED"));
    s.patch(
        &org,
        "/v1/image-ads/ia_nope",
        json!({"current_json_tree": tree}),
    )
    .await
    .expect(404, Some("IMAGE_AD_NOT_FOUND"));
    s.delete(&org, &format!("/v1/image-ads/{flat}"))
        .await
        .expect(409, Some("CONFLICT"));
    // Sync from a design tool exists now (figma.rs): an empty body names what is missing.
    s.post(&org, "/v1/image-ads/sync", json!({}))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
}

/// A completed editable ad (version 1) and its tree.
async fn completed_editable(s: &TestServer, org: &Org) -> (String, Value) {
    let (c, reference) = ready(s, org, "10.00").await;
    let mut body = create_body(&c, &reference);
    body["editable"] = json!(true);
    let ad = s
        .post(org, "/v1/image-ads", body)
        .await
        .expect(202, None)
        .id();
    let done = wait_settled(s, org, &ad).await;
    assert_eq!(done["status"], "completed", "{done}");
    (ad, done["current_json_tree"].clone())
}

/// An image fill whose host does not resolve (RFC 2606 keeps `.invalid` from ever
/// resolving; nothing is contacted) fails the re-render at once, naming the URL and the
/// reason, instead of retrying a name that does not exist or drawing the ad without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_whose_host_does_not_resolve_fails_the_render_naming_it() {
    let s = TestServer::start().await;
    let org = s.org("Unresolved").await;
    let (ad, mut tree) = completed_editable(&s, &org).await;
    let url = "https://no-such-host.invalid/photo.png";
    let photo = tree["nodes"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, n)| n["fills"][0]["type"] == "IMAGE")
        .map(|(k, _)| k.clone())
        .expect("an image fill");
    tree["nodes"][&photo]["fills"][0]["imageFillUrl"] = json!(url);
    s.patch(
        &org,
        &format!("/v1/image-ads/{ad}"),
        json!({"current_json_tree": tree}),
    )
    .await
    .expect(200, None);
    let failed = wait_settled(&s, &org, &ad).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], "PIPELINE_ERROR", "{failed}");
    let why = failed["error"]["message"].as_str().unwrap();
    assert!(
        why.contains(url) && why.contains("does not resolve: `no-such-host.invalid`"),
        "{why}"
    );
}

/// GET /v1/image-ads/{id}/versions/{version_id} answers the same version by its number as
/// by its `iav_` id (as design templates' versions are read by number); a number past the
/// last is 404 naming it, and anything else is 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_are_read_by_number_and_by_id() {
    let s = TestServer::start().await;
    let org = s.org("Versions").await;
    let (ad, mut tree) = completed_editable(&s, &org).await;
    let text_id = tree["nodes"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, n)| n["type"] == "TEXT")
        .map(|(k, _)| k.clone())
        .expect("a text node");
    tree["nodes"][&text_id]["characters"] = json!("Version two");
    s.patch(
        &org,
        &format!("/v1/image-ads/{ad}"),
        json!({"current_json_tree": tree}),
    )
    .await
    .expect(200, None);
    assert_eq!(wait_settled(&s, &org, &ad).await["status"], "completed");
    let list = s
        .get(&org, &format!("/v1/image-ads/{ad}/versions"))
        .await
        .expect(200, None)
        .body["data"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(list.len(), 2);
    assert_ne!(list[0]["json_tree"], list[1]["json_tree"]);
    let (s, org, ad) = (&s, &org, ad.as_str());
    for v in &list {
        let by_id = s
            .get(
                org,
                &format!("/v1/image-ads/{ad}/versions/{}", v["id"].as_str().unwrap()),
            )
            .await
            .expect(200, None);
        let by_number = s
            .get(
                org,
                &format!("/v1/image-ads/{ad}/versions/{}", v["version_number"]),
            )
            .await
            .expect(200, None);
        assert_eq!(by_number.body["data"], by_id.body["data"]);
        assert_eq!(by_number.body["data"], *v);
    }
    let past = list.len() + 1;
    let r = s
        .get(org, &format!("/v1/image-ads/{ad}/versions/{past}"))
        .await
        .expect(404, Some("IMAGE_AD_VERSION_NOT_FOUND"));
    let msg = r.body["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains(&format!("no version {past}")) && msg.contains(ad),
        "{msg}"
    );
    for bad in ["0", "-1", "+1", "1.5", "one", "99999999999999999999"] {
        let r = s
            .get(org, &format!("/v1/image-ads/{ad}/versions/{bad}"))
            .await
            .expect(400, Some("VALIDATION_ERROR"));
        assert_eq!(
            r.body["error"]["details"][0]["field"], "version_id",
            "{}",
            r.body
        );
        let msg = r.body["error"]["details"][0]["message"].as_str().unwrap();
        assert!(
            msg.contains("version number from 1") && msg.contains(bad),
            "{msg}"
        );
    }
    s.get(org, "/v1/image-ads/ia_nope/versions/1")
        .await
        .expect(404, Some("IMAGE_AD_NOT_FOUND"));
}

async fn wallet(s: &TestServer, org: &Org) -> (i64, i64) {
    adforge_api::store::query_as("SELECT balance_cents, held_cents FROM wallets WHERE org_id = ?")
        .bind(&org.id)
        .fetch_one(&s.db.read)
        .await
        .unwrap()
}

/// The box of node `id` in its root's units, `(x, y, width, height)`: the sum of its own
/// and its ancestors' offsets (the root's own offset excluded).
fn node_box(tree: &Value, id: &str) -> (f64, f64, f64, f64) {
    let nodes = tree["nodes"].as_object().unwrap();
    let parent_of = |child: &str| {
        nodes
            .iter()
            .find(|(_, n)| {
                n["children"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|c| c == child))
            })
            .map(|(k, _)| k.clone())
    };
    let n = &nodes[id];
    let num = |n: &Value, k: &str| n[k].as_f64().unwrap_or(0.0);
    let (mut x, mut y) = (num(n, "x"), num(n, "y"));
    let mut at = id.to_string();
    while let Some(p) = parent_of(&at) {
        if parent_of(&p).is_some() {
            x += num(&nodes[&p], "x");
            y += num(&nodes[&p], "y");
        }
        at = p;
    }
    (x, y, num(n, "width"), num(n, "height"))
}

/// The child of the root that holds `id` (or `id` itself when it is one).
fn top_level_of(tree: &Value, id: &str) -> String {
    let nodes = tree["nodes"].as_object().unwrap();
    let root = tree["root"].as_str().unwrap();
    let mut at = id.to_string();
    loop {
        let parent = nodes
            .iter()
            .find(|(_, n)| {
                n["children"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|c| c == &at))
            })
            .map(|(k, _)| k.clone())
            .unwrap();
        if parent == root {
            return at;
        }
        at = parent;
    }
}

/// Pixels of two renders of one tree that differ only in `edited`'s text: returns (mean
/// absolute difference per channel outside the edited node's top-level box, share of the
/// product photo's pixels outside that box that show the photo's red in `a`, the same in
/// `b`).
fn compare_outside(
    tree: &Value,
    edited: &str,
    photo: &str,
    a: &image::RgbaImage,
    b: &image::RgbaImage,
) -> (f64, f64, f64) {
    let root = tree["root"].as_str().unwrap();
    let scale = f64::from(a.width()) / tree["nodes"][root]["width"].as_f64().unwrap();
    let to_px = |(x, y, w, h): (f64, f64, f64, f64), margin: f64| {
        (
            (x - margin) * scale,
            (y - margin) * scale,
            (x + w + margin) * scale,
            (y + h + margin) * scale,
        )
    };
    // The edited text's container, with a margin for anti-aliasing and shadows.
    let skip = to_px(node_box(tree, &top_level_of(tree, edited)), 8.0);
    let photo_box = to_px(node_box(tree, photo), 0.0);
    let inside = |(x0, y0, x1, y1): (f64, f64, f64, f64), x: u32, y: u32| {
        let (x, y) = (f64::from(x) + 0.5, f64::from(y) + 0.5);
        x >= x0 && x < x1 && y >= y0 && y < y1
    };
    let red =
        |p: &image::Rgba<u8>| p[0] > p[1].saturating_add(80) && p[0] > p[2].saturating_add(80);
    let (mut diff, mut n) = (0u64, 0u64);
    let (mut photo_px, mut red_a, mut red_b) = (0u64, 0u64, 0u64);
    for (x, y, pa) in a.enumerate_pixels() {
        if inside(skip, x, y) {
            continue;
        }
        let pb = b.get_pixel(x, y);
        diff += (0..3)
            .map(|c| u64::from(pa[c].abs_diff(pb[c])))
            .sum::<u64>();
        n += 3;
        if inside(photo_box, x, y) {
            photo_px += 1;
            red_a += u64::from(red(pa));
            red_b += u64::from(red(pb));
        }
    }
    assert!(photo_px > 0, "the photo lies entirely in the edited box");
    (
        diff as f64 / n as f64,
        red_a as f64 / photo_px as f64,
        red_b as f64 / photo_px as f64,
    )
}

/// Also issue 14, item 5: without `--allow-private-urls` (the demo's setup), a text-only
/// edit re-renders with the product photo, whose URL is this server's own `/files/`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flat_and_editable_ads_complete_edit_and_bill_once() {
    let s = TestServer::start_with(|a| a.allow_private_urls = false).await;
    let org = s.org_unlimited("E2E").await;
    let (c, reference) = ready(&s, &org, "10.00").await;

    let flat = s
        .post(&org, "/v1/image-ads", create_body(&c, &reference))
        .await
        .expect(202, None)
        .id();
    let mut body = create_body(&c, &reference);
    body["editable"] = json!(true);
    body["prompt"] = json!("Bold and sunny, for the first warm weekend");
    let editable = s
        .post(&org, "/v1/image-ads", body)
        .await
        .expect(202, None)
        .id();
    assert_eq!(wallet(&s, &org).await, (1000, 500), "both prices are held");

    let f = wait_settled(&s, &org, &flat).await;
    assert_eq!(f["status"], "completed", "{f}");
    assert_eq!(f["current_json_tree"], Value::Null, "flat ads have no tree");
    assert!(f["progress"].is_null() && f["error"].is_null());
    let (w, h) = (f["width"].as_i64().unwrap(), f["height"].as_i64().unwrap());
    assert_eq!(w.max(h), 3840, "4K long edge");
    assert!(f["duration_ms"].as_i64().unwrap() > 0);
    assert!(f["completed_at"].is_string());
    let (status, headers, png_bytes) = s.fetch(f["image_url"].as_str().unwrap()).await;
    assert_eq!(status.as_u16(), 200);
    assert_eq!(headers["content-type"], "image/png");
    let decoded = image::load_from_memory(&png_bytes).unwrap();
    assert_eq!(
        (i64::from(decoded.width()), i64::from(decoded.height())),
        (w, h)
    );

    let e = wait_settled(&s, &org, &editable).await;
    assert_eq!(e["status"], "completed", "{e}");
    // The worker's copy report reaches the client: which writer, and every stated fact
    // with its source.
    assert_eq!(e["copy"]["writer"], "template", "{}", e["copy"]);
    assert!(e["copy"]["words_read"].is_boolean(), "{}", e["copy"]);
    for f in e["copy"]["facts"].as_array().unwrap() {
        assert!(!f["source"].as_str().unwrap().is_empty(), "{f}");
    }
    let tree = e["current_json_tree"].clone();
    assert!(tree["nodes"].is_object(), "{tree}");
    let versions = s
        .get(&org, &format!("/v1/image-ads/{editable}/versions"))
        .await
        .expect(200, None);
    assert_eq!(versions.body["data"].as_array().unwrap().len(), 1);
    let v1 = versions.body["data"][0].clone();
    assert!(v1["id"].as_str().unwrap().starts_with("iav_"));
    assert_eq!(v1["version_number"], 1);
    assert_eq!(
        v1["json_tree"], tree,
        "version 1 is exactly the rendered tree"
    );
    assert_eq!(v1["image_url"], e["image_url"]);
    assert_eq!(
        wallet(&s, &org).await,
        (500, 0),
        "charged $1 + $4 once, holds gone"
    );

    // Edit: change the headline text (the largest type) and re-render as version 2.
    let mut edited = tree.clone();
    let text_id = edited["nodes"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, n)| n["type"] == "TEXT")
        .max_by(|a, b| {
            let size = |n: &Value| n["fontSize"].as_f64().unwrap_or(0.0);
            size(a.1).total_cmp(&size(b.1))
        })
        .map(|(k, _)| k.clone())
        .unwrap();
    let photo_id = tree["nodes"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, n)| n["fills"][0]["type"] == "IMAGE" && n["fills"][0]["scaleMode"] == "FILL")
        .map(|(k, _)| k.clone())
        .expect("the product photo is an image fill of the tree");
    let photo_url = tree["nodes"][&photo_id]["fills"][0]["imageFillUrl"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        photo_url.starts_with(&format!("{}/files/", s.base)),
        "{photo_url}"
    );
    // A tree whose 4K render would hold gigabytes of layers (255 nested rounded clipping
    // frames) is refused at PATCH, naming a frame, and makes no version.
    let refused = s
        .patch(
            &org,
            &format!("/v1/image-ads/{editable}"),
            json!({"current_json_tree": crate::stress_trees::nested_frames(255)}),
        )
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    let detail = &refused.body["error"]["details"][0];
    assert_eq!(detail["field"], "current_json_tree", "{}", refused.body);
    assert!(
        detail["message"]
            .as_str()
            .is_some_and(|m| m.contains("node `f") && m.contains("MiB")),
        "{}",
        refused.body
    );
    let after = s
        .get(&org, &format!("/v1/image-ads/{editable}/versions"))
        .await
        .expect(200, None);
    assert_eq!(
        after.body["data"].as_array().map(Vec::len),
        Some(1),
        "{}",
        after.body
    );
    edited["nodes"][&text_id]["characters"] = json!("Edited headline");
    let p = s
        .patch(
            &org,
            &format!("/v1/image-ads/{editable}"),
            json!({"current_json_tree": edited}),
        )
        .await
        .expect(200, None);
    assert_eq!(p.body["data"]["status"], "processing");
    s.patch(
        &org,
        &format!("/v1/image-ads/{editable}"),
        json!({"current_json_tree": edited}),
    )
    .await
    .expect(422, Some("IMAGE_AD_NOT_COMPLETED"));
    let e2 = wait_settled(&s, &org, &editable).await;
    assert_eq!(e2["status"], "completed", "{e2}");
    assert_ne!(
        e2["image_url"], e["image_url"],
        "a new version has a new image"
    );
    assert_eq!(
        e2["current_json_tree"]["nodes"][&text_id]["characters"],
        "Edited headline"
    );
    // Version 2 is version 1 outside the edited text: the photo is still there.
    let decode = |bytes: &[u8]| image::load_from_memory(bytes).unwrap().to_rgba8();
    let png1 = decode(&s.fetch(e["image_url"].as_str().unwrap()).await.2);
    let png2 = decode(&s.fetch(e2["image_url"].as_str().unwrap()).await.2);
    assert_eq!(png1.dimensions(), png2.dimensions());
    let (mean_diff, red1, red2) = compare_outside(&tree, &text_id, &photo_id, &png1, &png2);
    assert!(
        red1 > 0.5,
        "version 1 shows the red product photo ({red1:.3})"
    );
    assert!(
        (red1 - red2).abs() < 0.01,
        "version 2 lost the product photo: {red2:.3} of its area is red, was {red1:.3}"
    );
    assert!(
        mean_diff < 0.5,
        "version 2 differs from version 1 outside the edited text by {mean_diff:.2} levels"
    );
    let versions = s
        .get(&org, &format!("/v1/image-ads/{editable}/versions"))
        .await
        .expect(200, None);
    let list = versions.body["data"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["json_tree"], tree, "version 1 is immutable");
    assert_eq!(list[1]["version_number"], 2);
    let v2 = s
        .get(
            &org,
            &format!(
                "/v1/image-ads/{editable}/versions/{}",
                list[1]["id"].as_str().unwrap()
            ),
        )
        .await
        .expect(200, None);
    assert_eq!(v2.body["data"]["image_url"], e2["image_url"]);
    assert_eq!(
        wallet(&s, &org).await,
        (500, 0),
        "re-renders are not charged"
    );
    let ledger: Vec<String> = adforge_api::store::query_scalar(
        "SELECT kind FROM wallet_ledger WHERE org_id = ? AND kind = 'charge'",
    )
    .bind(&org.id)
    .fetch_all(&s.db.read)
    .await
    .unwrap();
    assert_eq!(ledger.len(), 2);

    // Invalid trees are refused naming the problem; base64 image data too.
    let mut bad = tree.clone();
    bad["nodes"][&text_id]["fontSize"] = json!("huge");
    s.patch(
        &org,
        &format!("/v1/image-ads/{editable}"),
        json!({"current_json_tree": bad}),
    )
    .await
    .expect(400, Some("VALIDATION_ERROR"));
    let done = s
        .get(&org, "/v1/image-ads?status=completed&facets=status")
        .await
        .expect(200, None);
    assert_eq!(done.body["total_count"], 2);
    s.delete(&org, &format!("/v1/image-ads/{flat}"))
        .await
        .expect(200, None);
    s.get(&org, &format!("/v1/image-ads/{flat}"))
        .await
        .expect(404, Some("IMAGE_AD_NOT_FOUND"));

    // An image of the tree that cannot be read fails the re-render, naming the image and
    // the reason, instead of completing without it: the stored photo is damaged (cut in
    // half) behind the server's back.
    let key = photo_url
        .strip_prefix(&format!("{}/files/", s.base))
        .unwrap();
    let path = s.data_dir.join("blobs").join(key);
    let whole = std::fs::read(&path).unwrap();
    std::fs::write(&path, &whole[..whole.len() / 2]).unwrap();
    let mut again = e2["current_json_tree"].clone();
    again["nodes"][&text_id]["characters"] = json!("Edited again");
    s.patch(
        &org,
        &format!("/v1/image-ads/{editable}"),
        json!({"current_json_tree": again}),
    )
    .await
    .expect(200, None);
    let e3 = wait_settled(&s, &org, &editable).await;
    assert_eq!(e3["status"], "failed", "{e3}");
    assert_eq!(e3["error"]["code"], "PIPELINE_ERROR", "{e3}");
    let why = e3["error"]["message"].as_str().unwrap();
    assert!(
        why.contains(&photo_url) && why.contains("cannot be decoded"),
        "{why}"
    );
    assert_eq!(
        wallet(&s, &org).await,
        (500, 0),
        "a failed re-render costs nothing"
    );
}
