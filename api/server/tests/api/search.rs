//! `GET /v1/search`: grouping and order, prefix-first ranking, case folding, per-type limits,
//! brand scoping, archived and deleted items, labels and hints, resolve mode, and per-type
//! scopes.

use serde_json::{Value, json};

use crate::support::{Org, Reply, TestServer, urlencode};

/// What a test's catalog holds, created oldest to newest in this order.
struct World {
    org: Org,
    brand_a: String,
    brand_b: String,
    trail_runner: String,
    mountain_boot: String,
    sandal: String,
    trailhead_pack: String,
    v_trail_red: String,
    v_red_trail: String,
    a_trail_hikers: String,
    a_urban: String,
}

async fn world(server: &TestServer) -> World {
    let org = server.org_unlimited("Acme").await;
    let brand = |name: &'static str| {
        let org = &org;
        async move {
            server
                .post(org, "/v1/brands", json!({"name": name}))
                .await
                .expect(201, None)
                .id()
        }
    };
    let brand_a = brand("Acme").await;
    let brand_b = brand("Zenith").await;
    let product = |brand: &String, name: &'static str| {
        let (org, brand) = (&org, brand.clone());
        async move {
            server
                .post(
                    org,
                    "/v1/products",
                    json!({"brand_id": brand, "name": name}),
                )
                .await
                .expect(201, None)
                .id()
        }
    };
    let trail_runner = product(&brand_a, "Trail Runner").await;
    let mountain_boot = product(&brand_a, "Mountain Trail Boot").await;
    let sandal = product(&brand_a, "Sandal").await;
    let trailhead_pack = product(&brand_b, "trailhead Pack").await;
    let variant = |product: &String, name: &'static str| {
        let (org, product) = (&org, product.clone());
        async move {
            server
                .post(
                    org,
                    "/v1/product-variants",
                    json!({"product_id": product, "name": name}),
                )
                .await
                .expect(201, None)
                .id()
        }
    };
    let v_trail_red = variant(&sandal, "Trail Red 42").await;
    let v_red_trail = variant(&trail_runner, "Red 43 TRAIL").await;
    let audience = |product: &String, name: &'static str| {
        let (org, product) = (&org, product.clone());
        async move {
            server
                .post(
                    org,
                    "/v1/audiences",
                    json!({"product_id": product, "name": name}),
                )
                .await
                .expect(201, None)
                .id()
        }
    };
    let a_trail_hikers = audience(&mountain_boot, "Trail hikers").await;
    let a_urban = audience(&trail_runner, "Urban commuters").await;
    World {
        org,
        brand_a,
        brand_b,
        trail_runner,
        mountain_boot,
        sandal,
        trailhead_pack,
        v_trail_red,
        v_red_trail,
        a_trail_hikers,
        a_urban,
    }
}

async fn search_with(server: &TestServer, key: &str, query: &str) -> Reply {
    server
        .call(
            reqwest::Method::GET,
            &format!("/v1/search?{query}"),
            Some(key),
            None,
        )
        .await
}

/// `(object, id)` of each hit, in order.
fn hits(reply: &Reply) -> Vec<(String, String)> {
    reply.body["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data array: {}", reply.body))
        .iter()
        .map(|h| {
            (
                h["object"].as_str().expect("object").to_string(),
                h["id"].as_str().expect("id").to_string(),
            )
        })
        .collect()
}

fn hit(object: &str, id: &str) -> (String, String) {
    (object.to_string(), id.to_string())
}

