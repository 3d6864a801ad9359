//! PNG encoding: fdeflate-class compression (`png::Compression::Fast`), an sRGB chunk, and
//! deterministic output (same pixels → same bytes). Opaque images are written as RGB.

use tiny_skia::Pixmap;

use crate::Error;

/// Encodes a premultiplied pixmap as an sRGB-tagged 8-bit PNG.
///
/// # Errors
/// [`Error::Encode`] when the png crate refuses the image (never for valid sizes).
pub fn encode_png(pixmap: &Pixmap) -> Result<Vec<u8>, Error> {
    let (w, h) = (pixmap.width(), pixmap.height());
    let data = pixmap.data();
    let opaque = data.chunks_exact(4).all(|p| p[3] == 255);
    let (color, raw): (png::ColorType, Vec<u8>) = if opaque {
        (
            png::ColorType::Rgb,
            data.chunks_exact(4)
                .flat_map(|p| [p[0], p[1], p[2]])
                .collect(),
        )
    } else {
        let mut v = data.to_vec();
        for p in v.chunks_exact_mut(4) {
            let a = u32::from(p[3]);
            if a != 0 && a != 255 {
                for c in &mut p[..3] {
                    *c = ((u32::from(*c) * 255 + a / 2) / a).min(255) as u8;
                }
            }
        }
        (png::ColorType::Rgba, v)
    };
    let mut out = Vec::with_capacity(raw.len() / 4);
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(color);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Fast);
        enc.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
        let mut writer = enc
            .write_header()
            .map_err(|e| Error::Encode(e.to_string()))?;
        writer
            .write_image_data(&raw)
            .map_err(|e| Error::Encode(e.to_string()))?;
        writer.finish().map_err(|e| Error::Encode(e.to_string()))?;
    }
    Ok(out)
}
