//! The session store of handshake-era clients: a session is a record in the [`RecordStore`]
//! (what the client declared, its log level, its resource subscriptions), and a server-to-client
//! request waiting for the client's answer is a pending record. The invariants and the threat
//! model are the module's (`legacy`).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::HeaderMap;
use relevo_state::slots::{self, Acquired};
use relevo_state::{Ids, Owner, Record, RecordKey, RecordStore, StoreError, TransactError, Write};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;

use crate::auth::Principal;
use crate::clock::Clock;
use crate::error::{McpError, slot_failure};
use crate::headers;
use crate::registry::{ClientContext, InputRequest};
use crate::wire::{JsonObject, LEGACY_VERSIONS, header};

const SESSION_KIND: &str = "mcp-session";
const INPUT_KIND: &str = "mcp-input";
/// How many times one call may ask for input before the server gives up on it.
pub const MAX_INPUT_ROUNDS: usize = 8;
/// Resource subscriptions one session may hold.
pub const MAX_SUBSCRIPTIONS: usize = 32;
/// Server-to-client requests of one session that may wait for the client's answer at once.
pub const MAX_PENDING_INPUTS: usize = 4;
/// The largest `capabilities` a session keeps.
pub const MAX_CAPABILITIES_BYTES: usize = 8 * 1024;
/// The longest `clientInfo` string kept.
const MAX_INFO_CHARS: usize = 128;
const SESSIONS_KIND: &str = "mcp-sessions";
const PENDING_KIND: &str = "mcp-pending";
const POLL_FIRST: Duration = Duration::from_millis(50);
const POLL_MAX: Duration = Duration::from_secs(1);

/// What a session remembers between requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    /// The revision negotiated at `initialize` (one of [`LEGACY_VERSIONS`]).
    pub protocol_version: String,
    #[serde(default)]
    /// The capabilities the client declared at `initialize`.
    pub capabilities: JsonObject,
    #[serde(default)]
    /// The client's `clientInfo`, bounded by [`kept_client_info`].
    pub client_info: Option<Value>,
    /// Set by `logging/setLevel`; no `notifications/message` before it.
    #[serde(default)]
    pub log_level: Option<String>,
    /// URIs from `resources/subscribe`.
    #[serde(default)]
    pub subscriptions: Vec<String>,
    #[serde(default)]
    /// The session was ended: every later request of it gets 404, as for an unknown one.
    pub ended: bool,
}

impl Session {
    /// The client context handlers see, as if the client had sent it on this request.
    pub fn client(&self) -> ClientContext {
        ClientContext {
            protocol_version: self.protocol_version.clone(),
            capabilities: self.capabilities.clone(),
            info: self.client_info.clone(),
        }
    }
}

/// What a session keeps of `clientInfo`: its name, title and version, each bounded.
pub fn kept_client_info(info: &Value) -> Value {
    let mut kept = serde_json::Map::new();
    for field in ["name", "title", "version"] {
        if let Some(text) = info.get(field).and_then(Value::as_str) {
            kept.insert(
                field.into(),
                json!(text.chars().take(MAX_INFO_CHARS).collect::<String>()),
            );
        }
    }
    Value::Object(kept)
}

/// The version a session speaks: the client's if served, else the newest served (the client
/// then decides whether it can go on).
pub fn negotiate(requested: &str) -> &'static str {
    LEGACY_VERSIONS
        .iter()
        .find(|v| **v == requested)
        .copied()
        .unwrap_or(LEGACY_VERSIONS[0])
}

/// The session store, ids and bounds of legacy serving.
#[derive(Clone)]
pub struct Legacy {
    /// Where sessions and pending server-to-client requests are kept.
    pub store: Arc<dyn RecordStore>,
    /// Makes session ids.
    pub ids: Arc<dyn Ids>,
    /// The time source for expiry.
    pub clock: Arc<dyn Clock>,
    /// Lifetime of a session from `initialize`.
    pub session_ttl_secs: u64,
    /// How long a call waits for the client's answer to one server-to-client request.
    pub input_wait: Duration,
    /// Sessions one principal may hold open at once.
    pub max_sessions: usize,
    /// The session requests running in this process, for `notifications/cancelled`.
    pub in_flight: super::InFlight,
}

/// A session found for the caller.
#[derive(Debug, Clone)]
pub struct OpenSession {
    /// The session id (the `Mcp-Session-Id` value).
    pub id: String,
    /// What the session remembers.
    pub session: Session,
}

fn store_failure(error: StoreError) -> McpError {
    crate::error::store_failure("legacy session")(error)
}

impl Legacy {
    fn session_key(principal: &Principal, id: &str) -> RecordKey {
        RecordKey::new(
            Owner::personal(&principal.tenant, &principal.subject),
            SESSION_KIND,
            id,
        )
    }

    fn input_key(principal: &Principal, session: &str, request_id: &str) -> RecordKey {
        RecordKey::new(
            Owner::personal(&principal.tenant, &principal.subject),
            INPUT_KIND,
            &format!("{session}.{request_id}"),
        )
    }

