//! What a handler gets for one call: the arguments, the answers and the verified state of an
//! MRTR retry, the client's declared capabilities and the verified caller.

use serde_json::Value;

use super::{ElicitAnswer, InputRequest, Outcome};
use crate::auth::Principal;
use crate::author::RoundLedger;
use crate::notify::Notifier;
use crate::wire::JsonObject;

/// What the client declared on this request.
#[derive(Debug, Clone, Default)]
pub struct ClientContext {
    /// The protocol revision the request named.
    pub protocol_version: String,
    /// The client capabilities it declared.
    pub capabilities: JsonObject,
    /// Its `clientInfo`, if sent.
    pub info: Option<Value>,
}

impl ClientContext {
    /// True when the client declared the capability (a top-level key such as `sampling`).
    pub fn declares(&self, capability: &str) -> bool {
        self.capabilities
            .get(capability)
            .is_some_and(Value::is_object)
    }

    /// True when the client can answer this input request on this request.
    pub fn can_answer(&self, request: &InputRequest) -> bool {
        match request {
            InputRequest::Elicit { url: false, .. } => self
                .capabilities
                .get("elicitation")
                .and_then(Value::as_object)
                .is_some_and(|e| e.contains_key("form") || !e.contains_key("url")),
            InputRequest::Elicit { url: true, .. } => self
                .capabilities
                .get("elicitation")
                .and_then(Value::as_object)
                .is_some_and(|e| e.contains_key("url")),
            InputRequest::Sample(_) => self.declares("sampling"),
            InputRequest::ListRoots => self.declares("roots"),
        }
    }
}

/// Everything a handler gets for one call.
#[derive(Debug, Clone)]
pub struct Call {
    /// Tool arguments, or prompt arguments (string values); empty for resources.
    pub arguments: JsonObject,
    /// The resource URI for `resources/read`.
    pub uri: Option<String>,
    /// `inputResponses` of a retry, empty on the first round.
    pub input_responses: JsonObject,
    /// The verified payload of `requestState`, if the client echoed one.
    pub state: Option<Value>,
    /// What the client declared on this request.
    pub client: ClientContext,
    /// The verified caller: key every record by its tenant (and subject, if personal).
    pub principal: Principal,
    /// Progress and log notifications, and whether the client cancelled.
    pub notifier: Notifier,
    /// Where the answers of this retry's elicitation round are recorded (one answer per round);
    /// `None` without a store, and for a tool's round the server claimed (its record holds the
    /// answer: [`crate::author::rounds`]).
    pub answers: Option<RoundLedger>,
    /// The server's job engine, which tools start and read jobs through
    /// ([`crate::author::ToolContext::start_job`]); `None` without a store.
    pub jobs: Option<crate::author::Jobs>,
}

impl Call {
    /// Deserializes the arguments; a mismatch is a tool execution error the model can read.
    pub fn args<T: serde::de::DeserializeOwned>(&self) -> Result<T, Outcome> {
        serde_json::from_value(Value::Object(self.arguments.clone()))
            .map_err(|e| Outcome::tool_error(format!("Invalid arguments: {e}")))
    }

    /// The answer to elicitation `key`, if present and well-formed.
    pub fn elicitation(&self, key: &str) -> Option<ElicitAnswer> {
        self.input_responses
            .get(key)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// The raw answer under `key`, if present.
    pub fn input(&self, key: &str) -> Option<&Value> {
        self.input_responses.get(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn form_elicitation_needs_form_capability_and_url_needs_url() {
        let form = InputRequest::form("name?", json!({"type": "object"}));
        let url = InputRequest::url("pay", "https://example.com/pay");
        let client = |caps: Value| ClientContext {
            capabilities: caps.as_object().cloned().unwrap(),
            ..Default::default()
        };
        assert!(client(json!({"elicitation": {}})).can_answer(&form));
        assert!(!client(json!({"elicitation": {}})).can_answer(&url));
        assert!(!client(json!({"elicitation": {"url": {}}})).can_answer(&form));
        assert!(client(json!({"elicitation": {"url": {}, "form": {}}})).can_answer(&url));
        assert!(!client(json!({})).can_answer(&InputRequest::ListRoots));
    }
}
