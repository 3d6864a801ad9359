//! The web dashboard over real HTTP: a small browser (cookie jar, no redirects followed)
//! signs in, submits forms with their CSRF tokens, and the API is then called with what
//! the dashboard made. Security: CSRF, cookie flags, isolation between organisations,
//! signed-out redirects, sign-in rate limits.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use adforge_dashboard::members::{self, Role};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, LOCATION, SET_COOKIE};
use serde_json::json;

use crate::flows::{Api, ready};
use crate::support::{Org, TestServer};

pub(crate) const PASSWORD: &str = "correct horse battery staple";

/// What a page answered.
pub(crate) struct Page {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) text: String,
}

impl Page {
    pub(crate) fn location(&self) -> &str {
        self.headers
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The value of the first `name="…" value="…"` input of that name.
    pub(crate) fn field(&self, name: &str) -> String {
        let marker = format!(r#"name="{name}" value=""#);
        let start = self
            .text
            .find(&marker)
            .unwrap_or_else(|| panic!("no field {name} in {}", self.text))
            + marker.len();
        let end = self.text[start..].find('"').unwrap() + start;
        self.text[start..end].to_string()
    }

    /// The text of the (read-only) textarea with this id.
    fn textarea(&self, id: &str) -> String {
        let marker = format!(r#"<textarea id="{id}""#);
        let at = self
            .text
            .find(&marker)
            .unwrap_or_else(|| panic!("no #{id} in {}", self.text));
        let rest = &self.text[at..];
        let start = rest.find('>').unwrap() + 1;
        let end = rest.find("</textarea>").unwrap();
        rest[start..end].replace("&amp;", "&")
    }

    fn set_cookie(&self, name: &str) -> Option<String> {
        self.headers
            .get_all(SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|c| c.starts_with(&format!("{name}=")))
            .map(str::to_string)
    }
}

/// A browser: keeps cookies, follows no redirects (tests look at them).
pub(crate) struct Browser {
    pub(crate) base: String,
    pub(crate) http: reqwest::Client,
    jar: Mutex<HashMap<String, String>>,
}

impl Browser {
    pub(crate) fn new(s: &TestServer) -> Self {
        Self {
            base: s.base.clone(),
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            jar: Mutex::default(),
        }
    }

    /// The `Cookie` header this browser sends (for a request whose body is not text).
    pub(crate) fn cookie_header(&self) -> String {
        let jar = self.jar.lock().unwrap();
        jar.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    pub(crate) async fn send(&self, req: reqwest::RequestBuilder) -> Page {
        let cookies = self.cookie_header();
        let req = if cookies.is_empty() {
            req
        } else {
            req.header("cookie", cookies)
        };
        let res = req.send().await.unwrap();
        let status = res.status();
        let headers = res.headers().clone();
        {
            let mut jar = self.jar.lock().unwrap();
            for c in headers.get_all(SET_COOKIE).iter() {
                let c = c.to_str().unwrap();
                let pair = c.split(';').next().unwrap();
                let (k, v) = pair.split_once('=').unwrap();
                if v.is_empty() || c.contains("Max-Age=0") {
                    jar.remove(k);
                } else {
                    jar.insert(k.to_string(), v.to_string());
                }
            }
        }
        let text = res.text().await.unwrap();
        Page {
            status,
            headers,
            text,
        }
    }

    pub(crate) async fn get(&self, path: &str) -> Page {
        self.send(self.http.get(format!("{}{path}", self.base)))
            .await
    }

    pub(crate) async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Page {
        let body = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        self.send(
            self.http
                .post(format!("{}{path}", self.base))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body),
        )
        .await
    }

    /// Posts a form of a signed-in page, with the CSRF token read from `from`.
    pub(crate) async fn submit(&self, from: &str, action: &str, fields: &[(&str, &str)]) -> Page {
        let page = self.get(from).await;
        assert_eq!(page.status, 200, "{}", page.text);
        let csrf = page.field("csrf");
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend_from_slice(fields);
        self.post(action, &all).await
    }

    async fn sign_in(&self, email: &str, password: &str) -> Page {
        let form = self.get("/dashboard/sign-in").await;
        assert_eq!(form.status, 200);
        let csrf = form.field("csrf");
        self.post(
            "/dashboard/sign-in",
            &[("csrf", &csrf), ("email", email), ("password", password)],
        )
        .await
    }
}

/// Adds a member and sets their password through the one-time link; returns a browser
/// signed in as them.
pub(crate) async fn member(
    s: &TestServer,
    org: &str,
    email: &str,
    role: Role,
    operator: bool,
) -> Browser {
    let added = members::add_member(&s.db, org, email, None, role, operator)
        .await
        .unwrap();
    let b = Browser::new(s);
    let link = members::link_url(&s.base, &added.link_token);
    let page = b.get(link.strip_prefix(&s.base).unwrap()).await;
    assert_eq!(page.status, 200, "{}", page.text);
    let csrf = page.field("csrf");
    let done = b
        .post(
            "/dashboard/sign-in/link",
            &[
                ("csrf", &csrf),
                ("token", &added.link_token),
                ("password", PASSWORD),
                ("confirm", PASSWORD),
            ],
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.text);
    assert_eq!(done.location(), "/dashboard/keys");
    // The link works once.
    let again = b.get(link.strip_prefix(&s.base).unwrap()).await;
    assert_eq!(again.status, 404);
    b
}

/// Polls until `f` is true (a deadline only a hang reaches, not a timing assertion).
async fn eventually<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f().await {
        assert!(Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn v1_status(s: &TestServer, key: &str, path: &str) -> u16 {
    s.call(reqwest::Method::GET, path, Some(key), None)
        .await
        .status
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_checks_the_password_and_sets_a_strict_cookie() {
    let s = TestServer::start().await;
    let org = s.org("Acme").await;
    drop(member(&s, &org.id, "Ann@Example.com", Role::Owner, false).await);

    let b = Browser::new(&s);
    let wrong = b
        .sign_in("ann@example.com", "not the password at all")
        .await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.text.contains("do not match"));
    assert!(wrong.set_cookie("adforge_session").is_none());
    assert_eq!(b.get("/dashboard/keys").await.status, 303);

    let unknown = b.sign_in("nobody@example.com", PASSWORD).await;
    assert_eq!(unknown.status, 401);

    let ok = b.sign_in(" ANN@example.com", PASSWORD).await;
    assert_eq!(ok.status, 303, "{}", ok.text);
    assert_eq!(ok.location(), "/dashboard/keys");
    let cookie = ok.set_cookie("adforge_session").expect("session cookie");
    assert!(cookie.contains("; HttpOnly"), "{cookie}");
    assert!(cookie.contains("; SameSite=Lax"), "{cookie}");
    assert!(cookie.contains("; Path=/dashboard"), "{cookie}");
    assert!(!cookie.contains("Secure"), "http public URL: {cookie}");
    let keys = b.get("/dashboard/keys").await;
    assert_eq!(keys.status, 200);
    assert!(keys.text.contains("Create a key"));
    assert_eq!(
        keys.headers["cache-control"], "no-store",
        "pages are never cached"
    );

    // Sign out ends the session server-side: the old cookie no longer works.
    let token = cookie.split(';').next().unwrap().to_string();
    let out = b
        .submit("/dashboard/keys", "/dashboard/sign-out", &[])
        .await;
    assert_eq!(out.status, 303);
    let stale = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(s.url("/dashboard/keys"))
        .header("cookie", token)
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 303);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cookie_is_secure_when_the_public_url_is_https() {
    let s = TestServer::start_with(|a| a.public_url = Some("https://ads.example.com".into())).await;
    let org = s.org("Acme").await;
    let added = members::add_member(&s.db, &org.id, "a@example.com", None, Role::Owner, false)
        .await
        .unwrap();
    let b = Browser::new(&s);
    let page = b
        .get(&format!(
            "/dashboard/sign-in/link?token={}",
            added.link_token
        ))
        .await;
    let pre = page.set_cookie("adforge_csrf").unwrap();
    assert!(
        pre.contains("; Secure") && pre.contains("; HttpOnly"),
        "{pre}"
    );
    let done = b
        .post(
            "/dashboard/sign-in/link",
            &[
                ("csrf", &page.field("csrf")),
                ("token", &added.link_token),
                ("password", PASSWORD),
                ("confirm", PASSWORD),
            ],
        )
        .await;
    let cookie = done.set_cookie("adforge_session").unwrap();
    assert!(
        cookie.contains("; Secure")
            && cookie.contains("; HttpOnly")
            && cookie.contains("; SameSite=Lax"),
        "{cookie}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_out_browser_is_sent_to_sign_in() {
    let s = TestServer::start().await;
    let b = Browser::new(&s);
    for path in [
        "/dashboard/keys",
        "/dashboard/wallet?kind=hold",
        "/dashboard/sessions",
    ] {
        let r = b.get(path).await;
        assert_eq!(r.status, 303, "{path}");
        assert!(
            r.location()
                .starts_with("/dashboard/sign-in?next=%2Fdashboard%2F"),
            "{}",
            r.location()
        );
    }
    let r = b.post("/dashboard/keys", &[("scope", "all")]).await;
    assert_eq!(r.status, 303);
    assert_eq!(b.get("/dashboard").await.location(), "/dashboard/keys");
    // After signing in from such a redirect, the browser lands where it was going.
    let org = s.org("Acme").await;
    drop(member(&s, &org.id, "a@example.com", Role::Member, false).await);
    let form = b.get("/dashboard/sign-in?next=%2Fdashboard%2Fwallet").await;
    let r = b
        .post(
            "/dashboard/sign-in",
            &[
                ("csrf", &form.field("csrf")),
                ("next", &form.field("next")),
                ("email", "a@example.com"),
                ("password", PASSWORD),
            ],
        )
        .await;
    assert_eq!(r.location(), "/dashboard/wallet");
    // No open redirect.
    let form = b
        .get("/dashboard/sign-in?next=https%3A%2F%2Fevil.test")
        .await;
    assert_eq!(form.status, 303, "already signed in");
    assert_eq!(form.location(), "/dashboard/keys");
}

/// A `next` that is not a plain in-site path (CR/LF, NUL, spaces, other hosts, a look-alike
/// prefix) signs in to the default page with a proper `Location`, never an empty one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_with_a_strange_next_lands_on_the_default_page() {
    let s = TestServer::start().await;
    let org = s.org("Acme").await;
    drop(member(&s, &org.id, "n@example.com", Role::Member, false).await);
    for (next, want) in [
        ("/dashboard/ads\r\nSet-Cookie: x=y", "/dashboard/keys"),
        ("/dashboard/ads\n", "/dashboard/keys"),
        ("/dashboard/ads\0", "/dashboard/keys"),
        ("/dashboard/a b", "/dashboard/keys"),
        ("/dashboard/é", "/dashboard/keys"),
        ("/dashboardevil", "/dashboard/keys"),
        ("//evil.test/dashboard", "/dashboard/keys"),
        ("/dashboard/ads?page=2", "/dashboard/ads?page=2"),
    ] {
        let b = Browser::new(&s);
        let form = b.get("/dashboard/sign-in").await;
        let r = b
            .post(
                "/dashboard/sign-in",
                &[
                    ("csrf", &form.field("csrf")),
                    ("next", next),
                    ("email", "n@example.com"),
                    ("password", PASSWORD),
                ],
            )
            .await;
        assert_eq!(r.status, 303, "{next:?}: {}", r.text);
        assert_eq!(r.location(), want, "{next:?}");
        assert!(r.set_cookie("adforge_session").is_some(), "{next:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forms_without_the_right_csrf_token_are_refused() {
    let s = TestServer::start().await;
    let org = s.org("Acme").await;
    let b = member(&s, &org.id, "a@example.com", Role::Owner, true).await;
    let before = adforge_api::auth::list_keys(&s.db, &org.id)
        .await
        .unwrap()
        .len();
    let missing = b.post("/dashboard/keys", &[("scope", "all")]).await;
    assert_eq!(missing.status, 403);
    assert!(missing.text.contains("security token"));
    let wrong = b
        .post(
            "/dashboard/keys",
            &[("csrf", "0123456789abcdef"), ("scope", "all")],
        )
        .await;
    assert_eq!(wrong.status, 403);
    let top_up = b
        .post(
            "/dashboard/wallet/top-up",
            &[("org", &org.id), ("amount", "5"), ("reference", "x")],
        )
        .await;
    assert_eq!(top_up.status, 403);
    let out = b.post("/dashboard/sign-out", &[]).await;
    assert_eq!(out.status, 403);
    assert_eq!(
        adforge_api::auth::list_keys(&s.db, &org.id)
            .await
            .unwrap()
            .len(),
        before
    );
    let mut conn = s.db.read.acquire().await.unwrap();
    let bal = adforge_api::wallet::balance(&mut conn, &org.id)
        .await
        .unwrap();
    assert_eq!(bal.balance_cents, 0);
    // The sign-in form itself: no token (or no cookie) → 403.
    let fresh = Browser::new(&s);
    let r = fresh
        .post(
            "/dashboard/sign-in",
            &[("email", "a@example.com"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(r.status, 403);
    let r = fresh
        .post(
            "/dashboard/sign-in",
            &[
                ("csrf", "forged"),
                ("email", "a@example.com"),
                ("password", PASSWORD),
            ],
        )
        .await;
    assert_eq!(r.status, 403);
    // The session still works with its token.
    let ok = b
        .submit(
            "/dashboard/keys",
            "/dashboard/keys",
            &[("scope", "brands:read")],
        )
        .await;
    assert_eq!(ok.status, 201);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_made_in_the_dashboard_works_until_revoked() {
    let s = TestServer::start().await;
    let org = s.org("Acme").await;
    let b = member(&s, &org.id, "a@example.com", Role::Member, false).await;

    let none = b.submit("/dashboard/keys", "/dashboard/keys", &[]).await;
    assert_eq!(none.status, 400);
    assert!(none.text.contains("at least one scope"));

    let made = b
        .submit(
            "/dashboard/keys",
            "/dashboard/keys",
            &[("scope", "brands:read"), ("scope", "products:read")],
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.text);
    let secret = made.textarea("new-secret");
    assert!(secret.starts_with("svc_live_"), "{secret}");
    assert_eq!(v1_status(&s, &secret, "/v1/brands").await, 200);
    // The chosen scopes, no more.
    let write = s
        .call(
            reqwest::Method::POST,
            "/v1/brands",
            Some(&secret),
            Some(json!({"name": "X"})),
        )
        .await;
    assert_eq!(write.status, 403);
    // The list shows it (never the secret) and, soon, when it was last used.
    let keys = adforge_api::auth::list_keys(&s.db, &org.id).await.unwrap();
    let k = keys
        .iter()
        .find(|k| secret.ends_with(&k.last4))
        .unwrap()
        .clone();
    let listed = b.get("/dashboard/keys").await;
    assert!(listed.text.contains(&k.id) && !listed.text.contains(&secret));
    assert!(listed.text.contains("<code>products:read</code>"));
    eventually("last use recorded", || async {
        let keys = adforge_api::auth::list_keys(&s.db, &org.id).await.unwrap();
        keys.iter()
            .any(|x| x.id == k.id && x.last_used_at.is_some())
    })
    .await;

    // Rotate: a new secret with the same scopes; the old one keeps working (grace period).
    let rotated = b
        .submit(
            "/dashboard/keys",
            &format!("/dashboard/keys/{}/rotate", k.id),
            &[],
        )
        .await;
    assert_eq!(rotated.status, 201, "{}", rotated.text);
    let new_secret = rotated.textarea("new-secret");
    assert_ne!(new_secret, secret);
    assert!(rotated.text.contains("old key keeps working until"));
    assert_eq!(v1_status(&s, &new_secret, "/v1/products").await, 200);
    assert_eq!(v1_status(&s, &secret, "/v1/brands").await, 200);
    let old = adforge_api::auth::list_keys(&s.db, &org.id)
        .await
        .unwrap()
        .into_iter()
        .find(|x| x.id == k.id)
        .unwrap();
    let until = adforge_api::timestamp::parse(old.expires_at.as_deref().unwrap()).unwrap();
    let hours = (until - time::OffsetDateTime::now_utc()).whole_hours();
    assert!((23..=24).contains(&hours), "grace of {hours} h");

    // Revoke the old key: the API refuses it from the next request on, although the key
    // cache (trusted for 2 s) held it a moment ago: the process that revokes a key forgets it.
    let r = b
        .submit(
            "/dashboard/keys",
            &format!("/dashboard/keys/{}/revoke", k.id),
            &[],
        )
        .await;
    assert_eq!(r.status, 303);
    assert_eq!(v1_status(&s, &secret, "/v1/brands").await, 401);
    assert_eq!(v1_status(&s, &new_secret, "/v1/brands").await, 200);
    assert!(b.get("/dashboard/keys").await.text.contains("Revoked"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_organisations_ids_are_not_found() {
    let s = TestServer::start().await;
    let mine = s.org("Mine").await;
    let theirs = s.org("Theirs").await;
    let b = member(&s, &mine.id, "a@example.com", Role::Owner, false).await;
    let other = member(&s, &theirs.id, "b@example.com", Role::Owner, false).await;
    let their_key = adforge_api::auth::list_keys(&s.db, &theirs.id)
        .await
        .unwrap()[0]
        .id
        .clone();
    for action in ["revoke", "rotate"] {
        let r = b
            .submit(
                "/dashboard/keys",
                &format!("/dashboard/keys/{their_key}/{action}"),
                &[],
            )
            .await;
        assert_eq!(r.status, 404, "{action}: {}", r.text);
    }
    let r = b
        .submit(
            "/dashboard/keys",
            "/dashboard/keys/key_doesnotexist/revoke",
            &[],
        )
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(v1_status(&s, &theirs.key, "/v1/brands").await, 200);
    assert!(
        adforge_api::auth::list_keys(&s.db, &theirs.id)
            .await
            .unwrap()[0]
            .expires_at
            .is_none()
    );
    // Their page never lists my keys, and their sessions are not mine to revoke.
    let theirs_page = other.get("/dashboard/keys").await;
    let my_key = adforge_api::auth::list_keys(&s.db, &mine.id).await.unwrap()[0]
        .id
        .clone();
    assert!(!theirs_page.text.contains(&my_key));
    let their_session: String = adforge_api::store::query_scalar(
        "SELECT s.id FROM dashboard_sessions s JOIN profiles p ON p.id = s.profile_id WHERE p.email = 'b@example.com'",
    )
    .fetch_one(&s.db.read)
    .await
    .unwrap();
    let r = b
        .submit(
            "/dashboard/sessions",
            &format!("/dashboard/sessions/{their_session}/revoke"),
            &[],
        )
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(other.get("/dashboard/keys").await.status, 200);
}

/// The API through an in-process client (for the ad flow helpers).
struct Client<'a> {
    s: &'a TestServer,
    http: reqwest::Client,
}

impl Api for Client<'_> {
    fn base(&self) -> &str {
        &self.s.base
    }
    fn client(&self) -> &reqwest::Client {
        &self.http
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_top_up_lets_the_api_spend() {
    let s = TestServer::start_with(|a| {
        a.dashboard_url = None;
        a.workers = 0;
    })
    .await;
    let org: Org = s.org("Acme").await;
    let ops = s.org("Service").await;
    let api = Client {
        s: &s,
        http: reqwest::Client::new(),
    };
    let c = ready(&api, &org).await;
    let refused = s
        .post(&org, "/v1/image-ads", c.flat())
        .await
        .expect(402, Some("INSUFFICIENT_BALANCE"));
    let msg = refused.body["error"]["message"].as_str().unwrap();
    let link = format!("{}/dashboard/wallet", s.base);
    assert!(msg.contains(&link), "{msg}");

    // A member follows the error's link to the wallet page; members cannot top up.
    let m = member(&s, &org.id, "m@example.com", Role::Member, false).await;
    let wallet = m.get(link.strip_prefix(&s.base).unwrap()).await;
    assert_eq!(wallet.status, 200);
    assert!(wallet.text.contains(r#"<dd id="balance">$0.00</dd>"#));
    assert!(
        wallet
            .text
            .contains("Top-ups are made by the service's operators")
    );
    assert!(!wallet.text.contains("/dashboard/wallet/top-up"));
    let r = m
        .submit(
            "/dashboard/wallet",
            "/dashboard/wallet/top-up",
            &[("org", &org.id), ("amount", "5.00"), ("reference", "INV-1")],
        )
        .await;
    assert_eq!(r.status, 403);

    // An operator (a member of another organisation) tops up this one; a reference is required.
    let op = member(&s, &ops.id, "op@example.com", Role::Owner, true).await;
    // The picker lists organisations by name; the id follows only where two share a name.
    let twin: Org = s.org("Acme").await;
    let picker = op.get("/dashboard/wallet").await;
    for id in [&org.id, &twin.id] {
        let opt = format!(r#"<option value="{id}" title="{id}">Acme ({id})</option>"#);
        assert!(picker.text.contains(&opt), "{opt} in {}", picker.text);
    }
    let own = format!(
        r#"<option value="{0}" title="{0}" selected>Service</option>"#,
        ops.id
    );
    assert!(picker.text.contains(&own), "{own} in {}", picker.text);
    let r = op
        .submit(
            "/dashboard/wallet",
            "/dashboard/wallet/top-up",
            &[("org", &org.id), ("amount", "5.00"), ("reference", " ")],
        )
        .await;
    assert_eq!(r.status, 400);
    assert!(r.text.contains("reference"));
    let r = op
        .submit(
            "/dashboard/wallet",
            "/dashboard/wallet/top-up",
            &[
                ("org", &org.id),
                ("amount", "5.00"),
                ("reference", "INV-2026-001"),
            ],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);

    let wallet = m.get("/dashboard/wallet").await;
    assert!(
        wallet.text.contains(r#"<dd id="balance">$5.00</dd>"#),
        "{}",
        wallet.text
    );
    assert!(wallet.text.contains("INV-2026-001"));
    // The API spends it: the same ad is now accepted and holds its price.
    s.post(&org, "/v1/image-ads", c.flat())
        .await
        .expect(202, None);
    let wallet = m.get("/dashboard/wallet?kind=hold").await;
    assert!(wallet.text.contains(r#"<dd id="held">$1.00</dd>"#));
    assert!(wallet.text.contains("Hold"));
    assert!(!wallet.text.contains("INV-2026-001"), "filtered to holds");
    // CSV export with the same filters.
    let csv = m.get("/dashboard/wallet/ledger.csv?kind=top_up").await;
    assert_eq!(csv.status, 200);
    assert!(
        csv.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    let lines: Vec<&str> = csv.text.lines().collect();
    assert_eq!(lines[0], "id,created_at,kind,amount_cents,amount,reference");
    assert_eq!(lines.len(), 2, "{}", csv.text);
    assert!(
        lines[1].contains(r#""top_up",500,"$5.00","INV-2026-001""#),
        "{}",
        lines[1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_attempts_are_rate_limited_per_email() {
    let s = TestServer::start().await;
    let org = s.org("Acme").await;
    drop(member(&s, &org.id, "a@example.com", Role::Owner, false).await);
    let b = Browser::new(&s);
    for _ in 0..10 {
        assert_eq!(
            b.sign_in("a@example.com", "wrong password!!").await.status,
            401
        );
    }
    let limited = b.sign_in("a@example.com", PASSWORD).await;
    assert_eq!(limited.status, 429);
    assert!(limited.headers.contains_key("retry-after"));
    assert!(limited.set_cookie("adforge_session").is_none());
    // Another email from the same address is still allowed.
    drop(member(&s, &org.id, "b@example.com", Role::Member, false).await);
    assert_eq!(b.sign_in("b@example.com", PASSWORD).await.status, 303);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_invite_members_and_sessions_can_be_revoked() {
    let s = TestServer::start().await;
    let org = s.org("Acme").await;
    let owner = member(&s, &org.id, "o@example.com", Role::Owner, false).await;
    let r = owner
        .submit(
            "/dashboard/members",
            "/dashboard/members",
            &[
                ("email", "new@example.com"),
                ("name", "New <b>Person</b>"),
                ("role", "member"),
            ],
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert!(r.text.contains("New &lt;b&gt;Person&lt;/b&gt;"), "escaped");
    let link = r.textarea("invite-link");
    let path = link.strip_prefix(&s.base).unwrap().to_string();
    let invited = Browser::new(&s);
    let page = invited.get(&path).await;
    assert_eq!(page.status, 200);
    let short = invited
        .post(
            "/dashboard/sign-in/link",
            &[
                ("csrf", &page.field("csrf")),
                ("token", &page.field("token")),
                ("password", "short"),
                ("confirm", "short"),
            ],
        )
        .await;
    assert_eq!(short.status, 400);
    let done = invited
        .post(
            "/dashboard/sign-in/link",
            &[
                ("csrf", &page.field("csrf")),
                ("token", &page.field("token")),
                ("password", PASSWORD),
                ("confirm", PASSWORD),
            ],
        )
        .await;
    assert_eq!(done.status, 303);
    // Members cannot invite.
    let r = invited
        .submit(
            "/dashboard/members",
            "/dashboard/members",
            &[("email", "x@example.com")],
        )
        .await;
    assert_eq!(r.status, 403);

    // A second browser of the owner revokes the first one's session.
    let second = Browser::new(&s);
    assert_eq!(second.sign_in("o@example.com", PASSWORD).await.status, 303);
    let list = second.get("/dashboard/sessions").await;
    let first_id: String = adforge_api::store::query_scalar(
        "SELECT s.id FROM dashboard_sessions s JOIN profiles p ON p.id = s.profile_id WHERE p.email = 'o@example.com' ORDER BY s.seq LIMIT 1",
    )
    .fetch_one(&s.db.read)
    .await
    .unwrap();
    assert!(list.text.contains(&first_id));
    let r = second
        .submit(
            "/dashboard/sessions",
            &format!("/dashboard/sessions/{first_id}/revoke"),
            &[],
        )
        .await;
    assert_eq!(r.status, 303);
    assert_eq!(owner.get("/dashboard/keys").await.status, 303);
    assert_eq!(second.get("/dashboard/keys").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_can_be_turned_off() {
    let s = TestServer::start_with(|a| a.dashboard.no_dashboard = true).await;
    let r = s
        .call(reqwest::Method::GET, "/dashboard/sign-in", None, None)
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(r.code(), "NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_of_two_organisations_switches_between_them() {
    let s = TestServer::start().await;
    let alpha = s.org("Alpha").await;
    let beta = s.org("Beta").await;
    let gamma = s.org("Gamma").await;
    let b = member(&s, &alpha.id, "x@example.com", Role::Owner, false).await;
    // Adding the same email elsewhere keeps the profile (and its password).
    members::add_member(&s.db, &beta.id, "X@example.com", None, Role::Member, false)
        .await
        .unwrap();
    let key_of = |org: &Org| {
        let (db, id) = (s.db.clone(), org.id.clone());
        async move {
            adforge_api::auth::list_keys(&db, &id).await.unwrap()[0]
                .id
                .clone()
        }
    };
    let (alpha_key, beta_key) = (key_of(&alpha).await, key_of(&beta).await);
    let page = b.get("/dashboard/keys").await;
    assert!(page.text.contains(r#"id="org-switch""#));
    assert!(page.text.contains(&alpha_key) && !page.text.contains(&beta_key));

    let r = b
        .submit("/dashboard/keys", "/dashboard/org", &[("org", &beta.id)])
        .await;
    assert_eq!(r.status, 303);
    let page = b.get("/dashboard/keys").await;
    assert!(page.text.contains(&beta_key) && !page.text.contains(&alpha_key));
    // A member (not owner) in Beta: no invitations there.
    let team = b.get("/dashboard/members").await;
    assert!(team.text.contains("Owners of the organisation can invite"));

    // Not a member of Gamma: not found, and the session stays in Beta.
    let r = b
        .submit("/dashboard/keys", "/dashboard/org", &[("org", &gamma.id)])
        .await;
    assert_eq!(r.status, 404);
    assert!(b.get("/dashboard/keys").await.text.contains(&beta_key));
    // The same password still signs in.
    assert_eq!(
        Browser::new(&s)
            .sign_in("x@example.com", PASSWORD)
            .await
            .status,
        303
    );
}
