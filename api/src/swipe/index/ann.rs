//! The approximate base of a kind: a USearch HNSW graph over the designs' own int8 vectors
//! (the bytes SQL stores, cosine metric), saved in a generation folder ([`super::disk`])
//! and opened as a read-only memory map that every process of the node shares.
//!
//! A graph hit is only a candidate: its vector is read back from the graph
//! ([`Base::vector`]) and scored with the exact formula of [`crate::swipe::vectors`], so
//! similarities, `min_similarity` and the tie order by id are those of the exact scorer;
//! only a design the graph walk never reached can be missing (recall, measured in the
//! tests and by `scripts/bench-swipe`).
//!
//! # Invariants
//! - The key of a vector is the slot of its design in the generation's columns file.
//! - A base is immutable once opened: changes after its marker live in the caller's
//!   in-memory blocks, and a base slot whose design changed is masked out (`in_base`).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, RwLock};

use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

use super::bits::Bits;
use super::columns::KindIndex;
use super::disk::{self, DiskError};

/// Graph degree (USearch's `connectivity`, HNSW's M). 32, not the usual 16: on the
/// benchmark's clustered mixture (20,000 designs, 1280-d, ef 400, 400 candidates re-scored;
/// `examples/recall_probe.rs`) recall@20 was 0.934 unfiltered and 0.958 under a 50 % filter
/// at 16, and 0.981 and 0.993 at 32, for about 128 more bytes a design on disk.
pub const CONNECTIVITY: usize = 32;
/// Candidates kept while inserting (HNSW's ef_construction).
pub const EXPANSION_ADD: usize = 128;

/// One opened generation.
pub struct Base {
    index: Index,
    pub model_id: String,
    pub dim: usize,
    /// Key → the vector's int8 scale (as stored in SQL).
    pub scales: Vec<f32>,
    /// The generation's folder name.
    pub generation: String,
    /// USearch serves as many searches at once as it has thread contexts (one per core);
    /// more wait here.
    permits: Permits,
}

struct Permits {
    free: Mutex<usize>,
    cv: Condvar,
}

impl Permits {
    fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        {
            let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
            while *free == 0 {
                free = self.cv.wait(free).unwrap_or_else(|e| e.into_inner());
            }
            *free -= 1;
        }
        let out = f();
        *self.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.cv.notify_one();
        out
    }
}

fn options(dim: usize, ef_search: usize) -> IndexOptions {
    IndexOptions {
        dimensions: dim,
        metric: MetricKind::Cos,
        quantization: ScalarKind::I8,
        connectivity: CONNECTIVITY,
        expansion_add: EXPANSION_ADD,
        expansion_search: ef_search,
        multi: false,
    }
}

fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|t| t.get())
        .unwrap_or(1)
}

impl Base {
    /// Copies the vector of `key` into `out` (`out.len() == dim`); false when absent.
    pub fn vector(&self, key: u32, out: &mut [i8]) -> bool {
        matches!(self.index.get(u64::from(key), out), Ok(1))
    }

    /// Whether the base holds exactly this vector under `key`.
    pub fn holds(&self, key: u32, model: &str, scale: f32, values: &[i8]) -> bool {
        if model != self.model_id || values.len() != self.dim {
            return false;
        }
        if self.scales.get(key as usize).copied() != Some(scale) {
            return false;
        }
        let mut v = vec![0i8; self.dim];
        self.vector(key, &mut v) && v == values
    }

    /// The `count` nearest keys the graph walk finds among `allowed`, nearest first.
    ///
    /// # Errors
    /// USearch's message (the caller then scans the candidates exactly).
    pub fn search(&self, query: &[i8], count: usize, allowed: &Bits) -> Result<Vec<u32>, String> {
        let m = self.permits.run(|| {
            self.index
                .filtered_search(query, count, |k| allowed.get(k as u32))
        });
        m.map(|m| m.keys.iter().map(|k| *k as u32).collect())
            .map_err(|e| e.to_string())
    }

