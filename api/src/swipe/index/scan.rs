//! Running one search over a kind's index: the filter as a bitset, then the planner (as
//! Qdrant's): vectors held in memory are scored exactly; in the base, when the filter
//! leaves at most `exact_below` designs they are scored exactly too (read back from the
//! memory-mapped graph), otherwise the HNSW graph is walked with the bitset as its
//! predicate and every hit is re-scored exactly. The exact score is the one formula of
//! [`crate::swipe::vectors::Query::finish`], rounded to 4 decimals as answered, ties broken
//! by id, so the answers of both paths rank like the exact scorer whenever they hold the
//! same designs.

use std::collections::BinaryHeap;

use super::ann::{self, Base, hamming};
use super::bits::Bits;
use super::columns::{Block, DEAD, KindIndex};
use crate::swipe::filter::SwipeFilter;
use crate::swipe::vectors::Query;

/// Which way a search went through the base (what tests and logs check).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// No base for the query's model: every vector was in memory and scored exactly.
    InMemory,
    /// The filter left few enough base designs to score them all exactly.
    ExactCandidates,
    /// The filter left too many base designs to score exactly but few enough to rank them
    /// all by their sign codes: the best `shortlist` of them were scored exactly.
    Shortlist,
    /// The HNSW graph was walked.
    Approximate,
}

/// What a search did, for tests, logs and the benchmark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explain {
    pub path: Path,
    /// Base designs the filter left (0 without a base).
    pub candidates: usize,
    /// Vectors scored from memory (changes since the base, other models).
    pub in_memory: usize,
    /// The base generation used.
    pub generation: Option<String>,
}

/// What a search needs from SQL besides the index: subscribed sources and pack members.
pub(super) struct Sets {
    pub(super) subscribed: Vec<String>,
    pub(super) pack: Option<Vec<String>>,
}

/// A search with everything owned, for the blocking pool.
pub(super) struct Plan {
    pub(super) org_id: String,
    pub(super) filter: SwipeFilter,
    pub(super) query: Query,
    pub(super) exclude: Option<String>,
    pub(super) min: f32,
    pub(super) limit: usize,
    pub(super) sets: Sets,
    pub(super) threads: Option<usize>,
    pub(super) exact_below: usize,
    pub(super) shortlist_below: usize,
    pub(super) shortlist: usize,
    pub(super) ef_search: usize,
}

/// A block of at least this many dimensions × designs is scanned on several threads (below
/// it, one core finishes in a few milliseconds and waking other threads costs more).
const PARALLEL_WORK: usize = 32_000_000;

/// A hit in the heap: greater = worse (lower score, then greater id), so the heap's top is
/// the worst of the best `limit`.
pub(super) struct Hit<'a> {
    score: f32,
    id: &'a str,
}

impl PartialEq for Hit<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == std::cmp::Ordering::Equal
    }
}
impl Eq for Hit<'_> {}
impl PartialOrd for Hit<'_> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Hit<'_> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        // As the answer's sort: -0.0 equals 0.0 (scores are never NaN: `s >= min` drops NaN).
        o.score
            .partial_cmp(&self.score)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| self.id.cmp(o.id))
    }
}

/// The integer dot product. Exact in any summation order (at most 128² × dim, far inside
/// i32); inlined into the scans, which are compiled for the SIMD the CPU has.
#[inline(always)]
pub(super) fn dot(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum()
}

/// The best `limit` hits seen so far.
struct Top<'a> {
    heap: BinaryHeap<Hit<'a>>,
    limit: usize,
    min: f32,
}

impl<'a> Top<'a> {
    fn new(limit: usize, min: f32) -> Self {
        Self {
            heap: BinaryHeap::with_capacity(limit + 1),
            limit,
            min,
        }
    }

    #[inline(always)]
    fn offer(&mut self, query: &Query, d: i32, scale: f32, id: &'a str) {
        let s = query.finish(d, scale);
        // Rounded as answered, so `min_similarity` compares with what clients see.
        let s = (s * 10_000.0).round() / 10_000.0;
        if s.is_nan() || s < self.min {
            return;
        }
        let hit = Hit { score: s, id };
        if self.heap.len() < self.limit {
            self.heap.push(hit);
        } else if self.heap.peek().is_some_and(|worst| hit < *worst) {
            self.heap.pop();
            self.heap.push(hit);
        }
    }
}

/// One thread's part of an in-memory block, run through `pulp::Arch::dispatch`: the loop is
/// compiled once per instruction set (SSE2 baseline, AVX2 …) and the best one the CPU
/// supports runs, so the dot products use the widest vectors available without unsafe code.
struct BlockScan<'p, 'x> {
    plan: &'p Plan,
    x: &'x KindIndex,
    block: &'x Block,
    mask: &'p Bits,
    range: std::ops::Range<usize>,
}

