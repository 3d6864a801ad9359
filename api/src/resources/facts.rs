//! The documented keys of a product's and a brand's `details`: the facts an ad's copy may
//! state (docs/copy.md). Both objects stay free-form: unknown keys are kept as they are and
//! documented keys may be left out; a documented key whose value has the wrong shape is a
//! VALIDATION_ERROR naming the path (`details.reviews[1].rating`), because the copywriter
//! would otherwise skip it silently.
//!
//! Product `details`:
//! - `benefits`, `features`: a string or an array of strings (list slots take one each);
//! - `stats`: `{"value", "label"}` objects (or one), e.g. `{"value": "16", "label": "cups
//!   per bottle"}`; `value` a string or a number;
//! - `reviews`: `{"author", "text", "rating"}` objects (or one); `text` required, `rating`
//!   a number from 0 to 5;
//! - `offer`: a string or `{"text", "ends_at"}` (`ends_at` an ISO 8601 date or timestamp);
//! - `guarantee`, `shipping`: strings.
//!
//! Brand `details.voice`: a string (how the brand speaks) or `{"description", "avoid"}`
//! (`avoid`: words the copy never uses).

use serde_json::{Map, Value};

use crate::error::FieldError;

/// Longest text of one documented value (a benefit, a review, an offer).
pub const FACT_TEXT_MAX: usize = 1000;

/// Most entries of one documented list.
pub const FACT_LIST_MAX: usize = 50;

/// The OpenAPI description of a product's `details`.
pub const PRODUCT_DETAILS_DOC: &str = "Free-form features, benefits and USPs (a JSON object of at most 16 KiB). Keys the copywriter reads (all optional; others are kept as they are): `benefits` and `features` (a string or an array of strings; list slots take one each), `stats` (objects `{\"value\", \"label\"}`), `reviews` (objects `{\"author\", \"text\", \"rating\"}`; `rating` 0-5), `offer` (a string or `{\"text\", \"ends_at\"}`), `guarantee` and `shipping` (strings). An ad states only the numbers, prices, percentages, dates and claims found in these, the description, the variant, the brand, the audience and the prompt (docs/copy.md).";

/// The OpenAPI description of a brand's `details`.
pub const BRAND_DETAILS_DOC: &str = "Free-form metadata such as mission, voice and tagline (a JSON object of at most 16 KiB). `voice` steers ad copy: a string describing how the brand speaks, or `{\"description\", \"avoid\"}` where `avoid` lists words the copy never uses.";

/// An example of a product's `details`.
pub fn product_details_example() -> Value {
    serde_json::json!({
        "benefits": ["Café-quality coffee at home", "Ready in 30 seconds"],
        "features": ["Low-acid cold brew concentrate", "Steeped for 18 hours"],
        "stats": [{"value": "16", "label": "cups per bottle"}],
        "reviews": [{"author": "Maria L.", "text": "The only coffee my whole team agrees on. Smooth and never bitter.", "rating": 5}],
        "offer": {"text": "Free tote with your first order", "ends_at": "2026-06-30"},
        "guarantee": "30-day money-back guarantee",
        "shipping": "Free shipping over $40"
    })
}

/// An example of a brand's `details`.
pub fn brand_details_example() -> Value {
    serde_json::json!({
        "tagline": "Slow mornings, better coffee",
        "voice": {"description": "Warm, plain-spoken, a little playful", "avoid": ["cheap", "hack"]}
    })
}

/// Checks the documented keys of a product's `details`.
pub fn check_product_details(details: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    for key in ["benefits", "features"] {
        if let Some(v) = details.get(key) {
            check_texts(&format!("details.{key}"), v, errors);
        }
    }
    if let Some(v) = details.get("stats") {
        for (path, item) in items("details.stats", v, errors) {
            let Some(o) = object(
                &path,
                item,
                "{\"value\": \"16\", \"label\": \"cups per bottle\"}",
                errors,
            ) else {
                continue;
            };
            match o.get("value") {
                Some(Value::String(s)) if !s.trim().is_empty() => {
                    check_len(&format!("{path}.value"), s, errors)
                }
                Some(Value::Number(_)) => {}
                _ => errors.push(FieldError::new(
                    format!("{path}.value"),
                    "is required: the figure as a string or a number, such as \"16\" or \"93%\"",
                )),
            }
            optional_text(&format!("{path}.label"), o.get("label"), errors);
        }
    }
    if let Some(v) = details.get("reviews") {
        for (path, item) in items("details.reviews", v, errors) {
            let Some(o) = object(
                &path,
                item,
                "{\"author\": \"Maria L.\", \"text\": \"…\", \"rating\": 5}",
                errors,
            ) else {
                continue;
            };
            match o.get("text") {
                Some(Value::String(s)) if !s.trim().is_empty() => {
                    check_len(&format!("{path}.text"), s, errors)
                }
                _ => errors.push(FieldError::new(
                    format!("{path}.text"),
                    "is required: the review's words as a non-empty string",
                )),
            }
            optional_text(&format!("{path}.author"), o.get("author"), errors);
            match o.get("rating") {
                None | Some(Value::Null) => {}
                Some(r) if r.as_f64().is_some_and(|r| (0.0..=5.0).contains(&r)) => {}
                Some(_) => errors.push(FieldError::new(
                    format!("{path}.rating"),
                    "must be a number from 0 to 5 (stars)",
                )),
            }
        }
    }
    if let Some(v) = details.get("offer") {
        match v {
            Value::String(s) => check_len("details.offer", s, errors),
            Value::Object(o) => {
                match o.get("text") {
                    Some(Value::String(s)) if !s.trim().is_empty() => check_len("details.offer.text", s, errors),
                    _ => errors.push(FieldError::new(
                        "details.offer.text",
                        "is required: the offer as the ad may state it, such as \"20% off your first order\"",
                    )),
                }
                match o.get("ends_at") {
                    None | Some(Value::Null) => {}
                    Some(Value::String(s)) if parse_date(s).is_some() => {}
                    Some(_) => errors.push(FieldError::new(
                        "details.offer.ends_at",
                        "must be an ISO 8601 date or timestamp, such as \"2026-06-30\"",
                    )),
                }
            }
            Value::Null => {}
            _ => errors.push(FieldError::new(
                "details.offer",
                "must be a string or an object {\"text\", \"ends_at\"}",
            )),
        }
    }
    for key in ["guarantee", "shipping"] {
        optional_text(&format!("details.{key}"), details.get(key), errors);
    }
}

