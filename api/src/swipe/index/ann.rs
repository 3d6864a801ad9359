//! The approximate base of a kind: a USearch HNSW graph over the designs' *sign codes*
//! (bit i set when the i-th component lies above the generation's centre in that
//! dimension; Hamming metric), beside the int8 vectors themselves in a flat file, saved in
//! a generation folder ([`super::disk`]).
//!
//! The centre is the per-dimension median of a sample of the generation's vectors, so
//! every bit splits the collection about in half whatever the model: EfficientNet's image
//! features are pooled ReLU6 outputs, all ≥ 0, and codes of plain signs would be nearly
//! all ones (the test `codes_of_non_negative_vectors_still_rank` proves the difference).
//!
//! - The graph is walked with the query's sign code; its keys are only candidates.
//! - The int8 vectors (the bytes SQL stores) live in `vectors.bin`, one `dim`-byte record
//!   per slot, read with positioned reads ([`Base::score_keys`]) into the exact formula of
//!   [`crate::swipe::vectors`], so similarities, `min_similarity` and the tie order by id
//!   are those of the exact scorer; only a design the walk (or the shortlist) never
//!   reached can be missing (recall, measured in the tests and by `scripts/bench-swipe`).
//!   Those pages sit in the kernel's page cache, shared by every process of the node and
//!   never counted in a process's resident memory.
//! - The sign codes are also held in memory (`codes`, 160 bytes a design at 1280-d), so a
//!   filtered search can rank its candidates by Hamming distance without the graph
//!   ([`Base::shortlist`]).
//!
//! Why sign codes and not the int8 vectors in the graph (as before): at a million designs
//! the int8 image graph alone is 1.5 GB that every walk pages in, and an int8 walk at
//! 1280-d cost 15 ms at 200k; a 160-byte code per design makes the graph a third of that
//! and the walk several times faster, and re-scoring 400 candidates exactly recovers the
//! ranking (`scripts/bench-swipe` has the numbers; the module doc of [`super`] the table).
//!
//! # Invariants
//! - The key of a vector is the slot of its design in the generation's columns file; its
//!   record in `vectors.bin` and its code in `codes` are at that slot.
//! - A base is immutable once opened: changes after its marker live in the caller's
//!   in-memory blocks, and a base slot whose design changed is masked out (`in_base`).

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, RwLock};

use usearch::{Index, IndexOptions, MetricKind, ScalarKind, b1x8};

use super::bits::Bits;
use super::columns::KindIndex;
use super::disk::{self, DiskError};
use crate::swipe::vectors::Query;

/// Graph degree (USearch's `connectivity`, HNSW's M). 32, not the usual 16: on the
/// benchmark's clustered mixture (`examples/recall_probe.rs`) a degree of 16 lost recall
/// under filters.
pub const CONNECTIVITY: usize = 32;
/// Candidates kept while inserting (HNSW's ef_construction).
pub const EXPANSION_ADD: usize = 128;
/// The third line of `base.txt`: what the graph holds (generations without it, from
/// before the sign codes, are rebuilt).
const FORMAT: &str = "sign-codes-v1";

/// The 64-bit words of one sign code.
pub(super) fn code_words(dim: usize) -> usize {
    dim.div_ceil(64)
}

/// The sign code of `v` (int8 values of scale `scale`) about `centre`, into `out`
/// (`code_words(v.len())` words).
pub(super) fn sign_code(v: &[i8], scale: f32, centre: &[f32], out: &mut [u64]) {
    out.fill(0);
    for (i, (x, c)) in v.iter().zip(centre).enumerate() {
        if f32::from(*x) * scale > *c {
            out[i / 64] |= 1u64 << (i % 64);
        }
    }
}

/// Vectors a build samples for its centre.
const CENTRE_SAMPLE: usize = 16_384;

/// The per-dimension median of `sample` (int8 vectors of `dim` values with their scales).
fn median_centre(sample: &[(f32, Vec<i8>)], dim: usize) -> Vec<f32> {
    let mut column: Vec<f32> = Vec::with_capacity(sample.len());
    (0..dim)
        .map(|d| {
            column.clear();
            column.extend(sample.iter().map(|(s, v)| f32::from(v[d]) * s));
            if column.is_empty() {
                return 0.0;
            }
            let mid = column.len() / 2;
            *column.select_nth_unstable_by(mid, f32::total_cmp).1
        })
        .collect()
}

