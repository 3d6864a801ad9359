//! `/v1/design-templates`: a reference image (a URL, or a design of the swipe file) analysed
//! by a worker into an editable blueprint tree (202 `processing` → `completed` or `failed`),
//! read, listed with filters and facets, edited with PATCH (the previous tree is kept as a
//! version, the preview is re-rendered), soft-deleted and restored; and image ads laid out
//! with a template's tree ([`ads`]).
//!
//! States: `processing` (the analysis, or the preview of an edit, is running) → `completed`
//! (tree and preview set) or, for the analysis only, `failed` (`error` says why). An edit
//! moves a completed template back to `processing` until its preview is rendered, as an
//! edit of an editable image ad does. Worker results are applied by [`apply`], idempotently
//! per (template, `json_tree_version`).

pub mod ads;
pub mod apply;
mod list;
mod store;
pub mod versions;

pub(crate) use store::{Deletion, TemplateRow, load_row};

use adforge_worker::{DesignTemplateJob, Job};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
pub use list::{TemplateFilter, list};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::{IdPath, check_text};
use crate::auth::{Auth, Scope};
use crate::blob::OwnFile;
use crate::error::{ApiError, ApiResult, ErrorCode, FieldError};
use crate::http::envelope::{self, Deleted, Envelope, ListEnvelope, Meta};
use crate::http::extract::{JsonBody, QueryParams};
use crate::jobs::Jobs;
use crate::state::AppState;
use crate::store::Db;
use crate::store::list::ListParams;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_template, list_templates))
        .routes(routes!(get_template, update_template, delete_template))
        .routes(routes!(restore_template))
        .routes(routes!(versions::list_template_versions))
        .routes(routes!(versions::get_template_version))
        .routes(routes!(ads::create_ad_from_template))
}

/// Longest `change_summary`.
pub const CHANGE_SUMMARY_MAX: usize = 500;
/// Longest `reference_image_url`.
pub const URL_MAX: usize = 2048;
/// Statuses of a template.
pub const STATUSES: [&str; 3] = ["processing", "completed", "failed"];
/// Facet dimensions of the list.
pub const FACETS: [&str; 3] = ["industry", "ad_format", "status"];

/// What the worker's analysis reported.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TemplateAnalysis {
    /// True when the worker reused its cached analysis of the same reference bytes (by
    /// SHA-256 of the bytes; each worker process keeps 256); false when the analysis ran
    /// for this template.
    pub cache_hit: bool,
    /// `reference_blueprint`: the tree follows the reference's own regions.
    /// `reference_aspect`: the reference's layout was not usable (no headline or no place
    /// for a picture was found) and the tree is a plain composition at its aspect ratio.
    pub composition: String,
    /// Why the reference's own layout was not used, when it was not.
    pub note: Option<String>,
}

