//! PNG encoding: Paeth filtering, our own DEFLATE writer ([`deflate`]: a Huffman code fitted
//! to each strip, zero runs as matches), an sRGB chunk, and deterministic output (same
//! pixels → same bytes, whatever the number of threads). Opaque images are written as RGB.
//!
//! The image is filtered and compressed as strips of about 1 MiB of filtered rows on
//! rayon's pool, each strip one DEFLATE block that ends on a byte boundary, and the blocks
//! are concatenated into one zlib stream (the Adler-32s of the strips combine
//! arithmetically): a 4K ad's encode runs on every core.
//!
//! Rejected alternatives: fdeflate's `Compressor` per strip (what this replaced, issue 42:
//! one fixed Huffman code for every image and a `Write` call every 64 bits; the typical 4K
//! ad encoded at about half this speed and 4 % larger), the png crate's `Compression::Fast`
//! (fdeflate on one thread after five filters per row), and LZ77 string matching (zlib
//! level 1 is several times slower, and a filtered ad is mostly small residuals and zero
//! runs, which need no matches beyond distance 1).

mod deflate;

use std::io::Write;

use rayon::prelude::*;
use tiny_skia::Pixmap;

use crate::Error;

/// Filtered bytes per strip (rounded to whole rows). Fixed, not derived from the thread
/// count, so the bytes of a PNG never depend on the machine that wrote it. Large enough that
/// a strip's own Huffman code and table of literal pairs ([`deflate`]) cost little beside
/// its data.
const STRIP_BYTES: usize = 1 << 20;

/// One strip's compressed block, its data's Adler-32 and the length of that data.
struct Strip {
    block: Vec<u8>,
    adler: u32,
    len: usize,
}

