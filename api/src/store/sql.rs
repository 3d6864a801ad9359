//! One portable SQL text for both engines: the query constructors every handler uses, and
//! the column types whose SQLite and PostgreSQL representations differ.
//!
//! Queries are written with `?` placeholders (and `?N` where one value is used twice). They
//! are rewritten once to PostgreSQL's `$N`, which sqlx's SQLite driver also understands, and
//! kept: a query text is translated the first time it runs and then found in a map, so the
//! cost on the hot path is one hash lookup. The map holds each distinct text once; texts are
//! the handlers' literals and the list builders' combinations of filters, a bounded set.

use std::collections::HashMap;
use std::sync::{LazyLock, PoisonError, RwLock};

use serde_json::{Map, Value};
use sqlx::any::{AnyArguments, AnyRow, AnyTypeInfo, AnyTypeInfoKind, AnyValueRef};
use sqlx::error::BoxDynError;
use sqlx::query::{Query, QueryAs, QueryScalar};
use sqlx::{Any, Decode, Encode, FromRow, Type, ValueRef};

static TEXTS: LazyLock<RwLock<HashMap<Box<str>, &'static str>>> = LazyLock::new(Default::default);

/// The `$N` form of `sql`, translated once per distinct text.
fn numbered(sql: &str) -> &'static str {
    if let Some(t) = TEXTS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(sql)
    {
        return t;
    }
    let translated: &'static str = Box::leak(to_dollar(sql).into_boxed_str());
    TEXTS
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(sql.into())
        .or_insert(translated)
}

/// Rewrites `?` and `?N` placeholders outside quoted text to `$N`, numbering plain `?`
/// the way SQLite does (one more than the largest number so far).
fn to_dollar(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut last = 0u32;
    let mut quote: Option<char> = None;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            out.push(c);
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                out.push(c);
            }
            '?' => {
                let mut n = 0u32;
                let mut explicit = false;
                while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                    n = n.saturating_mul(10).saturating_add(d);
                    explicit = true;
                    chars.next();
                }
                if !explicit {
                    n = last + 1;
                }
                last = last.max(n);
                out.push('$');
                out.push_str(&n.to_string());
            }
            _ => out.push(c),
        }
    }
    out
}

/// `sqlx::query` for the portable text `sql`.
pub fn query<'q>(sql: &str) -> Query<'q, Any, AnyArguments<'q>> {
    sqlx::query(numbered(sql))
}

/// `sqlx::query_as` for the portable text `sql`.
pub fn query_as<'q, O>(sql: &str) -> QueryAs<'q, Any, O, AnyArguments<'q>>
where
    O: for<'r> FromRow<'r, AnyRow>,
{
    sqlx::query_as(numbered(sql))
}

/// `sqlx::query_scalar` for the portable text `sql`.
pub fn query_scalar<'q, O>(sql: &str) -> QueryScalar<'q, Any, O, AnyArguments<'q>>
where
    (O,): for<'r> FromRow<'r, AnyRow>,
{
    sqlx::query_scalar(numbered(sql))
}

/// `n` placeholders for an `IN (…)` list: `?, ?, ?`.
pub fn marks(n: usize) -> String {
    vec!["?"; n].join(", ")
}

/// A 0/1 flag column (`INTEGER` on SQLite, `BIGINT` on PostgreSQL) or a comparison's
/// result (an integer on SQLite, a boolean on PostgreSQL), read as a `bool`. Fields use it as
/// `#[sqlx(try_from = "Flag")] field: bool`. Binds are `i64`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flag(pub bool);

impl From<Flag> for bool {
    fn from(f: Flag) -> Self {
        f.0
    }
}

impl Type<Any> for Flag {
    fn type_info() -> AnyTypeInfo {
        <i64 as Type<Any>>::type_info()
    }

    fn compatible(ty: &AnyTypeInfo) -> bool {
        matches!(
            ty.kind,
            AnyTypeInfoKind::Bool
                | AnyTypeInfoKind::SmallInt
                | AnyTypeInfoKind::Integer
                | AnyTypeInfoKind::BigInt
        )
    }
}

impl<'r> Decode<'r, Any> for Flag {
    fn decode(value: AnyValueRef<'r>) -> Result<Self, BoxDynError> {
        if let Ok(i) = <i64 as Decode<Any>>::decode(value.clone()) {
            return Ok(Self(i != 0));
        }
        <bool as Decode<Any>>::decode(value).map(Self)
    }
}

impl<'q> Encode<'q, Any> for Flag {
    fn encode_by_ref(
        &self,
        buf: &mut <Any as sqlx::Database>::ArgumentBuffer<'q>,
    ) -> Result<sqlx::encode::IsNull, BoxDynError> {
        <i64 as Encode<Any>>::encode(i64::from(self.0), buf)
    }
}

/// A JSON document kept in a `TEXT` column, read into the field's type with
/// `#[sqlx(try_from = "JsonText")]`. NULL reads as JSON `null`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JsonText(pub Value);

impl Type<Any> for JsonText {
    fn type_info() -> AnyTypeInfo {
        <String as Type<Any>>::type_info()
    }

    fn compatible(ty: &AnyTypeInfo) -> bool {
        matches!(ty.kind, AnyTypeInfoKind::Text | AnyTypeInfoKind::Null)
    }
}

impl<'r> Decode<'r, Any> for JsonText {
    fn decode(value: AnyValueRef<'r>) -> Result<Self, BoxDynError> {
        if value.is_null() {
            return Ok(Self(Value::Null));
        }
        let text = <String as Decode<Any>>::decode(value)?;
        Ok(Self(serde_json::from_str(&text)?))
    }
}

impl From<JsonText> for Value {
    fn from(j: JsonText) -> Self {
        j.0
    }
}

/// Implements `TryFrom<JsonText>` for column types read with
/// `#[sqlx(try_from = "JsonText")]` (an `Option` type reads NULL as `None`).
#[macro_export]
macro_rules! json_columns {
    ($($t:ty),* $(,)?) => {$(
        impl TryFrom<$crate::store::JsonText> for $t {
            type Error = serde_json::Error;
            fn try_from(j: $crate::store::JsonText) -> Result<Self, Self::Error> {
                serde_json::from_value(j.0)
            }
        }
    )*};
}

json_columns!(
    Option<Map<String, Value>>,
    Map<String, Value>,
    Vec<String>,
    Option<Vec<String>>,
);

#[cfg(test)]
mod tests {
    use super::to_dollar;

    #[test]
    fn placeholders_are_numbered_outside_quotes() {
        assert_eq!(
            to_dollar("SELECT a FROM t WHERE b = ? AND c = '?' AND d IN (?, ?)"),
            "SELECT a FROM t WHERE b = $1 AND c = '?' AND d IN ($2, $3)"
        );
        assert_eq!(
            to_dollar("UPDATE w SET b = b - ?1, h = h - ?1 WHERE o = ?3 AND x = ?"),
            "UPDATE w SET b = b - $1, h = h - $1 WHERE o = $3 AND x = $4"
        );
        assert_eq!(
            to_dollar("SELECT 'it''s ?', \"q?\" , ?"),
            "SELECT 'it''s ?', \"q?\" , $1"
        );
    }
}
