//! The search index of an API process: per kind (image or caption vectors), every design's
//! int8 vector and the columns the search filters on, answered approximately from an HNSW
//! graph on local disk where the collection is large and exactly where it is small.
//!
//! - **Engine**: USearch (the `usearch` crate, C++ through cxx), chosen over hannoy on this
//!   workload; the numbers are below. Its HNSW graph is built over each design's *sign
//!   code* (one bit per dimension, set where the int8 component is positive: 160 bytes at
//!   1280-d) with the Hamming metric ([`ann`]); the int8 vectors SQL stores sit beside it
//!   in a flat file read by position, and the codes are also held in memory. A generation
//!   folder ([`disk`]) holds all of it with the columns; the graph is opened as a
//!   read-only memory map, so a restart opens it in well under a second instead of
//!   reading every vector from SQL, and processes of one node share its pages and the
//!   vectors' page cache.
//! - **Exact where it pays, approximate where it must**: a search turns its filter into a
//!   bitset over the designs ([`bits`], one set per column value, kept up to date as
//!   changes arrive) and counts what it leaves, then takes one of three paths ([`scan`]):
//!   at most [`IndexConfig::exact_below`] designs (20,000 by default) are all scored
//!   exactly (Qdrant's planner does the same); up to [`IndexConfig::shortlist_below`]
//!   (300,000) are ranked by the Hamming distance of their codes and the best
//!   [`IndexConfig::shortlist`] (1,000) scored exactly; more walk the graph with the bitset
//!   as its predicate and the `max(2 × limit, ef)` keys it returns are scored exactly.
//!   So similarities, `min_similarity` and ties by id are the exact scorer's; recall@20
//!   against it is ≥ 0.98 under every filter kind (asserted in the tests, measured at a
//!   million designs by `scripts/bench-swipe`, table below).
//! - **Fresh**: before every search the index reads `swipe_file_revision` (one row); when it
//!   moved it reads the designs whose `rev` is above the last value applied and the
//!   deletions since (migration 0040). Column changes (archive, restore, status, class) are
//!   applied to the bitsets in place; a new or changed vector goes to an in-memory block
//!   scored exactly, and its stale graph entry is masked out. Visibility, `data_source_ids`
//!   and `design_pack_id` are read from SQL per search. So every node answers what SQL
//!   says within one search, however far behind its graph is: what the graph lacks is
//!   scored exactly.
//! - **Rebuilt in the background**: when the in-memory vectors of the main model reach
//!   [`IndexConfig::rebuild_after`] (or a collection without a graph reaches
//!   [`IndexConfig::build_at`]), one task copies the index, builds a new generation on every
//!   core, catches it up with SQL and swaps it in under the write lock; searches go on
//!   meanwhile. One process per node builds (a lock file); the others see the new
//!   `CURRENT` at their next search and open it.
//! - **Without a folder** ([`SearchIndex::default`]): everything stays in memory and exact,
//!   as before issue 25 (the reference the tests and the benchmark compare against).
//!
//! ## Engines measured (issue 25)
//! `scripts/eval-vector-engines/run` (a crate of its own, outside the workspace, so hannoy
//! never enters the default build) built both on the same 20,000 vectors per dimension,
//! drawn from a mixture of 66 clusters, with M = 16 and ef_construction = ef_search = 128,
//! on this 2-core machine shared with other builds (load 2.3–3.7); 200 queries by example,
//! recall@20 of the engine's own answer against brute force, before any re-scoring:
//!
//! | dim | engine | build | on disk | p50 | recall@20 | p50, 10 % filter | recall@20, 10 % |
//! |---|---|---|---|---|---|---|---|
//! | 384 | USearch 2.26, int8 | 2.0 s | 11 MB | 0.08 ms | 0.985 | 0.75 ms | 0.997 |
//! | 384 | hannoy 0.3, f32 | 25.3 s | 85 MB | 0.58 ms | 0.999 | 6.27 ms | 1.000 |
//! | 1280 | USearch 2.26, int8 | 4.9 s | 29 MB | 0.17 ms | 0.986 | 1.93 ms | 0.996 |
//! | 1280 | hannoy 0.3, f32 | 34.4 s | 167 MB | 0.81 ms | 1.000 | 8.66 ms | 1.000 |
//!
//! USearch builds 7–13× faster, searches 5–7× faster and stores int8 (a quarter of
//! hannoy's f32 bytes; since the second pass below, 1-bit codes); its slightly lower raw
//! recall is recovered by asking the walk for `max(2 × limit, ef)` candidates and
//! re-scoring them. hannoy compiles faster (39 s cold in
//! release against USearch's 135 s of C++, same machine) but needs `unsafe` to open its
//! LMDB environment, which this workspace forbids. LanceDB was not tried: its Arrow and
//! DataFusion tree alone would take a large share of CI's 90 minutes.
//!
//! ## Sign codes instead of int8 vectors in the graph (issue 25, second pass)
//! The first graph held the int8 vectors themselves (cosine metric) and the exact path read
//! each candidate back through USearch's key lookup. Measured at 200,000 designs
//! (`PARTS=scale SCALE=200000 scripts/bench-swipe`, load 4–9): by example p50 14.8 ms
//! unfiltered, 18 ms at 10 % (exact over 20,007 candidates, about 1 µs each), the image
//! graph built in 654–952 s, 543 MB resident of which 433 MB mapped graph pages: at 1M the
//! image graph alone would be 1.5 GB paged in by every walk, and its build about 2 hours.
//! `examples/recall_probe.rs` (USearch alone) then showed that a graph over 1-bit codes
//! (`b1`, Hamming) builds 100,000 1280-d designs in 20 s and, with its 400 candidates
//! re-scored exactly, keeps recall@20 at 1.000 unfiltered and 0.990 at 50 % (1.8 and 2.9
//! ms p50), while a filtered walk at 10 % stays poor (0.74 at 384-d) as with int8: hence the
//! shortlist path between the exact and the walk. A Hamming scan over 100,000 scattered
//! 1280-bit codes is bound by memory (11–16 ms on one core here, three cache lines a code);
//! on the first 256 bits (one line) it takes 1.7–2.3 ms, hence the two stages.
//!
//! `scripts/bench-swipe` at a million designs (`PARTS=scale scripts/bench-swipe`, release,
//! this 2-core machine, load 1.2–1.9; queries by example are stored designs' vectors, by
//! text fresh draws of the mixture): graphs built in 217 s (image) and 146 s (caption),
//! 1,926 MB and 806 MB on disk with the vectors and codes; opened cold by a second process in
//! 0.94 s and 0.77 s; resident after all 1,000 queries 1,397 MB for both kinds (658 MB
//! anonymous: columns and codes 486 MB; 739 MB mapped graph pages). The exact column is the
//! in-memory exact scorer on the same queries in the same run:
//!
//! | query | keeps | path | p50 ms | p99 ms | recall@20 | exact p50 ms |
//! |---|---|---|---|---|---|---|
//! | by example | 100 % | walk | 3.55 | 7.26 | 0.995 | 144.6 |
//! | by example | 50 % | walk | 4.59 | 5.54 | 0.999 | 85.1 |
//! | by example | 10 % | shortlist | 7.93 | 11.10 | 1.000 | 31.3 |
//! | by example | 1 % | exact | 6.25 | 11.34 | 1.000 | 4.2 |
//! | by example | 0.1 % | exact | 3.35 | 4.72 | 1.000 | 3.8 |
//! | by text | 100 % | walk | 3.23 | 7.61 | 0.994 | 45.8 |
//! | by text | 50 % | walk | 4.03 | 7.76 | 1.000 | 30.0 |
//! | by text | 10 % | shortlist | 5.46 | 8.21 | 1.000 | 14.6 |
//! | by text | 1 % | exact | 5.14 | 8.47 | 1.000 | 3.4 |
//! | by text | 0.1 % | exact | 3.44 | 5.51 | 1.000 | 4.5 |
//!
//! ## The planner's thresholds, measured (issue 25)
//! The same run, by example, 30 queries per filter, each path forced in turn (p50 ms):
//!
//! | filter keeps | candidates | walk | shortlist | exact |
//! |---|---|---|---|---|
//! | 50 % | 500,564 | 4.8 | 20.5 | 116.4 |
//! | 10 % | 100,283 | 15.7 | 7.6 | 49.4 |
//! | 1 % | 10,145 | 98.4 | 4.4 | 6.5 |
//! | 0.1 % | 1,000 | 533.2 | 3.4 | 3.1 |
//!
//! A filtered walk gets slower as the filter narrows (USearch's predicate walk visits the
//! designs it rejects); the shortlist's cost follows the candidates (about 35 ns each plus
//! the 1,000 reads); the exact path's too (about 0.5 µs each on two cores, one positioned
//! read per scattered slot). The shortlist overtakes the walk between 100,000 and 500,000
//! candidates, hence 300,000; exact scoring stays inside the targets up to about 20,000
//! candidates and answers exactly what the reference answers, hence 20,000 (the shortlist
//! would be a little faster there). The crossovers are counts measured at 1M; at other sizes
//! they hold roughly, as both sides scale with the candidates. Recall on data unlike the
//! mixture: non-negative vectors (as pooled ReLU features) are asserted ≥ 0.95 in the tests
//! (0.969–0.975 on the worst filter, 0.49 with signs about zero instead of the median).
//!
//! ## Memory
//! Columns: about 250 bytes a design per kind (ids, the id map, codes per column, the
//! bitsets). Codes: 160 bytes a design at 1280-d, 48 at 384-d, in memory. Vectors: in
//! `vectors.bin`, read by position (page cache: shared by the node's processes,
//! reclaimable, not resident in any of them). The graph: mapped, shared.
//!
//! Longer than 600 lines in total, so it is split: [`columns`] (the slots), [`scan`] (the
//! planner and exact scoring), [`ann`] (USearch), [`disk`] (generations), [`bits`].

