//! The coarse mask: what the colour key, the model or the photo's own alpha says about
//! which part of the picture is the product, on a small grid spanning the whole photo; its
//! parts, and the sanity check a mask must pass before anything is cut with it.

use super::Refusal;

/// Most of the frame a product may take: above it the "product" is the whole photo (or the
/// mask found nothing to separate).
pub const MAX_COVERAGE: f32 = 0.95;
/// Least of the frame a product must take.
pub const MIN_COVERAGE: f32 = 0.005;
/// Parts smaller than this share of the largest part are specks, dropped.
const SPECK: f32 = 0.05;
/// More parts than this (each at least [`SPECK`] of the largest) is not one product.
pub const MAX_PARTS: usize = 5;

/// A mask over the whole photo on a `w` x `h` grid (the grid may squash the photo: cell
/// `(i, j)` covers the photo's `(i / w .. (i + 1) / w, j / h .. (j + 1) / h)`).
#[derive(Debug, Clone)]
pub(crate) struct Coarse {
    pub w: usize,
    pub h: usize,
    /// Soft values 0..1, row by row (1 = product).
    pub soft: Vec<f32>,
    /// The product's cells: soft ≥ 0.5 (or, for a colour key, not ground reaching the
    /// border), specks dropped by [`Coarse::check`].
    pub keep: Vec<bool>,
    /// Cells taken out of the product as ground after the mask was made (a shadow the
    /// model does not see as product): ground outright when the edge is cut.
    pub cleared: Vec<bool>,
}

impl Coarse {
    /// A mask whose product is where `soft ≥ 0.5`.
    pub(crate) fn from_soft(w: usize, h: usize, soft: Vec<f32>) -> Self {
        let keep = soft.iter().map(|v| *v >= 0.5).collect();
        let cleared = vec![false; w * h];
        Coarse {
            w,
            h,
            soft,
            keep,
            cleared,
        }
    }

    /// Drops specks from [`Coarse::keep`] and checks what is left: the product must take
    /// between [`MIN_COVERAGE`] and [`MAX_COVERAGE`] of the frame in at most [`MAX_PARTS`]
    /// parts.
    ///
    /// # Errors
    /// The [`Refusal`] saying which rule the mask breaks.
    pub(crate) fn check(&mut self) -> Result<(), Refusal> {
        let total = (self.w * self.h).max(1) as f32;
        let coverage = self.keep.iter().filter(|k| **k).count() as f32 / total;
        if coverage > MAX_COVERAGE {
            return Err(Refusal::FillsFrame { coverage });
        }
        let parts = components(&self.keep, self.w, self.h);
        let largest = parts.iter().map(Vec::len).max().unwrap_or(0);
        let mut kept = 0usize;
        let mut count = 0usize;
        for part in &parts {
            if (part.len() as f32) < SPECK * largest as f32 {
                for &i in part {
                    self.keep[i] = false;
                }
            } else {
                kept += part.len();
                count += 1;
            }
        }
        let coverage = kept as f32 / total;
        if coverage < MIN_COVERAGE {
            return Err(Refusal::Empty { coverage });
        }
        if count > MAX_PARTS {
            return Err(Refusal::Scattered { parts: count });
        }
        Ok(())
    }

    /// The product's box on the grid (x0, y0, x1, y1), exclusive ends; `None` when empty.
    pub(crate) fn bounds(&self) -> Option<(usize, usize, usize, usize)> {
        let mut b: Option<(usize, usize, usize, usize)> = None;
        for (i, _) in self.keep.iter().enumerate().filter(|(_, k)| **k) {
            let (x, y) = (i % self.w, i / self.w);
            b = Some(match b {
                None => (x, y, x + 1, y + 1),
                Some((x0, y0, x1, y1)) => (x0.min(x), y0.min(y), x1.max(x + 1), y1.max(y + 1)),
            });
        }
        b
    }

    /// The soft value at `(u, v)` in the unit square, bilinear between cell centres.
    pub(crate) fn soft_at(&self, u: f32, v: f32) -> f32 {
        let fx = (u * self.w as f32 - 0.5).clamp(0.0, (self.w - 1) as f32);
        let fy = (v * self.h as f32 - 0.5).clamp(0.0, (self.h - 1) as f32);
        let (x0, y0) = (fx as usize, fy as usize);
        let (x1, y1) = ((x0 + 1).min(self.w - 1), (y0 + 1).min(self.h - 1));
        let (tx, ty) = (fx - x0 as f32, fy - y0 as f32);
        let at = |x: usize, y: usize| self.soft[y * self.w + x];
        let top = at(x0, y0) + (at(x1, y0) - at(x0, y0)) * tx;
        let bottom = at(x0, y1) + (at(x1, y1) - at(x0, y1)) * tx;
        top + (bottom - top) * ty
    }

