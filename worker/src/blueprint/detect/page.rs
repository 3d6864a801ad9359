//! Step 5c: text the shapes miss, from the words Tesseract reads on the whole reference
//! ([`WordReader::read_page`]). Copy set straight on a photo has no plain ground for the
//! glyph components of step 3, so the shape-based detector finds nothing there; Tesseract
//! does. Its confident words are grouped into lines (same height, side by side, close) and
//! lines into blocks (similar height, small leading, overlapping or aligned columns), and
//! each block that no block of the shapes already covers becomes a text block with its
//! words.

use image::RgbImage;

use super::colour::dist;
use super::text::RawBlock;
use super::words::WordReader;
use crate::blueprint::{Align, Rect, Rgb, TextBlock, TextRole};
use crate::ocr::PageWord;

/// Lowest confidence of a word used to find text (Tesseract reads photo texture as words
/// of low confidence).
const MIN_WORD_CONF: f32 = 60.0;

/// Longest edge of the image Tesseract reads, in pixels (larger references are scaled, for
/// time). A 9:16 story (1080×1920) read at 1600 px lost its small type (the corpus's story
/// detection F1 0.41 -> 0.27 on the test split), so references up to 2400 px are read whole.
const PAGE_EDGE: u32 = 2400;

/// Lowest mean confidence of a block's words.
const MIN_BLOCK_CONF: f32 = 75.0;

/// A line of words, left to right, and its box in pixels.
#[derive(Debug, Clone)]
pub(super) struct WordLine {
    pub words: Vec<PageWord>,
    pub left: u32,
    pub top: u32,
    pub right: u32,
    pub bottom: u32,
}

impl WordLine {
    fn new(w: PageWord) -> Self {
        WordLine {
            left: w.left,
            top: w.top,
            right: w.right(),
            bottom: w.bottom(),
            words: vec![w],
        }
    }

    /// The median height of its words (the type's size).
    pub fn height(&self) -> u32 {
        let mut hs: Vec<u32> = self.words.iter().map(|w| w.height).collect();
        hs.sort_unstable();
        hs[hs.len() / 2]
    }

    fn push(&mut self, w: PageWord) {
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
/// smaller height, their heights are within a factor of two, and the horizontal gap between
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
            2 * small >= large && v_overlap * 2 >= small as i64 && gap <= large as i64
        });
        match target {
            Some(l) => l.push(w),
            None => lines.push(WordLine::new(w)),
        }
    }
    lines.sort_by_key(|l| (l.top, l.left));
    lines
}

