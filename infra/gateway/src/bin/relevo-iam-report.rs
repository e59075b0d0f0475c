//! `relevo-iam-report LOG...`: what the functions of local Lambda mode called under their
//! execution policies (the call logs of `relevo-lambda-local --iam-log`): every refused call
//! (exit status 1), and per function the actions its policy grants that no call used.

use std::path::PathBuf;
use std::process::ExitCode;

use relevo_gateway::lambda_local::iam_proxy::report;

fn main() -> ExitCode {
    let logs: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    if logs.is_empty() {
        eprintln!("usage: relevo-iam-report LOG...");
        return ExitCode::from(2);
    }
    let report = match report(&logs) {
        Ok(report) => report,
        Err(error) => {
            eprintln!("iam report: {error}");
            return ExitCode::FAILURE;
        }
    };
    for (function, actions) in &report.used {
        println!(
            "iam: {function} called {}",
            actions.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    for (function, actions) in &report.unused {
        println!(
            "iam: {function} is granted, and no run called: {}",
            actions.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    for denied in &report.denied {
        eprintln!(
            "iam: DENIED {} {} on {}",
            denied.function, denied.action, denied.resource
        );
    }
    if report.denied.is_empty() {
        println!(
            "iam: {} log(s), no call refused by its function's policy",
            logs.len()
        );
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "iam: {} call(s) refused: the template's policies do not allow what the code calls",
            report.denied.len()
        );
        ExitCode::FAILURE
    }
}
