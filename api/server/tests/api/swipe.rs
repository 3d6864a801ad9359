//! Swipe files, data sources and design packs over real HTTP with the real models (run
//! `scripts/fetch-models` first): ingest through the in-process queue and worker, lists with
//! filters and facets, search by text and by example, subscriptions, packs and their rules.

use std::collections::BTreeMap;
use std::sync::Arc;

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Org, Reply, TestServer, send};

const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../assets/samples");

fn sample(name: &str) -> Vec<u8> {
    std::fs::read(format!("{SAMPLES}/{name}")).unwrap()
}

/// A smaller, recompressed JPEG copy of a sample (a near-duplicate).
fn near_duplicate(name: &str) -> Vec<u8> {
    let img = image::load_from_memory(&sample(name)).unwrap();
    let small = img.resize(
        img.width() * 3 / 5,
        img.height() * 3 / 5,
        image::imageops::FilterType::Triangle,
    );
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 70)
        .encode_image(&small.to_rgb8())
        .unwrap();
    out
}

fn webp_of(name: &str) -> Vec<u8> {
    let img = image::load_from_memory(&sample(name)).unwrap().to_rgba8();
    let mut out = Vec::new();
    image::codecs::webp::WebPEncoder::new_lossless(&mut out)
        .encode(
            img.as_raw(),
            img.width(),
            img.height(),
            image::ExtendedColorType::Rgba8,
        )
        .unwrap();
    out
}

pub async fn upload_swipe(s: &TestServer, org: &Org, bytes: Vec<u8>) -> Reply {
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(bytes).file_name("design.bin"),
    );
    send(
        s.request(Method::POST, "/v1/swipe-files")
            .header("x-api-key", &org.key)
            .multipart(form),
    )
    .await
}

