//! `POST /v1/images/{id}/cutout`: a packshot cut out into a new PNG with alpha that keeps
//! its source's type and links back to it; asking again returns the same cut-out; the
//! same bytes share one file; and the error codes (unknown image, nothing to cut out,
//! missing scope).

use axum::http::Method;
use image::{Rgba, RgbaImage};

use crate::support::{TestServer, eventually};

/// A packshot: a dark green bottle-like shape with a pale label, on white.
fn packshot() -> Vec<u8> {
    packshot_labelled([246, 244, 238, 255])
}

/// [`packshot`] with a label of another colour.
fn packshot_labelled(label_colour: [u8; 4]) -> Vec<u8> {
    let img = RgbaImage::from_fn(600, 500, |x, y| {
        let (xi, yi) = (i64::from(x), i64::from(y));
        let body = (220..380).contains(&x) && (160..460).contains(&y);
        let neck = (270..330).contains(&x) && (60..160).contains(&y);
        let label = (240..360).contains(&x) && (260..340).contains(&y);
        let cap = (xi - 300).pow(2) + (yi - 60).pow(2) < 30 * 30;
        if label {
            Rgba(label_colour)
        } else if body || neck || cap {
            Rgba([30, 90 + (x % 40) as u8, 50, 255])
        } else {
            Rgba([255, 255, 255, 255])
        }
    });
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_packshot_is_cut_out_into_a_linked_png_with_alpha() {
    let s = TestServer::start().await;
    let org = s.org("Cutouts").await;
    let bytes = packshot();
    let source = s
        .upload(
            &org,
            bytes.clone(),
            &[("image_type", "product"), ("alt_text", "Green bottle")],
        )
        .await
        .expect(201, None)
        .id();

    let path = format!("/v1/images/{source}/cutout");
    let made = s
        .call(Method::POST, &path, Some(&org.key), None)
        .await
        .expect(201, None);
    let cut = &made.body["data"];
    let cut_id = made.id();
    assert!(cut_id.starts_with("img_") && cut_id != source);
    assert_eq!(cut["cutout_of"], source.as_str());
    assert_eq!(cut["cutout_method"], "colour_key");
    assert_eq!(cut["image_type"], "product");
    assert_eq!(cut["alt_text"], "Green bottle");
    assert_eq!(cut["format"], "png");
    // Trimmed to the bottle (x 220..380, y 30..460), give or take the soft edge.
    let (w, h) = (
        cut["width"].as_i64().unwrap(),
        cut["height"].as_i64().unwrap(),
    );
    assert!(
        (158..=164).contains(&w) && (428..=434).contains(&h),
        "{w}x{h}"
    );

    // The file is a PNG with alpha: clear beside the neck, opaque on the label.
    let (status, _, png) = s.fetch(cut["src"].as_str().unwrap()).await;
    assert_eq!(status, 200);
    let img = image::load_from_memory(&png).unwrap().into_rgba8();
    assert_eq!((i64::from(img.width()), i64::from(img.height())), (w, h));
    assert_eq!(img.get_pixel(5, 80).0[3], 0, "beside the neck is clear");
    let label = img.get_pixel(80, 270);
    assert_eq!(label.0, [246, 244, 238, 255], "the label is kept as it was");

    // Asking again returns the same cut-out; so does asking the cut-out itself.
    for p in [path.clone(), format!("/v1/images/{cut_id}/cutout")] {
        let again = s
            .call(Method::POST, &p, Some(&org.key), None)
            .await
            .expect(200, None);
        assert_eq!(again.id(), cut_id, "{p}");
    }
    // The source is unchanged; the cut-out gets thumbnails like an upload.
    let src = s
        .get(&org, &format!("/v1/images/{source}"))
        .await
        .expect(200, None);
    assert!(src.body["data"]["cutout_of"].is_null());
    assert!(src.body["data"]["cutout_method"].is_null());
    assert!(
        eventually(|| async {
            s.get(&org, &format!("/v1/images/{cut_id}")).await.body["data"]["thumbnail_small_src"]
                .is_string()
        })
        .await
    );

    // A second upload of the same bytes gets its own cut-out image, sharing the file.
    let twin = s
        .upload(&org, bytes, &[("image_type", "product")])
        .await
        .expect(201, None)
        .id();
    let twin_cut = s
        .call(
            Method::POST,
            &format!("/v1/images/{twin}/cutout"),
            Some(&org.key),
            None,
        )
        .await
        .expect(201, None);
    assert_ne!(twin_cut.id(), cut_id);
    assert_eq!(twin_cut.body["data"]["src"], cut["src"]);
    assert_eq!(twin_cut.body["data"]["cutout_of"], twin.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cutout_errors_name_what_went_wrong() {
    let s = TestServer::start().await;
    let org = s.org("Cutout errors").await;
    // An unknown image.
    let r = s
        .call(
            Method::POST,
            "/v1/images/img_nope/cutout",
            Some(&org.key),
            None,
        )
        .await
        .expect(404, Some("IMAGE_NOT_FOUND"));
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("img_nope")
    );

    // Another organisation's image is not found either.
    let other = s.org("Other").await;
    let theirs = s
        .upload(&other, packshot(), &[])
        .await
        .expect(201, None)
        .id();
    s.call(
        Method::POST,
        &format!("/v1/images/{theirs}/cutout"),
        Some(&org.key),
        None,
    )
    .await
    .expect(404, Some("IMAGE_NOT_FOUND"));

    // A plain white picture: nothing to cut out, and the message says so (issue 39: with
    // its own code, IMAGE_NO_SUBJECT).
    let blank = s
        .upload(
            &org,
            crate::support::png(300, 200, [255, 255, 255, 255]),
            &[],
        )
        .await
        .expect(201, None)
        .id();
    let r = s
        .call(
            Method::POST,
            &format!("/v1/images/{blank}/cutout"),
            Some(&org.key),
            None,
        )
        .await
        .expect(422, Some("IMAGE_NO_SUBJECT"));
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("no distinct object"), "{message}");
    // No image was made for it.
    let list = s.get(&org, "/v1/images").await.expect(200, None);
    assert_eq!(list.body["data"].as_array().unwrap().len(), 1);

    // A key that may only read images.
    let read_only = s.key(&org.id, "images:read", None).await;
    s.call(
        Method::POST,
        &format!("/v1/images/{blank}/cutout"),
        Some(&read_only),
        None,
    )
    .await
    .expect(403, Some("FORBIDDEN"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_each_cut_out_beside_its_source() {
    let s = TestServer::start().await;
    let org = s.org("Cutout page").await;
    let b = crate::dashboard::member(
        &s,
        &org.id,
        "cut@example.com",
        adforge_dashboard::members::Role::Member,
        false,
    )
    .await;
    let empty = b.get("/dashboard/cutouts").await;
    assert_eq!(empty.status, 200);
    assert!(empty.text.contains("No cut-outs yet"), "{}", empty.text);
    assert!(
        empty
            .text
            .contains(r#"href="/dashboard/cutouts" aria-current="page""#)
    );

    let source = s
        .upload(&org, packshot(), &[("alt_text", "Green bottle")])
        .await
        .expect(201, None)
        .id();
    let cut = s
        .call(
            Method::POST,
            &format!("/v1/images/{source}/cutout"),
            Some(&org.key),
            None,
        )
        .await
        .expect(201, None);
    let cut_src = cut.body["data"]["src"].as_str().unwrap().to_string();
    let page = b.get("/dashboard/cutouts").await;
    assert_eq!(page.status, 200);
    let item = page
        .text
        .split(&format!(r#"<li class="card cutout" id="{}">"#, cut.id()))
        .nth(1)
        .expect("the cut-out is listed")
        .split("</li>")
        .next()
        .unwrap()
        .to_string();
    assert!(item.contains(&source), "{item}");
    assert!(item.contains(&cut_src), "{item}");
    assert!(item.contains("keyed on its plain background"), "{item}");
    assert!(item.contains("Green bottle"), "{item}");

    // Another organisation's member does not see it.
    let other = s.org("Elsewhere").await;
    let stranger = crate::dashboard::member(
        &s,
        &other.id,
        "other@example.com",
        adforge_dashboard::members::Role::Member,
        false,
    )
    .await;
    let theirs = stranger.get("/dashboard/cutouts").await;
    assert!(!theirs.text.contains(&cut.id()));
}

/// Eight requests for the cut-out of one image at the same moment make one image: one 201,
/// seven 200s with its id, one live row. Before the unique index of migration 0092 each
/// request that found no cut-out inserted its own (issue 22). Run on both engines by the
/// suite (`ADFORGE_TEST_POSTGRES=1`); three sources, so the requests overlap while cutting.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requests_at_the_same_moment_make_one_cut_out() {
    let s = TestServer::start().await;
    let org = s.org("Racing cut-outs").await;
    for round in 0..3u8 {
        // Different bytes each round, so no round finds the last one's file.
        let bytes = packshot_labelled([246, 244 - round, 238, 255]);
        let source = s.upload(&org, bytes, &[]).await.expect(201, None).id();
        let path = format!("/v1/images/{source}/cutout");
        let replies = futures_util::future::join_all(
            (0..8).map(|_| s.call(Method::POST, &path, Some(&org.key), None)),
        )
        .await;
        let statuses: Vec<u16> = replies.iter().map(|r| r.status.as_u16()).collect();
        assert_eq!(
            statuses.iter().filter(|s| **s == 201).count(),
            1,
            "round {round}: {statuses:?}"
        );
        assert!(
            statuses.iter().all(|s| *s == 200 || *s == 201),
            "{statuses:?}"
        );
        let ids: std::collections::BTreeSet<String> = replies.iter().map(|r| r.id()).collect();
        assert_eq!(
            ids.len(),
            1,
            "round {round}: every reply names the same image: {ids:?}"
        );
        let rows: i64 = adforge_api::store::query_scalar(
            "SELECT count(*) FROM images WHERE cutout_of = ? AND deleted_at IS NULL",
        )
        .bind(&source)
        .fetch_one(&s.db.read)
        .await
        .unwrap();
        assert_eq!(rows, 1, "round {round}: one live cut-out row");
    }
}

fn png_of(img: image::RgbImage) -> Vec<u8> {
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

/// Issue 39: an all-black 16384 x 3000 image was "cut out" by the model into an invented
/// black ellipse (201, method `model`). A picture with no distinct object now answers 422
/// `IMAGE_NO_SUBJECT`, saying so and what to upload instead, and makes no image; a real
/// product photo is still cut out by the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_with_no_distinct_object_is_refused_not_invented() {
    assert!(
        adforge_worker::cutout::Cutter::load(&adforge_models::default_models_dir()).has_model(),
        "U²-Net-P is not installed: run scripts/fetch-models"
    );
    let s = TestServer::start().await;
    let org = s.org("Nothing to cut").await;
    let mut k: u32 = 0x9E37_79B9;
    let mut next = move || {
        k ^= k << 13;
        k ^= k >> 17;
        k ^= k << 5;
        k
    };
    let blanks = [
        (
            "all black, 16384 x 3000",
            png_of(image::RgbImage::new(16384, 3000)),
        ),
        (
            "grey with noise of ±12 levels",
            png_of(image::RgbImage::from_fn(900, 700, |_, _| {
                let v = 116 + (next() % 25) as u8;
                image::Rgb([v, v + 2, v + 4])
            })),
        ),
        (
            "a smooth diagonal gradient",
            png_of(image::RgbImage::from_fn(900, 700, |x, y| {
                image::Rgb([(x * 255 / 900) as u8, (y * 255 / 700) as u8, 140])
            })),
        ),
    ];
    for (what, bytes) in blanks {
        let id = s.upload(&org, bytes, &[]).await.expect(201, None).id();
        let r = s
            .call(
                Method::POST,
                &format!("/v1/images/{id}/cutout"),
                Some(&org.key),
                None,
            )
            .await
            .expect(422, Some("IMAGE_NO_SUBJECT"));
        let message = r.body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&id)
                && message.contains("no distinct object to cut out")
                && message.contains("upload a photo of the product on a plain ground"),
            "{what}: {message}"
        );
    }
    // Nothing was made for them.
    let list = s.get(&org, "/v1/images").await.expect(200, None);
    assert_eq!(list.body["data"].as_array().unwrap().len(), 3);

    // The espresso cup on its wooden table (assets/samples/coffee.png) is still cut out.
    let coffee = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../assets/samples/coffee.png"
    ))
    .unwrap();
    let id = s
        .upload(&org, coffee, &[("image_type", "product")])
        .await
        .expect(201, None)
        .id();
    let made = s
        .call(
            Method::POST,
            &format!("/v1/images/{id}/cutout"),
            Some(&org.key),
            None,
        )
        .await
        .expect(201, None);
    assert_eq!(made.body["data"]["cutout_method"], "model");
    assert_eq!(made.body["data"]["cutout_of"], id.as_str());
}
