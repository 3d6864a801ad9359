//! Campaign sets (issue 42, item 1) over real HTTP: a completed flat or editable ad remade
//! at other sizes (POST /v1/image-ads/{id}/resize), `sizes` on create, the set's
//! `size_set_id` and its list filter, an edit applied to every size, the wallet holding
//! the whole set or nothing being made, and bad sizes refused naming the item.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::dashboard_ads::top_up;
use crate::support::{Catalog, Org, TestServer, wait_settled};

fn create_body(c: &Catalog, reference: &str, editable: bool) -> Value {
    json!({"reference_ad_url": reference, "brand_id": c.brand, "product_id": c.product,
        "audience_id": c.audience, "editable": editable})
}

async fn wallet(s: &TestServer, org: &Org) -> (i64, i64) {
    adforge_api::store::query_as("SELECT balance_cents, held_cents FROM wallets WHERE org_id = ?")
        .bind(&org.id)
        .fetch_one(&s.db.read)
        .await
        .unwrap()
}

/// How many ads the organisation has (`total_count` of the list).
async fn ad_count(s: &TestServer, org: &Org) -> i64 {
    s.get(org, "/v1/image-ads").await.expect(200, None).body["total_count"]
        .as_i64()
        .unwrap()
}

/// The ads of set `set_id`, oldest first.
async fn set_of(s: &TestServer, org: &Org, set_id: &str) -> Vec<Value> {
    let page = s
        .get(org, &format!("/v1/image-ads?size_set_id={set_id}"))
        .await
        .expect(200, None);
    let mut ads = page.body["data"].as_array().unwrap().clone();
    ads.reverse();
    ads
}

