//! 2025-11-25 (and 2025-06-18) clients: `initialize`, the requests of a session, the session's
//! GET stream and DELETE, resource subscriptions, and the server-to-client requests a call sends
//! on its own SSE stream: the server's side of [`crate::legacy`], whose session is a record in
//! the store.
//!
//! Invariants:
//! - `initialize` is served by the all-methods function only; every other request names its
//!   session (400 without, 404 unknown, ended or another principal's), and a
//!   `MCP-Protocol-Version` header must be the session's version.
//! - A shared method goes through the same dispatch as the 2026-07-28 wire; the modern-only
//!   methods (`server/discover`, `subscriptions/listen`, `tasks/*`) are not served to a session.
//! - Every request of a session is admitted against the tenant's request-rate quota (`guard`)
//!   before anything is written: a shared method in `dispatch` (after one read of its session),
//!   every other verb (`initialize`, `ping`, `logging/setLevel`, subscriptions, an answer, an
//!   unknown method, GET, DELETE) here, as its [`Surface`], before the session is read.
//! - The GET stream and `resources/subscribe` exist only where the front door streams and
//!   updates reach the instance holding the stream; a session holds at most
//!   [`crate::legacy::MAX_SUBSCRIPTIONS`] subscriptions, and a principal at most
//!   `max_listen_streams` GET streams at once (counted in the store across instances, like
//!   listen streams; the slot is given back when the stream ends and lapses if its instance
//!   dies).
//! - Server-to-client requests go out only on a streaming front door and only for what the
//!   session declared it can answer; an answer is awaited no longer than the configured wait
//!   nor past the call's deadline, and a call asks for at most
//!   [`crate::legacy::MAX_INPUT_ROUNDS`] rounds. The one thing held in memory is this
//!   exchange while its stream is open.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request, StatusCode, header};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use super::{Legacy, OpenSession, Session};
use crate::auth::Principal;
use crate::error::McpError;
use crate::ladder::{LegacyMessage, ValidRequest};
use crate::method::{Method, Route};
use crate::notify::ResourceEvent;
use crate::registry::{Call, Handler, Outcome};
use crate::server::Surface;
use crate::server::dispatch::string_param;
use crate::server::listen::Slot;
use crate::server::reply::{
    challenge_reply, empty, error_reply, json_reply, legacy_error_reply, sse_frame, sse_reply,
};
use crate::server::{McpServer, Reply, run_handler};
use crate::wire::{self, JsonObject};

impl McpServer {
    /// A handshake-era message: `initialize`, or a request or answer of the caller's session.
    pub(crate) async fn serve_legacy(
        &self,
        route: Route,
        headers: &http::HeaderMap,
        message: LegacyMessage,
        principal: Principal,
        deadline: Option<tokio::time::Instant>,
    ) -> Reply {
        let Some(legacy) = &self.legacy else {
            return error_reply(None, &McpError::Internal);
        };
        let (id, method, params) = match message {
            LegacyMessage::Request { id, method, params } => (id, method, params),
            LegacyMessage::Cancelled { request_id, reason } => {
                self.legacy_cancelled(legacy, headers, &principal, &request_id, reason.as_deref());
                return empty(StatusCode::ACCEPTED);
            }
            LegacyMessage::Response { id, message } => {
                if let Err(error) = self.admit_surface(Surface::LegacyAnswer, &principal).await {
                    return legacy_error_reply(None, &error);
                }
                let stored = match legacy.open(&principal, headers).await {
                    Ok(session) => match id.as_str() {
                        Some(request_id) => {
                            legacy
                                .store_answer(&principal, &session.id, request_id, &message)
                                .await
                        }
                        None => Ok(false),
                    },
                    Err(error) => Err(error),
                };
                return match stored {
                    Ok(true) => empty(StatusCode::ACCEPTED),
                    Ok(false) => legacy_error_reply(
                        None,
                        &McpError::InvalidRequest(
                            "no request of this session is waiting for that id".into(),
                        ),
                    ),
                    Err(error) => legacy_error_reply(None, &error),
                };
            }
        };
        // A shared method is admitted by `dispatch`; every other verb here, before the session is read.
        let admitted = match shared_method(&method) {
            Some(_) => Ok(()),
            None => {
                self.admit_surface(Surface::legacy(&method), &principal)
                    .await
            }
        };
        let outcome = match (admitted, method.as_str()) {
            (Err(refused), _) => Err(refused),
            (Ok(()), "initialize") if route == Route::All => {
                self.legacy_initialize(legacy, &id, &params, &principal)
                    .await
            }
            _ => {
                self.legacy_request(
                    legacy, route, headers, &id, &method, params, principal, deadline,
                )
                .await
            }
        };
        match outcome {
            Ok(reply) => reply,
            Err(McpError::InsufficientScope(needed)) => {
                challenge_reply(&self.auth.insufficient_scope(&needed))
            }
            Err(error) => legacy_error_reply(Some(&id), &error),
        }
    }

