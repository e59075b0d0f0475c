//! Local Lambda mode: the stack `template.yaml` declares, run on one machine.
//!
//! Everything comes from the SAM translation of the template (`infra/scripts/translate.sh`),
//! evaluated for one front door: the functions (binary, environment, memory, timeout), their
//! execution policies, the tables, queues and secret (created on the emulator from their
//! properties), the routing rules and REST routes (front door A) or the HTTP API routes (front
//! door B), the SQS event source mapping and the schedule. Nothing is listed a second time here,
//! so a route, variable, timeout or permission that is wrong in the template is wrong locally.
//!
//! What is added, because it is what AWS provides around the template: the Lambda Runtime API
//! and each function's `AWS_*` environment ([`runtime`]); credentials of its own for each function,
//! checked against its policy ([`iam_proxy`]); API Gateway ([`front_door`]) with its events,
//! header remapping and limits ([`events`]); the event source mapping and the schedule
//! ([`event_sources`]). What is not AWS's and is added for tests is named in [`LocalOptions`].
//!
//! Everything listens on 127.0.0.1.

pub mod event_sources;
pub mod events;
pub mod front_door;
pub mod iam_proxy;
pub mod provision;
pub mod runtime;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use relevo_template::functions::rate_period_secs;
use relevo_template::{Stack, Template};

pub use event_sources::{SqsMapping, schedule, sqs_event_source};
pub use front_door::{FrontDoor, Routes, StreamLimits};
pub use runtime::{
    Answer, Function, FunctionSpec, InvokeError, start_function, start_function_concurrent,
};

use relevo_local::InjectedToken;

/// Which front door of the template to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// A custom domain: routing rules on the MCP headers, one REST API per method.
    A,
    /// No domain: one HTTP API.
    B,
    /// No domain, no API Gateway: the all-methods function's own Function URL, streamed.
    C,
}

impl std::str::FromStr for Topology {
    type Err = String;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "a" | "A" => Ok(Topology::A),
            "b" | "B" => Ok(Topology::B),
            "c" | "C" => Ok(Topology::C),
            other => Err(format!(
                "unknown front door {other:?}: a (custom domain), b (HTTP API) or c (Function URL)"
            )),
        }
    }
}

