//! The swipe-file search graph on two API nodes sharing one PostgreSQL database (issue 25):
//! each node builds its own graph on its own disk, and after every kind of change, made on
//! one node (archive, restore, subscription toggles) or in SQL as the applier and operators
//! make them (a finished ingest, a changed vector, a class change, a deleted design), the
//! other node's very next search answers what SQL says.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::{Org, TestServer};

const DIM: usize = 64;

/// xorshift64*: deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }
    fn unit(&mut self) -> Vec<f32> {
        let v: Vec<f32> = (0..DIM).map(|_| self.next()).collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }
}

async fn exec(node: &TestServer, sql: &str, binds: &[&str]) {
    let mut tx = node.db.begin_write().await.unwrap();
    let mut q = adforge_api::store::query(sql);
    for b in binds {
        q = q.bind(*b);
    }
    q.execute(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
}

/// A ready design of `org` (own) or `source` (managed) with `vector`, as the applier
/// leaves a finished ingest.
async fn design(
    node: &TestServer,
    id: &str,
    org: Option<&str>,
    source: Option<&str>,
    vector: &[f32],
) {
    let mut tx = node.db.begin_write().await.unwrap();
    adforge_api::store::query(
        "INSERT INTO swipe_files (id, org_id, data_source_id, source, blob_key, status, aspect_ratio, industry, created_at, updated_at) \
         VALUES (?, ?, ?, 'upload', 'x', 'ready', '1:1', 'food_beverages_tobacco', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
    )
    .bind(id)
    .bind(org)
    .bind(source)
    .execute(&mut *tx)
    .await
    .unwrap();
    adforge_api::store::query(
        "INSERT INTO swipe_file_vectors (swipe_file_id, kind, model_id, dim, vector) VALUES (?, 'image', 'bench', ?, ?)",
    )
    .bind(id)
    .bind(DIM as i64)
    .bind(adforge_api::swipe::vectors::encode(vector))
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
}

/// The ids a node answers for a search by example of `like` (and its first similarity).
async fn like(node: &TestServer, org: &Org, like: &str, extra: Value) -> (Vec<String>, f64) {
    let mut body = json!({"swipe_file_id": like, "limit": 10});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let r = node
        .post(org, "/v1/swipe-files/search", body)
        .await
        .expect(200, None);
    let hits = r.body["data"].as_array().unwrap();
    (
        hits.iter()
            .map(|h| h["id"].as_str().unwrap().to_string())
            .collect(),
        hits.first()
            .and_then(|h| h["similarity"].as_f64())
            .unwrap_or(-2.0),
    )
}

fn graph_built(data_dir: &Path) -> bool {
    data_dir.join("swipe-index/image/CURRENT").exists()
}

#[tokio::test]
async fn two_api_nodes_answer_what_sql_says_after_every_kind_of_change() {
    let url = crate::postgres::shared().create_database();
    let setup = |a: &mut adforge::cli::ServeArgs| {
        a.db.database_url = Some(url.clone());
        a.workers = 0;
        a.default_collection = Some("/nonexistent-default-collection".into());
        // A graph from the first design on, and every search with a candidate walks it.
        a.swipe_index.swipe_index_build_at = 1;
        a.swipe_index.swipe_index_exact_below = 0;
        a.swipe_index.swipe_index_shortlist_below = 0;
        a.swipe_index.swipe_index_rebuild_after = 1_000_000;
        a.swipe_index.swipe_index_ef = 64;
    };
    let n1 = TestServer::start_with(setup).await;
    let n2 = TestServer::start_with(setup).await;
    let org = n1.org("two nodes").await;
    let source = adforge_api::resources::swipe_files::sources::create(&n1.db, "shared", true)
        .await
        .unwrap();
    let mut rng = Rng(0x2525_2525_2525_2525);
    let centres: Vec<Vec<f32>> = (0..12).map(|_| rng.unit()).collect();
    for i in 0..600 {
        let c = &centres[i % centres.len()];
        let noise = rng.unit();
        let v: Vec<f32> = c.iter().zip(&noise).map(|(a, b)| a + 0.7 * b).collect();
        let (o, s) = if i % 2 == 0 {
            (Some(org.id.as_str()), None)
        } else {
            (None, Some(source.as_str()))
        };
        design(&n1, &format!("sf_two{i:04}"), o, s, &v).await;
    }
    let query_vector = rng.unit();
    design(&n1, "sf_query", Some(&org.id), None, &query_vector).await;

    // Each node builds its own graph in the background after its first search.
    for node in [&n1, &n2] {
        let mut built = false;
        for _ in 0..400 {
            like(node, &org, "sf_query", json!({})).await;
            if graph_built(&node.data_dir) {
                built = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert!(built, "the node built its graph");
    }
    let both = [&n1, &n2];

    // A finished ingest (the applier's writes): a duplicate of the query is first on both.
    design(&n1, "sf_dup_own", Some(&org.id), None, &query_vector).await;
    for node in both {
        let (ids, top) = like(node, &org, "sf_query", json!({})).await;
        assert_eq!(
            ids.first().map(String::as_str),
            Some("sf_dup_own"),
            "{ids:?}"
        );
        assert!(top > 0.99, "{top}");
    }

    // Archive on node 1 → gone on node 2; restore on node 1 → back on node 2.
    n1.delete(&org, "/v1/swipe-files/sf_dup_own")
        .await
        .expect(200, None);
    for node in both {
        let (ids, _) = like(node, &org, "sf_query", json!({})).await;
        assert!(!ids.contains(&"sf_dup_own".to_string()), "{ids:?}");
    }
    n1.post(&org, "/v1/swipe-files/sf_dup_own/restore", json!({}))
        .await
        .expect(200, None);
    for node in both {
        let (ids, _) = like(node, &org, "sf_query", json!({})).await;
        assert_eq!(
            ids.first().map(String::as_str),
            Some("sf_dup_own"),
            "{ids:?}"
        );
    }

    // A managed duplicate; the subscription turned off on node 2 hides it on node 1, and
    // on again shows it.
    design(&n1, "sf_dup_managed", None, Some(&source), &query_vector).await;
    for node in both {
        let (ids, _) = like(node, &org, "sf_query", json!({})).await;
        assert!(ids[..2].contains(&"sf_dup_managed".to_string()), "{ids:?}");
    }
    let path = format!("/v1/swipe-files/data-sources/{source}/subscription");
    crate::support::send(
        n2.request(reqwest::Method::PUT, &path)
            .header("x-api-key", &org.key)
            .json(&json!({"active": false})),
    )
    .await
    .expect(200, None);
    for node in both {
        let (ids, _) = like(node, &org, "sf_query", json!({})).await;
        assert!(!ids.contains(&"sf_dup_managed".to_string()), "{ids:?}");
        assert!(
            ids.iter().all(|id| {
                let n: usize = id.trim_start_matches("sf_two").parse().unwrap_or(0);
                !id.starts_with("sf_two") || n.is_multiple_of(2)
            }),
            "only own designs: {ids:?}"
        );
    }
    crate::support::send(
        n2.request(reqwest::Method::PUT, &path)
            .header("x-api-key", &org.key)
            .json(&json!({"active": true})),
    )
    .await
    .expect(200, None);
    for node in both {
        let (ids, _) = like(node, &org, "sf_query", json!({})).await;
        assert!(ids[..2].contains(&"sf_dup_managed".to_string()), "{ids:?}");
    }

    // A class change: the industry filter follows it on both nodes.
    exec(
        &n1,
        "UPDATE swipe_files SET industry = 'apparel_accessories' WHERE id = 'sf_dup_own'",
        &[],
    )
    .await;
    for node in both {
        let (ids, _) = like(
            node,
            &org,
            "sf_query",
            json!({"industry": "food_beverages_tobacco"}),
        )
        .await;
        assert!(!ids.contains(&"sf_dup_own".to_string()), "{ids:?}");
        let (ids, _) = like(
            node,
            &org,
            "sf_query",
            json!({"industry": "apparel_accessories"}),
        )
        .await;
        assert_eq!(
            ids.first().map(String::as_str),
            Some("sf_dup_own"),
            "{ids:?}"
        );
    }

    // A changed vector: a far design takes the query's vector and comes first.
    exec(
        &n1,
        "UPDATE swipe_file_vectors SET vector = (SELECT vector FROM swipe_file_vectors WHERE swipe_file_id = 'sf_query') WHERE swipe_file_id = 'sf_two0100'",
        &[],
    )
    .await;
    for node in both {
        let (ids, _) = like(node, &org, "sf_query", json!({})).await;
        assert!(ids[..3].contains(&"sf_two0100".to_string()), "{ids:?}");
    }

    // A deleted design (an operator's SQL): gone at once on both.
    exec(
        &n1,
        "DELETE FROM swipe_file_vectors WHERE swipe_file_id = 'sf_dup_managed'",
        &[],
    )
    .await;
    exec(
        &n1,
        "DELETE FROM swipe_files WHERE id = 'sf_dup_managed'",
        &[],
    )
    .await;
    for node in both {
        let (ids, _) = like(node, &org, "sf_query", json!({})).await;
        assert!(!ids.contains(&"sf_dup_managed".to_string()), "{ids:?}");
        assert!(ids[..2].contains(&"sf_dup_own".to_string()), "{ids:?}");
    }
}
