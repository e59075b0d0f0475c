//! `subscriptions/listen` across instances.
//!
//! On Lambda the change a listener wants to hear of is almost always made in another function
//! environment than the one holding its stream, so in-process events alone would be silence. The
//! store is the shared truth: the stream reads each subscribed resource every `listen_poll_ms`,
//! as the listener, and sends `notifications/resources/updated` when the digest of its contents
//! changes. A change made on this instance is sent at once (and the resource read again, so the
//! next poll does not send it twice).
//!
//! How a poll reads: a resource that declares its watch record (`Resource::watch`,
//! `ResourceTemplate::watch`, [`crate::registry::WatchRecord`]) is read as that record, and every
//! declared record of the stream is read in one [`get_many`](relevo_state::RecordStore::get_many) (one `BatchGetItem` on
//! DynamoDB, one `IN (…)` query on SQLite), with no handler run; a resource without a
//! declaration is read through the same handler as `resources/read`.
//!
//! Invariants and bounds:
//! - The ack honours only subscriptions that name a resource the listener may read (a resource's
//!   URI or a template's, with the scopes it declares): anything else could only be heard from the
//!   instance that made the change, or is not the listener's to hear of.
//! - At most [`MAX_WATCHED`] subscriptions per stream (more is invalid params), and
//!   `listen_max_secs / listen_poll_ms` polls.
//! - A poll is paid for by what it reads, before it reads: 1 unit of the tenant's request-rate
//!   quota, plus 1 per resource read through its handler (its declared records cost nothing more:
//!   they are one batch read). The units are counted in one conditional write
//!   ([`count_up_by`](relevo_state::RecordStore::count_up_by)), all or none: a poll the quota cannot afford spends nothing,
//!   reads nothing, and ends the stream with the listen result, as its lifetime does (so does a
//!   store that cannot count it). Opening a stream pays its handler reads the same way (its one
//!   unit is the request's own admission), before it takes its slot.
//! - So a tenant cannot make the deployment run more handler reads than its quota allows, however
//!   many streams and subscriptions it holds: a stream of 32 undeclared resources costs 33 units
//!   a poll; one of 32 declared records, 1 unit and one batch read.
//! - The stream takes its slot (below) before it reads anything: a refused stream reads no
//!   watched resource.
//! - Only resources that exist when the stream opens are watched (and acknowledged): a
//!   subscription to a missing resource, or to one the listener may not read (another
//!   principal's reads as missing), costs the one read that found it absent and nothing after,
//!   so made-up URIs cannot buy polling. A listener learns only what it could read: a declared
//!   record is one of the listener's own (tenant and subject from the verified token; anything
//!   else is read through the handler instead).
//! - When every read of a poll fails for [`FAILED_POLLS`] polls in a row (store unavailable,
//!   timeouts), the stream ends with the listen result rather than go quiet; the client listens
//!   again.
//! - A principal holds at most `max_listen_streams` streams at once, counted in the store
//!   across instances ([`relevo_state::slots`]); one more is refused with 429. A stream gives its
//!   slot back when it ends, and a slot whose instance died lapses after the stream's lifetime.
//!
//! Threat model: an authenticated listener of one tenant (or a leaked token) choosing what to
//! subscribe to, how many streams to open, and how often to reopen them, to make the operator
//! pay (store reads, handler runs) or to learn of changes to others' records. Both are bounded
//! above: every read is paid from its tenant's quota before it happens, and only what the
//! listener may read is watched.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use http::HeaderValue;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use super::guard::Surface;
use super::{McpServer, RESULT_TYPE_HEADER, Reply, run_handler, sse_frame, sse_reply};
use crate::auth::Principal;
use crate::error::{McpError, slot_failure};
use crate::ladder::ValidRequest;
use crate::notify::Notifier;
use crate::registry::{Call, ClientContext, Handler, Outcome, Who};
use crate::wire::{JsonObject, meta};
use relevo_state::slots::{self, Acquired};
use relevo_state::{Owner, Record, RecordKey};

/// Resource subscriptions one listen stream may hold.
pub const MAX_WATCHED: usize = 32;
/// Polls in a row whose every read failed before the stream ends.
pub const FAILED_POLLS: u32 = 3;
/// A listen slot outlives its stream's lifetime by this much before it lapses on its own.
const LISTEN_SLOT_SLACK_SECS: u64 = 30;
/// One read of a watched resource (or one batch read) gives up after this long.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// A stream's slot among its principal's open streams: the slot record and the holder id.
pub(crate) type Slot = Option<(RecordKey, String)>;

/// What one read of a watched resource saw.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    /// The digest of its contents (of its record's body, for a declared record).
    Content(String),
    /// Not there, or not the listener's to read.
    Absent,
    /// The read failed (store unavailable, timeout): nothing is known.
    Failed,
}

