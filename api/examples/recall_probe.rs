//! Probe (issue 25): what limits the HNSW graph's recall@20 against the exact int8 scorer,
//! on USearch alone (no SQL, no columns), so graph parameters can be tried in seconds.
//!
//! `recall_probe N DIM MODEL M EF_ADD EF_SEARCH,... CANDIDATES,... FILTER,... SCALAR`
//! - MODEL `iso`: the benchmark's mixture (`scripts/bench-swipe`: 2,000 random unit
//!   centres, uniform noise of 1.1 × the centre's norm); `sub`: each cluster spread along
//!   LOCAL of 1,024 shared directions (env CLUSTERS, LOCAL, SPREAD, ISO tune both).
//! - M, EF_ADD: the graph's connectivity and expansion while adding; EF_SEARCH: expansion
//!   while searching; CANDIDATES: keys asked of the walk (at least 21) and re-scored
//!   exactly, as the index does; FILTER: share of keys a predicate keeps; SCALAR: i8, f16
//!   or f32 storage, or b1 (sign codes about zero, Hamming metric: the index's graph on
//!   zero-mean data). EF_SEARCH 0 skips the graph and ranks every allowed key by the Hamming
//!   distance of its sign code instead (the index's shortlist in one stage).
//!
//! 100 queries (stored vectors, themselves excluded); prints recall@20, p50/p99 per row.
//! Example: `cargo run --release --example recall_probe -- 20000 1280 iso 32 128 400 400 1,0.5 i8`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use adforge_api::swipe::vectors;
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

