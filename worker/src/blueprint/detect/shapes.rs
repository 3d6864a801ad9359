//! Step 4: each component becomes a solid shape (analysed again inside against its own
//! colour), an image, or a glyph; and the outline of a filled mask.

use super::colour::{core_colour, dist, mode_colour};
use super::components::{components, filled_mask};
use super::{Comp, Found, Glyph, Grid, PxBox};
use crate::blueprint::{Background, ImageRegion, Rgb, Shape, ShapeRole, SolidShape};

/// Least size of a picture, both ways, as a share of the working copy's short side.
const PICTURE: f32 = 0.15;

/// A photo is cut to its frame exactly: its mask agrees with its rectangle, rounded
/// rectangle or circle on this share of its box or more. A cut-out product only resembles
/// one (a bottle's shoulders, a jar's lid), below it.
const EXACT_FIT: f32 = 0.975;

/// A drawing: this share of its pixels or more are flat ([`Grid::flat_share`]); a photo on
/// the working copy has fewer (0.41 to 0.88 on the corpus's framed photos, 0.82 to 0.95 on
/// its drawn products).
const FLAT: f32 = 0.8;

impl Grid {
    /// Sorts one foreground component into shape, image or glyph. `ground` is the colour
    /// around it; `owner` the solid shape it lies in (the canvas when `None`).
    pub(super) fn classify(&self, c: Comp, bg: &Background, found: &mut Found) {
        let ground = self.ground(bg, c.bbox.x0, c.bbox.y0);
        let md = self.w.min(self.h) as f32;
        // Large enough to be a picture: keep its pixels for the shadow check.
        let picture = (c.bbox.w() as f32 >= PICTURE * md && c.bbox.h() as f32 >= PICTURE * md)
            .then(|| Comp {
                bbox: c.bbox,
                pixels: c.pixels.clone(),
            });
        let images = found.images.len();
        let whole = self.unit(&c.bbox);
        self.classify_in(c, ground, None, 0, found);
        if let (Some(c), true) = (picture, found.images.len() > images)
            && let Some(image) = found.images.last_mut()
            && image.cutout
            && image.rect == whole
            && let Some((shadow, product)) = self.ground_shadow(&c, bg)
        {
            image.rect = self.unit(&product);
            image.shadow = Some(shadow);
        }
    }

    /// [`Grid::classify`] against a known ground colour; `depth` counts the solid shapes
    /// it lies in (a shape inside a shape inside a shape is not looked for).
    pub(super) fn classify_in(
        &self,
        c: Comp,
        ground: Rgb,
        owner: Option<usize>,
        depth: usize,
        found: &mut Found,
    ) {
        let (bw, bh) = (c.bbox.w(), c.bbox.h());
        let md = self.w.min(self.h) as f32;
        let filled = filled_mask(&c, self.w);
        let filled_n = filled.iter().filter(|f| **f).count().max(1);
        let fill_ratio = filled_n as f32 / (bw * bh).max(1) as f32;
        let solidity = c.pixels.len() as f32 / filled_n as f32;
        let (mode, uniform) = mode_colour(c.pixels.iter().map(|i| self.px[*i]));
        let big_enough = bw as f32 >= 0.06 * md && bh as f32 >= 0.035 * md;
        let area = (bw * bh) as f32 / (self.w * self.h) as f32;
        let picture_sized = bw as f32 >= PICTURE * md && bh as f32 >= PICTURE * md;
        // A plain round or rounded shape of one colour over much of it, holding a picture:
        // the coloured ground a product is set on (its shading keeps it under the 60 %).
        let fit = picture_sized.then(|| outline_fit(&filled, bw, bh));
        let plain_ground = uniform >= 0.4
            && fit.is_some_and(|(s, f)| !matches!(s, Shape::Silhouette) && f >= EXACT_FIT);
        let solid = depth < 2 && big_enough && fill_ratio >= 0.7 && solidity >= 0.65;
        let inner =
            (solid && (uniform >= 0.6 || plain_ground)).then(|| self.inner(&c, &filled, mode));
        let holds_picture = inner.as_ref().is_some_and(|inner| {
            inner.iter().any(|g| {
                g.bbox.w() as f32 >= PICTURE * md
                    && g.bbox.h() as f32 >= PICTURE * md
                    && g.pixels.len() * 2 >= g.bbox.w() * g.bbox.h()
            })
        });
        // A thing of flat colours only loosely a box or a disc (a drawn bottle, a jar with
        // its lid) and with no line of marks inside is a product, not a badge or a button:
        // those are cut to their outline exactly, and hold a word.
        let drawn_product = fit.is_some_and(|(_, f)| f < EXACT_FIT)
            && !holds_picture
            && inner
                .as_ref()
                .is_some_and(|inner| !marks_side_by_side(inner));
        if let Some(inner) = inner
            && (uniform >= 0.6 || holds_picture)
            && !drawn_product
        {
            let shape = fit.map_or_else(|| outline(&filled, bw, bh), |(s, _)| s);
            let idx = found.shapes.len();
            found.shapes.push((
                SolidShape {
                    role: ShapeRole::Badge,
                    rect: self.unit(&c.bbox),
                    shape,
                    color: mode,
                },
                c.bbox,
            ));
            // A small solid thing is a button or badge only when it holds a word (two or
            // more marks side by side) or a picture; a bold letter with a counter is a glyph.
            if area < 0.10 && !holds_a_word(&inner) && !holds_picture {
                found.shapes.pop();
            } else {
                for g in inner {
                    self.classify_in(g, mode, Some(idx), depth + 1, found);
                }
                return;
            }
        }
        // A picture: on the ground, or inside a shape (a product on its coloured disc, a
        // photo on a card) when it is not one ink (a letter of display type).
        if picture_sized && (owner.is_none() || uniform < 0.85) {
            let (shape, fit) = fit.unwrap_or_else(|| outline_fit(&filled, bw, bh));
            // A silhouette on the ground is a cut-out; so is a drawing (flat colour) only
            // loosely a box, or a silhouette inside a shape. A photo there is framed (a
            // photo's pieces where parts of it match the card's colour).
            let silhouette = matches!(shape, Shape::Silhouette);
            let cutout = (silhouette && owner.is_none())
                || ((silhouette || fit < EXACT_FIT) && self.flat_share(&c) >= FLAT);
            found.images.push(ImageRegion {
                rect: self.unit(&c.bbox),
                shape,
                cutout,
                shadow: None,
            });
            return;
        }
        if c.pixels.len() < 3 {
            return;
        }
        if let Some(o) = owner {
            // A glyph fills at most half its shape; larger things are the shape's drawing.
            let shape = found.shapes[o].1;
            if bh as f32 > 0.5 * shape.h() as f32 && bw as f32 > 0.5 * shape.w() as f32 {
                return;
            }
        }
        found.glyphs.push(Glyph {
            bbox: c.bbox,
            count: c.pixels.len(),
            color: core_colour(c.pixels.iter().map(|i| self.px[*i]), ground),
            owner,
        });
    }

