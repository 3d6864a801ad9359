//! Typed results (issue 41): the result router hands each kind of worker result to the
//! feature it completes by its kind, and each failure by its subject's kind (never by the
//! subject's id or by which fields are set), and each is applied once: the same event
//! again, as a redelivery brings it, changes nothing, whether handed to the router or
//! published twice on the server's own queue (in-process and on Redis).

use adforge_worker::protocol::{FigmaFrameVersion, FigmaSynced};
use adforge_worker::{
    AdCompleted, AdFailed, DesignTemplateAnalysed, Event, FigmaSyncResult, ImageAdRendered,
    JobResult, SubjectKind, SwipeFileIngested,
};
use serde_json::{Value, json};

use crate::support::{Org, TestServer, png};

#[path = "../../../../worker/tests/queue/redis_server.rs"]
#[allow(dead_code, clippy::duplicate_mod)]
mod redis_server;

fn ad(url: &str) -> ImageAdRendered {
    ImageAdRendered {
        image_url: url.into(),
        width: 1080,
        height: 1350,
        json_tree: None,
        render: None,
        copy: None,
    }
}

fn template(url: &str) -> DesignTemplateAnalysed {
    DesignTemplateAnalysed {
        preview_url: url.into(),
        width: 1080,
        height: 1920,
        preview_key: "design-templates/preview.png".into(),
        json_tree: json!({"root": "root", "nodes": {"root": {"type": "frame", "name": "Template",
            "x": 0, "y": 0, "width": 1080, "height": 1920, "children": []}}}),
        cache_hit: false,
        composition: "reference_blueprint".into(),
        note: None,
        reference_colours: vec![[200, 40, 40]],
        industry: None,
        ad_format: None,
    }
}

fn synced() -> FigmaSynced {
    FigmaSynced {
        unchanged: false,
        frame: FigmaFrameVersion {
            file_version: "101".into(),
            frame_hash: "f00d".into(),
        },
        file_name: "Spring ads".into(),
        last_modified: "2026-11-28T00:00:00Z".into(),
        figma_render_key: None,
        figma_render_url: None,
        report: Default::default(),
    }
}

fn completed(id: &str, result: JobResult) -> Event {
    Event::Completed(AdCompleted {
        ad_id: id.into(),
        version: 1,
        duration_ms: 7,
        result,
    })
}

async fn balance(s: &TestServer, org: &Org) -> (i64, i64) {
    adforge_api::store::query_as("SELECT balance_cents, held_cents FROM wallets WHERE org_id = ?")
        .bind(&org.id)
        .fetch_one(&s.db.read)
        .await
        .unwrap()
}

/// The stored Figma sync state of a row (empty when none).
async fn figma_sync(s: &TestServer, table: &str, id: &str) -> String {
    let state: Option<String> =
        adforge_api::store::query_scalar(&format!("SELECT figma_sync FROM {table} WHERE id = ?"))
            .bind(id)
            .fetch_one(&s.db.read)
            .await
            .unwrap();
    state.unwrap_or_default()
}

async fn get(s: &TestServer, org: &Org, path: &str) -> Value {
    s.get(org, path).await.expect(200, None).body["data"].clone()
}

/// One subject of each kind a result completes, each waiting for its worker, in an
/// organisation with money for the ads.
struct Subjects {
    org: Org,
    ad: String,
    synced_ad: String,
    template: String,
    synced_template: String,
    swipe: String,
}

async fn subjects(s: &TestServer, name: &str) -> Subjects {
    let org = s.org(name).await;
    let (c, reference) = s.ad_inputs(&org).await;
    adforge_api::store::query(
        "UPDATE wallets SET balance_cents = balance_cents + 10000 WHERE org_id = ?",
    )
    .bind(&org.id)
    .execute(&s.db.write)
    .await
    .unwrap();
    let new_ad = || async {
        s.post(
            &org,
            "/v1/image-ads",
            json!({"reference_ad_url": reference, "brand_id": c.brand, "product_id": c.product,
                "audience_id": c.audience}),
        )
        .await
        .expect(202, None)
        .id()
    };
    let new_template = || async {
        s.post(
            &org,
            "/v1/design-templates",
            json!({"reference_image_url": reference}),
        )
        .await
        .expect(202, None)
        .id()
    };
    let (ad, synced_ad) = (new_ad().await, new_ad().await);
    let (template, synced_template) = (new_template().await, new_template().await);
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(png(80, 100, [10, 200, 30, 255])).file_name("d.png"),
    );
    let swipe = crate::support::send(
        s.request(reqwest::Method::POST, "/v1/swipe-files")
            .header("x-api-key", &org.key)
            .multipart(form),
    )
    .await
    .expect(202, None)
    .id();
    Subjects {
        org,
        ad,
        synced_ad,
        template,
        synced_template,
        swipe,
    }
}

