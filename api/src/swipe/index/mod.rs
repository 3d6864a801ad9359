//! The per-process search index: every design's int8 vector of one kind plus the columns the
//! search filters on, in compact arrays, scored exactly with a top-k heap.
//!
//! - **Lazy**: a kind (image or caption vectors) is loaded from SQLite by the first search
//!   that needs it, in one read transaction, together with the change marker it saw.
//! - **Fresh**: before every search the index reads `swipe_file_revision` (one row); when it
//!   moved, it reads the designs whose `rev` is above the last value applied (an indexed
//!   range, see migration 0040) and the deletions since. Every API node does this on its own,
//!   so an archive, restore or finished ingest shows in the next search on any node.
//!   Visibility (own uploads plus subscribed data sources), `data_source_ids` and
//!   `design_pack_id` are read from SQL per search (small id sets), so a subscription toggle
//!   or a pack change takes effect at once, with the same rules as lists.
//! - **Exact**: the same integer dot product and the same float operations as
//!   [`super::vectors::Query::score`], scores rounded to 4 decimals as answered, ties broken
//!   by id: the ranking is identical to scoring every filtered candidate one by one (a test
//!   compares the two). No approximation, so recall is 1.0 by construction.
//! - **Memory**: one byte per dimension plus 4 bytes of scale per design, plus about 60
//!   bytes of id and filter columns: 100k designs take about 130 MB for image vectors
//!   (1280-d) and 40 MB for caption vectors (384-d); a kind no search used is never loaded.
//!   Nothing is reduced further (no PCA, no product quantisation), because any of those would
//!   change results.
//! - **Speed**: a scan checks the filter columns first and computes the dot product only for
//!   designs that pass; large scans are split across the available cores.
//!
//! Longer than 600 lines because it is one index: the arrays, their refresh from the change
//! counter and the scoring loop share its layout; its tests live in `index/tests.rs`.

use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, RwLock};

use futures_util::TryStreamExt;
use sqlx::Row;

use super::filter::{SUBSCRIBED_SOURCES, SwipeFilter};
use super::vectors::{self, Query};
use crate::store::Db;

/// Strings of one column as small codes; code 0 is SQL NULL.
#[derive(Default)]
struct Interner {
    codes: HashMap<String, u32>,
    count: u32,
}

impl Interner {
    fn code(&mut self, v: Option<&str>) -> u32 {
        let Some(v) = v else { return 0 };
        if let Some(c) = self.codes.get(v) {
            return *c;
        }
        self.count += 1;
        self.codes.insert(v.to_string(), self.count);
        self.count
    }

    fn get(&self, v: &str) -> Option<u32> {
        self.codes.get(v).copied()
    }

    /// A membership table over codes for the given values (`None`: every code allowed).
    fn allowed(&self, values: &[String]) -> Vec<bool> {
        let mut out = vec![false; self.count as usize + 1];
        for v in values {
            if let Some(c) = self.get(v) {
                out[c as usize] = true;
            }
        }
        out
    }
}

/// Vectors of one model and dimension, contiguous.
struct Block {
    model_id: String,
    dim: usize,
    /// Position → row slot (`DEAD` once the row left the index or moved to another block).
    slots: Vec<u32>,
    scales: Vec<f32>,
    data: Vec<i8>,
}

const DEAD: u32 = u32::MAX;

/// One kind's index.
#[derive(Default)]
struct KindIndex {
    /// The last `swipe_file_revision.rev` applied.
    marker: i64,
    slot_of: HashMap<Box<str>, u32>,
    ids: Vec<Box<str>>,
    org: Vec<u32>,
    source: Vec<u32>,
    status: Vec<u32>,
    archived: Vec<bool>,
    industry: Vec<u32>,
    ad_format: Vec<u32>,
    aspect_ratio: Vec<u32>,
    /// Slot → (block, position); `DEAD` block for a removed row.
    at: Vec<(u32, u32)>,
    orgs: Interner,
    sources: Interner,
    statuses: Interner,
    industries: Interner,
    ad_formats: Interner,
    aspect_ratios: Interner,
    blocks: Vec<Block>,
}