mod ann;
mod bits;
mod columns;
mod config;
mod disk;
mod scan;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use futures_util::TryStreamExt;

pub use config::{
    DEFAULT_EXACT_BELOW, DEFAULT_SHORTLIST, DEFAULT_SHORTLIST_BELOW, IndexConfig, SwipeIndexArgs,
};
pub use disk::{DiskError, size_on_disk};
pub use scan::{Explain, Path};

use super::filter::{SUBSCRIBED_SOURCES, SwipeFilter};
use super::vectors::{self, Query};
use crate::store::Db;
use columns::{CHANGE_SQL, Change, KindIndex, change_from_row};
#[cfg(test)]
use scan::dot;
use scan::{Plan, Sets};

/// One kind: its data, the lock that serialises refreshes and what it did.
#[derive(Default)]
struct KindShared {
    data: RwLock<Option<KindIndex>>,
    refresh: tokio::sync::Mutex<()>,
    building: AtomicBool,
    builds: AtomicUsize,
    opened: AtomicUsize,
    /// The `CURRENT` generation this process last opened or refused (not read again).
    seen: Mutex<Option<String>>,
    /// When the last background build failed: the next waits [`RETRY_BUILD`].
    failed_at: Mutex<Option<Instant>>,
}

/// How long after a failed background build the next may start.
const RETRY_BUILD: std::time::Duration = std::time::Duration::from_secs(300);

