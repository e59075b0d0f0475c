//! The operator's listings on DynamoDB ([`OperatorView`]): a paginated `Scan` of the whole table
//! with a filter on the kind (and tenant, and expiry). Only the operator's CLI calls it.
//!
//! Cost: a Scan reads (and bills) every item of the table, matched or not: 0.5 read request
//! units per 4 KB read, eventually consistent, for the whole table on every listing that is not
//! cut short by its limit. That is fine for an operator looking at a table now and then; it is
//! never a request path (a request must cost the same whatever the table holds). A table too
//! large to scan wants an index on the kind (a sparse GSI) or an export to S3 instead.
//!
//! Reads are eventually consistent: an operator's listing may miss a write of the last second;
//! every decision the CLI takes from it (reconciling one operation) reads that record again
//! strongly consistently through the request path's own port.

use aws_sdk_dynamodb::types::AttributeValue;
use relevo_state::jobs::{Job, JobStatus};
use relevo_state::operator::{
    Listing, MAX_LISTING, OperatorView, kind_marker, listed, parse_storage_key,
};
use relevo_state::{Record, StoreError, StoreFuture};

use crate::dynamo::{DynamoStore, Item, body_of, get_n, get_s, job_of, n, s};
use crate::failure::sdk_failure;

/// What one scan looks for: its filter expression and values.
struct Filter {
    expression: String,
    names: Option<std::collections::HashMap<String, String>>,
    values: Item,
}

impl DynamoStore {
    /// Scans the table page by page, handing each matching item to `take` until it says stop
    /// (returns false).
    async fn scan_with(
        &self,
        filter: Filter,
        mut take: impl FnMut(&Item) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        let mut start: Option<Item> = None;
        loop {
            let output = self
                .client
                .scan()
                .table_name(&self.table)
                .filter_expression(&filter.expression)
                .set_expression_attribute_names(filter.names.clone())
                .set_expression_attribute_values(Some(filter.values.clone()))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(sdk_failure)?;
            for item in output.items() {
                if !take(item)? {
                    return Ok(());
                }
            }
            match output.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(()),
            }
        }
    }
}

fn record_of_item(item: &Item) -> Result<Option<Record>, StoreError> {
    let Some(key) = get_s(item, "pk").and_then(parse_storage_key) else {
        return Ok(None);
    };
    Ok(Some(Record {
        key,
        revision: get_n(item, "rev").unwrap_or(0),
        body: body_of(item)?,
        expires_at: get_n(item, "expires_at"),
    }))
}

impl OperatorView for DynamoStore {
    fn list_records<'a>(
        &'a self,
        kind: &'a str,
        tenant: Option<&'a str>,
        limit: usize,
        now: u64,
    ) -> StoreFuture<'a, Listing<Record>> {
        Box::pin(async move {
            let limit = limit.min(MAX_LISTING);
            let mut values = Item::from([
                (":kind".into(), s(kind_marker(kind))),
                (":now".into(), n(now)),
            ]);
            let mut expression =
                "contains(pk, :kind) AND (attribute_not_exists(expires_at) OR expires_at > :now)"
                    .to_string();
            if let Some(tenant) = tenant {
                values.insert(":tenant".into(), s(tenant));
                expression.push_str(" AND tenant = :tenant");
            }
            let mut listing = Listing::default();
            self.scan_with(
                Filter {
                    expression,
                    names: None,
                    values,
                },
                |item| {
                    let Some(record) = record_of_item(item)? else {
                        return Ok(true);
                    };
                    if !listed(&record, kind, tenant, now) {
                        return Ok(true);
                    }
                    if listing.items.len() == limit {
                        listing.truncated = true;
                        return Ok(false);
                    }
                    listing.items.push(record);
                    Ok(true)
                },
            )
            .await?;
            Ok(listing)
        })
    }

    fn list_jobs<'a>(
        &'a self,
        statuses: &'a [JobStatus],
        limit: usize,
    ) -> StoreFuture<'a, Listing<Job>> {
        Box::pin(async move {
            let limit = limit.min(MAX_LISTING);
            if statuses.is_empty() {
                return Ok(Listing::default());
            }
            let mut values = Item::from([(":kind".into(), s(kind_marker("job")))]);
            let mut placeholders = Vec::new();
            for (i, status) in statuses.iter().enumerate() {
                values.insert(format!(":s{i}"), AttributeValue::S(status.as_str().into()));
                placeholders.push(format!(":s{i}"));
            }
            let expression = format!(
                "contains(pk, :kind) AND #status IN ({})",
                placeholders.join(", ")
            );
            let names = Some(std::collections::HashMap::from([(
                "#status".to_string(),
                "status".to_string(),
            )]));
            let mut listing = Listing::default();
            self.scan_with(
                Filter {
                    expression,
                    names,
                    values,
                },
                |item| {
                    if get_s(item, "pk")
                        .and_then(parse_storage_key)
                        .is_none_or(|key| key.kind != "job")
                    {
                        return Ok(true);
                    }
                    if listing.items.len() == limit {
                        listing.truncated = true;
                        return Ok(false);
                    }
                    listing.items.push(job_of(item)?);
                    Ok(true)
                },
            )
            .await?;
            listing.items.sort_by_key(|job| job.updated_at);
            Ok(listing)
        })
    }
}