/// A design as read from SQL for the index.
struct Change {
    id: String,
    org_id: Option<String>,
    data_source_id: Option<String>,
    status: String,
    archived: bool,
    industry: Option<String>,
    ad_format: Option<String>,
    aspect_ratio: Option<String>,
    /// (model, scale, values) of this kind, when the design has one.
    vector: Option<(String, f32, Vec<i8>)>,
}

const CHANGE_SQL: &str = "SELECT t.id, t.org_id, t.data_source_id, t.status, t.archived_at IS NOT NULL AS archived, \
     t.industry, t.ad_format, t.aspect_ratio, v.model_id, v.vector \
     FROM swipe_files t LEFT JOIN swipe_file_vectors v ON v.swipe_file_id = t.id AND v.kind = ?";

fn change_from_row(row: &sqlx::any::AnyRow) -> Result<Change, sqlx::Error> {
    let model: Option<String> = row.try_get("model_id")?;
    let bytes: Option<Vec<u8>> = row.try_get("vector")?;
    let vector = match (model, bytes) {
        (Some(m), Some(b)) => vectors::decode(&m, &b).map(|q| (m, q.scale, q.values)),
        _ => None,
    };
    Ok(Change {
        id: row.try_get("id")?,
        org_id: row.try_get("org_id")?,
        data_source_id: row.try_get("data_source_id")?,
        status: row.try_get("status")?,
        archived: row.try_get::<crate::store::Flag, _>("archived")?.0,
        industry: row.try_get("industry")?,
        ad_format: row.try_get("ad_format")?,
        aspect_ratio: row.try_get("aspect_ratio")?,
        vector,
    })
}

impl KindIndex {
    fn remove(&mut self, id: &str) {
        if let Some(slot) = self.slot_of.get(id).copied() {
            self.detach(slot);
        }
    }

    /// Takes the slot's vector out of its block.
    fn detach(&mut self, slot: u32) {
        let (b, p) = self.at[slot as usize];
        if b != DEAD {
            self.blocks[b as usize].slots[p as usize] = DEAD;
            self.at[slot as usize] = (DEAD, DEAD);
        }
    }

    fn apply(&mut self, c: Change) {
        let Some((model, scale, values)) = c.vector else {
            // No vector of this kind: never a hit.
            self.remove(&c.id);
            return;
        };
        let org = self.orgs.code(c.org_id.as_deref());
        let source = self.sources.code(c.data_source_id.as_deref());
        let status = self.statuses.code(Some(&c.status));
        let industry = self.industries.code(c.industry.as_deref());
        let ad_format = self.ad_formats.code(c.ad_format.as_deref());
        let aspect_ratio = self.aspect_ratios.code(c.aspect_ratio.as_deref());
        let slot = match self.slot_of.get(c.id.as_str()) {
            Some(s) => *s,
            None => {
                let s = self.ids.len() as u32;
                self.ids.push(c.id.clone().into_boxed_str());
                self.slot_of.insert(c.id.into_boxed_str(), s);
                self.org.push(0);
                self.source.push(0);
                self.status.push(0);
                self.archived.push(false);
                self.industry.push(0);
                self.ad_format.push(0);
                self.aspect_ratio.push(0);
                self.at.push((DEAD, DEAD));
                s
            }
        };
        let i = slot as usize;
        self.org[i] = org;
        self.source[i] = source;
        self.status[i] = status;
        self.archived[i] = c.archived;
        self.industry[i] = industry;
        self.ad_format[i] = ad_format;
        self.aspect_ratio[i] = aspect_ratio;
        let dim = values.len();
        let (b, p) = self.at[i];
        if b != DEAD {
            let block = &mut self.blocks[b as usize];
            if block.model_id == model && block.dim == dim {
                let p = p as usize;
                block.scales[p] = scale;
                block.data[p * dim..(p + 1) * dim].copy_from_slice(&values);
                return;
            }
            self.detach(slot);
        }
        let b = match self
            .blocks
            .iter()
            .position(|x| x.model_id == model && x.dim == dim)
        {
            Some(b) => b,
            None => {
                self.blocks.push(Block {
                    model_id: model,
                    dim,
                    slots: Vec::new(),
                    scales: Vec::new(),
                    data: Vec::new(),
                });
                self.blocks.len() - 1
            }
        };
        let block = &mut self.blocks[b];
        let p = block.slots.len();
        block.slots.push(slot);
        block.scales.push(scale);
        block.data.extend_from_slice(&values);
        self.at[i] = (b as u32, p as u32);
    }
}

