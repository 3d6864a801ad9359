//! HTTP plumbing shared by every resource: the response envelope, extractors whose
//! rejections are our VALIDATION_ERROR shape, and the request-scoped middlewares.

pub mod envelope;
pub mod exact_numbers;
pub mod extract;
pub mod middleware;
pub mod raw_errors;
