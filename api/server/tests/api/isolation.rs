//! Tenant isolation: an organisation using another's ids on every endpoint gets the
//! resource's 404 code (or an empty list), and the owner's data is unchanged afterwards.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Catalog, Org, TestServer, png};

/// The owner's catalog plus an image referenced from its brand and variant.
struct Owned {
    cat: Catalog,
    image: String,
}

async fn owned(server: &TestServer, org: &Org) -> Owned {
    let cat = server.catalog(org).await;
    let image = server
        .upload(
            org,
            png(40, 40, [250, 250, 250, 255]),
            &[("image_type", "logo"), ("product_id", &cat.product)],
        )
        .await
        .expect(201, None)
        .id();
    server
        .patch(
            org,
            &format!("/v1/brands/{}", cat.brand),
            json!({"logo_image_ids": [image], "description": "Owner's brand", "details": {"tagline": "Go"}}),
        )
        .await
        .expect(200, None);
    server
        .patch(
            org,
            &format!("/v1/product-variants/{}", cat.variant),
            json!({"image_ids": [image]}),
        )
        .await
        .expect(200, None);
    server
        .patch(
            org,
            &format!("/v1/products/{}", cat.product),
            json!({"description": "Owner's product"}),
        )
        .await
        .expect(200, None);
    Owned { cat, image }
}

