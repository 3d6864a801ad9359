//! The pixel work of the blueprint, one module per numbered step of the module above:
//!
//! 1. reducing the image to [`WORK_EDGE`] and the `Grid` the steps read (here);
//! 2. `background`: the ground model;
//! 3. `components`: the foreground's connected components, and panels on a photo ground;
//! 4. `shapes`: components into solid shapes, images and glyphs (`shadow`: the ground
//!    shadow under a cut-out product);
//! 5. `text`: glyphs into lines and blocks; `words`: the words of each block, read by a
//!    [`WordReader`] (Tesseract) from the full-size image when one is given;
//! 6. `roles`: the roles of shapes and blocks (from the layout, then from the words), the
//!    ad format, and the [`Blueprint`].
//!
//! `colour` holds the colour arithmetic they share. `Grid::analyse` runs the steps in
//! that order.

mod background;
mod colour;
mod components;
mod page;
mod roles;
mod shadow;
mod shapes;
mod text;
mod words;

use image::{RgbImage, imageops::FilterType};

pub use colour::dist;
use components::components;
pub use words::WordReader;

use super::{Background, Blueprint, DESIGN_EDGE, ImageRegion, Rect, Rgb, SolidShape, WORK_EDGE};

/// Decodes `bytes` (PNG, JPEG or WebP) and analyses it.
///
/// # Errors
/// A message when the bytes are not an image this build decodes or are too large.
pub fn analyse_image(bytes: &[u8]) -> Result<Blueprint, String> {
    analyse_image_with(bytes, None)
}

/// [`analyse_image`], reading the words of each text block with `reader`.
///
/// # Errors
/// As [`analyse_image`].
pub fn analyse_image_with(
    bytes: &[u8],
    reader: Option<&dyn WordReader>,
) -> Result<Blueprint, String> {
    let img = crate::generate::analyse::decode(bytes)?;
    Ok(analyse_rgb_with(&img.to_rgb8(), reader))
}

/// Analyses decoded pixels (roles from the layout only; no words read).
pub fn analyse_rgb(img: &RgbImage) -> Blueprint {
    analyse_rgb_with(img, None)
}

/// Analyses decoded pixels, reading the words of each text block with `reader` (from the
/// full-size `img`) when one is given.
pub fn analyse_rgb_with(img: &RgbImage, reader: Option<&dyn WordReader>) -> Blueprint {
    let (sw, sh) = img.dimensions();
    let scale = WORK_EDGE as f32 / sw.max(sh).max(1) as f32;
    let (w, h) = if scale < 1.0 {
        (
            ((sw as f32 * scale).round() as u32).max(16),
            ((sh as f32 * scale).round() as u32).max(16),
        )
    } else {
        (sw.max(16), sh.max(16))
    };
    let small = image::imageops::resize(img, w, h, FilterType::Triangle);
    let grid = Grid {
        w: w as usize,
        h: h as usize,
        px: small.pixels().map(|p| p.0).collect(),
    };
    let mut bp = grid.analyse(reader.map(|r| (img, r)));
    bp.source_width = sw;
    bp.source_height = sh;
    let ratio = sw.max(1) as f32 / sh.max(1) as f32;
    (bp.width, bp.height) = if ratio >= 1.0 {
        (
            DESIGN_EDGE as u32,
            (DESIGN_EDGE / ratio).round().max(1.0) as u32,
        )
    } else {
        (
            (DESIGN_EDGE * ratio).round().max(1.0) as u32,
            DESIGN_EDGE as u32,
        )
    };
    bp
}

/// Most marks a reference may have for its text to be read (a dense poster has a few
/// hundred letters).
pub const MAX_GLYPHS: usize = 2500;

/// A foreground pixel differs from the ground by more than this.
const FG: f32 = 0.10;

/// The working copy of the image: `w`×`h` pixels, row by row.
struct Grid {
    w: usize,
    h: usize,
    px: Vec<Rgb>,
}

/// A pixel-space box, inclusive-exclusive.
#[derive(Debug, Clone, Copy)]
struct PxBox {
    x0: usize,
    y0: usize,
    x1: usize,
    y1: usize,
}

impl PxBox {
    fn w(&self) -> usize {
        self.x1 - self.x0
    }
    fn h(&self) -> usize {
        self.y1 - self.y0
    }
    fn union(&self, o: &PxBox) -> PxBox {
        PxBox {
            x0: self.x0.min(o.x0),
            y0: self.y0.min(o.y0),
            x1: self.x1.max(o.x1),
            y1: self.y1.max(o.y1),
        }
    }
}

/// One connected component.
struct Comp {
    bbox: PxBox,
    pixels: Vec<usize>,
}

#[derive(Debug, Clone)]
struct Glyph {
    bbox: PxBox,
    count: usize,
    color: Rgb,
    /// Index of the solid shape it sits in.
    owner: Option<usize>,
}