/// One kind: its data and the lock that serialises refreshes.
#[derive(Default)]
struct KindSlot {
    data: Arc<RwLock<Option<KindIndex>>>,
    refresh: tokio::sync::Mutex<()>,
}

/// The index of one API process, both kinds; cheap to create, loads on first use.
#[derive(Default)]
pub struct SearchIndex {
    image: KindSlot,
    text: KindSlot,
    /// Threads per scan: `None` decides by size ([`PARALLEL_WORK`]); tests force a count.
    threads: Option<usize>,
}

/// A search, in index terms: who asks, the filters, the query.
pub struct Search<'a> {
    pub org_id: &'a str,
    pub filter: &'a SwipeFilter,
    pub kind: &'static str,
    pub query: &'a Query,
    pub exclude: Option<&'a str>,
    pub min: f32,
    pub limit: usize,
}

/// What a search needs from SQL besides the index: subscribed sources and pack members.
struct Sets {
    subscribed: Vec<String>,
    pack: Option<Vec<String>>,
}

/// A block of at least this many dimensions × designs is scanned on several threads (below
/// it, one core finishes in a few milliseconds and waking other threads costs more).
const PARALLEL_WORK: usize = 32_000_000;

impl SearchIndex {
    fn slot(&self, kind: &str) -> &KindSlot {
        if kind == vectors::IMAGE {
            &self.image
        } else {
            &self.text
        }
    }

    /// Brings `kind` up to date with the database: a full load the first time, then the
    /// designs changed since the last call.
    ///
    /// # Errors
    /// Database failures.
    pub async fn refresh(&self, db: &Db, kind: &'static str) -> Result<(), sqlx::Error> {
        let slot = self.slot(kind);
        let _one = slot.refresh.lock().await;
        let marker = {
            let guard = slot.data.read().unwrap_or_else(|e| e.into_inner());
            guard.as_ref().map(|x| x.marker)
        };
        let mut tx = db.begin_read().await?;
        let rev: i64 =
            crate::store::query_scalar("SELECT rev FROM swipe_file_revision WHERE id = 1")
                .fetch_optional(&mut *tx)
                .await?
                .unwrap_or(0);
        match marker {
            Some(m) if m == rev => Ok(()),
            Some(m) => {
                let rows =
                    crate::store::query(&format!("{CHANGE_SQL} WHERE t.rev > ? ORDER BY t.rev"))
                        .bind(kind)
                        .bind(m)
                        .fetch_all(&mut *tx)
                        .await?;
                let deleted: Vec<String> = crate::store::query_scalar(
                    "SELECT swipe_file_id FROM swipe_file_deletions WHERE rev > ? ORDER BY rev",
                )
                .bind(m)
                .fetch_all(&mut *tx)
                .await?;
                let changes = rows
                    .iter()
                    .map(change_from_row)
                    .collect::<Result<Vec<_>, _>>()?;
                drop(tx);
                // The write lock waits for scans in progress: off the async threads.
                let data = slot.data.clone();
                tokio::task::spawn_blocking(move || {
                    let mut guard = data.write().unwrap_or_else(|e| e.into_inner());
                    if let Some(index) = guard.as_mut() {
                        for id in deleted {
                            index.remove(&id);
                        }
                        for c in changes {
                            index.apply(c);
                        }
                        index.marker = rev;
                    }
                })
                .await
                .map_err(|e| sqlx::Error::Protocol(format!("index update failed: {e}")))
            }
            None => {
                let mut index = KindIndex {
                    marker: rev,
                    ..KindIndex::default()
                };
                {
                    let sql = format!("{CHANGE_SQL} ORDER BY t.seq");
                    let mut rows = crate::store::query(&sql).bind(kind).fetch(&mut *tx);
                    while let Some(row) = rows.try_next().await? {
                        index.apply(change_from_row(&row)?);
                    }
                }
                drop(tx);
                tracing::info!(
                    kind,
                    designs = index.ids.len(),
                    marker = rev,
                    "swipe-file search index loaded"
                );
                let data = slot.data.clone();
                tokio::task::spawn_blocking(move || {
                    *data.write().unwrap_or_else(|e| e.into_inner()) = Some(index);
                })
                .await
                .map_err(|e| sqlx::Error::Protocol(format!("index update failed: {e}")))
            }
        }
    }

