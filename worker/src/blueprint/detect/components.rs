//! Step 3: the foreground as 8-connected components (with their holes filled for the
//! outline), and on a photo ground the large flat areas that become panels.

use super::colour::{dist, mean_colour};
use super::shapes::{holds_a_word, outline};
use super::{Comp, Found, Grid, PxBox};
use crate::blueprint::{Shape, ShapeRole, SolidShape};

impl Grid {
    /// On a photo ground: large flat areas of one colour (bands, cards) become panels.
    pub(super) fn panels(&self, found: &mut Found) {
        let (w, h) = (self.w, self.h);
        let flat: Vec<bool> = (0..w * h)
            .map(|i| {
                let (x, y) = (i % w, i / w);
                let c = self.px[i];
                let mut m = 0.0f32;
                for (dx, dy) in [(-1i32, 0i32), (1, 0), (0, -1), (0, 1)] {
                    let (nx, ny) = (x as i32 + dx, y as i32 + dy);
                    if nx >= 0 && ny >= 0 && (nx as usize) < w && (ny as usize) < h {
                        m = m.max(dist(c, self.at(nx as usize, ny as usize)));
                    }
                }
                m < 0.012
            })
            .collect();
        let similar = |a: usize, b: usize| dist(self.px[a], self.px[b]) < 0.02;
        let min_area = (w * h) as f32 * 0.03;
        for c in components(&flat, w, h, Some(&similar as &dyn Fn(usize, usize) -> bool)) {
            if (c.pixels.len() as f32) < min_area {
                continue;
            }
            let color = mean_colour(c.pixels.iter().map(|i| self.px[*i]));
            let filled = filled_mask(&c, w);
            let shape = outline(&filled, c.bbox.w(), c.bbox.h());
            // A band or card is drawn, so regular; flat patches of a photo are not.
            if !matches!(shape, Shape::Rectangle | Shape::Rounded { .. }) {
                continue;
            }
            let inner = self.inner(&c, &filled, color);
            if !holds_a_word(&inner) {
                continue;
            }
            let idx = found.shapes.len();
            found.shapes.push((
                SolidShape {
                    role: ShapeRole::Panel,
                    rect: self.unit(&c.bbox),
                    shape,
                    color,
                },
                c.bbox,
            ));
            for g in inner {
                self.classify_in(g, color, Some(idx), 1, found);
            }
        }
    }
}

/// 8-connected components of `mask`; with `join`, neighbours must also satisfy it.
pub(super) fn components(
    mask: &[bool],
    w: usize,
    h: usize,
    join: Option<&dyn Fn(usize, usize) -> bool>,
) -> Vec<Comp> {
    let mut seen = vec![false; mask.len()];
    let mut out = Vec::new();
    let mut stack = Vec::new();
    for start in 0..mask.len() {
        if !mask[start] || seen[start] {
            continue;
        }
        seen[start] = true;
        stack.push(start);
        let mut pixels = Vec::new();
        let mut bbox = PxBox {
            x0: start % w,
            y0: start / w,
            x1: start % w + 1,
            y1: start / w + 1,
        };
        while let Some(i) = stack.pop() {
            pixels.push(i);
            let (x, y) = (i % w, i / w);
            bbox.x0 = bbox.x0.min(x);
            bbox.y0 = bbox.y0.min(y);
            bbox.x1 = bbox.x1.max(x + 1);
            bbox.y1 = bbox.y1.max(y + 1);
            for dy in -1i32..=1 {
                for dx in -1i32..=1 {
                    let (nx, ny) = (x as i32 + dx, y as i32 + dy);
                    if nx < 0 || ny < 0 || nx as usize >= w || ny as usize >= h {
                        continue;
                    }
                    let j = ny as usize * w + nx as usize;
                    if mask[j] && !seen[j] && join.is_none_or(|f| f(i, j)) {
                        seen[j] = true;
                        stack.push(j);
                    }
                }
            }
        }
        out.push(Comp { bbox, pixels });
    }
    out
}

/// The component with its holes filled, as a mask over its box.
pub(super) fn filled_mask(c: &Comp, w: usize) -> Vec<bool> {
    let (bw, bh) = (c.bbox.w(), c.bbox.h());
    let mut inside = vec![false; bw * bh];
    for i in &c.pixels {
        let (x, y) = (i % w - c.bbox.x0, i / w - c.bbox.y0);
        inside[y * bw + x] = true;
    }
    // Flood the outside from the box's border through pixels not in the component.
    let mut outside = vec![false; bw * bh];
    let mut stack = Vec::new();
    for y in 0..bh {
        for x in 0..bw {
            if (x == 0 || y == 0 || x + 1 == bw || y + 1 == bh) && !inside[y * bw + x] {
                outside[y * bw + x] = true;
                stack.push((x, y));
            }
        }
    }
    while let Some((x, y)) = stack.pop() {
        for (dx, dy) in [(-1i32, 0i32), (1, 0), (0, -1), (0, 1)] {
            let (nx, ny) = (x as i32 + dx, y as i32 + dy);
            if nx < 0 || ny < 0 || nx as usize >= bw || ny as usize >= bh {
                continue;
            }
            let j = ny as usize * bw + nx as usize;
            if !inside[j] && !outside[j] {
                outside[j] = true;
                stack.push((nx as usize, ny as usize));
            }
        }
    }
    outside.iter().map(|o| !o).collect()
}
