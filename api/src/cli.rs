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
    Serve(ServeArgs),
    /// Operator tasks the spec leaves to the web dashboard: organizations, API keys,
    /// wallet top-ups. Each prints one JSON object on stdout.
    Admin(crate::admin::AdminArgs),
    /// Print the OpenAPI 3.1 document (the same one the server serves at /openapi.json).
    Openapi,
}

#[derive(Args, Clone, Debug)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "ADFORGE_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Folder for the SQLite database (adforge.sqlite3) and the blob folder (blobs/).
    #[arg(long, env = "ADFORGE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// Absolute URL clients reach this server at; every URL handed out starts with it.
    /// Default: http:// + the listen address (http://127.0.0.1:8080).
    #[arg(long, env = "ADFORGE_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Log filter (tracing's EnvFilter syntax), e.g. `info` or `adforge_api=debug`.
    #[arg(long, env = "ADFORGE_LOG", default_value = "info")]
    pub log: String,
    /// Log lines as JSON objects instead of text.
    #[arg(long, env = "ADFORGE_LOG_JSON", default_value_t = false)]
    pub log_json: bool,
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
    let result = match cli.command {
        Command::Serve(args) => {
            init_logging(&args.log, args.log_json);
            runtime.block_on(crate::app::run(args))
        }
        Command::Admin(args) => runtime.block_on(crate::admin::run(args)),
        Command::Openapi => {
            let doc = crate::app::openapi_document();
            match serde_json::to_string_pretty(&doc) {
                Ok(text) => {
                    println!("{text}");
                    Ok(())
                }
                Err(e) => Err(crate::Error::Invalid(e.to_string())),
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("adforge: {e}");
            ExitCode::FAILURE
        }
    }
}