    /// `notifications/cancelled`: cancels the caller's request `request_id` of the named session
    /// if it runs in this process; otherwise nothing (unknown and finished ids are ignored). No
    /// store access: the key includes the verified caller, so naming another principal's
    /// session finds nothing ([`super::InFlight`]).
    fn legacy_cancelled(
        &self,
        legacy: &Legacy,
        headers: &http::HeaderMap,
        principal: &Principal,
        request_id: &Value,
        reason: Option<&str>,
    ) {
        let Some(session) = headers
            .get(wire::header::SESSION_ID)
            .and_then(|v| v.to_str().ok())
        else {
            return;
        };
        let cancelled = legacy.in_flight.cancel(principal, session, request_id);
        tracing::info!(
            cancelled,
            reason = reason.unwrap_or("-"),
            "notifications/cancelled: {}",
            if cancelled {
                "the request was cancelled"
            } else {
                "no such request runs here (unknown, finished or in another instance): ignored"
            }
        );
    }

    /// `initialize`: a new session record, the negotiated version, and `Mcp-Session-Id`.
    async fn legacy_initialize(
        &self,
        legacy: &Legacy,
        id: &Value,
        params: &JsonObject,
        principal: &Principal,
    ) -> Result<Reply, McpError> {
        let requested = string_param(params, "protocolVersion")?;
        let capabilities = match params.get("capabilities") {
            None => JsonObject::new(),
            Some(Value::Object(c)) => c.clone(),
            Some(_) => {
                return Err(McpError::invalid_params(
                    "params.capabilities must be an object",
                ));
            }
        };
        if serde_json::to_vec(&capabilities).map_or(usize::MAX, |b| b.len())
            > super::MAX_CAPABILITIES_BYTES
        {
            return Err(McpError::invalid_params(format!(
                "params.capabilities exceeds {} bytes",
                super::MAX_CAPABILITIES_BYTES
            )));
        }
        let session = Session {
            protocol_version: super::negotiate(requested).to_string(),
            capabilities,
            client_info: params.get("clientInfo").map(super::kept_client_info),
            log_level: None,
            subscriptions: Vec::new(),
            ended: false,
        };
        let session_id = legacy.create(principal, &session).await?;
        let mut result = json!({
            "protocolVersion": session.protocol_version,
            "capabilities": self.legacy_capabilities(),
            "serverInfo": self.app.server_info(),
        });
        if let Some(instructions) = &self.app.instructions {
            result["instructions"] = json!(instructions);
        }
        let mut reply = json_reply(
            StatusCode::OK,
            &json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        );
        if let Ok(value) = HeaderValue::from_str(&session_id) {
            reply.headers_mut().insert(wire::header::SESSION_ID, value);
        }
        Ok(reply)
    }

    /// Whether resource updates reach this process's GET streams (the front door holds them).
    fn pushes_updates(&self) -> bool {
        self.config.streams_responses && self.config.pushes_updates
    }

