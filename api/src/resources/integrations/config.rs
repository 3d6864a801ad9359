//! What design-tool sync is configured with: the `serve` flags ([`FigmaArgs`]) and the
//! process's [`FigmaConfig`] (held in the state; a leaf, so the state can name it without
//! importing the routes).

use std::sync::Arc;

use adforge_worker::secrets::SecretKey;

use crate::error::{ApiError, ApiResult, ErrorCode};

/// Design-tool sync settings of `adforge serve`.
#[derive(clap::Args, Clone, Debug)]
pub struct FigmaArgs {
    /// Figma's REST API base URL (tests and air-gapped mirrors point it elsewhere). Calls to
    /// it, and to the download URLs it answers with, go through the address policy like
    /// every outbound request: a loopback or private base URL needs --allow-private-urls.
    #[arg(long, env = "ADFORGE_FIGMA_API_URL", default_value = adforge_worker::figma::DEFAULT_API_URL)]
    pub figma_api_url: String,
    /// A file holding the secrets key stored tokens are sealed with (base64 of 32 bytes; a
    /// mounted secret), the same on every API node and worker. `ADFORGE_SECRETS_KEY` (the
    /// key itself, environment only) wins over it. Without either, the embedded default
    /// (no --database-url, no --redis-url) generates DATA_DIR/secrets.key.
    #[arg(long, env = "ADFORGE_SECRETS_KEY_FILE")]
    pub secrets_key_file: Option<std::path::PathBuf>,
}

impl Default for FigmaArgs {
    fn default() -> Self {
        Self {
            figma_api_url: adforge_worker::figma::DEFAULT_API_URL.to_owned(),
            secrets_key_file: None,
        }
    }
}

/// What design-tool sync needs of the process: Figma's base URL and the secrets key.
#[derive(Clone, Debug)]
pub struct FigmaConfig {
    /// `--figma-api-url`, without a trailing slash.
    pub api_url: String,
    /// The deployment's secrets key; `None` when none is set (a cluster without
    /// `ADFORGE_SECRETS_KEY`): storing a token then answers 503.
    pub secrets: Option<Arc<SecretKey>>,
}

impl FigmaConfig {
    /// From the flags and the key the server loaded.
    ///
    /// # Errors
    /// A base URL that is not absolute http(s).
    pub fn new(args: &FigmaArgs, secrets: Option<Arc<SecretKey>>) -> Result<Self, String> {
        let url = args.figma_api_url.trim().trim_end_matches('/');
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(format!(
                "--figma-api-url `{url}` must be an absolute http(s) URL"
            ));
        }
        Ok(Self {
            api_url: url.to_owned(),
            secrets,
        })
    }

    /// The key, or 503 saying how to set one.
    ///
    /// # Errors
    /// SERVICE_UNAVAILABLE without a key.
    pub fn key(&self) -> ApiResult<&Arc<SecretKey>> {
        self.secrets.as_ref().ok_or_else(|| {
            ApiError::new(
                ErrorCode::ServiceUnavailable,
                "This server has no secrets key to store tokens with: the operator sets ADFORGE_SECRETS_KEY (base64 of 32 bytes, the same on every API node and worker)",
            )
        })
    }
}