/// A design template: a layout blueprint held as a JSON tree.
#[derive(Debug, Serialize, ToSchema)]
pub struct DesignTemplate {
    /// `dt_…`
    pub id: String,
    /// The analysed reference: the URL given, or the stored image of `swipe_file_id`.
    pub reference_image_url: String,
    /// The swipe file (`sf_…`) the template was made from; null when made from a URL.
    pub swipe_file_id: Option<String>,
    /// processing, completed or failed.
    pub status: String,
    /// The tree of the current version: the renderer's format (docs/json-tree.md) at the
    /// reference's aspect ratio with a 3840 px long edge. Node ids are slot names
    /// (`background` or `photo`, `panel_N`, `product_image`, `headline`, `supporting`,
    /// `eyebrow`, `cta` with `cta_label`, `badge` with `badge_label`, `logo`) and nodes keep
    /// the `$` slot keys (`$text`, `$fill`, `$image`, `$on`, …; assets/layouts/README.md)
    /// that tell an ad made from the template what to put where. Null until the analysis
    /// completes.
    #[schema(value_type = Option<Object>)]
    pub current_json_tree: Option<Value>,
    /// 1 after the analysis; +1 for every PATCH.
    pub json_tree_version: i64,
    /// A PNG of the current tree with neutral sample content, 1080 px on its long edge.
    /// While an edit's preview renders (status processing) it is still the previous
    /// version's; null until the first preview exists.
    pub preview_url: Option<String>,
    /// Design size of the tree (3840 px long edge).
    pub width: Option<i64>,
    pub height: Option<i64>,
    /// Nearest of 1:1, 4:5, 9:16, 1.91:1, 16:9, 2:3, 3:4.
    pub aspect_ratio: Option<String>,
    /// Top level of the Google product taxonomy (the swipe file's values, e.g.
    /// `food_beverages_tobacco`): copied from the swipe file a template was made from, or
    /// classified from the reference by a worker with the swipe-file models; null when
    /// undecided or when no worker with models analysed it.
    pub industry: Option<String>,
    /// The swipe file's ad formats (`product_shot`, `offer_sale`, …): copied or classified
    /// like `industry`; null when undecided.
    pub ad_format: Option<String>,
    /// Worker wall-clock time of the last job (the analysis, or the preview of the last
    /// edit).
    pub duration_ms: Option<i64>,
    /// Why the analysis failed (status failed), or why the preview of an edit could not be
    /// rendered (status completed, preview_url null).
    pub error: Option<String>,
    /// What the analysis found; null until it completes. A template imported from Figma
    /// says `composition: figma`.
    pub analysis: Option<TemplateAnalysis>,
    /// The Figma frame the template was imported from (POST /v1/design-templates with
    /// `figma_url`), with Figma's render and the import report; null otherwise.
    pub figma: Option<crate::resources::integrations::FigmaSync>,
    /// True while soft-deleted (DELETE); POST /v1/design-templates/{id}/restore undoes it.
    pub deleted: bool,
    pub deleted_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// 422 DESIGN_TEMPLATE_NOT_READY unless the template is completed.
pub(crate) fn require_ready(row: &TemplateRow, action: &str) -> ApiResult<()> {
    match row.status.as_str() {
        "completed" => Ok(()),
        "processing" => Err(ApiError::new(
            ErrorCode::DesignTemplateNotReady,
            format!(
                "Design template `{}` is processing (its analysis or the preview of its last edit is running); poll GET /v1/design-templates/{} until it is completed, then {action}",
                row.id, row.id
            ),
        )),
        _ => Err(ApiError::new(
            ErrorCode::DesignTemplateNotReady,
            format!(
                "Design template `{}` failed ({}); it has no tree to {action} with. Create a new template from another reference",
                row.id,
                row.error.as_deref().unwrap_or("no reason recorded")
            ),
        )),
    }
}

/// The template as GET shows it, as JSON (for webhook events, inside the transaction of
/// the change); `None` when it does not exist.
///
/// # Errors
/// Database failures.
pub async fn snapshot(
    conn: &mut sqlx::AnyConnection,
    org_id: &str,
    id: &str,
) -> ApiResult<Option<Value>> {
    match load_row(conn, org_id, id, Deletion::Any).await {
        Ok(row) => Ok(Some(
            serde_json::to_value(row.into_api()).map_err(ApiError::internal)?,
        )),
        Err(e) if e.code == ErrorCode::DesignTemplateNotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Body of POST /v1/design-templates: exactly one source: `reference_image_url`,
/// `swipe_file_id`, or a Figma frame (`figma_url`, or `figma_file_key` with
/// `figma_node_id`).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DesignTemplateCreate {
    /// A PNG, JPEG or WebP to analyse, http(s), at most 2,048 characters. The address must
    /// be one a worker may fetch: a public host (no `localhost` or private, loopback or
    /// link-local address, unless the server allows private URLs), or a file of this server
    /// given exactly as returned (it must exist). Whether it answers with an image is found
    /// out by the analysis: a reference that cannot be fetched or decoded ends the template
    /// `failed` with the reason in `error`.
    #[schema(max_length = 2048)]
    pub reference_image_url: Option<String>,
    /// A ready design of the swipe file (own upload or a subscribed data source's; needs
    /// `swipe_files:read` too): its stored image is analysed and its `industry` and
    /// `ad_format` are copied.
    pub swipe_file_id: Option<String>,
    /// A Figma frame's link (`https://www.figma.com/design/FILE_KEY/Name?node-id=1-2`):
    /// the frame is imported by the same importer as POST /v1/image-ads/sync (the
    /// organisation must have connected Figma, else 422 FIGMA_NOT_CONNECTED); nodes named
    /// like slots (`headline`, `product_image`, `cta`, `logo`, …) become the template's
    /// slots. The tree keeps the frame's design size. Figma's refusals end the template
    /// `failed` with the code first in `error` (`FIGMA_TOKEN_INVALID: …`).
    #[schema(max_length = 2048)]
    pub figma_url: Option<String>,
    /// The file key, with `figma_node_id`, instead of `figma_url`.
    pub figma_file_key: Option<String>,
    /// The frame's node id (`1:2`), with `figma_file_key`.
    pub figma_node_id: Option<String>,
}

/// Checks a reference URL as the worker's fetch will treat it: http(s), this server's own
/// files by the one own-URL mapping (and present), other hosts through the public-address
/// guard. Reachability and decoding are the analysis's to find out.
async fn check_reference_url(state: &AppState, url: &str) -> ApiResult<()> {
    let refuse = |why: String| ApiError::field("reference_image_url", why);
    if url.chars().count() > URL_MAX {
        return Err(refuse(format!("must be at most {URL_MAX} characters")));
    }
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(refuse(
            "must be an http(s) URL of a PNG, JPEG or WebP image".into(),
        ));
    }
    match state.blobs.own_file(url) {
        OwnFile::Invalid(why) => Err(refuse(why)),
        OwnFile::Key(key) => {
            if state.blobs.exists(&key).await.map_err(ApiError::internal)? {
                Ok(())
            } else {
                Err(refuse(crate::blob::NO_SUCH_FILE.to_string()))
            }
        }
        OwnFile::Foreign => {
            adforge_renderer::image::fetch::check_url(url, state.allow_private_urls)
                .map_err(|e| refuse(format!("cannot be fetched: {e}")))
        }
    }
}

/// Create a design template
///
/// Give exactly one of `reference_image_url`, `swipe_file_id` and a Figma frame
/// (`figma_url`; a worker imports it as POST /v1/image-ads/sync does, its slot-named nodes
/// becoming the template's slots). Answers 202 with
/// `Location` and the template `processing`; a worker reads the reference's regions into a
/// blueprint tree, renders a preview with neutral sample content, and the template becomes
/// `completed` (or `failed` with `error` when the reference cannot be fetched or decoded).
/// Poll GET /v1/design-templates/{id}, or subscribe to `design_template.completed` and
/// `design_template.failed`. Templates are free: nothing is charged or held.
#[utoipa::path(post, path = "/v1/design-templates", tag = "design templates", request_body = DesignTemplateCreate,
    responses(
        (status = 202, description = "Accepted; the template is processing", body = Envelope<DesignTemplate>,
            headers(("Location" = String, description = "/v1/design-templates/{id} of the new template"))),
        (status = 400, description = "VALIDATION_ERROR: no source or several, a reference URL no worker may fetch, a bad Figma link", body = crate::error::ErrorBody),
        (status = 404, description = "SWIPE_FILE_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 422, description = "FIGMA_NOT_CONNECTED: a Figma frame, but the organisation has not connected Figma", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["design_templates:write"])))]
async fn create_template(
    State(state): State<AppState>,
    Auth(caller): Auth,
    body: JsonBody<DesignTemplateCreate>,
) -> ApiResult<Response> {
    caller.require(Scope::DesignTemplatesWrite)?;
    let body = body.parse()?;
    if body.swipe_file_id.is_some() && body.reference_image_url.is_none() {
        caller.require(Scope::SwipeFilesRead)?;
    }
    let data = create(&state, &caller.org_id, body).await?;
    let id = data.id.clone();
    let body = Envelope {
        data,
        meta: Meta::current(),
    };
    Ok((
        StatusCode::ACCEPTED,
        [(header::LOCATION, format!("/v1/design-templates/{id}"))],
        axum::Json(body),
    )
        .into_response())
}

/// Creates a template of the organisation from a URL or a swipe-file design and stages its
/// analysis (what POST /v1/design-templates does; the caller checks the key's scopes).
///
/// # Errors
/// VALIDATION_ERROR; SWIPE_FILE_NOT_FOUND; database failures.
pub async fn create(
    state: &AppState,
    org_id: &str,
    body: DesignTemplateCreate,
) -> ApiResult<DesignTemplate> {
    if body.figma_url.is_some() || body.figma_file_key.is_some() || body.figma_node_id.is_some() {
        return create_from_figma(state, org_id, body).await;
    }
    let (url, swipe_file_id, industry, ad_format) =
        match (body.reference_image_url, body.swipe_file_id) {
            (Some(url), None) => {
                check_reference_url(state, &url).await?;
                (url, None, None, None)
            }
            (None, Some(sf)) => {
                let row = super::swipe_files::load(&state.db, org_id, &sf).await?;
                if row.status != "ready" {
                    return Err(ApiError::field(
                        "swipe_file_id",
                        format!(
                            "`{sf}` is {}; only a ready design can become a template",
                            row.status
                        ),
                    ));
                }
                (
                    state.blobs.url(&row.blob_key),
                    Some(row.id),
                    row.industry,
                    row.ad_format,
                )
            }
            (Some(_), Some(_)) => {
                return Err(ApiError::validation(vec![FieldError::new(
                    "reference_image_url",
                    "give either reference_image_url or swipe_file_id, not both",
                )]));
            }
            (None, None) => {
                return Err(ApiError::validation(vec![FieldError::new(
                    "reference_image_url",
                    "give reference_image_url or swipe_file_id (or a Figma frame: figma_url)",
                )]));
            }
        };
    let id = crate::ids::new_id("dt");
    let job = Job::AnalyzeDesignTemplate(DesignTemplateJob {
        template_id: id.clone(),
        org_id: org_id.to_string(),
        version: 1,
        reference_image_url: url.clone(),
        json_tree: None,
        classify: swipe_file_id.is_none(),
    });
    let now = crate::timestamp::now();
    let mut tx = state.db.begin_write().await?;
    store::insert(
        &mut tx,
        &store::NewTemplate {
            id: &id,
            org_id,
            reference_image_url: &url,
            swipe_file_id: swipe_file_id.as_deref(),
            industry: industry.as_deref(),
            ad_format: ad_format.as_deref(),
            job: &job,
            now: &now,
        },
    )
    .await?;
    Jobs::stage(&mut tx, &job).await?;
    let row = load_row(&mut *tx, org_id, &id, Deletion::Any).await?;
    let jobs = state.jobs.clone();
    tx.after_commit(move || jobs.kick());
    tx.commit().await?;
    Ok(row.into_api())
}

/// A template imported from a Figma frame: the frame checked, the organisation's sealed
/// token in the job, the import queued.
async fn create_from_figma(
    state: &AppState,
    org_id: &str,
    body: DesignTemplateCreate,
) -> ApiResult<DesignTemplate> {
    use adforge_worker::figma::url::{FrameRef, check_file_key, node_id, parse_link};
    use adforge_worker::protocol::{FigmaSyncJob, FigmaTarget};
    if body.reference_image_url.is_some() || body.swipe_file_id.is_some() {
        return Err(ApiError::field(
            "figma_url",
            "give a Figma frame, reference_image_url or swipe_file_id, not several",
        ));
    }
    let frame = match (&body.figma_url, &body.figma_file_key, &body.figma_node_id) {
        (Some(url), None, None) => {
            if url.len() > URL_MAX {
                return Err(ApiError::field(
                    "figma_url",
                    format!("must be at most {URL_MAX} characters"),
                ));
            }
            parse_link(url).map_err(|e| ApiError::field("figma_url", e))?
        }
        (None, Some(key), Some(node)) => {
            check_file_key(key).map_err(|e| ApiError::field("figma_file_key", e))?;
            FrameRef {
                file_key: key.clone(),
                node_id: node_id(node).map_err(|e| ApiError::field("figma_node_id", e))?,
            }
        }
        (Some(_), _, _) => {
            return Err(ApiError::field(
                "figma_url",
                "give either figma_url or figma_file_key with figma_node_id, not both",
            ));
        }
        (None, _, _) => {
            return Err(ApiError::field(
                "figma_node_id",
                "figma_file_key and figma_node_id go together",
            ));
        }
    };
    let token_sealed = crate::resources::integrations::sealed_token(&state.db.read, org_id)
        .await?
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::FigmaNotConnected,
                "This organisation has not connected Figma: store a personal access token with PUT /v1/integrations/figma first",
            )
        })?;
    let id = crate::ids::new_id("dt");
    let url = frame.url();
    let job = Job::SyncFigma(FigmaSyncJob {
        subject_id: id.clone(),
        org_id: org_id.to_owned(),
        version: 1,
        target: FigmaTarget::DesignTemplate,
        api_url: state.figma.api_url.clone(),
        file_key: frame.file_key.clone(),
        node_id: frame.node_id.clone(),
        token_sealed,
        previous: None,
        fill_slots: false,
        brief: None,
    });
    let now = crate::timestamp::now();
    let mut tx = state.db.begin_write().await?;
    store::insert(
        &mut tx,
        &store::NewTemplate {
            id: &id,
            org_id,
            reference_image_url: &url,
            swipe_file_id: None,
            industry: None,
            ad_format: None,
            job: &job,
            now: &now,
        },
    )
    .await?;
    store::set_figma_frame(&mut tx, &id, &frame.file_key, &frame.node_id).await?;
    Jobs::stage(&mut tx, &job).await?;
    let row = load_row(&mut *tx, org_id, &id, Deletion::Any).await?;
    let jobs = state.jobs.clone();
    tx.after_commit(move || jobs.kick());
    tx.commit().await?;
    Ok(row.into_api())
}