    /// What `initialize` advertises: the app's capabilities, logging (`logging/setLevel` is
    /// served), and resource subscriptions where the front door can hold the GET stream.
    fn legacy_capabilities(&self) -> Value {
        let mut capabilities = self.app.capabilities();
        capabilities["logging"] = json!({});
        if self.pushes_updates() && capabilities.get("resources").is_some() {
            capabilities["resources"]["subscribe"] = json!(true);
        }
        capabilities
    }

    /// Any other request of a session: the session first (400 without, 404 unknown), then the
    /// legacy-only methods here, or the shared methods through the same dispatch as the modern
    /// wire.
    #[allow(clippy::too_many_arguments)]
    async fn legacy_request(
        &self,
        legacy: &Legacy,
        route: Route,
        headers: &http::HeaderMap,
        id: &Value,
        method: &str,
        mut params: JsonObject,
        principal: Principal,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<Reply, McpError> {
        let OpenSession {
            id: session_id,
            session,
        } = legacy.open(&principal, headers).await?;
        if let Some(version) = crate::headers::single(headers, wire::header::PROTOCOL_VERSION)?
            && version != session.protocol_version
        {
            return Err(McpError::InvalidRequest(format!(
                "MCP-Protocol-Version '{version}' is not this session's version '{}'",
                session.protocol_version
            )));
        }
        let done = |result: Value| {
            json_reply(
                StatusCode::OK,
                &json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            )
        };
        let shared = shared_method(method);
        let served_here = match (route, shared) {
            (Route::All, _) => true,
            (Route::Only(own), Some(method)) => own == method,
            (Route::Only(_), None) => false,
        };
        if !served_here {
            return Err(McpError::InvalidRequest(format!(
                "this function does not serve {method}"
            )));
        }
        match (method, shared) {
            ("ping", _) => Ok(done(json!({}))),
            ("logging/setLevel", _) => {
                let level = string_param(&params, "level")?.to_string();
                if wire::log_level_rank(&level).is_none() {
                    return Err(McpError::invalid_params(format!(
                        "Unknown logging level: {level}"
                    )));
                }
                legacy
                    .update(&principal, &session_id, |s| {
                        s.log_level = Some(level.clone())
                    })
                    .await?;
                Ok(done(json!({})))
            }
            ("resources/subscribe" | "resources/unsubscribe", _) if self.pushes_updates() => {
                let uri = string_param(&params, "uri")?.to_string();
                let subscribe = method == "resources/subscribe";
                if subscribe {
                    self.readable(&principal, &uri)?;
                    let held = session.subscriptions.iter().filter(|u| **u != uri).count();
                    if held >= super::MAX_SUBSCRIPTIONS {
                        return Err(McpError::LimitReached {
                            what: "resource subscriptions in a session",
                            max: super::MAX_SUBSCRIPTIONS,
                        });
                    }
                }
                legacy
                    .update(&principal, &session_id, |s| {
                        s.subscriptions.retain(|u| *u != uri);
                        if subscribe && s.subscriptions.len() < super::MAX_SUBSCRIPTIONS {
                            s.subscriptions.push(uri.clone());
                        }
                    })
                    .await?;
                Ok(done(json!({})))
            }
            (_, Some(method)) => {
                let meta = params.remove("_meta");
                let progress_token = meta
                    .as_ref()
                    .and_then(|m| m.get(wire::meta::PROGRESS_TOKEN))
                    .filter(|t| crate::ladder::valid_id(t))
                    .cloned();
                // Findable by `notifications/cancelled` while its work runs (here or on its stream).
                let cancel = CancellationToken::new();
                let in_flight = legacy
                    .in_flight
                    .register(&principal, &session_id, id, &cancel)
                    .map(Arc::new);
                let request = ValidRequest {
                    id: id.clone(),
                    method,
                    params,
                    client: session.client(),
                    progress_token,
                    log_level: session.log_level.clone(),
                    session: Some(session_id),
                    deadline,
                    cancel,
                    _in_flight: in_flight,
                };
                self.dispatch(request, principal).await
            }
            _ => Err(McpError::MethodNotFound(method.into())),
        }
    }

    /// GET (the session's notification stream) and DELETE (end the session). Only reached with
    /// an `Mcp-Session-Id` on the all-methods function; see [`crate::ladder::Ladder::check_front`].
    pub(crate) async fn session_verb(
        &self,
        request: &Request<Bytes>,
        principal: &Principal,
    ) -> Reply {
        let Some(legacy) = &self.legacy else {
            return error_reply(None, &McpError::HttpMethodNotAllowed);
        };
        let surface = if request.method() == http::Method::DELETE {
            Surface::SessionDelete
        } else {
            Surface::SessionStream
        };
        if let Err(error) = self.admit_surface(surface, principal).await {
            return legacy_error_reply(None, &error);
        }
        let session = match legacy.open(principal, request.headers()).await {
            Ok(session) => session,
            Err(error) => return legacy_error_reply(None, &error),
        };
        if request.method() == http::Method::DELETE {
            return match legacy.end(principal, &session.id).await {
                Ok(_) => empty(StatusCode::OK),
                Err(error) => legacy_error_reply(None, &error),
            };
        }
        if !self.pushes_updates() {
            let mut reply = json_reply(
                StatusCode::METHOD_NOT_ALLOWED,
                &json!({ "jsonrpc": "2.0", "error": { "code": wire::code::INVALID_REQUEST,
                    "message": "This deployment does not hold GET streams: resource updates happen in other function instances than the one that would hold the stream, so they are not pushed to 2025-11-25 clients here" } }),
            );
            reply
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
            return reply;
        }
        let slot = match self
            .take_stream_slot(principal, "session-streams", "open GET streams")
            .await
        {
            Ok(slot) => slot,
            Err(error) => return legacy_error_reply(None, &error),
        };
        self.session_stream(legacy.clone(), session, principal.clone(), slot)
    }

    /// The legacy GET stream: `notifications/resources/updated` for the session's subscribed
    /// URIs, for changes made on this instance, until `listen_max_secs` or the client leaves.
    fn session_stream(
        &self,
        legacy: Legacy,
        session: OpenSession,
        principal: Principal,
        slot: Slot,
    ) -> Reply {
        let caller = principal.clone();
        self.event_stream(&caller, None, None, slot, move |event| {
            let (legacy, principal, session) = (legacy.clone(), principal.clone(), session.id.clone());
            async move {
                // The subscription list may have changed since the stream opened.
                let Ok(current) = legacy.open_by_id(&principal, &session).await else { return Relay::Stop };
                if !current.subscriptions.iter().any(|s| event.uri.starts_with(s.as_str())) {
                    return Relay::Skip;
                }
                let params = json!({ "uri": event.uri });
                Relay::Send(json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": params }))
            }
        })
    }

    /// An SSE reply fed by `principal`'s resource events on this instance: `first` at once, one
    /// message per event that `relay` turns into one, and `last` when `listen_max_secs` is up
    /// (nothing more once the client has gone).
    fn event_stream<F, Fut>(
        &self,
        principal: &Principal,
        first: Option<Value>,
        last: Option<Value>,
        slot: Slot,
        relay: F,
    ) -> Reply
    where
        F: Fn(ResourceEvent) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Relay> + Send,
    {
        let (tx, rx) = mpsc::unbounded_channel();
        if let Some(first) = first {
            let _ = tx.send(sse_frame(&first));
        }
        let mut events = self.events.subscribe();
        let (tenant, subject) = (principal.tenant.clone(), principal.subject.clone());
        let deadline = tokio::time::sleep(Duration::from_secs(self.config.listen_max_secs));
        let server = self.clone();
        tokio::spawn(async move {
            tokio::pin!(deadline);
            loop {
                tokio::select! {
                    () = &mut deadline => break,
                    () = tx.closed() => break,
                    event = events.recv() => match event {
                        Ok(event) if event.tenant == tenant && event.subject == subject => match relay(event).await {
                            Relay::Send(note) => if tx.send(sse_frame(&note)).is_err() { break },
                            Relay::Skip => {}
                            Relay::Stop => break,
                        },
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => break,
                    },
                }
            }
            if let Some(last) = last {
                let _ = tx.send(sse_frame(&last));
            }
            server.give_back_stream_slot(slot).await;
        });
        sse_reply(rx, self.keepalive())
    }

    /// Why a legacy client cannot be sent these requests, as the call's outcome; `None` if it can.
    pub(crate) fn legacy_input_refusal(
        &self,
        request: &ValidRequest,
        inputs: &std::collections::BTreeMap<String, crate::registry::InputRequest>,
    ) -> Option<Result<Outcome, McpError>> {
        if !self.config.streams_responses {
            return Some(input_failed(
                request.method,
                "This deployment's front door buffers responses, so it cannot ask a 2025-11-25 client for input \
                 during a call; connect with a 2026-07-28 client instead",
            ));
        }
        let missing = inputs
            .values()
            .find(|input| !request.client.can_answer(input))?;
        let needed = missing.required_capability();
        let names: Vec<&String> = needed
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        Some(input_failed(
            request.method,
            &format!(
                "This call needs the client capability {names:?}, which this session did not declare"
            ),
        ))
    }

    /// Serves the input requests of a legacy call as server-to-client requests on `stream`, one
    /// at a time, re-running the handler with the answers until it completes.
    pub(crate) async fn legacy_rounds(
        &self,
        request: &ValidRequest,
        handler: &Handler,
        mut call: Call,
        mut outcome: Outcome,
        stream: &mpsc::UnboundedSender<Bytes>,
    ) -> Result<Outcome, McpError> {
        let (Some(legacy), Some(session)) = (&self.legacy, &request.session) else {
            return Ok(outcome);
        };
        for _ in 0..super::MAX_INPUT_ROUNDS {
            let Outcome::InputRequired { requests, state } = outcome else {
                return Ok(outcome);
            };
            if let Some(refusal) = self.legacy_input_refusal(request, &requests) {
                return refusal;
            }
            let mut answers = JsonObject::new();
            for (key, input) in &requests {
                let asked = legacy.ask(&call.principal, session, &request.client, input, stream);
                let answer = match request.deadline {
                    Some(at) => tokio::time::timeout_at(at, asked)
                        .await
                        .unwrap_or(Err("no answer before the call's deadline".into())),
                    None => asked.await,
                };
                match answer {
                    Ok(answer) => answers.insert(key.clone(), answer),
                    Err(reason) => {
                        return input_failed(request.method, &format!("No input: {reason}"));
                    }
                };
            }
            call.input_responses = answers;
            call.state = state;
            outcome = run_handler(handler, call.clone(), request.deadline).await?;
        }
        input_failed(request.method, "The call kept asking for input; giving up")
    }
}

/// The method of the modern wire a session may call (`None` for the legacy-only verbs and the
/// modern-only methods: discovery, listen, tasks).
fn shared_method(method: &str) -> Option<Method> {
    Method::from_wire(method).filter(|m| {
        !matches!(
            m,
            Method::Discover
                | Method::SubscriptionsListen
                | Method::TasksGet
                | Method::TasksUpdate
                | Method::TasksCancel
        )
    })
}

/// A call that cannot get the input it needs: a tool execution error the model can read, or a
/// JSON-RPC error for the methods that have no tool result.
fn input_failed(method: Method, reason: &str) -> Result<Outcome, McpError> {
    if method == Method::ToolsCall {
        Ok(Outcome::tool_error(reason))
    } else {
        Err(McpError::InvalidRequest(reason.into()))
    }
}

/// What an event stream does with one resource event.
enum Relay {
    Send(Value),
    Skip,
    Stop,
}