/// Polls until the design leaves `processing` (ingest runs the real models; allow a minute
/// on a loaded machine).
pub async fn wait_ready(s: &TestServer, org: &Org, id: &str) -> Value {
    for _ in 0..1200 {
        let r = s
            .get(org, &format!("/v1/swipe-files/{id}"))
            .await
            .expect(200, None);
        if r.body["data"]["status"] != "processing" {
            return r.body["data"].clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{id} still processing");
}

async fn upload_ready(s: &TestServer, org: &Org, bytes: Vec<u8>) -> Value {
    let r = upload_swipe(s, org, bytes).await.expect(202, None);
    let id = r.id();
    assert_eq!(
        r.header("location"),
        Some(format!("/v1/swipe-files/{id}").as_str())
    );
    assert_eq!(r.body["data"]["status"], "processing");
    let data = wait_ready(s, org, &id).await;
    assert_eq!(data["status"], "ready", "{data}");
    data
}

async fn search(s: &TestServer, org: &Org, body: Value) -> Vec<Value> {
    s.post(org, "/v1/swipe-files/search", body)
        .await
        .expect(200, None)
        .body["data"]
        .as_array()
        .unwrap()
        .clone()
}

fn ids(list: &[Value]) -> Vec<String> {
    list.iter()
        .map(|v| v["id"].as_str().unwrap().to_string())
        .collect()
}

/// Creates a data source (default or not) and imports `files` (sample names) into it.
async fn managed_source(s: &TestServer, name: &str, is_default: bool, files: &[&str]) -> String {
    let id = adforge_api::resources::swipe_files::sources::create(&s.db, name, is_default)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    for f in files {
        std::fs::write(dir.path().join(f), sample(f)).unwrap();
    }
    let blobs: Arc<dyn adforge_api::blob::BlobStore> = Arc::new(
        adforge_api::blob::LocalBlobStore::new(s.data_dir.join("blobs"), "http://unused"),
    );
    let imported =
        adforge_api::resources::swipe_files::sources::import_folder(&s.db, &blobs, &id, dir.path())
            .await
            .unwrap();
    assert_eq!(imported.len(), files.len());
    assert!(imported.iter().all(|(_, r)| r.is_ok()), "{imported:?}");
    id
}

async fn wait_all_ready(s: &TestServer, org: &Org, n: usize) {
    for _ in 0..1200 {
        let r = s
            .get(org, "/v1/swipe-files?status=ready&limit=100")
            .await
            .expect(200, None);
        if r.body["total_count"].as_u64() == Some(n as u64) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("designs did not all become ready");
}

#[tokio::test]
async fn upload_ingest_list_get_archive_restore_and_errors() {
    let s = TestServer::start().await;
    let a = s.org_unlimited("A").await;
    let b = s.org_unlimited("B").await;

    let coffee = upload_ready(&s, &a, sample("coffee.png")).await;
    assert_eq!(coffee["width"], 600);
    assert_eq!(coffee["height"], 400);
    assert_eq!(coffee["aspect_ratio"], "16:9");
    assert_eq!(coffee["source"], "upload");
    assert_eq!(coffee["is_managed"], false);
    assert_eq!(coffee["industry"], "food_beverages_tobacco", "{coffee}");
    let thumb = coffee["thumbnail_url"].as_str().unwrap();
    let (status, _, bytes) = s.fetch(thumb).await;
    assert_eq!(status, 200);
    let preview = image::load_from_memory(&bytes).unwrap();
    assert_eq!(preview.width().max(preview.height()), 200);

    // WebP is stored as PNG.
    let webp = upload_ready(&s, &a, webp_of("chelsea.png")).await;
    assert!(webp["image_url"].as_str().unwrap().ends_with(".png"));
    let (_, _, stored) = s.fetch(webp["image_url"].as_str().unwrap()).await;
    assert_eq!(
        image::guess_format(&stored).unwrap(),
        image::ImageFormat::Png
    );
    let rocket = upload_ready(&s, &a, sample("rocket.jpg")).await;

    // List: newest first, total_count, facets against counts computed here.
    let list = s
        .get(&a, "/v1/swipe-files?facets=industry,ad_format,aspect_ratio")
        .await
        .expect(200, None);
    assert_eq!(list.body["total_count"], 3);
    assert_eq!(
        ids(list.body["data"].as_array().unwrap()),
        vec![
            rocket["id"].as_str().unwrap().to_string(),
            webp["id"].as_str().unwrap().to_string(),
            coffee["id"].as_str().unwrap().to_string(),
        ]
    );
    let all = list.body["data"].as_array().unwrap().clone();
    for dim in ["industry", "ad_format", "aspect_ratio"] {
        let mut counts: BTreeMap<String, i64> = BTreeMap::new();
        for d in &all {
            if let Some(v) = d[dim].as_str() {
                *counts.entry(v.to_string()).or_default() += 1;
            }
        }
        let facet: BTreeMap<String, i64> = list.body["facets"][dim]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["value"].as_str().unwrap().to_string(),
                    f["count"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(facet, counts, "facet {dim}");
    }
    // A filter applies to other dimensions' facets but not its own.
    let r = s
        .get(
            &a,
            "/v1/swipe-files?industry=food_beverages_tobacco&facets=industry,aspect_ratio",
        )
        .await
        .expect(200, None);
    let food = all
        .iter()
        .filter(|d| d["industry"] == "food_beverages_tobacco")
        .count() as i64;
    assert_eq!(r.body["total_count"], food);
    let industry_total: i64 = r.body["facets"]["industry"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["count"].as_i64().unwrap())
        .sum();
    assert_eq!(
        industry_total,
        all.iter().filter(|d| d["industry"].is_string()).count() as i64
    );
    let ratio_total: i64 = r.body["facets"]["aspect_ratio"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["count"].as_i64().unwrap())
        .sum();
    assert_eq!(ratio_total, food);
    // Repeated values match any.
    let r = s.get(&a, "/v1/swipe-files?aspect_ratio=1:1&aspect_ratio=16:9&aspect_ratio=4:5&aspect_ratio=9:16&aspect_ratio=2:3&aspect_ratio=3:4&aspect_ratio=1.91:1").await.expect(200, None);
    assert_eq!(r.body["total_count"], 3);
    s.get(&a, "/v1/swipe-files?facets=colour")
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    s.get(&a, "/v1/swipe-files?aspect_ratio=5:1")
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    s.get(&a, "/v1/swipe-files?status=done")
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    let r = s
        .get(
            &a,
            &format!(
                "/v1/swipe-files?ids={},{}",
                coffee["id"].as_str().unwrap(),
                rocket["id"].as_str().unwrap()
            ),
        )
        .await
        .expect(200, None);
    assert_eq!(r.body["total_count"], 2);
    // Paging with an insert meanwhile.
    let p1 = s.get(&a, "/v1/swipe-files?limit=2").await.expect(200, None);
    assert_eq!(p1.body["has_more"], true);
    let late = upload_swipe(&s, &a, sample("coffee.png"))
        .await
        .expect(202, None)
        .id();
    let last = p1.body["data"][1]["id"].as_str().unwrap();
    let p2 = s
        .get(
            &a,
            &format!("/v1/swipe-files?limit=2&starting_after={last}"),
        )
        .await
        .expect(200, None);
    assert_eq!(
        ids(p2.body["data"].as_array().unwrap()),
        vec![coffee["id"].as_str().unwrap().to_string()]
    );
    assert_eq!(p2.body["has_more"], false);
    wait_ready(&s, &a, &late).await;
    s.delete(&a, &format!("/v1/swipe-files/{late}"))
        .await
        .expect(200, None);

    // Archive and restore.
    let cid = coffee["id"].as_str().unwrap();
    let r = s
        .delete(&a, &format!("/v1/swipe-files/{cid}"))
        .await
        .expect(200, None);
    assert_eq!(r.body["deleted"], true);
    let r = s.get(&a, "/v1/swipe-files").await.expect(200, None);
    assert_eq!(r.body["total_count"], 2);
    let r = s
        .get(&a, "/v1/swipe-files?archived=true")
        .await
        .expect(200, None);
    assert_eq!(r.body["total_count"], 2); // coffee and the late copy
    assert!(ids(r.body["data"].as_array().unwrap()).contains(&cid.to_string()));
    let hits = search(&s, &a, json!({"query": "coffee", "limit": 100})).await;
    assert!(!ids(&hits).contains(&cid.to_string()));
    let r = s
        .post(&a, &format!("/v1/swipe-files/{cid}/restore"), json!({}))
        .await
        .expect(200, None);
    assert_eq!(r.body["data"]["archived_at"], Value::Null);
    assert_eq!(s.get(&a, "/v1/swipe-files").await.body["total_count"], 3);

    // Isolation: another organisation sees nothing and changes nothing.
    s.get(&b, &format!("/v1/swipe-files/{cid}"))
        .await
        .expect(404, Some("SWIPE_FILE_NOT_FOUND"));
    s.delete(&b, &format!("/v1/swipe-files/{cid}"))
        .await
        .expect(404, Some("SWIPE_FILE_NOT_FOUND"));
    s.post(&b, &format!("/v1/swipe-files/{cid}/restore"), json!({}))
        .await
        .expect(404, Some("SWIPE_FILE_NOT_FOUND"));
    assert_eq!(s.get(&b, "/v1/swipe-files").await.body["total_count"], 0);
    assert!(search(&s, &b, json!({"query": "coffee"})).await.is_empty());
    s.post(&b, "/v1/swipe-files/search", json!({"swipe_file_id": cid}))
        .await
        .expect(404, Some("SWIPE_FILE_NOT_FOUND"));
    assert_eq!(
        s.get(&a, &format!("/v1/swipe-files/{cid}")).await.body["data"]["archived_at"],
        Value::Null
    );

    // Upload errors.
    upload_swipe(&s, &a, b"hello, not an image".to_vec())
        .await
        .expect(400, Some("IMAGE_INVALID_FORMAT"));
    upload_swipe(
        &s,
        &a,
        crate::support::png(1, 1, [0, 0, 0, 255])[..20].to_vec(),
    )
    .await
    .expect(400, Some("IMAGE_UNREADABLE"));
    upload_swipe(&s, &a, b"GIF89a\x01\x00\x01\x00\x00\x00\x00;".to_vec())
        .await
        .expect(400, Some("IMAGE_INVALID_FORMAT"));
    let form = reqwest::multipart::Form::new().text("title", "x");
    send(
        s.request(Method::POST, "/v1/swipe-files")
            .header("x-api-key", &a.key)
            .multipart(form),
    )
    .await
    .expect(400, Some("VALIDATION_ERROR"));
    // Scopes.
    let reader = s.key(&a.id, "swipe_files:read", None).await;
    let ro = Org {
        id: a.id.clone(),
        key: reader,
    };
    upload_swipe(&s, &ro, sample("coffee.png"))
        .await
        .expect(403, Some("FORBIDDEN"));
    s.delete(&ro, &format!("/v1/swipe-files/{cid}"))
        .await
        .expect(403, Some("FORBIDDEN"));
    assert_eq!(search(&s, &ro, json!({"query": "coffee"})).await.len(), 3);
    let writer = Org {
        id: a.id.clone(),
        key: s.key(&a.id, "swipe_files:write", None).await,
    };
    s.get(&writer, "/v1/swipe-files")
        .await
        .expect(403, Some("FORBIDDEN"));
    s.post(&writer, "/v1/swipe-files/search", json!({"query": "x"}))
        .await
        .expect(403, Some("FORBIDDEN"));
}

#[tokio::test]
async fn text_and_example_search_rank_what_a_person_expects() {
    let s = TestServer::start().await;
    let a = s.org_unlimited("A").await;
    let coffee = upload_ready(&s, &a, sample("coffee.png")).await;
    let cat = upload_ready(&s, &a, sample("chelsea.png")).await;
    let rocket = upload_ready(&s, &a, sample("rocket.jpg")).await;
    let copy = upload_ready(&s, &a, near_duplicate("chelsea.png")).await;

    let hits = search(&s, &a, json!({"query": "coffee"})).await;
    assert_eq!(hits[0]["id"], coffee["id"], "{hits:#?}");
    assert!(hits.iter().all(|h| h["similarity"].is_number()));
    let sims: Vec<f64> = hits
        .iter()
        .map(|h| h["similarity"].as_f64().unwrap())
        .collect();
    assert!(sims.windows(2).all(|w| w[0] >= w[1]));
    let hits = search(&s, &a, json!({"query": "a cat"})).await;
    assert!(
        [cat["id"].clone(), copy["id"].clone()].contains(&hits[0]["id"]),
        "{hits:#?}"
    );

    // By example: the near-duplicate's first look-alike is its original.
    let hits = search(&s, &a, json!({"swipe_file_id": copy["id"]})).await;
    assert_eq!(hits[0]["id"], cat["id"], "{hits:#?}");
    assert!(!ids(&hits).contains(&copy["id"].as_str().unwrap().to_string()));
    let hits = search(&s, &a, json!({"image_url": rocket["image_url"]})).await;
    assert_eq!(hits[0]["id"], rocket["id"]);
    // min_similarity cuts; limit caps.
    let best = search(&s, &a, json!({"swipe_file_id": copy["id"]})).await[0]["similarity"]
        .as_f64()
        .unwrap();
    let hits = search(
        &s,
        &a,
        json!({"swipe_file_id": copy["id"], "min_similarity": best}),
    )
    .await;
    assert_eq!(ids(&hits), vec![cat["id"].as_str().unwrap().to_string()]);
    assert_eq!(
        search(&s, &a, json!({"query": "coffee", "limit": 2}))
            .await
            .len(),
        2
    );
    // Filters apply.
    let hits = search(
        &s,
        &a,
        json!({"query": "coffee", "aspect_ratio": ["1:1", "3:4", "2:3", "4:5", "9:16", "1.91:1"]}),
    )
    .await;
    assert!(!ids(&hits).contains(&coffee["id"].as_str().unwrap().to_string()));
    let hits = search(&s, &a, json!({"query": "coffee", "aspect_ratio": "16:9"})).await;
    assert!(ids(&hits).contains(&coffee["id"].as_str().unwrap().to_string()));
    // Processing designs are not searched.
    let pending = upload_swipe(&s, &a, sample("coffee.png"))
        .await
        .expect(202, None)
        .id();
    let hits = search(&s, &a, json!({"query": "coffee", "limit": 100})).await;
    let ready_now =
        s.get(&a, &format!("/v1/swipe-files/{pending}")).await.body["data"]["status"] == "ready";
    assert!(ready_now || !ids(&hits).contains(&pending));

    for body in [
        json!({}),
        json!({"query": ""}),
        json!({"query": "x", "swipe_file_id": coffee["id"]}),
        json!({"query": "x", "limit": 0}),
        json!({"query": "x", "limit": 101}),
        json!({"query": "x", "industry": "cars"}),
        json!({"query": "x", "min_similarity": 2}),
        json!({"query": "x", "colour": "red"}),
        json!({"image_url": "ftp://example.com/a.png"}),
    ] {
        s.post(&a, "/v1/swipe-files/search", body)
            .await
            .expect(400, Some("VALIDATION_ERROR"));
    }
    s.post(
        &a,
        "/v1/swipe-files/search",
        json!({"query": "x", "design_pack_id": "dp_nope"}),
    )
    .await
    .expect(404, Some("DESIGN_PACK_NOT_FOUND"));
}

#[tokio::test]
async fn data_sources_subscriptions_and_read_only_designs() {
    let s = TestServer::start().await;
    let a = s.org_unlimited("A").await;
    let src = managed_source(&s, "Starter", true, &["chelsea.png", "rocket.jpg"]).await;
    let other = managed_source(&s, "Optional", false, &["coffee.png"]).await;
    let own = upload_ready(&s, &a, sample("coffee.png")).await;
    wait_all_ready(&s, &a, 3).await;

    let r = s
        .get(&a, "/v1/swipe-files/data-sources")
        .await
        .expect(200, None);
    let sources = r.body["data"].as_array().unwrap();
    assert_eq!(sources.len(), 2);
    assert_eq!(
        sources[0],
        json!({"id": src, "name": "Starter", "subscribed": true, "item_count": 2})
    );
    assert_eq!(sources[1]["subscribed"], false);
    let list = s.get(&a, "/v1/swipe-files").await.expect(200, None);
    assert_eq!(list.body["total_count"], 3);
    let managed: Vec<&Value> = list.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["is_managed"] == true)
        .collect();
    assert_eq!(managed.len(), 2);
    assert!(
        managed
            .iter()
            .all(|d| d["source"] == "svc_managed" && d["data_source_id"] == src.as_str())
    );
    let mid = managed[0]["id"].as_str().unwrap().to_string();
    s.delete(&a, &format!("/v1/swipe-files/{mid}"))
        .await
        .expect(409, Some("SWIPE_FILE_READ_ONLY"));
    s.post(&a, &format!("/v1/swipe-files/{mid}/restore"), json!({}))
        .await
        .expect(409, Some("SWIPE_FILE_READ_ONLY"));

    // data_source_ids and include_own.
    assert_eq!(
        s.get(&a, "/v1/swipe-files?data_source_ids=").await.body["total_count"],
        1
    );
    assert_eq!(
        s.get(&a, &format!("/v1/swipe-files?data_source_ids={src}"))
            .await
            .body["total_count"],
        3
    );
    assert_eq!(
        s.get(&a, &format!("/v1/swipe-files?data_source_ids={other}"))
            .await
            .body["total_count"],
        1
    );
    assert_eq!(
        s.get(&a, "/v1/swipe-files?include_own=false").await.body["total_count"],
        2
    );
    assert_eq!(
        s.get(&a, "/v1/swipe-files?include_own=false&data_source_ids=")
            .await
            .body["total_count"],
        0
    );
    let hits = search(&s, &a, json!({"query": "rocket", "data_source_ids": []})).await;
    assert_eq!(ids(&hits), vec![own["id"].as_str().unwrap().to_string()]);

    // Turning the source off hides its designs at once, everywhere; idempotent.
    for _ in 0..2 {
        let r = s
            .call(
                Method::PUT,
                &format!("/v1/swipe-files/data-sources/{src}/subscription"),
                Some(&a.key),
                Some(json!({"active": false})),
            )
            .await
            .expect(200, None);
        assert_eq!(r.body["data"]["subscribed"], false);
    }
    assert_eq!(s.get(&a, "/v1/swipe-files").await.body["total_count"], 1);
    s.get(&a, &format!("/v1/swipe-files/{mid}"))
        .await
        .expect(404, Some("SWIPE_FILE_NOT_FOUND"));
    assert_eq!(search(&s, &a, json!({"query": "rocket"})).await.len(), 1);
    let g = s
        .get(&a, "/v1/search?types=swipe_file&limit=25")
        .await
        .expect(200, None);
    assert_eq!(g.body["data"].as_array().unwrap().len(), 1);
    // On again: back at once. The optional source can be turned on too.
    s.call(
        Method::PUT,
        &format!("/v1/swipe-files/data-sources/{src}/subscription"),
        Some(&a.key),
        Some(json!({"active": true})),
    )
    .await
    .expect(200, None);
    s.call(
        Method::PUT,
        &format!("/v1/swipe-files/data-sources/{other}/subscription"),
        Some(&a.key),
        Some(json!({"active": true})),
    )
    .await
    .expect(200, None);
    assert_eq!(s.get(&a, "/v1/swipe-files").await.body["total_count"], 4);
    wait_all_ready(&s, &a, 4).await;
    assert_eq!(search(&s, &a, json!({"query": "rocket"})).await.len(), 4);
    let g = s
        .get(&a, "/v1/search?types=swipe_file&limit=25")
        .await
        .expect(200, None);
    let results = g.body["data"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    assert!(results.iter().all(|r| {
        r["object"] == "swipe_file"
            && r["thumbnail_url"]
                .as_str()
                .is_some_and(|u| u.ends_with("preview.webp"))
    }));
    let r = s
        .get(&a, &format!("/v1/search?ids={mid}"))
        .await
        .expect(200, None);
    assert_eq!(r.body["data"][0]["id"], mid.as_str());

    s.call(
        Method::PUT,
        "/v1/swipe-files/data-sources/sfs_nope/subscription",
        Some(&a.key),
        Some(json!({"active": true})),
    )
    .await
    .expect(404, Some("DATA_SOURCE_NOT_FOUND"));
    s.call(
        Method::PUT,
        &format!("/v1/swipe-files/data-sources/{src}/subscription"),
        Some(&a.key),
        Some(json!({"active": "yes"})),
    )
    .await
    .expect(400, Some("VALIDATION_ERROR"));
    // A new organisation starts subscribed to the default source only.
    let b = s.org_unlimited("B").await;
    assert_eq!(s.get(&b, "/v1/swipe-files").await.body["total_count"], 2);
}

#[tokio::test]
async fn design_packs_follow_every_rule() {
    let s = TestServer::start().await;
    let a = s.org_unlimited("A").await;
    let b = s.org_unlimited("B").await;
    let src = managed_source(&s, "Starter", true, &["rocket.jpg"]).await;
    let coffee = upload_ready(&s, &a, sample("coffee.png")).await;
    let cat = upload_ready(&s, &a, sample("chelsea.png")).await;
    wait_all_ready(&s, &a, 3).await;
    let managed = s.get(&a, "/v1/swipe-files?include_own=false").await.body["data"][0].clone();
    let (cid, tid, mid) = (
        coffee["id"].as_str().unwrap(),
        cat["id"].as_str().unwrap(),
        managed["id"].as_str().unwrap(),
    );

    // Create with own and managed designs (rule 3).
    let r = s
        .post(
            &a,
            "/v1/design-packs",
            json!({"title": "Morning", "description": "drinks", "swipe_file_ids": [cid, mid]}),
        )
        .await
        .expect(201, None);
    let p1 = r.id();
    assert_eq!(r.body["data"]["item_count"], 2);
    assert_eq!(r.body["data"]["is_managed"], false);
    assert_eq!(r.body["data"]["created_by"], Value::Null);
    assert_eq!(r.body["data"]["previews"][0]["swipe_file_id"], mid);
    assert!(r.body["data"].get("matched_item_count").is_none());
    // A design in many packs (rule 2).
    let p2 = s
        .post(
            &a,
            "/v1/design-packs",
            json!({"title": "Cats", "swipe_file_ids": [tid, cid]}),
        )
        .await
        .expect(201, None)
        .id();
    assert_eq!(
        s.get(&a, &format!("/v1/swipe-files?design_pack_id={p2}"))
            .await
            .body["total_count"],
        2
    );

    // Add: idempotent, with already_present; updated_at moves; most recently updated first.
    let before = s.get(&a, &format!("/v1/design-packs/{p1}")).await.body["data"]["updated_at"]
        .as_str()
        .unwrap()
        .to_string();
    let r = s
        .post(
            &a,
            &format!("/v1/design-packs/{p1}/items"),
            json!({"swipe_file_ids": [tid, cid]}),
        )
        .await
        .expect(200, None);
    assert_eq!(
        r.body["data"],
        json!({"added": [tid], "already_present": [cid], "item_count": 3})
    );
    let after = s.get(&a, &format!("/v1/design-packs/{p1}")).await.body["data"].clone();
    assert!(after["updated_at"].as_str().unwrap() >= before.as_str());
    assert_eq!(after["previews"][0]["swipe_file_id"], tid);
    let list = s.get(&a, "/v1/design-packs").await.expect(200, None);
    assert_eq!(list.body["total_count"], 2);
    assert_eq!(list.body["data"][0]["id"], p1.as_str());

    // SWIPE_FILE_NOT_FOUND lists each bad id; nothing is added.
    let foreign = upload_ready(&s, &b, sample("rocket.jpg")).await;
    let r = s
        .post(
            &a,
            &format!("/v1/design-packs/{p2}/items"),
            json!({"swipe_file_ids": [mid, "sf_nope", foreign["id"]]}),
        )
        .await
        .expect(404, Some("SWIPE_FILE_NOT_FOUND"));
    let details = r.body["error"]["details"].as_array().unwrap();
    assert_eq!(details.len(), 2);
    assert!(details[0]["message"].as_str().unwrap().contains("sf_nope"));
    assert!(
        details[1]["message"]
            .as_str()
            .unwrap()
            .contains(foreign["id"].as_str().unwrap())
    );
    assert_eq!(
        s.get(&a, &format!("/v1/design-packs/{p2}")).await.body["data"]["item_count"],
        2
    );
    // 100 per call.
    let many: Vec<String> = (0..101).map(|i| format!("sf_{i}")).collect();
    s.post(
        &a,
        &format!("/v1/design-packs/{p2}/items"),
        json!({"swipe_file_ids": many}),
    )
    .await
    .expect(400, Some("VALIDATION_ERROR"));

    // Rule 4: archived designs and turned-off sources drop out and come back.
    s.delete(&a, &format!("/v1/swipe-files/{tid}"))
        .await
        .expect(200, None);
    s.call(
        Method::PUT,
        &format!("/v1/swipe-files/data-sources/{src}/subscription"),
        Some(&a.key),
        Some(json!({"active": false})),
    )
    .await
    .expect(200, None);
    let p = s.get(&a, &format!("/v1/design-packs/{p1}")).await.body["data"].clone();
    assert_eq!(p["item_count"], 1);
    assert_eq!(p["previews"].as_array().unwrap().len(), 1);
    assert_eq!(
        s.get(&a, &format!("/v1/design-packs/{p1}/items"))
            .await
            .body["total_count"],
        1
    );
    s.post(&a, &format!("/v1/swipe-files/{tid}/restore"), json!({}))
        .await
        .expect(200, None);
    s.call(
        Method::PUT,
        &format!("/v1/swipe-files/data-sources/{src}/subscription"),
        Some(&a.key),
        Some(json!({"active": true})),
    )
    .await
    .expect(200, None);
    assert_eq!(
        s.get(&a, &format!("/v1/design-packs/{p1}")).await.body["data"]["item_count"],
        3
    );

    // Listing with swipe-file filters: only packs with a match, matched_item_count counted here.
    let items = s
        .get(&a, &format!("/v1/design-packs/{p1}/items"))
        .await
        .body["data"]
        .as_array()
        .unwrap()
        .clone();
    let ratio = items[0]["aspect_ratio"].as_str().unwrap().to_string();
    let expected = items
        .iter()
        .filter(|d| d["aspect_ratio"] == ratio.as_str())
        .count();
    let r = s
        .get(&a, &format!("/v1/design-packs?aspect_ratio={ratio}"))
        .await
        .expect(200, None);
    let hit = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == p1.as_str())
        .unwrap()
        .clone();
    assert_eq!(hit["matched_item_count"], expected);
    let r = s
        .get(&a, "/v1/design-packs?include_own=false")
        .await
        .expect(200, None);
    assert_eq!(ids(r.body["data"].as_array().unwrap()), vec![p1.clone()]);
    assert_eq!(r.body["data"][0]["matched_item_count"], 1);
    assert_eq!(r.body["total_count"], 1);
    let r = s
        .get(
            &a,
            &format!("/v1/design-packs/{p1}/items?facets=aspect_ratio"),
        )
        .await
        .expect(200, None);
    let facet_total: i64 = r.body["facets"]["aspect_ratio"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["count"].as_i64().unwrap())
        .sum();
    assert_eq!(facet_total, 3);

    // Remove, rename, archive, unarchive, delete (designs stay).
    let r = s
        .call(
            Method::DELETE,
            &format!("/v1/design-packs/{p1}/items"),
            Some(&a.key),
            Some(json!({"swipe_file_ids": [cid, "sf_nope"]})),
        )
        .await
        .expect(200, None);
    assert_eq!(
        r.body["data"],
        json!({"removed": [cid], "not_present": ["sf_nope"], "item_count": 2})
    );
    let r = s
        .patch(
            &a,
            &format!("/v1/design-packs/{p1}"),
            json!({"title": "Renamed", "description": null}),
        )
        .await
        .expect(200, None);
    assert_eq!(r.body["data"]["title"], "Renamed");
    assert_eq!(r.body["data"]["description"], Value::Null);
    s.patch(&a, &format!("/v1/design-packs/{p1}"), json!({"title": ""}))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    s.patch(
        &a,
        &format!("/v1/design-packs/{p1}"),
        json!({"title": "x".repeat(81)}),
    )
    .await
    .expect(400, Some("VALIDATION_ERROR"));
    s.post(
        &a,
        "/v1/design-packs",
        json!({"title": "t", "description": "d".repeat(501)}),
    )
    .await
    .expect(400, Some("VALIDATION_ERROR"));
    let r = s
        .post(&a, &format!("/v1/design-packs/{p1}/archive"), json!({}))
        .await
        .expect(200, None);
    assert!(r.body["data"]["archived_at"].is_string());
    assert_eq!(s.get(&a, "/v1/design-packs").await.body["total_count"], 1);
    assert_eq!(
        s.get(&a, "/v1/design-packs?archived=true").await.body["total_count"],
        1
    );
    let g = s
        .get(&a, "/v1/search?types=design_pack&query=renamed")
        .await
        .expect(200, None);
    assert!(g.body["data"].as_array().unwrap().is_empty());
    let r = s
        .post(&a, &format!("/v1/design-packs/{p1}/unarchive"), json!({}))
        .await
        .expect(200, None);
    assert_eq!(r.body["data"]["archived_at"], Value::Null);
    let g = s
        .get(&a, "/v1/search?types=design_pack&query=renamed")
        .await
        .expect(200, None);
    assert_eq!(
        g.body["data"][0],
        json!({"object": "design_pack", "id": p1, "label": "Renamed", "hint": null, "thumbnail_url": null})
    );
    let r = s
        .delete(&a, &format!("/v1/design-packs/{p1}"))
        .await
        .expect(200, None);
    assert_eq!(r.body["deleted"], true);
    s.get(&a, &format!("/v1/design-packs/{p1}"))
        .await
        .expect(404, Some("DESIGN_PACK_NOT_FOUND"));
    s.get(&a, &format!("/v1/swipe-files/{mid}"))
        .await
        .expect(200, None);

    // Isolation.
    s.get(&b, &format!("/v1/design-packs/{p2}"))
        .await
        .expect(404, Some("DESIGN_PACK_NOT_FOUND"));
    s.post(
        &b,
        &format!("/v1/design-packs/{p2}/items"),
        json!({"swipe_file_ids": [foreign["id"]]}),
    )
    .await
    .expect(404, Some("DESIGN_PACK_NOT_FOUND"));
    s.delete(&b, &format!("/v1/design-packs/{p2}"))
        .await
        .expect(404, Some("DESIGN_PACK_NOT_FOUND"));
    s.get(&b, &format!("/v1/design-packs/{p2}/items"))
        .await
        .expect(404, Some("DESIGN_PACK_NOT_FOUND"));
    s.get(&b, &format!("/v1/swipe-files?design_pack_id={p2}"))
        .await
        .expect(404, Some("DESIGN_PACK_NOT_FOUND"));
    assert_eq!(s.get(&b, "/v1/design-packs").await.body["total_count"], 0);
    assert_eq!(
        s.get(&a, &format!("/v1/design-packs/{p2}")).await.body["data"]["item_count"],
        2
    );
    // Scopes.
    let reader = Org {
        id: a.id.clone(),
        key: s.key(&a.id, "design_packs:read", None).await,
    };
    s.get(&reader, &format!("/v1/design-packs/{p2}"))
        .await
        .expect(200, None);
    s.post(&reader, "/v1/design-packs", json!({"title": "x"}))
        .await
        .expect(403, Some("FORBIDDEN"));

    // Rule 5: at most 500 designs (fixture rows written straight into SQL: ingesting 500
    // images would take minutes and test nothing more).
    let mut tx = s.db.begin_write().await.unwrap();
    let mut fillers = Vec::new();
    for i in 0..498 {
        let id = format!("sf_filler{i:04}");
        adforge_api::store::query("INSERT INTO swipe_files (id, org_id, source, blob_key, status, created_at, updated_at) VALUES (?, ?, 'upload', 'x', 'ready', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')")
            .bind(&id).bind(&a.id).execute(&mut *tx).await.unwrap();
        fillers.push(id);
    }
    tx.commit().await.unwrap();
    for chunk in fillers.chunks(100) {
        s.post(
            &a,
            &format!("/v1/design-packs/{p2}/items"),
            json!({"swipe_file_ids": chunk}),
        )
        .await
        .expect(200, None);
    }
    assert_eq!(
        s.get(&a, &format!("/v1/design-packs/{p2}")).await.body["data"]["item_count"],
        500
    );
    let r = s
        .post(
            &a,
            &format!("/v1/design-packs/{p2}/items"),
            json!({"swipe_file_ids": [mid]}),
        )
        .await
        .expect(409, Some("DESIGN_PACK_FULL"));
    assert!(r.body["error"]["message"].as_str().unwrap().contains("500"));
    // Re-adding present designs to a full pack is fine.
    s.post(
        &a,
        &format!("/v1/design-packs/{p2}/items"),
        json!({"swipe_file_ids": [cid]}),
    )
    .await
    .expect(200, None);
}

#[tokio::test]
async fn without_models_uploads_answer_503_and_the_rest_works() {
    let empty = tempfile::tempdir().unwrap();
    let dir = empty.path().to_path_buf();
    let s = TestServer::start_with(move |a| a.models_dir = Some(dir)).await;
    let a = s.org("A").await;
    let r = upload_swipe(&s, &a, sample("coffee.png"))
        .await
        .expect(503, Some("SERVICE_UNAVAILABLE"));
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("scripts/fetch-models")
    );
    s.post(&a, "/v1/swipe-files/search", json!({"query": "coffee"}))
        .await
        .expect(503, Some("SERVICE_UNAVAILABLE"));
    s.get(&a, "/v1/swipe-files").await.expect(200, None);
    s.post(&a, "/v1/design-packs", json!({"title": "Still works"}))
        .await
        .expect(201, None);
    s.post(&a, "/v1/brands", json!({"name": "Acme"}))
        .await
        .expect(201, None);
}

/// A 1080 px square design with big words on it, drawn by our renderer (not part of the
/// default collection).
fn words_design(words: &str) -> Vec<u8> {
    let tree = adforge_renderer::Tree::from_value(json!({
        "root": "root",
        "nodes": {
            "root": {"id": "root", "type": "FRAME", "width": 1080, "height": 1080,
                "fills": [{"type": "SOLID", "color": {"r": 0.98, "g": 0.96, "b": 0.9, "a": 1}}],
                "children": ["t"]},
            "t": {"id": "t", "type": "TEXT", "x": 80, "y": 300, "width": 920, "height": 500,
                "characters": words, "fontSize": 130, "fontWeight": 700,
                "fontFamily": "Inter", "textAlignHorizontal": "CENTER",
                "fills": [{"type": "SOLID", "color": {"r": 0.1, "g": 0.1, "b": 0.2, "a": 1}}]}
        }
    }))
    .unwrap();
    let renderer = adforge_renderer::Renderer::new(
        adforge_renderer::FontLibrary::bundled(),
        Arc::new(adforge_renderer::HttpFetcher::new(
            adforge_renderer::FetchLimits::default(),
        )),
    );
    let options = adforge_renderer::RenderOptions {
        width: Some(1080),
        encode_png: true,
    };
    renderer.render(&tree, &options).unwrap().png.unwrap()
}

/// With Tesseract installed (scripts/test installs it), the words printed on a design reach
/// its caption: a text query for them finds it first, and "% off" makes it an offer.
#[tokio::test]
async fn words_printed_on_a_design_are_read_and_found_by_text() {
    assert!(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .any(|d| d.join("tesseract").is_file()),
        "tesseract is not on PATH: install Debian's tesseract-ocr and tesseract-ocr-eng (scripts/test does)"
    );
    let s = TestServer::start().await;
    let a = s.org_unlimited("A").await;
    let boots = upload_ready(&s, &a, words_design("WINTER BOOTS\n30% OFF")).await;
    let webinar = upload_ready(&s, &a, words_design("FREE WEBINAR\nTHURSDAY")).await;
    upload_ready(&s, &a, sample("coffee.png")).await;
    upload_ready(&s, &a, sample("rocket.jpg")).await;

    let hits = search(&s, &a, json!({"query": "winter boots"})).await;
    assert_eq!(hits[0]["id"], boots["id"], "{hits:#?}");
    let hits = search(&s, &a, json!({"query": "webinar"})).await;
    assert_eq!(hits[0]["id"], webinar["id"], "{hits:#?}");
    assert_eq!(boots["ad_format"], "offer_sale", "{boots}");
}

#[tokio::test]
async fn the_default_collection_is_imported_at_the_first_start_and_subscribed() {
    // No workers: this checks the import and the subscription, not 45 ingests.
    let s = TestServer::start_with(|a| {
        a.workers = 0;
        a.default_collection =
            Some(adforge_api::resources::swipe_files::sources::DEFAULT_COLLECTION_DIR.into());
    })
    .await;
    let a = s.org("A").await;
    let r = s
        .get(&a, "/v1/swipe-files/data-sources")
        .await
        .expect(200, None);
    let sources = r.body["data"].as_array().unwrap();
    assert_eq!(sources.len(), 1);
    assert_eq!(sources[0]["name"], "adforge starter collection");
    assert_eq!(sources[0]["subscribed"], true);
    let files =
        std::fs::read_dir(adforge_api::resources::swipe_files::sources::DEFAULT_COLLECTION_DIR)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "png")
            })
            .count();
    assert!(files >= 40, "{files}");
    let r = s
        .get(&a, "/v1/swipe-files?include_own=false&limit=1")
        .await
        .expect(200, None);
    assert_eq!(r.body["total_count"], files);
    assert_eq!(r.body["data"][0]["is_managed"], true);
    assert_eq!(r.body["data"][0]["source"], "svc_managed");

    // The collection ships curated packs, one per placement, holding every design of that
    // aspect ratio; they follow the subscription and carry the marker in the global search.
    let packs = s
        .get(&a, "/v1/design-packs?limit=100")
        .await
        .expect(200, None);
    let packs = packs.body["data"].as_array().unwrap().clone();
    let titles: Vec<&str> = packs.iter().map(|p| p["title"].as_str().unwrap()).collect();
    assert_eq!(
        {
            let mut t = titles.clone();
            t.sort();
            t
        },
        vec![
            "Portrait feed ads (4:5)",
            "Square feed ads (1:1)",
            "Stories and Reels (9:16)"
        ]
    );
    let mut total = 0;
    for p in &packs {
        assert_eq!(p["is_managed"], true, "{p}");
        let ratio = match p["title"].as_str().unwrap() {
            "Square feed ads (1:1)" => "1:1",
            "Portrait feed ads (4:5)" => "4:5",
            _ => "9:16",
        };
        let items = s
            .get(
                &a,
                &format!(
                    "/v1/design-packs/{}/items?limit=100",
                    p["id"].as_str().unwrap()
                ),
            )
            .await
            .expect(200, None);
        let expected = s
            .get(
                &a,
                &format!("/v1/swipe-files?include_own=false&aspect_ratio={ratio}&limit=1"),
            )
            .await
            .expect(200, None)
            .body["total_count"]
            .as_u64()
            .unwrap();
        assert!(expected > 0);
        assert_eq!(items.body["total_count"].as_u64(), Some(expected), "{p}");
        assert_eq!(p["item_count"].as_u64(), Some(expected), "{p}");
        assert!(
            items.body["data"]
                .as_array()
                .unwrap()
                .iter()
                .all(|d| d["aspect_ratio"] == ratio)
        );
        total += expected;
    }
    assert_eq!(total, files as u64, "every design is in one placement pack");
    let hits = s
        .get(&a, "/v1/search?types=design_pack&query=stories")
        .await
        .expect(200, None);
    let hits = hits.body["data"].as_array().unwrap().clone();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["label"], "Stories and Reels (9:16)");
    assert_eq!(hits[0]["hint"], "Curated by adforge");
    let source = sources[0]["id"].as_str().unwrap().to_string();
    s.call(
        Method::PUT,
        &format!("/v1/swipe-files/data-sources/{source}/subscription"),
        Some(&a.key),
        Some(json!({"active": false})),
    )
    .await
    .expect(200, None);
    let r = s.get(&a, "/v1/design-packs").await.expect(200, None);
    assert_eq!(r.body["total_count"], 0, "{}", r.body);
    let r = s
        .get(&a, "/v1/search?types=design_pack&query=stories")
        .await
        .expect(200, None);
    assert_eq!(r.body["data"], json!([]));
    // Another organisation still sees them.
    let b = s.org("B").await;
    let r = s.get(&b, "/v1/design-packs").await.expect(200, None);
    assert_eq!(r.body["total_count"], 3, "{}", r.body);
}

