//! Elicitation rounds: one answer per round, and one run per round.
//!
//! A round is one `requestState` the server sealed into an `input_required` result, and its
//! answer is the `inputResponses` the client's retry brings to it.
//!
//! **One run per round** (tools): a `tools/call` retry that carries a verified `requestState`
//! runs the tool at most once for that state, on every instance sharing the store, and every
//! replay of it is answered from the record, never by running the tool again. The server keeps
//! one record per round ([`ROUND_OUTCOME_KIND`]), keyed by the caller (tenant and subject), the
//! tool and the SHA-256 of the `requestState` (a fresh nonce is sealed in each one, so two rounds
//! never share a key), expiring with the `requestState` itself:
//! 1. before the tool runs, one conditional create (insert if absent) claims the round: a
//!    `pending` record holding the digest of the answer (each asked key's action and content)
//!    and a lease (the request's deadline; 15 minutes without one);
//! 2. the tool runs;
//! 3. one conditional update of the claimed revision records what it answered: its result (or
//!    its next `input_required`) and `resultType`, or the JSON-RPC error it ended with.
//!
//! What a retry of the same round meets:
//! - the outcome recorded (`done`): the recorded result, the tool not run; the answer is the
//!   first one's, byte for byte, except the JSON-RPC `id`;
//! - another answer recorded first (in any state): refused, `-32602` with `data.reason`
//!   `round_already_answered` — the first answer wins, and a used round takes no other;
//! - the round still `pending` (another request is running it): after a short bounded wait for
//!   its record, the retryable `-31000` (HTTP 503, `Retry-After`) with `data.reason`
//!   `round_in_progress`; nothing ran;
//! - `pending` past its lease (the request that claimed it crashed, was killed, or could not
//!   record its outcome): `-32602` `round_interrupted`. Whether the tool acted is unknown, so it
//!   never runs again for this state; the client starts the call anew (a first round, without
//!   `requestState`), where the tool sees what the interrupted run left;
//! - the run ended with a JSON-RPC error (`failed`; a deadline or a store failure inside the
//!   tool included, since the tool may have acted before it): `-32602` `round_failed`, with the
//!   first error's code; it does not run again;
//! - a result over [`MAX_RECORDED_RESULT_BYTES`] (serialized) is answered to the request that
//!   ran it but not kept: a replay is `-32602` `round_result_too_large`, never a second run;
//! - an expired (or tampered, or foreign) `requestState` is refused before any of this, as
//!   before (`invalid_request_state`); the record expires with it.
//!
//! A store failure on the claim answers a retryable error and runs nothing (a claim whose create
//! timed out is read back: if it landed, this request holds it). A store failure on the record
//! still answers the tool's result; the round then reads `pending` until its lease ends, and
//! `round_interrupted` after. Cost: one conditional create and one conditional update per final
//! round; replays cost one read. Without a store ([`crate::McpServer::with_store`]) nothing is
//! recorded and a replay runs the tool again, as a 2025-11-25 call (no `requestState`) does.
//!
//! **One answer per round** (prompts and resources, and tools without the round record): every
//! `input_required` a typed handler asks ([`crate::author::ToolContext::ask`]) seals a fresh
//! round id into its `requestState`. When a retry brings answers to that round, the framework
//! records each answer (its action and a digest of its content) before the handler runs, with one
//! conditional create keyed by the caller (tenant and subject), the round id and the question's
//! key, expiring no earlier than the `requestState` it answers.
//!
//! Invariants:
//! - The first answer to a round is the only one: a replay of the same `requestState` with
//!   another answer is refused on every instance sharing the store (`-32602`, reason
//!   `round_already_answered`), before the handler runs, so it has no effect.
//! - A tool runs once per round: the same answer again gets the recorded outcome (above). A
//!   prompt or resource read (no effects) runs again and gets the same result.
//! - The record is written before the handler can act on the answer, so two answers racing for
//!   one round cannot both act: one create wins, the other reads it and is refused (another
//!   answer) or waits for its outcome (the same answer).
//! - A store that fails or is contended answers a retryable error and the handler does not run.
//!
//! Threat model: a client (or anyone holding a copy of the `requestState`, which is bound to
//! tenant, principal, method, target and arguments) replays a round to turn a decline into an
//! accept, races two answers, or retries a confirmation to make its effect happen twice. Without
//! a store nothing is recorded: the `requestState` stays sealed, bound and expiring, but a replay
//! is served as a new answer until it expires. Tasks record their answers in their job
//! (`tasks/input_response`), not here.