thread_local! {
    /// Filtered rows and the compressed block of the strip being encoded, reused per
    /// thread: a fresh buffer per strip costs more in page faults than filtering it.
    static SCRATCH: std::cell::RefCell<(Vec<u8>, Vec<u8>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Encodes a premultiplied pixmap as an sRGB-tagged 8-bit PNG.
///
/// # Errors
/// [`Error::Encode`] when the image is too large for one IDAT chunk (never for the
/// renderer's canvases).
pub fn encode_png(pixmap: &Pixmap) -> Result<Vec<u8>, Error> {
    let (w, h) = (pixmap.width() as usize, pixmap.height() as usize);
    let data = pixmap.data();
    // Most ads are opaque: try RGB, each strip checking its own rows just before filtering
    // them (while they are in cache) instead of a separate pass over the whole image.
    let (strips, bpp) = match compress_strips(data, w, h, 3) {
        Some(strips) => (strips, 3),
        None => (compress_strips(data, w, h, 4).unwrap_or_default(), 4),
    };

    let size = strips.iter().map(|s| s.block.len()).sum::<usize>();
    let mut png = Vec::with_capacity(size + 128);
    png.extend_from_slice(b"\x89PNG\r\n\x1a\n");
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&(w as u32).to_be_bytes());
    ihdr.extend_from_slice(&(h as u32).to_be_bytes());
    ihdr.extend_from_slice(&[8, if bpp == 3 { 2 } else { 6 }, 0, 0, 0]);
    chunk(&mut png, b"IHDR", &ihdr)?;
    chunk(&mut png, b"sRGB", &[0])?; // rendering intent: perceptual
    // One IDAT chunk: the zlib header (deflate, 32 KiB window, no dictionary, fastest),
    // the strips' blocks in order, the Adler-32 of all the filtered data.
    let at = png.len();
    png.extend_from_slice(&[0, 0, 0, 0]);
    png.extend_from_slice(b"IDAT");
    png.extend_from_slice(&[0x78, 0x01]);
    let mut adler = 1u32;
    for s in &strips {
        png.extend_from_slice(&s.block);
        adler = adler32_combine(adler, s.adler, s.len);
    }
    png.extend_from_slice(&adler.to_be_bytes());
    let len = u32::try_from(png.len() - at - 8)
        .ok()
        .filter(|&n| n < 1 << 31)
        .ok_or_else(|| Error::Encode("image too large for one PNG chunk".to_owned()))?;
    png[at..at + 4].copy_from_slice(&len.to_be_bytes());
    let crc = crc32fast::hash(&png[at + 4..]);
    png.extend_from_slice(&crc.to_be_bytes());
    chunk(&mut png, b"IEND", &[])?;
    Ok(png)
}

/// Filters and compresses the image as strips of whole rows on rayon's pool. For `bpp` 3,
/// `None` as soon as a strip finds a pixel that is not opaque.
fn compress_strips(data: &[u8], w: usize, h: usize, bpp: usize) -> Option<Vec<Strip>> {
    let stride = w * bpp + 1;
    let rows = (STRIP_BYTES / stride).max(1);
    let strip = |first: usize| {
        let n = rows.min(h - first);
        let pixels = &data[first * w * 4..(first + n) * w * 4];
        if bpp == 3
            && !pixels
                .chunks(4096)
                .all(|b| b.chunks_exact(4).fold(255u8, |m, p| m & p[3]) == 255)
        {
            return None;
        }
        SCRATCH.with_borrow_mut(|(filtered, out)| {
            Some(compress_rows(
                data,
                w,
                bpp,
                first,
                n,
                first + n == h,
                filtered,
                out,
            ))
        })
    };
    let firsts: Vec<usize> = (0..h).step_by(rows).collect();
    if firsts.len() > 1 {
        firsts.into_par_iter().map(strip).collect()
    } else {
        // A small image (a thumbnail, a preview) is one strip: no hand-off to the pool.
        firsts.into_iter().map(strip).collect()
    }
}

/// Paeth-filters rows `first..first + n` into `filtered` and compresses them as one block
/// (the stream's last when `last`) through `out`; both buffers are resized as needed and
/// every byte used is overwritten.
#[expect(
    clippy::too_many_arguments,
    reason = "one strip's geometry and its two buffers"
)]
fn compress_rows(
    data: &[u8],
    w: usize,
    bpp: usize,
    first: usize,
    n: usize,
    last: bool,
    filtered: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Strip {
    filtered.resize(n * (w * bpp + 1), 0);
    filter_rows(data, w, bpp, first, filtered);
    let mut adler = simd_adler32::Adler32::new();
    adler.write(filtered);
    out.resize(out.len().max(deflate::bound(filtered.len())), 0);
    let len = deflate::compress(filtered, last, out);
    Strip {
        block: out[..len].to_vec(),
        adler: adler.finish(),
        len: filtered.len(),
    }
}

/// The Adler-32 of `A ‖ B` from `a = adler32(A)`, `b = adler32(B)` and `len = |B|`. With
/// `s1` = 1 + the sum of the bytes and `s2` = the sum of the successive `s1`s (mod 65521):
/// B's bytes start from `s1(A)` instead of 1, so `s1 = s1(A) + s1(B) − 1` and each of B's
/// `len` running sums grows by `s1(A) − 1`: `s2 = s2(A) + s2(B) + len·(s1(A) − 1)`.
fn adler32_combine(a: u32, b: u32, len: usize) -> u32 {
    const M: u64 = 65521;
    let (a1, a2) = (u64::from(a & 0xffff), u64::from(a >> 16));
    let (b1, b2) = (u64::from(b & 0xffff), u64::from(b >> 16));
    let n = len as u64 % M;
    let s1 = (a1 + b1 + M - 1) % M;
    let s2 = (a2 + b2 + n * ((a1 + M - 1) % M)) % M;
    ((s2 << 16) | s1) as u32
}

/// Encodes a premultiplied pixmap as a lossless WebP (RGB when opaque, else RGBA), for
/// clients that ask for WebP (previews); the same pixels as [`encode_png`], usually fewer
/// bytes. Lossless because a preview must show exactly what the PNG would.
///
/// # Errors
/// [`Error::Encode`] when the encoder fails.
pub fn encode_webp(pixmap: &Pixmap) -> Result<Vec<u8>, Error> {
    let (w, h) = (pixmap.width(), pixmap.height());
    let data = pixmap.data();
    let opaque = data.chunks_exact(4).all(|p| p[3] == 255);
    let bpp = if opaque { 3 } else { 4 };
    let mut straight = vec![0u8; w as usize * h as usize * bpp];
    straight_row(data, &mut straight, bpp);
    let color = if opaque {
        image::ExtendedColorType::Rgb8
    } else {
        image::ExtendedColorType::Rgba8
    };
    let mut out = Vec::new();
    image::codecs::webp::WebPEncoder::new_lossless(&mut out)
        .encode(&straight, w, h, color)
        .map_err(|e| Error::Encode(e.to_string()))?;
    Ok(out)
}

fn enc(e: std::io::Error) -> Error {
    Error::Encode(e.to_string())
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], body: &[u8]) -> Result<(), Error> {
    let len = u32::try_from(body.len()).map_err(|_| Error::Encode("chunk too large".to_owned()))?;
    out.write_all(&len.to_be_bytes()).map_err(enc)?;
    let mut crc = crc32fast::Hasher::new();
    crc.update(kind);
    crc.update(body);
    out.extend_from_slice(kind);
    out.extend_from_slice(body);
    out.extend_from_slice(&crc.finalize().to_be_bytes());
    Ok(())
}

