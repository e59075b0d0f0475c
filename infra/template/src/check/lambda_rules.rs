//! Functions: Lambda's limits, their environment, and the integrations in front of them.

use super::Context;
use super::routing_rules::ALL_METHODS_BINARY;
use crate::apis::{
    ApiKind, HTTP_MAX_TIMEOUT_MS, REST_DEFAULT_TIMEOUT_MS, REST_STREAMED_MAX_TIMEOUT_MS,
};
use crate::functions::Function;

const TIMEOUT_SECS: std::ops::RangeInclusive<u64> = 1..=900;
const MEMORY_MB: std::ops::RangeInclusive<u64> = 128..=10_240;
const MAX_DESCRIPTION: usize = 256;
const MAX_ENVIRONMENT_BYTES: usize = 4 * 1024;
/// Variables Lambda sets itself and a function configuration may not set.
pub const RESERVED_VARIABLES: [&str; 18] = [
    "_HANDLER",
    "_X_AMZN_TRACE_ID",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
    "AWS_EXECUTION_ENV",
    "AWS_LAMBDA_FUNCTION_NAME",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
    "AWS_LAMBDA_FUNCTION_VERSION",
    "AWS_LAMBDA_INITIALIZATION_TYPE",
    "AWS_LAMBDA_LOG_GROUP_NAME",
    "AWS_LAMBDA_LOG_STREAM_NAME",
    "AWS_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_LAMBDA_RUNTIME_API",
    "LAMBDA_TASK_ROOT",
    "LAMBDA_RUNTIME_DIR",
];
/// A REST stream is cut after five minutes without a byte (Regional and private endpoints).
pub const STREAM_IDLE_SECS: u64 = 300;
/// The code's defaults when the variables are unset (`shared/protocol/src/settings.rs`).
const DEFAULT_LEGACY_INPUT_WAIT_SECS: u64 = 300;
const DEFAULT_LISTEN_MAX_SECS: u64 = 300;
const DEFAULT_KEEPALIVE_SECS: u64 = 25;
/// The functions that serve `subscriptions/listen`.
const LISTENING_BINARIES: [&str; 2] = ["subscriptions-listen", ALL_METHODS_BINARY];

pub(super) fn run(context: &mut Context) {
    let functions = match context.stack.functions(context.ids) {
        Ok(functions) => functions,
        Err(error) => return context.refuse("references", "Functions", error.to_string()),
    };
    for function in &functions {
        limits(context, function);
        environment(context, function);
        logging(context, function);
    }
    let apis = match context.stack.apis(context.ids) {
        Ok(apis) => apis,
        Err(error) => return context.refuse("references", "APIs", error.to_string()),
    };
    for api in &apis {
        for route in &api.routes {
            let Some(function) = functions.iter().find(|f| f.logical_id == route.function) else {
                continue;
            };
            let at = format!("{} {} {}", api.logical_id, route.method, route.path);
            let limit = match (api.kind, route.streaming) {
                (ApiKind::Rest, false) => REST_DEFAULT_TIMEOUT_MS,
                (ApiKind::Rest, true) => REST_STREAMED_MAX_TIMEOUT_MS,
                (ApiKind::Http, _) => HTTP_MAX_TIMEOUT_MS,
            };
            if route.timeout_ms > limit || route.timeout_ms < 50 {
                context.refuse(
                    "integration-timeout",
                    &at,
                    format!(
                        "integration timeout {} ms is outside 50–{limit} ms",
                        route.timeout_ms
                    ),
                );
            }
            if function.timeout_secs * 1000 > route.timeout_ms {
                context.refuse(
                    "integration-timeout",
                    &function.logical_id,
                    format!(
                        "Timeout {} s outlives {at}'s integration ({} ms): the client gets a gateway timeout while the function keeps running",
                        function.timeout_secs, route.timeout_ms
                    ),
                );
            }
            if api.kind == ApiKind::Http && route.streaming {
                context.refuse(
                    "streaming",
                    &at,
                    "HTTP APIs cannot stream responses (REST only)",
                );
            }
            if route.streaming && !route.streaming_uri {
                context.refuse(
                    "streaming",
                    &at,
                    "a streamed integration must invoke …/2021-11-15/functions/ARN/response-streaming-invocations",
                );
            }
            if function.streams() != route.streaming {
                context.refuse(
                    "streaming",
                    &function.logical_id,
                    format!(
                        "RELEVO_RESPONSE_STREAMING={} but {at} streams={}",
                        function.streams(),
                        route.streaming
                    ),
                );
            }
        }
    }
    for function in functions.iter().filter(|f| f.streams()) {
        stream_lifetimes(context, function);
    }
}

