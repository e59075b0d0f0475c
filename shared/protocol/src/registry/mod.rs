//! What an app author writes: tools, resources, resource templates and prompts, each a spec
//! plus a handler. Listing needs only the specs; calling runs the handler with a [`Call`].
//!
//! Handlers know nothing of HTTP or AWS. They return an [`Outcome`]: a complete result, or an
//! `input_required` asking the client for input (MRTR) with optional state that the server seals
//! before it leaves the process. Everything a handler needs across rounds comes back in
//! [`Call::state`], verified; nothing is kept in memory between requests.
//!
//! A resource or template may also declare the record its content is read from
//! (`.watch(…)`, [`WatchRecord`]): a `subscriptions/listen` stream then polls it in one batch read
//! with the stream's other declared records, and runs no handler for it. Invariant: a watch
//! key derives only from the caller's tenant and subject ([`Who`]) and the template's typed URI
//! variables, and names one of the caller's own records (anything else is not read).
//!
//! Each item (and the app itself, as the server's `Implementation`) may carry display metadata,
//! `title` and `icons`; tools, prompts, resources and templates may carry a `_meta` object.
//! They are listed as declared and left out when not declared (never `null`); registration
//! checks icon sources and `_meta` keys ([`rules`]).

mod app;
pub mod apps;
mod call;
mod complete;
mod input;
mod outcome;
mod output;
mod prompt;
mod resource;
pub mod rules;
pub mod skill;
mod template;
mod tool;
pub(crate) mod uri_template;
mod watch;

pub use app::{App, TaskAccess};
pub use call::{Call, ClientContext};
pub(crate) use complete::Candidates;
pub use complete::{CompleteFn, Completion, CompletionRequest, MAX_COMPLETIONS, completer};
pub use input::{ElicitAction, ElicitAnswer, InputRequest};
pub use outcome::Outcome;
pub use output::OutputCheck;
pub use prompt::{Prompt, PromptArgument};
pub use resource::Resource;
pub use skill::{RegisteredSkill, Skill, SkillFile};
pub use template::ResourceTemplate;
pub use tool::{CachePolicy, Schema, Tool};
pub use watch::{WatchRecord, Who};

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::error::McpError;
use crate::wire::{Icon, JsonObject};

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
/// An untyped handler: a call in, an outcome (or a protocol error) out.
pub type Handler = Arc<dyn Fn(Call) -> BoxFuture<Result<Outcome, McpError>> + Send + Sync>;

/// Wraps an async closure as a [`Handler`].
pub fn handler<F, Fut>(f: F) -> Handler
where
    F: Fn(Call) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Outcome, McpError>> + Send + 'static,
{
    Arc::new(move |call| Box::pin(f(call)))
}

pub(crate) fn owned(scopes: &[&str]) -> Vec<String> {
    scopes.iter().map(|s| s.to_string()).collect()
}

pub(crate) fn insert_some(target: &mut Value, key: &str, value: &Option<String>) {
    if let Some(value) = value {
        target[key] = json!(value);
    }
}

/// Sets `icons` on a listed item when it has any.
pub(crate) fn insert_icons(target: &mut Value, icons: &[Icon]) {
    if icons.is_empty() {
        return;
    }
    if let Ok(icons) = serde_json::to_value(icons) {
        target["icons"] = icons;
    }
}

/// Sets `_meta` on a listed item when it declares any key.
pub(crate) fn insert_meta(target: &mut Value, meta: &JsonObject) {
    if !meta.is_empty() {
        target["_meta"] = Value::Object(meta.clone());
    }
}
