//! `jobs stuck`, `dlq list`, `dlq redrive`: durable work that is not moving.
//!
//! A job is stuck when it is `queued` past the engine's queued deadline (its message was lost or
//! never sent; the reconciler re-enqueues it), `running` on an expired lease (its worker died; the
//! reconciler requeues it, or fails it past the attempt budget), or `failed` with its attempts
//! exhausted (it will not run again by itself). The thresholds default to the engine's
//! ([`relevo_state::EngineConfig`]) and can be given as the deployment sets them.

use relevo_state::dead_letters::{DeadLetter, Redrive};
use relevo_state::{EngineConfig, Job, JobStatus, WorkMessage};
use serde_json::json;

use crate::backend::Backend;
use crate::error::CliError;
use crate::output::{Output, duration, excerpt, inert, table};

/// Why a job is stuck, or `None` when it is not.
pub fn stuck_reason(job: &Job, config: &EngineConfig, now: u64) -> Option<&'static str> {
    match job.status {
        JobStatus::Queued if job.updated_at + config.queued_deadline_secs <= now => {
            Some("queued past its deadline")
        }
        JobStatus::Running if !job.lease_live(now) && job.attempts >= config.max_attempts => {
            Some("lease expired, attempts exhausted (the reconciler fails it)")
        }
        JobStatus::Running if !job.lease_live(now) => {
            Some("lease expired (the reconciler requeues it)")
        }
        JobStatus::Failed
            if job.attempts >= config.max_attempts
                || job
                    .error
                    .as_deref()
                    .is_some_and(|e| e.starts_with("attempt budget exhausted")) =>
        {
            Some("failed: attempts exhausted")
        }
        _ => None,
    }
}

pub async fn stuck(
    backend: &Backend,
    config: &EngineConfig,
    limit: usize,
    now: u64,
) -> Result<Output, CliError> {
    let statuses = [JobStatus::Queued, JobStatus::Running, JobStatus::Failed];
    let listing = backend
        .view
        .list_jobs(&statuses, limit)
        .await
        .map_err(CliError::store("listing the jobs"))?;
    let mut stuck: Vec<(&Job, &str)> = listing
        .items
        .iter()
        .filter_map(|job| stuck_reason(job, config, now).map(|why| (job, why)))
        .collect();
    stuck.sort_by_key(|(job, _)| job.updated_at);
    let rows: Vec<Vec<String>> = stuck
        .iter()
        .map(|(job, why)| {
            vec![
                job.job.id.clone(),
                job.job.tenant.clone(),
                job.job.subject.clone(),
                job.kind.clone(),
                job.status.as_str().to_string(),
                job.attempts.to_string(),
                duration(now.saturating_sub(job.updated_at)),
                why.to_string(),
            ]
        })
        .collect();
    let mut text = table(
        &[
            "job",
            "tenant",
            "subject",
            "kind",
            "status",
            "attempts",
            "since write",
            "why",
        ],
        &rows,
    );
    if listing.truncated {
        text.push_str("  (listing cut at --limit: more jobs exist)\n");
    }
    let json = json!({
        "stuck": stuck.iter().map(|(job, why)| json!({
            "jobId": job.job.id, "tenant": job.job.tenant, "subject": job.job.subject, "kind": job.kind,
            "status": job.status.as_str(), "attempts": job.attempts, "updatedAt": job.updated_at,
            "sinceWriteSecs": now.saturating_sub(job.updated_at), "reason": why, "error": job.error,
        })).collect::<Vec<_>>(),
        "thresholds": { "queuedDeadlineSecs": config.queued_deadline_secs, "maxAttempts": config.max_attempts },
        "truncated": listing.truncated,
    });
    Ok(Output { json, text })
}

/// The job a dead letter names, when it is a work message.
fn job_of(letter: &DeadLetter) -> Option<String> {
    WorkMessage::decode(&letter.body)
        .map(|m| format!("{}/{}/{}", m.job.tenant, m.job.subject, m.job.id))
}

pub async fn dlq_list(backend: &Backend, limit: usize) -> Result<Output, CliError> {
    let letters = backend
        .dead_letters()?
        .list_dead_letters(limit)
        .await
        .map_err(CliError::store("reading the dead-letter queue"))?;
    let rows: Vec<Vec<String>> = letters
        .iter()
        .map(|l| {
            let what = job_of(l)
                .unwrap_or_else(|| format!("(not a work message) {}", excerpt(&l.body, 60)));
            vec![l.id.clone(), l.receive_count.to_string(), what]
        })
        .collect();
    let json = json!({
        "deadLetters": letters.iter().map(|l| json!({
            "id": l.id, "receiveCount": l.receive_count, "body": l.body, "job": job_of(l),
        })).collect::<Vec<_>>(),
    });
    Ok(Output {
        json,
        text: table(&["message", "receives", "job (tenant/subject/id)"], &rows),
    })
}

pub async fn dlq_redrive(backend: &Backend, which: Redrive<'_>) -> Result<Output, CliError> {
    let moved = backend
        .dead_letters()?
        .redrive(which)
        .await
        .map_err(CliError::store("redriving the dead letters"))?;
    if let Redrive::One(id) = which
        && moved.is_empty()
    {
        return Err(CliError::NoSuchDeadLetter(id.into()));
    }
    let mut text = format!("redrove {} message(s) to the work queue\n", moved.len());
    for id in &moved {
        text.push_str(&format!("  {}\n", inert(id)));
    }
    Ok(Output {
        json: json!({ "redriven": moved }),
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use relevo_state::{JobRef, Lease};

    fn job(status: JobStatus, attempts: u32, updated_at: u64, lease: Option<u64>) -> Job {
        serde_json::from_value(json!({
            "job": JobRef { tenant: "acme".into(), subject: "alice".into(), id: "j".into() },
            "kind": "export", "operation_key": null, "digest": "", "input": {}, "status": status, "revision": 1,
            "lease": lease.map(|expires_at| Lease { owner: "w".into(), expires_at }),
            "checkpoint": null, "result": null, "error": null, "attempts": attempts, "cancel_requested": false,
            "created_at": 0, "updated_at": updated_at, "expires_at": u64::MAX,
        }))
        .expect("a job's JSON form")
    }

    #[test]
    fn a_job_is_stuck_only_past_its_deadline_lease_or_budget() {
        let config = EngineConfig::default();
        assert_eq!(
            stuck_reason(&job(JobStatus::Queued, 0, 100, None), &config, 159),
            None
        );
        assert!(stuck_reason(&job(JobStatus::Queued, 0, 100, None), &config, 160).is_some());
        assert_eq!(
            stuck_reason(&job(JobStatus::Running, 1, 100, Some(500)), &config, 499),
            None
        );
        assert_eq!(
            stuck_reason(&job(JobStatus::Running, 1, 100, Some(500)), &config, 500),
            Some("lease expired (the reconciler requeues it)")
        );
        assert_eq!(
            stuck_reason(&job(JobStatus::Failed, 5, 100, None), &config, 100),
            Some("failed: attempts exhausted")
        );
        assert_eq!(
            stuck_reason(&job(JobStatus::Failed, 1, 100, None), &config, 100),
            None,
            "a failure by the runner"
        );
    }
}