use std::sync::Arc;

use relevo_state::{
    Ids, Owner, RandomIds, Record, RecordKey, RecordStore, StoreError, canonical_digest,
    contention, sha256_hex,
};
use serde_json::{Value, json};

use super::error::ToolError;
use crate::error::{McpError, Retry, store_failure};
use crate::wire::JsonObject;

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

/// The record kind that holds the outcome of one round of a tool call.
pub const ROUND_OUTCOME_KIND: &str = "round-outcome";

/// The largest result (its JSON) a round's record keeps for replays: well inside a DynamoDB
/// item (400 KB, with the key and the other attributes). A larger result is answered once and
/// not kept; a replay of its round is refused (`round_result_too_large`), never run again.
pub const MAX_RECORDED_RESULT_BYTES: usize = 256 * 1024;

/// How long a claim holds a round when the request has no deadline (a Lambda function's
/// longest timeout): past it, a replay that finds the round still pending is told it was
/// interrupted.
pub const DEFAULT_ROUND_LEASE_SECS: u64 = 900;

/// How many times a replay that finds its round running reads the record again (with growing
/// pauses, about 130 ms in all) before it answers `round_in_progress`.
const WAIT_ATTEMPTS: u32 = 8;

/// One round of a tool call, as the server verified it.
pub(crate) struct RoundRef<'a> {
    pub tenant: &'a str,
    pub subject: &'a str,
    pub tool: &'a str,
    /// The `requestState` as the client sent it (verified).
    pub token: &'a str,
    /// When the `requestState` expires (unix seconds): the record expires with it.
    pub expires_at: u64,
    /// The keys the round asked, as sealed; `None` for a state sealed without them.
    pub asked: Option<Vec<String>>,
    pub responses: &'a JsonObject,
}

/// What a request that carries a round does.
pub(crate) enum Claim {
    /// This request holds the round: run the tool, then [`RoundClaim::record`] its outcome.
    Run(RoundClaim),
    /// The round's outcome, recorded by the request that ran it: its result and `resultType`.
    Replay(JsonObject, String),
}

/// A round this request claimed; recording its outcome is the claim's last write.
pub(crate) struct RoundClaim {
    store: Arc<dyn RecordStore>,
    key: RecordKey,
    answer: String,
    revision: u64,
    now: u64,
}

impl std::fmt::Debug for RoundClaim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoundClaim")
            .field("key", &self.key)
            .field("revision", &self.revision)
            .finish()
    }
}

/// Claims `round` for this request (one conditional create of a `pending` record), or answers
/// it from its record: see the module's documentation for each case.
pub(crate) async fn claim_round(
    store: Arc<dyn RecordStore>,
    round: RoundRef<'_>,
    lease_until: u64,
    now: u64,
) -> Result<Claim, McpError> {
    let key = RecordKey::new(
        Owner::personal(round.tenant, round.subject),
        ROUND_OUTCOME_KIND,
        &format!("{}:{}", round.tool, sha256_hex(round.token.as_bytes())),
    );
    let answer = responses_digest(round.responses, round.asked.as_deref());
    let claim_id = RandomIds.new_id();
    let pending = json!({
        "status": "pending", "answer": answer, "until": lease_until.min(round.expires_at), "claim": claim_id,
    });
    let claimed = |revision| {
        Claim::Run(RoundClaim {
            store: store.clone(),
            key: key.clone(),
            answer: answer.clone(),
            revision,
            now,
        })
    };
    let failure = store_failure("round outcome");
    let mut found = match store
        .create(&key, &pending, Some(round.expires_at), now)
        .await
    {
        Ok(record) => return Ok(claimed(record.revision)),
        Err(StoreError::AlreadyExists(found)) => *found,
        // The create may have landed: read it back, and hold the claim if it is this one.
        Err(StoreError::TimedOut(cause)) => match store.get(&key, now).await {
            Ok(Some(record)) if record.body["claim"] == claim_id.as_str() => {
                return Ok(claimed(record.revision));
            }
            Ok(Some(record)) => record,
            Ok(None) | Err(_) => return Err(failure(StoreError::TimedOut(cause))),
        },
        Err(other) => return Err(failure(other)),
    };
    for attempt in 1..=WAIT_ATTEMPTS {
        if let Some(replay) = answer_from(&found, &answer, now)? {
            return Ok(replay);
        }
        if attempt == WAIT_ATTEMPTS {
            break;
        }
        contention::pause(attempt).await;
        found = match store.get(&key, now).await {
            Ok(Some(record)) => record,
            // Nothing deletes a round's record: gone, it expired with its requestState.
            Ok(None) => return Err(expired_round()),
            Err(error) => return Err(failure(error)),
        };
    }
    tracing::info!(
        cause = "round_in_progress",
        "a replay found its round running: answered retryable"
    );
    Err(McpError::Retryable(Retry::RoundInProgress))
}