/// Converts one premultiplied RGBA row to straight RGB (`bpp` 3, opaque) or RGBA.
fn straight_row(row: &[u8], out: &mut [u8], bpp: usize) {
    if bpp == 3 {
        // Two pixels at a time as one 64-bit word: their six colour bytes are moved
        // together and stored as eight, the two extra (zero) bytes overwritten by the next
        // store. The baseline x86-64 target has no byte shuffle, and byte-by-byte copies
        // were most of the filter's time.
        let n = (row.len() / 4).min(out.len() / 3);
        // Pairs whose 8-byte store stays inside `out`.
        let pairs = (n / 2).min(out.len().saturating_sub(2) / 6);
        for (i, p) in row.chunks_exact(8).take(pairs).enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(p);
            let x = u64::from_le_bytes(b);
            let y = (x & 0x00ff_ffff) | ((x >> 8) & 0xffff_ff00_0000);
            out[6 * i..6 * i + 8].copy_from_slice(&y.to_le_bytes());
        }
        for i in 2 * pairs..n {
            out[3 * i..3 * i + 3].copy_from_slice(&row[4 * i..4 * i + 3]);
        }
        return;
    }
    for (p, o) in row.chunks_exact(4).zip(out.chunks_exact_mut(4)) {
        let a = u32::from(p[3]);
        if a == 255 || a == 0 {
            o[0] = p[0];
            o[1] = p[1];
            o[2] = p[2];
        } else {
            o[0] = ((u32::from(p[0]) * 255 + a / 2) / a).min(255) as u8;
            o[1] = ((u32::from(p[1]) * 255 + a / 2) / a).min(255) as u8;
            o[2] = ((u32::from(p[2]) * 255 + a / 2) / a).min(255) as u8;
        }
        o[3] = p[3];
    }
}

#[inline(always)]
fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let (ia, ib, ic) = (i16::from(a), i16::from(b), i16::from(c));
    let pa = (ib - ic).abs();
    let pb = (ia - ic).abs();
    let pc = (ia + ib - 2 * ic).abs();
    // Written without short-circuits so the row loop vectorises.
    let bc = if pb <= pc { b } else { c };
    if (pa <= pb) & (pa <= pc) { a } else { bc }
}

