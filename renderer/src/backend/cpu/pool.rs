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
    let reused = POOL.with(|p| {
        let mut p = p.borrow_mut();
        // The smallest buffer that is large enough.
        let best = p
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity() >= len)
            .min_by_key(|(_, b)| b.capacity())
            .map(|(i, _)| i);
        best.map(|i| p.swap_remove(i))
    });
    match reused {
        Some(mut v) => {
            v.clear();
            v.resize(len, 0);
            v
        }
        None => vec![0; len],
    }
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
