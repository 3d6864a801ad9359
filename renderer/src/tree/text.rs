//! Validation and normalisation of TEXT properties.

use super::model::{LineHeightSpec, NodeSpec, StyleOverrideSpec};
use super::node::*;
use super::values::{check_range, choice, paint};
use crate::Error;

pub(super) fn text_style(
    id: &str,
    s: &NodeSpec,
    unsupported: &mut Vec<String>,
) -> Result<TextStyle, Error> {
    if s.text_case
        .as_deref()
        .is_some_and(|c| c.starts_with("SMALL_CAPS"))
    {
        unsupported.push("textCase SMALL_CAPS (not supported yet; drawn as ORIGINAL)".to_owned());
    }
    let font_size = check_range(id, "fontSize", s.font_size.unwrap_or(16.0), 0.5, 10000.0)?;
    let font_weight = check_range(
        id,
        "fontWeight",
        s.font_weight.unwrap_or(400.0),
        1.0,
        1000.0,
    )? as u16;
    let italic = s.italic.unwrap_or_else(|| {
        s.font_style
            .as_deref()
            .is_some_and(|st| st.to_ascii_lowercase().contains("italic"))
    });
    let line_height = if let Some(px) = s.line_height_px {
        LineHeight::Pixels(check_range(id, "lineHeightPx", px, 0.0, 100000.0)?)
    } else if let Some(p) = s.line_height_percent_font_size {
        LineHeight::Relative(check_range(id, "lineHeightPercentFontSize", p, 0.0, 10000.0)? / 100.0)
    } else {
        match &s.line_height {
            None => LineHeight::Auto,
            Some(LineHeightSpec::Pixels(px)) => {
                LineHeight::Pixels(check_range(id, "lineHeight", *px, 0.0, 100000.0)?)
            }
            Some(LineHeightSpec::Object { value, unit }) => match unit.as_str() {
                "PIXELS" => {
                    LineHeight::Pixels(check_range(id, "lineHeight.value", *value, 0.0, 100000.0)?)
                }
                "PERCENT" | "FONT_SIZE_%" => LineHeight::Relative(
                    check_range(id, "lineHeight.value", *value, 0.0, 10000.0)? / 100.0,
                ),
                "AUTO" | "INTRINSIC_%" => LineHeight::Auto,
                other => {
                    return Err(Error::node(
                        id,
                        "lineHeight.unit",
                        format!("unknown value `{other}`; allowed: PIXELS, PERCENT, AUTO"),
                    ));
                }
            },
        }
    };
    check_range(id, "letterSpacing", s.letter_spacing, -1000.0, 1000.0)?;
    let align = match choice(
        id,
        "textAlignHorizontal",
        s.text_align_horizontal.as_deref(),
        &["LEFT", "CENTER", "RIGHT", "JUSTIFIED"],
    )? {
        Some("CENTER") => TextAlign::Center,
        Some("RIGHT") => TextAlign::Right,
        Some("JUSTIFIED") => TextAlign::Justified,
        _ => TextAlign::Left,
    };
    let vertical_align = match choice(
        id,
        "textAlignVertical",
        s.text_align_vertical.as_deref(),
        &["TOP", "CENTER", "BOTTOM"],
    )? {
        Some("CENTER") => VerticalAlign::Center,
        Some("BOTTOM") => VerticalAlign::Bottom,
        _ => VerticalAlign::Top,
    };
    let case = match choice(
        id,
        "textCase",
        s.text_case.as_deref(),
        &[
            "ORIGINAL",
            "UPPER",
            "LOWER",
            "TITLE",
            "SMALL_CAPS",
            "SMALL_CAPS_FORCED",
        ],
    )? {
        Some("UPPER") => TextCase::Upper,
        Some("LOWER") => TextCase::Lower,
        Some("TITLE") => TextCase::Title,
        _ => TextCase::Original,
    };
    let decoration = match choice(
        id,
        "textDecoration",
        s.text_decoration.as_deref(),
        &["NONE", "UNDERLINE", "STRIKETHROUGH"],
    )? {
        Some("UNDERLINE") => TextDecoration::Underline,
        Some("STRIKETHROUGH") => TextDecoration::Strikethrough,
        _ => TextDecoration::None,
    };
    let auto_resize = match choice(
        id,
        "textAutoResize",
        s.text_auto_resize.as_deref(),
        &["NONE", "HEIGHT", "WIDTH_AND_HEIGHT", "TRUNCATE"],
    )? {
        Some("HEIGHT") => AutoResize::Height,
        Some("WIDTH_AND_HEIGHT") => AutoResize::WidthAndHeight,
        Some("TRUNCATE") => AutoResize::Truncate,
        Some(_) => AutoResize::None,
        None if s.width.is_none() => AutoResize::WidthAndHeight,
        None if s.height.is_none() => AutoResize::Height,
        None => AutoResize::None,
    };
    let truncation = choice(
        id,
        "textTruncation",
        s.text_truncation.as_deref(),
        &["DISABLED", "ENDING"],
    )?;
    if let Some(m) = s.max_lines
        && m == 0
    {
        return Err(Error::node(id, "maxLines", "must be at least 1"));
    }
    let fit = match &s.text_fit {
        None => None,
        Some(f) => {
            let min = check_range(id, "textFit.minFontSize", f.min_font_size, 0.5, 10000.0)?;
            let max = check_range(
                id,
                "textFit.maxFontSize",
                f.max_font_size.unwrap_or(font_size),
                0.5,
                10000.0,
            )?;
            if min > max {
                return Err(Error::node(
                    id,
                    "textFit.minFontSize",
                    format!("{min} is larger than maxFontSize {max}"),
                ));
            }
            Some((min, max))
        }
    };
    let characters = s.characters.clone().unwrap_or_default();
    let spans = spans(id, s, &characters, unsupported)?;
    Ok(TextStyle {
        characters,
        font_family: s.font_family.clone().unwrap_or_else(|| "Inter".to_owned()),
        font_size,
        font_weight,
        italic,
        line_height,
        letter_spacing: s.letter_spacing,
        align,
        vertical_align,
        case,
        decoration,
        auto_resize,
        max_lines: s.max_lines,
        // Figma: maxLines only truncates with textTruncation ENDING; we also ellipsize for
        // TRUNCATE auto-resize and whenever maxLines is set without an explicit DISABLED.
        ellipsis: truncation != Some("DISABLED"),
        fit,
        spans,
    })
}

