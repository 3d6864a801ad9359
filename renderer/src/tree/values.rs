//! Validation of single values: ranges, enum strings, colours, paints and effects.

use super::model::{EffectSpec, PaintSpec, Rgba};
use super::node::*;
use crate::Error;

pub(super) fn check_range(id: &str, field: &str, v: f32, lo: f32, hi: f32) -> Result<f32, Error> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(v)
    } else {
        Err(Error::node(
            id,
            field,
            format!("{v} is outside {lo}..={hi}"),
        ))
    }
}

pub(super) fn choice<'a>(
    id: &str,
    field: &str,
    v: Option<&'a str>,
    allowed: &[&str],
) -> Result<Option<&'a str>, Error> {
    match v {
        None => Ok(None),
        Some(s) if allowed.contains(&s) => Ok(Some(s)),
        Some(s) => Err(Error::node(
            id,
            field,
            format!("unknown value `{s}`; allowed: {}", allowed.join(", ")),
        )),
    }
}

pub(super) fn color(id: &str, field: &str, c: &Rgba) -> Result<Color, Error> {
    Ok(Color {
        r: check_range(id, &format!("{field}.r"), c.r, 0.0, 1.0)?,
        g: check_range(id, &format!("{field}.g"), c.g, 0.0, 1.0)?,
        b: check_range(id, &format!("{field}.b"), c.b, 0.0, 1.0)?,
        a: check_range(id, &format!("{field}.a"), c.a, 0.0, 1.0)?,
    })
}

pub(super) fn blend(id: &str, field: &str, v: Option<&str>) -> Result<BlendMode, Error> {
    Ok(match choice(id, field, v, BlendMode::NAMES)? {
        Some(s) => BlendMode::from_name(s).unwrap_or_default(),
        None => BlendMode::Normal,
    })
}

pub(super) fn check_url(id: &str, field: &str, url: &str) -> Result<String, Error> {
    let u = url.trim();
    if u.len() >= 5 && u[..5].eq_ignore_ascii_case("data:") {
        return Err(Error::node(
            id,
            field,
            "base64 / data: image data is not accepted; upload the image and use its public URL",
        ));
    }
    if u.is_empty() {
        return Err(Error::node(id, field, "the image URL is empty"));
    }
    if u.len() > 8192 {
        return Err(Error::node(
            id,
            field,
            "the image URL is longer than 8192 characters",
        ));
    }
    Ok(u.to_owned())
}

