//! The checks of a brand's structured fields that create and PATCH share (colour palettes,
//! fonts, logo count), and the request schema of `color_palettes` that documents them.

use serde_json::{Map, Value};

use super::BrandFont;
use crate::error::FieldError;
use crate::resources::common::{self, Lines, check_chars};

/// The request schema of `color_palettes`: the rules [`check_palettes`] applies.
pub(super) fn palettes_schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, SchemaType, Type};
    let colour = ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some("^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$"));
    let palette = ArrayBuilder::new()
        .items(colour)
        .min_items(Some(1))
        .max_items(Some(20));
    let names = ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(50))
        .pattern(Some(common::LINE_PATTERN))
        .build();
    let palettes = ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
        .property_names(Some(names))
        .additional_properties(Some(palette))
        .max_properties(Some(20))
        .description(Some(
            "Named palettes (names 1-50 characters on one line) of 1-20 hex colours each (#RGB, #RRGGBB or #RRGGBBAA); at most 20 palettes. Null clears them",
        ))
        .build();
    utoipa::openapi::RefOr::T(utoipa::openapi::Schema::Object(palettes))
}

fn is_hex_colour(s: &str) -> bool {
    s.strip_prefix('#')
        .is_some_and(|h| matches!(h.len(), 3 | 6 | 8) && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Checks named palettes: at most 20, names 1-50 characters on one line, 1-20 hex colours each.
pub(super) fn check_palettes(p: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    if p.len() > 20 {
        errors.push(FieldError::new(
            "color_palettes",
            "may hold at most 20 palettes",
        ));
    }
    for (name, colours) in p {
        let field = format!("color_palettes.{name}");
        if name.is_empty() || name.chars().count() > 50 {
            errors.push(FieldError::new(
                &field,
                "palette names are 1 to 50 characters",
            ));
        }
        check_chars(&field, name, Lines::Single, errors);
        match colours.as_array() {
            Some(list) if (1..=20).contains(&list.len()) => {
                for (i, c) in list.iter().enumerate() {
                    if !c.as_str().is_some_and(is_hex_colour) {
                        errors.push(FieldError::new(
                            format!("{field}[{i}]"),
                            "must be a hex colour such as \"#1A2B3C\" (#RGB, #RRGGBB or #RRGGBBAA)",
                        ));
                    }
                }
            }
            _ => errors.push(FieldError::new(
                field,
                "must be an array of 1 to 20 hex colours",
            )),
        }
    }
}

/// Checks font families: at most 10, names 1-100 characters on one line.
pub(super) fn check_fonts(fonts: &[BrandFont], errors: &mut Vec<FieldError>) {
    if fonts.len() > 10 {
        errors.push(FieldError::new("fonts", "may hold at most 10 families"));
    }
    for (i, f) in fonts.iter().enumerate() {
        if f.name.trim().is_empty() || f.name.chars().count() > 100 {
            errors.push(FieldError::new(
                format!("fonts[{i}].name"),
                "must be 1 to 100 characters",
            ));
        }
        check_chars(&format!("fonts[{i}].name"), &f.name, Lines::Single, errors);
    }
}

/// Checks the logo list: at most 20 images (their existence is checked against the store).
pub(super) fn check_logos(ids: &[String], errors: &mut Vec<FieldError>) {
    if ids.len() > 20 {
        errors.push(FieldError::new(
            "logo_image_ids",
            "may hold at most 20 images",
        ));
    }
}
