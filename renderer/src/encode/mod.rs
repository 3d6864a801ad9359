//! PNG encoding: fdeflate compression (the "Fast" class of the png crate), Paeth filtering,
//! an sRGB chunk, and deterministic output (same pixels → same bytes, whatever the number
//! of threads). Opaque images are written as RGB.
//!
//! The png crate's `Compression::Fast` filters every row five ways (adaptive) and compresses
//! on one thread; Paeth alone gives the same size on photos and ads. We filter ourselves and
//! compress the image as strips of about 1 MiB of filtered rows on rayon's pool, each strip a
//! complete fdeflate stream, then join the strips into one zlib stream (see [`join`]): a 4K
//! ad's encode then runs on every core instead of one.

use std::io::Write;

use rayon::prelude::*;
use tiny_skia::Pixmap;

use crate::Error;

/// Filtered bytes per strip (rounded to whole rows). Fixed, not derived from the thread
/// count, so the bytes of a PNG never depend on the machine that wrote it.
const STRIP_BYTES: usize = 1 << 20;

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Encodes a premultiplied pixmap as an sRGB-tagged 8-bit PNG.
///
/// # Errors
/// [`Error::Encode`] when compression fails (out of memory).
pub fn encode_png(pixmap: &Pixmap) -> Result<Vec<u8>, Error> {
    let (w, h) = (pixmap.width() as usize, pixmap.height() as usize);
    let data = pixmap.data();
    // Most ads are opaque: try RGB, each strip checking its own rows just before filtering
    // them (while they are in cache) instead of a separate pass over the whole image.
    let (strips, bpp) = match compress_strips(data, w, h, 3)? {
        Some(strips) => (strips, 3),
        None => (compress_strips(data, w, h, 4)?.unwrap_or_default(), 4),
    };

    let mut png = Vec::with_capacity(strips.iter().map(|(z, _)| z.len() + 5).sum::<usize>() + 128);
    png.extend_from_slice(b"\x89PNG\r\n\x1a\n");
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&(w as u32).to_be_bytes());
    ihdr.extend_from_slice(&(h as u32).to_be_bytes());
    ihdr.extend_from_slice(&[8, if bpp == 3 { 2 } else { 6 }, 0, 0, 0]);
    chunk(&mut png, b"IHDR", &ihdr)?;
    chunk(&mut png, b"sRGB", &[0])?; // rendering intent: perceptual
    // One IDAT chunk, the stream joined straight into it. Its length always fits: the
    // largest canvas (`MAX_PIXELS` RGBA) compresses to well under 2 GiB.
    let at = png.len();
    png.extend_from_slice(&[0, 0, 0, 0]);
    png.extend_from_slice(b"IDAT");
    if join(&strips, &mut png).is_none() {
        // Not expected with the pinned fdeflate (tests cover it); one serial stream is
        // always correct.
        png.truncate(at + 8);
        png.extend_from_slice(&serial(data, w, h, bpp)?);
    }
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

/// Filters and compresses the image as strips of whole rows on rayon's pool: each strip a
/// complete fdeflate stream, with the length of the filtered data it holds. For `bpp` 3,
/// `None` as soon as a strip finds a pixel that is not opaque.
fn compress_strips(
    data: &[u8],
    w: usize,
    h: usize,
    bpp: usize,
) -> Result<Option<Vec<(Vec<u8>, usize)>>, Error> {
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
            return Ok(None);
        }
        // The filtered rows go to a buffer reused per thread: a fresh megabyte per strip
        // costs more in page faults than filtering it.
        SCRATCH.with_borrow_mut(|buf| {
            Ok(Some((
                compress_rows(data, w, bpp, first, n, buf)?,
                n * stride,
            )))
        })
    };
    let firsts: Vec<usize> = (0..h).step_by(rows).collect();
    let strips: Result<Option<Vec<_>>, std::io::Error> = if firsts.len() > 1 {
        firsts.into_par_iter().map(strip).collect()
    } else {
        // A small image (a thumbnail, a preview) is one strip: no hand-off to the pool.
        firsts.into_iter().map(strip).collect()
    };
    strips.map_err(enc)
}

/// The whole image as one fdeflate stream on this thread.
fn serial(data: &[u8], w: usize, h: usize, bpp: usize) -> Result<Vec<u8>, Error> {
    compress_rows(data, w, bpp, 0, h, &mut Vec::new()).map_err(enc)
}

/// Paeth-filters rows `first..first + n` into `buf` (resized; every byte overwritten) and
/// compresses them as one complete fdeflate stream.
fn compress_rows(
    data: &[u8],
    w: usize,
    bpp: usize,
    first: usize,
    n: usize,
    buf: &mut Vec<u8>,
) -> std::io::Result<Vec<u8>> {
    buf.resize(n * (w * bpp + 1), 0);
    filter_rows(data, w, bpp, first, buf);
    let mut c = fdeflate::Compressor::new(Vec::with_capacity(buf.len() / 4))?;
    c.write_data(buf)?;
    c.finish()
}

