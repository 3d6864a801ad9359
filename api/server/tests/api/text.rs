//! What text and numbers the API stores: control characters and bidirectional overrides
//! in names and other single-line fields are refused, descriptions keep tab and line
//! breaks only, and integers no 64-bit number holds are refused instead of rounded.

use reqwest::Method;
use serde_json::json;

use crate::support::{Org, TestServer, png, send};

/// Characters no single-line field accepts, each with the code point the error names.
const REFUSED_IN_NAMES: &[(&str, &str)] = &[
    ("\u{0}", "U+0000"),
    ("\u{1b}[31m", "U+001B"),
    ("\t", "U+0009"),
    ("\n", "U+000A"),
    ("\u{7f}", "U+007F"),
    ("\u{85}", "U+0085"),
    ("\u{9b}", "U+009B"),
    ("\u{2028}", "U+2028"),
    ("\u{202a}", "U+202A"),
    ("\u{202e}", "U+202E"),
    ("\u{2066}", "U+2066"),
    ("\u{2069}", "U+2069"),
];

#[track_caller]
fn assert_field_error(reply: &crate::support::Reply, field: &str, needle: &str) {
    assert_eq!(reply.status.as_u16(), 400, "body: {}", reply.body);
    assert_eq!(reply.code(), "VALIDATION_ERROR", "body: {}", reply.body);
    let details = reply.body["error"]["details"].as_array().unwrap();
    assert!(
        details
            .iter()
            .any(|d| d["field"] == field && d["message"].as_str().unwrap_or("").contains(needle)),
        "expected an error on `{field}` mentioning {needle}: {}",
        reply.body
    );
}

