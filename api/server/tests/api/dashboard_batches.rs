//! The dashboard's batch pages and "Make other sizes" over real HTTP (issue 42, item 4):
//! the form's review shows ad count × price and the wallet's available amount before
//! anything is made; a domain error (an item's 4xx) is shown on the form and creates
//! nothing; a created batch's page shows counts, progress, the charge so far and its ads
//! with thumbnails, filters by size and product, streams the same ZIP as the API, and never
//! reloads itself; cancel fails the ads not started without charge; another organisation's
//! batch is the 404 page. ("Make other sizes" on an ad's page: dashboard_sizes.rs.)

use adforge_dashboard::members::Role;
use serde_json::json;

use crate::dashboard::{Browser, Page, member};
use crate::dashboard_ads::{Client, top_up};
use crate::flows::{SETTLE_DEADLINE, ready};
use crate::support::{Org, TestServer, png};

/// A second product of `brand` with a photo on its variant and an audience.
async fn product(s: &TestServer, org: &Org, brand: &str, name: &str) -> String {
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
    s.post(
        org,
        "/v1/audiences",
        json!({"product_id": product, "name": "Runners"}),
    )
    .await
    .expect(201, None);
    product
}

/// How many ad cards a page lists.
fn cards(p: &Page) -> usize {
    p.text.matches(r#"<li class="ad-card""#).count()
}

/// The text of the element with this id (up to its first tag).
fn text_of<'a>(p: &'a Page, id: &str) -> &'a str {
    let marker = format!(r#"id="{id}">"#);
    let at = p
        .text
        .find(&marker)
        .unwrap_or_else(|| panic!("no #{id} in {}", p.text))
        + marker.len();
    let end = p.text[at..].find('<').unwrap() + at;
    &p.text[at..end]
}

async fn image_ads_total(s: &TestServer, org: &Org) -> i64 {
    let list = s.get(org, "/v1/image-ads").await.expect(200, None);
    list.body["total_count"].as_i64().unwrap()
}

/// Posts the batch form with its CSRF token.
async fn post_batch(b: &Browser, fields: &[(&str, &str)]) -> Page {
    b.submit("/dashboard/batches/new", "/dashboard/batches/new", fields)
        .await
}

