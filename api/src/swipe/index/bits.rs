//! A plain bitset over index slots: the filter columns keep one per value (Meilisearch's
//! candidate bitmaps, uncompressed), and a search ANDs and ORs them into the set of slots
//! it may answer. At a million designs one set is 125 KB and an operation touches it
//! word by word, so a filter costs tens of microseconds whatever it keeps.

/// Bits over slots `0..len`; bits past the end read as unset.
#[derive(Clone, Default, Debug)]
pub struct Bits {
    words: Vec<u64>,
}

impl Bits {
    /// No bit set, room for `len` slots.
    pub fn with_len(len: usize) -> Self {
        Self {
            words: vec![0; len.div_ceil(64)],
        }
    }

    /// Whether `slot` is set.
    #[inline(always)]
    pub fn get(&self, slot: u32) -> bool {
        let i = slot as usize;
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    /// Sets or clears `slot`, growing as needed.
    pub fn put(&mut self, slot: u32, on: bool) {
        let i = slot as usize;
        if i / 64 >= self.words.len() {
            if !on {
                return;
            }
            self.words.resize(i / 64 + 1, 0);
        }
        if on {
            self.words[i / 64] |= 1u64 << (i % 64);
        } else {
            self.words[i / 64] &= !(1u64 << (i % 64));
        }
    }

    /// `self |= other`.
    pub fn or(&mut self, other: &Bits) {
        if other.words.len() > self.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= *b;
        }
    }

    /// `self &= other`.
    pub fn and(&mut self, other: &Bits) {
        for (i, a) in self.words.iter_mut().enumerate() {
            *a &= other.words.get(i).copied().unwrap_or(0);
        }
    }

    /// `self &= !other`.
    pub fn and_not(&mut self, other: &Bits) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= !*b;
        }
    }

    /// How many bits are set.
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The set slots, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(i, w)| {
            let mut w = *w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros();
                w &= w - 1;
                Some((i * 64) as u32 + b)
            })
        })
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.words.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::Bits;

    #[test]
    fn set_operations_agree_with_a_plain_set() {
        let mut a = Bits::default();
        let mut b = Bits::with_len(10);
        for i in (0..300).step_by(3) {
            a.put(i, true);
        }
        for i in (0..200).step_by(5) {
            b.put(i, true);
        }
        a.put(3, false);
        assert!(!a.get(3) && a.get(6) && !a.get(10_000));
        let mut and = a.clone();
        and.and(&b);
        let want: Vec<u32> = (0..200).filter(|i| i % 15 == 0 && *i != 3).collect();
        assert_eq!(and.iter().collect::<Vec<_>>(), want);
        assert_eq!(and.count(), want.len());
        let mut or = b.clone();
        or.or(&a);
        assert_eq!(
            or.count(),
            (0..300)
                .filter(|i| (i % 3 == 0 && *i != 3) || (i % 5 == 0 && *i < 200))
                .count()
        );
    }
}
