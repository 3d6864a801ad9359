//! Wiring: state, router, middleware order and the server's life cycle.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::FromRef;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::IntoResponse;
use axum::routing::get;

use adforge_renderer::{FetchLimits, HttpFetcher};
use adforge_worker::secrets::SecretKey;
use adforge_worker::{JobQueue, MemoryQueue, RedisQueue};

use crate::cli::ServeArgs;
use adforge_api::Error;
use adforge_api::auth::KeyCache;
use adforge_api::blob::BlobStore;
use adforge_api::http::stack::AuthState;
use adforge_api::http::{middleware, stack};
use adforge_api::jobs::Jobs;
use adforge_api::ops::OpsState;
use adforge_api::ratelimit::{MemoryRateLimiter, RedisRateLimiter, SharedLimiter};
use adforge_api::resources;
use adforge_api::state::AppState;
use adforge_api::store::Db;
use adforge_api::v1::api_router;

/// Builds the application. Middleware, outermost first: metrics → request id → auth →
/// rate limit → body limit → idempotency → route, as one layer
/// (`adforge_api::http::stack`). The web dashboard is nested under `/dashboard` (auth and
/// the per-key rate limit pass it by: it has its own sessions).
/// The operator's `/healthz`, `/readyz` and `/metrics` (`adforge_api::ops`) are merged in
/// outside that stack.
pub fn build(state: AppState, dashboard: Arc<adforge_dashboard::Config>) -> Router {
    let (routes, doc) = api_router().split_for_parts();
    let doc = adforge_api::openapi::with_webhooks(adforge_api::openapi::finish(doc));
    let openapi: Arc<str> = Arc::from(serde_json::to_string(&doc).unwrap_or_default());
    let routes = if dashboard.enabled {
        let dashboard = adforge_dashboard::DashboardState {
            app: state.clone(),
            config: dashboard,
        };
        routes.nest("/dashboard", adforge_dashboard::router(dashboard))
    } else {
        routes
    };
    routes
        .route(
            "/openapi.json",
            get(move || {
                let openapi = openapi.clone();
                async move {
                    (
                        [(axum::http::header::CONTENT_TYPE, "application/json")],
                        openapi.to_string(),
                    )
                        .into_response()
                }
            }),
        )
        .route("/files/{*key}", get(resources::files::serve_file))
        .fallback(middleware::no_such_endpoint)
        .method_not_allowed_fallback(middleware::no_such_endpoint)
        // `limit_body` (in the stack) enforces the 15 MiB limit; without this, axum's own
        // 2 MB default for `Multipart` and `Bytes` would refuse uploads between 2 and 15 MiB.
        .layer(axum::extract::DefaultBodyLimit::max(
            middleware::MAX_BODY_BYTES,
        ))
        .layer(from_fn_with_state(
            stack::Stack {
                metrics: state.ops.metrics.clone(),
                auth: AuthState::from_ref(&state),
                rate: adforge_api::ratelimit::RateState {
                    limiter: state.limiter.clone(),
                    previews_per_minute: state.previews.limits.per_minute,
                },
                db: state.db.clone(),
            },
            stack::run,
        ))
        .with_state(state.clone())
        .merge(adforge_api::ops::router(OpsState::from_ref(&state)))
        .layer(from_fn(middleware::nosniff))
}

/// A bound, not yet running server.
pub struct Server {
    pub listener: tokio::net::TcpListener,
    pub addr: SocketAddr,
    pub app: Router,
    pub db: Db,
    /// The job queue and applier of this server (benchmarks feed worker results into it).
    pub jobs: Jobs,
    /// `--metrics-listen`: the bound private listener and what it serves.
    pub metrics_listener: Option<(tokio::net::TcpListener, Router)>,
    /// How long in-flight requests may run on after the shutdown signal.
    pub shutdown_timeout: Duration,
}