    fn sessions_key(principal: &Principal) -> RecordKey {
        RecordKey::new(
            Owner::personal(&principal.tenant, &principal.subject),
            SESSIONS_KIND,
            "open",
        )
    }

    fn pending_key(principal: &Principal, session: &str) -> RecordKey {
        RecordKey::new(
            Owner::personal(&principal.tenant, &principal.subject),
            PENDING_KIND,
            session,
        )
    }

    /// Creates a session for the caller, within its share of open sessions; returns its id.
    pub async fn create(
        &self,
        principal: &Principal,
        session: &Session,
    ) -> Result<String, McpError> {
        let now = self.clock.now_unix();
        let body = serde_json::to_value(session).map_err(|_| McpError::Internal)?;
        let id = self.ids.new_id();
        let until = now + self.session_ttl_secs;
        let slots = Self::sessions_key(principal);
        match slots::acquire(&*self.store, &slots, &id, until, self.max_sessions, now)
            .await
            .map_err(slot_failure)?
        {
            Acquired::Held => {}
            Acquired::Full => {
                return Err(McpError::LimitReached {
                    what: "open sessions",
                    max: self.max_sessions,
                });
            }
        }
        self.store
            .create(&Self::session_key(principal, &id), &body, Some(until), now)
            .await
            .map_err(store_failure)?;
        Ok(id)
    }

    /// Ends session `id`: its record is removed and its slot given back.
    pub async fn end(&self, principal: &Principal, id: &str) -> Result<(), McpError> {
        let (record, _) = self.read(principal, id).await?;
        let now = self.clock.now_unix();
        let delete = [Write::Delete {
            key: record.key.clone(),
            expected_revision: record.revision,
        }];
        match self.store.transact(&delete, now).await {
            Ok(_)
            | Err(TransactError::Refused {
                cause: StoreError::NotFound,
                ..
            }) => {}
            Err(TransactError::Refused { .. }) => {
                return Err(McpError::Retryable(crate::Retry::Contention));
            }
            Err(TransactError::Store(error)) => return Err(store_failure(error)),
            Err(TransactError::Invalid(_)) => return Err(McpError::Internal),
        }
        slots::release(&*self.store, &Self::sessions_key(principal), id, now)
            .await
            .map_err(slot_failure)?;
        Ok(())
    }

    /// The caller's live session named by `Mcp-Session-Id`: 400 without the header, 404 for an
    /// unknown, expired, ended or foreign one.
    pub async fn open(
        &self,
        principal: &Principal,
        headers: &HeaderMap,
    ) -> Result<OpenSession, McpError> {
        let id = headers::single(headers, header::SESSION_ID)
            .map_err(|_| McpError::SessionNotFound)?
            .ok_or(McpError::SessionRequired)?;
        let (_, session) = self.read(principal, &id).await?;
        Ok(OpenSession { id, session })
    }

    /// The caller's live session `id`.
    pub async fn open_by_id(&self, principal: &Principal, id: &str) -> Result<Session, McpError> {
        Ok(self.read(principal, id).await?.1)
    }

    async fn read(&self, principal: &Principal, id: &str) -> Result<(Record, Session), McpError> {
        let record = self
            .store
            .get(&Self::session_key(principal, id), self.clock.now_unix())
            .await
            .map_err(store_failure)?
            .ok_or(McpError::SessionNotFound)?;
        match serde_json::from_value::<Session>(record.body.clone()) {
            Ok(session) if !session.ended => Ok((record, session)),
            _ => Err(McpError::SessionNotFound),
        }
    }

    /// Changes a live session by a conditional write, retrying when another request wrote first.
    pub async fn update(
        &self,
        principal: &Principal,
        id: &str,
        change: impl Fn(&mut Session),
    ) -> Result<Session, McpError> {
        let key = Self::session_key(principal, id);
        for _ in 0..5 {
            let (record, mut session) = self.read(principal, id).await?;
            change(&mut session);
            let body = serde_json::to_value(&session).map_err(|_| McpError::Internal)?;
            match self
                .store
                .update(&key, record.revision, &body, self.clock.now_unix())
                .await
            {
                Ok(_) => return Ok(session),
                Err(StoreError::Conflict { .. }) => continue,
                Err(StoreError::NotFound) => return Err(McpError::SessionNotFound),
                Err(other) => return Err(store_failure(other)),
            }
        }
        Err(McpError::Retryable(crate::Retry::Contention))
    }

    /// Stores the client's answer to request `request_id` of `session`. `Ok(false)` when no
    /// such request is pending (never sent, expired, or already answered).
    pub async fn store_answer(
        &self,
        principal: &Principal,
        session: &str,
        request_id: &str,
        message: &JsonObject,
    ) -> Result<bool, McpError> {
        let key = Self::input_key(principal, session, request_id);
        let now = self.clock.now_unix();
        let Some(pending) = self.store.get(&key, now).await.map_err(store_failure)? else {
            return Ok(false);
        };
        if pending.body.get("state").and_then(Value::as_str) != Some("waiting") {
            return Ok(false);
        }
        let answered = json!({ "state": "answered", "message": message });
        match self
            .store
            .update(&key, pending.revision, &answered, now)
            .await
        {
            Ok(_) => Ok(true),
            Err(StoreError::Conflict { .. } | StoreError::NotFound) => Ok(false),
            Err(other) => Err(store_failure(other)),
        }
    }

