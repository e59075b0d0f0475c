//! `relevo-ops`: the operator's CLI of a Relevo deployment, as a library, over the same ports the
//! functions use and either backend (SQLite of `make run`, or DynamoDB and SQS). An app's operator
//! binary is a few lines: it registers what only the app knows ([`Hooks`], today the reconcile of
//! an operation) and hands over its command line:
//!
//! ```no_run
//! # #[derive(Debug, thiserror::Error)] #[error("settle")] struct SettleError;
//! use relevo_ops::{Hooks, Operation, Ports};
//!
//! fn main() -> std::process::ExitCode {
//!     let hooks = Hooks::new().reconcile(|ports: Ports, tenant: String, id: String| async move {
//!         // The app's own settle over `ports` (the shop's: `Inventory::settle`).
//!         Ok::<Option<Operation>, SettleError>(None)
//!     });
//!     relevo_ops::run("my-app-ops", std::env::args().skip(1).collect(), hooks)
//! }
//! ```
//!
//! `cargo relevo ops ...` is the same CLI with no hooks. See `--help` and "The operator's CLI"
//! (`shared/relevo/docs/ops-cli.md`).
//!
//! Invariants: every write goes through a port's conditional write or the app's own code path
//! (reconciling is the app's reconcile hook, not a copy of it); listings are operator paths
//! (`relevo_state::operator`), never request paths; a command either does all it says or fails
//! with an error that names what failed (exit status 1; 2 for a wrong command line). A command
//! whose hook the app did not register (`ops reconcile` without [`Hooks::reconcile`]) fails
//! before it opens the store, naming the missing hook, and writes nothing; the others need none.
//!
//! Threat model: the CLI runs with an operator's credentials, which read every tenant's records
//! and the signing keys. It prints no secret and logs nothing: key commands name key ids only,
//! and errors carry no key material. Stored text (an id, a tenant, a `sub` claim) reaches the
//! terminal inert, in answers and errors alike. A hook is the app's code, trusted as the app is;
//! it gets the ports over the operator's store and the tenant and id from the command line.

mod args;
mod backend;
mod error;
mod hooks;
mod jobs;
mod keys;
mod ops;
mod output;
mod report;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use relevo_state::EngineConfig;
use relevo_state::dead_letters::Redrive;
use relevo_state::operator::MAX_LISTING;

pub use relevo_protocol::Ports;
pub use relevo_state::ledger::Operation;

pub use crate::hooks::{HookError, Hooks};

use crate::args::{Args, usage};
use crate::backend::Backend;
use crate::error::CliError;
use crate::output::Output;

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The requestState lifetime (`ServerConfig::request_state_ttl_secs`): the least overlap.
const REQUEST_STATE_TTL_SECS: u64 = 3600;

fn key_source(args: &Args) -> Result<keys::Source, CliError> {
    match (args.value("--secret"), args.value("--keys-file")) {
        (Some(_), Some(_)) => Err(CliError::Usage(
            "choose one: --secret NAME or --keys-file PATH".into(),
        )),
        (Some(name), None) => Ok(keys::Source::Secret {
            client: aws_sdk_secretsmanager::Client::new(&relevo_aws::sdk_config()),
            name: name.into(),
        }),
        (None, Some(path)) => Ok(keys::Source::File(PathBuf::from(path))),
        (None, None) => Err(CliError::Usage(
            "the keys commands need --secret NAME or --keys-file PATH".into(),
        )),
    }
}