pub struct LocalOptions {
    /// The translated template.
    pub template: PathBuf,
    pub topology: Topology,
    /// Parameter overrides, as `sam deploy --parameter-overrides` takes them (e.g. a shorter
    /// `WorkQueueVisibility` so that a test sees a redelivery in seconds).
    pub parameters: BTreeMap<String, String>,
    pub bin_dir: PathBuf,
    /// One binary that plays every function, told which by `RELEVO_FUNCTION` (the function's
    /// binary name): the conformance fixtures' binary, so they stay out of the real functions.
    pub one_binary: Option<PathBuf>,
    /// The emulator (moto).
    pub endpoint: String,
    /// Where clients reach the front door (`http://127.0.0.1:PORT`): the audience of tokens.
    pub origin: String,
    /// The dev issuer's origin.
    pub issuer: String,
    /// Test knobs passed to every function on top of its template environment (not AWS's:
    /// `RELEVO_LEASE_SECS`, `RELEVO_EXPORT_WINDOW_MS`, `RELEVO_SSE_KEEPALIVE_SECS`, `RUST_LOG`).
    pub extra_env: Vec<(String, String)>,
    pub iam_log: Option<PathBuf>,
    /// Runs the schedules this often instead of their `rate(...)` (a test cannot wait minutes).
    pub schedule_every: Option<Duration>,
    pub stream_limits: StreamLimits,
    /// Execution environments of each streaming function (Lambda would start more as needed).
    pub streaming_environments: usize,
    pub inject_token: Option<InjectedToken>,
    /// Invocations each execution environment holds at once, as Lambda Managed Instances runs
    /// functions (`AWS_LAMBDA_MAX_CONCURRENCY`, [`start_function_concurrent`]); 1: classic Lambda.
    pub max_concurrency: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error(transparent)]
    Template(#[from] relevo_template::TemplateError),
    #[error(transparent)]
    Provision(#[from] provision::ProvisionError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Stack(String),
}

/// The parameters of `topology` for a local run: the issuer and audience of this run, a domain
/// for front door A.
fn parameters(options: &LocalOptions) -> BTreeMap<String, String> {
    let mut parameters = stack_parameters(
        &options.issuer,
        &format!("{}/mcp", options.origin),
        options.topology == Topology::A,
    );
    parameters.extend(options.parameters.clone());
    parameters
}

/// The template's parameters for a local stack whose tokens come from `issuer` (its JWKS at
/// `ISSUER/.well-known/jwks.json`) for `audience`; with `front_door_a`, a domain and its
/// certificate, so that the template makes front door A (else front door B, the HTTP API).
pub fn stack_parameters(
    issuer: &str,
    audience: &str,
    front_door_a: bool,
) -> BTreeMap<String, String> {
    let mut parameters = BTreeMap::from([
        ("AuthIssuer".to_string(), issuer.to_string()),
        ("AuthAudience".to_string(), audience.to_string()),
        (
            "AuthJwksUrl".to_string(),
            format!("{issuer}/.well-known/jwks.json"),
        ),
    ]);
    if front_door_a {
        parameters.insert("DomainName".into(), "mcp.local.test".into());
        parameters.insert(
            "CertificateArn".into(),
            format!(
                "arn:aws:acm:{}:{}:certificate/local",
                relevo_template::REGION,
                relevo_template::ACCOUNT_ID
            ),
        );
    }
    parameters
}

/// The stack the template makes for `options`.
pub fn local_stack(options: &LocalOptions) -> Result<Stack, LocalError> {
    let template = Template::load(&options.template)?;
    Ok(template.instantiate("relevo-local", &parameters(options))?)
}

/// For tests (`$RELEVO_LAMBDA_PID_DIR/stack.json`): the AWS proxy's URL (its fault injection)
/// and the physical names of the tables and queues (to read what the functions wrote).
fn describe(
    stack: &Stack,
    ids: &relevo_template::PhysicalIds,
    proxy_url: &str,
) -> std::io::Result<()> {
    let Ok(dir) = std::env::var("RELEVO_LAMBDA_PID_DIR") else {
        return Ok(());
    };
    let names = |kind: &str| -> serde_json::Map<String, serde_json::Value> {
        stack
            .of_type(kind)
            .filter_map(|r| {
                Some((
                    r.logical_id.clone(),
                    serde_json::json!(ids.reference(&r.logical_id)?),
                ))
            })
            .collect()
    };
    let description = serde_json::json!({
        "awsProxy": proxy_url, "tables": names("AWS::DynamoDB::Table"), "queues": names("AWS::SQS::Queue"),
    });
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        PathBuf::from(dir).join("stack.json"),
        description.to_string(),
    )
}

