//! Words into lines and lines into blocks: Tesseract's words grouped by size, alignment,
//! spacing and ink, list items and a quote's signature told apart, prices kept apart.

use crate::blueprint::Rgb;
use crate::blueprint::detect::colour::dist;
use crate::blueprint::words::{list_marker, prices};
use crate::ocr::PageWord;

/// Farthest apart the inks of two lines of one block may be ([`dist`]).
const MAX_BLOCK_INK_DIST: f32 = 0.25;

/// A line of words, left to right, and its box in pixels.
#[derive(Debug, Clone)]
pub(super) struct WordLine {
    pub words: Vec<PageWord>,
    pub left: u32,
    pub top: u32,
    pub right: u32,
    pub bottom: u32,
    /// The ink of its words, when measured ([`super::ink`]).
    pub color: Option<Rgb>,
}

impl WordLine {
    /// A line of one word.
    pub fn new(w: PageWord) -> Self {
        WordLine {
            left: w.left,
            top: w.top,
            right: w.right(),
            bottom: w.bottom(),
            words: vec![w],
            color: None,
        }
    }

    /// The median height of its words (the type's size).
    pub fn height(&self) -> u32 {
        let mut hs: Vec<u32> = self.words.iter().map(|w| w.height).collect();
        hs.sort_unstable();
        hs[hs.len() / 2]
    }

    /// The line with `w` among its words (kept left to right).
    pub fn push(&mut self, w: PageWord) {
        self.left = self.left.min(w.left);
        self.top = self.top.min(w.top);
        self.right = self.right.max(w.right());
        self.bottom = self.bottom.max(w.bottom());
        self.words.push(w);
        self.words.sort_by_key(|w| w.left);
    }

