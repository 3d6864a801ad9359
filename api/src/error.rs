//! The one error type of the API: every failure a client can see is an [`ApiError`] that
//! knows its HTTP status and its spec code, and renders the spec's error shape
//! (`error {code, message, details?, children?}` + `meta`). Internal causes are logged with
//! the request id and never sent to the client.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::http::envelope::Meta;

/// Every error code the API answers with (spec § Errors). The serialised name is the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// 400: body, query or required form field fails validation.
    ValidationError,
    /// 401: missing, malformed or revoked key.
    Unauthorized,
    /// 402: wallet cannot cover the request.
    InsufficientBalance,
    /// 403: the key lacks the required scope.
    Forbidden,
    /// 403: global search where no requested type is readable by the key.
    InsufficientPermissions,
    /// 404: endpoint path does not exist.
    NotFound,
    /// 409: resource already exists or duplicate operation.
    Conflict,
    /// 409: archiving or deleting a resource with active children without `cascade=true`.
    ResourceHasChildren,
    /// 409: another request with the same Idempotency-Key is still in flight.
    IdempotencyConflict,
    /// 413: body above 15 MiB.
    PayloadTooLarge,
    /// 429: per-key rate limit exceeded.
    RateLimitExceeded,
    /// 500: unhandled server error.
    InternalError,
    /// 503: a dependent service (database, queue) is unhealthy; retry later.
    ServiceUnavailable,
    BrandNotFound,
    ProductNotFound,
    ProductVariantNotFound,
    AudienceNotFound,
    ImageNotFound,
    DesignTemplateNotFound,
    /// 404: the design template has no such `json_tree_version`.
    DesignTemplateVersionNotFound,
    ImageAdNotFound,
    ImageAdVersionNotFound,
    /// 404: the image ad batch does not exist or belongs to another organisation.
    ImageAdBatchNotFound,
    /// 404: no such webhook endpoint in the organisation.
    WebhookEndpointNotFound,
    /// 404: no such event in the organisation.
    EventNotFound,
    /// 422: product_id does not belong to brand_id.
    ProductBrandMismatch,
    /// 422: audience_id does not belong to product_id.
    AudienceProductMismatch,
    /// 422: reference_ad_url is unreachable or not an image.
    ReferenceAdUrlInvalid,
    /// 422: the product has no variant with attached images.
    ProductVariantNoImages,
    /// 422: PATCH on an ad that is processing or failed.
    ImageAdNotCompleted,
    /// 422: PATCH on a flat ad.
    ImageAdNotEditable,
    /// 422: the design template is processing or failed.
    DesignTemplateNotReady,
    /// 400: the upload is not PNG, JPEG or WebP.
    ImageInvalidFormat,
    /// 400: the upload cannot be decoded.
    ImageUnreadable,
    /// 500: storing the upload failed; retry.
    ImageUploadFailed,
    /// 422: no product can be cut out of the image (the message says why: nothing stands
    /// out, the mask fills the frame or falls apart, or the model is not installed).
    ImageCutoutFailed,
    /// 422: the image has no distinct object to cut out: it is one colour all over or nearly
    /// (a blank, a noise texture), the mask is empty, or the cut-out model is sure of no
    /// object in it. Upload a photo of the product on a plain ground.
    ImageNoSubject,
    /// 404: a swipe file (or, with `details` per id, some of `swipe_file_ids`) is not in the
    /// organisation's library.
    SwipeFileNotFound,
    /// 409: archive, restore or delete of a managed design (a data source's, read-only).
    SwipeFileReadOnly,
    /// 404: the design pack does not exist or belongs to another organisation.
    DesignPackNotFound,
    /// 409: adding would take the pack above 500 designs.
    DesignPackFull,
    /// 404: the data source does not exist.
    DataSourceNotFound,
    /// 422: a sync from Figma, but the organisation has not connected Figma
    /// (PUT /v1/integrations/figma).
    FigmaNotConnected,
    /// 422: a re-sync (`image_ad_id`) of an ad that was not made from a Figma frame.
    ImageAdNotSynced,
}