/// Creates the stack's resources on the emulator, starts every function, the IAM proxy, the event
/// source mappings and the schedules; returns the front door.
pub async fn start(options: &LocalOptions) -> Result<FrontDoor, LocalError> {
    let stack = local_stack(options)?;
    let admin = relevo_aws::emulator_config(&options.endpoint).await;
    let suffix = relevo_state::Ids::new_id(&relevo_state::RandomIds).replace(['_', '-'], "x")[..10]
        .to_string();
    let ids = provision::provision(&stack, &admin, &suffix).await?;
    let functions = stack.functions(&ids)?;
    let policies = stack.execution_policies(&ids)?;

    let mut callers = HashMap::new();
    let mut keys = HashMap::new();
    for (index, policy) in policies.iter().enumerate() {
        let key = format!("AKIALOCAL{index:04}");
        let role = ids
            .reference(&policy.role)
            .unwrap_or_else(|| policy.role.clone());
        callers.insert(
            key.clone(),
            iam_proxy::Caller {
                function: policy.function.clone(),
                role,
                authorizer: policy.authorizer()?,
            },
        );
        keys.insert(policy.function.clone(), key);
    }
    let secrets: HashMap<String, String> = stack
        .of_type("AWS::SecretsManager::Secret")
        .filter_map(|s| ids.reference(&s.logical_id))
        .flat_map(|arn| {
            let name = arn
                .rsplit(":secret:")
                .next()
                .and_then(|n| n.rsplit_once('-'))
                .map(|(n, _)| n.to_string());
            [(arn.clone(), arn.clone())]
                .into_iter()
                .chain(name.map(|n| (n, arn)))
        })
        .collect();
    if let Some(log) = &options.iam_log {
        iam_proxy::write_grants(log, &policies)?;
    }
    let proxy =
        iam_proxy::IamProxy::new(&options.endpoint, callers, secrets, options.iam_log.clone())?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let proxy_url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, proxy.router()).await });
    describe(&stack, &ids, &proxy_url)?;

    // The stack without a domain has front doors B and C: only the one served runs its
    // functions (the others would be processes nothing reaches); the worker and the reconciler
    // run whichever it is.
    let url_functions: Vec<String> = stack
        .function_urls(&ids)?
        .into_iter()
        .filter_map(|url| url.function)
        .collect();
    let api_functions: Vec<String> = stack
        .apis(&ids)?
        .into_iter()
        .flat_map(|api| api.routes.into_iter().map(|route| route.function))
        .collect();
    let served = |id: &String| match options.topology {
        Topology::C => !api_functions.contains(id) || url_functions.contains(id),
        Topology::A | Topology::B => !url_functions.contains(id),
    };
    let mut running = HashMap::new();
    for function in functions.iter().filter(|f| served(&f.logical_id)) {
        let key = keys.get(&function.logical_id).cloned().unwrap_or_default();
        let mut env: Vec<(String, String)> = function.environment.clone().into_iter().collect();
        env.extend([
            ("AWS_ENDPOINT_URL".to_string(), proxy_url.clone()),
            (
                "AWS_REGION".to_string(),
                relevo_template::REGION.to_string(),
            ),
            (
                "AWS_DEFAULT_REGION".to_string(),
                relevo_template::REGION.to_string(),
            ),
            ("AWS_ACCESS_KEY_ID".to_string(), key),
            ("AWS_SECRET_ACCESS_KEY".to_string(), "local".to_string()),
        ]);
        env.extend(options.extra_env.clone());
        let binary = match &options.one_binary {
            Some(binary) => {
                env.push(("RELEVO_FUNCTION".to_string(), function.binary.clone()));
                binary.clone()
            }
            None => options.bin_dir.join(&function.binary),
        };
        let spec = FunctionSpec {
            name: function.logical_id.clone(),
            binary,
            env,
            memory_mb: function.memory_mb,
            timeout: Duration::from_secs(function.timeout_secs),
            environments: if function.streams() {
                options.streaming_environments
            } else {
                1
            },
            logging: function.logging.clone(),
        };
        let started = start_function_concurrent(spec, options.max_concurrency).await?;
        running.insert(function.logical_id.clone(), started);
    }

    for mapping in stack
        .event_source_mappings(&ids)?
        .into_iter()
        .filter(|m| m.enabled)
    {
        let (Some(function), Some(spec)) = (
            running.get(&mapping.function),
            functions.iter().find(|f| f.logical_id == mapping.function),
        ) else {
            return Err(LocalError::Stack(format!(
                "{}: no function {}",
                mapping.logical_id, mapping.function
            )));
        };
        let queue_url = ids.reference(&mapping.source).ok_or_else(|| {
            LocalError::Stack(format!(
                "{}: no queue {}",
                mapping.logical_id, mapping.source
            ))
        })?;
        let key = keys.get(&mapping.function).cloned().unwrap_or_default();
        let config = relevo_aws::emulator_config_as(&proxy_url, &key).await;
        tokio::spawn(sqs_event_source(SqsMapping {
            client: aws_sdk_sqs::Client::new(&config),
            queue_url,
            queue_arn: ids.attribute(&mapping.source, "Arn").unwrap_or_default(),
            function: function.clone(),
            batch_size: i32::try_from(mapping.batch_size).unwrap_or(10),
            timeout: Duration::from_secs(spec.timeout_secs),
            report_batch_item_failures: mapping.report_batch_item_failures,
        }));
    }
    for rule in stack.schedules(&ids)?.into_iter().filter(|s| s.enabled) {
        let every = match (options.schedule_every, rate_period_secs(&rule.expression)) {
            (Some(every), _) => every,
            (None, Some(period)) => Duration::from_secs(period),
            (None, None) => {
                tracing::warn!(rule = %rule.logical_id, expression = %rule.expression, "only rate() schedules run locally");
                continue;
            }
        };
        for target in &rule.targets {
            let (Some(function), Some(spec)) = (
                running.get(target),
                functions.iter().find(|f| f.logical_id == *target),
            ) else {
                continue;
            };
            tokio::spawn(schedule(
                rule.logical_id.clone(),
                function.clone(),
                every,
                Duration::from_secs(spec.timeout_secs),
            ));
        }
    }
    let routes = match options.topology {
        Topology::C => Routes::from_function_urls(stack.function_urls(&ids)?, &functions),
        Topology::A | Topology::B => {
            Routes::from_stack(stack.routing_rules(&ids)?, stack.apis(&ids)?)
        }
    }
    .map_err(LocalError::Stack)?;
    Ok(FrontDoor::new(
        routes,
        running,
        options.inject_token.clone(),
        options.stream_limits,
    ))
}
