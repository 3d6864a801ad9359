//! `adforge admin`: what the spec leaves to the web dashboard. Each command prints one JSON
//! object on stdout and works while `serve` runs on the same data dir (SQLite WAL; the
//! server's key cache picks up revocations within seconds).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use adforge_api::Error;
use adforge_api::auth::Grants;
use adforge_api::store::Db;

#[derive(Args, Debug)]
pub struct AdminArgs {
    /// The server to administer: the same flags as `serve`'s.
    #[command(flatten)]
    pub db: crate::flags::DatabaseArgs,
    /// The server's blob store (for imports): the same flags as `serve`'s.
    #[command(flatten)]
    pub blob: crate::flags::BlobArgs,
    #[command(subcommand)]
    pub command: AdminCommand,
}

#[derive(Subcommand, Debug)]
pub enum AdminCommand {
    /// Organizations.
    #[command(subcommand)]
    Org(OrgCommand),
    /// API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Wallets.
    #[command(subcommand)]
    Wallet(WalletCommand),
    /// Service-managed swipe-file data sources.
    #[command(subcommand)]
    DataSource(DataSourceCommand),
    /// Members of organisations, who sign in to the web dashboard.
    #[command(subcommand)]
    Member(MemberCommand),
}

#[derive(Subcommand, Debug)]
pub enum MemberCommand {
    /// Add a person to an organisation (creating their profile if the email is new) and
    /// print a one-time sign-in link, valid 72 hours, where they set their password:
    /// {"profile_id","email","org_id","role","operator","sign_in_link","expires_at"}.
    Add {
        #[arg(long)]
        org: String,
        #[arg(long)]
        email: String,
        /// `owner` (manages members) or `member`.
        #[arg(long, default_value = "member")]
        role: String,
        /// Display name (default: the part of the email before `@`).
        #[arg(long)]
        name: Option<String>,
        /// A service operator: may top up any organisation's wallet in the dashboard.
        #[arg(long, default_value_t = false)]
        operator: bool,
        /// The server's public URL; the link points at PUBLIC_URL/dashboard.
        #[arg(
            long,
            env = "ADFORGE_PUBLIC_URL",
            default_value = "http://127.0.0.1:8080"
        )]
        public_url: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum DataSourceCommand {
    /// Create a data source: {"id","name","is_default"}.
    Create {
        #[arg(long)]
        name: String,
        /// Subscribe every organisation that has not turned it off (as the default
        /// collection is).
        #[arg(long, default_value_t = false)]
        default: bool,
    },
    /// Import a folder's PNG, JPEG and WebP files, or a manifest's items, as managed
    /// designs: each is checked and staged with its ingest job, which the running servers
    /// hand to every worker. Running the same command again resumes the import (done items
    /// are skipped, failed ones tried again). Prints one JSON object at the end; progress
    /// goes to stderr (a bar on a terminal, JSON lines otherwise).
    Import {
        /// The data source (`sfs_…`).
        #[arg(long)]
        id: String,
        /// A folder of images.
        #[arg(
            long,
            conflicts_with = "manifest",
            required_unless_present = "manifest"
        )]
        folder: Option<PathBuf>,
        /// JSON lines (`{"path"|"url", "industry"?, "ad_format"?, "caption"?}`) or CSV with
        /// those columns; relative paths are relative to the manifest.
        #[arg(long)]
        manifest: Option<PathBuf>,
        /// Follow the import until every item is ingested or failed.
        #[arg(long, default_value_t = false)]
        wait: bool,
        /// Allow manifest URLs on loopback and private addresses (tests, local demos).
        #[arg(long, env = "ADFORGE_ALLOW_PRIVATE_URLS", default_value_t = false)]
        allow_private_urls: bool,
    },
    /// An import's progress and failures: {"import_id","progress","failures"}.
    ImportStatus {
        /// The import (`sfi_…`), as `import` printed it.
        #[arg(long)]
        import: String,
    },
    /// List data sources with their design counts.
    List,
}

