//! The web dashboard under `/dashboard`, served by `adforge serve` (on by default;
//! `--no-dashboard` turns it off): server-rendered HTML pages with plain forms, one CSS
//! file and one small script (the swipe upload).
//!
//! - Pages call the same domain code as the API and the admin CLI: `auth::issue_key`,
//!   `revoke_key`, `rotate_key`; `wallet::top_up`, `wallet::balance`; [`members`].
//! - Sign-in ([`signin`]): email and password (argon2id), rate-limited to
//!   [`signin::PER_EMAIL_PER_MINUTE`] attempts per email and [`signin::PER_IP_PER_MINUTE`]
//!   per client address through the API's own [`adforge_api::ratelimit`] limiter (Redis-shared
//!   when `--redis-url` is set).
//! - Sessions: a random token in the `adforge_session` cookie (`HttpOnly; SameSite=Lax;
//!   Path=/dashboard`, plus `Secure` when the public URL is https), stored as its SHA-256,
//!   revocable from the sessions page.
//! - CSRF: every form carries the session's token in a hidden `csrf` field, checked on every
//!   POST (forms before sign-in use a double-submit cookie); missing or wrong → a 403 page.
//! - Isolation: every id in a URL is looked up within the session's organisation, so
//!   another organisation's id is the same 404 page as an unknown one.
//! - Little JavaScript: every action outside the visual editor is a form POST followed by
//!   a redirect or a page; htmx was not needed, so it is not vendored. `dashboard.js` (our
//!   own, served from `/dashboard/assets/`, allowed by `script-src 'self'`) adds drag and
//!   drop and per-file progress to the swipe file's upload form; without it the same form
//!   posts every chosen file at once. The visual editor of ads and templates ([`editor`]) is
//!   a set of ES modules of our own (`/dashboard/assets/editor/`, no build step) under the
//!   same policy; the plain form of an ad's texts, colours and images stays for browsers
//!   without scripts.
//! - Swipe file ([`swipe`]) and design packs ([`packs`]) call the functions the
//!   `/v1/swipe-files` and `/v1/design-packs` handlers call.
//! - Image ads ([`ads`]) call the functions the `/v1/image-ads` and `/v1/images` handlers
//!   call; a page showing a processing ad refreshes itself with `<meta http-equiv=refresh>`
//!   every 4 seconds (no script), and pages with images allow their origin in `img-src`.
//! - Batches ([`batches`]) call the functions the `/v1/image-ad-batches` handlers call; a
//!   processing batch's page updates its counts and ads in place through `dashboard.js`
//!   (no timed reload). An ad's page offers "Make other sizes" (`image_ads::resize`).
//! - Figma ([`figma`]): connect, sync a frame, each synced ad's render beside Figma's.

mod ads;
mod batches;
mod brands;
mod cutouts;
pub mod editor;
mod figma;
pub mod html;
mod imports;
mod keys;
pub mod members;
mod packs;
mod signin;
pub mod store;
mod swipe;
mod team;
mod templates;
mod wallet;

use axum::Router;
use axum::extract::FromRequestParts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use clap::Args;

use adforge_api::state::AppState;
use members::SessionMember;

/// `serve`'s dashboard flags.
#[derive(Args, Clone, Debug, Default)]
pub struct DashboardArgs {
    /// Do not serve the web dashboard under /dashboard.
    #[arg(long, env = "ADFORGE_NO_DASHBOARD", default_value_t = false)]
    pub no_dashboard: bool,
}

/// What the dashboard needs of the server's configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub enabled: bool,
    /// Links the dashboard hands out (invites) start with it.
    pub public_url: String,
    /// Cookies get `Secure` (the public URL is https).
    pub secure_cookies: bool,
}

impl Config {
    pub fn new(args: &DashboardArgs, public_url: &str) -> Self {
        Self {
            enabled: !args.no_dashboard,
            public_url: public_url.trim_end_matches('/').to_string(),
            secure_cookies: public_url.starts_with("https://"),
        }
    }
}

/// The dashboard's state: the API's [`AppState`] (whose bodies the pages call) and the
/// dashboard's own configuration. Derefs to the `AppState`, and handlers may take either
/// `State<AppState>` or `State<DashboardState>`.
#[derive(Clone)]
pub struct DashboardState {
    pub app: AppState,
    pub config: std::sync::Arc<Config>,
}