/// What a round's record answers to a request with `answer`: a replay, a refusal, or `None`
/// while it is running within its lease.
fn answer_from(found: &Record, answer: &str, now: u64) -> Result<Option<Claim>, McpError> {
    let body = &found.body;
    if body["answer"] != answer {
        return Err(round_refusal(
            "This round (its requestState) was already answered with another answer; a round takes one answer, the first",
            "round_already_answered",
            json!({}),
        ));
    }
    match body["status"].as_str() {
        Some("done") => {
            let result = body["result"].as_object().cloned().unwrap_or_default();
            let result_type = body["resultType"]
                .as_str()
                .unwrap_or("complete")
                .to_string();
            Ok(Some(Claim::Replay(result, result_type)))
        }
        Some("pending") if body["until"].as_u64().is_some_and(|until| now < until) => Ok(None),
        Some("unrecorded") => Err(round_refusal(
            &format!(
                "This round already ran; its result ({} bytes) was over the {MAX_RECORDED_RESULT_BYTES} bytes kept for a replay, and the tool does not run twice for one round: call the tool anew, without requestState",
                body["bytes"]
            ),
            "round_result_too_large",
            json!({ "bytes": body["bytes"], "limit": MAX_RECORDED_RESULT_BYTES }),
        )),
        Some("failed") => Err(round_refusal(
            &format!(
                "This round already ran and ended with error {} ({}); the tool does not run twice for one round: call the tool anew, without requestState",
                body["error"]["code"],
                body["error"]["message"].as_str().unwrap_or("")
            ),
            "round_failed",
            json!({ "code": body["error"]["code"] }),
        )),
        // Pending past its lease, interrupted, or a status this version does not know.
        _ => Err(round_refusal(
            "This round (its requestState) was taken by a request that ended without recording an outcome; whether the tool acted is unknown, and it does not run twice for one round: call the tool anew, without requestState",
            "round_interrupted",
            json!({}),
        )),
    }
}

