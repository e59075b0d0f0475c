//! `cargo relevo validate [TEMPLATE]`: the offline deploy check of any SAM template, with no AWS
//! credentials, in four steps, each printing its success line:
//! 1. cfn-lint (what a linter knows);
//! 2. `sam validate --lint`;
//! 3. the SAM translation (what `sam deploy` submits), by the translator the pinned SAM CLI ships;
//! 4. the deploy check (`relevo_template::check`) on that translation for both front doors:
//!    cycles, routing-rule globs and limits, integration timeouts, SQS visibility, environment
//!    size, quotas, the production pieces, least privilege.
//!
//! The Python tools are pinned ([`PINS`]) and installed on first use into a folder of their own:
//! `--tools DIR` or `RELEVO_TOOLS_DIR`, else `~/.cache/relevo/tools-<digest of the pins>` (under
//! `XDG_CACHE_HOME` when set). A checker that changes under us is not a check.
//!
//! Threat model: runs the operator's own template through pinned tools; the tools get no AWS
//! credentials (`AWS_CONFIG_FILE` and `AWS_SHARED_CREDENTIALS_FILE` point nowhere).

use std::path::{Path, PathBuf};
use std::process::Command;

use relevo_template::Template;
use relevo_template::check::{RULES, check, topologies_for};
use sha2::{Digest, Sha256};

use crate::CliError;

/// The Python tools, pinned. `infra/scripts/sam-tools.sh` installs the same pins (and
/// cargo-lambda) into this repository's `.tools/sam`; a test keeps the two lists in step.
pub const PINS: &[&str] = &["aws-sam-cli==1.170.0", "cfn-lint==1.58.0"];

/// The translation script, run by the tools' Python.
const TRANSLATE: &str = include_str!("sam_translate.py");

/// Succeeds when every pin is installed at its version.
const PINS_CHECK: &str = "import importlib.metadata as m, sys; want = dict(p.split('==') for p in sys.argv[1:]); sys.exit(any(m.version(n) != v for n, v in want.items()))";

pub struct Args {
    template: PathBuf,
    tools: Option<PathBuf>,
    out: Option<PathBuf>,
}

impl Args {
    pub fn parse(args: Vec<String>) -> Result<Self, String> {
        let mut template = None;
        let mut tools = std::env::var_os("RELEVO_TOOLS_DIR").map(PathBuf::from);
        let mut out = None;
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let mut value = || {
                args.next()
                    .map(PathBuf::from)
                    .ok_or_else(|| format!("{arg} needs a value"))
            };
            match arg.as_str() {
                "--tools" => tools = Some(value()?),
                "--out" => out = Some(value()?),
                flag if flag.starts_with('-') => {
                    return Err(format!("unexpected argument {flag:?}"));
                }
                path if template.is_none() => template = Some(PathBuf::from(path)),
                other => return Err(format!("unexpected argument {other:?}")),
            }
        }
        Ok(Args {
            template: template.unwrap_or_else(|| "template.yaml".into()),
            tools,
            out,
        })
    }
}

/// The default tools folder: one per set of pins, in the user's cache.
fn default_tools() -> PathBuf {
    let digest = Sha256::digest(PINS.join("\n").as_bytes());
    let hex: String = digest
        .iter()
        .take(6)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache.join("relevo").join(format!("tools-{hex}"))
}

/// Runs `command`, its output passing through; a failure names `step`.
fn step(step: &str, command: &mut Command) -> Result<(), CliError> {
    let status = command.status().map_err(|source| CliError::Spawn {
        what: step.into(),
        source,
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(CliError::Step {
            step: step.into(),
            status,
        })
    }
}

/// The pinned tools in `dir`, installed there first when any pin is missing.
fn ensure_tools(dir: &Path) -> Result<(), CliError> {
    let python = dir.join("bin/python");
    let installed = Command::new(&python)
        .arg("-c")
        .arg(PINS_CHECK)
        .args(PINS)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if installed {
        return Ok(());
    }
    println!(
        "tools: installing {} into {}",
        PINS.join(" "),
        dir.display()
    );
    step(
        "python3 -m venv",
        Command::new("python3").arg("-m").arg("venv").arg(dir),
    )?;
    step(
        "pip install",
        Command::new(dir.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .args(PINS),
    )
}

/// A tool of the tools folder, with no AWS credentials and no telemetry.
fn tool(tools: &Path, name: &str) -> Command {
    let mut command = Command::new(tools.join("bin").join(name));
    command
        .env("SAM_CLI_TELEMETRY", "0")
        .env("AWS_CONFIG_FILE", "/nonexistent")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
        .env("AWS_DEFAULT_REGION", "us-east-1");
    command
}

pub fn run(args: &Args) -> Result<(), CliError> {
    let template = std::path::absolute(&args.template).map_err(|source| CliError::Io {
        what: "find",
        path: args.template.display().to_string(),
        source,
    })?;
    if !template.is_file() {
        return Err(CliError::Io {
            what: "read",
            path: template.display().to_string(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        });
    }
    let folder = template.parent().unwrap_or(Path::new("/")).to_path_buf();
    let tools = args.tools.clone().unwrap_or_else(default_tools);
    let tools = std::path::absolute(&tools).unwrap_or(tools);
    ensure_tools(&tools)?;

    step("cfn-lint", tool(&tools, "cfn-lint").arg(&template))?;
    println!("cfn-lint: {}: nothing found", template.display());

    step(
        "sam validate --lint",
        tool(&tools, "sam")
            .current_dir(&folder)
            .args([
                "validate",
                "--lint",
                "--region",
                "us-east-1",
                "--template-file",
            ])
            .arg(&template),
    )?;

    let out = args
        .out
        .clone()
        .unwrap_or_else(|| folder.join("target/sam/template.json"));
    let io = |what, path: &Path, source| CliError::Io {
        what,
        path: path.display().to_string(),
        source,
    };
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent).map_err(|source| io("create", parent, source))?;
    }
    let script = tools.join("sam_translate.py");
    if std::fs::read_to_string(&script).ok().as_deref() != Some(TRANSLATE) {
        // Written aside and renamed into place: another validation may be reading it (make
        // validate checks two templates at once).
        let aside = tools.join(format!("sam_translate.py.{}", std::process::id()));
        std::fs::write(&aside, TRANSLATE).map_err(|source| io("write", &aside, source))?;
        std::fs::rename(&aside, &script).map_err(|source| io("rename", &script, source))?;
    }
    step(
        "the SAM translation",
        tool(&tools, "python").arg(&script).arg(&template).arg(&out),
    )?;
    let translated = Template::load(&out).map_err(|source| CliError::Translated {
        path: out.display().to_string(),
        source,
    })?;
    println!(
        "SAM translation: {} ({} resources)",
        out.display(),
        translated.json()["Resources"]
            .as_object()
            .map_or(0, |resources| resources.len())
    );

    let topologies = topologies_for(&translated);
    let findings = check(&translated, &topologies);
    let names: Vec<&str> = topologies
        .iter()
        .map(|topology| topology.name.as_str())
        .collect();
    for finding in &findings {
        eprintln!("deploy check: {finding}");
    }
    if !findings.is_empty() {
        println!(
            "deploy check: {} finding(s) in {}",
            findings.len(),
            names.join(", ")
        );
        return Err(CliError::Refused(findings.len()));
    }
    println!(
        "deploy check: {} rules, topologies {}: nothing refused",
        RULES.len(),
        names.join(", ")
    );
    Ok(())
}
