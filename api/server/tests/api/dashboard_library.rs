//! The dashboard's swipe file and design packs over real HTTP with the real models (run
//! `scripts/fetch-models` first): uploads of several files in one form, text search and
//! "more like this", data-source toggles seen by the API at once, packs made in the
//! dashboard with `created_by`, and the security rules (CSRF, other organisations' ids).

use adforge_dashboard::members::Role;
use reqwest::StatusCode;
use serde_json::json;

use crate::dashboard::{Browser, Page, member};
use crate::support::{Org, TestServer};
use crate::swipe::{upload_swipe, wait_ready};

const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../assets/samples");

fn sample(name: &str) -> Vec<u8> {
    std::fs::read(format!("{SAMPLES}/{name}")).unwrap()
}

/// Posts the swipe page's upload form (multipart) with these files; `csrf` None leaves the
/// token out.
async fn upload(b: &Browser, csrf: Option<&str>, files: &[&str]) -> Page {
    let mut form = reqwest::multipart::Form::new();
    if let Some(t) = csrf {
        form = form.text("csrf", t.to_string());
    }
    for f in files {
        form = form.part(
            "file",
            reqwest::multipart::Part::bytes(sample(f)).file_name(f.to_string()),
        );
    }
    b.send(
        b.http
            .post(format!("{}/dashboard/swipe/upload", b.base))
            .multipart(form),
    )
    .await
}

/// The ids of the design cards on a page, in order.
fn design_ids(p: &Page) -> Vec<String> {
    p.text
        .split(r#"<li class="design" id=""#)
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].to_string())
        .collect()
}

async fn all_ready(s: &TestServer, org: &Org, ids: &[String]) {
    for id in ids {
        let d = wait_ready(s, org, id).await;
        assert_eq!(d["status"], "ready", "{d}");
    }
}

