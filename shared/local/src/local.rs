//! The local server of `make run`, on 127.0.0.1 only, for any app:
//! `PROGRAM [--port N] [--routing per-method|single] [--inject-dev-token TENANT:SUB[:SCOPES]]`;
//! `PROGRAM --server-json` prints the app's `server.json` instead (`cargo relevo server-json`).
//!
//! One process plays every function of the stack: the gateway routes each method as API Gateway
//! would, the embedded store (SQLite) stands in for DynamoDB, its queue for SQS, and background
//! loops for the worker's event source mapping and the scheduled reconciler.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::{GatewayOptions, InjectedToken, Routing};
use relevo_auth::{AuthMode, AuthSettings, DevIssuer};
use relevo_embedded::{SqliteQueue, SqliteStore};
use relevo_protocol::{AppBuilder, McpServer, Ports, Settings};
use relevo_state::{Engine, EngineConfig, InFlightLimits, RandomIds, RecordStore, SystemClock};

struct Args {
    port: u16,
    routing: Routing,
    inject: Option<(String, String, Vec<String>)>,
    /// `--server-json`: print the MCP Registry's `server.json` of the app and exit.
    server_json: bool,
}

/// `--server-json`: the app's `server.json` ([`relevo_protocol::card::server_json`]) on stdout,
/// for the public URL of `RELEVO_PUBLIC_URL` (or `RELEVO_AUTH_AUDIENCE`) and the namespace of
/// `RELEVO_SERVER_NAMESPACE`. The app is built over an in-memory store: no file is touched and
/// nothing is served.
fn print_server_json(
    app: &impl AppBuilder,
    settings: Settings,
) -> Result<(), Box<dyn std::error::Error>> {
    let store = Arc::new(SqliteStore::in_memory()?) as Arc<dyn RecordStore>;
    let server = McpServer::from_ports(app, &Ports::new(Some(store)), settings.config);
    let listing = server.listing().clone();
    let url = listing.url.clone().ok_or(
        "server.json names the server's public URL: set RELEVO_PUBLIC_URL (https://HOST/mcp)",
    )?;
    let document = relevo_protocol::card::server_json(&server, &listing, &url)?;
    println!("{}", serde_json::to_string_pretty(&document)?);
    Ok(())
}

/// Serves `app` until SIGINT or SIGTERM: the whole `main` of a local gateway binary.
pub async fn run_local(app: impl AppBuilder) -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    // Its Display, not its Debug: the error names the key entry's position, never its text.
    let settings = Settings::from_env(true).map_err(|e| e.to_string())?;
    if args.server_json {
        // Before the logs start: stdout carries the document only.
        return print_server_json(&app, settings);
    }
    crate::init_logging(crate::LogFormat::Local);
    if settings.ephemeral_keys {
        tracing::warn!(
            "RELEVO_STATE_KEYS is not set: using a random key for this process; requestState and cursors will not survive a restart"
        );
    }
    let origin = format!("http://127.0.0.1:{}", args.port);
    // The local gateway defaults to the dev issuer; Lambdas default to `required`.
    let auth_settings = AuthSettings::load(
        |name| {
            std::env::var(name)
                .ok()
                .or_else(|| (name == "RELEVO_AUTH").then(|| "dev".into()))
        },
        &origin,
    )?;
    let mut options = GatewayOptions {
        max_body_bytes: settings.config.max_body_bytes,
        routing: args.routing,
        auth: Some(auth_settings.clone()),
        ..GatewayOptions::default()
    };
    if args.inject.is_some() && auth_settings.mode != AuthMode::Dev {
        return Err("--inject-dev-token needs RELEVO_AUTH=dev".into());
    }
    let dev = match auth_settings.mode {
        AuthMode::Dev => Some(dev_issuer(&auth_settings)?),
        AuthMode::Required | AuthMode::Off => None,
    };
    let auth = relevo_auth::authenticator(&auth_settings, dev.as_ref())?;
    if let Some(issuer) = dev {
        if let Some((tenant, subject, scopes)) = args.inject {
            tracing::warn!(%tenant, %subject, "injecting a dev token into requests without one (test harness mode)");
            options.inject_token = Some(InjectedToken {
                issuer: issuer.clone(),
                tenant,
                subject,
                scopes,
            });
        }
        options.dev_issuer = Some(issuer);
    }
    if auth_settings.mode == AuthMode::Off {
        // No metadata: there is no authorization server to name.
        options.auth = None;
    }
    let (sqlite, engine) = backend()?;
    let records = sqlite.clone().map(|s| Arc::new(s) as Arc<dyn RecordStore>);
    if let Some(sqlite) = sqlite {
        // What DynamoDB's TTL does in AWS: expired records, jobs and keys leave the file.
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(60)).await;
                let now = relevo_state::Clock::now_unix(&relevo_state::SystemClock);
                if let Err(error) = sqlite.sweep(now).await {
                    tracing::warn!(%error, "the sweep of expired records failed");
                }
            }
        });
    }
    let mut ports = Ports::new(records).with_pages_base(&origin).with_security(
        auth,
        settings.keys,
        settings.config.origin_policy.clone(),
    );
    if let Some(engine) = engine {
        ports = ports.with_jobs(engine);
    }
    // The store holds 2025-11-25 clients' sessions too, so two gateways share them.
    let server = McpServer::from_ports(&app, &ports, settings.config);
    // Schemas derived from Rust types are checked here, once, rather than at a first call.
    server.app().verify_schemas();
    if let Some(worker) = server.worker() {
        // The local stand-ins for the SQS event source mapping and the scheduled reconciler.
        let worker = Arc::new(worker);
        let reconciler = worker.clone();
        tokio::spawn(async move {
            worker
                .run_queue_loop(60, Duration::from_millis(100), std::future::pending())
                .await
        });
        let every = Duration::from_secs(env_number("RELEVO_RECONCILE_SECS", 10));
        tokio::spawn(async move {
            reconciler
                .run_reconciler_loop(every, std::future::pending())
                .await
        });
    }
    if let Some(pages) = server.app().find_pages() {
        options.pages = Some(pages.clone());
        tracing::info!(pages = %ports.page_url(pages.prefix()), "the app's pages");
    }
    let name = server.app().name.clone();
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, args.port))).await?;
    tracing::info!(url = %format!("http://{}/mcp", listener.local_addr()?), app = %name, routing = ?args.routing, auth = ?auth_settings.mode, "relevo gateway listening");
    let router = crate::router(server, options);
    crate::serve::serve(
        listener,
        router,
        crate::serve::HEADER_READ_TIMEOUT,
        shutdown_signal(),
    )
    .await?;
    Ok(())
}

