//! `GET /v1/search`: one request across products, variants, audiences, design packs,
//! swipe files and image ads. Design packs and swipe files follow data-source
//! subscriptions (their queries live beside their resources).

use axum::extract::State;
use axum::response::Response;
use serde::Serialize;
use sqlx::FromRow;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{Auth, Scope};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::http::envelope::{self, Envelope};
use crate::http::extract::QueryParams;
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(global_search))
}

/// One hit of the global search.
#[derive(Debug, Serialize, FromRow, ToSchema)]
pub struct SearchResult {
    /// product, product_variant, audience, design_pack, swipe_file or image_ad.
    pub object: String,
    pub id: String,
    pub label: String,
    pub hint: Option<String>,
    pub thumbnail_url: Option<String>,
}

/// A searchable type: how to find, label and hint its items (SQL over alias `t`).
struct SearchType {
    object: &'static str,
    scope: Scope,
    /// The id prefix that resolve mode recognises.
    prefix: &'static str,
    /// FROM clause, `None` for types whose resource does not exist yet.
    from: Option<&'static str>,
    label: &'static str,
    hint: &'static str,
    thumbnail: &'static str,
    /// Lower-cased text the query is matched in; names come first so prefix ranking works.
    haystack: &'static str,
    /// Extra condition for search mode (archived items are excluded).
    active: &'static str,
    brand_column: &'static str,
}

const NONE: SearchType = SearchType {
    object: "",
    scope: Scope::ProductsRead,
    prefix: "",
    from: None,
    label: "NULL",
    hint: "NULL",
    thumbnail: "NULL",
    haystack: "t.search_name",
    active: "t.archived_at IS NULL",
    brand_column: "",
};

const TYPES: [SearchType; 6] = [
    SearchType {
        object: "product",
        scope: Scope::ProductsRead,
        prefix: "prod",
        from: Some("products t"),
        label: "t.name",
        brand_column: "t.brand_id",
        ..NONE
    },
    SearchType {
        object: "product_variant",
        scope: Scope::ProductVariantsRead,
        prefix: "pv",
        from: Some("product_variants t JOIN products p ON p.id = t.product_id"),
        label: "t.name",
        hint: "p.name",
        brand_column: "p.brand_id",
        ..NONE
    },
    SearchType {
        object: "audience",
        scope: Scope::AudiencesRead,
        prefix: "aud",
        from: Some("audiences t JOIN products p ON p.id = t.product_id"),
        label: "t.name",
        hint: "p.name",
        brand_column: "p.brand_id",
        ..NONE
    },
    SearchType {
        object: "design_pack",
        scope: Scope::DesignPacksRead,
        prefix: "dp",
        ..NONE
    },
    SearchType {
        object: "swipe_file",
        scope: Scope::SwipeFilesRead,
        prefix: "sf",
        ..NONE
    },
    SearchType {
        object: "image_ad",
        scope: Scope::ImageAdsRead,
        prefix: "ia",
        from: Some("image_ads t JOIN products p ON p.id = t.product_id"),
        label: "p.name || ' ad'",
        hint: "t.id",
        thumbnail: "t.image_url",
        haystack: "t.search_name || ' ' || lower(t.id)",
        active: "1 = 1",
        brand_column: "t.brand_id",
    },
];

const QUERY_MAX: usize = 200;

/// Search across types
///
/// Results are grouped by type in the order of `types`, up to `limit` per type; within a
/// type, names that start with the query come first, then other matches, newest first.
/// Matching is a case-insensitive substring match. Archived and deleted items are
/// excluded. Types the key cannot read are skipped; when none of the requested types is
/// readable the answer is 403 INSUFFICIENT_PERMISSIONS. With `ids`, resolve mode returns
/// those of the ids that exist in the organization (archived ones included), in the order
/// given, ignoring `query` and `limit`. Counts as one request for rate limiting.
#[utoipa::path(get, path = "/v1/search", tag = "search",
    params(
        ("query" = Option<String>, Query, max_length = 200, description = "Empty returns the most recent items of each type"),
        ("types" = Option<String>, Query, pattern = r"^(\s*,)*\s*(product|product_variant|audience|design_pack|swipe_file|image_ad)\s*(,\s*(product|product_variant|audience|design_pack|swipe_file|image_ad)?\s*)*$", description = "Comma-separated among product, product_variant, audience, design_pack, swipe_file, image_ad; default all"),
        ("brand_id" = Option<String>, Query, description = "Limits products, variants, audiences and image ads to one brand"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 25, description = "Results per type, default 5"),
        ("ids" = Option<String>, Query, description = "Up to 100 comma-separated ids of any supported type: resolve mode"),
    ),
    responses(
        (status = 200, description = "Results grouped by type", body = Envelope<Vec<SearchResult>>),
        (status = 400, description = "VALIDATION_ERROR", body = crate::error::ErrorBody),
        (status = 403, description = "INSUFFICIENT_PERMISSIONS", body = crate::error::ErrorBody),
    ),
    security(("api_key" = ["products:read", "product_variants:read", "audiences:read", "design_packs:read", "swipe_files:read", "image_ads:read"])))]
