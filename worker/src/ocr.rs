//! Reading the words printed on a design with Tesseract (Debian's `tesseract-ocr`), when
//! the worker has it on its PATH. Two uses:
//!
//! - [`read_text`]: every word of a design, for the swipe file's caption and format
//!   ([`crate::swipe::ingest`]);
//! - [`Tesseract::read_crops`]: the words of each text block a blueprint found, for its
//!   slots' roles and the copywriter ([`crate::blueprint`]). The blocks are cut out, each
//!   turned into dark ink on white from its own two colours (a light label on a dark button
//!   reads as well as dark copy on a light ground, which one global threshold of the whole
//!   design does not give), scaled to one line height and stacked on one sheet, so Tesseract
//!   runs once per reference, not once per block.
//!
//! Tesseract is an external process (hundreds of milliseconds); nothing here fails a job:
//! a missing binary, a crash or an unreadable output read as "no words".
//!
//! Rejected alternative: linking libtesseract. The command line needs no build-time
//! headers, is what the operator installs anyway, and a crash in it cannot take the worker
//! down.

use std::path::{Path, PathBuf};

use image::{DynamicImage, GrayImage, Luma};

/// `program` on the PATH, if any.
pub fn find_on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(program))
            .find(|p| p.is_file())
    })
}

/// The words Tesseract reads on `image` (sparse text, line by line), or `None` when it fails
/// or reads nothing.
pub fn read_text(tesseract: &Path, image: &DynamicImage) -> Option<String> {
    let dir = tempfile::tempdir().ok()?;
    let path = dir.path().join("in.png");
    image.save(&path).ok()?;
    let out = std::process::Command::new(tesseract)
        .arg(&path)
        .arg("stdout")
        .args(["--psm", "11", "-l", "eng"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| l.chars().filter(|c| c.is_alphanumeric()).count() >= 2)
        .collect::<Vec<_>>()
        .join("\n");
    (!text.is_empty()).then_some(text)
}

/// Height of one text line on the sheet [`Tesseract::read_crops`] writes, in pixels:
/// Tesseract reads best with capitals 20-40 px tall.
pub const SHEET_LINE_PX: u32 = 44;

/// Air around and between the crops on the sheet.
const SHEET_GAP: u32 = 36;

/// Lowest word confidence (0-100) kept from Tesseract's TSV output.
const MIN_CONFIDENCE: f32 = 40.0;

/// A Tesseract binary.
#[derive(Debug, Clone)]
pub struct Tesseract {
    path: PathBuf,
}

impl Tesseract {
    /// The binary at `path`.
    pub fn new(path: PathBuf) -> Self {
        Tesseract { path }
    }

    /// `tesseract` on the PATH, if any.
    pub fn on_path() -> Option<Self> {
        find_on_path("tesseract").map(Self::new)
    }

    /// Reads each crop (dark ink on white, [`SHEET_LINE_PX`] per line) in one run; per crop,
    /// its lines of words (empty when nothing was read there). `None` when Tesseract could
    /// not run.
    pub fn read_crops(&self, crops: &[GrayImage]) -> Option<Vec<Vec<String>>> {
        if crops.is_empty() {
            return Some(Vec::new());
        }
        let width = crops.iter().map(GrayImage::width).max().unwrap_or(1) + 2 * SHEET_GAP;
        let height = crops.iter().map(|c| c.height() + SHEET_GAP).sum::<u32>() + SHEET_GAP;
        let mut sheet = GrayImage::from_pixel(width, height, Luma([255]));
        let mut bands = Vec::with_capacity(crops.len());
        let mut y = SHEET_GAP;
        for crop in crops {
            image::imageops::replace(&mut sheet, crop, i64::from(SHEET_GAP), i64::from(y));
            bands.push((y, y + crop.height()));
            y += crop.height() + SHEET_GAP;
        }
        let dir = tempfile::tempdir().ok()?;
        let path = dir.path().join("sheet.png");
        sheet.save(&path).ok()?;
        let out = std::process::Command::new(&self.path)
            .arg(&path)
            .arg("stdout")
            .args(["--psm", "11", "-l", "eng", "tsv"])
            // One thread: workers already run jobs side by side, and OpenMP's threads only
            // contend for the same cores (747 against 862 ms median per reference on 2).
            .env("OMP_THREAD_LIMIT", "1")
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        Some(assign_words(&String::from_utf8_lossy(&out.stdout), &bands))
    }
}

/// One word of Tesseract's TSV: where it is and what it says.
struct TsvWord {
    left: u32,
    top: u32,
    height: u32,
    text: String,
}

/// The words of a TSV output grouped per band (by the word's vertical centre), in lines
/// (words whose centres are within half a line of each other), each line left to right.
fn assign_words(tsv: &str, bands: &[(u32, u32)]) -> Vec<Vec<String>> {
    let mut per_band: Vec<Vec<TsvWord>> = bands.iter().map(|_| Vec::new()).collect();
    for row in tsv.lines().skip(1) {
        let cols: Vec<&str> = row.split('\t').collect();
        if cols.len() < 12 || cols[0] != "5" {
            continue;
        }
        let num = |i: usize| cols[i].trim().parse::<f32>().unwrap_or(-1.0);
        let text = cols[11].trim();
        if text.is_empty() || num(10) < MIN_CONFIDENCE {
            continue;
        }
        let (left, top, height) = (
            num(6).max(0.0) as u32,
            num(7).max(0.0) as u32,
            num(9).max(1.0) as u32,
        );
        let cy = top + height / 2;
        if let Some(i) = bands.iter().position(|(a, b)| cy >= *a && cy < *b) {
            per_band[i].push(TsvWord {
                left,
                top,
                height,
                text: text.to_owned(),
            });
        }
    }
    per_band
        .into_iter()
        .map(|mut words| {
            words.sort_by_key(|w| (w.top + w.height / 2, w.left));
            let mut lines: Vec<Vec<TsvWord>> = Vec::new();
            for w in words {
                let cy = w.top + w.height / 2;
                match lines.iter_mut().find(|l| {
                    let f = &l[0];
                    cy.abs_diff(f.top + f.height / 2) <= f.height.max(w.height) / 2
                }) {
                    Some(l) => l.push(w),
                    None => lines.push(vec![w]),
                }
            }
            lines
                .into_iter()
                .map(|mut l| {
                    l.sort_by_key(|w| w.left);
                    l.into_iter().map(|w| w.text).collect::<Vec<_>>().join(" ")
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsv_words_fall_into_their_bands_and_lines() {
        let tsv = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n\
                   5\t1\t1\t1\t1\t1\t40\t40\t50\t40\t96\tSummer\n\
                   5\t1\t1\t1\t1\t2\t100\t42\t50\t40\t95\tsale\n\
                   5\t1\t2\t1\t1\t1\t40\t90\t50\t40\t91\t50%\n\
                   5\t1\t3\t1\t1\t1\t40\t200\t50\t40\t12\tnoise\n\
                   5\t1\t3\t1\t1\t1\t40\t200\t50\t40\t90\tShop\n";
        let got = assign_words(tsv, &[(36, 140), (180, 260)]);
        assert_eq!(
            got,
            vec![
                vec!["Summer sale".to_owned(), "50%".to_owned()],
                vec!["Shop".to_owned()]
            ]
        );
    }
}
