//! `relevo-lambda-local [--template TRANSLATED.json] [--front-door a|b|c] [--parameter KEY=VALUE]...
//!  [--port N|0] [--issuer-port N|0] [--bin-dir DIR] [--one-binary FILE] [--inject-dev-token TENANT:SUB[:SCOPES]]
//!  [--iam-log FILE] [--schedule-every SECS] [--stream-idle-secs SECS] [--environments N]
//!  [--oauth-identity TENANT:SUB] [--max-concurrency N]`
//!
//! The stack of the translated `template.yaml` (default `target/sam/template.json`, made by
//! `infra/scripts/translate.sh`) on one machine: the compiled function binaries under a local
//! Lambda Runtime API, behind the front door the template declares (a: the custom domain's
//! routing rules and REST APIs; b: the HTTP API), its tables, queues and secret created on the
//! emulator at `AWS_ENDPOINT_URL` (moto), each function calling it under its own execution policy.
//! A dev issuer (its JWKS, and an authorization server that signs in `--oauth-identity`, default
//! acme:alice, without asking) listens on its own port, as a real issuer is another host;
//! `RELEVO_DEV_ISSUER_FILE` receives it (its `audience` is the MCP URL).
//!
//! `--max-concurrency N` (default `RELEVO_LOCAL_MAX_CONCURRENCY`, else 1) runs every function as
//! Lambda Managed Instances does: up to N invocations in flight per execution environment, the
//! process told so by `AWS_LAMBDA_MAX_CONCURRENCY` (a `managed-instances` build polls N at once).

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use relevo_auth::DevIssuer;
use relevo_gateway::lambda_local::{LocalOptions, StreamLimits, Topology, start};
use relevo_local::InjectedToken;

/// Test knobs passed from this process's environment to every function (not in the template).
const EXTRA_ENV: [&str; 7] = [
    "RELEVO_LEASE_SECS",
    "RELEVO_EXPORT_WINDOW_MS",
    "RELEVO_SSE_KEEPALIVE_SECS",
    "RUST_LOG",
    "RELEVO_RATE_PER_TENANT",
    "RELEVO_RATE_PER_TOOL",
    "RELEVO_DEADLINE_MARGIN_MS",
];