struct Rng(u64);
impl Rng {
    fn u(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn f(&mut self) -> f32 {
        (self.u() >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }
    fn gauss(&mut self) -> f32 {
        let (a, b) = (self.f() + 0.5, self.f() + 0.5);
        (-2.0 * (a.max(1e-7)).ln()).sqrt() * (std::f32::consts::TAU * b).cos()
    }
    fn unit(&mut self, dim: usize) -> Vec<f32> {
        let v: Vec<f32> = (0..dim).map(|_| self.gauss()).collect();
        norm(v)
    }
}
fn norm(v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.into_iter().map(|x| x / n).collect()
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n: usize = a[1].parse().unwrap();
    let dim: usize = a[2].parse().unwrap();
    let model = a[3].clone();
    let m: usize = a[4].parse().unwrap();
    let ef_add: usize = a[5].parse().unwrap();
    let efs: Vec<usize> = a[6].split(',').map(|x| x.parse().unwrap()).collect();
    let reranks: Vec<usize> = a[7].split(',').map(|x| x.parse().unwrap()).collect();
    let fracs: Vec<f64> = a[8].split(',').map(|x| x.parse().unwrap()).collect();
    let scalar = match a[9].as_str() {
        "f16" => ScalarKind::F16,
        "f32" => ScalarKind::F32,
        "b1" => ScalarKind::B1,
        _ => ScalarKind::I8,
    };
    let clusters: usize = std::env::var("CLUSTERS")
        .ok()
        .and_then(|x| x.parse().ok())
        .unwrap_or(2000);
    let local: usize = std::env::var("LOCAL")
        .ok()
        .and_then(|x| x.parse().ok())
        .unwrap_or(16);
    let spread: f32 = std::env::var("SPREAD")
        .ok()
        .and_then(|x| x.parse().ok())
        .unwrap_or(0.6);
    let iso: f32 = std::env::var("ISO")
        .ok()
        .and_then(|x| x.parse().ok())
        .unwrap_or(0.3);
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let centres: Vec<Vec<f32>> = (0..clusters).map(|_| rng.unit(dim)).collect();
    let pool: Vec<Vec<f32>> = (0..1024).map(|_| rng.unit(dim)).collect();
    let subs: Vec<Vec<usize>> = (0..clusters)
        .map(|_| (0..local).map(|_| (rng.u() % 1024) as usize).collect())
        .collect();
    let t = Instant::now();
    let mut data: Vec<i8> = Vec::with_capacity(n * dim);
    let mut scales = Vec::with_capacity(n);
    for _ in 0..n {
        let c = (rng.u() % clusters as u64) as usize;
        let v: Vec<f32> = if model == "iso" {
            let s = 1.1 / (dim as f32 / 12.0).sqrt();
            centres[c].iter().map(|x| x + s * rng.f()).collect()
        } else {
            let mut v = centres[c].clone();
            let k = spread / (local as f32).sqrt();
            for d in &subs[c] {
                let z = rng.gauss() * k;
                for (x, p) in v.iter_mut().zip(&pool[*d]) {
                    *x += z * p;
                }
            }
            let s = iso / (dim as f32).sqrt();
            for x in v.iter_mut() {
                *x += s * rng.gauss();
            }
            v
        };
        let (s, q) = vectors::quantize(&norm(v));
        data.extend_from_slice(&q);
        scales.push(s);
    }
    eprintln!("data {:.1}s", t.elapsed().as_secs_f64());
    let opts = IndexOptions {
        dimensions: dim,
        metric: if scalar == ScalarKind::B1 {
            MetricKind::Hamming
        } else {
            MetricKind::Cos
        },
        quantization: scalar,
        connectivity: m,
        expansion_add: ef_add,
        expansion_search: 64,
        multi: false,
    };
    let index = Index::new(&opts).unwrap();
    index.reserve_capacity_and_threads(n, 2).unwrap();
    let t = Instant::now();
    std::thread::scope(|s| {
        for th in 0..2 {
            if efs == [0] {
                break;
            }
            let (index, data, scales) = (&index, &data, &scales);
            s.spawn(move || {
                for k in (th..n).step_by(2) {
                    let v = &data[k * dim..(k + 1) * dim];
                    if scalar == ScalarKind::B1 {
                        index
                            .add(k as u64, usearch::b1x8::from_u8s(&signs(v)))
                            .unwrap();
                    } else if scalar == ScalarKind::I8 {
                        index.add(k as u64, v).unwrap();
                    } else {
                        let f: Vec<f32> = v.iter().map(|x| f32::from(*x) * scales[k]).collect();
                        index.add(k as u64, f.as_slice()).unwrap();
                    }
                }
            });
        }
    });
    println!(
        "n {n} dim {dim} model {model} M {m} ef_add {ef_add} {:?}: build {:.1}s mem {:.0} MB",
        a[9],
        t.elapsed().as_secs_f64(),
        index.memory_usage() as f64 / 1e6
    );
    let score = |q: &[i8], qs: f32, k: usize| -> f32 {
        let d: i32 = q
            .iter()
            .zip(&data[k * dim..(k + 1) * dim])
            .map(|(a, b)| i32::from(*a) * i32::from(*b))
            .sum();
        let s = d as f32 * qs * scales[k];
        (s * 10_000.0).round() / 10_000.0
    };
    let queries = 100;
    let bytes = dim.div_ceil(8);
    let codes: Vec<u8> = (0..n)
        .flat_map(|k| signs(&data[k * dim..(k + 1) * dim]))
        .collect();
    for &frac in &fracs {
        let allowed = |k: u64| -> bool {
            let mut x = k.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xabcdef;
            x = (x ^ (x >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            ((x >> 11) as f64 / (1u64 << 53) as f64) < frac
        };
        let mut qrng = Rng(0x7777_1111_2222_3333);
        let qs: Vec<usize> = (0..queries)
            .map(|_| (qrng.u() % n as u64) as usize)
            .collect();
        // Ground truth.
        let mut truth = Vec::new();
        for &qk in &qs {
            let q = &data[qk * dim..(qk + 1) * dim];
            let mut all: Vec<(f32, usize)> = (0..n)
                .filter(|k| *k != qk && allowed(*k as u64))
                .map(|k| (score(q, scales[qk], k), k))
                .collect();
            all.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap().then(a.1.cmp(&b.1)));
            all.truncate(20);
            truth.push(all);
        }
        for &ef in &efs {
            index.change_expansion_search(ef);
            for &rr in &reranks {
                let mut found = 0;
                let mut wanted = 0;
                let mut times = Vec::new();
                let mut t20 = 0.0;
                for (qi, &qk) in qs.iter().enumerate() {
                    let q = &data[qk * dim..(qk + 1) * dim];
                    let t = Instant::now();
                    let want = rr.max(21);
                    let keys: Vec<usize> = if ef == 0 {
                        // Brute-force Hamming prescan of the allowed keys, top `rr` re-scored.
                        let qb = signs(q);
                        let mut h: Vec<(u32, usize)> = (0..n)
                            .filter(|k| *k != qk && allowed(*k as u64))
                            .map(|k| (hamming(&qb, &codes[k * bytes..(k + 1) * bytes]), k))
                            .collect();
                        let r = rr.min(h.len());
                        if r < h.len() {
                            h.select_nth_unstable(r);
                        }
                        h.truncate(r);
                        h.into_iter().map(|(_, k)| k).collect()
                    } else {
                        let m = if scalar == ScalarKind::B1 {
                            index.filtered_search(usearch::b1x8::from_u8s(&signs(q)), want, |k| {
                                k != qk as u64 && allowed(k)
                            })
                        } else if scalar == ScalarKind::I8 {
                            index.filtered_search(q, want, |k| k != qk as u64 && allowed(k))
                        } else {
                            let f: Vec<f32> =
                                q.iter().map(|x| f32::from(*x) * scales[qk]).collect();
                            index.filtered_search(f.as_slice(), want, |k| {
                                k != qk as u64 && allowed(k)
                            })
                        }
                        .unwrap();
                        m.keys.iter().map(|k| *k as usize).collect()
                    };
                    let mut got: Vec<(f32, usize)> = keys
                        .iter()
                        .map(|k| (score(q, scales[qk], *k), *k))
                        .collect();
                    got.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap().then(a.1.cmp(&b.1)));
                    got.truncate(20);
                    times.push(t.elapsed().as_secs_f64() * 1000.0);
                    let tr = &truth[qi];
                    t20 += tr.last().map(|x| x.0).unwrap_or(0.0);
                    wanted += tr.len();
                    found += got.iter().filter(|g| tr.iter().any(|x| x.1 == g.1)).count();
                }
                times.sort_by(|a, b| a.partial_cmp(b).unwrap());
                println!(
                    "  filter {frac} ef {ef} rerank {rr}: recall {:.4} p50 {:.2} ms p99 {:.2} ms (20th sim {:.3})",
                    found as f64 / wanted as f64,
                    times[50],
                    times[98],
                    t20 / queries as f32
                );
            }
        }
    }
}

fn signs(v: &[i8]) -> Vec<u8> {
    let mut out = vec![0u8; v.len().div_ceil(8)];
    for (i, x) in v.iter().enumerate() {
        if *x > 0 {
            out[i / 8] |= 1 << (i % 8);
        }
    }
    out
}

fn hamming(a: &[u8], b: &[u8]) -> u32 {
    a.chunks_exact(8)
        .zip(b.chunks_exact(8))
        .map(|(x, y)| {
            (u64::from_le_bytes(x.try_into().unwrap()) ^ u64::from_le_bytes(y.try_into().unwrap()))
                .count_ones()
        })
        .sum()
}