    /// The share of `c`'s pixels whose right and lower neighbours (in `c`) are within 0.03 of
    /// them: near 1 for flat colour and smooth gradients (a drawing), lower for a photo.
    fn flat_share(&self, c: &Comp) -> f32 {
        let (bw, bh) = (c.bbox.w(), c.bbox.h());
        let mut inside = vec![false; bw * bh];
        for &i in &c.pixels {
            inside[(i / self.w - c.bbox.y0) * bw + i % self.w - c.bbox.x0] = true;
        }
        let (mut flat, mut n) = (0usize, 0usize);
        for y in 0..bh.saturating_sub(1) {
            for x in 0..bw.saturating_sub(1) {
                let k = y * bw + x;
                if !(inside[k] && inside[k + 1] && inside[k + bw]) {
                    continue;
                }
                n += 1;
                let p = self.at(c.bbox.x0 + x, c.bbox.y0 + y);
                if dist(p, self.at(c.bbox.x0 + x + 1, c.bbox.y0 + y)) < 0.03
                    && dist(p, self.at(c.bbox.x0 + x, c.bbox.y0 + y + 1)) < 0.03
                {
                    flat += 1;
                }
            }
        }
        flat as f32 / n.max(1) as f32
    }

    /// The components inside a solid shape, in canvas coordinates: its pixels that differ
    /// from its colour (a label in the ground's colour shows as holes, which count too).
    pub(super) fn inner(&self, c: &Comp, filled: &[bool], color: Rgb) -> Vec<Comp> {
        let (bw, bh) = (c.bbox.w(), c.bbox.h());
        let mut mask = vec![false; bw * bh];
        for y in 0..bh {
            for x in 0..bw {
                let p = self.at(c.bbox.x0 + x, c.bbox.y0 + y);
                mask[y * bw + x] = filled[y * bw + x] && dist(p, color) > 0.15;
            }
        }
        // Drop the anti-aliased rim: pixels near the shape's outline.
        for y in 0..bh {
            for x in 0..bw {
                let edge = x < 2
                    || y < 2
                    || x + 2 >= bw
                    || y + 2 >= bh
                    || (x.saturating_sub(2)..(x + 3).min(bw))
                        .flat_map(|xx| {
                            (y.saturating_sub(2)..(y + 3).min(bh)).map(move |yy| (xx, yy))
                        })
                        .any(|(xx, yy)| !filled[yy * bw + xx]);
                if edge {
                    mask[y * bw + x] = false;
                }
            }
        }
        components(&mask, bw, bh, None)
            .into_iter()
            .map(|g| {
                let to_global = |i: usize| (c.bbox.y0 + i / bw) * self.w + c.bbox.x0 + i % bw;
                Comp {
                    bbox: PxBox {
                        x0: g.bbox.x0 + c.bbox.x0,
                        y0: g.bbox.y0 + c.bbox.y0,
                        x1: g.bbox.x1 + c.bbox.x0,
                        y1: g.bbox.y1 + c.bbox.y0,
                    },
                    pixels: g.pixels.into_iter().map(to_global).collect(),
                }
            })
            .collect()
    }
}

