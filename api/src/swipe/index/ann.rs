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
use std::sync::{Condvar, Mutex};

use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

use super::bits::Bits;
use super::columns::{BASE, KindIndex};
use super::disk::{self, DiskError};

/// Graph degree (USearch's `connectivity`, HNSW's M).
pub const CONNECTIVITY: usize = 16;
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

/// Builds a new generation of `kind` under `root` from `x` (every vector of its dominant
/// model goes into the graph, on every core) and makes it current. Returns its name.
///
/// # Errors
/// Disk and USearch failures.
pub(super) fn build(x: &KindIndex, root: &Path, kind: &str) -> Result<Option<String>, DiskError> {
    let Some((model, dim, _)) = x.dominant() else {
        return Ok(None);
    };
    let mut keys: Vec<u32> = Vec::new();
    for (slot, (b, _)) in x.at.iter().enumerate() {
        let in_model = if *b == BASE {
            x.base
                .as_ref()
                .is_some_and(|base| base.model_id == model && base.dim == dim)
        } else if let Some(block) = x.blocks.get(*b as usize) {
            block.model_id == model && block.dim == dim
        } else {
            false
        };
        if in_model {
            keys.push(slot as u32);
        }
    }
    let vector = |slot: u32, out: &mut [i8]| -> f32 {
        let (b, p) = x.at[slot as usize];
        if b == BASE {
            match x.base.as_ref() {
                Some(base) => {
                    base.vector(slot, out);
                    base.scales[slot as usize]
                }
                None => 0.0,
            }
        } else {
            let block = &x.blocks[b as usize];
            let p = p as usize;
            out.copy_from_slice(&block.data[p * dim..(p + 1) * dim]);
            block.scales[p]
        }
    };
    let index = Index::new(&options(dim, 64)).map_err(|e| DiskError::Engine(e.to_string()))?;
    let threads = cores();
    index
        .reserve_capacity_and_threads(keys.len(), threads)
        .map_err(|e| DiskError::Engine(e.to_string()))?;
    let mut scales = vec![0f32; x.ids.len()];
    let failed: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|s| {
        let parts: Vec<_> = (0..threads)
            .map(|t| {
                let (index, keys, failed) = (&index, &keys, &failed);
                s.spawn(move || {
                    let mut v = vec![0i8; dim];
                    let mut mine = Vec::new();
                    for k in keys.iter().skip(t).step_by(threads) {
                        let scale = vector(*k, &mut v);
                        mine.push((*k, scale));
                        if let Err(e) = index.add(u64::from(*k), v.as_slice()) {
                            *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
                            break;
                        }
                    }
                    mine
                })
            })
            .collect();
        for p in parts {
            if let Ok(mine) = p.join() {
                for (k, s) in mine {
                    scales[k as usize] = s;
                }
            }
        }
    });
    if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(DiskError::Engine(e));
    }
    let kind_dir = disk::kind_dir(root, kind);
    let name = disk::generation_name(x.marker);
    let tmp = kind_dir.join(format!("{name}.tmp"));
    std::fs::create_dir_all(&tmp).map_err(disk::io(&tmp))?;
    let graph = tmp.join("graph.usearch");
    index
        .save(&graph.to_string_lossy())
        .map_err(|e| DiskError::Engine(e.to_string()))?;
    let mut in_base = Bits::with_len(x.ids.len());
    for k in &keys {
        in_base.put(*k, true);
    }
    let head = tmp.join("base.txt");
    std::fs::write(&head, format!("{model}\n{dim}\n")).map_err(disk::io(&head))?;
    write_scales(&tmp.join("scales.bin"), &scales)?;
    disk::write_columns(&tmp.join("columns.bin"), x, &in_base)?;
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
