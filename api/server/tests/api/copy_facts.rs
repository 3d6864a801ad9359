//! The facts an ad's copy may state (issue 21): a variant's `compare_at_price`, the
//! documented keys of a product's `details` and a brand's `details.voice`, each checked with
//! VALIDATION_ERROR naming the field; and the `copy` report of a completed ad, whose facts
//! name their source.

use serde_json::json;

use crate::support::TestServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_at_price_and_documented_details_are_checked() {
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org("Facts").await;
    let c = s.catalog(&org).await;
    let field_of = |r: &crate::support::Reply| {
        r.body["error"]["details"][0]["field"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    // A former price needs a price, the same currency, and a higher amount.
    for (body, field) in [
        (
            json!({"compare_at_price": {"amount": 3200, "currency": "usd"}}),
            "compare_at_price",
        ),
        (
            json!({"price": {"amount": 2400, "currency": "usd"}, "compare_at_price": {"amount": 3200, "currency": "eur"}}),
            "compare_at_price.currency",
        ),
        (
            json!({"price": {"amount": 2400, "currency": "usd"}, "compare_at_price": {"amount": 2400, "currency": "usd"}}),
            "compare_at_price.amount",
        ),
        (
            json!({"price": {"amount": 2400, "currency": "usd"}, "compare_at_price": {"amount": -1, "currency": "usd"}}),
            "compare_at_price.amount",
        ),
    ] {
        let r = s
            .patch(
                &org,
                &format!("/v1/product-variants/{}", c.variant),
                body.clone(),
            )
            .await
            .expect(400, Some("VALIDATION_ERROR"));
        assert_eq!(field_of(&r), field, "{body}");
    }
    let v = s
        .patch(
            &org,
            &format!("/v1/product-variants/{}", c.variant),
            json!({"price": {"amount": 2400, "currency": "usd"}, "compare_at_price": {"amount": 3200, "currency": "usd"}}),
        )
        .await
        .expect(200, None);
    assert_eq!(
        v.body["data"]["compare_at_price"],
        json!({"amount": 3200, "currency": "usd"})
    );
    // A new price above the stored former price is refused; the pair is checked as stored.
    let r = s
        .patch(
            &org,
            &format!("/v1/product-variants/{}", c.variant),
            json!({"price": {"amount": 4000, "currency": "usd"}}),
        )
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(field_of(&r), "compare_at_price.amount");
    let v = s
        .patch(
            &org,
            &format!("/v1/product-variants/{}", c.variant),
            json!({"compare_at_price": null}),
        )
        .await
        .expect(200, None);
    assert_eq!(v.body["data"]["compare_at_price"], json!(null));
    let created = s
        .post(
            &org,
            "/v1/product-variants",
            json!({"product_id": c.product, "name": "Big", "price": {"amount": 100, "currency": "gbp"},
                   "compare_at_price": {"amount": 150, "currency": "gbp"}}),
        )
        .await
        .expect(201, None);
    let got = s
        .get(&org, &format!("/v1/product-variants/{}", created.id()))
        .await
        .expect(200, None);
    assert_eq!(got.body["data"]["compare_at_price"]["amount"], 150);

    // Product details: documented keys are checked, unknown keys kept.
    let r = s
        .patch(
            &org,
            &format!("/v1/products/{}", c.product),
            json!({"details": {"reviews": [{"author": "Ann", "text": "Great", "rating": 9}]}}),
        )
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(field_of(&r), "details.reviews[0].rating");
    let r = s
        .post(
            &org,
            "/v1/products",
            json!({"brand_id": c.brand, "name": "X", "details": {"offer": {"ends_at": "2026-06-30"}}}),
        )
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(field_of(&r), "details.offer.text");
    let details = json!({
        "benefits": ["Café-quality coffee at home"],
        "stats": [{"value": 16, "label": "cups per bottle"}],
        "reviews": {"author": "Ann", "text": "Smooth.", "rating": 4.5},
        "offer": "Free tote with every order",
        "shipping": "Free shipping over $40",
        "usp": {"anything": ["kept", 1]}
    });
    let p = s
        .patch(
            &org,
            &format!("/v1/products/{}", c.product),
            json!({ "details": details }),
        )
        .await
        .expect(200, None);
    assert_eq!(p.body["data"]["details"], details);

    // Brand voice.
    let r = s
        .patch(
            &org,
            &format!("/v1/brands/{}", c.brand),
            json!({"details": {"voice": {"avoid": [1]}}}),
        )
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(field_of(&r), "details.voice.avoid[0]");
    s.patch(
        &org,
        &format!("/v1/brands/{}", c.brand),
        json!({"details": {"voice": {"description": "Warm and plain", "avoid": ["cheap"]}}}),
    )
    .await
    .expect(200, None);
}

/// The ad's first version, once it is no longer processing.
async fn settled(s: &TestServer, org: &crate::support::Org, id: &str) -> serde_json::Value {
    for _ in 0..600 {
        let ad = s
            .get(org, &format!("/v1/image-ads/{id}"))
            .await
            .expect(200, None)
            .body["data"]
            .clone();
        if ad["status"] != "processing" {
            return ad;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("ad {id} still processing after 60 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_ad_reports_its_facts_and_an_ended_offer_is_not_stated() {
    let s = TestServer::start().await;
    let org = s.org("Copy").await;
    adforge_api::store::query(
        "UPDATE wallets SET balance_cents = balance_cents + 10000 WHERE org_id = ?",
    )
    .bind(&org.id)
    .execute(&s.db.write)
    .await
    .unwrap();
    let c = s.catalog(&org).await;
    let shot = s
        .upload(
            &org,
            crate::support::png(64, 64, [200, 40, 40, 255]),
            &[("image_type", "product")],
        )
        .await
        .expect(201, None);
    s.patch(
        &org,
        &format!("/v1/product-variants/{}", c.variant),
        json!({"image_ids": [shot.id()], "price": {"amount": 2400, "currency": "usd"},
               "compare_at_price": {"amount": 3200, "currency": "usd"}}),
    )
    .await
    .expect(200, None);
    // An offer that ended long before the ad is made.
    s.patch(
        &org,
        &format!("/v1/products/{}", c.product),
        json!({"details": {"benefits": ["Light on the trail"],
                           "offer": {"text": "Free tote with your first order", "ends_at": "2020-01-31"}}}),
    )
    .await
    .expect(200, None);
    let reference = s
        .upload(&org, crate::support::jpeg(120, 150, [30, 60, 90]), &[])
        .await
        .expect(201, None);
    let id = s
        .post(
            &org,
            "/v1/image-ads",
            json!({"reference_ad_url": reference.body["data"]["src"], "brand_id": c.brand,
                   "product_id": c.product, "audience_id": c.audience,
                   "product_variant_id": c.variant, "editable": true,
                   "prompt": "mention the 25% off"}),
        )
        .await
        .expect(202, None)
        .id();
    let ad = settled(&s, &org, &id).await;
    assert_eq!(ad["status"], "completed", "{ad}");

    // The job carried the ad's creation time: the moment its words are written for.
    let (job,): (String,) = adforge_api::store::query_as("SELECT job FROM image_ads WHERE id = ?")
        .bind(&id)
        .fetch_one(&s.db.read)
        .await
        .unwrap();
    let job: serde_json::Value = serde_json::from_str(&job).unwrap();
    assert_eq!(job["created_at"], ad["created_at"], "{job}");

    // The report: every slot with its role and words, every fact with its source.
    let copy = &ad["copy"];
    assert_eq!(copy["writer"], "template", "{copy}");
    let slots = copy["slots"].as_array().unwrap();
    assert!(!slots.is_empty(), "{copy}");
    for slot in slots {
        assert!(
            slot["slot"].is_string() && slot["role"].is_string(),
            "{slot}"
        );
        assert_eq!(
            slot["shown"],
            !slot["text"].as_str().unwrap().is_empty(),
            "{slot}"
        );
    }
    let texts: Vec<String> = ad["current_json_tree"]["nodes"]
        .as_object()
        .unwrap()
        .values()
        .filter(|n| n["type"] == "TEXT" && n["visible"] != false)
        .map(|n| n["characters"].as_str().unwrap_or("").to_owned())
        .collect();
    let facts = copy["facts"].as_array().unwrap();
    for f in facts {
        assert!(!f["source"].as_str().unwrap().is_empty(), "{f}");
        assert!(
            texts.iter().any(|t| t.contains(f["text"].as_str().unwrap())
                || t.to_lowercase().contains(f["text"].as_str().unwrap())),
            "a reported fact the ad does not state: {f} in {texts:?}"
        );
    }
    // The prompt's 25% is the discount computed from the prices: stated, with that source.
    if texts.iter().any(|t| t.contains("25%")) {
        assert!(
            facts.iter().any(|f| f["text"] == "25%"
                && f["source"]
                    .as_str()
                    .unwrap()
                    .starts_with("computed: discount")),
            "{facts:?}"
        );
    }
    // The ended offer is nowhere: not in the ad, not in the report.
    assert!(
        !texts.iter().any(|t| t.to_lowercase().contains("tote")),
        "{texts:?}"
    );
    assert!(!copy.to_string().to_lowercase().contains("tote"), "{copy}");
}

/// Issue 39: figures that collide (a $24 price beside a $30 former price, a 30-day
/// guarantee, a shipping line of 24h) are each credited, in the ad's `copy` report, to the
/// input their words came from: "30-day" to the guarantee, never to the $30 price; "24h" to
/// the shipping line, never to the $24.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colliding_figures_are_credited_to_the_input_they_came_from() {
    let s = TestServer::start().await;
    let org = s.org("Collide").await;
    adforge_api::store::query(
        "UPDATE wallets SET balance_cents = balance_cents + 10000 WHERE org_id = ?",
    )
    .bind(&org.id)
    .execute(&s.db.write)
    .await
    .unwrap();
    let c = s.catalog(&org).await;
    let shot = s
        .upload(
            &org,
            crate::support::png(64, 64, [200, 40, 40, 255]),
            &[("image_type", "product")],
        )
        .await
        .expect(201, None);
    s.patch(
        &org,
        &format!("/v1/product-variants/{}", c.variant),
        json!({"image_ids": [shot.id()], "price": {"amount": 2400, "currency": "usd"},
               "compare_at_price": {"amount": 3000, "currency": "usd"}}),
    )
    .await
    .expect(200, None);
    let guarantee = "30-day money-back guarantee on every pair, no questions asked";
    let shipping = "Ships within 24h from our workshop, with free returns";
    s.patch(
        &org,
        &format!("/v1/products/{}", c.product),
        json!({"details": {"guarantee": guarantee, "shipping": shipping}}),
    )
    .await
    .expect(200, None);
    // The voice avoids the stock lines ("Discover what makes …", "Made for …"), so the
    // supporting line is the guarantee's or the shipping line's.
    s.patch(
        &org,
        &format!("/v1/brands/{}", c.brand),
        json!({"details": {"voice": {"description": "Warm and plain", "avoid": ["discover", "made for"]}}}),
    )
    .await
    .expect(200, None);
    let reference = s
        .upload(&org, crate::support::jpeg(120, 150, [30, 60, 90]), &[])
        .await
        .expect(201, None);
    let id = s
        .post(
            &org,
            "/v1/image-ads",
            json!({"reference_ad_url": reference.body["data"]["src"], "brand_id": c.brand,
                   "product_id": c.product, "audience_id": c.audience,
                   "product_variant_id": c.variant, "editable": true}),
        )
        .await
        .expect(202, None)
        .id();
    let ad = settled(&s, &org, &id).await;
    assert_eq!(ad["status"], "completed", "{ad}");
    let copy = &ad["copy"];
    let facts = copy["facts"].as_array().unwrap();
    // The words of each input a figure may be credited to, as the ad writes them.
    let words = |source: &str| -> Option<&str> {
        Some(match source {
            "variant.price" => "$24",
            "variant.compare_at_price" => "$30",
            "computed: variant.compare_at_price minus variant.price" => "$6",
            "computed: discount from variant.compare_at_price and variant.price" => "20%",
            "product.details.guarantee" => guarantee,
            "product.details.shipping" => shipping,
            "variant.name" => "Red 42",
            _ => return None,
        })
    };
    let mut figures = Vec::new();
    for f in facts {
        let (text, kind, source) = (
            f["text"].as_str().unwrap(),
            f["kind"].as_str().unwrap(),
            f["source"].as_str().unwrap(),
        );
        if !matches!(kind, "price" | "percent" | "number") {
            continue;
        }
        figures.push(text.to_lowercase());
        let want = match text {
            "30-day" => Some("product.details.guarantee"),
            "24h" => Some("product.details.shipping"),
            _ => None,
        };
        assert!(
            want.is_none_or(|w| w == source),
            "\"{text}\" credited to {source}: {facts:?}"
        );
        let form = text.to_lowercase();
        let form = form.trim_start_matches('-');
        let said = words(source).map(str::to_lowercase);
        assert!(
            said.as_deref().is_some_and(|w| w.contains(form)),
            "\"{text}\" credited to {source}, which does not say it: {facts:?}"
        );
    }
    // The colliding figures were said (else this test would prove nothing).
    assert!(
        figures.iter().any(|f| f == "30-day" || f == "24h"),
        "neither the guarantee's nor the shipping line's figure was stated: {copy}"
    );
}
