//! The log setup of every runner (feature `logging`): one subscriber writing JSON lines on
//! stdout, each with the fields of the span it is logged in (a request's or job's trace id, ids,
//! method, tool, tenant), and EMF metrics when `RELEVO_METRICS=emf` ([`relevo_state::emf`]).
//!
//! The level: `RUST_LOG`, a level with optional per-target levels (`info,relevo::request=off`:
//! no request span); `info` otherwise. On Lambda the level Lambda's log configuration sets
//! (`AWS_LAMBDA_LOG_LEVEL`) comes first. Per-target levels, not a filter expression: the
//! `EnvFilter` of `tracing-subscriber` would link its regex engine into every binary for this.
//!
//! Invariant: no AWS crate here; the Lambda runner and the local server share this function,
//! and the local server links nothing of Lambda's.

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;

/// How log lines look, by where the process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// A Lambda function: JSON lines without a timestamp (CloudWatch stamps each line), the
    /// level from `AWS_LAMBDA_LOG_LEVEL`, else `RUST_LOG`.
    Lambda,
    /// A process on this machine (the local server, the emulator): JSON lines with their
    /// timestamp, the level from `RUST_LOG`.
    Local,
}

/// Installs the process's log subscriber and turns EMF metrics on as the environment says.
/// Once per process: a later call (or a subscriber installed before) changes nothing.
pub fn init_logging(format: LogFormat) {
    let lambda_level = match format {
        LogFormat::Lambda => std::env::var("AWS_LAMBDA_LOG_LEVEL")
            .ok()
            .and_then(|level| level.parse::<LevelFilter>().ok()),
        LogFormat::Local => None,
    };
    let rust_log = std::env::var("RUST_LOG")
        .ok()
        .and_then(|value| value.parse::<Targets>().ok());
    let filter = match (lambda_level, rust_log) {
        (Some(level), _) => Targets::new().with_default(level),
        (None, Some(targets)) => targets,
        (None, None) => Targets::new().with_default(LevelFilter::INFO),
    };
    let lines = tracing_subscriber::fmt()
        .json()
        .with_target(false)
        .with_span_list(false);
    // Already installed: the first subscriber stays (tests and embedders may set their own).
    let _ = match format {
        LogFormat::Lambda => {
            tracing::subscriber::set_global_default(lines.without_time().finish().with(filter))
        }
        LogFormat::Local => tracing::subscriber::set_global_default(lines.finish().with(filter)),
    };
    relevo_state::emf::enable_from_env();
}
