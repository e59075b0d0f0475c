//! `cargo relevo ops ...`: the operator's CLI ([`relevo_ops`]) in any project, with no app hooks.
//! The arguments after `ops` go to it as they are (`cargo relevo ops --sqlite .relevo/store.db
//! ledger report`); its usage text and errors name it `cargo relevo ops`.
//!
//! Invariant: every command works but `ops reconcile`, which settles an operation through the
//! app's own code: without the app's hook it fails, naming the hook, and writes nothing (an app's
//! own ops binary registers it; this repository's is `cargo run -p relevo-gateway --bin
//! relevo-ops`).
//!
//! Threat model: as [`relevo_ops`]: the operator's credentials, no secret printed, stored text
//! printed inert.

use std::process::ExitCode;

/// Runs `cargo relevo ops ARGS...` and returns its exit status (0, 1 failed, 2 wrong command line).
pub fn run(args: Vec<String>) -> ExitCode {
    relevo_ops::run("cargo relevo ops", args, relevo_ops::Hooks::new())
}
