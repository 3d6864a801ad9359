//! Unit tests of the parent module. Longer than 700 lines because it is a file of tests,
//! one case per behaviour of the index, each setting up its own designs.

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

#[expect(
    clippy::too_many_arguments,
    reason = "a test helper: every argument is one part of the fixture it compares over"
)]
async fn compare_all(
    db: &Db,
    index: &SearchIndex,
    rng: &mut Rng,
    orgs: &[String],
    pack: &str,
    sources: &[String],
    exclude: &str,
    dim: usize,
) {
    let mut compared = 0;
    for org in orgs {
        for filter in filters(pack, sources) {
            for (min, limit) in [(-1.0, 20), (0.2, 100), (-1.0, 1), (-1.0, 500)] {
                let query = Query::new("m", &rng.unit(dim));
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
    let s1 = crate::resources::swipe_files::sources::create(&db, "default", true)
        .await
        .unwrap();
    let s2 = crate::resources::swipe_files::sources::create(&db, "extra", false)
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
    compare_all(&db, &index, &mut rng, &orgs, "dp_1", &sources, &ids[3], 24).await;

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
    compare_all(&db, &index, &mut rng, &orgs, "dp_1", &sources, &ids[3], 24).await;
    // A fresh index (a second API node) agrees with the refreshed one, also when every
    // scan is split across threads.
    let split = SearchIndex {
        threads: Some(3),
        ..SearchIndex::default()
    };
    compare_all(&db, &split, &mut rng, &orgs, "dp_1", &sources, &ids[3], 24).await;
    compare_all(
        &db,
        &SearchIndex::default(),
        &mut rng,
        &orgs,
        "dp_1",
        &sources,
        &ids[3],
        24,
    )
    .await;
}

// ---------------------------------------------------------------------------------------
// The approximate path (issue 25): a graph on disk, the planner, restarts.
// ---------------------------------------------------------------------------------------

/// `n` designs of every owner in `owners`, ready, with `dim`-d vectors drawn from a mixture
/// of `clusters` clusters (not uniform noise: neighbours are meaningful, as in real
/// collections), classes spread over a few values.
async fn insert_clustered(
    db: &Db,
    rng: &mut Rng,
    owners: &[(Option<&str>, Option<&str>)],
    n: usize,
    dim: usize,
    tag: &str,
    relu: bool,
) -> Vec<String> {
    let centres: Vec<Vec<f32>> = (0..40).map(|_| rng.unit(dim)).collect();
    let mut tx = db.begin_write().await.unwrap();
    let mut ids = Vec::new();
    for i in 0..n {
        let id = format!("sf_{tag}{i:06}");
        let (org, source) = owners[rng.below(owners.len())];
        let industry = INDUSTRIES[rng.below(4)].0;
        let ad_format = AD_FORMATS[rng.below(3)].0;
        let aspect = ASPECT_RATIOS[rng.below(3)].0;
        crate::store::query(
            "INSERT INTO swipe_files (id, org_id, data_source_id, source, blob_key, status, aspect_ratio, industry, ad_format, created_at, updated_at) \
             VALUES (?, ?, ?, 'upload', 'x', 'ready', ?, ?, ?, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
        )
        .bind(&id).bind(org).bind(source).bind(aspect).bind(industry).bind(ad_format)
        .execute(&mut *tx)
        .await
        .unwrap();
        let c = &centres[rng.below(centres.len())];
        let noise = rng.unit(dim);
        let mut v: Vec<f32> = c.iter().zip(&noise).map(|(a, b)| a + 0.8 * b).collect();
        if relu {
            // As pooled ReLU features: every component >= 0, most of them > 0.
            v.iter_mut().for_each(|x| *x = (*x + 0.15).max(0.0));
        }
        crate::store::query("INSERT INTO swipe_file_vectors (swipe_file_id, kind, model_id, dim, vector) VALUES (?, 'text', 'm', ?, ?)")
            .bind(&id).bind(dim as i64).bind(vectors::encode(&v))
            .execute(&mut *tx)
            .await
            .unwrap();
        ids.push(id);
    }
    tx.commit().await.unwrap();
    ids
}

/// A database with two organisations, two sources (the second subscribed by `a` only), a
/// pack of a's, and `n` clustered designs.
struct Fixture {
    _dir: tempfile::TempDir,
    db: Db,
    orgs: [String; 2],
    sources: [String; 2],
    ids: Vec<String>,
    rng: Rng,
}

impl Fixture {
    async fn new(n: usize, dim: usize) -> Self {
        Self::with(n, dim, false).await
    }

    /// `relu`: every vector non-negative, as EfficientNet's pooled image features.
    async fn with(n: usize, dim: usize, relu: bool) -> Self {
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
        let s1 = crate::resources::swipe_files::sources::create(&db, "default", true)
            .await
            .unwrap();
        let s2 = crate::resources::swipe_files::sources::create(&db, "extra", false)
            .await
            .unwrap();
        exec(&db, "INSERT INTO data_source_subscriptions (org_id, source_id, active, updated_at) VALUES (?, ?, 1, 'x')", &[&a, &s2]).await;
        let owners = [
            (Some(a.as_str()), None),
            (Some(b.as_str()), None),
            (None, Some(s1.as_str())),
            (None, Some(s2.as_str())),
        ];
        let mut rng = Rng(0x51A7_E5EE_D000_0025);
        let ids = insert_clustered(&db, &mut rng, &owners, n, dim, "c", relu).await;
        exec(&db, "INSERT INTO design_packs (id, org_id, title, created_at, updated_at) VALUES ('dp_1', ?, 'p', 'x', 'x')", &[&a]).await;
        for id in ids.iter().step_by(7) {
            exec(&db, "INSERT INTO design_pack_items (pack_id, swipe_file_id, added_at) VALUES ('dp_1', ?, 'x')", &[id]).await;
        }
        Self {
            _dir: dir,
            db,
            orgs: [a, b],
            sources: [s1, s2],
            ids,
            rng,
        }
    }

    fn graph(&self, root: &std::path::Path, exact_below: usize) -> SearchIndex {
        SearchIndex::new(graph_config(root, exact_below))
    }
}

/// A graph in `root` that is never built or rebuilt in the background; `exact_below` 0 also
/// turns the shortlist off, so every search with a candidate walks the graph.
fn graph_config(root: &std::path::Path, exact_below: usize) -> IndexConfig {
    IndexConfig {
        dir: Some(root.to_path_buf()),
        exact_below,
        shortlist_below: if exact_below == 0 {
            0
        } else {
            DEFAULT_SHORTLIST_BELOW
        },
        build_at: usize::MAX,
        rebuild_after: usize::MAX,
        ..IndexConfig::default()
    }
}

/// [`graph_config`] with nothing scored exactly: filters leaving fewer than
/// `shortlist_below` candidates take the shortlist of 300, the rest walk the graph.
fn shortlist_config(root: &std::path::Path, shortlist_below: usize) -> IndexConfig {
    IndexConfig {
        shortlist_below,
        shortlist: 300,
        ..graph_config(root, 0)
    }
}

/// Asserts recall@20 ≥ `bound` in every row of [`recall_by_filter`]; returns how many of
/// its searches took `path`.
fn check_rows(rows: &[(String, f64, Vec<Path>)], bound: f64, path: Path) -> usize {
    for (filter, recall, _) in rows {
        assert!(
            *recall >= bound,
            "{path:?}: recall@20 {recall:.3} under {filter}"
        );
    }
    rows.iter()
        .flat_map(|r| &r.2)
        .filter(|p| **p == path)
        .count()
}

/// Recall@`limit` of `index` against the exact index over every filter kind, org and
/// `queries` queries each (by example: a stored design's vector, itself excluded), with the
/// paths the searches took. Also checks that every hit's similarity is the exact one.
async fn recall_by_filter(
    f: &mut Fixture,
    index: &SearchIndex,
    queries: usize,
    dim: usize,
) -> Vec<(String, f64, Vec<Path>)> {
    let exact = SearchIndex::default();
    let mut out = Vec::new();
    for filter in filters("dp_1", &f.sources) {
        let (mut found, mut wanted, mut paths) = (0usize, 0usize, Vec::new());
        for org in f.orgs.clone() {
            for q in 0..queries {
                let like = f.ids[f.rng.below(f.ids.len())].clone();
                let v: Option<(String, Vec<u8>)> = crate::store::query_as(
                    "SELECT model_id, vector FROM swipe_file_vectors WHERE swipe_file_id = ?",
                )
                .bind(&like)
                .fetch_optional(&f.db.read)
                .await
                .unwrap();
                let query = match v.and_then(|(m, b)| vectors::decode(&m, &b)) {
                    Some(stored) => {
                        let dense: Vec<f32> = stored
                            .values
                            .iter()
                            .map(|x| f32::from(*x) * stored.scale)
                            .collect();
                        Query::new("m", &dense)
                    }
                    None => Query::new("m", &f.rng.unit(dim)),
                };
                let min = if q % 4 == 3 { 0.3 } else { -1.0 };
                let s = Search {
                    org_id: &org,
                    filter: &filter,
                    kind: vectors::TEXT,
                    query: &query,
                    exclude: Some(&like),
                    min,
                    limit: 20,
                };
                let (got, explain) = index.search_explained(&f.db, &s).await.unwrap();
                let want = exact.search(&f.db, &s).await.unwrap();
                let want_score: std::collections::HashMap<&str, f32> =
                    want.iter().map(|(s, id)| (id.as_str(), *s)).collect();
                for (score, id) in &got {
                    if let Some(w) = want_score.get(id.as_str()) {
                        assert_eq!(score, w, "{id}: the similarity is the exact one");
                    } else {
                        assert!(
                            want.len() == 20 && *score <= want[19].0,
                            "{id} ({score}) is not in the exact answer and ranks above its last: {want:?}"
                        );
                    }
                    assert!(*score >= min);
                }
                found += got
                    .iter()
                    .filter(|h| want_score.contains_key(h.1.as_str()))
                    .count();
                wanted += want.len();
                paths.push(explain.path);
            }
        }
        let recall = if wanted == 0 {
            1.0
        } else {
            found as f64 / wanted as f64
        };
        out.push((format!("{filter:?}"), recall, paths));
    }
    out
}

#[tokio::test]
async fn the_graph_finds_what_the_exact_scorer_finds_under_every_filter_kind() {
    let mut f = Fixture::new(4000, 96).await;
    let root = tempfile::tempdir().unwrap();
    // exact_below 0: every search with a candidate walks the graph.
    let index = f.graph(root.path(), 0);
    let generation = index.build_now(&f.db, vectors::TEXT).await.unwrap();
    assert!(generation.is_some(), "a generation was built");
    let status = index.status(vectors::TEXT);
    assert_eq!(status.in_graph, 4000);
    assert_eq!(status.in_memory, 0);
    let rows = recall_by_filter(&mut f, &index, 12, 96).await;
    let walked = check_rows(&rows, 0.98, Path::Approximate);
    assert!(
        walked >= rows.len() * 12,
        "the graph was walked ({walked} searches)"
    );
}

#[tokio::test]
async fn the_planner_scores_small_sets_exactly_shortlists_middling_ones_and_walks_large_ones() {
    let mut f = Fixture::new(3000, 64).await;
    let root = tempfile::tempdir().unwrap();
    let index = SearchIndex::new(IndexConfig {
        exact_below: 150,
        shortlist_below: 1000,
        shortlist: 60,
        ..graph_config(root.path(), 150)
    });
    index.build_now(&f.db, vectors::TEXT).await.unwrap();
    let query = Query::new("m", &f.rng.unit(64));
    let org = f.orgs[0].clone();
    let ready = SwipeFilter {
        include_own: true,
        status: Some("ready".into()),
        ..SwipeFilter::default()
    };
    // The pack holds 3000 / 7 ≈ 429 designs, of which a sees fewer than 150 once narrowed
    // to one industry and one format.
    let pack = SwipeFilter {
        design_pack_id: Some("dp_1".into()),
        ..ready.clone()
    };
    let narrow = SwipeFilter {
        industry: vec![INDUSTRIES[0].0.into()],
        ..pack.clone()
    };
    let exact = SearchIndex::default();
    for (filter, want_path, counts) in [
        (&narrow, Path::ExactCandidates, 1..=150),
        (&pack, Path::Shortlist, 151..=1000),
        (&ready, Path::Approximate, 1001..=usize::MAX),
    ] {
        let s = Search {
            org_id: &org,
            filter,
            kind: vectors::TEXT,
            query: &query,
            exclude: None,
            min: -1.0,
            limit: 20,
        };
        let (got, explain) = index.search_explained(&f.db, &s).await.unwrap();
        assert_eq!(explain.path, want_path, "{explain:?}");
        assert!(counts.contains(&explain.candidates), "{explain:?}");
        if want_path == Path::ExactCandidates {
            // Scored exactly: the very answer of the exact scorer.
            assert_eq!(got, exact.search(&f.db, &s).await.unwrap());
        }
    }
}

#[tokio::test]
async fn a_shortlist_by_sign_codes_finds_what_the_exact_scorer_finds() {
    let mut f = Fixture::new(4000, 96).await;
    let root = tempfile::tempdir().unwrap();
    // Every search with a candidate ranks all of them by their codes and scores the best
    // 300 (of up to 4000) exactly: codes that ranked at random would find about 300/4000
    // of the answer.
    let index = SearchIndex::new(shortlist_config(root.path(), usize::MAX));
    index.build_now(&f.db, vectors::TEXT).await.unwrap();
    let rows = recall_by_filter(&mut f, &index, 12, 96).await;
    let shortlisted = check_rows(&rows, 0.98, Path::Shortlist);
    assert!(
        shortlisted >= rows.len() * 6,
        "shortlists were taken ({shortlisted})"
    );
}

#[tokio::test]
async fn codes_of_non_negative_vectors_still_rank() {
    // Pooled ReLU features have no negative component: signs about zero would give every
    // design nearly the same code. About the generation's median they split every
    // dimension, so both the walk and the shortlist keep their recall. The bound is 0.95,
    // not the 0.98 of the zero-mean fixture: these vectors crowd their similarities into a
    // narrow band (see the measured values below).
    let mut f = Fixture::with(4000, 256, true).await;
    let root = tempfile::tempdir().unwrap();
    for (shortlist_below, path) in [(0, Path::Approximate), (usize::MAX, Path::Shortlist)] {
        let index = SearchIndex::new(shortlist_config(root.path(), shortlist_below));
        index.build_now(&f.db, vectors::TEXT).await.unwrap();
        let rows = recall_by_filter(&mut f, &index, 12, 256).await;
        // Measured: 0.969 (walk) and 0.975 (shortlist) on the worst filter, >= 0.983 on
        // the others; with signs about zero the walk found 0.485 unfiltered.
        let taken = check_rows(&rows, 0.95, path);
        assert!(taken >= rows.len() * 6, "{path:?} taken {taken} times");
    }
}

#[tokio::test]
async fn a_generation_from_before_the_sign_codes_is_not_opened_but_rebuilt() {
    let f = Fixture::new(600, 64).await;
    let root = tempfile::tempdir().unwrap();
    let old = f
        .graph(root.path(), 0)
        .build_now(&f.db, vectors::TEXT)
        .await;
    let old = old.unwrap().expect("built");
    // What a generation of the int8 graph looked like: base.txt without the format line.
    let head = root.path().join(vectors::TEXT).join(&old).join("base.txt");
    let text = std::fs::read_to_string(&head).unwrap();
    let two: Vec<&str> = text.lines().take(2).collect();
    std::fs::write(&head, format!("{}\n", two.join("\n"))).unwrap();

    let index = SearchIndex::new(IndexConfig {
        build_at: 1,
        ..graph_config(root.path(), 0)
    });
    let query = Query::new("m", &[0.1; 64]);
    let filter = SwipeFilter::visible();
    let s = Search {
        org_id: &f.orgs[0],
        filter: &filter,
        kind: vectors::TEXT,
        query: &query,
        exclude: None,
        min: -1.0,
        limit: 20,
    };
    // Answered exactly from SQL meanwhile, then a new generation replaces the old one.
    let got = index.search(&f.db, &s).await.unwrap();
    assert_eq!(got, SearchIndex::default().search(&f.db, &s).await.unwrap());
    assert_eq!(
        index.status(vectors::TEXT).opened,
        0,
        "the old graph is refused"
    );
    for _ in 0..600 {
        if index.status(vectors::TEXT).builds == 1 && !index.status(vectors::TEXT).building {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let st = index.status(vectors::TEXT);
    assert_eq!(st.builds, 1, "{st:?}");
    assert!(st.generation.is_some_and(|g| g != old), "a new generation");
}

#[tokio::test]
async fn a_restart_opens_the_graph_on_disk_and_catches_up_without_rebuilding() {
    let mut f = Fixture::new(2500, 64).await;
    let root = tempfile::tempdir().unwrap();
    let first = f.graph(root.path(), 0);
    let generation = first.build_now(&f.db, vectors::TEXT).await.unwrap();
    let query = Query::new("m", &f.rng.unit(64));
    let filter = SwipeFilter::visible();
    let org = f.orgs[0].clone();
    let s = Search {
        org_id: &org,
        filter: &filter,
        kind: vectors::TEXT,
        query: &query,
        exclude: None,
        min: -1.0,
        limit: 20,
    };
    let before = first.search(&f.db, &s).await.unwrap();
    drop(first);

    // A new process: the same folder, nothing in memory.
    let second = f.graph(root.path(), 0);
    let (again, explain) = second.search_explained(&f.db, &s).await.unwrap();
    assert_eq!(again, before, "the reopened graph answers as before");
    assert_eq!(explain.path, Path::Approximate);
    assert_eq!(explain.generation, generation);
    let st = second.status(vectors::TEXT);
    assert_eq!((st.opened, st.builds, st.in_memory), (1, 0, 0), "{st:?}");

    // Changes made while it was down are caught up from SQL, exactly, without a rebuild:
    // a duplicate of the query's nearest design appears, an archived design disappears.
    let top = before[0].1.clone();
    exec(
        &f.db,
        "INSERT INTO swipe_files (id, org_id, source, blob_key, status, created_at, updated_at) VALUES ('sf_dup', ?, 'upload', 'x', 'ready', 'x', 'x')",
        &[&org],
    )
    .await;
    exec(&f.db, "INSERT INTO swipe_file_vectors (swipe_file_id, kind, model_id, dim, vector) SELECT 'sf_dup', kind, model_id, dim, vector FROM swipe_file_vectors WHERE swipe_file_id = ?", &[&top]).await;
    let second_best = before[1].1.clone();
    exec(
        &f.db,
        "UPDATE swipe_files SET archived_at = 'x' WHERE id = ?",
        &[&second_best],
    )
    .await;
    let third = f.graph(root.path(), 0);
    let after = third.search(&f.db, &s).await.unwrap();
    assert_eq!(third.status(vectors::TEXT).builds, 0);
    assert!(after.iter().any(|h| h.1 == "sf_dup"), "{after:?}");
    assert!(!after.iter().any(|h| h.1 == second_best), "{after:?}");
    assert_eq!(
        third.status(vectors::TEXT).in_memory,
        1,
        "only the new vector is held in memory"
    );
}

#[tokio::test]
async fn the_graph_stays_exact_after_every_kind_of_change_and_rebuilds_in_the_background() {
    let mut f = Fixture::new(2000, 48).await;
    let root = tempfile::tempdir().unwrap();
    // A huge exact_below: every answer must equal the exact scorer's, graph or not.
    let exactly = f.graph(root.path(), usize::MAX);
    exactly.build_now(&f.db, vectors::TEXT).await.unwrap();
    let orgs = f.orgs.clone();
    let sources = f.sources.clone();
    let ids = f.ids.clone();
    compare_all(
        &f.db, &exactly, &mut f.rng, &orgs, "dp_1", &sources, &ids[3], 48,
    )
    .await;
    let (a, s1) = (orgs[0].clone(), sources[0].clone());
    exec(
        &f.db,
        "UPDATE swipe_files SET archived_at = 'x' WHERE org_id = ? AND seq % 3 = 0",
        &[&a],
    )
    .await;
    exec(
        &f.db,
        "UPDATE swipe_files SET archived_at = NULL WHERE org_id = ? AND seq % 6 = 0",
        &[&a],
    )
    .await;
    exec(
        &f.db,
        "UPDATE swipe_files SET industry = NULL, ad_format = ? WHERE seq % 4 = 0",
        &[AD_FORMATS[1].0],
    )
    .await;
    exec(
        &f.db,
        "UPDATE swipe_files SET status = 'failed' WHERE seq % 50 = 0",
        &[],
    )
    .await;
    // A changed vector: the graph's entry is masked, the new one held in memory.
    exec(&f.db, "UPDATE swipe_file_vectors SET vector = (SELECT vector FROM swipe_file_vectors WHERE swipe_file_id = ?) WHERE swipe_file_id = ?", &[&ids[0], &ids[1]]).await;
    let new_owners = [(Some(a.as_str()), None), (None, Some(s1.as_str()))];
    insert_clustered(&f.db, &mut f.rng, &new_owners, 120, 48, "n", false).await;
    // And some of other models and dimensions, which never enter the graph.
    insert_designs(&f.db, &mut f.rng, &new_owners, 30, "o").await;
    exec(&f.db, "INSERT INTO data_source_subscriptions (org_id, source_id, active, updated_at) VALUES (?, ?, 0, 'x')", &[&a, &s1]).await;
    exec(
        &f.db,
        "DELETE FROM design_pack_items WHERE swipe_file_id = ?",
        &[&ids[14]],
    )
    .await;
    exec(
        &f.db,
        "DELETE FROM swipe_file_vectors WHERE swipe_file_id = ?",
        &[&ids[14]],
    )
    .await;
    exec(&f.db, "DELETE FROM swipe_files WHERE id = ?", &[&ids[14]]).await;
    compare_all(
        &f.db, &exactly, &mut f.rng, &orgs, "dp_1", &sources, &ids[3], 48,
    )
    .await;
    let st = exactly.status(vectors::TEXT);
    assert!(st.in_memory > 0 && st.generation.is_some(), "{st:?}");

    // The same changes seen by a process that rebuilds once 50 vectors sit beside the graph:
    // the rebuild runs in the background, is swapped in, and answers stay exact.
    let rebuilding = SearchIndex::new(IndexConfig {
        dir: Some(root.path().to_path_buf()),
        exact_below: usize::MAX,
        build_at: 1,
        rebuild_after: 50,
        ef_search: 64,
        ..IndexConfig::default()
    });
    compare_all(
        &f.db,
        &rebuilding,
        &mut f.rng,
        &orgs,
        "dp_1",
        &sources,
        &ids[3],
        48,
    )
    .await;
    let mut rebuilt = false;
    for _ in 0..600 {
        let st = rebuilding.status(vectors::TEXT);
        if st.builds >= 1 && !st.building {
            rebuilt = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(rebuilt, "a background rebuild was swapped in");
    compare_all(
        &f.db,
        &rebuilding,
        &mut f.rng,
        &orgs,
        "dp_1",
        &sources,
        &ids[3],
        48,
    )
    .await;
    let st = rebuilding.status(vectors::TEXT);
    assert!(st.in_graph >= 2000 + 120 - 1, "{st:?}");
    assert!(
        st.in_memory <= 30,
        "only other models stay in memory: {st:?}"
    );
    // The first process sees the new generation at its next search and opens it.
    compare_all(
        &f.db, &exactly, &mut f.rng, &orgs, "dp_1", &sources, &ids[3], 48,
    )
    .await;
    assert_eq!(exactly.status(vectors::TEXT).generation, st.generation);
}