async fn search(server: &TestServer, w: &World, query: &str) -> Vec<(String, String)> {
    hits(
        &search_with(server, &w.org.key, query)
            .await
            .expect(200, None),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_by_type_in_the_requested_order_with_prefix_matches_first() {
    let server = TestServer::start().await;
    let w = world(&server).await;
    let expected = vec![
        // Products: prefix matches newest first, then the substring match (newer than
        // "Trail Runner", so ranking, not recency, puts it last).
        hit("product", &w.trailhead_pack),
        hit("product", &w.trail_runner),
        hit("product", &w.mountain_boot),
        hit("product_variant", &w.v_trail_red),
        hit("product_variant", &w.v_red_trail),
        hit("audience", &w.a_trail_hikers),
    ];
    for q in ["trail", "TRAIL", "tRaIl"] {
        assert_eq!(
            search(&server, &w, &format!("query={q}")).await,
            expected,
            "query={q}"
        );
    }
    // `types` picks and orders the groups.
    let got = search(&server, &w, "query=trail&types=audience,product").await;
    assert_eq!(
        got,
        vec![
            hit("audience", &w.a_trail_hikers),
            hit("product", &w.trailhead_pack),
            hit("product", &w.trail_runner),
            hit("product", &w.mountain_boot),
        ]
    );
    let got = search(&server, &w, "query=trail&types=product_variant").await;
    assert_eq!(
        got,
        vec![
            hit("product_variant", &w.v_trail_red),
            hit("product_variant", &w.v_red_trail)
        ]
    );
    // Types without items yet contribute nothing, and are not an error.
    assert_eq!(
        search(
            &server,
            &w,
            "query=trail&types=design_pack,swipe_file,image_ad"
        )
        .await,
        vec![]
    );
    // The query is a literal substring, not a pattern.
    for q in ["%", "_", "tr%l", "t_ail"] {
        assert_eq!(
            search(&server, &w, &format!("query={}", urlencode(q))).await,
            vec![],
            "query={q}"
        );
    }
    // An inner word matches; a non-match finds nothing.
    assert_eq!(
        search(&server, &w, "query=commuters").await,
        vec![hit("audience", &w.a_urban)]
    );
    assert_eq!(search(&server, &w, "query=kayak").await, vec![]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_ascii_names_fold_case_and_rank_prefixes() {
    let server = TestServer::start().await;
    let org = server.org_unlimited("Acme").await;
    let brand = server
        .post(&org, "/v1/brands", json!({"name": "B"}))
        .await
        .expect(201, None)
        .id();
    let mut ids = Vec::new();
    for name in ["Été Sandal", "Sac été", "Ete plain"] {
        ids.push(
            server
                .post(
                    &org,
                    "/v1/products",
                    json!({"brand_id": brand, "name": name}),
                )
                .await
                .expect(201, None)
                .id(),
        );
    }
    for q in ["été", "ÉTÉ", "Été"] {
        let r = search_with(
            &server,
            &org.key,
            &format!("types=product&query={}", urlencode(q)),
        )
        .await
        .expect(200, None);
        assert_eq!(
            hits(&r),
            vec![hit("product", &ids[0]), hit("product", &ids[1])],
            "query={q}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limit_applies_per_type_and_is_bounded() {
    let server = TestServer::start().await;
    let w = world(&server).await;
    assert_eq!(
        search(&server, &w, "query=trail&limit=1").await,
        vec![
            hit("product", &w.trailhead_pack),
            hit("product_variant", &w.v_trail_red),
            hit("audience", &w.a_trail_hikers)
        ]
    );
    assert_eq!(
        search(&server, &w, "query=trail&limit=2&types=product")
            .await
            .len(),
        2
    );
    assert_eq!(search(&server, &w, "query=trail&limit=25").await.len(), 6);
    // Default 5 per type.
    let brand = w.brand_a.clone();
    for i in 0..7 {
        server
            .post(
                &w.org,
                "/v1/products",
                json!({"brand_id": brand, "name": format!("Widget {i}")}),
            )
            .await
            .expect(201, None);
    }
    let got = search(&server, &w, "query=widget&types=product").await;
    assert_eq!(got.len(), 5);
    for bad in ["0", "26", "-1", "abc", "2.5", ""] {
        let r = search_with(&server, &w.org.key, &format!("query=trail&limit={bad}"))
            .await
            .expect(400, Some("VALIDATION_ERROR"));
        assert_eq!(
            r.body["error"]["details"][0]["field"], "limit",
            "limit={bad}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validates_query_types_and_parameters() {
    let server = TestServer::start().await;
    let w = world(&server).await;
    search_with(&server, &w.org.key, &format!("query={}", "a".repeat(200)))
        .await
        .expect(200, None);
    let r = search_with(&server, &w.org.key, &format!("query={}", "a".repeat(201)))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(r.body["error"]["details"][0]["field"], "query");
    // 200 characters, not bytes.
    search_with(
        &server,
        &w.org.key,
        &format!("query={}", urlencode(&"é".repeat(200))),
    )
    .await
    .expect(200, None);
    for bad in ["brand", "product,images", "Product", ""] {
        let r = search_with(&server, &w.org.key, &format!("query=a&types={bad}"))
            .await
            .expect(400, Some("VALIDATION_ERROR"));
        assert_eq!(
            r.body["error"]["details"][0]["field"], "types",
            "types={bad}"
        );
    }
    let r = search_with(&server, &w.org.key, "query=a&types=product,brand")
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert!(
        r.body["error"]["details"][0]["message"]
            .as_str()
            .unwrap()
            .contains("product_variant"),
        "allowed types named"
    );
    let r = search_with(&server, &w.org.key, "q=trail")
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(r.body["error"]["details"][0]["field"], "q");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_query_returns_the_most_recent_of_each_type() {
    let server = TestServer::start().await;
    let w = world(&server).await;
    let expected = vec![
        hit("product", &w.trailhead_pack),
        hit("product", &w.sandal),
        hit("product_variant", &w.v_red_trail),
        hit("product_variant", &w.v_trail_red),
        hit("audience", &w.a_urban),
        hit("audience", &w.a_trail_hikers),
    ];
    assert_eq!(search(&server, &w, "limit=2").await, expected);
    assert_eq!(search(&server, &w, "limit=2&query=").await, expected);
    let all = search(&server, &w, "").await;
    assert_eq!(all.iter().filter(|(o, _)| o == "product").count(), 4);
    assert_eq!(all.len(), 8);
    // A renamed item matches by its new name only.
    server
        .patch(
            &w.org,
            &format!("/v1/products/{}", w.sandal),
            json!({"name": "Flip Flop"}),
        )
        .await
        .expect(200, None);
    assert_eq!(
        search(&server, &w, "types=product&query=sandal").await,
        vec![]
    );
    assert_eq!(
        search(&server, &w, "types=product&query=flip").await,
        vec![hit("product", &w.sandal)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brand_id_limits_results_to_one_brand() {
    let server = TestServer::start().await;
    let w = world(&server).await;
    assert_eq!(
        search(&server, &w, &format!("query=trail&brand_id={}", w.brand_a)).await,
        vec![
            hit("product", &w.trail_runner),
            hit("product", &w.mountain_boot),
            hit("product_variant", &w.v_trail_red),
            hit("product_variant", &w.v_red_trail),
            hit("audience", &w.a_trail_hikers),
        ]
    );
    assert_eq!(
        search(&server, &w, &format!("query=trail&brand_id={}", w.brand_b)).await,
        vec![hit("product", &w.trailhead_pack)]
    );
    assert_eq!(
        search(&server, &w, "query=trail&brand_id=brand_unknown").await,
        vec![]
    );
    // In resolve mode too.
    let got = search(
        &server,
        &w,
        &format!(
            "ids={},{}&brand_id={}",
            w.trail_runner, w.trailhead_pack, w.brand_b
        ),
    )
    .await;
    assert_eq!(got, vec![hit("product", &w.trailhead_pack)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archived_and_deleted_items_are_excluded() {
    let server = TestServer::start().await;
    let w = world(&server).await;
    // Archiving Trail Runner cascades to its variant "Red 43 TRAIL" and audience "Urban commuters".
    let r = server
        .post(
            &w.org,
            &format!("/v1/products/{}/archive?cascade=true", w.trail_runner),
            json!({}),
        )
        .await
        .expect(200, None);
    assert_eq!(
        r.body["children"],
        json!({"products": 0, "product_variants": 1, "audiences": 1})
    );
    assert_eq!(
        search(&server, &w, "query=trail").await,
        vec![
            hit("product", &w.trailhead_pack),
            hit("product", &w.mountain_boot),
            hit("product_variant", &w.v_trail_red),
            hit("audience", &w.a_trail_hikers),
        ]
    );
    assert_eq!(search(&server, &w, "query=urban").await, vec![]);
    assert!(
        !search(&server, &w, "limit=25").await.iter().any(|(_, id)| [
            &w.trail_runner,
            &w.v_red_trail,
            &w.a_urban
        ]
        .contains(&id))
    );
    // Unarchiving brings them back.
    server
        .post(
            &w.org,
            &format!("/v1/products/{}/unarchive", w.trail_runner),
            json!({}),
        )
        .await
        .expect(200, None);
    assert_eq!(
        search(&server, &w, "query=urban").await,
        vec![hit("audience", &w.a_urban)]
    );
    assert_eq!(search(&server, &w, "query=trail").await.len(), 6);

    // Deleted items are gone, from search and from resolve mode.
    server
        .delete(&w.org, &format!("/v1/product-variants/{}", w.v_trail_red))
        .await
        .expect(200, None);
    server
        .delete(
            &w.org,
            &format!("/v1/products/{}?cascade=true", w.mountain_boot),
        )
        .await
        .expect(200, None);
    assert_eq!(
        search(&server, &w, "query=trail").await,
        vec![
            hit("product", &w.trailhead_pack),
            hit("product", &w.trail_runner),
            hit("product_variant", &w.v_red_trail)
        ]
    );
    let got = search(
        &server,
        &w,
        &format!(
            "ids={},{},{},{}",
            w.v_trail_red, w.mountain_boot, w.a_trail_hikers, w.sandal
        ),
    )
    .await;
    assert_eq!(got, vec![hit("product", &w.sandal)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn labels_and_hints_follow_the_spec_table() {
    let server = TestServer::start().await;
    let w = world(&server).await;
    let r = search_with(&server, &w.org.key, "query=trail")
        .await
        .expect(200, None);
    let data = r.body["data"].as_array().unwrap();
    let by_id = |id: &str| {
        data.iter()
            .find(|h| h["id"] == id)
            .unwrap_or_else(|| panic!("{id} missing"))
            .clone()
    };
    let expect = |h: Value, object: &str, label: &str, hint: Value| {
        assert_eq!(h["object"], object, "{h}");
        assert_eq!(h["label"], label, "{h}");
        assert_eq!(h["hint"], hint, "{h}");
        assert_eq!(h["thumbnail_url"], Value::Null, "{h}");
        let mut keys: Vec<&str> = h.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["hint", "id", "label", "object", "thumbnail_url"]);
    };
    expect(
        by_id(&w.trail_runner),
        "product",
        "Trail Runner",
        Value::Null,
    );
    expect(
        by_id(&w.trailhead_pack),
        "product",
        "trailhead Pack",
        Value::Null,
    );
    expect(
        by_id(&w.v_trail_red),
        "product_variant",
        "Trail Red 42",
        json!("Sandal"),
    );
    expect(
        by_id(&w.v_red_trail),
        "product_variant",
        "Red 43 TRAIL",
        json!("Trail Runner"),
    );
    expect(
        by_id(&w.a_trail_hikers),
        "audience",
        "Trail hikers",
        json!("Mountain Trail Boot"),
    );
    assert!(
        r.body["meta"]["request_id"]
            .as_str()
            .unwrap()
            .starts_with("req_")
    );
    // A renamed product's new name is the hint of its children.
    server
        .patch(
            &w.org,
            &format!("/v1/products/{}", w.sandal),
            json!({"name": "Beach Sandal"}),
        )
        .await
        .expect(200, None);
    let r = search_with(&server, &w.org.key, &format!("ids={}", w.v_trail_red))
        .await
        .expect(200, None);
    assert_eq!(r.body["data"][0]["hint"], "Beach Sandal");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolve_mode_returns_the_given_ids_in_order() {
    let server = TestServer::start().await;
    let w = world(&server).await;
    let other = server.org_unlimited("Other").await;
    let theirs = server.catalog(&other).await;
    let ids = [
        w.a_urban.as_str(),
        w.sandal.as_str(),
        "prod_doesnotexist",
        theirs.product.as_str(),
        w.v_red_trail.as_str(),
        "nonsense",
        theirs.variant.as_str(),
        w.trailhead_pack.as_str(),
        theirs.audience.as_str(),
        w.brand_a.as_str(),
    ]
    .join(",");
    let expected = vec![
        hit("audience", &w.a_urban),
        hit("product", &w.sandal),
        hit("product_variant", &w.v_red_trail),
        hit("product", &w.trailhead_pack),
    ];
    // query and limit are ignored.
    assert_eq!(search(&server, &w, &format!("ids={ids}")).await, expected);
    assert_eq!(
        search(&server, &w, &format!("ids={ids}&query=zzz&limit=1")).await,
        expected
    );
    let r = search_with(&server, &w.org.key, &format!("ids={}", w.v_red_trail))
        .await
        .expect(200, None);
    assert_eq!(r.body["data"][0]["label"], "Red 43 TRAIL");
    assert_eq!(r.body["data"][0]["hint"], "Trail Runner");
    // The other organisation resolves its own ids only.
    let got = hits(
        &search_with(&server, &other.key, &format!("ids={ids}"))
            .await
            .expect(200, None),
    );
    assert_eq!(
        got,
        vec![
            hit("product", &theirs.product),
            hit("product_variant", &theirs.variant),
            hit("audience", &theirs.audience)
        ]
    );
    // At most 100 ids.
    let hundred: Vec<String> = (0..100).map(|i| format!("prod_{i}")).collect();
    assert_eq!(
        search(&server, &w, &format!("ids={}", hundred.join(","))).await,
        vec![]
    );
    let many: Vec<String> = (0..101).map(|i| format!("prod_{i}")).collect();
    let r = search_with(&server, &w.org.key, &format!("ids={}", many.join(",")))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(r.body["error"]["details"][0]["field"], "ids");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_type_needs_its_read_scope() {
    let server = TestServer::start().await;
    let w = world(&server).await;
    let products_only = server.key(&w.org.id, "products:read", Some(10_000)).await;
    let got = hits(
        &search_with(&server, &products_only, "query=trail")
            .await
            .expect(200, None),
    );
    assert_eq!(
        got,
        vec![
            hit("product", &w.trailhead_pack),
            hit("product", &w.trail_runner),
            hit("product", &w.mountain_boot)
        ]
    );
    let got = hits(
        &search_with(
            &server,
            &products_only,
            &format!("ids={},{}", w.v_red_trail, w.sandal),
        )
        .await
        .expect(200, None),
    );
    assert_eq!(got, vec![hit("product", &w.sandal)]);
    let r = search_with(
        &server,
        &products_only,
        "query=trail&types=product_variant,audience",
    )
    .await;
    r.expect(403, Some("INSUFFICIENT_PERMISSIONS"));

    let children = server
        .key(
            &w.org.id,
            "product_variants:read,audiences:read",
            Some(10_000),
        )
        .await;
    let got = hits(
        &search_with(&server, &children, "query=trail")
            .await
            .expect(200, None),
    );
    assert_eq!(
        got,
        vec![
            hit("product_variant", &w.v_trail_red),
            hit("product_variant", &w.v_red_trail),
            hit("audience", &w.a_trail_hikers)
        ]
    );

    for scopes in [
        "brands:read",
        "brands:read,products:write,images:read",
        "products:write",
    ] {
        let key = server.key(&w.org.id, scopes, Some(10_000)).await;
        search_with(&server, &key, "query=trail")
            .await
            .expect(403, Some("INSUFFICIENT_PERMISSIONS"));
        search_with(&server, &key, &format!("ids={}", w.sandal))
            .await
            .expect(403, Some("INSUFFICIENT_PERMISSIONS"));
    }
}
