//! The Figma connection (`/v1/integrations/figma`): the token stored sealed and never
//! shown, the secrets key of the embedded default and of a cluster, and the dashboard's Figma
//! page (connect, sync a pasted link, our render beside Figma's, sync again, disconnect).

use reqwest::Method;
use serde_json::json;

use crate::figma::{KEY_B64, TOKEN, setup};
use crate::figma_server::FigmaServer;
use crate::support::TestServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_is_stored_sealed_and_never_shown() {
    let st = setup().await;
    let s = &st.s;
    let get = s
        .get(&st.org, "/v1/integrations/figma")
        .await
        .expect(200, None);
    assert_eq!(get.body["data"]["connected"], false);
    assert!(get.body["data"]["token_last4"].is_null());
    let put = s
        .call(
            Method::PUT,
            "/v1/integrations/figma",
            Some(&st.org.key),
            Some(json!({"access_token": TOKEN})),
        )
        .await
        .expect(200, None);
    assert_eq!(put.body["data"]["connected"], true);
    assert_eq!(put.body["data"]["token_last4"], "wXc4");
    let get = s
        .get(&st.org, "/v1/integrations/figma")
        .await
        .expect(200, None);
    assert_eq!(get.body["data"]["token_last4"], "wXc4");
    assert!(!put.body.to_string().contains(TOKEN) && !get.body.to_string().contains(TOKEN));
    // At rest: sealed, not the token, not even a piece of it beyond the last four.
    let (sealed,): (String,) =
        adforge_api::store::query_as("SELECT token_sealed FROM figma_connections WHERE org_id = ?")
            .bind(&st.org.id)
            .fetch_one(&s.db.read)
            .await
            .unwrap();
    assert!(
        sealed.starts_with("v1.") && !sealed.contains("figd_") && !sealed.contains("TestToken")
    );
    // Opened with the server's key, it is the token.
    let key = adforge_worker::secrets::SecretKey::from_base64(KEY_B64).unwrap();
    let plain = key
        .open(
            &sealed,
            &adforge_worker::protocol::token_context(&st.org.id),
        )
        .unwrap();
    assert_eq!(plain, TOKEN.as_bytes());
    // Bad tokens and the scopes.
    for bad in [
        json!({"access_token": "short"}),
        json!({"access_token": "has a space in it"}),
        json!({}),
    ] {
        s.call(
            Method::PUT,
            "/v1/integrations/figma",
            Some(&st.org.key),
            Some(bad),
        )
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    }
    let read_only = s.key(&st.org.id, "integrations:read", None).await;
    s.call(
        Method::PUT,
        "/v1/integrations/figma",
        Some(&read_only),
        Some(json!({"access_token": TOKEN})),
    )
    .await
    .expect(403, Some("FORBIDDEN"));
    s.call(
        Method::DELETE,
        "/v1/integrations/figma",
        Some(&read_only),
        None,
    )
    .await
    .expect(403, Some("FORBIDDEN"));
    let ads_only = s.key(&st.org.id, "image_ads:read", None).await;
    s.call(Method::GET, "/v1/integrations/figma", Some(&ads_only), None)
        .await
        .expect(403, Some("FORBIDDEN"));
    // Another organisation sees nothing of it.
    let other = s.org("Other").await;
    let o = s
        .get(&other, "/v1/integrations/figma")
        .await
        .expect(200, None);
    assert_eq!(o.body["data"]["connected"], false);
    // Disconnect: idempotent, and the row is gone.
    for _ in 0..2 {
        let d = s
            .delete(&st.org, "/v1/integrations/figma")
            .await
            .expect(200, None);
        assert_eq!(d.body["data"]["connected"], false);
    }
    let n: (i64,) =
        adforge_api::store::query_as("SELECT count(*) FROM figma_connections WHERE org_id = ?")
            .bind(&st.org.id)
            .fetch_one(&s.db.read)
            .await
            .unwrap();
    assert_eq!(n.0, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_secrets_key_of_the_embedded_default_and_of_a_cluster() {
    // No key given: SQLite alone (the embedded default) generates one into the data dir;
    // with --database-url (a cluster's shared database) none is made up, and storing a
    // token says how to set one.
    let s = TestServer::start().await;
    let org = s.org_unlimited("Keys").await;
    let put = s
        .call(
            Method::PUT,
            "/v1/integrations/figma",
            Some(&org.key),
            Some(json!({"access_token": TOKEN})),
        )
        .await;
    let file = s.data_dir.join("secrets.key");
    if std::env::var_os("ADFORGE_TEST_POSTGRES").is_some_and(|v| v == "1") {
        let r = put.expect(503, Some("SERVICE_UNAVAILABLE"));
        assert!(
            r.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("ADFORGE_SECRETS_KEY")
        );
        assert!(!file.exists());
    } else {
        put.expect(200, None);
        let text = std::fs::read_to_string(&file).unwrap();
        adforge_worker::secrets::SecretKey::from_base64(&text).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_connects_syncs_and_shows_both_renders() {
    use adforge_dashboard::members::Role;
    let st = setup().await;
    let b = crate::dashboard::member(
        &st.s,
        &st.org.id,
        "designer@example.com",
        Role::Member,
        false,
    )
    .await;
    let page = b.get("/dashboard/figma").await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.text.contains("Not connected"));
    // Connect: the page shows the last four characters, never the token.
    let done = b
        .submit(
            "/dashboard/figma",
            "/dashboard/figma/connect",
            &[("access_token", TOKEN)],
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.text);
    let page = b.get("/dashboard/figma").await;
    assert!(page.text.contains("…wXc4"), "{}", page.text);
    assert!(!page.text.contains(TOKEN));
    // A bad link is the form's error, with the API's status.
    let bad = b
        .submit(
            "/dashboard/figma",
            "/dashboard/figma/sync",
            &[
                ("figma_url", "https://example.com/x"),
                ("brand_id", &st.brand),
                ("product_id", &st.product),
                ("audience_id", &st.audience),
            ],
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    assert!(bad.text.contains("figma.com"), "{}", bad.text);
    // Sync a pasted frame link.
    let link = FigmaServer::ad_link();
    let done = b
        .submit(
            "/dashboard/figma",
            "/dashboard/figma/sync",
            &[
                ("figma_url", &link),
                ("brand_id", &st.brand),
                ("product_id", &st.product),
                ("audience_id", &st.audience),
            ],
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.text);
    let id = done.location().split('#').nth(1).unwrap().to_owned();
    assert!(id.starts_with("ia_"), "{}", done.location());
    let ad = st.settled(&id).await;
    assert_eq!(ad["status"], "completed", "{ad}");
    // Our render beside Figma's.
    let page = b.get("/dashboard/figma").await;
    for url in [
        ad["image_url"].as_str().unwrap(),
        ad["figma_render_url"].as_str().unwrap(),
    ] {
        assert!(
            page.text.contains(&format!(r#"src="{url}""#)),
            "{url} in {}",
            page.text
        );
    }
    assert!(
        page.text.contains("Helvetica Neue"),
        "the missing font is named"
    );
    // Sync again (the frame is unchanged: still one version), then disconnect.
    let done = b
        .submit(
            "/dashboard/figma",
            &format!("/dashboard/figma/{id}/resync"),
            &[],
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.text);
    assert_eq!(st.settled(&id).await["status"], "completed");
    assert_eq!(st.versions(&id).await.len(), 1);
    let done = b
        .submit("/dashboard/figma", "/dashboard/figma/disconnect", &[])
        .await;
    assert_eq!(done.status, 303);
    assert!(
        b.get("/dashboard/figma")
            .await
            .text
            .contains("Not connected")
    );
    // Another organisation's ad is not found.
    let other = st.s.org("Elsewhere").await;
    let stranger =
        crate::dashboard::member(&st.s, &other.id, "x@example.com", Role::Member, false).await;
    let r = stranger
        .submit(
            "/dashboard/figma",
            &format!("/dashboard/figma/{id}/resync"),
            &[],
        )
        .await;
    assert_eq!(r.status, 404);
}
