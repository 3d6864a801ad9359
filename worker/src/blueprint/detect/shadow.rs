//! Part of step 4: the soft shadow a cut-out product casts on the ground. A packshot often
//! stands on one, and an ad that cuts the product out should give it one too, where the
//! reference had it.
//!
//! A shadow pixel is the ground darkened: every channel at about the same fraction of the
//! ground's (0.3 to 0.985 of it), hue kept. Around the base of a silhouette (its lower
//! part and a little below, a little wider than it) such pixels are the shadow when they
//! form a flat band that reaches past the product's base; the product's box is then the
//! silhouette without them. A grey product's own lower part is darkened ground by colour,
//! but it is no wider than the product, so it is not taken for a shadow.

use super::colour::dist;
use super::{Comp, Grid, PxBox};
use crate::blueprint::{Background, GroundShadow, Rgb};

/// How much of the ground's brightness a shadow pixel keeps, at least and at most.
const DARKEST: f32 = 0.3;
const LIGHTEST: f32 = 0.985;

/// The fraction of the ground's brightness `c` has, when `c` is the ground darkened.
fn darkened(c: Rgb, g: Rgb) -> Option<f32> {
    let sum = |p: Rgb| p.iter().map(|v| f32::from(*v)).sum::<f32>();
    let k = sum(c) / sum(g).max(1.0);
    if !(DARKEST..=LIGHTEST).contains(&k) || dist(c, g) < 0.015 {
        return None;
    }
    let keeps_hue = (0..3).all(|i| {
        let gi = f32::from(g[i]);
        gi < 24.0 || (f32::from(c[i]) - k * gi).abs() <= 12.0 + 0.08 * gi
    });
    keeps_hue.then_some(k)
}

impl Grid {
    /// The ground shadow under the silhouette `c`, and the silhouette's box without it.
    pub(super) fn ground_shadow(&self, c: &Comp, bg: &Background) -> Option<(GroundShadow, PxBox)> {
        let r = c.bbox;
        let lower = r.y0 + r.h() * 6 / 10;
        // The silhouette's pixels, as a mask over its box.
        let mut member = vec![false; r.w() * r.h()];
        for &i in &c.pixels {
            member[(i / self.w - r.y0) * r.w() + (i % self.w - r.x0)] = true;
        }
        let is_member = |x: usize, y: usize| {
            x >= r.x0
                && x < r.x1
                && y >= r.y0
                && y < r.y1
                && member[(y - r.y0) * r.w() + (x - r.x0)]
        };
        let shade = |i: usize| {
            let (x, y) = (i % self.w, i / self.w);
            darkened(self.px[i], self.ground(bg, x, y))
        };
        // The product: the silhouette less the darkened ground in its lower part.
        let mut product: Option<PxBox> = None;
        for &i in &c.pixels {
            let (x, y) = (i % self.w, i / self.w);
            if y >= lower && shade(i).is_some() {
                continue;
            }
            let b = PxBox {
                x0: x,
                y0: y,
                x1: x + 1,
                y1: y + 1,
            };
            product = Some(product.map_or(b, |p| p.union(&b)));
        }
        let p = product?;
        // The product's base: the extent of its lowest tenth.
        let base_top = p.y1 - (p.h() / 10).max(1);
        let (mut bx0, mut bx1) = (usize::MAX, 0);
        let in_product = |x: usize, y: usize| {
            let i = y * self.w + x;
            y >= base_top && y < p.y1 && is_member(x, y) && !(y >= lower && shade(i).is_some())
        };
        for y in base_top..p.y1 {
            for x in p.x0..p.x1 {
                if in_product(x, y) {
                    bx0 = bx0.min(x);
                    bx1 = bx1.max(x + 1);
                }
            }
        }
        if bx1 <= bx0 {
            return None;
        }
        // Darkened ground around the base.
        let (wx0, wx1) = (
            p.x0.saturating_sub(p.w() / 2),
            (p.x1 + p.w() / 2).min(self.w),
        );
        let (wy0, wy1) = (
            p.y1.saturating_sub(p.h() * 15 / 100),
            (p.y1 + p.h() * 3 / 10).min(self.h),
        );
        let mut shadow: Option<PxBox> = None;
        let mut ks = Vec::new();
        for y in wy0..wy1 {
            for x in wx0..wx1 {
                let i = y * self.w + x;
                if y < lower && is_member(x, y) {
                    continue;
                }
                let Some(k) = shade(i) else { continue };
                if y < base_top && x >= bx0 && x < bx1 {
                    // Inside the product's own lower body, not beside its base.
                    continue;
                }
                ks.push(k);
                let b = PxBox {
                    x0: x,
                    y0: y,
                    x1: x + 1,
                    y1: y + 1,
                };
                shadow = Some(shadow.map_or(b, |s| s.union(&b)));
            }
        }
        let s = shadow?;
        let base_w = (bx1 - bx0) as f32;
        let flat = (s.h() as f32) <= 0.5 * s.w() as f32;
        let wider = s.w() as f32 >= 1.15 * base_w;
        let enough = ks.len() as f32 >= 0.02 * (p.w() * p.h()) as f32;
        let at_base = (s.y0 + s.y1) as f32 / 2.0 >= p.y1 as f32 - 0.1 * p.h() as f32;
        if !(flat && wider && enough && at_base) {
            return None;
        }
        ks.sort_by(f32::total_cmp);
        let darkest = ks[ks.len() / 10];
        Some((
            GroundShadow {
                rect: self.unit(&s),
                strength: ((1.0 - darkest) * 100.0).round() / 100.0,
            },
            p,
        ))
    }
}
