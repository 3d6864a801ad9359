//! Flags shared by several subcommands, declared once and flattened into each:
//! [`DatabaseArgs`] (`serve`, `admin`), [`RenderBackend`] (`serve`, `worker`, `render`) and
//! [`BlobArgs`] (`serve`, `worker`, `admin`) and [`CopyModelArgs`] (`serve`, `worker`).
//!
//! Where blobs live, chosen once at start-up by `serve`, `worker` and `admin`: the folder
//! `DATA_DIR/blobs` (the embedded default) or an S3-compatible bucket (`--blob-url
//! s3://bucket/prefix`). Every process of a deployment must name the same store.
//!
//! URLs handed out are `PUBLIC_URL/files/KEY`, served by the API from the store (streamed,
//! same content types and cache headers for both stores), unless `--blob-public-url BASE`
//! is set: then they are `BASE/KEY` and clients fetch straight from a CDN or a public
//! bucket. URLs in responses rather than redirects: a client never needs the API in the
//! path of an image, and a redirect would cost every image a round trip. `/files/` keeps
//! answering either way.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;

use adforge_api::Error;
use adforge_api::blob::{BlobStore, LocalBlobStore};
use adforge_worker::s3::{S3BlobStore, S3Options};

/// Where the server's data is, shared by `serve` and `admin`.
#[derive(Args, Clone, Debug)]
pub struct DatabaseArgs {
    /// The data folder: the SQLite database (adforge.sqlite3) and the blob folder (blobs/).
    #[arg(long, env = "ADFORGE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// PostgreSQL instead of the SQLite file, for several API nodes sharing one database:
    /// `postgres://user:password@host:5432/adforge`. Migrations run at start (several
    /// nodes starting at once take turns).
    #[arg(long, env = "ADFORGE_DATABASE_URL")]
    pub database_url: Option<String>,
}

impl DatabaseArgs {
    /// Opens (and migrates) the database these flags name.
    ///
    /// # Errors
    /// Database failures.
    pub async fn connect(&self) -> Result<adforge_api::store::Db, Error> {
        Ok(adforge_api::store::Db::connect(self.database_url.as_deref(), &self.data_dir).await?)
    }
}

/// Which backend draws ads, shared by `serve`, `worker` and `render`.
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct RenderBackend {
    /// Which backend draws ads: `auto` (a hardware GPU when one is present, else the CPU;
    /// software Vulkan counts as none), `cpu`, or `gpu` (any Vulkan adapter, lavapipe
    /// included; none is a start-up error).
    #[arg(long, env = "ADFORGE_BACKEND", default_value = "auto")]
    pub backend: adforge_renderer::BackendChoice,
}

/// The operator's copy model, shared by `serve` and `worker`: an OpenAI-compatible
/// chat-completions endpoint that proposes ads' free lines, used only where they pass the
/// grounding rule and fit (`adforge_worker::generate::llm`; docs/copy.md). The bearer key
/// is read from `ADFORGE_COPY_LLM_KEY` (never a flag, so it stays out of process lists).
#[derive(Args, Clone, Debug, Default)]
pub struct CopyModelArgs {
    /// The endpoint: its `…/chat/completions` URL, or a base URL ending in `/v1`. Unset:
    /// the built-in template writer alone.
    #[arg(long, env = "ADFORGE_COPY_LLM_URL")]
    pub copy_llm_url: Option<String>,
    /// The model name sent with each request (required with `--copy-llm-url`).
    #[arg(long, env = "ADFORGE_COPY_LLM_MODEL")]
    pub copy_llm_model: Option<String>,
}

impl CopyModelArgs {
    /// The copy model these flags name, if any.
    ///
    /// # Errors
    /// A URL without a model name, or a URL that is not http(s).
    pub fn open(
        &self,
    ) -> Result<Option<Arc<dyn adforge_worker::generate::llm::SlotProposer>>, Error> {
        let Some(url) = &self.copy_llm_url else {
            return Ok(None);
        };
        let model = self.copy_llm_model.as_deref().ok_or_else(|| {
            Error::Invalid("--copy-llm-url needs --copy-llm-model (the model name to ask)".into())
        })?;
        let key = std::env::var("ADFORGE_COPY_LLM_KEY").ok();
        let writer = adforge_worker::generate::llm::ChatCompletions::new(url, model, key)
            .map_err(Error::Invalid)?;
        tracing::info!(url = %url, model = %model, "ad copy: the operator's model proposes lines");
        Ok(Some(Arc::new(writer)))
    }
}

/// Blob store flags, shared by `serve`, `worker` and `admin`.
#[derive(Args, Clone, Debug, Default)]
pub struct BlobArgs {
    /// `s3://BUCKET/PREFIX` keeps blobs in an S3-compatible bucket (credentials and region
    /// from the usual `AWS_*` variables). Default: the folder DATA_DIR/blobs.
    #[arg(long, env = "ADFORGE_BLOB_URL")]
    pub blob_url: Option<String>,
    /// Base URL of an S3-compatible server (MinIO, Ceph, R2, ...), e.g.
    /// `http://127.0.0.1:9000`. Default: AWS S3 (or `AWS_ENDPOINT`).
    #[arg(long, env = "ADFORGE_S3_ENDPOINT")]
    pub s3_endpoint: Option<String>,
    /// The bucket's region. Default: `AWS_DEFAULT_REGION`, else `us-east-1`.
    #[arg(long, env = "ADFORGE_S3_REGION")]
    pub s3_region: Option<String>,
    /// Allow a plain-http `--s3-endpoint` (a local S3-compatible server).
    #[arg(long, env = "ADFORGE_S3_ALLOW_HTTP", default_value_t = false)]
    pub s3_allow_http: bool,
    /// Hand out blob URLs as `BASE/KEY` (a CDN or public bucket in front of the store)
    /// instead of `PUBLIC_URL/files/KEY`.
    #[arg(long, env = "ADFORGE_BLOB_PUBLIC_URL")]
    pub blob_public_url: Option<String>,
}

impl BlobArgs {
    /// Opens the store. `public_url` is the API's; blob URLs start with
    /// `--blob-public-url` when set, else with `{public_url}/files`.
    ///
    /// # Errors
    /// A malformed `--blob-url` or `--blob-public-url`.
    pub fn open(&self, data_dir: &Path, public_url: &str) -> Result<Arc<dyn BlobStore>, Error> {
        let files_base = match &self.blob_public_url {
            Some(base) => {
                if !(base.starts_with("http://") || base.starts_with("https://")) {
                    return Err(Error::Invalid(format!(
                        "--blob-public-url `{base}` must be an absolute http(s) URL"
                    )));
                }
                base.trim_end_matches('/').to_owned()
            }
            None => format!("{}/files", public_url.trim_end_matches('/')),
        };
        match &self.blob_url {
            None => Ok(Arc::new(LocalBlobStore::with_files_base(
                data_dir.join("blobs"),
                &files_base,
            ))),
            Some(url) => {
                let options = S3Options {
                    url: url.clone(),
                    endpoint: self.s3_endpoint.clone(),
                    region: self.s3_region.clone(),
                    allow_http: self.s3_allow_http,
                    ..S3Options::default()
                };
                let store = S3BlobStore::new(&options, &files_base)
                    .map_err(|e| Error::Invalid(format!("--blob-url {url}: {e}")))?;
                tracing::info!(blob_url = %url, "blobs are kept in object storage");
                Ok(Arc::new(store))
            }
        }
    }
}
