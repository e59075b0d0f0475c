//! The apps a Relevo server can serve, chosen by name at start (`APP=conformance make run`).
//!
//! Apps are plain registries of tools, resources and prompts over `relevo-protocol`; they know
//! nothing of HTTP, Lambda or AWS.

pub mod conformance;
pub mod demo;
pub mod export;
pub mod notes;

use std::sync::Arc;

use relevo_protocol::{App, Clock, SystemClock};
use relevo_state::{Engine, Ids, RandomIds, RecordStore};

/// What apps may use of the outside world. A feature whose port is missing is left out of the
/// app (a deployment without a store serves no notes) rather than failing at call time.
#[derive(Clone)]
pub struct Ports {
    pub records: Option<Arc<dyn RecordStore>>,
    /// Durable jobs (store + queue); build it with [`with_job_runners`] so it can run the app's jobs.
    pub jobs: Option<Arc<Engine>>,
    pub ids: Arc<dyn Ids>,
    pub clock: Arc<dyn Clock>,
}

impl Ports {
    pub fn new(records: Option<Arc<dyn RecordStore>>) -> Self {
        Ports { records, jobs: None, ids: Arc::new(RandomIds), clock: Arc::new(SystemClock) }
    }

    pub fn with_jobs(mut self, engine: Arc<Engine>) -> Self {
        self.jobs = Some(engine);
        self
    }
}

/// Registers the runners of every job kind the apps start. `window_delay` paces the export's
/// reads (the stand-in for a slow source; `RELEVO_EXPORT_WINDOW_MS`).
pub fn with_job_runners(engine: Engine, window_delay: std::time::Duration) -> Engine {
    engine.runner(export::KIND, Arc::new(export::ExportRunner { window_delay }))
}

#[derive(Debug, thiserror::Error)]
#[error("unknown app {0:?}: expected one of {APP_NAMES:?}")]
pub struct UnknownApp(pub String);

pub const APP_NAMES: &[&str] = &["demo", "conformance"];

/// The app called `name`.
pub fn build(name: &str, ports: &Ports) -> Result<App, UnknownApp> {
    match name {
        "demo" => Ok(demo::app(ports)),
        "conformance" => Ok(conformance::app()),
        other => Err(UnknownApp(other.to_string())),
    }
}