    /// Sends `input` to the client as a JSON-RPC request on `stream` and waits for its answer.
    /// `Err` says why there is none, in words a person can act on.
    pub async fn ask(
        &self,
        principal: &Principal,
        session: &str,
        client: &ClientContext,
        input: &InputRequest,
        stream: &UnboundedSender<Bytes>,
    ) -> Result<Value, String> {
        let request_id = self.ids.new_id();
        let key = Self::input_key(principal, session, &request_id);
        let now = self.clock.now_unix();
        let wait_secs = self.input_wait.as_secs().max(1);
        let pending = Self::pending_key(principal, session);
        let until = now + wait_secs + 60;
        match slots::acquire(
            &*self.store,
            &pending,
            &request_id,
            until,
            MAX_PENDING_INPUTS,
            now,
        )
        .await
        {
            Ok(Acquired::Held) => {}
            Ok(Acquired::Full) => {
                return Err(format!(
                    "{MAX_PENDING_INPUTS} requests of this session already wait for your answers"
                ));
            }
            Err(error) => return Err(format!("the server could not record the request: {error}")),
        }
        let answer = self
            .ask_and_wait(client, input, stream, &request_id, &key)
            .await;
        if let Err(error) =
            slots::release(&*self.store, &pending, &request_id, self.clock.now_unix()).await
        {
            tracing::warn!(%error, "a pending request's slot was not given back; it lapses");
        }
        answer
    }

    /// Records the request as waiting, sends it, and polls for the answer.
    async fn ask_and_wait(
        &self,
        client: &ClientContext,
        input: &InputRequest,
        stream: &UnboundedSender<Bytes>,
        request_id: &str,
        key: &RecordKey,
    ) -> Result<Value, String> {
        let now = self.clock.now_unix();
        let wait_secs = self.input_wait.as_secs().max(1);
        self.store
            .create(
                key,
                &json!({ "state": "waiting" }),
                Some(now + wait_secs + 60),
                now,
            )
            .await
            .map_err(|e| format!("the server could not record the request: {e}"))?;
        let wire = input.to_wire();
        let method = wire["method"].as_str().unwrap_or_default().to_string();
        let mut params = wire.get("params").cloned().unwrap_or_else(|| json!({}));
        if client.protocol_version.as_str() < "2025-11-25"
            && params.get("mode").and_then(Value::as_str) == Some("form")
            && let Some(object) = params.as_object_mut()
        {
            object.remove("mode"); // 2025-06-18 elicitation has form mode only, unnamed
        }
        let message =
            json!({ "jsonrpc": "2.0", "id": request_id, "method": method, "params": params });
        if stream.send(crate::server::sse_frame(&message)).is_err() {
            return Err("the client closed the stream".into());
        }
        let deadline = tokio::time::Instant::now() + self.input_wait;
        let mut delay = POLL_FIRST;
        loop {
            let record = self
                .store
                .get(key, self.clock.now_unix())
                .await
                .map_err(|e| e.to_string())?;
            match record {
                Some(record)
                    if record.body.get("state").and_then(Value::as_str) == Some("answered") =>
                {
                    let answer = &record.body["message"];
                    if let Some(result) = answer.get("result") {
                        return Ok(result.clone());
                    }
                    let reason = answer["error"]["message"]
                        .as_str()
                        .unwrap_or("no reason given");
                    return Err(format!("the client refused {method}: {reason}"));
                }
                Some(_) => {}
                None => return Err(format!("the request {method} expired")),
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Err(format!(
                    "no answer to {method} within {} s",
                    self.input_wait.as_secs()
                ));
            }
            tokio::select! {
                () = tokio::time::sleep(delay.min(deadline - now)) => {}
                () = stream.closed() => return Err("the client closed the stream".into()),
            }
            delay = (delay * 2).min(POLL_MAX);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_a_served_version_and_offers_the_newest_otherwise() {
        assert_eq!(negotiate("2025-06-18"), "2025-06-18");
        assert_eq!(negotiate("2025-11-25"), "2025-11-25");
        assert_eq!(negotiate("2024-11-05"), "2025-11-25");
        assert_eq!(negotiate(""), "2025-11-25");
    }

    #[test]
    fn session_record_reads_back_with_defaults() {
        let session: Session = serde_json::from_value(json!({ "protocolVersion": "2025-11-25" }))
            .unwrap_or_else(|e| {
                panic!("a minimal session record deserializes: {e}");
            });
        assert!(session.subscriptions.is_empty() && session.log_level.is_none() && !session.ended);
        assert_eq!(session.client().protocol_version, "2025-11-25");
    }
}
