//! `relevo-lambda-local [--port N|0] [--bin-dir DIR] [--inject-dev-token TENANT:SUB[:SCOPES]]`: the
//! compiled function binaries under the local Lambda Runtime API, behind a local API Gateway,
//! with DynamoDB and SQS from the emulator at `AWS_ENDPOINT_URL` (moto). Creates a fresh table,
//! queue and dead-letter queue, a dev issuer (its JWKS served at `/.well-known/jwks.json`, the
//! functions verify tokens against it over HTTP) and a signing key.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use relevo_auth::DevIssuer;
use relevo_gateway::InjectedToken;
use relevo_gateway::lambda_local::{FrontDoor, front_door, schedule, sqs_event_source, start_function};
use relevo_protocol::Method;
use relevo_state::{Ids, RandomIds};

const VISIBILITY_SECS: i32 = 6;

/// The functions whose REST integration streams (`ResponseTransferMode: RESPONSE_STREAM` in
/// `template.yaml`): SSE answers of `tools/call`, listen streams, and the catch-all.
const STREAMING: [&str; 3] = ["tools-call", "subscriptions-listen", "mcp"];

/// Environments per streaming function, so that an open stream does not starve the next caller
/// (Lambda would start another environment).
const STREAMING_INSTANCES: usize = 4;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    relevo_gateway::init_logging();
    let mut port: u16 = 8080;
    let mut bin_dir = PathBuf::from("target/debug");
    let mut inject = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => port = args.next().and_then(|p| p.parse().ok()).ok_or("--port needs a number")?,
            "--bin-dir" => bin_dir = PathBuf::from(args.next().ok_or("--bin-dir needs a path")?),
            "--inject-dev-token" => inject = Some(args.next().ok_or("--inject-dev-token needs TENANT:SUB[:SCOPES]")?),
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    let endpoint = std::env::var("AWS_ENDPOINT_URL")
        .map_err(|_| "AWS_ENDPOINT_URL must name the local emulator (make run-lambda starts moto)")?;
    // The front door's port is taken before anything else binds (`--port 0` picks a free one;
    // the issuer's URL, and so the dev issuer file, names it).
    let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await?;
    let origin = format!("http://127.0.0.1:{}", listener.local_addr()?.port());

    let config = relevo_aws::emulator_config(&endpoint).await;
    let suffix = RandomIds.new_id().replace(['_', '-'], "x");
    let table = format!("relevo-{suffix}");
    relevo_aws::create_table(&aws_sdk_dynamodb::Client::new(&config), &table).await?;
    let sqs = aws_sdk_sqs::Client::new(&config);
    let (queue_url, _) = relevo_aws::create_queue_with_dead_letters(&sqs, &format!("relevo-work-{suffix}"), 5).await?;
    let queue_arn = format!("arn:aws:sqs:us-east-1:000000000000:relevo-work-{suffix}");

    let issuer = DevIssuer::generate(&origin, &format!("{origin}/mcp"));
    if let Ok(path) = std::env::var("RELEVO_DEV_ISSUER_FILE") {
        issuer.save(std::path::Path::new(&path))?;
    }
    let mut key = [0u8; 32];
    getrandom::fill(&mut key)?;
    let env: Vec<(String, String)> = [
        ("AWS_ENDPOINT_URL", endpoint.clone()),
        ("AWS_REGION", "us-east-1".into()),
        ("AWS_ACCESS_KEY_ID", "test".into()),
        ("AWS_SECRET_ACCESS_KEY", "test".into()),
        ("RELEVO_APP", std::env::var("RELEVO_APP").unwrap_or_else(|_| "shop".into())),
        ("RELEVO_TABLE", table),
        ("RELEVO_QUEUE_URL", queue_url.clone()),
        ("RELEVO_STATE_KEYS", format!("local:{}", base64::engine::general_purpose::STANDARD.encode(key))),
        ("RELEVO_AUTH", "required".into()),
        ("RELEVO_APPROVALS_URL", format!("{origin}/approvals")),
        ("RELEVO_AUTH_ISSUER", origin.clone()),
        ("RELEVO_AUTH_AUDIENCE", format!("{origin}/mcp")),
        ("RELEVO_AUTH_JWKS_URL", format!("{origin}/.well-known/jwks.json")),
        ("RELEVO_AUTH_ALGORITHMS", "ES256".into()),
        ("RELEVO_LEASE_SECS", std::env::var("RELEVO_LEASE_SECS").unwrap_or_else(|_| "5".into())),
        ("RELEVO_EXPORT_WINDOW_MS", std::env::var("RELEVO_EXPORT_WINDOW_MS").unwrap_or_else(|_| "250".into())),
        ("RUST_LOG", std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into())),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();

    let mut names: Vec<&str> = Method::ALL.iter().map(|m| m.function_name()).collect();
    names.extend(["mcp", "well-known", "worker", "reconciler", "approvals"]);
    let mut functions = HashMap::new();
    for name in names {
        let (env, instances) = if STREAMING.contains(&name) {
            let mut env = env.clone();
            env.push(("RELEVO_RESPONSE_STREAMING".into(), "true".into()));
            (env, STREAMING_INSTANCES)
        } else {
            (env.clone(), 1)
        };
        let function = start_function(name, bin_dir.join(name), env, instances).await?;
        functions.insert(name.to_string(), function);
    }
    let worker = functions["worker"].clone();
    tokio::spawn(sqs_event_source(sqs, queue_url, queue_arn, worker, VISIBILITY_SECS));
    tokio::spawn(schedule(functions["reconciler"].clone(), Duration::from_secs(5)));

    let inject_token = inject.map(|spec| {
        let mut parts = spec.splitn(3, ':');
        let tenant = parts.next().unwrap_or("dev").to_string();
        let subject = parts.next().unwrap_or("developer").to_string();
        let scopes = parts.next().unwrap_or("").split([',', ' ']).filter(|s| !s.is_empty()).map(String::from).collect();
        InjectedToken { issuer: issuer.clone(), tenant, subject, scopes }
    });
    let front = FrontDoor {
        functions: Arc::new(functions),
        jwks: Some(serde_json::to_value(issuer.jwks())?),
        inject_token,
        timeout: Duration::from_secs(30),
    };
    tracing::info!(url = %format!("{origin}/mcp"), "local Lambda mode listening");
    axum::serve(listener, front_door(front)).await?;
    Ok(())
}