async fn command(args: &Args, hooks: &Hooks) -> Result<Output, CliError> {
    let words: Vec<&str> = args.words.iter().map(String::as_str).collect();
    let limit = args.number("--limit", MAX_LISTING as u64)? as usize;
    let tenant = args.value("--tenant");
    let now = now();
    let extra = |count: usize, command: &str| {
        if args.rest(count).is_empty() {
            Ok(())
        } else {
            Err(CliError::Usage(format!(
                "{command}: unexpected {:?}",
                args.rest(count)
            )))
        }
    };
    let one_id = |command: &str| match args.rest(2) {
        [id] => Ok(id.as_str()),
        _ => Err(CliError::Usage(format!(
            "{command} needs exactly one operation ID"
        ))),
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
            let hook = hooks.reconcile_hook().ok_or(CliError::NoReconcileHook)?;
            ops::reconcile(&Backend::open(args)?, hook, tenant, id, now).await
        }
        ["jobs", "stuck", ..] => {
            extra(2, "jobs stuck")?;
            let defaults = EngineConfig::default();
            let config = EngineConfig {
                queued_deadline_secs: args
                    .number("--queued-deadline-secs", defaults.queued_deadline_secs)?,
                max_attempts: args
                    .number("--max-attempts", u64::from(defaults.max_attempts))?
                    .min(u64::from(u32::MAX)) as u32,
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
                _ => {
                    return Err(CliError::Usage(
                        "dlq redrive needs --all or exactly one message ID".into(),
                    ));
                }
            };
            jobs::dlq_redrive(&Backend::open(args)?, which).await
        }
        ["keys", "list", ..] => {
            extra(2, "keys list")?;
            keys::list(&key_source(args)?, now).await
        }
        ["keys", "add", ..] => {
            extra(2, "keys add")?;
            keys::add(
                &key_source(args)?,
                args.value("--kid"),
                args.switch("--staged"),
                now,
            )
            .await
        }
        ["keys", "activate", ..] => match args.rest(2) {
            [kid] => keys::activate(&key_source(args)?, kid, now).await,
            _ => Err(CliError::Usage(
                "keys activate needs exactly one KID".into(),
            )),
        },
        ["keys", "retire", ..] => {
            let min_overlap = args.number("--min-overlap-secs", REQUEST_STATE_TTL_SECS)?;
            keys::retire(
                &key_source(args)?,
                args.rest(2),
                now,
                min_overlap,
                args.switch("--force"),
            )
            .await
        }
        [] => Err(CliError::Usage("no command".into())),
        _ => Err(CliError::Usage(format!(
            "unknown command {:?}",
            args.words.join(" ")
        ))),
    }
}

/// Runs one command line of the operator's CLI (`args`: the arguments after the program name)
/// with the app's `hooks`, printing its answer on stdout and any error on stderr, and returns the
/// exit status: 0, 1 when the command failed, 2 for a wrong command line. `program` names the
/// CLI in the usage text and the errors (`relevo-ops`, `cargo relevo ops`).
///
/// It builds its own single-threaded tokio runtime: call it from `main`, not from inside a
/// runtime.
pub fn run(program: &str, args: Vec<String>, hooks: Hooks) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("{program}: error: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    let code = runtime.block_on(execute(program, args, &hooks, &mut out, &mut err));
    let _ = out.flush();
    ExitCode::from(code)
}