/// The index of one API process, both kinds; cheap to create, loads on first use.
#[derive(Default)]
pub struct SearchIndex {
    image: Arc<KindShared>,
    text: Arc<KindShared>,
    /// Threads per in-memory scan: `None` decides by size; tests force a count.
    threads: Option<usize>,
    config: IndexConfig,
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

/// The state of one kind, for `/metrics`, the dashboard and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KindStatus {
    pub loaded: bool,
    pub designs: usize,
    /// Vectors held in memory and scored exactly.
    pub in_memory: usize,
    /// Vectors in the graph (some may be masked out since).
    pub in_graph: usize,
    pub generation: Option<String>,
    /// Generations this process built.
    pub builds: usize,
    /// Generations this process opened from disk (at start or built by another process).
    pub opened: usize,
    pub building: bool,
    pub marker: i64,
}

type DbResult<T> = Result<T, sqlx::Error>;

fn task_failed(e: impl std::fmt::Display) -> sqlx::Error {
    sqlx::Error::Protocol(format!("index task failed: {e}"))
}

impl SearchIndex {
    /// An index kept as `config` says.
    pub fn new(config: IndexConfig) -> Self {
        Self {
            config,
            ..Self::default()
        }
    }

    /// The same with every in-memory scan split across `threads` (tests).
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    fn slot(&self, kind: &str) -> &Arc<KindShared> {
        if kind == vectors::IMAGE {
            &self.image
        } else {
            &self.text
        }
    }

    /// Where `kind` stands.
    pub fn status(&self, kind: &str) -> KindStatus {
        let k = self.slot(kind);
        let guard = k.data.read().unwrap_or_else(|e| e.into_inner());
        let mut s = KindStatus {
            builds: k.builds.load(Ordering::Relaxed),
            opened: k.opened.load(Ordering::Relaxed),
            building: k.building.load(Ordering::Relaxed),
            ..KindStatus::default()
        };
        if let Some(x) = guard.as_ref() {
            s.loaded = true;
            s.designs = x.designs();
            s.in_memory = x.in_memory();
            s.marker = x.marker;
            if let Some(b) = &x.base {
                s.in_graph = b.size();
                s.generation = Some(b.generation.clone());
            }
        }
        s
    }