impl ErrorCode {
    /// The HTTP status that goes with the code.
    pub fn status(self) -> StatusCode {
        use ErrorCode::*;
        match self {
            ValidationError | ImageInvalidFormat | ImageUnreadable => StatusCode::BAD_REQUEST,
            Unauthorized => StatusCode::UNAUTHORIZED,
            InsufficientBalance => StatusCode::PAYMENT_REQUIRED,
            Forbidden | InsufficientPermissions => StatusCode::FORBIDDEN,
            NotFound
            | BrandNotFound
            | ProductNotFound
            | ProductVariantNotFound
            | AudienceNotFound
            | ImageNotFound
            | DesignTemplateNotFound
            | DesignTemplateVersionNotFound
            | ImageAdNotFound
            | ImageAdVersionNotFound
            | ImageAdBatchNotFound
            | WebhookEndpointNotFound
            | EventNotFound
            | SwipeFileNotFound
            | DesignPackNotFound
            | DataSourceNotFound => StatusCode::NOT_FOUND,
            Conflict | ResourceHasChildren | IdempotencyConflict | SwipeFileReadOnly
            | DesignPackFull => StatusCode::CONFLICT,
            PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            RateLimitExceeded => StatusCode::TOO_MANY_REQUESTS,
            InternalError | ImageUploadFailed => StatusCode::INTERNAL_SERVER_ERROR,
            ServiceUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            ProductBrandMismatch
            | AudienceProductMismatch
            | ReferenceAdUrlInvalid
            | ProductVariantNoImages
            | ImageAdNotCompleted
            | ImageAdNotEditable
            | DesignTemplateNotReady
            | ImageCutoutFailed
            | ImageNoSubject
            | FigmaNotConnected
            | ImageAdNotSynced => StatusCode::UNPROCESSABLE_ENTITY,
        }
    }
}

/// One field-level problem, in `error.details`.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct FieldError {
    /// Dotted path of the offending field (`fonts[0].name`), query parameter or form field.
    pub field: String,
    /// What is wrong and what to send instead.
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Counts of active children, in `error.children` of RESOURCE_HAS_CHILDREN and in archive
/// responses.
#[derive(Debug, Clone, Copy, Default, Serialize, ToSchema, PartialEq)]
pub struct ChildCounts {
    pub products: i64,
    pub product_variants: i64,
    pub audiences: i64,
}

/// At most this many `details` are sent; the message says how many were left out.
pub const MAX_DETAILS: usize = 100;
/// Messages (the error's and each detail's) are cut at this many characters, ending with a
/// count of what was left out.
pub const MAX_MESSAGE_CHARS: usize = 1_000;

/// `text` cut to [`MAX_MESSAGE_CHARS`] characters, saying how many were left out.
fn bounded(text: String) -> String {
    let total = text.chars().count();
    if total <= MAX_MESSAGE_CHARS {
        return text;
    }
    let keep = MAX_MESSAGE_CHARS - 40;
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(&format!("… ({} more characters)", total - keep));
    out
}