impl std::ops::Deref for DashboardState {
    type Target = AppState;
    fn deref(&self) -> &AppState {
        &self.app
    }
}

impl axum::extract::FromRef<DashboardState> for AppState {
    fn from_ref(s: &DashboardState) -> Self {
        s.app.clone()
    }
}

/// The stylesheet, compiled in.
const CSS: &str = include_str!("../../../assets/dashboard/dashboard.css");

/// The routes under `/dashboard`, with their state (the server nests them when enabled).
pub fn router<S: Clone + Send + Sync + 'static>(state: DashboardState) -> Router<S> {
    Router::new()
        .route("/", get(|| async { redirect("/dashboard/keys") }))
        .route("/assets/dashboard.css", get(css))
        .route("/sign-in", get(signin::form).post(signin::submit))
        .route(
            "/sign-in/link",
            get(signin::link_form).post(signin::link_submit),
        )
        .route("/sign-out", post(signin::sign_out))
        .route("/sessions", get(signin::sessions))
        .route("/sessions/{id}/revoke", post(signin::revoke))
        .route("/ads", get(ads::gallery))
        .route("/ads/new", get(ads::create_form).post(ads::create))
        .route("/ads/{id}", get(ads::detail))
        .route("/ads/{id}/download", get(ads::download))
        .route("/ads/{id}/thumb", get(ads::thumb))
        .route("/ads/{id}/sizes", post(ads::make_sizes))
        .route(
            "/ads/{id}/edit",
            get(editor::ad_page).post(ads::edit_submit),
        )
        .route("/ads/{id}/edit/form", get(ads::edit_form))
        .route("/cutouts", get(cutouts::list))
        .route("/imports", get(imports::list))
        .route("/imports/{id}", get(imports::detail))
        .route("/keys", get(keys::list).post(keys::create))
        .route("/keys/{id}/revoke", post(keys::revoke))
        .route("/keys/{id}/rotate", post(keys::rotate))
        .route("/wallet", get(wallet::show))
        .route("/wallet/ledger.csv", get(wallet::csv))
        .route("/wallet/top-up", post(wallet::top_up))
        // The `--dashboard-url` default of older versions.
        .route("/billing", get(|| async { redirect("/dashboard/wallet") }))
        .route("/members", get(team::list).post(team::invite))
        .route("/org", post(team::switch_org))
        .merge(batches::routes())
        .merge(swipe::routes())
        .merge(packs::routes())
        .merge(templates::routes())
        .merge(brands::routes())
        .merge(figma::routes())
        .merge(editor::routes())
        .fallback(|| async { DashError::NotFound })
        .with_state(state)
}

async fn css() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        CSS,
    )
        .into_response()
}

/// A comma-separated filter value of a page's query as the API's typed filters take it:
/// items trimmed, empty ones dropped; `None` for a blank value (no filter).
pub fn csv(value: &str) -> Option<Vec<String>> {
    (!value.trim().is_empty()).then(|| {
        value
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    })
}

