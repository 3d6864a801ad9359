//! The success envelope (`data` + `meta`) and the list envelope
//! (`data`, `has_more`, `total_count`, `facets?`, `meta`).

use std::collections::BTreeMap;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

tokio::task_local! {
    /// The id of the request being served, set by the request-id middleware for the
    /// whole handler future, so envelopes and errors can name it without plumbing.
    pub static REQUEST_ID: String;
}

/// `meta` of every response.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Meta {
    /// `req_…`; also in the `X-Request-Id` header and in every log line of the request.
    pub request_id: String,
    /// ISO 8601 time the response was made.
    pub timestamp: String,
}

impl Meta {
    pub fn current() -> Self {
        Self {
            request_id: REQUEST_ID.try_with(Clone::clone).unwrap_or_default(),
            timestamp: crate::timestamp::now(),
        }
    }
}

/// `{data, meta}`.
#[derive(Serialize, ToSchema)]
pub struct Envelope<T> {
    pub data: T,
    pub meta: Meta,
}

/// 200 with `{data, meta}`.
pub fn ok<T: Serialize>(data: T) -> Response {
    Json(Envelope {
        data,
        meta: Meta::current(),
    })
    .into_response()
}

/// 201 with `{data, meta}` (synchronous creation).
pub fn created<T: Serialize>(data: T) -> Response {
    (
        StatusCode::CREATED,
        Json(Envelope {
            data,
            meta: Meta::current(),
        }),
    )
        .into_response()
}

/// One `{value, count}` of a facet dimension.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct FacetValue {
    pub value: String,
    pub count: i64,
}

/// A page of a list.
#[derive(Serialize, ToSchema)]
pub struct ListEnvelope<T> {
    pub data: Vec<T>,
    /// More items follow the last one of this page; pass its id as `starting_after`.
    pub has_more: bool,
    /// Exact number of items matching the filters, independent of page size.
    pub total_count: i64,
    /// Present when `facets` was requested: dimension → values by count, descending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub facets: Option<BTreeMap<String, Vec<FacetValue>>>,
    pub meta: Meta,
}

/// Page of items as produced by the list machinery, before the envelope.
pub struct Page<T> {
    pub items: Vec<T>,
    pub has_more: bool,
    pub total_count: i64,
    pub facets: Option<BTreeMap<String, Vec<FacetValue>>>,
}

impl<T> Page<T> {
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            has_more: self.has_more,
            total_count: self.total_count,
            facets: self.facets,
        }
    }
}

impl<T: Serialize> IntoResponse for Page<T> {
    fn into_response(self) -> Response {
        Json(ListEnvelope {
            data: self.items,
            has_more: self.has_more,
            total_count: self.total_count,
            facets: self.facets,
            meta: Meta::current(),
        })
        .into_response()
    }
}

/// `{id, deleted: true, meta}`, the body of every DELETE (the spec's `{deleted: true}`
/// form, with the id as Stripe does).
#[derive(Serialize, ToSchema)]
pub struct Deleted {
    pub id: String,
    pub deleted: bool,
    pub meta: Meta,
}

impl Deleted {
    pub fn response(id: String) -> Response {
        Json(Deleted {
            id,
            deleted: true,
            meta: Meta::current(),
        })
        .into_response()
    }
}