/// Retrieve a design template
///
/// A soft-deleted template is still returned (with `deleted: true`), so it can be looked
/// at before it is restored; it cannot be edited or used for ads until then.
#[utoipa::path(get, path = "/v1/design-templates/{id}", tag = "design templates",
    params(("id" = String, Path, description = "dt_…")),
    responses(
        (status = 200, description = "The template", body = Envelope<DesignTemplate>),
        (status = 404, description = "DESIGN_TEMPLATE_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["design_templates:read"])))]
async fn get_template(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::DesignTemplatesRead)?;
    Ok(envelope::ok(get(&state.db, &caller.org_id, &id).await?))
}

/// The organisation's template `id`, deleted or not (what GET answers).
///
/// # Errors
/// DESIGN_TEMPLATE_NOT_FOUND; database failures.
pub async fn get(db: &Db, org_id: &str, id: &str) -> ApiResult<DesignTemplate> {
    Ok(store::read_row(db, org_id, id).await?.into_api())
}

/// List design templates
///
/// Newest first. `status`, `industry` and `ad_format` take comma-separated values (any of
/// them matches); filters combine with AND. `deleted=true` lists only soft-deleted
/// templates, the default `false` only live ones. `facets` (comma-separated among
/// industry, ad_format, status) counts the matching templates per value, each dimension
/// ignoring its own filter.
#[utoipa::path(get, path = "/v1/design-templates", tag = "design templates",
    params(
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "Page size, default 20"),
        ("starting_after" = Option<String>, Query, description = "Id of the last template already received"),
        ("ids" = Option<String>, Query, pattern = r"[^,\s]", description = "Comma-separated dt_ ids (1 to 100); ignores cursor pagination"),
        ("status" = Option<String>, Query, pattern = r"^\s*(processing|completed|failed)?\s*(,\s*(processing|completed|failed)?\s*)*$", description = "Comma-separated among processing, completed, failed"),
        ("industry" = Option<String>, Query, description = "Comma-separated"),
        ("ad_format" = Option<String>, Query, description = "Comma-separated"),
        ("deleted" = Option<bool>, Query, description = "`true`: only soft-deleted templates; default `false`: only live ones"),
        ("facets" = Option<String>, Query, pattern = r"^\s*(industry|ad_format|status)?\s*(,\s*(industry|ad_format|status)?\s*)*$", description = "Comma-separated among industry, ad_format, status"),
    ),
    responses(
        (status = 200, description = "A page of templates", body = ListEnvelope<DesignTemplate>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["design_templates:read"])))]
