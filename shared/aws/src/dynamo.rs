//! `RecordStore` and `JobStore` on one DynamoDB table.

use std::collections::HashMap;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{BuildError, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::error::TransactionCanceledException;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, ConditionCheck, Delete, GlobalSecondaryIndex,
    KeySchemaElement, KeyType, KeysAndAttributes, Projection, ProjectionType, Put, ReturnValue,
    ReturnValuesOnConditionCheckFailure, ScalarAttributeType, TimeToLiveSpecification,
    TransactWriteItem, Update,
};
use relevo_state::jobs::{Created, Job, JobRef, JobStore};
use relevo_state::records::{TransactError, TransactFuture, Write, validate_transaction};
use relevo_state::{Record, RecordKey, RecordStore, StoreError, StoreFuture};

use crate::failure::sdk_failure;
use futures_util::{StreamExt, TryStreamExt};
use serde_json::Value;

pub(crate) type Item = HashMap<String, AttributeValue>;

const ACTIVE_INDEX: &str = "active";
/// Keys one `BatchGetItem` call may name.
const BATCH_READ_KEYS: usize = 100;
/// `BatchGetItem` calls for one batch read before unprocessed keys are an unavailable store.
const BATCH_READ_ATTEMPTS: u32 = 8;
/// Jobs in flight are spread over this many values of the `active` index's partition key, so
/// the index has no single hot partition (each takes at most 1,000 writes a second); the
/// reconciler reads every shard.
const ACTIVE_SHARDS: u64 = 16;
/// The reconciler's shard queries in flight at once: each is one round trip to DynamoDB, and
/// each in flight may hold a connection of the pool (a TLS handshake at a cold start), so a few
/// rather than all sixteen.
const ACTIVE_SHARD_QUERIES: usize = 4;

/// The `active` shard of a job: stable for its record key.
fn active_shard(storage_key: &str) -> String {
    let hash = storage_key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("s{:02}", hash % ACTIVE_SHARDS)
}

#[derive(Clone, Debug)]
pub struct DynamoStore {
    pub(crate) client: Client,
    pub(crate) table: String,
}

impl DynamoStore {
    pub fn new(client: Client, table: &str) -> Self {
        DynamoStore {
            client,
            table: table.into(),
        }
    }
}

/// A failure this adapter tells itself (no underlying error).
fn unavailable(message: &'static str) -> StoreError {
    StoreError::Unavailable(message.into())
}

/// A request the SDK would not build (a required field missing).
fn unbuilt(error: BuildError) -> StoreError {
    StoreError::unavailable("cannot build the request", error)
}

pub(crate) fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

pub(crate) fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

pub(crate) fn get_n(item: &Item, name: &str) -> Option<u64> {
    item.get(name)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
}

pub(crate) fn get_s<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
}

pub(crate) fn body_of(item: &Item) -> Result<Value, StoreError> {
    if let Some(count) = get_n(item, COUNT) {
        // A counter ([`RecordStore::count_up`]) keeps its count as a number, not in `body`.
        return Ok(serde_json::json!({ "count": count }));
    }
    serde_json::from_str(get_s(item, "body").unwrap_or("null"))
        .map_err(|e| StoreError::unavailable("corrupt item", e))
}

/// The attribute every record write carries: the intent id minted for the port call that made
/// it (one per `create`/`update`/`transact` call, the same on every attempt the SDK sends of it).
/// A refused condition that finds this id on the current item is the call's own earlier attempt,
/// applied while its answer was lost (an attempt timeout, a dropped connection): the call
/// succeeded, and is answered so, never as a conflict.
const INTENT: &str = "intent";

/// A fresh intent id (128 random bits; also a valid `ClientRequestToken`, at most 36 characters).
fn mint_intent() -> String {
    relevo_state::Ids::new_id(&relevo_state::RandomIds)
}

/// Whether `item` was written by the call whose intent is `intent`.
fn written_by(item: &Item, intent: &str) -> bool {
    get_s(item, INTENT) == Some(intent)
}

fn live(item: &Item, now: u64) -> bool {
    get_n(item, "expires_at").is_none_or(|expires| expires > now)
}

fn record_of(key: &RecordKey, item: &Item) -> Result<Record, StoreError> {
    Ok(Record {
        key: key.clone(),
        revision: get_n(item, "rev").unwrap_or(0),
        body: body_of(item)?,
        expires_at: get_n(item, "expires_at"),
    })
}

