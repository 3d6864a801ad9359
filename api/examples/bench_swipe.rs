//! Swipe-file search speed at 10k and 100k designs: the exact ranking (`rank`: SQL filter →
//! cached int8 vectors → scores → top 20), without and with filters, p50/p99 over 50
//! queries each after one warm-up query (which fills the vector cache from SQLite; its time
//! is printed too). Query embedding (MiniLM, about 40 ms CPU per query) is not included.
//!
//! ```sh
//! cargo run --release -p adforge-api --example bench_swipe            # 10000 100000
//! cargo run --release -p adforge-api --example bench_swipe -- 5000
//! ```
//!
//! Designs are synthetic: random unit caption vectors (384-d), aspect ratios and industries
//! spread evenly, written straight into a temporary SQLite file.

use std::time::{Duration, Instant};

use adforge_api::store::Db;
use adforge_api::swipe::filter::SwipeFilter;
use adforge_api::swipe::index::{Search, SearchIndex};
use adforge_api::swipe::taxonomy::{ASPECT_RATIOS, INDUSTRIES};
use adforge_api::swipe::vectors;

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let v = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (v >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }

    fn unit(&mut self, dim: usize) -> Vec<f32> {
        let v: Vec<f32> = (0..dim).map(|_| self.next()).collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        v.into_iter().map(|x| x / n).collect()
    }
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![10_000, 100_000]
    } else {
        sizes
    };
    for n in sizes {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = Db::open(dir.path()).await.expect("db");
        let org = adforge_api::admin::create_org(&db, "bench")
            .await
            .expect("org");
        let org_id = org["id"].as_str().expect("org id").to_string();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let started = Instant::now();
        let mut tx = db.begin_write().await.expect("tx");
        for i in 0..n {
            let id = format!("sf_bench{i:07}");
            sqlx::query(
                "INSERT INTO swipe_files (id, org_id, source, blob_key, status, aspect_ratio, industry, created_at, updated_at) \
                 VALUES (?, ?, 'upload', 'x', 'ready', ?, ?, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
            )
            .bind(&id)
            .bind(&org_id)
            .bind(ASPECT_RATIOS[i % ASPECT_RATIOS.len()].0)
            .bind(INDUSTRIES[i % INDUSTRIES.len()].0)
            .execute(&mut *tx)
            .await
            .expect("insert");
            sqlx::query("INSERT INTO swipe_file_vectors (swipe_file_id, kind, model_id, dim, vector) VALUES (?, 'text', 'bench', 384, ?)")
                .bind(&id)
                .bind(vectors::encode(&rng.unit(384)))
                .execute(&mut *tx)
                .await
                .expect("insert vector");
        }
        tx.commit().await.expect("commit");
        println!(
            "{n} designs written in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let index = SearchIndex::default();
        let filters = [
            (
                "no filter",
                SwipeFilter {
                    include_own: true,
                    status: Some("ready".into()),
                    ..SwipeFilter::default()
                },
            ),
            (
                "aspect_ratio=1:1",
                SwipeFilter {
                    include_own: true,
                    status: Some("ready".into()),
                    aspect_ratio: vec!["1:1".into()],
                    ..SwipeFilter::default()
                },
            ),
            (
                "industry=2 values & aspect_ratio",
                SwipeFilter {
                    include_own: true,
                    status: Some("ready".into()),
                    aspect_ratio: vec!["1:1".into(), "4:5".into()],
                    industry: vec![INDUSTRIES[0].0.into(), INDUSTRIES[6].0.into()],
                    ..SwipeFilter::default()
                },
            ),
        ];
        for (name, filter) in &filters {
            let mut times = Vec::new();
            let mut warm = Duration::ZERO;
            for q in 0..51 {
                let query = vectors::Query::new("bench", &rng.unit(384));
                let t = Instant::now();
                let hits = index
                    .search(
                        &db,
                        &Search {
                            org_id: &org_id,
                            filter,
                            kind: vectors::TEXT,
                            query: &query,
                            exclude: None,
                            min: -1.0,
                            limit: 20,
                        },
                    )
                    .await
                    .expect("search");
                let took = t.elapsed();
                assert_eq!(hits.len().min(20), hits.len());
                if q == 0 {
                    warm = took;
                } else {
                    times.push(took);
                }
            }
            times.sort();
            println!(
                "  {n:>7} designs, {name:<34} first (cache fill) {:>8.1} ms   p50 {:>7.1} ms   p99 {:>7.1} ms",
                warm.as_secs_f64() * 1000.0,
                pct(&times, 0.5),
                pct(&times, 0.99)
            );
        }
    }
}
