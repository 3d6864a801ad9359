//! The `adforge` binary's library: the only crate that knows every router. It assembles
//! `/v1` (from `adforge-api`), `/dashboard` (from `adforge-dashboard`), `/files`,
//! `/openapi.json` and the operator's endpoints into one server ([`app`]), and holds the
//! command line ([`cli`]: `serve`, `worker`, `render`, `admin`, `openapi`).
//!
//! ```no_run
//! # async fn demo(args: adforge::cli::ServeArgs) -> Result<(), adforge_api::Error> {
//! let server = adforge::app::Server::bind(&args).await?; // opens the store, binds
//! server.run(adforge::app::shutdown_signal()).await       // serves until SIGTERM
//! # }
//! ```

pub mod admin;
pub mod app;
pub mod cli;
pub mod flags;
pub mod import;
pub mod render_node;
