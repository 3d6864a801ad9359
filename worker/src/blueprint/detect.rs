//! The pixel work of the blueprint: background, components, shapes, glyphs, lines, blocks
//! and roles (the steps are described in the module above).

use image::{RgbImage, imageops::FilterType};

use super::{
    Align, Background, Blueprint, DESIGN_EDGE, ImageRegion, Rect, Rgb, Shape, ShapeRole,
    SolidShape, TextBlock, TextRole, WORK_EDGE, mix,
};

/// Decodes `bytes` (PNG, JPEG or WebP) and analyses it.
///
/// # Errors
/// A message when the bytes are not an image this build decodes or are too large.
pub fn analyse_image(bytes: &[u8]) -> Result<Blueprint, String> {
    let img = crate::generate::analyse::decode(bytes)?;
    Ok(analyse_rgb(&img.to_rgb8()))
}

/// Analyses decoded pixels.
pub fn analyse_rgb(img: &RgbImage) -> Blueprint {
    let (sw, sh) = img.dimensions();
    let scale = WORK_EDGE as f32 / sw.max(sh).max(1) as f32;
    let (w, h) = if scale < 1.0 {
        (
            ((sw as f32 * scale).round() as u32).max(16),
            ((sh as f32 * scale).round() as u32).max(16),
        )
    } else {
        (sw.max(16), sh.max(16))
    };
    let small = image::imageops::resize(img, w, h, FilterType::Triangle);
    let grid = Grid {
        w: w as usize,
        h: h as usize,
        px: small.pixels().map(|p| p.0).collect(),
    };
    let mut bp = grid.analyse();
    bp.source_width = sw;
    bp.source_height = sh;
    let ratio = sw.max(1) as f32 / sh.max(1) as f32;
    (bp.width, bp.height) = if ratio >= 1.0 {
        (
            DESIGN_EDGE as u32,
            (DESIGN_EDGE / ratio).round().max(1.0) as u32,
        )
    } else {
        (
            (DESIGN_EDGE * ratio).round().max(1.0) as u32,
            DESIGN_EDGE as u32,
        )
    };
    bp
}

/// Euclidean RGB distance scaled to 0..1.
pub fn dist(a: Rgb, b: Rgb) -> f32 {
    let d: f32 = (0..3)
        .map(|k| (f32::from(a[k]) - f32::from(b[k])).powi(2))
        .sum();
    d.sqrt() / 441.7
}

/// Most marks a reference may have for its text to be read (a dense poster has a few
/// hundred letters).
pub const MAX_GLYPHS: usize = 2500;

/// A foreground pixel differs from the ground by more than this.
const FG: f32 = 0.10;

struct Grid {
    w: usize,
    h: usize,
    px: Vec<Rgb>,
}

/// A pixel-space box, inclusive-exclusive.
#[derive(Debug, Clone, Copy)]
struct PxBox {
    x0: usize,
    y0: usize,
    x1: usize,
    y1: usize,
}

impl PxBox {
    fn w(&self) -> usize {
        self.x1 - self.x0
    }
    fn h(&self) -> usize {
        self.y1 - self.y0
    }
    fn union(&self, o: &PxBox) -> PxBox {
        PxBox {
            x0: self.x0.min(o.x0),
            y0: self.y0.min(o.y0),
            x1: self.x1.max(o.x1),
            y1: self.y1.max(o.y1),
        }
    }
}

/// One connected component.
struct Comp {
    bbox: PxBox,
    pixels: Vec<usize>,
}

#[derive(Debug, Clone)]
struct Glyph {
    bbox: PxBox,
    count: usize,
    color: Rgb,
    /// Index of the solid shape it sits in.
    owner: Option<usize>,
}

#[derive(Debug, Clone)]
struct Line {
    bbox: PxBox,
    glyphs: Vec<Glyph>,
}

struct Found {
    shapes: Vec<(SolidShape, PxBox)>,
    images: Vec<ImageRegion>,
    glyphs: Vec<Glyph>,
}

impl Grid {
    fn at(&self, x: usize, y: usize) -> Rgb {
        self.px[y * self.w + x]
    }

    fn unit(&self, b: &PxBox) -> Rect {
        Rect {
            x: b.x0 as f32 / self.w as f32,
            y: b.y0 as f32 / self.h as f32,
            w: b.w() as f32 / self.w as f32,
            h: b.h() as f32 / self.h as f32,
        }
    }

