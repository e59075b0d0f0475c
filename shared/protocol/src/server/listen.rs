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
//!   they are one batch read) and 1 per watched task. The units are counted in one conditional
//!   write ([`count_up_by`](relevo_state::RecordStore::count_up_by)), all or none: a poll the quota cannot afford spends nothing,
//!   reads nothing, and ends the stream with the listen result, as its lifetime does (so does a
//!   store that cannot count it). Opening a stream pays its handler reads and one read per task
//!   id asked for the same way (its one unit is the request's own admission), before it takes
//!   its slot.
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
//! Tasks (the Tasks extension's `notifications.taskIds`): honoured only where streams stay open
//! (`listen_max_secs` above 0) and only for a request that declares the extension (one that
//! asks without declaring it is `-32021`, as the extension requires). Of the ids asked for
//! (at most [`MAX_WATCHED_TASKS`], more is invalid params), the ack echoes those of tasks the
//! listener could `tasks/get` (its own tenant and subject, the same scopes); any other id is
//! left out silently, exactly as an unknown one, so an ack reveals no other principal's task. A
//! watched task is read each poll (1 quota unit per task, paid with the poll, before it reads),
//! and `notifications/tasks` carries its full `DetailedTask` (what `tasks/get` would answer)
//! whenever its status, `statusMessage` or `inputRequests` change; a task already terminal when
//! the stream opens is sent once after the ack. After a terminal state (or once the task is gone)
//! the id is no longer read.
//!
//! Work linear in the input: at most [`MAX_WATCHED`] URIs, each looked up once when the stream
//! opens through the guard's `readable` (a static resource's lookup, then matching linear in the
//! URI's length against each template the listener may read, [`crate::registry::uri_template`];
//! a URI over 8 KiB matches none), never again per poll; at most [`MAX_WATCHED_TASKS`] task ids,
//! deduplicated among themselves.
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

use super::guard::{Surface, TaskUse};
use super::{McpServer, RESULT_TYPE_HEADER, Reply, run_handler, sse_frame, sse_reply};
use crate::auth::Principal;
use crate::error::{McpError, slot_failure};
use crate::ladder::ValidRequest;
use crate::notify::Notifier;
use crate::registry::{Call, ClientContext, Handler, Outcome, Who};
use crate::tasks;
use crate::wire::{JsonObject, meta};
use relevo_state::slots::{self, Acquired};
use relevo_state::{Job, JobRef, Owner, Record, RecordKey};

/// Resource subscriptions one listen stream may hold.
pub const MAX_WATCHED: usize = 32;
/// Task ids one listen stream may watch (the Tasks extension's `taskIds`).
pub const MAX_WATCHED_TASKS: usize = 16;
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

/// What one read of a watched task saw.
enum TaskRead {
    /// The job, the listener's own.
    Found(Box<Job>),
    /// Not there (never was, expired, or not the listener's).
    Gone,
    /// The read failed (store unavailable, timeout): nothing is known.
    Failed,
}