/// Everything the owner can read about its data, without the per-response `meta`.
async fn snapshot(server: &TestServer, org: &Org, o: &Owned) -> Vec<(String, Value)> {
    let mut paths = vec![
        format!("/v1/brands/{}", o.cat.brand),
        format!("/v1/products/{}", o.cat.product),
        format!("/v1/product-variants/{}", o.cat.variant),
        format!("/v1/audiences/{}", o.cat.audience),
        format!("/v1/images/{}", o.image),
    ];
    for list in [
        "/v1/brands",
        "/v1/products",
        "/v1/product-variants",
        "/v1/audiences",
        "/v1/images",
    ] {
        paths.push(list.to_string());
    }
    paths.push("/v1/products?archived=true".to_string());
    paths.push("/v1/search?limit=25".to_string());
    let mut out = Vec::new();
    for p in paths {
        let mut body = server.get(org, &p).await.expect(200, None).body;
        body.as_object_mut().expect("object").remove("meta");
        out.push((p, body));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_organizations_ids_are_not_found_anywhere_and_change_nothing() {
    let server = TestServer::start().await;
    let a = server.org_unlimited("Owner").await;
    let b = server.org_unlimited("Intruder").await;
    let ao = owned(&server, &a).await;
    let bo = owned(&server, &b).await;
    // Let both images finish their background work so the snapshots compare settled data.
    for (org, o) in [(&a, &ao), (&b, &bo)] {
        let settled = crate::support::eventually(|| async {
            let d = server
                .get(org, &format!("/v1/images/{}", o.image))
                .await
                .body["data"]
                .clone();
            d["thumbnail_large_src"].is_string() && d["enriched_description"].is_string()
        })
        .await;
        assert!(settled, "image {} never finished", o.image);
    }
    let before = snapshot(&server, &a, &ao).await;
    let b_before = snapshot(&server, &b, &bo).await;

    let Catalog {
        brand,
        product,
        variant,
        audience,
    } = &ao.cat;
    let image = &ao.image;
    let cases: Vec<(Method, String, Option<Value>, &str)> = vec![
        (
            Method::GET,
            format!("/v1/brands/{brand}"),
            None,
            "BRAND_NOT_FOUND",
        ),
        (
            Method::PATCH,
            format!("/v1/brands/{brand}"),
            Some(json!({"name": "Hijacked"})),
            "BRAND_NOT_FOUND",
        ),
        (
            Method::PATCH,
            format!("/v1/brands/{brand}"),
            Some(json!({})),
            "BRAND_NOT_FOUND",
        ),
        (
            Method::DELETE,
            format!("/v1/brands/{brand}"),
            None,
            "BRAND_NOT_FOUND",
        ),
        (
            Method::DELETE,
            format!("/v1/brands/{brand}?cascade=true"),
            None,
            "BRAND_NOT_FOUND",
        ),
        (
            Method::POST,
            format!("/v1/brands/{brand}/duplicate"),
            Some(json!({})),
            "BRAND_NOT_FOUND",
        ),
        (
            Method::POST,
            format!("/v1/brands/{brand}/duplicate?cascade=false"),
            Some(json!({})),
            "BRAND_NOT_FOUND",
        ),
        (
            Method::GET,
            format!("/v1/products/{product}"),
            None,
            "PRODUCT_NOT_FOUND",
        ),
        (
            Method::PATCH,
            format!("/v1/products/{product}"),
            Some(json!({"name": "Hijacked"})),
            "PRODUCT_NOT_FOUND",
        ),
        (
            Method::PATCH,
            format!("/v1/products/{product}"),
            Some(json!({})),
            "PRODUCT_NOT_FOUND",
        ),
        (
            Method::DELETE,
            format!("/v1/products/{product}"),
            None,
            "PRODUCT_NOT_FOUND",
        ),
        (
            Method::DELETE,
            format!("/v1/products/{product}?cascade=true"),
            None,
            "PRODUCT_NOT_FOUND",
        ),
        (
            Method::POST,
            format!("/v1/products/{product}/duplicate"),
            Some(json!({})),
            "PRODUCT_NOT_FOUND",
        ),
        (
            Method::POST,
            format!("/v1/products/{product}/archive?cascade=true"),
            Some(json!({})),
            "PRODUCT_NOT_FOUND",
        ),
        (
            Method::POST,
            format!("/v1/products/{product}/archive"),
            Some(json!({})),
            "PRODUCT_NOT_FOUND",
        ),
        (
            Method::POST,
            format!("/v1/products/{product}/unarchive"),
            Some(json!({})),
            "PRODUCT_NOT_FOUND",
        ),
        (
            Method::GET,
            format!("/v1/product-variants/{variant}"),
            None,
            "PRODUCT_VARIANT_NOT_FOUND",
        ),
        (
            Method::PATCH,
            format!("/v1/product-variants/{variant}"),
            Some(json!({"name": "Hijacked"})),
            "PRODUCT_VARIANT_NOT_FOUND",
        ),
        (
            Method::PATCH,
            format!("/v1/product-variants/{variant}"),
            Some(json!({"image_ids": []})),
            "PRODUCT_VARIANT_NOT_FOUND",
        ),
        (
            Method::DELETE,
            format!("/v1/product-variants/{variant}"),
            None,
            "PRODUCT_VARIANT_NOT_FOUND",
        ),
        (
            Method::GET,
            format!("/v1/audiences/{audience}"),
            None,
            "AUDIENCE_NOT_FOUND",
        ),
        (
            Method::PATCH,
            format!("/v1/audiences/{audience}"),
            Some(json!({"name": "Hijacked"})),
            "AUDIENCE_NOT_FOUND",
        ),
        (
            Method::DELETE,
            format!("/v1/audiences/{audience}"),
            None,
            "AUDIENCE_NOT_FOUND",
        ),
        (
            Method::GET,
            format!("/v1/images/{image}"),
            None,
            "IMAGE_NOT_FOUND",
        ),
        (
            Method::DELETE,
            format!("/v1/images/{image}"),
            None,
            "IMAGE_NOT_FOUND",
        ),
        // Creating under the owner's parents.
        (
            Method::POST,
            "/v1/products".into(),
            Some(json!({"brand_id": brand, "name": "Planted"})),
            "BRAND_NOT_FOUND",
        ),
        (
            Method::POST,
            "/v1/product-variants".into(),
            Some(json!({"product_id": product, "name": "Planted"})),
            "PRODUCT_NOT_FOUND",
        ),
        (
            Method::POST,
            "/v1/audiences".into(),
            Some(json!({"product_id": product, "name": "Planted"})),
            "PRODUCT_NOT_FOUND",
        ),
        // Referencing the owner's image from the intruder's own resources.
        (
            Method::POST,
            "/v1/product-variants".into(),
            Some(json!({"product_id": bo.cat.product, "name": "Borrower", "image_ids": [image]})),
            "IMAGE_NOT_FOUND",
        ),
        (
            Method::PATCH,
            format!("/v1/product-variants/{}", bo.cat.variant),
            Some(json!({"image_ids": [image]})),
            "IMAGE_NOT_FOUND",
        ),
        (
            Method::POST,
            "/v1/brands".into(),
            Some(json!({"name": "Borrower", "logo_image_ids": [image]})),
            "IMAGE_NOT_FOUND",
        ),
        (
            Method::PATCH,
            format!("/v1/brands/{}", bo.cat.brand),
            Some(json!({"logo_image_ids": [bo.image, image]})),
            "IMAGE_NOT_FOUND",
        ),
    ];
    for (method, path, body, code) in &cases {
        let r = server
            .call(method.clone(), path, Some(&b.key), body.clone())
            .await;
        assert_eq!(r.status.as_u16(), 404, "{method} {path}: {}", r.body);
        assert_eq!(r.code(), *code, "{method} {path}: {}", r.body);
    }
    // Uploading an image for the owner's product.
    server
        .upload(&b, png(4, 4, [0, 0, 0, 255]), &[("product_id", product)])
        .await
        .expect(404, Some("PRODUCT_NOT_FOUND"));

    // List filters naming the owner's ids find nothing.
    for path in [
        format!("/v1/products?brand_id={brand}"),
        format!("/v1/products?brand_id={brand}&archived=true"),
        format!("/v1/product-variants?product_id={product}"),
        format!("/v1/audiences?product_id={product}"),
        format!("/v1/images?product_id={product}"),
        format!("/v1/images?ids={image}"),
        format!("/v1/images?ids={image}&facets=image_type"),
    ] {
        let r = server.get(&b, &path).await.expect(200, None);
        assert_eq!(r.body["data"], json!([]), "{path}");
        assert_eq!(r.body["total_count"], 0, "{path}");
        assert_eq!(r.body["has_more"], false, "{path}");
        if path.contains("facets") {
            assert_eq!(r.body["facets"]["image_type"], json!([]), "{path}");
        }
    }
    // A cursor from the owner's list is not a cursor of the intruder's.
    for (list, id) in [
        ("/v1/brands", brand),
        ("/v1/products", product),
        ("/v1/product-variants", variant),
        ("/v1/audiences", audience),
        ("/v1/images", image),
    ] {
        let r = server
            .get(&b, &format!("{list}?starting_after={id}"))
            .await
            .expect(400, Some("VALIDATION_ERROR"));
        assert_eq!(
            r.body["error"]["details"][0]["field"], "starting_after",
            "{list}"
        );
    }
    // Global search: neither resolve mode nor a brand filter reaches the owner's data.
    let r = server
        .get(
            &b,
            &format!("/v1/search?ids={product},{variant},{audience}"),
        )
        .await
        .expect(200, None);
    assert_eq!(r.body["data"], json!([]));
    let r = server
        .get(&b, &format!("/v1/search?brand_id={brand}&limit=25"))
        .await
        .expect(200, None);
    assert_eq!(r.body["data"], json!([]));
    let r = server
        .get(&b, "/v1/search?query=trail&limit=25")
        .await
        .expect(200, None);
    for h in r.body["data"].as_array().unwrap() {
        assert!(
            ![product, variant, audience].contains(&&h["id"].as_str().unwrap().to_string()),
            "{h}"
        );
    }

    // The owner's data is exactly as it was, and so is the intruder's own.
    let after = snapshot(&server, &a, &ao).await;
    for ((path, was), (_, now)) in before.iter().zip(&after) {
        assert_eq!(was, now, "owner's {path} changed");
    }
    let b_after = snapshot(&server, &b, &bo).await;
    for ((path, was), (_, now)) in b_before.iter().zip(&b_after) {
        assert_eq!(was, now, "intruder's {path} changed by refused requests");
    }
    // The owner's image file is still served.
    let src = before[4].1["data"]["src"].as_str().unwrap().to_string();
    assert_eq!(server.fetch(&src).await.0.as_u16(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_show_only_the_callers_organization() {
    let server = TestServer::start().await;
    let a = server.org_unlimited("A").await;
    let b = server.org_unlimited("B").await;
    let ao = owned(&server, &a).await;
    let bo = owned(&server, &b).await;
    for (org, mine, theirs) in [(&a, &ao, &bo), (&b, &bo, &ao)] {
        for (list, own_id, other_id) in [
            ("/v1/brands", &mine.cat.brand, &theirs.cat.brand),
            ("/v1/products", &mine.cat.product, &theirs.cat.product),
            (
                "/v1/product-variants",
                &mine.cat.variant,
                &theirs.cat.variant,
            ),
            ("/v1/audiences", &mine.cat.audience, &theirs.cat.audience),
            ("/v1/images", &mine.image, &theirs.image),
        ] {
            let r = server.get(org, list).await.expect(200, None);
            let ids: Vec<&str> = r.body["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["id"].as_str().unwrap())
                .collect();
            assert_eq!(ids, vec![own_id.as_str()], "{list}");
            assert_eq!(r.body["total_count"], 1, "{list}");
            assert!(!ids.contains(&other_id.as_str()));
        }
        let r = server
            .get(org, "/v1/images?facets=image_type")
            .await
            .expect(200, None);
        assert_eq!(
            r.body["facets"]["image_type"],
            json!([{"value": "logo", "count": 1}])
        );
        let r = server
            .get(
                org,
                &format!("/v1/images?ids={},{}", mine.image, theirs.image),
            )
            .await
            .expect(200, None);
        assert_eq!(r.body["total_count"], 1);
        assert_eq!(r.body["data"][0]["id"], mine.image.as_str());
    }
}
