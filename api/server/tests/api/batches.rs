//! Batches of image ads (issue 42, item 2) over real HTTP: the matrix and its charge, the
//! wallet check for the whole batch, idempotent retries, items named by index, the
//! maximum, the `batch_id` filter, cancel, the completion webhook sent once, and the ZIP
//! with its manifest.

use std::io::Read;

use adforge_worker::{AdCompleted, AdProgress, Event, ImageAdRendered, JobResult};
use serde_json::{Value, json};

use crate::support::{Org, TestServer, jpeg, png};

/// Money, in cents, and what is held, of the organisation's wallet.
async fn wallet(s: &TestServer, org: &Org) -> (i64, i64) {
    adforge_api::store::query_as("SELECT balance_cents, held_cents FROM wallets WHERE org_id = ?")
        .bind(&org.id)
        .fetch_one(&s.db.read)
        .await
        .unwrap()
}

async fn top_up(s: &TestServer, org: &Org, cents: i64) {
    let mut tx = s.db.begin_write().await.unwrap();
    adforge_api::wallet::top_up(&mut tx, &org.id, cents, Some("TEST"), None)
        .await
        .unwrap();
    tx.commit().await.unwrap();
}

/// A product of `brand` with a photo on its variant and one audience; answers
/// (product, audience).
async fn product(s: &TestServer, org: &Org, brand: &str, name: &str) -> (String, String) {
    let product = s
        .post(
            org,
            "/v1/products",
            json!({"brand_id": brand, "name": name}),
        )
        .await
        .expect(201, None)
        .id();
    let variant = s
        .post(
            org,
            "/v1/product-variants",
            json!({"product_id": product, "name": "Default"}),
        )
        .await
        .expect(201, None)
        .id();
    let shot = s
        .upload(
            org,
            png(64, 64, [40, 160, 90, 255]),
            &[("image_type", "product")],
        )
        .await
        .expect(201, None)
        .id();
    s.patch(
        org,
        &format!("/v1/product-variants/{variant}"),
        json!({"image_ids": [shot]}),
    )
    .await
    .expect(200, None);
    let audience = s
        .post(
            org,
            "/v1/audiences",
            json!({"product_id": product, "name": format!("{name} fans")}),
        )
        .await
        .expect(201, None)
        .id();
    (product, audience)
}

