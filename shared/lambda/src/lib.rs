//! The Lambda side of every function: read settings once per cold start, then serve each event
//! with the same core the local server runs ([`McpServer::handle`]), wired by the same
//! constructor ([`McpServer::from_ports`]).
//!
//! # Layout
//!
//! Each function of a deployment is one of these runners, called from its one-line `main`:
//! - [`http`]: the MCP functions ([`run`]: `mcp` and one per method), buffered or with Lambda
//!   response streaming (`RELEVO_RESPONSE_STREAMING`); [`handle_event`] serves one event (tests).
//! - [`worker`]: the `worker` function ([`run_worker`]), SQS batches of jobs with per-message
//!   failures ([`handle_sqs_batch`]).
//! - [`reconciler`]: the scheduled `reconciler` function ([`run_reconciler`]).
//! - [`pages`]: the `pages` function ([`run_pages`]), the app's pages beside `/mcp`.
//! - [`well_known`]: the `well-known` function ([`run_well_known`]), protected-resource metadata,
//!   the server card and the catalog.
//! - [`function`]: [`run_function`], any of the above by name (one binary for a whole stack).
//!
//! And what the runners share:
//! - [`env`](mod@env): settings, backend (DynamoDB, SQS), authenticator and server from the environment
//!   ([`server_from_env`], [`backend_from_env`], [`settings_from_env`]).
//! - `events`: proxy events into the core's requests and its replies back (ids, deadline, SSE).
//! - `logging`: JSON logs for CloudWatch and EMF metrics (the setup the local server shares),
//!   then [`otlp`] trace export.
//! - [`keys`]: the state keys' refresh from Secrets Manager; [`otlp`]: OpenTelemetry export.
//! - [`runtime`]: the Runtime API poll loop (`TCP_NODELAY` on its connections, response
//!   streaming, init and invocation errors); [`serve`]: one invocation at a time, or several
//!   with the `managed-instances` feature (Lambda Managed Instances): what they share and why it
//!   is safe.
//!
//! [`McpServer::handle`]: relevo_protocol::McpServer::handle
//! [`McpServer::from_ports`]: relevo_protocol::McpServer::from_ports

pub mod env;
mod events;
pub mod function;
pub mod http;
pub mod keys;
mod logging;
pub mod otlp;
pub mod pages;
pub mod reconciler;
pub mod runtime;
pub mod serve;
pub mod well_known;
pub mod worker;

pub use env::{backend_from_env, server_from_env, settings_from_env};
pub use function::run_function;
pub use http::{handle_catch_all_event, handle_event, run};
/// The allocator every function declares (`#[global_allocator]` in its `main`): mimalloc.
///
/// A warm invocation allocates a few hundred small blocks (the event, the JSON-RPC body, the
/// reply) and frees them all; glibc's malloc spent a tenth of a warm `tools/call`'s CPU on that
/// and mimalloc about half as much (`shared/relevo/docs/performance.md`, "Managed Instances").
/// A project that prefers another allocator declares its own instead; nothing else depends on it.
///
/// ```no_run
/// #[global_allocator]
/// static ALLOCATOR: relevo_lambda::Allocator = relevo_lambda::Allocator;
/// # fn main() {}
/// ```
pub use mimalloc::MiMalloc as Allocator;
pub use pages::run_pages;
pub use reconciler::run_reconciler;
pub use serve::max_concurrency;
pub use well_known::run_well_known;
pub use worker::{handle_sqs_batch, run_worker};
