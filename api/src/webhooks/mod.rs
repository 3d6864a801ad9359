//! Webhooks (issue 12): events written in the same transaction as the state change that
//! causes them, one delivery row per subscribed endpoint (the outbox pattern), and a
//! background task ([`deliver`]) that POSTs them, signed, at least once.
//!
//! Why rows in SQL rather than a queue: the event must exist exactly when its state change
//! does. Writing it inside the applier's transaction gives that for free: a rolled-back
//! change leaves no event, a committed one cannot lose its event, and a redelivered worker
//! result changes nothing (the applier is idempotent), so it writes no second event.
//!
//! Signatures follow Stripe's scheme: `Adforge-Signature: t=<unix seconds>,v1=<hex
//! HMAC-SHA256 of "<t>.<body>" keyed with the endpoint's secret>`; during a rotation's grace
//! period a second `v1=` carries the old secret's signature. Receivers check the timestamp
//! within [`SIGNATURE_TOLERANCE_SECS`].

pub mod deliver;

use std::time::Duration;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;
use sqlx::AnyConnection;
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};

use crate::error::ApiResult;

/// Every event type emitted today. Adding a type is one line here, plus the
/// [`record`] call in the transaction of the state change that causes it; the API's
/// validation, the OpenAPI enum and the OpenAPI `webhooks` section all follow this list.
///
/// `swipe_file.ready` / `swipe_file.failed` report an organisation's own uploads when ingest
/// finishes; designs of managed data sources belong to no organisation and report nothing.
pub const EVENT_TYPES: &[&str] = &[
    "image_ad.completed",
    "image_ad.failed",
    "image_ad_batch.completed",
    "design_template.completed",
    "design_template.failed",
    "swipe_file.ready",
    "swipe_file.failed",
];

/// How long the previous secret keeps signing deliveries after a rotation.
pub const SECRET_GRACE_SECS: i64 = 24 * 3600;
/// How old a signature's timestamp a receiver should accept (documented, and used by the
/// verification examples).
pub const SIGNATURE_TOLERANCE_SECS: i64 = 300;
/// Endpoints per organisation.
pub const MAX_ENDPOINTS: i64 = 16;
/// Longest endpoint URL.
pub const URL_MAX: usize = 2048;
/// Longest endpoint description.
pub const DESCRIPTION_MAX: usize = 500;
/// The header carrying `t=…,v1=…`.
pub const SIGNATURE_HEADER: &str = "Adforge-Signature";
/// The header carrying the event id (the same on every retry and redelivery).
pub const EVENT_ID_HEADER: &str = "Adforge-Event-Id";

/// An event type name, one of [`EVENT_TYPES`] (an OpenAPI string enum built from that list).
pub struct EventType;

impl utoipa::PartialSchema for EventType {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(SchemaType::Type(Type::String))
            .description(Some("An event type."))
            .enum_values(Some(EVENT_TYPES.iter().copied()))
            .into()
    }
}

impl ToSchema for EventType {}

/// `data` of an event.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct EventData {
    /// The resource exactly as its GET returned it when the event happened (for
    /// `image_ad.*`: an image ad as GET /v1/image-ads/{id} returns it; for
    /// `image_ad_batch.completed`: a batch as GET /v1/image-ad-batches/{id} returns it; for
    /// `design_template.*`: a design template as GET /v1/design-templates/{id} returns it; for
    /// `swipe_file.*`: a swipe file as GET /v1/swipe-files/{id} returns it).
    #[schema(schema_with = event_object_schema)]
    pub object: Value,
}

/// `data.object`: one of the resources events are about.
fn event_object_schema() -> RefOr<Schema> {
    utoipa::openapi::schema::AnyOfBuilder::new()
        .item(utoipa::openapi::Ref::from_schema_name("ImageAd"))
        .item(utoipa::openapi::Ref::from_schema_name("ImageAdBatch"))
        .item(utoipa::openapi::Ref::from_schema_name("DesignTemplate"))
        .item(utoipa::openapi::Ref::from_schema_name("SwipeFile"))
        .into()
}

/// An event: what is POSTed to endpoints, and what GET /v1/events returns.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Event {
    /// `evt_…`; the same on every retry and redelivery: deduplicate on it.
    pub id: String,
    #[serde(rename = "type")]
    #[schema(value_type = EventType)]
    pub event_type: String,
    /// When the state change committed (ISO 8601).
    pub created_at: String,
    pub data: EventData,
}

