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
//! Most of a read's time is Tesseract loading its model (about 120 ms of the 150-250 ms a
//! reference takes on one core). So [`Tesseract`] keeps one process started ahead, its model
//! loaded, waiting for its sheet on standard input: a read hands the sheet to it and starts
//! the next one, whose model loads while the rest of the ad is made. A spare that died is
//! replaced by a fresh process. It costs one idle process (about 35 MB) per worker process.
//!
//! Tesseract is an external process (hundreds of milliseconds); nothing here fails a job:
//! a missing binary, a crash or an unreadable output read as "no words".
//!
//! Rejected alternative: linking libtesseract. The command line needs no build-time
//! headers, is what the operator installs anyway, and a crash in it cannot take the worker
//! down.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

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

/// How long one Tesseract run may take before it is killed: a sheet of a reference's text
/// takes under a second; a run past this is stuck, and the analysis goes on without it.
pub const OCR_BUDGET: Duration = Duration::from_secs(30);

/// Lowest word confidence (0-100) kept from Tesseract's TSV output.
const MIN_CONFIDENCE: f32 = 40.0;

/// A Tesseract binary, with a process of it started ahead (see the module docs).
///
/// Create one per process and share it; dropping it ends the process it holds.
#[derive(Debug)]
pub struct Tesseract {
    path: PathBuf,
    /// A process waiting for its sheet on standard input, its model loaded.
    spare: Mutex<Option<Child>>,
    /// The same, thresholding by tiles ([`Threshold::Tiled`]), for the second read of a page.
    spare_tiled: Mutex<Option<Child>>,
}

/// How Tesseract turns the image into ink and ground before reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Threshold {
    /// One Otsu threshold for the whole image (Tesseract's default).
    Global,
    /// Otsu per tile (`thresholding_method=1`): light copy on a dark panel that sits on a
    /// bright photo, which one global threshold puts on the photo's side.
    Tiled,
}

impl Clone for Tesseract {
    /// The same binary, without a process started ahead.
    fn clone(&self) -> Self {
        Tesseract::new(self.path.clone())
    }
}

