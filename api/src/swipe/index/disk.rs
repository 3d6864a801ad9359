//! A kind's index on local disk, so a restart opens it instead of rebuilding it.
//!
//! ```text
//! <dir>/<kind>/CURRENT            the name of the current generation (replaced by rename)
//! <dir>/<kind>/g<marker>-<nanos>/ one generation, written in `building.tmp` then renamed:
//!     graph.usearch                the USearch HNSW graph over the designs' sign codes,
//!                                  opened as a read-only memory map that every process shares
//!     vectors.bin                  the int8 vectors, `dim` bytes per slot (read by position)
//!     codes.bin                    the sign codes, read into memory at open
//!     scales.bin                   each slot's int8 scale (f32)
//!     base.txt                     model, dimension and the format line
//!     columns.bin                  the slots: ids, filter columns, where each vector is
//!                                  (the base, or inline for vectors of other models)
//! <dir>/<kind>/build.lock         held (created exclusively, with the pid) while a process
//!                                  of this node builds
//! ```
//!
//! `columns.bin` is little-endian: a magic, the change marker the generation reflects, the
//! five filter columns' value tables, then one record per slot. A reader checks the magic
//! and every length; anything short or odd makes the generation unusable (the caller then
//! rebuilds), never a panic.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::bits::Bits;
use super::columns::{BASE, Column, DEAD, Interner, KindIndex};

const MAGIC: &[u8; 8] = b"ADFSWIX1";

/// Why a generation could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    /// The file system refused (permissions, disk full).
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The columns file is not one this version wrote (or was cut short).
    #[error("{path} is not a swipe index columns file of this version ({why})")]
    Format { path: PathBuf, why: &'static str },
    /// USearch refused the graph file.
    #[error("USearch: {0}")]
    Engine(String),
}

pub(super) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> DiskError + '_ {
    move |source| DiskError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The folder of one kind.
pub(super) fn kind_dir(root: &Path, kind: &str) -> PathBuf {
    root.join(kind)
}

/// The current generation's folder, if any.
pub(super) fn current(root: &Path, kind: &str) -> Option<(String, PathBuf)> {
    let dir = kind_dir(root, kind);
    let name = std::fs::read_to_string(dir.join("CURRENT")).ok()?;
    let name = name.trim().to_string();
    if name.is_empty() || name.contains('/') {
        return None;
    }
    let path = dir.join(&name);
    path.is_dir().then_some((name, path))
}

/// Makes `name` the current generation (atomically) and removes older ones. Processes that
/// mapped an older one keep their mapping (the file lives until they let go of it).
pub(super) fn make_current(root: &Path, kind: &str, name: &str) -> Result<(), DiskError> {
    let dir = kind_dir(root, kind);
    let tmp = dir.join(format!("CURRENT.{}.tmp", std::process::id()));
    std::fs::write(&tmp, name).map_err(io(&tmp))?;
    let target = dir.join("CURRENT");
    std::fs::rename(&tmp, &target).map_err(io(&target))?;
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with('g') && n != name && e.path().is_dir() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    Ok(())
}

/// This node's build lock for `kind`: `None` when another live process holds it.
pub(super) struct BuildLock(PathBuf);

impl BuildLock {
    pub(super) fn take(root: &Path, kind: &str) -> Result<Option<Self>, DiskError> {
        let dir = kind_dir(root, kind);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let path = dir.join("build.lock");
        for _ in 0..2 {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    let _ = write!(f, "{}", std::process::id());
                    return Ok(Some(Self(path)));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    // A lock whose process is gone (killed mid-build) is stale.
                    let holder: Option<u32> = std::fs::read_to_string(&path)
                        .ok()
                        .and_then(|s| s.trim().parse().ok());
                    let alive = holder.is_some_and(|pid| {
                        pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists()
                    });
                    if alive {
                        return Ok(None);
                    }
                    let _ = std::fs::remove_file(&path);
                }
                Err(e) => return Err(io(&path)(e)),
            }
        }
        Ok(None)
    }
}

impl Drop for BuildLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

struct Out(Vec<u8>);

impl Out {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f32(&mut self, v: f32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, v: &str) {
        self.u32(v.len() as u32);
        self.0.extend_from_slice(v.as_bytes());
    }
    fn interner(&mut self, i: &Interner) {
        self.u32(i.values().len() as u32);
        for v in i.values() {
            self.str(v);
        }
    }
}

/// `x`'s slots as [`write_columns`] stores them: slots in `in_base` are marked as the
/// base's keys, the other vectors are written inline. `path` only names errors.
pub(super) fn encode_columns(
    path: &Path,
    x: &KindIndex,
    in_base: &Bits,
) -> Result<Vec<u8>, DiskError> {
    let mut o = Out(Vec::with_capacity(x.ids.len() * 48));
    o.0.extend_from_slice(MAGIC);
    o.i64(x.marker);
    o.interner(&x.orgs);
    for c in columns(x) {
        o.interner(&c.interner);
    }
    o.u32(x.ids.len() as u32);
    for (slot, id) in x.ids.iter().enumerate() {
        let s = slot as u32;
        o.str(id);
        o.u32(x.org[slot]);
        for c in columns(x) {
            o.u32(c.codes[slot]);
        }
        o.u8(u8::from(x.archived.get(s)));
        let (b, p) = x.at[slot];
        if in_base.get(s) {
            o.u8(1);
        } else if b == DEAD {
            o.u8(0);
        } else {
            let (model, dim, scale, values): (&str, usize, f32, Vec<i8>) = if b == BASE {
                // A vector of the old base that the new one does not hold (another model).
                let base = x.base.as_ref().ok_or(DiskError::Format {
                    path: path.to_path_buf(),
                    why: "a base slot without a base",
                })?;
                let mut v = vec![0i8; base.dim];
                base.vector(s, &mut v);
                (&base.model_id, base.dim, base.scales[slot], v)
            } else {
                let block = &x.blocks[b as usize];
                let p = p as usize;
                (
                    &block.model_id,
                    block.dim,
                    block.scales[p],
                    block.data[p * block.dim..(p + 1) * block.dim].to_vec(),
                )
            };
            o.u8(2);
            o.str(model);
            o.f32(scale);
            o.u32(dim as u32);
            o.0.extend(values.iter().map(|v| v.to_le_bytes()[0]));
        }
    }
    o.0.extend_from_slice(MAGIC);
    Ok(o.0)
}

