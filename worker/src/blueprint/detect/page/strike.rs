//! Line-through erased before the page is read. A compare-at price is crossed out ("$39"
//! with a rule through it); Tesseract reads the struck glyphs as other signs ("s39",
//! "soe") or as nothing, so the price the reference shows is lost. The rule is found as
//! what it is: a thin horizontal band of one ink, ground above and below it, that runs on
//! unbroken through two glyph stems or more and past them on both sides, longer than the
//! glyphs are tall. Its thin parts (between and inside the glyphs) are painted with the
//! ground; the stems it crosses are left as they are.

use image::RgbImage;

use crate::blueprint::Rgb;

/// Thickest rule erased, in pixels of the read (a line-through is about a fifteenth of
/// the type size: 4 px on 60 px type).
const STRIKE_MAX: u32 = 16;

/// Least distance from the ground of a pixel that starts or continues a thin band
/// ([`super::dist`], 0 to 1, as [`sq`] turns it).
const EDGE: f32 = sq(0.09);

/// Least distance from the ground of a band's strongest pixel (a faint texture band is no
/// rule).
const STRONG: f32 = sq(0.2);

/// Farthest a pixel of the rule (band or stem) may be from the rule's ink.
const SAME_INK: f32 = sq(0.14);

/// [`super::dist`] without its square root, in squared channel steps: this runs on every
/// pixel of the page, several times.
fn dist2(a: Rgb, b: Rgb) -> f32 {
    let d = |k: usize| i32::from(a[k]) - i32::from(b[k]);
    (d(0) * d(0) + d(1) * d(1) + d(2) * d(2)) as f32
}

/// `d` ([`super::dist`], 0 to 1) as [`dist2`] measures it.
const fn sq(d: f32) -> f32 {
    d * d * 441.7 * 441.7
}

/// A band of one column: its first row, the row past it and the ground above it.
#[derive(Clone, Copy)]
struct Band {
    top: u32,
    end: u32,
    ground: Rgb,
}

