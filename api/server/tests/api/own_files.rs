//! This server's own `/files/` URLs: one mapping to blob keys for the reference check, the
//! edited-tree check and the worker, folders that are not files, and the public-address
//! guard the edited-tree check shares with the fetcher.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Catalog, Reply, TestServer, send, wait_settled};

fn create_body(c: &Catalog, reference: &str) -> Value {
    json!({"reference_ad_url": reference, "brand_id": c.brand, "product_id": c.product, "audience_id": c.audience})
}

#[track_caller]
fn assert_request_id(r: &Reply) {
    let rid = r.body["meta"]["request_id"].as_str().unwrap_or("");
    assert!(rid.starts_with("req_"), "{}", r.body);
    assert_eq!(r.header("x-request-id"), Some(rid));
}

/// Own-file reference URLs that name a folder, climb out with `..` (also encoded), carry
/// a query, fragment or user info, or name nothing are 422 REFERENCE_AD_URL_INVALID
/// saying what to change (they were 500s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_own_reference_urls_are_422() {
    // No workers and no money: nothing here may get as far as rendering or charging.
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org("OwnRefs").await;
    let (c, src) = s.ad_inputs(&org).await;
    let files = format!("{}/files/", s.base);
    let key = src.strip_prefix(&files).unwrap().to_string();
    let folder = key.rsplit_once('/').unwrap().0.to_string();
    let userinfo = src.replacen("http://", "http://user:pw@", 1);
    for (url, says) in [
        (format!("{files}images"), "names no file"),
        (format!("{files}{folder}"), "names no file"),
        (format!("{files}{folder}/"), "names no file"),
        (
            format!("{files}images/img_nope/original.jpg"),
            "names no file",
        ),
        (files.clone(), "names no file"),
        (format!("{files}../adforge.sqlite3"), "`..`"),
        (format!("{files}{folder}/../{key}"), "`..`"),
        (format!("{files}%2e%2e/adforge.sqlite3"), "`..`"),
        (format!("{files}images/%2E%2e/{key}"), "`..`"),
        (format!("{src}?size=big"), "query"),
        (format!("{src}#top"), "fragment"),
        (userinfo, "password"),
        (format!("{files}{}", key.replace('/', "%2F")), "slash"),
        (format!("{files}%c0%ae%c0%ae/x"), "percent-escape"),
    ] {
        let r = s
            .post(&org, "/v1/image-ads", create_body(&c, &url))
            .await
            .expect(422, Some("REFERENCE_AD_URL_INVALID"));
        let msg = r.body["error"]["message"].as_str().unwrap();
        assert!(msg.contains(says), "{url}: {msg}");
        assert!(msg.starts_with("reference_ad_url "), "{url}: {msg}");
        assert_request_id(&r);
    }
    // The file itself passes the reference check (and reaches the balance check).
    s.post(&org, "/v1/image-ads", create_body(&c, &src))
        .await
        .expect(402, Some("INSUFFICIENT_BALANCE"));
}

/// GET /files/ answers one 404 for a folder and for an unknown file, so answers do not
/// tell which ids exist (folders were 500s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_folders_are_404_like_unknown_files() {
    let s = TestServer::start_with(|a| a.workers = 0).await;
    let org = s.org("Folders").await;
    let (_, src) = s.ad_inputs(&org).await;
    let (status, _, _) = s.fetch(&src).await;
    assert_eq!(status, 200);
    let folder = src.rsplit_once('/').unwrap().0.to_string();
    let img_id = folder.rsplit_once('/').unwrap().1.to_string();
    assert!(img_id.starts_with("img_"), "{img_id}");
    let unknown = folder.replace(&img_id, "img_0000000000000000000000");
    // Folders the store really has (an ad's folder too) and ids it does not have.
    std::fs::create_dir_all(s.data_dir.join("blobs/image-ads/ia_made_by_a_render")).unwrap();
    let paths = [
        "/files/images".to_string(),
        "/files/images/".to_string(),
        folder.replace(&s.base, ""),
        unknown.replace(&s.base, ""),
        format!("{}/", folder.replace(&s.base, "")),
        "/files/image-ads".to_string(),
        "/files/image-ads/ia_made_by_a_render".to_string(),
        "/files/image-ads/ia_never_made".to_string(),
        format!("/files/images/{}", "a".repeat(300)),
    ];
    let mut messages = Vec::new();
    for path in &paths {
        let r = send(s.request(Method::GET, path)).await;
        assert_eq!(r.status.as_u16(), 404, "{path}: {}", r.body);
        assert_eq!(r.code(), "NOT_FOUND", "{path}: {}", r.body);
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_request_id(&r);
        let msg = r.body["error"]["message"].as_str().unwrap().to_string();
        messages.push(msg.replace(path.as_str(), "<path>"));
    }
    // The same words whatever exists: only the echoed path differs.
    assert!(messages.iter().all(|m| m == &messages[0]), "{messages:?}");
}

/// An image paint of the tree as `(node id, index in fills)`.
fn image_fill(tree: &Value) -> (String, usize) {
    tree["nodes"]
        .as_object()
        .unwrap()
        .iter()
        .find_map(|(id, n)| {
            n["fills"]
                .as_array()?
                .iter()
                .position(|p| p["type"] == "IMAGE" && p["visible"] != false)
                .map(|i| (id.clone(), i))
        })
        .expect("a node with an image fill")
}