/// Writes what [`encode_columns`] made to `path`, synced.
pub(super) fn write_columns(path: &Path, bytes: &[u8]) -> Result<(), DiskError> {
    let mut f = std::fs::File::create(path).map_err(io(path))?;
    f.write_all(bytes).map_err(io(path))?;
    f.sync_all().map_err(io(path))?;
    Ok(())
}

fn columns(x: &KindIndex) -> [&Column; 5] {
    [
        &x.source,
        &x.status,
        &x.industry,
        &x.ad_format,
        &x.aspect_ratio,
    ]
}

struct In<'a> {
    b: &'a [u8],
    path: &'a Path,
}

impl<'a> In<'a> {
    fn bad(&self, why: &'static str) -> DiskError {
        DiskError::Format {
            path: self.path.to_path_buf(),
            why,
        }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], DiskError> {
        if self.b.len() < n {
            return Err(self.bad("cut short"));
        }
        let b: &'a [u8] = self.b;
        let (h, t) = b.split_at(n);
        self.b = t;
        Ok(h)
    }
    fn u8(&mut self) -> Result<u8, DiskError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, DiskError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn f32(&mut self) -> Result<f32, DiskError> {
        Ok(f32::from_bits(self.u32()?))
    }
    fn i64(&mut self) -> Result<i64, DiskError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_le_bytes(a))
    }
    fn str(&mut self) -> Result<&'a str, DiskError> {
        let n = self.u32()? as usize;
        let b = self.take(n)?;
        std::str::from_utf8(b).map_err(|_| DiskError::Format {
            path: self.path.to_path_buf(),
            why: "a string is not UTF-8",
        })
    }
    fn interner(&mut self) -> Result<Interner, DiskError> {
        let n = self.u32()?;
        let mut i = Interner::default();
        for _ in 0..n {
            i.code(Some(self.str()?));
        }
        Ok(i)
    }
}

/// Reads what [`write_columns`] wrote: the index with every slot, base slots marked
/// `in_base` (their vectors are in the graph file, which the caller attaches).
pub(super) fn read_columns(path: &Path) -> Result<KindIndex, DiskError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    let mut r = In { b: &bytes, path };
    if r.take(8)? != MAGIC {
        return Err(r.bad("wrong magic"));
    }
    let mut x = KindIndex {
        marker: r.i64()?,
        orgs: r.interner()?,
        ..KindIndex::default()
    };
    let mut interners = Vec::new();
    for _ in 0..5 {
        interners.push(r.interner()?);
    }
    for (c, i) in [
        &mut x.source,
        &mut x.status,
        &mut x.industry,
        &mut x.ad_format,
        &mut x.aspect_ratio,
    ]
    .into_iter()
    .zip(interners)
    {
        c.interner = i;
    }
    let n = r.u32()? as usize;
    x.ids.reserve(n);
    x.slot_of.reserve(n);
    for slot in 0..n as u32 {
        let id = r.str()?.to_string();
        let s = x.new_slot(&id);
        debug_assert_eq!(s, slot);
        let org = r.u32()?;
        x.set_org(slot, org);
        let mut codes = [0u32; 5];
        for c in &mut codes {
            *c = r.u32()?;
        }
        for (c, code) in [
            &mut x.source,
            &mut x.status,
            &mut x.industry,
            &mut x.ad_format,
            &mut x.aspect_ratio,
        ]
        .into_iter()
        .zip(codes)
        {
            if code as usize > c.interner.values().len() {
                return Err(r.bad("a code past its value table"));
            }
            c.set_code(slot, code);
        }
        x.archived.put(slot, r.u8()? == 1);
        match r.u8()? {
            0 => {}
            1 => {
                x.at[slot as usize] = (BASE, slot);
                x.in_base.put(slot, true);
                x.live.put(slot, true);
            }
            2 => {
                let model = r.str()?.to_string();
                let scale = r.f32()?;
                let dim = r.u32()? as usize;
                let values: Vec<i8> = r
                    .take(dim)?
                    .iter()
                    .map(|b| i8::from_le_bytes([*b]))
                    .collect();
                x.push_vector(slot, model, scale, &values);
            }
            _ => return Err(r.bad("an unknown vector place")),
        }
    }
    if r.take(8)? != MAGIC {
        return Err(r.bad("no end marker"));
    }
    Ok(x)
}

/// A generation's folder name: the marker it reflects, then a unique suffix.
pub(super) fn generation_name(marker: i64) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("g{marker:012}-{nanos}-{}", std::process::id())
}

/// Total bytes of the files in `dir`.
pub fn size_on_disk(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| {
                    let p = e.path();
                    if p.is_dir() {
                        size_on_disk(&p)
                    } else {
                        e.metadata().map(|m| m.len()).unwrap_or(0)
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}