pub(super) fn paint(id: &str, field: &str, p: &PaintSpec) -> Result<Paint, Error> {
    let opacity = check_range(id, &format!("{field}.opacity"), p.opacity, 0.0, 1.0)?;
    blend(id, &format!("{field}.blendMode"), p.blend_mode.as_deref())?;
    let stops = |p: &PaintSpec| -> Result<Vec<GradientStop>, Error> {
        if p.gradient_stops.is_empty() {
            return Err(Error::node(
                id,
                format!("{field}.gradientStops"),
                "a gradient needs at least one stop",
            ));
        }
        p.gradient_stops
            .iter()
            .enumerate()
            .map(|(k, s)| {
                Ok(GradientStop {
                    position: check_range(
                        id,
                        &format!("{field}.gradientStops[{k}].position"),
                        s.position,
                        0.0,
                        1.0,
                    )?,
                    color: color(id, &format!("{field}.gradientStops[{k}].color"), &s.color)?,
                })
            })
            .collect()
    };
    let handles = |p: &PaintSpec, default: [Vec2; 3]| -> Result<[Vec2; 3], Error> {
        let h = &p.gradient_handle_positions;
        match h.len() {
            0 => Ok(default),
            2 => {
                // Third handle: perpendicular to start→end, same length (Figma's default).
                let (s, e) = (h[0], h[1]);
                Ok([
                    s,
                    e,
                    Vec2 {
                        x: s.x - (e.y - s.y),
                        y: s.y + (e.x - s.x),
                    },
                ])
            }
            3 => Ok([h[0], h[1], h[2]]),
            n => Err(Error::node(
                id,
                format!("{field}.gradientHandlePositions"),
                format!("expected 2 or 3 positions, got {n}"),
            )),
        }
    };
    Ok(match p.kind.as_str() {
        "SOLID" => {
            let c = p.color.as_ref().ok_or_else(|| {
                Error::node(id, format!("{field}.color"), "a SOLID paint needs `color`")
            })?;
            Paint::Solid {
                color: color(id, &format!("{field}.color"), c)?,
                opacity,
            }
        }
        "GRADIENT_LINEAR" => Paint::LinearGradient {
            handles: handles(
                p,
                [
                    Vec2 { x: 0.0, y: 0.5 },
                    Vec2 { x: 1.0, y: 0.5 },
                    Vec2 { x: 0.0, y: 1.0 },
                ],
            )?,
            stops: stops(p)?,
            opacity,
        },
        "GRADIENT_RADIAL" => Paint::RadialGradient {
            handles: handles(
                p,
                [
                    Vec2 { x: 0.5, y: 0.5 },
                    Vec2 { x: 1.0, y: 0.5 },
                    Vec2 { x: 0.5, y: 1.0 },
                ],
            )?,
            stops: stops(p)?,
            opacity,
        },
        "IMAGE" => {
            let Some((f, url)) = p.image_source() else {
                return Err(Error::node(
                    id,
                    format!("{field}.imageFillUrl"),
                    "an IMAGE paint needs `imageFillUrl`",
                ));
            };
            let scaling_factor = p.scaling_factor.unwrap_or(1.0);
            check_range(
                id,
                &format!("{field}.scalingFactor"),
                scaling_factor,
                0.001,
                1000.0,
            )?;
            if let Some(t) = &p.image_transform
                && t.iter().flatten().any(|v| !v.is_finite())
            {
                return Err(Error::node(
                    id,
                    format!("{field}.imageTransform"),
                    "must be finite numbers",
                ));
            }
            Paint::Image {
                url: check_url(id, &format!("{field}.{}", f.key()), url)?,
                scale_mode: p.scale_mode,
                transform: p.image_transform,
                scaling_factor,
                opacity,
            }
        }
        other => Paint::Unsupported {
            kind: other.to_owned(),
        },
    })
}

pub(super) fn effect(id: &str, k: usize, e: &EffectSpec) -> Result<Effect, Error> {
    let field = format!("effects[{k}]");
    let radius = check_range(id, &format!("{field}.radius"), e.radius, 0.0, 1000.0)?;
    let shadow_color = |e: &EffectSpec| -> Result<Color, Error> {
        match &e.color {
            Some(c) => color(id, &format!("{field}.color"), c),
            None => Ok(Color {
                r: 0.0,
                g: 0.0,
                b: 0.0,
                a: 0.25,
            }),
        }
    };
    if !e.visible {
        return Ok(Effect::Unsupported {
            kind: String::new(),
        });
    }
    Ok(match e.kind.as_str() {
        "DROP_SHADOW" => Effect::DropShadow {
            color: shadow_color(e)?,
            offset: e.offset,
            radius,
            spread: e.spread,
        },
        "INNER_SHADOW" => Effect::InnerShadow {
            color: shadow_color(e)?,
            offset: e.offset,
            radius,
            spread: e.spread,
        },
        "LAYER_BLUR" => Effect::LayerBlur { radius },
        "BACKGROUND_BLUR" => Effect::BackgroundBlur { radius },
        other => Effect::Unsupported {
            kind: other.to_owned(),
        },
    })
}

pub(super) fn sizing(id: &str, field: &str, v: Option<&str>) -> Result<Option<Sizing>, Error> {
    Ok(
        choice(id, field, v, &["FIXED", "HUG", "FILL"])?.map(|s| match s {
            "HUG" => Sizing::Hug,
            "FILL" => Sizing::Fill,
            _ => Sizing::Fixed,
        }),
    )
}

pub(super) fn align(
    id: &str,
    field: &str,
    v: Option<&str>,
    allowed: &[&str],
) -> Result<Align, Error> {
    Ok(match choice(id, field, v, allowed)? {
        Some("CENTER") => Align::Center,
        Some("MAX") => Align::Max,
        Some("SPACE_BETWEEN") => Align::SpaceBetween,
        Some("BASELINE") => Align::Baseline,
        _ => Align::Min,
    })
}
