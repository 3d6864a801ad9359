//! One kind's designs in compact columns: ids, the columns searches filter on (as codes,
//! with one [`Bits`] per value), and where each design's vector lives: in an in-memory
//! [`Block`] (scored exactly) or in the approximate base ([`super::ann::Base`], key =
//! slot).
//!
//! # Invariants
//! - A slot is never reused: `ids[slot]` names the same design for the index's life, and
//!   the base's key of a vector is the slot it was built from.
//! - `live` holds exactly the slots whose vector is somewhere (`at != DEAD`); `in_base` the
//!   slots whose current vector is the base's key `slot`.
//! - `vector_rev[slot]` moves whenever the slot's vector changes or moves, so a build that
//!   copied a vector earlier can tell whether it is still the current one.

use std::collections::HashMap;
use std::sync::Arc;

use sqlx::Row;

use super::ann::Base;
use super::bits::Bits;
use crate::swipe::vectors;

/// Strings of one column as small codes; code 0 is SQL NULL.
#[derive(Default, Clone)]
pub(super) struct Interner {
    codes: HashMap<Arc<str>, u32>,
    /// Code - 1 → value.
    values: Vec<Arc<str>>,
}

impl Interner {
    pub(super) fn code(&mut self, v: Option<&str>) -> u32 {
        let Some(v) = v else { return 0 };
        if let Some(c) = self.codes.get(v) {
            return *c;
        }
        let v: Arc<str> = Arc::from(v);
        self.values.push(v.clone());
        let c = self.values.len() as u32;
        self.codes.insert(v, c);
        c
    }

    pub(super) fn get(&self, v: &str) -> Option<u32> {
        self.codes.get(v).copied()
    }

    /// The values in code order (code 1 first).
    pub(super) fn values(&self) -> &[Arc<str>] {
        &self.values
    }
}

/// One filter column: a code per slot and the slots of each code.
#[derive(Default, Clone)]
pub(super) struct Column {
    pub(super) codes: Vec<u32>,
    pub(super) interner: Interner,
    bits: Vec<Bits>,
}

impl Column {
    /// Gives `slot` (new slots come in order) the value `v`.
    pub(super) fn set(&mut self, slot: u32, v: Option<&str>) {
        let code = self.interner.code(v);
        self.set_code(slot, code);
    }

    pub(super) fn set_code(&mut self, slot: u32, code: u32) {
        let i = slot as usize;
        if i == self.codes.len() {
            self.codes.push(code);
        } else {
            let old = self.codes[i];
            if old == code {
                return;
            }
            self.bits[old as usize].put(slot, false);
            self.codes[i] = code;
        }
        if self.bits.len() <= code as usize {
            self.bits.resize(code as usize + 1, Bits::default());
        }
        self.bits[code as usize].put(slot, true);
    }

    /// The slots whose value is one of `values` (never NULL).
    pub(super) fn any_of(&self, values: &[String]) -> Bits {
        let mut out = Bits::default();
        for v in values {
            if let Some(c) = self.interner.get(v)
                && let Some(b) = self.bits.get(c as usize)
            {
                out.or(b);
            }
        }
        out
    }

    /// The slots of one code.
    pub(super) fn of(&self, code: u32) -> Option<&Bits> {
        self.bits.get(code as usize)
    }

    fn bytes(&self) -> usize {
        self.codes.len() * 4 + self.bits.iter().map(Bits::bytes).sum::<usize>()
    }
}

/// Vectors of one model and dimension, contiguous, scored exactly.
#[derive(Clone)]
pub(super) struct Block {
    pub(super) model_id: String,
    pub(super) dim: usize,
    /// Position → slot (`DEAD` once the row left the block).
    pub(super) slots: Vec<u32>,
    pub(super) scales: Vec<f32>,
    pub(super) data: Vec<i8>,
}

impl Block {
    /// Vectors still in use.
    pub(super) fn live(&self) -> usize {
        self.slots.iter().filter(|s| **s != DEAD).count()
    }
}

pub(super) const DEAD: u32 = u32::MAX;
/// The block number of a vector in the approximate base (its position is the slot).
pub(super) const BASE: u32 = u32::MAX - 1;

/// A design as read from SQL for the index.
pub(super) struct Change {
    pub(super) id: String,
    pub(super) org_id: Option<String>,
    pub(super) data_source_id: Option<String>,
    pub(super) status: String,
    pub(super) archived: bool,
    pub(super) industry: Option<String>,
    pub(super) ad_format: Option<String>,
    pub(super) aspect_ratio: Option<String>,
    /// (model, scale, values) of this kind, when the design has one.
    pub(super) vector: Option<(String, f32, Vec<i8>)>,
}

