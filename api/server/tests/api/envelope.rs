//! The envelope, request ids, error shapes for bad input, and the OpenAPI document.

use reqwest::Method;
use serde_json::json;

use crate::support::{TestServer, send};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn success_and_error_envelopes_carry_meta() {
    let s = TestServer::start().await;
    let org = s.org("Env").await;
    let r = s
        .post(&org, "/v1/brands", json!({"name": "Envelope"}))
        .await
        .expect(201, None);
    let rid = r.body["meta"]["request_id"].as_str().unwrap();
    assert!(rid.starts_with("req_"));
    assert_eq!(r.header("x-request-id"), Some(rid));
    assert!(adforge_api::timestamp::parse(r.body["meta"]["timestamp"].as_str().unwrap()).is_some());
    assert_eq!(r.body["data"]["color_palettes"], json!({}));
    assert_eq!(r.body["data"]["fonts"], json!([]));
    assert_eq!(r.body["data"]["logo_image_ids"], json!([]));

    let e = s
        .get(&org, "/v1/brands/brand_nope")
        .await
        .expect(404, Some("BRAND_NOT_FOUND"));
    assert_eq!(
        e.header("x-request-id"),
        e.body["meta"]["request_id"].as_str()
    );
    assert_ne!(e.body["meta"]["request_id"], r.body["meta"]["request_id"]);

    s.get(&org, "/v1/unknown")
        .await
        .expect(404, Some("NOT_FOUND"));
    s.get(&org, "/v1/brands/x/y/z")
        .await
        .expect(404, Some("NOT_FOUND"));
    s.call(Method::PUT, "/v1/brands", Some(&org.key), None)
        .await
        .expect(404, Some("NOT_FOUND"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_bodies_name_the_field() {
    let s = TestServer::start().await;
    let org = s.org("Bad").await;
    let field = |r: &crate::support::Reply| {
        r.body["error"]["details"][0]["field"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };

    let raw = |body: &'static str| {
        s.request(Method::POST, "/v1/brands")
            .header("x-api-key", &org.key)
            .header("content-type", "application/json")
            .body(body)
    };
    let r = send(raw("{\"name\": "))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(field(&r), "body");
    let r = send(raw("[]")).await.expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(field(&r), "body");
    let r = send(
        s.request(Method::POST, "/v1/brands")
            .header("x-api-key", &org.key)
            .body("name=x"),
    )
    .await;
    assert_eq!(
        field(&r.expect(400, Some("VALIDATION_ERROR"))),
        "Content-Type"
    );

    for (body, expected) in [
        (json!({}), "name"),
        (json!({"name": 5}), "name"),
        (json!({"name": ""}), "name"),
        (json!({"name": "x".repeat(201)}), "name"),
        (json!({"name": "x", "colour": "red"}), "colour"),
        (
            json!({"name": "x", "fonts": [{"name": "Inter", "role": "title"}]}),
            "fonts[0].role",
        ),
        (
            json!({"name": "x", "fonts": [{"name": ""}]}),
            "fonts[0].name",
        ),
        (
            json!({"name": "x", "color_palettes": {"primary": ["#12345G"]}}),
            "color_palettes.primary[0]",
        ),
        (
            json!({"name": "x", "color_palettes": {"primary": "#123456"}}),
            "color_palettes.primary",
        ),
        (json!({"name": "x", "details": [1, 2]}), "details"),
        (
            json!({"name": "x", "details": {"blob": "y".repeat(17 * 1024)}}),
            "details",
        ),
    ] {
        let r = s
            .post(&org, "/v1/brands", body.clone())
            .await
            .expect(400, Some("VALIDATION_ERROR"));
        assert_eq!(field(&r), expected, "for {body}: {}", r.body);
        assert!(
            !r.body["error"]["details"][0]["message"]
                .as_str()
                .unwrap()
                .is_empty()
        );
    }

    let c = s.catalog(&org).await;
    for (body, expected) in [
        (
            json!({"product_id": c.product, "name": "v", "price": {"amount": -1, "currency": "usd"}}),
            "price.amount",
        ),
        (
            json!({"product_id": c.product, "name": "v", "price": {"amount": 100, "currency": "USD"}}),
            "price.currency",
        ),
        (
            json!({"product_id": c.product, "name": "v", "price": {"amount": 1e30, "currency": "usd"}}),
            "price.amount",
        ),
        (
            json!({"product_id": c.product, "name": "v", "image_ids": "img_1"}),
            "image_ids",
        ),
    ] {
        let r = s
            .post(&org, "/v1/product-variants", body.clone())
            .await
            .expect(400, Some("VALIDATION_ERROR"));
        assert_eq!(field(&r), expected, "for {body}: {}", r.body);
    }
    // Several problems at once are all reported.
    let r = s
        .patch(
            &org,
            &format!("/v1/brands/{}", c.brand),
            json!({"name": null, "fonts": null}),
        )
        .await;
    let r = r.expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(r.body["error"]["details"].as_array().unwrap().len(), 2);
    // Query parameters too.
    let r = s
        .get(&org, "/v1/brands?limit=500&bogus=1")
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    let fields: Vec<_> = r.body["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["field"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(fields, ["limit", "bogus"]);
    s.delete(&org, &format!("/v1/products/{}?cascade=perhaps", c.product))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_describes_every_route_with_scopes_and_errors() {
    let s = TestServer::start().await;
    let doc = s
        .call(Method::GET, "/openapi.json", None, None)
        .await
        .expect(200, None)
        .body;
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(
        doc["components"]["securitySchemes"]["api_key"]["name"],
        "X-API-Key"
    );
    let codes: Vec<&str> = doc["components"]["schemas"]["ErrorCode"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    for code in [
        "VALIDATION_ERROR",
        "UNAUTHORIZED",
        "FORBIDDEN",
        "INSUFFICIENT_PERMISSIONS",
        "NOT_FOUND",
        "RESOURCE_HAS_CHILDREN",
        "IDEMPOTENCY_CONFLICT",
        "PAYLOAD_TOO_LARGE",
        "RATE_LIMIT_EXCEEDED",
        "IMAGE_INVALID_FORMAT",
        "IMAGE_UNREADABLE",
    ] {
        assert!(codes.contains(&code), "{code} missing from ErrorCode");
    }
    let expected = [
        ("/v1/brands", &["get", "post"][..]),
        ("/v1/brands/{id}", &["get", "patch", "delete"]),
        ("/v1/brands/{id}/duplicate", &["post"]),
        ("/v1/products", &["get", "post"]),
        ("/v1/products/{id}", &["get", "patch", "delete"]),
        ("/v1/products/{id}/duplicate", &["post"]),
        ("/v1/products/{id}/archive", &["post"]),
        ("/v1/products/{id}/unarchive", &["post"]),
        ("/v1/product-variants", &["get", "post"]),
        ("/v1/product-variants/{id}", &["get", "patch", "delete"]),
        ("/v1/audiences", &["get", "post"]),
        ("/v1/audiences/{id}", &["get", "patch", "delete"]),
        ("/v1/images", &["get", "post"]),
        ("/v1/images/{id}", &["get", "delete"]),
        ("/v1/search", &["get"]),
    ];
    for (path, methods) in expected {
        for m in methods {
            let op = &doc["paths"][path][m];
            assert!(op.is_object(), "{m} {path} missing");
            let scopes = op["security"][0]["api_key"]
                .as_array()
                .unwrap_or_else(|| panic!("{m} {path} has no scope"));
            assert!(!scopes.is_empty());
            for status in ["401", "403", "429"] {
                assert!(
                    op["responses"][status].is_object(),
                    "{m} {path} lacks {status}"
                );
            }
        }
    }
    // And the served document is the one `adforge openapi` prints.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_adforge"))
        .arg("openapi")
        .output()
        .unwrap();
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed, doc);
}
