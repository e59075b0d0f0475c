//! `relevo-ops`: the operator's CLI of a Relevo deployment, over the same ports the functions use
//! and either backend (SQLite of `make run`, or DynamoDB and SQS). See `relevo-ops --help` and the
//! README's "The operator's CLI".
//!
//! Invariants: every write goes through a port's conditional write or the app's own code path
//! (reconciling is `Inventory::settle`, not a copy); listings are operator paths
//! (`relevo_state::operator`), never request paths; a command either does all it says or
//! fails with an error that names what failed (exit status 1; 2 for a wrong command line).
//!
//! Threat model: the CLI runs with an operator's credentials, which read every tenant's records
//! and the signing keys. It prints no secret and logs nothing: key commands name key ids only,
//! and errors carry no key material.

mod args;
mod backend;
mod error;
mod jobs;
mod keys;
mod ops;
mod output;
mod report;

use std::path::PathBuf;

use relevo_state::EngineConfig;
use relevo_state::dead_letters::Redrive;
use relevo_state::operator::MAX_LISTING;

use crate::args::{Args, USAGE};
use crate::backend::Backend;
use crate::error::CliError;
use crate::output::Output;

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// The requestState lifetime (`ServerConfig::request_state_ttl_secs`): the least overlap.
const REQUEST_STATE_TTL_SECS: u64 = 3600;

fn key_source(args: &Args) -> Result<keys::Source, CliError> {
    match (args.value("--secret"), args.value("--keys-file")) {
        (Some(_), Some(_)) => Err(CliError::Usage("choose one: --secret NAME or --keys-file PATH".into())),
        (Some(name), None) => Ok(keys::Source::Secret {
            client: aws_sdk_secretsmanager::Client::new(&relevo_aws::sdk_config()),
            name: name.into(),
        }),
        (None, Some(path)) => Ok(keys::Source::File(PathBuf::from(path))),
        (None, None) => Err(CliError::Usage("the keys commands need --secret NAME or --keys-file PATH".into())),
    }
}

async fn run(args: &Args) -> Result<Output, CliError> {
    let words: Vec<&str> = args.words.iter().map(String::as_str).collect();
    let limit = args.number("--limit", MAX_LISTING as u64)? as usize;
    let tenant = args.value("--tenant");
    let now = now();
    let extra = |count: usize, command: &str| {
        if args.rest(count).is_empty() {
            Ok(())
        } else {
            Err(CliError::Usage(format!("{command}: unexpected {:?}", args.rest(count))))
        }
    };
    let one_id = |command: &str| match args.rest(2) {
        [id] => Ok(id.as_str()),
        _ => Err(CliError::Usage(format!("{command} needs exactly one operation ID"))),
    };
    match words.as_slice() {
        ["ledger", "report", ..] => {
            extra(2, "ledger report")?;
            let backend = Backend::open(args)?;
            let (operations, truncated) = ops::load(&backend, tenant, limit, now).await?;
            Ok(report::ledger_report(&operations, now, truncated))
        }
        ["ops", "list", ..] => {
            extra(2, "ops list")?;
            let state = args.value("--state").map(ops::parse_state).transpose()?;
            let backend = Backend::open(args)?;
            let (operations, truncated) = ops::load(&backend, tenant, limit, now).await?;
            Ok(ops::list(operations, state, truncated, now))
        }
        ["ops", "show", ..] => {
            let id = one_id("ops show")?;
            let tenant = args.required("--tenant", "ops show")?;
            ops::show(&Backend::open(args)?, tenant, id, now).await
        }
        ["ops", "reconcile", ..] => {
            let id = one_id("ops reconcile")?;
            let tenant = args.required("--tenant", "ops reconcile")?;
            ops::reconcile(&Backend::open(args)?, tenant, id, now).await
        }
        ["jobs", "stuck", ..] => {
            extra(2, "jobs stuck")?;
            let defaults = EngineConfig::default();
            let config = EngineConfig {
                queued_deadline_secs: args.number("--queued-deadline-secs", defaults.queued_deadline_secs)?,
                max_attempts: args.number("--max-attempts", u64::from(defaults.max_attempts))?.min(u64::from(u32::MAX))
                    as u32,
                ..defaults
            };
            jobs::stuck(&Backend::open(args)?, &config, limit, now).await
        }
        ["dlq", "list", ..] => {
            extra(2, "dlq list")?;
            jobs::dlq_list(&Backend::open(args)?, limit).await
        }
        ["dlq", "redrive", ..] => {
            let which = match (args.switch("--all"), args.rest(2)) {
                (true, []) => Redrive::All,
                (false, [id]) => Redrive::One(id),
                _ => return Err(CliError::Usage("dlq redrive needs --all or exactly one message ID".into())),
            };
            jobs::dlq_redrive(&Backend::open(args)?, which).await
        }
        ["keys", "list", ..] => {
            extra(2, "keys list")?;
            keys::list(&key_source(args)?, now).await
        }
        ["keys", "add", ..] => {
            extra(2, "keys add")?;
            keys::add(&key_source(args)?, args.value("--kid"), args.switch("--staged"), now).await
        }
        ["keys", "activate", ..] => match args.rest(2) {
            [kid] => keys::activate(&key_source(args)?, kid, now).await,
            _ => Err(CliError::Usage("keys activate needs exactly one KID".into())),
        },
        ["keys", "retire", ..] => {
            let min_overlap = args.number("--min-overlap-secs", REQUEST_STATE_TTL_SECS)?;
            keys::retire(&key_source(args)?, args.rest(2), now, min_overlap, args.switch("--force")).await
        }
        [] => Err(CliError::Usage("no command".into())),
        _ => Err(CliError::Usage(format!("unknown command {:?}", args.words.join(" ")))),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(error) => {
            eprintln!("relevo-ops: {}\n\n{USAGE}", output::lines_inert(&error.to_string()));
            std::process::exit(error.exit_code());
        }
    };
    if args.switch("--help") {
        print!("{USAGE}");
        return;
    }
    match run(&args).await {
        Ok(output) => print!("{}", output.render(args.switch("--json"))),
        Err(error) => {
            // Errors may quote stored text (an id, a tenant): printed inert, as answers are.
            let said = output::lines_inert(&error.to_string());
            match &error {
                CliError::Usage(_) => eprintln!("relevo-ops: {said}\n\n{USAGE}"),
                _ => eprintln!("relevo-ops: error: {said}"),
            }
            std::process::exit(error.exit_code());
        }
    }
}
