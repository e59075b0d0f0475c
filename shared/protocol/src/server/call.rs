//! The methods that run app handlers — `tools/call`, `prompts/get`, `resources/read` — from the
//! validated request to the reply: argument checks, the multi-round `input_required` exchange
//! with its sealed `requestState`, task creation for task-capable tools, and one SSE stream for a
//! handler that notifies.
//!
//! Invariants:
//! - A `requestState` is sealed ([`crate::seal`]) and bound to the caller (tenant and subject),
//!   the method, its target and a digest of the arguments; state sealed for anything else, or
//!   tampered with, is refused — before an invalid-arguments answer, so a bad state never hides.
//! - A handler runs with its panics caught and stopped at the request's [`super::Deadline`]
//!   (a retryable error, never a late answer).
//! - `input_required` only for methods that allow it, and only with requests the client declared
//!   it can answer; a `resources/read` reached through it depended on this client's input and is
//!   never shared (`ttlMs` 0, `cacheScope: private`); nor is a read of a resource or template
//!   marked private or gated by scopes (a shared cache would hand it to a caller without them).
//! - A successful `tools/call` result of a tool that declares an `outputSchema` conforms to it,
//!   or the answer is `-32603` naming the broken schema, logged ([`OutputCheck`]).
//! - A task is created only by `tools/call`, only with the Tasks extension offered and declared.
//! - A 2026-07-28 call runs its handler once per request; a 2025-11-25 call may re-run it with
//!   its client's answers on the same stream ([`crate::legacy`]).
//! - A `tools/call` round (a retry carrying a verified `requestState`) runs its tool once, on
//!   every instance sharing the store: the round is claimed by one conditional create before the
//!   handler runs, its outcome recorded by one conditional update before it is answered, and a
//!   replay is answered from the record (or refused, or told to retry while it runs), never by
//!   a second run ([`crate::author::rounds`]).
//! - A cancelled request stops at once and sends nothing more (Streamable HTTP, "Cancellation":
//!   closing the SSE response stream MUST be treated as cancellation; the server SHOULD stop
//!   the work and MUST NOT send further messages for it). The stream's frames go through a
//!   channel whose receiver is the response body: when the front door drops the body (the
//!   client closed the stream), the task serving the call sees the channel closed, cancels the
//!   request's token ([`Notifier::is_cancelled`] turns true) and returns, dropping the handler's
//!   future and any wait for a legacy client's answer. A 2025-11-25 `notifications/cancelled`
//!   cancels the same token ([`crate::legacy::InFlight`]): a streamed call ends its stream
//!   without a response, a plain one is answered with an empty SSE body.
//!
//! Why dropping a handler between two awaits is safe: it is the interruption a handler already
//! meets at its [`super::Deadline`] (and a Lambda environment meets at its timeout or a crash),
//! no new one. Every durable effect is one conditional write (or one conditional transaction)
//! in the store: a write whose future is dropped either reached the store whole or not at all,
//! never half. A handler that makes several writes must already leave each step recoverable on
//! its own (the operation key and the job states of `relevo_state`), since any of them may be
//! the last before a timeout; work that must outlive its caller's interest is a job or a task,
//! which the closed stream does not touch.

use std::panic::AssertUnwindSafe;

use bytes::Bytes;
use futures_util::FutureExt;
use http::HeaderValue;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::dispatch::string_param;
use super::reply::{cacheable, cancelled_reply, sse_frame, sse_reply};
use super::{McpServer, RESULT_TYPE_HEADER, Reply};
use crate::auth::Principal;
use crate::author::rounds::{self, Claim, RoundClaim, RoundRef};
use crate::error::McpError;
use crate::ladder::ValidRequest;
use crate::method::Method;
use crate::notify::Notifier;
use crate::registry::{Call, Handler, Outcome, OutputCheck, Schema, apps};
use crate::tasks::{self, TaskSupport};
use crate::wire::{self, JsonObject};
use relevo_state::{Ids, RandomIds, canonical_object_digest};

const REQUEST_STATE_DOMAIN: &str = "request-state";

