//! Personal notes: the smallest stateful feature, showing handles and tenancy.
//!
//! A note id is a handle: minted by the server (128 random bits), returned as tool output, passed
//! back as an argument. The record is keyed by the caller's tenant and subject from the verified
//! token, so another tenant's or principal's id answers exactly like an id that never existed.

use std::sync::Arc;

use relevo_protocol::wire::{CallToolResult, ResourceContents, ToolAnnotations};
use relevo_protocol::{Call, Clock, McpError, Outcome, ResourceTemplate, Tool, handler};
use relevo_state::{Ids, Owner, RecordKey, RecordStore, StoreError};
use serde::Deserialize;
use serde_json::{Value, json};

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

fn key(call: &Call, id: &str) -> RecordKey {
    RecordKey::new(Owner::personal(&call.principal.tenant, &call.principal.subject), KIND, id)
}

fn store_failure(error: StoreError) -> McpError {
    relevo_protocol::store_failure("notes")(error)
}

#[derive(Deserialize)]
struct CreateArgs {
    text: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReadArgs {
    note_id: String,
}

pub fn note_create(ports: NotesPorts) -> Tool {
    Tool::new(
        "note_create",
        "Saves a private note and returns its id (a handle only you can use). Notes expire 7 days after creation. Pass an idempotencyKey to make a retried call save one note.",
        json!({
            "type": "object",
            "properties": {
                "text": { "type": "string", "minLength": 1, "maxLength": MAX_NOTE_CHARS },
                "idempotencyKey": create_once::key_schema("note")
            },
            "required": ["text"],
            "additionalProperties": false
        }),
        handler(move |call: Call| {
            let ports = ports.clone();
            async move {
                let args: CreateArgs = match call.args() {
                    Ok(args) => args,
                    Err(error) => return Ok(error),
                };
                if args.text.is_empty() || args.text.chars().count() > MAX_NOTE_CHARS {
                    return Ok(Outcome::tool_error(format!("text must be 1 to {MAX_NOTE_CHARS} characters")));
                }
                let now = ports.clock.now_unix();
                let body = json!({ "text": args.text });
                let new = NewRecord { kind: KIND, body: &body, expires_at: Some(now + NOTE_LIFETIME_SECS), now };
                let (id, record) = match create_once::create(&call, &*ports.records, &*ports.ids, new, "notes").await? {
                    Ok(created) => created,
                    Err(refused) => return Ok(refused),
                };
                let expires_at = record.expires_at.unwrap_or(now + NOTE_LIFETIME_SECS);
                Ok(Outcome::tool(CallToolResult::structured(json!({ "noteId": id, "uri": format!("notes://{id}"), "expiresAt": expires_at }))))
            }
        }),
    )
    .title("Create a note")
    .output_schema(json!({
        "type": "object",
        "properties": { "noteId": { "type": "string" }, "uri": { "type": "string" }, "expiresAt": { "type": "integer" } },
        "required": ["noteId", "uri", "expiresAt"]
    }))
    .annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false))
    .scopes(&["notes:write"])
}

pub fn note_read(ports: NotesPorts) -> Tool {
    Tool::new(
        "note_read",
        "Reads one of your notes by id.",
        json!({
            "type": "object",
            "properties": { "noteId": { "type": "string", "minLength": 1, "maxLength": 64 } },
            "required": ["noteId"],
            "additionalProperties": false
        }),
        handler(move |call: Call| {
            let ports = ports.clone();
            async move {
                let args: ReadArgs = match call.args() {
                    Ok(args) => args,
                    Err(error) => return Ok(error),
                };
                let now = ports.clock.now_unix();
                Ok(match ports.records.get(&key(&call, &args.note_id), now).await.map_err(store_failure)? {
                    Some(record) => Outcome::tool(CallToolResult::structured(
                        json!({ "noteId": args.note_id, "text": record.body["text"] }),
                    )),
                    None => Outcome::tool_error(format!("No note with id {}", args.note_id)),
                })
            }
        }),
    )
    .title("Read a note")
    .output_schema(json!({
        "type": "object",
        "properties": { "noteId": { "type": "string" }, "text": { "type": "string" } },
        "required": ["noteId", "text"]
    }))
    .annotations(ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false))
    .scopes(&["notes:read"])
}

/// `notes://{noteId}`: the same notes as resources; another principal's URI is "Resource not found".
pub fn note_resource(ports: NotesPorts) -> ResourceTemplate {
    ResourceTemplate::new(
        "notes://{noteId}",
        "note",
        "text/plain",
        handler(move |call: Call| {
            let ports = ports.clone();
            async move {
                let uri = call.uri.clone().unwrap_or_default();
                let id = call.arguments.get("noteId").and_then(Value::as_str).unwrap_or_default().to_string();
                let now = ports.clock.now_unix();
                match ports.records.get(&key(&call, &id), now).await.map_err(store_failure)? {
                    Some(record) => Ok(Outcome::contents(vec![ResourceContents::text(
                        record.body["text"].as_str().unwrap_or_default(),
                        uri,
                    )])),
                    None => Err(McpError::resource_not_found(uri)),
                }
            }
        }),
    )
    .description("One of your notes")
    .private()
    .scopes(&["notes:read"])
}
