//! Layer effects (shadows, blur) and BACKGROUND_BLUR on the CPU.

use tiny_skia::{Mask, Pixmap};

use super::{Target, blit, blur, clip_mask, sk_color};
use crate::budget::Deadline;
use crate::scene::{Clip, LayerEffect};
use crate::tree::Color;

pub(super) fn backdrop_blur(
    parent: &mut Target,
    b: tiny_skia::IntRect,
    sigma: f32,
    shape: &Clip,
    deadline: &Deadline,
) {
    let (rx, ry) = (b.x() - parent.x, b.y() - parent.y);
    let Some(rect) = tiny_skia::IntRect::from_xywh(rx, ry, b.width(), b.height()) else {
        return;
    };
    let Some(mut region) = parent.pixmap.clone_rect(rect) else {
        return;
    };
    let (w, h) = (region.width() as usize, region.height() as usize);
    blur::gaussian_fast(region.data_mut(), w, h, 4, sigma, deadline);
    let mask = clip_mask(shape, region.width(), region.height(), b.x(), b.y());
    blit::blend_over(
        &mut parent.pixmap,
        &region,
        rx,
        ry,
        1.0,
        mask.as_ref().map(Mask::data),
    );
}

fn alpha_of(p: &Pixmap) -> Vec<u8> {
    p.data().chunks_exact(4).map(|px| px[3]).collect()
}

/// Coloured shadow pixmap from an alpha plane.
fn shadow(alpha: &[u8], w: u32, h: u32, color: Color) -> Option<Pixmap> {
    let c = sk_color(color).premultiply().to_color_u8();
    let mut p = super::pool::pixmap(w, h)?;
    for (px, &a) in p.data_mut().chunks_exact_mut(4).zip(alpha) {
        let a = u16::from(a);
        px[0] = ((u16::from(c.red()) * a + 127) / 255) as u8;
        px[1] = ((u16::from(c.green()) * a + 127) / 255) as u8;
        px[2] = ((u16::from(c.blue()) * a + 127) / 255) as u8;
        px[3] = ((u16::from(c.alpha()) * a + 127) / 255) as u8;
    }
    Some(p)
}

/// Applies `effects` to a layer's pixels. Past `deadline` it returns what it has (the
/// caller stops the render).
pub(super) fn apply_effects(
    content: Pixmap,
    effects: &[LayerEffect],
    deadline: &Deadline,
) -> Pixmap {
    let (w, h) = (content.width(), content.height());
    let (wu, hu) = (w as usize, h as usize);
    let mut content = content;
    for e in effects {
        if let LayerEffect::Blur { sigma } = e {
            blur::gaussian_fast(content.data_mut(), wu, hu, 4, *sigma, deadline);
        }
    }
    if deadline.passed() {
        return content;
    }
    let drops: Vec<_> = effects
        .iter()
        .filter(|e| matches!(e, LayerEffect::DropShadow { .. }))
        .collect();
    let inners: Vec<_> = effects
        .iter()
        .filter(|e| matches!(e, LayerEffect::InnerShadow { .. }))
        .collect();
    if drops.is_empty() && inners.is_empty() {
        return content;
    }
    let alpha = alpha_of(&content);
    let has_drops = !drops.is_empty();
    let (mut out, content) = match super::pool::pixmap(w, h) {
        Some(p) if has_drops => (p, Some(content)),
        _ => (content, None),
    };
    for e in &drops {
        if let LayerEffect::DropShadow {
            color,
            dx,
            dy,
            sigma,
            spread,
        } = e
        {
            let mut a = alpha.clone();
            if deadline.passed() {
                break;
            }
            blur::spread(&mut a, wu, hu, *spread, deadline);
            blur::gaussian_fast(&mut a, wu, hu, 1, *sigma, deadline);
            // Whole-pixel offsets: invisible on a blurred shadow, and a plain blend.
            blit::blend_color(
                &mut out,
                &a,
                w,
                dx.round() as i32,
                dy.round() as i32,
                *color,
            );
        }
    }
    if deadline.passed() {
        if let Some(content) = content {
            super::pool::give(content.take());
        }
        return out;
    }
    if let Some(content) = content {
        blit::blend_over(&mut out, &content, 0, 0, 1.0, None);
        super::pool::give(content.take());
    }
    for e in &inners {
        if let LayerEffect::InnerShadow {
            color,
            dx,
            dy,
            sigma,
            spread,
        } = e
        {
            // The outside of the shape (alpha inverted; beyond the layer counts as outside),
            // moved by the offset, grown by the spread, blurred, then kept only inside.
            let (ox, oy) = (dx.round() as isize, dy.round() as isize);
            let mut inv = vec![255u8; wu * hu];
            for y in 0..hu as isize {
                let sy = y - oy;
                if sy < 0 || sy >= hu as isize {
                    continue;
                }
                for x in 0..wu as isize {
                    let sx = x - ox;
                    if sx >= 0 && sx < wu as isize {
                        inv[y as usize * wu + x as usize] =
                            255 - alpha[sy as usize * wu + sx as usize];
                    }
                }
            }
            if deadline.passed() {
                break;
            }
            blur::spread(&mut inv, wu, hu, *spread, deadline);
            blur::gaussian_fast(&mut inv, wu, hu, 1, *sigma, deadline);
            for (v, a) in inv.iter_mut().zip(&alpha) {
                *v = ((u16::from(*v) * u16::from(*a) + 127) / 255) as u8;
            }
            if let Some(s) = shadow(&inv, w, h, *color) {
                blit::blend_over(&mut out, &s, 0, 0, 1.0, None);
                super::pool::give(s.take());
            }
        }
    }
    out
}