#[tokio::test]
async fn upload_search_more_like_this_and_a_pack_with_its_author() {
    let s = TestServer::start().await;
    let org = s.org("Library").await;
    let b = member(&s, &org.id, "lib@example.test", Role::Member, false).await;

    // Two designs in one form post.
    let page = b.get("/dashboard/swipe").await;
    assert_eq!(page.status, 200, "{}", page.text);
    let csrf = page.field("csrf");
    let up = upload(&b, Some(&csrf), &["rocket.jpg", "coffee.png"]).await;
    assert_eq!(up.status, StatusCode::SEE_OTHER, "{}", up.text);
    assert_eq!(up.location(), "/dashboard/swipe?uploaded=2");
    let after = b.get(up.location()).await;
    assert!(after.text.contains("2 designs uploaded"), "{}", after.text);
    let listed = s
        .get(&org, "/v1/swipe-files?limit=100")
        .await
        .expect(200, None);
    let ids: Vec<String> = listed.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 2, "{}", listed.body);
    all_ready(&s, &org, &ids).await;

    // The grid shows both; text search ranks; "more like this" excludes the design itself.
    let grid = b.get("/dashboard/swipe").await;
    let mut shown = design_ids(&grid);
    shown.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(shown, want);
    let found = b.get("/dashboard/swipe?q=rocket").await;
    assert_eq!(found.status, 200, "{}", found.text);
    assert_eq!(design_ids(&found).len(), 2, "{}", found.text);
    let like = b.get(&format!("/dashboard/swipe?like={}", ids[0])).await;
    assert_eq!(like.status, 200, "{}", like.text);
    assert_eq!(design_ids(&like), vec![ids[1].clone()]);
    // The same order as the API's search.
    let api = s
        .post(&org, "/v1/swipe-files/search", json!({"query": "rocket"}))
        .await
        .expect(200, None);
    let api_ids: Vec<String> = api.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(design_ids(&found), api_ids);

    // Both into a new pack from the swipe page's checkboxes: created_by is the member.
    let added = b
        .submit(
            "/dashboard/swipe",
            "/dashboard/packs/add",
            &[
                ("swipe_file_id", &ids[0]),
                ("swipe_file_id", &ids[1]),
                ("pack", ""),
                ("new_title", "Launch ideas"),
            ],
        )
        .await;
    assert_eq!(added.status, 303, "{}", added.text);
    let pack_id = added
        .location()
        .strip_prefix("/dashboard/packs/")
        .unwrap()
        .to_string();
    let pack = s
        .get(&org, &format!("/v1/design-packs/{pack_id}"))
        .await
        .expect(200, None);
    assert_eq!(pack.body["data"]["title"], "Launch ideas");
    assert_eq!(pack.body["data"]["item_count"], 2);
    let (profile_id, name): (String, String) =
        adforge_api::store::query_as("SELECT id, name FROM profiles WHERE email = ?")
            .bind("lib@example.test")
            .fetch_one(&s.db.read)
            .await
            .unwrap();
    assert_eq!(
        pack.body["data"]["created_by"],
        json!({"profile_id": profile_id, "name": name})
    );
    // An API-made pack keeps created_by null.
    let api_pack = s
        .post(&org, "/v1/design-packs", json!({"title": "By key"}))
        .await
        .expect(201, None);
    assert!(api_pack.body["data"]["created_by"].is_null());

    // Rename, remove one, archive: the API sees each.
    let renamed = b
        .submit(
            &format!("/dashboard/packs/{pack_id}"),
            &format!("/dashboard/packs/{pack_id}"),
            &[("title", "Launch ideas v2"), ("description", "For Q3")],
        )
        .await;
    assert_eq!(renamed.status, 303, "{}", renamed.text);
    let removed = b
        .submit(
            &format!("/dashboard/packs/{pack_id}"),
            &format!("/dashboard/packs/{pack_id}/remove"),
            &[("swipe_file_id", &ids[0])],
        )
        .await;
    assert_eq!(removed.status, 303, "{}", removed.text);
    let archived = b
        .submit(
            &format!("/dashboard/packs/{pack_id}"),
            &format!("/dashboard/packs/{pack_id}/archive"),
            &[],
        )
        .await;
    assert_eq!(archived.status, 303, "{}", archived.text);
    let pack = s
        .get(&org, &format!("/v1/design-packs/{pack_id}"))
        .await
        .expect(200, None);
    assert_eq!(pack.body["data"]["title"], "Launch ideas v2");
    assert_eq!(pack.body["data"]["description"], "For Q3");
    assert_eq!(pack.body["data"]["item_count"], 1);
    assert!(pack.body["data"]["archived_at"].is_string());

    // Archive and restore a design from the grid.
    let gone = b
        .submit(
            "/dashboard/swipe",
            &format!("/dashboard/swipe/{}/archive", ids[1]),
            &[],
        )
        .await;
    assert_eq!(gone.status, 303, "{}", gone.text);
    assert_eq!(
        design_ids(&b.get("/dashboard/swipe").await),
        vec![ids[0].clone()]
    );
    assert_eq!(
        design_ids(&b.get("/dashboard/swipe?archived=true").await),
        vec![ids[1].clone()]
    );
    let back = b
        .submit(
            "/dashboard/swipe",
            &format!("/dashboard/swipe/{}/restore", ids[1]),
            &[],
        )
        .await;
    assert_eq!(back.status, 303, "{}", back.text);
    assert_eq!(design_ids(&b.get("/dashboard/swipe").await).len(), 2);

    // Not an image: the API's error, shown on the page, nothing stored.
    let csrf = b.get("/dashboard/swipe").await.field("csrf");
    let bad = upload(&b, Some(&csrf), &["LICENSE.md"]).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.text);
    assert!(bad.text.contains("LICENSE.md"), "{}", bad.text);
    let total = s.get(&org, "/v1/swipe-files").await.expect(200, None);
    assert_eq!(total.body["total_count"], 2);
}

#[tokio::test]
async fn a_subscription_toggle_shows_at_once_in_the_api() {
    let s = TestServer::start().await;
    let org = s.org("Toggles").await;
    let source =
        adforge_api::resources::swipe_files::sources::create(&s.db, "Test collection", true)
            .await
            .unwrap();
    let b = member(&s, &org.id, "toggle@example.test", Role::Member, false).await;
    let page = b.get("/dashboard/swipe").await;
    assert!(page.text.contains("Test collection"), "{}", page.text);
    let off = b
        .submit(
            "/dashboard/swipe",
            &format!("/dashboard/swipe/sources/{source}"),
            &[("active", "false")],
        )
        .await;
    assert_eq!(off.status, 303, "{}", off.text);
    let sources = s
        .get(&org, "/v1/swipe-files/data-sources")
        .await
        .expect(200, None);
    let row = sources.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == source.as_str())
        .unwrap()
        .clone();
    assert_eq!(row["subscribed"], false);
    let page = b.get("/dashboard/swipe").await;
    assert!(
        page.text
            .contains(r#"value="true"><button type="submit" class="small secondary" aria-label="Turn on Test collection""#),
        "{}",
        page.text
    );
    // And back on through the API: the page shows it.
    s.call(
        reqwest::Method::PUT,
        &format!("/v1/swipe-files/data-sources/{source}/subscription"),
        Some(&org.key),
        Some(json!({"active": true})),
    )
    .await;
    let page = b.get("/dashboard/swipe").await;
    assert!(
        page.text
            .contains("aria-label=\"Turn off Test collection\""),
        "{}",
        page.text
    );
    // An unknown source is the not-found page.
    let none = b
        .submit(
            "/dashboard/swipe",
            "/dashboard/swipe/sources/sfs_nope",
            &[("active", "true")],
        )
        .await;
    assert_eq!(none.status, 404);
}