/// PATCH checks a tree's image URLs with the fetcher's address guard (every notation of a
/// private address) and the own-file rules the worker reads by, so that it accepts only
/// what can render; a refusal names the node and field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_checks_image_urls_like_the_fetch() {
    // As in production: private addresses refused; own files are read from the store.
    let s = TestServer::start_with(|a| a.allow_private_urls = false).await;
    let org = s.org("PatchUrls").await;
    let (c, src) = s.ad_inputs(&org).await;
    adforge_api::store::query("UPDATE wallets SET balance_cents = 10000 WHERE org_id = ?")
        .bind(&org.id)
        .execute(&s.db.write)
        .await
        .unwrap();
    let mut body = create_body(&c, &src);
    body["editable"] = json!(true);
    let ad = s
        .post(&org, "/v1/image-ads", body)
        .await
        .expect(202, None)
        .id();
    let done = wait_settled(&s, &org, &ad).await;
    assert_eq!(done["status"], "completed", "{done}");
    let tree = done["current_json_tree"].clone();
    let (node, i) = image_fill(&tree);
    let with_url = |url: &str| {
        let mut t = tree.clone();
        t["nodes"][&node]["fills"][i]["imageFillUrl"] = json!(url);
        json!({"current_json_tree": t})
    };
    let path = format!("/v1/image-ads/{ad}");
    let port = s.base.rsplit(':').next().unwrap().to_string();
    let files = format!("{}/files/", s.base);
    let key = src.strip_prefix(&files).unwrap().to_string();
    let folder = key.rsplit_once('/').unwrap().0.to_string();
    for (url, says) in [
        // 127.0.0.1 in decimal, hex, octal and short forms; IPv6 loopback; metadata.
        (
            format!("http://2130706433:{port}/x.png"),
            "not a public address",
        ),
        (
            format!("http://0x7f000001:{port}/x.png"),
            "not a public address",
        ),
        (
            format!("http://0177.0.0.1:{port}/x.png"),
            "not a public address",
        ),
        (format!("http://127.1:{port}/x.png"), "not a public address"),
        (
            format!("http://[::ffff:7f00:1]:{port}/x.png"),
            "not a public address",
        ),
        (
            "http://169.254.169.254/latest/meta-data".to_string(),
            "not a public address",
        ),
        (
            format!("http://localhost:{port}/x.png"),
            "not a public address",
        ),
        // IPv4-compatible, NAT64, 6to4 and Teredo forms of 127.0.0.1 (issue 19).
        (
            format!("http://[::127.0.0.1]:{port}/x.png"),
            "not a public address",
        ),
        (
            format!("http://[64:ff9b::7f00:1]:{port}/x.png"),
            "not a public address",
        ),
        (
            format!("http://[2002:7f00:1::]:{port}/x.png"),
            "not a public address",
        ),
        (
            format!("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]:{port}/x.png"),
            "not a public address",
        ),
        // Own files: folders, `..`, queries, fragments, user info, missing files.
        (format!("{files}{folder}"), "names no file"),
        (format!("{files}images"), "names no file"),
        (
            format!("{files}images/img_nope/original.png"),
            "names no file",
        ),
        (format!("{files}{folder}/../{key}"), "`..`"),
        (format!("{files}%2e%2e/{key}"), "`..`"),
        (format!("{src}?v=2"), "query"),
        (format!("{src}#x"), "fragment"),
        (src.replacen("http://", "http://me@", 1), "password"),
    ] {
        let r = s
            .patch(&org, &path, with_url(&url))
            .await
            .expect(400, Some("VALIDATION_ERROR"));
        let detail = &r.body["error"]["details"][0];
        assert_eq!(detail["field"], "current_json_tree", "{}", r.body);
        let msg = detail["message"].as_str().unwrap();
        assert!(msg.contains(says), "{url}: {msg}");
        assert!(
            msg.contains(&format!("node `{node}`"))
                && msg.contains(&format!("fills[{i}].imageFillUrl")),
            "{url}: {msg}"
        );
        assert_request_id(&r);
    }
    // A root the renderer would refuse to draw (1×100000) is refused here, not left as a
    // failed version.
    let mut thin = tree.clone();
    let root = thin["root"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| "root".into());
    thin["nodes"][&root]["width"] = json!(1);
    thin["nodes"][&root]["height"] = json!(100_000);
    let r = s
        .patch(&org, &path, json!({"current_json_tree": thin}))
        .await
        .expect(400, Some("VALIDATION_ERROR"));
    assert_eq!(r.body["error"]["details"][0]["field"], "current_json_tree");
    assert!(
        r.body["error"]["details"][0]["message"]
            .as_str()
            .unwrap()
            .contains("20:1"),
        "{}",
        r.body
    );
    // Nothing refused was stored: still one version, still completed.
    let now = s.get(&org, &path).await.expect(200, None);
    assert_eq!(now.body["data"]["status"], "completed");
    // The own file itself is accepted and renders.
    s.patch(&org, &path, with_url(&src)).await.expect(200, None);
    assert_eq!(wait_settled(&s, &org, &ad).await["status"], "completed");
    // The rendered ad's folder is no file either.
    let r = send(s.request(Method::GET, &format!("/files/image-ads/{ad}"))).await;
    assert_eq!(r.status.as_u16(), 404, "{}", r.body);
    assert_eq!(r.code(), "NOT_FOUND");
    assert_request_id(&r);
}