/// How a watched resource is read.
#[derive(Clone)]
enum Source {
    /// Its declared record, in the stream's one batch read.
    Record(RecordKey),
    /// Its handler, with the template variables the URI binds: one quota unit per read.
    Handler(Handler, JsonObject),
}

/// The state one listen stream polls.
struct Watch {
    server: McpServer,
    principal: Principal,
    client: ClientContext,
    /// Every watched resource: how it is read, and what its last read that saw anything saw.
    watched: BTreeMap<String, (Source, Seen)>,
    tag: Value,
}

impl Watch {
    /// How `uri` is read by this listener, if it may read it at all.
    fn source(&self, uri: &str) -> Option<Source> {
        let readable = self.server.readable(&self.principal, uri).ok()?;
        let who = Who::new(&self.principal.tenant, &self.principal.subject);
        let declared = self.server.store.as_ref().and(readable.watch.as_ref());
        Some(
            match declared.and_then(|watch| watch.key(&who, &readable.arguments)) {
                Some(key) => Source::Record(key),
                None => Source::Handler(readable.handler, readable.arguments),
            },
        )
    }

    /// The quota units a poll of `sources` costs: 1, and 1 per handler read.
    fn units<'a>(sources: impl Iterator<Item = &'a Source>) -> u32 {
        1 + sources
            .filter(|source| matches!(source, Source::Handler(..)))
            .count() as u32
    }

    async fn read_handler(&self, uri: &str, handler: &Handler, arguments: &JsonObject) -> Seen {
        let call = Call {
            arguments: arguments.clone(),
            uri: Some(uri.to_string()),
            input_responses: JsonObject::new(),
            state: None,
            client: self.client.clone(),
            principal: self.principal.clone(),
            notifier: Notifier::silent(),
            answers: None,
        };
        match run_handler(
            handler,
            call,
            Some(tokio::time::Instant::now() + READ_TIMEOUT),
        )
        .await
        {
            Ok(Outcome::Complete(result)) => Seen::Content(relevo_state::canonical_digest(
                result.get("contents").unwrap_or(&Value::Null),
            )),
            Ok(_) => Seen::Absent,
            Err(McpError::Retryable(_) | McpError::Internal) => Seen::Failed,
            Err(_) => Seen::Absent,
        }
    }

    /// The records of `keys` in one batch read: what each saw, in order (all failed when the
    /// read failed).
    async fn read_records(&self, keys: &[RecordKey]) -> Vec<Seen> {
        let Some(store) = &self.server.store else {
            return vec![Seen::Failed; keys.len()];
        };
        let read = tokio::time::timeout(
            READ_TIMEOUT,
            store.get_many(keys, self.server.clock.now_unix()),
        )
        .await;
        match read {
            Ok(Ok(records)) if records.len() == keys.len() => {
                records.iter().map(seen_record).collect()
            }
            Ok(Ok(_)) | Ok(Err(_)) | Err(_) => vec![Seen::Failed; keys.len()],
        }
    }

    /// Reads every resource of `sources`: the declared records in one batch, then each other
    /// resource through its handler.
    async fn read_all(&self, sources: &[(String, Source)]) -> Vec<(String, Seen)> {
        let declared: Vec<(&String, &RecordKey)> = sources
            .iter()
            .filter_map(|(uri, source)| match source {
                Source::Record(key) => Some((uri, key)),
                Source::Handler(..) => None,
            })
            .collect();
        let mut seen = Vec::with_capacity(sources.len());
        if !declared.is_empty() {
            let keys: Vec<RecordKey> = declared.iter().map(|(_, key)| (*key).clone()).collect();
            let records = self.read_records(&keys).await;
            seen.extend(declared.iter().map(|(uri, _)| (*uri).clone()).zip(records));
        }
        for (uri, source) in sources {
            if let Source::Handler(handler, arguments) = source {
                seen.push((
                    uri.clone(),
                    self.read_handler(uri, handler, arguments).await,
                ));
            }
        }
        seen
    }

    fn updated(&self, uri: &str) -> Bytes {
        sse_frame(&json!({
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": { "_meta": self.tag, "uri": uri }
        }))
    }

    /// Keeps what a read of `uri` saw; true when it changed since the last read that saw
    /// anything, `None` when the read failed.
    fn changed(&mut self, uri: &str, seen: Seen) -> Option<bool> {
        if seen == Seen::Failed {
            return None;
        }
        let (_, last) = self.watched.get_mut(uri)?;
        let before = std::mem::replace(last, seen.clone());
        Some(before != seen)
    }

    /// Reads `uri` again (alone); true when it changed.
    async fn changed_one(&mut self, uri: &str) -> Option<bool> {
        let (source, _) = self.watched.get(uri)?;
        let sources = [(uri.to_string(), source.clone())];
        let (_, seen) = self.read_all(&sources).await.pop()?;
        self.changed(uri, seen)
    }

    /// The quota units the next poll costs.
    fn poll_units(&self) -> u32 {
        Self::units(self.watched.values().map(|(source, _)| source))
    }

    /// One poll (already paid for): the frames to send, and whether every read failed.
    async fn poll(&mut self) -> (Vec<Bytes>, bool) {
        let sources: Vec<(String, Source)> = self
            .watched
            .iter()
            .map(|(uri, (source, _))| (uri.clone(), source.clone()))
            .collect();
        let (mut frames, mut failed) = (Vec::new(), 0);
        for (uri, seen) in self.read_all(&sources).await {
            match self.changed(&uri, seen) {
                Some(true) => frames.push(self.updated(&uri)),
                Some(false) => {}
                None => failed += 1,
            }
        }
        (frames, !sources.is_empty() && failed == sources.len())
    }
}