async fn list_templates(
    State(state): State<AppState>,
    Auth(caller): Auth,
    q: QueryParams,
) -> ApiResult<Response> {
    caller.require(Scope::DesignTemplatesRead)?;
    let mut q = q;
    let p = ListParams::parse(&mut q, true, &FACETS);
    let filter = TemplateFilter::from_query(&mut q);
    q.finish()?;
    Ok(list(&state.db, &caller.org_id, &filter, &p)
        .await?
        .into_response())
}

/// Body of PATCH /v1/design-templates/{id}.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DesignTemplateUpdate {
    /// The entire new tree (not a diff), checked exactly as an editable image ad's tree:
    /// at most 512 KiB, valid for the renderer, image fills with http(s) URLs only (no
    /// base64 data), each URL one a worker may fetch (a public host, or an existing file of
    /// this server given exactly as returned). Unknown fields, `$` slot keys included, are
    /// kept as sent. Else 400 VALIDATION_ERROR naming the node and field.
    #[schema(value_type = Object)]
    pub current_json_tree: Value,
    /// What changed, at most 500 characters; kept with the version this PATCH makes.
    #[schema(schema_with = change_summary_schema)]
    pub change_summary: Option<String>,
}

/// The OpenAPI schema of a `change_summary` (design templates' and image ads' PATCH).
pub(crate) fn change_summary_schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    super::common::text_schema::text(
        CHANGE_SUMMARY_MAX,
        "What changed, at most 500 characters; tab and line breaks allowed, other control characters and bidirectional overrides not",
    )
}