#[derive(Debug, Clone)]
struct Line {
    bbox: PxBox,
    glyphs: Vec<Glyph>,
}

struct Found {
    shapes: Vec<(SolidShape, PxBox)>,
    images: Vec<ImageRegion>,
    glyphs: Vec<Glyph>,
}

impl Grid {
    fn at(&self, x: usize, y: usize) -> Rgb {
        self.px[y * self.w + x]
    }

    fn unit(&self, b: &PxBox) -> Rect {
        Rect {
            x: b.x0 as f32 / self.w as f32,
            y: b.y0 as f32 / self.h as f32,
            w: b.w() as f32 / self.w as f32,
            h: b.h() as f32 / self.h as f32,
        }
    }

    /// Steps 2 to 6 (see the module docs); `read` is the full-size image and the reader of
    /// its words.
    fn analyse(&self, read: Option<(&RgbImage, &dyn WordReader)>) -> Blueprint {
        let background = self.background();
        let mut found = Found {
            shapes: Vec::new(),
            images: Vec::new(),
            glyphs: Vec::new(),
        };
        match background {
            Background::Photo { .. } => self.panels(&mut found),
            _ => {
                let model = |x: usize, y: usize| self.ground(&background, x, y);
                let mask: Vec<bool> = (0..self.w * self.h)
                    .map(|i| dist(self.px[i], model(i % self.w, i / self.w)) > FG)
                    .collect();
                for c in components(&mask, self.w, self.h, None) {
                    self.classify(c, &background, &mut found);
                }
            }
        }
        found
            .images
            .sort_by(|a, b| b.rect.area().total_cmp(&a.rect.area()));
        // Texture inside a picture is not text, nor is a product's shadow.
        let images = found.images.clone();
        found.glyphs.retain(|g| {
            let at = self.unit(&g.bbox);
            g.owner.is_some()
                || !images.iter().any(|im| {
                    expand(&im.rect, 0.01).contains_center(&at)
                        || im.shadow.is_some_and(|s| s.rect.contains_center(&at))
                })
        });
        // Thousands of specks are texture or noise, not type; grouping them would also cost
        // quadratic time. Such a reference has no text blocks (and falls back).
        if found.glyphs.len() > MAX_GLYPHS {
            found.glyphs.clear();
        }
        let lines = self.lines(&found.glyphs);
        let shaped = self.blocks(lines);
        let shapes: Vec<(Rect, Rgb)> = found
            .shapes
            .iter()
            .map(|(s, _)| (s.rect, s.color))
            .collect();
        // A cut-out's words are its label; a "cut-out" as large as a quarter of the canvas
        // is more likely a photo the ground model missed, and its words are copy.
        let pictures: Vec<(Rect, bool)> = found
            .images
            .iter()
            .map(|i| (i.rect, i.cutout && i.rect.area() < 0.25))
            .collect();
        let photo_ground = matches!(background, Background::Photo { .. });
        let page = read.and_then(|(img, reader)| {
            page::page_blocks(img, reader, &shapes, &pictures, photo_ground)
        });
        let (blocks, words) = match (read, page) {
            (Some((img, reader)), Some(page)) => merge(img, reader, shaped, page),
            (Some((img, reader)), None) => {
                let refs: Vec<&crate::blueprint::TextBlock> =
                    shaped.iter().map(|b| &b.block).collect();
                let words = words::read_blocks(img, &refs, reader);
                (shaped, words)
            }
            (None, _) => (shaped, None),
        };
        self.assign(background, found, blocks, words)
    }
}

/// Tallest line (share of the canvas height) of a glyph block kept without a page block
/// over it, unless its crop reads a figure or several words.
const MAX_UNCONFIRMED_LINE: f32 = 0.15;

