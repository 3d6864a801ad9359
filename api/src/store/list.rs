//! The list machinery every list endpoint uses, so paging, `ids`, filters and facets
//! behave identically everywhere (spec § Shared list conventions).
//!
//! Lists are ordered newest first by the table's `seq` (an autoincrement integer), and a
//! cursor is the id of the last item received: its `seq` bounds the next page. Items
//! inserted while a client pages are newer than any cursor, so they never shift a page;
//! paging from a first page reaches exactly the items counted in its `total_count`.
//! An offset cursor was rejected because inserts would shift it; an opaque
//! (`seq`-encoding) cursor because the spec makes cursors plain ids.
//!
//! Count, page and facets are read in one read transaction, so they agree.

use std::collections::BTreeMap;

use sqlx::any::AnyRow;
use sqlx::{Any, FromRow, Transaction};

use crate::error::{ApiError, ApiResult};
use crate::http::envelope::{FacetValue, Page};
use crate::http::extract::QueryParams;
use crate::store::Db;

/// Largest page (`limit`) and largest `ids` list.
pub const MAX_LIMIT: i64 = 100;
/// Default page size.
pub const DEFAULT_LIMIT: i64 = 20;
/// At most this many values per facet dimension.
pub const MAX_FACET_VALUES: i64 = 100;

/// A value bound to a `?` placeholder.
#[derive(Debug, Clone)]
pub enum Bind {
    Text(String),
    Int(i64),
}

/// One filter of a list. `dimension` names the facet dimension the filter belongs to, so
/// that dimension's facet counts can leave it out.
#[derive(Debug, Clone)]
pub struct Condition {
    pub dimension: Option<&'static str>,
    pub sql: String,
    pub binds: Vec<Bind>,
}

impl Condition {
    pub fn new(sql: impl Into<String>, binds: Vec<Bind>) -> Self {
        Self {
            dimension: None,
            sql: sql.into(),
            binds,
        }
    }

    /// `column IN (values…)`, tagged with a facet dimension.
    pub fn any_of(dimension: Option<&'static str>, column: &str, values: &[String]) -> Self {
        let marks = super::marks(values.len());
        let sql = if values.is_empty() {
            "1 = 0".to_string()
        } else {
            format!("{column} IN ({marks})")
        };
        Self {
            dimension,
            sql,
            binds: values.iter().cloned().map(Bind::Text).collect(),
        }
    }
}

/// The paging part of a list request, parsed once.
#[derive(Debug, Clone)]
pub struct ListParams {
    pub limit: i64,
    pub starting_after: Option<String>,
    pub ids: Option<Vec<String>>,
    pub facets: Vec<&'static str>,
}

impl ListParams {
    /// The first `limit` items, no cursor, ids or facets (for callers in Rust).
    pub fn new(limit: i64) -> Self {
        Self {
            limit,
            starting_after: None,
            ids: None,
            facets: Vec::new(),
        }
    }

    /// Reads `limit`, `starting_after`, and, where the endpoint supports them, `ids` and
    /// `facets` (with the dimensions `facet_dims`).
    pub fn parse(q: &mut QueryParams, supports_ids: bool, facet_dims: &[&'static str]) -> Self {
        let limit = q.int("limit", 1, MAX_LIMIT, DEFAULT_LIMIT);
        let starting_after = q.string("starting_after");
        let ids = if supports_ids { q.csv("ids") } else { None };
        if let Some(ids) = &ids {
            if ids.is_empty() {
                q.error("ids", "must name at least one id");
            } else if ids.len() as i64 > MAX_LIMIT {
                q.error(
                    "ids",
                    format!("names {} ids; at most {MAX_LIMIT} are allowed", ids.len()),
                );
            }
        }
        let mut facets = Vec::new();
        if !facet_dims.is_empty() || q_has(q, "facets") {
            for name in q.csv("facets").unwrap_or_default() {
                match facet_dims.iter().find(|d| **d == name) {
                    Some(d) if !facets.contains(d) => facets.push(*d),
                    Some(_) => {}
                    None if facet_dims.is_empty() => {
                        q.error("facets", "this list has no facet dimensions");
                    }
                    None => q.error(
                        "facets",
                        format!(
                            "`{name}` is not a facet dimension of this list; allowed: {}",
                            facet_dims.join(", ")
                        ),
                    ),
                }
            }
        }
        Self {
            limit,
            starting_after,
            ids,
            facets,
        }
    }
}

fn q_has(q: &mut QueryParams, name: &'static str) -> bool {
    !q.all(name).is_empty()
}

/// What to list: a table, its columns, the organisation and the active filters.
pub struct ListQuery<'a> {
    pub table: &'static str,
    /// Select list, e.g. `id, name, created_at`; may use the alias `t` for the table.
    pub columns: &'a str,
    /// Extra `FROM` text after `table AS t` (joins).
    pub joins: &'a str,
    pub org_id: &'a str,
    pub conditions: Vec<Condition>,
    /// Facet dimension → SQL expression it groups by.
    pub facet_columns: &'a [(&'static str, &'static str)],
}