/// An error as the client sees it, plus the internal cause for the log.
#[derive(Debug)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub details: Vec<FieldError>,
    pub children: Option<ChildCounts>,
    /// Seconds, sent as `Retry-After` (429, 503).
    pub retry_after: Option<u64>,
    /// Logged, never sent.
    pub internal: Option<String>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: Vec::new(),
            children: None,
            retry_after: None,
            internal: None,
        }
    }

    /// 400 VALIDATION_ERROR with one or more field details; the message sums them up
    /// (naming at most ten fields; the response carries at most [`MAX_DETAILS`]).
    pub fn validation(details: Vec<FieldError>) -> Self {
        const NAMED: usize = 10;
        let message = match details.as_slice() {
            [one] => format!("Invalid `{}`: {}", one.field, one.message),
            many => {
                let mut names = many
                    .iter()
                    .take(NAMED)
                    .map(|d| format!("`{}`", d.field))
                    .collect::<Vec<_>>()
                    .join(", ");
                if many.len() > NAMED {
                    names.push_str(&format!(" and {} more", many.len() - NAMED));
                }
                format!("{} fields are invalid: {names}; see `details`", many.len())
            }
        };
        Self {
            details,
            ..Self::new(ErrorCode::ValidationError, message)
        }
    }

    /// 400 VALIDATION_ERROR for a single field.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::validation(vec![FieldError::new(field, message)])
    }

    /// A resource-specific 404 (`BRAND_NOT_FOUND` ...), naming the id that was not found.
    pub fn not_found(code: ErrorCode, kind: &str, id: &str) -> Self {
        Self::new(
            code,
            format!("No {kind} with id `{id}` exists in this organization"),
        )
    }

    /// 500 INTERNAL_ERROR; `cause` is logged with the request id, not sent.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        Self {
            internal: Some(cause.to_string()),
            ..Self::new(
                ErrorCode::InternalError,
                "The server failed to handle the request; retry, and report meta.request_id if it persists",
            )
        }
    }

    pub fn with_children(mut self, children: ChildCounts) -> Self {
        self.children = Some(children);
        self
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> Self {
        // The single place where database failures become client-visible errors.
        // An unreachable database (PostgreSQL down or restarting, the pool exhausted) is the
        // service's trouble, not the client's: 503 with Retry-After, like a busy SQLite.
        let unreachable = match &e {
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => true,
            // SQLSTATE class 08 (connection exception), 57P01–57P03 (shutdown, cannot
            // connect now), 53300 (too many connections).
            sqlx::Error::Database(db) => db.code().is_some_and(|c| {
                c.starts_with("08") || matches!(c.as_ref(), "57P01" | "57P02" | "57P03" | "53300")
            }),
            _ => false,
        };
        if unreachable {
            return Self {
                retry_after: Some(1),
                internal: Some(e.to_string()),
                ..Self::new(
                    ErrorCode::ServiceUnavailable,
                    "The database cannot be reached; retry shortly",
                )
            };
        }
        if let sqlx::Error::Database(db) = &e {
            let msg = db.message();
            if msg.contains("database is locked") || msg.contains("busy") {
                return Self {
                    retry_after: Some(1),
                    internal: Some(e.to_string()),
                    ..Self::new(
                        ErrorCode::ServiceUnavailable,
                        "The database is busy; retry in a second",
                    )
                };
            }
            if db.is_unique_violation() {
                return Self {
                    internal: Some(e.to_string()),
                    ..Self::new(
                        ErrorCode::Conflict,
                        "A resource with these values already exists",
                    )
                };
            }
        }
        Self::internal(e)
    }
}

impl From<adforge_worker::imaging::ImagingError> for ApiError {
    /// The single place where image decoding failures become client errors: the format
    /// refusals are IMAGE_INVALID_FORMAT, incomplete or corrupt files IMAGE_UNREADABLE, an
    /// image over the limits VALIDATION_ERROR on the form field `file`, and a failed decode
    /// task a 500 whose cause is logged.
    fn from(e: adforge_worker::imaging::ImagingError) -> Self {
        use adforge_worker::imaging::ImagingError::*;
        match e {
            OtherFormat { .. } | UnknownFormat => {
                Self::new(ErrorCode::ImageInvalidFormat, e.to_string())
            }
            Incomplete { .. } | Undecodable { .. } => {
                Self::new(ErrorCode::ImageUnreadable, e.to_string())
            }
            TooLarge { .. } => Self::field("file", e.to_string()),
            Internal { cause } => Self::internal(cause),
        }
    }
}

