//! Listing templates: the filters of GET /v1/design-templates as a typed [`TemplateFilter`]
//! (parsed from a query by the handler, built directly by the dashboard) and [`list`].

use super::store::{self, TemplateRow};
use super::{DesignTemplate, STATUSES};
use crate::error::ApiResult;
use crate::http::extract::QueryParams;
use crate::store::list::ListParams;

/// The filters of GET /v1/design-templates.
#[derive(Debug, Clone, Default)]
pub struct TemplateFilter {
    /// Among [`STATUSES`].
    pub status: Option<Vec<String>>,
    pub industry: Option<Vec<String>>,
    pub ad_format: Option<Vec<String>>,
    /// List the soft-deleted templates (only them) instead of the live ones.
    pub deleted: bool,
}

impl TemplateFilter {
    /// The filters of a GET /v1/design-templates query; problems are recorded in `q`.
    pub fn from_query(q: &mut QueryParams) -> Self {
        let filter = Self {
            status: q.csv("status"),
            industry: q.csv("industry"),
            ad_format: q.csv("ad_format"),
            deleted: q.bool("deleted", false),
        };
        for e in filter.problems() {
            q.error(&e.field, e.message);
        }
        filter
    }

    /// What is wrong with the filter's values, naming each query parameter.
    pub fn problems(&self) -> Vec<crate::error::FieldError> {
        self.status
            .iter()
            .flatten()
            .filter(|v| !STATUSES.contains(&v.as_str()))
            .map(|v| {
                crate::error::FieldError::new(
                    "status",
                    format!("`{v}` is not one of {}", STATUSES.join(", ")),
                )
            })
            .collect()
    }
}

/// A page of the organisation's templates with `filter`, facets and paging (what GET
/// /v1/design-templates answers; the dashboard's templates page calls it too).
///
/// # Errors
/// VALIDATION_ERROR for a bad filter value or cursor; database failures.
pub async fn list(
    db: &crate::store::Db,
    org_id: &str,
    filter: &TemplateFilter,
    p: &ListParams,
) -> ApiResult<crate::http::envelope::Page<DesignTemplate>> {
    crate::resources::common::finish(filter.problems())?;
    let page = store::list(db, org_id, filter, p).await?;
    Ok(page.map(TemplateRow::into_api))
}