#[tokio::test]
async fn library_forms_need_the_csrf_token_and_other_organisations_ids_are_not_found() {
    let s = TestServer::start().await;
    let a = s.org("Mine").await;
    let other = s.org("Theirs").await;
    let b = member(&s, &a.id, "mine@example.test", Role::Owner, false).await;

    // The other organisation's design and pack.
    let theirs = upload_swipe(&s, &other, sample("chelsea.png"))
        .await
        .expect(202, None)
        .id();
    let their_pack = s
        .post(&other, "/v1/design-packs", json!({"title": "Private"}))
        .await
        .expect(201, None)
        .id();
    let mine = s
        .post(&a, "/v1/design-packs", json!({"title": "Mine"}))
        .await
        .expect(201, None)
        .id();

    assert_eq!(
        b.get(&format!("/dashboard/packs/{their_pack}"))
            .await
            .status,
        404
    );
    let page = b.get(&format!("/dashboard/packs/{mine}")).await;
    assert_eq!(page.status, 200, "{}", page.text);
    for (action, fields) in [
        (
            format!("/dashboard/packs/{their_pack}"),
            vec![("title", "x")],
        ),
        (format!("/dashboard/packs/{their_pack}/archive"), vec![]),
        (
            format!("/dashboard/packs/{their_pack}/remove"),
            vec![("swipe_file_id", theirs.as_str())],
        ),
        (format!("/dashboard/swipe/{theirs}/archive"), vec![]),
        (format!("/dashboard/swipe/{theirs}/restore"), vec![]),
        (
            "/dashboard/packs/add".to_string(),
            vec![("swipe_file_id", theirs.as_str()), ("pack", mine.as_str())],
        ),
        (
            "/dashboard/packs/add".to_string(),
            vec![
                ("swipe_file_id", theirs.as_str()),
                ("pack", their_pack.as_str()),
            ],
        ),
    ] {
        let r = b.submit("/dashboard/packs", &action, &fields).await;
        assert_eq!(r.status, 404, "{action}: {}", r.text);
    }
    let like = b.get(&format!("/dashboard/swipe?like={theirs}")).await;
    assert_eq!(like.status, 404);
    // Nothing changed on their side.
    let p = s
        .get(&other, &format!("/v1/design-packs/{their_pack}"))
        .await
        .expect(200, None);
    assert_eq!(p.body["data"]["title"], "Private");
    assert!(p.body["data"]["archived_at"].is_null());

    // Without the token: refused, nothing made.
    for (action, fields) in [
        ("/dashboard/packs".to_string(), vec![("title", "No token")]),
        (
            format!("/dashboard/packs/{mine}"),
            vec![("title", "Renamed")],
        ),
        (format!("/dashboard/packs/{mine}/archive"), vec![]),
        (
            "/dashboard/swipe/sources/sfs_x".to_string(),
            vec![("active", "false")],
        ),
    ] {
        let r = b.post(&action, &fields).await;
        assert_eq!(r.status, 403, "{action}: {}", r.text);
        let wrong = [vec![("csrf", "0000")], fields.clone()].concat();
        assert_eq!(b.post(&action, &wrong).await.status, 403, "{action}");
    }
    let up = upload(&b, None, &["coffee.png"]).await;
    assert_eq!(up.status, 403, "{}", up.text);
    let up = upload(&b, Some("not-the-token"), &["coffee.png"]).await;
    assert_eq!(up.status, 403, "{}", up.text);
    let packs = s.get(&a, "/v1/design-packs").await.expect(200, None);
    assert_eq!(packs.body["total_count"], 1);
    assert_eq!(packs.body["data"][0]["title"], "Mine");
    assert_eq!(
        s.get(&a, "/v1/swipe-files").await.expect(200, None).body["total_count"],
        0
    );

    // Signed out: to sign-in.
    let anon = Browser::new(&s);
    let r = anon.get("/dashboard/swipe").await;
    assert_eq!(r.status, 303);
    assert!(r.location().starts_with("/dashboard/sign-in"));
}

