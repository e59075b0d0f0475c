//! The job engine as a tool reaches it: [`Jobs`], carried on every call the server makes.
//!
//! A tool starts and reads jobs through its [`super::ToolContext`], which holds the server's
//! [`Jobs`]: the engine (store and queue) and the kinds the app runs. A tool that starts a job is
//! then a plain `async fn`, with nothing captured.
//!
//! Invariants:
//! - A job of a kind the app does not run is never written: [`Jobs::engine_for`] refuses it
//!   naming the kind and the registration it lacks ([`JobsError::NoRunner`]), before the store is
//!   touched. Without this the job would sit queued until the worker failed it, and a task
//!   client would poll a task nobody runs.
//! - Without an engine (a deployment with `RELEVO_STORE=none`) every start and read is
//!   [`JobsError::NoEngine`], which says so: never a panic, never a job kept in memory.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use relevo_state::Engine;

/// The server's job engine and the kinds its app runs.
#[derive(Clone)]
pub struct Jobs {
    engine: Arc<Engine>,
    kinds: Arc<BTreeSet<String>>,
}

impl Jobs {
    /// `engine`, starting jobs only of `kinds` (the kinds the app registered a runner for).
    pub fn new(engine: Arc<Engine>, kinds: impl IntoIterator<Item = String>) -> Self {
        Jobs {
            engine,
            kinds: Arc::new(kinds.into_iter().collect()),
        }
    }

    /// The engine, for what the typed API does not cover.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Whether the app runs jobs of `kind`.
    pub fn runs(&self, kind: &str) -> bool {
        self.kinds.contains(kind)
    }

    /// The engine, if the app runs jobs of `kind`.
    pub fn engine_for(&self, kind: &str) -> Result<&Engine, JobsError> {
        if self.runs(kind) {
            Ok(&self.engine)
        } else {
            Err(JobsError::NoRunner {
                kind: kind.to_string(),
            })
        }
    }
}

impl fmt::Debug for Jobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Jobs").field("kinds", &self.kinds).finish()
    }
}

/// Why a tool could not reach the job engine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobsError {
    /// The deployment has no store, so no jobs.
    #[error(
        "this server has no job store (RELEVO_STORE=none, or a runner without one): starting or reading a job needs one"
    )]
    NoEngine,
    /// The app registers no runner for this kind.
    #[error(
        "the app runs no {kind:?} jobs: register the kind's function with App::job(&KIND, run) before a tool starts one"
    )]
    NoRunner {
        /// The kind a tool tried to start.
        kind: String,
    },
}