fn record_item(key: &RecordKey, revision: u64, body: &Value, expires_at: Option<u64>) -> Item {
    let mut item = Item::from([
        ("pk".into(), s(key.storage_key())),
        ("tenant".into(), s(&key.owner.tenant)),
        ("rev".into(), n(revision)),
        ("body".into(), s(body.to_string())),
    ]);
    if let Some(expires_at) = expires_at {
        item.insert("expires_at".into(), n(expires_at));
    }
    item
}

fn job_item(job: &Job) -> Result<Item, StoreError> {
    let body = serde_json::to_value(job)
        .map_err(|e| StoreError::unavailable("cannot encode the job", e))?;
    let mut item = record_item(
        &job.job.record_key(),
        job.revision,
        &body,
        Some(job.expires_at),
    );
    item.insert("status".into(), s(job.status.as_str()));
    item.insert("updated_at".into(), n(job.updated_at));
    if !job.status.is_terminal() {
        item.insert(
            ACTIVE_INDEX.into(),
            s(active_shard(&job.job.record_key().storage_key())),
        );
    }
    Ok(item)
}

/// A transaction cancelled for a reason other than a refused condition (a conflict with another
/// transaction, throttling): nothing was written. The exception is kept whole as the source.
fn cancelled_transaction(cancelled: TransactionCanceledException) -> StoreError {
    let codes: Vec<&str> = cancelled
        .cancellation_reasons()
        .iter()
        .map(|r| r.code().unwrap_or("None"))
        .collect();
    StoreError::unavailable(
        format!("transaction cancelled ({})", codes.join(", ")),
        cancelled,
    )
}

pub(crate) fn job_of(item: &Item) -> Result<Job, StoreError> {
    serde_json::from_value(body_of(item)?).map_err(|e| StoreError::unavailable("corrupt job", e))
}

impl DynamoStore {
    async fn get_item(&self, key: &RecordKey) -> Result<Option<Item>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(key.storage_key()))
            .consistent_read(true)
            .send()
            .await
            .map_err(sdk_failure)?;
        Ok(output.item)
    }

    /// The items of `keys` (distinct) by `BatchGetItem` with consistent reads, asking again for
    /// what DynamoDB left unprocessed (throttling, the 16 MB answer limit), with backoff, a
    /// bounded number of times; by storage key.
    async fn batch_get(&self, keys: &[String]) -> Result<HashMap<String, Item>, StoreError> {
        let mut found = HashMap::new();
        let mut pending: Vec<Item> = keys
            .iter()
            .map(|k| Item::from([("pk".to_string(), s(k))]))
            .collect();
        for attempt in 0..BATCH_READ_ATTEMPTS {
            if pending.is_empty() {
                return Ok(found);
            }
            relevo_state::contention::pause(attempt).await;
            let request = KeysAndAttributes::builder()
                .set_keys(Some(std::mem::take(&mut pending)))
                .consistent_read(true)
                .build()
                .map_err(|e| StoreError::unavailable("BatchGetItem request", e))?;
            let output = self
                .client
                .batch_get_item()
                .request_items(&self.table, request)
                .send()
                .await
                .map_err(sdk_failure)?;
            for item in output
                .responses
                .and_then(|mut r| r.remove(&self.table))
                .unwrap_or_default()
            {
                if let Some(pk) = get_s(&item, "pk") {
                    found.insert(pk.to_string(), item);
                }
            }
            pending = output
                .unprocessed_keys
                .and_then(|mut u| u.remove(&self.table))
                .map(|k| k.keys)
                .unwrap_or_default();
        }
        if pending.is_empty() {
            return Ok(found);
        }
        Err(unavailable("BatchGetItem kept leaving keys unprocessed"))
    }

    /// A conditional put; `Ok(None)` when the condition failed, with the old item if any.
    async fn put_if(
        &self,
        item: Item,
        condition: &str,
        values: Item,
    ) -> Result<Result<(), Option<Item>>, StoreError> {
        let mut request = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(condition)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        if !values.is_empty() {
            request = request.set_expression_attribute_values(Some(values));
        }
        match request.send().await {
            Ok(_) => Ok(Ok(())),
            Err(SdkError::ServiceError(service))
                if service.err().is_conditional_check_failed_exception() =>
            {
                match service.into_err() {
                    PutItemError::ConditionalCheckFailedException(failed) => Ok(Err(failed.item)),
                    other => Err(StoreError::unavailable("PutItem", other)),
                }
            }
            Err(other) => Err(sdk_failure(other)),
        }
    }
}

