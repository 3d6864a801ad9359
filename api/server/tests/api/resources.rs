//! Brands, products, variants and audiences: CRUD, delete semantics, archive, duplicate.

use serde_json::json;

use crate::support::{TestServer, png};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brand_lifecycle() {
    let s = TestServer::start().await;
    let org = s.org("Brands").await;
    let logo = s
        .upload(
            &org,
            png(64, 32, [250, 250, 250, 255]),
            &[("image_type", "logo")],
        )
        .await
        .expect(201, None)
        .id();
    let b = s
        .post(
            &org,
            "/v1/brands",
            json!({
                "name": "  Northwind  ", "description": "Outdoor gear",
                "color_palettes": {"primary": ["#0A2540", "#635BFF"], "neutral": ["#fff"]},
                "fonts": [{"name": "Inter", "role": "heading"}, {"name": "Lato"}],
                "logo_image_ids": [logo, logo], "details": {"tagline": "Go further"}
            }),
        )
        .await
        .expect(201, None);
    let id = b.id();
    assert!(id.starts_with("brand_"));
    assert_eq!(b.body["data"]["name"], "Northwind", "names are trimmed");
    assert_eq!(
        b.body["data"]["logo_image_ids"],
        json!([logo]),
        "repeated ids collapse"
    );
    assert_eq!(
        b.body["data"]["fonts"][0],
        json!({"name": "Inter", "role": "heading"})
    );
    assert_eq!(b.body["data"]["duplicated_from_id"], json!(null));
    let got = s
        .get(&org, &format!("/v1/brands/{id}"))
        .await
        .expect(200, None);
    assert_eq!(got.body["data"], b.body["data"]);

    // PATCH: subset, null clears, unchanged fields stay.
    let p = s
        .patch(
            &org,
            &format!("/v1/brands/{id}"),
            json!({"description": null, "details": {"voice": "warm"}}),
        )
        .await
        .expect(200, None);
    assert_eq!(p.body["data"]["description"], json!(null));
    assert_eq!(p.body["data"]["details"], json!({"voice": "warm"}));
    assert_eq!(p.body["data"]["fonts"], b.body["data"]["fonts"]);
    assert!(p.body["data"]["updated_at"].as_str() >= b.body["data"]["updated_at"].as_str());
    let same = s
        .patch(&org, &format!("/v1/brands/{id}"), json!({}))
        .await
        .expect(200, None);
    assert_eq!(
        same.body["data"], p.body["data"],
        "an empty PATCH changes nothing"
    );
    s.patch(
        &org,
        &format!("/v1/brands/{id}"),
        json!({"logo_image_ids": ["img_nope"]}),
    )
    .await
    .expect(404, Some("IMAGE_NOT_FOUND"));
    s.patch(&org, "/v1/brands/brand_nope", json!({"name": "x"}))
        .await
        .expect(404, Some("BRAND_NOT_FOUND"));

    // Delete: refused while it has products, unless cascade; soft (404 afterwards).
    let prod = s
        .post(
            &org,
            "/v1/products",
            json!({"brand_id": id, "name": "Tent"}),
        )
        .await
        .expect(201, None)
        .id();
    s.post(
        &org,
        "/v1/audiences",
        json!({"product_id": prod, "name": "Campers"}),
    )
    .await
    .expect(201, None);
    let r = s
        .delete(&org, &format!("/v1/brands/{id}"))
        .await
        .expect(409, Some("RESOURCE_HAS_CHILDREN"));
    assert_eq!(
        r.body["error"]["children"],
        json!({"products": 1, "product_variants": 0, "audiences": 1})
    );
    let d = s
        .delete(&org, &format!("/v1/brands/{id}?cascade=true"))
        .await
        .expect(200, None);
    assert_eq!(
        (d.body["id"].as_str(), d.body["deleted"].as_bool()),
        (Some(id.as_str()), Some(true))
    );
    s.get(&org, &format!("/v1/brands/{id}"))
        .await
        .expect(404, Some("BRAND_NOT_FOUND"));
    s.get(&org, &format!("/v1/products/{prod}"))
        .await
        .expect(404, Some("PRODUCT_NOT_FOUND"));
    s.delete(&org, &format!("/v1/brands/{id}"))
        .await
        .expect(404, Some("BRAND_NOT_FOUND"));
    assert_eq!(s.get(&org, "/v1/audiences").await.body["total_count"], 0);
    // The logo stays: deleting a brand does not delete shared images.
    s.get(&org, &format!("/v1/images/{logo}"))
        .await
        .expect(200, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn products_variants_audiences_crud() {
    let s = TestServer::start().await;
    let org = s.org("Catalog").await;
    let c = s.catalog(&org).await;
    s.post(
        &org,
        "/v1/products",
        json!({"brand_id": "brand_nope", "name": "x"}),
    )
    .await
    .expect(404, Some("BRAND_NOT_FOUND"));
    s.post(
        &org,
        "/v1/product-variants",
        json!({"product_id": "prod_nope", "name": "x"}),
    )
    .await
    .expect(404, Some("PRODUCT_NOT_FOUND"));
    s.post(
        &org,
        "/v1/audiences",
        json!({"product_id": "prod_nope", "name": "x"}),
    )
    .await
    .expect(404, Some("PRODUCT_NOT_FOUND"));
    s.get(&org, "/v1/product-variants/pv_nope")
        .await
        .expect(404, Some("PRODUCT_VARIANT_NOT_FOUND"));
    s.get(&org, "/v1/audiences/aud_nope")
        .await
        .expect(404, Some("AUDIENCE_NOT_FOUND"));
    s.post(&org, "/v1/products", json!({"name": "no brand"}))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    s.patch(
        &org,
        &format!("/v1/products/{}", c.product),
        json!({"brand_id": "brand_x"}),
    )
    .await
    .expect(400, Some("VALIDATION_ERROR"));

    let p = s
        .patch(
            &org,
            &format!("/v1/products/{}", c.product),
            json!({"description": "Grippy soles", "details": {"usp": ["light"]}}),
        )
        .await
        .expect(200, None);
    assert_eq!(p.body["data"]["description"], "Grippy soles");
    assert_eq!(p.body["data"]["brand_id"], c.brand.as_str());
    let list = s
        .get(&org, &format!("/v1/products?brand_id={}", c.brand))
        .await
        .expect(200, None);
    assert_eq!(list.body["total_count"], 1);

    let img1 = s
        .upload(&org, png(10, 10, [1, 2, 3, 255]), &[])
        .await
        .expect(201, None)
        .id();
    let img2 = s
        .upload(&org, png(10, 10, [4, 5, 6, 255]), &[])
        .await
        .expect(201, None)
        .id();
    let v = s
        .post(&org, "/v1/product-variants", json!({
            "product_id": c.product, "name": "Blue 43", "sku": "TS-B-43",
            "price": {"amount": 12900, "currency": "eur"}, "attributes": {"colour": "blue"}, "image_ids": [img1]
        }))
        .await
        .expect(201, None);
    assert_eq!(
        v.body["data"]["price"],
        json!({"amount": 12900, "currency": "eur"})
    );
    let vid = v.id();
    let v2 = s
        .patch(
            &org,
            &format!("/v1/product-variants/{vid}"),
            json!({"image_ids": [img2, img1], "sku": null}),
        )
        .await
        .expect(200, None);
    assert_eq!(v2.body["data"]["image_ids"], json!([img2, img1]));
    assert_eq!(v2.body["data"]["sku"], json!(null));
    s.patch(
        &org,
        &format!("/v1/product-variants/{vid}"),
        json!({"image_ids": [img1, "img_ghost"]}),
    )
    .await
    .expect(404, Some("IMAGE_NOT_FOUND"));
    let vl = s
        .get(
            &org,
            &format!("/v1/product-variants?product_id={}", c.product),
        )
        .await
        .expect(200, None);
    assert_eq!(vl.body["total_count"], 2);
    assert_eq!(vl.body["data"][0]["id"], vid.as_str(), "newest first");

    let a = s
        .patch(
            &org,
            &format!("/v1/audiences/{}", c.audience),
            json!({"description": "Weekend walkers", "details": {"age_range": "30-50"}}),
        )
        .await
        .expect(200, None);
    assert_eq!(a.body["data"]["details"]["age_range"], "30-50");
    let al = s
        .get(&org, &format!("/v1/audiences?product_id={}", c.product))
        .await
        .expect(200, None);
    assert_eq!(al.body["total_count"], 1);

    s.delete(&org, &format!("/v1/product-variants/{vid}"))
        .await
        .expect(200, None);
    s.get(&org, &format!("/v1/product-variants/{vid}"))
        .await
        .expect(404, Some("PRODUCT_VARIANT_NOT_FOUND"));
    s.delete(&org, &format!("/v1/audiences/{}", c.audience))
        .await
        .expect(200, None);
    s.get(&org, &format!("/v1/audiences/{}", c.audience))
        .await
        .expect(404, Some("AUDIENCE_NOT_FOUND"));
    let r = s
        .delete(&org, &format!("/v1/products/{}", c.product))
        .await
        .expect(409, Some("RESOURCE_HAS_CHILDREN"));
    assert_eq!(r.body["error"]["children"]["product_variants"], 1);
    s.delete(&org, &format!("/v1/product-variants/{}", c.variant))
        .await
        .expect(200, None);
    s.delete(&org, &format!("/v1/products/{}", c.product))
        .await
        .expect(200, None);
    s.get(&org, &format!("/v1/products/{}", c.product))
        .await
        .expect(404, Some("PRODUCT_NOT_FOUND"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archive_and_unarchive_products() {
    let s = TestServer::start().await;
    let org = s.org("Archive").await;
    let c = s.catalog(&org).await;
    let r = s
        .post(
            &org,
            &format!("/v1/products/{}/archive", c.product),
            json!({}),
        )
        .await
        .expect(409, Some("RESOURCE_HAS_CHILDREN"));
    assert_eq!(
        r.body["error"]["children"],
        json!({"products": 0, "product_variants": 1, "audiences": 1})
    );
    s.get(&org, &format!("/v1/products/{}", c.product))
        .await
        .expect(200, None);
    assert!(
        s.get(&org, &format!("/v1/products/{}", c.product))
            .await
            .body["data"]["archived_at"]
            .is_null(),
        "nothing changed"
    );

    let a = s
        .post(
            &org,
            &format!("/v1/products/{}/archive?cascade=true", c.product),
            json!({}),
        )
        .await
        .expect(200, None);
    assert_eq!(a.body["archived"], true);
    assert_eq!(
        a.body["children"],
        json!({"products": 0, "product_variants": 1, "audiences": 1})
    );
    // Hidden by default, reachable directly and with archived=true.
    assert_eq!(s.get(&org, "/v1/products").await.body["total_count"], 0);
    assert_eq!(
        s.get(&org, "/v1/product-variants").await.body["total_count"],
        0
    );
    assert_eq!(s.get(&org, "/v1/audiences").await.body["total_count"], 0);
    assert_eq!(
        s.get(&org, "/v1/products?archived=true").await.body["total_count"],
        1
    );
    let got = s
        .get(&org, &format!("/v1/products/{}", c.product))
        .await
        .expect(200, None);
    assert!(got.body["data"]["archived_at"].is_string());
    s.get(&org, &format!("/v1/product-variants/{}", c.variant))
        .await
        .expect(200, None);
    // Archiving again is a no-op.
    let again = s
        .post(
            &org,
            &format!("/v1/products/{}/archive", c.product),
            json!({}),
        )
        .await
        .expect(200, None);
    assert_eq!(again.body["children"]["product_variants"], 0);

    let u = s
        .post(
            &org,
            &format!("/v1/products/{}/unarchive", c.product),
            json!({}),
        )
        .await
        .expect(200, None);
    assert_eq!(u.body["archived"], false);
    assert_eq!(
        u.body["children"],
        json!({"products": 0, "product_variants": 1, "audiences": 1})
    );
    assert_eq!(s.get(&org, "/v1/products").await.body["total_count"], 1);
    assert_eq!(
        s.get(&org, "/v1/product-variants").await.body["total_count"],
        1
    );
    s.post(&org, "/v1/products/prod_nope/archive", json!({}))
        .await
        .expect(404, Some("PRODUCT_NOT_FOUND"));
    s.post(&org, "/v1/products/prod_nope/unarchive", json!({}))
        .await
        .expect(404, Some("PRODUCT_NOT_FOUND"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_brand_and_product() {
    let s = TestServer::start().await;
    let org = s.org("Dup").await;
    let logo = s
        .upload(&org, png(20, 20, [9, 9, 9, 255]), &[("image_type", "logo")])
        .await
        .expect(201, None)
        .id();
    let shot = s
        .upload(&org, png(20, 20, [200, 9, 9, 255]), &[])
        .await
        .expect(201, None)
        .id();
    let brand = s
        .post(
            &org,
            "/v1/brands",
            json!({"name": "Acme", "logo_image_ids": [logo]}),
        )
        .await
        .expect(201, None)
        .id();
    let mut products = Vec::new();
    for name in ["One", "Two", "Archived"] {
        let p = s
            .post(
                &org,
                "/v1/products",
                json!({"brand_id": brand, "name": name}),
            )
            .await
            .expect(201, None)
            .id();
        s.post(
            &org,
            "/v1/product-variants",
            json!({"product_id": p, "name": format!("{name} v"), "image_ids": [shot]}),
        )
        .await
        .expect(201, None);
        s.post(
            &org,
            "/v1/audiences",
            json!({"product_id": p, "name": format!("{name} a")}),
        )
        .await
        .expect(201, None);
        products.push(p);
    }
    s.post(
        &org,
        &format!("/v1/products/{}/archive?cascade=true", products[2]),
        json!({}),
    )
    .await
    .expect(200, None);
    // An archived variant of an active product is left out too.
    let extra = s
        .post(
            &org,
            "/v1/product-variants",
            json!({"product_id": products[0], "name": "gone"}),
        )
        .await
        .expect(201, None)
        .id();
    s.delete(&org, &format!("/v1/product-variants/{extra}"))
        .await
        .expect(200, None);

    let d = s
        .post(&org, &format!("/v1/brands/{brand}/duplicate"), json!({}))
        .await
        .expect(201, None);
    assert_eq!(d.body["data"]["name"], "Acme - copy");
    assert_eq!(d.body["data"]["duplicated_from_id"], brand.as_str());
    assert_eq!(
        d.body["data"]["logo_image_ids"],
        json!([logo]),
        "logos are shared"
    );
    assert_eq!(
        d.body["duplicated"],
        json!({"products": 2, "product_variants": 2, "audiences": 2, "variant_images": 2})
    );
    let copy = d.id();
    let cp = s
        .get(&org, &format!("/v1/products?brand_id={copy}"))
        .await
        .expect(200, None);
    let names: Vec<&str> = cp.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["Two", "One"],
        "names unchanged, archived left out, newest first"
    );
    for p in cp.body["data"].as_array().unwrap() {
        assert!(
            p["duplicated_from_id"]
                .as_str()
                .unwrap()
                .starts_with("prod_")
        );
        let vs = s
            .get(
                &org,
                &format!(
                    "/v1/product-variants?product_id={}",
                    p["id"].as_str().unwrap()
                ),
            )
            .await;
        assert_eq!(
            vs.body["data"][0]["image_ids"],
            json!([shot]),
            "variant images are shared"
        );
    }
    // The copy is independent of the source.
    s.patch(
        &org,
        &format!("/v1/brands/{copy}"),
        json!({"name": "Changed"}),
    )
    .await
    .expect(200, None);
    assert_eq!(
        s.get(&org, &format!("/v1/brands/{brand}")).await.body["data"]["name"],
        "Acme"
    );

    let shallow = s
        .post(
            &org,
            &format!("/v1/brands/{brand}/duplicate?cascade=false"),
            json!({}),
        )
        .await
        .expect(201, None);
    assert_eq!(
        shallow.body["duplicated"],
        json!({"products": 0, "product_variants": 0, "audiences": 0, "variant_images": 0})
    );
    assert_eq!(
        s.get(&org, &format!("/v1/products?brand_id={}", shallow.id()))
            .await
            .body["total_count"],
        0
    );

    let pd = s
        .post(
            &org,
            &format!("/v1/products/{}/duplicate", products[0]),
            json!({}),
        )
        .await
        .expect(201, None);
    assert_eq!(pd.body["data"]["name"], "One - copy");
    assert_eq!(pd.body["data"]["brand_id"], brand.as_str());
    assert_eq!(
        pd.body["duplicated"],
        json!({"products": 1, "product_variants": 1, "audiences": 1, "variant_images": 1})
    );
    let pd2 = s
        .post(
            &org,
            &format!("/v1/products/{}/duplicate?cascade=false", products[0]),
            json!({}),
        )
        .await
        .expect(201, None);
    assert_eq!(pd2.body["duplicated"]["product_variants"], 0);
    assert_eq!(
        s.get(
            &org,
            &format!("/v1/product-variants?product_id={}", pd2.id())
        )
        .await
        .body["total_count"],
        0
    );
    s.post(&org, "/v1/brands/brand_nope/duplicate", json!({}))
        .await
        .expect(404, Some("BRAND_NOT_FOUND"));
    s.post(&org, "/v1/products/prod_nope/duplicate", json!({}))
        .await
        .expect(404, Some("PRODUCT_NOT_FOUND"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_rolls_back_when_a_step_fails() {
    let s = TestServer::start().await;
    let org = s.org("Rollback").await;
    let c = s.catalog(&org).await;
    let p2 = s
        .post(
            &org,
            "/v1/products",
            json!({"brand_id": c.brand, "name": "Second"}),
        )
        .await
        .expect(201, None)
        .id();
    s.post(
        &org,
        "/v1/audiences",
        json!({"product_id": p2, "name": "Late"}),
    )
    .await
    .expect(201, None);
    // Inject a failure part-way: the database refuses the copy of the audience "Late",
    // after the brand, both products, the variant and one audience were already written.
    let postgres = s.db.engine() == adforge_api::store::Engine::Postgres;
    let inject: &[&str] = if postgres {
        &[
            "CREATE FUNCTION fail_copy() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$",
            "CREATE TRIGGER fail_copy BEFORE INSERT ON audiences FOR EACH ROW \
             WHEN (NEW.name = 'Late' AND NEW.duplicated_from_id IS NOT NULL) EXECUTE FUNCTION fail_copy()",
        ]
    } else {
        &[
            "CREATE TRIGGER fail_copy BEFORE INSERT ON audiences WHEN NEW.name = 'Late' AND NEW.duplicated_from_id IS NOT NULL \
           BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
        ]
    };
    for sql in inject {
        adforge_api::store::query(sql)
            .execute(&s.db.write)
            .await
            .unwrap();
    }
    let before = (
        s.get(&org, "/v1/brands").await.body["total_count"].clone(),
        s.get(&org, "/v1/products").await.body["total_count"].clone(),
        s.get(&org, "/v1/product-variants").await.body["total_count"].clone(),
        s.get(&org, "/v1/audiences").await.body["total_count"].clone(),
    );
    let r = s
        .post(
            &org,
            &format!("/v1/brands/{}/duplicate", c.brand),
            json!({}),
        )
        .await
        .expect(500, Some("INTERNAL_ERROR"));
    assert!(
        !r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("injected"),
        "internal causes are not sent"
    );
    let after = (
        s.get(&org, "/v1/brands").await.body["total_count"].clone(),
        s.get(&org, "/v1/products").await.body["total_count"].clone(),
        s.get(&org, "/v1/product-variants").await.body["total_count"].clone(),
        s.get(&org, "/v1/audiences").await.body["total_count"].clone(),
    );
    assert_eq!(before, after, "nothing of the failed duplicate remains");
    let rows: i64 =
        adforge_api::store::query_scalar("SELECT COUNT(*) FROM brands WHERE name = 'Acme - copy'")
            .fetch_one(&s.db.read)
            .await
            .unwrap();
    assert_eq!(rows, 0);
    // Product duplicate is all-or-nothing too.
    s.post(&org, &format!("/v1/products/{p2}/duplicate"), json!({}))
        .await
        .expect(500, Some("INTERNAL_ERROR"));
    let prods: i64 = adforge_api::store::query_scalar(
        "SELECT COUNT(*) FROM products WHERE name = 'Second - copy'",
    )
    .fetch_one(&s.db.read)
    .await
    .unwrap();
    assert_eq!(prods, 0);
    // With the fault gone, the same request succeeds.
    let drop = if postgres {
        "DROP TRIGGER fail_copy ON audiences"
    } else {
        "DROP TRIGGER fail_copy"
    };
    adforge_api::store::query(drop)
        .execute(&s.db.write)
        .await
        .unwrap();
    let ok = s
        .post(
            &org,
            &format!("/v1/brands/{}/duplicate", c.brand),
            json!({}),
        )
        .await
        .expect(201, None);
    assert_eq!(ok.body["duplicated"]["audiences"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sku_conflicts_are_409() {
    let s = TestServer::start().await;
    let org = s.org("Sku").await;
    let c = s.catalog(&org).await;
    let a = s
        .post(
            &org,
            "/v1/product-variants",
            json!({"product_id": c.product, "name": "A", "sku": "TS-1"}),
        )
        .await
        .expect(201, None)
        .id();
    let r = s
        .post(
            &org,
            "/v1/product-variants",
            json!({"product_id": c.product, "name": "B", "sku": "TS-1"}),
        )
        .await
        .expect(409, Some("CONFLICT"));
    assert!(r.body["error"]["message"].as_str().unwrap().contains(&a));
    s.patch(
        &org,
        &format!("/v1/product-variants/{}", c.variant),
        json!({"sku": "TS-1"}),
    )
    .await
    .expect(409, Some("CONFLICT"));
    // The holder may keep its own sku, and a deleted variant frees it.
    s.patch(
        &org,
        &format!("/v1/product-variants/{a}"),
        json!({"sku": "TS-1", "name": "A2"}),
    )
    .await
    .expect(200, None);
    s.delete(&org, &format!("/v1/product-variants/{a}"))
        .await
        .expect(200, None);
    s.patch(
        &org,
        &format!("/v1/product-variants/{}", c.variant),
        json!({"sku": "TS-1"}),
    )
    .await
    .expect(200, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_failure_is_image_upload_failed_and_stores_nothing() {
    let s = TestServer::start().await;
    let org = s.org("Storage").await;
    // Break the blob store for real: a plain file where the images folder must be.
    let blobs = s.data_dir.join("blobs");
    std::fs::create_dir_all(&blobs).unwrap();
    std::fs::write(blobs.join("images"), b"not a folder").unwrap();
    s.upload(&org, png(8, 8, [1, 1, 1, 255]), &[])
        .await
        .expect(500, Some("IMAGE_UPLOAD_FAILED"));
    assert_eq!(s.get(&org, "/v1/images").await.body["total_count"], 0);
    std::fs::remove_file(blobs.join("images")).unwrap();
    s.upload(&org, png(8, 8, [1, 1, 1, 255]), &[])
        .await
        .expect(201, None);
}
