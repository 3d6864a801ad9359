//! The bounds a render runs under, beside the tree's own limits ([`crate::limits`]):
//!
//! - **Time**: a [`Deadline`] that the CPU backend checks between draw operations and inside
//!   its long loops (blurs, shadow spreads, large fills, row by row), so a render past its
//!   budget stops within milliseconds and frees its thread, instead of finishing in the
//!   background after its caller has given up. [`stop_all`] ends every render of the
//!   process at its next check: a shutting-down server calls it so that SIGTERM is not held
//!   up by renders nobody will read.
//! - **Memory**: [`peak_bytes`] is a scene's worst case (the canvas, every layer alive at
//!   once at the deepest point of the display list, the temporary planes of the effect
//!   being composited, and the PNG encode), computed from the display list before anything
//!   is drawn. A render reserves it against one process-wide [`RenderBudget`] of
//!   [`RENDER_BUDGET_BYTES`] (waiting its turn, like the decode budget of client images),
//!   and a scene that would hold more than [`MAX_LAYER_BYTES`] beyond its canvas is
//!   refused ([`crate::Error::TooMuchMemory`], naming the node whose layer crossed the
//!   bound), so a tree of 255 nested clipping frames cannot take gigabytes. Callers that
//!   accept trees (PATCH, previews) ask [`crate::Renderer::check_memory`] first, so such a
//!   tree is refused when it is sent, not when its render runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::scene::{DrawOp, LayerEffect, Scene, ScenePaint};

/// Set once the process is shutting down: every render stops at its next check.
static STOP_ALL: AtomicBool = AtomicBool::new(false);

/// Ends every render of this process at its next check (each returns
/// [`crate::Error::Stopped`]), and every render started after this at once. Called by a
/// server or worker on SIGTERM; there is no way back.
pub fn stop_all() {
    STOP_ALL.store(true, Ordering::Relaxed);
}

/// True once [`stop_all`] was called.
pub fn stopping() -> bool {
    STOP_ALL.load(Ordering::Relaxed)
}

/// When a render must stop. `Deadline::default()` is none (only [`stop_all`] stops it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deadline {
    at: Option<Instant>,
}

impl Deadline {
    /// No deadline.
    pub const NONE: Deadline = Deadline { at: None };

    /// A deadline `budget` from now.
    pub fn after(budget: Duration) -> Self {
        Self {
            at: Instant::now().checked_add(budget),
        }
    }

    /// A deadline at `at`.
    pub fn at(at: Instant) -> Self {
        Self { at: Some(at) }
    }

    /// The instant, if there is one.
    pub fn instant(&self) -> Option<Instant> {
        self.at
    }

    /// True when the work bound by this deadline must stop now: the deadline has passed or
    /// the process is shutting down. Costs one clock read (tens of nanoseconds), so loops
    /// call it once per row.
    #[inline]
    pub fn passed(&self) -> bool {
        stopping() || self.at.is_some_and(|at| Instant::now() >= at)
    }

    /// Why the work stopped, for [`crate::Error`].
    pub(crate) fn error(&self, stage: &'static str) -> crate::Error {
        if stopping() {
            crate::Error::Stopped
        } else {
            crate::Error::PastDeadline { stage }
        }
    }
}

/// Memory all renders of one process may reserve at once (see the module docs).
pub const RENDER_BUDGET_BYTES: u64 = 768 << 20;

/// The most one render may hold beyond its canvas (and the PNG encode's copy of it): the
/// layers alive at once and the scratch planes of the effect being composited. A scene
/// over it is refused, not drawn. At 4K a full-canvas layer is 59 MB and a full-canvas
/// card with a drop shadow takes 190 MB beyond the canvas; five full-canvas rounded
/// clipping frames inside each other fit, 255 do not. The canvas itself is bounded by
/// [`crate::limits::MAX_PIXELS`].
pub const MAX_LAYER_BYTES: u64 = 320 << 20;

/// Where a scene's worst case memory is reached, from [`peak_bytes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peak {
    /// Bytes the render holds at its worst moment, canvas included.
    pub bytes: u64,
    /// Of those, bytes beyond the canvas (and its encode): what [`MAX_LAYER_BYTES`] bounds.
    pub layers: u64,
    /// Index (in [`crate::Tree::nodes`]) of the innermost node with a layer alive when the
    /// layers first went over [`MAX_LAYER_BYTES`], else at the peak; `None` when no layer
    /// was alive then.
    pub node: Option<usize>,
}

impl Peak {
    /// True when the scene may not be drawn.
    pub fn over(&self) -> bool {
        self.layers > MAX_LAYER_BYTES
    }
}