impl<'x> pulp::WithSimd for BlockScan<'_, 'x> {
    type Output = BinaryHeap<Hit<'x>>;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> Self::Output {
        let mut top = Top::new(self.plan.limit, self.plan.min);
        let dim = self.block.dim;
        let q = self.plan.query.values();
        for p in self.range {
            let slot = self.block.slots[p];
            if slot == DEAD || !self.mask.get(slot) {
                continue;
            }
            let d = dot(q, &self.block.data[p * dim..(p + 1) * dim]);
            top.offer(
                &self.plan.query,
                d,
                self.block.scales[p],
                &self.x.ids[slot as usize],
            );
        }
        top.heap
    }
}

/// Base designs scored exactly, their vectors read from the generation's vectors file.
struct BaseScan<'p, 'x, 'k> {
    plan: &'p Plan,
    x: &'x KindIndex,
    keys: &'k [u32],
}

impl<'x> pulp::WithSimd for BaseScan<'_, 'x, '_> {
    type Output = BinaryHeap<Hit<'x>>;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> Self::Output {
        let mut top = Top::new(self.plan.limit, self.plan.min);
        let Some(base) = self.x.base.as_ref() else {
            return top.heap;
        };
        let q = self.plan.query.values();
        let ids = &self.x.ids;
        base.score_keys(self.keys, |key, v| {
            let d = dot_bytes(q, v);
            top.offer(
                &self.plan.query,
                d,
                base.scales[key as usize],
                &ids[key as usize],
            );
        });
        top.heap
    }
}

/// [`dot`] against a vector as read from disk (the bytes of its int8 values).
#[inline(always)]
fn dot_bytes(a: &[i8], b: &[u8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| i32::from(*x) * i32::from(*y as i8))
        .sum()
}

/// One thread's part of a shortlist: the Hamming distance of each key's sign code over
/// its first `words` words.
struct CodeScan<'a> {
    base: &'a Base,
    query: &'a [u64],
    words: usize,
    keys: &'a [u32],
}

impl pulp::WithSimd for CodeScan<'_> {
    type Output = Vec<(u32, u32)>;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> Self::Output {
        let q = &self.query[..self.words];
        self.keys
            .iter()
            .map(|k| match self.base.code(*k).get(..self.words) {
                Some(c) => (hamming(q, c), *k),
                None => (u32::MAX, *k),
            })
            .collect()
    }
}

/// Words of a code the first stage of a shortlist compares (256 bits: one cache line).
const COARSE_WORDS: usize = 4;
/// The first stage keeps this many times the shortlist for the second.
const COARSE_KEEP: usize = 8;

/// Keys a thread takes at least when a base scan is split across cores.
const KEYS_PER_THREAD: usize = 4096;

