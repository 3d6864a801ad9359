//! Paging as a property: for random page sizes, following `starting_after` from a first
//! page reaches exactly the items its `total_count` counted, newest first, without
//! duplicates, even while items are inserted between pages. Also the `limit` and cursor
//! rules, unknown parameters, and the facet rules on `/v1/images`.
//!
//! The seed is printed; set `PAGING_SEED` to replay a failure.

use std::collections::{BTreeMap, HashSet};

use serde_json::json;

use crate::support::{Catalog, Org, Reply, TestServer, XorShift, ids_of, png};

fn seed() -> u64 {
    let seed = std::env::var("PAGING_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    println!("paging seed: {seed} (replay with PAGING_SEED={seed})");
    seed
}

/// A list endpoint and how to add one item to it.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Brands,
    Products,
    Variants,
    Audiences,
    Images,
}

impl Kind {
    const ALL: [Kind; 5] = [
        Kind::Brands,
        Kind::Products,
        Kind::Variants,
        Kind::Audiences,
        Kind::Images,
    ];

    fn list(self) -> &'static str {
        match self {
            Kind::Brands => "/v1/brands",
            Kind::Products => "/v1/products",
            Kind::Variants => "/v1/product-variants",
            Kind::Audiences => "/v1/audiences",
            Kind::Images => "/v1/images",
        }
    }

    async fn create(self, server: &TestServer, org: &Org, cat: &Catalog, n: usize) -> String {
        let name = format!("Item {n}");
        match self {
            Kind::Brands => server.post(org, "/v1/brands", json!({"name": name})).await,
            Kind::Products => {
                server
                    .post(
                        org,
                        "/v1/products",
                        json!({"brand_id": cat.brand, "name": name}),
                    )
                    .await
            }
            Kind::Variants => {
                server
                    .post(
                        org,
                        "/v1/product-variants",
                        json!({"product_id": cat.product, "name": name}),
                    )
                    .await
            }
            Kind::Audiences => {
                server
                    .post(
                        org,
                        "/v1/audiences",
                        json!({"product_id": cat.product, "name": name}),
                    )
                    .await
            }
            Kind::Images => {
                server
                    .upload(org, png(2, 2, [n as u8, 0, 0, 255]), &[])
                    .await
            }
        }
        .expect(201, None)
        .id()
    }
}

