//! Design-tool sync's errors: Figma's 403, 404 and 429 (with its `Retry-After`) as codes on
//! the ad, and every check a sync request gets before anything is queued (the new codes
//! `FIGMA_NOT_CONNECTED` and `IMAGE_AD_NOT_SYNCED` among them).

use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::figma::{TOKEN, setup, setup_with};
use crate::figma_server::{AD_FILE, FigmaServer, Planned};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn figmas_refusals_become_codes_on_the_ad() {
    let st = setup_with("figd_the-server-expects-another").await;
    st.connect().await;
    let (balance0, _) = st.wallet().await;
    // 403: Figma refuses the token.
    let id = st.sync(st.body(json!({}))).await;
    let ad = st.settled(&id).await;
    assert_eq!(ad["status"], "failed");
    assert_eq!(ad["error"]["code"], "FIGMA_TOKEN_INVALID", "{ad}");
    assert!(
        ad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("PUT /v1/integrations/figma")
    );
    assert!(!ad["error"]["message"].as_str().unwrap().contains(TOKEN));
    assert_eq!(
        st.wallet().await,
        (balance0, 0),
        "a failed sync is not charged"
    );

    let st = setup().await;
    st.connect().await;
    // 404: no such file; and a file without the node.
    let id = st
        .sync(
            st.body(json!({"figma_url": "https://www.figma.com/design/NoSuchFile/x?node-id=1-2"})),
        )
        .await;
    let ad = st.settled(&id).await;
    assert_eq!(ad["error"]["code"], "FIGMA_NOT_FOUND", "{ad}");
    let body =
        st.body(json!({"figma_url": null, "figma_file_key": AD_FILE, "figma_node_id": "99-99"}));
    let id = st.sync(body).await;
    let ad = st.settled(&id).await;
    assert_eq!(ad["error"]["code"], "FIGMA_NOT_FOUND", "{ad}");
    assert!(ad["error"]["message"].as_str().unwrap().contains("99:99"));
    // 429 asking for a wait longer than the job waits: failed at once, with the wait.
    st.figma.plan(&[Planned::RateLimited(3600)]);
    let id = st.sync(st.body(json!({}))).await;
    let ad = st.settled(&id).await;
    assert_eq!(ad["error"]["code"], "FIGMA_RATE_LIMITED", "{ad}");
    assert!(ad["error"]["message"].as_str().unwrap().contains("3600"));
    // 429 with a short Retry-After: waited out, then synced; the retry came no sooner than
    // Figma asked.
    let before = st.figma.hits().len();
    st.figma.plan(&[Planned::RateLimited(1)]);
    let id = st.sync(st.body(json!({}))).await;
    let ad = st.settled(&id).await;
    assert_eq!(ad["status"], "completed", "{ad}");
    let nodes_calls: Vec<_> = st.figma.hits()[before..]
        .iter()
        .filter(|h| h.path.ends_with("/nodes"))
        .cloned()
        .collect();
    assert_eq!(nodes_calls.len(), 2);
    assert!(nodes_calls[1].at.duration_since(nodes_calls[0].at) >= Duration::from_secs(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_requests_are_checked_before_anything_is_queued() {
    let st = setup().await;
    // Not connected: 422 FIGMA_NOT_CONNECTED, nothing held.
    st.s.post(&st.org, "/v1/image-ads/sync", st.body(json!({})))
        .await
        .expect(422, Some("FIGMA_NOT_CONNECTED"));
    st.connect().await;
    for (body, field) in [
        (
            st.body(json!({"figma_url": "https://evil.example/design/K/x?node-id=1-2"})),
            "figma_url",
        ),
        (
            st.body(json!({"figma_url": "https://www.figma.com/design/K/x"})),
            "figma_url",
        ),
        (st.body(json!({"figma_url": null})), "figma_url"),
        (st.body(json!({"figma_file_key": "K"})), "figma_url"),
        (
            st.body(json!({"figma_url": null, "figma_file_key": "K!", "figma_node_id": "1:2"})),
            "figma_file_key",
        ),
        (json!({"figma_url": FigmaServer::ad_link()}), "brand_id"),
        (
            json!({"image_ad_id": "ia_x", "brand_id": st.brand}),
            "brand_id",
        ),
    ] {
        let r =
            st.s.post(&st.org, "/v1/image-ads/sync", body)
                .await
                .expect(400, Some("VALIDATION_ERROR"));
        assert_eq!(r.body["error"]["details"][0]["field"], field, "{}", r.body);
    }
    st.s.post(
        &st.org,
        "/v1/image-ads/sync",
        json!({"image_ad_id": "ia_missing"}),
    )
    .await
    .expect(404, Some("IMAGE_AD_NOT_FOUND"));
    // Relations as POST /v1/image-ads checks them.
    let other = st.s.catalog(&st.org).await;
    st.s.post(
        &st.org,
        "/v1/image-ads/sync",
        st.body(json!({"product_id": other.product})),
    )
    .await
    .expect(422, Some("PRODUCT_BRAND_MISMATCH"));
    // Balance.
    adforge_api::store::query("UPDATE wallets SET balance_cents = 100 WHERE org_id = ?")
        .bind(&st.org.id)
        .execute(&st.s.db.write)
        .await
        .unwrap();
    st.s.post(&st.org, "/v1/image-ads/sync", st.body(json!({})))
        .await
        .expect(402, Some("INSUFFICIENT_BALANCE"));
    adforge_api::store::query("UPDATE wallets SET balance_cents = 5000 WHERE org_id = ?")
        .bind(&st.org.id)
        .execute(&st.s.db.write)
        .await
        .unwrap();
    // A re-sync while processing: 422 IMAGE_AD_NOT_COMPLETED.
    st.figma.plan(&[Planned::Slow(Duration::from_secs(3))]);
    let id = st.sync(st.body(json!({}))).await;
    st.s.post(&st.org, "/v1/image-ads/sync", json!({"image_ad_id": id}))
        .await
        .expect(422, Some("IMAGE_AD_NOT_COMPLETED"));
    assert_eq!(st.settled(&id).await["status"], "completed");
    // Another frame for a synced ad: 400.
    st.s.post(
        &st.org,
        "/v1/image-ads/sync",
        json!({"image_ad_id": id, "figma_url": "https://www.figma.com/design/Other/x?node-id=1-2"}),
    )
    .await
    .expect(400, Some("VALIDATION_ERROR"));
    // An ad not made from Figma (this one, its frame forgotten): 422 IMAGE_AD_NOT_SYNCED.
    adforge_api::store::query(
        "UPDATE image_ads SET figma_file_key = NULL, figma_node_id = NULL WHERE id = ?",
    )
    .bind(&id)
    .execute(&st.s.db.write)
    .await
    .unwrap();
    st.s.post(&st.org, "/v1/image-ads/sync", json!({"image_ad_id": id}))
        .await
        .expect(422, Some("IMAGE_AD_NOT_SYNCED"));
    // As docs/figma.md's table says: `fill_slots` may come with a re-sync (still 422), other
    // inputs may not, whatever ad is named (400 naming the input, before the ad is read).
    st.s.post(
        &st.org,
        "/v1/image-ads/sync",
        json!({"image_ad_id": id, "fill_slots": true}),
    )
    .await
    .expect(422, Some("IMAGE_AD_NOT_SYNCED"));
    let r =
        st.s.post(
            &st.org,
            "/v1/image-ads/sync",
            json!({"image_ad_id": id, "prompt": "Brighter"}),
        )
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(
        r.body["error"]["details"][0]["field"], "prompt",
        "{}",
        r.body
    );
    // Disconnected: a re-sync is refused, and the stored jobs no longer hold the token.
    let (id2,) = (st.sync(st.body(json!({}))).await,);
    st.settled(&id2).await;
    st.s.delete(&st.org, "/v1/integrations/figma")
        .await
        .expect(200, None);
    st.s.post(&st.org, "/v1/image-ads/sync", json!({"image_ad_id": id2}))
        .await
        .expect(422, Some("FIGMA_NOT_CONNECTED"));
    let (job,): (String,) = adforge_api::store::query_as("SELECT job FROM image_ads WHERE id = ?")
        .bind(&id2)
        .fetch_one(&st.s.db.read)
        .await
        .unwrap();
    assert!(job.contains("\"token_sealed\":\"\""), "{job}");
    // The scope: image_ads:write.
    let read = st.s.key(&st.org.id, "image_ads:read", None).await;
    st.s.call(
        Method::POST,
        "/v1/image-ads/sync",
        Some(&read),
        Some(st.body(json!({}))),
    )
    .await
    .expect(403, Some("FORBIDDEN"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_edit_then_a_resync_numbers_on() {
    // A synced ad, an edit whose render fails (an image that 404s), then a re-sync of the
    // changed frame: the new import is version 3, after the failed edit's version 2.
    let st = setup().await;
    st.connect().await;
    let id = st.sync(st.body(json!({}))).await;
    let ad = st.settled(&id).await;
    assert_eq!(ad["status"], "completed", "{ad}");
    let mut tree = ad["current_json_tree"].clone();
    let photo = tree["nodes"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, n)| n["name"] == "photo")
        .unwrap()
        .0
        .clone();
    tree["nodes"][&photo]["fills"][0]["imageFillUrl"] =
        json!(format!("{}/downloads/images/missing", st.figma.base));
    st.s.patch(
        &st.org,
        &format!("/v1/image-ads/{id}"),
        json!({"current_json_tree": tree}),
    )
    .await
    .expect(200, None);
    let failed = st.settled(&id).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    st.figma.put_file(
        AD_FILE,
        crate::figma_server::fixture("handmade-ad.v2.nodes.json"),
    );
    st.s.post(&st.org, "/v1/image-ads/sync", json!({"image_ad_id": id}))
        .await
        .expect(202, None);
    let v3 = st.settled(&id).await;
    assert_eq!(v3["status"], "completed", "{v3}");
    let numbers: Vec<(i64, String)> = st
        .versions(&id)
        .await
        .iter()
        .map(|v| {
            (
                v["version_number"].as_i64().unwrap(),
                v["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        numbers,
        [
            (1, "completed".to_owned()),
            (2, "failed".to_owned()),
            (3, "completed".to_owned())
        ]
    );
}
