//! `/v1/images`: uploads of each format with measured metadata, the files behind the URLs,
//! background thumbnails and enrichment, filters, facets, upload rejections, logo themes,
//! deletion and references to unknown images.

use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

use crate::support::{
    Org, Reply, TestServer, XorShift, eventually, ids_of, jpeg, png, urlencode, webp,
};

/// The long-edge bound of each thumbnail field.
const THUMBS: [(&str, u32); 3] = [
    ("thumbnail_small_src", 200),
    ("thumbnail_medium_src", 600),
    ("thumbnail_large_src", 1200),
];

/// A PNG of random pixels (incompressible, so its size is about `4 * w * h` bytes).
fn noise_png(width: u32, height: u32, seed: u64) -> Vec<u8> {
    let mut rng = XorShift::new(seed);
    let mut img = image::RgbaImage::new(width, height);
    for px in img.pixels_mut() {
        let v = rng.next_u64().to_le_bytes();
        *px = image::Rgba([v[0], v[1], v[2], 255]);
    }
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .expect("png");
    out
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn png_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let mut body = kind.to_vec();
    body.extend_from_slice(data);
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32(&body).to_be_bytes());
}

/// A well-formed PNG whose IHDR claims `width`×`height` (8-bit greyscale) but whose IDAT is
/// a few bytes: the shape of a decompression bomb, cheap to send.
fn claimed_png(width: u32, height: u32) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 0, 0, 0, 0]);
    png_chunk(&mut out, b"IHDR", &ihdr);
    // zlib stream of an empty stored block: header, final empty block, adler32 of nothing.
    png_chunk(
        &mut out,
        b"IDAT",
        &[
            0x78, 0x01, 0x01, 0x00, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01,
        ],
    );
    png_chunk(&mut out, b"IEND", &[]);
    out
}

/// The smallest valid GIF: one white pixel.
fn gif() -> Vec<u8> {
    let mut out = b"GIF89a".to_vec();
    out.extend_from_slice(&[
        0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, // screen 1×1, global table of 2 colours
        0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, // the table
        0x2C, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, // image descriptor
        0x02, 0x02, 0x44, 0x01, 0x00, // LZW data
        0x3B, // trailer
    ]);
    out
}

/// Polls the image until its thumbnails and enriched description are set; returns it.
async fn processed(server: &TestServer, org: &Org, id: &str) -> Value {
    let path = format!("/v1/images/{id}");
    let done = eventually(|| async {
        let d = server.get(org, &path).await.expect(200, None).body["data"].clone();
        THUMBS.iter().all(|(f, _)| d[f].is_string()) && d["enriched_description"].is_string()
    })
    .await;
    assert!(done, "image {id} never got its thumbnails and description");
    server.get(org, &path).await.expect(200, None).body["data"].clone()
}

