//! Helpers shared by resource modules: partial-update fields, path ids, field validation
//! and reference checks.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::error::{ApiError, ErrorCode, FieldError};
use crate::http::extract::PathParams;
use crate::store::Db;

/// A field of a PATCH body: absent, explicitly `null`, or a value.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Patch<T> {
    #[default]
    Missing,
    Null,
    Value(T),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Option::<T>::deserialize(d)? {
            None => Patch::Null,
            Some(v) => Patch::Value(v),
        })
    }
}

impl<T> Patch<T> {
    /// Applies a nullable field to `current`.
    pub fn apply_nullable(self, current: &mut Option<T>) {
        match self {
            Patch::Missing => {}
            Patch::Null => *current = None,
            Patch::Value(v) => *current = Some(v),
        }
    }

    /// For a field that cannot be null: the new value, if any; `null` is recorded as an
    /// error.
    pub fn required(self, field: &str, errors: &mut Vec<FieldError>) -> Option<T> {
        match self {
            Patch::Missing => None,
            Patch::Null => {
                errors.push(FieldError::new(
                    field,
                    "cannot be null; omit it to leave it unchanged",
                ));
                None
            }
            Patch::Value(v) => Some(v),
        }
    }
}

/// The `{id}` of a path, with our error shape on rejection.
pub struct IdPath(pub String);

impl<S: Send + Sync> FromRequestParts<S> for IdPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        PathParams::<String>::from_request_parts(parts, state)
            .await
            .map(|PathParams(id)| IdPath(id))
    }
}

/// Limits on free text, in characters.
pub const NAME_MAX: usize = 200;
pub const DESCRIPTION_MAX: usize = 5_000;
/// Largest free-form JSON object (`details`, `attributes`), serialised.
pub const OBJECT_MAX_BYTES: usize = 16 * 1024;

/// Whether a text field is one line (names, SKUs, alt text) or free prose (descriptions,
/// prompts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lines {
    /// No control characters at all.
    Single,
    /// Tab, line feed and carriage return allowed; other control characters are not.
    Multi,
}

/// The first character of `value` that a text field of kind `lines` refuses, if any.
///
/// Refused everywhere: the C0 and C1 control characters (U+0000–U+001F, U+007F–U+009F;
/// NUL, ESC, …) except the line breaks and tab prose may hold, the Unicode line and
/// paragraph separators in single-line fields (U+2028, U+2029), and the bidirectional
/// embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069), which let a name
/// display differently from what it is ("Trojan Source"). Other text, emoji and the
/// invisible direction marks U+200E/U+200F included, is stored as sent.
pub fn refused_char(value: &str, lines: Lines) -> Option<char> {
    value.chars().find(|&c| match c {
        '\t' | '\n' | '\r' => lines == Lines::Single,
        '\u{2028}' | '\u{2029}' => lines == Lines::Single,
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => true,
        c => c.is_control(),
    })
}

/// Records a VALIDATION_ERROR for `field` when `value` holds a character [`refused_char`]
/// refuses.
pub fn check_chars(field: &str, value: &str, lines: Lines, errors: &mut Vec<FieldError>) {
    if let Some(c) = refused_char(value, lines) {
        let allowed = match lines {
            Lines::Single => {
                "a single line: control characters (U+0000-U+001F, U+007F-U+009F), line separators and bidirectional overrides (U+202A-U+202E, U+2066-U+2069) are not allowed"
            }
            Lines::Multi => {
                "text: control characters other than tab, line feed and carriage return, and bidirectional overrides (U+202A-U+202E, U+2066-U+2069), are not allowed"
            }
        };
        errors.push(FieldError::new(
            field,
            format!("must be {allowed}; found U+{:04X}", u32::from(c)),
        ));
    }
}

/// A required name: at most `NAME_MAX` characters as sent, one line (see
/// [`refused_char`]), not blank; stored trimmed.
pub fn check_name(field: &str, value: &str, errors: &mut Vec<FieldError>) -> String {
    let v = value.trim();
    if v.is_empty() {
        errors.push(FieldError::new(field, "must not be empty"));
    } else if value.chars().count() > NAME_MAX {
        errors.push(FieldError::new(
            field,
            format!("must be at most {NAME_MAX} characters"),
        ));
    }
    check_chars(field, value, Lines::Single, errors);
    v.to_string()
}

