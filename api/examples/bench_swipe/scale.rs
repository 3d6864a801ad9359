//! `scale N` (issue 25): the swipe file at N designs (default 1,000,000), approximate and
//! exact search side by side in the same run.
//!
//! The designs are SYNTHETIC, written straight into a SQLite file: vectors drawn from a
//! mixture of clusters (2,000 random unit centres per kind, each design its centre plus
//! uniform noise of about the centre's norm, renormalised), caption vectors 384-d and image
//! vectors 1280-d, int8 as the applier stores them. Classes are independent of the vectors:
//! half are the organisation's own uploads (the rest a subscribed data source's), 10 % each
//! of ten industries, 10 % aspect ratio 1:1, and one design in a thousand in a design pack,
//! so the filters keep 100, 50, 10, 1 and 0.1 %.
//!
//! Then: both graphs are built (`SearchIndex::build_now`, every core) and their size on disk
//! taken; a child process (`scale-query`) opens them cold (no build) and runs 100 queries a
//! row, top 20, through `SearchIndex::search` (what POST /v1/swipe-files/search runs after
//! the embedding), reporting open time, p50/p99 and its resident memory; by example the
//! query is a stored design's own vector with the design excluded (as `swipe_file_id`
//! does), by text a fresh draw from the caption mixture. Finally this process loads the
//! exact in-memory index (`SearchIndex::default`, the scorer before issue 25) from SQL and
//! runs the same queries: its p50 and the recall@20 of the approximate answers against it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use adforge_api::store::Db;
use adforge_api::swipe::filter::SwipeFilter;
use adforge_api::swipe::index::{IndexConfig, Search, SearchIndex, size_on_disk};
use adforge_api::swipe::vectors::{self, Query};
use adforge_worker::swipe::taxonomy::{ASPECT_RATIOS, INDUSTRIES};

use super::{Rng, ms, pct};

const CLUSTERS: usize = 2000;
const QUERIES: usize = 100;
const PACK: &str = "dp_bench";

/// The kinds: (kind, dim, label, by example).
const KINDS: [(&str, usize, &str, bool); 2] = [
    (vectors::IMAGE, 1280, "by example, image 1280-d", true),
    (vectors::TEXT, 384, "by text, caption 384-d", false),
];

/// splitmix64: an independent hash per column.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

struct Mixture {
    dim: usize,
    centres: Vec<Vec<f32>>,
}

impl Mixture {
    fn new(rng: &mut Rng, dim: usize) -> Self {
        Self {
            dim,
            centres: (0..CLUSTERS).map(|_| rng.unit(dim)).collect(),
        }
    }

    fn draw(&self, rng: &mut Rng) -> Vec<f32> {
        let c = &self.centres[(mix(rng.0) % CLUSTERS as u64) as usize];
        // Uniform noise in [-0.5, 0.5) per component, of norm about sqrt(dim/12): scaled
        // to about 1.1 × the centre's norm.
        let s = 1.1 / (self.dim as f32 / 12.0).sqrt();
        let v: Vec<f32> = c.iter().map(|x| x + s * rng.next()).collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        v.into_iter().map(|x| x / n).collect()
    }
}

/// Both kinds' mixtures (the same centres in every process).
fn mixtures() -> Vec<Mixture> {
    let mut rng = Rng(0x0C1A_55E5_0000_0025);
    KINDS.iter().map(|k| Mixture::new(&mut rng, k.1)).collect()
}

/// The filter rows: (name, share kept, filter).
fn filters() -> Vec<(&'static str, &'static str, SwipeFilter)> {
    let ready = SwipeFilter {
        include_own: true,
        status: Some("ready".into()),
        ..SwipeFilter::default()
    };
    vec![
        ("none", "100 %", ready.clone()),
        (
            "own uploads only",
            "50 %",
            SwipeFilter {
                data_source_ids: Some(vec![]),
                ..ready.clone()
            },
        ),
        (
            "industry",
            "10 %",
            SwipeFilter {
                industry: vec![INDUSTRIES[0].0.into()],
                ..ready.clone()
            },
        ),
        (
            "industry + aspect ratio",
            "1 %",
            SwipeFilter {
                industry: vec![INDUSTRIES[0].0.into()],
                aspect_ratio: vec![ASPECT_RATIOS[0].0.into()],
                ..ready.clone()
            },
        ),
        (
            "design pack",
            "0.1 %",
            SwipeFilter {
                design_pack_id: Some(PACK.into()),
                ..ready.clone()
            },
        ),
    ]
}

fn status_kb(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .unwrap_or(0.0)
}