/// An uploaded reference ad's URL.
async fn reference(s: &TestServer, org: &Org, w: u32, h: u32) -> String {
    s.upload(org, jpeg(w, h, [30, 60, 90]), &[])
        .await
        .expect(201, None)
        .body["data"]["src"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A brand with two ready products, and two references.
struct Setup {
    brand: String,
    products: Vec<(String, String)>,
    references: Vec<String>,
}

async fn setup(s: &TestServer, org: &Org) -> Setup {
    let brand = s
        .post(org, "/v1/brands", json!({"name": "Acme"}))
        .await
        .expect(201, None)
        .id();
    let mut products = Vec::new();
    for name in ["Trail Shoe", "Rain Jacket"] {
        products.push(product(s, org, &brand, name).await);
    }
    let references = vec![
        reference(s, org, 120, 150).await,
        reference(s, org, 150, 150).await,
    ];
    Setup {
        brand,
        products,
        references,
    }
}

impl Setup {
    fn product_ids(&self) -> Vec<&str> {
        self.products.iter().map(|(p, _)| p.as_str()).collect()
    }
}

async fn count(s: &TestServer, org: &Org, path: &str) -> i64 {
    s.get(org, path).await.expect(200, None).body["total_count"]
        .as_i64()
        .unwrap()
}

/// The batch once it is no longer processing (a deadline only a hang reaches).
async fn wait_ended(s: &TestServer, org: &Org, id: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..2400 {
        last = s
            .get(org, &format!("/v1/image-ad-batches/{id}"))
            .await
            .expect(200, None)
            .body["data"]
            .clone();
        if last["status"] != "processing" {
            return last;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("batch {id} still processing after 240 s: {last}");
}

/// Every ad of the batch (at most 100).
async fn ads_of(s: &TestServer, org: &Org, batch: &str) -> Vec<Value> {
    s.get(org, &format!("/v1/image-ads?batch_id={batch}&limit=100"))
        .await
        .expect(200, None)
        .body["data"]
        .as_array()
        .unwrap()
        .clone()
}

async fn batch_events(s: &TestServer, org: &Org, batch: &str) -> Vec<Value> {
    s.get(
        org,
        &format!("/v1/events?type=image_ad_batch.completed&object_id={batch}"),
    )
    .await
    .expect(200, None)
    .body["data"]
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_twelve_ads_charges_twelve_prices_and_downloads_as_one_zip() {
    let s = TestServer::start().await;
    let org = s.org_unlimited("Batch").await;
    let set = setup(&s, &org).await;
    top_up(&s, &org, 2_000).await;
    // An ad outside the batch, which the filter leaves out.
    let outside = s
        .post(
            &org,
            "/v1/image-ads",
            json!({"reference_ad_url": set.references[0], "brand_id": set.brand,
                "product_id": set.products[0].0, "audience_id": set.products[0].1}),
        )
        .await
        .expect(202, None)
        .id();
    crate::support::wait_settled(&s, &org, &outside).await;
    let before = wallet(&s, &org).await;

    // 2 products × 2 references × 3 sizes.
    let created = s
        .post(
            &org,
            "/v1/image-ad-batches",
            json!({"product_ids": set.product_ids(), "reference_ad_urls": set.references,
                "sizes": ["1:1", "9:16", {"width": 1200, "height": 628}],
                "prompt": "Spring launch"}),
        )
        .await
        .expect(202, None);
    let b = &created.body["data"];
    let id = created.id();
    assert!(id.starts_with("iab_"), "{b}");
    assert_eq!(b["status"], "processing");
    assert_eq!(b["ad_count"], 12);
    assert_eq!(b["total_price"], json!({"amount": 1200, "currency": "usd"}));
    assert_eq!(b["counts"]["processing"], 12);
    assert_eq!(
        created.header("location"),
        Some(format!("/v1/image-ad-batches/{id}").as_str())
    );
    assert_eq!(
        wallet(&s, &org).await.1,
        before.1 + 1200,
        "the batch is held"
    );

    let ended = wait_ended(&s, &org, &id).await;
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(
        ended["counts"],
        json!({"processing": 0, "completed": 12, "failed": 0, "cancelled": 0})
    );
    assert_eq!(ended["progress"], 1.0);
    assert_eq!(ended["amount_charged"]["amount"], 1200);
    let after = wallet(&s, &org).await;
    assert_eq!(
        after,
        (before.0 - 1200, before.1),
        "12 prices charged, nothing held"
    );

    // Every ad carries the batch; the filter finds exactly them.
    let ads = ads_of(&s, &org, &id).await;
    assert_eq!(ads.len(), 12);
    assert!(ads.iter().all(|a| a["batch_id"] == id.as_str()));
    assert!(ads.iter().all(|a| a["id"] != outside.as_str()));
    assert_eq!(count(&s, &org, "/v1/image-ads").await, 13);

    // The webhook event was written once; a redelivered result changes nothing.
    assert_eq!(batch_events(&s, &org, &id).await.len(), 1);
    let redelivered = Event::Completed(AdCompleted {
        ad_id: ads[0]["id"].as_str().unwrap().to_owned(),
        version: 1,
        duration_ms: 5,
        result: JobResult::ImageAd(ImageAdRendered {
            image_url: "https://cdn.test/again.png".into(),
            width: 1080,
            height: 1080,
            json_tree: None,
            render: None,
            copy: None,
        }),
    });
    let blobs = adforge_api::blob::LocalBlobStore::new(s.data_dir.join("blobs"), "http://unused");
    let again = adforge_api::results::apply(&s.db, &blobs, &redelivered)
        .await
        .unwrap();
    assert_eq!(again, None);
    assert_eq!(batch_events(&s, &org, &id).await.len(), 1);
    assert_eq!(wallet(&s, &org).await, after);
    let listed = s.get(&org, "/v1/image-ad-batches").await.expect(200, None);
    assert_eq!(listed.body["total_count"], 1);
    assert_eq!(listed.body["data"][0]["counts"]["completed"], 12);

    // The ZIP: every ad's PNG and placement JPEG, and a manifest row with its words.
    let res = s
        .request(
            reqwest::Method::GET,
            &format!("/v1/image-ad-batches/{id}/download"),
        )
        .header("x-api-key", &org.key)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/zip");
    let bytes = res.bytes().await.unwrap();
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes.to_vec())).unwrap();
    assert_eq!(
        zip.len(),
        12 * 2 + 1,
        "{:?}",
        zip.file_names().collect::<Vec<_>>()
    );
    let mut manifest = String::new();
    zip.by_name("manifest.csv")
        .unwrap()
        .read_to_string(&mut manifest)
        .unwrap();
    let mut rows = csv::Reader::from_reader(manifest.as_bytes());
    let header: Vec<String> = rows.headers().unwrap().iter().map(str::to_owned).collect();
    assert_eq!(
        &header[..10],
        [
            "item",
            "ad_id",
            "product_id",
            "product_name",
            "layout",
            "size",
            "width",
            "height",
            "png",
            "jpeg"
        ]
    );
    let mut seen = Vec::new();
    for rec in rows.records() {
        let rec = rec.unwrap();
        let ad = ads
            .iter()
            .find(|a| a["id"] == rec[1])
            .unwrap_or_else(|| panic!("row of an ad not in the batch: {rec:?}"));
        assert_eq!(ad["product_id"], rec[2].to_owned());
        assert_eq!(ad["reference_ad_url"], rec[4].to_owned());
        assert_eq!(ad["width"], rec[6].parse::<i64>().unwrap());
        assert!(["1:1", "9:16", "1200x628"].contains(&&rec[5]), "{rec:?}");
        // The words of each shown slot, in that slot's column.
        for slot in ad["copy"]["slots"].as_array().unwrap() {
            if slot["shown"] != true {
                continue;
            }
            let col = header
                .iter()
                .position(|h| slot["slot"] == h.as_str())
                .unwrap();
            assert_eq!(slot["text"], rec[col].to_owned(), "{rec:?}");
        }
        // Both files are in the archive and are what they say.
        let mut png_bytes = Vec::new();
        zip.by_name(&rec[8])
            .unwrap()
            .read_to_end(&mut png_bytes)
            .unwrap();
        assert!(png_bytes.starts_with(b"\x89PNG"), "{}", &rec[8]);
        let mut jpg = Vec::new();
        zip.by_name(&rec[9]).unwrap().read_to_end(&mut jpg).unwrap();
        let img = image::load_from_memory_with_format(&jpg, image::ImageFormat::Jpeg).unwrap();
        assert!(
            [(1080, 1080), (1080, 1350), (1080, 1920), (1200, 628)]
                .contains(&(img.width(), img.height()))
        );
        seen.push(rec[1].to_owned());
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 12, "one row per ad");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_above_the_balance_answers_402_and_creates_nothing() {
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org_unlimited("Short").await;
    let set = setup(&s, &org).await;
    top_up(&s, &org, 300).await;
    // 2 products × 2 references = 4 ads at $1.00 against $3.00.
    let short = s
        .post(
            &org,
            "/v1/image-ad-batches",
            json!({"product_ids": set.product_ids(), "reference_ad_urls": set.references}),
        )
        .await
        .expect(402, Some("INSUFFICIENT_BALANCE"));
    let message = short.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("$4.00") && message.contains("$3.00"),
        "{message}"
    );
    assert_eq!(count(&s, &org, "/v1/image-ad-batches").await, 0);
    assert_eq!(count(&s, &org, "/v1/image-ads").await, 0);
    assert_eq!(wallet(&s, &org).await, (300, 0));
    // Editable ads cost $4.00 each: one product and one reference is one ad too many.
    s.post(
        &org,
        "/v1/image-ad-batches",
        json!({"product_ids": [set.products[0].0], "reference_ad_urls": [set.references[0]],
            "editable": true}),
    )
    .await
    .expect(402, Some("INSUFFICIENT_BALANCE"));
    assert_eq!(count(&s, &org, "/v1/image-ads").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_reference_shared_by_a_batch_is_fetched_once() {
    // The reference server answers its first request and then closes its port: a batch
    // that fetched the reference once per combination would find it unreachable from the
    // second product on and answer 400 naming item 1.
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org_unlimited("Remote").await;
    let set = setup(&s, &org).await;
    top_up(&s, &org, 1_000).await;
    let remote = crate::flows::RefServer::start(crate::flows::After::Refuse).await;
    let batch = s
        .post(
            &org,
            "/v1/image-ad-batches",
            json!({"product_ids": set.product_ids(), "reference_ad_urls": [remote.url]}),
        )
        .await
        .expect(202, None);
    assert_eq!(batch.body["data"]["ad_count"], 2, "{}", batch.body);
    assert_eq!(count(&s, &org, "/v1/image-ads").await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotent_retry_creates_the_batch_once() {
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org_unlimited("Retry").await;
    let set = setup(&s, &org).await;
    top_up(&s, &org, 1_000).await;
    // Every active product of the brand, and each product's first audience.
    let body = json!({"brand_id": set.brand, "reference_ad_urls": [set.references[0]],
        "sizes": ["4:5"]});
    let send = || {
        s.request(reqwest::Method::POST, "/v1/image-ad-batches")
            .header("x-api-key", &org.key)
            .header("idempotency-key", "batch-retry-1")
            .json(&body)
    };
    let first = crate::support::send(send()).await.expect(202, None);
    let again = crate::support::send(send()).await.expect(202, None);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(first.id(), again.id());
    assert_eq!(first.body["data"]["ad_count"], 2);
    let mut products: Vec<String> = first.body["data"]["product_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_owned())
        .collect();
    products.sort();
    let mut expected: Vec<String> = set.products.iter().map(|(p, _)| p.clone()).collect();
    expected.sort();
    assert_eq!(products, expected);
    assert_eq!(count(&s, &org, "/v1/image-ad-batches").await, 1);
    assert_eq!(count(&s, &org, "/v1/image-ads").await, 2);
    assert_eq!(wallet(&s, &org).await, (1_000, 200), "held once");
    let ads = ads_of(&s, &org, &first.id()).await;
    let mut audiences: Vec<&str> = ads
        .iter()
        .map(|a| a["audience_id"].as_str().unwrap())
        .collect();
    audiences.sort_unstable();
    let mut first_audiences: Vec<&str> = set.products.iter().map(|(_, a)| a.as_str()).collect();
    first_audiences.sort_unstable();
    assert_eq!(audiences, first_audiences);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_items_answer_4xx_naming_their_index_and_nothing_is_created() {
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org_unlimited("Bad").await;
    let set = setup(&s, &org).await;
    top_up(&s, &org, 100_000).await;
    // A third product without a photo: its items fail, after the first product's.
    let bare = s
        .post(
            &org,
            "/v1/products",
            json!({"brand_id": set.brand, "name": "Bare"}),
        )
        .await
        .expect(201, None)
        .id();
    s.post(
        &org,
        "/v1/audiences",
        json!({"product_id": bare, "name": "Anyone"}),
    )
    .await
    .expect(201, None);
    let body = json!({"product_ids": [set.products[0].0, bare], "reference_ad_urls": set.references,
        "sizes": ["1:1", "9:16"]});
    let r = s
        .post(&org, "/v1/image-ad-batches", body)
        .await
        .expect(422, Some("PRODUCT_VARIANT_NO_IMAGES"));
    // Product 0 makes items 0–3 (2 references × 2 sizes); the bare product's first is 4.
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("items[4] (product `"), "{message}");
    assert!(message.contains(&bare), "{message}");

    // A reference that is no image: its first item, at index 1.
    let broken = format!("{}/files/images/img_missing/original.png", s.base);
    let r = s
        .post(
            &org,
            "/v1/image-ad-batches",
            json!({"product_ids": [set.products[0].0], "reference_ad_urls": [set.references[0], broken]}),
        )
        .await
        .expect(422, Some("REFERENCE_AD_URL_INVALID"));
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("items[1] ("), "{message}");

    // Unknown ids name their list entry.
    let r = s
        .post(
            &org,
            "/v1/image-ad-batches",
            json!({"product_ids": [set.products[0].0, "prod_nope"], "reference_ad_urls": [set.references[0]]}),
        )
        .await
        .expect(404, Some("PRODUCT_NOT_FOUND"));
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("product_ids[1]")
    );
    s.post(
        &org,
        "/v1/image-ad-batches",
        json!({"product_ids": [set.products[0].0], "design_template_ids": ["dt_nope"]}),
    )
    .await
    .expect(404, Some("DESIGN_TEMPLATE_NOT_FOUND"));
    // An audience of another product.
    s.post(
        &org,
        "/v1/image-ad-batches",
        json!({"product_ids": [set.products[0].0], "reference_ad_urls": [set.references[0]],
            "audience_ids": [set.products[1].1]}),
    )
    .await
    .expect(422, Some("AUDIENCE_PRODUCT_MISMATCH"));

    // Sizes and shape: 400 naming the field.
    let r = s
        .post(
            &org,
            "/v1/image-ad-batches",
            json!({"product_ids": [set.products[0].0], "reference_ad_urls": [set.references[0]],
                "sizes": ["1:1", "7:3", {"width": 728, "height": 90}]}),
        )
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    let fields: Vec<&str> = r.body["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["sizes[1]", "sizes[2]"], "{}", r.body);
    s.post(
        &org,
        "/v1/image-ad-batches",
        json!({"product_ids": [set.products[0].0]}),
    )
    .await
    .expect(400, Some("VALIDATION_ERROR"));

    // Over the maximum: 2 products × 26 references × 10 sizes = 520 ads.
    let references: Vec<String> = (0..26)
        .map(|i| format!("https://ads.example.com/{i}.png"))
        .collect();
    let sizes = [
        "1:1", "4:5", "9:16", "1.91:1", "2:3", "16:9", "300x250", "336x280", "300x600", "160x600",
    ];
    let r = s
        .post(
            &org,
            "/v1/image-ad-batches",
            json!({"product_ids": set.product_ids(), "reference_ad_urls": references, "sizes": sizes}),
        )
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    let message = r.body["error"]["details"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("520 ads") && message.contains("500"),
        "{message}"
    );

    assert_eq!(count(&s, &org, "/v1/image-ad-batches").await, 0);
    assert_eq!(count(&s, &org, "/v1/image-ads").await, 0);
    assert_eq!(wallet(&s, &org).await, (100_000, 0));
    s.get(&org, "/v1/image-ad-batches/iab_nope")
        .await
        .expect(404, Some("IMAGE_AD_BATCH_NOT_FOUND"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_fails_the_ads_not_started_without_charge() {
    // No workers: every ad waits in the queue until this test says otherwise.
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org_unlimited("Cancel").await;
    let set = setup(&s, &org).await;
    top_up(&s, &org, 1_000).await;
    let created = s
        .post(
            &org,
            "/v1/image-ad-batches",
            json!({"product_ids": [set.products[0].0], "reference_ad_urls": set.references,
                "sizes": ["1:1", "4:5"]}),
        )
        .await
        .expect(202, None);
    let id = created.id();
    let ads = ads_of(&s, &org, &id).await;
    assert_eq!(ads.len(), 4);
    // One ad is running: a worker reported a step.
    let running = ads[0]["id"].as_str().unwrap().to_owned();
    s.jobs
        .queue
        .publish(Event::Progress(AdProgress {
            ad_id: running.clone(),
            version: 1,
            step: "render".into(),
            message: "Rendering".into(),
            percentage: 60,
        }))
        .await
        .unwrap();
    assert!(
        crate::support::eventually(|| async {
            matches!(s.jobs.queue.latest_progress(&running).await, Ok(Some(_)))
        })
        .await
    );

    let cancelled = s
        .post(
            &org,
            &format!("/v1/image-ad-batches/{id}/cancel"),
            json!({}),
        )
        .await
        .expect(200, None);
    let b = &cancelled.body["data"];
    assert_eq!(b["status"], "processing", "the running ad finishes: {b}");
    assert_eq!(
        b["counts"],
        json!({"processing": 1, "completed": 0, "failed": 0, "cancelled": 3})
    );
    assert!(b["cancelled_at"].is_string());
    assert_eq!(
        wallet(&s, &org).await,
        (1_000, 100),
        "only the running ad is held"
    );
    for ad in ads_of(&s, &org, &id).await {
        if ad["id"] == running.as_str() {
            assert_eq!(ad["status"], "processing");
        } else {
            assert_eq!(ad["status"], "failed");
            assert_eq!(ad["error"]["code"], "CANCELLED");
        }
    }
    assert!(batch_events(&s, &org, &id).await.is_empty());

    // The running ad completes and is charged; a late result for a cancelled ad changes
    // nothing.
    let blobs = adforge_api::blob::LocalBlobStore::new(s.data_dir.join("blobs"), "http://unused");
    let done = |ad_id: &str| {
        Event::Completed(AdCompleted {
            ad_id: ad_id.to_owned(),
            version: 1,
            duration_ms: 5,
            result: JobResult::ImageAd(ImageAdRendered {
                image_url: "https://cdn.test/ad.png".into(),
                width: 1080,
                height: 1080,
                json_tree: None,
                render: None,
                copy: None,
            }),
        })
    };
    let late = ads
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .find(|a| *a != running)
        .unwrap();
    assert_eq!(
        adforge_api::results::apply(&s.db, &blobs, &done(late))
            .await
            .unwrap(),
        None
    );
    assert!(
        adforge_api::results::apply(&s.db, &blobs, &done(&running))
            .await
            .unwrap()
            .is_some()
    );
    let ended = s
        .get(&org, &format!("/v1/image-ad-batches/{id}"))
        .await
        .expect(200, None)
        .body["data"]
        .clone();
    assert_eq!(ended["status"], "cancelled", "{ended}");
    assert_eq!(
        ended["counts"],
        json!({"processing": 0, "completed": 1, "failed": 0, "cancelled": 3})
    );
    assert_eq!(ended["amount_charged"]["amount"], 100);
    assert_eq!(wallet(&s, &org).await, (900, 0));
    let events = batch_events(&s, &org, &id).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["data"]["object"]["status"], "cancelled");
    s.post(
        &org,
        &format!("/v1/image-ad-batches/{id}/cancel"),
        json!({}),
    )
    .await
    .expect(409, Some("CONFLICT"));
    let listed = s
        .get(&org, "/v1/image-ad-batches?status=cancelled")
        .await
        .expect(200, None);
    assert_eq!(listed.body["total_count"], 1);
    s.get(&org, "/v1/image-ad-batches?status=nope")
        .await
        .expect(400, Some("VALIDATION_ERROR"));
}