/// What a change of a task is judged by: its status, status message and input requests (a
/// new `lastUpdatedAt` alone is no change).
fn task_state(task: &JsonObject) -> Value {
    json!([
        task.get("status"),
        task.get("statusMessage"),
        task.get("inputRequests")
    ])
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
    /// Every watched task (by id): its job and the state last sent or seen.
    tasks: BTreeMap<String, (JobRef, Value)>,
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
            jobs: None,
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

    /// The quota units the next poll costs: the resources' units, and 1 per watched task.
    fn poll_units(&self) -> u32 {
        Self::units(self.watched.values().map(|(source, _)| source)) + self.tasks.len() as u32
    }

    /// Whether a poll has anything to read.
    fn polls(&self) -> bool {
        !self.watched.is_empty() || !self.tasks.is_empty()
    }

    /// The listener's job `id` (its tenant and subject: another principal's reads as gone).
    fn job_ref(&self, id: &str) -> JobRef {
        JobRef {
            tenant: self.principal.tenant.clone(),
            subject: self.principal.subject.clone(),
            id: id.to_string(),
        }
    }

    async fn read_task(&self, job: &JobRef) -> TaskRead {
        let Some(engine) = &self.server.tasks else {
            return TaskRead::Failed;
        };
        match tokio::time::timeout(READ_TIMEOUT, engine.store.get_job(job)).await {
            Ok(Ok(Some(found))) => TaskRead::Found(Box::new(found)),
            Ok(Ok(None)) => TaskRead::Gone,
            Ok(Err(_)) | Err(_) => TaskRead::Failed,
        }
    }

    /// `notifications/tasks` with the task as `tasks/get` would answer it.
    fn task_notification(&self, mut task: JsonObject) -> Bytes {
        task.insert("_meta".into(), self.tag.clone());
        sse_frame(&json!({
            "jsonrpc": "2.0",
            "method": "notifications/tasks",
            "params": task
        }))
    }

    /// Reads every watched task: the frames of those that changed, and how many reads failed.
    /// A task that reached a terminal state (or is gone) is no longer watched.
    async fn poll_tasks(&mut self) -> (Vec<Bytes>, usize) {
        let (mut frames, mut failed) = (Vec::new(), 0);
        let ids: Vec<(String, JobRef)> = self
            .tasks
            .iter()
            .map(|(id, (job, _))| (id.clone(), job.clone()))
            .collect();
        for (id, job) in ids {
            match self.read_task(&job).await {
                TaskRead::Found(found) => {
                    let task = tasks::detailed_task(&found);
                    let state = task_state(&task);
                    let changed = self
                        .tasks
                        .get_mut(&id)
                        .map(|(_, last)| std::mem::replace(last, state.clone()) != state);
                    if changed == Some(true) {
                        frames.push(self.task_notification(task));
                    }
                    if found.status.is_terminal() {
                        self.tasks.remove(&id);
                    }
                }
                TaskRead::Gone => {
                    self.tasks.remove(&id);
                }
                TaskRead::Failed => failed += 1,
            }
        }
        (frames, failed)
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
        let reads = sources.len() + self.tasks.len();
        let (task_frames, task_failed) = self.poll_tasks().await;
        frames.extend(task_frames);
        failed += task_failed;
        (frames, reads > 0 && failed == reads)
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
    /// (subscriptions to readable resources, the listener's own task ids; its lists never change
    /// at run time), then sends `notifications/resources/updated` for changes of those resources
    /// made by any instance and `notifications/tasks` for changes of those tasks, each tagged
    /// with the subscription id, and ends with the listen result after
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
        let task_ids = self.task_ids(request, filter)?;
        let tag = json!({ meta::SUBSCRIPTION_ID: request.id.clone() });
        let mut watch = Watch {
            server: self.clone(),
            principal: principal.clone(),
            client: request.client.clone(),
            watched: BTreeMap::new(),
            tasks: BTreeMap::new(),
            tag: tag.clone(),
        };
        // Only what the caller may read (its scopes, through the one guard) can be watched.
        let sources: Vec<(String, Source)> = subscriptions
            .into_iter()
            .filter_map(|uri| watch.source(&uri).map(|source| (uri, source)))
            .collect();
        // The baseline's handler and task reads are paid for before anything is read or held
        // (the request's own unit was its admission).
        let handler_reads = Watch::units(sources.iter().map(|(_, source)| source)) - 1;
        let reads = handler_reads + task_ids.len() as u32;
        if reads > 0 {
            self.admit_surface_units(Surface::ListenPoll, principal, reads)
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
        // Only the listener's own tasks, as `tasks/get` would find them; any other id is left
        // out as an unknown one is. A task already terminal is sent once, after the ack.
        let (mut accepted, mut finished) = (Vec::new(), Vec::new());
        for id in task_ids {
            let job = watch.job_ref(&id);
            if let TaskRead::Found(found) = watch.read_task(&job).await
                && matches!(
                    self.reachable_task(principal, &found, TaskUse::Read),
                    Ok(true)
                )
            {
                let task = tasks::detailed_task(&found);
                if found.status.is_terminal() {
                    finished.push(watch.task_notification(task));
                } else {
                    watch.tasks.insert(id.clone(), (job, task_state(&task)));
                }
                accepted.push(id);
            }
        }
        let mut honoured = JsonObject::new();
        if !watched.is_empty() {
            honoured.insert("resourceSubscriptions".into(), json!(watched));
        }
        if !accepted.is_empty() {
            honoured.insert("taskIds".into(), json!(accepted));
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
        for frame in finished {
            let _ = tx.send(frame);
        }
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

    /// The task ids of the filter this stream may watch: none where streams do not stay open
    /// or without a task engine; `-32021` when the request asks for some without declaring
    /// the Tasks extension; at most [`MAX_WATCHED_TASKS`], each once, in the order asked.
    fn task_ids(
        &self,
        request: &ValidRequest,
        filter: &JsonObject,
    ) -> Result<Vec<String>, McpError> {
        let ids: Vec<String> = match filter.get("taskIds") {
            None => Vec::new(),
            Some(Value::Array(ids)) if ids.iter().all(Value::is_string) => ids
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
            Some(_) => {
                return Err(McpError::invalid_params(
                    "taskIds must be an array of task ids",
                ));
            }
        };
        if ids.len() > MAX_WATCHED_TASKS {
            return Err(McpError::invalid_params(format!(
                "at most {MAX_WATCHED_TASKS} taskIds per stream"
            )));
        }
        if ids.is_empty() || self.tasks.is_none() {
            return Ok(Vec::new());
        }
        if !request.client.declares_tasks() {
            return Err(tasks::tasks_required());
        }
        if !self.honours_subscriptions() {
            return Ok(Vec::new());
        }
        let mut unique = Vec::with_capacity(ids.len());
        for id in ids {
            if !unique.contains(&id) {
                unique.push(id);
            }
        }
        Ok(unique)
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
            _ = ticker.tick(), if watch.polls() => {
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