    /// Bytes of columns and in-memory vectors of both kinds (not the mapped graphs).
    pub fn heap_bytes(&self) -> usize {
        [&self.image, &self.text]
            .iter()
            .map(|k| {
                k.data
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .as_ref()
                    .map_or(0, KindIndex::bytes)
            })
            .sum()
    }

    /// Brings `kind` up to date with the database: at first use it opens the generation on
    /// disk (or reads every design from SQL), then applies the designs changed since; a
    /// generation that another process of this node built is opened and swapped in; a
    /// build starts in the background when due.
    ///
    /// # Errors
    /// Database failures.
    pub async fn refresh(&self, db: &Db, kind: &'static str) -> DbResult<()> {
        let k = self.slot(kind).clone();
        let one = k.refresh.lock().await;
        let loaded = k.data.read().unwrap_or_else(|e| e.into_inner()).is_some();
        if (!loaded || self.newer_on_disk(&k, kind))
            && let Some(x) = self.open_current(&k, kind).await
        {
            adopt(db, kind, &k, x).await?;
        }
        if k.data.read().unwrap_or_else(|e| e.into_inner()).is_none() {
            let x = full_load(db, kind).await?;
            tracing::info!(
                kind,
                designs = x.designs(),
                marker = x.marker,
                "swipe-file search index loaded from SQL"
            );
            *k.data.write().unwrap_or_else(|e| e.into_inner()) = Some(x);
        }
        catch_up(db, kind, &k).await?;
        drop(one);
        self.maybe_build(db, kind, &k);
        Ok(())
    }

    /// Whether `CURRENT` names a generation this process has not opened or refused.
    fn newer_on_disk(&self, k: &KindShared, kind: &str) -> bool {
        let Some(root) = &self.config.dir else {
            return false;
        };
        let Some((name, _)) = disk::current(root, kind) else {
            return false;
        };
        k.seen.lock().unwrap_or_else(|e| e.into_inner()).as_deref() != Some(name.as_str())
    }

    /// Opens the current generation of `kind`, if there is a usable one.
    async fn open_current(&self, k: &KindShared, kind: &'static str) -> Option<KindIndex> {
        let root = self.config.dir.clone()?;
        let (name, _) = disk::current(&root, kind)?;
        *k.seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(name.clone());
        let ef = self.config.ef_search;
        let t = Instant::now();
        match tokio::task::spawn_blocking(move || ann::open(&root, kind, ef)).await {
            Ok(Ok(Some(x))) => {
                tracing::info!(kind, generation = %name, designs = x.designs(), marker = x.marker, ms = t.elapsed().as_millis() as u64, "swipe-file search index opened from disk");
                k.opened.fetch_add(1, Ordering::Relaxed);
                Some(x)
            }
            Ok(Ok(None)) => None,
            Ok(Err(e)) => {
                tracing::warn!(kind, generation = %name, error = %e, "the swipe-file search index on disk cannot be used; it will be rebuilt");
                None
            }
            Err(e) => {
                tracing::warn!(kind, error = %e, "opening the swipe-file search index failed");
                None
            }
        }
    }