/// What one round of a handler call is bound to, and how its result may be cached.
struct Round {
    /// Method, target and arguments digest a `requestState` is bound to.
    binding: Value,
    now: u64,
    /// The request carried `inputResponses` or `requestState`.
    retry: bool,
    /// The content is per-caller.
    private: bool,
    /// For a tool that declares an `outputSchema`: its name, the schema and its compiled check,
    /// which a successful result must pass.
    output: Option<(String, Schema, OutputCheck)>,
    /// The round this request claimed: its outcome is recorded before it is answered
    /// ([`crate::author::rounds`]).
    claim: Option<RoundClaim>,
}

/// A `requestState` the server verified.
struct OpenedState {
    /// The handler's state.
    state: Value,
    /// When the token expires (unix seconds).
    expires_at: u64,
    /// The keys the round asked, if sealed (states sealed before they were).
    asked: Option<Vec<String>>,
}

impl Round {
    /// Records that this request's claimed round stopped before an outcome (cancelled).
    async fn abandon(&self) {
        if let Some(claim) = &self.claim {
            claim.abandon().await;
        }
    }
}

impl McpServer {
    /// `tools/call`, `prompts/get`, `resources/read`: the methods that run app handlers and may
    /// answer `input_required`.
    pub(super) async fn call(
        &self,
        request: ValidRequest,
        principal: Principal,
        now: u64,
    ) -> Result<Reply, McpError> {
        let params = &request.params;
        let mut task_tool = None;
        let mut invalidation: Option<(String, String)> = None;
        let mut invalid = None;
        let mut output = None;
        let (handler, arguments, uri, streams, private) = match request.method {
            Method::ToolsCall => {
                // A caller without the tool's scopes gets 403 insufficient_scope, so a client can
                // step up; scope names are public (protected-resource metadata lists them).
                let tool = self.callable_tool(&principal, string_param(params, "name")?)?;
                let arguments = match params.get("arguments") {
                    None | Some(Value::Null) => JsonObject::new(),
                    Some(Value::Object(a)) => a.clone(),
                    Some(_) => {
                        return Err(McpError::invalid_params(
                            "params.arguments must be an object",
                        ));
                    }
                };
                let checked = tool.input_check.check(
                    &tool.name,
                    tool.input_schema(),
                    &arguments,
                    self.config.max_argument_bytes,
                );
                match checked {
                    Ok(()) => {}
                    Err(crate::schema::Refusal::Bound(error)) => return Err(error),
                    // Answered after the requestState is checked: a tampered state is refused first.
                    Err(crate::schema::Refusal::Invalid { message, .. }) => invalid = Some(message),
                }
                if apps::app_only(&tool.meta) && !apps::client_supports(&request.client) {
                    // MCP Apps: only a view may call an app-only tool; a client without the
                    // extension has no view, so the call would be the agent's.
                    return Err(McpError::missing_capability(apps::required_capability()));
                }
                if let Some(required) = &tool.required_capabilities {
                    let missing = missing_capabilities(required, &request.client.capabilities);
                    if !missing.is_empty() {
                        return Err(McpError::missing_capability(Value::Object(missing)));
                    }
                }
                invalidation = (!tool.invalidates.is_empty())
                    .then(|| (tool.name.clone(), tool.invalidates.join(" ")));
                if tool.output_schema().is_some() {
                    output = Some((
                        tool.name.clone(),
                        tool.output.clone(),
                        tool.output_check.clone(),
                    ));
                }
                if tool.task_support != TaskSupport::Forbidden {
                    task_tool = Some((tool.name.clone(), tool.task_support, tool.gather.clone()));
                }
                (tool.handler.clone(), arguments, None, tool.streams, false)
            }
            Method::PromptsGet => {
                let prompt = self.gettable_prompt(&principal, string_param(params, "name")?)?;
                let arguments = match params.get("arguments") {
                    None | Some(Value::Null) => JsonObject::new(),
                    Some(Value::Object(a)) if a.values().all(Value::is_string) => a.clone(),
                    Some(_) => {
                        return Err(McpError::invalid_params(
                            "prompt arguments must be an object of strings",
                        ));
                    }
                };
                if let Some(missing) = prompt
                    .arguments
                    .iter()
                    .find(|a| a.required && !arguments.contains_key(&a.name))
                {
                    return Err(McpError::invalid_params(format!(
                        "Missing required argument: {}",
                        missing.name
                    )));
                }
                (prompt.handler.clone(), arguments, None, false, false)
            }
            _ => {
                let uri = string_param(params, "uri")?;
                let readable = self.readable(&principal, uri)?;
                (
                    readable.handler,
                    readable.arguments,
                    Some(uri.to_string()),
                    false,
                    readable.private,
                )
            }
        };

        let input_responses = match params.get("inputResponses") {
            None | Some(Value::Null) => JsonObject::new(),
            Some(Value::Object(responses)) if responses.values().all(Value::is_object) => {
                responses.clone()
            }
            Some(_) => {
                return Err(McpError::invalid_params(
                    "inputResponses must map each key to a result object",
                ));
            }
        };
        let binding = self.state_binding(&request, &principal, &arguments);
        let (token, opened) = match params.get("requestState") {
            None | Some(Value::Null) => (None, None),
            Some(Value::String(token)) => (
                Some(token.as_str()),
                Some(self.open_state(token, &binding, now)?),
            ),
            Some(_) => return Err(invalid_state("requestState must be a string")),
        };
        if let Some(message) = invalid {
            // No structuredContent: it would have to conform to the tool's outputSchema.
            let result = wire::CallToolResult::error(vec![wire::ContentBlock::text(message)]);
            return Ok(self.result_reply(&request, wire::to_object(&result), "complete"));
        }
        // A tool's round runs once: claimed before the handler runs, answered from its record
        // on a replay (on every instance sharing the store).
        let mut claim = None;
        if let (Some(token), Some(opened), Some(store), Method::ToolsCall) =
            (token, &opened, &self.store, request.method)
            && !request.is_legacy()
        {
            let lease = match request.deadline {
                Some(at) => {
                    let left = at.saturating_duration_since(tokio::time::Instant::now());
                    now + left.as_secs() + 1
                }
                None => now + rounds::DEFAULT_ROUND_LEASE_SECS,
            };
            let round = RoundRef {
                tenant: &principal.tenant,
                subject: &principal.subject,
                tool: request.target().unwrap_or_default(),
                token,
                expires_at: opened.expires_at,
                asked: opened.asked.clone(),
                responses: &input_responses,
            };
            match rounds::claim_round(store.clone(), round, lease, now).await? {
                Claim::Run(claimed) => claim = Some(claimed),
                Claim::Replay(result, result_type) => {
                    return Ok(self.result_reply(&request, result, &result_type));
                }
            }
        }
        let state = opened.map(|opened| opened.state);
        let round = Round {
            binding,
            now,
            retry: state.is_some() || !input_responses.is_empty(),
            private,
            output,
            claim,
        };

        let notifier = Notifier::silent()
            .with_cancel(request.cancel.clone())
            .with_events(self.events.clone(), &principal.tenant, &principal.subject);
        // A retry's answers are recorded in the deployment's store: one answer per round (a
        // claimed round's record holds its answer already).
        let answers = (state.is_some() && !input_responses.is_empty() && round.claim.is_none())
            .then(|| self.store.clone())
            .flatten()
            .map(|store| {
                crate::author::RoundLedger::new(store, now, self.config.request_state_ttl_secs)
            });
        let call = Call {
            arguments,
            uri,
            input_responses,
            state,
            client: request.client.clone(),
            principal,
            notifier,
            answers,
            jobs: self.jobs.clone(),
        };

        if let Some((name, support, gather)) = task_tool {
            match (&self.tasks, request.client.declares_tasks()) {
                (Some(engine), true) => {
                    if let Some(gather) = gather {
                        let gathered = request
                            .cancel
                            .run_until_cancelled(run_handler(
                                &gather,
                                call.clone(),
                                request.deadline,
                            ))
                            .await;
                        let Some(gathered) = gathered else {
                            round.abandon().await;
                            return Ok(cancelled_reply(self.keepalive()));
                        };
                        match gathered {
                            Ok(Outcome::Complete(_)) => {}
                            asking => return self.conclude(&request, asking, &round).await,
                        }
                    }
                    let input = tasks::tool_task_input(&name, &call);
                    let started = engine
                        .start(
                            &call.principal.tenant,
                            &call.principal.subject,
                            tasks::TOOL_TASK_KIND,
                            None,
                            input,
                        )
                        .await
                        .map_err(|error| match error {
                            relevo_state::StartError::Store(error) => {
                                crate::error::store_failure("task")(error)
                            }
                            relevo_state::StartError::LimitReached { what, max } => {
                                McpError::LimitReached { what, max }
                            }
                            other => {
                                tracing::error!(error = %other, "could not create the task");
                                McpError::Internal
                            }
                        });
                    let created = started.map(|job| Outcome::TaskCreated(Box::new(job)));
                    return self.conclude(&request, created, &round).await;
                }
                _ if support == TaskSupport::Required => {
                    return self
                        .conclude(&request, Err(tasks::tasks_required()), &round)
                        .await;
                }
                _ => {}
            }
        }

        let wants_stream = request.progress_token.is_some() || request.log_level.is_some();
        if streams && wants_stream {
            return Ok(self.stream_call(request, handler, call, round, None, invalidation));
        }
        // A legacy call may be re-run with the client's answers; a modern one runs once.
        let legacy_call = request.is_legacy().then(|| call.clone());
        let run = run_handler(&handler, call, request.deadline);
        let Some(outcome) = request.cancel.run_until_cancelled(run).await else {
            // A 2025-11-25 `notifications/cancelled`: no response for the request, and the POST
            // still gets an answer, an SSE stream that ends at once.
            round.abandon().await;
            return Ok(cancelled_reply(self.keepalive()));
        };
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(error) => return self.conclude(&request, Err(error), &round).await,
        };
        if let Outcome::InputRequired { requests, .. } = &outcome
            && let Some(call) = legacy_call
        {
            // A legacy client is asked on this request's stream, unless it cannot be.
            if let Some(refusal) = self.legacy_input_refusal(&request, requests) {
                let (result, result_type) = self.finish(&request, refusal?, &round)?;
                return Ok(self.result_reply(&request, result, result_type));
            }
            return Ok(self.stream_call(
                request,
                handler,
                call,
                round,
                Some(outcome),
                invalidation,
            ));
        }
        let outcome = with_invalidation(outcome, invalidation.as_ref());
        self.conclude(&request, Ok(outcome), &round).await
    }

    /// The reply to a handler's outcome: [`Self::finish`], recorded first as its round's
    /// outcome when this request claimed one.
    async fn conclude(
        &self,
        request: &ValidRequest,
        outcome: Result<Outcome, McpError>,
        round: &Round,
    ) -> Result<Reply, McpError> {
        let finished = outcome.and_then(|outcome| self.finish(request, outcome, round));
        if let Some(claim) = &round.claim {
            claim.record(&finished).await;
        }
        let (result, result_type) = finished?;
        Ok(self.result_reply(request, result, result_type))
    }

    /// What a requestState is bound to: the caller (tenant and subject), the method, its target
    /// and a digest of the arguments. State sealed for anything else is refused.
    fn state_binding(
        &self,
        request: &ValidRequest,
        principal: &Principal,
        arguments: &JsonObject,
    ) -> Value {
        json!({
            "tn": principal.tenant,
            "sb": principal.subject,
            "m": request.method.as_str(),
            "t": request.target().unwrap_or_default(),
            "a": canonical_object_digest(arguments),
        })
    }

    fn open_state(&self, token: &str, binding: &Value, now: u64) -> Result<OpenedState, McpError> {
        let (payload, expires_at) = self
            .keys
            .open_until(REQUEST_STATE_DOMAIN, token, now)
            .map_err(|e| invalid_state(&e.to_string()))?;
        if payload.get("b") != Some(binding) {
            return Err(invalid_state("requestState belongs to another request"));
        }
        let asked = payload
            .get("k")
            .and_then(|keys| serde_json::from_value(keys.clone()).ok());
        Ok(OpenedState {
            state: payload.get("s").cloned().unwrap_or(Value::Null),
            expires_at,
            asked,
        })
    }

    /// Turns an outcome into the result object and its `resultType`.
    fn finish(
        &self,
        request: &ValidRequest,
        outcome: Outcome,
        round: &Round,
    ) -> Result<(JsonObject, &'static str), McpError> {
        match outcome {
            Outcome::Complete(result) => {
                let result = if request.method == Method::ResourcesRead {
                    // A read reached through MRTR depended on this client's input: never shared.
                    let ttl = if round.retry {
                        0
                    } else {
                        self.config.read_ttl_ms
                    };
                    let mut result = cacheable(result, ttl);
                    if round.retry || round.private {
                        result.insert("cacheScope".into(), json!("private"));
                    }
                    result
                } else {
                    if let Some((tool, schema, check)) = &round.output
                        && let Some(schema) = schema.get()
                    {
                        check.check(tool, schema, &result)?;
                    }
                    result
                };
                Ok((result, "complete"))
            }
            Outcome::TaskCreated(job) => {
                if request.method != Method::ToolsCall || self.tasks.is_none() {
                    tracing::error!(
                        "a task was created outside tools/call or without the Tasks extension"
                    );
                    return Err(McpError::Internal);
                }
                Ok((tasks::task_fields(&job), "task"))
            }
            Outcome::InputRequired { requests, state } => {
                if !request.method.allows_input_required() {
                    return Err(McpError::Internal);
                }
                if requests.is_empty() && state.is_none() {
                    tracing::error!(
                        "handler returned input_required with neither requests nor state"
                    );
                    return Err(McpError::Internal);
                }
                let mut input_requests = JsonObject::new();
                for (key, input) in &requests {
                    if !request.client.can_answer(input) {
                        return Err(McpError::missing_capability(input.required_capability()));
                    }
                    input_requests.insert(key.clone(), input.to_wire());
                }
                let mut result = JsonObject::new();
                if !input_requests.is_empty() {
                    result.insert("inputRequests".into(), Value::Object(input_requests));
                }
                if let Some(state) = state {
                    // The keys asked (a round's answer is theirs) and a nonce: no two rounds
                    // share a token, so none shares its record ([`crate::author::rounds`]).
                    let keys: Vec<&String> = requests.keys().collect();
                    let sealed = self.keys.seal(
                        REQUEST_STATE_DOMAIN,
                        &json!({ "b": round.binding, "s": state, "k": keys, "n": RandomIds.new_id() }),
                        round.now + self.config.request_state_ttl_secs,
                    );
                    result.insert("requestState".into(), json!(sealed));
                }
                Ok((result, "input_required"))
            }
        }
    }

    /// Runs a notifying handler with its notifications and final response on one SSE stream.
    /// `first` is an outcome the handler already returned (a legacy call that asks for input);
    /// legacy calls carry their server-to-client requests on the same stream.
    fn stream_call(
        &self,
        request: ValidRequest,
        handler: Handler,
        mut call: Call,
        round: Round,
        first: Option<Outcome>,
        invalidation: Option<(String, String)>,
    ) -> Reply {
        let (frames_tx, frames_rx) = mpsc::unbounded_channel::<Bytes>();
        let (notes_tx, mut notes_rx) = mpsc::unbounded_channel::<Value>();
        call.notifier = Notifier::streaming(
            notes_tx,
            request.progress_token.clone(),
            request.log_level.as_deref(),
        )
        .with_cancel(request.cancel.clone())
        .with_events(
            self.events.clone(),
            &call.principal.tenant,
            &call.principal.subject,
        );
        let server = self.clone();
        let requests_tx = frames_tx.clone();
        tokio::spawn(async move {
            let work = async {
                let outcome = match first {
                    Some(outcome) => outcome,
                    None => run_handler(&handler, call.clone(), request.deadline).await?,
                };
                let outcome = server
                    .legacy_rounds(&request, &handler, call, outcome, &requests_tx)
                    .await?;
                Ok::<_, McpError>(with_invalidation(outcome, invalidation.as_ref()))
            };
            tokio::pin!(work);
            let cancel = request.cancel.clone();
            let outcome = loop {
                tokio::select! {
                    biased;
                    // The response body was dropped: the client closed the stream. Returning
                    // drops `work`, the handler's future with it, and sends nothing more.
                    () = frames_tx.closed() => {
                        cancel.cancel();
                        tracing::info!(cause = "stream closed", "the client cancelled the call");
                        round.abandon().await;
                        return;
                    }
                    // A 2025-11-25 `notifications/cancelled`: the stream ends without a response.
                    () = cancel.cancelled() => {
                        tracing::info!(cause = "notifications/cancelled", "the client cancelled the call");
                        round.abandon().await;
                        return;
                    }
                    Some(note) = notes_rx.recv() => {
                        if frames_tx.send(sse_frame(&note)).is_err() {
                            cancel.cancel();
                            round.abandon().await;
                            return; // the client closed the stream: cancelled
                        }
                    }
                    outcome = &mut work => break outcome,
                }
            };
            while let Ok(note) = notes_rx.try_recv() {
                let _ = frames_tx.send(sse_frame(&note));
            }
            let finished = outcome.and_then(|o| server.finish(&request, o, &round));
            if let Some(claim) = &round.claim {
                claim.record(&finished).await;
            }
            let message = match finished {
                Ok((result, result_type)) => server.decorate(&request, result, result_type),
                Err(error) if request.is_legacy() => error.to_legacy_response(Some(&request.id)),
                Err(error) => error.to_response(Some(&request.id)),
            };
            let _ = frames_tx.send(sse_frame(&message));
        });
        let mut reply = sse_reply(frames_rx, self.keepalive());
        reply
            .headers_mut()
            .insert(RESULT_TYPE_HEADER, HeaderValue::from_static("stream"));
        reply
    }
}