impl RecordStore for DynamoStore {
    fn create<'a>(
        &'a self,
        key: &'a RecordKey,
        body: &'a Value,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        Box::pin(async move {
            let intent = mint_intent();
            let mut item = record_item(key, 1, body, expires_at);
            item.insert(INTENT.into(), s(&intent));
            let values = Item::from([(":now".into(), n(now))]);
            let created = Record {
                key: key.clone(),
                revision: 1,
                body: body.clone(),
                expires_at,
            };
            match self
                .put_if(
                    item,
                    "attribute_not_exists(pk) OR expires_at <= :now",
                    values,
                )
                .await?
            {
                Ok(()) => Ok(created),
                // An earlier attempt of this very call (the SDK retried after losing its answer).
                Err(Some(old)) if written_by(&old, &intent) => Ok(created),
                Err(Some(old)) => Err(StoreError::AlreadyExists(Box::new(record_of(key, &old)?))),
                Err(None) => Err(unavailable("create refused without the current item")),
            }
        })
    }

    fn get<'a>(&'a self, key: &'a RecordKey, now: u64) -> StoreFuture<'a, Option<Record>> {
        Box::pin(async move {
            match self.get_item(key).await? {
                Some(item) if live(&item, now) => Ok(Some(record_of(key, &item)?)),
                _ => Ok(None),
            }
        })
    }

    fn get_many<'a>(
        &'a self,
        keys: &'a [RecordKey],
        now: u64,
    ) -> StoreFuture<'a, Vec<Option<Record>>> {
        Box::pin(async move {
            relevo_state::records::check_batch(keys)?;
            let storage: Vec<String> = keys.iter().map(RecordKey::storage_key).collect();
            let mut distinct = storage.clone();
            distinct.sort();
            distinct.dedup();
            let mut items = HashMap::new();
            for chunk in distinct.chunks(BATCH_READ_KEYS) {
                items.extend(self.batch_get(chunk).await?);
            }
            keys.iter()
                .zip(&storage)
                .map(|(key, pk)| match items.get(pk) {
                    Some(item) if live(item, now) => Ok(Some(record_of(key, item)?)),
                    _ => Ok(None),
                })
                .collect()
        })
    }

    fn update_expiring<'a>(
        &'a self,
        key: &'a RecordKey,
        expected_revision: u64,
        body: &'a Value,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        Box::pin(async move {
            let item = record_item(key, expected_revision + 1, body, expires_at);
            let values = Item::from([
                (":rev".into(), n(expected_revision)),
                (":now".into(), n(now)),
            ]);
            let condition =
                "rev = :rev AND (attribute_not_exists(expires_at) OR expires_at > :now)";
            match self.put_if(item, condition, values).await? {
                Ok(()) => Ok(Record {
                    key: key.clone(),
                    revision: expected_revision + 1,
                    body: body.clone(),
                    expires_at,
                }),
                Err(Some(old)) if live(&old, now) => Err(StoreError::Conflict {
                    expected: expected_revision,
                    current: Box::new(record_of(key, &old)?),
                }),
                Err(_) => Err(StoreError::NotFound),
            }
        })
    }

    fn update<'a>(
        &'a self,
        key: &'a RecordKey,
        expected_revision: u64,
        body: &'a Value,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        Box::pin(async move {
            let Some(current) = self.get_item(key).await?.filter(|item| live(item, now)) else {
                return Err(StoreError::NotFound);
            };
            let expires_at = get_n(&current, "expires_at");
            let intent = mint_intent();
            let mut item = record_item(key, expected_revision + 1, body, expires_at);
            item.insert(INTENT.into(), s(&intent));
            let values = Item::from([
                (":rev".into(), n(expected_revision)),
                (":now".into(), n(now)),
            ]);
            let condition =
                "rev = :rev AND (attribute_not_exists(expires_at) OR expires_at > :now)";
            let updated = Record {
                key: key.clone(),
                revision: expected_revision + 1,
                body: body.clone(),
                expires_at,
            };
            match self.put_if(item, condition, values).await? {
                Ok(()) => Ok(updated),
                // An earlier attempt of this very call, applied while its answer was lost.
                Err(Some(old))
                    if written_by(&old, &intent)
                        && get_n(&old, "rev") == Some(expected_revision + 1) =>
                {
                    Ok(updated)
                }
                Err(Some(old)) if live(&old, now) => Err(StoreError::Conflict {
                    expected: expected_revision,
                    current: Box::new(record_of(key, &old)?),
                }),
                Err(_) => Err(StoreError::NotFound),
            }
        })
    }

    fn transact<'a>(&'a self, writes: &'a [Write], now: u64) -> TransactFuture<'a> {
        Box::pin(async move {
            validate_transaction(writes)?;
            let intent = mint_intent();
            let items = writes
                .iter()
                .map(|w| self.transact_item(w, &intent, now))
                .collect::<Result<Vec<_>, _>>()?;
            let revisions = || {
                writes
                    .iter()
                    .map(|write| match write {
                        Write::Create { .. } => 1,
                        Write::Update {
                            expected_revision, ..
                        }
                        | Write::UpdateExpiring {
                            expected_revision, ..
                        } => expected_revision + 1,
                        Write::Check {
                            expected_revision, ..
                        } => *expected_revision,
                        Write::Delete { .. } => 0,
                    })
                    .collect()
            };
            // The token makes DynamoDB answer a repeat of this call (an SDK retry) with success
            // for ten minutes; the intent attribute does the same where the token is not honoured.
            let request = self
                .client
                .transact_write_items()
                .client_request_token(&intent)
                .set_transact_items(Some(items));
            match request.send().await {
                Ok(_) => Ok(revisions()),
                Err(SdkError::ServiceError(service)) => match service.into_err() {
                    TransactWriteItemsError::TransactionCanceledException(cancelled) => {
                        let reasons = cancelled.cancellation_reasons();
                        let failed = reasons
                            .iter()
                            .position(|r| r.code() == Some("ConditionalCheckFailed"));
                        let Some(index) = failed else {
                            // TransactionConflict, throttling: nothing was written; the caller may retry.
                            return Err(TransactError::Store(cancelled_transaction(cancelled)));
                        };
                        if self.transaction_landed(writes, reasons, &intent).await? {
                            return Ok(revisions());
                        }
                        let returned = reasons[index].item().cloned();
                        let cause = self.refusal(&writes[index], returned, now).await?;
                        Err(TransactError::Refused { index, cause })
                    }
                    other => Err(TransactError::Store(StoreError::unavailable(
                        "TransactWriteItems",
                        other,
                    ))),
                },
                Err(other) => Err(TransactError::Store(sdk_failure(other))),
            }
        })
    }

    fn count_up_by<'a>(
        &'a self,
        key: &'a RecordKey,
        units: u32,
        limit: u32,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Option<u32>> {
        Box::pin(self.count_up_item(key, units, limit, expires_at, now))
    }
}

