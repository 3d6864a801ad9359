//! Unit tests of the page reader: lines and blocks from TSV rows, list items, merges.

use super::lines::{bare_price, signature};
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

/// Rows of words: `(left, top, height, words)`, each word 20 px a letter plus a space.
fn rows(rows: &[(u32, u32, u32, &str)]) -> Vec<PageWord> {
    let mut tsv = HEAD.to_owned();
    for &(left, top, h, words) in rows {
        let mut x = left;
        for w in words.split(' ') {
            let width = 20 * w.chars().count() as u32;
            tsv.push_str(&row(x, top, width, h, 95, w));
            x += width + h / 3;
        }
    }
    page_words(&tsv)
}

#[test]
fn each_list_item_is_a_block_with_its_wrapped_lines() {
    // A heading, then three numbered items 50 px apart in 35 px type (leading that joins
    // lines of one paragraph), the first wrapped onto a second line.
    let words = rows(&[
        (100, 100, 35, "Why switch"),
        (100, 160, 35, "1. Recyclable packaging"),
        (130, 205, 35, "that composts"),
        (100, 260, 35, "2. Free delivery"),
        (100, 310, 35, "3. Cancel any time"),
    ]);
    assert_eq!(
        texts(&group_blocks(group_lines(&words))),
        vec![
            vec!["Why switch"],
            vec!["1. Recyclable packaging", "that composts"],
            vec!["2. Free delivery"],
            vec!["3. Cancel any time"],
        ]
    );
}

#[test]
fn a_column_of_ticks_read_as_letters_splits_items_and_a_lone_letter_does_not() {
    // Tesseract reads a column of ✓ as "Y": two lines led by "Y" at one left edge are
    // items. "X" leading one line of a paragraph is a word.
    let words = rows(&[
        (100, 100, 30, "Y Ready in two minutes"),
        (100, 145, 30, "Y Cancel any time"),
        (100, 400, 30, "Find the spot"),
        (100, 440, 30, "X marks on the map"),
    ]);
    assert_eq!(
        texts(&group_blocks(group_lines(&words))),
        vec![
            vec!["Y Ready in two minutes"],
            vec!["Y Cancel any time"],
            vec!["Find the spot", "X marks on the map"],
        ]
    );
    // The marks are written as ticks; the paragraph's "X" stays a word.
    let mut lines = group_lines(&words);
    normalise_marks(&mut lines);
    let blocks = group_blocks(lines);
    assert_eq!(
        texts(&blocks),
        vec![
            vec!["✓ Ready in two minutes"],
            vec!["✓ Cancel any time"],
            vec!["Find the spot", "X marks on the map"],
        ]
    );
    let role = |b: &[WordLine]| {
        let t: Vec<String> = b.iter().map(WordLine::text).collect();
        crate::blueprint::words::role_of(&t.join("\n"))
    };
    assert_eq!(role(&blocks[0]), Some(TextRole::ListItem));
    assert_eq!(role(&blocks[2]), None);
}

#[test]
fn two_reads_of_a_page_merge_without_doubling_a_word() {
    let mut first = rows(&[(100, 100, 30, "Shop now")]);
    first[0].conf = 80.0; // "Shap" is surer by more than 5 points: it replaces "Shop"
    let second = rows(&[(100, 100, 30, "Shap now"), (100, 300, 30, "SALE")]);
    let merged: Vec<String> = crate::ocr::merge_words(first, second)
        .into_iter()
        .map(|w| w.text)
        .collect();
    assert_eq!(merged, vec!["now", "Shap", "SALE"]);
    // A surer word whose box is half again as tall took in something else: it stays out.
    let mut first = rows(&[(100, 100, 60, "$24")]);
    first[0].conf = 80.0;
    let mut tall = rows(&[(100, 100, 95, "$24")]);
    tall[0].conf = 96.0;
    let merged = crate::ocr::merge_words(first, tall);
    assert_eq!(merged.len(), 1);
    assert_eq!(merged[0].height, 60);
}

