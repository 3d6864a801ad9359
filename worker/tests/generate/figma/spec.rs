//! Validates Figma responses against the schemas of Figma's OpenAPI description
//! (`assets/figma/spec/openapi.json`, vendored with its licence).
//!
//! The validator knows every keyword the description's schemas use (`type`, `$ref`,
//! `properties`, `required`, `enum`, `items`, `allOf`, `oneOf` with its `discriminator`,
//! `additionalProperties`, `minimum`, `maximum`, `minItems`, `maxItems`, and the
//! annotations `description`, `default`, `format`, `deprecated`) and panics on any other,
//! so a later description cannot use a keyword it silently skips. `oneOf` is decided by the
//! discriminator where the description gives one (OpenAPI's rule; Figma's node, paint and
//! effect unions all have one), else by counting matches.
//!
//! Rejected: the `jsonschema` crate, a large dependency tree (regex engines, URL parsing,
//! HTTP resolvers) for the dozen keywords used here, on a machine where every build counts.

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::Value;

/// `assets/figma` of the workspace (this file is compiled into several crates' tests).
pub fn assets() -> PathBuf {
    let mut dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    loop {
        let candidate = dir.join("assets/figma");
        if candidate.is_dir() {
            return candidate;
        }
        assert!(
            dir.pop(),
            "no assets/figma above {}",
            env!("CARGO_MANIFEST_DIR")
        );
    }
}

/// The parsed description, read once per test binary.
pub fn spec() -> &'static Value {
    static SPEC: OnceLock<Value> = OnceLock::new();
    SPEC.get_or_init(|| {
        let text = std::fs::read_to_string(assets().join("spec/openapi.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    })
}

/// The JSON schema of a named response (`GetFileNodesResponse`, …).
pub fn response_schema(name: &str) -> &'static Value {
    &spec()["components"]["responses"][name]["content"]["application/json"]["schema"]
}

/// Every place `value` breaks `schema`, as `path: message`.
pub fn validate(value: &Value, schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(value, schema, "$", &mut out);
    out
}

/// [`validate`] against a named response's schema.
pub fn validate_response(value: &Value, response: &str) -> Vec<String> {
    validate(value, response_schema(response))
}

const KNOWN: [&str; 17] = [
    "type",
    "$ref",
    "properties",
    "required",
    "enum",
    "items",
    "allOf",
    "oneOf",
    "discriminator",
    "additionalProperties",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "description",
    "default",
    "format",
];

fn resolve(reference: &str) -> &'static Value {
    let path = reference
        .strip_prefix("#/")
        .unwrap_or_else(|| panic!("only local $refs are expected, got {reference}"));
    let mut v = spec();
    for part in path.split('/') {
        v = &v[part];
    }
    assert!(!v.is_null(), "unresolved $ref {reference}");
    v
}

fn type_ok(value: &Value, t: &str) -> bool {
    match t {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some_and(|f| f.fract() == 0.0),
        other => panic!("unknown JSON type {other}"),
    }
}

fn check(value: &Value, schema: &Value, path: &str, out: &mut Vec<String>) {
    let Some(s) = schema.as_object() else {
        return;
    };
    for k in s.keys() {
        assert!(
            KNOWN.contains(&k.as_str()) || k == "deprecated" || k == "example" || k == "examples",
            "the validator does not know the keyword `{k}` (at {path})"
        );
    }
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        check(value, resolve(r), path, out);
    }
    if let Some(t) = s.get("type") {
        let ok = match t {
            Value::String(t) => type_ok(value, t),
            Value::Array(ts) => ts
                .iter()
                .filter_map(Value::as_str)
                .any(|t| type_ok(value, t)),
            _ => true,
        };
        if !ok {
            out.push(format!("{path}: expected type {t}, got {}", short(value)));
            return;
        }
    }
    // JSON Schema compares numbers by value: 0.0 is the enum's 0.
    let same = |a: &Value, b: &Value| match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    };
    if let Some(Value::Array(allowed)) = s.get("enum")
        && !allowed.iter().any(|a| same(a, value))
    {
        out.push(format!(
            "{path}: {} is not one of {}",
            short(value),
            Value::Array(allowed.clone())
        ));
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = s.get("minimum").and_then(Value::as_f64)
            && n < min
        {
            out.push(format!("{path}: {n} is below the minimum {min}"));
        }
        if let Some(max) = s.get("maximum").and_then(Value::as_f64)
            && n > max
        {
            out.push(format!("{path}: {n} is above the maximum {max}"));
        }
    }
    if let Some(items) = value.as_array() {
        if let Some(min) = s.get("minItems").and_then(Value::as_u64)
            && (items.len() as u64) < min
        {
            out.push(format!("{path}: fewer than {min} items"));
        }
        if let Some(max) = s.get("maxItems").and_then(Value::as_u64)
            && (items.len() as u64) > max
        {
            out.push(format!("{path}: more than {max} items"));
        }
        if let Some(item) = s.get("items") {
            for (k, v) in items.iter().enumerate() {
                check(v, item, &format!("{path}[{k}]"), out);
            }
        }
    }
    if let Some(obj) = value.as_object() {
        if let Some(Value::Array(required)) = s.get("required") {
            for r in required.iter().filter_map(Value::as_str) {
                if !obj.contains_key(r) {
                    out.push(format!("{path}: `{r}` is required"));
                }
            }
        }
        let props = s.get("properties").and_then(Value::as_object);
        for (k, v) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(p) => check(v, p, &format!("{path}.{k}"), out),
                None => match s.get("additionalProperties") {
                    Some(Value::Bool(false)) => out.push(format!("{path}: `{k}` is not allowed")),
                    Some(extra @ Value::Object(_)) => check(v, extra, &format!("{path}.{k}"), out),
                    _ => {}
                },
            }
        }
    }
    if let Some(Value::Array(all)) = s.get("allOf") {
        for part in all {
            check(value, part, path, out);
        }
    }
    if let Some(Value::Array(one)) = s.get("oneOf") {
        one_of(value, one, s.get("discriminator"), path, out);
    }
}