impl ListQuery<'_> {
    fn where_sql(
        &self,
        skip_dimension: Option<&str>,
        base: Option<&Condition>,
    ) -> (String, Vec<Bind>) {
        let (mut sql, mut binds) = match base {
            Some(b) => (format!("({})", b.sql), b.binds.clone()),
            None => (
                String::from("t.org_id = ? AND t.deleted_at IS NULL"),
                vec![Bind::Text(self.org_id.to_string())],
            ),
        };
        for c in &self.conditions {
            if skip_dimension.is_some() && c.dimension == skip_dimension {
                continue;
            }
            sql.push_str(" AND (");
            sql.push_str(&c.sql);
            sql.push(')');
            binds.extend(c.binds.iter().cloned());
        }
        (sql, binds)
    }

    /// Runs the list: exact count, one page, and the requested facets.
    ///
    /// # Errors
    /// VALIDATION_ERROR for a `starting_after` that is not an id of this list's type in the
    /// organisation; database failures.
    pub async fn fetch<T>(self, db: &Db, p: &ListParams) -> ApiResult<Page<T>>
    where
        T: for<'r> FromRow<'r, AnyRow> + Send + Unpin,
    {
        self.fetch_in(db, p, None).await
    }

    /// As [`ListQuery::fetch`], for tables whose rows an organisation sees by a rule other
    /// than `org_id = ? AND deleted_at IS NULL` (swipe files: own uploads plus designs of
    /// subscribed data sources). `visible` replaces that base condition, also for cursors.
    ///
    /// # Errors
    /// As [`ListQuery::fetch`].
    pub async fn fetch_visible<T>(
        self,
        db: &Db,
        p: &ListParams,
        visible: Condition,
    ) -> ApiResult<Page<T>>
    where
        T: for<'r> FromRow<'r, AnyRow> + Send + Unpin,
    {
        self.fetch_in(db, p, Some(visible)).await
    }

    async fn fetch_in<T>(
        mut self,
        db: &Db,
        p: &ListParams,
        base: Option<Condition>,
    ) -> ApiResult<Page<T>>
    where
        T: for<'r> FromRow<'r, AnyRow> + Send + Unpin,
    {
        let mut tx = db.begin_read().await?;
        let table = self.table;
        let mut cursor_seq = None;
        if let Some(ids) = &p.ids {
            self.conditions.push(Condition::any_of(None, "t.id", ids));
        } else if let Some(after) = &p.starting_after {
            let seq: Option<i64> = match &base {
                None => {
                    crate::store::query_scalar(&format!(
                        "SELECT seq FROM {table} WHERE id = ? AND org_id = ?"
                    ))
                    .bind(after)
                    .bind(self.org_id)
                    .fetch_optional(&mut *tx)
                    .await?
                }
                Some(b) => {
                    let sql = format!(
                        "SELECT t.seq FROM {table} AS t WHERE t.id = ? AND ({})",
                        b.sql
                    );
                    let mut binds = vec![Bind::Text(after.clone())];
                    binds.extend(b.binds.iter().cloned());
                    bind_scalar(crate::store::query_scalar(&sql), &binds)
                        .fetch_optional(&mut *tx)
                        .await?
                }
            };
            match seq {
                Some(s) => cursor_seq = Some(s),
                None => {
                    return Err(ApiError::field(
                        "starting_after",
                        format!(
                            "`{after}` is not an id from this list; pass the id of the last item of the previous page"
                        ),
                    ));
                }
            }
        }
        let (where_sql, binds) = self.where_sql(None, base.as_ref());
        let from = format!("{table} AS t {}", self.joins);

        let count_sql = format!("SELECT COUNT(*) FROM {from} WHERE {where_sql}");
        let total_count: i64 = bind_scalar(crate::store::query_scalar(&count_sql), &binds)
            .fetch_one(&mut *tx)
            .await?;

        let mut page_sql = format!("SELECT {} FROM {from} WHERE {where_sql}", self.columns);
        let mut page_binds = binds.clone();
        if let Some(seq) = cursor_seq {
            page_sql.push_str(" AND t.seq < ?");
            page_binds.push(Bind::Int(seq));
        }
        page_sql.push_str(" ORDER BY t.seq DESC");
        let page_limit = if p.ids.is_some() { MAX_LIMIT } else { p.limit };
        page_sql.push_str(" LIMIT ?");
        page_binds.push(Bind::Int(page_limit + 1));
        let mut items: Vec<T> = bind_as(crate::store::query_as(&page_sql), &page_binds)
            .fetch_all(&mut *tx)
            .await?;
        let has_more = items.len() as i64 > page_limit;
        items.truncate(page_limit as usize);

        let facets = if p.facets.is_empty() {
            None
        } else {
            Some(
                self.facets(&mut tx, &from, &p.facets, base.as_ref())
                    .await?,
            )
        };
        tx.commit().await?;
        Ok(Page {
            items,
            has_more,
            total_count,
            facets,
        })
    }

    async fn facets(
        &self,
        tx: &mut Transaction<'static, Any>,
        from: &str,
        dims: &[&'static str],
        base: Option<&Condition>,
    ) -> ApiResult<BTreeMap<String, Vec<FacetValue>>> {
        let mut out = BTreeMap::new();
        for dim in dims {
            let Some((_, expr)) = self.facet_columns.iter().find(|(d, _)| d == dim) else {
                continue;
            };
            let (where_sql, binds) = self.where_sql(Some(dim), base);
            let sql = format!(
                "SELECT CAST({expr} AS TEXT) AS value, COUNT(*) AS n FROM {from} \
                 WHERE {where_sql} AND {expr} IS NOT NULL \
                 GROUP BY value ORDER BY n DESC, value ASC LIMIT {MAX_FACET_VALUES}"
            );
            let rows: Vec<(String, i64)> = bind_as(crate::store::query_as(&sql), &binds)
                .fetch_all(&mut **tx)
                .await?;
            out.insert(
                dim.to_string(),
                rows.into_iter()
                    .map(|(value, count)| FacetValue { value, count })
                    .collect(),
            );
        }
        Ok(out)
    }
}

type Args<'q> = sqlx::any::AnyArguments<'q>;

pub fn bind_as<'q, O>(
    mut q: sqlx::query::QueryAs<'q, Any, O, Args<'q>>,
    binds: &'q [Bind],
) -> sqlx::query::QueryAs<'q, Any, O, Args<'q>> {
    for b in binds {
        q = match b {
            Bind::Text(s) => q.bind(s.as_str()),
            Bind::Int(i) => q.bind(*i),
        };
    }
    q
}

pub fn bind_scalar<'q, O>(
    mut q: sqlx::query::QueryScalar<'q, Any, O, Args<'q>>,
    binds: &'q [Bind],
) -> sqlx::query::QueryScalar<'q, Any, O, Args<'q>> {
    for b in binds {
        q = match b {
            Bind::Text(s) => q.bind(s.as_str()),
            Bind::Int(i) => q.bind(*i),
        };
    }
    q
}
