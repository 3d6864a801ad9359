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
`design_packs:read`, `design_packs:write`, `webhooks:read`, `webhooks:write`. Write scopes
do not imply read scopes. A key
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

## Webhooks
Instead of polling, register an endpoint (POST /v1/webhook-endpoints, scope
`webhooks:write`) for `image_ad.completed` and `image_ad.failed`; `webhooks:read` lists
endpoints, their deliveries and events. Each event (`evt_…`) is written in the same
transaction as the state change it reports; `data.object` is the resource as its GET
returned it then. Events are POSTed as JSON with `Adforge-Event-Id` and
`Adforge-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" keyed with the
endpoint secret>`; verify it, and reject timestamps more than 5 minutes old. After a secret
rotation the old secret signs too (a second `v1=`) for 24 hours. Delivery is at least once:
deduplicate on the event id. Any 2xx within 10 seconds is success; anything else (timeouts,
connection errors, 3xx — redirects are not followed — and other statuses) is retried with
exponential backoff and jitter (1, 2, 4 … 256 minutes, then every 6 hours) for about 26
hours, 13 attempts in all. An endpoint failing for 3 days without a success is disabled
(`disabled_reason`). Events of one image ad reach an endpoint in order. Deliveries do not
count against any rate limit. design_template.* and swipe_file.* events are not emitted yet
(those resources do not exist yet); subscribing to them is refused. The `webhooks` section
of this document describes each event's payload; docs/webhooks.md has verification code.

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
    components(schemas(crate::error::ErrorBody, crate::error::ErrorCode, crate::auth::Scope,
        crate::webhooks::Event, crate::webhooks::EventType)),
    tags(
        (name = "brands", description = "Visual identity: name, palettes, fonts, logos"),
        (name = "products", description = "What ads sell; archive hides, delete removes"),
        (name = "product variants", description = "SKUs of a product and their images"),
        (name = "audiences", description = "Who a product's ads speak to"),
        (name = "images", description = "Uploaded assets with WebP thumbnails"),
        (name = "search", description = "Global search across types"),
        (name = "webhooks", description = "Signed event deliveries, their endpoints and the event log"),
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

/// The document as JSON with the OpenAPI 3.1 `webhooks` section added: one entry per
/// emitted event type, each a POST of an `Event` carrying the signature headers. utoipa 5
/// has no model for `webhooks`, so it is inserted here.
pub fn with_webhooks(doc: utoipa::openapi::OpenApi) -> serde_json::Value {
    let mut value = serde_json::to_value(&doc).unwrap_or(serde_json::Value::Null);
    let mut hooks = serde_json::Map::new();
    for event_type in crate::webhooks::EVENT_TYPES {
        let what = match *event_type {
            "image_ad.completed" => {
                "An image ad reached `completed` (also after an edit re-rendered it); `data.object` is the ad with its `image_url`."
            }
            "image_ad.failed" => {
                "An image ad reached `failed`; `data.object.error` says why. Nothing was charged."
            }
            _ => "See the event's `data.object`.",
        };
        hooks.insert(
            (*event_type).to_string(),
            serde_json::json!({
                "post": {
                    "summary": format!("{event_type} event"),
                    "description": format!(
                        "{what} POSTed to every enabled endpoint subscribed to `{event_type}`. Verify \
                         `Adforge-Signature` before trusting the body: compute the hex HMAC-SHA256 of \
                         `<t>.<raw body>` with the endpoint secret and compare it (in constant time) with \
                         each `v1` value; reject a `t` more than 300 seconds away from now. Answer 2xx within \
                         10 seconds; anything else is retried. The same event may arrive more than once \
                         (same `Adforge-Event-Id`)."
                    ),
                    "operationId": format!("webhook_{}", event_type.replace('.', "_")),
                    "tags": ["webhooks"],
                    "parameters": [
                        {
                            "name": crate::webhooks::SIGNATURE_HEADER,
                            "in": "header",
                            "required": true,
                            "description": "`t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<body>\">`; during the 24 h after a secret rotation a second `v1=` signed with the previous secret follows",
                            "schema": {"type": "string", "pattern": "^t=[0-9]+(,v1=[0-9a-f]{64})+$"}
                        },
                        {
                            "name": crate::webhooks::EVENT_ID_HEADER,
                            "in": "header",
                            "required": true,
                            "description": "The event id (`evt_…`), the same on every retry and redelivery",
                            "schema": {"type": "string"}
                        }
                    ],
                    "requestBody": {
                        "required": true,
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Event"}}}
                    },
                    "responses": {
                        "2XX": {"description": "Received. Any other answer, or none within 10 seconds, is retried."}
                    }
                }
            }),
        );
    }
    if let Some(obj) = value.as_object_mut() {
        obj.insert("webhooks".to_string(), serde_json::Value::Object(hooks));
    }
    value
}
