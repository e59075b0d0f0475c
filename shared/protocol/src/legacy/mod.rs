//! Handshake-era (2025-11-25, 2025-06-18) clients, served by the same stateless functions: all
//! that is theirs is here.
//!
//! A legacy client opens with `initialize`; the server answers with an `Mcp-Session-Id` and from
//! then on the client names that session on every request. Nothing of the session lives in a
//! process: it is a record in the [`relevo_state::RecordStore`] (what the client declared, its log level, its
//! resource subscriptions), so any function instance serves any request of it. Server-to-client
//! requests (elicitation, sampling, roots) leave on the SSE stream of the request that needs
//! them; the client's answer is a separate POST, possibly to another instance, which stores it in
//! a pending record the waiting instance polls within a bounded wait.
//!
//! Invariants:
//! - A session record is keyed by the verified principal (tenant and subject) and an unguessable
//!   id. A session id never authenticates: every request is authenticated first, and another
//!   principal's session id reads exactly like one that never existed (404).
//! - Sessions expire (`expires_at`); an ended (DELETE) or expired session is a 404, after which a
//!   client initializes again.
//! - An answer is stored only into a pending record this server created for a request it sent on
//!   that session, and only once: the first answer wins, later ones change nothing.
//! - Waiting is bounded ([`Legacy::input_wait`]); a closed stream stops the wait at once.
//! - `notifications/cancelled` cancels the caller's request of that id in that session if it
//!   runs in this process, and is otherwise ignored; it reads and writes nothing in the store.
//! - Everything a client can make us keep is bounded: sessions per principal
//!   ([`Legacy::max_sessions`], counted across instances), what a session record holds (the
//!   declared capabilities up to [`MAX_CAPABILITIES_BYTES`], of `clientInfo` only its name, title
//!   and version, [`MAX_SUBSCRIPTIONS`] subscriptions) and the requests waiting for its answers
//!   ([`MAX_PENDING_INPUTS`] at once). `DELETE` removes the session record and frees its slot.
//!
//! Threat model: session ids, request ids and answers are attacker-controlled input. They are
//! used only as parts of keys under the caller's own principal, never to find a principal.
//!
//! Layout:
//! - `sessions`: the session and pending-answer records ([`Legacy`]).
//! - `cancel`: `notifications/cancelled`, the session's requests running in this process by
//!   their id ([`InFlight`]); on per-invocation Lambda it reaches nothing (see there).
//! - `serve`: the server's side, `initialize`, the requests of a session, its GET stream and
//!   DELETE, subscriptions and the server-to-client requests of a call (methods of
//!   [`crate::McpServer`]).
//!
//! What the ladder recognises as a legacy message ([`crate::ladder::LegacyMessage`]) and its
//! error envelope stay with the ladder and the replies, which serve both wires.

mod cancel;
mod serve;
mod sessions;

pub use cancel::{InFlight, MAX_IN_FLIGHT, Registration};

pub use sessions::{
    Legacy, MAX_CAPABILITIES_BYTES, MAX_INPUT_ROUNDS, MAX_PENDING_INPUTS, MAX_SUBSCRIPTIONS,
    OpenSession, Session, kept_client_info, negotiate,
};