/// A fresh signing secret: `whsec_` + 44 base62 characters (256 random bits).
pub fn new_secret() -> String {
    let part = |id: String| id.split_once('_').map(|(_, s)| s.to_string()).unwrap_or(id);
    format!(
        "whsec_{}{}",
        part(crate::ids::new_id("x")),
        part(crate::ids::new_id("x"))
    )
}

/// Hex HMAC-SHA256 of `"<t>.<body>"` keyed with the whole secret string (`whsec_…`).
pub fn sign(secret: &str, t: i64, body: &[u8]) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        // HMAC takes keys of any length; this branch cannot be reached.
        return String::new();
    };
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `t=<t>,v1=<sig>[,v1=<sig>…]`, one `v1` per secret, the current secret first.
pub fn signature_header(t: i64, secrets: &[&str], body: &[u8]) -> String {
    let mut out = format!("t={t}");
    for s in secrets {
        out.push_str(",v1=");
        out.push_str(&sign(s, t, body));
    }
    out
}

/// Writes an event of `org_id` about `object_id` and one pending delivery per enabled
/// endpoint subscribed to `event_type`, inside the caller's transaction. Returns the
/// event id.
///
/// # Errors
/// Database failures (the caller's transaction then rolls back, state change included).
pub async fn record(
    conn: &mut AnyConnection,
    org_id: &str,
    event_type: &str,
    object_id: &str,
    object: Value,
) -> ApiResult<String> {
    debug_assert!(EVENT_TYPES.contains(&event_type));
    let event = Event {
        id: crate::ids::new_id("evt"),
        event_type: event_type.to_string(),
        created_at: crate::timestamp::now(),
        data: EventData { object },
    };
    crate::store::query(
        "INSERT INTO events (id, org_id, type, object_id, payload, created_at) VALUES (?, ?, ?, ?, ?, ?)",
    )
    .bind(&event.id)
    .bind(org_id)
    .bind(event_type)
    .bind(object_id)
    .bind(crate::store::to_json_text(&event))
    .bind(&event.created_at)
    .execute(&mut *conn)
    .await?;
    for endpoint_id in subscribed_endpoints(conn, org_id, event_type).await? {
        insert_delivery(
            conn,
            org_id,
            &endpoint_id,
            &event.id,
            event_type,
            object_id,
            false,
        )
        .await?;
    }
    Ok(event.id)
}

/// The enabled live endpoints of `org_id` subscribed to `event_type`, oldest first.
///
/// # Errors
/// Database failures.
pub async fn subscribed_endpoints(
    conn: &mut AnyConnection,
    org_id: &str,
    event_type: &str,
) -> ApiResult<Vec<String>> {
    Ok(crate::store::query_scalar(
        "SELECT id FROM webhook_endpoints WHERE org_id = ? AND enabled = 1 AND deleted_at IS NULL \
         AND instr(events, ?) > 0 ORDER BY seq",
    )
    .bind(org_id)
    // `events` is a JSON array of plain names: the quoted name matches exactly one entry.
    .bind(format!("\"{event_type}\""))
    .fetch_all(conn)
    .await?)
}

/// Inserts one pending delivery, due now (a `redelivery` is attempted at once, outside the
/// per-resource order; see [`deliver`]). Returns its id.
///
/// # Errors
/// Database failures.
pub async fn insert_delivery(
    conn: &mut AnyConnection,
    org_id: &str,
    endpoint_id: &str,
    event_id: &str,
    event_type: &str,
    object_id: &str,
    redelivery: bool,
) -> ApiResult<String> {
    let id = crate::ids::new_id("whd");
    let now_ms = deliver::now_ms();
    crate::store::query(
        "INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, object_id, state, attempts, \
         next_attempt_ms, created_at, created_ms, redelivery) VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?)",
    )
    .bind(&id)
    .bind(org_id)
    .bind(endpoint_id)
    .bind(event_id)
    .bind(event_type)
    .bind(object_id)
    .bind(now_ms)
    .bind(crate::timestamp::now())
    .bind(now_ms)
    .bind(i64::from(redelivery))
    .execute(conn)
    .await?;
    Ok(id)
}