/// A completed result of each kind for `s`'s subjects, with the kind its applier reports.
fn results(s: &Subjects) -> [(Event, &'static str); 5] {
    [
        (
            completed(&s.ad, JobResult::ImageAd(ad("https://cdn.test/ad.png"))),
            "image_ad",
        ),
        (
            completed(
                &s.swipe,
                JobResult::SwipeFile(Box::new(SwipeFileIngested {
                    width: 80,
                    height: 100,
                    thumb_key: format!("swipe-files/{}/preview.webp", s.swipe),
                    blob_key: None,
                    aspect_ratio: "4:5".into(),
                    industry: None,
                    ad_format: Some("product_shot".into()),
                    caption: "a green square".into(),
                    labels: vec![("square".into(), 0.9)],
                    ocr_text: None,
                    image_model: "test-image".into(),
                    image_vector: vec![0.6, 0.8],
                    text_model: "test-text".into(),
                    text_vector: vec![1.0, 0.0],
                })),
            ),
            "swipe_file",
        ),
        (
            completed(
                &s.template,
                JobResult::DesignTemplate(Box::new(template("https://cdn.test/dt.png"))),
            ),
            "design_template",
        ),
        (
            completed(
                &s.synced_ad,
                JobResult::FigmaSync(Box::new(FigmaSyncResult::ImageAd {
                    synced: synced(),
                    rendered: Some(ad("https://cdn.test/figma-ad.png")),
                })),
            ),
            "image_ad",
        ),
        (
            completed(
                &s.synced_template,
                JobResult::FigmaSync(Box::new(FigmaSyncResult::DesignTemplate {
                    synced: synced(),
                    rendered: Some(Box::new(template("https://cdn.test/figma-dt.png"))),
                })),
            ),
            "design_template",
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_kind_of_result_is_applied_by_its_kind_and_once() {
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let sub = subjects(&s, "Results").await;
    let blobs = adforge_api::blob::LocalBlobStore::new(s.data_dir.join("blobs"), "http://unused");
    let events = results(&sub);
    let Subjects {
        org,
        ad: ad_id,
        synced_ad,
        template: template_id,
        synced_template,
        swipe: swipe_id,
    } = sub;
    let held = balance(&s, &org).await;
    assert!(held.1 > 0, "two ads hold their price: {held:?}");

    for (event, kind) in &events {
        let applied = adforge_api::results::apply(&s.db, &blobs, event)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{event:?} changed nothing"));
        assert_eq!((applied.kind, applied.outcome), (*kind, "completed"));
    }
    let after_once = balance(&s, &org).await;
    assert_eq!(after_once.1, 0, "both holds captured: {after_once:?}");
    assert!(after_once.0 < held.0);
    // A redelivery of every event changes nothing.
    for (event, _) in &events {
        let again = adforge_api::results::apply(&s.db, &blobs, event)
            .await
            .unwrap();
        assert_eq!(again, None, "{event:?} applied twice");
    }
    assert_eq!(balance(&s, &org).await, after_once, "charged once");

    let a = get(&s, &org, &format!("/v1/image-ads/{ad_id}")).await;
    assert_eq!(
        (&a["status"], &a["image_url"]),
        (&json!("completed"), &json!("https://cdn.test/ad.png"))
    );
    let a = get(&s, &org, &format!("/v1/image-ads/{synced_ad}")).await;
    assert_eq!(
        (&a["status"], &a["image_url"]),
        (&json!("completed"), &json!("https://cdn.test/figma-ad.png"))
    );
    assert!(
        figma_sync(&s, "image_ads", &synced_ad)
            .await
            .contains("Spring ads")
    );
    let f = get(&s, &org, &format!("/v1/swipe-files/{swipe_id}")).await;
    assert_eq!(
        (&f["status"], &f["width"], &f["aspect_ratio"]),
        (&json!("ready"), &json!(80), &json!("4:5"))
    );
    let t = get(&s, &org, &format!("/v1/design-templates/{template_id}")).await;
    assert_eq!(
        (&t["status"], &t["preview_url"], &t["aspect_ratio"]),
        (
            &json!("completed"),
            &json!("https://cdn.test/dt.png"),
            &json!("9:16")
        )
    );
    let t = get(&s, &org, &format!("/v1/design-templates/{synced_template}")).await;
    assert_eq!(t["preview_url"], "https://cdn.test/figma-dt.png");
    assert!(
        figma_sync(&s, "design_templates", &synced_template)
            .await
            .contains("Spring ads")
    );
    // The plain results stored no Figma state.
    assert!(figma_sync(&s, "image_ads", &ad_id).await.is_empty());
    assert!(
        figma_sync(&s, "design_templates", &template_id)
            .await
            .is_empty()
    );
}

fn failed(subject: SubjectKind, id: &str) -> Event {
    Event::Failed(AdFailed {
        subject,
        ad_id: id.into(),
        version: 1,
        code: "PIPELINE_ERROR".into(),
        message: "the reference could not be read".into(),
    })
}

/// A failure goes to the feature its subject kind names, not the one the id's prefix
/// suggests, and is applied once: the hold goes back once, a redelivery changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_kind_of_failure_is_applied_by_its_kind_and_once() {
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org("Failures").await;
    let (c, reference) = s.ad_inputs(&org).await;
    adforge_api::store::query(
        "UPDATE wallets SET balance_cents = balance_cents + 10000 WHERE org_id = ?",
    )
    .bind(&org.id)
    .execute(&s.db.write)
    .await
    .unwrap();
    let blobs = adforge_api::blob::LocalBlobStore::new(s.data_dir.join("blobs"), "http://unused");
    let ad_id = s
        .post(
            &org,
            "/v1/image-ads",
            json!({"reference_ad_url": reference, "brand_id": c.brand, "product_id": c.product,
                "audience_id": c.audience}),
        )
        .await
        .expect(202, None)
        .id();
    let template_id = s
        .post(
            &org,
            "/v1/design-templates",
            json!({"reference_image_url": reference}),
        )
        .await
        .expect(202, None)
        .id();
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(png(80, 100, [10, 200, 30, 255])).file_name("d.png"),
    );
    let swipe_id = crate::support::send(
        s.request(reqwest::Method::POST, "/v1/swipe-files")
            .header("x-api-key", &org.key)
            .multipart(form),
    )
    .await
    .expect(202, None)
    .id();
    let held = balance(&s, &org).await;
    assert!(held.1 > 0, "the ad holds its price: {held:?}");

    // A failure whose kind does not own the id changes nothing (before issue 41 the
    // applier routed by the id's prefix and failed the swipe file here).
    for (subject, id) in [
        (SubjectKind::ImageAd, &swipe_id),
        (SubjectKind::DesignTemplate, &ad_id),
        (SubjectKind::SwipeFile, &template_id),
        (SubjectKind::Unknown, &ad_id),
    ] {
        let applied = adforge_api::results::apply(&s.db, &blobs, &failed(subject, id))
            .await
            .unwrap();
        assert_eq!(applied, None, "{subject:?} {id}");
    }

    let events = [
        (failed(SubjectKind::ImageAd, &ad_id), "image_ad"),
        (failed(SubjectKind::SwipeFile, &swipe_id), "swipe_file"),
        (
            failed(SubjectKind::DesignTemplate, &template_id),
            "design_template",
        ),
    ];
    for (event, kind) in &events {
        let applied = adforge_api::results::apply(&s.db, &blobs, event)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{event:?} changed nothing"));
        assert_eq!((applied.kind, applied.outcome), (*kind, "failed"));
    }
    let after_once = balance(&s, &org).await;
    assert_eq!(
        after_once,
        (held.0, 0),
        "the hold went back, nothing charged"
    );
    for (event, _) in &events {
        let again = adforge_api::results::apply(&s.db, &blobs, event)
            .await
            .unwrap();
        assert_eq!(again, None, "{event:?} applied twice");
    }
    assert_eq!(balance(&s, &org).await, after_once, "released once");

    let a = get(&s, &org, &format!("/v1/image-ads/{ad_id}")).await;
    assert_eq!(a["status"], "failed");
    let f = get(&s, &org, &format!("/v1/swipe-files/{swipe_id}")).await;
    assert_eq!(f["status"], "failed");
    let t = get(&s, &org, &format!("/v1/design-templates/{template_id}")).await;
    assert_eq!(t["status"], "failed");
}

/// The server's count of applied jobs of `kind` with `outcome` (its `/metrics` counter).
fn applied_count(s: &TestServer, kind: &str, outcome: &str) -> u64 {
    let labels = format!("{{kind=\"{kind}\",outcome=\"{outcome}\"}}");
    s.jobs
        .metrics
        .render()
        .lines()
        .find_map(|l| l.strip_prefix("adforge_jobs_total")?.strip_prefix(&labels))
        .map_or(0, |n| n.trim().parse().unwrap())
}

/// Through the server's own queue, in-process or on Redis: every kind of result published
/// twice, as a redelivery brings it, is applied once by the server's applier.
async fn results_delivered_twice_are_applied_once(redis_url: Option<String>) {
    let s = TestServer::start_with(|a| {
        a.workers = 0;
        a.redis_url = redis_url;
    })
    .await;
    let sub = subjects(&s, "Queue").await;
    let (c, reference) = s.ad_inputs(&sub.org).await;
    let last = s
        .post(
            &sub.org,
            "/v1/image-ads",
            json!({"reference_ad_url": reference, "brand_id": c.brand, "product_id": c.product,
                "audience_id": c.audience}),
        )
        .await
        .expect(202, None)
        .id();
    let held = balance(&s, &sub.org).await;
    let price = held.1 / 3;
    assert!(price > 0, "three ads hold their price: {held:?}");

    for (event, _) in results(&sub) {
        s.jobs.queue.publish(event.clone()).await.unwrap();
        s.jobs.queue.publish(event).await.unwrap();
    }
    // One applier reads the queue in order: once the failure published last shows, every
    // delivery before it was applied or found to change nothing.
    s.jobs
        .queue
        .publish(failed(SubjectKind::ImageAd, &last))
        .await
        .unwrap();
    assert!(
        crate::support::eventually(|| async {
            s.get(&sub.org, &format!("/v1/image-ads/{last}")).await.body["data"]["status"]
                == "failed"
        })
        .await,
        "the last event was never applied"
    );

    let counts = [
        applied_count(&s, "image_ad", "completed"),
        applied_count(&s, "swipe_file", "completed"),
        applied_count(&s, "design_template", "completed"),
        applied_count(&s, "image_ad", "failed"),
    ];
    assert_eq!(counts, [2, 1, 2, 1], "each result applied once");
    assert_eq!(
        balance(&s, &sub.org).await,
        (held.0 - 2 * price, 0),
        "two ads charged once, the failed one's hold released"
    );
    for (path, status) in [
        (format!("/v1/image-ads/{}", sub.ad), "completed"),
        (format!("/v1/image-ads/{}", sub.synced_ad), "completed"),
        (format!("/v1/swipe-files/{}", sub.swipe), "ready"),
        (
            format!("/v1/design-templates/{}", sub.template),
            "completed",
        ),
        (
            format!("/v1/design-templates/{}", sub.synced_template),
            "completed",
        ),
    ] {
        assert_eq!(get(&s, &sub.org, &path).await["status"], status, "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_delivered_twice_through_the_memory_queue_are_applied_once() {
    results_delivered_twice_are_applied_once(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_delivered_twice_through_redis_are_applied_once() {
    let redis = redis_server::RedisServer::start();
    results_delivered_twice_are_applied_once(Some(redis.url())).await;
}
