//! What can be measured about a decoded image in words: [`describe`] (orientation,
//! dominant named colours, brightness, transparency) and [`logo_theme`] (whether a logo's
//! marks are light or dark). Both work on a small copy made with [`super::fit_within`].

use image::RgbaImage;

use super::fit_within;

const NAMED: [(&str, [u8; 3]); 15] = [
    ("black", [20, 20, 20]),
    ("white", [245, 245, 245]),
    ("gray", [128, 128, 128]),
    ("red", [200, 30, 40]),
    ("orange", [240, 140, 30]),
    ("yellow", [240, 220, 50]),
    ("green", [50, 160, 70]),
    ("teal", [30, 150, 150]),
    ("blue", [40, 90, 200]),
    ("navy", [20, 30, 80]),
    ("purple", [120, 60, 170]),
    ("pink", [235, 130, 180]),
    ("brown", [120, 75, 40]),
    ("beige", [225, 205, 170]),
    ("gold", [200, 165, 60]),
];

fn luminance(p: [u8; 3]) -> f64 {
    let lin = |c: u8| {
        let c = f64::from(c) / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * lin(p[0]) + 0.7152 * lin(p[1]) + 0.0722 * lin(p[2])
}

fn nearest_name(p: [u8; 3]) -> &'static str {
    let d = |a: [u8; 3], b: [u8; 3]| -> i32 {
        (0..3)
            .map(|i| (i32::from(a[i]) - i32::from(b[i])).pow(2))
            .sum()
    };
    NAMED
        .iter()
        .min_by_key(|(_, c)| d(p, *c))
        .map_or("gray", |(n, _)| n)
}

/// What can be measured about an image, in words: orientation, dominant named colours,
/// brightness and transparency. Used for image search and, later, embeddings.
pub fn describe(img: &RgbaImage) -> String {
    let small = fit_within(img, 48);
    let (w, h) = (img.width(), img.height());
    let orientation = if w.abs_diff(h) * 20 < w.max(h) {
        "square"
    } else if w > h {
        "landscape"
    } else {
        "portrait"
    };
    let mut counts: Vec<(&str, usize)> = Vec::new();
    let (mut lum, mut opaque, mut total) = (0.0, 0usize, 0usize);
    for px in small.pixels() {
        total += 1;
        if px[3] < 128 {
            continue;
        }
        opaque += 1;
        let rgb = [px[0], px[1], px[2]];
        lum += luminance(rgb);
        let name = nearest_name(rgb);
        match counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => *c += 1,
            None => counts.push((name, 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let colours: Vec<&str> = counts
        .iter()
        .filter(|(_, c)| *c * 10 >= opaque.max(1))
        .take(3)
        .map(|(n, _)| *n)
        .collect();
    // Perceived lightness L* (0-100) of the mean luminance.
    let mean = if opaque > 0 { lum / opaque as f64 } else { 0.0 };
    let lightness = if mean > 0.008856 {
        116.0 * mean.cbrt() - 16.0
    } else {
        903.3 * mean
    };
    let brightness = if lightness > 70.0 {
        "bright"
    } else if lightness < 30.0 {
        "dark"
    } else {
        "mid-tone"
    };
    let mut out = format!(
        "{orientation} image, mostly {}, {brightness}",
        join_words(&colours)
    );
    if opaque * 10 < total * 9 {
        out.push_str(", with transparent areas");
    }
    out
}

fn join_words(words: &[&str]) -> String {
    match words {
        [] => "no dominant colour".to_string(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `light` when the logo's marks are light (made for dark backgrounds), else `dark`.
/// The marks are the opaque pixels, or for images without transparency the pixels that
/// differ clearly from the border colour.
pub fn logo_theme(img: &RgbaImage) -> &'static str {
    let small = fit_within(img, 96);
    let (w, h) = small.dimensions();
    let has_alpha = small.pixels().any(|p| p[3] < 200);
    let border: Vec<[u8; 3]> = small
        .enumerate_pixels()
        .filter(|(x, y, _)| *x == 0 || *y == 0 || *x + 1 == w || *y + 1 == h)
        .map(|(_, _, p)| [p[0], p[1], p[2]])
        .collect();
    let n = border.len().max(1) as u32;
    let bg = [0, 1, 2].map(|i| (border.iter().map(|p| u32::from(p[i])).sum::<u32>() / n) as u8);
    let (mut lum, mut marks) = (0.0, 0usize);
    for p in small.pixels() {
        let rgb = [p[0], p[1], p[2]];
        let is_mark = if has_alpha {
            p[3] >= 128
        } else {
            (0..3)
                .map(|i| (i32::from(rgb[i]) - i32::from(bg[i])).abs())
                .sum::<i32>()
                > 90
        };
        if is_mark {
            lum += luminance(rgb);
            marks += 1;
        }
    }
    if marks > 0 && lum / marks as f64 > 0.45 {
        "light"
    } else {
        "dark"
    }
}
