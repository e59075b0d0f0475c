//! Watch records: the one record a resource's content is read from, declared next to the
//! resource (`Resource::watch`, `ResourceTemplate::watch`) so that a `subscriptions/listen`
//! stream can poll every watched resource in one batch read of the store
//! ([`relevo_state::RecordStore::get_many`]: one `BatchGetItem` on DynamoDB, one `IN (…)`
//! query on SQLite) instead of running each resource's handler.
//!
//! A declaration says: "this resource, read by this caller, changes exactly when this record
//! changes". The stream digests the record's body (a change of body is a change of the
//! resource; absent or expired reads as absent), so the declaration must name the record the
//! handler reads, and nothing else may go into the content that could change on its own.
//!
//! Threat model: a listener names URIs; it must not make the stream read, or learn of changes
//! to, records that are not its own. So:
//! - The key derives only from [`Who`] (the verified caller's tenant and subject: no scopes, no
//!   token, nothing the request carries) and, for a template, the URI's variables parsed as the
//!   template's typed struct `V` (a URI that does not parse has no key).
//! - A key outside the caller's own records (another tenant's, or another subject's personal
//!   record) is not read: [`WatchRecord::key`] answers `None`, logs it, and the stream reads that
//!   resource through its handler (which does its own access control), paying for the read.
//! - Scopes are checked before any of this, by the one guard (`server::guard`), exactly as for
//!   `resources/read`.

use std::sync::Arc;

use relevo_state::{Owner, RecordKey};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::wire::JsonObject;

/// The caller a watch key is derived for: its verified tenant and subject, nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Who<'a> {
    tenant: &'a str,
    subject: &'a str,
}

impl<'a> Who<'a> {
    /// The server builds it from the verified principal.
    pub fn new(tenant: &'a str, subject: &'a str) -> Self {
        Who { tenant, subject }
    }

    /// The caller's verified tenant.
    pub fn tenant(&self) -> &'a str {
        self.tenant
    }

    /// The caller's verified subject.
    pub fn subject(&self) -> &'a str {
        self.subject
    }

    /// The caller's own records ([`Owner::personal`]).
    pub fn personal(&self) -> Owner {
        Owner::personal(self.tenant, self.subject)
    }

    /// The records every principal of the caller's tenant shares ([`Owner::tenant`]).
    pub fn shared(&self) -> Owner {
        Owner::tenant(self.tenant)
    }

    /// Whether `key` is one of the caller's records: its tenant's, and personal to no one else.
    fn owns(&self, key: &RecordKey) -> bool {
        key.owner.tenant == self.tenant
            && key
                .owner
                .subject
                .as_deref()
                .is_none_or(|subject| subject == self.subject)
    }
}

type KeyOf = dyn Fn(&Who<'_>, &JsonObject) -> Option<RecordKey> + Send + Sync;

/// A resource's declared watch record (see the module docs).
#[derive(Clone)]
pub struct WatchRecord(Arc<KeyOf>);

impl WatchRecord {
    /// For a resource with a fixed URI: the key from the caller alone.
    pub(crate) fn fixed<F>(key: F) -> Self
    where
        F: Fn(&Who<'_>) -> RecordKey + Send + Sync + 'static,
    {
        WatchRecord(Arc::new(move |who, _| Some(key(who))))
    }

    /// For a template: the key from the caller and the URI's variables as `V`.
    pub(crate) fn typed<V, F>(key: F) -> Self
    where
        V: DeserializeOwned + 'static,
        F: Fn(&Who<'_>, V) -> RecordKey + Send + Sync + 'static,
    {
        WatchRecord(Arc::new(move |who, variables| {
            serde_json::from_value::<V>(Value::Object(variables.clone()))
                .ok()
                .map(|uri| key(who, uri))
        }))
    }

    /// The record `who` watches through the resource whose URI bound `variables`: `None` when the
    /// variables do not parse, or when the declaration names a record that is not the caller's
    /// (logged; the resource is then read through its handler).
    pub fn key(&self, who: &Who<'_>, variables: &JsonObject) -> Option<RecordKey> {
        let key = (self.0)(who, variables)?;
        if who.owns(&key) {
            return Some(key);
        }
        tracing::warn!(kind = %key.kind, "a watch declaration named a record outside the caller's own: not read");
        None
    }
}

impl std::fmt::Debug for WatchRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WatchRecord")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct CartUri {
        cart_id: String,
    }

    fn variables(value: Value) -> JsonObject {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_watch_key_is_the_callers_own_record_named_by_the_typed_uri() {
        let watch = WatchRecord::typed(|who, uri: CartUri| {
            RecordKey::new(who.personal(), "cart", &uri.cart_id)
        });
        let alice = Who::new("acme", "alice");
        let key = watch.key(&alice, &variables(json!({ "cartId": "c1" })));
        assert_eq!(
            key,
            Some(RecordKey::new(
                Owner::personal("acme", "alice"),
                "cart",
                "c1"
            ))
        );
        assert_eq!(
            watch.key(&alice, &variables(json!({ "other": "c1" }))),
            None,
            "a URI that does not parse"
        );
        let shared = WatchRecord::fixed(|who| RecordKey::new(who.shared(), "catalog", "main"));
        assert_eq!(
            shared.key(&alice, &JsonObject::new()),
            Some(RecordKey::new(Owner::tenant("acme"), "catalog", "main"))
        );
    }

    #[test]
    fn a_declaration_naming_anothers_record_reads_nothing() {
        let alice = Who::new("acme", "alice");
        let bobs =
            WatchRecord::fixed(|_| RecordKey::new(Owner::personal("acme", "bob"), "cart", "c1"));
        let globex = WatchRecord::fixed(|_| RecordKey::new(Owner::tenant("globex"), "cart", "c1"));
        assert_eq!(
            bobs.key(&alice, &JsonObject::new()),
            None,
            "another subject's record"
        );
        assert_eq!(
            globex.key(&alice, &JsonObject::new()),
            None,
            "another tenant's record"
        );
    }
}
