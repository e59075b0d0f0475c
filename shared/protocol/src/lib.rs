//! Relevo's protocol core: MCP 2026-07-28 over stateless HTTP, and 2025-11-25 clients served
//! from the same functions with sessions kept in the store ([`legacy`]).
//!
//! Invariants every module keeps:
//! - The request is the only input. Nothing is read from or written to process memory that a
//!   later request depends on; continuation travels in sealed tokens ([`seal`]).
//! - The body is the authority; headers are checked against it, never trusted over it.
//! - Every byte from the client is attacker-controlled: no input panics, every failure is a
//!   JSON-RPC error with the status the spec fixes ([`error`]).
//! - No AWS here. Adapters (Lambda, the local gateway) turn their events into
//!   `http::Request<Bytes>` and call [`McpServer::handle`].

#![warn(missing_docs)]

pub mod auth;
pub mod author;
pub mod authority;
pub mod card;
pub mod clock;
pub mod cursor;
pub mod error;
pub mod headers;
pub mod ladder;
pub mod legacy;
pub mod manifest;
pub mod method;
pub mod notify;
pub mod observe;
pub mod pages;
pub mod ports;
pub mod quota;
pub mod registry;
pub mod schema;
pub mod seal;
pub mod server;
pub mod settings;
pub mod tasks;
pub mod wire;

pub use auth::{AuthChallenge, Authenticator, NoAuth, Principal};
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{McpError, Retry, store_failure};
pub use ladder::OriginPolicy;
pub use method::{Method, Route};
pub use notify::Notifier;
pub use observe::RequestIds;

pub use pages::{
    CallerFuture, PageFuture, PageGate, PageSession, PageSessionError, PageSessions, Pages,
};
pub use ports::{AppBuilder, Ports};
pub use registry::{
    App, CachePolicy, Call, ClientContext, ElicitAction, ElicitAnswer, Handler, InputRequest,
    Outcome, Prompt, PromptArgument, RegisteredSkill, Resource, ResourceTemplate, Skill,
    TaskAccess, Tool, WatchRecord, Who, handler,
};
pub use seal::{KeyError, KeyRing};
pub use server::{
    Deadline, MAX_WATCHED, MAX_WATCHED_TASKS, McpServer, Reply, ReplyBody, ServerConfig,
};
pub use settings::{Settings, SettingsError, origin_policy};
pub use tasks::{TaskSupport, ToolTaskRunner};