/// Checks `voice` in a brand's `details`.
pub fn check_brand_details(details: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    match details.get("voice") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => check_len("details.voice", s, errors),
        Some(Value::Object(o)) => {
            optional_text("details.voice.description", o.get("description"), errors);
            if let Some(v) = o.get("avoid") {
                check_texts("details.voice.avoid", v, errors);
            }
        }
        Some(_) => errors.push(FieldError::new(
            "details.voice",
            "must be a string or an object {\"description\", \"avoid\": [words]}",
        )),
    }
}

/// The calendar date of an ISO 8601 date or timestamp (`2026-06-30`, `2026-06-30T23:59:00Z`).
pub fn parse_date(s: &str) -> Option<(i32, u8, u8)> {
    let d = s.trim().get(..10)?;
    let mut parts = d.split('-');
    let y: i32 = parts.next()?.parse().ok()?;
    let m: u8 = parts.next()?.parse().ok()?;
    let day: u8 = parts.next()?.parse().ok()?;
    let month = time::Month::try_from(m).ok()?;
    time::Date::from_calendar_date(y, month, day).ok()?;
    Some((y, m, day))
}

fn check_len(field: &str, s: &str, errors: &mut Vec<FieldError>) {
    if s.chars().count() > FACT_TEXT_MAX {
        errors.push(FieldError::new(
            field,
            format!(
                "is {} characters; at most {FACT_TEXT_MAX}",
                s.chars().count()
            ),
        ));
    }
}

/// A string or an array of strings.
fn check_texts(field: &str, v: &Value, errors: &mut Vec<FieldError>) {
    match v {
        Value::String(s) => check_len(field, s, errors),
        Value::Array(a) => {
            if a.len() > FACT_LIST_MAX {
                errors.push(FieldError::new(
                    field,
                    format!("may hold at most {FACT_LIST_MAX} entries"),
                ));
            }
            for (i, item) in a.iter().enumerate() {
                match item {
                    Value::String(s) => check_len(&format!("{field}[{i}]"), s, errors),
                    _ => errors.push(FieldError::new(format!("{field}[{i}]"), "must be a string")),
                }
            }
        }
        Value::Null => {}
        _ => errors.push(FieldError::new(
            field,
            "must be a string or an array of strings",
        )),
    }
}

fn optional_text(field: &str, v: Option<&Value>, errors: &mut Vec<FieldError>) {
    match v {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => check_len(field, s, errors),
        Some(_) => errors.push(FieldError::new(field, "must be a string")),
    }
}

/// The entries of a documented list (one object counts as a list of one), with their paths.
fn items<'a>(field: &str, v: &'a Value, errors: &mut Vec<FieldError>) -> Vec<(String, &'a Value)> {
    match v {
        Value::Array(a) => {
            if a.len() > FACT_LIST_MAX {
                errors.push(FieldError::new(
                    field,
                    format!("may hold at most {FACT_LIST_MAX} entries"),
                ));
            }
            a.iter()
                .enumerate()
                .map(|(i, x)| (format!("{field}[{i}]"), x))
                .collect()
        }
        Value::Null => Vec::new(),
        other => vec![(field.to_owned(), other)],
    }
}

fn object<'a>(
    path: &str,
    v: &'a Value,
    example: &str,
    errors: &mut Vec<FieldError>,
) -> Option<&'a Map<String, Value>> {
    let o = v.as_object();
    if o.is_none() {
        errors.push(FieldError::new(
            path,
            format!("must be an object such as {example}"),
        ));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors_of(details: Value, brand: bool) -> Vec<String> {
        let mut errors = Vec::new();
        let map = details.as_object().cloned().unwrap_or_default();
        if brand {
            check_brand_details(&map, &mut errors);
        } else {
            check_product_details(&map, &mut errors);
        }
        errors.into_iter().map(|e| e.field).collect()
    }

    #[test]
    fn documented_keys_are_checked_and_unknown_ones_kept() {
        assert!(errors_of(product_details_example(), false).is_empty());
        assert!(errors_of(brand_details_example(), true).is_empty());
        assert!(errors_of(json!({"usp": [1, 2], "anything": {"x": true}}), false).is_empty());
        assert_eq!(
            errors_of(
                json!({"benefits": [1], "stats": [{"label": "x"}], "reviews": [{"text": "ok", "rating": 7}, "great"],
                       "offer": {"text": "20% off", "ends_at": "soon"}, "shipping": 3}),
                false
            ),
            [
                "details.benefits[0]",
                "details.stats[0].value",
                "details.reviews[0].rating",
                "details.reviews[1]",
                "details.offer.ends_at",
                "details.shipping"
            ]
        );
        assert_eq!(errors_of(json!({"voice": 3}), true), ["details.voice"]);
        assert_eq!(
            errors_of(json!({"voice": {"avoid": "cheap"}}), true),
            Vec::<String>::new()
        );
        assert_eq!(parse_date("2026-06-30T10:00:00Z"), Some((2026, 6, 30)));
        assert_eq!(parse_date("2026-02-30"), None);
    }
}
