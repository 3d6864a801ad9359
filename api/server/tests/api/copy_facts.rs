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