    /// Vectors in the graph.
    pub(super) fn size(&self) -> usize {
        self.index.size()
    }

    /// Opens the graph file of a generation as a memory map.
    pub(super) fn view(
        path: &Path,
        generation: &str,
        model_id: String,
        dim: usize,
        scales: Vec<f32>,
        ef_search: usize,
    ) -> Result<Self, DiskError> {
        let index =
            Index::new(&options(dim, ef_search)).map_err(|e| DiskError::Engine(e.to_string()))?;
        let p = path.to_string_lossy();
        index
            .view(&p)
            .map_err(|e| DiskError::Engine(format!("{p}: {e}")))?;
        if index.dimensions() != dim {
            return Err(DiskError::Engine(format!(
                "{p} holds {}-d vectors, the columns say {dim}",
                index.dimensions()
            )));
        }
        index.change_expansion_search(ef_search);
        Ok(Self {
            index,
            model_id,
            dim,
            scales,
            generation: generation.to_string(),
            permits: Permits {
                free: Mutex::new(cores()),
                cv: Condvar::new(),
            },
        })
    }
}

/// Vectors a build copies per hold of the live index's read lock (5 MB of image vectors:
/// a catch-up waits at most that long, searches never, as they share the lock).
const COPY_BATCH: usize = 4096;

/// Builds a new generation of `kind` under `root` from the live index (every vector of its
/// dominant model goes into the graph, on every core) and makes it current. Returns its
/// name.
///
/// Streamed: the vectors are copied out of `live` in batches of [`COPY_BATCH`] under short
/// read locks and added to the graph outside them, so a build holds one extra copy of the
/// vectors (the graph's own), not two, and changes keep arriving meanwhile. At the end one
/// more read lock takes the columns and their marker; a slot whose `vector_rev` moved since
/// its copy is left out of the generation's base (written inline; its graph entry is never
/// a candidate), so the generation is exactly the index at that marker.
///
/// # Errors
/// Disk and USearch failures.
pub(super) fn build(
    live: &RwLock<Option<KindIndex>>,
    root: &Path,
    kind: &str,
) -> Result<Option<String>, DiskError> {
    let read = || live.read().unwrap_or_else(|e| e.into_inner());
    let (model, dim, keys) = {
        let guard = read();
        let Some(x) = guard.as_ref() else {
            return Ok(None);
        };
        let Some((model, dim, _)) = x.dominant() else {
            return Ok(None);
        };
        let keys = x.slots_of_model(&model, dim);
        (model, dim, keys)
    };
    let index = Index::new(&options(dim, 64)).map_err(|e| DiskError::Engine(e.to_string()))?;
    let threads = cores();
    index
        .reserve_capacity_and_threads(keys.len(), threads)
        .map_err(|e| DiskError::Engine(e.to_string()))?;
    // Per key (in `keys` order): the scale and `vector_rev` copied; `None`: not added.
    let copied: Mutex<Vec<Option<(f32, u32)>>> = Mutex::new(vec![None; keys.len()]);
    let next = AtomicUsize::new(0);
    let failed: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads {
            let (index, keys, failed, next, copied, model) =
                (&index, &keys, &failed, &next, &copied, &model);
            s.spawn(move || {
                let mut data = vec![0i8; COPY_BATCH * dim];
                let mut got: Vec<Option<(f32, u32)>> = Vec::with_capacity(COPY_BATCH);
                loop {
                    let start = next.fetch_add(COPY_BATCH, Ordering::Relaxed);
                    if start >= keys.len() {
                        break;
                    }
                    let batch = &keys[start..(start + COPY_BATCH).min(keys.len())];
                    got.clear();
                    {
                        let guard = read();
                        let Some(x) = guard.as_ref() else { break };
                        for (i, k) in batch.iter().enumerate() {
                            got.push(x.copy_vector(*k, model, &mut data[i * dim..(i + 1) * dim]));
                        }
                    }
                    for (i, k) in batch.iter().enumerate() {
                        if got[i].is_none() {
                            continue;
                        }
                        if let Err(e) = index.add(u64::from(*k), &data[i * dim..(i + 1) * dim]) {
                            *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
                            return;
                        }
                    }
                    copied.lock().unwrap_or_else(|e| e.into_inner())[start..start + batch.len()]
                        .copy_from_slice(&got);
                }
            });
        }
    });
    if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(DiskError::Engine(e));
    }
    let copied = copied.into_inner().unwrap_or_else(|e| e.into_inner());
    let kind_dir = disk::kind_dir(root, kind);
    std::fs::create_dir_all(&kind_dir).map_err(disk::io(&kind_dir))?;
    // The columns at one marker, and which graph entries are still current there.
    let (marker, scales, columns) = {
        let guard = read();
        let Some(x) = guard.as_ref() else {
            return Ok(None);
        };
        let mut in_base = Bits::with_len(x.ids.len());
        let mut scales = vec![0f32; x.ids.len()];
        for (k, c) in keys.iter().zip(&copied) {
            if let Some((scale, rev)) = c
                && x.vector_rev[*k as usize] == *rev
            {
                in_base.put(*k, true);
                scales[*k as usize] = *scale;
            }
        }
        let columns = disk::encode_columns(&kind_dir.join("columns.bin"), x, &in_base)?;
        (x.marker, scales, columns)
    };
    let name = disk::generation_name(marker);
    let tmp = kind_dir.join(format!("{name}.tmp"));
    std::fs::create_dir_all(&tmp).map_err(disk::io(&tmp))?;
    let graph = tmp.join("graph.usearch");
    index
        .save(&graph.to_string_lossy())
        .map_err(|e| DiskError::Engine(e.to_string()))?;
    drop(index);
    let head = tmp.join("base.txt");
    std::fs::write(&head, format!("{model}\n{dim}\n")).map_err(disk::io(&head))?;
    write_scales(&tmp.join("scales.bin"), &scales)?;
    disk::write_columns(&tmp.join("columns.bin"), &columns)?;
    let done = kind_dir.join(&name);
    std::fs::rename(&tmp, &done).map_err(disk::io(&done))?;
    disk::make_current(root, kind, &name)?;
    Ok(Some(name))
}

