//! What only the app knows: the code the CLI runs for it, registered by the app's own operator
//! binary (`Hooks::new().reconcile(...)`). Today that is one hook, the reconcile of an operation
//! (`ops reconcile`): settling an operation asks the app's downstream for its receipt, which the
//! framework cannot do alone.
//!
//! Invariant: a command whose hook is missing fails before it opens the store, with an error
//! naming the hook ([`crate::error::CliError::NoReconcileHook`]), so it writes nothing; every
//! other command needs no hook.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use relevo_protocol::Ports;
use relevo_state::ledger::Operation;

/// The error a hook may return: the app's own, kept whole (its `Display` is what the operator
/// reads).
pub type HookError = Box<dyn std::error::Error + Send + Sync>;

type ReconcileFuture = Pin<Box<dyn Future<Output = Result<Option<Operation>, HookError>> + Send>>;
pub(crate) type ReconcileFn = dyn Fn(Ports, String, String) -> ReconcileFuture + Send + Sync;

/// The app's hooks, none by default.
#[derive(Clone, Default)]
pub struct Hooks {
    reconcile: Option<Arc<ReconcileFn>>,
}

impl Hooks {
    /// No hooks: every command but `ops reconcile` works.
    pub fn new() -> Hooks {
        Hooks::default()
    }

    /// The reconcile of one operation, as the app's reconciler runs it: called with the ports
    /// over the operator's store, the tenant and the operation id, it settles the operation (the
    /// conditional writes of the ledger) and returns it as it is now, or `None` when the tenant
    /// has no such operation. The shop's: `relevo_app::inventory(&ports)?.settle(&tenant, &id)`.
    pub fn reconcile<F, Fut, E>(mut self, hook: F) -> Hooks
    where
        F: Fn(Ports, String, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<Operation>, E>> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        self.reconcile = Some(Arc::new(move |ports, tenant, id| {
            let settled = hook(ports, tenant, id);
            Box::pin(async move { settled.await.map_err(HookError::from) }) as ReconcileFuture
        }));
        self
    }

    /// The registered reconcile hook, if any.
    pub(crate) fn reconcile_hook(&self) -> Option<&ReconcileFn> {
        self.reconcile.as_deref()
    }
}

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hooks")
            .field("reconcile", &self.reconcile.is_some())
            .finish()
    }
}