#[tokio::test]
async fn storage_failure_is_image_upload_failed_and_stores_nothing() {
    let s = TestServer::start().await;
    let a = s.org("A").await;
    // Break the blob store for real: a plain file where the swipe-files folder must be.
    let blobs = s.data_dir.join("blobs");
    std::fs::create_dir_all(&blobs).unwrap();
    std::fs::write(blobs.join("swipe-files"), b"not a folder").unwrap();
    upload_swipe(&s, &a, crate::support::png(8, 8, [1, 1, 1, 255]))
        .await
        .expect(500, Some("IMAGE_UPLOAD_FAILED"));
    assert_eq!(s.get(&a, "/v1/swipe-files").await.body["total_count"], 0);
    std::fs::remove_file(blobs.join("swipe-files")).unwrap();
    upload_ready(&s, &a, crate::support::png(8, 8, [1, 1, 1, 255])).await;
}

/// An upload with an Idempotency-Key answers with its row (the commit is deferred to the
/// end of the request, so the row must be read inside it) and a retry replays it; a
/// malformed key on the subscription PUT is refused like on every other write.
#[tokio::test]
async fn idempotent_uploads_answer_their_row_and_replay() {
    let s = TestServer::start().await;
    let org = s.org_unlimited("Idem").await;
    let form = || {
        reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(sample("coffee.png")).file_name("coffee.png"),
        )
    };
    let upload = || {
        send(
            s.request(Method::POST, "/v1/swipe-files")
                .header("x-api-key", &org.key)
                .header("idempotency-key", "upload-once")
                .multipart(form()),
        )
    };
    let first = upload().await.expect(202, None);
    let id = first.id();
    assert_eq!(first.body["data"]["status"], "processing");
    let again = upload().await.expect(202, None);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.id(), id);
    wait_ready(&s, &org, &id).await;
    let list = s
        .get(&org, "/v1/swipe-files?include_own=true&data_source_ids=")
        .await
        .expect(200, None);
    assert_eq!(
        list.body["total_count"], 1,
        "the retry stored nothing twice"
    );

    // Writes whose answers are read back after the commit answer what they wrote.
    let pack = send(
        s.request(Method::POST, "/v1/design-packs")
            .header("x-api-key", &org.key)
            .header("idempotency-key", "pack-once")
            .json(&json!({"title": "Keepers", "swipe_file_ids": [id]})),
    )
    .await
    .expect(201, None);
    assert_eq!(pack.body["data"]["item_count"], 1, "{}", pack.body);

    let sources = s
        .get(&org, "/v1/swipe-files/data-sources")
        .await
        .expect(200, None);
    if let Some(src) = sources.body["data"].as_array().unwrap().first() {
        let sid = src["id"].as_str().unwrap();
        let off = send(
            s.request(
                Method::PUT,
                &format!("/v1/swipe-files/data-sources/{sid}/subscription"),
            )
            .header("x-api-key", &org.key)
            .header("idempotency-key", "toggle-off")
            .json(&json!({"active": false})),
        )
        .await
        .expect(200, None);
        assert_eq!(off.body["data"]["subscribed"], false, "{}", off.body);
        send(
            s.request(
                Method::PUT,
                &format!("/v1/swipe-files/data-sources/{sid}/subscription"),
            )
            .header("x-api-key", &org.key)
            .header("idempotency-key", "bad key with spaces")
            .json(&json!({"active": false})),
        )
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    }
}