async fn write_designs(db: &Db, n: usize) -> (String, String) {
    let org_id = adforge_api::orgs::create_org(db, "bench")
        .await
        .expect("org")["id"]
        .as_str()
        .expect("id")
        .to_string();
    let source = adforge_api::resources::swipe_files::sources::create(db, "bench source", true)
        .await
        .expect("source");
    let mut rng = Rng(0x0025_0025_0025_0025);
    let mixtures = mixtures();
    let started = Instant::now();
    for start in (0..n).step_by(5000) {
        let mut tx = db.begin_write().await.expect("tx");
        for i in start..(start + 5000).min(n) {
            let id = format!("sf_bench{i:08}");
            let h = |salt: u64| mix(i as u64 ^ (salt << 40));
            let own = h(1) % 2 == 0;
            let industry = INDUSTRIES[(h(2) % 10) as usize].0;
            let aspect = if h(3) % 10 == 0 {
                ASPECT_RATIOS[0].0
            } else {
                ASPECT_RATIOS[1 + (h(4) % 6) as usize].0
            };
            adforge_api::store::query(
                "INSERT INTO swipe_files (id, org_id, data_source_id, source, blob_key, status, aspect_ratio, industry, created_at, updated_at) \
                 VALUES (?, ?, ?, ?, 'x', 'ready', ?, ?, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
            )
            .bind(&id)
            .bind(own.then_some(org_id.as_str()))
            .bind((!own).then_some(source.as_str()))
            .bind(if own { "upload" } else { "svc_managed" })
            .bind(aspect)
            .bind(industry)
            .execute(&mut *tx)
            .await
            .expect("insert");
            for ((kind, dim, _, _), m) in KINDS.iter().zip(&mixtures) {
                rng.next();
                adforge_api::store::query("INSERT INTO swipe_file_vectors (swipe_file_id, kind, model_id, dim, vector) VALUES (?, ?, 'bench', ?, ?)")
                    .bind(&id)
                    .bind(*kind)
                    .bind(*dim as i64)
                    .bind(vectors::encode(&m.draw(&mut rng)))
                    .execute(&mut *tx)
                    .await
                    .expect("insert vector");
            }
        }
        tx.commit().await.expect("commit");
    }
    let mut tx = db.begin_write().await.expect("tx");
    adforge_api::store::query("INSERT INTO design_packs (id, org_id, title, created_at, updated_at) VALUES (?, ?, 'bench', 'x', 'x')")
        .bind(PACK)
        .bind(&org_id)
        .execute(&mut *tx)
        .await
        .expect("pack");
    for i in (0..n).step_by(1000) {
        adforge_api::store::query(
            "INSERT INTO design_pack_items (pack_id, swipe_file_id, added_at) VALUES (?, ?, 'x')",
        )
        .bind(PACK)
        .bind(format!("sf_bench{i:08}"))
        .execute(&mut *tx)
        .await
        .expect("pack item");
    }
    tx.commit().await.expect("commit");
    eprintln!(
        "{n} synthetic designs written in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    (org_id, source)
}

/// One query of a row: the dense vector and the design it came from (excluded).
struct Q {
    kind: usize,
    filter: usize,
    exclude: Option<String>,
    values: Vec<f32>,
}

async fn make_queries(db: &Db, n: usize) -> Vec<Q> {
    let mut rng = Rng(0x0051_DE51_DE51_DE51);
    let text_mixture = mixtures().remove(1);
    let mut out = Vec::new();
    for (k, (kind, _, _, by_example)) in KINDS.iter().enumerate() {
        for f in 0..filters().len() {
            for _ in 0..QUERIES {
                if *by_example {
                    let i = (mix(rng.0) % n as u64) as usize;
                    rng.next();
                    let id = format!("sf_bench{i:08}");
                    let (m, b): (String, Vec<u8>) = adforge_api::store::query_as(
                        "SELECT model_id, vector FROM swipe_file_vectors WHERE swipe_file_id = ? AND kind = ?",
                    )
                    .bind(&id)
                    .bind(*kind)
                    .fetch_one(&db.read)
                    .await
                    .expect("stored vector");
                    let q = vectors::decode(&m, &b).expect("vector");
                    let values = q.values.iter().map(|x| f32::from(*x) * q.scale).collect();
                    out.push(Q {
                        kind: k,
                        filter: f,
                        exclude: Some(id),
                        values,
                    });
                } else {
                    out.push(Q {
                        kind: k,
                        filter: f,
                        exclude: None,
                        values: text_mixture.draw(&mut rng),
                    });
                }
            }
        }
    }
    out
}

/// Runs every query; returns (times, answers) in query order.
async fn run_queries(
    db: &Db,
    index: &SearchIndex,
    org_id: &str,
    queries: &[Q],
) -> (Vec<Duration>, Vec<Vec<String>>, Vec<String>) {
    let filters = filters();
    let (mut times, mut answers, mut paths) = (Vec::new(), Vec::new(), Vec::new());
    for q in queries {
        let query = Query::new("bench", &q.values);
        let t = Instant::now();
        let (hits, explain) = index
            .search_explained(
                db,
                &Search {
                    org_id,
                    filter: &filters[q.filter].2,
                    kind: KINDS[q.kind].0,
                    query: &query,
                    exclude: q.exclude.as_deref(),
                    min: -1.0,
                    limit: 20,
                },
            )
            .await
            .expect("search");
        times.push(t.elapsed());
        answers.push(hits.into_iter().map(|h| h.1).collect());
        paths.push(format!("{:?}", explain.path));
    }
    (times, answers, paths)
}

fn config(dir: &Path) -> IndexConfig {
    IndexConfig {
        dir: Some(dir.to_path_buf()),
        ..IndexConfig::default()
    }
}

/// The child: opens the graphs cold, runs the queries, writes answers and numbers.
pub async fn query_child(work: &Path) {
    let db = Db::open(&work.join("db")).await.expect("db");
    let org_id: String = adforge_api::store::query_scalar("SELECT id FROM organizations LIMIT 1")
        .fetch_one(&db.read)
        .await
        .expect("org");
    let n: i64 = adforge_api::store::query_scalar("SELECT COUNT(*) FROM swipe_files")
        .fetch_one(&db.read)
        .await
        .expect("count");
    let index = SearchIndex::new(config(&work.join("index")));
    let before = status_kb("VmRSS:");
    let mut opened = Vec::new();
    for (kind, ..) in KINDS {
        let t = Instant::now();
        index.refresh(&db, kind).await.expect("open");
        opened.push(ms(t.elapsed()));
        let st = index.status(kind);
        assert_eq!(st.builds, 0, "opened, not built");
        assert!(st.generation.is_some(), "a graph was opened: {st:?}");
    }
    let queries = make_queries(&db, n as usize).await;
    let (times, answers, paths) = run_queries(&db, &index, &org_id, &queries).await;
    let rss = (
        status_kb("VmRSS:") / 1024.0,
        status_kb("RssAnon:") / 1024.0,
        status_kb("RssFile:") / 1024.0,
    );
    // The planner's threshold: the same by-example queries under the 50, 10, 1 and 0.1 %
    // filters, once forced through the graph and once forced to score every candidate
    // exactly.
    let mut sweep = String::new();
    for (name, exact_below, shortlist_below) in [
        ("graph", 0usize, 0usize),
        ("shortlist", 0, usize::MAX),
        ("exact", usize::MAX, usize::MAX),
    ] {
        let forced = SearchIndex::new(IndexConfig {
            exact_below,
            shortlist_below,
            ..config(&work.join("index"))
        });
        for f in [1usize, 2, 3, 4] {
            let rows: Vec<&Q> = queries
                .iter()
                .filter(|q| q.kind == 0 && q.filter == f)
                .take(30)
                .collect();
            let mut t = Vec::new();
            for q in rows {
                let query = Query::new("bench", &q.values);
                let s = Search {
                    org_id: &org_id,
                    filter: &filters()[f].2,
                    kind: KINDS[0].0,
                    query: &query,
                    exclude: q.exclude.as_deref(),
                    min: -1.0,
                    limit: 20,
                };
                let started = Instant::now();
                let (_, explain) = forced.search_explained(&db, &s).await.expect("search");
                t.push(started.elapsed());
                if !sweep.contains(&format!("{f}:{name}:")) {
                    sweep.push_str(&format!("{f}:{name}:{} ", explain.candidates));
                }
            }
            t.sort();
            sweep.push_str(&format!("{f}:{name}:p50:{:.3} ", pct(&t, 0.5)));
        }
    }
    let mut out = std::fs::File::create(work.join("approx.txt")).expect("answers");
    for ((t, a), p) in times.iter().zip(&answers).zip(&paths) {
        writeln!(out, "{} {p} {}", t.as_nanos(), a.join(",")).expect("write");
    }
    writeln!(
        out,
        "# open_ms {} {} rss_mb {:.0} anon_mb {:.0} file_mb {:.0} before_mb {:.0} heap_mb {:.0}",
        opened[0],
        opened[1],
        rss.0,
        rss.1,
        rss.2,
        before / 1024.0,
        index.heap_bytes() as f64 / 1e6,
    )
    .expect("write");
    writeln!(out, "% {sweep}").expect("write");
}

pub async fn scale(n: usize) {
    let work: PathBuf = std::env::var_os("BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join(format!("adforge-bench-scale-{n}")));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(work.join("db")).expect("work dir");
    let db = Db::open(&work.join("db")).await.expect("db");
    let (org_id, _) = write_designs(&db, n).await;

    // Build both graphs.
    let builder = SearchIndex::new(IndexConfig {
        build_at: usize::MAX,
        rebuild_after: usize::MAX,
        ..config(&work.join("index"))
    });
    let mut built = Vec::new();
    for (kind, ..) in KINDS {
        builder.refresh(&db, kind).await.expect("load");
        let t = Instant::now();
        builder
            .build_now(&db, kind)
            .await
            .expect("build")
            .expect("built");
        built.push((
            t.elapsed().as_secs_f64(),
            size_on_disk(&work.join("index").join(kind)) as f64 / 1e6,
        ));
    }
    drop(builder);

    // The approximate rows, in a fresh process.
    let exe = std::env::current_exe().expect("exe");
    let status = std::process::Command::new(exe)
        .arg("scale-query")
        .arg(&work)
        .status()
        .expect("child runs");
    assert!(status.success(), "the query process failed");
    let text = std::fs::read_to_string(work.join("approx.txt")).expect("answers");
    let mut approx: Vec<(Duration, Vec<String>, String)> = Vec::new();
    let mut footer = String::new();
    let mut sweep = String::new();
    for line in text.lines() {
        if let Some(f) = line.strip_prefix("# ") {
            footer = f.to_string();
            continue;
        }
        if let Some(f) = line.strip_prefix("% ") {
            sweep = f.to_string();
            continue;
        }
        let mut parts = line.splitn(3, ' ');
        let (t, path, ids) = (
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
        );
        approx.push((
            Duration::from_nanos(t.parse().expect("nanos")),
            ids.split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
            path.to_string(),
        ));
    }

    // The exact rows, same queries, this process.
    let exact = SearchIndex::default();
    let t = Instant::now();
    for (kind, ..) in KINDS {
        exact.refresh(&db, kind).await.expect("exact load");
    }
    eprintln!(
        "exact index loaded from SQL in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let queries = make_queries(&db, n).await;
    let (exact_times, exact_answers, _) = run_queries(&db, &exact, &org_id, &queries).await;

    let f: Vec<&str> = footer.split_whitespace().collect();
    let field = |name: &str| {
        f.iter()
            .position(|x| *x == name)
            .and_then(|i| f.get(i + 1))
            .copied()
            .unwrap_or("?")
    };
    println!(
        "{n} designs: graphs built in {:.0} s (image) and {:.0} s (caption), {:.0} MB and {:.0} MB on disk; \
         opened cold in {} ms and {} ms (second process, no build); resident after all queries {} MB \
         ({} MB anonymous, {} MB mapped file pages; {} MB before opening; columns {} MB)",
        built[0].0,
        built[1].0,
        built[0].1,
        built[1].1,
        field("open_ms"),
        f.iter()
            .position(|x| *x == "open_ms")
            .and_then(|i| f.get(i + 2))
            .copied()
            .unwrap_or("?"),
        field("rss_mb"),
        field("anon_mb"),
        field("file_mb"),
        field("before_mb"),
        field("heap_mb"),
    );
    println!();
    println!(
        "| designs | query | filter | keeps | path | p50 ms | p99 ms | recall@20 | exact p50 ms | exact / approximate |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let filters = filters();
    for (k, (_, _, label, _)) in KINDS.iter().enumerate() {
        for (fi, (name, keeps, _)) in filters.iter().enumerate() {
            let rows: Vec<usize> = queries
                .iter()
                .enumerate()
                .filter(|(_, q)| q.kind == k && q.filter == fi)
                .map(|(i, _)| i)
                .collect();
            let mut at: Vec<Duration> = rows.iter().map(|i| approx[*i].0).collect();
            let mut et: Vec<Duration> = rows.iter().map(|i| exact_times[*i]).collect();
            at.sort();
            et.sort();
            let (mut found, mut wanted) = (0usize, 0usize);
            for i in &rows {
                let want = &exact_answers[*i];
                wanted += want.len();
                found += approx[*i].1.iter().filter(|id| want.contains(id)).count();
            }
            let recall = if wanted == 0 {
                1.0
            } else {
                found as f64 / wanted as f64
            };
            let (p50, ep50) = (pct(&at, 0.5), pct(&et, 0.5));
            let mut taken: Vec<&str> = rows.iter().map(|i| approx[*i].2.as_str()).collect();
            taken.sort_unstable();
            taken.dedup();
            let taken = taken.join(", ");
            println!(
                "| {n} | {label} | {name} | {keeps} | {taken} | {p50:.2} | {:.2} | {recall:.3} | {ep50:.1} | {:.0}× |",
                pct(&at, 0.99),
                ep50 / p50.max(1e-3),
            );
        }
    }
    println!();
    println!(
        "Planner threshold (by example, 30 queries each, the same process and graph): \
         p50 with the graph walk forced, the shortlist forced, and every candidate scored exactly, \
         as `candidates:path:...` pairs: {sweep}"
    );
    let _ = std::fs::remove_dir_all(&work);
}