    fn analyse(&self) -> Blueprint {
        let background = self.background();
        let mut found = Found {
            shapes: Vec::new(),
            images: Vec::new(),
            glyphs: Vec::new(),
        };
        match background {
            Background::Photo { .. } => self.panels(&mut found),
            _ => {
                let model = |x: usize, y: usize| self.ground(&background, x, y);
                let mask: Vec<bool> = (0..self.w * self.h)
                    .map(|i| dist(self.px[i], model(i % self.w, i / self.w)) > FG)
                    .collect();
                for c in components(&mask, self.w, self.h, None) {
                    self.classify(c, &background, &mut found);
                }
            }
        }
        found
            .images
            .sort_by(|a, b| b.rect.area().total_cmp(&a.rect.area()));
        // Texture inside a picture is not text.
        let images = found.images.clone();
        found.glyphs.retain(|g| {
            g.owner.is_some()
                || !images
                    .iter()
                    .any(|im| expand(&im.rect, 0.01).contains_center(&self.unit(&g.bbox)))
        });
        // Thousands of specks are texture or noise, not type; grouping them would also cost
        // quadratic time. Such a reference has no text blocks (and falls back).
        if found.glyphs.len() > MAX_GLYPHS {
            found.glyphs.clear();
        }
        let lines = self.lines(&found.glyphs);
        let blocks = self.blocks(lines);
        self.assign(background, found, blocks)
    }

    /// The ground colour expected at a pixel.
    fn ground(&self, bg: &Background, x: usize, y: usize) -> Rgb {
        match bg {
            Background::Solid { color } | Background::Photo { mean: color } => *color,
            Background::Gradient { from, to, vertical } => {
                let t = if *vertical {
                    y as f32 / (self.h - 1).max(1) as f32
                } else {
                    x as f32 / (self.w - 1).max(1) as f32
                };
                mix(*from, *to, t)
            }
        }
    }

    fn background(&self) -> Background {
        let (w, h) = (self.w, self.h);
        let mut ring = Vec::new();
        for y in 0..h {
            for x in 0..w {
                if x < 2 || y < 2 || x + 2 >= w || y + 2 >= h {
                    ring.push((x, y, self.at(x, y)));
                }
            }
        }
        let median = median_colour(ring.iter().map(|r| r.2));
        let near = ring.iter().filter(|r| dist(r.2, median) < 0.06).count();
        if near as f32 >= 0.45 * ring.len() as f32 {
            return Background::Solid { color: median };
        }
        let band = |xs: std::ops::Range<usize>, ys: std::ops::Range<usize>| {
            mean_colour(
                ys.flat_map(|y| xs.clone().map(move |x| (x, y)))
                    .map(|(x, y)| self.at(x, y)),
            )
        };
        let (top, bottom) = (band(0..w, 0..2), band(0..w, h - 2..h));
        let (left, right) = (band(0..2, 0..h), band(w - 2..w, 0..h));
        let vertical = dist(top, bottom) >= dist(left, right);
        let candidate = if vertical {
            Background::Gradient {
                from: top,
                to: bottom,
                vertical,
            }
        } else {
            Background::Gradient {
                from: left,
                to: right,
                vertical,
            }
        };
        let fits = ring
            .iter()
            .filter(|(x, y, c)| dist(*c, self.ground(&candidate, *x, *y)) < 0.06)
            .count();
        if dist(top, bottom).max(dist(left, right)) > 0.05 && fits as f32 >= 0.6 * ring.len() as f32
        {
            return candidate;
        }
        Background::Photo {
            mean: mean_colour(self.px.iter().copied()),
        }
    }