impl DynamoStore {
    /// Whether a transaction refused on a condition was refused by its own earlier attempt: a
    /// refused create or update whose current item carries this call's intent (a transaction
    /// applies whole, so one such item means all of it was applied). A transaction of deletes and
    /// checks only leaves no such mark; DynamoDB's client token covers it.
    async fn transaction_landed(
        &self,
        writes: &[Write],
        reasons: &[aws_sdk_dynamodb::types::CancellationReason],
        intent: &str,
    ) -> Result<bool, StoreError> {
        for (write, reason) in writes.iter().zip(reasons) {
            if !matches!(
                write,
                Write::Create { .. } | Write::Update { .. } | Write::UpdateExpiring { .. }
            ) || reason.code() != Some("ConditionalCheckFailed")
            {
                continue;
            }
            let current = match reason.item() {
                Some(item) => Some(item.clone()),
                None => self.get_item(write.key()).await?,
            };
            return Ok(current.is_some_and(|item| written_by(&item, intent)));
        }
        Ok(false)
    }

    fn transact_item(
        &self,
        write: &Write,
        intent: &str,
        now: u64,
    ) -> Result<TransactWriteItem, StoreError> {
        let old = ReturnValuesOnConditionCheckFailure::AllOld;
        Ok(match write {
            Write::Create {
                key,
                body,
                expires_at,
            } => {
                let mut item = record_item(key, 1, body, *expires_at);
                item.insert(INTENT.into(), s(intent));
                let put = Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(item))
                    .condition_expression("attribute_not_exists(pk) OR expires_at <= :now")
                    .expression_attribute_values(":now", n(now))
                    .return_values_on_condition_check_failure(old)
                    .build()
                    .map_err(unbuilt)?;
                TransactWriteItem::builder().put(put).build()
            }
            Write::Update {
                key,
                expected_revision,
                body,
            } => self.update_item(key, *expected_revision, body, None, intent, now)?,
            Write::UpdateExpiring {
                key,
                expected_revision,
                body,
                expires_at,
            } => self.update_item(
                key,
                *expected_revision,
                body,
                Some(*expires_at),
                intent,
                now,
            )?,
            Write::Delete {
                key,
                expected_revision,
            } => {
                let delete = Delete::builder()
                    .table_name(&self.table)
                    .key("pk", s(key.storage_key()))
                    .condition_expression(
                        "rev = :rev AND (attribute_not_exists(expires_at) OR expires_at > :now)",
                    )
                    .expression_attribute_values(":rev", n(*expected_revision))
                    .expression_attribute_values(":now", n(now))
                    .return_values_on_condition_check_failure(old)
                    .build()
                    .map_err(unbuilt)?;
                TransactWriteItem::builder().delete(delete).build()
            }
            Write::Check {
                key,
                expected_revision,
            } => {
                let check = ConditionCheck::builder()
                    .table_name(&self.table)
                    .key("pk", s(key.storage_key()));
                let check = match expected_revision {
                    0 => check.condition_expression("attribute_not_exists(pk) OR expires_at <= :now"),
                    revision => check
                        .condition_expression("rev = :rev AND (attribute_not_exists(expires_at) OR expires_at > :now)")
                        .expression_attribute_values(":rev", n(*revision)),
                };
                let check = check
                    .expression_attribute_values(":now", n(now))
                    .return_values_on_condition_check_failure(old)
                    .build()
                    .map_err(unbuilt)?;
                TransactWriteItem::builder().condition_check(check).build()
            }
        })
    }

    /// The transactional update of the live item at `expected_revision`: its body, and its
    /// expiry set (`Some(Some(t))`), removed (`Some(None)`: never expires) or kept (`None`).
    fn update_item(
        &self,
        key: &RecordKey,
        expected_revision: u64,
        body: &Value,
        expiry: Option<Option<u64>>,
        intent: &str,
        now: u64,
    ) -> Result<TransactWriteItem, StoreError> {
        let set = "SET body = :body, rev = :next, #intent = :intent";
        let update = Update::builder()
            .table_name(&self.table)
            .key("pk", s(key.storage_key()))
            .expression_attribute_names("#intent", INTENT)
            .condition_expression(
                "rev = :rev AND (attribute_not_exists(expires_at) OR expires_at > :now)",
            )
            .expression_attribute_values(":body", s(body.to_string()))
            .expression_attribute_values(":intent", s(intent))
            .expression_attribute_values(":next", n(expected_revision + 1))
            .expression_attribute_values(":rev", n(expected_revision))
            .expression_attribute_values(":now", n(now))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        let update = match expiry {
            None => update.update_expression(set),
            Some(Some(expires_at)) => update
                .update_expression(format!("{set}, expires_at = :expires"))
                .expression_attribute_values(":expires", n(expires_at)),
            Some(None) => update.update_expression(format!("{set} REMOVE expires_at")),
        };
        Ok(TransactWriteItem::builder()
            .update(update.build().map_err(unbuilt)?)
            .build())
    }

    /// Why write `write` was refused, from the item the cancellation returned (or a consistent
    /// read when the emulator or service did not return it).
    async fn refusal(
        &self,
        write: &Write,
        returned: Option<Item>,
        now: u64,
    ) -> Result<StoreError, StoreError> {
        let current = match returned {
            Some(item) => Some(item),
            None => self.get_item(write.key()).await?,
        }
        .filter(|item| live(item, now));
        Ok(match (write, current) {
            (Write::Create { key, .. }, Some(item)) => {
                StoreError::AlreadyExists(Box::new(record_of(key, &item)?))
            }
            (
                Write::Update {
                    key,
                    expected_revision,
                    ..
                }
                | Write::UpdateExpiring {
                    key,
                    expected_revision,
                    ..
                },
                Some(item),
            ) => StoreError::Conflict {
                expected: *expected_revision,
                current: Box::new(record_of(key, &item)?),
            },
            (
                Write::Check {
                    key,
                    expected_revision: 0,
                },
                Some(item),
            ) => StoreError::AlreadyExists(Box::new(record_of(key, &item)?)),
            (
                Write::Check {
                    key,
                    expected_revision,
                }
                | Write::Delete {
                    key,
                    expected_revision,
                },
                Some(item),
            ) => StoreError::Conflict {
                expected: *expected_revision,
                current: Box::new(record_of(key, &item)?),
            },
            (
                Write::Update { .. }
                | Write::UpdateExpiring { .. }
                | Write::Check { .. }
                | Write::Delete { .. },
                None,
            ) => StoreError::NotFound,
            (Write::Create { .. }, None) => unavailable("create refused without a live item"),
        })
    }
}

