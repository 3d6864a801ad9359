//! Step 2: the background, from the border ring (solid, gradient or photo), and the
//! ground colour it predicts at each pixel.

use super::Grid;
use super::colour::{dist, mean_colour, median_colour};
use crate::blueprint::{Background, Rgb, mix};

impl Grid {
    /// The ground colour expected at a pixel.
    pub(super) fn ground(&self, bg: &Background, x: usize, y: usize) -> Rgb {
        match bg {
            Background::Solid { color } | Background::Photo { mean: color } => *color,
            Background::Gradient { from, to, vertical } => {
                let t = if *vertical {
                    y as f32 / (self.h - 1).max(1) as f32
                } else {
                    x as f32 / (self.w - 1).max(1) as f32
                };
                mix(*from, *to, t)
            }
        }
    }

    /// The ground: solid, gradient or photo, from the border ring (see the module docs).
    pub(super) fn background(&self) -> Background {
        let (w, h) = (self.w, self.h);
        let mut ring = Vec::new();
        for y in 0..h {
            for x in 0..w {
                if x < 2 || y < 2 || x + 2 >= w || y + 2 >= h {
                    ring.push((x, y, self.at(x, y)));
                }
            }
        }
        let median = median_colour(ring.iter().map(|r| r.2));
        let near: Vec<Rgb> = ring
            .iter()
            .map(|r| r.2)
            .filter(|&c| dist(c, median) < 0.06)
            .collect();
        if near.len() as f32 >= 0.45 * ring.len() as f32 {
            // A flat ground is its colour to within JPEG's noise; the border of a dark or
            // blurred photo (a night sky, a scrim over fur) is near one colour too, but
            // spread. The colour is the near pixels' own median: where a ground meets a
            // photo on the border the ring's median is a little off both.
            let flat = median_colour(near.iter().copied());
            let exact = ring.iter().filter(|r| dist(r.2, flat) < 0.02).count();
            if exact as f32 >= 0.3 * ring.len() as f32 {
                return Background::Solid { color: median };
            }
        }
        let band = |xs: std::ops::Range<usize>, ys: std::ops::Range<usize>| {
            mean_colour(
                ys.flat_map(|y| xs.clone().map(move |x| (x, y)))
                    .map(|(x, y)| self.at(x, y)),
            )
        };
        let (top, bottom) = (band(0..w, 0..2), band(0..w, h - 2..h));
        let (left, right) = (band(0..2, 0..h), band(w - 2..w, 0..h));
        let vertical = dist(top, bottom) >= dist(left, right);
        let candidate = if vertical {
            Background::Gradient {
                from: top,
                to: bottom,
                vertical,
            }
        } else {
            Background::Gradient {
                from: left,
                to: right,
                vertical,
            }
        };
        let fits = ring
            .iter()
            .filter(|(x, y, c)| dist(*c, self.ground(&candidate, *x, *y)) < 0.06)
            .count();
        if dist(top, bottom).max(dist(left, right)) > 0.05 && fits as f32 >= 0.6 * ring.len() as f32
        {
            return candidate;
        }
        Background::Photo {
            mean: mean_colour(self.px.iter().copied()),
        }
    }
}

#[cfg(test)]
mod tests {
    use image::RgbImage;

    use super::super::analyse_rgb;
    use crate::blueprint::Background;

    #[test]
    fn gradients_and_photos_are_told_from_solid_grounds() {
        let grad = RgbImage::from_fn(200, 100, |_, y| {
            let v = (40 + y * 2) as u8;
            image::Rgb([v, 20, 120])
        });
        assert!(matches!(
            analyse_rgb(&grad).background,
            Background::Gradient { vertical: true, .. }
        ));
        let noise = RgbImage::from_fn(200, 100, |x, y| {
            let k = (x.wrapping_mul(7919) ^ y.wrapping_mul(104729)) % 251;
            image::Rgb([k as u8, (k * 3 % 251) as u8, (k * 7 % 251) as u8])
        });
        assert!(matches!(
            analyse_rgb(&noise).background,
            Background::Photo { .. }
        ));
        // A dark photo: every pixel within a few shades of one colour, few of them on it.
        let dark = RgbImage::from_fn(200, 100, |x, y| {
            let k = (x.wrapping_mul(7919) ^ y.wrapping_mul(104729)) % 41;
            image::Rgb([20 + k as u8, 18 + k as u8, 30 + k as u8])
        });
        assert!(matches!(
            analyse_rgb(&dark).background,
            Background::Photo { .. }
        ));
        // A flat ground with JPEG's noise on it stays solid.
        let flat = RgbImage::from_fn(200, 100, |x, y| {
            let k = (x.wrapping_mul(7919) ^ y.wrapping_mul(104729)) % 5;
            image::Rgb([200 + k as u8, 120 + k as u8, 60 + k as u8])
        });
        assert!(matches!(
            analyse_rgb(&flat).background,
            Background::Solid { .. }
        ));
    }
}
