//! `/v1/integrations/figma`: an organisation's connection to Figma, a personal access token
//! that design-tool sync (`POST /v1/image-ads/sync`, `POST /v1/design-templates` from a
//! frame) reads files with.
//!
//! The token is sealed at once with the deployment's secrets key
//! ([`adforge_worker::secrets`], AES-256-GCM bound to the organisation) and only the sealed
//! value and the last four characters are stored; no response, log line or job carries the
//! plain token (a sync's job carries the sealed value, opened by the worker that calls
//! Figma). The API never calls Figma here: a token is checked by the first sync that uses
//! it, whose ad then fails with `FIGMA_TOKEN_INVALID` if Figma refuses it.
//!
//! Scopes: `integrations:read` for GET, `integrations:write` for PUT and DELETE. DELETE
//! removes the token and scrubs the sealed copies kept in finished sync jobs; a sync
//! already queued carries its own copy and finishes; ads and templates already synced
//! keep their trees and images, and a re-sync then answers 422 `FIGMA_NOT_CONNECTED`.

pub mod config;
pub mod report;
mod store;

use axum::extract::State;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{Auth, Scope};
use crate::error::{ApiError, ApiResult, FieldError};
use crate::http::envelope::{self, Envelope};
use crate::http::extract::JsonBody;
use crate::state::AppState;
use crate::store::Db;

pub use config::{FigmaArgs, FigmaConfig};
pub use report::{FigmaImportReport, FigmaSync, FigmaSyncState};
pub use store::sealed_token;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_figma, put_figma, delete_figma))
}

/// An organisation's Figma connection. The token itself is never shown.
#[derive(Debug, Serialize, ToSchema)]
pub struct FigmaIntegration {
    /// Always `figma_integration`.
    pub object: &'static str,
    /// True while a token is stored.
    pub connected: bool,
    /// The token's last four characters, to tell tokens apart; null when not connected.
    pub token_last4: Option<String>,
    /// When the token was first stored; null when not connected.
    pub created_at: Option<String>,
    /// When the token was last replaced; null when not connected.
    pub updated_at: Option<String>,
}

impl FigmaIntegration {
    fn disconnected() -> Self {
        Self {
            object: "figma_integration",
            connected: false,
            token_last4: None,
            created_at: None,
            updated_at: None,
        }
    }
}

/// Body of PUT /v1/integrations/figma.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FigmaIntegrationPut {
    /// A Figma personal access token (Figma → Settings → Security → Personal access
    /// tokens) with read access to the files to sync (`file_content:read`): 8 to 512
    /// printable ASCII characters without spaces. Stored sealed; never shown again.
    #[schema(min_length = 8, max_length = 512)]
    pub access_token: String,
}

/// Checks a token's form (Figma's own check happens at the first sync).
fn check_token(token: &str) -> ApiResult<()> {
    let bad = |why: &str| {
        ApiError::validation(vec![FieldError::new(
            "access_token",
            format!("{why}; paste the personal access token from Figma → Settings → Security"),
        )])
    };
    if token.len() < 8 || token.len() > 512 {
        return Err(bad("must be 8 to 512 characters"));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad("must be printable ASCII without spaces or line breaks"));
    }
    Ok(())
}

/// The organisation's connection as GET shows it.
///
/// # Errors
/// Database failures.
pub async fn get(db: &Db, org_id: &str) -> ApiResult<FigmaIntegration> {
    Ok(match store::load(&db.read, org_id).await? {
        Some(row) => FigmaIntegration {
            object: "figma_integration",
            connected: true,
            token_last4: Some(row.token_last4),
            created_at: Some(row.created_at),
            updated_at: Some(row.updated_at),
        },
        None => FigmaIntegration::disconnected(),
    })
}

/// Stores (or replaces) the organisation's token, sealed.
///
/// # Errors
/// VALIDATION_ERROR for a malformed token; SERVICE_UNAVAILABLE without a secrets key.
pub async fn connect(state: &AppState, org_id: &str, token: &str) -> ApiResult<FigmaIntegration> {
    check_token(token)?;
    let key = state.figma.key()?;
    let sealed = key.seal(
        token.as_bytes(),
        &adforge_worker::protocol::token_context(org_id),
    );
    let last4: String = token
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let mut tx = state.db.begin_write().await?;
    store::upsert(&mut tx, org_id, &sealed, &last4, &crate::timestamp::now()).await?;
    tx.commit().await?;
    tracing::info!(org_id, "figma connected");
    get(&state.db, org_id).await
}

/// Removes the organisation's token and the sealed copies finished jobs keep.
///
/// # Errors
/// Database failures.
pub async fn disconnect(db: &Db, org_id: &str) -> ApiResult<FigmaIntegration> {
    let mut tx = db.begin_write().await?;
    store::delete(&mut tx, org_id).await?;
    store::scrub_jobs(&mut tx, org_id).await?;
    tx.commit().await?;
    tracing::info!(org_id, "figma disconnected");
    Ok(FigmaIntegration::disconnected())
}

/// Show the Figma connection
///
/// `connected`, the token's last four characters and when it was stored; never the token.
#[utoipa::path(get, path = "/v1/integrations/figma", tag = "integrations",
    responses((status = 200, description = "The connection (connected: false when no token is stored)", body = Envelope<FigmaIntegration>)),
    security(("api_key" = ["integrations:read"])))]
async fn get_figma(State(state): State<AppState>, Auth(caller): Auth) -> ApiResult<Response> {
    caller.require(Scope::IntegrationsRead)?;
    Ok(envelope::ok(get(&state.db, &caller.org_id).await?))
}

/// Connect Figma
///
/// Stores the organisation's personal access token, sealed (AES-256-GCM under the
/// server's `ADFORGE_SECRETS_KEY`), replacing any earlier one. Figma is not called: the
/// first sync checks the token, and its ad fails with `FIGMA_TOKEN_INVALID` if Figma
/// refuses it. The answer shows the last four characters only.
#[utoipa::path(put, path = "/v1/integrations/figma", tag = "integrations", request_body = FigmaIntegrationPut,
    responses(
        (status = 200, description = "Connected", body = Envelope<FigmaIntegration>),
        (status = 400, description = "VALIDATION_ERROR: a token that is not 8 to 512 printable characters", body = crate::error::ErrorBody),
        (status = 503, description = "SERVICE_UNAVAILABLE: the server has no secrets key (ADFORGE_SECRETS_KEY)", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["integrations:write"])))]
async fn put_figma(
    State(state): State<AppState>,
    Auth(caller): Auth,
    body: JsonBody<FigmaIntegrationPut>,
) -> ApiResult<Response> {
    caller.require(Scope::IntegrationsWrite)?;
    let body = body.parse()?;
    Ok(envelope::ok(
        connect(&state, &caller.org_id, &body.access_token).await?,
    ))
}

/// Disconnect Figma
///
/// Removes the token (and the sealed copies that finished sync jobs keep). Idempotent.
/// Syncs already queued finish with their own sealed copy; synced ads and templates keep
/// their trees and images; later syncs answer 422 `FIGMA_NOT_CONNECTED`.
#[utoipa::path(delete, path = "/v1/integrations/figma", tag = "integrations",
    responses((status = 200, description = "Disconnected", body = Envelope<FigmaIntegration>)),
    security(("api_key" = ["integrations:write"])))]
async fn delete_figma(State(state): State<AppState>, Auth(caller): Auth) -> ApiResult<Response> {
    caller.require(Scope::IntegrationsWrite)?;
    Ok(envelope::ok(disconnect(&state.db, &caller.org_id).await?))
}