    /// Starts a background build of `kind` when one is due and none runs.
    fn maybe_build(&self, db: &Db, kind: &'static str, k: &Arc<KindShared>) {
        let Some(root) = self.config.dir.clone() else {
            return;
        };
        let due = {
            let guard = k.data.read().unwrap_or_else(|e| e.into_inner());
            let Some(x) = guard.as_ref() else { return };
            match (&x.base, x.dominant()) {
                (_, None) => false,
                (None, Some((_, _, n))) => n >= self.config.build_at,
                (Some(base), Some((m, d, _))) => {
                    let beside = x
                        .blocks
                        .iter()
                        .filter(|b| b.model_id == m && b.dim == d)
                        .map(|b| b.live())
                        .sum::<usize>();
                    let other_model = base.model_id != m || base.dim != d;
                    beside >= self.config.rebuild_after || other_model
                }
            }
        };
        let failed_recently = k
            .failed_at
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|t| t.elapsed() < RETRY_BUILD);
        if !due || failed_recently || k.building.swap(true, Ordering::AcqRel) {
            return;
        }
        let (db, k) = (db.clone(), k.clone());
        let ef = self.config.ef_search;
        tokio::spawn(async move {
            if let Err(e) = build_and_swap(&db, kind, &k, root, ef).await {
                tracing::warn!(kind, error = %e, "building the swipe-file search index failed; searches stay exact over what the graph lacks");
                *k.failed_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
            }
            k.building.store(false, Ordering::Release);
        });
    }

    /// Builds a new generation of `kind` now (what the background task does), waiting for
    /// it: the benchmark, tests and `adforge admin` call it. Returns its name; `None` when
    /// the kind has no vectors, no folder is configured or another process is building.
    ///
    /// # Errors
    /// Database, disk or engine failures.
    pub async fn build_now(
        &self,
        db: &Db,
        kind: &'static str,
    ) -> Result<Option<String>, crate::Error> {
        let Some(root) = self.config.dir.clone() else {
            return Ok(None);
        };
        self.refresh(db, kind).await?;
        let k = self.slot(kind).clone();
        while k.building.swap(true, Ordering::AcqRel) {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let out = build_and_swap(db, kind, &k, root, self.config.ef_search).await;
        k.building.store(false, Ordering::Release);
        out
    }

    /// The ranking, with what the search did: every design the organisation sees that
    /// `filter` leaves (minus `exclude`), at or above `min` (rounded to 4 decimals, as
    /// answered), best first (ties by id), at most `limit`.
    ///
    /// # Errors
    /// Database failures.
    pub async fn search_explained(
        &self,
        db: &Db,
        s: &Search<'_>,
    ) -> DbResult<(Vec<(f32, String)>, Explain)> {
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
        let k = self.slot(s.kind).clone();
        let plan = Plan {
            org_id: s.org_id.to_string(),
            filter: s.filter.clone(),
            query: s.query.clone(),
            exclude: s.exclude.map(str::to_string),
            min: s.min,
            limit: s.limit,
            sets: Sets { subscribed, pack },
            threads: self.threads,
            exact_below: self.config.exact_below,
            shortlist_below: self.config.shortlist_below,
            shortlist: self.config.shortlist,
            ef_search: self.config.ef_search,
        };
        tokio::task::spawn_blocking(move || {
            let guard = k.data.read().unwrap_or_else(|e| e.into_inner());
            match guard.as_ref() {
                Some(x) => plan.run(x),
                None => (
                    Vec::new(),
                    Explain {
                        path: Path::InMemory,
                        candidates: 0,
                        in_memory: 0,
                        generation: None,
                    },
                ),
            }
        })
        .await
        .map_err(task_failed)
    }

    /// The ranking (see [`SearchIndex::search_explained`]).
    ///
    /// # Errors
    /// Database failures.
    pub async fn search(&self, db: &Db, s: &Search<'_>) -> DbResult<Vec<(f32, String)>> {
        Ok(self.search_explained(db, s).await?.0)
    }
}

/// Every design of `kind`, read from SQL in one read transaction.
async fn full_load(db: &Db, kind: &'static str) -> DbResult<KindIndex> {
    let mut tx = db.begin_read().await?;
    let rev: i64 = crate::store::query_scalar("SELECT rev FROM swipe_file_revision WHERE id = 1")
        .fetch_optional(&mut *tx)
        .await?
        .unwrap_or(0);
    let mut x = KindIndex {
        marker: rev,
        ..KindIndex::default()
    };
    {
        let sql = format!("{CHANGE_SQL} ORDER BY t.seq");
        let mut rows = crate::store::query(&sql).bind(kind).fetch(&mut *tx);
        while let Some(row) = rows.try_next().await? {
            x.apply(change_from_row(&row)?);
        }
    }
    Ok(x)
}