/// What a read of a declared record saw: the digest of its body, or absent.
fn seen_record(record: &Option<Record>) -> Seen {
    match record {
        Some(record) => Seen::Content(relevo_state::canonical_digest(&record.body)),
        None => Seen::Absent,
    }
}

impl McpServer {
    /// `subscriptions/listen`: acknowledges the subset of the filter this server honours
    /// (subscriptions to readable resources; its lists never change at run time), then sends
    /// `notifications/resources/updated` for changes of those resources made by any instance,
    /// each tagged with the subscription id, and ends with the listen result after
    /// `listen_max_secs` (before a function's time limit), when the store cannot be read, or
    /// when the client goes away.
    pub(super) async fn listen(
        &self,
        request: &ValidRequest,
        principal: &Principal,
    ) -> Result<Reply, McpError> {
        let Some(filter) = request
            .params
            .get("notifications")
            .and_then(Value::as_object)
        else {
            return Err(McpError::invalid_params(
                "params.notifications must be an object",
            ));
        };
        let subscriptions: Vec<String> = match filter.get("resourceSubscriptions") {
            None => Vec::new(),
            Some(Value::Array(uris)) if uris.iter().all(Value::is_string) => uris
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
            Some(_) => {
                return Err(McpError::invalid_params(
                    "resourceSubscriptions must be an array of URIs",
                ));
            }
        };
        if subscriptions.len() > MAX_WATCHED {
            return Err(McpError::invalid_params(format!(
                "at most {MAX_WATCHED} resourceSubscriptions per stream"
            )));
        }
        let tag = json!({ meta::SUBSCRIPTION_ID: request.id.clone() });
        let mut watch = Watch {
            server: self.clone(),
            principal: principal.clone(),
            client: request.client.clone(),
            watched: BTreeMap::new(),
            tag: tag.clone(),
        };
        // Only what the caller may read (its scopes, through the one guard) can be watched.
        let sources: Vec<(String, Source)> = subscriptions
            .into_iter()
            .filter_map(|uri| watch.source(&uri).map(|source| (uri, source)))
            .collect();
        // The baseline's handler reads are paid for before anything is read or held (the
        // request's own unit was its admission).
        let handler_reads = Watch::units(sources.iter().map(|(_, source)| source)) - 1;
        if handler_reads > 0 {
            self.admit_surface_units(Surface::ListenPoll, principal, handler_reads)
                .await?;
        }
        // The slot before any read: a refused stream costs no read of what it would watch.
        let slot = self
            .take_stream_slot(principal, "listen-streams", "open listen streams")
            .await?;
        // The baseline before the ack: a change after the ack is a change. What is absent now
        // is not watched.
        let mut baseline: BTreeMap<String, Seen> =
            watch.read_all(&sources).await.into_iter().collect();
        let mut watched = Vec::new();
        for (uri, source) in sources {
            if let Some(seen) = baseline.remove(&uri).filter(|seen| *seen != Seen::Absent) {
                watch.watched.insert(uri.clone(), (source, seen));
                watched.push(uri);
            }
        }
        let mut honoured = JsonObject::new();
        if !watched.is_empty() {
            honoured.insert("resourceSubscriptions".into(), json!(watched));
        }
        let ack = json!({
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": { "_meta": tag, "notifications": honoured }
        });
        let mut result = JsonObject::new();
        result.insert("_meta".into(), tag);
        let done = self.decorate(request, result, "complete");

        let (tx, rx) = mpsc::unbounded_channel();
        let _ = tx.send(sse_frame(&ack));
        let events = self.events.subscribe();
        let limits = (
            Duration::from_secs(self.config.listen_max_secs),
            self.listen_poll(),
        );
        let server = self.clone();
        tokio::spawn(async move {
            if run(watch, events, &tx, limits).await {
                let _ = tx.send(sse_frame(&done));
            }
            server.give_back_stream_slot(slot).await;
        });
        let mut reply = sse_reply(rx, self.keepalive());
        reply
            .headers_mut()
            .insert(RESULT_TYPE_HEADER, HeaderValue::from_static("stream"));
        Ok(reply)
    }