impl RoundClaim {
    /// Records the round's outcome (a result and its `resultType`, or the error it ended with)
    /// with one conditional update of the claimed revision. A failure is logged, not answered:
    /// the caller still gets the outcome, and the round reads `pending` until its lease ends.
    pub(crate) async fn record(&self, outcome: &Result<(JsonObject, &'static str), McpError>) {
        let body = match outcome {
            Ok((result, result_type)) => {
                let bytes = serde_json::to_vec(result).map_or(usize::MAX, |json| json.len());
                if bytes > MAX_RECORDED_RESULT_BYTES {
                    tracing::warn!(
                        bytes,
                        limit = MAX_RECORDED_RESULT_BYTES,
                        "a round's result is too large to keep: a replay of the round is refused"
                    );
                    json!({ "status": "unrecorded", "answer": self.answer, "bytes": bytes })
                } else {
                    json!({ "status": "done", "answer": self.answer, "resultType": result_type, "result": result })
                }
            }
            Err(error) => json!({
                "status": "failed", "answer": self.answer,
                "error": { "code": error.code(), "message": error.to_string() },
            }),
        };
        self.write(&body).await;
    }

    /// Records that the round's request stopped before an outcome (the client cancelled it).
    pub(crate) async fn abandon(&self) {
        let body = json!({ "status": "interrupted", "answer": self.answer });
        self.write(&body).await;
    }

    async fn write(&self, body: &Value) {
        if let Err(error) = self
            .store
            .update(&self.key, self.revision, body, self.now)
            .await
        {
            tracing::warn!(%error, "a round's outcome was not recorded: its replays are refused after its lease");
        }
    }
}

/// The digest of a round's answers: each asked key's answer (an elicitation's action and
/// content, any other answer whole but its `_meta`); keys the round did not ask are ignored (the
/// spec's "unknown extra inputResponses keys SHOULD be ignored"). A state sealed without its
/// keys digests every answer.
fn responses_digest(responses: &JsonObject, asked: Option<&[String]>) -> String {
    let answer_of = |value: &Value| match value {
        Value::Object(object) if object.contains_key("action") => answer_digest(value),
        Value::Object(object) => {
            let mut object = object.clone();
            object.remove("_meta");
            canonical_digest(&Value::Object(object))
        }
        other => canonical_digest(other),
    };
    let digests: JsonObject = match asked {
        Some(keys) => keys
            .iter()
            .map(|key| {
                (
                    key.clone(),
                    responses
                        .get(key)
                        .map_or(Value::Null, |v| json!(answer_of(v))),
                )
            })
            .collect(),
        None => responses
            .iter()
            .map(|(key, value)| (key.clone(), json!(answer_of(value))))
            .collect(),
    };
    canonical_digest(&Value::Object(digests))
}

fn round_refusal(message: &str, reason: &str, mut data: Value) -> McpError {
    data["reason"] = json!(reason);
    McpError::invalid_params_with(message, data)
}

fn expired_round() -> McpError {
    McpError::invalid_params_with(
        "Invalid or expired requestState",
        json!({ "reason": "invalid_request_state", "detail": "token has expired" }),
    )
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
    fn a_rounds_answer_is_its_asked_keys_answers_only() {
        let asked = vec!["confirm".to_string()];
        let accept = json!({ "confirm": { "action": "accept", "content": { "ok": true } } });
        let with_extra = json!({
            "confirm": { "action": "accept", "content": { "ok": true }, "_meta": { "x": 1 } },
            "unasked": { "action": "decline" },
        });
        let other = json!({ "confirm": { "action": "decline" } });
        let digest = |v: &Value| responses_digest(v.as_object().unwrap(), Some(&asked));
        assert_eq!(digest(&accept), digest(&with_extra));
        assert_ne!(digest(&accept), digest(&other));
        assert_ne!(digest(&accept), digest(&json!({})));
        let sampled =
            json!({ "s": { "role": "assistant", "content": { "type": "text", "text": "hi" } } });
        let sampled_meta = json!({ "s": { "role": "assistant", "content": { "type": "text", "text": "hi" }, "_meta": {} } });
        let all = |v: &Value| responses_digest(v.as_object().unwrap(), None);
        assert_eq!(all(&sampled), all(&sampled_meta));
        assert_ne!(
            all(&accept),
            all(&with_extra),
            "unsealed keys: every answer counts"
        );
    }

    fn recorded(body: Value) -> Record {
        Record {
            key: RecordKey::new(Owner::personal("acme", "ada"), ROUND_OUTCOME_KIND, "t:x"),
            revision: 2,
            body,
            expires_at: Some(2_000),
        }
    }

    fn reason(answer: Result<Option<Claim>, McpError>) -> String {
        match answer {
            Err(error) => error.data().unwrap()["reason"]
                .as_str()
                .unwrap()
                .to_string(),
            Ok(Some(Claim::Replay(..))) => "replay".into(),
            Ok(Some(Claim::Run(_))) => "run".into(),
            Ok(None) => "running".into(),
        }
    }

    #[test]
    fn a_round_record_answers_a_replay_without_running_it() {
        let done = json!({ "status": "done", "answer": "a", "resultType": "complete", "result": { "content": [] } });
        let Ok(Some(Claim::Replay(result, result_type))) = answer_from(&recorded(done), "a", 1_000)
        else {
            panic!("the recorded result")
        };
        assert_eq!(
            (Value::Object(result), result_type.as_str()),
            (json!({ "content": [] }), "complete")
        );
        let pending = json!({ "status": "pending", "answer": "a", "until": 1_010 });
        assert_eq!(
            reason(answer_from(&recorded(pending.clone()), "a", 1_000)),
            "running"
        );
        assert_eq!(
            reason(answer_from(&recorded(pending.clone()), "a", 1_010)),
            "round_interrupted"
        );
        assert_eq!(
            reason(answer_from(&recorded(pending), "b", 1_000)),
            "round_already_answered"
        );
        let failed = json!({ "status": "failed", "answer": "a", "error": { "code": -32603, "message": "Internal error" } });
        assert_eq!(
            reason(answer_from(&recorded(failed), "a", 1_000)),
            "round_failed"
        );
        let big = json!({ "status": "unrecorded", "answer": "a", "bytes": 300_000 });
        assert_eq!(
            reason(answer_from(&recorded(big), "a", 1_000)),
            "round_result_too_large"
        );
        let cancelled = json!({ "status": "interrupted", "answer": "a" });
        assert_eq!(
            reason(answer_from(&recorded(cancelled), "a", 1_000)),
            "round_interrupted"
        );
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
