//! Colour arithmetic shared by the steps: distance, mean, median, mode and the colour of
//! a glyph's core.

use crate::blueprint::Rgb;

/// Euclidean RGB distance scaled to 0..1.
pub fn dist(a: Rgb, b: Rgb) -> f32 {
    let d: f32 = (0..3)
        .map(|k| (f32::from(a[k]) - f32::from(b[k])).powi(2))
        .sum();
    d.sqrt() / 441.7
}

pub(super) fn mean_colour(it: impl Iterator<Item = Rgb>) -> Rgb {
    let (mut s, mut n) = ([0u64; 3], 0u64);
    for c in it {
        for k in 0..3 {
            s[k] += u64::from(c[k]);
        }
        n += 1;
    }
    s.map(|v| (v / n.max(1)) as u8)
}

pub(super) fn median_colour(it: impl Iterator<Item = Rgb>) -> Rgb {
    let mut ch: [Vec<u8>; 3] = Default::default();
    for c in it {
        for k in 0..3 {
            ch[k].push(c[k]);
        }
    }
    let mut out = [0u8; 3];
    for k in 0..3 {
        ch[k].sort_unstable();
        out[k] = ch[k].get(ch[k].len() / 2).copied().unwrap_or(0);
    }
    out
}

/// The most common colour (16 levels a channel) and the share of pixels near it.
pub(super) fn mode_colour(it: impl Iterator<Item = Rgb> + Clone) -> (Rgb, f32) {
    let mut bins = std::collections::HashMap::<u16, (usize, [u64; 3])>::new();
    let mut n = 0usize;
    for c in it.clone() {
        let key = (u16::from(c[0] >> 4) << 8) | (u16::from(c[1] >> 4) << 4) | u16::from(c[2] >> 4);
        let e = bins.entry(key).or_insert((0, [0; 3]));
        e.0 += 1;
        for (sum, v) in e.1.iter_mut().zip(c) {
            *sum += u64::from(v);
        }
        n += 1;
    }
    let Some((_, (count, sum))) = bins
        .iter()
        .max_by(|a, b| a.1.0.cmp(&b.1.0).then(b.0.cmp(a.0)))
    else {
        return ([0, 0, 0], 0.0);
    };
    let mode = sum.map(|s| (s / (*count).max(1) as u64) as u8);
    let near = it.filter(|c| dist(*c, mode) < 0.08).count();
    (mode, near as f32 / n.max(1) as f32)
}

/// The colour of a glyph's core: the pixels farthest from its ground.
pub(super) fn core_colour(it: impl Iterator<Item = Rgb> + Clone, ground: Rgb) -> Rgb {
    let far = it.clone().map(|c| dist(c, ground)).fold(0.0f32, f32::max);
    mean_colour(it.filter(|c| dist(*c, ground) >= 0.7 * far))
}