impl JobStore for DynamoStore {
    fn keyed_job<'a>(&'a self, job: &'a Job) -> StoreFuture<'a, Option<Job>> {
        Box::pin(async move {
            let Some(key) = &job.operation_key else {
                return Ok(None);
            };
            let Some(opkey) = self.get_item(&job.operation_record_key(key)).await? else {
                return Ok(None);
            };
            let Some(id) = get_s(&opkey, "job_id") else {
                return Ok(None);
            };
            let existing = JobRef {
                id: id.to_string(),
                ..job.job.clone()
            };
            self.get_item(&existing.record_key())
                .await?
                .map(|item| job_of(&item))
                .transpose()
        })
    }

    fn create_job<'a>(&'a self, job: &'a Job) -> StoreFuture<'a, Created> {
        Box::pin(async move {
            let item = job_item(job)?;
            let Some(key) = &job.operation_key else {
                return match self
                    .put_if(item, "attribute_not_exists(pk)", Item::new())
                    .await?
                {
                    Ok(()) => Ok(Created::New(job.clone())),
                    Err(_) => Err(unavailable("job id collision")),
                };
            };
            let opkey = job.operation_record_key(key);
            let opkey_item = Item::from([
                ("pk".into(), s(opkey.storage_key())),
                ("tenant".into(), s(&job.job.tenant)),
                ("job_pk".into(), s(job.job.record_key().storage_key())),
                ("job_id".into(), s(&job.job.id)),
                ("expires_at".into(), n(job.expires_at)),
            ]);
            let put = |item: Item| -> Result<TransactWriteItem, StoreError> {
                let put = Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(item))
                    .condition_expression("attribute_not_exists(pk)")
                    .return_values_on_condition_check_failure(
                        ReturnValuesOnConditionCheckFailure::AllOld,
                    )
                    .build()
                    .map_err(unbuilt)?;
                Ok(TransactWriteItem::builder().put(put).build())
            };
            let result = self
                .client
                .transact_write_items()
                .transact_items(put(opkey_item)?)
                .transact_items(put(item)?)
                .send()
                .await;
            match result {
                Ok(_) => Ok(Created::New(job.clone())),
                Err(SdkError::ServiceError(service)) => match service.into_err() {
                    TransactWriteItemsError::TransactionCanceledException(cancelled) => {
                        let first = cancelled.cancellation_reasons().first();
                        if first.and_then(|r| r.code()) != Some("ConditionalCheckFailed") {
                            return Err(cancelled_transaction(cancelled));
                        }
                        let existing_id = match first.and_then(|r| r.item()) {
                            Some(old) => get_s(old, "job_id").map(String::from),
                            None => self
                                .get_item(&opkey)
                                .await?
                                .as_ref()
                                .and_then(|i| get_s(i, "job_id").map(String::from)),
                        }
                        .ok_or_else(|| unavailable("operation key record without a job"))?;
                        let existing_ref = JobRef {
                            id: existing_id,
                            ..job.job.clone()
                        };
                        let existing = self
                            .get_item(&existing_ref.record_key())
                            .await?
                            .ok_or_else(|| unavailable("operation key names a missing job"))?;
                        Ok(Created::Existing(job_of(&existing)?))
                    }
                    other => Err(StoreError::unavailable("TransactWriteItems", other)),
                },
                Err(other) => Err(sdk_failure(other)),
            }
        })
    }

    fn get_job<'a>(&'a self, job: &'a JobRef) -> StoreFuture<'a, Option<Job>> {
        Box::pin(async move {
            self.get_item(&job.record_key())
                .await?
                .map(|item| job_of(&item))
                .transpose()
        })
    }

    fn put_job<'a>(&'a self, job: &'a Job, expected_revision: u64) -> StoreFuture<'a, Job> {
        Box::pin(async move {
            if job.revision != expected_revision + 1 {
                return Err(unavailable("put_job needs revision = expected + 1"));
            }
            let values = Item::from([(":rev".into(), n(expected_revision))]);
            match self.put_if(job_item(job)?, "rev = :rev", values).await? {
                Ok(()) => Ok(job.clone()),
                Err(Some(old)) => {
                    let current = job_of(&old)?;
                    let record = Record {
                        key: current.job.record_key(),
                        revision: current.revision,
                        body: serde_json::to_value(&current)
                            .map_err(|e| StoreError::unavailable("cannot encode the job", e))?,
                        expires_at: Some(current.expires_at),
                    };
                    Err(StoreError::Conflict {
                        expected: expected_revision,
                        current: Box::new(record),
                    })
                }
                Err(None) => Err(StoreError::NotFound),
            }
        })
    }

    fn list_active<'a>(&'a self, limit: usize) -> StoreFuture<'a, Vec<Job>> {
        Box::pin(async move {
            let limit = limit.min(1000);
            // One query per shard, up to ACTIVE_SHARD_QUERIES of them in flight, read back in
            // shard order: the same jobs in the same order as one query after another, in about
            // a quarter of the round trips.
            let pages: Vec<Vec<Item>> = futures_util::stream::iter(0..ACTIVE_SHARDS)
                .map(|shard| async move {
                    let output = self
                        .client
                        .query()
                        .table_name(&self.table)
                        .index_name(ACTIVE_INDEX)
                        .key_condition_expression("active = :shard")
                        .expression_attribute_values(":shard", s(format!("s{shard:02}")))
                        .scan_index_forward(true)
                        .limit(limit as i32)
                        .send()
                        .await
                        .map_err(sdk_failure)?;
                    Ok::<_, StoreError>(output.items.unwrap_or_default())
                })
                .buffered(ACTIVE_SHARD_QUERIES)
                .try_collect()
                .await?;
            let mut jobs = Vec::new();
            for item in pages.iter().flatten() {
                jobs.push(job_of(item)?);
            }
            // The oldest first across shards, as one partition would have returned them.
            jobs.sort_by_key(|job| job.updated_at);
            jobs.truncate(limit);
            Ok(jobs)
        })
    }
}

