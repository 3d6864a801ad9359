//! Frames erased before the page is read. An outlined ("ghost") button is a thin rule
//! drawn all round its label; Tesseract reads nothing inside a frame, so the button's
//! call to action was lost. A frame is found as what it is: two thin horizontal rules of
//! one ink, one above the other and about as long, with a thin vertical rule near each
//! end between them. Its four rules are painted with the ground beside them; a lone rule
//! (a divider, an underline) and the bars of letters stay.

use image::RgbImage;

/// Thickest rule of a frame, in pixels of the reference (a ghost button's border is 2 to
/// 5 px on a 1080 px ad).
const RULE_MAX: u32 = 6;

/// Shortest rule, in pixels.
const RULE_MIN: u32 = 24;

/// Most rules along one axis that a page may have for its frames to be looked for: a page
/// of more is a pattern (a grid, stripes, a woven texture), not buttons, and pairing its
/// rules would cost the cube of their number.
const MAX_RULES: usize = 400;

/// Channels within this of each other are one ink.
const SAME: u8 = 28;

/// Channels this far apart or more tell a rule from its ground.
const APART: u8 = 56;

/// A rule along one axis: its first and past-last pixel along it (`a0..a1`) and across it
/// (`b0..b1`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Rule {
    a0: u32,
    a1: u32,
    b0: u32,
    b1: u32,
}

fn diff(p: [u8; 3], q: [u8; 3]) -> u8 {
    (0..3).map(|k| p[k].abs_diff(q[k])).max().unwrap_or(0)
}

/// The thin rules along one axis of a `w`×`h` image read through `px(a, b)` (`a` along
/// the rule, `b` across it): per line across, runs of one ink at most [`RULE_MAX`] thick
/// with other ink on both sides; along, such runs side by side at least [`RULE_MIN`]
/// long; the rows of one rule gathered.
fn rules(along: u32, across: u32, px: &dyn Fn(u32, u32) -> [u8; 3]) -> Vec<Rule> {
    // Per line along the rule's direction `b`, which pixels are in a thin band across.
    let mut thin = vec![false; (along * across) as usize];
    for a in 0..along {
        let mut b = 0;
        while b < across {
            let c = px(a, b);
            let mut e = b + 1;
            while e < across && diff(px(a, e), c) <= SAME {
                e += 1;
            }
            let bounded =
                b > 0 && e < across && diff(px(a, b - 1), c) >= APART && diff(px(a, e), c) >= APART;
            if bounded && e - b <= RULE_MAX {
                for k in b..e {
                    thin[(k * along + a) as usize] = true;
                }
            }
            b = e;
        }
    }
    // Runs of thin pixels of one ink along each line.
    let mut runs: Vec<Rule> = Vec::new();
    for b in 0..across {
        let mut a = 0;
        while a < along {
            if !thin[(b * along + a) as usize] {
                a += 1;
                continue;
            }
            let c = px(a, b);
            let mut e = a + 1;
            while e < along && thin[(b * along + e) as usize] && diff(px(e, b), c) <= SAME {
                e += 1;
            }
            if e - a >= RULE_MIN {
                runs.push(Rule {
                    a0: a,
                    a1: e,
                    b0: b,
                    b1: b + 1,
                });
            }
            a = e;
        }
    }
    // The lines of one rule: runs on neighbouring lines that overlap along. Runs come line
    // by line, so a run can only continue a rule that reached the line before it (`open`:
    // their indices, in order), not any rule found so far (a textured photo has thousands).
    let mut out: Vec<Rule> = Vec::new();
    let (mut open, mut next): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
    let mut line = 0;
    for r in runs {
        if r.b0 != line {
            open = if r.b0 == line + 1 {
                std::mem::take(&mut next)
            } else {
                Vec::new()
            };
            open.sort_unstable();
            next.clear();
            line = r.b0;
        }
        let joined = open.iter().copied().find(|&i| {
            let o = &out[i];
            o.b1 == r.b0 && o.a0.max(r.a0) < o.a1.min(r.a1) && o.b1 - o.b0 < RULE_MAX
        });
        match joined {
            Some(i) => {
                let o = &mut out[i];
                o.a0 = o.a0.min(r.a0);
                o.a1 = o.a1.max(r.a1);
                o.b1 = r.b1;
                if !next.contains(&i) {
                    next.push(i);
                }
            }
            None => {
                next.push(out.len());
                out.push(r);
            }
        }
    }
    out
}

