//! Request extractors whose every rejection is a 400 VALIDATION_ERROR with `details`, so no
//! client ever sees a framework's default error text.

use std::collections::HashSet;
use std::marker::PhantomData;

use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::header;
use axum::http::request::Parts;
use bytes::Bytes;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, FieldError};

/// A JSON body, read but not yet looked at: a handler calls [`JsonBody::parse`] after it
/// has checked the key's scope and that the resource it writes exists for the caller, so
/// a key learns nothing about the schema of a write it may not make, and a foreign id is
/// 404 whatever the body. Parsing turns unknown fields, wrong types, unknown enum values
/// and missing required fields into VALIDATION_ERROR details naming the field.
pub struct JsonBody<T> {
    is_json: bool,
    read: Result<Bytes, String>,
    into: PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned> JsonBody<T> {
    /// The body as `T`.
    ///
    /// # Errors
    /// VALIDATION_ERROR naming `Content-Type` (not JSON), `body` (unreadable or not one JSON
    /// object) or the field that does not match `T`.
    pub fn parse(self) -> Result<T, ApiError> {
        if !self.is_json {
            return Err(ApiError::field(
                "Content-Type",
                "send the body as JSON with the header `Content-Type: application/json`",
            ));
        }
        let bytes = self
            .read
            .map_err(|e| ApiError::field("body", format!("could not be read: {e}")))?;
        parse_json(&bytes)
    }
}

impl<T, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let is_json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| {
                let mime = ct
                    .split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase();
                mime == "application/json" || mime.ends_with("+json")
            });
        let read = Bytes::from_request(req, state)
            .await
            .map_err(|e| e.to_string());
        Ok(JsonBody {
            is_json,
            read,
            into: PhantomData,
        })
    }
}

/// Deserialises JSON, turning serde's error into a field-named VALIDATION_ERROR.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    // serde lets structs be written as arrays; a request body never is one.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return Err(ApiError::field("body", "must be a JSON object"));
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        ApiError::validation(vec![describe_json_error(&path, &inner)])
    })?;
    // Text after the object (`{…} x`) is not one JSON document.
    de.end()
        .map_err(|e| ApiError::validation(vec![describe_json_error(".", &e)]))?;
    // Integers serde_json would have rounded to a float (see `exact_numbers`).
    let inexact = super::exact_numbers::inexact_integers(bytes);
    if !inexact.is_empty() {
        return Err(ApiError::validation(inexact));
    }
    Ok(value)
}

fn describe_json_error(path: &str, e: &serde_json::Error) -> FieldError {
    use serde_json::error::Category;
    let at_root = path == "." || path.is_empty();
    let text = e.to_string();
    // serde appends " at line L column C"; the field path says more to an API client.
    let text = match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    };
    match e.classify() {
        Category::Syntax | Category::Eof | Category::Io => FieldError::new(
            "body",
            format!(
                "is not valid JSON ({text} at line {}, column {})",
                e.line(),
                e.column()
            ),
        ),
        Category::Data => {
            let backticked = text.split('`').nth(1).map(str::to_string);
            let join = |name: &str| {
                if at_root {
                    name.to_string()
                } else {
                    format!("{path}.{name}")
                }
            };
            if let (Some(name), true) = (&backticked, text.starts_with("missing field")) {
                FieldError::new(join(name), "is required")
            } else if let (Some(name), true) = (&backticked, text.starts_with("unknown field")) {
                let expected = text.split(", expected ").nth(1).unwrap_or("");
                // For an unknown field the path already ends at the field itself.
                let field = if at_root {
                    name.clone()
                } else {
                    path.to_string()
                };
                FieldError::new(field, format!("is not a known field; expected {expected}"))
            } else if at_root && text.starts_with("invalid type") {
                FieldError::new("body", "must be a JSON object")
            } else {
                FieldError::new(
                    if at_root {
                        "body".to_string()
                    } else {
                        path.to_string()
                    },
                    text,
                )
            }
        }
    }
}