/// Step 5c: the blocks of the shapes and of the page's words as one list, with their words.
///
/// Tesseract's blocks come first: where it read words, its lines and blocks are the text
/// (a block of the shapes under one of them is dropped, giving its weight, from the ink's
/// density, to the page's block that covers most of it). The exception is a block of the
/// shapes that the page's blocks cover less than 60 % of while its own crop reads a third
/// more letters than theirs: the page read part of a line (a light word on a pale ground),
/// and the block of the shapes stands instead of those parts. A block of the shapes that
/// no page block covers is kept when Tesseract reads words in its crop (light type on a
/// button, a script face the page read missed) or when it is a row of stars; a block
/// whose crop reads as nothing, or as a lone mark ("X", "4"), is texture (a photo's, a
/// product's), not text.
fn merge(
    img: &RgbImage,
    reader: &dyn WordReader,
    shaped: Vec<text::RawBlock>,
    page: Vec<(text::RawBlock, String)>,
) -> (Vec<text::RawBlock>, Option<Vec<Option<String>>>) {
    let covers = |p: &Rect, s: &Rect| p.overlap(s) > 0.25 * p.area().min(s.area());
    let letters = |t: &str| t.chars().filter(|c| c.is_alphanumeric()).count();
    // Every block's crop is read on one sheet: the glyph blocks' words, and the page blocks'
    // words again (a crop, turned into ink on white and scaled to one size, keeps the
    // punctuation and small letters a read of the whole page drops).
    let refs: Vec<&crate::blueprint::TextBlock> = shaped
        .iter()
        .map(|b| &b.block)
        .chain(page.iter().map(|(b, _)| &b.block))
        .collect();
    let mut read = words::read_blocks(img, &refs, reader).unwrap_or_else(|| vec![None; refs.len()]);
    let again = read.split_off(shaped.len());
    let mut page: Vec<Option<(text::RawBlock, String)>> = page
        .into_iter()
        .zip(again)
        .map(|((b, t), c)| match c {
            Some(c) if page::reads_alike(&t, &c) => Some((b, page::pick_lines(&t, &c))),
            _ => Some((b, t)),
        })
        .collect();
    let mut kept: Vec<(text::RawBlock, Option<String>)> = Vec::new();
    for (s, w) in shaped.into_iter().zip(read) {
        let under: Vec<usize> = (0..page.len())
            .filter(|&i| {
                page[i]
                    .as_ref()
                    .is_some_and(|(p, _)| covers(&p.block.rect, &s.block.rect))
            })
            .collect();
        if under.is_empty() {
            // Type taller than 15 % of the canvas that neither page read kept is a figure
            // ("93%" in display type) or several words; one word is a shape read as letters
            // (a rocket's plume read as "Lev,").
            let tall_ok = |t: &str| {
                t.chars().any(|c| c.is_ascii_digit())
                    || t.split_whitespace()
                        .filter(|w| w.chars().filter(|c| c.is_alphabetic()).count() >= 3)
                        .count()
                        >= 2
            };
            if s.stars
                || w.as_deref().is_some_and(|t| {
                    page::says_something(t)
                        && (s.block.line_height <= MAX_UNCONFIRMED_LINE || tall_ok(t))
                })
            {
                kept.push((s, w));
            }
            continue;
        }
        let parts = |f: &dyn Fn(&(text::RawBlock, String)) -> f32| -> f32 {
            under.iter().filter_map(|&i| page[i].as_ref()).map(f).sum()
        };
        let covered = parts(&|(p, _)| p.block.rect.overlap(&s.block.rect)) / s.block.rect.area();
        let their = parts(&|(_, t)| letters(t) as f32);
        let own = w.as_deref().map_or(0, letters) as f32;
        if s.stars || (covered < 0.6 && own >= 1.3 * their) {
            // Stars the page read as words, or a line the page read in part: the block of
            // the shapes stands, the page's parts go.
            for i in under {
                page[i] = None;
            }
            kept.push((s, w));
            continue;
        }
        if let Some(&i) = under.iter().max_by(|&&a, &&b| {
            let ov = |i: usize| {
                page[i]
                    .as_ref()
                    .map_or(0.0, |(p, _)| p.block.rect.overlap(&s.block.rect))
            };
            ov(a).total_cmp(&ov(b))
        }) && let Some((p, _)) = page[i].as_mut()
        {
            p.block.weight = p.block.weight.max(s.block.weight);
        }
    }
    let (blocks, texts): (Vec<text::RawBlock>, Vec<Option<String>>) = page
        .into_iter()
        .flatten()
        .map(|(b, t)| (b, Some(t)))
        .chain(kept)
        .unzip();
    (blocks, Some(texts))
}

