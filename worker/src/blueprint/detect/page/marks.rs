//! The marks that lead list items, found in the pixels: a tick, a bullet or a tick in a
//! round badge set before each line of a list. Tesseract mostly reads no word there (a
//! lone "Y" or "»" of low confidence is dropped as texture), so the list's lines ran
//! together into one block. A mark is ink left of a line, about the line's size, with
//! clear ground on both sides of it; two or more lines whose marks stand in one column
//! are items, and each such line gets its mark as its first word ([`mark_items`]).

use image::RgbImage;

use super::lines::WordLine;
use crate::blueprint::detect::colour::{dist, median_colour};
use crate::ocr::PageWord;

/// A pixel farther than this from the ground beside a line is ink ([`dist`]).
const MARK_INK: f32 = 0.15;

/// A mark found left of a line: its box in pixels and how much of the box is ink.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Mark {
    left: u32,
    top: u32,
    right: u32,
    bottom: u32,
    fill: f32,
}

/// The mark left of `line`, if there is one: in the band of the line's rows, the run of
/// ink nearest the line's left edge, ending at least a tenth of a height before it and
/// starting within three and a half line heights of it (a tick in a badge is wider than
/// the line's lower-case words are tall); a fifth of a height to two heights wide and tall
/// (3 px at least; the line's height is its words' median, less than the type's size in
/// lower case), centred on the line's middle, with clear ground (half a height, or the
/// image's edge) left of it.
fn mark_before(img: &RgbImage, line: &WordLine) -> Option<Mark> {
    let h = line.height().max(4);
    let pad = h / 4;
    let (y0, y1) = (
        line.top.saturating_sub(pad),
        (line.bottom + pad).min(img.height()),
    );
    let x1 = line.left.saturating_sub(h / 10);
    let x0 = line.left.saturating_sub(h * 7 / 2);
    if x1 <= x0 + 2 || y1 <= y0 + 2 {
        return None;
    }
    // The ground is what lies just before the line's first word (a panel's colour where
    // the line sits on one; the band as a whole may reach past the panel's edge).
    let g0 = line.left.saturating_sub((h / 10).max(2));
    let ground = median_colour(
        (line.top..line.bottom.min(img.height()))
            .flat_map(|y| (g0..line.left).map(move |x| img.get_pixel(x, y).0)),
    );
    let ink = |x: u32, y: u32| dist(img.get_pixel(x, y).0, ground) > MARK_INK;
    let inked: Vec<bool> = (x0..x1).map(|x| (y0..y1).any(|y| ink(x, y))).collect();
    // The run of inked columns nearest the line.
    let end = inked.iter().rposition(|&c| c)?;
    let start = inked[..end].iter().rposition(|&c| !c).map_or(0, |i| i + 1);
    let (mx0, mx1) = (x0 + start as u32, x0 + end as u32 + 1);
    // Clear ground left of it: half a height of columns without ink, or the image's edge.
    let clear = h / 2;
    let left_clear = inked[start.saturating_sub(clear as usize)..start]
        .iter()
        .all(|&c| !c)
        && (start >= clear as usize || (x0 == 0 && start >= 2));
    // Its rows: the run of inked rows nearest the line's middle (the mark of the line
    // above or below may reach into the band).
    let middle = (line.top + line.bottom) / 2;
    let row_inked = |y: u32| (mx0..mx1).any(|x| ink(x, y));
    let seed = (y0..y1)
        .filter(|&y| row_inked(y))
        .min_by_key(|&y| y.abs_diff(middle))?;
    let my0 = (y0..seed)
        .rev()
        .take_while(|&y| row_inked(y))
        .last()
        .unwrap_or(seed);
    let my1 = (seed..y1)
        .take_while(|&y| row_inked(y))
        .last()
        .unwrap_or(seed)
        + 1;
    let (w, mh) = (mx1 - mx0, my1 - my0);
    let centre = (my0 + my1) as f32 / 2.0;
    let ok = left_clear
        && 5 * w >= h
        && w <= 2 * h
        && 5 * mh >= h
        && w.min(mh) >= 3
        && mh <= 2 * h
        && (centre - middle as f32).abs() <= 0.35 * h as f32;
    if !ok {
        return None;
    }
    let n = (my0..my1)
        .flat_map(|y| (mx0..mx1).map(move |x| (x, y)))
        .filter(|&(x, y)| ink(x, y))
        .count();
    Some(Mark {
        left: mx0,
        top: my0,
        right: mx1,
        bottom: my1,
        fill: n as f32 / (w * mh).max(1) as f32,
    })
}