fn write_scales(path: &Path, scales: &[f32]) -> Result<(), DiskError> {
    let bytes: Vec<u8> = scales.iter().flat_map(|s| s.to_le_bytes()).collect();
    std::fs::write(path, bytes).map_err(disk::io(path))
}

/// Opens the current generation of `kind` (columns in memory, graph mapped), or `None`
/// when there is none.
///
/// # Errors
/// A generation that cannot be read (the caller rebuilds).
pub(super) fn open(
    root: &Path,
    kind: &str,
    ef_search: usize,
) -> Result<Option<KindIndex>, DiskError> {
    let Some((name, dir)) = disk::current(root, kind) else {
        return Ok(None);
    };
    let head_path = dir.join("base.txt");
    let head = std::fs::read_to_string(&head_path).map_err(disk::io(&head_path))?;
    let mut lines = head.lines();
    let model = lines.next().unwrap_or_default().to_string();
    let dim: usize = lines
        .next()
        .and_then(|d| d.parse().ok())
        .ok_or(DiskError::Format {
            path: head_path.clone(),
            why: "no dimension",
        })?;
    let scales_path = dir.join("scales.bin");
    let scales: Vec<f32> = std::fs::read(&scales_path)
        .map_err(disk::io(&scales_path))?
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let mut x = disk::read_columns(&dir.join("columns.bin"))?;
    if scales.len() != x.ids.len() {
        return Err(DiskError::Format {
            path: scales_path,
            why: "one scale per slot",
        });
    }
    let base = Base::view(
        &dir.join("graph.usearch"),
        &name,
        model,
        dim,
        scales,
        ef_search,
    )?;
    x.base = Some(std::sync::Arc::new(base));
    Ok(Some(x))
}