    /// Whether a listen stream stays open to carry resource updates (`listen_max_secs` above
    /// 0): then `server/discover` advertises `resources.subscribe`. A buffered integration
    /// acknowledges and ends a stream at once, so it carries no update and advertises none.
    pub(crate) fn honours_subscriptions(&self) -> bool {
        self.config.listen_max_secs > 0
    }

    /// A slot among the principal's open streams of `kind` (listen streams, 2025-11-25 GET
    /// streams), at most `max_listen_streams`; none to take without a store.
    pub(crate) async fn take_stream_slot(
        &self,
        principal: &Principal,
        kind: &str,
        what: &'static str,
    ) -> Result<Slot, McpError> {
        let Some(store) = &self.store else {
            return Ok(None);
        };
        let key = RecordKey::new(
            Owner::personal(&principal.tenant, &principal.subject),
            kind,
            "open",
        );
        let holder = relevo_state::Ids::new_id(&relevo_state::RandomIds);
        let now = self.clock.now_unix();
        let until = now + self.config.listen_max_secs + LISTEN_SLOT_SLACK_SECS;
        let max = self.config.max_listen_streams;
        match slots::acquire(&**store, &key, &holder, until, max, now)
            .await
            .map_err(slot_failure)?
        {
            Acquired::Held => Ok(Some((key, holder))),
            Acquired::Full => Err(McpError::LimitReached { what, max }),
        }
    }

    pub(crate) async fn give_back_stream_slot(&self, slot: Slot) {
        if let (Some(store), Some((key, holder))) = (&self.store, slot)
            && let Err(error) = slots::release(&**store, &key, &holder, self.clock.now_unix()).await
        {
            // It lapses on its own at the stream's end of life.
            tracing::warn!(%error, "a stream's slot was not given back");
        }
    }

    fn listen_poll(&self) -> Duration {
        Duration::from_millis(self.config.listen_poll_ms.max(50))
    }
}

/// Runs one stream until its end; false when the client went away (nothing more to send).
async fn run(
    mut watch: Watch,
    mut events: broadcast::Receiver<crate::notify::ResourceEvent>,
    tx: &mpsc::UnboundedSender<Bytes>,
    (lifetime, poll): (Duration, Duration),
) -> bool {
    let deadline = tokio::time::sleep(lifetime);
    tokio::pin!(deadline);
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + poll, poll);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failed_polls = 0;
    loop {
        let frames = tokio::select! {
            () = &mut deadline => return true,
            () = tx.closed() => return false,
            _ = ticker.tick(), if !watch.watched.is_empty() => {
                let units = watch.poll_units();
                if let Err(error) = watch.server.admit_surface_units(Surface::ListenPoll, &watch.principal, units).await {
                    tracing::info!(%error, "listen stream ended: its poll was not admitted");
                    return true;
                }
                let (frames, all_failed) = watch.poll().await;
                failed_polls = if all_failed { failed_polls + 1 } else { 0 };
                if failed_polls >= FAILED_POLLS {
                    tracing::warn!(cause = "store", "listen stream ended: its resources could not be read");
                    return true;
                }
                frames
            }
            event = events.recv() => match event {
                Ok(event) if event.tenant == watch.principal.tenant && event.subject == watch.principal.subject => {
                    local_change(&mut watch, &event.uri).await
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => Vec::new(),
                Err(broadcast::error::RecvError::Closed) => return true,
            },
        };
        for frame in frames {
            if tx.send(frame).is_err() {
                return false;
            }
        }
    }
}

/// A change this instance made to `uri`: sent at once when it is (or is below) a watched
/// resource, unless the poll already sent it.
async fn local_change(watch: &mut Watch, uri: &str) -> Vec<Bytes> {
    if watch.watched.contains_key(uri) {
        // Read again so the poll does not send it twice; a failed read still reports it.
        return match watch.changed_one(uri).await {
            Some(false) => Vec::new(),
            _ => vec![watch.updated(uri)],
        };
    }
    if watch
        .watched
        .keys()
        .any(|watched| uri.starts_with(watched.as_str()))
    {
        return vec![watch.updated(uri)];
    }
    Vec::new()
}