/// Joins complete zlib streams (each with the length of the data it holds) into one zlib
/// stream of the concatenated data, appended to `out`.
///
/// fdeflate writes a stream as the zlib header, one dynamic-Huffman block whose first bit
/// (BFINAL) is set, the end-of-block code, zero bits up to a byte boundary, and the Adler-32.
/// So for every strip but the last: drop the header and checksum, clear BFINAL, and after
/// the end-of-block code put an empty stored block (three zero header bits, zero padding,
/// `LEN` 0, `NLEN` 0xFFFF), which brings the next block to a byte boundary as DEFLATE
/// requires, the way zlib's sync flush does. The padding fdeflate left is already zero
/// bits: when at least three of them follow the end-of-block code they hold the stored
/// block's header, else one more zero byte does. fdeflate's end-of-block code ends in a one
/// bit, so the padding is the zero bits above the last byte's highest one bit. The
/// checksums combine arithmetically. Appends to `out`; `None` (with `out` partly written)
/// when a strip does not have that shape.
fn join(strips: &[(Vec<u8>, usize)], out: &mut Vec<u8>) -> Option<()> {
    let header = strips.first()?.0.get(..2)?;
    out.extend_from_slice(header);
    let mut adler = 1u32;
    for (i, (z, len)) in strips.iter().enumerate() {
        if z.len() < 7 || z[..2] != *header || (z[2] & 1) != 1 {
            return None;
        }
        let body = &z[2..z.len() - 4];
        let sum = u32::from_be_bytes(z[z.len() - 4..].try_into().ok()?);
        adler = adler32_combine(adler, sum, *len);
        let start = out.len();
        out.extend_from_slice(body);
        if i + 1 == strips.len() {
            break;
        }
        out[start] &= !1; // BFINAL: more blocks follow
        let last = *body.last()?;
        if last == 0 {
            return None;
        }
        if last.leading_zeros() < 3 {
            out.push(0);
        }
        out.extend_from_slice(&[0x00, 0x00, 0xff, 0xff]);
    }
    out.extend_from_slice(&adler.to_be_bytes());
    Some(())
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
        // Four bytes per pixel, each store overlapping the next pixel's first byte, which
        // that pixel then overwrites: one load and one store a pixel instead of three of
        // each (this copy was most of the filter's time).
        let n = (row.len() / 4).min(out.len() / 3);
        if n == 0 {
            return;
        }
        for (i, p) in row.chunks_exact(4).take(n - 1).enumerate() {
            out[3 * i..3 * i + 4].copy_from_slice(p);
        }
        out[3 * (n - 1)..3 * n].copy_from_slice(&row[4 * (n - 1)..4 * (n - 1) + 3]);
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

/// Writes Paeth-filtered rows `first..` (as many as fit in `out`).
fn filter_rows(data: &[u8], w: usize, bpp: usize, first: usize, out: &mut [u8]) {
    let stride = w * bpp + 1;
    let mut prev = vec![0u8; w * bpp];
    let mut cur = vec![0u8; w * bpp];
    if first > 0 {
        straight_row(&data[(first - 1) * w * 4..first * w * 4], &mut prev, bpp);
    }
    for (k, line) in out.chunks_exact_mut(stride).enumerate() {
        let y = first + k;
        straight_row(&data[y * w * 4..(y + 1) * w * 4], &mut cur, bpp);
        line[0] = 4; // Paeth
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

    /// Strips of many lengths, so the end-of-block code ends at every bit offset of its byte
    /// (each padding width 0..=7 is seen): the joined stream inflates to the concatenation.
    #[test]
    fn join_handles_every_padding_width() {
        let mut strips = Vec::new();
        let mut all = Vec::new();
        let mut seen = [false; 8];
        for n in 1..400usize {
            let piece: Vec<u8> = (0..n * 7)
                .map(|i| if i % 11 < 4 { 0 } else { (i * n % 251) as u8 })
                .collect();
            let mut c = fdeflate::Compressor::new(Vec::new()).unwrap_or_else(|_| unreachable!());
            c.write_data(&piece).unwrap_or_else(|_| unreachable!());
            let z = c.finish().unwrap_or_default();
            seen[z[z.len() - 5].leading_zeros() as usize] = true;
            all.extend_from_slice(&piece);
            strips.push((z, piece.len()));
        }
        assert_eq!(seen, [true; 8], "every padding width occurs");
        let mut joined = Vec::new();
        assert!(join(&strips, &mut joined).is_some());
        assert!(fdeflate::decompress_to_vec(&joined).unwrap_or_default() == all);
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