/// A 303 to `to` (after a POST, the browser GETs it).
pub fn redirect(to: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

/// An HTML page response with the dashboard's headers: no caching (pages show secrets and
/// balances), no framing, a strict content policy (only our own script and styles).
pub fn html(status: StatusCode, body: String) -> Response {
    html_with_images(status, body, &[])
}

/// [`html`] for a page showing images from `image_origins` too (`https://host[:port]`,
/// e.g. an S3 bucket's files; this server's own `/files/` are `'self'`).
pub fn html_with_images(status: StatusCode, body: String, image_origins: &[String]) -> Response {
    let mut img = String::from("'self' data:");
    for o in image_origins {
        img.push(' ');
        img.push_str(o);
    }
    let policy = format!(
        "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src {img}; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    );
    let mut r = (status, body).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Ok(v) = HeaderValue::from_str(&policy) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    r
}

/// Why a dashboard request did not get its page; each renders as an HTML page.
#[derive(Debug)]
pub enum DashError {
    /// Not signed in: to the sign-in page, coming back to `next` afterwards.
    SignIn { next: String },
    /// Unknown id, or one of another organisation.
    NotFound,
    /// The form's CSRF token is missing or wrong.
    Csrf,
    /// The signed-in member's role does not allow this.
    Forbidden(&'static str),
    /// The dashboard is off (`--no-dashboard`).
    Disabled,
    /// Logged with its cause; the page says only that something failed.
    Internal(String),
}

impl From<sqlx::Error> for DashError {
    fn from(e: sqlx::Error) -> Self {
        DashError::Internal(e.to_string())
    }
}

impl IntoResponse for DashError {
    fn into_response(self) -> Response {
        let (status, title, text) = match self {
            DashError::SignIn { next } => {
                let to = if next.starts_with("/dashboard") && next != "/dashboard/sign-in" {
                    format!(
                        "/dashboard/sign-in?next={}",
                        form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>()
                    )
                } else {
                    "/dashboard/sign-in".to_string()
                };
                return redirect(&to);
            }
            DashError::NotFound => (
                StatusCode::NOT_FOUND,
                "Not found",
                "There is nothing here in your organisation.",
            ),
            DashError::Csrf => (
                StatusCode::FORBIDDEN,
                "Form expired",
                "This form was not accepted: its security token is missing or out of date. Go back, reload the page and try again.",
            ),
            DashError::Forbidden(why) => (StatusCode::FORBIDDEN, "Not allowed", why),
            DashError::Disabled => (
                StatusCode::NOT_FOUND,
                "Not found",
                "The dashboard is turned off on this server.",
            ),
            DashError::Internal(cause) => {
                tracing::error!(error = %cause, "dashboard request failed");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Something went wrong",
                    "The server could not finish this request. Try again in a moment.",
                )
            }
        };
        let body = format!(
            r#"<p>{}</p><p><a href="/dashboard">Back to the dashboard</a></p>"#,
            html::esc(text)
        );
        html(status, html::page(title, None, "", &body))
    }
}

pub type DashResult = Result<Response, DashError>;

/// A parsed `application/x-www-form-urlencoded` body (repeated names kept).
pub struct Form(Vec<(String, String)>);

impl Form {
    pub fn parse(body: &[u8]) -> Self {
        Form(form_urlencoded::parse(body).into_owned().collect())
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of a repeated field (checkboxes).
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// The query string of a request, parsed like a form.
pub fn query(uri: &axum::http::Uri) -> Form {
    Form::parse(uri.query().unwrap_or("").as_bytes())
}

/// A cookie's value from the request headers.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Compares two secrets in time independent of where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

pub const SESSION_COOKIE: &str = "adforge_session";

/// A `Set-Cookie` value for the dashboard's path with its flags; `max_age` 0 deletes.
pub fn set_cookie(config: &Config, name: &str, value: &str, max_age: i64) -> String {
    format!(
        "{name}={value}; Path=/dashboard; HttpOnly; SameSite=Lax; Max-Age={max_age}{}",
        if config.secure_cookies {
            "; Secure"
        } else {
            ""
        }
    )
}

/// The signed-in member of a dashboard request; a signed-out request is redirected to
/// sign-in.
pub struct SignedIn(pub SessionMember);

impl FromRequestParts<DashboardState> for SignedIn {
    type Rejection = DashError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &DashboardState,
    ) -> Result<Self, Self::Rejection> {
        if !state.config.enabled {
            return Err(DashError::Disabled);
        }
        // Inside the nested router `uri` lacks the `/dashboard` prefix; the original has it.
        let next = parts
            .extensions
            .get::<axum::extract::OriginalUri>()
            .and_then(|u| u.0.path_and_query().map(|p| p.as_str().to_string()))
            .unwrap_or_else(|| "/dashboard".to_string());
        let Some(token) = cookie(&parts.headers, SESSION_COOKIE) else {
            return Err(DashError::SignIn { next });
        };
        match members::session_member(&state.db, token).await? {
            Some(m) => Ok(SignedIn(m)),
            None => Err(DashError::SignIn { next }),
        }
    }
}

impl SignedIn {
    /// Parses a POSTed form and checks its CSRF token against the session's.
    ///
    /// # Errors
    /// [`DashError::Csrf`] when the token is missing or wrong.
    pub fn form(&self, body: &[u8]) -> Result<Form, DashError> {
        let form = Form::parse(body);
        match form.get("csrf") {
            Some(t) if same_secret(t, &self.0.csrf_token) => Ok(form),
            _ => Err(DashError::Csrf),
        }
    }
}

pub use adforge_api::http::PeerAddr;