/// Pages through `kind`'s list with page size `limit`, inserting 0–2 items between page
/// fetches; `live` holds every item's id, oldest first, and grows with the inserts.
async fn check_paging(
    server: &TestServer,
    org: &Org,
    cat: &Catalog,
    kind: Kind,
    limit: u64,
    rng: &mut XorShift,
    live: &mut Vec<String>,
) {
    let ctx = format!("{kind:?} limit={limit}");
    let expected: Vec<String> = live.iter().rev().cloned().collect();
    let mut seen: Vec<String> = Vec::new();
    let mut created_at: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    let mut first_total = None;
    loop {
        let path = match &cursor {
            None => format!("{}?limit={limit}", kind.list()),
            Some(c) => format!("{}?limit={limit}&starting_after={c}", kind.list()),
        };
        let page = server.get(org, &path).await.expect(200, None);
        let total = page.body["total_count"].as_i64().expect("total_count");
        assert_eq!(
            total,
            live.len() as i64,
            "{ctx}: total_count counts every item now present"
        );
        first_total.get_or_insert(total);
        let data = page.body["data"].as_array().expect("data");
        assert!(
            data.len() as u64 <= limit,
            "{ctx}: page of {} > limit",
            data.len()
        );
        for item in data {
            seen.push(item["id"].as_str().expect("id").to_string());
            created_at.push(item["created_at"].as_str().expect("created_at").to_string());
        }
        let has_more = page.body["has_more"].as_bool().expect("has_more");
        if !has_more {
            break;
        }
        assert!(!data.is_empty(), "{ctx}: empty page with has_more");
        cursor = Some(seen.last().expect("an item").clone());
        for _ in 0..rng.range(0, 2) {
            let n = live.len();
            live.push(kind.create(server, org, cat, n).await);
        }
    }
    let distinct: HashSet<&String> = seen.iter().collect();
    assert_eq!(distinct.len(), seen.len(), "{ctx}: duplicates across pages");
    assert_eq!(
        seen.len() as i64,
        first_total.expect("a page"),
        "{ctx}: union size differs from first total_count"
    );
    assert_eq!(
        seen, expected,
        "{ctx}: not exactly the first page's items, newest first"
    );
    for w in created_at.windows(2) {
        assert!(
            w[0] >= w[1],
            "{ctx}: created_at increases: {} then {}",
            w[0],
            w[1]
        );
    }
    // has_more was true on every page but the last: otherwise the loop would have ended
    // before reaching every item, which the equality above rules out.
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paging_reaches_exactly_the_counted_items_newest_first_despite_inserts() {
    const N: usize = 57;
    let seed = seed();
    let mut rng = XorShift::new(seed);
    let server = TestServer::start().await;
    let org = server.org_unlimited("Acme").await;
    let cat = server.catalog(&org).await;
    for kind in Kind::ALL {
        // The catalog made one brand, product, variant and audience.
        let mut live: Vec<String> = match kind {
            Kind::Brands => vec![cat.brand.clone()],
            Kind::Products => vec![cat.product.clone()],
            Kind::Variants => vec![cat.variant.clone()],
            Kind::Audiences => vec![cat.audience.clone()],
            Kind::Images => vec![],
        };
        while live.len() < N {
            let n = live.len();
            live.push(kind.create(&server, &org, &cat, n).await);
        }
        // Edge sizes always, plus random ones.
        let mut limits = vec![1, N as u64 - 1, 100];
        limits.extend((0..3).map(|_| rng.range(2, 40)));
        for limit in limits {
            check_paging(&server, &org, &cat, kind, limit, &mut rng, &mut live).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limit_defaults_to_20_and_is_bounded() {
    let server = TestServer::start().await;
    let org = server.org_unlimited("Acme").await;
    let cat = server.catalog(&org).await;
    let mut ids = vec![cat.product.clone()];
    for n in 1..25 {
        ids.push(Kind::Products.create(&server, &org, &cat, n).await);
    }
    ids.reverse();
    let r = server.get(&org, "/v1/products").await.expect(200, None);
    assert_eq!(ids_of(&r), ids[..20].to_vec());
    assert_eq!(
        (r.body["has_more"].as_bool(), r.body["total_count"].as_i64()),
        (Some(true), Some(25))
    );
    let r = server
        .get(&org, "/v1/products?limit=100")
        .await
        .expect(200, None);
    assert_eq!(ids_of(&r), ids);
    assert_eq!(r.body["has_more"], false);
    let r = server
        .get(&org, "/v1/products?limit=25")
        .await
        .expect(200, None);
    assert_eq!(r.body["has_more"], false, "exactly the last item: no more");
    let r = server
        .get(&org, "/v1/products?limit=24")
        .await
        .expect(200, None);
    assert_eq!(r.body["has_more"], true);
    let r = server
        .get(
            &org,
            &format!("/v1/products?limit=24&starting_after={}", ids[23]),
        )
        .await
        .expect(200, None);
    assert_eq!(ids_of(&r), vec![ids[24].clone()]);
    assert_eq!(r.body["has_more"], false);
    let r = server
        .get(&org, &format!("/v1/products?starting_after={}", ids[24]))
        .await
        .expect(200, None);
    assert_eq!(r.body["data"], json!([]));
    assert_eq!(
        (r.body["has_more"].as_bool(), r.body["total_count"].as_i64()),
        (Some(false), Some(25))
    );
    for list in [
        "/v1/brands",
        "/v1/products",
        "/v1/product-variants",
        "/v1/audiences",
        "/v1/images",
    ] {
        server
            .get(&org, &format!("{list}?limit=1"))
            .await
            .expect(200, None);
        server
            .get(&org, &format!("{list}?limit=100"))
            .await
            .expect(200, None);
        for bad in ["0", "101", "abc", "-1", "1.5", "", "1e2"] {
            let r = server
                .get(&org, &format!("{list}?limit={bad}"))
                .await
                .expect(400, Some("VALIDATION_ERROR"));
            assert_eq!(
                r.body["error"]["details"][0]["field"], "limit",
                "{list}?limit={bad}"
            );
        }
        let r = server
            .get(&org, &format!("{list}?limit=5&limit=6"))
            .await
            .expect(400, Some("VALIDATION_ERROR"));
        assert_eq!(r.body["error"]["details"][0]["field"], "limit");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starting_after_must_be_an_id_of_that_list() {
    let seed = seed();
    let mut rng = XorShift::new(seed);
    let server = TestServer::start().await;
    let org = server.org_unlimited("Acme").await;
    let cat = server.catalog(&org).await;
    let image = server
        .upload(&org, png(2, 2, [0, 0, 0, 255]), &[])
        .await
        .expect(201, None)
        .id();
    let own: [(&str, &String); 5] = [
        ("/v1/brands", &cat.brand),
        ("/v1/products", &cat.product),
        ("/v1/product-variants", &cat.variant),
        ("/v1/audiences", &cat.audience),
        ("/v1/images", &image),
    ];
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_";
    for (list, id) in own {
        server
            .get(&org, &format!("{list}?starting_after={id}"))
            .await
            .expect(200, None);
        let random: String = (0..rng.range(1, 30))
            .map(|_| alphabet[rng.range(0, alphabet.len() as u64 - 1) as usize] as char)
            .collect();
        let mut bad = vec![random, String::new(), format!("{id}x"), id.to_uppercase()];
        // Ids of every other type.
        bad.extend(
            own.iter()
                .filter(|(l, _)| *l != list)
                .map(|(_, i)| (*i).clone()),
        );
        for b in bad {
            let r = server
                .get(&org, &format!("{list}?starting_after={b}"))
                .await;
            assert_eq!(
                r.status.as_u16(),
                400,
                "{list}?starting_after={b}: {}",
                r.body
            );
            assert_eq!(r.code(), "VALIDATION_ERROR");
            assert_eq!(
                r.body["error"]["details"][0]["field"], "starting_after",
                "{list}?starting_after={b}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_query_parameters_are_rejected_naming_the_allowed_ones() {
    let server = TestServer::start().await;
    let org = server.org_unlimited("Acme").await;
    for (list, bogus) in [
        ("/v1/brands", "page"),
        ("/v1/products", "limt"),
        ("/v1/product-variants", "brand_id"),
        ("/v1/audiences", "offset"),
        ("/v1/images", "ending_before"),
        ("/v1/products", "ids"),
    ] {
        let r = server
            .get(&org, &format!("{list}?{bogus}=1"))
            .await
            .expect(400, Some("VALIDATION_ERROR"));
        let d = &r.body["error"]["details"][0];
        assert_eq!(d["field"], bogus, "{list}");
        let msg = d["message"].as_str().unwrap();
        assert!(
            msg.contains("limit") && msg.contains("starting_after"),
            "{list}: allowed ones named: {msg}"
        );
    }
    // Facets on a list without dimensions.
    server
        .get(&org, "/v1/products?facets=brand_id")
        .await
        .expect(400, Some("VALIDATION_ERROR"));
}

/// Uploads an image with the given type and product; returns its id.
async fn image(server: &TestServer, org: &Org, ty: Option<&str>, product: Option<&str>) -> String {
    let mut f = Vec::new();
    if let Some(t) = ty {
        f.push(("image_type", t));
    }
    if let Some(p) = product {
        f.push(("product_id", p));
    }
    server
        .upload(org, png(2, 2, [9, 9, 9, 255]), &f)
        .await
        .expect(201, None)
        .id()
}

fn facet(r: &Reply) -> Vec<(String, i64)> {
    r.body["facets"]["image_type"]
        .as_array()
        .unwrap_or_else(|| panic!("no image_type facet: {}", r.body))
        .iter()
        .map(|v| {
            (
                v["value"].as_str().expect("value").to_string(),
                v["count"].as_i64().expect("count"),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_facets_follow_the_shared_rules() {
    let seed = seed();
    let mut rng = XorShift::new(seed);
    let server = TestServer::start().await;
    let org = server.org_unlimited("Acme").await;
    let cat = server.catalog(&org).await;
    let p2 = server
        .post(
            &org,
            "/v1/products",
            json!({"brand_id": cat.brand, "name": "P2"}),
        )
        .await
        .expect(201, None)
        .id();
    let products = [Some(cat.product.as_str()), Some(p2.as_str()), None];
    let types = [
        Some("product"),
        Some("logo"),
        Some("lifestyle"),
        Some("background"),
        None,
    ];
    // Random images, remembered as (id, type, product).
    let mut items: Vec<(String, Option<&str>, Option<&str>)> = Vec::new();
    for _ in 0..30 {
        let ty = types[rng.range(0, types.len() as u64 - 1) as usize];
        let pr = products[rng.range(0, products.len() as u64 - 1) as usize];
        items.push((image(&server, &org, ty, pr).await, ty, pr));
    }

    // Opt-in.
    let r = server.get(&org, "/v1/images").await.expect(200, None);
    assert!(
        r.body.get("facets").is_none(),
        "facets present without being asked for"
    );

    // Random filter combinations: counts are exact, ordered by count, without zeroes, and
    // apply every filter but the dimension's own.
    let all_types = ["product", "lifestyle", "logo", "background", "other"];
    for round in 0..12 {
        let type_filter: Vec<&str> = all_types
            .iter()
            .copied()
            .filter(|_| rng.range(0, 2) == 0)
            .collect();
        let product_filter: Vec<&str> = [cat.product.as_str(), p2.as_str()]
            .into_iter()
            .filter(|_| rng.range(0, 2) == 0)
            .collect();
        let mut query = vec![
            "facets=image_type".to_string(),
            format!("limit={}", rng.range(1, 5)),
        ];
        if !type_filter.is_empty() {
            query.push(format!("image_type={}", type_filter.join(",")));
        }
        if !product_filter.is_empty() {
            query.push(format!("product_id={}", product_filter.join(",")));
        }
        let query = query.join("&");
        let by_product = |p: &Option<&str>| {
            product_filter.is_empty() || p.is_some_and(|p| product_filter.contains(&p))
        };
        let by_type = |t: &Option<&str>| {
            type_filter.is_empty() || t.is_some_and(|t| type_filter.contains(&t))
        };
        let mut expected: BTreeMap<String, i64> = BTreeMap::new();
        for (_, t, p) in &items {
            if let (Some(t), true) = (t, by_product(p)) {
                *expected.entry(t.to_string()).or_default() += 1;
            }
        }
        let matching = items
            .iter()
            .filter(|(_, t, p)| by_type(t) && by_product(p))
            .count();
        let r = server
            .get(&org, &format!("/v1/images?{query}"))
            .await
            .expect(200, None);
        let got = facet(&r);
        assert_eq!(
            r.body["total_count"].as_i64(),
            Some(matching as i64),
            "round {round}: ?{query}"
        );
        assert!(
            got.windows(2).all(|w| w[0].1 >= w[1].1),
            "round {round}: not by count: {got:?}"
        );
        assert!(
            got.iter().all(|(_, c)| *c > 0),
            "round {round}: zero count listed: {got:?}"
        );
        let got_map: BTreeMap<String, i64> = got.iter().cloned().collect();
        assert_eq!(got_map.len(), got.len(), "round {round}: repeated value");
        assert_eq!(got_map, expected, "round {round}: ?{query}");
        // Page size and cursor change the page, never the counts.
        let first = ids_of(&r);
        if let Some(last) = first.last() {
            let r2 = server
                .get(&org, &format!("/v1/images?{query}&starting_after={last}"))
                .await
                .expect(200, None);
            assert_eq!(
                facet(&r2),
                got,
                "round {round}: counts changed with the cursor"
            );
        }
    }

    // Each requested dimension is present even when nothing matches.
    let r = server
        .get(&org, "/v1/images?facets=image_type&image_type=other")
        .await
        .expect(200, None);
    assert_eq!(r.body["total_count"], 0);
    assert!(
        !facet(&r).is_empty(),
        "other types still counted under an image_type filter"
    );
    let r = server
        .get(
            &org,
            "/v1/images?facets=image_type&search=nothing-matches-this",
        )
        .await
        .expect(200, None);
    assert_eq!(r.body["facets"], json!({"image_type": []}));
    // Asking twice gives one dimension; an unknown one is named with the allowed ones.
    let r = server
        .get(&org, "/v1/images?facets=image_type,image_type")
        .await
        .expect(200, None);
    assert_eq!(r.body["facets"].as_object().unwrap().len(), 1);
    for bad in ["product_id", "format", "image_type,colour"] {
        let r = server
            .get(&org, &format!("/v1/images?facets={bad}"))
            .await
            .expect(400, Some("VALIDATION_ERROR"));
        let d = &r.body["error"]["details"][0];
        assert_eq!(d["field"], "facets", "facets={bad}");
        assert!(
            d["message"].as_str().unwrap().contains("image_type"),
            "facets={bad}: {d}"
        );
    }
    // The facet keys and values are valid filter parameters and values.
    let r = server
        .get(&org, "/v1/images?facets=image_type")
        .await
        .expect(200, None);
    for (value, count) in facet(&r) {
        let f = server
            .get(&org, &format!("/v1/images?image_type={value}"))
            .await
            .expect(200, None);
        assert_eq!(
            f.body["total_count"].as_i64(),
            Some(count),
            "image_type={value}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_mode_ignores_the_cursor() {
    let server = TestServer::start().await;
    let org = server.org_unlimited("Acme").await;
    let mut ids = Vec::new();
    for ty in ["product", "logo", "logo", "other"] {
        ids.push(image(&server, &org, Some(ty), None).await);
    }
    let wanted = format!("{},{},{}", ids[0], ids[2], ids[3]);
    let plain = server
        .get(&org, &format!("/v1/images?ids={wanted}"))
        .await
        .expect(200, None);
    let mut got = ids_of(&plain);
    got.sort();
    let mut expected = vec![ids[0].clone(), ids[2].clone(), ids[3].clone()];
    expected.sort();
    assert_eq!(got, expected);
    assert_eq!(
        (
            plain.body["has_more"].as_bool(),
            plain.body["total_count"].as_i64()
        ),
        (Some(false), Some(3))
    );
    // A cursor (even one inside the set) changes nothing.
    for after in [&ids[3], &ids[0], &ids[1]] {
        let r = server
            .get(
                &org,
                &format!("/v1/images?ids={wanted}&starting_after={after}"),
            )
            .await
            .expect(200, None);
        assert_eq!(ids_of(&r), ids_of(&plain), "starting_after={after}");
        assert_eq!(r.body["total_count"], 3);
        assert_eq!(r.body["has_more"], false);
    }
    // Facets in ids mode count within the ids.
    let r = server
        .get(&org, &format!("/v1/images?ids={wanted}&facets=image_type"))
        .await
        .expect(200, None);
    let mut f = facet(&r);
    f.sort();
    assert_eq!(
        f,
        vec![
            ("logo".to_string(), 1),
            ("other".to_string(), 1),
            ("product".to_string(), 1)
        ]
    );
    // `ids=` with nothing in it is an error, not "everything".
    server
        .get(&org, "/v1/images?ids=")
        .await
        .expect(400, Some("VALIDATION_ERROR"));
}