    /// The exact ranking: every design the organisation sees that `filter` leaves (minus
    /// `exclude`), scored against the query, those at or above `min` (rounded to 4
    /// decimals, as answered), best first (ties by id), at most `limit`.
    ///
    /// # Errors
    /// Database failures.
    pub async fn search(&self, db: &Db, s: &Search<'_>) -> Result<Vec<(f32, String)>, sqlx::Error> {
        self.refresh(db, s.kind).await?;
        let subscribed: Vec<String> = crate::store::query_scalar(SUBSCRIBED_SOURCES)
            .bind(s.org_id)
            .fetch_all(&db.read)
            .await?;
        let pack = match &s.filter.design_pack_id {
            Some(p) => Some(
                crate::store::query_scalar(
                    "SELECT swipe_file_id FROM design_pack_items WHERE pack_id = ?",
                )
                .bind(p)
                .fetch_all(&db.read)
                .await?,
            ),
            None => None,
        };
        let sets = Sets { subscribed, pack };
        let data = self.slot(s.kind).data.clone();
        let plan = Plan {
            org_id: s.org_id.to_string(),
            filter: s.filter.clone(),
            query: s.query.clone(),
            exclude: s.exclude.map(str::to_string),
            min: s.min,
            limit: s.limit,
            sets,
            threads: self.threads,
        };
        tokio::task::spawn_blocking(move || {
            let guard = data.read().unwrap_or_else(|e| e.into_inner());
            match guard.as_ref() {
                Some(index) => plan.run(index),
                None => Vec::new(),
            }
        })
        .await
        .map_err(|e| sqlx::Error::Protocol(format!("search task failed: {e}")))
    }
}

/// A search with everything owned, for the blocking pool.
struct Plan {
    org_id: String,
    filter: SwipeFilter,
    query: Query,
    exclude: Option<String>,
    min: f32,
    limit: usize,
    sets: Sets,
    threads: Option<usize>,
}

/// Which rows pass, as tables over the index's codes.
struct Mask {
    own_org: Option<u32>,
    /// Source code → the organisation sees it and the filter keeps it.
    source: Vec<bool>,
    status: Option<Vec<bool>>,
    archived: bool,
    industry: Option<Vec<bool>>,
    ad_format: Option<Vec<bool>>,
    aspect_ratio: Option<Vec<bool>>,
    pack: Option<Vec<bool>>,
    exclude: Option<u32>,
}

impl Mask {
    fn new(p: &Plan, x: &KindIndex) -> Self {
        let f = &p.filter;
        let own_org = if f.include_own {
            x.orgs.get(&p.org_id)
        } else {
            None
        };
        let mut source = vec![false; x.sources.count as usize + 1];
        for s in &p.sets.subscribed {
            let kept = match &f.data_source_ids {
                None => true,
                Some(ids) => ids.iter().any(|i| i == s),
            };
            if kept && let Some(c) = x.sources.get(s) {
                source[c as usize] = true;
            }
        }
        let table = |values: &[String], interner: &Interner| {
            (!values.is_empty()).then(|| interner.allowed(values))
        };
        let pack = p.sets.pack.as_ref().map(|ids| {
            let mut m = vec![false; x.ids.len()];
            for id in ids {
                if let Some(s) = x.slot_of.get(id.as_str()) {
                    m[*s as usize] = true;
                }
            }
            m
        });
        Mask {
            own_org,
            source,
            status: f
                .status
                .as_ref()
                .map(|s| x.statuses.allowed(std::slice::from_ref(s))),
            archived: f.archived,
            industry: table(&f.industry, &x.industries),
            ad_format: table(&f.ad_format, &x.ad_formats),
            aspect_ratio: table(&f.aspect_ratio, &x.aspect_ratios),
            pack,
            exclude: p
                .exclude
                .as_ref()
                .and_then(|e| x.slot_of.get(e.as_str()).copied()),
        }
    }