/// `f` over `0..n` in `parts` contiguous ranges, each on a thread of its own but the first,
/// which the calling thread runs; the results in range order.
fn in_parts<T: Send>(
    n: usize,
    parts: usize,
    f: impl Fn(std::ops::Range<usize>) -> T + Sync,
) -> Vec<T> {
    let chunk = n.div_ceil(parts.max(1)).max(1);
    std::thread::scope(|scope| {
        let f = &f;
        let others: Vec<_> = (chunk..n)
            .step_by(chunk)
            .map(|start| scope.spawn(move || f(start..(start + chunk).min(n))))
            .collect();
        let mut out = vec![f(0..chunk.min(n))];
        for h in others {
            out.push(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        out
    })
}

/// `f` over `keys` in up to `threads` parts of at least [`KEYS_PER_THREAD`] keys.
fn split<'k, T: Send>(
    keys: &'k [u32],
    threads: usize,
    f: impl Fn(&'k [u32]) -> T + Sync,
) -> Vec<T> {
    let parts = threads.min(keys.len() / KEYS_PER_THREAD);
    in_parts(keys.len(), parts, |range| f(&keys[range]))
}

impl Plan {
    /// The slots this search may answer.
    fn mask(&self, x: &KindIndex) -> Bits {
        let f = &self.filter;
        let mut m = Bits::with_len(x.ids.len());
        for s in &self.sets.subscribed {
            let kept = match &f.data_source_ids {
                None => true,
                Some(ids) => ids.iter().any(|i| i == s),
            };
            if kept
                && let Some(c) = x.source.interner.get(s)
                && let Some(b) = x.source.of(c)
            {
                m.or(b);
            }
        }
        if f.include_own
            && let Some(o) = x.orgs.get(&self.org_id)
            && let Some(slots) = x.org_slots.get(&o)
        {
            for s in slots {
                if x.org[*s as usize] == o {
                    m.put(*s, true);
                }
            }
        }
        if f.archived {
            m.and(&x.archived);
        } else {
            m.and_not(&x.archived);
        }
        if let Some(st) = &f.status {
            match x.status.interner.get(st).and_then(|c| x.status.of(c)) {
                Some(b) => m.and(b),
                None => return Bits::default(),
            }
        }
        for (values, column) in [
            (&f.industry, &x.industry),
            (&f.ad_format, &x.ad_format),
            (&f.aspect_ratio, &x.aspect_ratio),
        ] {
            if !values.is_empty() {
                m.and(&column.any_of(values));
            }
        }
        if let Some(ids) = &self.sets.pack {
            let mut p = Bits::with_len(x.ids.len());
            for id in ids {
                if let Some(s) = x.slot_of.get(id.as_str()) {
                    p.put(*s, true);
                }
            }
            m.and(&p);
        }
        if let Some(e) = self
            .exclude
            .as_ref()
            .and_then(|e| x.slot_of.get(e.as_str()))
        {
            m.put(*e, false);
        }
        m.and(&x.live);
        m
    }

    pub(super) fn run(&self, x: &KindIndex) -> (Vec<(f32, String)>, Explain) {
        let mut explain = Explain {
            path: Path::InMemory,
            candidates: 0,
            in_memory: 0,
            generation: None,
        };
        if self.limit == 0 {
            return (Vec::new(), explain);
        }
        let mask = self.mask(x);
        let mut all: Vec<Hit<'_>> = Vec::new();
        if let Some(block) = x
            .blocks
            .iter()
            .find(|b| b.model_id == self.query.model_id && b.dim == self.query.dim())
        {
            explain.in_memory = block.slots.len();
            all.extend(self.scan_block(x, block, &mask));
        }
        if let Some(base) = &x.base
            && base.model_id == self.query.model_id
            && base.dim == self.query.dim()
        {
            explain.generation = Some(base.generation.clone());
            let mut candidates = mask;
            candidates.and(&x.in_base);
            explain.candidates = candidates.count();
            let threads = self.threads.unwrap_or_else(ann::cores).clamp(1, 8);
            let exact = |keys: &[u32]| -> Vec<Hit<'_>> {
                split(keys, threads, |part| {
                    pulp::Arch::new().dispatch(BaseScan {
                        plan: self,
                        x,
                        keys: part,
                    })
                })
                .into_iter()
                .flat_map(BinaryHeap::into_vec)
                .collect()
            };
            let want = (self.limit * 2).max(self.ef_search);
            let shortlist = |explain: &mut Explain| {
                explain.path = Path::Shortlist;
                self.shortlist(base, &candidates, self.shortlist.max(want), threads)
            };
            let keys: Vec<u32> = if explain.candidates <= self.exact_below {
                explain.path = Path::ExactCandidates;
                candidates.iter().collect()
            } else if explain.candidates <= self.shortlist_below {
                shortlist(&mut explain)
            } else {
                match base.search(&self.query, want, &candidates) {
                    Ok(mut keys) => {
                        explain.path = Path::Approximate;
                        keys.sort_unstable();
                        keys
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "the HNSW search failed; ranking the candidates by their codes");
                        shortlist(&mut explain)
                    }
                }
            };
            all.extend(exact(&keys));
        }
        all.sort();
        all.truncate(self.limit);
        (
            all.into_iter()
                .map(|h| (h.score, h.id.to_string()))
                .collect(),
            explain,
        )
    }

    /// The `count` candidates nearest the query by the Hamming distance of their sign codes
    /// (ties by slot), ascending by slot for the exact re-scoring. Codes longer than
    /// [`COARSE_WORDS`] are ranked in two stages: every candidate by its first
    /// [`COARSE_WORDS`] words (one cache line each, where a whole 1280-bit code takes
    /// three; the scan is bound by memory), then the best [`COARSE_KEEP`] × `count` by
    /// their whole code.
    fn shortlist(&self, base: &Base, candidates: &Bits, count: usize, threads: usize) -> Vec<u32> {
        let code = base.query_code(&self.query);
        let words = base.words();
        let coarse = words.min(COARSE_WORDS);
        let keys: Vec<u32> = candidates.iter().collect();
        let mut ranked: Vec<(u32, u32)> = split(&keys, threads, |part| {
            pulp::Arch::new().dispatch(CodeScan {
                base,
                query: &code,
                words: coarse,
                keys: part,
            })
        })
        .into_iter()
        .flatten()
        .collect();
        let keep = |ranked: &mut Vec<(u32, u32)>, n: usize| {
            if ranked.len() > n {
                ranked.select_nth_unstable(n);
                ranked.truncate(n);
            }
        };
        if coarse < words && ranked.len() > count {
            keep(&mut ranked, count.saturating_mul(COARSE_KEEP));
            let mut second: Vec<u32> = ranked.iter().map(|(_, k)| *k).collect();
            second.sort_unstable();
            ranked = pulp::Arch::new().dispatch(CodeScan {
                base,
                query: &code,
                words,
                keys: &second,
            });
        }
        keep(&mut ranked, count);
        let mut out: Vec<u32> = ranked.into_iter().map(|(_, k)| k).collect();
        out.sort_unstable();
        out
    }

    fn scan_block<'x>(&self, x: &'x KindIndex, block: &'x Block, mask: &Bits) -> Vec<Hit<'x>> {
        let n = block.slots.len();
        let threads = if let Some(t) = self.threads {
            t.max(1)
        } else if n * block.dim >= PARALLEL_WORK {
            std::thread::available_parallelism()
                .map(|t| t.get())
                .unwrap_or(1)
                .clamp(1, 8)
        } else {
            1
        };
        in_parts(n, threads, |range| {
            pulp::Arch::new()
                .dispatch(BlockScan {
                    plan: self,
                    x,
                    block,
                    mask,
                    range,
                })
                .into_vec()
        })
        .into_iter()
        .flatten()
        .collect()
    }
}