/// The dev issuer of `.relevo/dev-issuer.json`, reused across restarts while its issuer and
/// audience still match (so tokens from `make token` survive a restart), else made afresh.
fn dev_issuer(settings: &AuthSettings) -> Result<DevIssuer, Box<dyn std::error::Error>> {
    let path = dev_issuer_path();
    if let Ok(existing) = DevIssuer::load(&path)
        && existing.issuer == settings.issuer
        && existing.audience == settings.audience
    {
        return Ok(existing);
    }
    let issuer = DevIssuer::generate(&settings.issuer, &settings.audience);
    issuer.save(&path)?;
    tracing::info!(path = %path.display(), "new dev issuer key; mint tokens with `make token`");
    Ok(issuer)
}

fn dev_issuer_path() -> PathBuf {
    std::env::var("RELEVO_DEV_ISSUER_FILE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(".relevo/dev-issuer.json"))
}

type Backend = (Option<SqliteStore>, Option<Arc<Engine>>);

/// `RELEVO_STORE`: `sqlite:PATH` (default `sqlite:.relevo/store.db`), `memory`, or `none`. The
/// same database holds records, jobs and the work queue (5 deliveries, then dead letters). A
/// `.relevo` folder holding it is made the owner's only at every start.
fn backend() -> Result<Backend, Box<dyn std::error::Error>> {
    let spec = std::env::var("RELEVO_STORE").unwrap_or_else(|_| "sqlite:.relevo/store.db".into());
    let sqlite = match spec.as_str() {
        "none" => return Ok((None, None)),
        "memory" => SqliteStore::in_memory()?,
        other => match other.strip_prefix("sqlite:") {
            Some(path) => {
                // A `.relevo/` an older version left readable by others is tightened (and logged).
                relevo_auth::tighten_data_dir(std::path::Path::new(path))?;
                SqliteStore::open(std::path::Path::new(path))?
            }
            None => {
                return Err(format!(
                    "RELEVO_STORE must be sqlite:PATH, memory or none, got {other:?}"
                )
                .into());
            }
        },
    };
    let queue = SqliteQueue::new(sqlite.clone(), 5);
    let config = EngineConfig {
        lease_secs: env_number("RELEVO_LEASE_SECS", 30),
        ..EngineConfig::default()
    };
    let engine = Engine::new(
        Arc::new(sqlite.clone()),
        Arc::new(queue),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        config,
    )
    .with_admission(Arc::new(sqlite.clone()), InFlightLimits::from_env());
    Ok((Some(sqlite), Some(Arc::new(engine))))
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let mut parsed = Args {
        port: std::env::var("PORT")
            .ok()
            .and_then(|p| p.parse().ok())
            .unwrap_or(8080),
        routing: Routing::default(),
        inject: None,
        server_json: false,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => {
                parsed.port = args
                    .next()
                    .and_then(|p| p.parse().ok())
                    .ok_or("--port needs a number")?
            }
            "--routing" => {
                parsed.routing = args.next().ok_or("--routing needs a value")?.parse()?
            }
            "--inject-dev-token" => {
                let spec = args
                    .next()
                    .ok_or("--inject-dev-token needs TENANT:SUB[:SCOPES]")?;
                let mut parts = spec.splitn(3, ':');
                let (Some(tenant), Some(subject)) = (parts.next(), parts.next()) else {
                    return Err("--inject-dev-token needs TENANT:SUB[:SCOPES]".into());
                };
                let scopes = parts
                    .next()
                    .unwrap_or("")
                    .split([',', ' '])
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
                parsed.inject = Some((tenant.into(), subject.into(), scopes));
            }
            "--server-json" => parsed.server_json = true,
            other => {
                return Err(format!(
                    "unknown argument {other:?}; usage: PROGRAM [--port N] [--routing per-method|single] [--inject-dev-token TENANT:SUB[:SCOPES]] | PROGRAM --server-json"
                ));
            }
        }
    }
    Ok(parsed)
}

async fn shutdown_signal() {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler installs");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
}