    #[inline(always)]
    fn pass(&self, x: &KindIndex, slot: u32) -> bool {
        let i = slot as usize;
        let org = x.org[i];
        let visible = if org == 0 {
            self.source[x.source[i] as usize]
        } else {
            Some(org) == self.own_org
        };
        let within = |t: &Option<Vec<bool>>, code: u32| t.as_ref().is_none_or(|t| t[code as usize]);
        visible
            && x.archived[i] == self.archived
            && within(&self.status, x.status[i])
            && within(&self.industry, x.industry[i])
            && within(&self.ad_format, x.ad_format[i])
            && within(&self.aspect_ratio, x.aspect_ratio[i])
            && self.pack.as_ref().is_none_or(|m| m[i])
            && self.exclude != Some(slot)
    }
}

/// A hit in the heap: greater = worse (lower score, then greater id), so the heap's top is
/// the worst of the best `limit`.
struct Hit<'a> {
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
/// i32); inlined into [`Scan`], which is compiled for the SIMD the CPU has.
#[inline(always)]
fn dot(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum()
}

/// One thread's part of a scan, run through `pulp::Arch::dispatch`: the loop is compiled
/// once per instruction set (SSE2 baseline, AVX2 …) and the best one the CPU supports runs,
/// so the dot products use the widest vectors available without unsafe code here.
struct Scan<'p, 'x> {
    plan: &'p Plan,
    x: &'x KindIndex,
    block: &'x Block,
    mask: &'p Mask,
    range: std::ops::Range<usize>,
}

impl<'x> pulp::WithSimd for Scan<'_, 'x> {
    type Output = BinaryHeap<Hit<'x>>;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> Self::Output {
        self.plan.scan(self.x, self.block, self.mask, self.range)
    }
}

impl Plan {
    fn run(&self, x: &KindIndex) -> Vec<(f32, String)> {
        let Some(block) = x
            .blocks
            .iter()
            .find(|b| b.model_id == self.query.model_id && b.dim == self.query.dim())
        else {
            return Vec::new();
        };
        if self.limit == 0 {
            return Vec::new();
        }
        let mask = Mask::new(self, x);
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
        let chunk = n.div_ceil(threads).max(1);
        let scan = |range: std::ops::Range<usize>| {
            pulp::Arch::new().dispatch(Scan {
                plan: self,
                x,
                block,
                mask: &mask,
                range,
            })
        };
        // The calling thread scans the first part itself; the others get one thread each.
        let heaps: Vec<BinaryHeap<Hit<'_>>> = std::thread::scope(|scope| {
            let others: Vec<_> = (chunk..n)
                .step_by(chunk)
                .map(|start| scope.spawn(move || scan(start..(start + chunk).min(n))))
                .collect();
            let mut heaps = vec![scan(0..chunk.min(n))];
            for h in others {
                heaps.push(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
            }
            heaps
        });
        let mut all: Vec<Hit<'_>> = heaps.into_iter().flatten().collect();
        all.sort();
        all.truncate(self.limit);
        all.into_iter()
            .map(|h| (h.score, h.id.to_string()))
            .collect()
    }

    #[inline(always)]
    fn scan<'a>(
        &self,
        x: &'a KindIndex,
        block: &Block,
        mask: &Mask,
        range: std::ops::Range<usize>,
    ) -> BinaryHeap<Hit<'a>> {
        let mut heap: BinaryHeap<Hit<'a>> = BinaryHeap::with_capacity(self.limit + 1);
        let dim = block.dim;
        let q = self.query.values();
        for p in range {
            let slot = block.slots[p];
            if slot == DEAD || !mask.pass(x, slot) {
                continue;
            }
            let d = dot(q, &block.data[p * dim..(p + 1) * dim]);
            let s = self.query.finish(d, block.scales[p]);
            // Rounded as answered, so `min_similarity` compares with what clients see.
            let s = (s * 10_000.0).round() / 10_000.0;
            if s.is_nan() || s < self.min {
                continue;
            }
            let hit = Hit {
                score: s,
                id: &x.ids[slot as usize],
            };
            if heap.len() < self.limit {
                heap.push(hit);
            } else if heap.peek().is_some_and(|worst| hit < *worst) {
                heap.pop();
                heap.push(hit);
            }
        }
        heap
    }
}

#[cfg(test)]
mod tests;