/// Lines led by a mark in the pixels that stand in a column of such lines become list
/// items: each gets its mark as its first word, "•" for a small solid dot and "✓" for
/// anything else (a tick, a tick in a badge), unless its first word is already a list
/// marker. A column is two or more marked lines whose marks' centres are within half a
/// line height of each other across, of type sizes within 30 %, each within three line
/// heights of the next.
pub(super) fn mark_items(img: &RgbImage, lines: &mut [WordLine]) {
    let marks: Vec<Option<Mark>> = lines
        .iter()
        .map(|l| {
            let read = crate::blueprint::words::list_marker(&l.text()).is_some();
            (!read).then(|| mark_before(img, l)).flatten()
        })
        .collect();
    let centre = |m: &Mark| (m.left + m.right) as f32 / 2.0;
    let in_column: Vec<bool> = (0..lines.len())
        .map(|i| {
            let Some(a) = &marks[i] else { return false };
            (0..lines.len()).any(|j| {
                let Some(b) = &marks[j] else { return false };
                let (ha, hb) = (lines[i].height() as f32, lines[j].height() as f32);
                let gap = (lines[j].top as f32 - lines[i].bottom as f32)
                    .max(lines[i].top as f32 - lines[j].bottom as f32);
                j != i
                    && (centre(a) - centre(b)).abs() <= 0.5 * ha.max(hb)
                    && ha.min(hb) >= 0.7 * ha.max(hb)
                    && gap <= 3.0 * ha.max(hb)
            })
        })
        .collect();
    for ((l, m), keep) in lines.iter_mut().zip(marks).zip(in_column) {
        let (Some(m), true) = (m, keep) else { continue };
        let dot = m.fill >= 0.6 && (m.bottom - m.top) * 5 <= l.height() * 3;
        let word = PageWord {
            left: m.left,
            top: m.top,
            width: m.right - m.left,
            height: m.bottom - m.top,
            conf: 90.0,
            text: if dot { "•" } else { "✓" }.into(),
        };
        l.push(word);
    }
}

#[cfg(test)]
mod tests {
    use image::Rgb;

    use super::*;

    fn word(left: u32, top: u32, width: u32, height: u32, text: &str) -> PageWord {
        PageWord {
            left,
            top,
            width,
            height,
            conf: 95.0,
            text: text.into(),
        }
    }

    fn fill(img: &mut RgbImage, (x0, y0, x1, y1): (u32, u32, u32, u32), c: [u8; 3]) {
        for y in y0..y1 {
            for x in x0..x1 {
                img.put_pixel(x, y, Rgb(c));
            }
        }
    }

    /// A list of three lines at x = 100, 40 px type, each with its words drawn as a bar,
    /// and the marks `marked` draws before them.
    fn list(marked: impl Fn(&mut RgbImage, u32)) -> (RgbImage, Vec<WordLine>) {
        let mut img = RgbImage::from_pixel(600, 400, Rgb([250, 250, 250]));
        let mut lines = Vec::new();
        for (i, text) in ["Free delivery", "Cancel any time", "Ready in two"]
            .into_iter()
            .enumerate()
        {
            let top = 60 + i as u32 * 80;
            fill(&mut img, (100, top, 400, top + 40), [20, 20, 20]);
            marked(&mut img, top);
            let mut l = WordLine::new(word(100, top, 140, 40, text.split(' ').next().unwrap()));
            l.push(word(250, top, 150, 40, "rest"));
            lines.push(l);
        }
        (img, lines)
    }

    #[test]
    fn a_column_of_ticks_in_the_pixels_makes_list_items() {
        // A round orange badge before each line, of another colour than the words.
        let (img, mut lines) =
            list(|img, top| fill(img, (50, top + 2, 86, top + 38), [240, 110, 50]));
        mark_items(&img, &mut lines);
        for l in &lines {
            assert!(l.text().starts_with("✓ "), "{}", l.text());
            assert_eq!(l.left, 50);
        }
        // A small solid dot is a bullet.
        let (img, mut lines) =
            list(|img, top| fill(img, (70, top + 14, 82, top + 26), [20, 20, 20]));
        mark_items(&img, &mut lines);
        assert!(lines.iter().all(|l| l.text().starts_with("• ")));
    }

    #[test]
    fn lines_without_marks_or_with_a_lone_one_stay_as_they_are() {
        let (img, mut lines) = list(|_, _| ());
        mark_items(&img, &mut lines);
        assert!(lines.iter().all(|l| !l.text().starts_with(['✓', '•'])));
        // One mark is not a column; ink that runs on to the left is a word, not a mark.
        let (img, mut lines) = list(|img, top| {
            if top == 60 {
                fill(img, (50, top + 2, 86, top + 38), [240, 110, 50]);
            } else {
                fill(img, (0, top + 5, 86, top + 35), [20, 20, 20]);
            }
        });
        mark_items(&img, &mut lines);
        assert!(lines.iter().all(|l| !l.text().starts_with(['✓', '•'])));
    }
}
