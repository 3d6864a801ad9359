//! The dashboard's image-ad pages over real HTTP: the gallery lists only the signed-in
//! organisation's ads, with the API's filters and status facets; another organisation's ad
//! is the 404 page; forms without the CSRF token are refused; an ad created from the
//! dashboard completes (held, then charged, by the same code as POST /v1/image-ads); a
//! headline edited in the plain form becomes version 2 with the new text in its tree.

use std::time::{Duration, Instant};

use adforge_dashboard::members::Role;
use reqwest::Method;
use serde_json::Value;

use crate::dashboard::{Browser, Page, member};
use crate::flows::{self, Api, SETTLE_DEADLINE, ready};
use crate::support::{Org, TestServer, jpeg};

/// The API through the in-process server (the ad flows' helpers take it).
pub(crate) struct Client<'a> {
    pub(crate) s: &'a TestServer,
    pub(crate) http: reqwest::Client,
}

impl Api for Client<'_> {
    fn base(&self) -> &str {
        &self.s.base
    }
    fn client(&self) -> &reqwest::Client {
        &self.http
    }
}

pub(crate) async fn top_up(s: &TestServer, org: &Org, cents: i64) {
    let mut tx = s.db.begin_write().await.unwrap();
    adforge_api::wallet::top_up(&mut tx, &org.id, cents, Some("TEST"), None)
        .await
        .unwrap();
    tx.commit().await.unwrap();
}