/// Writes Paeth-filtered rows `first..` (as many as fit in `out`). A row equal to the one
/// above it (flat colour, most of a simple ad) filters to zeros whatever the filter (Paeth
/// predicts `b`, the byte above, when `a == c`), so it is compared, not converted and
/// filtered.
fn filter_rows(data: &[u8], w: usize, bpp: usize, first: usize, out: &mut [u8]) {
    let stride = w * bpp + 1;
    let mut prev = vec![0u8; w * bpp];
    let mut cur = vec![0u8; w * bpp];
    if first > 0 {
        straight_row(&data[(first - 1) * w * 4..first * w * 4], &mut prev, bpp);
    }
    for (k, line) in out.chunks_exact_mut(stride).enumerate() {
        let y = first + k;
        line[0] = 4; // Paeth
        let row = &data[y * w * 4..(y + 1) * w * 4];
        if y > 0 && *row == data[(y - 1) * w * 4..y * w * 4] {
            // `prev` (row y - 1, converted) is this row's conversion too.
            line[1..].fill(0);
            continue;
        }
        straight_row(row, &mut cur, bpp);
        let (head, tail) = line[1..].split_at_mut(bpp);
        for ((d, x), b) in head.iter_mut().zip(&cur).zip(&prev) {
            *d = x.wrapping_sub(*b);
        }
        for (((d, x), (a, b)), c) in tail
            .iter_mut()
            .zip(&cur[bpp..])
            .zip(cur.iter().zip(&prev[bpp..]))
            .zip(prev.iter())
        {
            *d = x.wrapping_sub(paeth(*a, *b, *c));
        }
        std::mem::swap(&mut prev, &mut cur);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_adler(data: &[u8]) -> u32 {
        let (mut a, mut b) = (1u32, 0u32);
        for &x in data {
            a = (a + u32::from(x)) % 65521;
            b = (b + a) % 65521;
        }
        (b << 16) | a
    }

    /// Paeth-filtered RGB rows of opaque RGBA pixels, byte by byte as the PNG
    /// specification writes the filter.
    fn naive_paeth(rgba: &[u8], w: usize) -> Vec<u8> {
        let rgb: Vec<u8> = rgba
            .chunks_exact(4)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect();
        let row = w * 3;
        let mut out = Vec::new();
        for y in 0..rgb.len() / row {
            out.push(4);
            for x in 0..row {
                let at = |dy: usize, dx: usize| {
                    if y < dy || x < dx {
                        0i16
                    } else {
                        i16::from(rgb[(y - dy) * row + x - dx])
                    }
                };
                let (a, b, c) = (at(0, 3), at(1, 0), at(1, 3));
                let p = a + b - c;
                let (pa, pb, pc) = ((p - a).abs(), (p - b).abs(), (p - c).abs());
                let pred = if pa <= pb && pa <= pc {
                    a
                } else if pb <= pc {
                    b
                } else {
                    c
                };
                out.push(rgb[y * row + x].wrapping_sub(pred as u8));
            }
        }
        out
    }

    #[test]
    fn adler32_combines_like_one_pass() {
        let data: Vec<u8> = (0..200_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for cut in [0, 1, 5551, 65_521, 131_042, 199_999, 200_000] {
            let (a, b) = data.split_at(cut);
            assert_eq!(
                adler32_combine(naive_adler(a), naive_adler(b), b.len()),
                naive_adler(&data),
                "cut at {cut}"
            );
        }
    }

    /// Many strips (well over `STRIP_BYTES` of rows), with and without alpha: the joined
    /// stream inflates (Adler-32 checked) to exactly the rows a single stream holds, decodes
    /// to the same pixels, and the bytes do not change between runs.
    #[test]
    fn strips_join_into_one_valid_stream() {
        for alpha in [false, true] {
            let (w, h) = (613u32, 2_111u32);
            let mut p = Pixmap::new(w, h).unwrap_or_else(|| unreachable!());
            for (i, px) in p.pixels_mut().iter_mut().enumerate() {
                let (x, y) = (i as u32 % w, i as u32 / w);
                // Rows 700-899 repeat row 700 (the filter's shortcut for a row equal to the
                // one above, across a strip boundary).
                let y = if (700..900).contains(&y) { 700 } else { y };
                // Flat areas (zero runs after filtering) and noise, so strips end at many
                // different bit offsets.
                let v = if (x / 97 + y / 61) % 3 == 0 {
                    200
                } else {
                    ((x * 31 + y * 17) ^ (x * y)) as u8
                };
                let a = if alpha { ((x + y) % 256) as u8 } else { 255 };
                *px = tiny_skia::ColorU8::from_rgba(v, v.wrapping_mul(3), 255 - v, a).premultiply();
            }
            let bytes = encode_png(&p).unwrap_or_default();
            assert_eq!(bytes, encode_png(&p).unwrap_or_default(), "deterministic");
            let bpp = if alpha { 4 } else { 3 };
            let stride = w as usize * bpp + 1;
            assert!(h as usize * stride > 3 * STRIP_BYTES, "several strips");
            // The IDAT payload (one chunk at this size) after the 8-byte signature, IHDR
            // (25 bytes) and sRGB (13 bytes).
            let at = 8 + 25 + 13;
            let len = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap_or_default());
            assert_eq!(&bytes[at + 4..at + 8], b"IDAT");
            let idat = &bytes[at + 8..at + 8 + len as usize];
            let rows = fdeflate::decompress_to_vec(idat).unwrap_or_default();
            let mut expected = vec![0u8; h as usize * stride];
            filter_rows(p.data(), w as usize, bpp, 0, &mut expected);
            assert!(rows == expected, "inflated rows differ (alpha {alpha})");
            if !alpha {
                assert!(
                    rows == naive_paeth(p.data(), w as usize),
                    "filtered as Paeth"
                );
            }
            let back = Pixmap::decode_png(&bytes).unwrap_or_else(|_| unreachable!());
            if !alpha {
                assert!(back.data() == p.data(), "opaque pixels round-trip exactly");
            }
        }
    }

    #[test]
    fn round_trips_through_a_decoder() {
        let mut p = Pixmap::new(37, 23).unwrap_or_else(|| unreachable!());
        for (i, px) in p.pixels_mut().iter_mut().enumerate() {
            let a = (i * 7 % 256) as u8;
            let v = (i * 13 % 256) as u8;
            *px = tiny_skia::ColorU8::from_rgba(v, v / 2, 255 - v, a).premultiply();
        }
        let bytes = encode_png(&p).unwrap_or_default();
        let back = Pixmap::decode_png(&bytes).unwrap_or_else(|_| unreachable!());
        for (a, b) in p.pixels().iter().zip(back.pixels()) {
            assert!(
                a.alpha() == b.alpha() && a.red().abs_diff(b.red()) <= 1,
                "{a:?} {b:?}"
            );
        }
    }
}