/// `img` with every frame painted out, or `None` when it has none.
pub(super) fn erase_frames(img: &RgbImage) -> Option<RgbImage> {
    let (w, h) = img.dimensions();
    if w < 2 * RULE_MIN || h < 2 * RULE_MIN {
        return None;
    }
    let (raw, stride) = (img.as_raw(), w as usize * 3);
    let get = |x: u32, y: u32| {
        let i = y as usize * stride + x as usize * 3;
        [raw[i], raw[i + 1], raw[i + 2]]
    };
    let horizontal = rules(w, h, &|a, b| get(a, b));
    if horizontal.len() < 2 || horizontal.len() > MAX_RULES {
        return None;
    }
    let vertical = rules(h, w, &|a, b| get(b, a));
    if vertical.len() < 2 || vertical.len() > MAX_RULES {
        return None;
    }
    // Frames: a top and a bottom rule about as long (their spans overlapping by 80 % of
    // each), and a vertical rule near each end (within a rounded corner's reach) that
    // spans half the height between them.
    let mut paint: Vec<(bool, Rule)> = Vec::new();
    for (i, top) in horizontal.iter().enumerate() {
        for bottom in &horizontal[i + 1..] {
            let gap = bottom.b0.saturating_sub(top.b1);
            let overlap = top.a1.min(bottom.a1).saturating_sub(top.a0.max(bottom.a0));
            let (lt, lb) = (top.a1 - top.a0, bottom.a1 - bottom.a0);
            if gap < 8 || gap > 4 * lt.max(lb) || 5 * overlap < 4 * lt.max(lb) {
                continue;
            }
            let reach = gap / 2 + RULE_MAX;
            let side = |x: u32| {
                vertical.iter().find(|v| {
                    v.b0 + reach >= x
                        && v.b1 <= x + reach
                        && v.a0 + reach >= top.b0
                        && v.a1 <= bottom.b1 + reach
                        && 2 * (v.a1 - v.a0) >= gap
                })
            };
            let (x0, x1) = (top.a0.min(bottom.a0), top.a1.max(bottom.a1));
            if let (Some(l), Some(r)) = (side(x0), side(x1)) {
                if l == r {
                    continue;
                }
                paint.extend([(true, *top), (true, *bottom), (false, *l), (false, *r)]);
            }
        }
    }
    if paint.is_empty() {
        return None;
    }
    let mut out = img.clone();
    for (flat, r) in paint {
        // Each rule is painted with the ground just outside it (its antialiased edge
        // with it).
        for a in r.a0..r.a1 {
            let (lo, hi) = (r.b0.saturating_sub(1), r.b1 + 1);
            let ground = if flat {
                get(a, lo.saturating_sub(1))
            } else {
                get(lo.saturating_sub(1), a)
            };
            for b in lo..hi {
                let (x, y) = if flat { (a, b) } else { (b, a) };
                if x < w && y < h {
                    out.put_pixel(x, y, image::Rgb(ground));
                }
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use image::Rgb;

    use super::*;

    fn rect(img: &mut RgbImage, (x0, y0, x1, y1): (u32, u32, u32, u32), c: [u8; 3]) {
        for y in y0..y1 {
            for x in x0..x1 {
                img.put_pixel(x, y, Rgb(c));
            }
        }
    }

    #[test]
    fn a_frame_round_a_label_is_painted_out_and_the_label_stays() {
        let ground = [20, 50, 40];
        let mut img = RgbImage::from_pixel(400, 200, Rgb(ground));
        let ink = [240, 240, 240];
        // A 3 px frame from (50, 50) to (250, 120), and a label inside it.
        rect(&mut img, (50, 50, 250, 53), ink);
        rect(&mut img, (50, 117, 250, 120), ink);
        rect(&mut img, (50, 50, 53, 120), ink);
        rect(&mut img, (247, 50, 250, 120), ink);
        rect(&mut img, (100, 75, 200, 95), ink);
        // A lone divider below, and an "H" whose bar is thin.
        rect(&mut img, (50, 160, 350, 163), ink);
        rect(&mut img, (300, 40, 304, 100), ink);
        rect(&mut img, (330, 40, 334, 100), ink);
        rect(&mut img, (304, 68, 330, 71), ink);
        let out = erase_frames(&img).expect("a frame");
        for (x, y) in [(150, 51), (150, 118), (51, 85), (248, 85)] {
            assert_eq!(out.get_pixel(x, y).0, ground, "frame at ({x},{y})");
        }
        for (x, y) in [(150, 85), (200, 161), (317, 69), (302, 50)] {
            assert_eq!(out.get_pixel(x, y).0, ink, "kept at ({x},{y})");
        }
    }

    #[test]
    fn a_page_without_frames_is_left_alone() {
        let mut img = RgbImage::from_pixel(300, 200, Rgb([250, 250, 250]));
        rect(&mut img, (20, 20, 280, 23), [10, 10, 10]);
        rect(&mut img, (20, 60, 280, 63), [10, 10, 10]);
        assert!(erase_frames(&img).is_none());
    }

    #[test]
    fn a_page_of_rules_is_a_pattern_not_frames() {
        // A grid of 3 px lines every 30 px: 1600 cells, each a frame on its own.
        let img = RgbImage::from_fn(1200, 1200, |x, y| {
            if x % 30 < 3 || y % 30 < 3 {
                Rgb([10, 10, 10])
            } else {
                Rgb([250, 250, 250])
            }
        });
        assert!(erase_frames(&img).is_none());
    }
}