/// Posts a multipart form of a signed-in page with `file`.
async fn upload_to(b: &Browser, action: &str, csrf: &str, file: &str) -> Page {
    let form = reqwest::multipart::Form::new()
        .text("csrf", csrf.to_string())
        .part(
            "file",
            reqwest::multipart::Part::bytes(sample(file)).file_name(file.to_string()),
        );
    b.send(b.http.post(format!("{}{action}", b.base)).multipart(form))
        .await
}

#[tokio::test]
async fn templates_are_made_from_a_swipe_design_and_soft_deleted() {
    let s = TestServer::start().await;
    let org = s.org("Templates").await;
    let other = s.org("Elsewhere").await;
    let b = member(&s, &org.id, "tpl@example.test", Role::Member, false).await;
    let sf = upload_swipe(&s, &org, sample("coffee.png"))
        .await
        .expect(202, None)
        .id();
    wait_ready(&s, &org, &sf).await;
    let theirs = upload_swipe(&s, &other, sample("chelsea.png"))
        .await
        .expect(202, None)
        .id();

    // Neither field: the API's validation message on the page.
    let none = b
        .submit("/dashboard/templates", "/dashboard/templates", &[])
        .await;
    assert_eq!(none.status, 400, "{}", none.text);
    assert!(
        none.text
            .contains("give reference_image_url or swipe_file_id")
    );
    // Another organisation's design is not found (shown with the form).
    let foreign = b
        .submit(
            "/dashboard/templates",
            "/dashboard/templates",
            &[("swipe_file_id", &theirs)],
        )
        .await;
    assert_eq!(foreign.status, 404, "{}", foreign.text);

    let made = b
        .submit(
            &format!("/dashboard/templates?swipe_file_id={sf}"),
            "/dashboard/templates",
            &[("swipe_file_id", &sf), ("reference_image_url", "")],
        )
        .await;
    assert_eq!(made.status, 303, "{}", made.text);
    let id = made
        .location()
        .strip_prefix("/dashboard/templates/")
        .unwrap()
        .to_string();
    let api = s
        .get(&org, &format!("/v1/design-templates/{id}"))
        .await
        .expect(200, None);
    assert_eq!(api.body["data"]["swipe_file_id"], sf.as_str());
    let view = b.get(&format!("/dashboard/templates/{id}")).await;
    assert_eq!(view.status, 200, "{}", view.text);
    assert!(view.text.contains(&sf));
    assert!(b.get("/dashboard/templates").await.text.contains(&id));

    let del = b
        .submit(
            &format!("/dashboard/templates/{id}"),
            &format!("/dashboard/templates/{id}/delete"),
            &[],
        )
        .await;
    assert_eq!(del.status, 303);
    let api = s
        .get(&org, &format!("/v1/design-templates/{id}"))
        .await
        .expect(200, None);
    assert_eq!(api.body["data"]["deleted"], true);
    assert!(!b.get("/dashboard/templates").await.text.contains(&id));
    assert!(
        b.get("/dashboard/templates?deleted=true")
            .await
            .text
            .contains(&id)
    );
    let back = b
        .submit(
            &format!("/dashboard/templates/{id}"),
            &format!("/dashboard/templates/{id}/restore"),
            &[],
        )
        .await;
    assert_eq!(back.status, 303);
    let api = s
        .get(&org, &format!("/v1/design-templates/{id}"))
        .await
        .expect(200, None);
    assert_eq!(api.body["data"]["deleted"], false);

    // The other organisation's template: not found, and untouched.
    let their_t = s
        .post(
            &other,
            "/v1/design-templates",
            json!({"swipe_file_id": wait_ready(&s, &other, &theirs).await["id"]}),
        )
        .await
        .expect(202, None)
        .id();
    assert_eq!(
        b.get(&format!("/dashboard/templates/{their_t}"))
            .await
            .status,
        404
    );
    let r = b
        .submit(
            "/dashboard/templates",
            &format!("/dashboard/templates/{their_t}/delete"),
            &[],
        )
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(
        b.post(&format!("/dashboard/templates/{id}/delete"), &[])
            .await
            .status,
        403
    );
}