/// `img` with every line-through painted out, or `None` when it has none.
pub(super) fn erase_strikes(img: &RgbImage) -> Option<RgbImage> {
    let (w, h) = img.dimensions();
    if w < 8 || h < 8 {
        return None;
    }
    let (raw, stride) = (img.as_raw(), w as usize * 3);
    let px = |x: u32, y: u32| {
        let i = y as usize * stride + x as usize * 3;
        [raw[i], raw[i + 1], raw[i + 2]]
    };
    // The thin bands of every column, and per pixel the band it lies in (its index plus
    // one; 0 for none: four bytes a pixel, not a band's sixteen).
    let mut bands: Vec<Band> = Vec::new();
    let mut band: Vec<u32> = vec![0; (w * h) as usize];
    for x in 0..w {
        let mut y = 2;
        while y + 2 < h {
            let ground = px(x, y - 1);
            // A band starts on settled ground (two pixels alike), not on a glyph's soft edge.
            if dist2(px(x, y), ground) < EDGE || dist2(ground, px(x, y - 2)) >= EDGE {
                y += 1;
                continue;
            }
            let mut strongest = 0.0f32;
            let mut end = None;
            for yy in y..(y + STRIKE_MAX + 1).min(h - 1) {
                let d = dist2(px(x, yy), ground);
                if d < EDGE {
                    end = Some(yy);
                    break;
                }
                strongest = strongest.max(d);
            }
            match end {
                // It ends on settled ground too.
                Some(end) if strongest >= STRONG && dist2(px(x, end), px(x, end + 1)) < EDGE => {
                    bands.push(Band {
                        top: y,
                        end,
                        ground,
                    });
                    let id = bands.len() as u32;
                    for yy in y..end {
                        band[(yy * w + x) as usize] = id;
                    }
                    y = end + 1;
                }
                _ => y += 1,
            }
        }
    }
    let at = |x: u32, y: u32| match band[(y * w + x) as usize] {
        0 => None,
        id => Some(bands[id as usize - 1]),
    };
    // Height of the ink of `c` through (x, y), up and down.
    let stem = |x: u32, y: u32, c: Rgb| {
        let up = (0..y)
            .rev()
            .take_while(|&yy| dist2(px(x, yy), c) <= SAME_INK)
            .count();
        let down = (y + 1..h)
            .take_while(|&yy| dist2(px(x, yy), c) <= SAME_INK)
            .count();
        up + down + 1
    };
    let mut erase: Vec<(u32, u32, u32)> = Vec::new();
    for y in 0..h {
        let mut x = 0;
        while x < w {
            if at(x, y).is_none() {
                x += 1;
                continue;
            }
            // A run of the band's ink along this row, from a thin pixel.
            let c = px(x, y);
            let start = x;
            let mut end = x;
            while end < w && dist2(px(end, y), c) <= SAME_INK {
                end += 1;
            }
            // Its last thin pixel: a rule runs on past the glyphs it crosses.
            let last = (start..end)
                .rev()
                .find(|&xx| at(xx, y).is_some())
                .unwrap_or(start);
            // Along the run: its thin pixels (and how thick the band is there) and the
            // glyphs' stems it crosses (segments where the ink runs on above and below).
            let (mut thin, mut thick, mut heights) = (0u32, Vec::new(), Vec::new());
            let mut xx = start;
            while xx <= last {
                if let Some(b) = at(xx, y) {
                    thin += 1;
                    thick.push(b.end - b.top);
                    xx += 1;
                    continue;
                }
                let s = xx;
                while xx <= last && at(xx, y).is_none() {
                    xx += 1;
                }
                heights.push(stem((s + xx) / 2, y, c) as u32);
            }
            thick.sort_unstable();
            let band_h = thick[thick.len() / 2];
            // A stem is a glyph's, three times the rule's height or more; a shorter
            // segment is where the band was not told apart (a curve's end), and counts for
            // neither.
            heights.retain(|&h| h >= 3 * band_h);
            heights.sort_unstable();
            let stems = heights.len();
            let tall = heights.get(stems / 2).copied().unwrap_or(0);
            let long = last + 1 - start;
            // The rule and the glyphs are the minority of their box; a run of the ground's
            // colour (between a glyph and the rule under it, say) is the majority.
            let (y0, y1) = (y.saturating_sub(tall / 2), (y + tall / 2).min(h - 1));
            let inked = (y0..=y1)
                .flat_map(|yy| (start..=last).map(move |xx| (xx, yy)))
                .filter(|&(xx, yy)| dist2(px(xx, yy), c) <= SAME_INK)
                .count() as u32;
            let minority = 2 * inked <= long * (y1 + 1 - y0);
            if stems >= 2 && 5 * thin >= 2 * long && 2 * long >= 3 * tall && minority {
                erase.extend((start..=last).map(|xx| (xx, y, band_h)));
            }
            x = end.max(x + 1);
        }
    }
    if erase.is_empty() {
        return None;
    }
    let mut out = img.clone();
    for (x, y, band_h) in erase {
        // Where the band is the rule alone, all of it goes (its soft edges too); where it
        // is thicker, a glyph's stroke runs along the rule there (the bar of a "3"), and
        // only the rule's own rows go.
        match at(x, y) {
            Some(b) if b.end - b.top <= band_h + 2 => {
                for yy in b.top..b.end {
                    out.put_pixel(x, yy, image::Rgb(b.ground));
                }
            }
            Some(b) => out.put_pixel(x, y, image::Rgb(b.ground)),
            None => {}
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three glyph stems 40 px tall in black on white, and a rule 3 px thick through their
    /// middles when `struck`.
    fn glyphs(struck: bool) -> RgbImage {
        let mut img = RgbImage::from_pixel(200, 80, image::Rgb([255, 255, 255]));
        for y in 20..60 {
            for x0 in [60, 100, 140] {
                for x in x0..x0 + 8 {
                    img.put_pixel(x, y, image::Rgb([0, 0, 0]));
                }
            }
        }
        if struck {
            for y in 39..42 {
                for x in 50..160 {
                    img.put_pixel(x, y, image::Rgb([0, 0, 0]));
                }
            }
        }
        img
    }

    #[test]
    fn a_rule_through_glyphs_is_painted_out_and_the_glyphs_kept() {
        let out = erase_strikes(&glyphs(true)).expect("a rule");
        assert_eq!(out, glyphs(false));
        assert!(erase_strikes(&glyphs(false)).is_none());
    }

    #[test]
    fn a_dash_a_crossbar_and_an_underline_of_one_glyph_stay() {
        // A dash (no stem), an "H" (ends on stems) and a "T" (one stem).
        let mut img = RgbImage::from_pixel(300, 80, image::Rgb([255, 255, 255]));
        let mut fill = |x0: u32, x1: u32, y0: u32, y1: u32| {
            for y in y0..y1 {
                for x in x0..x1 {
                    img.put_pixel(x, y, image::Rgb([0, 0, 0]));
                }
            }
        };
        fill(10, 60, 39, 42);
        fill(100, 106, 20, 60);
        fill(130, 136, 20, 60);
        fill(106, 130, 39, 42);
        fill(180, 230, 20, 24);
        fill(202, 208, 24, 60);
        assert!(erase_strikes(&img).is_none());
    }
}