/// Lines into blocks: a line joins the block above it when their heights are within 30 %,
/// the leading (gap between them) is under 0.8 of the larger height, and their columns
/// overlap. Blocks are returned in reading order (top to bottom).
pub(super) fn group_blocks(lines: Vec<WordLine>) -> Vec<Vec<WordLine>> {
    let mut blocks: Vec<Vec<WordLine>> = Vec::new();
    for line in lines {
        let h = line.height() as f32;
        let target = blocks.iter_mut().find(|b| {
            let Some(last) = b.last() else { return false };
            let lh = last.height() as f32;
            let gap = line.top as f32 - last.bottom as f32;
            let x_overlap = line.right.min(last.right) > line.left.max(last.left);
            h.min(lh) >= 0.7 * h.max(lh)
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

/// Whether a word is kept to find text: confident, and with a letter, a digit or a sign
/// an ad prints (a lone mark of middling confidence is mostly texture).
fn keep_word(w: &PageWord) -> bool {
    let signs = w
        .text
        .chars()
        .filter(|c| c.is_alphanumeric() || "★$€£%".contains(*c))
        .count();
    w.conf >= MIN_WORD_CONF && signs >= 1 && (signs >= 2 || w.conf >= 85.0)
}

/// Whether a block is text: confident on the whole, with at least two letters or digits.
fn keep_block(b: &[WordLine]) -> bool {
    let words: Vec<&PageWord> = b.iter().flat_map(|l| l.words.iter()).collect();
    let conf = words.iter().map(|w| w.conf).sum::<f32>() / words.len().max(1) as f32;
    let signs: usize = words
        .iter()
        .map(|w| w.text.chars().filter(|c| c.is_alphanumeric()).count())
        .sum();
    conf >= MIN_BLOCK_CONF && signs >= 2
}

/// The blocks Tesseract finds on `img` that none of `found` covers (a found block overlaps
/// a quarter of either), as raw blocks with their words, each `owner` the smallest of
/// `shapes` holding its centre. `None` when the reader reads no pages.
pub(super) fn missed_blocks(
    img: &RgbImage,
    reader: &dyn WordReader,
    found: &[Rect],
    shapes: &[Rect],
) -> Option<Vec<(RawBlock, String)>> {
    // A large reference is read at most PAGE_EDGE px long (time; ad type stays legible).
    let long = img.width().max(img.height());
    let scaled;
    let img = if long > PAGE_EDGE {
        let k = PAGE_EDGE as f32 / long as f32;
        scaled = image::imageops::resize(
            img,
            ((img.width() as f32 * k).round() as u32).max(1),
            ((img.height() as f32 * k).round() as u32).max(1),
            image::imageops::FilterType::Triangle,
        );
        &scaled
    } else {
        img
    };
    let words: Vec<PageWord> = reader
        .read_page(img)?
        .into_iter()
        .filter(keep_word)
        .collect();
    let (iw, ih) = (img.width().max(1) as f32, img.height().max(1) as f32);
    let mut out: Vec<(RawBlock, String)> = Vec::new();
    for b in group_blocks(group_lines(&words)) {
        if !keep_block(&b) {
            continue;
        }
        let (l, t) = (
            b.iter().map(|l| l.left).min().unwrap_or(0),
            b.iter().map(|l| l.top).min().unwrap_or(0),
        );
        let (r, btm) = (
            b.iter().map(|l| l.right).max().unwrap_or(0),
            b.iter().map(|l| l.bottom).max().unwrap_or(0),
        );
        let rect = Rect {
            x: l as f32 / iw,
            y: t as f32 / ih,
            w: r.saturating_sub(l).max(1) as f32 / iw,
            h: btm.saturating_sub(t).max(1) as f32 / ih,
        };
        let covered = found
            .iter()
            .chain(out.iter().map(|(o, _)| &o.block.rect))
            .any(|f| f.overlap(&rect) > 0.25 * f.area().min(rect.area()));
        if covered {
            continue;
        }
        let mut hs: Vec<u32> = b.iter().map(WordLine::height).collect();
        hs.sort_unstable();
        let line_h = hs[hs.len() / 2] as f32 / ih;
        let owner = shapes
            .iter()
            .enumerate()
            .filter(|(_, s)| s.contains_center(&rect))
            .min_by(|a, b| a.1.area().total_cmp(&b.1.area()))
            .map(|(i, _)| i);
        let text = b.iter().map(WordLine::text).collect::<Vec<_>>().join("\n");
        let block = TextBlock {
            role: TextRole::Body,
            rect,
            lines: b.len(),
            line_height: line_h,
            align: align(&b, iw, owner.map(|i| shapes[i])),
            color: ink(img, (l, t, r, btm)),
            weight: 400,
            upper: false,
            words: None,
        };
        out.push((
            RawBlock {
                block,
                owner,
                stars: false,
            },
            text,
        ));
    }
    Some(out)
}

/// The alignment of a block's lines (left, centre or right edges in line); one line is
/// centred when it sits on the axis of the canvas (or of its shape).
fn align(b: &[WordLine], iw: f32, owner: Option<Rect>) -> Align {
    if b.len() >= 2 {
        let spread = |f: &dyn Fn(&WordLine) -> f32| {
            let v: Vec<f32> = b.iter().map(f).collect();
            v.iter().fold(f32::MIN, |a, x| a.max(*x)) - v.iter().fold(f32::MAX, |a, x| a.min(*x))
        };
        let l = spread(&|w| w.left as f32);
        let c = spread(&|w| (w.left + w.right) as f32 / 2.0);
        let r = spread(&|w| w.right as f32);
        return if c < l.min(r) - 1.0 {
            Align::Center
        } else if r < l - 1.0 {
            Align::Right
        } else {
            Align::Left
        };
    }
    let (x0, x1) = owner.map_or((0.0, iw), |s| (s.x * iw, s.right() * iw));
    let cx = (b[0].left + b[0].right) as f32 / 2.0;
    if (cx - (x0 + x1) / 2.0).abs() < 0.025 * iw {
        Align::Center
    } else {
        Align::Left
    }
}

/// The ink of the text in the box `(l, t, r, b)`: the mean of the pixels farther from the
/// box's border colour (its ground) than half the farthest.
fn ink(img: &RgbImage, (l, t, r, b): (u32, u32, u32, u32)) -> Rgb {
    let (r, b) = (r.min(img.width()), b.min(img.height()));
    if r <= l || b <= t {
        return [0, 0, 0];
    }
    let px = |x: u32, y: u32| img.get_pixel(x, y).0;
    let mut ring: Vec<Rgb> = (l..r)
        .flat_map(|x| [px(x, t), px(x, b - 1)])
        .chain((t..b).flat_map(|y| [px(l, y), px(r - 1, y)]))
        .collect();
    let mut channel = |k: usize| {
        ring.sort_by_key(|c| c[k]);
        ring[ring.len() / 2][k]
    };
    let ground = [channel(0), channel(1), channel(2)];
    let far = (t..b)
        .flat_map(|y| (l..r).map(move |x| (x, y)))
        .map(|(x, y)| dist(px(x, y), ground))
        .fold(0.0f32, f32::max);
    let (mut sum, mut n) = ([0.0f32; 3], 0.0f32);
    for y in t..b {
        for x in l..r {
            let p = px(x, y);
            if dist(p, ground) >= 0.5 * far {
                for k in 0..3 {
                    sum[k] += f32::from(p[k]);
                }
                n += 1.0;
            }
        }
    }
    if n == 0.0 {
        return [0, 0, 0];
    }
    [
        (sum[0] / n).round() as u8,
        (sum[1] / n).round() as u8,
        (sum[2] / n).round() as u8,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ocr::page_words;

    const HEAD: &str = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n";

    fn row(left: u32, top: u32, width: u32, height: u32, conf: u32, text: &str) -> String {
        format!("5\t1\t1\t1\t1\t1\t{left}\t{top}\t{width}\t{height}\t{conf}\t{text}\n")
    }

    fn texts(blocks: &[Vec<WordLine>]) -> Vec<Vec<String>> {
        blocks
            .iter()
            .map(|b| b.iter().map(WordLine::text).collect())
            .collect()
    }

    #[test]
    fn words_group_into_lines_and_blocks_by_size_alignment_and_spacing() {
        // A two-line headline (60 px type, words out of order, one word a little lower),
        // a subheadline in 24 px type close below it, a price far below, a column of
        // another element on the headline's first row far to the right, and a word too
        // unsure to keep.
        let tsv = [
            HEAD.to_owned(),
            row(230, 102, 150, 60, 95, "coffee"),
            row(80, 100, 140, 60, 96, "Morning"),
            row(80, 175, 220, 58, 93, "delivered"),
            row(80, 250, 90, 24, 90, "Fresh"),
            row(180, 250, 120, 24, 91, "roasted"),
            row(80, 500, 80, 40, 92, "$24"),
            row(800, 100, 100, 60, 90, "SALE"),
            row(500, 400, 40, 40, 20, "noise"),
        ]
        .concat();
        let words = page_words(&tsv);
        assert_eq!(words.len(), 7, "the word under 40 is dropped");
        let lines = group_lines(&words);
        let got: Vec<String> = lines.iter().map(WordLine::text).collect();
        assert_eq!(
            got,
            vec![
                "Morning coffee",
                "SALE",
                "delivered",
                "Fresh roasted",
                "$24"
            ]
        );
        let blocks = group_blocks(lines);
        assert_eq!(
            texts(&blocks),
            vec![
                vec!["Morning coffee", "delivered"],
                vec!["SALE"],
                vec!["Fresh roasted"],
                vec!["$24"],
            ]
        );
    }

    #[test]
    fn texture_read_as_words_makes_no_block() {
        let tsv = [
            HEAD.to_owned(),
            row(10, 10, 30, 30, 62, "|"),
            row(50, 12, 30, 30, 70, "ae"),
            row(300, 300, 30, 30, 88, "Buy"),
            row(340, 300, 40, 30, 90, "now"),
        ]
        .concat();
        let words: Vec<PageWord> = page_words(&tsv).into_iter().filter(keep_word).collect();
        let blocks = group_blocks(group_lines(&words));
        let kept: Vec<Vec<WordLine>> = blocks.into_iter().filter(|b| keep_block(b)).collect();
        assert_eq!(texts(&kept), vec![vec!["Buy now"]]);
    }
}