impl Server {
    /// Opens the store, prepares the app and binds the listener.
    ///
    /// # Errors
    /// Database or socket failures.
    pub async fn bind(args: &ServeArgs) -> Result<Self, Error> {
        let listener = tokio::net::TcpListener::bind(args.listen).await?;
        let addr = listener.local_addr()?;
        let metrics_listener = match args.ops.metrics_listen {
            Some(a) => Some(tokio::net::TcpListener::bind(a).await?),
            None => None,
        };
        let metrics = Arc::new(
            adforge_api::metrics::Metrics::new()
                .map_err(|e| Error::Invalid(format!("cannot set up metrics: {e}")))?,
        );
        let db = args.db.connect().await?;
        let public_url = args
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{addr}"));
        if !(public_url.starts_with("http://") || public_url.starts_with("https://")) {
            return Err(Error::Invalid(format!(
                "--public-url `{public_url}` must be an absolute http(s) URL"
            )));
        }
        let blobs: Arc<dyn BlobStore> = args.blob.open(&args.db.data_dir, &public_url)?;
        if let Some(created) = adforge_api::orgs::ensure_default_org(&db).await? {
            // Printed once, on the first start with an empty database.
            println!("{created}");
            tracing::warn!(
                "created the default organization; its API key was printed on stdout once"
            );
        }
        resources::images::resume_derivatives(&db, &blobs).await;
        if let Some(folder) = &args.default_collection
            && let Some((id, n)) =
                adforge_api::resources::swipe_files::sources::ensure_default_collection(
                    &db, &blobs, folder,
                )
                .await?
        {
            tracing::info!(data_source_id = %id, designs = n, "imported the default swipe-file collection");
        }
        let purge_db = db.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(600));
            loop {
                tick.tick().await;
                if let Err(e) = adforge_api::idempotency::purge_expired(&purge_db).await {
                    tracing::warn!(error = %e, "idempotency purge failed");
                }
            }
        });
        let (queue, limiter): (Arc<dyn JobQueue>, SharedLimiter) = match &args.redis_url {
            Some(url) => {
                let q = RedisQueue::connect(url, args.queue.config())
                    .await
                    .map_err(|e| Error::Invalid(format!("cannot use --redis-url {url}: {e}")))?;
                let limiter = Arc::new(RedisRateLimiter::new(q.connection_manager()));
                (Arc::new(q), limiter)
            }
            None => (
                Arc::new(MemoryQueue::new(args.queue.config())),
                Arc::new(MemoryRateLimiter::default()),
            ),
        };
        let models_dir = adforge_api::swipe::models_dir(args.models_dir.as_ref());
        let models = adforge_api::swipe::ModelState::load(&models_dir);
        // One cut-out model per process, for the API's cut-out endpoint and its workers.
        let cutter = Arc::new(adforge_worker::cutout::Cutter::load(&models_dir));
        let gpu = if args.workers > 0 {
            crate::render_node::open_backend(args.render.backend)?
        } else {
            None
        };
        let secrets = secrets_key(args)?;
        let figma = Arc::new(
            adforge_api::resources::integrations::FigmaConfig::new(&args.figma, secrets.clone())
                .map_err(Error::Invalid)?,
        );
        adforge_worker::node::spawn_in_process(
            queue.clone(),
            adforge_worker::node::handler_with_models(
                blobs.clone(),
                args.allow_private_urls,
                gpu,
                models.get().cloned(),
                &models_dir,
                cutter.clone(),
                args.copy_model.open()?,
                secrets,
            ),
            args.workers,
        );
        let ops = Arc::new(adforge_api::ops::Ops::new(
            metrics.clone(),
            args.ops.metrics_token.as_deref(),
            args.redis_url.is_some(),
        ));
        let jobs = Jobs::new(db.clone(), queue, metrics, blobs.clone());
        adforge_api::webhooks::deliver::Deliverer::new(
            db.clone(),
            jobs.applied_signal(),
            args.allow_private_urls,
            &args.webhooks,
        )
        .map_err(|e| Error::Invalid(format!("cannot start webhook delivery: {e}")))?
        .spawn();
        jobs.spawn_dispatcher();
        // The one match over job results: each goes to the feature that owns it.
        jobs.spawn_applier(
            adforge_worker::default_consumer_name(),
            adforge_api::results::apply_boxed,
        );
        adforge_api::results::resume(&jobs).await?.log();
        let dashboard_url: Arc<str> = Arc::from(
            args.dashboard_url
                .clone()
                .unwrap_or_else(|| format!("{public_url}/dashboard/wallet")),
        );
        let reference_fetcher = Arc::new(HttpFetcher::new(FetchLimits {
            max_bytes: adforge_api::http::middleware::MAX_BODY_BYTES as u64,
            allow_private: args.allow_private_urls,
            ..FetchLimits::default()
        }));
        let previews = Arc::new(adforge_api::resources::previews::Previewer::new(
            args.previews.limits(),
            blobs.clone(),
            args.allow_private_urls,
        ));
        let state = AppState::new(adforge_api::state::Services {
            db: db.clone(),
            blobs,
            keys: Arc::new(KeyCache::default()),
            limiter,
            jobs: jobs.clone(),
            reference_fetcher,
            dashboard_url,
            allow_private_urls: args.allow_private_urls,
            models,
            cutter,
            ops,
            search_index: Arc::new(adforge_api::swipe::index::SearchIndex::new(
                args.swipe_index.config(&args.db.data_dir),
            )),
            previews,
            figma,
        });
        let dashboard = Arc::new(adforge_dashboard::Config::new(&args.dashboard, &public_url));
        let metrics_listener = metrics_listener.map(|l| {
            let app = adforge_api::ops::private_router(OpsState::from_ref(&state))
                .layer(from_fn(middleware::nosniff));
            (l, app)
        });
        let app = build(state, dashboard);
        Ok(Self {
            listener,
            addr,
            app,
            db,
            jobs,
            metrics_listener,
            shutdown_timeout: Duration::from_secs(args.ops.shutdown_timeout_secs),
        })
    }

    /// Serves until `shutdown` resolves, then stops accepting (both listeners close) and
    /// lets in-flight requests finish for at most `shutdown_timeout`.
    ///
    /// # Errors
    /// Socket failures.
    pub async fn run(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), Error> {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let stopped = move |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            // A dropped sender without a signal means the server ended on its own: never.
            if rx.wait_for(|s| *s).await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        if let Some((listener, app)) = self.metrics_listener {
            let signal = stopped(stop_rx.clone());
            tokio::spawn(async move {
                if let Err(e) = axum::serve(listener, app)
                    .with_graceful_shutdown(signal)
                    .await
                {
                    tracing::error!(error = %e, "the metrics listener failed");
                }
            });
        }
        let signal = async move {
            shutdown.await;
            let _ = stop_tx.send(true);
        };
        // Requests hyper refuses before routing (an unparsable Content-Length, ...) get
        // our error JSON too: see `http::raw_errors`.
        let listener = adforge_api::http::raw_errors::JsonErrorListener(self.listener);
        // Connect info gives the dashboard's sign-in limit the client address.
        let serve = axum::serve(
            listener,
            self.app
                .into_make_service_with_connect_info::<adforge_api::http::PeerAddr>(),
        )
        .with_graceful_shutdown(signal);
        let grace = self.shutdown_timeout;
        let deadline = async move {
            stopped(stop_rx).await;
            tokio::time::sleep(grace).await;
        };
        let served = tokio::select! {
            served = serve.into_future() => served,
            () = deadline => {
                tracing::warn!(
                    grace_secs = grace.as_secs(),
                    "requests still in flight after the shutdown timeout; exiting anyway"
                );
                Ok(())
            }
        };
        // Renders still drawing (an in-process worker's job, a preview whose client left)
        // stop at their next check, so the blocking threads they hold end within
        // milliseconds and the process can exit ([`crate::cli::main`] waits for them
        // at most `BLOCKING_GRACE`).
        adforge_renderer::budget::stop_all();
        served?;
        Ok(())
    }
}