/// Edit a design template
///
/// Send the entire tree. The current version (tree, preview, summary) is kept as a
/// version first (GET /v1/design-templates/{id}/versions), then the new tree becomes
/// `json_tree_version` + 1 and the template is `processing` until its preview is
/// re-rendered (poll until `completed`, as after an edit of an editable ad). A template
/// that is processing or failed cannot be edited (422 DESIGN_TEMPLATE_NOT_READY); a
/// soft-deleted one answers 404 until restored. Edits are free.
#[utoipa::path(patch, path = "/v1/design-templates/{id}", tag = "design templates", request_body = DesignTemplateUpdate,
    params(("id" = String, Path, description = "dt_…")),
    responses(
        (status = 200, description = "The template, processing the new version's preview", body = Envelope<DesignTemplate>),
        (status = 400, description = "VALIDATION_ERROR (naming the node and field of an invalid tree)", body = crate::error::ErrorBody),
        (status = 404, description = "DESIGN_TEMPLATE_NOT_FOUND", body = crate::error::ErrorBody),
        (status = 422, description = "DESIGN_TEMPLATE_NOT_READY: the template is processing or failed", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["design_templates:write"])))]
async fn update_template(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
    body: JsonBody<DesignTemplateUpdate>,
) -> ApiResult<Response> {
    caller.require(Scope::DesignTemplatesWrite)?;
    load_row(&state.db.read, &caller.org_id, &id, Deletion::LiveOnly).await?;
    let body = body.parse()?;
    Ok(envelope::ok(
        update(&state, &caller.org_id, &id, &body).await?,
    ))
}

