//! What a handler may ask of the client in an `input_required` result (MRTR), and the answers.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::wire::JsonObject;

/// One request a server may put in `inputRequests`.
#[derive(Debug, Clone, PartialEq)]
pub enum InputRequest {
    /// `elicitation/create`; `url` selects URL mode (else form mode).
    Elicit {
        /// The request's `params`.
        params: Value,
        /// URL mode.
        url: bool,
    },
    /// `sampling/createMessage` (deprecated in 2026-07-28, still allowed).
    Sample(Value),
    /// `roots/list` (deprecated in 2026-07-28, still allowed).
    ListRoots,
}

impl InputRequest {
    /// A form-mode elicitation: a message and a flat object schema.
    pub fn form(message: &str, requested_schema: Value) -> Self {
        InputRequest::Elicit {
            params: json!({ "mode": "form", "message": message, "requestedSchema": requested_schema }),
            url: false,
        }
    }

    /// A URL-mode elicitation.
    pub fn url(message: &str, url: &str) -> Self {
        InputRequest::Elicit {
            params: json!({ "mode": "url", "message": message, "url": url }),
            url: true,
        }
    }

    /// A sampling request with one user text message.
    pub fn sample_text(prompt: &str, max_tokens: u32) -> Self {
        InputRequest::Sample(json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
            "maxTokens": max_tokens
        }))
    }

    /// The capability object a client must declare for this request, for `-32021`.
    pub fn required_capability(&self) -> Value {
        match self {
            InputRequest::Elicit { url: false, .. } => json!({ "elicitation": {} }),
            InputRequest::Elicit { url: true, .. } => json!({ "elicitation": { "url": {} } }),
            InputRequest::Sample(_) => json!({ "sampling": {} }),
            InputRequest::ListRoots => json!({ "roots": {} }),
        }
    }

    /// The request as it travels in `inputRequests`: its `method` and `params`.
    pub fn to_wire(&self) -> Value {
        match self {
            InputRequest::Elicit { params, .. } => {
                json!({ "method": "elicitation/create", "params": params })
            }
            InputRequest::Sample(params) => {
                json!({ "method": "sampling/createMessage", "params": params })
            }
            InputRequest::ListRoots => json!({ "method": "roots/list", "params": {} }),
        }
    }
}

/// A client's answer to an elicitation, as it arrived in `inputResponses`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ElicitAnswer {
    /// What the user did.
    pub action: ElicitAction,
    /// The form's content, on `accept`.
    #[serde(default)]
    pub content: Option<JsonObject>,
}

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted the form.
    Accept,
    /// Said no.
    Decline,
    /// Dismissed it without choosing.
    Cancel,
}