/// The numeric attribute of a counter item (a reserved word in expressions: written `#count`).
const COUNT: &str = "count";

/// Rounds of [`DynamoStore::count_up_item`] that may find the counter expired and lose its
/// restart to another caller: only a key counted again after its expiry gets there at all.
const COUNTER_RESTARTS: usize = 4;

/// What one counting `UpdateItem` did.
enum Counted {
    /// The new count.
    Up(u32),
    /// The condition failed: at the limit, or expired (the item as it was, if returned).
    Refused(Option<Item>),
}

impl DynamoStore {
    /// [`RecordStore::count_up_by`]: one `UpdateItem` that `ADD`s `units` to `count` and 1 to `rev`
    /// under `count <= :room` (`limit - units`) on a live item (an absent one is created, its
    /// `tenant` and TTL set with `if_not_exists`), so concurrent callers never conflict and a
    /// refusal writes nothing. Only an expired item that is still there (TTL deletes lazily) is
    /// restarted at `units` with a conditional put, and counted again when another caller restarted
    /// it first.
    async fn count_up_item(
        &self,
        key: &RecordKey,
        units: u32,
        limit: u32,
        expires_at: Option<u64>,
        now: u64,
    ) -> Result<Option<u32>, StoreError> {
        if !relevo_state::records::check_count(units, limit)? {
            return Ok(None);
        }
        for _ in 0..COUNTER_RESTARTS {
            let old = match self.add(key, units, limit - units, expires_at, now).await? {
                Counted::Up(count) => return Ok(Some(count)),
                Counted::Refused(Some(old)) => Some(old),
                Counted::Refused(None) => self.get_item(key).await?,
            };
            match old {
                Some(old) if live(&old, now) => return Ok(None),
                // Gone since (a TTL sweep): count again.
                None => continue,
                Some(_) => {
                    let mut item = Item::from([
                        ("pk".into(), s(key.storage_key())),
                        ("tenant".into(), s(&key.owner.tenant)),
                        ("rev".into(), n(1)),
                        (COUNT.into(), n(u64::from(units))),
                    ]);
                    if let Some(expires_at) = expires_at {
                        item.insert("expires_at".into(), n(expires_at));
                    }
                    let values = Item::from([(":now".into(), n(now))]);
                    if self
                        .put_if(item, "expires_at <= :now", values)
                        .await?
                        .is_ok()
                    {
                        return Ok(Some(units));
                    }
                }
            }
        }
        Err(unavailable(
            "the counter kept expiring and restarting under concurrent callers",
        ))
    }

