//! The OpenAPI 3.1 description, generated from the handlers' annotations (utoipa) and
//! completed here with what applies to every endpoint: the security scheme, the error
//! shape and codes, and the conventions where the spec left decisions to us.

use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};

/// The document's top-level description (conventions that apply to every operation).
pub fn description() -> &'static str {
    DESCRIPTION
}

/// The document's description: Markdown kept beside this module so it reads as a
/// document (the conventions every operation follows).
const DESCRIPTION: &str = include_str!("description.md");

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
        (name = "image ad batches", description = "Many image ads in one request (products × layouts × sizes), their progress, cancel and one ZIP with a manifest"),
        (name = "search", description = "Global search across types"),
        (name = "webhooks", description = "Signed event deliveries, their endpoints and the event log"),
        (name = "swipe files", description = "Reference designs: uploads and subscribed data sources, embedded, classified and found by filtered vector search"),
        (name = "design packs", description = "Named, organisation-wide collections of swipe-file designs"),
        (name = "design templates", description = "A reference's layout as an editable blueprint tree, its versions, and ads made from it"),
        (name = "previews", description = "A JSON tree rendered at once (PNG, WebP or laid-out boxes), free and not stored"),
        (name = "integrations", description = "Design-tool connections (Figma): a token stored sealed, used by design-tool sync"),
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

/// Headers a response may carry without always carrying them; every other header this
/// module declares is sent on every response it is declared on, so it is marked
/// `required`.
const OPTIONAL_HEADERS: &[&str] = &["Idempotent-Replayed"];

fn header(schema: utoipa::openapi::Object, description: &str) -> utoipa::openapi::header::Header {
    utoipa::openapi::header::HeaderBuilder::new()
        .schema(schema)
        .description(Some(description))
        .build()
}

fn integer_header(description: &str) -> utoipa::openapi::header::Header {
    header(
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::Type::Integer)
            .minimum(Some(0))
            .build(),
        description,
    )
}

/// Completes the generated document: description, the answers every operation can give
/// (400, 401, 403, 413, 429, 500, 503) where an operation does not list them itself, and
/// the headers of every response. Returned as JSON because utoipa's header object has no
/// `required` field: the headers the server always sends are marked required here.
pub fn finish(mut doc: utoipa::openapi::OpenApi) -> serde_json::Value {
    use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
    doc.info.description = Some(DESCRIPTION.to_string());
    for (path, item) in doc.paths.paths.iter_mut() {
        // A preview writes nothing and is not replayed (`crate::idempotency`).
        let replayable = path != crate::ratelimit::PREVIEWS_PATH;
        for (op, writes) in [
            (&mut item.get, false),
            (&mut item.post, true),
            (&mut item.patch, true),
            (&mut item.delete, false),
            (&mut item.put, true),
        ] {
            let Some(op) = op.as_mut() else { continue };
            let writes = writes && replayable;
            let has_body = op.request_body.is_some();
            // The idempotency middleware honours the header on every write, so every write
            // declares it (its format is stated in `describe_idempotency_key`).
            let idempotent = writes;
            let params = op.parameters.get_or_insert_with(Vec::new);
            if !writes {
                // Leave no empty list behind.
                if params.is_empty() {
                    op.parameters = None;
                }
            } else if !params.iter().any(|p| p.name == "Idempotency-Key") {
                params.push(
                    utoipa::openapi::path::ParameterBuilder::new()
                        .name("Idempotency-Key")
                        .parameter_in(utoipa::openapi::path::ParameterIn::Header)
                        .required(utoipa::openapi::Required::False)
                        .description(Some("Makes a retry safe; see the API description"))
                        .build(),
                );
            }
            const IN_FLIGHT: &str =
                "IDEMPOTENCY_CONFLICT: a request with this Idempotency-Key is still running";
            if idempotent
                && let Some(RefOr::T(conflict)) = op.responses.responses.get_mut("409")
                && !conflict.description.contains("IDEMPOTENCY_CONFLICT")
            {
                conflict.description = format!("{}; {IN_FLIGHT}", conflict.description);
            }
            let common = [
                (
                    "400",
                    "VALIDATION_ERROR: an invalid path id, query parameter (unknown ones included), header or body",
                    true,
                ),
                (
                    "401",
                    "UNAUTHORIZED: missing, malformed or revoked key",
                    true,
                ),
                (
                    "403",
                    "FORBIDDEN: the key lacks the scope listed under security",
                    true,
                ),
                (
                    "413",
                    "PAYLOAD_TOO_LARGE: the body is over 15 MiB",
                    has_body,
                ),
                ("409", IN_FLIGHT, idempotent),
                ("429", "RATE_LIMIT_EXCEEDED: wait Retry-After seconds", true),
                ("500", "INTERNAL_ERROR", true),
                (
                    "503",
                    "SERVICE_UNAVAILABLE: the database is busy; retry after Retry-After seconds",
                    true,
                ),
            ];
            for (status, text, applies) in common {
                if !applies {
                    continue;
                }
                op.responses
                    .responses
                    .entry(status.to_string())
                    .or_insert_with(|| {
                        RefOr::T(
                            ResponseBuilder::new()
                                .description(text)
                                .content(
                                    "application/json",
                                    ContentBuilder::new()
                                        .schema(Some(Ref::from_schema_name("ErrorBody")))
                                        .build(),
                                )
                                .build(),
                        )
                    });
            }
            let authenticated = op.security.as_ref().is_some_and(|s| !s.is_empty());
            for (status, response) in op.responses.responses.iter_mut() {
                let RefOr::T(response) = response else {
                    continue;
                };
                let h = &mut response.headers;
                h.insert(
                    "X-Request-Id".into(),
                    header(
                        utoipa::openapi::ObjectBuilder::new()
                            .schema_type(utoipa::openapi::Type::String)
                            .pattern(Some("^req_"))
                            .build(),
                        "The request's id, also in `meta.request_id`",
                    ),
                );
                // Authentication runs before the rate limiter, so a 401 is not counted.
                if authenticated && status != "401" {
                    h.insert(
                        "RateLimit-Limit".into(),
                        integer_header("Requests allowed per rolling 60 seconds for this key"),
                    );
                    h.insert(
                        "RateLimit-Remaining".into(),
                        integer_header("Requests left in the current window"),
                    );
                    h.insert(
                        "RateLimit-Reset".into(),
                        integer_header(
                            "Seconds until the oldest counted request leaves the window",
                        ),
                    );
                }
                if status == "429" || status == "503" {
                    h.insert(
                        "Retry-After".into(),
                        integer_header("Seconds to wait before retrying"),
                    );
                }
                // Kept outcomes (status below 500, after authentication and the rate
                // limit) are replayed to a retry with the same key.
                if writes && !status.starts_with('5') && status != "401" && status != "429" {
                    h.insert(
                        "Idempotent-Replayed".into(),
                        header(
                            utoipa::openapi::ObjectBuilder::new()
                                .schema_type(utoipa::openapi::Type::String)
                                .enum_values(Some(["true"]))
                                .build(),
                            "`true` when this is the stored response of an earlier request with the same Idempotency-Key",
                        ),
                    );
                }
            }
        }
    }
    let mut json = serde_json::to_value(&doc).unwrap_or_default();
    mark_required_headers(&mut json);
    describe_idempotency_key(&mut json);
    add_links(&mut json);
    json
}

