//! Command-line interface: `serve`, `admin` and `render`. Every flag also reads an
//! `ADFORGE_*` environment variable.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "adforge",
    version,
    about = "Ad creative generation service: API server, operator tools and renderer"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run the HTTP API (embedded default: SQLite file and blob folder under --data-dir).
    // Boxed: its flags make it far larger than the other commands.
    Serve(Box<ServeArgs>),
    /// Operator tasks the spec leaves to the web dashboard: organizations, API keys,
    /// wallet top-ups. Each prints one JSON object on stdout.
    Admin(crate::admin::AdminArgs),
    /// Run a stateless render node that takes jobs from Redis.
    Worker(crate::render_node::WorkerArgs),
    /// Render a JSON tree file to PNG (long edge 3840 px by default). Image paths in the
    /// tree may be URLs or paths relative to the tree file.
    Render(RenderArgs),
    /// Print the OpenAPI 3.1 document (the same one the server serves at /openapi.json).
    Openapi,
}

#[derive(Args, Clone, Debug)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "ADFORGE_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    #[command(flatten)]
    pub db: crate::flags::DatabaseArgs,
    /// Absolute URL clients reach this server at; every URL handed out starts with it.
    /// Default: http:// + the listen address (http://127.0.0.1:8080).
    #[arg(long, env = "ADFORGE_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Log filter (tracing's EnvFilter syntax), e.g. `info` or `adforge_api=debug,adforge=debug`.
    #[arg(long, env = "ADFORGE_LOG", default_value = "info")]
    pub log: String,
    /// Allow reference and image URLs on loopback and private addresses (tests, local demos).
    #[arg(long, env = "ADFORGE_ALLOW_PRIVATE_URLS", default_value_t = false)]
    pub allow_private_urls: bool,
    /// The billing page INSUFFICIENT_BALANCE errors link to. Default: PUBLIC_URL/dashboard/wallet (the dashboard's wallet page).
    #[arg(long, env = "ADFORGE_DASHBOARD_URL")]
    pub dashboard_url: Option<String>,
    /// Redis for jobs, events and rate limits shared by several API nodes and `adforge
    /// worker` processes. Without it: an in-process queue (the embedded default).
    #[arg(long, env = "ADFORGE_REDIS_URL")]
    pub redis_url: Option<String>,
    /// In-process render workers (the embedded default runs them beside the API; 0 for an
    /// API node that leaves rendering to `adforge worker` processes). With N > 0 one more
    /// slot runs interactive work only (ads, templates, cut-outs), never a swipe-file ingest.
    #[arg(long, env = "ADFORGE_WORKERS", default_value_t = 1)]
    pub workers: usize,
    #[command(flatten)]
    pub render: crate::flags::RenderBackend,
    /// Log lines as JSON objects instead of text.
    #[arg(long, env = "ADFORGE_LOG_JSON", default_value_t = false)]
    pub log_json: bool,
    #[command(flatten)]
    pub queue: crate::render_node::QueueArgs,
    #[command(flatten)]
    pub webhooks: adforge_api::webhooks::deliver::WebhookArgs,
    #[command(flatten)]
    pub ops: adforge_api::ops::OpsArgs,
    #[command(flatten)]
    pub blob: crate::flags::BlobArgs,
    #[command(flatten)]
    pub copy_model: crate::flags::CopyModelArgs,
    #[command(flatten)]
    pub dashboard: adforge_dashboard::DashboardArgs,
    #[command(flatten)]
    pub previews: adforge_api::resources::previews::PreviewArgs,
    #[command(flatten)]
    pub swipe_index: adforge_api::swipe::index::SwipeIndexArgs,
    #[command(flatten)]
    pub figma: adforge_api::resources::integrations::FigmaArgs,
    /// The models folder (`scripts/fetch-models` fills it). Default:
    /// `$ADFORGE_MODELS_DIR`, else `~/.cache/adforge/models`. Without models the server
    /// serves everything but swipe-file uploads and search, which answer 503.
    #[arg(long, env = "ADFORGE_MODELS_DIR")]
    pub models_dir: Option<PathBuf>,
    /// Folder imported as the default swipe-file collection at the first start (when no
    /// default data source exists yet). Default: the repository's `assets/swipe-default`.
    #[arg(long, env = "ADFORGE_DEFAULT_COLLECTION", default_value = adforge_api::resources::swipe_files::sources::DEFAULT_COLLECTION_DIR)]
    pub default_collection: Option<PathBuf>,
}

#[derive(Args, Clone, Debug)]
pub struct RenderArgs {
    /// The JSON tree file.
    pub tree: PathBuf,
    /// Where to write the PNG.
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    /// Output width in pixels (the height follows the root frame's aspect ratio).
    #[arg(long)]
    pub width: Option<u32>,
    /// Write the render report (warnings, text sizes, phase timings) as JSON here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Allow image URLs on loopback and private addresses (local demos and tests).
    #[arg(long, env = "ADFORGE_ALLOW_PRIVATE_URLS", default_value_t = false)]
    pub allow_private_urls: bool,
    #[command(flatten)]
    pub render: crate::flags::RenderBackend,
}

/// `adforge render`: prints a one-line JSON summary on stdout; progress goes to stderr.
fn render(args: RenderArgs) -> Result<(), adforge_api::Error> {
    let cmd = adforge_renderer::cli::RenderCommand {
        tree: args.tree,
        output: args.output.clone(),
        width: args.width,
        report: args.report,
        allow_private_urls: args.allow_private_urls,
    };
    let s = adforge_renderer::cli::run_on(&cmd, args.render.backend)
        .map_err(|e| adforge_api::Error::Invalid(e.to_string()))?;
    println!(
        "{}",
        serde_json::json!({
            "output": args.output.display().to_string(),
            "width": s.width,
            "height": s.height,
            "png_bytes": s.png_bytes,
            "warnings": s.warnings,
            "total_ms": s.total_ms,
        })
    );
    Ok(())
}

fn init_logging(filter: &str, json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

/// Parses arguments and runs the command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("adforge: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = run(cli, &runtime);
    // Dropping a runtime waits for every blocking task, however long it runs; shutdown
    // already stopped the renders, so whatever is still running after this grace is
    // abandoned rather than waited for (SIGTERM must end the process within its bound).
    runtime.shutdown_timeout(BLOCKING_GRACE);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("adforge: {e}");
            ExitCode::FAILURE
        }
    }
}

/// How long the process waits, after serving or working has ended, for blocking tasks still
/// running (a render stopping at its next check, a file being written) before it exits.
pub const BLOCKING_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

fn run(cli: Cli, runtime: &tokio::runtime::Runtime) -> Result<(), adforge_api::Error> {
    match cli.command {
        Command::Serve(args) => {
            init_logging(&args.log, args.log_json);
            runtime.block_on(crate::app::run(*args))
        }
        Command::Admin(args) => runtime.block_on(crate::admin::run(args)),
        Command::Render(args) => render(args),
        Command::Worker(args) => {
            init_logging(&args.log, false);
            runtime.block_on(crate::render_node::run(args))
        }
        Command::Openapi => {
            let doc = adforge_api::v1::openapi_json();
            match serde_json::to_string_pretty(&doc) {
                Ok(text) => {
                    println!("{text}");
                    Ok(())
                }
                Err(e) => Err(adforge_api::Error::Invalid(e.to_string())),
            }
        }
    }
}
