//! The telemetry every function starts with: JSON log lines for CloudWatch and EMF metrics (the
//! one setup the local server shares, [`relevo_protocol::observe::init_logging`] in its Lambda
//! format), then OpenTelemetry export when a collector is configured ([`crate::otlp`]).

use relevo_protocol::observe::{LogFormat, init_logging};

/// JSON lines without a timestamp (CloudWatch stamps each), at the level Lambda's log
/// configuration sets (`AWS_LAMBDA_LOG_LEVEL`), else `RUST_LOG`, else `info`; EMF metrics when
/// `RELEVO_METRICS=emf`; OTLP trace export when its endpoint is set.
pub(crate) fn init_telemetry() {
    init_logging(LogFormat::Lambda);
    crate::otlp::init_from_env();
}