/// `r` grown by `by` on every side.
fn expand(r: &Rect, by: f32) -> Rect {
    Rect {
        x: r.x - by,
        y: r.y - by,
        w: r.w + 2.0 * by,
        h: r.h + 2.0 * by,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_speckled_reference_reads_no_text() {
        // White ground with a dark speck on every fourth pixel of every fourth row: tens of
        // thousands of marks.
        let img = RgbImage::from_fn(1080, 1080, |x, y| {
            if x % 4 == 0 && y % 4 == 0 && x > 20 && y > 20 && x < 1060 && y < 1060 {
                image::Rgb([0, 0, 0])
            } else {
                image::Rgb([255, 255, 255])
            }
        });
        let bp = analyse_rgb(&img);
        assert!(bp.texts.is_empty());
        assert!(bp.unusable().is_some());
    }

    /// A drawn bottle (its body, a shaded side and a label) on a coloured disc: the bottle is
    /// the cut-out picture, at its own box, and the disc behind it is not a picture.
    #[test]
    fn a_product_on_its_coloured_disc_is_the_cut_out_not_the_disc() {
        let cream = image::Rgb([250, 244, 232]);
        let disc = image::Rgb([236, 140, 90]);
        let img = RgbImage::from_fn(1080, 1080, |x, y| {
            let (fx, fy) = (x as f32, y as f32);
            let neck = (510..570).contains(&x) && (250..300).contains(&y);
            let body = (440..640).contains(&x) && (300..600).contains(&y);
            if neck || body {
                if (470..610).contains(&x) && (380..470).contains(&y) {
                    image::Rgb([240, 226, 190])
                } else if x < 480 {
                    image::Rgb([20, 34, 70])
                } else {
                    image::Rgb([40, 60, 120])
                }
            } else if (fx - 540.0).powi(2) + (fy - 420.0).powi(2) <= 230.0f32.powi(2) {
                disc
            } else {
                cream
            }
        });
        let bp = analyse_rgb(&img);
        assert_eq!(bp.images.len(), 1, "{:?}", bp.images);
        let im = &bp.images[0];
        assert!(im.cutout, "{im:?}");
        let bottle = Rect {
            x: 440.0 / 1080.0,
            y: 250.0 / 1080.0,
            w: 200.0 / 1080.0,
            h: 350.0 / 1080.0,
        };
        assert!(
            im.rect.overlap(&bottle) > 0.8 * bottle.area() && im.rect.area() < 1.3 * bottle.area(),
            "the bottle's box, not the disc's: {:?}",
            im.rect
        );
    }

    /// A photo cut to a rounded frame is a framed photo; a product that only resembles a
    /// rounded box (a jar, its lid narrower than its body) is a cut-out.
    #[test]
    fn a_framed_photo_is_cut_exactly_and_a_jar_is_not() {
        let ground = image::Rgb([246, 246, 240]);
        // Texture: a photo's many colours.
        let photo = |x: u32, y: u32| {
            let h = x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503);
            image::Rgb([
                (h % 200) as u8,
                ((h >> 8) % 180) as u8,
                ((h >> 16) % 160) as u8,
            ])
        };
        let rounded = |x: u32, y: u32, (x0, y0, x1, y1): (u32, u32, u32, u32), r: f32| {
            let (fx, fy) = (x as f32 + 0.5, y as f32 + 0.5);
            let cx = fx.clamp(x0 as f32 + r, x1 as f32 - r);
            let cy = fy.clamp(y0 as f32 + r, y1 as f32 - r);
            (x0..x1).contains(&x)
                && (y0..y1).contains(&y)
                && (fx - cx).powi(2) + (fy - cy).powi(2) <= r * r
        };
        let img = RgbImage::from_fn(1080, 1080, |x, y| {
            if rounded(x, y, (80, 120, 480, 620), 40.0) {
                photo(x, y)
            } else if rounded(x, y, (660, 300, 960, 720), 30.0)
                || rounded(x, y, (700, 240, 920, 310), 8.0)
            {
                // The jar's body and its narrower lid, shaded.
                if y < 305 {
                    image::Rgb([60, 60, 60])
                } else if x < 720 {
                    image::Rgb([150, 40, 40])
                } else {
                    image::Rgb([190, 60, 50])
                }
            } else {
                ground
            }
        });
        let bp = analyse_rgb(&img);
        assert_eq!(bp.images.len(), 2, "{:?}", bp.images);
        let (left, right) = if bp.images[0].rect.x < bp.images[1].rect.x {
            (&bp.images[0], &bp.images[1])
        } else {
            (&bp.images[1], &bp.images[0])
        };
        assert!(!left.cutout, "the framed photo: {left:?}");
        assert!(right.cutout, "the jar: {right:?}");
    }

    /// A dark tag whose bold word runs together into one white mark on the working copy
    /// is a shape holding text; a bold letter with a round counter is a glyph.
    #[test]
    fn a_tag_whose_word_is_one_mark_is_a_shape_and_a_bold_letter_is_not() {
        let light = image::Rgb([242, 242, 242]);
        let dark = image::Rgb([17, 17, 17]);
        let img = RgbImage::from_fn(1080, 1350, |x, y| {
            let tag = (90..245).contains(&x) && (1120..1200).contains(&y);
            let word = (118..216).contains(&x) && (1145..1175).contains(&y);
            // A bold "O": a dark square with a square counter.
            let letter = (600..680).contains(&x) && (1120..1200).contains(&y);
            let counter = (625..655).contains(&x) && (1145..1175).contains(&y);
            if (tag && !word) || (letter && !counter) {
                dark
            } else {
                light
            }
        });
        let bp = analyse_rgb(&img);
        assert_eq!(bp.shapes.len(), 1, "{:?}", bp.shapes);
        assert!(bp.shapes[0].rect.x < 0.25, "the tag, not the letter");
    }
}
