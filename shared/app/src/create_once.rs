//! Creating a caller's record so that a retried call makes it once: with the client's
//! `idempotencyKey` the record's id is the one the key names ([`relevo_state::intent`]), and the
//! create is one conditional write; without a key every call makes a new record.

use relevo_protocol::{Call, McpError, Outcome};
use relevo_state::intent::{self, IntentError, Once};
use relevo_state::{Ids, Owner, Record, RecordKey, RecordStore};
use serde_json::Value;

/// The JSON Schema of the `idempotencyKey` argument.
pub fn key_schema(what: &str) -> Value {
    serde_json::json!({
        "type": "string", "minLength": 1, "maxLength": intent::MAX_KEY_CHARS,
        "description": format!("Pass the same key when you retry a call whose answer you did not get: one {what} is made.")
    })
}

/// A record to create: its kind, body and lifetime.
pub struct NewRecord<'a> {
    pub kind: &'a str,
    pub body: &'a Value,
    pub expires_at: Option<u64>,
    pub now: u64,
}

/// Creates the caller's record: its id and the record (the first one when the key was used
/// before with the same arguments), or the tool error to answer. `what` names the feature in a
/// store failure.
pub async fn create(
    call: &Call,
    records: &dyn RecordStore,
    ids: &dyn Ids,
    new: NewRecord<'_>,
    what: &'static str,
) -> Result<Result<(String, Record), Outcome>, McpError> {
    let store_failure = relevo_protocol::store_failure(what);
    let owner = Owner::personal(&call.principal.tenant, &call.principal.subject);
    let Some(client_key) = call.arguments.get("idempotencyKey").and_then(Value::as_str) else {
        let id = ids.new_id();
        let record = records.create(&RecordKey::new(owner, new.kind, &id), new.body, new.expires_at, new.now).await;
        return Ok(Ok((id, record.map_err(store_failure)?)));
    };
    if let Err(error) = intent::check_key(Some(client_key)) {
        return Ok(Err(Outcome::tool_error(error.to_string())));
    }
    let id = intent::keyed_id(new.kind, client_key);
    let digest = relevo_state::canonical_object_digest(&call.arguments);
    let key = RecordKey::new(owner, new.kind, &id);
    match intent::create_once(records, &key, client_key, &digest, new.body, new.expires_at, new.now).await {
        Ok(Once::Created(record) | Once::Replayed(record)) => Ok(Ok((id, record))),
        Err(IntentError::Store(error)) => Err(store_failure(error)),
        Err(refused) => Ok(Err(Outcome::tool_error(refused.to_string()))),
    }
}