/// The rules of [`check_name`] and [`refused_char`] as JSON Schema patterns (ECMA-262), for
/// the OpenAPI document: a name holds a character other than white space and none that
/// single-line text refuses; multi-line text holds none of the characters it refuses.
pub const NAME_PATTERN: &str = r"^[^\u0000-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069]*[^\s\u0000-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069][^\u0000-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069]*$";
pub const LINE_PATTERN: &str =
    r"^[^\u0000-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069]*$";
pub const TEXT_PATTERN: &str =
    r"^[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]*$";

/// Optional multi-line text of at most `max` characters (see [`refused_char`]); empty
/// strings become `None`.
pub fn check_text(
    field: &str,
    value: Option<String>,
    max: usize,
    errors: &mut Vec<FieldError>,
) -> Option<String> {
    check_optional(field, value, max, Lines::Multi, errors)
}

/// Optional single-line text of at most `max` characters (see [`refused_char`]); empty
/// strings become `None`.
pub fn check_line(
    field: &str,
    value: Option<String>,
    max: usize,
    errors: &mut Vec<FieldError>,
) -> Option<String> {
    check_optional(field, value, max, Lines::Single, errors)
}

fn check_optional(
    field: &str,
    value: Option<String>,
    max: usize,
    lines: Lines,
    errors: &mut Vec<FieldError>,
) -> Option<String> {
    let v = value?;
    if v.chars().count() > max {
        errors.push(FieldError::new(
            field,
            format!("must be at most {max} characters"),
        ));
    }
    check_chars(field, &v, lines, errors);
    if v.trim().is_empty() { None } else { Some(v) }
}

/// A free-form JSON object of bounded size.
pub fn check_object(field: &str, value: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    let size = serde_json::to_vec(value).map_or(usize::MAX, |v| v.len());
    if size > OBJECT_MAX_BYTES {
        errors.push(FieldError::new(
            field,
            format!("is {size} bytes as JSON; at most {OBJECT_MAX_BYTES} are allowed"),
        ));
    }
}

/// A nullable multi-line text field of a PATCH: checked like [`check_text`]; an empty
/// string clears it.
pub fn patch_text(
    field: &str,
    value: Patch<String>,
    max: usize,
    errors: &mut Vec<FieldError>,
) -> Patch<String> {
    match value {
        Patch::Value(v) => {
            check_text(field, Some(v), max, errors).map_or(Patch::Null, Patch::Value)
        }
        other => other,
    }
}

/// A nullable single-line text field of a PATCH: checked like [`check_line`]; an empty
/// string clears it.
pub fn patch_line(
    field: &str,
    value: Patch<String>,
    max: usize,
    errors: &mut Vec<FieldError>,
) -> Patch<String> {
    match value {
        Patch::Value(v) => {
            check_line(field, Some(v), max, errors).map_or(Patch::Null, Patch::Value)
        }
        other => other,
    }
}

/// Where a resource lives and how its absence is reported.
pub struct Table {
    pub name: &'static str,
    /// Select list over alias `t`.
    pub columns: &'static str,
    pub not_found: ErrorCode,
    /// The resource's name in messages ("product variant").
    pub kind: &'static str,
}

impl Table {
    /// Loads a live (not deleted) row of the organisation.
    ///
    /// # Errors
    /// The table's 404 code; database failures.
    pub async fn load<'e, T, E>(&self, ex: E, org_id: &str, id: &str) -> Result<T, ApiError>
    where
        T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
        E: sqlx::AnyExecutor<'e>,
    {
        crate::store::query_as::<T>(&format!(
            "SELECT {} FROM {} AS t WHERE t.id = ? AND t.org_id = ? AND t.deleted_at IS NULL",
            self.columns, self.name
        ))
        .bind(id)
        .bind(org_id)
        .fetch_optional(ex)
        .await?
        .ok_or_else(|| ApiError::not_found(self.not_found, self.kind, id))
    }

    /// [`Table::load`] as a point read ([`Db::point_read`]): the hot path of
    /// `GET /v1/{resource}/{id}`.
    ///
    /// # Errors
    /// The table's 404 code; database failures.
    pub async fn read<T>(&self, db: &Db, org_id: &str, id: &str) -> Result<T, ApiError>
    where
        T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin + 'static,
    {
        db.point_read_of(self.columns, self.name, true, id, org_id)
            .await?
            .ok_or_else(|| ApiError::not_found(self.not_found, self.kind, id))
    }