/// Runs a handler, catching a panic, stopped at `deadline` (its in-flight store calls dropped).
pub(crate) async fn run_handler(
    handler: &Handler,
    call: Call,
    deadline: Option<tokio::time::Instant>,
) -> Result<Outcome, McpError> {
    let run = AssertUnwindSafe(handler(call)).catch_unwind();
    let outcome = match deadline {
        Some(at) => match tokio::time::timeout_at(at, run).await {
            Ok(outcome) => outcome,
            Err(_) => {
                tracing::warn!(
                    cause = "deadline",
                    "the handler ran out of time: answered retryable"
                );
                return Err(McpError::Retryable(crate::Retry::Deadline));
            }
        },
        None => run.await,
    };
    match outcome {
        Ok(outcome) => outcome,
        Err(_) => {
            tracing::error!("handler panicked");
            Err(McpError::Internal)
        }
    }
}

fn with_invalidation(outcome: Outcome, invalidation: Option<&(String, String)>) -> Outcome {
    match (outcome, invalidation) {
        (Outcome::Complete(result), Some((cause, domains))) => {
            Outcome::Complete(announce_invalidation(result, cause, domains))
        }
        (outcome, _) => outcome,
    }
}

/// Prepends `<cache_invalidation cause="…" domains="…"/>` to a successful result's content.
fn announce_invalidation(mut result: JsonObject, cause: &str, domains: &str) -> JsonObject {
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return result;
    }
    let tag = json!({ "type": "text", "text": format!("<cache_invalidation cause=\"{cause}\" domains=\"{domains}\"/>") });
    match result.get_mut("content") {
        Some(Value::Array(content)) => content.insert(0, tag),
        _ => {
            result.insert("content".into(), json!([tag]));
        }
    }
    result
}

fn invalid_state(reason: &str) -> McpError {
    McpError::invalid_params_with(
        "Invalid or expired requestState",
        json!({ "reason": "invalid_request_state", "detail": reason }),
    )
}

/// Capabilities in `required` (top-level keys) that the client did not declare.
fn missing_capabilities(required: &Value, declared: &JsonObject) -> JsonObject {
    required
        .as_object()
        .map(|r| {
            r.iter()
                .filter(|(k, _)| !declared.contains_key(*k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}
