//! The apps a Relevo server can serve, chosen by name at start (`APP=conformance make run`).
//!
//! Apps are plain registries of tools, resources and prompts over `relevo-protocol`; they know
//! nothing of HTTP, Lambda or AWS.

pub mod conformance;
pub mod demo;

use relevo_protocol::App;

#[derive(Debug, thiserror::Error)]
#[error("unknown app {0:?}: expected one of {APP_NAMES:?}")]
pub struct UnknownApp(pub String);

pub const APP_NAMES: &[&str] = &["demo", "conformance"];

/// The app called `name`.
pub fn build(name: &str) -> Result<App, UnknownApp> {
    match name {
        "demo" => Ok(demo::app()),
        "conformance" => Ok(conformance::app()),
        other => Err(UnknownApp(other.to_string())),
    }
}