#[test]
fn a_crop_that_reads_the_same_words_better_replaces_the_page_read() {
    assert!(reads_alike("BOLD TASTE\nZERO", "BOLD TASTE.\nZERO."));
    assert!(reads_alike("[he one you keep", "The one you keep"));
    // Another number of lines or other words: the page's read stays.
    assert!(!reads_alike("BOLD TASTE\nZERO", "BOLD TASTE ZERO"));
    assert!(!reads_alike("Shop now", "Learn more"));
    // A tick or a bullet the page's read wrote stays, whatever the crop read for it.
    assert!(reads_alike("✓ Cancel any time", "Y Cancel any time."));
    assert_eq!(
        pick_lines(
            "✓ Cancel any time\n• Free delivery",
            "Y Cancel any time.\n¢ Free delivery"
        ),
        "✓ Cancel any time.\n• Free delivery"
    );
    assert_eq!(
        pick_lines("✗ Vet approved", "Vet approved."),
        "✗ Vet approved."
    );
    assert!(!reads_alike("• Free delivery", "¢ Learn more"));
    assert_eq!(edits(&['k', 'i', 't'], &['s', 'i', 't', 's']), 2);
    // Line by line: a line the crop lost stays as the page read it.
    assert_eq!(
        pick_lines("Everyday\nessentials.", "ryoay\nessentials"),
        "Everyday\nessentials"
    );
}

#[test]
fn a_signature_under_a_quote_is_a_block_of_its_own() {
    let words = rows(&[
        (100, 200, 40, "“Worth every"),
        (100, 250, 40, "penny.”"),
        (100, 300, 36, "— Maria Lopez"),
    ]);
    let blocks = group_blocks(group_lines(&words));
    assert_eq!(
        texts(&blocks),
        vec![vec!["“Worth every", "penny.”"], vec!["— Maria Lopez"]]
    );
    // Its dash not read: the closing quote mark still ends the quote's block.
    let words = rows(&[
        (100, 200, 40, "“Worth every penny.”"),
        (100, 250, 36, "Aiko Tanaka"),
    ]);
    assert_eq!(
        texts(&group_blocks(group_lines(&words))),
        vec![vec!["“Worth every penny.”"], vec!["Aiko Tanaka"]]
    );
    assert!(!signature("- 20% off"));
    assert!(!signature("Maria Lopez"));
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
    let kept = kept_blocks(&tsv, |b| keep_block(b, false));
    assert_eq!(texts(&kept), vec![vec!["Buy now"]]);
}

/// The blocks of a page read's TSV, its words kept as the page read keeps them, that
/// `keep` keeps.
fn kept_blocks(tsv: &str, keep: impl Fn(&[WordLine]) -> bool) -> Vec<Vec<WordLine>> {
    let words: Vec<PageWord> = page_words(tsv).into_iter().filter(keep_word).collect();
    group_blocks(group_lines(&words))
        .into_iter()
        .filter(|b| keep(b))
        .collect()
}

#[test]
fn a_figure_with_its_sign_stands_alone_on_a_photo_at_middling_confidence() {
    // Display type over a photo: "2x" read at 56, "93%" at 70; texture read as "2%" at
    // 31, a bare "4" at 70 and a "2a" at 70 (a figure needs its sign, the sign its digits).
    let tsv = [
        HEAD.to_owned(),
        row(100, 100, 160, 120, 56, "2x"),
        row(100, 400, 200, 120, 70, "93%"),
        row(600, 100, 100, 120, 31, "2%"),
        row(600, 400, 60, 120, 70, "4"),
        row(600, 700, 100, 120, 70, "2a"),
    ]
    .concat();
    let kept = kept_blocks(&tsv, |b| keep_block(b, true) && a_figure(b));
    assert_eq!(texts(&kept), vec![vec!["2x"], vec!["93%"]]);
}

#[test]
fn a_row_of_one_letter_is_no_word() {
    let words = rows(&[
        (100, 100, 40, "EEEEEEE EEEE"),
        (100, 200, 40, "Free delivery"),
    ]);
    let kept: Vec<&str> = words
        .iter()
        .filter(|w| keep_word(w))
        .map(|w| w.text.as_str())
        .collect();
    assert_eq!(kept, vec!["Free", "delivery"]);
}