/// Path parameters deserialised into `T` (a `String`, a tuple of them, ...). A value that
/// is not UTF-8 once percent-decoded (`/v1/image-ads/%ff`) or does not parse is a
/// VALIDATION_ERROR naming the parameter, never axum's plain-text rejection. Handlers
/// that answer 404 for any unusable path (`/files/...`) take `Result<PathParams<T>,
/// ApiError>` and map the error.
pub struct PathParams<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for PathParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        use axum::extract::path::ErrorKind;
        use axum::extract::rejection::PathRejection;
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(PathParams(value)),
            Err(PathRejection::FailedToDeserializePathParams(e)) => Err(match e.into_kind() {
                ErrorKind::InvalidUtf8InPathParam { key } => ApiError::field(
                    key,
                    "is not valid UTF-8 once percent-decoded; ids are plain ASCII (`ia_…`)",
                ),
                ErrorKind::ParseErrorAtKey {
                    key,
                    value,
                    expected_type,
                } => ApiError::field(key, format!("`{value}` is not a valid {expected_type}")),
                other => ApiError::field("path", format!("invalid path parameter: {other}")),
            }),
            // The route and the handler disagree on the parameters: a bug, not the client's.
            Err(other) => Err(ApiError::internal(other)),
        }
    }
}

/// Query-string parameters, read by typed getters. Each getter marks its parameter as
/// known and records a problem instead of failing at once, so one response lists every
/// invalid parameter; [`QueryParams::finish`] also rejects parameters nobody asked for.
pub struct QueryParams {
    pairs: Vec<(String, String)>,
    known: HashSet<&'static str>,
    errors: Vec<FieldError>,
}

impl<S: Send + Sync> FromRequestParts<S> for QueryParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self::parse(parts.uri.query().unwrap_or("")))
    }
}

impl QueryParams {
    pub fn parse(query: &str) -> Self {
        Self {
            pairs: form_urlencoded::parse(query.as_bytes())
                .into_owned()
                .collect(),
            known: HashSet::new(),
            errors: Vec::new(),
        }
    }

    pub fn error(&mut self, field: &str, message: impl Into<String>) {
        self.errors.push(FieldError::new(field, message));
    }

    /// All values of a repeatable parameter.
    pub fn all(&mut self, name: &'static str) -> Vec<String> {
        self.known.insert(name);
        self.pairs
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// A single-valued parameter; given twice is an error.
    pub fn string(&mut self, name: &'static str) -> Option<String> {
        let mut values = self.all(name);
        match values.len() {
            0 => None,
            1 => values.pop(),
            _ => {
                self.error(name, "was given more than once; give it once");
                None
            }
        }
    }

    /// A comma-separated list (`a,b,c`); empty items are dropped. `Some(vec![])` when the
    /// parameter is present but empty.
    pub fn csv(&mut self, name: &'static str) -> Option<Vec<String>> {
        self.string(name).map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
    }

    /// `true` or `false`.
    pub fn bool(&mut self, name: &'static str, default: bool) -> bool {
        match self.string(name).as_deref() {
            None => default,
            Some("true") => true,
            Some("false") => false,
            Some(other) => {
                self.error(name, format!("must be `true` or `false`, not `{other}`"));
                default
            }
        }
    }

    /// An integer within `min..=max`.
    pub fn int(&mut self, name: &'static str, min: i64, max: i64, default: i64) -> i64 {
        match self.string(name) {
            None => default,
            Some(v) => match v.parse::<i64>() {
                Ok(n) if (min..=max).contains(&n) => n,
                _ => {
                    self.error(
                        name,
                        format!("must be a whole number from {min} to {max}, not `{v}`"),
                    );
                    default
                }
            },
        }
    }

    /// One of `allowed`.
    pub fn one_of(&mut self, name: &'static str, allowed: &[&str]) -> Option<String> {
        let v = self.string(name)?;
        if allowed.contains(&v.as_str()) {
            Some(v)
        } else {
            self.error(
                name,
                format!("must be one of {}, not `{v}`", allowed.join(", ")),
            );
            None
        }
    }

    /// Ends parsing: unknown parameters and every recorded problem become one
    /// VALIDATION_ERROR.
    pub fn finish(mut self) -> Result<(), ApiError> {
        let mut unknown: Vec<&str> = self
            .pairs
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| !self.known.contains(k))
            .collect();
        unknown.dedup();
        let mut allowed: Vec<&str> = self.known.iter().copied().collect();
        allowed.sort_unstable();
        for k in unknown {
            let msg = if allowed.is_empty() {
                "is not a parameter of this endpoint; it takes none".to_string()
            } else {
                format!(
                    "is not a parameter of this endpoint; allowed: {}",
                    allowed.join(", ")
                )
            };
            self.errors.push(FieldError::new(k, msg));
        }
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(ApiError::validation(self.errors))
        }
    }
}