    /// One `UpdateItem` that adds `units` to the count if it is at most `room` before.
    async fn add(
        &self,
        key: &RecordKey,
        units: u32,
        room: u32,
        expires_at: Option<u64>,
        now: u64,
    ) -> Result<Counted, StoreError> {
        let mut update =
            "ADD #count :n, rev :one SET tenant = if_not_exists(tenant, :tenant)".to_string();
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(key.storage_key()))
            .condition_expression(
                "(attribute_not_exists(#count) OR #count <= :room) \
                 AND (attribute_not_exists(expires_at) OR expires_at > :now)",
            )
            .expression_attribute_names("#count", COUNT)
            .expression_attribute_values(":n", n(u64::from(units)))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":room", n(u64::from(room)))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":tenant", s(&key.owner.tenant))
            .return_values(ReturnValue::UpdatedNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        if let Some(expires_at) = expires_at {
            update.push_str(", expires_at = if_not_exists(expires_at, :expires)");
            request = request.expression_attribute_values(":expires", n(expires_at));
        }
        match request.update_expression(update).send().await {
            Ok(output) => {
                let count = output.attributes.as_ref().and_then(|new| get_n(new, COUNT));
                let count =
                    count.ok_or_else(|| unavailable("UpdateItem did not return the new count"))?;
                let count = u32::try_from(count)
                    .map_err(|e| StoreError::unavailable("corrupt counter", e))?;
                Ok(Counted::Up(count))
            }
            Err(SdkError::ServiceError(service))
                if service.err().is_conditional_check_failed_exception() =>
            {
                match service.into_err() {
                    UpdateItemError::ConditionalCheckFailedException(failed) => {
                        Ok(Counted::Refused(failed.item))
                    }
                    other => Err(StoreError::unavailable("UpdateItem", other)),
                }
            }
            Err(other) => Err(sdk_failure(other)),
        }
    }
}

