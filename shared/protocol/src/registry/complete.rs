//! Completion candidates for `completion/complete`: a static list, or a function of what the
//! user typed and of the arguments already resolved.
//!
//! MCP 2026-07-28, "Completion": a request names a prompt argument or a template variable,
//! its partial `value`, and `context.arguments` (the values the client already resolved for
//! the others); the answer holds at most 100 `values`, an optional `total` and `hasMore`.
//!
//! Work linear in the input: the typed value is compared by prefix with each candidate of a
//! static list (the operator's), once; a completion function gets it as is.
//!
//! Invariants:
//! - A static list ([`PromptArgument::completions`](super::PromptArgument::completions),
//!   [`ResourceTemplate::complete`](super::ResourceTemplate::complete)) answers the candidates
//!   that start with the typed value, in their declared order.
//! - A function ([`completer`]) answers its own candidates, in its own order (it may match
//!   fuzzily, as the spec suggests); the server never lets more than [`MAX_COMPLETIONS`]
//!   values out, and then says `hasMore: true` with a `total` of at least what it was given.
//! - A function runs only after the guard let the caller reach the prompt or template, and it
//!   gets the caller ([`CompletionRequest::principal`]): a function that reads per-caller data
//!   keys it by that caller, so completions disclose nothing the caller could not read.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use serde_json::{Value, json};

use super::BoxFuture;
use crate::auth::Principal;
use crate::author::ToolError;
use crate::error::McpError;

/// The most values one `completion/complete` answer carries (the spec's limit).
pub const MAX_COMPLETIONS: usize = 100;

/// What a completion function is asked.
#[derive(Debug, Clone)]
pub struct CompletionRequest {
    /// The prompt argument or template variable being completed.
    pub argument: String,
    /// What the user has typed so far (`argument.value`).
    pub value: String,
    /// The values already resolved for the other arguments (`context.arguments`), by name.
    pub context: BTreeMap<String, String>,
    /// Who asks (the guard has let them reach the prompt or template).
    pub principal: Principal,
}

/// A completion function's answer: its candidates, best first, and how many there are in all.
///
/// A `Vec<String>` converts into one ([`From`]): all there is, `total` its length.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    /// The candidates, best first; only the first [`MAX_COMPLETIONS`] are sent.
    pub values: Vec<String>,
    /// How many candidates there are in all, when known and more than `values` holds.
    pub total: Option<usize>,
    /// Whether there are candidates beyond `values`.
    pub has_more: bool,
}

impl From<Vec<String>> for Completion {
    fn from(values: Vec<String>) -> Self {
        Completion {
            values,
            total: None,
            has_more: false,
        }
    }
}

impl Completion {
    /// The `completion` object of the result: at most [`MAX_COMPLETIONS`] values, `total` at
    /// least the number of values given, `hasMore` when any were held back.
    pub fn to_wire(&self) -> Value {
        let given = self.values.len();
        let shown = given.min(MAX_COMPLETIONS);
        let total = self.total.unwrap_or(given).max(given);
        let values = &self.values[..shown];
        json!({ "values": values, "total": total, "hasMore": self.has_more || total > shown })
    }

    /// The candidates of a static list that start with `prefix`.
    pub(crate) fn prefixed(candidates: &[String], prefix: &str) -> Self {
        candidates
            .iter()
            .filter(|c| c.starts_with(prefix))
            .cloned()
            .collect::<Vec<_>>()
            .into()
    }
}

/// Where the candidates of one argument come from, once the guard found it.
pub(crate) enum Candidates {
    /// A static list, filtered by prefix.
    List(Vec<String>),
    /// A function of the request.
    Function(CompleteFn),
}

/// A completion function: what the user typed and the resolved arguments in, candidates out.
pub type CompleteFn =
    Arc<dyn Fn(CompletionRequest) -> BoxFuture<Result<Completion, McpError>> + Send + Sync>;

/// Wraps an async function as a [`CompleteFn`]. Its error says whose fault it is, as a
/// handler's does: [`ToolError::Caller`] answers `-32602` with its text, an internal error
/// `-32603` (logged, not shown).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use relevo_protocol::author::ToolError;
/// use relevo_protocol::registry::{CompletionRequest, completer};
/// use relevo_protocol::Principal;
///
/// // Frameworks by language: the candidates depend on the `language` already chosen.
/// let frameworks = completer(|request: CompletionRequest| async move {
///     let all: &[&str] = match request.context.get("language").map(String::as_str) {
///         Some("python") => &["flask", "fastapi", "django"],
///         Some("rust") => &["axum", "actix-web"],
///         _ => &[],
///     };
///     let matching = all.iter().filter(|f| f.starts_with(&request.value));
///     Ok::<_, ToolError>(matching.map(|f| f.to_string()).collect::<Vec<_>>())
/// });
///
/// let request = CompletionRequest {
///     argument: "framework".into(),
///     value: "fa".into(),
///     context: [("language".to_string(), "python".to_string())].into(),
///     principal: Principal::new("acme", "ada", Vec::<String>::new()),
/// };
/// let answer = frameworks(request).await.expect("candidates");
/// assert_eq!(answer.values, ["fastapi"]);
/// # }
/// ```
pub fn completer<F, Fut, C>(complete: F) -> CompleteFn
where
    F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<C, ToolError>> + Send + 'static,
    C: Into<Completion>,
{
    Arc::new(move |request: CompletionRequest| {
        let target = request.argument.clone();
        let answer = complete(request);
        Box::pin(async move {
            answer
                .await
                .map(Into::into)
                .map_err(|error| error.into_protocol_error(&target))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_than_a_hundred_values_are_cut_and_said_to_be_more() {
        let values: Vec<String> = (0..150).map(|i| format!("v{i}")).collect();
        let wire = Completion::from(values).to_wire();
        assert_eq!(
            wire["values"].as_array().map(Vec::len),
            Some(MAX_COMPLETIONS)
        );
        assert_eq!(wire["total"], 150);
        assert_eq!(wire["hasMore"], true);
        let few = Completion::prefixed(&["paris".into(), "park".into(), "rome".into()], "par");
        assert_eq!(
            few.to_wire(),
            json!({ "values": ["paris", "park"], "total": 2, "hasMore": false })
        );
    }
}
