//! Step 5: glyphs into lines, lines into blocks, and each block's alignment, weight and
//! case.

use super::colour::mean_colour;
use super::{Glyph, Grid, Line, PxBox};
use crate::blueprint::{Align, TextBlock, TextRole};

impl Grid {
    /// Glyphs into lines: same owner, overlapping vertically, close horizontally.
    pub(super) fn lines(&self, glyphs: &[Glyph]) -> Vec<Line> {
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
    pub(super) fn blocks(&self, lines: Vec<Line>) -> Vec<RawBlock> {
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
            .map(|ls| RawBlock {
                owner: ls[0].glyphs[0].owner,
                stars: ls.len() == 1 && stars(&ls[0]),
                block: self.block(&ls),
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
            words: None,
        }
    }
}

/// A block before its role is known: the shape it sits in, and whether its one line is a
/// row of stars.
pub(super) struct RawBlock {
    pub block: TextBlock,
    pub owner: Option<usize>,
    pub stars: bool,
}

/// Whether a line is a rating drawn as a row of four or five stars: marks of one size and
/// colour, each about as wide as tall, evenly spaced (★ glyphs or star shapes), alone or
/// followed by a short score no taller than they are ("★★★★★ 5.0", "★★★★☆ 4.8/5").
/// Tesseract reads the stars as letters ("Kk KKK") and the score alone says too little to
/// be kept as copy, so the row is found here.
fn stars(line: &Line) -> bool {
    let mut by_x: Vec<&Glyph> = line.glyphs.iter().collect();
    by_x.sort_by_key(|g| g.bbox.x0);
    match by_x.len() {
        4 | 5 => star_run(&by_x),
        6..=11 => [5, 4].into_iter().any(|k| {
            let (run, score) = by_x.split_at(k);
            let h = run[0].bbox.h();
            // The score starts a gap of at least a third of a star away, and its signs
            // are not much taller than the stars (digits stand a little taller than ★;
            // a word of capitals twice their height beside them is a headline).
            star_run(run)
                && score[0].bbox.x0 as f32 - run[k - 1].bbox.x1 as f32 >= 0.33 * h as f32
                && score.iter().all(|g| g.bbox.h() as f32 <= 1.4 * h as f32)
                && score.len() <= 6
        }),
        _ => false,
    }
}

/// Whether glyphs (left to right) look like one row of stars.
fn star_run(by_x: &[&Glyph]) -> bool {
    let (hs, ws): (Vec<f32>, Vec<f32>) = by_x
        .iter()
        .map(|g| (g.bbox.h() as f32, g.bbox.w() as f32))
        .unzip();
    // Ratio of the largest to the smallest, a pixel's difference forgiven (small stars
    // are 6-7 px tall in the grid the glyphs are found on).
    let spread = |v: &[f32]| {
        let (lo, hi) = v
            .iter()
            .fold((f32::MAX, f32::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
        (hi - 1.0).max(lo) / lo.max(1.0)
    };
    let square = by_x.iter().all(|g| {
        let a = g.bbox.w() as f32 / g.bbox.h().max(1) as f32;
        (0.8..=1.3).contains(&a)
    });
    let gaps: Vec<f32> = by_x
        .windows(2)
        .map(|p| p[1].bbox.x0 as f32 - p[0].bbox.x1 as f32)
        .collect();
    let even = gaps.iter().all(|d| *d >= 0.0)
        && gaps.iter().fold(f32::MIN, |a, b| a.max(*b))
            - gaps.iter().fold(f32::MAX, |a, b| a.min(*b))
            <= 0.25 * hs[0].max(4.0);
    let one_colour = by_x
        .iter()
        .all(|x| super::colour::dist(x.color, by_x[0].color) < 0.12);
    square && even && one_colour && spread(&hs) <= 1.15 && spread(&ws) <= 1.2
}

fn owner_none(ls: &[Line]) -> bool {
    ls[0].glyphs[0].owner.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blueprint::Rgb;

    fn glyph(x0: usize, w: usize, h: usize, color: Rgb) -> Glyph {
        Glyph {
            bbox: PxBox {
                x0,
                y0: 100 - h,
                x1: x0 + w,
                y1: 100,
            },
            count: w * h / 2,
            color,
            owner: None,
        }
    }

    fn line(glyphs: Vec<Glyph>) -> Line {
        let bbox = glyphs
            .iter()
            .skip(1)
            .fold(glyphs[0].bbox, |b, g| b.union(&g.bbox));
        Line { bbox, glyphs }
    }

    const GOLD: Rgb = [240, 180, 20];

    #[test]
    fn a_row_of_stars_alone_or_before_its_score_is_a_rating() {
        let row = |n: usize| (0..n).map(|i| glyph(10 + i * 30, 26, 25, GOLD));
        assert!(stars(&line(row(5).collect())));
        // "★★★★★ 5.0": the score after a gap, its digits a little taller than the stars.
        let scored: Vec<Glyph> = row(5)
            .chain([
                glyph(170, 12, 31, GOLD),
                glyph(185, 4, 4, GOLD),
                glyph(192, 12, 31, GOLD),
            ])
            .collect();
        assert!(stars(&line(scored)));
        // Four square marks then capitals twice their height is a headline, not a rating.
        let headline: Vec<Glyph> = row(4)
            .chain((0..4).map(|i| glyph(150 + i * 40, 30, 50, GOLD)))
            .collect();
        assert!(!stars(&line(headline)));
        // Letters of uneven widths are no row of stars.
        let word: Vec<Glyph> = [(10, 26), (40, 14), (60, 26), (90, 20), (115, 26)]
            .into_iter()
            .map(|(x, w)| glyph(x, w, 25, GOLD))
            .collect();
        assert!(!stars(&line(word)));
    }
}
