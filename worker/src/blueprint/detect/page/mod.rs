//! Step 5c: text the shapes miss, from the words Tesseract reads on the whole reference
//! ([`WordReader::read_page`]). Copy set straight on a photo has no plain ground for the
//! glyph components of step 3, so the shape-based detector finds nothing there; Tesseract
//! does. Its confident words are grouped into lines (same height, side by side, close) and
//! lines into blocks (similar height, small leading, overlapping or aligned columns), and
//! each block that no block of the shapes already covers becomes a text block with its
//! words.

use image::imageops::FilterType;
use image::{GrayImage, Luma, RgbImage};

use super::colour::dist;
use super::text::RawBlock;
use super::words::WordReader;
use crate::blueprint::{Align, Rect, Rgb, TextBlock, TextRole};
use crate::ocr::PageWord;

mod frame;
mod lines;
mod marks;
mod strike;

use lines::{WordLine, group_blocks, group_lines, normalise_marks, split_prices};

/// Lowest confidence of a word used to find text (Tesseract reads photo texture as words
/// of low confidence).
const MIN_WORD_CONF: f32 = 60.0;

/// Longest edge of the image Tesseract reads, in pixels (larger references are scaled, for
/// time). A 9:16 story (1080×1920) read at 1600 px lost its small type (the corpus's story
/// detection F1 0.41 -> 0.27 on the test split), so references up to 2400 px are read whole.
const PAGE_EDGE: u32 = 2400;

/// References whose longest edge is under this are read at twice their size: a 1200×628
/// link ad's 13 px captions are below the type size Tesseract reads.
const SMALL_EDGE: u32 = 1400;

/// Smallest shape read on its own (share of the canvas): a button's label.
const MIN_SHEET_SHAPE: f32 = 0.002;

/// Air around and between the shapes on the sheet, in pixels.
const SHEET_GAP: u32 = 24;

/// Lowest mean confidence of a block's words.
const MIN_BLOCK_CONF: f32 = 75.0;

/// Lowest mean confidence of a figure's words kept without a word of three signs.
const FIGURE_CONF: f32 = 85.0;

/// Lowest confidence of a figure that is one word with its sign ("2x", "93%"), on a
/// picture too: display type over a photo reads at 56 to 96 on the dev split's
/// statistics, where what else reads as a figure with its sign there is at 31.
const SIGNED_FIGURE_CONF: f32 = 50.0;

/// Least share of a block's box inside a cut-out product for the block to be the
/// product's label (words wider than the product are copy set over it).
const LABEL_INSIDE: f32 = 0.8;

/// Share of a cut-out product's height from which a line inside it is display copy, not
/// its label (a pack's name runs some 4 to 8 % of its height).
const LABEL_MAX_LINE: f32 = 0.12;

/// Lowest mean confidence of a block's words on a picture region.
const MIN_PICTURE_BLOCK_CONF: f32 = 88.0;

/// Whether a word is kept to find text: confident, and with a letter, a digit or a sign
/// an ad prints (a lone mark of middling confidence is mostly texture), and not one letter
/// over and over (a row of marks).
fn keep_word(w: &PageWord) -> bool {
    let signs = w
        .text
        .chars()
        .filter(|c| c.is_alphanumeric() || "★$€£%".contains(*c))
        .count();
    // One letter four times or more ("EEEEEEE") is a row of marks, not a word.
    let mut chars = w.text.chars().filter(|c| c.is_alphanumeric());
    let first = chars.next();
    let repeated = signs >= 4 && chars.all(|c| Some(c) == first);
    signed_figure_word(w)
        || w.conf >= MIN_WORD_CONF && signs >= 1 && (signs >= 2 || w.conf >= 85.0) && !repeated
}

/// Whether a block is text: confident on the whole, with at least two letters or digits;
/// on a picture (`on_picture`), very confident and with at least three, or a figure
/// ([`a_figure`]: "93%") (a label such as "AFTER" on a photo stays; what Tesseract makes of
/// the photo's texture goes).
fn keep_block(b: &[WordLine], on_picture: bool) -> bool {
    let words: Vec<&PageWord> = b.iter().flat_map(|l| l.words.iter()).collect();
    let conf = mean_conf(words.iter().copied());
    let signs: usize = words
        .iter()
        .map(|w| w.text.chars().filter(|c| c.is_alphanumeric()).count())
        .sum();
    if signed_figure(b) {
        true
    } else if on_picture {
        conf >= MIN_PICTURE_BLOCK_CONF && (signs >= 3 || a_figure(b))
    } else {
        conf >= MIN_BLOCK_CONF && signs >= 2
    }
}