/// The words a flat ad shows, by slot (its copy report).
fn shown_words(ad: &Value) -> BTreeMap<String, String> {
    ad["copy"]["slots"]
        .as_array()
        .unwrap_or_else(|| panic!("no copy report: {ad}"))
        .iter()
        .filter(|s| s["shown"] == true)
        .map(|s| {
            (
                s["slot"].as_str().unwrap().to_owned(),
                s["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The TEXT nodes of an editable ad's tree: node id → characters.
fn texts(tree: &Value) -> BTreeMap<String, String> {
    tree["nodes"]
        .as_object()
        .unwrap_or_else(|| panic!("no tree: {tree}"))
        .iter()
        .filter(|(_, n)| n["type"] == "TEXT")
        .map(|(id, n)| {
            (
                id.clone(),
                n["characters"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// Asserts a completed ad has the aspect of the size it was asked for.
#[track_caller]
fn assert_shape(ad: &Value, width: f64, height: f64) {
    assert_eq!(ad["status"], "completed", "{ad}");
    let (w, h) = (
        ad["width"].as_f64().unwrap(),
        ad["height"].as_f64().unwrap(),
    );
    let (asked, got) = (width / height, w / h);
    assert!(
        (got - asked).abs() / asked < 0.01,
        "{} is {w}×{h} ({got:.3}), asked {width}×{height} ({asked:.3})",
        ad["id"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_flat_and_editable_ad_are_remade_in_every_size_with_the_same_words() {
    let s = TestServer::start().await;
    let org = s.org_unlimited("Sets").await;
    let (c, reference) = s.ad_inputs(&org).await;
    top_up(&s, &org, 10_000).await;
    let flat = s
        .post(&org, "/v1/image-ads", create_body(&c, &reference, false))
        .await
        .expect(202, None)
        .id();
    let editable = s
        .post(&org, "/v1/image-ads", create_body(&c, &reference, true))
        .await
        .expect(202, None)
        .id();
    let flat_ad = wait_settled(&s, &org, &flat).await;
    let editable_ad = wait_settled(&s, &org, &editable).await;
    assert_eq!(flat_ad["status"], "completed", "{flat_ad}");
    assert_eq!(editable_ad["status"], "completed", "{editable_ad}");
    assert_eq!(flat_ad["size"], Value::Null, "at its reference's shape");
    assert_eq!(flat_ad["size_set_id"], Value::Null, "in no set yet");
    let before = wallet(&s, &org).await;

    let sizes = [
        ("9:16", 1080.0, 1920.0),
        ("", 1200.0, 628.0),
        ("300x250", 300.0, 250.0),
    ];
    let r = s
        .post(
            &org,
            &format!("/v1/image-ads/{flat}/resize"),
            json!({"sizes": ["9:16", {"width": 1200, "height": 628}, "300x250"]}),
        )
        .await
        .expect(202, None);
    assert_eq!(r.body["has_more"], false);
    assert_eq!(r.body["total_count"], 3);
    let made = r.body["data"].as_array().unwrap().clone();
    assert_eq!(made.len(), 3, "{}", r.body);
    for (ad, (name, w, h)) in made.iter().zip(sizes) {
        assert_eq!(ad["status"], "processing", "{ad}");
        assert_eq!(ad["sku_code"], "flat_image_ad");
        assert_eq!(
            ad["size_set_id"],
            flat.as_str(),
            "the source is the set's first ad"
        );
        assert_eq!(ad["size"]["width"].as_f64(), Some(w), "{ad}");
        assert_eq!(ad["size"]["height"].as_f64(), Some(h), "{ad}");
        let placement = if name.is_empty() {
            Value::Null
        } else {
            json!(name)
        };
        assert_eq!(
            ad["size"]["placement"], placement,
            "an explicit size has none"
        );
        assert_eq!(ad["product_id"], c.product.as_str());
    }
    assert_eq!(
        wallet(&s, &org).await,
        (before.0, before.1 + 300),
        "one flat price held per size"
    );
    let source = s
        .get(&org, &format!("/v1/image-ads/{flat}"))
        .await
        .expect(200, None);
    assert_eq!(
        source.body["data"]["size_set_id"],
        flat.as_str(),
        "the source joins its set"
    );

    let editable_sizes = [("4:5", 1080.0, 1350.0), ("16:9", 1920.0, 1080.0)];
    let r = s
        .post(
            &org,
            &format!("/v1/image-ads/{editable}/resize"),
            json!({"sizes": ["4:5", "16:9"]}),
        )
        .await
        .expect(202, None);
    let editable_made = r.body["data"].as_array().unwrap().clone();
    assert_eq!(editable_made.len(), 2, "{}", r.body);
    for ad in &editable_made {
        assert_eq!(ad["sku_code"], "editable_image_ad");
        assert_eq!(ad["size_set_id"], editable.as_str());
    }
    assert_eq!(
        wallet(&s, &org).await.1,
        before.1 + 300 + 800,
        "editable prices held"
    );

    // The set filter lists the source and its sizes, and only them.
    let set: Vec<String> = set_of(&s, &org, &flat)
        .await
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_owned())
        .collect();
    let mut expected = vec![flat.clone()];
    expected.extend(made.iter().map(|a| a["id"].as_str().unwrap().to_owned()));
    assert_eq!(set, expected);

    // Each size completes at its shape with the source's words.
    let words = shown_words(&flat_ad);
    assert!(!words.is_empty(), "{flat_ad}");
    for (ad, (_, w, h)) in made.iter().zip(sizes) {
        let done = wait_settled(&s, &org, ad["id"].as_str().unwrap()).await;
        assert_shape(&done, w, h);
        assert_eq!(
            shown_words(&done),
            words,
            "the same words in {}",
            done["id"]
        );
    }
    // The editable sizes keep the tree's node ids and words.
    let source_texts = texts(&editable_ad["current_json_tree"]);
    assert!(!source_texts.is_empty());
    for (ad, (_, w, h)) in editable_made.iter().zip(editable_sizes) {
        let done = wait_settled(&s, &org, ad["id"].as_str().unwrap()).await;
        assert_shape(&done, w, h);
        assert_eq!(
            texts(&done["current_json_tree"]),
            source_texts,
            "the same TEXT node ids and words in {}",
            done["id"]
        );
    }
    assert_eq!(
        wallet(&s, &org).await,
        (before.0 - 300 - 800, before.1),
        "each new ad charged once, its hold gone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sizes_on_create_make_the_ad_and_its_siblings_and_an_edit_reaches_every_size() {
    let s = TestServer::start().await;
    let org = s.org_unlimited("Sets on create").await;
    let (c, reference) = s.ad_inputs(&org).await;
    top_up(&s, &org, 10_000).await;
    let mut body = create_body(&c, &reference, true);
    body["sizes"] = json!(["9:16", "1200x628"]);
    let r = s.post(&org, "/v1/image-ads", body).await.expect(202, None);
    let first = r.id();
    assert_eq!(
        r.body["data"]["size"],
        Value::Null,
        "the first ad keeps its reference's shape"
    );
    assert_eq!(
        r.body["data"]["size_set_id"],
        first.as_str(),
        "it names its set"
    );
    assert_eq!(
        wallet(&s, &org).await,
        (10_000, 1_200),
        "one hold per ad of the set"
    );
    let set = set_of(&s, &org, &first).await;
    assert_eq!(set.len(), 3, "{set:?}");
    assert_eq!(set[0]["id"], first.as_str());
    let shapes = [(1080.0, 1920.0), (1200.0, 628.0)];
    for (ad, (w, h)) in set[1..].iter().zip(shapes) {
        assert_eq!(ad["size"]["width"].as_f64(), Some(w), "{ad}");
        assert_eq!(ad["size"]["height"].as_f64(), Some(h), "{ad}");
        assert_eq!(ad["sku_code"], "editable_image_ad");
    }
    let first_ad = wait_settled(&s, &org, &first).await;
    assert_eq!(first_ad["status"], "completed", "{first_ad}");
    let mut siblings = Vec::new();
    for (ad, (w, h)) in set[1..].iter().zip(shapes) {
        let done = wait_settled(&s, &org, ad["id"].as_str().unwrap()).await;
        assert_shape(&done, w, h);
        siblings.push(done);
    }
    // The same brief makes the same words, and the same node ids, in every size.
    let first_texts = texts(&first_ad["current_json_tree"]);
    for sibling in &siblings {
        assert_eq!(
            texts(&sibling["current_json_tree"]),
            first_texts,
            "{}",
            sibling["id"]
        );
    }

    // The headline (the largest type) edited in the first ad, applied to its siblings.
    let tree = first_ad["current_json_tree"].clone();
    let headline = tree["nodes"]
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
    let mut edited = tree.clone();
    edited["nodes"][&headline]["characters"] = json!("Ready for every trail");
    let p = s
        .patch(
            &org,
            &format!("/v1/image-ads/{first}"),
            json!({"current_json_tree": edited, "apply_to_siblings": true}),
        )
        .await
        .expect(200, None);
    assert_eq!(p.body["data"]["status"], "processing");
    for ad in std::iter::once(&first_ad).chain(&siblings) {
        let id = ad["id"].as_str().unwrap();
        let done = wait_settled(&s, &org, id).await;
        assert_eq!(done["status"], "completed", "{done}");
        let versions = s
            .get(&org, &format!("/v1/image-ads/{id}/versions"))
            .await
            .expect(200, None);
        let versions = versions.body["data"].as_array().unwrap();
        assert_eq!(versions.len(), 2, "a new version of {id}");
        let v2 = &versions[1]["json_tree"];
        assert_eq!(
            v2["nodes"][&headline]["characters"], "Ready for every trail",
            "{id}"
        );
        // Only the headline changed: every other text is as it was.
        let mut want = texts(&ad["current_json_tree"]);
        want.insert(headline.clone(), "Ready for every trail".into());
        assert_eq!(texts(v2), want, "{id}");
        assert_eq!(texts(&done["current_json_tree"]), want, "{id}");
    }
    // Edits are free: the set's three prices were charged once each.
    assert_eq!(wallet(&s, &org).await, (10_000 - 1_200, 0));

    // An ad in no set has no siblings to edit.
    let lone = s
        .post(&org, "/v1/image-ads", create_body(&c, &reference, true))
        .await
        .expect(202, None)
        .id();
    let lone_ad = wait_settled(&s, &org, &lone).await;
    let r = s
        .patch(
            &org,
            &format!("/v1/image-ads/{lone}"),
            json!({"current_json_tree": lone_ad["current_json_tree"], "apply_to_siblings": true}),
        )
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(
        r.body["error"]["details"][0]["field"], "apply_to_siblings",
        "{}",
        r.body
    );
    let versions = s
        .get(&org, &format!("/v1/image-ads/{lone}/versions"))
        .await
        .expect(200, None);
    assert_eq!(
        versions.body["data"].as_array().unwrap().len(),
        1,
        "no version made"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_above_the_balance_answers_402_and_creates_nothing() {
    let s = TestServer::start().await;
    let org = s.org_unlimited("Short").await;
    let (c, reference) = s.ad_inputs(&org).await;
    top_up(&s, &org, 350).await;
    // Four flat ads ($4.00) against $3.50.
    let mut body = create_body(&c, &reference, false);
    body["sizes"] = json!(["9:16", "1:1", "1.91:1"]);
    let r = s
        .post(&org, "/v1/image-ads", body)
        .await
        .expect(402, Some("INSUFFICIENT_BALANCE"));
    let msg = r.body["error"]["message"].as_str().unwrap();
    assert!(msg.contains("$4.00") && msg.contains("$3.50"), "{msg}");
    assert_eq!(ad_count(&s, &org).await, 0, "nothing created");
    assert_eq!(wallet(&s, &org).await, (350, 0), "nothing held");

    // One flat ad ($1.00, leaving $2.50), then three sizes of it ($3.00).
    let flat = s
        .post(&org, "/v1/image-ads", create_body(&c, &reference, false))
        .await
        .expect(202, None)
        .id();
    assert_eq!(wait_settled(&s, &org, &flat).await["status"], "completed");
    let r = s
        .post(
            &org,
            &format!("/v1/image-ads/{flat}/resize"),
            json!({"sizes": ["9:16", "1:1", "2:3"]}),
        )
        .await
        .expect(402, Some("INSUFFICIENT_BALANCE"));
    let msg = r.body["error"]["message"].as_str().unwrap();
    assert!(msg.contains("$3.00") && msg.contains("$2.50"), "{msg}");
    assert_eq!(ad_count(&s, &org).await, 1, "no size created");
    assert_eq!(wallet(&s, &org).await, (250, 0));
    let source = s
        .get(&org, &format!("/v1/image-ads/{flat}"))
        .await
        .expect(200, None);
    assert_eq!(
        source.body["data"]["size_set_id"],
        Value::Null,
        "no set started"
    );
    // Two sizes fit.
    s.post(
        &org,
        &format!("/v1/image-ads/{flat}/resize"),
        json!({"sizes": ["9:16", "1:1"]}),
    )
    .await
    .expect(202, None);
    assert_eq!(ad_count(&s, &org).await, 3);
    assert_eq!(wallet(&s, &org).await, (250, 200));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_sizes_are_refused_naming_the_item_and_only_completed_ads_resize() {
    // No workers: ads stay processing.
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org_unlimited("Bad sizes").await;
    let (c, reference) = s.ad_inputs(&org).await;
    top_up(&s, &org, 10_000).await;
    let ad = s
        .post(&org, "/v1/image-ads", create_body(&c, &reference, false))
        .await
        .expect(202, None)
        .id();
    let path = format!("/v1/image-ads/{ad}/resize");
    let eleven: Vec<Value> = (0..11)
        .map(|i| json!({"width": 500 + i, "height": 500}))
        .collect();
    for (sizes, field, needle) in [
        (json!([]), "sizes", "1 to 10"),
        (json!(eleven), "sizes", "at most 10"),
        (
            json!(["9:16", "banana"]),
            "sizes[1]",
            "`banana` is not a named placement",
        ),
        (
            json!([{"width": 2000, "height": 400}]),
            "sizes[0]",
            "1:4 to 4:1",
        ),
        (
            json!([{"width": 50, "height": 100}]),
            "sizes[0]",
            "100–7680",
        ),
        (json!([{"width": 1200}]), "sizes[0]", "`height`"),
        (
            json!([{"width": 1200, "height": 628, "dpi": 2}]),
            "sizes[0]",
            "`dpi`",
        ),
        (json!([42]), "sizes[0]", "named placement such as"),
        (
            json!(["1.91:1", {"width": 1080, "height": 1920}, "9:16"]),
            "sizes[2]",
            "as sizes[1] is",
        ),
    ] {
        let r = s
            .post(&org, &path, json!({ "sizes": sizes }))
            .await
            .expect(400, Some("VALIDATION_ERROR"));
        let d = &r.body["error"]["details"][0];
        assert_eq!(d["field"], field, "{sizes}: {}", r.body);
        assert!(
            d["message"].as_str().unwrap().contains(needle),
            "{sizes}: {}",
            r.body
        );
    }
    // The same on create, where nothing is made.
    let mut body = create_body(&c, &reference, false);
    body["sizes"] = json!(["4:5", "leaderboard"]);
    let r = s
        .post(&org, "/v1/image-ads", body)
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(
        r.body["error"]["details"][0]["field"], "sizes[1]",
        "{}",
        r.body
    );
    assert_eq!(ad_count(&s, &org).await, 1);
    // A processing ad cannot be resized yet; an unknown one is not found.
    s.post(&org, &path, json!({"sizes": ["9:16"]}))
        .await
        .expect(422, Some("IMAGE_AD_NOT_COMPLETED"));
    s.post(
        &org,
        "/v1/image-ads/ia_nope/resize",
        json!({"sizes": ["9:16"]}),
    )
    .await
    .expect(404, Some("IMAGE_AD_NOT_FOUND"));
    assert_eq!(ad_count(&s, &org).await, 1);
    assert_eq!(
        wallet(&s, &org).await,
        (10_000, 100),
        "only the first ad is held"
    );
}
