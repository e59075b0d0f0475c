//! Queues, the event source mapping that feeds the worker, and schedules.

use super::Context;
use crate::functions::rate_period_secs;

const VISIBILITY_SECS: std::ops::RangeInclusive<u64> = 0..=43_200;
const RETENTION_SECS: std::ops::RangeInclusive<u64> = 60..=1_209_600;
const MAX_RECEIVE_COUNT: std::ops::RangeInclusive<u64> = 1..=1_000;
/// Lambda's advice for a queue feeding a function: at least 5 receives before the dead letters.
const MIN_RECEIVES_FOR_LAMBDA: u64 = 5;
const BATCH_SIZE: std::ops::RangeInclusive<u64> = 1..=10_000;
const MAXIMUM_CONCURRENCY: std::ops::RangeInclusive<u64> = 2..=1_000;

pub(super) fn run(context: &mut Context) {
    let (queues, mappings, functions, schedules) = match (
        context.stack.queues(context.ids),
        context.stack.event_source_mappings(context.ids),
        context.stack.functions(context.ids),
        context.stack.schedules(context.ids),
    ) {
        (Ok(q), Ok(m), Ok(f), Ok(s)) => (q, m, f, s),
        (Err(e), ..) | (_, Err(e), ..) | (_, _, Err(e), _) | (.., Err(e)) => {
            return context.refuse("references", "Queues", e.to_string());
        }
    };
    for queue in &queues {
        let id = &queue.logical_id;
        if !VISIBILITY_SECS.contains(&queue.visibility_secs) {
            context.refuse(
                "sqs-limits",
                id,
                format!(
                    "VisibilityTimeout {} s is outside 0–43,200 s",
                    queue.visibility_secs
                ),
            );
        }
        if !RETENTION_SECS.contains(&queue.retention_secs) {
            context.refuse(
                "sqs-limits",
                id,
                format!(
                    "MessageRetentionPeriod {} s is outside 60–1,209,600 s",
                    queue.retention_secs
                ),
            );
        }
        if let Some((dead_letters, receives)) = &queue.dead_letter {
            if !MAX_RECEIVE_COUNT.contains(receives) {
                context.refuse(
                    "sqs-limits",
                    id,
                    format!("maxReceiveCount {receives} is outside 1–1,000"),
                );
            }
            match queues.iter().find(|q| q.logical_id == *dead_letters) {
                None => context.refuse("sqs-limits", id, format!("its dead-letter queue {dead_letters} is not a queue of this stack")),
                Some(dlq) if dlq.retention_secs < queue.retention_secs => context.refuse(
                    "sqs-limits",
                    id,
                    format!("{dead_letters} keeps messages {} s, less than this queue's {} s: a redriven message expires early", dlq.retention_secs, queue.retention_secs),
                ),
                Some(_) => {}
            }
        }
    }
    for mapping in &mappings {
        let id = &mapping.logical_id;
        let Some(queue) = queues.iter().find(|q| q.logical_id == mapping.source) else {
            continue;
        };
        if let Some(function) = functions.iter().find(|f| f.logical_id == mapping.function)
            && queue.visibility_secs < 6 * function.timeout_secs
        {
            context.refuse(
                "sqs-visibility",
                &queue.logical_id,
                format!(
                    "VisibilityTimeout {} s < 6 × {}'s Timeout {} s",
                    queue.visibility_secs, function.logical_id, function.timeout_secs
                ),
            );
        }
        if let Some((_, receives)) = &queue.dead_letter
            && *receives < MIN_RECEIVES_FOR_LAMBDA
        {
            context.refuse(
                "sqs-limits",
                &queue.logical_id,
                format!("maxReceiveCount {receives} < 5 for a queue that feeds a function"),
            );
        }
        if !BATCH_SIZE.contains(&mapping.batch_size) {
            context.refuse(
                "event-source",
                id,
                format!("BatchSize {} is outside 1–10,000", mapping.batch_size),
            );
        }
        if mapping.batch_size > 10 && mapping.batching_window_secs < 1 {
            context.refuse(
                "event-source",
                id,
                "BatchSize over 10 needs MaximumBatchingWindowInSeconds of at least 1",
            );
        }
        if let Some(concurrency) = mapping.maximum_concurrency
            && !MAXIMUM_CONCURRENCY.contains(&concurrency)
        {
            context.refuse(
                "event-source",
                id,
                format!("MaximumConcurrency {concurrency} is outside 2–1,000"),
            );
        }
        if !mapping.report_batch_item_failures {
            context.refuse(
                "event-source",
                id,
                "without FunctionResponseTypes [ReportBatchItemFailures] a failed message is deleted with its batch",
            );
        }
    }
    for schedule in &schedules {
        if !valid_schedule(&schedule.expression) {
            context.refuse(
                "schedule",
                &schedule.logical_id,
                format!(
                    "{:?} is not a valid schedule expression",
                    schedule.expression
                ),
            );
        }
    }
}

fn valid_schedule(expression: &str) -> bool {
    if expression.starts_with("rate(") {
        return rate_period_secs(expression).is_some();
    }
    let Some(fields) = expression
        .strip_prefix("cron(")
        .and_then(|e| e.strip_suffix(')'))
    else {
        return false;
    };
    let fields: Vec<&str> = fields.split(' ').collect();
    // Six fields; day-of-month and day-of-week cannot both be set: one of them is `?`.
    fields.len() == 6 && (fields[2] == "?") != (fields[4] == "?")
}
