//! A small per-thread pool of byte buffers for layers, masks and resampled images.
//!
//! At 4K these buffers are tens of megabytes; a fresh allocation costs a page fault per 4 KiB
//! (about 10 ms for a full canvas on a typical VM), while a reused one costs a `memset`. A
//! worker thread renders ad after ad, so buffers are kept per thread (no locks), at most
//! `MAX_KEPT` of them.

use std::cell::RefCell;

use tiny_skia::{IntSize, Mask, Pixmap};

const MAX_KEPT: usize = 6;

thread_local! {
    static POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// A zeroed buffer of exactly `len` bytes.
pub fn take(len: usize) -> Vec<u8> {
    match reuse(len) {
        Some(mut v) => {
            v.clear();
            v.resize(len, 0);
            v
        }
        None => vec![0; len],
    }
}

/// A buffer of exactly `len` bytes holding whatever it held before, for a caller that
/// overwrites every byte (a resampled image): saves a `memset` of tens of megabytes.
pub fn take_dirty(len: usize) -> Vec<u8> {
    match reuse(len) {
        Some(mut v) => {
            v.truncate(len);
            v.resize(len, 0);
            v
        }
        None => vec![0; len],
    }
}

/// The smallest kept buffer that is large enough, and not over four times too large: a big
/// buffer lent for a small layer comes back with that small length, and its next big use
/// as [`take_dirty`] would have to write all the bytes in between again.
fn reuse(len: usize) -> Option<Vec<u8>> {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        let best = p
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity() >= len && b.capacity() / 4 <= len)
            .min_by_key(|(_, b)| b.capacity())
            .map(|(i, _)| i);
        best.map(|i| p.swap_remove(i))
    })
}

/// Returns a buffer to the pool (dropping the smallest when full).
pub fn give(v: Vec<u8>) {
    if v.capacity() < 1 << 16 {
        return;
    }
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        p.push(v);
        if p.len() > MAX_KEPT
            && let Some(i) = p
                .iter()
                .enumerate()
                .min_by_key(|(_, b)| b.capacity())
                .map(|(i, _)| i)
        {
            p.swap_remove(i);
        }
    });
}

pub fn pixmap(w: u32, h: u32) -> Option<Pixmap> {
    let size = IntSize::from_wh(w, h)?;
    Pixmap::from_vec(take(w as usize * h as usize * 4), size)
}

pub fn mask(w: u32, h: u32) -> Option<Mask> {
    let size = IntSize::from_wh(w, h)?;
    Mask::from_vec(take(w as usize * h as usize), size)
}