impl Drop for Tesseract {
    fn drop(&mut self) {
        for spare in [&mut self.spare, &mut self.spare_tiled] {
            if let Some(mut child) = spare.get_mut().ok().and_then(Option::take) {
                drop(child.stdin.take());
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

impl Tesseract {
    /// The binary at `path`.
    pub fn new(path: PathBuf) -> Self {
        Tesseract {
            path,
            spare: Mutex::new(None),
            spare_tiled: Mutex::new(None),
        }
    }

    /// Starts a process ahead, so the first read does not wait for the model to load.
    pub fn warm(self) -> Self {
        self.refill(Threshold::Global);
        self.refill(Threshold::Tiled);
        self
    }

    /// A process reading a PNG sheet from standard input and writing TSV (one thread:
    /// workers already run jobs side by side, and OpenMP's threads only contend for the
    /// same cores; 747 against 862 ms median per reference on 2).
    fn spawn(&self, threshold: Threshold) -> Option<Child> {
        let method = match threshold {
            Threshold::Global => "thresholding_method=0",
            Threshold::Tiled => "thresholding_method=1",
        };
        Command::new(&self.path)
            .args([
                "stdin", "stdout", "--psm", "11", "-l", "eng", "-c", method, "tsv",
            ])
            .env("OMP_THREAD_LIMIT", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()
    }

    fn spare(&self, threshold: Threshold) -> &Mutex<Option<Child>> {
        match threshold {
            Threshold::Global => &self.spare,
            Threshold::Tiled => &self.spare_tiled,
        }
    }

    /// Starts the next process ahead, unless one is waiting.
    fn refill(&self, threshold: Threshold) {
        if let Ok(mut spare) = self.spare(threshold).lock()
            && spare.is_none()
        {
            *spare = self.spawn(threshold);
        }
    }

    /// Reads `png` with the process waiting ahead (else a fresh one), and starts the next.
    fn read(&self, png: &[u8], threshold: Threshold) -> Option<String> {
        let waiting = self.spare(threshold).lock().ok().and_then(|mut s| s.take());
        self.refill(threshold);
        match waiting.and_then(|child| Self::run(child, png)) {
            Some(tsv) => Some(tsv),
            None => Self::run(self.spawn(threshold)?, png),
        }
    }

    /// Hands `png` to `child` and reads its TSV; `None` when it failed (a spare that died)
    /// or ran past [`OCR_BUDGET`] (it is killed then: a reference's analysis goes on
    /// without the words, as when Tesseract is not installed).
    fn run(mut child: Child, png: &[u8]) -> Option<String> {
        let deadline = Instant::now() + OCR_BUDGET;
        let mut stdout = child.stdout.take()?;
        let reader = std::thread::spawn(move || {
            let mut out = Vec::new();
            stdout.read_to_end(&mut out).map(|_| out)
        });
        let written = child
            .stdin
            .take()
            .is_some_and(|mut stdin| stdin.write_all(png).is_ok());
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                _ => {
                    tracing::warn!(
                        budget_s = OCR_BUDGET.as_secs(),
                        "tesseract ran past its budget and was stopped; the reference is read without its words"
                    );
                    let _ = child.kill();
                    let _ = child.wait();
                    return None;
                }
            }
        };
        let out = reader.join().ok()?.ok()?;
        (written && status.success()).then(|| String::from_utf8_lossy(&out).into_owned())
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
        let mut png = std::io::Cursor::new(Vec::new());
        sheet.write_to(&mut png, image::ImageFormat::Png).ok()?;
        let png = png.into_inner();
        let tsv = self.read(&png, Threshold::Global)?;
        Some(assign_words(&tsv, &bands))
    }

    /// Reads a whole image (sparse text): its confident words with their boxes in the
    /// image's pixels. `None` when Tesseract could not run (or ran past [`OCR_BUDGET`]).
    ///
    /// The image is read twice, side by side: with one global threshold and with a
    /// threshold per tile ([`Threshold`]), and the two sets of words are merged
    /// ([`merge_words`]). The tiled read is the slow one (its time grows faster than the
    /// pixels: 1.41 s against 0.43 s global on a 2160 px page) and it is the read that keeps
    /// display type, which Tesseract loses when a page is read at twice its size, so it
    /// reads the image scaled to [`TILED_EDGE`] (about a 1080 px reference's own size). On
    /// 24 references of the corpus's development split, tiled time 1.41 s at 2x, 0.34 s at
    /// 1x.
    pub fn read_page(&self, image: &image::RgbImage) -> Option<Vec<PageWord>> {
        let png = |img: &image::RgbImage| {
            let mut png = std::io::Cursor::new(Vec::new());
            img.write_to(&mut png, image::ImageFormat::Png)
                .ok()
                .map(|()| png.into_inner())
        };
        let long = image.width().max(image.height());
        let k = (TILED_EDGE as f32 / long.max(1) as f32).min(1.0);
        // The page's PNG, encoded once; the tiled read gets its own only when it is smaller.
        let full = png(image)?;
        let (global, tiled) = std::thread::scope(|s| {
            let tiled = s.spawn(|| {
                let small = (k < 1.0).then(|| {
                    image::imageops::resize(
                        image,
                        ((image.width() as f32 * k).round() as u32).max(1),
                        ((image.height() as f32 * k).round() as u32).max(1),
                        image::imageops::FilterType::Triangle,
                    )
                });
                let owned;
                let sheet: &[u8] = match &small {
                    Some(small) => {
                        owned = png(small)?;
                        &owned
                    }
                    None => &full,
                };
                let words = page_words(&self.read(sheet, Threshold::Tiled)?);
                Some(
                    words
                        .into_iter()
                        .map(|w| w.scaled(1.0 / k))
                        .collect::<Vec<_>>(),
                )
            });
            let global = self.read(&full, Threshold::Global);
            (global, tiled.join().ok().flatten())
        });
        match (global, tiled) {
            (None, None) => None,
            (g, t) => Some(merge_words(
                g.as_deref().map(page_words).unwrap_or_default(),
                t.unwrap_or_default(),
            )),
        }
    }
}

/// Longest edge of the image the tiled read ([`Threshold::Tiled`]) sees, in pixels (see
/// [`Tesseract::read_page`]). At 1620 (1.5x a 1080 px reference) an all-caps headline in
/// 90 px type read as "BIT".
const TILED_EDGE: u32 = 1200;

/// One word Tesseract read on a whole image, with its box in the image's pixels and its
/// confidence (0-100).
#[derive(Debug, Clone, PartialEq)]
pub struct PageWord {
    pub left: u32,
    pub top: u32,
    pub width: u32,
    pub height: u32,
    pub conf: f32,
    pub text: String,
}

impl PageWord {
    /// Right edge.
    pub fn right(&self) -> u32 {
        self.left + self.width
    }
    /// Bottom edge.
    pub fn bottom(&self) -> u32 {
        self.top + self.height
    }

    /// The word with its box scaled by `k` (a read of a scaled image, in the image's own
    /// pixels).
    fn scaled(self, k: f32) -> Self {
        let at = |v: u32| (v as f32 * k).round() as u32;
        PageWord {
            left: at(self.left),
            top: at(self.top),
            width: at(self.width).max(1),
            height: at(self.height).max(1),
            ..self
        }
    }
}

/// The words (TSV level 5 rows) of a TSV output with a confidence of at least
/// [`MIN_CONFIDENCE`] and some text, in the order Tesseract wrote them.
pub fn page_words(tsv: &str) -> Vec<PageWord> {
    tsv.lines()
        .skip(1)
        .filter_map(|row| {
            let cols: Vec<&str> = row.split('\t').collect();
            if cols.len() < 12 || cols[0] != "5" {
                return None;
            }
            let num = |i: usize| cols[i].trim().parse::<f32>().unwrap_or(-1.0);
            let text = cols[11].trim();
            let conf = num(10);
            (!text.is_empty() && conf >= MIN_CONFIDENCE).then(|| PageWord {
                left: num(6).max(0.0) as u32,
                top: num(7).max(0.0) as u32,
                width: num(8).max(1.0) as u32,
                height: num(9).max(1.0) as u32,
                conf,
                text: text.to_owned(),
            })
        })
        .collect()
}

impl Tesseract {
    /// Reads a sheet already turned into dark ink on white (one global threshold): its
    /// confident words with their boxes in the sheet's pixels.
    pub fn read_sheet(&self, sheet: &GrayImage) -> Option<Vec<PageWord>> {
        let mut png = std::io::Cursor::new(Vec::new());
        sheet.write_to(&mut png, image::ImageFormat::Png).ok()?;
        let tsv = self.read(&png.into_inner(), Threshold::Global)?;
        Some(page_words(&tsv))
    }
}

/// Two reads of one page as one: a word of `second` is added where no word of `first`
/// overlaps it (either's centre inside the other's box), and replaces the words it
/// overlaps when it is more confident than each of them by 5 points and about as tall
/// (within 25 %).
pub fn merge_words(first: Vec<PageWord>, second: Vec<PageWord>) -> Vec<PageWord> {
    let inside = |a: &PageWord, b: &PageWord| {
        let (cx, cy) = (a.left + a.width / 2, a.top + a.height / 2);
        (b.left..=b.right()).contains(&cx) && (b.top..=b.bottom()).contains(&cy)
    };
    let mut out = first;
    for w in second {
        let clash: Vec<usize> = (0..out.len())
            .filter(|&i| inside(&w, &out[i]) || inside(&out[i], &w))
            .collect();
        // A surer word replaces only words of its own height: a box much taller than
        // theirs took in something else (a rule, a shadow) and would make the line tall.
        let alike = |i: usize| {
            let (a, b) = (w.height as f32, out[i].height as f32);
            a.min(b) >= 0.75 * a.max(b)
        };
        if clash.is_empty() {
            out.push(w);
        } else if clash
            .iter()
            .all(|&i| w.conf > out[i].conf + 5.0 && alike(i))
        {
            let mut k = 0;
            out.retain(|_| {
                k += 1;
                !clash.contains(&(k - 1))
            });
            out.push(w);
        }
    }
    out
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
