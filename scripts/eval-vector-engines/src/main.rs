//! Evaluates two embedded vector engines on the swipe file's workload (issue 25): USearch
//! (HNSW in C++, int8 storage, predicate filtering, memory-mapped view) and hannoy
//! (HNSW on LMDB, f32 storage, candidate bitmaps). For each dimension (384: caption
//! vectors, 1280: image vectors) it draws N vectors from a mixture of a few hundred
//! clusters (as `api/examples/bench_swipe.rs` does at 1M), builds each engine's index on
//! the same vectors with the same graph degree (M = 16) and ef_construction (128), and
//! measures build time, size on disk, query p50 and recall@20 against brute force, without
//! a filter and with a filter keeping 10 %.
//!
//! ```sh
//! scripts/eval-vector-engines/run            # N=20000
//! N=50000 scripts/eval-vector-engines/run
//! ```
#![allow(unsafe_code, clippy::unwrap_used)]

use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng, rngs::StdRng};

const K: usize = 20;
const QUERIES: usize = 200;

fn unit(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
    v.iter_mut().for_each(|x| *x /= n);
}

fn gaussian(rng: &mut StdRng) -> f32 {
    // Box–Muller.
    let u: f32 = rng.random_range(1e-7f32..1.0);
    let v: f32 = rng.random_range(0.0f32..1.0);
    (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
}

/// `n` unit vectors from a mixture of `clusters` Gaussian clusters around random centres
/// (noise of norm about `spread`), flattened.
fn mixture(rng: &mut StdRng, n: usize, dim: usize, clusters: usize, spread: f32) -> Vec<f32> {
    let mut centres = vec![0f32; clusters * dim];
    for c in centres.chunks_mut(dim) {
        c.iter_mut().for_each(|x| *x = gaussian(rng));
        unit(c);
    }
    let s = spread / (dim as f32).sqrt();
    let mut out = vec![0f32; n * dim];
    for v in out.chunks_mut(dim) {
        let c = rng.random_range(0..clusters);
        for (i, x) in v.iter_mut().enumerate() {
            *x = centres[c * dim + i] + s * gaussian(rng);
        }
        unit(v);
    }
    out
}

fn quantize(v: &[f32]) -> Vec<i8> {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs())).max(1e-9);
    v.iter().map(|x| (x / max * 127.0).round() as i8).collect()
}

fn brute(data: &[f32], dim: usize, q: &[f32], keep: &dyn Fn(usize) -> bool) -> Vec<u32> {
    let mut s: Vec<(f32, u32)> = data
        .chunks(dim)
        .enumerate()
        .filter(|(i, _)| keep(*i))
        .map(|(i, v)| (v.iter().zip(q).map(|(a, b)| a * b).sum::<f32>(), i as u32))
        .collect();
    s.sort_by(|a, b| b.0.total_cmp(&a.0));
    s.truncate(K);
    s.into_iter().map(|x| x.1).collect()
}

fn recall(got: &[u32], want: &[u32]) -> f64 {
    let hit = got.iter().filter(|g| want.contains(g)).count();
    hit as f64 / want.len().max(1) as f64
}

fn p50(mut t: Vec<Duration>) -> f64 {
    t.sort();
    t[t.len() / 2].as_secs_f64() * 1000.0
}

fn dir_size(p: &std::path::Path) -> u64 {
    std::fs::read_dir(p)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
        .sum()
}

struct Row {
    engine: &'static str,
    build: Duration,
    bytes: u64,
    p50: f64,
    recall: f64,
    p50_filtered: f64,
    recall_filtered: f64,
}

fn usearch_row(data: &[f32], dim: usize, queries: &[f32], truth: &[(Vec<u32>, Vec<u32>)], dir: &std::path::Path) -> Row {
    use usearch::{Index, IndexOptions, MetricKind, ScalarKind};
    let opts = IndexOptions {
        dimensions: dim,
        metric: MetricKind::Cos,
        quantization: ScalarKind::I8,
        connectivity: 16,
        expansion_add: 128,
        expansion_search: 128,
        multi: false,
    };
    let n = data.len() / dim;
    let threads = std::thread::available_parallelism().map(|t| t.get()).unwrap_or(1);
    let t = Instant::now();
    let index = Index::new(&opts).unwrap();
    index.reserve_capacity_and_threads(n, threads).unwrap();
    std::thread::scope(|s| {
        for part in 0..threads {
            let index = &index;
            s.spawn(move || {
                for i in (part..n).step_by(threads) {
                    index.add(i as u64, &quantize(&data[i * dim..(i + 1) * dim])).unwrap();
                }
            });
        }
    });
    let path = dir.join("usearch.index");
    index.save(path.to_str().unwrap()).unwrap();
    let build = t.elapsed();
    let view = Index::new(&opts).unwrap();
    view.view(path.to_str().unwrap()).unwrap();
    let (mut t0, mut t1, mut r0, mut r1) = (Vec::new(), Vec::new(), 0.0, 0.0);
    for (q, (want, want_f)) in queries.chunks(dim).zip(truth) {
        let q8 = quantize(q);
        let t = Instant::now();
        let m = view.search(&q8, K).unwrap();
        t0.push(t.elapsed());
        r0 += recall(&m.keys.iter().map(|k| *k as u32).collect::<Vec<_>>(), want);
        let t = Instant::now();
        let m = view.filtered_search(&q8, K, |k| k % 10 == 3).unwrap();
        t1.push(t.elapsed());
        r1 += recall(&m.keys.iter().map(|k| *k as u32).collect::<Vec<_>>(), want_f);
    }
    let nq = truth.len() as f64;
    Row { engine: "usearch 2.26 (i8, M=16, ef=128)", build, bytes: dir_size(dir), p50: p50(t0), recall: r0 / nq, p50_filtered: p50(t1), recall_filtered: r1 / nq }
}