struct Args {
    template: PathBuf,
    topology: Topology,
    parameters: BTreeMap<String, String>,
    port: u16,
    issuer_port: u16,
    bin_dir: PathBuf,
    one_binary: Option<PathBuf>,
    inject: Option<String>,
    iam_log: Option<PathBuf>,
    schedule_every: Option<Duration>,
    stream_idle: Option<Duration>,
    environments: usize,
    oauth_identity: String,
    max_concurrency: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        template: PathBuf::from("target/sam/template.json"),
        topology: Topology::A,
        parameters: BTreeMap::new(),
        port: 8080,
        issuer_port: 0,
        bin_dir: PathBuf::from("target/debug"),
        one_binary: None,
        inject: None,
        iam_log: None,
        schedule_every: None,
        stream_idle: None,
        environments: 4,
        oauth_identity: "acme:alice".into(),
        max_concurrency: match std::env::var("RELEVO_LOCAL_MAX_CONCURRENCY") {
            Ok(n) => n
                .parse()
                .map_err(|_| "RELEVO_LOCAL_MAX_CONCURRENCY needs a number")?,
            Err(_) => 1,
        },
    };
    let mut argv = std::env::args().skip(1);
    let seconds = |value: Option<String>, flag: &str| -> Result<Duration, String> {
        value
            .and_then(|v| v.parse().ok())
            .map(Duration::from_secs)
            .ok_or(format!("{flag} needs a number of seconds"))
    };
    while let Some(arg) = argv.next() {
        match arg.as_str() {
            "--template" => {
                args.template = PathBuf::from(argv.next().ok_or("--template needs a path")?)
            }
            "--front-door" => {
                args.topology = argv.next().ok_or("--front-door needs a, b or c")?.parse()?
            }
            "--parameter" => {
                let pair = argv.next().ok_or("--parameter needs KEY=VALUE")?;
                let (key, value) = pair.split_once('=').ok_or("--parameter needs KEY=VALUE")?;
                args.parameters.insert(key.to_string(), value.to_string());
            }
            "--port" => {
                args.port = argv
                    .next()
                    .and_then(|p| p.parse().ok())
                    .ok_or("--port needs a number")?
            }
            "--issuer-port" => {
                args.issuer_port = argv
                    .next()
                    .and_then(|p| p.parse().ok())
                    .ok_or("--issuer-port needs a number")?
            }
            "--bin-dir" => {
                args.bin_dir = PathBuf::from(argv.next().ok_or("--bin-dir needs a path")?)
            }
            "--one-binary" => {
                args.one_binary = Some(PathBuf::from(
                    argv.next().ok_or("--one-binary needs a path")?,
                ))
            }
            "--inject-dev-token" => {
                args.inject = Some(
                    argv.next()
                        .ok_or("--inject-dev-token needs TENANT:SUB[:SCOPES]")?,
                )
            }
            "--iam-log" => {
                args.iam_log = Some(PathBuf::from(argv.next().ok_or("--iam-log needs a path")?))
            }
            "--schedule-every" => {
                args.schedule_every = Some(seconds(argv.next(), "--schedule-every")?)
            }
            "--stream-idle-secs" => {
                args.stream_idle = Some(seconds(argv.next(), "--stream-idle-secs")?)
            }
            "--oauth-identity" => {
                args.oauth_identity = argv.next().ok_or("--oauth-identity needs TENANT:SUB")?
            }
            "--environments" => {
                args.environments = argv
                    .next()
                    .and_then(|n| n.parse().ok())
                    .ok_or("--environments needs a number")?
            }
            "--max-concurrency" => {
                args.max_concurrency = argv
                    .next()
                    .and_then(|n| n.parse().ok())
                    .ok_or("--max-concurrency needs a number")?
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    relevo_local::init_logging(relevo_local::LogFormat::Local);
    let args = parse_args()?;
    let endpoint = std::env::var("AWS_ENDPOINT_URL").map_err(
        |_| "AWS_ENDPOINT_URL must name the local emulator (make run-lambda starts moto)",
    )?;
    // Both ports are taken before anything else binds (`0` picks a free one; the issuer file
    // names them).
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, args.port))).await?;
    let origin = format!("http://127.0.0.1:{}", listener.local_addr()?.port());
    let issuer_listener =
        tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, args.issuer_port)))
            .await?;
    let issuer_origin = format!("http://127.0.0.1:{}", issuer_listener.local_addr()?.port());

    // The issuer: its JWKS, and an authorization server that signs in `--oauth-identity` without
    // asking (what an MCP client's OAuth flow needs, for local tests only).
    let issuer = DevIssuer::generate(&issuer_origin, &format!("{origin}/mcp"));
    let (tenant, subject) = args
        .oauth_identity
        .split_once(':')
        .unwrap_or(("acme", "alice"));
    let authorization_server =
        relevo_gateway::dev_oauth::router(issuer.clone(), tenant.into(), subject.into());
    tokio::spawn(async move { axum::serve(issuer_listener, authorization_server).await });

    let inject_token = args.inject.as_deref().map(|spec| {
        let mut parts = spec.splitn(3, ':');
        let tenant = parts.next().unwrap_or("dev").to_string();
        let subject = parts.next().unwrap_or("developer").to_string();
        let scopes = parts
            .next()
            .unwrap_or("")
            .split([',', ' '])
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        InjectedToken {
            issuer: issuer.clone(),
            tenant,
            subject,
            scopes,
        }
    });
    let options = LocalOptions {
        template: args.template,
        topology: args.topology,
        parameters: args.parameters,
        bin_dir: args.bin_dir,
        one_binary: args.one_binary,
        endpoint,
        origin: origin.clone(),
        issuer: issuer_origin,
        extra_env: EXTRA_ENV
            .iter()
            .filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?)))
            .collect(),
        iam_log: args.iam_log,
        schedule_every: args.schedule_every,
        stream_limits: StreamLimits {
            idle: args.stream_idle.unwrap_or(StreamLimits::default().idle),
            ..StreamLimits::default()
        },
        streaming_environments: args.environments,
        inject_token,
        max_concurrency: args.max_concurrency,
    };
    let front_door = start(&options).await?;
    if let Ok(path) = std::env::var("RELEVO_DEV_ISSUER_FILE") {
        issuer.save(std::path::Path::new(&path))?;
    }
    tracing::info!(url = %format!("{origin}/mcp"), "local Lambda mode listening");
    // On SIGTERM or Ctrl-C, every environment is stopped as Lambda stops one (its process
    // killed while its Runtime API still stands, so no poll is answered empty), then return.
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        served = axum::serve(listener, front_door.router()) => served?,
        _ = terminate.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    relevo_gateway::lambda_local::runtime::stop_environments(Duration::from_secs(5)).await;
    Ok(())
}
