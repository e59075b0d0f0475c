//! Personal notes: the smallest stateful feature, showing handles and tenancy.
//!
//! A note id is a handle: minted by the server (128 random bits), returned as tool output, passed
//! back as an argument. The record is keyed by the caller's tenant and subject from the verified
//! token, so another tenant's or principal's id answers exactly like an id that never existed.

use std::sync::Arc;

use relevo_protocol::author::{Required, ToolContext, ToolError};
use relevo_protocol::wire::{ResourceContents, ToolAnnotations};
use relevo_protocol::{Clock, McpError, ResourceTemplate, Tool};
use relevo_state::{Ids, Owner, RecordKey, RecordStore};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::create_once::{self, NewRecord};

/// Notes expire a week after they are written.
pub const NOTE_LIFETIME_SECS: u64 = 7 * 24 * 3600;
const MAX_NOTE_CHARS: usize = 2000;
const KIND: &str = "note";

/// What the notes feature needs from the outside world.
#[derive(Clone)]
pub struct NotesPorts {
    pub records: Arc<dyn RecordStore>,
    pub ids: Arc<dyn Ids>,
    pub clock: Arc<dyn Clock>,
}

fn key(cx: &ToolContext, id: &str) -> RecordKey {
    note_record(
        Owner::personal(&cx.principal().tenant, &cx.principal().subject),
        id,
    )
}

/// The record of note `id` of `owner`: what the tools write, the resource reads, and listeners
/// watch.
fn note_record(owner: Owner, id: &str) -> RecordKey {
    RecordKey::new(owner, KIND, id)
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateArgs {
    #[schemars(length(min = 1, max = MAX_NOTE_CHARS))]
    text: String,
    /// Pass the same key when you retry a call whose answer you did not get: one note is made.
    #[schemars(length(min = 1, max = relevo_state::intent::MAX_KEY_CHARS))]
    idempotency_key: Option<String>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Created {
    note_id: String,
    uri: String,
    expires_at: u64,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReadArgs {
    #[schemars(length(min = 1, max = 64))]
    note_id: String,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Note {
    note_id: String,
    text: String,
}

pub fn note_create(ports: NotesPorts) -> Tool {
    Tool::typed(
        "note_create",
        "Saves a private note and returns its id (a handle only you can use). Notes expire 7 days after creation. Pass an idempotencyKey to make a retried call save one note.",
        move |args: CreateArgs, cx| {
            let ports = ports.clone();
            async move {
                if args.text.chars().count() > MAX_NOTE_CHARS {
                    return Err(ToolError::caller(format!("text must be 1 to {MAX_NOTE_CHARS} characters")));
                }
                let now = ports.clock.now_unix();
                let body = json!({ "text": args.text });
                let new = NewRecord { kind: KIND, body: &body, expires_at: Some(now + NOTE_LIFETIME_SECS), now };
                let (id, record) = create_once::create(&cx, args.idempotency_key.as_deref(), &*ports.records, &*ports.ids, new).await?;
                let expires_at = record.expires_at.unwrap_or(now + NOTE_LIFETIME_SECS);
                Ok(Created { uri: format!("notes://{id}"), note_id: id, expires_at })
            }
        },
    )
    .title("Create a note")
    .annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false))
    .scopes(&["notes:write"])
}

pub fn note_read(ports: NotesPorts) -> Tool {
    Tool::typed(
        "note_read",
        "Reads one of your notes by id.",
        move |args: ReadArgs, cx| {
            let ports = ports.clone();
            async move {
                let record = ports
                    .records
                    .get(&key(&cx, &args.note_id), ports.clock.now_unix())
                    .await?;
                let record = record.or_caller(format!("No note with id {}", args.note_id))?;
                Ok(Note {
                    text: record.body["text"].as_str().unwrap_or_default().into(),
                    note_id: args.note_id,
                })
            }
        },
    )
    .title("Read a note")
    .annotations(
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    )
    .scopes(&["notes:read"])
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NoteUri {
    note_id: String,
}

/// `notes://{noteId}`: the same notes as resources; another principal's URI is "Resource not found".
pub fn note_resource(ports: NotesPorts) -> ResourceTemplate {
    ResourceTemplate::typed(
        "notes://{noteId}",
        "note",
        "text/plain",
        move |uri: NoteUri, cx| {
            let ports = ports.clone();
            async move {
                let address = cx.call().uri.clone().unwrap_or_default();
                let record = ports
                    .records
                    .get(&key(&cx, &uri.note_id), ports.clock.now_unix())
                    .await?;
                let record = record.ok_or_else(|| McpError::resource_not_found(&address))?;
                Ok(vec![ResourceContents::text(
                    record.body["text"].as_str().unwrap_or_default(),
                    address,
                )])
            }
        },
    )
    .description("One of your notes")
    .private()
    .scopes(&["notes:read"])
    // Its content is the note record alone: listen polls read it in their one batch.
    .watch(|who, uri: NoteUri| note_record(who.personal(), &uri.note_id))
}
