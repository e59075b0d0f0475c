//! What a handler returns: a complete result, an `input_required`, or a created task.

use std::collections::BTreeMap;

use serde_json::Value;

use super::InputRequest;
use crate::wire::{self, CallToolResult, GetPromptResult, JsonObject, ResourceContents};

/// What a handler returns.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The method's result object, without `resultType` (the server adds it).
    Complete(JsonObject),
    /// Ask the client for input; `state` is sealed into `requestState` and comes back verified.
    InputRequired {
        /// What to ask, by the key its answer comes back under.
        requests: BTreeMap<String, InputRequest>,
        /// The handler's state for the next round (sealed by the server).
        state: Option<Value>,
    },
    /// The work continues as a task (only for `tools/call`, only when the client declared the
    /// Tasks extension): the job is already durably created.
    TaskCreated(Box<relevo_state::Job>),
}

impl Outcome {
    /// A complete `tools/call` result.
    pub fn tool(result: CallToolResult) -> Self {
        let mut object = wire::to_object(&result);
        object.remove("resultType");
        Outcome::Complete(object)
    }

    /// A tool execution error (`isError: true`) with one text block: input validation and
    /// business failures, as the spec asks, not JSON-RPC errors.
    pub fn tool_error(message: impl Into<String>) -> Self {
        Outcome::tool(CallToolResult::error(vec![wire::ContentBlock::text(
            message.into(),
        )]))
    }

    /// A complete `prompts/get` result.
    pub fn prompt(result: GetPromptResult) -> Self {
        let mut object = wire::to_object(&result);
        object.remove("resultType");
        Outcome::Complete(object)
    }

    /// A complete `resources/read` result: the contents.
    pub fn contents(contents: Vec<ResourceContents>) -> Self {
        let mut object = JsonObject::new();
        object.insert(
            "contents".into(),
            serde_json::to_value(contents).unwrap_or(Value::Null),
        );
        Outcome::Complete(object)
    }

    /// Asks for one input, optionally carrying state to the next round.
    pub fn ask(key: &str, request: InputRequest, state: Option<Value>) -> Self {
        Outcome::InputRequired {
            requests: BTreeMap::from([(key.to_string(), request)]),
            state,
        }
    }
}