/// Reloads the batch page until its status is not processing (a deadline only a hang
/// reaches); every load is checked not to reload itself.
async fn batch_until_ended(b: &Browser, path: &str) -> Page {
    let deadline = std::time::Instant::now() + SETTLE_DEADLINE;
    loop {
        let p = b.get(path).await;
        assert_eq!(p.status, 200, "{}", p.text);
        assert!(
            !p.text.contains("http-equiv"),
            "no timed reload: {}",
            p.text
        );
        if !p.text.contains(r#"id="batch-status">Processing"#) {
            return p;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{path} still processing"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_reviewed_created_filtered_and_downloaded_in_the_dashboard() {
    let s = TestServer::start().await;
    let org = s.org("Acme").await;
    let api = Client {
        s: &s,
        http: reqwest::Client::new(),
    };
    let c = ready(&api, &org).await;
    let second = product(&s, &org, &c.brand, "Road Shoe").await;
    let b = member(&s, &org.id, "ann@example.com", Role::Member, false).await;

    // The form offers the products and the named placements; the nav links the list.
    let f = b.get("/dashboard/batches/new").await;
    assert_eq!(f.status, 200, "{}", f.text);
    assert!(f.text.contains(&format!(r#"value="{}""#, c.product)));
    assert!(f.text.contains(&format!(r#"value="{second}""#)));
    assert!(f.text.contains(r#"name="size" value="9:16""#), "{}", f.text);
    assert!(f.text.contains(r#"href="/dashboard/batches""#));

    let base = [
        ("product", c.product.as_str()),
        ("product", second.as_str()),
        ("references", c.reference.as_str()),
        ("size", "1:1"),
        ("size", "9:16"),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut v: Vec<(&str, &str)> = base.to_vec();
        v.extend_from_slice(extra);
        v
    };

    // Review with an empty wallet: 2 products × 1 reference × 2 sizes = 4 ads at $1.00,
    // $0.00 available, the wallet link, no "Create batch"; nothing is made.
    let r = post_batch(&b, &with(&[("step", "review")])).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(text_of(&r, "review-ads"), "4");
    assert!(
        r.text.contains(r#"id="review-total"><strong>$4.00<"#),
        "{}",
        r.text
    );
    assert_eq!(text_of(&r, "review-available"), "$0.00");
    assert!(r.text.contains(r#"href="/dashboard/wallet""#));
    assert!(!r.text.contains(r#"value="create">Create batch"#));
    // The form keeps what was chosen.
    assert!(r.text.contains(r#"value="9:16" checked"#), "{}", r.text);
    // Creating anyway (a stale review): shown again with what to change, nothing made.
    let r = post_batch(&b, &with(&[("step", "create"), ("reviewed", "400")])).await;
    // The page answers with the domain's own status: 402, the wallet does not cover it.
    assert_eq!(r.status, 402, "{}", r.text);
    assert!(r.text.contains("top up"), "{}", r.text);
    assert_eq!(image_ads_total(&s, &org).await, 0);

    top_up(&s, &org, 1_000).await;
    let r = post_batch(&b, &with(&[("step", "review"), ("editable", "true")])).await;
    assert!(
        r.text.contains(r#"id="review-total"><strong>$16.00<"#),
        "editable: {}",
        r.text
    );
    let r = post_batch(&b, &with(&[("step", "review")])).await;
    assert_eq!(text_of(&r, "review-available"), "$10.00");
    assert!(
        r.text.contains(r#"name="reviewed" value="400""#),
        "{}",
        r.text
    );
    assert!(r.text.contains(r#"value="create">Create batch"#));
    // The review draws the batch's id, which "Create batch" sends back.
    let marker = r#"name="batch" value=""#;
    let at = r.text.find(marker).expect("the review's batch id") + marker.len();
    let drawn = r.text[at..at + r.text[at..].find('"').unwrap()].to_string();
    assert!(drawn.starts_with("iab_"), "{drawn}");

    // The form changed after its review (the total reviewed was another): reviewed again.
    let r = post_batch(&b, &with(&[("step", "create"), ("reviewed", "200")])).await;
    assert_eq!(r.status, 200);
    assert!(r.text.contains("changed since its review"), "{}", r.text);
    assert_eq!(image_ads_total(&s, &org).await, 0);

    // A domain error of one item (a reference that is no image URL): its 4xx on the form,
    // naming the item; nothing made.
    let bad = [
        ("product", c.product.as_str()),
        ("references", "ftp://example.com/x.png"),
        ("step", "create"),
        ("reviewed", "100"),
    ];
    let r = post_batch(&b, &bad).await;
    assert!(r.status.is_client_error(), "{}: {}", r.status, r.text);
    assert!(r.text.contains("The batch was not created"), "{}", r.text);
    assert!(r.text.contains("items[0]"), "{}", r.text);
    assert_eq!(image_ads_total(&s, &org).await, 0);

    // Created: to the batch's page, which shows it and its ads as they complete.
    let mut create = with(&[("step", "create"), ("reviewed", "400")]);
    create.push(("batch", drawn.as_str()));
    let made = post_batch(&b, &create).await;
    assert_eq!(made.status, 303, "{}", made.text);
    let path = made.location().to_string();
    let id = path
        .strip_prefix("/dashboard/batches/")
        .unwrap()
        .to_string();
    assert_eq!(id, drawn, "{path}");
    // The same "Create batch" sent again (a double click): to the same batch, none made.
    let again = post_batch(&b, &create).await;
    assert_eq!(again.status, 303, "{}", again.text);
    assert_eq!(again.location(), path);
    assert_eq!(image_ads_total(&s, &org).await, 4, "one batch of 4 ads");
    let done = batch_until_ended(&b, &path).await;
    assert_eq!(text_of(&done, "batch-status"), "Completed", "{}", done.text);
    assert_eq!(text_of(&done, "count-completed"), "4");
    assert!(
        done.text.contains(r#"id="batch-charged">$4.00"#),
        "{}",
        done.text
    );
    assert!(done.text.contains("4 of 4 ads ended"));
    assert_eq!(cards(&done), 4);
    assert_eq!(
        done.text.matches("/thumb?of=").count(),
        4,
        "a thumbnail each"
    );
    assert!(
        !done.text.contains(r#"id="live-note""#),
        "ended: no live note"
    );
    assert!(
        !done.text.contains("/cancel"),
        "an ended batch has no cancel"
    );

    // Filters: by size, by product, both.
    let by_size = b.get(&format!("{path}?size=9:16")).await;
    assert_eq!(cards(&by_size), 2, "{}", by_size.text);
    assert!(
        by_size
            .text
            .contains(r#"<option value="9:16" selected>9:16 (2)"#)
    );
    let by_product = b.get(&format!("{path}?product={second}")).await;
    assert_eq!(cards(&by_product), 2);
    assert!(by_product.text.contains("Road Shoe"));
    let both = b.get(&format!("{path}?product={second}&size=1:1")).await;
    assert_eq!(cards(&both), 1);
    let none = b.get(&format!("{path}?size=300x250")).await;
    assert!(none.text.contains("No ads of this batch match."));

    // The download: the API's ZIP, every ad (PNG and JPEG) and the manifest.
    assert!(
        done.text
            .contains(&format!(r#"href="/dashboard/batches/{id}/download""#))
    );
    let zip = b
        .http
        .get(format!("{}/dashboard/batches/{id}/download", s.base))
        .header("cookie", b.cookie_header())
        .send()
        .await
        .unwrap();
    assert_eq!(zip.status(), 200);
    assert_eq!(zip.headers()["content-type"], "application/zip");
    let bytes = zip.bytes().await.unwrap();
    let archive = zip::ZipArchive::new(std::io::Cursor::new(bytes.to_vec())).unwrap();
    assert_eq!(
        archive.len(),
        4 * 2 + 1,
        "{:?}",
        archive.file_names().collect::<Vec<_>>()
    );
    assert!(
        archive
            .file_names()
            .any(|n| n.is_ok_and(|n| n == "manifest.csv"))
    );

    // Charged exactly four prices.
    let charges: Vec<i64> = adforge_api::store::query_scalar(
        "SELECT amount_cents FROM wallet_ledger WHERE org_id = ? AND kind = 'charge'",
    )
    .bind(&org.id)
    .fetch_all(&s.db.read)
    .await
    .unwrap();
    assert_eq!(
        charges.iter().map(|c| c.abs()).sum::<i64>(),
        400,
        "{charges:?}"
    );

    // The list links it; an ended batch cannot be cancelled (the API's 409 on the page).
    let list = b.get("/dashboard/batches").await;
    assert!(
        list.text
            .contains(&format!(r#"href="/dashboard/batches/{id}""#)),
        "{}",
        list.text
    );
    let late = b.submit(&path, &format!("{path}/cancel"), &[]).await;
    assert_eq!(late.status, 409, "{}", late.text);
    assert!(late.text.contains("already ended"));

    // Another organisation: the same 404 page for every route of the batch.
    let other = s.org("Other").await;
    let o = member(&s, &other.id, "olu@example.com", Role::Member, false).await;
    for p in [path.clone(), format!("{path}/download")] {
        let page = o.get(&p).await;
        assert_eq!(page.status, 404, "{p}: {}", page.text);
    }
    let foreign = o
        .submit("/dashboard/batches", &format!("{path}/cancel"), &[])
        .await;
    assert_eq!(foreign.status, 404);
    assert!(!o.get("/dashboard/batches").await.text.contains(&id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_processing_batch_waits_without_reloading_and_cancel_charges_nothing() {
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org("Acme").await;
    let api = Client {
        s: &s,
        http: reqwest::Client::new(),
    };
    top_up(&s, &org, 1_000).await;
    let c = ready(&api, &org).await;
    let b = member(&s, &org.id, "ann@example.com", Role::Member, false).await;
    let made = post_batch(
        &b,
        &[
            ("product", c.product.as_str()),
            ("references", c.reference.as_str()),
            ("size", "4:5"),
            ("size", "1.91:1"),
            ("size", "300x250"),
            ("step", "create"),
            ("reviewed", "300"),
        ],
    )
    .await;
    assert_eq!(made.status, 303, "{}", made.text);
    let path = made.location().to_string();

    // No worker runs: processing, with the live note, its script, cancel, no reload.
    let p = b.get(&path).await;
    assert_eq!(p.status, 200, "{}", p.text);
    assert_eq!(text_of(&p, "batch-status"), "Processing");
    assert_eq!(text_of(&p, "count-processing"), "3");
    assert!(p.text.contains(r#"id="live-note""#));
    assert!(
        p.text
            .contains(r#"<script src="/dashboard/assets/dashboard.js""#)
    );
    assert!(!p.text.contains("http-equiv"));
    assert!(
        p.text
            .contains("The ZIP download appears when the first ad completes.")
    );
    assert_eq!(cards(&p), 3);

    // The cancel form without its token: refused.
    let no_token = b.post(&format!("{path}/cancel"), &[]).await;
    assert_eq!(no_token.status, 403);
    let cancelled = b.submit(&path, &format!("{path}/cancel"), &[]).await;
    assert_eq!(cancelled.status, 303, "{}", cancelled.text);
    let p = b.get(cancelled.location()).await;
    assert_eq!(text_of(&p, "batch-status"), "Cancelled", "{}", p.text);
    assert_eq!(text_of(&p, "count-cancelled"), "3");
    assert!(p.text.contains(r#"id="batch-charged">$0.00"#));
    assert!(p.text.contains("Cancel asked"));
    let (balance, held): (i64, i64) = adforge_api::store::query_as(
        "SELECT balance_cents, held_cents FROM wallets WHERE org_id = ?",
    )
    .bind(&org.id)
    .fetch_one(&s.db.read)
    .await
    .unwrap();
    assert_eq!((balance, held), (1_000, 0), "nothing charged or held");
}
