//! Reference analyses (the measures of [`super::analyse`] and the blueprint) cached by the
//! reference's content hash (SHA-256 of its bytes), so a second ad from the same reference
//! costs no decoding and no analysis.
//!
//! In-process and bounded ([`CAPACITY`] blueprints, least recently used evicted): a
//! blueprint is a few kilobytes and recomputing one costs tens of milliseconds, so a shared
//! cache (Redis) would cost more in round trips than it saves. Each worker process has its
//! own; a reference analysed on one node is analysed again on another. Failures are not
//! cached (a reference that cannot be decoded fails the job each time).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use super::analyse::{Analysis, analyse_decoded, decode};
use crate::blueprint::Blueprint;
use crate::blueprint::detect::{WordReader, analyse_rgb_with};

/// Both readings of one reference: the measures the palette and the library choice use,
/// and its blueprint.
pub type Readings = Arc<(Analysis, Blueprint)>;

/// How many blueprints a process keeps.
pub const CAPACITY: usize = 256;

/// An LRU of blueprints by content hash.
pub struct BlueprintCache {
    entries: Mutex<VecDeque<([u8; 32], Readings)>>,
    capacity: usize,
    reader: Option<Arc<dyn WordReader>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl BlueprintCache {
    /// An empty cache holding at most `capacity` blueprints.
    pub fn new(capacity: usize) -> Self {
        BlueprintCache {
            entries: Mutex::new(VecDeque::new()),
            capacity: capacity.max(1),
            reader: None,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Reads the words of each reference's text blocks with `reader` (Tesseract), so the
    /// blueprint's slots carry their words and roles from them.
    pub fn with_reader(mut self, reader: Option<Arc<dyn WordReader>>) -> Self {
        self.reader = reader;
        self
    }

    /// Whether references' words are read.
    pub fn reads_words(&self) -> bool {
        self.reader.is_some()
    }

    /// The readings of `bytes`, from the cache or made now (one decode) and kept.
    ///
    /// # Errors
    /// The decoder's message when the bytes are not an image.
    pub fn get_or_analyse(&self, bytes: &[u8]) -> Result<Readings, String> {
        self.lookup(bytes).map(|(r, _)| r)
    }

    /// [`BlueprintCache::get_or_analyse`], also saying whether the readings came from the
    /// cache (`true`) or were made now.
    ///
    /// # Errors
    /// As [`BlueprintCache::get_or_analyse`].
    pub fn lookup(&self, bytes: &[u8]) -> Result<(Readings, bool), String> {
        let key: [u8; 32] = Sha256::digest(bytes).into();
        if let Some(bp) = self.take(&key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok((bp, true));
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let img = decode(bytes)?;
        let bp = Arc::new((
            analyse_decoded(&img),
            analyse_rgb_with(&img.to_rgb8(), self.reader.as_deref()),
        ));
        if let Ok(mut e) = self.entries.lock() {
            e.retain(|(k, _)| *k != key);
            e.push_front((key, bp.clone()));
            e.truncate(self.capacity);
        }
        Ok((bp, false))
    }

    /// Looks `key` up and moves it to the front.
    fn take(&self, key: &[u8; 32]) -> Option<Readings> {
        let mut e = self.entries.lock().ok()?;
        let i = e.iter().position(|(k, _)| k == key)?;
        let entry = e.remove(i)?;
        let bp = entry.1.clone();
        e.push_front(entry);
        Some(bp)
    }

    /// Lookups answered from the cache.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Lookups that analysed.
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(c: [u8; 3]) -> Vec<u8> {
        let img = image::RgbImage::from_pixel(64, 48, image::Rgb(c));
        let mut out = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageRgb8(img)
            .write_to(&mut out, image::ImageFormat::Png)
            .unwrap();
        out.into_inner()
    }

    #[test]
    fn a_second_lookup_is_a_hit_and_the_oldest_is_evicted() {
        let cache = BlueprintCache::new(2);
        let (a, b, c) = (png([1, 2, 3]), png([4, 5, 6]), png([7, 8, 9]));
        let first = cache.get_or_analyse(&a).unwrap();
        let again = cache.get_or_analyse(&a).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!((cache.hits(), cache.misses()), (1, 1));
        cache.get_or_analyse(&b).unwrap();
        cache.get_or_analyse(&c).unwrap();
        // `a` was the least recently used of three in a cache of two.
        cache.get_or_analyse(&a).unwrap();
        assert_eq!((cache.hits(), cache.misses()), (1, 4));
        assert!(cache.get_or_analyse(b"not an image").is_err());
    }
}