/// The worst case memory of rasterising `scene` on the CPU (and, with `encode_png`,
/// encoding it): the canvas, the layers alive at once, and the scratch planes of the
/// operation at hand, as [`crate::backend::cpu`] allocates them. Decoded images are not
/// counted (their fetch and decode have their own bounds).
pub fn peak_bytes(scene: &Scene, encode_png: bool) -> Peak {
    let area = |w: u32, h: u32| u64::from(w) * u64::from(h);
    let canvas = area(scene.width.max(1), scene.height.max(1)) * 4;
    // The PNG encoder holds filtered rows and the deflate output: about one more canvas.
    let base = if encode_png { canvas * 2 } else { canvas };
    let mut live: Vec<(u64, usize)> = Vec::new();
    let mut held = 0u64;
    let mut peak = Peak {
        bytes: base,
        layers: 0,
        node: None,
    };
    let mut first_over: Option<Option<usize>> = None;
    let mut note = |layers: u64, node: Option<usize>, peak: &mut Peak| {
        if layers > peak.layers {
            *peak = Peak {
                bytes: base + layers,
                layers,
                node,
            };
        }
        if layers > MAX_LAYER_BYTES && first_over.is_none() {
            first_over = Some(node);
        }
    };
    for op in &scene.ops {
        let innermost = live.last().map(|&(_, n)| n);
        let transient = match op {
            DrawOp::PushLayer(layer) => {
                let px = area(layer.bounds.width(), layer.bounds.height());
                // Compositing it later: a clip mask (a byte a pixel) and, with effects,
                // scratch planes: a layer blur's copy (4 bytes a pixel); a drop shadow's
                // alpha planes (3) and output pixmap (4); an inner shadow's planes (2)
                // and its colour (4).
                let mask = if layer.clip.is_some() { px } else { 0 };
                let effects = layer.effects.iter().fold(0, |most, e| {
                    most.max(match e {
                        LayerEffect::Blur { .. } => 4 * px,
                        LayerEffect::DropShadow { .. } => 7 * px,
                        LayerEffect::InnerShadow { .. } => 6 * px,
                    })
                });
                live.push((px * 4, layer.node));
                held += px * 4;
                // The layer, then at its pop the scratch planes on top.
                note(held + mask + effects, Some(layer.node), &mut peak);
                continue;
            }
            DrawOp::PopLayer => {
                if let Some((bytes, _)) = live.pop() {
                    held -= bytes;
                }
                continue;
            }
            // The region's copy, the blur's scratch plane and the shape's mask.
            DrawOp::BackdropBlur { bounds, .. } => area(bounds.width(), bounds.height()) * 9,
            // A resampled copy of the visible part of the image, at most the target.
            DrawOp::Fill {
                paint: ScenePaint::Image { .. },
                ..
            } => live.last().map_or(canvas, |&(bytes, _)| bytes),
            _ => 0,
        };
        note(held + transient, innermost, &mut peak);
    }
    if let Some(node) = first_over {
        peak.node = node;
    }
    peak
}

/// A process-wide memory budget for renders (see the module docs): each render reserves
/// its worst case before it draws and gives it back when done; a render that does not fit
/// waits until earlier ones end or its deadline passes.
#[derive(Debug)]
pub struct RenderBudget {
    total: u64,
    used: Mutex<u64>,
    freed: Condvar,
}

/// A share of a [`RenderBudget`], given back on drop.
#[derive(Debug)]
pub struct Reservation<'a> {
    budget: &'a RenderBudget,
    bytes: u64,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut used = self
            .budget
            .used
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *used = used.saturating_sub(self.bytes);
        drop(used);
        self.budget.freed.notify_all();
    }
}

impl RenderBudget {
    /// A budget of `total` bytes.
    pub const fn new(total: u64) -> Self {
        Self {
            total,
            used: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// The process's budget of [`RENDER_BUDGET_BYTES`].
    pub fn global() -> &'static RenderBudget {
        static GLOBAL: RenderBudget = RenderBudget::new(RENDER_BUDGET_BYTES);
        &GLOBAL
    }

    /// Bytes reserved now.
    pub fn used(&self) -> u64 {
        *self.used.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reserves `bytes` (at most the whole budget: a larger ask waits until it runs alone),
    /// waiting until they fit. `None` when `deadline` passes first.
    pub fn reserve(&self, bytes: u64, deadline: &Deadline) -> Option<Reservation<'_>> {
        let bytes = bytes.min(self.total);
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if *used + bytes <= self.total {
                *used += bytes;
                return Some(Reservation {
                    budget: self,
                    bytes,
                });
            }
            if deadline.passed() {
                return None;
            }
            // Wake at least every 50 ms to see the deadline or a shutdown.
            let wait = deadline.instant().map_or(Duration::from_millis(50), |at| {
                at.saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(50))
            });
            used = self
                .freed
                .wait_timeout(used, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_in_the_past_has_passed_and_none_never_does() {
        assert!(Deadline::at(Instant::now()).passed());
        assert!(!Deadline::NONE.passed());
        assert!(!Deadline::after(Duration::from_secs(60)).passed());
    }

    #[test]
    fn a_reservation_that_does_not_fit_waits_until_one_is_given_back() {
        let budget = RenderBudget::new(100);
        let first = budget.reserve(70, &Deadline::NONE).expect("fits");
        // 70 + 40 > 100: with a deadline already past, the second gives up at once.
        assert!(budget.reserve(40, &Deadline::at(Instant::now())).is_none());
        std::thread::scope(|s| {
            let waiter = s.spawn(|| budget.reserve(40, &Deadline::NONE).map(|r| r.bytes));
            std::thread::sleep(Duration::from_millis(20));
            drop(first);
            assert_eq!(waiter.join().expect("no panic"), Some(40));
        });
        assert_eq!(budget.used(), 0);
        // An ask larger than the whole budget runs alone.
        let all = budget.reserve(1_000, &Deadline::NONE).expect("runs alone");
        assert_eq!(budget.used(), 100);
        drop(all);
    }
}
