//! Unit tests of the parent module.

use super::*;

#[test]
fn dot_matches_the_plain_sum() {
    let a: Vec<i8> = (0..1283).map(|i| ((i * 37 % 255) - 127) as i8).collect();
    let b: Vec<i8> = (0..1283).map(|i| ((i * 91 % 255) - 127) as i8).collect();
    let plain: i32 = a
        .iter()
        .zip(&b)
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    assert_eq!(dot(&a, &b), plain);
    let max = vec![127i8; 1280];
    assert_eq!(dot(&max, &max), 127 * 127 * 1280);
}

use crate::store::list::bind_as;
use crate::swipe::filter::{and_all, visible};
use adforge_worker::swipe::taxonomy::{AD_FORMATS, ASPECT_RATIOS, INDUSTRIES};

/// xorshift64*: deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() >> 33) as usize % n
    }
    fn unit(&mut self, dim: usize) -> Vec<f32> {
        let v: Vec<f32> = (0..dim)
            .map(|_| (self.next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }
}

/// The straightforward exact scorer the index replaces: the filtered candidates
/// selected in SQL, each scored with `Query::score`, all sorted.
async fn reference(db: &Db, s: &Search<'_>) -> Vec<(f32, String)> {
    let mut conds = vec![visible(s.org_id)];
    conds.extend(s.filter.conditions());
    let (where_sql, binds) = and_all(&conds);
    let ids: Vec<(String,)> = bind_as(
        crate::store::query_as(&format!(
            "SELECT t.id FROM swipe_files AS t WHERE {where_sql}"
        )),
        &binds,
    )
    .fetch_all(&db.read)
    .await
    .unwrap();
    let mut out = Vec::new();
    for (id,) in ids {
        if s.exclude == Some(id.as_str()) {
            continue;
        }
        let v: Option<(String, Vec<u8>)> = crate::store::query_as(
            "SELECT model_id, vector FROM swipe_file_vectors WHERE swipe_file_id = ? AND kind = ?",
        )
        .bind(&id)
        .bind(s.kind)
        .fetch_optional(&db.read)
        .await
        .unwrap();
        let Some(score) = v
            .and_then(|(m, b)| vectors::decode(&m, &b))
            .and_then(|q| s.query.score(&q))
        else {
            continue;
        };
        let score = (score * 10_000.0).round() / 10_000.0;
        if score >= s.min {
            out.push((score, id));
        }
    }
    out.sort_by(|a, b| {
        b.0.partial_cmp(&a.0)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.1.cmp(&b.1))
    });
    out.truncate(s.limit);
    out
}