/// Most fields a multipart form of the API may carry (POST /v1/images has six; a swipe-file
/// upload one). The next field is refused at once, before it is read, so a form of 100,000
/// fields costs no more than one of seventeen.
pub const MAX_FORM_FIELDS: usize = 16;

/// A multipart form read field by field, refusing more than [`MAX_FORM_FIELDS`] fields and
/// turning every framework rejection into our VALIDATION_ERROR.
pub struct FormFields {
    inner: axum::extract::Multipart,
    seen: usize,
}

impl FormFields {
    /// Opens the form of `req`; `what` completes "send the upload as multipart/form-data
    /// with …" for a client that sent something else.
    ///
    /// # Errors
    /// VALIDATION_ERROR naming `Content-Type`.
    pub async fn open(req: Request, what: &str) -> Result<Self, ApiError> {
        let inner = axum::extract::Multipart::from_request(req, &())
            .await
            .map_err(|_| {
                ApiError::field(
                    "Content-Type",
                    format!("send the upload as multipart/form-data with {what}"),
                )
            })?;
        Ok(Self { inner, seen: 0 })
    }

    /// The next field, `None` at the end.
    ///
    /// # Errors
    /// VALIDATION_ERROR naming `body` for a malformed form or one with too many fields.
    pub async fn next(&mut self) -> Result<Option<axum::extract::multipart::Field<'_>>, ApiError> {
        let field = self.inner.next_field().await.map_err(bad_form)?;
        if field.is_some() {
            self.seen += 1;
            if self.seen > MAX_FORM_FIELDS {
                return Err(ApiError::field(
                    "body",
                    format!("has more than {MAX_FORM_FIELDS} form fields; send each field once"),
                ));
            }
        }
        Ok(field)
    }
}

/// A malformed multipart body as a VALIDATION_ERROR.
pub fn bad_form(e: axum::extract::multipart::MultipartError) -> ApiError {
    ApiError::field("body", format!("is not valid multipart/form-data: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Sample {
        name: String,
        inner: Option<Inner>,
    }
    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        size: u32,
    }

    fn field_of(body: &str) -> FieldError {
        parse_json::<Sample>(body.as_bytes())
            .unwrap_err()
            .details
            .remove(0)
    }

    #[test]
    fn json_errors_name_the_field() {
        assert_eq!(field_of("{}").field, "name");
        assert_eq!(field_of(r#"{"name":"a","x":1}"#).field, "x");
        assert_eq!(field_of(r#"{"name":1}"#).field, "name");
        assert_eq!(
            field_of(r#"{"name":"a","inner":{"size":-1}}"#).field,
            "inner.size"
        );
        assert_eq!(field_of(r#"{"name":"a","inner":{}}"#).field, "inner.size");
        assert_eq!(field_of("[1]").field, "body");
        assert_eq!(field_of("{").field, "body");
        assert_eq!(field_of(r#"{"name":"a"} x"#).field, "body");
    }

    #[test]
    fn query_collects_every_problem() {
        let mut q = QueryParams::parse("limit=0&cascade=maybe&bogus=1");
        q.int("limit", 1, 100, 20);
        q.bool("cascade", true);
        let err = q.finish().unwrap_err();
        let fields: Vec<_> = err.details.iter().map(|d| d.field.as_str()).collect();
        assert_eq!(fields, ["limit", "cascade", "bogus"]);
    }
}
