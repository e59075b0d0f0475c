//! `relevo-gateway`: this repository's development tools around the local server. The local
//! server itself (router, `run_local`, body and connection bounds, Host/Origin policy) is
//! `relevo-local`, which user projects link; this crate adds what only this repository needs:
//!
//! - [`lambda_local`]: local Lambda mode — each function as its own process behind a Lambda
//!   Runtime API, the two front doors, event sources, and an IAM proxy that holds each function to
//!   the policy `template.yaml` grants it (and the IAM report built from it);
//! - [`dev_oauth`]: a loopback-only OAuth 2.1 authorization server for the dev issuer;
//! - the binaries: `relevo-gateway` (the example shop on one machine, `make run`),
//!   `relevo-lambda-local`, `relevo-iam-report` and `relevo-token`.
//!
//! Threat model: nothing here is deployed. Every server binds 127.0.0.1 and refuses non-loopback
//! Host values (see each module); the emulator talks to AWS only through the IAM proxy, which
//! refuses what the function's policy does not grant.

pub mod dev_oauth;
pub mod lambda_local;