fn hannoy_row(data: &[f32], dim: usize, queries: &[f32], truth: &[(Vec<u32>, Vec<u32>)], dir: &std::path::Path) -> Row {
    use hannoy::{Database, Reader, Writer, distances::Cosine};
    use heed::{CommitOrAbort, EnvOpenOptions};
    let n = data.len() / dim;
    let t = Instant::now();
    let env = unsafe { EnvOpenOptions::new().map_size(64 << 30).open(dir) }.unwrap();
    let wtxn = env.write_txn().unwrap();
    let db: Database<Cosine> = env
        .create_databases_and_commit(wtxn, |dbo, wtxn| -> heed::Result<_> {
            dbo.create_database(wtxn, None).map(CommitOrAbort::<_, ()>::Commit)
        })
        .unwrap()
        .unwrap_commit();
    let writer: Writer<Cosine> = Writer::new(db, 0, dim);
    let mut wtxn = env.write_txn().unwrap();
    for i in 0..n {
        writer.add_item(&mut wtxn, i as u32, &data[i * dim..(i + 1) * dim]).unwrap();
    }
    let mut rng = StdRng::seed_from_u64(42);
    writer.builder(&mut rng).ef_construction(128).build::<16, 32>(&mut wtxn).unwrap();
    wtxn.commit().unwrap();
    let build = t.elapsed();
    let rtxn = env.read_txn().unwrap();
    let reader = Reader::<Cosine>::open(&rtxn, 0, db).unwrap();
    let filtered: roaring::RoaringBitmap = (0..n as u32).filter(|k| k % 10 == 3).collect();
    let (mut t0, mut t1, mut r0, mut r1) = (Vec::new(), Vec::new(), 0.0, 0.0);
    for (q, (want, want_f)) in queries.chunks(dim).zip(truth) {
        let t = Instant::now();
        let m = reader.nns(K).ef_search(128).by_vector(&rtxn, q).unwrap().into_nns();
        t0.push(t.elapsed());
        r0 += recall(&m.iter().map(|x| x.0).collect::<Vec<_>>(), want);
        let t = Instant::now();
        let m = reader.nns(K).ef_search(128).candidates(&filtered).by_vector(&rtxn, q).unwrap().into_nns();
        t1.push(t.elapsed());
        r1 += recall(&m.iter().map(|x| x.0).collect::<Vec<_>>(), want_f);
    }
    let nq = truth.len() as f64;
    Row { engine: "hannoy 0.3 (f32, M=16, ef=128)", build, bytes: dir_size(dir), p50: p50(t0), recall: r0 / nq, p50_filtered: p50(t1), recall_filtered: r1 / nq }
}

fn main() {
    let n: usize = std::env::var("N").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let engines = std::env::var("ENGINES").unwrap_or_else(|_| "usearch hannoy".into());
    println!("| vectors | dim | engine | build s | on disk MB | p50 ms | recall@20 | p50 ms (10 % filter) | recall@20 (10 % filter) |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for dim in [384usize, 1280] {
        let mut rng = StdRng::seed_from_u64(dim as u64);
        let clusters = (n / 300).max(10);
        let data = mixture(&mut rng, n, dim, clusters, 1.0);
        // Queries by example: stored vectors with a little noise.
        let mut queries = Vec::with_capacity(QUERIES * dim);
        for _ in 0..QUERIES {
            let i = rng.random_range(0..n);
            let mut q: Vec<f32> = data[i * dim..(i + 1) * dim].iter().map(|x| x + 0.3 * gaussian(&mut rng) / (dim as f32).sqrt()).collect();
            unit(&mut q);
            queries.extend(q);
        }
        let truth: Vec<(Vec<u32>, Vec<u32>)> = queries
            .chunks(dim)
            .map(|q| (brute(&data, dim, q, &|_| true), brute(&data, dim, q, &|i| i % 10 == 3)))
            .collect();
        for engine in engines.split_whitespace() {
            let dir = tempfile_dir(engine, dim);
            let row = match engine {
                "usearch" => usearch_row(&data, dim, &queries, &truth, &dir),
                "hannoy" => hannoy_row(&data, dim, &queries, &truth, &dir),
                other => panic!("unknown engine {other}"),
            };
            println!(
                "| {n} | {dim} | {} | {:.1} | {:.0} | {:.2} | {:.3} | {:.2} | {:.3} |",
                row.engine,
                row.build.as_secs_f64(),
                row.bytes as f64 / 1e6,
                row.p50,
                row.recall,
                row.p50_filtered,
                row.recall_filtered
            );
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

fn tempfile_dir(engine: &str, dim: usize) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("eval-vector-engines-{}-{engine}-{dim}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}
