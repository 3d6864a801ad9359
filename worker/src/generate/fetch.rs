//! The brand's logos measured once fetched ([`measure_logo`]). The fetcher itself is one of
//! the worker's shared services ([`crate::services::fetch`], re-exported here).

pub use crate::services::fetch::*;

use super::analyse::{Rgb, luminance};
use super::fill::LogoChoice;
use super::ink::LogoInk;
use crate::protocol::Logo;

/// Measures a logo's shape, lightness and ink by parts ([`LogoInk`]); SVGs (not decoded
/// here) fall back to the theme the brand gave it (`light` is a light-coloured logo).
pub fn measure_logo(logo: &Logo, bytes: &[u8]) -> Option<LogoChoice> {
    let themed = match logo.theme.as_deref() {
        Some("light") => 0.9,
        Some("dark") => 0.1,
        _ => 0.5,
    };
    if looks_svg(bytes) {
        return Some(LogoChoice {
            url: logo.url.clone(),
            aspect: 3.0,
            luminance: themed,
            ink: None,
        });
    }
    let img = image::load_from_memory(bytes).ok()?;
    let thumb = img.thumbnail(128, 128).to_rgba8();
    let (mut sum, mut n) = (0.0f32, 0.0f32);
    for p in thumb.pixels() {
        if p.0[3] > 128 {
            let c: Rgb = [p.0[0], p.0[1], p.0[2]];
            sum += luminance(c);
            n += 1.0;
        }
    }
    Some(LogoChoice {
        url: logo.url.clone(),
        aspect: img.width() as f32 / img.height().max(1) as f32,
        luminance: if n > 0.0 { sum / n } else { themed },
        ink: LogoInk::of(&img).map(std::sync::Arc::new),
    })
}
