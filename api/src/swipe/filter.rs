//! Which designs an organisation sees, and the filters of swipe-file lists, search and
//! design packs.
//!
//! Visible = the organisation's own uploads + designs of data sources it is subscribed to.
//! A subscription is a row in `data_source_subscriptions`; without a row an organisation is
//! subscribed exactly to the sources marked `is_default` (so every organisation, new or old,
//! starts subscribed to the default collection, and turning it off is one row).

use adforge_worker::swipe::taxonomy::{AD_FORMATS, ASPECT_RATIOS, INDUSTRIES};

use crate::error::FieldError;
use crate::http::extract::QueryParams;
use crate::store::list::{Bind, Condition};

/// Ids of the data sources `?` (an org id) is subscribed to.
pub const SUBSCRIBED_SOURCES: &str = "SELECT s.id FROM data_sources s \
     LEFT JOIN data_source_subscriptions u ON u.source_id = s.id AND u.org_id = ? \
     WHERE coalesce(u.active, s.is_default) = 1";

/// Designs (alias `t`) the organisation sees.
pub fn visible(org_id: &str) -> Condition {
    Condition::new(
        format!(
            "t.org_id = ? OR (t.org_id IS NULL AND t.data_source_id IN ({SUBSCRIBED_SOURCES}))"
        ),
        vec![Bind::Text(org_id.into()), Bind::Text(org_id.into())],
    )
}

/// The swipe-file filters shared by the list, pack items, pack listing and search.
#[derive(Debug, Clone, Default)]
pub struct SwipeFilter {
    pub industry: Vec<String>,
    pub ad_format: Vec<String>,
    pub aspect_ratio: Vec<String>,
    pub status: Option<String>,
    /// `Some(true)`: only archived; `Some(false)` / `None`: only active.
    pub archived: bool,
    /// `None`: every subscribed source; `Some(empty)`: no managed designs.
    pub data_source_ids: Option<Vec<String>>,
    pub include_own: bool,
    pub design_pack_id: Option<String>,
}

pub const STATUSES: [&str; 3] = ["processing", "ready", "failed"];

fn check(field: &str, values: &[String], allowed: &[&str], errors: &mut Vec<FieldError>) {
    for v in values {
        if !allowed.contains(&v.as_str()) {
            errors.push(FieldError::new(
                field,
                format!(
                    "`{v}` is not a value of {field}; use one of {}",
                    allowed.join(", ")
                ),
            ));
        }
    }
}

impl SwipeFilter {
    /// Everything the organisation sees: its own active designs and those of its
    /// subscribed data sources (what an empty query means; `Default` leaves own uploads
    /// out).
    pub fn visible() -> Self {
        Self {
            include_own: true,
            ..Self::default()
        }
    }

    /// Reads the query parameters of GET /v1/swipe-files (and of the design-pack lists).
    /// `with_pack`: whether `design_pack_id` is a parameter here.
    pub fn from_query(q: &mut QueryParams, with_pack: bool, with_archived: bool) -> Self {
        let mut f = SwipeFilter {
            industry: q.all("industry"),
            ad_format: q.all("ad_format"),
            aspect_ratio: q.all("aspect_ratio"),
            status: q.one_of("status", &STATUSES),
            archived: with_archived && q.bool("archived", false),
            data_source_ids: q.csv("data_source_ids"),
            include_own: q.bool("include_own", true),
            design_pack_id: if with_pack {
                q.string("design_pack_id")
            } else {
                None
            },
        };
        let mut errors = Vec::new();
        f.validate(&mut errors);
        for e in errors {
            q.error(&e.field, e.message);
        }
        f.industry.dedup();
        f
    }

    /// Checks enumerated values, recording problems.
    pub fn validate(&self, errors: &mut Vec<FieldError>) {
        check(
            "industry",
            &self.industry,
            &INDUSTRIES.map(|(k, _)| k),
            errors,
        );
        check(
            "ad_format",
            &self.ad_format,
            &AD_FORMATS.map(|(k, _)| k),
            errors,
        );
        check(
            "aspect_ratio",
            &self.aspect_ratio,
            &ASPECT_RATIOS.map(|(k, _)| k),
            errors,
        );
    }

    /// Whether any swipe-file filter was given (design-pack listing then counts matches).
    pub fn is_active(&self) -> bool {
        !self.industry.is_empty()
            || !self.ad_format.is_empty()
            || !self.aspect_ratio.is_empty()
            || self.status.is_some()
            || self.data_source_ids.is_some()
            || !self.include_own
    }

    /// SQL conditions over alias `t`, each tagged with its facet dimension. The
    /// `design_pack_id` condition is included; check the pack is visible first.
    pub fn conditions(&self) -> Vec<Condition> {
        let mut out = Vec::new();
        for (dim, col, values) in [
            ("industry", "t.industry", &self.industry),
            ("ad_format", "t.ad_format", &self.ad_format),
            ("aspect_ratio", "t.aspect_ratio", &self.aspect_ratio),
        ] {
            if !values.is_empty() {
                out.push(Condition::any_of(Some(dim), col, values));
            }
        }
        if let Some(s) = &self.status {
            out.push(Condition::new("t.status = ?", vec![Bind::Text(s.clone())]));
        }
        out.push(Condition::new(
            if self.archived {
                "t.archived_at IS NOT NULL"
            } else {
                "t.archived_at IS NULL"
            },
            vec![],
        ));
        if !self.include_own {
            out.push(Condition::new("t.org_id IS NULL", vec![]));
        }
        if let Some(ids) = &self.data_source_ids {
            if ids.is_empty() {
                out.push(Condition::new("t.org_id IS NOT NULL", vec![]));
            } else {
                let marks = crate::store::marks(ids.len());
                out.push(Condition::new(
                    format!("t.org_id IS NOT NULL OR t.data_source_id IN ({marks})"),
                    ids.iter().cloned().map(Bind::Text).collect(),
                ));
            }
        }
        if let Some(p) = &self.design_pack_id {
            out.push(Condition::new(
                "t.id IN (SELECT swipe_file_id FROM design_pack_items WHERE pack_id = ?)",
                vec![Bind::Text(p.clone())],
            ));
        }
        out
    }
}

/// Joins conditions into one `AND`ed SQL text with its binds.
pub fn and_all(conditions: &[Condition]) -> (String, Vec<Bind>) {
    let mut sql = String::from("1 = 1");
    let mut binds = Vec::new();
    for c in conditions {
        sql.push_str(" AND (");
        sql.push_str(&c.sql);
        sql.push(')');
        binds.extend(c.binds.iter().cloned());
    }
    (sql, binds)
}