    /// On a photo ground: large flat areas of one colour (bands, cards) become panels.
    fn panels(&self, found: &mut Found) {
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

    /// Sorts one foreground component into shape, image or glyph. `ground` is the colour
    /// around it; `owner` the solid shape it lies in (the canvas when `None`).
    fn classify(&self, c: Comp, bg: &Background, found: &mut Found) {
        let ground = self.ground(bg, c.bbox.x0, c.bbox.y0);
        self.classify_in(c, ground, None, 0, found);
    }

    fn classify_in(
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
        if depth < 2 && big_enough && uniform >= 0.6 && fill_ratio >= 0.7 && solidity >= 0.65 {
            let shape = outline(&filled, bw, bh);
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
            let inner = self.inner(&c, &filled, mode);
            // A small solid thing is a button or badge only when it holds a word (two or
            // more marks side by side); a bold letter with a counter is a glyph.
            if area < 0.10 && !holds_a_word(&inner) {
                found.shapes.pop();
            } else {
                for g in inner {
                    self.classify_in(g, mode, Some(idx), depth + 1, found);
                }
                return;
            }
        }
        if owner.is_none() && bw as f32 >= 0.15 * md && bh as f32 >= 0.15 * md {
            let shape = outline(&filled, bw, bh);
            found.images.push(ImageRegion {
                rect: self.unit(&c.bbox),
                shape,
                cutout: matches!(shape, Shape::Silhouette),
            });
            return;
        }
        if c.pixels.len() < 3 {
            return;
        }
        if let Some(o) = owner {
            // A glyph fills at most half its shape; larger things are pictures on a card.
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

    /// The components inside a solid shape, in canvas coordinates: its pixels that differ
    /// from its colour (a label in the ground's colour shows as holes, which count too).
    fn inner(&self, c: &Comp, filled: &[bool], color: Rgb) -> Vec<Comp> {
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

    /// Glyphs into lines: same owner, overlapping vertically, close horizontally.
    fn lines(&self, glyphs: &[Glyph]) -> Vec<Line> {
        let n = glyphs.len();
        let mut parent: Vec<usize> = (0..n).collect();
        fn find(p: &mut [usize], mut i: usize) -> usize {
            while p[i] != i {
                p[i] = p[p[i]];
                i = p[i];
            }
            i
        }
        for a in 0..n {
            for b in a + 1..n {
                let (ga, gb) = (&glyphs[a], &glyphs[b]);
                if ga.owner != gb.owner {
                    continue;
                }
                let ov = ga.bbox.y1.min(gb.bbox.y1) as f32 - ga.bbox.y0.max(gb.bbox.y0) as f32;
                let hmin = ga.bbox.h().min(gb.bbox.h()) as f32;
                let hmax = ga.bbox.h().max(gb.bbox.h()) as f32;
                let gap = (ga.bbox.x0.max(gb.bbox.x0) as f32 - ga.bbox.x1.min(gb.bbox.x1) as f32)
                    .max(0.0);
                // Similar sizes only: a big headline's letters never join a caption.
                if ov >= 0.5 * hmin && gap <= 1.1 * hmax && hmin >= 0.25 * hmax {
                    let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
                    parent[ra] = rb;
                }
            }
        }
        let mut groups: std::collections::BTreeMap<usize, Vec<Glyph>> = Default::default();
        for (i, g) in glyphs.iter().enumerate() {
            let r = find(&mut parent, i);
            groups.entry(r).or_default().push(g.clone());
        }
        let mut lines: Vec<Line> = groups
            .into_values()
            .map(|gs| {
                let bbox = gs.iter().skip(1).fold(gs[0].bbox, |b, g| b.union(&g.bbox));
                Line { bbox, glyphs: gs }
            })
            .collect();
        // Stray dots and specks: a lone small mark is not a line of text.
        let min_h = (self.h as f32 * 0.012).max(3.0);
        lines.retain(|l| {
            (l.bbox.h() as f32) >= min_h
                && (l.glyphs.len() >= 2
                    || l.bbox.h() as f32 >= 2.0 * min_h
                    // Small bold letters often touch: a word read as one mark.
                    || l.bbox.w() >= 2 * l.bbox.h())
        });
        lines.sort_by_key(|l| (l.bbox.y0, l.bbox.x0));
        lines
    }

    /// Lines into blocks: same owner, similar height, small leading, overlapping columns.
    fn blocks(&self, lines: Vec<Line>) -> Vec<(TextBlock, Option<usize>)> {
        let mut blocks: Vec<Vec<Line>> = Vec::new();
        for line in lines {
            let owner = line.glyphs[0].owner;
            let lh = line.bbox.h() as f32;
            let target = blocks.iter_mut().find(|b| {
                let Some(last) = b.last() else { return false };
                let lh2 = last.bbox.h() as f32;
                let gap = line.bbox.y0 as f32 - last.bbox.y1 as f32;
                let x_overlap = line.bbox.x1.min(last.bbox.x1) > line.bbox.x0.max(last.bbox.x0);
                last.glyphs[0].owner == owner
                    && lh.min(lh2) >= 0.7 * lh.max(lh2)
                    && gap >= -0.2 * lh
                    && gap <= 0.9 * lh.max(lh2)
                    && x_overlap
            });
            match target {
                Some(b) => b.push(line),
                None => blocks.push(vec![line]),
            }
        }
        blocks
            .into_iter()
            .map(|ls| {
                let owner = ls[0].glyphs[0].owner;
                (self.block(&ls), owner)
            })
            .collect()
    }

    fn block(&self, ls: &[Line]) -> TextBlock {
        let bbox = ls.iter().skip(1).fold(ls[0].bbox, |b, l| b.union(&l.bbox));
        let mut hs: Vec<usize> = ls.iter().map(|l| l.bbox.h()).collect();
        hs.sort_unstable();
        let line_h = hs[hs.len() / 2] as f32;
        let align = if ls.len() >= 2 {
            let spread = |f: &dyn Fn(&PxBox) -> f32| {
                let v: Vec<f32> = ls.iter().map(|l| f(&l.bbox)).collect();
                v.iter().fold(f32::MIN, |a, b| a.max(*b))
                    - v.iter().fold(f32::MAX, |a, b| a.min(*b))
            };
            let l = spread(&|b| b.x0 as f32);
            let c = spread(&|b| (b.x0 + b.x1) as f32 / 2.0);
            let r = spread(&|b| b.x1 as f32);
            if c < l.min(r) - 1.0 {
                Align::Center
            } else if r < l - 1.0 {
                Align::Right
            } else {
                Align::Left
            }
        } else {
            // One line: centred when it sits on the canvas's (or its shape's) axis.
            let (x0, x1) = match ls[0].glyphs[0].owner {
                Some(_) => (bbox.x0 as f32, bbox.x1 as f32),
                None => (0.0, self.w as f32),
            };
            let cx = (bbox.x0 + bbox.x1) as f32 / 2.0;
            if (cx - (x0 + x1) / 2.0).abs() < 0.025 * self.w as f32
                && bbox.x0 as f32 > 0.1 * self.w as f32
            {
                Align::Center
            } else if owner_none(ls)
                && bbox.x1 as f32 > 0.93 * self.w as f32
                && bbox.x0 as f32 > 0.6 * self.w as f32
            {
                // Flush against the right margin.
                Align::Right
            } else {
                Align::Left
            }
        };
        let glyphs: Vec<&Glyph> = ls.iter().flat_map(|l| l.glyphs.iter()).collect();
        let ink: usize = glyphs.iter().map(|g| g.count).sum();
        let area: usize = glyphs.iter().map(|g| g.bbox.w() * g.bbox.h()).sum();
        let density = ink as f32 / area.max(1) as f32;
        let heights: Vec<f32> = glyphs
            .iter()
            .filter(|g| g.bbox.h() as f32 >= 0.5 * line_h)
            .map(|g| g.bbox.h() as f32)
            .collect();
        let mean = heights.iter().sum::<f32>() / heights.len().max(1) as f32;
        let var =
            heights.iter().map(|h| (h - mean).powi(2)).sum::<f32>() / heights.len().max(1) as f32;
        let upper = heights.len() >= 4 && var.sqrt() / mean.max(1.0) < 0.06;
        let color = mean_colour(glyphs.iter().map(|g| g.color));
        TextBlock {
            role: TextRole::Body,
            rect: self.unit(&bbox),
            lines: ls.len(),
            line_height: line_h / self.h as f32,
            align,
            color,
            weight: if density >= 0.5 { 700 } else { 400 },
            upper,
        }
    }

    /// Gives shapes and blocks their roles and builds the blueprint.
    fn assign(
        &self,
        background: Background,
        found: Found,
        blocks: Vec<(TextBlock, Option<usize>)>,
    ) -> Blueprint {
        let mut shapes: Vec<SolidShape> = found.shapes.into_iter().map(|(s, _)| s).collect();
        let mut texts = Vec::new();
        let mut keep = vec![false; shapes.len()];
        for (i, s) in shapes.iter_mut().enumerate() {
            let has_text = blocks.iter().any(|(_, o)| *o == Some(i));
            let aspect = s.rect.w * self.w as f32 / (s.rect.h * self.h as f32).max(1e-3);
            if s.role == ShapeRole::Panel || s.rect.area() >= 0.10 || s.rect.w >= 0.6 {
                s.role = ShapeRole::Panel;
                keep[i] = true;
            } else if has_text && aspect >= 1.6 {
                s.role = ShapeRole::Button;
                keep[i] = true;
            } else if has_text {
                s.role = ShapeRole::Badge;
                keep[i] = true;
            }
        }
        // At most one button and one badge: the largest.
        for role in [ShapeRole::Button, ShapeRole::Badge] {
            let best = (0..shapes.len())
                .filter(|i| keep[*i] && shapes[*i].role == role)
                .max_by(|a, b| shapes[*a].rect.area().total_cmp(&shapes[*b].rect.area()));
            for i in 0..shapes.len() {
                if keep[i] && shapes[i].role == role && Some(i) != best {
                    shapes[i].role = ShapeRole::Panel;
                }
            }
        }
        let mut free = Vec::new();
        for (mut b, owner) in blocks {
            match owner.map(|o| (o, shapes[o].role)) {
                Some((o, ShapeRole::Button)) if keep[o] => {
                    if texts.iter().all(|t: &TextBlock| t.role != TextRole::Cta) {
                        b.role = TextRole::Cta;
                        texts.push(b);
                    }
                }
                Some((o, ShapeRole::Badge)) if keep[o] => {
                    if texts
                        .iter()
                        .all(|t: &TextBlock| t.role != TextRole::BadgeLabel)
                    {
                        b.role = TextRole::BadgeLabel;
                        texts.push(b);
                    }
                }
                _ => free.push(b),
            }
        }
        // Roles by size: the largest text is the headline.
        free.sort_by(|a, b| {
            b.line_height
                .total_cmp(&a.line_height)
                .then(b.rect.area().total_cmp(&a.rect.area()))
        });
        let mut logo = None;
        if free.len() >= 2 {
            let head_lh = free[0].line_height;
            let pick = (1..free.len())
                .filter(|i| {
                    let b = &free[*i];
                    b.lines == 1
                        && b.line_height <= 0.6 * head_lh
                        && (b.rect.y < 0.14 || b.rect.bottom() > 0.9)
                        && b.rect.h <= 0.07
                })
                .min_by(|a, b| {
                    let edge = |r: &Rect| r.y.min(1.0 - r.bottom());
                    edge(&free[*a].rect).total_cmp(&edge(&free[*b].rect))
                });
            if let Some(i) = pick {
                logo = Some(free.remove(i).rect);
            }
        }
        if let Some(first) = free.first_mut() {
            first.role = TextRole::Headline;
        }
        if free.len() >= 2 {
            let head = free[0].clone();
            // A short small line right above the headline is its eyebrow.
            if let Some(i) = (1..free.len()).find(|i| {
                let b = &free[*i];
                b.lines == 1
                    && b.rect.bottom() <= head.rect.y + 0.01
                    && head.rect.y - b.rect.bottom() <= 2.0 * head.line_height
                    && b.line_height <= 0.6 * head.line_height
            }) {
                free[i].role = TextRole::Eyebrow;
            }
            if let Some(b) = free.iter_mut().find(|b| b.role == TextRole::Body) {
                b.role = TextRole::Supporting;
            }
        }
        texts.extend(free);
        let shapes: Vec<SolidShape> = shapes
            .into_iter()
            .zip(keep)
            .filter_map(|(s, k)| k.then_some(s))
            .collect();
        let mut images = found.images;
        // Pictures inside a panel's bounds on a photo ground are part of the photo.
        images.retain(|im| im.rect.area() >= 0.02);
        let mut margins = [1.0f32; 4];
        let rects = texts
            .iter()
            .map(|t| t.rect)
            .chain(images.iter().map(|i| i.rect))
            .chain(
                shapes
                    .iter()
                    .filter(|s| s.role != ShapeRole::Panel)
                    .map(|s| s.rect),
            )
            .chain(logo);
        for r in rects {
            margins[0] = margins[0].min(r.x);
            margins[1] = margins[1].min(r.y);
            margins[2] = margins[2].min(1.0 - r.right());
            margins[3] = margins[3].min(1.0 - r.bottom());
        }
        for m in &mut margins {
            *m = m.clamp(0.0, 0.5);
        }
        Blueprint {
            source_width: self.w as u32,
            source_height: self.h as u32,
            width: 0,
            height: 0,
            background,
            images,
            shapes,
            texts,
            logo,
            margins,
        }
    }
}

fn expand(r: &Rect, by: f32) -> Rect {
    Rect {
        x: r.x - by,
        y: r.y - by,
        w: r.w + 2.0 * by,
        h: r.h + 2.0 * by,
    }
}

fn owner_none(ls: &[Line]) -> bool {
    ls[0].glyphs[0].owner.is_none()
}

/// True when some two of `marks` sit side by side on one line (a word, not a letter's
/// counters).
fn holds_a_word(marks: &[Comp]) -> bool {
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

/// 8-connected components of `mask`; with `join`, neighbours must also satisfy it.
fn components(
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
fn filled_mask(c: &Comp, w: usize) -> Vec<bool> {
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

/// The outline that best matches a filled mask: rectangle, rounded rectangle, circle, or an
/// irregular silhouette when none agrees with it on at least 94 % of the box.
fn outline(filled: &[bool], bw: usize, bh: usize) -> Shape {
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
            return Shape::Circle;
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
        return Shape::Rectangle;
    }
    let rounded = agree(&|x, y| {
        let cx = x.clamp(r, fw - r);
        let cy = y.clamp(r, fh - r);
        (x - cx).powi(2) + (y - cy).powi(2) <= r * r
    });
    if rounded >= 0.95 {
        return Shape::Rounded {
            radius: (r / short.max(1.0) * 100.0).round() / 100.0,
        };
    }
    Shape::Silhouette
}

fn mean_colour(it: impl Iterator<Item = Rgb>) -> Rgb {
    let (mut s, mut n) = ([0u64; 3], 0u64);
    for c in it {
        for k in 0..3 {
            s[k] += u64::from(c[k]);
        }
        n += 1;
    }
    s.map(|v| (v / n.max(1)) as u8)
}

fn median_colour(it: impl Iterator<Item = Rgb>) -> Rgb {
    let mut ch: [Vec<u8>; 3] = Default::default();
    for c in it {
        for k in 0..3 {
            ch[k].push(c[k]);
        }
    }
    let mut out = [0u8; 3];
    for k in 0..3 {
        ch[k].sort_unstable();
        out[k] = ch[k].get(ch[k].len() / 2).copied().unwrap_or(0);
    }
    out
}

/// The most common colour (16 levels a channel) and the share of pixels near it.
fn mode_colour(it: impl Iterator<Item = Rgb> + Clone) -> (Rgb, f32) {
    let mut bins = std::collections::HashMap::<u16, (usize, [u64; 3])>::new();
    let mut n = 0usize;
    for c in it.clone() {
        let key = (u16::from(c[0] >> 4) << 8) | (u16::from(c[1] >> 4) << 4) | u16::from(c[2] >> 4);
        let e = bins.entry(key).or_insert((0, [0; 3]));
        e.0 += 1;
        for (sum, v) in e.1.iter_mut().zip(c) {
            *sum += u64::from(v);
        }
        n += 1;
    }
    let Some((_, (count, sum))) = bins
        .iter()
        .max_by(|a, b| a.1.0.cmp(&b.1.0).then(b.0.cmp(a.0)))
    else {
        return ([0, 0, 0], 0.0);
    };
    let mode = sum.map(|s| (s / (*count).max(1) as u64) as u8);
    let near = it.filter(|c| dist(*c, mode) < 0.08).count();
    (mode, near as f32 / n.max(1) as f32)
}

/// The colour of a glyph's core: the pixels farthest from its ground.
fn core_colour(it: impl Iterator<Item = Rgb> + Clone, ground: Rgb) -> Rgb {
    let far = it.clone().map(|c| dist(c, ground)).fold(0.0f32, f32::max);
    mean_colour(it.filter(|c| dist(*c, ground) >= 0.7 * far))
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

    #[test]
    fn a_speckled_reference_reads_no_text() {
        // White ground with a dark speck on every fourth pixel of every fourth row: tens of
        // thousands of marks.
        let img = RgbImage::from_fn(1080, 1080, |x, y| {
            if x % 4 == 0 && y % 4 == 0 && x > 20 && y > 20 && x < 1060 && y < 1060 {
                image::Rgb([0, 0, 0])
            } else {
                image::Rgb([255, 255, 255])
            }
        });
        let bp = analyse_rgb(&img);
        assert!(bp.texts.is_empty());
        assert!(bp.unusable().is_some());
    }

    #[test]
    fn gradients_and_photos_are_told_from_solid_grounds() {
        let grad = RgbImage::from_fn(200, 100, |_, y| {
            let v = (40 + y * 2) as u8;
            image::Rgb([v, 20, 120])
        });
        assert!(matches!(
            analyse_rgb(&grad).background,
            Background::Gradient { vertical: true, .. }
        ));
        let noise = RgbImage::from_fn(200, 100, |x, y| {
            let k = (x.wrapping_mul(7919) ^ y.wrapping_mul(104729)) % 251;
            image::Rgb([k as u8, (k * 3 % 251) as u8, (k * 7 % 251) as u8])
        });
        assert!(matches!(
            analyse_rgb(&noise).background,
            Background::Photo { .. }
        ));
    }
}
