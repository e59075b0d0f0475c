//! One answer per elicitation round: a person's decline is as final as their accept.
//!
//! Every `input_required` a typed handler asks ([`crate::author::ToolContext::ask`]) seals a fresh
//! round id into its `requestState`. When a retry brings answers to that round, the framework
//! records each answer (its action and a digest of its content) before the handler runs, with one
//! conditional create keyed by the caller (tenant and subject), the round id and the question's
//! key, expiring no earlier than the `requestState` it answers.
//!
//! Invariants:
//! - The first answer to a round is the only one: a replay of the same `requestState` with
//!   another answer is refused on every instance sharing the store (`-32602`, reason
//!   `round_already_answered`), before the handler runs, so it has no effect.
//! - The same answer again runs the handler again: it gets the same result when the handler's
//!   effect is keyed by its intent (the example shop's order is keyed by its cart), which every handler
//!   that acts on an answer must be (a crash between the record and the effect is completed by a
//!   replay of the same answer).
//! - The record is written before the handler can act on the answer, so two different answers
//!   racing for one round cannot both act: one create wins, the other reads it and is refused.
//! - A store that fails or is contended answers a retryable error and the handler does not run.
//!
//! Threat model: a client (or anyone holding a copy of the `requestState`, which is bound to
//! tenant, principal, method, target and arguments) replays a round to turn a decline into an
//! accept, or races two answers. Without a store (a server built without
//! [`crate::McpServer::with_store`]) nothing is recorded: the `requestState` stays sealed, bound
//! and expiring, but a replay with another answer is served as that answer until it expires.
//! Tasks record their answers in their job (`tasks/input_response`), not here.

use std::sync::Arc;

use relevo_state::{Owner, RecordKey, RecordStore, StoreError, canonical_digest};
use serde_json::{Value, json};

use super::error::ToolError;
use crate::error::McpError;

/// The record kind that holds one round's answer to one question.
pub const ROUND_ANSWER_KIND: &str = "round-answer";

/// Where answers to elicitation rounds are recorded for one request: the deployment's store, the
/// request's time and the `requestState` lifetime.
#[derive(Clone)]
pub struct RoundLedger {
    store: Arc<dyn RecordStore>,
    now: u64,
    ttl_secs: u64,
}

impl std::fmt::Debug for RoundLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoundLedger")
            .field("now", &self.now)
            .field("ttl_secs", &self.ttl_secs)
            .finish()
    }
}

impl RoundLedger {
    /// Answers recorded in `store`, at `now`, kept `ttl_secs` (the `requestState` lifetime: a
    /// round's state was sealed no later than now, so it expires no later than the record).
    pub fn new(store: Arc<dyn RecordStore>, now: u64, ttl_secs: u64) -> Self {
        RoundLedger {
            store,
            now,
            ttl_secs,
        }
    }

    /// Records `answer` as the one answer of `round` to question `key` for `owner`, or finds the
    /// same answer recorded before; another answer recorded first is refused.
    pub(crate) async fn settle(
        &self,
        owner: Owner,
        round: &str,
        key: &str,
        answer: &Value,
    ) -> Result<(), ToolError> {
        let digest = answer_digest(answer);
        let record = RecordKey::new(owner, ROUND_ANSWER_KIND, &format!("{round}:{key}"));
        let body = json!({ "action": answer.get("action").cloned().unwrap_or(Value::Null), "answer": digest });
        match self
            .store
            .create(&record, &body, Some(self.now + self.ttl_secs), self.now)
            .await
        {
            Ok(_) => Ok(()),
            Err(StoreError::AlreadyExists(first)) if first.body["answer"] == digest.as_str() => {
                Ok(())
            }
            Err(StoreError::AlreadyExists(first)) => {
                Err(already_answered(key, &first.body["action"]))
            }
            Err(other) => Err(other.into()),
        }
    }
}

/// The digest of what an answer says: its action and its content (whatever else it carries).
fn answer_digest(answer: &Value) -> String {
    canonical_digest(&json!({
        "action": answer.get("action").cloned().unwrap_or(Value::Null),
        "content": answer.get("content").cloned().unwrap_or(Value::Null),
    }))
}

fn already_answered(key: &str, first_action: &Value) -> ToolError {
    let first = first_action.as_str().unwrap_or("another answer");
    ToolError::Server(McpError::invalid_params_with(
        format!(
            "The input request {key:?} of this round was already answered ({first}); a round takes one answer"
        ),
        json!({ "reason": "round_already_answered", "key": key, "answered": first }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_its_action_and_content_only() {
        let accept = json!({ "action": "accept", "content": { "confirm": true } });
        let same =
            json!({ "content": { "confirm": true }, "action": "accept", "_meta": { "x": 1 } });
        let other = json!({ "action": "accept", "content": { "confirm": false } });
        let decline = json!({ "action": "decline" });
        assert_eq!(answer_digest(&accept), answer_digest(&same));
        assert_ne!(answer_digest(&accept), answer_digest(&other));
        assert_ne!(answer_digest(&accept), answer_digest(&decline));
    }

    #[test]
    fn a_refusal_is_invalid_params_that_says_why() {
        let ToolError::Server(error) = already_answered("confirm", &json!("decline")) else {
            panic!("a server error")
        };
        assert_eq!(error.code(), -32602);
        assert_eq!(error.data().unwrap()["reason"], "round_already_answered");
    }
}
