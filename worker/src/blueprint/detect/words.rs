//! Step 5b: the words of each block, read from the full-size reference. Each block is cut
//! out (a little air around it), turned into dark ink on white from its own two colours
//! (the block's ink and the median of the crop's border), scaled so one line is
//! [`SHEET_LINE_PX`] tall, and handed to the [`WordReader`] with the others in one call.

use image::{GrayImage, Luma, RgbImage};

use super::colour::dist;
use crate::blueprint::{Rgb, TextBlock};
use crate::ocr::SHEET_LINE_PX;

/// Reads the words of text crops (dark ink on white, one line [`SHEET_LINE_PX`] tall):
/// per crop, its lines. `None` when nothing could be read (no reader, a failed run).
/// [`crate::ocr::Tesseract`] implements it; tests may give canned words.
pub trait WordReader: Send + Sync {
    /// Per crop, its lines of words.
    fn read_crops(&self, crops: &[GrayImage]) -> Option<Vec<Vec<String>>>;

    /// The confident words of the whole image with their boxes, for the text the shapes
    /// miss ([`super::page`]); `None` (the default) when this reader does not read pages.
    fn read_page(&self, _image: &RgbImage) -> Option<Vec<crate::ocr::PageWord>> {
        None
    }

    /// The confident words of a sheet of dark ink on white, with their boxes in the
    /// sheet's pixels ([`super::page`]: the reference's panels and buttons, each turned
    /// into ink on white from its own colour); `None` (the default) when this reader does
    /// not read sheets.
    fn read_sheet(&self, _sheet: &GrayImage) -> Option<Vec<crate::ocr::PageWord>> {
        None
    }
}

impl WordReader for crate::ocr::Tesseract {
    fn read_crops(&self, crops: &[GrayImage]) -> Option<Vec<Vec<String>>> {
        crate::ocr::Tesseract::read_crops(self, crops)
    }

    fn read_page(&self, image: &RgbImage) -> Option<Vec<crate::ocr::PageWord>> {
        crate::ocr::Tesseract::read_page(self, image)
    }

    fn read_sheet(&self, sheet: &GrayImage) -> Option<Vec<crate::ocr::PageWord>> {
        crate::ocr::Tesseract::read_sheet(self, sheet)
    }
}

/// Widest crop on the sheet, in pixels (a very long line is scaled down to it).
const MAX_CROP_WIDTH: u32 = 2400;

/// The words of every block (`None` for a block where nothing was read); `None` when the
/// reader could not run.
pub(super) fn read_blocks(
    img: &RgbImage,
    blocks: &[&TextBlock],
    reader: &dyn WordReader,
) -> Option<Vec<Option<String>>> {
    let crops: Vec<GrayImage> = blocks.iter().map(|b| crop(img, b)).collect();
    let read = reader.read_crops(&crops)?;
    Some(
        (0..blocks.len())
            .map(|i| {
                let lines: Vec<String> = read
                    .get(i)
                    .into_iter()
                    .flatten()
                    .map(|l| l.trim().to_owned())
                    .filter(|l| {
                        l.chars()
                            .any(|c| c.is_alphanumeric() || "★$€£%".contains(c))
                    })
                    .collect();
                (!lines.is_empty()).then(|| lines.join("\n"))
            })
            .collect(),
    )
}

/// The block cut out of the full-size image as dark ink on white.
fn crop(img: &RgbImage, b: &TextBlock) -> GrayImage {
    let (w, h) = (img.width() as f32, img.height() as f32);
    let pad_y = b.line_height * 0.45;
    let pad_x = b.line_height * 0.6 * h / w;
    let x0 = ((b.rect.x - pad_x).max(0.0) * w) as u32;
    let y0 = ((b.rect.y - pad_y).max(0.0) * h) as u32;
    let x1 = (((b.rect.right() + pad_x).min(1.0)) * w).ceil() as u32;
    let y1 = (((b.rect.bottom() + pad_y).min(1.0)) * h).ceil() as u32;
    let (cw, ch) = (x1.saturating_sub(x0).max(1), y1.saturating_sub(y0).max(1));
    let view = image::imageops::crop_imm(
        img,
        x0.min(img.width() - 1),
        y0.min(img.height() - 1),
        cw,
        ch,
    )
    .to_image();
    let ground = border_median(&view);
    let ink = b.color;
    let gray = GrayImage::from_fn(view.width(), view.height(), |x, y| {
        let p = view.get_pixel(x, y).0;
        // 0 on the ink, 255 on the ground, proportionally between (anti-aliased edges).
        let (di, dg) = (dist(p, ink), dist(p, ground));
        Luma([(di / (di + dg).max(1e-4) * 255.0).round() as u8])
    });
    let line_px = (b.line_height * h).max(1.0);
    let mut scale = SHEET_LINE_PX as f32 / line_px;
    if gray.width() as f32 * scale > MAX_CROP_WIDTH as f32 {
        scale = MAX_CROP_WIDTH as f32 / gray.width() as f32;
    }
    let (nw, nh) = (
        ((gray.width() as f32 * scale).round() as u32).max(1),
        ((gray.height() as f32 * scale).round() as u32).max(1),
    );
    image::imageops::resize(&gray, nw, nh, image::imageops::FilterType::Triangle)
}

/// The median colour of an image's border ring (its ground).
fn border_median(img: &RgbImage) -> Rgb {
    let (w, h) = img.dimensions();
    let mut ring: Vec<Rgb> = img
        .enumerate_pixels()
        .filter(|(x, y, _)| *x == 0 || *y == 0 || *x + 1 == w || *y + 1 == h)
        .map(|(_, _, p)| p.0)
        .collect();
    if ring.is_empty() {
        return [255, 255, 255];
    }
    let mut channel = |k: usize| {
        ring.sort_by_key(|c| c[k]);
        ring[ring.len() / 2][k]
    };
    [channel(0), channel(1), channel(2)]
}