/// The secrets key third-party tokens are sealed with: `ADFORGE_SECRETS_KEY`, else
/// `--secrets-key-file`; in the embedded default (no `--database-url`, no `--redis-url`)
/// else a key generated into `DATA_DIR/secrets.key` on first use. A cluster without one has
/// none: storing a token answers 503 until the operator gives every node the same key.
///
/// # Errors
/// A variable or file that is not base64 of 32 bytes; a key file that cannot be read or
/// written.
fn secrets_key(args: &ServeArgs) -> Result<Option<Arc<SecretKey>>, Error> {
    let invalid =
        |e: adforge_worker::secrets::SecretsError| Error::Invalid(format!("secrets key: {e}"));
    let embedded = args.db.database_url.is_none() && args.redis_url.is_none();
    let key = match (
        std::env::var(adforge_worker::secrets::ENV).is_ok_and(|v| !v.trim().is_empty()),
        &args.figma.secrets_key_file,
    ) {
        (true, _) => SecretKey::from_env().map_err(invalid)?,
        (false, Some(path)) => Some(SecretKey::from_file(path).map_err(invalid)?),
        (false, None) if embedded => {
            Some(SecretKey::load_or_create(&args.db.data_dir).map_err(invalid)?)
        }
        (false, None) => None,
    };
    if key.is_none() {
        tracing::warn!(
            "no ADFORGE_SECRETS_KEY: Figma cannot be connected on this cluster until every API node and worker has the same key"
        );
    }
    Ok(key.map(Arc::new))
}

/// Resolves on SIGTERM or Ctrl-C. The handlers are installed when this is called, not
/// when the future is first polled: `axum::serve` polls its shutdown future on a task of
/// its own, which on a busy machine may first run after the server has answered requests,
/// and a SIGTERM before that killed the process without a graceful shutdown.
///
/// Call it inside the runtime.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let (term, int) = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::terminate()).ok(),
            signal(SignalKind::interrupt()).ok(),
        )
    };
    async move {
        #[cfg(unix)]
        {
            let wait = |s: Option<tokio::signal::unix::Signal>| async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! { () = wait(term) => {}, () = wait(int) => {} }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutting down: finishing in-flight requests");
    }
}

/// `adforge serve`.
///
/// # Errors
/// Start-up failures.
pub async fn run(args: ServeArgs) -> Result<(), Error> {
    let shutdown = shutdown_signal();
    let server = Server::bind(&args).await?;
    tracing::info!(addr = %server.addr, data_dir = %args.db.data_dir.display(), "adforge API listening");
    server.run(shutdown).await
}