/// The ranges of `characters` that Figma's `characterStyleOverrides` give another style of
/// `styleOverrideTable`. The overrides count UTF-16 code units, as Figma's strings do; an
/// id missing from the table (or 0) is the node's own style.
fn spans(
    id: &str,
    s: &NodeSpec,
    characters: &str,
    unsupported: &mut Vec<String>,
) -> Result<Vec<TextSpan>, Error> {
    if s.character_style_overrides.iter().all(|&k| k == 0) {
        return Ok(Vec::new());
    }
    let mut table: std::collections::HashMap<u32, TextSpan> = std::collections::HashMap::new();
    for (key, spec) in &s.style_override_table {
        let Ok(k) = key.parse::<u32>() else {
            return Err(Error::node(
                id,
                format!("styleOverrideTable.{key}"),
                "keys are the style ids of characterStyleOverrides (whole numbers)",
            ));
        };
        let Some(spec) = spec else { continue };
        table.insert(k, span_style(id, key, spec, unsupported)?);
    }
    let mut out: Vec<TextSpan> = Vec::new();
    let mut unit = 0usize;
    let mut current: Option<(u32, usize)> = None;
    let close = |style: u32, start: usize, end: usize, out: &mut Vec<TextSpan>| {
        if let Some(t) = table.get(&style)
            && start < end
        {
            out.push(TextSpan {
                range: start..end,
                ..t.clone()
            });
        }
    };
    for (byte, c) in characters.char_indices() {
        let style = s.character_style_overrides.get(unit).copied().unwrap_or(0);
        unit += c.len_utf16();
        match current {
            Some((cur, _)) if cur == style => {}
            Some((cur, start)) => {
                close(cur, start, byte, &mut out);
                current = Some((style, byte));
            }
            None => current = Some((style, byte)),
        }
    }
    if let Some((cur, start)) = current {
        close(cur, start, characters.len(), &mut out);
    }
    Ok(out)
}

fn span_style(
    id: &str,
    key: &str,
    o: &StyleOverrideSpec,
    unsupported: &mut Vec<String>,
) -> Result<TextSpan, Error> {
    let field = |f: &str| format!("styleOverrideTable.{key}.{f}");
    if o.line_height_px.is_some() {
        unsupported.push(format!(
            "styleOverrideTable.{key}.lineHeightPx (per-range line heights are not supported yet; the node's is used)"
        ));
    }
    if o.text_case.is_some() {
        unsupported.push(format!(
            "styleOverrideTable.{key}.textCase (per-range text case is not supported yet; the node's is used)"
        ));
    }
    let font_weight = match o.font_weight {
        Some(w) => Some(check_range(id, &field("fontWeight"), w, 1.0, 1000.0)? as u16),
        None => None,
    };
    let font_size = match o.font_size {
        Some(v) => Some(check_range(id, &field("fontSize"), v, 0.5, 10000.0)?),
        None => None,
    };
    let letter_spacing = match o.letter_spacing {
        Some(v) => Some(check_range(
            id,
            &field("letterSpacing"),
            v,
            -1000.0,
            1000.0,
        )?),
        None => None,
    };
    let decoration = match choice(
        id,
        &field("textDecoration"),
        o.text_decoration.as_deref(),
        &["NONE", "UNDERLINE", "STRIKETHROUGH"],
    )? {
        Some("UNDERLINE") => Some(TextDecoration::Underline),
        Some("STRIKETHROUGH") => Some(TextDecoration::Strikethrough),
        Some(_) => Some(TextDecoration::None),
        None => None,
    };
    let italic = o.italic.or_else(|| {
        o.font_style
            .as_deref()
            .map(|st| st.to_ascii_lowercase().contains("italic"))
    });
    let fills = match &o.fills {
        Some(list) => Some(
            list.iter()
                .enumerate()
                .filter(|(_, p)| p.visible)
                .map(|(k, p)| paint(id, &field(&format!("fills[{k}]")), p))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        None => None,
    };
    Ok(TextSpan {
        range: 0..0,
        font_family: o.font_family.clone(),
        font_weight,
        italic,
        font_size,
        letter_spacing,
        decoration,
        fills,
    })
}