/// True when some two of `marks` sit side by side on one line (a word, not a letter's
/// counters), or one mark is at least twice as wide as tall: a short word in bold capitals
/// ("SALE" on a tag) runs together into one mark on the working copy, where a letter's
/// counter is about as wide as tall.
pub(super) fn holds_a_word(marks: &[Comp]) -> bool {
    marks
        .iter()
        .any(|m| m.pixels.len() >= 3 && m.bbox.h() >= 4 && m.bbox.w() >= 2 * m.bbox.h())
        || marks_side_by_side(marks)
}

/// True when some two of `marks` (three pixels or more) sit side by side on one line.
fn marks_side_by_side(marks: &[Comp]) -> bool {
    let marks: Vec<&Comp> = marks.iter().filter(|m| m.pixels.len() >= 3).collect();
    marks.iter().enumerate().any(|(i, a)| {
        marks[i + 1..].iter().any(|b| {
            let ov = a.bbox.y1.min(b.bbox.y1) as f32 - a.bbox.y0.max(b.bbox.y0) as f32;
            let hmin = a.bbox.h().min(b.bbox.h()) as f32;
            let apart = a.bbox.x1 <= b.bbox.x0 || b.bbox.x1 <= a.bbox.x0;
            ov >= 0.5 * hmin && apart
        })
    })
}

/// The outline that best matches a filled mask: rectangle, rounded rectangle, circle, or an
/// irregular silhouette when none agrees with it on at least 95 % of the box.
pub(super) fn outline(filled: &[bool], bw: usize, bh: usize) -> Shape {
    outline_fit(filled, bw, bh).0
}

/// [`outline`], and the share of the box on which the mask agrees with that outline (for a
/// silhouette, with the rounded rectangle of its fill).
pub(super) fn outline_fit(filled: &[bool], bw: usize, bh: usize) -> (Shape, f32) {
    let n = filled.iter().filter(|f| **f).count() as f32;
    let area = (bw * bh).max(1) as f32;
    let fill = n / area;
    let agree = |inside: &dyn Fn(f32, f32) -> bool| {
        let mut same = 0usize;
        for y in 0..bh {
            for x in 0..bw {
                if inside(x as f32 + 0.5, y as f32 + 0.5) == filled[y * bw + x] {
                    same += 1;
                }
            }
        }
        same as f32 / area
    };
    let (fw, fh) = (bw as f32, bh as f32);
    let aspect = fw / fh.max(1.0);
    if (0.8..=1.25).contains(&aspect) && (0.72..=0.84).contains(&fill) {
        let circle = agree(&|x, y| {
            let (dx, dy) = ((x - fw / 2.0) / (fw / 2.0), (y - fh / 2.0) / (fh / 2.0));
            dx * dx + dy * dy <= 1.0
        });
        if circle >= 0.95 {
            return (Shape::Circle, circle);
        }
    }
    let short = fw.min(fh);
    let r = ((1.0 - fill) * area / (4.0 - std::f32::consts::PI))
        .sqrt()
        .min(short / 2.0);
    // Square corners are filled to the very corner pixel; rounded ones are not.
    let corners = [
        0,
        bw.saturating_sub(1),
        (bh.saturating_sub(1)) * bw,
        bw * bh - 1,
    ];
    let square = corners
        .iter()
        .filter(|i| filled.get(**i) == Some(&true))
        .count()
        >= 3;
    if fill >= 0.97 && (square || r < 2.0) {
        return (Shape::Rectangle, fill);
    }
    let rounded = agree(&|x, y| {
        let cx = x.clamp(r, fw - r);
        let cy = y.clamp(r, fh - r);
        (x - cx).powi(2) + (y - cy).powi(2) <= r * r
    });
    if rounded >= 0.95 {
        let radius = (r / short.max(1.0) * 100.0).round() / 100.0;
        return (Shape::Rounded { radius }, rounded);
    }
    (Shape::Silhouette, rounded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask(w: usize, h: usize, inside: impl Fn(f32, f32) -> bool) -> Vec<bool> {
        (0..w * h)
            .map(|i| inside((i % w) as f32 + 0.5, (i / w) as f32 + 0.5))
            .collect()
    }

    #[test]
    fn outlines_are_told_apart() {
        let (w, h) = (60, 40);
        assert_eq!(outline(&mask(w, h, |_, _| true), w, h), Shape::Rectangle);
        let circle = mask(50, 50, |x, y| {
            (x - 25.0).powi(2) + (y - 25.0).powi(2) <= 625.0
        });
        assert_eq!(outline(&circle, 50, 50), Shape::Circle);
        let r = 10.0;
        let rounded = mask(w, h, |x, y| {
            let (cx, cy) = (x.clamp(r, w as f32 - r), y.clamp(r, h as f32 - r));
            (x - cx).powi(2) + (y - cy).powi(2) <= r * r
        });
        assert!(matches!(outline(&rounded, w, h), Shape::Rounded { .. }));
        // A bottle: a wide body and a narrow neck.
        let bottle = mask(30, 60, |x, y| y > 20.0 || (10.0..20.0).contains(&x));
        assert_eq!(outline(&bottle, 30, 60), Shape::Silhouette);
    }
}