/// Parents whose id a child's create body names: (parent collection, child collection,
/// body field).
const PARENT_LINKS: &[(&str, &str, &str)] = &[
    ("/v1/brands", "/v1/products", "brand_id"),
    ("/v1/products", "/v1/product-variants", "product_id"),
    ("/v1/products", "/v1/audiences", "product_id"),
];

/// OpenAPI links, so clients and stateful testers can follow the ids responses carry:
/// from a create, a duplicate and a list to the item's own operations, and from a create
/// to the creates of its children.
fn add_links(doc: &mut serde_json::Value) {
    use serde_json::{Value, json};
    let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
        return;
    };
    let op_id = |path: &str, method: &str| {
        paths
            .get(path)
            .and_then(|i| i.get(method))
            .and_then(|o| o.get("operationId"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    // (source path, method, status, link name, link object)
    let mut links: Vec<(String, &str, &str, String, Value)> = Vec::new();
    for collection in paths.keys().filter(|p| !p.contains('{')) {
        let item = format!("{collection}/{{id}}");
        let targets: Vec<(String, &str, String)> = paths
            .iter()
            .filter(|(p, _)| *p == &item || p.starts_with(&format!("{item}/")))
            .flat_map(|(p, ops)| {
                ["get", "patch", "delete", "post"]
                    .into_iter()
                    .filter(|m| ops.get(*m).is_some())
                    .filter_map(|m| op_id(p, m).map(|id| (p.clone(), m, id)))
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut sources: Vec<(String, &str, &str, &str)> = vec![
            (collection.clone(), "post", "201", "/data/id"),
            (collection.clone(), "post", "202", "/data/id"),
            (collection.clone(), "get", "200", "/data/0/id"),
            (format!("{item}/duplicate"), "post", "201", "/data/id"),
        ];
        sources.retain(|(p, m, status, _)| {
            paths
                .get(p)
                .and_then(|i| i.get(*m))
                .and_then(|o| o.get("responses"))
                .and_then(|r| r.get(*status))
                .is_some()
        });
        for (source, method, status, pointer) in &sources {
            for (target_path, _, target_id) in &targets {
                // Only `{id}` can be filled: a version id (or number) is not in these
                // responses.
                if target_path.matches('{').count() > 1 {
                    continue;
                }
                let mut parameters = serde_json::Map::new();
                parameters.insert(
                    "path.id".into(),
                    Value::String(format!("$response.body#{pointer}")),
                );
                links.push((
                    source.clone(),
                    method,
                    status,
                    target_id.clone(),
                    json!({"operationId": target_id, "parameters": parameters}),
                ));
            }
        }
        for (parent, child, field) in PARENT_LINKS {
            if parent != collection {
                continue;
            }
            if let Some(target_id) = op_id(child, "post") {
                let mut body = serde_json::Map::new();
                body.insert(field.to_string(), json!("$response.body#/data/id"));
                links.push((
                    collection.clone(),
                    "post",
                    "201",
                    target_id.clone(),
                    json!({"operationId": target_id, "requestBody": body}),
                ));
            }
        }
    }
    for (source, method, status, name, link) in links {
        if let Some(response) = doc
            .pointer_mut(&format!(
                "/paths/{}/{method}/responses/{status}",
                source.replace('~', "~0").replace('/', "~1")
            ))
            .and_then(Value::as_object_mut)
        {
            response
                .entry("links")
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .map(|l| l.insert(name, link));
        }
    }
}

/// States the format of every `Idempotency-Key` parameter (1–255 visible ASCII
/// characters), which the server checks.
fn describe_idempotency_key(doc: &mut serde_json::Value) {
    let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) else {
        return;
    };
    for item in paths.values_mut().filter_map(|i| i.as_object_mut()) {
        for op in item.values_mut().filter_map(|o| o.as_object_mut()) {
            let Some(params) = op.get_mut("parameters").and_then(|p| p.as_array_mut()) else {
                continue;
            };
            for p in params.iter_mut().filter_map(|p| p.as_object_mut()) {
                if p.get("in").and_then(|v| v.as_str()) == Some("header")
                    && p.get("name").and_then(|v| v.as_str()) == Some("Idempotency-Key")
                {
                    p.insert(
                        "schema".into(),
                        serde_json::json!({
                            "type": "string",
                            "minLength": 1,
                            "maxLength": 255,
                            "pattern": "^[!-~]+$",
                        }),
                    );
                }
            }
        }
    }
}

/// Sets `required: true` on every response header not in [`OPTIONAL_HEADERS`].
fn mark_required_headers(doc: &mut serde_json::Value) {
    let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) else {
        return;
    };
    for item in paths.values_mut().filter_map(|i| i.as_object_mut()) {
        for op in item.values_mut().filter_map(|o| o.as_object_mut()) {
            let Some(responses) = op.get_mut("responses").and_then(|r| r.as_object_mut()) else {
                continue;
            };
            for response in responses.values_mut() {
                let Some(headers) = response.get_mut("headers").and_then(|h| h.as_object_mut())
                else {
                    continue;
                };
                for (name, h) in headers.iter_mut() {
                    if let Some(h) = h.as_object_mut()
                        && !OPTIONAL_HEADERS.contains(&name.as_str())
                    {
                        h.insert("required".into(), serde_json::Value::Bool(true));
                    }
                }
            }
        }
    }
}

/// The document as JSON with the OpenAPI 3.1 `webhooks` section added: one entry per
/// emitted event type, each a POST of an `Event` carrying the signature headers. utoipa 5
/// has no model for `webhooks`, so it is inserted here.
pub fn with_webhooks(mut value: serde_json::Value) -> serde_json::Value {
    let mut hooks = serde_json::Map::new();
    for event_type in crate::webhooks::EVENT_TYPES {
        let what = match *event_type {
            "image_ad.completed" => {
                "An image ad reached `completed` (also after an edit re-rendered it); `data.object` is the ad with its `image_url`."
            }
            "image_ad.failed" => {
                "An image ad reached `failed`; `data.object.error` says why. Nothing was charged."
            }
            "image_ad_batch.completed" => {
                "The last ad of an image ad batch ended (completed or failed); `data.object` is the batch with its final `status` (completed, failed when every ad failed, or cancelled), `counts` and `amount_charged`. Sent once per batch."
            }
            "design_template.completed" => {
                "A design template reached `completed`: its analysis finished, or the preview of an edit was rendered; `data.object` is the template with its tree and `preview_url`."
            }
            "swipe_file.ready" => {
                "An uploaded swipe file finished ingest and is `ready` (searchable); `data.object` is the swipe file with its preview, size and classification. Managed data-source designs send no event."
            }
            "swipe_file.failed" => {
                "An uploaded swipe file's ingest failed (its image could not be embedded); `data.object.error` says why."
            }
            "design_template.failed" => {
                "A design template's analysis failed; `data.object.error` says why (the reference could not be fetched or decoded)."
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
