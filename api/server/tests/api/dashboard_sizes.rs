//! "Make other sizes" on an ad's page over real HTTP (issue 42, item 4): the form lists the
//! named placements; nothing ticked is said on the page and makes nothing; without its CSRF
//! token it is refused; the ticked placements become new ads of the ad's set through the
//! resize domain call (their sizes, completed), listed under "This ad's sizes".

use adforge_dashboard::members::Role;
use serde_json::Value;

use crate::dashboard::member;
use crate::dashboard_ads::{Client, top_up};
use crate::flows::{self, ready};
use crate::support::{Org, TestServer};

async fn image_ads_total(s: &TestServer, org: &Org) -> i64 {
    let list = s.get(org, "/v1/image-ads").await.expect(200, None);
    list.body["total_count"].as_i64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn make_other_sizes_on_an_ads_page_makes_the_set() {
    let s = TestServer::start().await;
    let org = s.org("Acme").await;
    let api = Client {
        s: &s,
        http: reqwest::Client::new(),
    };
    top_up(&s, &org, 1_000).await;
    let c = ready(&api, &org).await;
    let ad = flows::create(&api, &org, c.flat()).await;
    flows::settled(&api, &org, &ad, String::new).await;
    let b = member(&s, &org.id, "ann@example.com", Role::Member, false).await;
    let page = format!("/dashboard/ads/{ad}");

    let p = b.get(&page).await;
    assert_eq!(p.status, 200, "{}", p.text);
    assert!(p.text.contains("Make other sizes"), "{}", p.text);
    assert!(
        p.text
            .contains(&format!(r#"action="/dashboard/ads/{ad}/sizes""#))
    );
    assert!(p.text.contains(r#"name="size" value="4:5""#));

    // Nothing ticked: said on the page, nothing made; no token: refused.
    let none = b.submit(&page, &format!("{page}/sizes"), &[]).await;
    assert_eq!(none.status, 400, "{}", none.text);
    assert!(none.text.contains("Choose at least one placement"));
    let no_token = b.post(&format!("{page}/sizes"), &[("size", "4:5")]).await;
    assert_eq!(no_token.status, 403);
    assert_eq!(image_ads_total(&s, &org).await, 1);

    let made = b
        .submit(
            &page,
            &format!("{page}/sizes"),
            &[("size", "4:5"), ("size", "1.91:1")],
        )
        .await;
    assert_eq!(made.status, 303, "{}", made.text);
    assert!(
        made.location().starts_with(&format!("{page}?sized=2")),
        "{}",
        made.location()
    );
    let set = b.get(made.location().split('#').next().unwrap()).await;
    assert!(
        set.text.contains("2 new sizes are being made"),
        "{}",
        set.text
    );
    assert!(set.text.contains("This ad's sizes"), "{}", set.text);
    assert_eq!(
        set.text.matches(r#"<li class="ad-card" id="set-"#).count(),
        3
    );

    // The new ads: the placements' sizes, in the ad's set, and they complete.
    let list = s
        .get(&org, &format!("/v1/image-ads?size_set_id={ad}"))
        .await
        .expect(200, None);
    assert_eq!(list.body["total_count"], 3, "{}", list.body);
    let mut sizes: Vec<String> = Vec::new();
    for a in list.body["data"].as_array().unwrap() {
        let id = a["id"].as_str().unwrap();
        let done: Value = flows::settled(&api, &org, id, String::new).await;
        assert_eq!(done["status"], "completed", "{done}");
        if let Some(p) = done["size"]["placement"].as_str() {
            sizes.push(p.to_string());
        }
    }
    sizes.sort();
    assert_eq!(sizes, ["1.91:1", "4:5"]);
    let after = b.get(&page).await;
    assert!(!after.text.contains("http-equiv"), "the set has completed");
}