#[tokio::test]
async fn brands_and_products_are_edited_through_the_api_rules() {
    let s = TestServer::start().await;
    let org = s.org("Catalogue").await;
    let other = s.org("Rival").await;
    let b = member(&s, &org.id, "cat@example.test", Role::Member, false).await;
    let brand = s
        .post(&org, "/v1/brands", json!({"name": "Acme"}))
        .await
        .expect(201, None)
        .id();
    let product = s
        .post(
            &org,
            "/v1/products",
            json!({"brand_id": brand, "name": "Trail Shoe"}),
        )
        .await
        .expect(201, None)
        .id();
    let their_brand = s
        .post(&other, "/v1/brands", json!({"name": "Rival"}))
        .await
        .expect(201, None)
        .id();
    let their_product = s
        .post(
            &other,
            "/v1/products",
            json!({"brand_id": their_brand, "name": "Theirs"}),
        )
        .await
        .expect(201, None)
        .id();

    let list = b.get("/dashboard/brands").await;
    assert_eq!(list.status, 200, "{}", list.text);
    assert!(list.text.contains("Acme") && list.text.contains("Trail Shoe"));
    assert!(!list.text.contains("Rival"));

    let page = format!("/dashboard/brands/{brand}");
    let saved = b
        .submit(
            &page,
            &page,
            &[
                ("name", "Acme Outdoor"),
                ("description", "Gear for wet rock"),
                (
                    "color_palettes",
                    "primary: #0A2540, #635BFF\naccent: #FFB020",
                ),
                ("fonts", "Inter (heading)\nSource Serif (body)"),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.text);
    let api = s
        .get(&org, &format!("/v1/brands/{brand}"))
        .await
        .expect(200, None);
    assert_eq!(api.body["data"]["name"], "Acme Outdoor");
    assert_eq!(
        api.body["data"]["color_palettes"],
        json!({"primary": ["#0A2540", "#635BFF"], "accent": ["#FFB020"]})
    );
    assert_eq!(
        api.body["data"]["fonts"],
        json!([{"name": "Inter", "role": "heading"}, {"name": "Source Serif", "role": "body"}])
    );

    // A colour the API refuses: its message, nothing changed.
    let bad = b
        .submit(
            &page,
            &page,
            &[("name", "Acme Outdoor"), ("color_palettes", "primary: #zz")],
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    assert!(bad.text.contains("color_palettes"), "{}", bad.text);
    let api = s
        .get(&org, &format!("/v1/brands/{brand}"))
        .await
        .expect(200, None);
    assert_eq!(
        api.body["data"]["color_palettes"]["accent"],
        json!(["#FFB020"])
    );

    // A logo through the images code, then off again.
    let csrf = b.get(&page).await.field("csrf");
    let up = upload_to(&b, &format!("{page}/logos"), &csrf, "coffee.png").await;
    assert_eq!(up.status, 303, "{}", up.text);
    let api = s
        .get(&org, &format!("/v1/brands/{brand}"))
        .await
        .expect(200, None);
    let logo = api.body["data"]["logo_image_ids"][0]
        .as_str()
        .unwrap()
        .to_string();
    assert!(b.get(&page).await.text.contains(&logo));
    let image = s
        .get(&org, &format!("/v1/images/{logo}"))
        .await
        .expect(200, None);
    assert_eq!(image.body["data"]["image_type"], "logo");
    let off = b
        .submit(&page, &format!("{page}/logos/{logo}/remove"), &[])
        .await;
    assert_eq!(off.status, 303);
    let api = s
        .get(&org, &format!("/v1/brands/{brand}"))
        .await
        .expect(200, None);
    assert!(api.body["data"]["logo_image_ids"].is_null());
    let up = upload_to(&b, &format!("{page}/logos"), "wrong", "coffee.png").await;
    assert_eq!(up.status, 403);

    // A product renamed.
    let renamed = b
        .submit(
            &page,
            &format!("/dashboard/products/{product}"),
            &[("name", "Trail Shoe 2"), ("description", "")],
        )
        .await;
    assert_eq!(renamed.status, 303, "{}", renamed.text);
    let api = s
        .get(&org, &format!("/v1/products/{product}"))
        .await
        .expect(200, None);
    assert_eq!(api.body["data"]["name"], "Trail Shoe 2");

    // The rival's: not found, untouched; without the token: refused.
    assert_eq!(
        b.get(&format!("/dashboard/brands/{their_brand}"))
            .await
            .status,
        404
    );
    for action in [
        format!("/dashboard/brands/{their_brand}"),
        format!("/dashboard/products/{their_product}"),
    ] {
        let r = b.submit(&page, &action, &[("name", "Hijacked")]).await;
        assert_eq!(r.status, 404, "{action}: {}", r.text);
        assert_eq!(b.post(&action, &[("name", "x")]).await.status, 403);
    }
    let api = s
        .get(&other, &format!("/v1/brands/{their_brand}"))
        .await
        .expect(200, None);
    assert_eq!(api.body["data"]["name"], "Rival");
}

/// While a design is being analysed the swipe page does not reload itself: no `<meta
/// http-equiv=refresh>` (axe-core's serious WCAG 2.2.1 failure, a time limit the reader
/// cannot turn off). It says so in a status region with a "Refresh" link (the way without
/// the script), and the page's script finds the card as it is now at
/// /dashboard/swipe/designs, to swap it in place. The browser test
/// (tests/browser/swipe_live.py) runs the script and axe-core on this page.
#[tokio::test]
async fn a_processing_design_updates_in_place_without_a_reload() {
    // No workers: the design stays processing until the test marks it analysed.
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org("Live").await;
    let b = member(&s, &org.id, "live@example.test", Role::Member, false).await;
    let csrf = b.get("/dashboard/swipe").await.field("csrf");
    let up = upload(&b, Some(&csrf), &["coffee.png"]).await;
    assert_eq!(up.status, StatusCode::SEE_OTHER, "{}", up.text);

    let page = b.get("/dashboard/swipe").await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(
        !page.text.to_ascii_lowercase().contains("http-equiv"),
        "the page must not reload itself: {}",
        page.text
    );
    let id = design_ids(&page).pop().expect("the uploaded design");
    assert!(
        page.text.contains(&format!(
            r#"<li class="design" id="{id}" data-status="processing">"#
        )),
        "{}",
        page.text
    );
    assert!(
        page.text.contains(
            r#"<p id="swipe-processing" class="hint processing-note" role="status" aria-live="polite" data-poll="/dashboard/swipe/designs">1 design is being analysed. <a href="/dashboard/swipe">Refresh</a> to see it once ready.</p>"#
        ),
        "{}",
        page.text
    );
    assert!(
        page.text
            .contains(r#"<script src="/dashboard/assets/dashboard.js" defer></script>"#)
    );
    let script = b.get("/dashboard/assets/dashboard.js").await;
    assert!(
        script.text.contains("swipe-processing") && script.text.contains("data-poll"),
        "the script polls what the page names"
    );

    let now = b.get(&format!("/dashboard/swipe/designs?ids={id}")).await;
    assert_eq!(now.status, 200, "{}", now.text);
    assert_eq!(now.headers["cache-control"], "no-store");
    let body: serde_json::Value = serde_json::from_str(&now.text).unwrap();
    assert_eq!(body["designs"][0]["id"], id.as_str(), "{body}");
    assert_eq!(body["designs"][0]["status"], "processing", "{body}");

    // Analysed (here marked failed in the store: no worker runs): the endpoint answers the
    // new card, and the page has nothing to announce.
    adforge_api::store::query("UPDATE swipe_files SET status = 'failed' WHERE id = ?")
        .bind(&id)
        .execute(&s.db.write)
        .await
        .unwrap();
    let now = b.get(&format!("/dashboard/swipe/designs?ids={id}")).await;
    let body: serde_json::Value = serde_json::from_str(&now.text).unwrap();
    assert_eq!(body["designs"][0]["status"], "failed", "{body}");
    let html = body["designs"][0]["html"].as_str().unwrap();
    assert!(
        html.starts_with(&format!(
            r#"<li class="design" id="{id}" data-status="failed">"#
        )) && html.contains("Failed"),
        "{html}"
    );
    let page = b.get("/dashboard/swipe").await;
    assert!(
        page.text
            .contains(r#"data-poll="/dashboard/swipe/designs"></p>"#),
        "{}",
        page.text
    );

    // Another organisation's member gets nothing for this id; signed out, sign in first.
    let other = s.org("Other").await;
    let ob = member(&s, &other.id, "other@example.test", Role::Member, false).await;
    let theirs = ob.get(&format!("/dashboard/swipe/designs?ids={id}")).await;
    assert_eq!(theirs.status, 200);
    assert_eq!(theirs.text, r#"{"designs":[]}"#);
    let anon = crate::dashboard::Browser::new(&s)
        .get(&format!("/dashboard/swipe/designs?ids={id}"))
        .await;
    assert_eq!(anon.status, StatusCode::SEE_OTHER);
}
