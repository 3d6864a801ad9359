//! The OpenAPI document states what the server does: the statuses each operation can
//! answer, the headers every response carries, and the limits as schema keywords. The
//! headers are checked against live responses, so the document cannot promise one the
//! server does not send. (scripts/schemathesis checks the same against generated requests.)

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::TestServer;

fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            out.push((method.clone(), path.clone(), op));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_declares_its_errors_and_headers() {
    let s = TestServer::start().await;
    let doc = s
        .call(Method::GET, "/openapi.json", None, None)
        .await
        .expect(200, None)
        .body;
    // Operation ids name one operation each (links and generated clients rely on it).
    let mut ids = std::collections::BTreeMap::new();
    for (method, path, op) in operations(&doc) {
        if let Some(id) = op["operationId"].as_str() {
            let earlier = ids.insert(id.to_string(), format!("{method} {path}"));
            assert!(
                earlier.is_none(),
                "operationId {id} is used twice: {earlier:?}, {method} {path}"
            );
        }
    }
    for (method, path, op) in operations(&doc) {
        let responses = op["responses"].as_object().unwrap();
        for status in ["400", "401", "403", "429", "500", "503"] {
            assert!(
                responses.contains_key(status),
                "{method} {path} lacks {status}"
            );
        }
        assert_eq!(
            op.get("requestBody").is_some(),
            responses.contains_key("413"),
            "{method} {path}: 413 goes with a body"
        );
        for (status, response) in responses {
            let headers = &response["headers"];
            assert_eq!(
                headers["X-Request-Id"]["required"], true,
                "{method} {path} {status}"
            );
            let rate = status != "401";
            for h in ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"] {
                assert_eq!(
                    headers[h]["required"].as_bool().unwrap_or(false),
                    rate,
                    "{method} {path} {status} {h}"
                );
            }
            assert_eq!(
                headers["Retry-After"]["required"]
                    .as_bool()
                    .unwrap_or(false),
                status == "429" || status == "503",
                "{method} {path} {status}"
            );
            // A download's success is its file (a batch's ZIP); every other answer, and
            // every error, is JSON.
            let binary = status.starts_with('2')
                && response["content"]["application/zip"].is_object()
                && path.ends_with("/download");
            assert!(
                binary || response["content"]["application/json"].is_object(),
                "{method} {path} {status} is not JSON"
            );
        }
    }
    // The statuses the issue found missing.
    for (method, path) in [
        ("delete", "/v1/brands/{id}"),
        ("delete", "/v1/products/{id}"),
        ("post", "/v1/brands/{id}/duplicate"),
        ("post", "/v1/products/{id}/duplicate"),
        ("post", "/v1/products/{id}/archive"),
        ("post", "/v1/products/{id}/unarchive"),
    ] {
        assert!(
            doc["paths"][path][method]["responses"]["400"]["description"]
                .as_str()
                .unwrap()
                .starts_with("VALIDATION_ERROR"),
            "{method} {path}"
        );
    }

    // Limits are schema keywords, not prose only.
    let param = |path: &str, name: &str| -> Value {
        doc["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()["schema"]
            .clone()
    };
    for path in [
        "/v1/brands",
        "/v1/products",
        "/v1/product-variants",
        "/v1/audiences",
        "/v1/images",
        "/v1/image-ads",
    ] {
        let limit = param(path, "limit");
        assert_eq!(
            (limit["minimum"].as_i64(), limit["maximum"].as_i64()),
            (Some(1), Some(100)),
            "{path}"
        );
    }
    assert_eq!(param("/v1/search", "limit")["maximum"], 25);
    assert_eq!(param("/v1/search", "query")["maxLength"], 200);
    let schemas = &doc["components"]["schemas"];
    for body in [
        "BrandCreate",
        "ProductCreate",
        "VariantCreate",
        "AudienceCreate",
    ] {
        let name = &schemas[body]["properties"]["name"];
        assert_eq!(
            (name["minLength"].as_i64(), name["maxLength"].as_i64()),
            (Some(1), Some(200)),
            "{body}"
        );
        assert!(
            name["pattern"]
                .as_str()
                .unwrap()
                .contains("\\u202A-\\u202E")
        );
        assert_eq!(
            schemas[body]["properties"]["description"]["maxLength"],
            5000
        );
    }
    assert_eq!(
        schemas["ImageType"]["enum"],
        json!(["product", "lifestyle", "logo", "background", "other"])
    );
    assert_eq!(
        schemas["ImageUpload"]["properties"]["image_type"]["$ref"],
        "#/components/schemas/ImageType"
    );
    // Every `Idempotency-Key` parameter states its format, and its operation the 409 of a
    // key still in flight.
    for (method, path, op) in operations(&doc) {
        for p in op["parameters"].as_array().into_iter().flatten() {
            if p["name"] == "Idempotency-Key" {
                assert_eq!(p["schema"]["maxLength"], 255, "{method} {path}");
                assert!(
                    op["responses"]["409"]["description"]
                        .as_str()
                        .unwrap()
                        .contains("IDEMPOTENCY_CONFLICT"),
                    "{method} {path}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_headers_are_sent() {
    let s = TestServer::start().await;
    let org = s.org("Doc").await;
    // 200, 201, 400, 404 and 401: each carries what the document says it does.
    let replies = [
        s.get(&org, "/v1/brands").await.expect(200, None),
        s.post(&org, "/v1/brands", json!({"name": "Acme"}))
            .await
            .expect(201, None),
        s.delete(&org, "/v1/brands/brand_missing?cascade=maybe")
            .await
            .expect(400, Some("VALIDATION_ERROR")),
        s.get(&org, "/v1/brands/brand_missing")
            .await
            .expect(404, Some("BRAND_NOT_FOUND")),
    ];
    for r in &replies {
        assert!(r.header("x-request-id").unwrap().starts_with("req_"));
        for h in ["ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"] {
            r.header(h).unwrap().parse::<u64>().unwrap();
        }
    }
    let r = s
        .call(Method::GET, "/v1/brands", None, None)
        .await
        .expect(401, Some("UNAUTHORIZED"));
    assert!(r.header("x-request-id").unwrap().starts_with("req_"));
    assert!(r.header("ratelimit-limit").is_none());
}