/// A code as the bytes USearch's `b1x8` vectors are made of (`dim` bits).
fn code_bytes(code: &[u64], dim: usize) -> Vec<u8> {
    let mut b: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
    b.truncate(dim.div_ceil(8));
    b
}

/// Hamming distance of two codes; inlined into the callers' SIMD dispatch, where
/// `count_ones` becomes the CPU's `popcnt`.
#[inline(always)]
pub(super) fn hamming(a: &[u64], b: &[u64]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// One opened generation.
pub struct Base {
    index: Index,
    /// The int8 vectors, `dim` bytes per slot.
    vectors: std::fs::File,
    /// The sign codes, `words` per slot.
    codes: Vec<u64>,
    words: usize,
    /// What each dimension's bit compares against.
    centre: Vec<f32>,
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
        metric: MetricKind::Hamming,
        quantization: ScalarKind::B1,
        connectivity: CONNECTIVITY,
        expansion_add: EXPANSION_ADD,
        expansion_search: ef_search,
        multi: false,
    }
}

pub(super) fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|t| t.get())
        .unwrap_or(1)
}

/// Slots read with one positioned read when they lie this close together.
const RUN: u32 = 8;

impl Base {
    /// Copies the vector of `key` into `out` (`out.len() == dim`); false when unreadable.
    pub fn vector(&self, key: u32, out: &mut [i8]) -> bool {
        let mut read = false;
        self.score_keys(&[key], |_, v| {
            for (o, b) in out.iter_mut().zip(v) {
                *o = *b as i8;
            }
            read = true;
        });
        read
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

    /// Calls `f(key, vector bytes)` for every key of `keys` (ascending), reading slots
    /// that lie close together with one positioned read; unreadable keys are skipped.
    pub(super) fn score_keys(&self, keys: &[u32], mut f: impl FnMut(u32, &[u8])) {
        let dim = self.dim;
        let mut buf: Vec<u8> = Vec::new();
        let mut i = 0;
        while i < keys.len() {
            let first = keys[i];
            let mut j = i + 1;
            while j < keys.len() && keys[j] - keys[j - 1] <= RUN && keys[j] - first < 64 * RUN {
                j += 1;
            }
            let span = (keys[j - 1] - first + 1) as usize * dim;
            buf.resize(span, 0);
            if self
                .vectors
                .read_exact_at(&mut buf, u64::from(first) * dim as u64)
                .is_ok()
            {
                for k in &keys[i..j] {
                    let at = (k - first) as usize * dim;
                    f(*k, &buf[at..at + dim]);
                }
            }
            i = j;
        }
    }

    /// The sign code of `key` (empty past the end).
    #[inline(always)]
    pub(super) fn code(&self, key: u32) -> &[u64] {
        let at = key as usize * self.words;
        self.codes.get(at..at + self.words).unwrap_or(&[])
    }

    pub(super) fn words(&self) -> usize {
        self.words
    }

    /// The sign code of a query.
    pub(super) fn query_code(&self, query: &Query) -> Vec<u64> {
        let mut code = vec![0u64; self.words];
        sign_code(query.values(), query.scale(), &self.centre, &mut code);
        code
    }

    /// The `count` nearest keys the graph walk finds among `allowed`, by Hamming distance
    /// of the sign codes.
    ///
    /// # Errors
    /// USearch's message (the caller then takes another path).
    pub fn search(&self, query: &Query, count: usize, allowed: &Bits) -> Result<Vec<u32>, String> {
        let code = self.query_code(query);
        let bytes = code_bytes(&code, self.dim);
        let m = self.permits.run(|| {
            self.index
                .filtered_search(b1x8::from_u8s(&bytes), count, |k| allowed.get(k as u32))
        });
        m.map(|m| m.keys.iter().map(|k| *k as u32).collect())
            .map_err(|e| e.to_string())
    }

    /// Vectors in the graph.
    pub(super) fn size(&self) -> usize {
        self.index.size()
    }

    /// Bytes of the codes held in memory.
    pub(super) fn heap_bytes(&self) -> usize {
        self.codes.len() * 8 + self.scales.len() * 4
    }

    /// Opens a generation's folder: the graph as a memory map, the vectors file, the codes
    /// read into memory.
    pub(super) fn view(
        dir: &Path,
        generation: &str,
        model_id: String,
        dim: usize,
        scales: Vec<f32>,
        ef_search: usize,
    ) -> Result<Self, DiskError> {
        let slots = scales.len();
        let words = code_words(dim);
        let path = dir.join("graph.usearch");
        let index =
            Index::new(&options(dim, ef_search)).map_err(|e| DiskError::Engine(e.to_string()))?;
        let p = path.to_string_lossy();
        index
            .view(&p)
            .map_err(|e| DiskError::Engine(format!("{p}: {e}")))?;
        if index.dimensions() != dim {
            return Err(DiskError::Engine(format!(
                "{p} holds {}-d codes, the columns say {dim}",
                index.dimensions()
            )));
        }
        index.change_expansion_search(ef_search);
        let vpath = dir.join("vectors.bin");
        let vectors = std::fs::File::open(&vpath).map_err(disk::io(&vpath))?;
        let len = vectors.metadata().map_err(disk::io(&vpath))?.len();
        if len != (slots * dim) as u64 {
            return Err(DiskError::Format {
                path: vpath,
                why: "one vector per slot",
            });
        }
        let cpath = dir.join("codes.bin");
        let raw = std::fs::read(&cpath).map_err(disk::io(&cpath))?;
        if raw.len() != slots * words * 8 {
            return Err(DiskError::Format {
                path: cpath,
                why: "one code per slot",
            });
        }
        let codes = raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect();
        let centre = read_f32s(&dir.join("centre.bin"))?;
        if centre.len() != dim {
            return Err(DiskError::Format {
                path: dir.join("centre.bin"),
                why: "one centre value per dimension",
            });
        }
        Ok(Self {
            index,
            vectors,
            codes,
            words,
            centre,
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
/// dominant model goes into the graph as its sign code, on every core, and into the
/// vectors and codes files at its slot) and makes it current. Returns its name.
///
/// Streamed: the vectors are copied out of `live` in batches of [`COPY_BATCH`] under short
/// read locks and written out beside the graph outside them, so a build holds the graph's
/// codes, not a copy of the vectors, and changes keep arriving meanwhile. At the end one
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
    let words = code_words(dim);
    // The centre, from vectors spread over the keys.
    let centre = {
        let step = keys.len().div_ceil(CENTRE_SAMPLE).max(1);
        let mut sample = Vec::with_capacity(CENTRE_SAMPLE);
        for batch in keys
            .iter()
            .step_by(step)
            .collect::<Vec<_>>()
            .chunks(COPY_BATCH)
        {
            let guard = read();
            let Some(x) = guard.as_ref() else {
                return Ok(None);
            };
            for k in batch {
                let mut v = vec![0i8; dim];
                if let Some((scale, _)) = x.copy_vector(**k, &model, &mut v) {
                    sample.push((scale, v));
                }
            }
        }
        median_centre(&sample, dim)
    };
    let kind_dir = disk::kind_dir(root, kind);
    // One builder per node (the build lock): a folder left by a killed build is stale.
    let tmp = kind_dir.join("building.tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(disk::io(&tmp))?;
    let vpath = tmp.join("vectors.bin");
    let vectors = std::fs::File::create(&vpath).map_err(disk::io(&vpath))?;
    let cpath = tmp.join("codes.bin");
    let codes = std::fs::File::create(&cpath).map_err(disk::io(&cpath))?;
    let index = Index::new(&options(dim, 64)).map_err(|e| DiskError::Engine(e.to_string()))?;
    let threads = cores();
    index
        .reserve_capacity_and_threads(keys.len(), threads)
        .map_err(|e| DiskError::Engine(e.to_string()))?;
    // Per key (in `keys` order): the scale and `vector_rev` copied; `None`: not added.
    let copied: Mutex<Vec<Option<(f32, u32)>>> = Mutex::new(vec![None; keys.len()]);
    let next = AtomicUsize::new(0);
    let failed: Mutex<Option<DiskError>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads {
            let (index, keys, failed, next, copied, model) =
                (&index, &keys, &failed, &next, &copied, &model);
            let (vectors, codes, vpath, cpath) = (&vectors, &codes, &vpath, &cpath);
            let centre = &centre;
            s.spawn(move || {
                let fail = |e: DiskError| {
                    *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                };
                let mut data = vec![0i8; COPY_BATCH * dim];
                let mut code = vec![0u64; words];
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
                        let Some((scale, _)) = got[i] else {
                            continue;
                        };
                        let v = &data[i * dim..(i + 1) * dim];
                        sign_code(v, scale, centre, &mut code);
                        let bytes = code_bytes(&code, dim);
                        if let Err(e) = index.add(u64::from(*k), b1x8::from_u8s(&bytes)) {
                            return fail(DiskError::Engine(e.to_string()));
                        }
                        let raw: Vec<u8> = v.iter().map(|x| *x as u8).collect();
                        if let Err(e) = vectors.write_all_at(&raw, u64::from(*k) * dim as u64) {
                            return fail(disk::io(vpath)(e));
                        }
                        let raw: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
                        let at = u64::from(*k) * (words * 8) as u64;
                        if let Err(e) = codes.write_all_at(&raw, at) {
                            return fail(disk::io(cpath)(e));
                        }
                    }
                    copied.lock().unwrap_or_else(|e| e.into_inner())[start..start + batch.len()]
                        .copy_from_slice(&got);
                }
            });
        }
    });
    if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    let copied = copied.into_inner().unwrap_or_else(|e| e.into_inner());
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
    // Every slot of the columns has a record (zeros where the base holds nothing).
    let slots = scales.len() as u64;
    vectors
        .set_len(slots * dim as u64)
        .map_err(disk::io(&vpath))?;
    codes
        .set_len(slots * (words * 8) as u64)
        .map_err(disk::io(&cpath))?;
    vectors.sync_all().map_err(disk::io(&vpath))?;
    codes.sync_all().map_err(disk::io(&cpath))?;
    drop((vectors, codes));
    let graph = tmp.join("graph.usearch");
    index
        .save(&graph.to_string_lossy())
        .map_err(|e| DiskError::Engine(e.to_string()))?;
    drop(index);
    let head = tmp.join("base.txt");
    std::fs::write(&head, format!("{model}\n{dim}\n{FORMAT}\n")).map_err(disk::io(&head))?;
    write_scales(&tmp.join("scales.bin"), &scales)?;
    write_scales(&tmp.join("centre.bin"), &centre)?;
    disk::write_columns(&tmp.join("columns.bin"), &columns)?;
    let name = disk::generation_name(marker);
    let done = kind_dir.join(&name);
    std::fs::rename(&tmp, &done).map_err(disk::io(&done))?;
    disk::make_current(root, kind, &name)?;
    Ok(Some(name))
}

/// Writes f32s little-endian (scales, the centre).
fn write_scales(path: &Path, scales: &[f32]) -> Result<(), DiskError> {
    let bytes: Vec<u8> = scales.iter().flat_map(|s| s.to_le_bytes()).collect();
    std::fs::write(path, bytes).map_err(disk::io(path))
}

/// Reads what [`write_scales`] wrote.
fn read_f32s(path: &Path) -> Result<Vec<f32>, DiskError> {
    Ok(std::fs::read(path)
        .map_err(disk::io(path))?
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
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
    if lines.next() != Some(FORMAT) {
        return Err(DiskError::Format {
            path: head_path.clone(),
            why: "a graph from before the sign codes",
        });
    }
    let scales_path = dir.join("scales.bin");
    let scales = read_f32s(&scales_path)?;
    let mut x = disk::read_columns(&dir.join("columns.bin"))?;
    if scales.len() != x.ids.len() {
        return Err(DiskError::Format {
            path: scales_path,
            why: "one scale per slot",
        });
    }
    let base = Base::view(&dir, &name, model, dim, scales, ef_search)?;
    x.base = Some(std::sync::Arc::new(base));
    Ok(Some(x))
}
