//! `relevo-deploy-check TRANSLATED.json [--topology NAME:KEY=VALUE,... ...]`
//! `relevo-deploy-check --rules`
//!
//! Refuses what a deploy of the translated template would trip on (see `relevo_template::check`),
//! for each topology's parameter set (by default both front doors, `check::front_doors`). Exit status 1 with one line per finding, each naming its
//! rule and the document the limit comes from; 0 when nothing is refused.

use std::path::PathBuf;
use std::process::ExitCode;

use relevo_template::Template;
use relevo_template::check::{RULES, Topology, check, topologies_for};

fn main() -> ExitCode {
    let mut template = None;
    let mut topologies = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rules" => {
                for rule in RULES {
                    println!(
                        "{:<22} refuses {}\n{:<22} source: {}",
                        rule.id, rule.refuses, "", rule.source
                    );
                }
                return ExitCode::SUCCESS;
            }
            "--topology" => match args.next().map(|spec| Topology::parse(&spec)) {
                Some(Ok(topology)) => topologies.push(topology),
                Some(Err(error)) => return usage(&error),
                None => return usage("--topology needs NAME:KEY=VALUE,..."),
            },
            path if template.is_none() => template = Some(PathBuf::from(path)),
            other => return usage(&format!("unexpected argument {other:?}")),
        }
    }
    let Some(path) = template else {
        return usage("the translated template is required");
    };
    let template = match Template::load(&path) {
        Ok(template) => template,
        Err(error) => {
            eprintln!("deploy check: {error}");
            return ExitCode::FAILURE;
        }
    };
    if topologies.is_empty() {
        topologies = topologies_for(&template);
    }
    let findings = check(&template, &topologies);
    for finding in &findings {
        eprintln!("deploy check: {finding}");
    }
    let names: Vec<&str> = topologies.iter().map(|t| t.name.as_str()).collect();
    if findings.is_empty() {
        println!(
            "deploy check: {} rules, topologies {}: nothing refused",
            RULES.len(),
            names.join(", ")
        );
        ExitCode::SUCCESS
    } else {
        println!(
            "deploy check: {} finding(s) in {}",
            findings.len(),
            names.join(", ")
        );
        ExitCode::FAILURE
    }
}

fn usage(problem: &str) -> ExitCode {
    eprintln!(
        "relevo-deploy-check: {problem}\nusage: relevo-deploy-check TRANSLATED.json --topology NAME:KEY=VALUE,... | --rules"
    );
    ExitCode::from(2)
}
