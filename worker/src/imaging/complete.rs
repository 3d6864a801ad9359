//! The completeness check of [`super::probe`]: a file must reach its format's end marker
//! (see "Incomplete files" in the module docs of [`super`]). Each check walks the
//! container's own structure and reads no pixels.

use image::ImageFormat;

/// Checks that the file reaches its format's end marker (see the module docs).
pub(super) fn check_complete(format: ImageFormat, bytes: &[u8]) -> Result<(), &'static str> {
    match format {
        ImageFormat::Png => png_complete(bytes),
        ImageFormat::Jpeg => jpeg_complete(bytes),
        _ => webp_complete(bytes),
    }
}

/// Walks the chunks after the 8-byte signature until `IEND`.
fn png_complete(bytes: &[u8]) -> Result<(), &'static str> {
    let mut at = 8usize;
    loop {
        let Some(header) = bytes.get(at..at + 8) else {
            return Err("it ends before its IEND chunk");
        };
        let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let end = at
            .checked_add(12)
            .and_then(|n| n.checked_add(len))
            .ok_or("a chunk length is out of range")?;
        if end > bytes.len() {
            return Err("it ends inside a chunk");
        }
        if &header[4..8] == b"IEND" {
            return Ok(());
        }
        at = end;
    }
}

/// Walks the marker segments to the first start-of-scan, then looks for the end-of-image
/// marker in the entropy-coded data that follows (where `FF D9` can only be that marker:
/// data bytes `FF` are stuffed as `FF 00`).
fn jpeg_complete(bytes: &[u8]) -> Result<(), &'static str> {
    let mut at = 2usize;
    loop {
        let marker = match (bytes.get(at), bytes.get(at + 1)) {
            (Some(&0xFF), Some(&marker)) => marker,
            (Some(_), Some(_)) => return Err("a marker segment is corrupt"),
            _ => return Err("it ends before its image data"),
        };
        match marker {
            // Fill bytes before a marker.
            0xFF => at += 1,
            0xD9 => return Err("it ends before its image data"),
            0x01 | 0xD0..=0xD7 => at += 2,
            _ => {
                let Some(len) = bytes.get(at + 2..at + 4) else {
                    return Err("it ends inside a marker segment");
                };
                let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
                at += 2 + len;
                if at > bytes.len() {
                    return Err("it ends inside a marker segment");
                }
                if marker == 0xDA {
                    break;
                }
            }
        }
    }
    if bytes[at..].windows(2).any(|w| w == [0xFF, 0xD9]) {
        Ok(())
    } else {
        Err("it ends before its end-of-image marker")
    }
}

/// The RIFF header's length covers the whole file.
fn webp_complete(bytes: &[u8]) -> Result<(), &'static str> {
    let Some(size) = bytes.get(4..8) else {
        return Err("it ends inside its RIFF header");
    };
    let declared = u64::from(u32::from_le_bytes([size[0], size[1], size[2], size[3]])) + 8;
    if declared > bytes.len() as u64 {
        Err("it is shorter than its RIFF header declares")
    } else {
        Ok(())
    }
}
