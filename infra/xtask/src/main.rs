//! `relevo-xtask VERB [ARGS]`: the computations of `infra/scripts/*.sh` (see the library's
//! docs). Verbs:
//! - `free-port`: a free TCP port on 127.0.0.1;
//! - `state-key`: 32 random bytes, base64 (a `RELEVO_STATE_KEYS` key);
//! - `functions TEMPLATE`: the function binaries TEMPLATE deploys, one a line, sorted;
//! - `conformance-verdict OUT ROUTING [--expected-failing "A B"] [ALSO_REQUIRED...]`: the verdict
//!   on a conformance suite run (exit status 1 when it failed);
//! - `conformance-checks OUT ROUTING SCENARIO`: the verdict on one scenario run alone, check by
//!   check (a skipped scenario or check fails it);
//! - `package-version NAME`: the version of workspace package NAME;
//! - `stale-packages [--package-dir DIR] NAME...`: the named packages whose tarball in DIR
//!   (default `target/package`) is missing or older than their files;
//! - `tool-lines FILE`: the lines of code between FILE's `---- the tool ----` and `---- end ----`;
//! - `transcript DOC`: replays DOC's curl transcript against the server at `$URL` with `$TOKEN`,
//!   each answer checked against the document's (`relevo_xtask::transcript`).
//!
//! Exit status 2 for a wrong command line, 1 for a failure (a message on stderr).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use relevo_xtask::{XtaskError, checks, functions, metadata, port, state_key, tool_lines, verdict};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((verb, rest)) = args.split_first() else {
        return usage("a verb is needed");
    };
    let result = match (verb.as_str(), rest) {
        ("free-port", []) => port::free_port().map(|p| {
            println!("{p}");
            ExitCode::SUCCESS
        }),
        ("state-key", []) => state_key::state_key().map(|k| {
            println!("{k}");
            ExitCode::SUCCESS
        }),
        ("functions", [template]) => functions::function_binaries(Path::new(template)).map(|b| {
            for binary in b {
                println!("{binary}");
            }
            ExitCode::SUCCESS
        }),
        ("conformance-verdict", [out, routing, rest @ ..]) => {
            conformance_verdict(out, routing, rest)
        }
        ("conformance-checks", [out, routing, scenario]) => std::fs::read_to_string(out)
            .map_err(|source| XtaskError::Read {
                path: PathBuf::from(out),
                source,
            })
            .map(|text| {
                let verdict = checks::judge(&text, routing, scenario);
                for line in &verdict.lines {
                    println!("{line}");
                }
                if verdict.passed {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                }
            }),
        ("package-version", [name]) => metadata::load().and_then(|packages| {
            println!("{}", metadata::version_of(&packages, name)?);
            Ok(ExitCode::SUCCESS)
        }),
        ("stale-packages", rest) => stale_packages(rest),
        ("tool-lines", [file]) => std::fs::read_to_string(file)
            .map_err(|source| XtaskError::Read {
                path: PathBuf::from(file),
                source,
            })
            .map(|text| {
                println!("{}", tool_lines::tool_lines(&text));
                ExitCode::SUCCESS
            }),
        ("transcript", [doc]) => return transcript(doc),
        _ => return usage(&format!("unknown verb or arguments: {args:?}")),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("relevo-xtask {verb}: {error}");
            ExitCode::FAILURE
        }
    }
}

fn conformance_verdict(out: &str, routing: &str, rest: &[String]) -> Result<ExitCode, XtaskError> {
    let (expected, also) = match rest {
        [flag, list, also @ ..] if flag == "--expected-failing" => (list.as_str(), also),
        also => ("", also),
    };
    let expected: BTreeSet<String> = expected.split_whitespace().map(String::from).collect();
    let text = std::fs::read_to_string(out).map_err(|source| XtaskError::Read {
        path: PathBuf::from(out),
        source,
    })?;
    let verdict = verdict::judge(&text, routing, also, &expected);
    for line in &verdict.lines {
        println!("{line}");
    }
    Ok(if verdict.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn stale_packages(rest: &[String]) -> Result<ExitCode, XtaskError> {
    let (dir, wanted) = match rest {
        [flag, dir, wanted @ ..] if flag == "--package-dir" => (Path::new(dir.as_str()), wanted),
        wanted => (Path::new("target/package"), wanted),
    };
    let packages = metadata::load()?;
    for name in metadata::stale(&packages, wanted, dir) {
        println!("{name}");
    }
    Ok(ExitCode::SUCCESS)
}

fn usage(problem: &str) -> ExitCode {
    eprintln!(
        "relevo-xtask: {problem}\nusage: relevo-xtask free-port | state-key | functions TEMPLATE | \
         conformance-verdict OUT ROUTING [--expected-failing \"A B\"] [ALSO_REQUIRED...] | \
         conformance-checks OUT ROUTING SCENARIO | \
         package-version NAME | stale-packages [--package-dir DIR] NAME... | tool-lines FILE"
    );
    ExitCode::from(2)
}

/// `transcript DOC`: every step replayed, or the first that did not match, on stderr.
fn transcript(doc: &str) -> ExitCode {
    use relevo_xtask::transcript::{blocks, replay, steps};
    let env: std::collections::BTreeMap<String, String> = ["URL", "TOKEN"]
        .iter()
        .filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?)))
        .collect();
    let replayed = std::fs::read_to_string(doc)
        .map_err(|e| format!("could not read {doc}: {e}"))
        .and_then(|text| {
            blocks(&text)
                .and_then(|b| steps(&b))
                .map_err(|e| e.to_string())
        })
        .and_then(|steps| {
            replay(&steps, &env)
                .map(|()| steps.len())
                .map_err(|e| e.to_string())
        });
    match replayed {
        Ok(count) => {
            println!("transcript: all {count} steps of {doc} answered as it shows");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("transcript: {error}");
            ExitCode::FAILURE
        }
    }
}