/// Reloads `path` until its text contains `needle` (a deadline only a hang reaches).
async fn page_until(b: &Browser, path: &str, needle: &str) -> Page {
    let deadline = Instant::now() + SETTLE_DEADLINE;
    loop {
        let p = b.get(path).await;
        assert_eq!(p.status, 200, "{}", p.text);
        if p.text.contains(needle) {
            return p;
        }
        assert!(
            Instant::now() < deadline,
            "{path} never showed {needle}: {}",
            p.text
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The `name` of the first form field whose name starts with `prefix`.
fn field_named(p: &Page, prefix: &str) -> String {
    let marker = format!(r#"name="{prefix}"#);
    let at = p
        .text
        .find(&marker)
        .unwrap_or_else(|| panic!("no {prefix} field in {}", p.text))
        + r#"name=""#.len();
    let end = p.text[at..].find('"').unwrap() + at;
    p.text[at..end].replace("&amp;", "&")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gallery_lists_own_ads_with_filters_and_hides_other_organisations() {
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let acme = s.org("Acme").await;
    let other = s.org("Other").await;
    let api = Client {
        s: &s,
        http: reqwest::Client::new(),
    };
    top_up(&s, &acme, 10_000).await;
    top_up(&s, &other, 10_000).await;
    let a = ready(&api, &acme).await;
    let flat = flows::create(&api, &acme, a.body(&a.reference, false)).await;
    let editable = flows::create(&api, &acme, a.body(&a.reference, true)).await;
    let o = ready(&api, &other).await;
    let foreign = flows::create(&api, &other, o.flat()).await;

    let b = member(&s, &acme.id, "ann@example.com", Role::Member, false).await;
    let g = b.get("/dashboard/ads").await;
    assert_eq!(g.status, 200, "{}", g.text);
    assert!(g.text.contains(&format!(r#"id="{flat}""#)), "{}", g.text);
    assert!(g.text.contains(&format!(r#"id="{editable}""#)));
    assert!(
        !g.text.contains(&foreign),
        "another organisation's ad is listed"
    );
    // Workers are off: both are processing, shown with progress, and the page refreshes.
    assert!(g.text.contains("<progress"));
    assert!(g.text.contains(r#"http-equiv="refresh""#));
    assert!(g.text.contains(r#"id="facet-processing""#));
    assert!(
        g.text
            .contains(r#"Processing <span class="count">2</span>"#),
        "{}",
        g.text
    );

    // The API's filters: editable=true lists the editable ad only; a search by id finds one.
    let e = b.get("/dashboard/ads?editable=true").await;
    assert!(e.text.contains(&format!(r#"id="{editable}""#)));
    assert!(!e.text.contains(&format!(r#"id="{flat}""#)), "{}", e.text);
    let f = b.get(&format!("/dashboard/ads?search={flat}")).await;
    assert!(f.text.contains(&format!(r#"id="{flat}""#)));
    assert!(!f.text.contains(&format!(r#"id="{editable}""#)));
    let none = b.get("/dashboard/ads?status=failed").await;
    assert!(none.text.contains("No ads match."));
    assert!(!none.text.contains(&format!(r#"id="{flat}""#)));
    // The same validation as the API: a bad status is a 400 page naming it, not a 500.
    let bad = b.get("/dashboard/ads?status=nonsense").await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    assert!(bad.text.contains("nonsense"));
    // Paging: with more than a page, the cursor link leads to the older ads.
    assert!(
        !g.text.contains("starting_after="),
        "two ads fit on one page"
    );

    // Another organisation's ad: the same 404 page as an unknown id, for every page.
    for path in [
        format!("/dashboard/ads/{foreign}"),
        format!("/dashboard/ads/{foreign}/edit"),
        format!("/dashboard/ads/{foreign}/edit/form"),
        format!("/dashboard/ads/{foreign}/download"),
        "/dashboard/ads/ia_unknown".to_string(),
    ] {
        let p = b.get(&path).await;
        assert_eq!(p.status, 404, "{path}: {}", p.text);
        assert!(
            p.text
                .contains("There is nothing here in your organisation.")
        );
    }
    let p = b
        .submit(
            "/dashboard/ads",
            &format!("/dashboard/ads/{foreign}/edit"),
            &[("base_version", "1")],
        )
        .await;
    assert_eq!(p.status, 404);

    // The detail page of an own ad shows it processing, refreshing.
    let d = b.get(&format!("/dashboard/ads/{editable}")).await;
    assert_eq!(d.status, 200);
    assert!(
        d.text.contains(r#"id="ad-status">Processing"#),
        "{}",
        d.text
    );
    assert!(d.text.contains(r#"http-equiv="refresh""#));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ad_forms_without_the_csrf_token_are_refused() {
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org("Acme").await;
    let api = Client {
        s: &s,
        http: reqwest::Client::new(),
    };
    top_up(&s, &org, 10_000).await;
    let c = ready(&api, &org).await;
    let ad = flows::create(&api, &org, c.body(&c.reference, true)).await;
    let b = member(&s, &org.id, "ann@example.com", Role::Member, false).await;

    let edit = b
        .post(
            &format!("/dashboard/ads/{ad}/edit"),
            &[("base_version", "1")],
        )
        .await;
    assert_eq!(edit.status, 403, "{}", edit.text);
    let wrong = b
        .post(
            &format!("/dashboard/ads/{ad}/edit"),
            &[("csrf", "0000"), ("base_version", "1")],
        )
        .await;
    assert_eq!(wrong.status, 403);

    // The create form (multipart) without its token: refused, nothing created or held.
    let form = reqwest::multipart::Form::new()
        .text("brand_id", c.brand.clone())
        .text("product_id", c.product.clone())
        .text("audience_id", c.audience.clone())
        .text("reference_url", c.reference.clone());
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = b
        .send(
            http.post(format!("{}/dashboard/ads/new", s.base))
                .multipart(form),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    let list = s.get(&org, "/v1/image-ads").await.expect(200, None);
    assert_eq!(list.body["total_count"], 1, "{}", list.body);
}

/// Posts the create form as a browser would (multipart, with the page's CSRF token).
async fn create_in_dashboard(
    s: &TestServer,
    b: &Browser,
    fields: &[(&str, &str)],
    upload: Option<Vec<u8>>,
) -> Page {
    let form_page = b.get("/dashboard/ads/new").await;
    assert_eq!(form_page.status, 200, "{}", form_page.text);
    let mut form =
        reqwest::multipart::Form::new().text("csrf", form_page.field("csrf").to_string());
    for (k, v) in fields {
        form = form.text(k.to_string(), v.to_string());
    }
    if let Some(bytes) = upload {
        form = form.part(
            "reference_file",
            reqwest::multipart::Part::bytes(bytes).file_name("reference.jpg"),
        );
    }
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    b.send(
        http.post(format!("{}/dashboard/ads/new", s.base))
            .multipart(form),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ad_created_and_edited_in_the_dashboard_completes_as_version_2() {
    let s = TestServer::start().await;
    let org = s.org("Acme").await;
    let api = Client {
        s: &s,
        http: reqwest::Client::new(),
    };
    let c = ready(&api, &org).await;
    let b = member(&s, &org.id, "ann@example.com", Role::Member, false).await;
    let base_fields = [
        ("brand_id", c.brand.as_str()),
        ("product_id", c.product.as_str()),
        ("audience_id", c.audience.as_str()),
        ("editable", "true"),
    ];

    // An empty wallet: the API's 402, shown on the form with the wallet link; nothing made.
    let mut fields = base_fields.to_vec();
    fields.push(("reference_url", c.reference.as_str()));
    let broke = create_in_dashboard(&s, &b, &fields, None).await;
    assert_eq!(broke.status, 402, "{}", broke.text);
    assert!(broke.text.contains(r#"href="/dashboard/wallet""#));
    assert!(broke.text.contains("balance"), "{}", broke.text);
    let list = s.get(&org, "/v1/image-ads").await.expect(200, None);
    assert_eq!(list.body["total_count"], 0);

    // Two references at once: refused before anything is made.
    top_up(&s, &org, 1_000).await;
    let mut two = fields.clone();
    two.push(("swipe_file_id", "sf_whatever"));
    let r = create_in_dashboard(&s, &b, &two, None).await;
    assert_eq!(r.status, 400);
    assert!(r.text.contains("exactly one reference"));

    // The same relation checks as the API: an audience of another product is 422.
    let other_product = api
        .call(
            Method::POST,
            "/v1/products",
            &org,
            Some(serde_json::json!({"brand_id": c.brand, "name": "Other"})),
        )
        .await
        .expect(201, None)
        .id();
    let mut mismatch = fields.clone();
    mismatch[1] = ("product_id", other_product.as_str());
    let r = create_in_dashboard(&s, &b, &mismatch, None).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(r.text.contains("belongs to product"), "{}", r.text);

    // Created with an uploaded reference: redirected to the ad, which completes.
    let made = create_in_dashboard(&s, &b, &base_fields, Some(jpeg(120, 150, [30, 60, 90]))).await;
    assert_eq!(made.status, 303, "{}", made.text);
    let path = made.location().to_string();
    let id = path.strip_prefix("/dashboard/ads/").unwrap().to_string();
    assert!(id.starts_with("ia_"), "{path}");
    let done = page_until(&b, &path, r#"id="ad-status">Completed"#).await;
    assert!(
        !done.text.contains(r#"http-equiv="refresh""#),
        "nothing left to wait for"
    );
    assert!(done.text.contains(&format!("/dashboard/ads/{id}/download")));
    let ad = flows::get_ad(&api, &org, &id).await;
    assert_eq!(ad["status"], "completed", "{ad}");
    assert_eq!(ad["editable"], true);
    assert!(
        ad["reference_ad_url"]
            .as_str()
            .unwrap()
            .contains("/files/images/"),
        "the upload went through the images code: {ad}"
    );
    let charges: Vec<i64> = adforge_api::store::query_scalar(
        "SELECT amount_cents FROM wallet_ledger WHERE org_id = ? AND kind = 'charge' AND reference = ?",
    )
    .bind(&org.id)
    .bind(&id)
    .fetch_all(&s.db.read)
    .await
    .unwrap();
    assert_eq!(charges.len(), 1, "charged once: {charges:?}");
    assert_eq!(charges[0].abs(), 400, "the editable price");
    let g = b.get("/dashboard/ads").await;
    assert!(g.text.contains(&format!(r#"id="{id}""#)));
    assert!(g.text.contains(r#"<img src=""#), "a thumbnail: {}", g.text);

    // Download: the PNG as an attachment.
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let png = b
        .send(http.get(format!("{}/dashboard/ads/{id}/download", s.base)))
        .await;
    assert_eq!(png.status, 200);
    assert_eq!(png.headers["content-type"], "image/png");
    assert!(
        png.headers["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("attachment;")
    );

    // The gallery's thumbnail: a small WebP made from the PNG, kept for the next view.
    assert!(
        g.text.contains(&format!("/dashboard/ads/{id}/thumb?of=")),
        "{}",
        g.text
    );
    for _ in 0..2 {
        let t = b
            .send(http.get(format!("{}/dashboard/ads/{id}/thumb?version=1", s.base)))
            .await;
        assert_eq!(t.status, 200);
        assert_eq!(t.headers["content-type"], "image/webp");
    }
    let other = b
        .send(http.get(format!("{}/dashboard/ads/{id}/thumb?version=9", s.base)))
        .await;
    assert_eq!(other.status, 404);

    // The plain form lists the tree's text nodes; change the first one.
    let editor = b.get(&format!("/dashboard/ads/{id}/edit/form")).await;
    assert_eq!(editor.status, 200, "{}", editor.text);
    let text_field = field_named(&editor, "text:");
    let node = text_field.strip_prefix("text:").unwrap().to_string();
    let headline = "Twice the grip <on> wet rock";
    let saved = b
        .submit(
            &format!("/dashboard/ads/{id}/edit/form"),
            &format!("/dashboard/ads/{id}/edit"),
            &[("base_version", "1"), (text_field.as_str(), headline)],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.text);
    assert!(
        saved
            .location()
            .starts_with(&format!("/dashboard/ads/{id}"))
    );
    let p = b.get(&format!("/dashboard/ads/{id}")).await;
    assert!(p.text.contains(r#"id="version-2""#), "{}", p.text);
    let v2 = page_until(
        &b,
        &format!("/dashboard/ads/{id}"),
        r#"id="ad-status">Completed"#,
    )
    .await;
    assert!(
        v2.text.contains(r#"<li class="version" id="version-1">"#),
        "{}",
        v2.text
    );
    assert!(
        v2.text
            .contains(r#"<li class="version current" id="version-2">"#)
    );
    let versions = api
        .call(
            Method::GET,
            &format!("/v1/image-ads/{id}/versions"),
            &org,
            None,
        )
        .await
        .expect(200, None);
    let list = versions.body["data"].as_array().unwrap();
    assert_eq!(list.len(), 2, "{}", versions.body);
    assert_eq!(list[1]["status"], "completed");
    let tree: &Value = &list[1]["json_tree"];
    assert_eq!(tree["nodes"][&node]["characters"], headline, "{tree}");
    assert_ne!(list[0]["json_tree"]["nodes"][&node]["characters"], headline);

    // The page escaped the new text.
    let editor = b.get(&format!("/dashboard/ads/{id}/edit/form")).await;
    assert!(editor.text.contains("Twice the grip &lt;on&gt; wet rock"));
    // A stale form (made from version 1) does not overwrite version 2.
    let stale = b
        .submit(
            &format!("/dashboard/ads/{id}/edit/form"),
            &format!("/dashboard/ads/{id}/edit"),
            &[("base_version", "1"), (text_field.as_str(), "Old")],
        )
        .await;
    assert_eq!(stale.status, 409, "{}", stale.text);
}