async fn brand(s: &TestServer, org: &Org) -> String {
    s.post(org, "/v1/brands", json!({"name": "Acme"}))
        .await
        .expect(201, None)
        .id()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_refuse_control_characters_and_bidi_overrides() {
    let s = TestServer::start().await;
    let org = s.org("Text").await;
    let brand_id = brand(&s, &org).await;
    let product_id = s
        .post(
            &org,
            "/v1/products",
            json!({"brand_id": brand_id, "name": "Tee"}),
        )
        .await
        .expect(201, None)
        .id();

    for (bad, code_point) in REFUSED_IN_NAMES {
        // In the middle of the name, where trimming cannot remove it.
        let name = format!("Ac{bad}me");
        let r = s.post(&org, "/v1/brands", json!({"name": name})).await;
        assert_field_error(&r, "name", code_point);
        let r = s
            .patch(
                &org,
                &format!("/v1/brands/{brand_id}"),
                json!({"name": name}),
            )
            .await;
        assert_field_error(&r, "name", code_point);
        let r = s
            .post(
                &org,
                "/v1/products",
                json!({"brand_id": brand_id, "name": name}),
            )
            .await;
        assert_field_error(&r, "name", code_point);
        let r = s
            .post(
                &org,
                "/v1/audiences",
                json!({"product_id": product_id, "name": name}),
            )
            .await;
        assert_field_error(&r, "name", code_point);
        let r = s
            .post(
                &org,
                "/v1/product-variants",
                json!({"product_id": product_id, "name": "Red", "sku": name}),
            )
            .await;
        assert_field_error(&r, "sku", code_point);
        let r = s
            .post(
                &org,
                "/v1/brands",
                json!({"name": "Ok", "fonts": [{"name": name}], "color_palettes": {name.clone(): ["#000"]}}),
            )
            .await;
        assert_field_error(&r, "fonts[0].name", code_point);
        assert_field_error(&r, &format!("color_palettes.{name}"), code_point);
    }
    // Nothing refused was stored: the brand kept its name and only it exists.
    let list = s.get(&org, "/v1/brands").await.expect(200, None);
    assert_eq!(list.body["total_count"], 1);
    assert_eq!(list.body["data"][0]["name"], "Acme");

    // What is accepted is stored as sent: other scripts, emoji, the invisible direction
    // marks (not overrides), and surrounding spaces trimmed.
    let name = "  Café 東京 🚀 \u{200f}עברית\u{200e}  ";
    let r = s
        .post(&org, "/v1/brands", json!({"name": name}))
        .await
        .expect(201, None);
    assert_eq!(r.body["data"]["name"], name.trim());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descriptions_keep_tab_and_line_breaks_only() {
    let s = TestServer::start().await;
    let org = s.org("Text2").await;
    let text = "Line one\n\tindented\r\nline three";
    let r = s
        .post(
            &org,
            "/v1/brands",
            json!({"name": "Acme", "description": text}),
        )
        .await
        .expect(201, None);
    assert_eq!(r.body["data"]["description"], text);
    let id = r.id();
    let got = s
        .get(&org, &format!("/v1/brands/{id}"))
        .await
        .expect(200, None);
    assert_eq!(got.body["data"]["description"], text);

    for (bad, code_point) in [
        ("\u{0}", "U+0000"),
        ("\u{1b}", "U+001B"),
        ("\u{8}", "U+0008"),
        ("\u{9b}", "U+009B"),
        ("\u{202e}", "U+202E"),
        ("\u{2067}", "U+2067"),
    ] {
        let r = s
            .patch(
                &org,
                &format!("/v1/brands/{id}"),
                json!({"description": format!("a{bad}b")}),
            )
            .await;
        assert_field_error(&r, "description", code_point);
    }
    let got = s
        .get(&org, &format!("/v1/brands/{id}"))
        .await
        .expect(200, None);
    assert_eq!(got.body["data"]["description"], text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alt_text_is_one_line() {
    let s = TestServer::start().await;
    let org = s.org("Text3").await;
    let r = s
        .upload(
            &org,
            png(4, 4, [200, 10, 10, 255]),
            &[("alt_text", "red\u{202e}gnp.exe")],
        )
        .await;
    assert_field_error(&r, "alt_text", "U+202E");
    let r = s
        .upload(
            &org,
            png(4, 4, [200, 10, 10, 255]),
            &[("alt_text", "a red square")],
        )
        .await
        .expect(201, None);
    assert_eq!(r.body["data"]["alt_text"], "a red square");
}

async fn post_raw(
    s: &TestServer,
    org: &Org,
    method: Method,
    path: &str,
    body: &str,
) -> crate::support::Reply {
    send(
        s.request(method, path)
            .header("x-api-key", &org.key)
            .header("content-type", "application/json")
            .body(body.to_string()),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn integers_beyond_64_bits_are_refused_not_rounded() {
    let s = TestServer::start().await;
    let org = s.org("Numbers").await;
    // 2^64 and -(2^63) - 1: the first integers serde_json would read as a float.
    let r = post_raw(
        &s,
        &org,
        Method::POST,
        "/v1/brands",
        r#"{"name": "Acme", "details": {"views": 18446744073709551616, "deep": {"list": [1, -9223372036854775809]}}}"#,
    )
    .await;
    assert_field_error(&r, "details.views", "18446744073709551616");
    assert_field_error(&r, "details.deep.list[1]", "-9223372036854775809");
    assert_eq!(
        s.get(&org, "/v1/brands").await.body["total_count"],
        0,
        "nothing was stored"
    );

    // The extremes of u64 and i64, fractions and exponents are kept as JSON numbers.
    let r = post_raw(
        &s,
        &org,
        Method::POST,
        "/v1/brands",
        r#"{"name": "Acme", "details": {"max": 18446744073709551615, "min": -9223372036854775808, "ratio": 0.25, "big": 1e30}}"#,
    )
    .await
    .expect(201, None);
    let id = r.id();
    let got = s
        .get(&org, &format!("/v1/brands/{id}"))
        .await
        .expect(200, None);
    let details = &got.body["data"]["details"];
    assert_eq!(details["max"].as_u64(), Some(u64::MAX));
    assert_eq!(details["min"].as_i64(), Some(i64::MIN));
    assert_eq!(details["ratio"].as_f64(), Some(0.25));
    assert_eq!(details["big"].as_f64(), Some(1e30));

    // PATCH and the other free-form objects follow the same rule.
    let r = post_raw(
        &s,
        &org,
        Method::PATCH,
        &format!("/v1/brands/{id}"),
        r#"{"details": {"n": 99999999999999999999999}}"#,
    )
    .await;
    assert_field_error(&r, "details.n", "99999999999999999999999");
    let product = s
        .post(&org, "/v1/products", json!({"brand_id": id, "name": "Tee"}))
        .await
        .expect(201, None)
        .id();
    let r = post_raw(
        &s,
        &org,
        Method::POST,
        "/v1/product-variants",
        &format!(r#"{{"product_id": "{product}", "name": "Red", "attributes": {{"weight_ug": 123456789012345678901234567890}}}}"#),
    )
    .await;
    assert_field_error(&r, "attributes.weight_ug", "123456789012345678901234567890");
}