/// PATCH /v1/design-templates/{id} after the scope check and the body's parse (the web
/// dashboard's editor calls it too): the summary's check, the tree's check as an editable
/// ad's, the version snapshot and the preview's job, in one transaction.
///
/// # Errors
/// Every error PATCH /v1/design-templates/{id} lists.
pub async fn update(
    state: &AppState,
    org_id: &str,
    id: &str,
    body: &DesignTemplateUpdate,
) -> ApiResult<DesignTemplate> {
    let mut errors = Vec::new();
    let summary = check_text(
        "change_summary",
        body.change_summary.clone(),
        CHANGE_SUMMARY_MAX,
        &mut errors,
    );
    super::common::finish(errors)?;
    let row = load_row(&state.db.read, org_id, id, Deletion::LiveOnly).await?;
    require_ready(&row, "edit it")?;
    let text = super::image_ads::validate_saved_tree(state, &body.current_json_tree).await?;

    let mut tx = state.db.begin_write().await?;
    let row = load_row(&mut *tx, org_id, id, Deletion::LiveOnly).await?;
    require_ready(&row, "edit it")?;
    let now = crate::timestamp::now();
    let version = row.json_tree_version + 1;
    let job = Job::RenderDesignTemplatePreview(DesignTemplateJob {
        template_id: id.to_owned(),
        org_id: org_id.to_owned(),
        version: u32::try_from(version).unwrap_or(u32::MAX),
        reference_image_url: row.reference_image_url.clone(),
        json_tree: Some(body.current_json_tree.clone()),
        classify: false,
    });
    store::start_version(
        &mut tx,
        org_id,
        &row,
        &store::NextVersion {
            version,
            tree: &text,
            change_summary: summary.as_deref(),
            job: &job,
            now: &now,
        },
    )
    .await?;
    Jobs::stage(&mut tx, &job).await?;
    let row = load_row(&mut *tx, org_id, id, Deletion::Any).await?;
    let jobs = state.jobs.clone();
    tx.after_commit(move || jobs.kick());
    tx.commit().await?;
    Ok(row.into_api())
}