/// Creates the single table with its TTL and `active` index (tests and local emulation; SAM
/// creates it in AWS).
pub async fn create_table(client: &Client, table: &str) -> Result<(), StoreError> {
    let attribute = |name: &str, kind: ScalarAttributeType| {
        AttributeDefinition::builder()
            .attribute_name(name)
            .attribute_type(kind)
            .build()
            .map_err(unbuilt)
    };
    let key = |name: &str, kind: KeyType| {
        KeySchemaElement::builder()
            .attribute_name(name)
            .key_type(kind)
            .build()
            .map_err(unbuilt)
    };
    let index = GlobalSecondaryIndex::builder()
        .index_name(ACTIVE_INDEX)
        .key_schema(key(ACTIVE_INDEX, KeyType::Hash)?)
        .key_schema(key("updated_at", KeyType::Range)?)
        .projection(
            Projection::builder()
                .projection_type(ProjectionType::All)
                .build(),
        )
        .build()
        .map_err(unbuilt)?;
    client
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attribute("pk", ScalarAttributeType::S)?)
        .attribute_definitions(attribute(ACTIVE_INDEX, ScalarAttributeType::S)?)
        .attribute_definitions(attribute("updated_at", ScalarAttributeType::N)?)
        .key_schema(key("pk", KeyType::Hash)?)
        .global_secondary_indexes(index)
        .send()
        .await
        .map_err(sdk_failure)?;
    client
        .update_time_to_live()
        .table_name(table)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .attribute_name("expires_at")
                .enabled(true)
                .build()
                .map_err(unbuilt)?,
        )
        .send()
        .await
        .map_err(sdk_failure)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_in_flight_spread_over_every_shard_of_the_active_index() {
        let mut counts = std::collections::BTreeMap::new();
        for i in 0..1600 {
            *counts
                .entry(active_shard(&format!(
                    "t4:acme|p5:alice|k3:job|i22:job{i:05}"
                )))
                .or_insert(0) += 1;
        }
        assert_eq!(counts.len(), ACTIVE_SHARDS as usize, "{counts:?}");
        assert!(
            counts.values().all(|n| (50..=150).contains(n)),
            "no shard takes much more than its share: {counts:?}"
        );
        assert_eq!(
            active_shard("same"),
            active_shard("same"),
            "a job keeps its shard"
        );
    }
}