fn max_age(cache_control: &str) -> u64 {
    cache_control
        .split(',')
        .find_map(|d| d.trim().strip_prefix("max-age="))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Fetches a public file URL and checks it is served with `content_type` and a long cache
/// lifetime; returns the bytes.
async fn served(server: &TestServer, url: &str, content_type: &str) -> Vec<u8> {
    assert!(
        url.starts_with("http://") || url.starts_with("https://"),
        "not absolute: {url}"
    );
    let (status, headers, bytes) = server.fetch(url).await;
    assert_eq!(status.as_u16(), 200, "GET {url}");
    assert_eq!(
        headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some(content_type),
        "{url}"
    );
    let cc = headers
        .get("cache-control")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert!(
        max_age(cc) >= 30 * 24 * 3600,
        "short Cache-Control `{cc}` on {url}"
    );
    bytes
}

fn list_total(reply: &Reply) -> i64 {
    reply.body["total_count"].as_i64().expect("total_count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_each_format_with_measured_metadata_and_serves_the_original() {
    let server = TestServer::start().await;
    let org = server.org_unlimited("Acme").await;
    let cases = [
        (
            png(320, 200, [10, 40, 200, 255]),
            320,
            200,
            "png",
            "image/png",
        ),
        (
            jpeg(640, 480, [200, 30, 40]),
            640,
            480,
            "jpeg",
            "image/jpeg",
        ),
        (
            webp(150, 90, [50, 160, 70, 255]),
            150,
            90,
            "webp",
            "image/webp",
        ),
    ];
    for (bytes, w, h, format, content_type) in cases {
        let reply = server
            .upload(
                &org,
                bytes.clone(),
                &[
                    ("image_type", "product"),
                    ("alt_text", "A thing"),
                    ("is_ai_generated", "true"),
                ],
            )
            .await
            .expect(201, None);
        let d = &reply.body["data"];
        assert!(d["id"].as_str().unwrap().starts_with("img_"), "{d}");
        assert_eq!(d["width"], w, "{format}");
        assert_eq!(d["height"], h, "{format}");
        assert_eq!(d["format"], format);
        assert_eq!(d["size_bytes"], bytes.len() as u64, "{format}");
        assert_eq!(d["image_type"], "product");
        assert_eq!(d["alt_text"], "A thing");
        assert_eq!(d["is_ai_generated"], true);
        assert_eq!(d["logo_theme"], Value::Null, "only logos get a theme");
        assert_eq!(d["product_id"], Value::Null);
        let src = d["src"].as_str().expect("src");
        assert!(
            src.starts_with(&server.base),
            "src {src} is not under {}",
            server.base
        );
        assert_eq!(
            served(&server, src, content_type).await,
            bytes,
            "{format} original bytes differ"
        );
        // The stored record reads back the same.
        let again = server
            .get(&org, &format!("/v1/images/{}", reply.id()))
            .await
            .expect(200, None);
        for f in [
            "id",
            "src",
            "width",
            "height",
            "format",
            "size_bytes",
            "created_at",
        ] {
            assert_eq!(again.body["data"][f], d[f], "{f}");
        }
    }
    // The format is judged from the bytes, not the file name or declared type.
    let form = Form::new().part(
        "file",
        Part::bytes(jpeg(20, 10, [1, 2, 3]))
            .file_name("photo.png")
            .mime_str("image/png")
            .unwrap(),
    );
    let r = server.upload_form(&org, form).await.expect(201, None);
    assert_eq!(r.body["data"]["format"], "jpeg");
    assert!(
        r.body["data"]["src"].as_str().unwrap().ends_with(".jpg")
            || r.body["data"]["src"].as_str().unwrap().ends_with(".jpeg")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_of_several_mebibytes_is_accepted() {
    let server = TestServer::start().await;
    let org = server.org_unlimited("Acme").await;
    // About 5 MiB: above common framework defaults (2 MiB), below the 15 MiB limit.
    let bytes = noise_png(1200, 1100, 7);
    assert!(bytes.len() > 5_000_000, "{}", bytes.len());
    let r = server
        .upload(&org, bytes.clone(), &[])
        .await
        .expect(201, None);
    assert_eq!(r.body["data"]["size_bytes"], bytes.len() as u64);
    assert_eq!(
        (
            r.body["data"]["width"].as_u64(),
            r.body["data"]["height"].as_u64()
        ),
        (Some(1200), Some(1100))
    );
    assert_eq!(
        served(
            &server,
            r.body["data"]["src"].as_str().unwrap(),
            "image/png"
        )
        .await,
        bytes
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thumbnails_appear_as_webp_within_their_edges_and_never_upscaled() {
    let server = TestServer::start().await;
    let org = server.org_unlimited("Acme").await;
    let cases = [
        (png(1600, 800, [200, 10, 10, 255]), 1600u32, 800u32),
        (jpeg(300, 450, [10, 200, 10]), 300, 450),
        (webp(2400, 2400, [10, 10, 200, 255]), 2400, 2400),
    ];
    for (bytes, w, h) in cases {
        let id = server.upload(&org, bytes, &[]).await.expect(201, None).id();
        let d = processed(&server, &org, &id).await;
        let long = w.max(h);
        let mut urls = Vec::new();
        for (field, edge) in THUMBS {
            let url = d[field].as_str().expect(field).to_string();
            let data = served(&server, &url, "image/webp").await;
            let t = image::load_from_memory_with_format(&data, image::ImageFormat::WebP)
                .expect("thumbnail decodes as WebP");
            let (tw, th) = (t.width(), t.height());
            assert_eq!(
                tw.max(th),
                edge.min(long),
                "{field} of {w}×{h} is {tw}×{th}"
            );
            assert!(
                tw <= w && th <= h,
                "{field} of {w}×{h} upscaled to {tw}×{th}"
            );
            // Proportions kept, to rounding.
            let expected_short = f64::from(w.min(h)) * f64::from(tw.max(th)) / f64::from(long);
            assert!(
                (f64::from(tw.min(th)) - expected_short).abs() <= 1.0,
                "{field} of {w}×{h} is {tw}×{th}"
            );
            assert_eq!(w >= h, tw >= th, "{field} orientation");
            urls.push(url);
        }
        urls.dedup();
        assert_eq!(urls.len(), 3, "each thumbnail has its own URL");
        // The original's record is unchanged by the background work.
        assert_eq!(
            (d["width"].as_u64(), d["height"].as_u64()),
            (Some(u64::from(w)), Some(u64::from(h)))
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enrichment_describes_the_image_and_search_matches_it_and_alt_text() {
    let server = TestServer::start().await;
    let org = server.org_unlimited("Acme").await;
    let blue = server
        .upload(
            &org,
            png(600, 300, [40, 90, 200, 255]),
            &[("alt_text", "Summer SALE banner")],
        )
        .await
        .expect(201, None)
        .id();
    let red = server
        .upload(
            &org,
            png(200, 200, [200, 30, 40, 255]),
            &[("alt_text", "Winter coat")],
        )
        .await
        .expect(201, None)
        .id();
    let accented = server
        .upload(
            &org,
            png(100, 300, [245, 245, 245, 255]),
            &[("alt_text", "Été Collection")],
        )
        .await
        .expect(201, None)
        .id();
    let blue_d = processed(&server, &org, &blue).await;
    let red_d = processed(&server, &org, &red).await;
    processed(&server, &org, &accented).await;
    let blue_desc = blue_d["enriched_description"].as_str().unwrap();
    let red_desc = red_d["enriched_description"].as_str().unwrap();
    assert!(
        blue_desc.contains("blue") && blue_desc.contains("landscape"),
        "{blue_desc}"
    );
    assert!(
        red_desc.contains("red") && red_desc.contains("square"),
        "{red_desc}"
    );
    assert!(!blue_desc.contains("red") && !red_desc.contains("blue"));

    let search = |q: &str| format!("/v1/images?search={}", urlencode(q));
    for (q, expected) in [
        ("summer sale", vec![blue.clone()]), // alt text, other case
        ("sUMMER sALE BANNER", vec![blue.clone()]),
        ("winter", vec![red.clone()]),
        ("BLUE", vec![blue.clone()]), // enriched description, other case
        ("Landscape", vec![blue.clone()]),
        ("red", vec![red.clone()]),
        ("été", vec![accented.clone()]), // non-ASCII alt text, both cases
        ("ÉTÉ COLLECTION", vec![accented.clone()]),
        ("portrait", vec![accented.clone()]),
        ("no such words", vec![]),
    ] {
        let r = server.get(&org, &search(q)).await.expect(200, None);
        assert_eq!(ids_of(&r), expected, "search `{q}`");
        assert_eq!(list_total(&r), expected.len() as i64, "search `{q}`");
    }
    let r = server.get(&org, &search("image")).await.expect(200, None);
    assert_eq!(
        ids_of(&r),
        vec![accented.clone(), red.clone(), blue.clone()],
        "newest first"
    );
    // search combines with other filters.
    server
        .upload(
            &org,
            png(10, 10, [40, 90, 200, 255]),
            &[("image_type", "logo")],
        )
        .await
        .expect(201, None);
    let r = server
        .get(&org, "/v1/images?search=blue&image_type=product,other")
        .await
        .expect(200, None);
    assert_eq!(list_total(&r), 0);
    // Length limit: 200 characters are fine, 201 are not.
    server
        .get(&org, &search(&"a".repeat(200)))
        .await
        .expect(200, None);
    let r = server
        .get(&org, &search(&"a".repeat(201)))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(r.body["error"]["details"][0]["field"], "search");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_by_image_type_and_product_and_resolves_ids() {
    let server = TestServer::start().await;
    let org = server.org_unlimited("Acme").await;
    let other = server.org_unlimited("Other").await;
    let cat = server.catalog(&org).await;
    let p2 = server
        .post(
            &org,
            "/v1/products",
            json!({"brand_id": cat.brand, "name": "Road Shoe"}),
        )
        .await
        .expect(201, None)
        .id();
    let up = |ty: &'static str, product: Option<String>| {
        let server = &server;
        let org = &org;
        async move {
            let mut fields = vec![("image_type", ty.to_string())];
            if let Some(p) = product {
                fields.push(("product_id", p));
            }
            let f: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let r = server
                .upload(org, png(8, 8, [1, 2, 3, 255]), &f)
                .await
                .expect(201, None);
            r.id()
        }
    };
    let a = up("product", Some(cat.product.clone())).await;
    let b = up("lifestyle", Some(p2.clone())).await;
    let c = up("logo", None).await;
    let d = up("background", Some(cat.product.clone())).await;
    let e = up("product", Some(p2.clone())).await;
    let foreign = server
        .upload(
            &other,
            png(8, 8, [1, 2, 3, 255]),
            &[("image_type", "product")],
        )
        .await
        .expect(201, None)
        .id();

    let p1 = &cat.product;
    for (query, expected) in [
        ("".to_string(), vec![&e, &d, &c, &b, &a]),
        ("image_type=product".to_string(), vec![&e, &a]),
        ("image_type=product,logo".to_string(), vec![&e, &c, &a]),
        ("image_type=other".to_string(), vec![]),
        (format!("product_id={p1}"), vec![&d, &a]),
        (format!("product_id={p1},{p2}"), vec![&e, &d, &b, &a]),
        (format!("product_id={p2}&image_type=product"), vec![&e]),
        ("product_id=prod_unknown".to_string(), vec![]),
        (format!("ids={a},{c}"), vec![&c, &a]),
        (format!("ids={a},{c}&image_type=logo"), vec![&c]),
        (format!("ids={a},img_unknown,{foreign}"), vec![&a]),
    ] {
        let r = server
            .get(&org, &format!("/v1/images?{query}"))
            .await
            .expect(200, None);
        assert_eq!(
            ids_of(&r),
            expected.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            "?{query}"
        );
        assert_eq!(list_total(&r), expected.len() as i64, "?{query}");
        assert_eq!(r.body["has_more"], false, "?{query}");
        assert!(
            r.body.get("facets").is_none(),
            "facets are opt-in: ?{query}"
        );
    }
    // Each returned image carries the filtered values.
    let r = server
        .get(&org, &format!("/v1/images?product_id={p2}"))
        .await
        .expect(200, None);
    for img in r.body["data"].as_array().unwrap() {
        assert_eq!(img["product_id"], p2.as_str());
    }
    // Bad filter values are named.
    let r = server
        .get(&org, "/v1/images?image_type=product,poster")
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(r.body["error"]["details"][0]["field"], "image_type");
    let many: Vec<String> = (0..101).map(|i| format!("img_{i}")).collect();
    server
        .get(&org, &format!("/v1/images?ids={}", many.join(",")))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_type_facet_ignores_its_own_filter_but_applies_the_others() {
    let server = TestServer::start().await;
    let org = server.org_unlimited("Acme").await;
    let cat = server.catalog(&org).await;
    let p1 = cat.product.clone();
    for (ty, product) in [
        ("product", true),
        ("product", true),
        ("product", false),
        ("logo", false),
        ("logo", true),
        ("lifestyle", true),
    ] {
        let mut f = vec![("image_type", ty)];
        if product {
            f.push(("product_id", p1.as_str()));
        }
        server
            .upload(&org, png(4, 4, [0, 0, 0, 255]), &f)
            .await
            .expect(201, None);
    }
    server
        .upload(&org, png(4, 4, [0, 0, 0, 255]), &[])
        .await
        .expect(201, None); // untyped
    let facet = |r: &Reply| r.body["facets"]["image_type"].clone();
    let r = server
        .get(&org, "/v1/images?facets=image_type&image_type=logo")
        .await
        .expect(200, None);
    assert_eq!(list_total(&r), 2);
    assert_eq!(
        facet(&r),
        json!([{"value": "product", "count": 3}, {"value": "logo", "count": 2}, {"value": "lifestyle", "count": 1}])
    );
    let r = server
        .get(
            &org,
            &format!("/v1/images?facets=image_type&image_type=logo&product_id={p1}"),
        )
        .await
        .expect(200, None);
    assert_eq!(list_total(&r), 1);
    assert_eq!(
        facet(&r),
        json!([{"value": "product", "count": 2}, {"value": "lifestyle", "count": 1}, {"value": "logo", "count": 1}])
    );
    let r = server
        .get(&org, "/v1/images?facets=image_type&product_id=prod_none")
        .await
        .expect(200, None);
    assert_eq!(facet(&r), json!([]));
    let r = server
        .get(&org, "/v1/images?facets=color")
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    let d = &r.body["error"]["details"][0];
    assert_eq!(d["field"], "facets");
    assert!(
        d["message"].as_str().unwrap().contains("image_type"),
        "allowed dimensions named: {d}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejects_unsupported_unreadable_oversized_and_malformed_uploads() {
    let server = TestServer::start().await;
    let org = server.org_unlimited("Acme").await;
    server
        .upload(&org, gif(), &[])
        .await
        .expect(400, Some("IMAGE_INVALID_FORMAT"));
    server
        .upload(&org, b"just some text, not an image\n".to_vec(), &[])
        .await
        .expect(400, Some("IMAGE_INVALID_FORMAT"));
    server.upload(&org, Vec::new(), &[]).await.expect(400, None);
    // Incomplete files: one rule for every format (a file that ends before its end marker
    // is refused), also where the JPEG decoder would fill in the missing rows.
    let whole_png = noise_png(64, 64, 3);
    let whole_jpeg = jpeg(64, 64, [30, 120, 200]);
    for whole in [&whole_png, &whole_jpeg] {
        for cut in [whole.len() / 2, whole.len() - 2, whole.len() - 1] {
            let r = server
                .upload(&org, whole[..cut].to_vec(), &[])
                .await
                .expect(400, Some("IMAGE_UNREADABLE"));
            assert!(
                r.body["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("incomplete"),
                "{}",
                r.body
            );
        }
    }
    // Over the side limit (16,384 px), really encoded: 17,000×1 is a few KB.
    let wide = png(17_000, 1, [0, 0, 0, 255]);
    let r = server
        .upload(&org, wide, &[])
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(r.body["error"]["details"][0]["field"], "file");
    // Decompression bombs: headers claiming huge sizes over a tiny body.
    for (w, h) in [(30_000, 30_000), (8_000, 8_000), (16_384, 16_384)] {
        let r = server
            .upload(&org, claimed_png(w, h), &[])
            .await
            .expect(400, Some("VALIDATION_ERROR"));
        assert_eq!(r.body["error"]["details"][0]["field"], "file", "{w}×{h}");
    }
    // Form problems.
    let r = server
        .upload_form(&org, Form::new().text("image_type", "product"))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(r.body["error"]["details"][0]["field"], "file");
    let r = server
        .upload(&org, png(4, 4, [0, 0, 0, 255]), &[("colour", "red")])
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(r.body["error"]["details"][0]["field"], "colour");
    let r = server
        .upload(&org, png(4, 4, [0, 0, 0, 255]), &[("image_type", "poster")])
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(r.body["error"]["details"][0]["field"], "image_type");
    // Image bytes only come as multipart; base64 in JSON is not accepted.
    let r = server
        .post(&org, "/v1/images", json!({"file": base64_free::encode(&png(4, 4, [0, 0, 0, 255])), "image_type": "product"}))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert!(!r.body["error"]["details"].as_array().unwrap().is_empty());
    // Nothing was stored.
    let r = server.get(&org, "/v1/images").await.expect(200, None);
    assert_eq!(list_total(&r), 0, "{}", r.body);
}

/// Base64 without a crate, to send the kind of body the API must refuse.
mod base64_free {
    pub fn encode(bytes: &[u8]) -> String {
        const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }
}

fn mark_on_transparent(mark: [u8; 4]) -> Vec<u8> {
    let mut img = image::RgbaImage::from_pixel(120, 80, image::Rgba([0, 0, 0, 0]));
    for x in 30..90 {
        for y in 20..60 {
            img.put_pixel(x, y, image::Rgba(mark));
        }
    }
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .expect("png");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logo_theme_is_measured_for_logos() {
    let server = TestServer::start().await;
    let org = server.org_unlimited("Acme").await;
    let light = mark_on_transparent([250, 250, 250, 255]);
    let dark = mark_on_transparent([15, 15, 30, 255]);
    let r = server
        .upload(&org, light.clone(), &[("image_type", "logo")])
        .await
        .expect(201, None);
    assert_eq!(r.body["data"]["logo_theme"], "light");
    let r = server
        .upload(&org, dark, &[("image_type", "logo")])
        .await
        .expect(201, None);
    assert_eq!(r.body["data"]["logo_theme"], "dark");
    // Opaque logo: dark marks on a white field.
    let mut on_white = image::RgbaImage::from_pixel(100, 100, image::Rgba([255, 255, 255, 255]));
    for x in 20..80 {
        for y in 45..55 {
            on_white.put_pixel(x, y, image::Rgba([10, 10, 10, 255]));
        }
    }
    let mut bytes = Vec::new();
    on_white
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .unwrap();
    let r = server
        .upload(&org, bytes, &[("image_type", "logo")])
        .await
        .expect(201, None);
    assert_eq!(r.body["data"]["logo_theme"], "dark");
    // A given theme wins; other image types get none.
    let r = server
        .upload(
            &org,
            light.clone(),
            &[("image_type", "logo"), ("logo_theme", "dark")],
        )
        .await
        .expect(201, None);
    assert_eq!(r.body["data"]["logo_theme"], "dark");
    let r = server
        .upload(&org, light, &[("image_type", "product")])
        .await
        .expect(201, None);
    assert_eq!(r.body["data"]["logo_theme"], Value::Null);
    let r = server
        .get(&org, &format!("/v1/images/{}", r.id()))
        .await
        .expect(200, None);
    assert_eq!(r.body["data"]["logo_theme"], Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn product_id_must_name_a_product_of_the_organization() {
    let server = TestServer::start().await;
    let org = server.org_unlimited("Acme").await;
    let other = server.org_unlimited("Other").await;
    let mine = server.catalog(&org).await;
    let theirs = server.catalog(&other).await;
    let r = server
        .upload(
            &org,
            png(4, 4, [0, 0, 0, 255]),
            &[("product_id", &theirs.product)],
        )
        .await
        .expect(404, Some("PRODUCT_NOT_FOUND"));
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&theirs.product)
    );
    server
        .upload(
            &org,
            png(4, 4, [0, 0, 0, 255]),
            &[("product_id", "prod_nope")],
        )
        .await
        .expect(404, Some("PRODUCT_NOT_FOUND"));
    let r = server
        .upload(
            &org,
            png(4, 4, [0, 0, 0, 255]),
            &[("product_id", &mine.product)],
        )
        .await
        .expect(201, None);
    assert_eq!(r.body["data"]["product_id"], mine.product.as_str());
    // Only the accepted upload exists, in either organisation.
    assert_eq!(
        list_total(&server.get(&org, "/v1/images").await.expect(200, None)),
        1
    );
    assert_eq!(
        list_total(&server.get(&other, "/v1/images").await.expect(200, None)),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_hides_the_image_and_unlinks_it_but_its_files_stay_served() {
    let server = TestServer::start().await;
    let org = server.org_unlimited("Acme").await;
    let cat = server.catalog(&org).await;
    let gone_bytes = png(900, 300, [240, 140, 30, 255]);
    let gone = server
        .upload(&org, gone_bytes.clone(), &[("image_type", "logo")])
        .await
        .expect(201, None)
        .id();
    let kept = server
        .upload(&org, png(30, 30, [0, 0, 0, 255]), &[])
        .await
        .expect(201, None)
        .id();
    let gone_d = processed(&server, &org, &gone).await;
    server
        .patch(
            &org,
            &format!("/v1/brands/{}", cat.brand),
            json!({"logo_image_ids": [gone, kept]}),
        )
        .await
        .expect(200, None);
    server
        .patch(
            &org,
            &format!("/v1/product-variants/{}", cat.variant),
            json!({"image_ids": [kept, gone]}),
        )
        .await
        .expect(200, None);
    let other_variant = server
        .post(
            &org,
            "/v1/product-variants",
            json!({"product_id": cat.product, "name": "Only gone", "image_ids": [gone]}),
        )
        .await
        .expect(201, None)
        .id();

    let r = server
        .delete(&org, &format!("/v1/images/{gone}"))
        .await
        .expect(200, None);
    assert_eq!(r.body["deleted"], true);
    assert_eq!(r.body["id"], gone.as_str());
    server
        .get(&org, &format!("/v1/images/{gone}"))
        .await
        .expect(404, Some("IMAGE_NOT_FOUND"));
    server
        .delete(&org, &format!("/v1/images/{gone}"))
        .await
        .expect(404, Some("IMAGE_NOT_FOUND"));
    let list = server.get(&org, "/v1/images").await.expect(200, None);
    assert_eq!(ids_of(&list), vec![kept.clone()]);
    let r = server
        .get(&org, &format!("/v1/images?ids={gone},{kept}"))
        .await
        .expect(200, None);
    assert_eq!(ids_of(&r), vec![kept.clone()]);

    let b = server
        .get(&org, &format!("/v1/brands/{}", cat.brand))
        .await
        .expect(200, None);
    assert_eq!(b.body["data"]["logo_image_ids"], json!([kept]));
    let v = server
        .get(&org, &format!("/v1/product-variants/{}", cat.variant))
        .await
        .expect(200, None);
    assert_eq!(v.body["data"]["image_ids"], json!([kept]));
    let v = server
        .get(&org, &format!("/v1/product-variants/{other_variant}"))
        .await
        .expect(200, None);
    assert_eq!(v.body["data"]["image_ids"], json!([]));
    // A deleted image cannot be referenced again.
    server
        .patch(
            &org,
            &format!("/v1/brands/{}", cat.brand),
            json!({"logo_image_ids": [gone]}),
        )
        .await
        .expect(404, Some("IMAGE_NOT_FOUND"));

    // Files already handed out keep working.
    assert_eq!(
        served(&server, gone_d["src"].as_str().unwrap(), "image/png").await,
        gone_bytes
    );
    for (f, _) in THUMBS {
        served(&server, gone_d[f].as_str().unwrap(), "image/webp").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brands_and_variants_referencing_unknown_images_are_refused() {
    let server = TestServer::start().await;
    let org = server.org_unlimited("Acme").await;
    let cat = server.catalog(&org).await;
    let real = server
        .upload(&org, png(4, 4, [0, 0, 0, 255]), &[])
        .await
        .expect(201, None)
        .id();
    let r = server
        .post(
            &org,
            "/v1/brands",
            json!({"name": "Logo'd", "logo_image_ids": [real, "img_missing"]}),
        )
        .await
        .expect(404, Some("IMAGE_NOT_FOUND"));
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("img_missing")
    );
    let r = server
        .patch(
            &org,
            &format!("/v1/brands/{}", cat.brand),
            json!({"logo_image_ids": ["img_missing"]}),
        )
        .await
        .expect(404, Some("IMAGE_NOT_FOUND"));
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("img_missing")
    );
    server
        .post(
            &org,
            "/v1/product-variants",
            json!({"product_id": cat.product, "name": "X", "image_ids": ["img_missing"]}),
        )
        .await
        .expect(404, Some("IMAGE_NOT_FOUND"));
    server
        .patch(
            &org,
            &format!("/v1/product-variants/{}", cat.variant),
            json!({"image_ids": [real, "img_missing"]}),
        )
        .await
        .expect(404, Some("IMAGE_NOT_FOUND"));
    // Nothing changed and nothing was created.
    let b = server
        .get(&org, &format!("/v1/brands/{}", cat.brand))
        .await
        .expect(200, None);
    assert_eq!(b.body["data"]["logo_image_ids"], json!([]));
    let v = server
        .get(&org, &format!("/v1/product-variants/{}", cat.variant))
        .await
        .expect(200, None);
    assert_eq!(v.body["data"]["image_ids"], json!([]));
    assert_eq!(
        list_total(&server.get(&org, "/v1/brands").await.expect(200, None)),
        1
    );
    assert_eq!(
        list_total(
            &server
                .get(&org, "/v1/product-variants")
                .await
                .expect(200, None)
        ),
        1
    );
    // The real one is accepted.
    let v = server
        .patch(
            &org,
            &format!("/v1/product-variants/{}", cat.variant),
            json!({"image_ids": [real]}),
        )
        .await
        .expect(200, None);
    assert_eq!(v.body["data"]["image_ids"], json!([real]));
}