/// The blocks of text Tesseract finds on `img`, as raw blocks with their words, each
/// `owner` the smallest of `shapes` holding its centre. A block on one of `pictures` must
/// be surer ([`keep_block`]), and one on a cut-out product (`true` beside its box) is its
/// label, dropped. `None` when the reader reads no pages.
pub(super) fn page_blocks(
    img: &RgbImage,
    reader: &dyn WordReader,
    shapes: &[(Rect, Rgb)],
    pictures: &[(Rect, bool)],
    photo_ground: bool,
) -> Option<Vec<(RawBlock, String)>> {
    // A large reference is read at most PAGE_EDGE px long (time; ad type stays legible), a
    // small one at twice its size.
    let original = img;
    let long = img.width().max(img.height());
    let scaled;
    let img = if !(SMALL_EDGE..=PAGE_EDGE).contains(&long) {
        let k = if long < SMALL_EDGE {
            2.0
        } else {
            PAGE_EDGE as f32 / long as f32
        };
        scaled = image::imageops::resize(
            img,
            ((img.width() as f32 * k).round() as u32).max(1),
            ((img.height() as f32 * k).round() as u32).max(1),
            FilterType::Triangle,
        );
        &scaled
    } else {
        img
    };
    let (page, sheet, light, display) = std::thread::scope(|s| {
        let sheet = s.spawn(|| read_shapes(img, reader, shapes));
        let photo = photo_ground || !pictures.is_empty();
        let light = s.spawn(move || photo.then(|| light_ink(original, img, reader)).flatten());
        // The page is read with its line-through painted out (a struck compare-at price),
        // found on the reference at its own size (a quarter of the pixels of a small one
        // read at twice its size) and scaled as the page is.
        // Frames (an outlined button's border) are painted out too: Tesseract reads
        // nothing inside one.
        let struck = strike::erase_strikes(original);
        let framed = frame::erase_frames(struck.as_ref().unwrap_or(original));
        let clean = framed.or(struck).map(|c| {
            if std::ptr::eq(img, original) {
                c
            } else {
                image::imageops::resize(&c, img.width(), img.height(), FilterType::Triangle)
            }
        });
        let clean = clean.as_ref().unwrap_or(img);
        let (page, display) = std::thread::scope(|s| {
            let display = s.spawn(|| display_words(clean, photo, reader));
            (reader.read_page(clean), display.join().ok().flatten())
        });
        (
            page,
            sheet.join().ok().flatten(),
            light.join().ok().flatten(),
            display,
        )
    });
    if page.is_none() && sheet.is_none() {
        return None;
    }
    // The shapes' own reads first: each was turned into ink on white from its colour; then
    // the page; then, on a photo, its white type; then the display type.
    let words: Vec<PageWord> = crate::ocr::merge_words(
        crate::ocr::merge_words(
            crate::ocr::merge_words(sheet.unwrap_or_default(), page.unwrap_or_default()),
            light.unwrap_or_default(),
        ),
        display.unwrap_or_default(),
    )
    .into_iter()
    .filter(keep_word)
    .collect();
    let (iw, ih) = (img.width().max(1) as f32, img.height().max(1) as f32);
    let mut out: Vec<(RawBlock, String)> = Vec::new();
    let mut lines = split_prices(group_lines(&words));
    for l in &mut lines {
        l.color = Some(ink(img, (l.left, l.top, l.right, l.bottom)));
    }
    marks::mark_items(img, &mut lines);
    normalise_marks(&mut lines);
    for b in group_blocks(lines) {
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
        let on = pictures
            .iter()
            .filter(|(p, _)| super::expand(p, 0.01).contains_center(&rect));
        // Words inside a cut-out product are its label, not the ad's copy; a line that
        // runs out of it, or display type an eighth of its height, is copy over it (a
        // headline whose white type the ground model took for a product's silhouette, a
        // statistic's figure on the bright part of a dark photo).
        let line_px = b.iter().map(WordLine::height).max().unwrap_or(0) as f32 / ih;
        let label = on.clone().any(|(p, cutout)| {
            *cutout
                && super::expand(p, 0.01).overlap(&rect) >= LABEL_INSIDE * rect.area()
                && line_px < LABEL_MAX_LINE * p.h
        });
        if label || !keep_block(&b, on.count() > 0) {
            continue;
        }
        let owner = shapes
            .iter()
            .enumerate()
            .filter(|(_, s)| s.0.contains_center(&rect))
            .min_by(|a, b| a.1.0.area().total_cmp(&b.1.0.area()))
            .map(|(i, _)| i);
        // Tesseract reads texture and the edges of shapes as short words ("vA", "12,",
        // "X"): a block needs a word of three letters or digits, or a price; on a photo,
        // outside any panel, it needs that even when it is a block's only sign.
        if !has_a_word(&b) && !a_figure(&b) && (photo_ground && owner.is_none() || !short_copy(&b))
        {
            continue;
        }
        let mut hs: Vec<u32> = b.iter().map(WordLine::height).collect();
        hs.sort_unstable();
        let line_h = hs[hs.len() / 2] as f32 / ih;
        let text = b.iter().map(WordLine::text).collect::<Vec<_>>().join("\n");
        let block = TextBlock {
            role: TextRole::Body,
            rect,
            lines: b.len(),
            line_height: line_h,
            align: align(&b, iw, owner.map(|i| shapes[i].0)),
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

/// The least channel of a pixel where white type on a photo starts to be ink, and where it
/// is full ink ([`light_key`]).
const LIGHT_INK: (u8, u8) = (150, 230);

/// Longest edge of the display read ([`display_words`]), in pixels.
const DISPLAY_EDGE: u32 = 640;

/// Least height of a word of the display read, in its pixels (5 % of its long edge): type
/// smaller than this is read better at the page's size.
const DISPLAY_WORD_PX: u32 = 32;

/// `img` scaled so its longest edge is at most `edge` (itself when it already is).
fn at_most(img: &RgbImage, edge: u32) -> std::borrow::Cow<'_, RgbImage> {
    let long = img.width().max(img.height());
    if long <= edge {
        return std::borrow::Cow::Borrowed(img);
    }
    let k = edge as f32 / long as f32;
    std::borrow::Cow::Owned(image::imageops::resize(
        img,
        ((img.width() as f32 * k).round() as u32).max(1),
        ((img.height() as f32 * k).round() as u32).max(1),
        FilterType::Triangle,
    ))
}

/// The near-white pixels of `src` as black ink on white: a soft key, channels all from
/// [`LIGHT_INK`]`.0` up ramp to full ink at `.1` (a hard threshold leaves edges Tesseract
/// splits condensed display type at). `None` when the image has no white, or white
/// everywhere (a light photo): nothing a read of the key can add.
fn light_key(src: &RgbImage) -> Option<GrayImage> {
    let (lo, hi) = (f32::from(LIGHT_INK.0), f32::from(LIGHT_INK.1));
    let mut inked = 0usize;
    let key = GrayImage::from_fn(src.width(), src.height(), |x, y| {
        let m = f32::from(*src.get_pixel(x, y).0.iter().min().unwrap_or(&0));
        if m >= hi {
            inked += 1;
        }
        Luma([(255.0 * ((hi - m) / (hi - lo)).clamp(0.0, 1.0)).round() as u8])
    });
    let share = inked as f32 / (src.width() * src.height()).max(1) as f32;
    (0.002..=0.25).contains(&share).then_some(key)
}

/// The words `reader` reads on `sheet`, their boxes scaled from the sheet's pixels to
/// `page`'s; `None` when it reads no sheets.
fn read_scaled(
    reader: &dyn WordReader,
    sheet: &GrayImage,
    page: &RgbImage,
) -> Option<Vec<PageWord>> {
    let (sx, sy) = (
        page.width() as f32 / sheet.width().max(1) as f32,
        page.height() as f32 / sheet.height().max(1) as f32,
    );
    let words = reader.read_sheet(sheet)?;
    Some(
        words
            .into_iter()
            .map(|wd| PageWord {
                left: (wd.left as f32 * sx).round() as u32,
                top: (wd.top as f32 * sy).round() as u32,
                width: ((wd.width as f32 * sx).round() as u32).max(1),
                height: ((wd.height as f32 * sy).round() as u32).max(1),
                ..wd
            })
            .collect(),
    )
}

/// The words of the white type on a photo: [`light_key`] of the reference at its own size
/// (up to [`PAGE_EDGE`]), read, boxes in `page`'s pixels. A photo's texture defeats
/// Tesseract's own thresholds (a poster's headline over grass reads as "ALL" and noise),
/// and display type read at twice its size is lost, so this read keys on the ink instead.
/// `None` when the reader reads no sheets or the photo has no white.
fn light_ink(
    original: &RgbImage,
    page: &RgbImage,
    reader: &dyn WordReader,
) -> Option<Vec<PageWord>> {
    read_scaled(reader, &light_key(&at_most(original, PAGE_EDGE))?, page)
}

/// The words in display type (a statistic's "87%", a poster's headline): `page` read
/// again at most [`DISPLAY_EDGE`] long, as it is and, on a photo (`photo`), as its
/// [`light_key`]; only the words at least [`DISPLAY_WORD_PX`] tall there, boxes in
/// `page`'s pixels. Tesseract reads type best some 30 to 100 px tall: a figure 170 px tall
/// on a 1080 px reference, read at twice that size, came out as "1%" where this read
/// makes "87%". `None` when the reader reads no sheets.
fn display_words(page: &RgbImage, photo: bool, reader: &dyn WordReader) -> Option<Vec<PageWord>> {
    let small = at_most(page, DISPLAY_EDGE);
    let tall = |words: Option<Vec<PageWord>>, k: f32| {
        words.map(|ws| {
            ws.into_iter()
                .filter(|w| w.height as f32 >= DISPLAY_WORD_PX as f32 * k)
                .collect::<Vec<_>>()
        })
    };
    let k = page.height() as f32 / small.height().max(1) as f32;
    let gray = image::DynamicImage::ImageRgb8(small.clone().into_owned()).into_luma8();
    let plain = tall(read_scaled(reader, &gray, page), k);
    let light = photo
        .then(|| light_key(&small))
        .flatten()
        .and_then(|key| tall(read_scaled(reader, &key, page), k));
    match (plain, light) {
        (None, None) => None,
        (p, l) => Some(crate::ocr::merge_words(
            p.unwrap_or_default(),
            l.unwrap_or_default(),
        )),
    }
}

/// Whether words read in a crop say something: a word of three letters or digits, or a
/// figure with a currency or percent sign ("X", "4", "ar" say nothing).
pub(super) fn says_something(text: &str) -> bool {
    text.split_whitespace().any(|w| {
        w.chars().filter(|c| c.is_alphanumeric()).count() >= 3
            || (w.chars().any(|c| c.is_ascii_digit()) && w.chars().any(|c| "$€£%".contains(c)))
    })
}

/// Whether a crop's reading `crop` of a page block read as `page` is the same text, read
/// better: as many lines, and letters and digits within a third of each other's edits,
/// where a line's lead mark that the page's read wrote ([`lead_mark`]: a tick, a cross, a
/// bullet) is left out, and with it what the crop read for it.
pub(super) fn reads_alike(page: &str, crop: &str) -> bool {
    let signs = |t: &str| -> Vec<char> {
        t.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    if page.lines().count() != crop.lines().count() {
        return false;
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (p, c) in page.lines().zip(crop.lines()) {
        let (_, p, c) = lead_mark(p, c);
        a.extend(signs(p));
        b.extend(signs(c));
    }
    !a.is_empty() && 3 * edits(&a, &b) <= a.len().max(b.len())
}

/// The mark that leads a line of the page's read ("✓", "✗" or "•", written by
/// [`normalise_marks`] and [`marks::mark_items`]) and the rest of the line, with the rest
/// of the crop's line `crop` past what it read for the mark: its first word when that is
/// a sign or two without a letter pair ("¢", "e", "»", "Y"). `None` and the lines whole
/// when the page's line has no such mark.
fn lead_mark<'a>(page: &'a str, crop: &'a str) -> (Option<char>, &'a str, &'a str) {
    let Some(m) = page.chars().next().filter(|c| ['✓', '✗', '•'].contains(c)) else {
        return (None, page, crop);
    };
    let rest = page[m.len_utf8()..].trim_start();
    let c = crop.trim_start();
    let (first, after) = c.split_once(' ').unwrap_or((c, ""));
    let crop_rest = if first.chars().count() <= 2
        && first.chars().filter(|c| c.is_alphanumeric()).count() <= 1
    {
        after.trim_start()
    } else {
        c
    };
    (Some(m), rest, crop_rest)
}

/// The crop's read of a block that [`reads_alike`] the page's, line by line: each line of
/// the crop that reads like the page's line, else the page's line. A crop scaled to one
/// size can lose a word in display type that the page read ("Everyday" read "ryoay"
/// while "essentials" reads the same): that line stays as the page read it. A line's lead
/// mark stays the page's ([`lead_mark`]).
pub(super) fn pick_lines(page: &str, crop: &str) -> String {
    page.lines()
        .zip(crop.lines())
        .map(|(p, c)| match lead_mark(p, c) {
            (m, pr, cr) if reads_alike(pr, cr) => match m {
                Some(m) => format!("{m} {cr}"),
                None => cr.to_owned(),
            },
            _ => p.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The Levenshtein distance of two strings of characters.
fn edits(a: &[char], b: &[char]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j + 1] + 1)
                .min(cur[j] + 1)
                .min(prev[j] + usize::from(ca != cb));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Whether a block holds a word that says something ([`says_something`]).
fn has_a_word(b: &[WordLine]) -> bool {
    b.iter().any(|l| says_something(&l.text()))
}

/// The mean confidence of some words (0 for none).
fn mean_conf<'a>(words: impl IntoIterator<Item = &'a PageWord>) -> f32 {
    let (sum, n) = words
        .into_iter()
        .fold((0.0, 0usize), |(s, n), w| (s + w.conf, n + 1));
    sum / n.max(1) as f32
}

/// Whether a block is a figure set on its own ("2x", "93%"), read with confidence: one
/// line that [`crate::blueprint::words::is_stat`] takes for a figure and nothing else
/// (texture reads as short words too, but seldom as a sure number).
fn a_figure(b: &[WordLine]) -> bool {
    let [l] = b else {
        return false;
    };
    let text = l.text();
    signed_figure(b)
        || mean_conf(&l.words) >= FIGURE_CONF
            && l.words.len() <= 2
            && text.chars().next().is_some_and(|c| c.is_ascii_digit())
            && crate::blueprint::words::is_stat(&text)
}

/// Whether a block is one word that is a figure with its sign ("2x", "93%", "3×"), read
/// with at least [`SIGNED_FIGURE_CONF`].
fn signed_figure(b: &[WordLine]) -> bool {
    match b {
        [l] => matches!(l.words.as_slice(), [w] if signed_figure_word(w)),
        _ => false,
    }
}

/// Whether a word is a figure with its sign ([`signed_figure`]).
fn signed_figure_word(w: &PageWord) -> bool {
    w.conf >= SIGNED_FIGURE_CONF
        && w.text
            .strip_suffix(['x', 'X', '×', '%'])
            .is_some_and(|d| (1..=3).contains(&d.len()) && d.chars().all(|c| c.is_ascii_digit()))
}

/// Whether a block is short copy that is not a word of three signs but is read with
/// confidence: two letters of one word in capitals or a title ("OK", "Go", "VS"), never a
/// lone sign.
fn short_copy(b: &[WordLine]) -> bool {
    let words: Vec<&PageWord> = b.iter().flat_map(|l| l.words.iter()).collect();
    words.len() == 1
        && words[0].conf >= 90.0
        && words[0].text.chars().filter(|c| c.is_alphabetic()).count() == 2
        && words[0].text.chars().next().is_some_and(char::is_uppercase)
}

/// The words of the solid shapes (panels, buttons, badges) of `img`, each cut out and
/// turned into dark ink on white from its own colour, stacked on one sheet and read in one
/// run; boxes in `img`'s pixels, the smallest shape's words first (a button's label inside a
/// panel is read on the button). Light copy on a dark panel over a bright photo, which
/// neither of the page's thresholds separates, reads here. `None` when there is no shape
/// or the reader reads no sheets.
fn read_shapes(
    img: &RgbImage,
    reader: &dyn WordReader,
    shapes: &[(Rect, Rgb)],
) -> Option<Vec<PageWord>> {
    let (iw, ih) = (img.width(), img.height());
    let mut order: Vec<&(Rect, Rgb)> = shapes
        .iter()
        .filter(|(r, _)| r.area() >= MIN_SHEET_SHAPE && r.area() < 0.9)
        .collect();
    order.sort_by(|a, b| a.0.area().total_cmp(&b.0.area()));
    if order.is_empty() {
        return None;
    }
    // Each shape's box in pixels and where its crop lands on the sheet.
    let boxes: Vec<(u32, u32, u32, u32, Rgb)> = order
        .iter()
        .map(|(r, c)| {
            let x0 = ((r.x.max(0.0) * iw as f32) as u32).min(iw - 1);
            let y0 = ((r.y.max(0.0) * ih as f32) as u32).min(ih - 1);
            let x1 = ((r.right().min(1.0) * iw as f32).ceil() as u32).clamp(x0 + 1, iw);
            let y1 = ((r.bottom().min(1.0) * ih as f32).ceil() as u32).clamp(y0 + 1, ih);
            // The shape's own edge and rounded corners are left out: Tesseract reads
            // nothing inside a frame.
            let inset = ((x1 - x0).min(y1 - y0) / 12).clamp(2, 8);
            if x1 - x0 > 2 * inset + 1 && y1 - y0 > 2 * inset + 1 {
                (x0 + inset, y0 + inset, x1 - inset, y1 - inset, *c)
            } else {
                (x0, y0, x1, y1, *c)
            }
        })
        .collect();
    let width = boxes.iter().map(|b| b.2 - b.0).max().unwrap_or(1) + 2 * SHEET_GAP;
    let height = boxes.iter().map(|b| b.3 - b.1 + SHEET_GAP).sum::<u32>() + SHEET_GAP;
    let mut sheet = image::GrayImage::from_pixel(width, height, image::Luma([255]));
    let mut bands = Vec::with_capacity(boxes.len());
    let mut y = SHEET_GAP;
    for &(x0, y0, x1, y1, ground) in &boxes {
        // Ink is what differs from the shape's colour, stretched so the farthest tenth of
        // the shape's pixels is black (low-contrast type still reads).
        let mut d: Vec<f32> = (y0..y1)
            .flat_map(|py| (x0..x1).map(move |px| (px, py)))
            .map(|(px, py)| dist(img.get_pixel(px, py).0, ground))
            .collect();
        let mut sorted = d.clone();
        let k = sorted.len() * 9 / 10;
        let far = *sorted.select_nth_unstable_by(k, f32::total_cmp).1;
        let far = far.max(0.08);
        let (cw, ch) = (x1 - x0, y1 - y0);
        for (i, v) in d.iter_mut().enumerate() {
            let g = 255.0 - (*v / far).min(1.0) * 255.0;
            let (px, py) = (i as u32 % cw, i as u32 / cw);
            sheet.put_pixel(SHEET_GAP + px, y + py, image::Luma([g.round() as u8]));
        }
        bands.push((y, y + ch, x0, y0));
        y += ch + SHEET_GAP;
    }
    let words = reader.read_sheet(&sheet)?;
    let mut out: Vec<PageWord> = Vec::new();
    for w in words {
        let cy = w.top + w.height / 2;
        let Some(&(b0, _, x0, y0)) = bands.iter().find(|(b0, b1, ..)| (*b0..*b1).contains(&cy))
        else {
            continue;
        };
        let w = PageWord {
            left: (w.left + x0).saturating_sub(SHEET_GAP),
            top: w.top.saturating_sub(b0) + y0,
            ..w
        };
        out = crate::ocr::merge_words(out, vec![w]);
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
/// ground than half the farthest. The ground is the median colour of a ring a quarter of
/// the box's height outside it: Tesseract's boxes are tight, and on heavy capitals
/// ("MEET" in a bold grotesque) the box's own border runs along the strokes, so its median
/// was the ink and the ink came out as the ground (and a headline's lines, told apart by
/// ink, fell into three blocks).
fn ink(img: &RgbImage, (l, t, r, b): (u32, u32, u32, u32)) -> Rgb {
    let pad = (b.saturating_sub(t) / 4).max(2);
    let (l, t) = (l.saturating_sub(pad), t.saturating_sub(pad));
    let (r, b) = ((r + pad).min(img.width()), (b + pad).min(img.height()));
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
mod tests;