fn limits(context: &mut Context, function: &Function) {
    let id = &function.logical_id;
    if !TIMEOUT_SECS.contains(&function.timeout_secs) {
        context.refuse(
            "lambda-limits",
            id,
            format!("Timeout {} s is outside 1–900 s", function.timeout_secs),
        );
    }
    if !MEMORY_MB.contains(&function.memory_mb) {
        context.refuse(
            "lambda-limits",
            id,
            format!(
                "MemorySize {} MB is outside 128–10,240 MB",
                function.memory_mb
            ),
        );
    }
    if function
        .description
        .as_ref()
        .is_some_and(|d| d.chars().count() > MAX_DESCRIPTION)
    {
        context.refuse(
            "lambda-limits",
            id,
            format!("Description is over {MAX_DESCRIPTION} characters"),
        );
    }
}

fn environment(context: &mut Context, function: &Function) {
    let id = &function.logical_id;
    let size: usize = function
        .environment
        .iter()
        .map(|(k, v)| k.len() + v.len())
        .sum();
    if size > MAX_ENVIRONMENT_BYTES {
        context.refuse(
            "lambda-environment",
            id,
            format!("environment variables take {size} bytes (at most 4 KB)"),
        );
    }
    for name in function.environment.keys() {
        if RESERVED_VARIABLES.contains(&name.as_str()) {
            context.refuse(
                "lambda-environment",
                id,
                format!("{name} is reserved by Lambda"),
            );
        }
        let mut chars = name.chars();
        let well_formed = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !well_formed {
            context.refuse(
                "lambda-environment",
                id,
                format!("{name:?} is not a valid variable name"),
            );
        }
    }
}

/// What CloudFormation refuses in a `LoggingConfig` (log levels need the JSON format, each from
/// its own list), and an application log level above INFO: Lambda would drop the requests' EMF
/// lines (INFO), so their metrics and the alarms on them. The system log level is the
/// operator's to choose (the template's WARN keeps START/END/REPORT out of the bill; INFO brings
/// back REPORT's billed duration and memory).
/// <https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-log-level.html>
fn logging(context: &mut Context, function: &Function) {
    let id = &function.logical_id;
    let logging = &function.logging;
    if let Some(why) = logging.refused() {
        return context.refuse("lambda-logging", id, why);
    }
    if !logging.keeps(Some("INFO")) {
        context.refuse(
            "lambda-logging",
            id,
            "ApplicationLogLevel above INFO: Lambda drops the requests' EMF lines (INFO), their metrics and the alarms on them",
        );
    }
}

fn seconds(function: &Function, name: &str, default: u64) -> u64 {
    function
        .environment
        .get(name)
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A stream must end before its function's timeout and never idle out. The code sends an SSE
/// comment every `RELEVO_SSE_KEEPALIVE_SECS` (25 s by default) while a stream waits, so a stream
/// idles only if that interval is not below the limit; a listen stream and a 2025-11-25 call
/// waiting for its client's answer are bounded below the timeout.
fn stream_lifetimes(context: &mut Context, function: &Function) {
    let id = &function.logical_id;
    let keepalive = seconds(
        function,
        "RELEVO_SSE_KEEPALIVE_SECS",
        DEFAULT_KEEPALIVE_SECS,
    );
    if keepalive == 0 || keepalive >= STREAM_IDLE_SECS {
        context.refuse(
            "streaming",
            id,
            format!("SSE keep-alive every {keepalive} s: a quiet stream would hit the {STREAM_IDLE_SECS} s idle limit"),
        );
    }
    if LISTENING_BINARIES.contains(&function.binary.as_str()) {
        let listen = seconds(function, "RELEVO_LISTEN_MAX_SECS", DEFAULT_LISTEN_MAX_SECS);
        if listen >= function.timeout_secs {
            context.refuse(
                "streaming",
                id,
                format!(
                    "a listen stream may last {listen} s, not below the {} s timeout",
                    function.timeout_secs
                ),
            );
        }
    }
    if function.binary == ALL_METHODS_BINARY {
        let wait = seconds(
            function,
            "RELEVO_LEGACY_INPUT_WAIT_SECS",
            DEFAULT_LEGACY_INPUT_WAIT_SECS,
        );
        if wait >= function.timeout_secs {
            context.refuse(
                "streaming",
                id,
                format!(
                    "a 2025-11-25 call may wait {wait} s for its client's answer, not below the {} s timeout",
                    function.timeout_secs
                ),
            );
        }
    }
}