/// [`run`] with its output streams given: the exit status.
async fn execute(
    program: &str,
    args: Vec<String>,
    hooks: &Hooks,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    // A closed stdout or stderr (`| head`) is not worth a second error: what could be said was.
    let args = match Args::parse(args) {
        Ok(args) => args,
        Err(error) => {
            let _ = writeln!(
                err,
                "{program}: {}\n\n{}",
                output::lines_inert(&error.to_string()),
                usage(program)
            );
            return error.exit_code();
        }
    };
    if args.switch("--help") {
        let _ = write!(out, "{}", usage(program));
        return 0;
    }
    match command(&args, hooks).await {
        Ok(output) => {
            let _ = write!(out, "{}", output.render(args.switch("--json")));
            0
        }
        Err(error) => {
            // Errors may quote stored text (an id, a tenant): printed inert, as answers are.
            let said = output::lines_inert(&error.to_string());
            let _ = match &error {
                CliError::Usage(_) => writeln!(err, "{program}: {said}\n\n{}", usage(program)),
                _ => writeln!(err, "{program}: error: {said}"),
            };
            error.exit_code()
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use std::sync::{Arc, Mutex};

    use relevo_embedded::SqliteStore;
    use relevo_state::RecordStore;
    use relevo_state::ledger::{OpStatus, Proposal};
    use serde_json::{Value, json};

    use super::*;

    struct Ran {
        code: u8,
        stdout: String,
        stderr: String,
    }

    async fn ops(program: &str, args: &[&str], hooks: &Hooks) -> Ran {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let args = args.iter().map(|a| a.to_string()).collect();
        let code = execute(program, args, hooks, &mut out, &mut err).await;
        Ran {
            code,
            stdout: String::from_utf8(out).unwrap(),
            stderr: String::from_utf8(err).unwrap(),
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("relevo-ops-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A store holding one operation of tenant `acme` whose effect is uncertain (`unknown`).
    async fn store_with_an_unknown_operation(path: &std::path::Path) -> Operation {
        let now = now();
        let proposal = Proposal {
            operation_id: "op-1".into(),
            tenant: "acme".into(),
            proposer: "agent".into(),
            tool: "inventory_propose".into(),
            resource: "stock/main/MUG".into(),
            arguments: json!({}),
            expected_version: 1,
            policy_version: "p1".into(),
            created_at: now - 100,
            expires_at: now + 86_400,
        };
        let op = Operation::new(proposal, vec![], "auth".into())
            .advanced(OpStatus::Executing, now - 90, "agent", None)
            .unwrap()
            .advanced(OpStatus::Unknown, now - 60, "executor", None)
            .unwrap();
        let store = SqliteStore::open(path).unwrap();
        store
            .create(&op.record_key(), &op.to_value(), None, now)
            .await
            .unwrap();
        op
    }

    #[tokio::test]
    async fn reconcile_without_a_hook_fails_naming_the_hook_before_opening_the_store() {
        let dir = scratch("no-hook");
        let absent = dir.join("store.db");
        let sqlite = absent.display().to_string();
        let ran = ops(
            "cargo relevo ops",
            &[
                "--sqlite",
                &sqlite,
                "ops",
                "reconcile",
                "op-1",
                "--tenant",
                "acme",
            ],
            &Hooks::new(),
        )
        .await;
        assert_eq!(ran.code, 1, "{}", ran.stderr);
        assert!(
            ran.stderr
                .starts_with("cargo relevo ops: error: this operator CLI has no reconcile hook"),
            "{}",
            ran.stderr
        );
        assert!(
            ran.stderr.contains("run the app's own ops binary"),
            "{}",
            ran.stderr
        );
        assert_eq!(ran.stdout, "", "nothing printed");
        assert!(!absent.exists(), "the store was not even opened");

        // Over a real store, the operation stays as it was.
        let before = store_with_an_unknown_operation(&absent).await;
        let ran = ops(
            "relevo-ops",
            &[
                "--sqlite",
                &sqlite,
                "ops",
                "reconcile",
                "op-1",
                "--tenant",
                "acme",
            ],
            &Hooks::new(),
        )
        .await;
        assert!(
            ran.code == 1 && ran.stderr.contains("no reconcile hook") && ran.stdout.is_empty(),
            "{}",
            ran.stderr
        );
        let shown = ops(
            "relevo-ops",
            &[
                "--sqlite", &sqlite, "ops", "show", "op-1", "--tenant", "acme", "--json",
            ],
            &Hooks::new(),
        )
        .await;
        assert_eq!(shown.code, 0, "{}", shown.stderr);
        assert_eq!(
            serde_json::from_str::<Value>(&shown.stdout).unwrap(),
            before.to_value(),
            "nothing was written"
        );

        // A wrong command line is still a usage error first.
        let wrong = ops(
            "relevo-ops",
            &["--sqlite", &sqlite, "ops", "reconcile", "op-1"],
            &Hooks::new(),
        )
        .await;
        assert!(
            wrong.code == 2 && wrong.stderr.contains("needs --tenant"),
            "{}",
            wrong.stderr
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn reconcile_calls_the_app_s_hook_over_the_operator_s_store() {
        let dir = scratch("hook");
        let path = dir.join("store.db");
        let sqlite = path.display().to_string();
        store_with_an_unknown_operation(&path).await;
        let calls = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&calls);
        let hooks = Hooks::new().reconcile(move |ports: Ports, tenant: String, id: String| {
            seen.lock().unwrap().push((tenant.clone(), id.clone()));
            async move {
                // The ports reach the operator's store: the hook reads the operation there.
                let records = ports.records.clone().unwrap();
                let Some(record) = records.get(&Operation::key(&tenant, &id), now()).await? else {
                    return Ok(None);
                };
                let op = Operation::from_record(&record)?;
                Ok::<_, relevo_state::StoreError>(Some(
                    op.advanced(OpStatus::Succeeded, now(), "test-hook", None)
                        .unwrap(),
                ))
            }
        });
        let settled = ops(
            "relevo-ops",
            &[
                "--sqlite",
                &sqlite,
                "ops",
                "reconcile",
                "op-1",
                "--tenant",
                "acme",
                "--json",
            ],
            &hooks,
        )
        .await;
        assert_eq!(settled.code, 0, "{}", settled.stderr);
        let answer: Value = serde_json::from_str(&settled.stdout).unwrap();
        assert_eq!(
            (&answer["before"], &answer["after"], &answer["changed"]),
            (&json!("unknown"), &json!("succeeded"), &json!(true)),
            "{answer:#}"
        );
        assert_eq!(
            *calls.lock().unwrap(),
            [("acme".to_string(), "op-1".to_string())]
        );

        let elsewhere = ops(
            "relevo-ops",
            &[
                "--sqlite",
                &sqlite,
                "ops",
                "reconcile",
                "op-1",
                "--tenant",
                "beta",
            ],
            &hooks,
        )
        .await;
        assert!(
            elsewhere.code == 1
                && elsewhere
                    .stderr
                    .contains("no operation \"op-1\" in tenant \"beta\""),
            "{}",
            elsewhere.stderr
        );
        assert_eq!(
            calls.lock().unwrap().len(),
            1,
            "an operation the tenant does not have never reaches the hook"
        );

        let failing = Hooks::new().reconcile(|_: Ports, _: String, _: String| async {
            Err::<Option<Operation>, _>(std::io::Error::other("the downstream is down"))
        });
        let failed = ops(
            "relevo-ops",
            &[
                "--sqlite",
                &sqlite,
                "ops",
                "reconcile",
                "op-1",
                "--tenant",
                "acme",
            ],
            &failing,
        )
        .await;
        assert_eq!(failed.code, 1);
        assert!(
            failed
                .stderr
                .contains("reconciling operation \"op-1\" failed: the downstream is down"),
            "{}",
            failed.stderr
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn the_usage_text_names_the_program_it_runs_as() {
        for program in ["relevo-ops", "cargo relevo ops"] {
            let help = ops(program, &["--help"], &Hooks::new()).await;
            assert_eq!(help.code, 0);
            assert!(
                help.stdout
                    .starts_with(&format!("{program}: the operator's CLI")),
                "{}",
                help.stdout
            );
            assert!(
                help.stdout
                    .contains(&format!("\n  {program} [BACKEND] COMMAND")),
                "{}",
                help.stdout
            );
            let wrong = ops(program, &["ops", "frobnicate"], &Hooks::new()).await;
            assert!(
                wrong.code == 2
                    && wrong
                        .stderr
                        .starts_with(&format!("{program}: unknown command")),
                "{}",
                wrong.stderr
            );
        }
        assert!(
            !ops("cargo relevo ops", &["--help"], &Hooks::new())
                .await
                .stdout
                .contains("relevo-ops")
        );
    }
}
