//! Creating a caller's record so that a retried call makes it once: with the client's
//! `idempotencyKey` the record's id is the one the key names for this caller
//! ([`relevo_state::intent`]: another principal's same key names another id), and the create is
//! one conditional write that remembers the digest of the arguments (the key reused with other
//! arguments is refused); without a key every call makes a new record.

use relevo_protocol::author::{ToolContext, ToolError};
use relevo_state::intent::{self, IntentError, Once};
use relevo_state::{Ids, Owner, Record, RecordKey, RecordStore};
use serde_json::Value;

/// A record to create: its kind, body and lifetime.
pub struct NewRecord<'a> {
    pub kind: &'a str,
    pub body: &'a Value,
    pub expires_at: Option<u64>,
    pub now: u64,
}

/// Creates the caller's record: its id and the record (the first one when `client_key`, the
/// call's `idempotencyKey`, was used before with the same arguments). A key reused with other
/// arguments is the caller's error.
pub async fn create(
    cx: &ToolContext,
    client_key: Option<&str>,
    records: &dyn RecordStore,
    ids: &dyn Ids,
    new: NewRecord<'_>,
) -> Result<(String, Record), ToolError> {
    let call = cx.call();
    let owner = Owner::personal(&call.principal.tenant, &call.principal.subject);
    let Some(client_key) = client_key else {
        let id = ids.new_id();
        let record = records
            .create(
                &RecordKey::new(owner, new.kind, &id),
                new.body,
                new.expires_at,
                new.now,
            )
            .await?;
        return Ok((id, record));
    };
    intent::check_key(Some(client_key)).map_err(ToolError::caller)?;
    let id = intent::keyed_id(&owner, new.kind, client_key);
    let digest = relevo_state::canonical_object_digest(&call.arguments);
    let key = RecordKey::new(owner, new.kind, &id);
    match intent::create_once(
        records,
        &key,
        client_key,
        &digest,
        new.body,
        new.expires_at,
        new.now,
    )
    .await
    {
        Ok(Once::Created(record) | Once::Replayed(record)) => Ok((id, record)),
        Err(IntentError::Store(error)) => Err(error.into()),
        Err(refused) => Err(ToolError::caller(refused)),
    }
}