#[test]
fn a_price_alone_is_a_block_and_two_prices_on_one_line_are_two() {
    // A headline, its price in the same face just below: two blocks, two roles.
    let words = rows(&[
        (100, 100, 40, "Everyday essentials"),
        (100, 150, 40, "24,00 €"),
    ]);
    let blocks = group_blocks(split_prices(group_lines(&words)));
    assert_eq!(
        texts(&blocks),
        vec![vec!["Everyday essentials"], vec!["24,00 €"]]
    );
    assert!(bare_price("from $19"));
    assert!(!bare_price("Save $6 on your first bag"));
    // A crossed-out price beside the price, read as one line with the first "$" as "s":
    // split at the gap between them, the sign restored. A line of copy with two amounts
    // stays whole.
    let mut words = rows(&[(100, 300, 40, "s39"), (190, 300, 40, "$24")]);
    words.extend(rows(&[(100, 500, 30, "Was $39, now only $24 this week")]));
    let lines: Vec<String> = split_prices(group_lines(&words))
        .iter()
        .map(WordLine::text)
        .collect();
    assert_eq!(lines, vec!["$39", "$24", "Was $39, now only $24 this week"]);
}

#[test]
fn the_ink_of_heavy_capitals_is_not_taken_for_their_ground() {
    // Black strokes that fill the word's tight box to its border, on white.
    let mut img = RgbImage::from_pixel(200, 100, image::Rgb([255, 255, 255]));
    for y in 30..70 {
        for x in 40..160 {
            if !(55..65).contains(&y) || x % 30 < 20 {
                img.put_pixel(x, y, image::Rgb([20, 20, 20]));
            }
        }
    }
    let c = ink(&img, (40, 30, 160, 70));
    assert!(c.iter().all(|&v| v < 60), "ink {c:?}");
}

/// A reader that reads every sheet as the same words (in the sheet's pixels) and counts
/// the sheets it was handed.
struct SheetReader {
    words: Vec<PageWord>,
    sheets: std::sync::Mutex<Vec<(u32, u32)>>,
}

impl WordReader for SheetReader {
    fn read_crops(&self, _crops: &[GrayImage]) -> Option<Vec<Vec<String>>> {
        None
    }

    fn read_sheet(&self, sheet: &GrayImage) -> Option<Vec<PageWord>> {
        self.sheets.lock().unwrap().push(sheet.dimensions());
        Some(self.words.clone())
    }
}

#[test]
fn the_display_read_keeps_only_display_type_in_the_page_pixels() {
    let word = |left, top, height, text: &str| PageWord {
        left,
        top,
        width: height * 2,
        height,
        conf: 90.0,
        text: text.into(),
    };
    let reader = SheetReader {
        // In the 640 px sheet: a figure 40 px tall and a line 12 px tall.
        words: vec![word(100, 100, 40, "87%"), word(100, 300, 12, "of owners")],
        sheets: Default::default(),
    };
    // A 1280 px page on a dark ground with a white figure: read at 640 px, plain and keyed.
    let mut page = RgbImage::from_pixel(1280, 1280, image::Rgb([40, 40, 40]));
    for y in 200..280 {
        for x in 200..360 {
            page.put_pixel(x, y, image::Rgb([250, 250, 250]));
        }
    }
    let words = display_words(&page, true, &reader).unwrap();
    assert_eq!(*reader.sheets.lock().unwrap(), vec![(640, 640), (640, 640)]);
    // Only the figure, once (both reads found it), its box twice the sheet's.
    assert_eq!(words.len(), 1, "{words:?}");
    let w = &words[0];
    assert_eq!(
        (w.text.as_str(), w.left, w.top, w.height),
        ("87%", 200, 200, 80)
    );
    // Not on a photo: one read, as it is. A page already small is read at its own size.
    let reader = SheetReader {
        words: reader.words,
        sheets: Default::default(),
    };
    let small = RgbImage::from_pixel(400, 500, image::Rgb([240, 240, 240]));
    let words = display_words(&small, false, &reader).unwrap();
    assert_eq!(*reader.sheets.lock().unwrap(), vec![(400, 500)]);
    assert_eq!(words.iter().map(|w| w.top).collect::<Vec<_>>(), vec![100]);
}