    /// Its words joined by spaces.
    pub fn text(&self) -> String {
        self.words
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Words into lines: a word joins a line when their vertical spans overlap by half the
/// smaller height, their heights are within a factor of 2.9 (Tesseract boxes each word's
/// ink: "so" is a third as tall as "ship," in one line of 11 px type), and the horizontal gap between
/// them is at most the larger height (a word space is about a third of it; columns and
/// separate elements on one row are farther apart). Lines are returned top to bottom.
pub(super) fn group_lines(words: &[PageWord]) -> Vec<WordLine> {
    let mut sorted: Vec<PageWord> = words.to_vec();
    sorted.sort_by_key(|w| (w.left, w.top));
    let mut lines: Vec<WordLine> = Vec::new();
    for w in sorted {
        let target = lines.iter_mut().find(|l| {
            let lh = l.height();
            let (small, large) = (lh.min(w.height), lh.max(w.height));
            let v_overlap = l.bottom.min(w.bottom()) as i64 - l.top.max(w.top) as i64;
            let gap = (w.left as i64 - l.right as i64).max(l.left as i64 - w.right() as i64);
            20 * small >= 7 * large && v_overlap * 2 >= small as i64 && gap <= large as i64
        });
        match target {
            Some(l) => l.push(w),
            None => lines.push(WordLine::new(w)),
        }
    }
    lines.sort_by_key(|l| (l.top, l.left));
    lines
}

/// Whether each line starts a list item: its first word is a list marker ("1.", "•",
/// "✓ ", [`list_marker`]), or a lone mark that Tesseract reads a tick or a cross as ("Y",
/// "X", "v", "/", "x", "×", "✗") when another line, within three line heights above or below,
/// starts with the same mark at the same left edge (a column of ticks).
fn item_starts(lines: &[WordLine]) -> Vec<bool> {
    fn first(l: &WordLine) -> &str {
        l.words.first().map(|w| w.text.as_str()).unwrap_or_default()
    }
    let weak = |t: &str| ["Y", "X", "v", "V", "x", "/", "×", "✗", "✘", "✔"].contains(&t);
    (0..lines.len())
        .map(|i| {
            let l = &lines[i];
            if list_marker(&l.text()).is_some() {
                return true;
            }
            let mark = first(l);
            weak(mark)
                && lines.iter().enumerate().any(|(j, o)| {
                    let h = l.height().max(o.height()) as i64;
                    j != i
                        && first(o) == mark
                        && (o.left as i64 - l.left as i64).abs() <= h / 2
                        && (o.top as i64 - l.top as i64).abs() <= 3 * h
                })
        })
        .collect()
}

/// A tick or cross that leads an item and that Tesseract read as a letter ("Y", "v", "X")
/// is written as the mark it is (`✓`, `✗`), so the item's words are its words and its role
/// is a list item.
pub(super) fn normalise_marks(lines: &mut [WordLine]) {
    let starts = item_starts(lines);
    for (l, starts) in lines.iter_mut().zip(starts) {
        let Some(w) = l.words.first_mut().filter(|_| starts) else {
            continue;
        };
        if ["Y", "v", "V", "/", "✔"].contains(&w.text.as_str()) {
            w.text = "✓".into();
        } else if ["X", "x", "×", "✘"].contains(&w.text.as_str()) {
            w.text = "✗".into();
        }
    }
}

/// Whether a line is a price on its own ("$24", "24,00 €", "from $19"): an amount, and at
/// most four letters beside it.
pub(super) fn bare_price(line: &str) -> bool {
    prices(line).len() == 1 && line.chars().filter(|c| c.is_alphabetic()).count() <= 4
}

/// A line holding two prices side by side ("$39 $24": a compare-at price beside the price,
/// which Tesseract sets on one line) becomes two lines, split at the widest gap between
/// words that leaves one price on each side. A dollar sign read as "s" ("s39") beside a
/// "$" amount is written as the sign it is.
pub(super) fn split_prices(lines: Vec<WordLine>) -> Vec<WordLine> {
    let mut out = Vec::new();
    for mut l in lines {
        let text = l.text();
        if text.contains('$') {
            for w in &mut l.words {
                let digits = w.text.get(1..).unwrap_or_default();
                if w.text.starts_with(['s', 'S'])
                    && digits.starts_with(|c: char| c.is_ascii_digit())
                    && digits
                        .chars()
                        .all(|c| c.is_ascii_digit() || ",.".contains(c))
                {
                    w.text = format!("${digits}");
                }
            }
        }
        let text = l.text();
        if prices(&text).len() != 2 || text.chars().filter(|c| c.is_alphabetic()).count() > 4 {
            out.push(l);
            continue;
        }
        let join = |ws: &[PageWord]| {
            ws.iter()
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let cut = (1..l.words.len())
            .filter(|&i| {
                prices(&join(&l.words[..i])).len() == 1 && prices(&join(&l.words[i..])).len() == 1
            })
            .max_by_key(|&i| l.words[i].left.saturating_sub(l.words[i - 1].right()));
        let Some(cut) = cut else {
            out.push(l);
            continue;
        };
        let right = l.words.split_off(cut);
        let mut parts = [l.words, right].map(|ws| {
            let mut ws = ws.into_iter();
            let mut line = WordLine::new(ws.next().expect("each side holds a price"));
            for w in ws {
                line.push(w);
            }
            line
        });
        for p in &mut parts {
            p.color = l.color;
        }
        out.extend(parts);
    }
    out.sort_by_key(|l| (l.top, l.left));
    out
}

/// Lines into blocks: a line joins the block above it when their heights are within 30 %,
/// the leading (gap between them) is under 0.8 of the larger height, their columns
/// overlap, their inks are alike (a gold price under a white headline is its own block)
/// and both or neither are a price alone ([`bare_price`]).
/// A line that starts a list item ([`item_starts`]) starts a block of its own: each
/// item is one block, its wrapped lines with it. Blocks are returned in reading order (top to
/// bottom).
pub(super) fn group_blocks(lines: Vec<WordLine>) -> Vec<Vec<WordLine>> {
    let starts = item_starts(&lines);
    let mut blocks: Vec<Vec<WordLine>> = Vec::new();
    for (line, starts_item) in lines.into_iter().zip(starts) {
        let h = line.height() as f32;
        // "— Maria Lopez" under a quote signs it: a block of its own, as a list item is.
        let signs = signature(&line.text());
        let target = blocks.iter_mut().find(|b| {
            let Some(last) = b.last() else { return false };
            // A closing quote mark ends the quote: the line under it is its signature
            // (Tesseract drops the dash of "— Aiko Tanaka" at times) or other copy.
            if starts_item || signs || last.text().trim_end().ends_with(['”', '"', '»']) {
                return false;
            }
            let lh = last.height() as f32;
            let gap = line.top as f32 - last.bottom as f32;
            let x_overlap = line.right.min(last.right) > line.left.max(last.left);
            let same_ink = match (line.color, last.color) {
                (Some(a), Some(b)) => dist(a, b) <= MAX_BLOCK_INK_DIST,
                _ => true,
            };
            // A price on its own line is its own block ("Everyday essentials" then
            // "24,00 €" in the same face): the headline and the price play two roles.
            same_ink
                && bare_price(&line.text()) == bare_price(&last.text())
                && h.min(lh) >= 0.7 * h.max(lh)
                && gap >= -0.3 * h.min(lh)
                && gap <= 0.8 * h.max(lh)
                && x_overlap
        });
        match target {
            Some(b) => b.push(line),
            None => blocks.push(vec![line]),
        }
    }
    blocks
}

/// Whether a line signs a quote: a dash, then at most four words, the first capitalised.
pub(super) fn signature(line: &str) -> bool {
    let t = line.trim();
    let name = t.trim_start_matches(['—', '–', '-', '~', ' ']);
    t.starts_with(['—', '–', '-', '~'])
        && name.len() < t.len()
        && name.split_whitespace().count() <= 4
        && name.chars().next().is_some_and(char::is_uppercase)
}
