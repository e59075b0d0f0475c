//! What can go wrong, said so an operator knows what failed. No variant carries key material:
//! key errors name key ids only.

use relevo_state::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The command line is wrong (exit status 2, with the usage text).
    #[error("{0}")]
    Usage(String),
    #[error("{what}: {source}")]
    Store {
        what: String,
        #[source]
        source: StoreError,
    },
    #[error("no operation {id:?} in tenant {tenant:?}")]
    NoSuchOperation { tenant: String, id: String },
    /// `ops reconcile` in a CLI whose app registered no reconcile hook (exit status 1).
    #[error(
        "this operator CLI has no reconcile hook: settling an operation runs the app's own code, which the app registers (relevo_ops::Hooks::reconcile); run the app's own ops binary"
    )]
    NoReconcileHook,
    #[error("reconciling operation {id:?} failed: {reason}")]
    Reconcile { id: String, reason: String },
    #[error("no dead letter {0:?} (it may have been redriven or deleted already)")]
    NoSuchDeadLetter(String),
    #[error("the keys {0}")]
    Keys(String),
    #[error("{what}: {reason}")]
    Io {
        what: String,
        #[source]
        reason: std::io::Error,
    },
    #[error("Secrets Manager: {what}: {reason}")]
    Secrets { what: String, reason: String },
}

impl CliError {
    /// A store call that failed while doing `what`.
    pub fn store(what: impl Into<String>) -> impl FnOnce(StoreError) -> CliError {
        let what = what.into();
        move |source| CliError::Store { what, source }
    }

    /// The process exit status: 2 for a wrong command line, 1 for anything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            _ => 1,
        }
    }
}