async fn global_search(
    State(state): State<AppState>,
    Auth(caller): Auth,
    mut q: QueryParams,
) -> ApiResult<Response> {
    let query = q.string("query").unwrap_or_default();
    if query.chars().count() > QUERY_MAX {
        q.error("query", format!("must be at most {QUERY_MAX} characters"));
    }
    let limit = q.int("limit", 1, 25, 5);
    let brand_id = q.string("brand_id");
    let ids = q.csv("ids");
    if ids.as_ref().is_some_and(|i| i.len() > 100) {
        q.error("ids", "may name at most 100 ids");
    }
    let mut types: Vec<&SearchType> = Vec::new();
    match q.csv("types") {
        None => types.extend(TYPES.iter()),
        Some(names) => {
            if names.is_empty() {
                q.error("types", "must name at least one type");
            }
            for n in names {
                match TYPES.iter().find(|t| t.object == n) {
                    Some(t) if !types.iter().any(|x| x.object == n) => types.push(t),
                    Some(_) => {}
                    None => q.error(
                        "types",
                        format!(
                            "`{n}` is not a searchable type; use {}",
                            TYPES.map(|t| t.object).join(", ")
                        ),
                    ),
                }
            }
        }
    }
    q.finish()?;
    let readable: Vec<&SearchType> = types
        .into_iter()
        .filter(|t| caller.grants.allows(t.scope))
        .collect();
    if readable.is_empty() {
        return Err(ApiError::new(
            ErrorCode::InsufficientPermissions,
            "This API key can read none of the requested types; it needs a read scope such as products:read",
        ));
    }
    let mut results = Vec::new();
    if let Some(ids) = ids {
        for id in &ids {
            let prefix = crate::ids::prefix_of(id).unwrap_or("");
            let Some(t) = readable.iter().find(|t| t.prefix == prefix) else {
                continue;
            };
            if let Some(hit) = special(
                &state,
                &caller.org_id,
                t.object,
                "",
                1,
                Some(std::slice::from_ref(id)),
            )
            .await?
            {
                results.extend(hit);
                continue;
            }
            let Some(from) = t.from else { continue };
            let mut sql = format!(
                "SELECT '{}' AS object, t.id, {} AS label, {} AS hint, {} AS thumbnail_url FROM {from} \
                 WHERE t.org_id = ? AND t.deleted_at IS NULL AND t.id = ?",
                t.object, t.label, t.hint, t.thumbnail
            );
            if brand_id.is_some() {
                sql.push_str(&format!(" AND {} = ?", t.brand_column));
            }
            let mut qa = crate::store::query_as::<SearchResult>(&sql)
                .bind(&caller.org_id)
                .bind(id);
            if let Some(b) = &brand_id {
                qa = qa.bind(b);
            }
            results.extend(qa.fetch_optional(&state.db.read).await?);
        }
        return Ok(envelope::ok(results));
    }
    let needle = query.to_lowercase();
    let needle_len = needle.chars().count() as i64;
    for t in readable {
        if let Some(hits) = special(&state, &caller.org_id, t.object, &needle, limit, None).await? {
            results.extend(hits);
            continue;
        }
        let Some(from) = t.from else { continue };
        let mut sql = format!(
            "SELECT '{}' AS object, t.id, {} AS label, {} AS hint, {} AS thumbnail_url FROM {from} \
             WHERE t.org_id = ? AND t.deleted_at IS NULL AND {} AND instr({}, ?) > 0",
            t.object, t.label, t.hint, t.thumbnail, t.active, t.haystack
        );
        if brand_id.is_some() {
            sql.push_str(&format!(" AND {} = ?", t.brand_column));
        }
        sql.push_str(&format!(
            " ORDER BY substr({}, 1, ?) = ? DESC, t.seq DESC LIMIT ?",
            t.haystack
        ));
        let mut qa = crate::store::query_as::<SearchResult>(&sql)
            .bind(&caller.org_id)
            .bind(&needle);
        if let Some(b) = &brand_id {
            qa = qa.bind(b);
        }
        let rows = qa
            .bind(needle_len)
            .bind(&needle)
            .bind(limit)
            .fetch_all(&state.db.read)
            .await?;
        results.extend(rows);
    }
    Ok(envelope::ok(results))
}

/// The marker `hint` of service-curated design packs.
pub const CURATED_MARKER: &str = "Curated by adforge";

/// Design packs and swipe files, whose visibility follows data-source subscriptions;
/// `None` for the other types.
async fn special(
    state: &AppState,
    org_id: &str,
    object: &str,
    needle: &str,
    limit: i64,
    ids: Option<&[String]>,
) -> ApiResult<Option<Vec<SearchResult>>> {
    match object {
        "design_pack" => {
            let rows = super::design_packs::search(&state.db, org_id, needle, limit, ids).await?;
            Ok(Some(
                rows.into_iter()
                    .map(|(id, title, managed)| SearchResult {
                        object: "design_pack".into(),
                        id,
                        label: title,
                        hint: managed.then(|| CURATED_MARKER.to_string()),
                        thumbnail_url: None,
                    })
                    .collect(),
            ))
        }
        "swipe_file" => {
            let rows =
                super::swipe_files::search_labels(&state.db, org_id, needle, limit, ids).await?;
            Ok(Some(
                rows.into_iter()
                    .map(|(id, label, thumb)| SearchResult {
                        object: "swipe_file".into(),
                        id,
                        label,
                        hint: None,
                        thumbnail_url: thumb.map(|k| state.blobs.url(&k)),
                    })
                    .collect(),
            ))
        }
        _ => Ok(None),
    }
}
