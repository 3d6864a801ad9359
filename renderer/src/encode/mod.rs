//! PNG encoding: fdeflate compression (the "Fast" class of the png crate), Paeth filtering
//! done in parallel, an sRGB chunk, and deterministic output (same pixels → same bytes).
//! Opaque images are written as RGB.
//!
//! The png crate's `Compression::Fast` filters every row five ways (adaptive) on one thread;
//! Paeth alone gives the same size on photos and ads, and filtering rows is embarrassingly
//! parallel, so we filter ourselves and hand the rows to fdeflate.

use std::io::Write;

use tiny_skia::Pixmap;

use crate::Error;

/// Encodes a premultiplied pixmap as an sRGB-tagged 8-bit PNG.
///
/// # Errors
/// [`Error::Encode`] when compression fails (out of memory).
pub fn encode_png(pixmap: &Pixmap) -> Result<Vec<u8>, Error> {
    let (w, h) = (pixmap.width() as usize, pixmap.height() as usize);
    let data = pixmap.data();
    let opaque = data.chunks_exact(4).all(|p| p[3] == 255);
    let bpp = if opaque { 3 } else { 4 };
    let stride = w * bpp + 1;
    // One thread filters blocks of rows while this one compresses the blocks already done,
    // so compression (the serial part) overlaps filtering. Blocks are small, so no
    // image-sized scratch buffer is needed.
    const BLOCK_ROWS: usize = 32;
    let mut compressor = fdeflate::Compressor::new(Vec::with_capacity(w * h)).map_err(enc)?;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(8);
    let (back_tx, back_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let result = std::thread::scope(|s| {
        s.spawn(move || {
            for first in (0..h).step_by(BLOCK_ROWS) {
                let rows = BLOCK_ROWS.min(h - first);
                let mut buf = back_rx.try_recv().unwrap_or_default();
                buf.resize(rows * stride, 0);
                filter_rows(data, w, bpp, first, &mut buf);
                if tx.send(buf).is_err() {
                    return;
                }
            }
        });
        for buf in rx {
            compressor.write_data(&buf)?;
            let _ = back_tx.send(buf);
        }
        Ok::<(), std::io::Error>(())
    });
    result.map_err(enc)?;
    let idat = compressor.finish().map_err(enc)?;

    let mut png = Vec::with_capacity(idat.len() + 128);
    png.extend_from_slice(b"\x89PNG\r\n\x1a\n");
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&(w as u32).to_be_bytes());
    ihdr.extend_from_slice(&(h as u32).to_be_bytes());
    ihdr.extend_from_slice(&[8, if opaque { 2 } else { 6 }, 0, 0, 0]);
    chunk(&mut png, b"IHDR", &ihdr)?;
    chunk(&mut png, b"sRGB", &[0])?; // rendering intent: perceptual
    for part in idat.chunks(1 << 30) {
        chunk(&mut png, b"IDAT", part)?;
    }
    chunk(&mut png, b"IEND", &[])?;
    Ok(png)
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
        for (p, o) in row.chunks_exact(4).zip(out.chunks_exact_mut(3)) {
            o[0] = p[0];
            o[1] = p[1];
            o[2] = p[2];
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