fn one_of(
    value: &Value,
    options: &[Value],
    discriminator: Option<&Value>,
    path: &str,
    out: &mut Vec<String>,
) {
    if let Some(d) = discriminator {
        let prop = d["propertyName"].as_str().unwrap_or("type");
        let tag = value.get(prop).and_then(Value::as_str);
        match tag
            .and_then(|t| d["mapping"].get(t))
            .and_then(Value::as_str)
        {
            Some(target) => check(value, resolve(target), path, out),
            None => out.push(format!(
                "{path}: `{prop}` {} names none of the union's schemas",
                tag.map_or("(missing)".to_owned(), str::to_owned)
            )),
        }
        return;
    }
    let mut matching = 0;
    let mut first_errors = None;
    for option in options {
        let mut errs = Vec::new();
        check(value, option, path, &mut errs);
        if errs.is_empty() {
            matching += 1;
        } else if first_errors.is_none() {
            first_errors = Some(errs);
        }
    }
    match matching {
        1 => {}
        0 => out.push(format!(
            "{path}: matches none of {} schemas (first: {})",
            options.len(),
            first_errors.unwrap_or_default().join("; ")
        )),
        n => out.push(format!("{path}: matches {n} schemas of a oneOf")),
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 60 {
        format!("{}…", &s[..60])
    } else {
        s
    }
}

#[test]
fn the_validator_rejects_what_the_description_forbids() {
    // A TEXT node without its required style fields, a paint of an unknown type, a bad
    // enum value: each must be found.
    let bad = serde_json::json!({
        "name": "x", "role": "owner", "lastModified": "2024-01-01T00:00:00Z", "editorType": "figma",
        "thumbnailUrl": "", "version": "1",
        "nodes": {"1:2": {"components": {}, "componentSets": {}, "schemaVersion": 0, "styles": {},
            "document": {"id": "1:2", "name": "t", "type": "TEXT", "scrollBehavior": "SCROLLS",
                "blendMode": "SIDEWAYS", "fills": [{"type": "PLAID", "blendMode": "NORMAL"}],
                "effects": [], "absoluteBoundingBox": null, "absoluteRenderBounds": null,
                "characters": "hi"}}}
    });
    let errors = validate_response(&bad, "GetFileNodesResponse").join("\n");
    for want in [
        "`style` is required",
        "SIDEWAYS",
        "PLAID",
        "`lineTypes` is required",
    ] {
        assert!(errors.contains(want), "missing {want} in:\n{errors}");
    }
}
