//! Bulk imports across worker processes (issue 25): `adforge admin data-source import
//! --manifest` stages files and URLs through the same queue every `adforge worker` reads; a
//! worker SIGKILLed mid-import loses nothing (its job is taken over), nothing is staged or
//! ingested twice, failures are listed with their reasons, and running the same import
//! again skips what is done.
//!
//! No assertion here is about time: every wait is a generous polling deadline.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use crate::Operator;
use crate::cluster::Cluster;
use crate::flows::{After, Api, RefServer, SETTLE_DEADLINE};

fn status(c: &Cluster, import: &str) -> Value {
    c.admin(&["data-source", "import-status", "--import", import])
}

#[tokio::test]
async fn an_import_survives_a_killed_worker_and_resumes_without_doing_anything_twice() {
    let mut c = Cluster::start(2).await;
    let org = c.org("Importer", "1.00");
    let fetched = RefServer::start(After::Stall(Duration::from_millis(0))).await;
    let assets = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/swipe-default");
    let mut files: Vec<String> = std::fs::read_dir(assets)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path().display().to_string())
        .filter(|p| p.ends_with(".png"))
        .collect();
    files.sort();
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("designs.jsonl");
    let mut lines: Vec<String> = files[..8]
        .iter()
        .map(|p| json!({"path": p}).to_string())
        .collect();
    lines[0] = json!({"path": files[0], "industry": "apparel_accessories", "caption": "A manifest caption about red boots"}).to_string();
    lines.push(json!({"url": fetched.url}).to_string());
    lines.push(json!({"path": files[1], "industry": "no_such_industry"}).to_string());
    lines.push(json!({"path": "missing.png"}).to_string());
    std::fs::write(&manifest, lines.join("\n")).unwrap();
    let src = c.admin(&["data-source", "create", "--name", "Bulk", "--default"]);
    let src_id = src["id"].as_str().unwrap().to_string();
    let args = [
        "data-source",
        "import",
        "--id",
        &src_id,
        "--manifest",
        manifest.to_str().unwrap(),
        "--allow-private-urls",
    ];
    let first = c.admin(&args);
    let import = first["import_id"].as_str().unwrap().to_string();
    assert_eq!(first["staged_now"], 9, "{first}");
    let rejected = first["rejected"].as_array().unwrap();
    assert_eq!(rejected.len(), 2, "{first}");
    assert!(rejected.iter().any(|r| {
        r["error"]
            .as_str()
            .unwrap()
            .contains("industry `no_such_industry`")
    }));
    assert!(
        rejected
            .iter()
            .any(|r| r["error"].as_str().unwrap().contains("cannot read"))
    );

    // SIGKILL a worker once the ingest is under way; another takes its place.
    let deadline = Instant::now() + SETTLE_DEADLINE;
    while status(&c, &import)["progress"]["ready"]
        .as_i64()
        .unwrap_or(0)
        < 1
    {
        assert!(
            Instant::now() < deadline,
            "nothing was ingested\n{}",
            c.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    c.kill_worker(0);
    c.add_worker();
    let done = loop {
        let s = status(&c, &import);
        let p = &s["progress"];
        if p["pending"] == 0 && p["queued"] == 0 {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "the import did not finish: {s}\n{}",
            c.logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(done["progress"]["ready"], 9, "{done}");
    assert_eq!(done["progress"]["failed"], 2, "{done}");

    // Exactly one design per staged item, every one ready, none twice.
    let sources = c.admin(&["data-source", "list"]);
    let bulk = sources["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == src_id.as_str())
        .unwrap();
    assert_eq!(bulk["designs"], 9, "{sources}");
    let listed = c
        .call(
            Method::GET,
            "/v1/swipe-files?include_own=false&status=ready&limit=100",
            &org,
            None,
        )
        .await
        .expect(200, None);
    assert_eq!(listed.body["total_count"], 9, "{}", listed.body);
    let designs = listed.body["data"].as_array().unwrap();
    // The manifest's words win over the classifier's (the caption is what text search
    // embeds); the URL's design has its stored original.
    assert!(
        designs
            .iter()
            .any(|d| d["industry"] == "apparel_accessories")
    );
    let hits = c
        .call(
            Method::POST,
            "/v1/swipe-files/search",
            &org,
            Some(json!({"query": "A manifest caption about red boots", "include_own": false})),
        )
        .await
        .expect(200, None);
    assert_eq!(
        hits.body["data"][0]["industry"], "apparel_accessories",
        "{}",
        hits.body
    );
    assert!(
        designs
            .iter()
            .all(|d| d["image_url"].as_str().unwrap_or("").contains("/original."))
    );

    // The same command again: nothing staged twice, the two failures tried (and failing)
    // again, still nine designs.
    let again = c.admin(&args);
    assert_eq!(again["import_id"], import.as_str());
    assert_eq!(again["staged_now"], 0, "{again}");
    assert_eq!(again["skipped"], 9, "{again}");
    assert_eq!(again["rejected"].as_array().unwrap().len(), 2, "{again}");
    let sources = c.admin(&["data-source", "list"]);
    assert!(
        sources["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == src_id.as_str() && s["designs"] == 9)
    );
}