async fn exec(db: &Db, sql: &str, binds: &[&str]) {
    let mut tx = db.begin_write().await.unwrap();
    let mut q = crate::store::query(sql);
    for b in binds {
        q = q.bind(*b);
    }
    q.execute(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
}

/// Inserts `n` designs with random owners, states, classes and vectors (some
/// duplicated, some of another model) and returns their ids.
async fn insert_designs(
    db: &Db,
    rng: &mut Rng,
    owners: &[(Option<&str>, Option<&str>)],
    n: usize,
    tag: &str,
) -> Vec<String> {
    let mut tx = db.begin_write().await.unwrap();
    let mut ids = Vec::new();
    let mut last: Vec<f32> = rng.unit(24);
    for i in 0..n {
        let id = format!("sf_{tag}{:05}", rng.below(100_000) * 1000 + i);
        let (org, source) = owners[rng.below(owners.len())];
        let status = ["ready", "ready", "ready", "processing", "failed"][rng.below(5)];
        let pick = |r: &mut Rng, values: &[&str]| -> Option<String> {
            let k = r.below(values.len() + 1);
            values.get(k).map(|v| v.to_string())
        };
        let industry = pick(rng, &INDUSTRIES.map(|(k, _)| k)[..4]);
        let ad_format = pick(rng, &AD_FORMATS.map(|(k, _)| k)[..3]);
        let aspect = pick(rng, &ASPECT_RATIOS.map(|(k, _)| k)[..3]);
        let archived = (org.is_some() && rng.below(6) == 0).then_some("2026-01-01T00:00:00.000Z");
        crate::store::query(
            "INSERT INTO swipe_files (id, org_id, data_source_id, source, blob_key, status, aspect_ratio, industry, ad_format, archived_at, created_at, updated_at) \
             VALUES (?, ?, ?, 'upload', 'x', ?, ?, ?, ?, ?, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
        )
        .bind(&id).bind(org).bind(source).bind(status).bind(aspect).bind(industry).bind(ad_format).bind(archived)
        .execute(&mut *tx)
        .await
        .unwrap();
        if status == "ready" {
            // Every seventh repeats the previous vector: equal scores, ranked by id.
            let v = if i % 7 == 0 {
                last.clone()
            } else {
                rng.unit(24)
            };
            last = v.clone();
            let model = if rng.below(10) == 0 { "other" } else { "m" };
            crate::store::query("INSERT INTO swipe_file_vectors (swipe_file_id, kind, model_id, dim, vector) VALUES (?, 'text', ?, 24, ?)")
                .bind(&id).bind(model).bind(vectors::encode(&v))
                .execute(&mut *tx)
                .await
                .unwrap();
        }
        ids.push(id);
    }
    tx.commit().await.unwrap();
    ids
}

fn filters(pack: &str, sources: &[String]) -> Vec<SwipeFilter> {
    let ready = SwipeFilter {
        include_own: true,
        status: Some("ready".into()),
        ..SwipeFilter::default()
    };
    vec![
        ready.clone(),
        SwipeFilter {
            include_own: false,
            ..ready.clone()
        },
        SwipeFilter {
            data_source_ids: Some(vec![]),
            ..ready.clone()
        },
        SwipeFilter {
            data_source_ids: Some(vec![sources[1].clone()]),
            ..ready.clone()
        },
        SwipeFilter {
            industry: vec![INDUSTRIES[0].0.into(), INDUSTRIES[2].0.into()],
            ..ready.clone()
        },
        SwipeFilter {
            ad_format: vec![AD_FORMATS[1].0.into()],
            aspect_ratio: vec![ASPECT_RATIOS[0].0.into(), ASPECT_RATIOS[2].0.into()],
            ..ready.clone()
        },
        SwipeFilter {
            aspect_ratio: vec!["no-such-ratio".into()],
            ..ready.clone()
        },
        SwipeFilter {
            design_pack_id: Some(pack.into()),
            ..ready.clone()
        },
        SwipeFilter {
            archived: true,
            ..ready.clone()
        },
        SwipeFilter {
            status: None,
            include_own: true,
            ..SwipeFilter::default()
        },
    ]
}

async fn compare_all(
    db: &Db,
    index: &SearchIndex,
    rng: &mut Rng,
    orgs: &[String],
    pack: &str,
    sources: &[String],
    exclude: &str,
) {
    let mut compared = 0;
    for org in orgs {
        for filter in filters(pack, sources) {
            for (min, limit) in [(-1.0, 20), (0.2, 100), (-1.0, 1), (-1.0, 500)] {
                let query = Query::new("m", &rng.unit(24));
                let s = Search {
                    org_id: org,
                    filter: &filter,
                    kind: vectors::TEXT,
                    query: &query,
                    exclude: (limit == 1).then_some(exclude),
                    min,
                    limit,
                };
                let got = index.search(db, &s).await.unwrap();
                let want = reference(db, &s).await;
                assert_eq!(
                    got, want,
                    "org {org}, filter {filter:?}, min {min}, limit {limit}"
                );
                compared += got.len();
            }
        }
    }
    assert!(
        compared > 500,
        "the comparison must cover real hits, got {compared}"
    );
}

#[tokio::test]
async fn index_ranks_exactly_like_the_straightforward_scorer_and_stays_fresh() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).await.unwrap();
    let a = crate::orgs::create_org(&db, "a").await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let b = crate::orgs::create_org(&db, "b").await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let s1 = crate::swipe::sources::create(&db, "default", true)
        .await
        .unwrap();
    let s2 = crate::swipe::sources::create(&db, "extra", false)
        .await
        .unwrap();
    exec(&db, "INSERT INTO data_source_subscriptions (org_id, source_id, active, updated_at) VALUES (?, ?, 1, 'x')", &[&a, &s2]).await;
    let owners = [
        (Some(a.as_str()), None),
        (Some(b.as_str()), None),
        (None, Some(s1.as_str())),
        (None, Some(s2.as_str())),
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let ids = insert_designs(&db, &mut rng, &owners, 400, "a").await;
    exec(&db, "INSERT INTO design_packs (id, org_id, title, created_at, updated_at) VALUES ('dp_1', ?, 'p', 'x', 'x')", &[&a]).await;
    for id in ids.iter().step_by(5) {
        exec(&db, "INSERT INTO design_pack_items (pack_id, swipe_file_id, added_at) VALUES ('dp_1', ?, 'x')", &[id]).await;
    }
    let orgs = [a.clone(), b.clone()];
    let sources = [s1.clone(), s2.clone()];
    let index = SearchIndex::default();
    compare_all(&db, &index, &mut rng, &orgs, "dp_1", &sources, &ids[3]).await;

    // Changes after the first load reach the same index: archive, restore, finished
    // ingests, new designs, a subscription toggle, a deleted design.
    exec(
        &db,
        "UPDATE swipe_files SET archived_at = 'x' WHERE org_id = ? AND seq % 3 = 0",
        &[&a],
    )
    .await;
    exec(
        &db,
        "UPDATE swipe_files SET archived_at = NULL WHERE org_id = ? AND seq % 3 = 1",
        &[&a],
    )
    .await;
    exec(
        &db,
        "UPDATE swipe_files SET industry = NULL, ad_format = ? WHERE seq % 4 = 0",
        &[AD_FORMATS[1].0],
    )
    .await;
    let finished: Vec<&String> = ids.iter().filter(|_| rng.below(3) == 0).collect();
    for id in finished {
        exec(
            &db,
            "UPDATE swipe_files SET status = 'ready' WHERE id = ? AND status = 'processing'",
            &[id],
        )
        .await;
        let v = vectors::encode(&rng.unit(24));
        let mut tx = db.begin_write().await.unwrap();
        crate::store::query("INSERT INTO swipe_file_vectors (swipe_file_id, kind, model_id, dim, vector) VALUES (?, 'text', 'm', 24, ?) ON CONFLICT DO NOTHING")
            .bind(id).bind(v).execute(&mut *tx).await.unwrap();
        tx.commit().await.unwrap();
    }
    insert_designs(&db, &mut rng, &owners, 150, "b").await;
    exec(&db, "INSERT INTO data_source_subscriptions (org_id, source_id, active, updated_at) VALUES (?, ?, 0, 'x')", &[&a, &s1]).await;
    exec(
        &db,
        "DELETE FROM design_pack_items WHERE swipe_file_id = ?",
        &[&ids[10]],
    )
    .await;
    exec(
        &db,
        "DELETE FROM swipe_file_vectors WHERE swipe_file_id = ?",
        &[&ids[10]],
    )
    .await;
    exec(&db, "DELETE FROM swipe_files WHERE id = ?", &[&ids[10]]).await;
    let deleted: i64 = crate::store::query_scalar("SELECT COUNT(*) FROM swipe_file_deletions")
        .fetch_one(&db.read)
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    compare_all(&db, &index, &mut rng, &orgs, "dp_1", &sources, &ids[3]).await;
    // A fresh index (a second API node) agrees with the refreshed one, also when every
    // scan is split across threads.
    let split = SearchIndex {
        threads: Some(3),
        ..SearchIndex::default()
    };
    compare_all(&db, &split, &mut rng, &orgs, "dp_1", &sources, &ids[3]).await;
    compare_all(
        &db,
        &SearchIndex::default(),
        &mut rng,
        &orgs,
        "dp_1",
        &sources,
        &ids[3],
    )
    .await;
}
