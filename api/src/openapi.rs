//! The OpenAPI 3.1 description, generated from the handlers' annotations (utoipa) and
//! completed here with what applies to every endpoint: the security scheme, the error
//! shape and codes, and the conventions where the spec left decisions to us.

use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};

const DESCRIPTION: &str = r#"adforge generates static image ads from brands, products, audiences and a reference ad.

## Authentication
Send the key in `X-API-Key` (`svc_live_…`), exactly as issued. `Authorization: Bearer` is not
accepted. Missing, malformed or revoked key: 401 `UNAUTHORIZED`. A key without the scope for
the action: 403 `FORBIDDEN`. Each operation lists the scope it needs under `security`.

Scopes: `brands:read`, `brands:write`, `products:read`, `products:write`,
`product_variants:read`, `product_variants:write`, `audiences:read`, `audiences:write`,
`images:read`, `images:write`, `image_ads:read`, `image_ads:write`,
`design_templates:read`, `design_templates:write`, `swipe_files:read`, `swipe_files:write`,
`design_packs:read`, `design_packs:write`. Write scopes do not imply read scopes. A key
issued with `all` holds every scope, including scopes added later.

## Responses
Success: `{data, meta}`; lists: `{data, has_more, total_count, facets?, meta}`; errors:
`{error: {code, message, details?, children?}, meta}`. `meta.request_id` (`req_…`) is also
in the `X-Request-Id` header. Synchronous creates answer 201. DELETE answers
`{id, deleted: true, meta}`; deletes are soft: the resource answers 404 afterwards while
images and ads already made from it keep working.

## Lists
`limit` 1–100 (default 20), `starting_after` = the id of the last item received (any other
value is 400), newest first. `total_count` is exact. Follow `has_more`. `ids` takes at most
100 ids. Unknown query parameters are rejected with 400 naming the allowed ones.

## Rate limits
100 requests per rolling 60 seconds per key unless the key has an override. Every
authenticated response carries `RateLimit-Limit`, `RateLimit-Remaining` and
`RateLimit-Reset` (seconds until the oldest counted request leaves the window). Over the
limit: 429 `RATE_LIMIT_EXCEEDED` with `Retry-After` in seconds.

## Idempotency
Every POST and PATCH honours `Idempotency-Key` (1–255 visible ASCII characters; a UUID is
typical), scoped to the API key and kept 24 hours. A retry with the same key and the same
request replays the first response (same status and body) with `Idempotent-Replayed: true`.
The same key while the first request is still running: 409 `IDEMPOTENCY_CONFLICT`. The
same key with a different method, path or body: 400 `VALIDATION_ERROR` on field
`Idempotency-Key`. Responses with status 500 or above are not kept, so a retry runs again.

## Limits
Request bodies: at most 15 MiB (15,728,640 bytes), else 413 `PAYLOAD_TOO_LARGE`, decided
while the body streams in. Uploaded images: PNG, JPEG or WebP, at most 16,384 px a side and
50 megapixels. Names: 1–200 characters. Free-form JSON objects (`details`, `attributes`):
at most 16 KiB.
"#;

#[derive(OpenApi)]
#[openapi(
    info(title = "adforge API", version = "1.0.0", description = "See the top-level description"),
    modifiers(&Security),
    components(schemas(crate::error::ErrorBody, crate::error::ErrorCode, crate::auth::Scope)),
    tags(
        (name = "brands", description = "Visual identity: name, palettes, fonts, logos"),
        (name = "products", description = "What ads sell; archive hides, delete removes"),
        (name = "product variants", description = "SKUs of a product and their images"),
        (name = "audiences", description = "Who a product's ads speak to"),
        (name = "images", description = "Uploaded assets with WebP thumbnails"),
        (name = "search", description = "Global search across types"),
        (name = "swipe files", description = "Reference designs: uploads and subscribed data sources, embedded, classified and found by filtered vector search"),
        (name = "design packs", description = "Named, organisation-wide collections of swipe-file designs"),
    )
)]
pub struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-API-Key",
                "A live key, `svc_live_…`; operations list the scope they need",
            ))),
        );
    }
}

/// Completes the generated document: description, server, and the 401/429 answers every
/// authenticated operation can give.
pub fn finish(mut doc: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    doc.info.description = Some(DESCRIPTION.to_string());
    for item in doc.paths.paths.values_mut() {
        for op in [
            &mut item.get,
            &mut item.post,
            &mut item.patch,
            &mut item.delete,
            &mut item.put,
        ]
        .into_iter()
        .flatten()
        {
            for (status, text) in [
                ("401", "UNAUTHORIZED: missing, malformed or revoked key"),
                (
                    "403",
                    "FORBIDDEN: the key lacks the scope listed under security",
                ),
                ("429", "RATE_LIMIT_EXCEEDED: wait Retry-After seconds"),
                ("500", "INTERNAL_ERROR"),
            ] {
                op.responses
                    .responses
                    .entry(status.to_string())
                    .or_insert_with(|| {
                        utoipa::openapi::RefOr::T(
                            utoipa::openapi::ResponseBuilder::new()
                                .description(text)
                                .content(
                                    "application/json",
                                    utoipa::openapi::ContentBuilder::new()
                                        .schema(Some(utoipa::openapi::Ref::from_schema_name(
                                            "ErrorBody",
                                        )))
                                        .build(),
                                )
                                .build(),
                        )
                    });
            }
        }
    }
    doc
}