/// Delete a design template
///
/// A soft delete: the template leaves the default list (it is listed with
/// `deleted=true`), GET still returns it with `deleted: true`, edits and ads answer 404,
/// and POST /v1/design-templates/{id}/restore brings it back. Deleting a deleted template
/// answers the same again. Ads already made from it are not affected.
#[utoipa::path(delete, path = "/v1/design-templates/{id}", tag = "design templates",
    params(("id" = String, Path, description = "dt_…")),
    responses(
        (status = 200, description = "Deleted", body = Deleted),
        (status = 404, description = "DESIGN_TEMPLATE_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["design_templates:write"])))]
async fn delete_template(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::DesignTemplatesWrite)?;
    set_deleted(&state.db, &caller.org_id, &id, true).await?;
    Ok(Deleted::response(id))
}

/// Restore a design template
///
/// Undoes a soft delete; restoring a live template changes nothing. Answers the template.
#[utoipa::path(post, path = "/v1/design-templates/{id}/restore", tag = "design templates",
    params(("id" = String, Path, description = "dt_…")),
    responses(
        (status = 200, description = "The restored template", body = Envelope<DesignTemplate>),
        (status = 404, description = "DESIGN_TEMPLATE_NOT_FOUND", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["design_templates:write"])))]
async fn restore_template(
    State(state): State<AppState>,
    Auth(caller): Auth,
    IdPath(id): IdPath,
) -> ApiResult<Response> {
    caller.require(Scope::DesignTemplatesWrite)?;
    Ok(envelope::ok(
        set_deleted(&state.db, &caller.org_id, &id, false).await?,
    ))
}

/// Soft-deletes (`delete`) or restores the organisation's template `id`.
///
/// # Errors
/// DESIGN_TEMPLATE_NOT_FOUND; database failures.
pub async fn set_deleted(
    db: &Db,
    org_id: &str,
    id: &str,
    delete: bool,
) -> ApiResult<DesignTemplate> {
    let mut tx = db.begin_write().await?;
    let row = load_row(&mut *tx, org_id, id, Deletion::Any).await?;
    if row.deleted_at.is_some() != delete {
        let now = crate::timestamp::now();
        store::set_deleted(&mut tx, id, delete, &now).await?;
    }
    let row = load_row(&mut *tx, org_id, id, Deletion::Any).await?;
    tx.commit().await?;
    Ok(row.into_api())
}