    /// The cell holding `(u, v)`.
    pub(crate) fn cell(&self, u: f32, v: f32) -> usize {
        let x = ((u * self.w as f32) as usize).min(self.w - 1);
        let y = ((v * self.h as f32) as usize).min(self.h - 1);
        y * self.w + x
    }
}

/// `mask` grown (`grow`) or shrunk by `by` cells (a square neighbourhood; cells outside
/// the grid count for neither).
pub(crate) fn morph(mask: &[bool], w: usize, h: usize, by: usize, grow: bool) -> Vec<bool> {
    // Separable: along rows, then along columns. A cell becomes `grow` when any cell of its
    // window is `grow`.
    let mut rows = vec![false; w * h];
    for y in 0..h {
        let row = &mask[y * w..(y + 1) * w];
        for x in 0..w {
            let window = &row[x.saturating_sub(by)..=(x + by).min(w - 1)];
            rows[y * w + x] = if window.contains(&grow) { grow } else { !grow };
        }
    }
    let mut out = vec![false; w * h];
    for x in 0..w {
        for y in 0..h {
            let hit = (y.saturating_sub(by)..=(y + by).min(h - 1)).any(|t| rows[t * w + x] == grow);
            out[y * w + x] = if hit { grow } else { !grow };
        }
    }
    out
}

/// 8-connected components of `mask`, each as its cell indices.
pub(crate) fn components(mask: &[bool], w: usize, h: usize) -> Vec<Vec<usize>> {
    let mut seen = vec![false; mask.len()];
    let mut out = Vec::new();
    let mut stack = Vec::new();
    for start in 0..mask.len() {
        if !mask[start] || seen[start] {
            continue;
        }
        seen[start] = true;
        stack.push(start);
        let mut part = Vec::new();
        while let Some(i) = stack.pop() {
            part.push(i);
            let (x, y) = ((i % w) as isize, (i / w) as isize);
            for dy in -1..=1isize {
                for dx in -1..=1isize {
                    let (nx, ny) = (x + dx, y + dy);
                    if nx < 0 || ny < 0 || nx >= w as isize || ny >= h as isize {
                        continue;
                    }
                    let j = ny as usize * w + nx as usize;
                    if mask[j] && !seen[j] {
                        seen[j] = true;
                        stack.push(j);
                    }
                }
            }
        }
        out.push(part);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(w: usize, h: usize, inside: impl Fn(usize, usize) -> bool) -> Coarse {
        Coarse::from_soft(
            w,
            h,
            (0..w * h)
                .map(|i| if inside(i % w, i / w) { 1.0 } else { 0.0 })
                .collect(),
        )
    }

    #[test]
    fn the_sanity_check_refuses_empty_full_and_scattered_masks() {
        assert!(matches!(
            grid(100, 100, |_, _| false).check(),
            Err(Refusal::Empty { .. })
        ));
        assert!(matches!(
            grid(100, 100, |x, _| x > 1).check(),
            Err(Refusal::FillsFrame { .. })
        ));
        // Twenty blobs of the same size.
        assert!(matches!(
            grid(100, 100, |x, y| x % 20 < 5 && y % 25 < 5).check(),
            Err(Refusal::Scattered { parts: 20 })
        ));
        // One product and a speck: the speck is dropped, the product kept.
        let mut one = grid(100, 100, |x, y| {
            (30..70).contains(&x) && (20..90).contains(&y) || (x == 5 && y == 5)
        });
        one.check().unwrap();
        assert!(!one.keep[5 * 100 + 5]);
        assert_eq!(one.bounds(), Some((30, 20, 70, 90)));
    }

    #[test]
    fn morphology_grows_and_shrinks() {
        let m: Vec<bool> = (0..100).map(|i| i == 55).collect();
        let grown = morph(&m, 10, 10, 1, true);
        assert_eq!(grown.iter().filter(|v| **v).count(), 9);
        let shrunk = morph(&grown, 10, 10, 1, false);
        assert_eq!(shrunk.iter().filter(|v| **v).count(), 1);
    }
}
