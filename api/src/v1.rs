//! The `/v1` API as one router with its OpenAPI description: every resource's routes and
//! annotations merged in one place, and the document as served at `/openapi.json`. The
//! server crate nests this router in its middleware stack; tests and `adforge openapi`
//! read the document from here.

use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use crate::resources;
use crate::state::AppState;

/// Every `/v1` route with its OpenAPI description.
pub fn api_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(crate::openapi::ApiDoc::openapi())
        .merge(resources::brands::router())
        .merge(resources::products::router())
        .merge(resources::variants::router())
        .merge(resources::audiences::router())
        .merge(resources::images::router())
        .merge(resources::image_ads::router())
        .merge(resources::image_ad_batches::router())
        .merge(resources::search::router())
        .merge(resources::webhook_endpoints::router())
        .merge(resources::events::router())
        .merge(resources::swipe_files::router())
        .merge(resources::design_packs::router())
        .merge(resources::design_templates::router())
        .merge(resources::previews::router())
        .merge(resources::integrations::router())
}

/// The OpenAPI document as generated from the annotations and completed by
/// [`crate::openapi::finish`] (without the `webhooks` section; see [`openapi_json`]).
pub fn openapi_document() -> serde_json::Value {
    let (_, doc) = api_router().split_for_parts();
    crate::openapi::finish(doc)
}

/// The OpenAPI document exactly as served at `/openapi.json`.
pub fn openapi_json() -> serde_json::Value {
    crate::openapi::with_webhooks(openapi_document())
}
