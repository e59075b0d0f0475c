//! The command line: a few subcommands and `--flag value` options, parsed by hand (no argument
//! parser in the workspace, and this one is small). Flags may come before or after the words.

use std::collections::BTreeMap;

use crate::error::CliError;

/// The usage text of the program `program` (the binary's name, or `cargo relevo ops`).
pub fn usage(program: &str) -> String {
    USAGE.replace("{program}", program)
}

const USAGE: &str = "\
{program}: the operator's CLI of a Relevo deployment

USAGE
  {program} [BACKEND] COMMAND [OPTIONS] [--json]

BACKEND (the store the functions use; flags win over the environment)
  --sqlite PATH                  the embedded store of `make run` (RELEVO_STORE=sqlite:PATH;
                                 `make run` keeps it in .relevo/store.db)
  --table NAME                   DynamoDB (RELEVO_TABLE); endpoint, region and credentials from
                                 AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, ... as the functions
  --queue-url URL --dlq-url URL  SQS work queue and its dead-letter queue (RELEVO_QUEUE_URL,
                                 RELEVO_DLQ_URL), for the dlq commands

COMMANDS
  ledger report [--tenant T]         operations by state, attempts, rejections, uncertain ones,
                                     reconciliation times
  ops list [--state S] [--tenant T]  operations, `unknown` first, then oldest first
  ops show ID --tenant T             one operation with its whole history
  ops reconcile ID --tenant T        settle one operation now (the app's own settle, through the
                                     reconcile hook its ops binary registers)
  jobs stuck [--queued-deadline-secs N] [--max-attempts N]
                                     jobs queued past their deadline, running on an expired lease,
                                     failed with their attempts exhausted
  dlq list                           messages in the dead-letter queue
  dlq redrive (--all | ID)           move dead letters back to the work queue
  keys list (--secret NAME | --keys-file PATH)
                                     the signing key ids (never the keys)
  keys add [--kid K] [--staged] (--secret NAME | --keys-file PATH)
                                     a new random active key; the old ones stay accepted
                                     (--staged: accepted only, until `keys activate K`)
  keys activate KID (--secret NAME | --keys-file PATH)
                                     make a staged key the active one
  keys retire KID... (--secret NAME | --keys-file PATH) [--min-overlap-secs N] [--force]
                                     stop accepting old keys (never the active one)

OPTIONS
  --json       machine-readable output (one JSON document on stdout)
  --limit N    at most N records per listing (default 10000)
  -h, --help   this text
";

/// Flags that take a value.
const VALUED: &[&str] = &[
    "--sqlite",
    "--table",
    "--queue-url",
    "--dlq-url",
    "--tenant",
    "--state",
    "--limit",
    "--kid",
    "--secret",
    "--keys-file",
    "--queued-deadline-secs",
    "--max-attempts",
    "--min-overlap-secs",
];
/// Flags that stand alone.
const SWITCHES: &[&str] = &["--json", "--all", "--force", "--staged", "--help"];

/// The words and flags of one invocation.
#[derive(Debug, Default, PartialEq)]
pub struct Args {
    pub words: Vec<String>,
    values: BTreeMap<&'static str, String>,
    switches: Vec<&'static str>,
}

impl Args {
    pub fn parse(raw: impl IntoIterator<Item = String>) -> Result<Args, CliError> {
        let mut args = Args::default();
        let mut raw = raw.into_iter();
        while let Some(arg) = raw.next() {
            let arg = if arg == "-h" {
                "--help".to_string()
            } else {
                arg
            };
            if !arg.starts_with("--") {
                args.words.push(arg);
                continue;
            }
            let (name, inline) = match arg.split_once('=') {
                Some((name, value)) => (name.to_string(), Some(value.to_string())),
                None => (arg, None),
            };
            if let Some(flag) = VALUED.iter().find(|f| **f == name) {
                let value = match inline {
                    Some(value) => value,
                    None => raw
                        .next()
                        .ok_or_else(|| CliError::Usage(format!("{flag} needs a value")))?,
                };
                if args.values.insert(flag, value).is_some() {
                    return Err(CliError::Usage(format!("{flag} given twice")));
                }
            } else if let Some(flag) = SWITCHES.iter().find(|f| **f == name) {
                if inline.is_some() {
                    return Err(CliError::Usage(format!("{flag} takes no value")));
                }
                args.switches.push(flag);
            } else {
                return Err(CliError::Usage(format!("unknown option {name}")));
            }
        }
        Ok(args)
    }

    pub fn value(&self, flag: &str) -> Option<&str> {
        self.values.get(flag).map(String::as_str)
    }

    pub fn required(&self, flag: &str, command: &str) -> Result<&str, CliError> {
        self.value(flag)
            .ok_or_else(|| CliError::Usage(format!("{command} needs {flag}")))
    }

    pub fn number(&self, flag: &str, default: u64) -> Result<u64, CliError> {
        match self.value(flag) {
            None => Ok(default),
            Some(text) => text.parse().map_err(|_| {
                CliError::Usage(format!("{flag} must be a whole number, got {text:?}"))
            }),
        }
    }

    pub fn switch(&self, flag: &str) -> bool {
        self.switches.contains(&flag)
    }

    /// The words after the first `skip` (the command's own arguments).
    pub fn rest(&self, skip: usize) -> &[String] {
        self.words.get(skip..).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;

    fn parse(line: &str) -> Result<Args, CliError> {
        Args::parse(line.split_whitespace().map(String::from))
    }

    #[test]
    fn flags_may_come_anywhere_and_take_their_value_inline_or_next() {
        let args = parse("--sqlite a.db ops show op1 --tenant=acme --json").unwrap();
        assert_eq!(args.words, ["ops", "show", "op1"]);
        assert_eq!(
            (args.value("--sqlite"), args.value("--tenant")),
            (Some("a.db"), Some("acme"))
        );
        assert!(args.switch("--json") && !args.switch("--all"));
        assert_eq!(args.rest(2), ["op1"]);
    }

    #[test]
    fn unknown_repeated_or_valueless_flags_are_usage_errors() {
        for line in [
            "ops list --colour",
            "ops list --tenant",
            "--tenant a --tenant b",
            "--json=1",
        ] {
            assert!(matches!(parse(line), Err(CliError::Usage(_))), "{line}");
        }
        assert!(matches!(
            parse("--limit x").unwrap().number("--limit", 1),
            Err(CliError::Usage(_))
        ));
    }
}