/// Checks an endpoint URL: absolute, at most [`URL_MAX`] characters, https (http too with
/// `allow_private`), no user name or password, and, unless `allow_private`, a host the one
/// address policy ([`adforge_renderer::address`]) accepts: not `localhost`, not a refused
/// literal address, and a name that resolves to at least one public address. Returns the
/// reason it is refused.
pub async fn check_url(url: &str, allow_private: bool) -> Result<reqwest::Url, String> {
    use adforge_renderer::address::{self, Host};
    if url.chars().count() > URL_MAX {
        return Err(format!("must be at most {URL_MAX} characters"));
    }
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("is not an absolute URL ({e})"))?;
    match parsed.scheme() {
        "https" => {}
        "http" if allow_private => {}
        "http" => {
            return Err(
                "must use https (plain http is accepted only when the server runs with --allow-private-urls)"
                    .into(),
            );
        }
        other => return Err(format!("must be an https URL, not `{other}:`")),
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(
            "must not contain a user name or password; verify our signature in your receiver instead"
                .into(),
        );
    }
    let Some(host) = parsed.host_str().filter(|h| !h.is_empty()) else {
        return Err("has no host".into());
    };
    if allow_private {
        return Ok(parsed);
    }
    let name = match Host::parse(host)? {
        h @ Host::Address(_) => {
            return match h.refusal() {
                Some(why) => Err(format!("{why}; webhook endpoints must be public")),
                None => Ok(parsed),
            };
        }
        h @ Host::Name(_) => {
            if let Some(why) = h.refusal() {
                return Err(format!("{why}; webhook endpoints must be public"));
            }
            host.trim_end_matches('.').to_string()
        }
    };
    let port = parsed.port_or_known_default().unwrap_or(443);
    let resolved = tokio::time::timeout(
        Duration::from_secs(5),
        tokio::net::lookup_host((name.clone(), port)),
    )
    .await
    .map_err(|_| format!("host `{name}` did not resolve within 5 seconds"))?
    .map_err(|e| format!("host `{name}` does not resolve ({e})"))?;
    if resolved.into_iter().any(|a| address::is_public(a.ip())) {
        Ok(parsed)
    } else {
        Err(format!(
            "host `{name}` resolves only to addresses that are {}; webhook endpoints must be public",
            address::REFUSED
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_follow_the_documented_scheme() {
        // A fixed vector, also quoted in docs/webhooks.md so readers can test their code.
        let body = br#"{"id":"evt_1"}"#;
        let sig = sign("whsec_test", 1_700_000_000, body);
        assert_eq!(
            sig,
            "c89214b5b5da833daed6f0b8c5bb6bd58cea9022bd80ccc78230f3942d632925"
        );
        assert_eq!(sig, sign("whsec_test", 1_700_000_000, body));
        assert_ne!(sig, sign("whsec_other", 1_700_000_000, body));
        assert_ne!(sig, sign("whsec_test", 1_700_000_001, body));
        let h = signature_header(1_700_000_000, &["whsec_test", "whsec_old"], body);
        assert!(h.starts_with("t=1700000000,v1="));
        assert_eq!(h.matches(",v1=").count(), 2);
        assert!(new_secret().starts_with("whsec_") && new_secret().len() == 6 + 44);
    }

    #[tokio::test]
    async fn urls_are_checked() {
        assert!(check_url("https://8.8.8.8/hook", false).await.is_ok());
        for bad in [
            "http://8.8.8.8/hook",
            "https://127.0.0.1/hook",
            "https://10.1.2.3/hook",
            "https://[::1]/hook",
            "https://localhost/hook",
            "https://[::127.0.0.1]/hook",
            "https://[64:ff9b::7f00:1]/hook",
            "https://[2001:db8::1]/hook",
            "https://192.0.0.170/hook",
            "https://224.0.0.1/hook",
            "https://[ff02::1]/hook",
            "https://user:secret@8.8.8.8/hook",
            "https://user@8.8.8.8/hook",
            "ftp://8.8.8.8/",
            "not a url",
        ] {
            assert!(check_url(bad, false).await.is_err(), "{bad}");
        }
        assert!(check_url("http://127.0.0.1:9/hook", true).await.is_ok());
        assert!(check_url("ftp://127.0.0.1/", true).await.is_err());
        assert!(
            check_url("http://u:p@127.0.0.1:9/hook", true)
                .await
                .is_err()
        );
    }
}