/// The body of every error response.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorObject,
    pub meta: Meta,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorObject {
    pub code: ErrorCode,
    pub message: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<FieldError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub children: Option<ChildCounts>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.code.status();
        if let Some(cause) = &self.internal {
            tracing::error!(code = ?self.code, cause = %cause, "request failed");
        } else if status.is_server_error() {
            tracing::error!(code = ?self.code, message = %self.message, "request failed");
        }
        let mut message = self.message;
        let mut details = self.details;
        if details.len() > MAX_DETAILS {
            message = format!(
                "{message} ({MAX_DETAILS} of {} details are listed)",
                details.len()
            );
            details.truncate(MAX_DETAILS);
        }
        for d in &mut details {
            d.field = bounded(std::mem::take(&mut d.field));
            d.message = bounded(std::mem::take(&mut d.message));
        }
        let body = ErrorBody {
            error: ErrorObject {
                code: self.code,
                message: bounded(message),
                details,
                children: self.children,
            },
            meta: Meta::current(),
        };
        let mut res = (status, axum::Json(body)).into_response();
        if let Some(secs) = self.retry_after
            && let Ok(v) = HeaderValue::from_str(&secs.to_string())
        {
            res.headers_mut().insert(header::RETRY_AFTER, v);
        }
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 300 invalid fields with 5,000-character messages: at most [`MAX_DETAILS`] details,
    /// every message at most [`MAX_MESSAGE_CHARS`] characters ending with how much was
    /// cut, and the message says how many details there were.
    #[tokio::test]
    async fn error_bodies_are_bounded() {
        let details = (0..300)
            .map(|i| FieldError::new(format!("f{i}"), "x".repeat(5_000)))
            .collect();
        let res = ApiError::validation(details).into_response();
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let listed = v["error"]["details"].as_array().unwrap();
        assert_eq!(listed.len(), MAX_DETAILS);
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains("100 of 300 details"), "{message}");
        assert!(message.contains("and 290 more"), "{message}");
        assert!(message.chars().count() <= MAX_MESSAGE_CHARS);
        for d in listed {
            let m = d["message"].as_str().unwrap();
            assert!(m.chars().count() <= MAX_MESSAGE_CHARS, "{}", m.len());
            assert!(m.ends_with("more characters)"), "{m}");
        }
        assert!(bytes.len() < 120_000, "{} bytes", bytes.len());
        // Short errors are untouched.
        let res = ApiError::field("name", "is required").into_response();
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["error"]["message"], "Invalid `name`: is required");
    }

    /// Each imaging error keeps the code and text the API answered with before imaging had
    /// its own error type.
    #[test]
    fn imaging_errors_keep_their_codes_and_texts() {
        use adforge_worker::imaging::ImagingError;
        let e = ApiError::from(ImagingError::OtherFormat {
            found: "GIF".into(),
        });
        assert_eq!(e.code, ErrorCode::ImageInvalidFormat);
        assert_eq!(e.message, "The file is GIF; upload PNG, JPEG or WebP");
        let e = ApiError::from(ImagingError::UnknownFormat);
        assert_eq!(e.code, ErrorCode::ImageInvalidFormat);
        assert_eq!(
            e.message,
            "The file is not a PNG, JPEG or WebP image (its first bytes match none of them); upload one of those formats"
        );
        let e = ApiError::from(ImagingError::Incomplete {
            format: image::ImageFormat::WebP,
            why: "it is shorter than its RIFF header declares",
        });
        assert_eq!(e.code, ErrorCode::ImageUnreadable);
        assert_eq!(
            e.message,
            "The WEBP file is incomplete (it is shorter than its RIFF header declares); upload the whole file"
        );
        let e = ApiError::from(ImagingError::Undecodable {
            format: image::ImageFormat::Jpeg,
            source: image::ImageError::Limits(image::error::LimitError::from_kind(
                image::error::LimitErrorKind::InsufficientMemory,
            )),
        });
        assert_eq!(e.code, ErrorCode::ImageUnreadable);
        assert_eq!(
            e.message,
            "The JPEG file cannot be decoded (Memory limit exceeded); check that it is complete and not corrupted"
        );
        let e = ApiError::from(ImagingError::TooLarge {
            width: 20_000,
            height: 1,
        });
        assert_eq!(e.code, ErrorCode::ValidationError);
        assert_eq!(
            e.details,
            vec![FieldError::new(
                "file",
                "the image is 20000×1 pixels; at most 16384 pixels a side and 50000000 pixels in all are accepted"
            )]
        );
        let e = ApiError::from(ImagingError::Internal {
            cause: "task 7 panicked".into(),
        });
        assert_eq!(e.code, ErrorCode::InternalError);
        assert_eq!(e.message, ApiError::internal("").message);
        assert_eq!(e.internal.as_deref(), Some("task 7 panicked"));
    }
}