#[derive(Subcommand, Debug)]
pub enum OrgCommand {
    /// Create an organization: {"id","name"}.
    Create {
        #[arg(long)]
        name: String,
    },
    /// List organizations: {"data": [...]}.
    List,
}

#[derive(Subcommand, Debug)]
pub enum KeyCommand {
    /// Issue a key: {"id","key","scopes"}. The secret is shown only this once.
    Create {
        #[arg(long)]
        org: String,
        /// `all`, or comma-separated scopes such as `brands:read,products:write`.
        #[arg(long)]
        scopes: String,
        /// Requests per rolling 60 seconds (default 100).
        #[arg(long)]
        rate_limit: Option<u32>,
    },
    /// Revoke a key; it stops working within seconds.
    Revoke { key_id: String },
    /// List an organization's keys (never their secrets).
    List {
        #[arg(long)]
        org: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum WalletCommand {
    /// Add money: {"org_id","balance_cents"}.
    TopUp {
        #[arg(long)]
        org: String,
        /// Dollars, e.g. 25.00 (at most two decimals).
        #[arg(long)]
        amount: String,
        /// What the money is for (an invoice or payment id); stored on the ledger entry.
        #[arg(long)]
        reference: Option<String>,
    },
    /// Balance, holds and recent ledger entries.
    Show {
        #[arg(long)]
        org: String,
    },
}

/// Runs an admin command and prints its JSON.
///
/// # Errors
/// Unknown ids, invalid arguments, database failures.
pub async fn run(args: AdminArgs) -> Result<(), Error> {
    let db = args.db.connect().await?;
    let out = match args.command {
        AdminCommand::Org(OrgCommand::Create { name }) => {
            adforge_api::orgs::create_org(&db, &name).await?
        }
        AdminCommand::Org(OrgCommand::List) => {
            let rows = adforge_api::orgs::list(&db).await?;
            json!({"data": rows.into_iter().map(|o| json!({"id": o.id, "name": o.name, "created_at": o.created_at})).collect::<Vec<_>>()})
        }
        AdminCommand::Key(KeyCommand::Create {
            org,
            scopes,
            rate_limit,
        }) => {
            let grants = Grants::parse_list(&scopes).map_err(Error::Invalid)?;
            adforge_api::orgs::create_key(&db, &org, &grants, rate_limit).await?
        }
        AdminCommand::Key(KeyCommand::Revoke { key_id }) => revoke_key(&db, &key_id).await?,
        AdminCommand::Key(KeyCommand::List { org }) => {
            adforge_api::orgs::require(&db, &org).await?;
            let mut keys = adforge_api::auth::list_keys(&db, &org).await?;
            keys.reverse();
            json!({"data": keys.into_iter().map(|k| json!({
                "id": k.id, "last4": k.last4,
                "scopes": match k.grants { Grants::All => json!(["all"]), g => json!(g.names()) },
                "rate_limit": k.rate_limit, "created_at": k.created_at, "revoked_at": k.revoked_at,
                "expires_at": k.expires_at, "last_used_at": k.last_used_at, "rotated_from": k.rotated_from,
            })).collect::<Vec<_>>()})
        }
        AdminCommand::Wallet(WalletCommand::TopUp {
            org,
            amount,
            reference,
        }) => top_up(&db, &org, &amount, reference.as_deref()).await?,
        AdminCommand::Member(MemberCommand::Add {
            org,
            email,
            role,
            name,
            operator,
            public_url,
        }) => {
            adforge_api::orgs::require(&db, &org).await?;
            let role = adforge_dashboard::members::Role::parse(&role).ok_or_else(|| {
                Error::Invalid(format!("--role `{role}` must be `owner` or `member`"))
            })?;
            let added = adforge_dashboard::members::add_member(
                &db,
                &org,
                &email,
                name.as_deref(),
                role,
                operator,
            )
            .await
            .map_err(|e| match e {
                adforge_dashboard::members::MemberError::Invalid(m) => Error::Invalid(m),
                adforge_dashboard::members::MemberError::Db(e) => Error::Db(e),
            })?;
            json!({
                "profile_id": added.profile_id,
                "email": added.email,
                "org_id": org,
                "role": role.as_str(),
                "operator": added.is_operator,
                "sign_in_link": adforge_dashboard::members::link_url(&public_url, &added.link_token),
                "expires_at": added.link_expires_at,
            })
        }
        AdminCommand::Wallet(WalletCommand::Show { org }) => wallet_show(&db, &org).await?,
        AdminCommand::DataSource(DataSourceCommand::Create { name, default }) => {
            let id =
                adforge_api::resources::swipe_files::sources::create(&db, &name, default).await?;
            json!({"id": id, "name": name.trim(), "is_default": default})
        }
        AdminCommand::DataSource(DataSourceCommand::Import {
            id,
            folder,
            manifest,
            wait,
            allow_private_urls,
        }) => {
            // The URL prefix does not matter here: rows keep blob keys, and the server
            // makes URLs with its own public URL.
            let blobs = args.blob.open(&args.db.data_dir, "http://127.0.0.1")?;
            crate::import::run(
                &db,
                &blobs,
                &id,
                folder.as_deref(),
                manifest.as_deref(),
                wait,
                allow_private_urls,
            )
            .await?
        }
        AdminCommand::DataSource(DataSourceCommand::ImportStatus { import }) => {
            crate::import::status(&db, &import).await?
        }
        AdminCommand::DataSource(DataSourceCommand::List) => {
            let rows = adforge_api::resources::swipe_files::sources::list(&db).await?;
            json!({"data": rows.into_iter().map(|(id, name, is_default, n)| json!({"id": id, "name": name, "is_default": is_default.0, "designs": n})).collect::<Vec<_>>()})
        }
    };
    println!("{out}");
    Ok(())
}

async fn revoke_key(db: &Db, key_id: &str) -> Result<Value, Error> {
    let at = adforge_api::auth::revoke_key(db, None, key_id)
        .await?
        .ok_or_else(|| Error::Invalid(format!("no API key `{key_id}`")))?;
    Ok(json!({"id": key_id, "revoked": true, "revoked_at": at}))
}

async fn top_up(db: &Db, org: &str, amount: &str, reference: Option<&str>) -> Result<Value, Error> {
    adforge_api::orgs::require(db, org).await?;
    let cents = adforge_api::wallet::parse_amount(amount)
        .filter(|c| *c > 0)
        .ok_or_else(|| {
            Error::Invalid(format!(
                "--amount `{amount}` is not a positive dollar amount such as 25.00"
            ))
        })?;
    let mut tx = db.begin_write().await?;
    let b = adforge_api::wallet::top_up(&mut tx, org, cents, reference, None).await?;
    tx.commit().await?;
    Ok(json!({"org_id": org, "balance_cents": b.balance_cents, "top_up_cents": cents}))
}

async fn wallet_show(db: &Db, org: &str) -> Result<Value, Error> {
    adforge_api::orgs::require(db, org).await?;
    let mut conn = db.read.acquire().await?;
    let b = adforge_api::wallet::balance(&mut conn, org)
        .await
        .map_err(|e| Error::Invalid(e.message))?;
    let filter = adforge_api::wallet::LedgerFilter::default();
    let ledger = adforge_api::wallet::ledger_entries(&mut conn, org, &filter, 50).await?;
    Ok(json!({
        "org_id": org,
        "balance_cents": b.balance_cents,
        "held_cents": b.held_cents,
        "available_cents": b.available_cents(),
        "ledger": ledger.into_iter().map(|e| json!({
            "id": e.id, "kind": e.kind, "amount_cents": e.amount_cents, "reference": e.reference, "created_at": e.created_at,
        })).collect::<Vec<_>>(),
    }))
}