    /// Soft-deletes a live row of the organisation (a leaf: no children to check).
    ///
    /// # Errors
    /// The table's 404 code; database failures.
    pub async fn soft_delete(&self, db: &Db, org_id: &str, id: &str) -> Result<(), ApiError> {
        let done = crate::store::query(&format!(
            "UPDATE {} SET deleted_at = ? WHERE id = ? AND org_id = ? AND deleted_at IS NULL",
            self.name
        ))
        .bind(crate::timestamp::now())
        .bind(id)
        .bind(org_id)
        .execute(&mut *db.write_conn().await?)
        .await?;
        if done.rows_affected() == 0 {
            return Err(ApiError::not_found(self.not_found, self.kind, id));
        }
        Ok(())
    }
}

/// Fails with VALIDATION_ERROR when `errors` holds anything.
pub fn finish(errors: Vec<FieldError>) -> Result<(), ApiError> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::validation(errors))
    }
}

/// Checks that every id in `ids` names a live (not deleted) image of the organisation.
///
/// # Errors
/// 404 IMAGE_NOT_FOUND naming the field and the missing ids.
pub async fn check_image_ids(
    db: &Db,
    org_id: &str,
    field: &str,
    ids: &[String],
) -> Result<(), ApiError> {
    if ids.is_empty() {
        return Ok(());
    }
    let marks = crate::store::marks(ids.len());
    let sql = format!(
        "SELECT id FROM images WHERE org_id = ? AND deleted_at IS NULL AND id IN ({marks})"
    );
    let mut q = crate::store::query_scalar::<String>(&sql).bind(org_id);
    for id in ids {
        q = q.bind(id);
    }
    let found: Vec<String> = q.fetch_all(&db.read).await?;
    let missing: Vec<&str> = ids
        .iter()
        .filter(|id| !found.contains(id))
        .map(String::as_str)
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::ImageNotFound,
            format!(
                "`{field}` names images that do not exist in this organization: {}; upload them with POST /v1/images first",
                missing.join(", ")
            ),
        ))
    }
}

/// Removes repeated ids, keeping the first occurrence.
pub fn dedup_ids(ids: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(ids.len());
    for id in ids {
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

/// The `archived` query parameter of a list as its condition.
pub fn archived_condition(
    q: &mut crate::http::extract::QueryParams,
) -> crate::store::list::Condition {
    archived(q.bool("archived", false))
}

/// The condition of an `archived` filter: archived rows, or active ones.
pub fn archived(archived: bool) -> crate::store::list::Condition {
    crate::store::list::Condition::new(
        if archived {
            "t.archived_at IS NOT NULL"
        } else {
            "t.archived_at IS NULL"
        },
        vec![],
    )
}

/// OpenAPI schemas of the checked text fields, so the document states the same limits
/// and characters the checks above apply (used with `#[schema(schema_with = …)]`).
pub mod text_schema {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    use utoipa::openapi::{Object, RefOr, Schema};

    fn string(max: usize, pattern: &str, nullable: bool, description: &str) -> Object {
        let ty = if nullable {
            SchemaType::from_iter([Type::String, Type::Null])
        } else {
            SchemaType::Type(Type::String)
        };
        ObjectBuilder::new()
            .schema_type(ty)
            .max_length(Some(max))
            .pattern(Some(pattern))
            .description(Some(description))
            .build()
    }

    /// A name: 1–200 characters, one line, not blank.
    pub fn name() -> RefOr<Schema> {
        let mut o = string(
            super::NAME_MAX,
            super::NAME_PATTERN,
            false,
            "1-200 characters on one line: no control characters, line separators or bidirectional overrides; surrounding white space is trimmed",
        );
        o.min_length = Some(1);
        RefOr::T(Schema::Object(o))
    }

    /// A description: at most 5,000 characters; tab and line breaks allowed.
    pub fn description() -> RefOr<Schema> {
        RefOr::T(Schema::Object(string(
            super::DESCRIPTION_MAX,
            super::TEXT_PATTERN,
            true,
            "At most 5,000 characters; tab and line breaks allowed, other control characters and bidirectional overrides not. Empty or null: none",
        )))
    }

    /// One line of at most `max` characters, nullable.
    pub fn line(max: usize, description: &str) -> RefOr<Schema> {
        RefOr::T(Schema::Object(string(
            max,
            super::LINE_PATTERN,
            true,
            description,
        )))
    }

    /// Prose of at most `max` characters, nullable.
    pub fn text(max: usize, description: &str) -> RefOr<Schema> {
        RefOr::T(Schema::Object(string(
            max,
            super::TEXT_PATTERN,
            true,
            description,
        )))
    }
}