/// The counter now, and the designs changed and deleted since `marker`.
async fn changes_since(
    db: &Db,
    kind: &'static str,
    marker: i64,
) -> DbResult<(i64, Vec<Change>, Vec<String>)> {
    let mut tx = db.begin_read().await?;
    let rev: i64 = crate::store::query_scalar("SELECT rev FROM swipe_file_revision WHERE id = 1")
        .fetch_optional(&mut *tx)
        .await?
        .unwrap_or(0);
    if rev == marker {
        return Ok((rev, Vec::new(), Vec::new()));
    }
    let rows = crate::store::query(&format!("{CHANGE_SQL} WHERE t.rev > ? ORDER BY t.rev"))
        .bind(kind)
        .bind(marker)
        .fetch_all(&mut *tx)
        .await?;
    let deleted: Vec<String> = crate::store::query_scalar(
        "SELECT swipe_file_id FROM swipe_file_deletions WHERE rev > ? ORDER BY rev",
    )
    .bind(marker)
    .fetch_all(&mut *tx)
    .await?;
    let changes = rows
        .iter()
        .map(change_from_row)
        .collect::<Result<Vec<_>, _>>()?;
    Ok((rev, changes, deleted))
}

fn apply_all(x: &mut KindIndex, rev: i64, changes: Vec<Change>, deleted: Vec<String>) {
    for id in deleted {
        x.remove(&id);
    }
    for c in changes {
        x.apply(c);
    }
    x.marker = rev;
}

/// Applies the changes since the live index's marker (the caller holds the refresh lock).
async fn catch_up(db: &Db, kind: &'static str, k: &Arc<KindShared>) -> DbResult<()> {
    let Some(marker) = k
        .data
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(|x| x.marker)
    else {
        return Ok(());
    };
    let (rev, changes, deleted) = changes_since(db, kind, marker).await?;
    if rev == marker {
        return Ok(());
    }
    // The write lock waits for scans in progress: off the async threads.
    let k = k.clone();
    tokio::task::spawn_blocking(move || {
        let mut guard = k.data.write().unwrap_or_else(|e| e.into_inner());
        if let Some(x) = guard.as_mut() {
            apply_all(x, rev, changes, deleted);
        }
    })
    .await
    .map_err(task_failed)
}

/// Catches a freshly opened generation up with SQL and makes it the live index (the caller
/// holds the refresh lock). A generation ahead of the database (restored from a backup,
/// another database) is refused.
async fn adopt(db: &Db, kind: &'static str, k: &Arc<KindShared>, mut x: KindIndex) -> DbResult<()> {
    let (rev, changes, deleted) = changes_since(db, kind, x.marker).await?;
    if x.marker > rev {
        tracing::warn!(
            kind,
            generation_marker = x.marker,
            database_marker = rev,
            "the swipe-file search index on disk is ahead of the database; it is ignored and rebuilt"
        );
        return Ok(());
    }
    let k = k.clone();
    tokio::task::spawn_blocking(move || {
        apply_all(&mut x, rev, changes, deleted);
        *k.data.write().unwrap_or_else(|e| e.into_inner()) = Some(x);
    })
    .await
    .map_err(task_failed)
}

/// Builds a generation from the live index (streamed, see [`ann::build`]), opens it and
/// swaps it in.
async fn build_and_swap(
    db: &Db,
    kind: &'static str,
    k: &Arc<KindShared>,
    root: PathBuf,
    ef: usize,
) -> Result<Option<String>, crate::Error> {
    let disk_err = |e: DiskError| crate::Error::Invalid(format!("swipe-file search index: {e}"));
    let lock_root = root.clone();
    let Some(lock) = tokio::task::spawn_blocking(move || disk::BuildLock::take(&lock_root, kind))
        .await
        .map_err(|e| crate::Error::Invalid(e.to_string()))?
        .map_err(disk_err)?
    else {
        return Ok(None);
    };
    let t = Instant::now();
    let k2 = k.clone();
    let built_root = root.clone();
    let built = tokio::task::spawn_blocking(move || ann::build(&k2.data, &built_root, kind))
        .await
        .map_err(|e| crate::Error::Invalid(e.to_string()))?
        .map_err(disk_err)?;
    drop(lock);
    let Some(name) = built else { return Ok(None) };
    tracing::info!(kind, generation = %name, secs = t.elapsed().as_secs_f64(), "swipe-file search index built");
    k.builds.fetch_add(1, Ordering::Relaxed);
    let _one = k.refresh.lock().await;
    let open_root = root.clone();
    let opened = tokio::task::spawn_blocking(move || ann::open(&open_root, kind, ef))
        .await
        .map_err(|e| crate::Error::Invalid(e.to_string()))?
        .map_err(disk_err)?;
    if let Some(x) = opened {
        *k.seen.lock().unwrap_or_else(|e| e.into_inner()) =
            x.base.as_ref().map(|b| b.generation.clone());
        adopt(db, kind, k, x).await?;
    }
    Ok(Some(name))
}

#[cfg(test)]
mod tests;