pub(super) const CHANGE_SQL: &str = "SELECT t.id, t.org_id, t.data_source_id, t.status, t.archived_at IS NOT NULL AS archived, \
     t.industry, t.ad_format, t.aspect_ratio, v.model_id, v.vector \
     FROM swipe_files t LEFT JOIN swipe_file_vectors v ON v.swipe_file_id = t.id AND v.kind = ?";

pub(super) fn change_from_row(row: &sqlx::any::AnyRow) -> Result<Change, sqlx::Error> {
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

/// One kind's index.
#[derive(Default, Clone)]
pub(super) struct KindIndex {
    /// The last `swipe_file_revision.rev` applied.
    pub(super) marker: i64,
    pub(super) slot_of: HashMap<Arc<str>, u32>,
    pub(super) ids: Vec<Arc<str>>,
    pub(super) org: Vec<u32>,
    pub(super) orgs: Interner,
    /// Org code → the slots that had it (check `org[slot]` before use).
    pub(super) org_slots: HashMap<u32, Vec<u32>>,
    pub(super) source: Column,
    pub(super) status: Column,
    pub(super) industry: Column,
    pub(super) ad_format: Column,
    pub(super) aspect_ratio: Column,
    pub(super) archived: Bits,
    pub(super) live: Bits,
    pub(super) in_base: Bits,
    /// Slot → (block or [`BASE`], position); (`DEAD`, `DEAD`) without a vector.
    pub(super) at: Vec<(u32, u32)>,
    /// Slot → a counter bumped at every change of its vector (see the invariants).
    pub(super) vector_rev: Vec<u32>,
    pub(super) blocks: Vec<Block>,
    pub(super) base: Option<Arc<Base>>,
}

impl KindIndex {
    pub(super) fn remove(&mut self, id: &str) {
        if let Some(slot) = self.slot_of.get(id).copied() {
            self.detach(slot);
        }
    }

    /// Takes the slot's vector out of its block (or the base).
    pub(super) fn detach(&mut self, slot: u32) {
        let (b, p) = self.at[slot as usize];
        if b == BASE {
            self.in_base.put(slot, false);
        } else if b != DEAD {
            self.blocks[b as usize].slots[p as usize] = DEAD;
        }
        self.at[slot as usize] = (DEAD, DEAD);
        self.bump(slot);
        self.live.put(slot, false);
    }

    fn bump(&mut self, slot: u32) {
        let r = &mut self.vector_rev[slot as usize];
        *r = r.wrapping_add(1);
    }

    /// Copies the slot's vector into `out` when it is one of `model` with `out.len()`
    /// dimensions; returns its scale and its `vector_rev`.
    pub(super) fn copy_vector(&self, slot: u32, model: &str, out: &mut [i8]) -> Option<(f32, u32)> {
        let dim = out.len();
        let (b, p) = *self.at.get(slot as usize)?;
        let scale = if b == BASE {
            let base = self.base.as_ref()?;
            if base.model_id != model || base.dim != dim || !base.vector(slot, out) {
                return None;
            }
            base.scales[slot as usize]
        } else {
            let block = self.blocks.get(b as usize)?;
            if block.model_id != model || block.dim != dim {
                return None;
            }
            let p = p as usize;
            out.copy_from_slice(&block.data[p * dim..(p + 1) * dim]);
            block.scales[p]
        };
        Some((scale, self.vector_rev[slot as usize]))
    }

    /// The slots whose vector is one of `model` with `dim` dimensions.
    pub(super) fn slots_of_model(&self, model: &str, dim: usize) -> Vec<u32> {
        let base_has = self
            .base
            .as_ref()
            .is_some_and(|base| base.model_id == model && base.dim == dim);
        let blocks: Vec<bool> = self
            .blocks
            .iter()
            .map(|b| b.model_id == model && b.dim == dim)
            .collect();
        self.at
            .iter()
            .enumerate()
            .filter(|(_, (b, _))| {
                if *b == BASE {
                    base_has
                } else {
                    blocks.get(*b as usize).copied().unwrap_or(false)
                }
            })
            .map(|(s, _)| s as u32)
            .collect()
    }

    /// A new slot for `id` with every column NULL and no vector.
    pub(super) fn new_slot(&mut self, id: &str) -> u32 {
        let s = self.ids.len() as u32;
        let id: Arc<str> = Arc::from(id);
        self.ids.push(id.clone());
        self.slot_of.insert(id, s);
        self.org.push(0);
        for c in [
            &mut self.source,
            &mut self.status,
            &mut self.industry,
            &mut self.ad_format,
            &mut self.aspect_ratio,
        ] {
            c.set_code(s, 0);
        }
        self.at.push((DEAD, DEAD));
        self.vector_rev.push(0);
        s
    }

    pub(super) fn set_org(&mut self, slot: u32, code: u32) {
        let i = slot as usize;
        if self.org[i] != code {
            self.org[i] = code;
            if code != 0 {
                self.org_slots.entry(code).or_default().push(slot);
            }
        }
    }

    pub(super) fn apply(&mut self, c: Change) {
        let Some((model, scale, values)) = c.vector else {
            // No vector of this kind: never a hit.
            self.remove(&c.id);
            return;
        };
        let slot = match self.slot_of.get(c.id.as_str()) {
            Some(s) => *s,
            None => self.new_slot(&c.id),
        };
        let org = self.orgs.code(c.org_id.as_deref());
        self.set_org(slot, org);
        self.source.set(slot, c.data_source_id.as_deref());
        self.status.set(slot, Some(&c.status));
        self.archived.put(slot, c.archived);
        self.industry.set(slot, c.industry.as_deref());
        self.ad_format.set(slot, c.ad_format.as_deref());
        self.aspect_ratio.set(slot, c.aspect_ratio.as_deref());
        self.live.put(slot, true);
        let i = slot as usize;
        let dim = values.len();
        let (b, p) = self.at[i];
        if b == BASE {
            if let Some(base) = &self.base
                && base.holds(slot, &model, scale, &values)
            {
                return;
            }
            self.detach(slot);
            self.live.put(slot, true);
        } else if b != DEAD {
            let block = &mut self.blocks[b as usize];
            if block.model_id == model && block.dim == dim {
                let p = p as usize;
                block.scales[p] = scale;
                block.data[p * dim..(p + 1) * dim].copy_from_slice(&values);
                self.bump(slot);
                return;
            }
            self.detach(slot);
            self.live.put(slot, true);
        }
        self.push_vector(slot, model, scale, &values);
    }

    /// Appends the slot's vector to the block of its model.
    pub(super) fn push_vector(&mut self, slot: u32, model: String, scale: f32, values: &[i8]) {
        let dim = values.len();
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
        block.data.extend_from_slice(values);
        self.at[slot as usize] = (b as u32, p as u32);
        self.bump(slot);
        self.live.put(slot, true);
    }

    /// Designs with a vector of this kind.
    pub(super) fn designs(&self) -> usize {
        self.live.count()
    }

    /// Vectors held in memory (scored exactly), by (model, dim).
    pub(super) fn in_memory(&self) -> usize {
        self.blocks.iter().map(Block::live).sum()
    }

    /// Bytes of the columns, in-memory vectors and the base's codes (not its mapped graph).
    pub(super) fn bytes(&self) -> usize {
        let ids: usize = self.ids.iter().map(|s| s.len() + 16 + 16).sum();
        ids * 2
            + self.org.len() * 4
            + [
                &self.source,
                &self.status,
                &self.industry,
                &self.ad_format,
                &self.aspect_ratio,
            ]
            .iter()
            .map(|c| c.bytes())
            .sum::<usize>()
            + self.at.len() * 12
            + self
                .blocks
                .iter()
                .map(|b| b.data.len() + b.slots.len() * 8)
                .sum::<usize>()
            + self.base.as_ref().map_or(0, |b| b.heap_bytes())
    }

    /// The (model, dim) with the most vectors, in memory or in the base.
    pub(super) fn dominant(&self) -> Option<(String, usize, usize)> {
        let mut counts: Vec<(String, usize, usize)> = Vec::new();
        let mut add = |m: &str, d: usize, n: usize| match counts
            .iter_mut()
            .find(|(cm, cd, _)| cm == m && *cd == d)
        {
            Some(c) => c.2 += n,
            None => counts.push((m.to_string(), d, n)),
        };
        for b in &self.blocks {
            add(&b.model_id, b.dim, b.live());
        }
        if let Some(base) = &self.base {
            add(&base.model_id, base.dim, self.in_base.count());
        }
        counts.into_iter().filter(|c| c.2 > 0).max_by_key(|c| c.2)
    }
}
