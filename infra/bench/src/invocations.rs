//! The figure a Lambda bill follows: an execution environment serves one request at a time, so
//! what a user pays for is the CPU (and wall time) of one invocation at concurrency 1. Each
//! subject — relevo's `tools-call` function without and with a bearer token, and the peer a
//! Lambda user would pick instead, rmcp's streamable-HTTP service under `lambda_http`
//! (`peer-rmcp-lambda`, built by `cargo lambda build --release` as an rmcp user on Lambda builds
//! it) — runs under the local Runtime API exactly as local Lambda mode runs it, answering
//! `tools/call greet`.
//!
//! For each subject: `cold` fresh processes are timed from `start_function` to their first
//! answer (cold start); in the last one, `count` invocations follow one after another, and the
//! function process's time on a CPU over them (schedstat, to the nanosecond) ÷ `count` is the CPU
//! per invocation, with the wall
//! time of each invocation (Runtime API round trips included) and the process's peak RSS. Every
//! answer must be HTTP 200 with the greeting. The function runs on the rig's server core (a
//! wrapper script execs it under `taskset`), this harness and its Runtime API on the load core.
//!
//! Runs as a child process (`relevo-bench invocations`); results are lines starting
//! `invocation\t`. The functions' output goes to a log file of each subject's own
//! (`RELEVO_LAMBDA_LOG_DIR`, as CloudWatch keeps a log group per function): the bytes the warm
//! invocations add to it, ÷ invocations, are what CloudWatch Logs would ingest per invocation
//! (the `logStream` field the local runtime adds to JSON lines taken off; newlines not counted).
//! That is the request's one line (with `RELEVO_METRICS=emf`, its EMF line carrying the access
//! fields), plus whatever the function's handler logs, plus the platform's START/END/REPORT
//! lines where the function's `LoggingConfig` lets Lambda write them (the local Runtime API
//! writes them as Lambda would: none at the template's system log level WARN).
//!
//! Configuration: `tools-call` runs as `template.yaml` deploys it ([`crate::deployed`]): the
//! default log level, its `LoggingConfig`, `RELEVO_METRICS=emf`, the tenant quota (one
//! conditional UpdateItem per request, answered by the stub and counted), response streaming.
//! The token is relevo's production path: `RELEVO_AUTH=required`, an ES256 token whose JWKS the
//! stub endpoint serves (fetched once per process, at the first invocation: part of cold start).
//! The one override: the row without a token sets `RELEVO_AUTH=off` (it measures the function
//! without token verification). The HTTP API subject is front door B as the template deploys
//! it: one buffered `mcp` function behind the HTTP API, invoked with payload 2.0 events. The AWS calls each invocation makes are counted at the stub.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde_json::Value;

use crate::cold;
use crate::load::Error;
use crate::rig::{self, Rig};

/// The subjects, in report order: (name, binary file, whether relevo checks a bearer token,
/// which front door's event it gets and which of the template's functions it is).
pub const SUBJECTS: [(&str, &str, Token, Door); 8] = [
    ("relevo tools-call", "tools-call", Token::None, Door::Rest),
    (
        "relevo tools-call (token)",
        "tools-call",
        Token::Bearer,
        Door::Rest,
    ),
    (HTTP_API_SUBJECT, "mcp", Token::Bearer, Door::HttpApi),
    (
        FUNCTION_URL_SUBJECT,
        "mcp",
        Token::Bearer,
        Door::FunctionUrl,
    ),
    // What anyone on the internet can make front door C run (no gateway in front of it).
    (
        "relevo mcp, Function URL, no token",
        "mcp",
        Token::Missing,
        Door::FunctionUrl,
    ),
    (
        "relevo mcp, Function URL, forged token",
        "mcp",
        Token::Forged,
        Door::FunctionUrl,
    ),
    (
        "relevo mcp, Function URL, over the tenant quota",
        "mcp",
        Token::OverQuota,
        Door::FunctionUrl,
    ),
    (
        "rmcp on lambda_http",
        "peer-rmcp-lambda",
        Token::None,
        Door::Rest,
    ),
];

/// The subject of front door B: `tools/call` through the HTTP API to the `mcp` function.
pub const HTTP_API_SUBJECT: &str = "relevo mcp, HTTP API, buffered, token";
/// The subject of front door C: `tools/call` through the Function URL to the `mcp` function
/// that streams (`McpUrlFunction`).
pub const FUNCTION_URL_SUBJECT: &str = "relevo mcp, Function URL, streamed, token";

/// The front door a subject's invocation comes through, and so its event and its function.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Door {
    /// Front door A: a REST API event (payload 1.0) to the per-method function.
    Rest,
    /// Front door B: an HTTP API event (payload 2.0) to the buffered `mcp` function.
    HttpApi,
    /// Front door C: a Function URL event (payload 2.0, `$default`) to the streamed `mcp` function.
    FunctionUrl,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Token {
    /// Token verification off (`RELEVO_AUTH=off`).
    None,
    /// A valid token of the bench's issuer.
    Bearer,
    /// No `Authorization` header: answered 401.
    Missing,
    /// A well-formed token signed by a key the issuer never published: answered 401.
    Forged,
    /// A valid token whose tenant's window is spent (the store refuses the quota lease, as it
    /// does when other environments took the window): the first call answered 429 after one
    /// refused write, every later one from the environment's memory, writing nothing.
    OverQuota,
}

impl Token {
    /// The status every warm invocation must answer (the cold one greets, but for a refusal).
    fn warm_status(self) -> u16 {
        match self {
            Token::None | Token::Bearer => 200,
            Token::Missing | Token::Forged => 401,
            Token::OverQuota => 429,
        }
    }
}

/// What one subject measured.
#[derive(Clone, Debug)]
pub struct Invocations {
    pub subject: String,
    pub binary_bytes: u64,
    pub cold_micros: Vec<u64>,
    pub count: u64,
    pub cpu_us: f64,
    pub wall_p50_us: f64,
    pub wall_p99_us: f64,
    pub peak_rss_kib: u64,
    pub foreign_share: f64,
    /// Bytes of log per warm invocation (what CloudWatch Logs ingests).
    pub log_bytes: f64,
    /// Log lines per warm invocation.
    pub log_lines: f64,
    /// AWS calls per warm invocation, by `X-Amz-Target`.
    pub aws_calls: Vec<(String, f64)>,
    /// The CPU per invocation of each round, in the order taken ([`measure`]).
    pub round_cpu_us: Vec<f64>,
}

impl Invocations {
    fn empty() -> Invocations {
        Invocations {
            subject: String::new(),
            binary_bytes: 0,
            cold_micros: Vec::new(),
            count: 0,
            cpu_us: f64::NAN,
            wall_p50_us: f64::NAN,
            wall_p99_us: f64::NAN,
            peak_rss_kib: 0,
            foreign_share: 0.0,
            log_bytes: 0.0,
            log_lines: 0.0,
            aws_calls: Vec::new(),
            round_cpu_us: Vec::new(),
        }
    }

    /// AWS calls per invocation whose target ends with `operation` (`UpdateItem`).
    pub fn calls(&self, operation: &str) -> f64 {
        self.aws_calls
            .iter()
            .filter(|(target, _)| target.ends_with(operation))
            .map(|(_, n)| n)
            .sum()
    }
}

/// Runs the child for every subject, `rounds` times in turn (subject after subject, then again),
/// and gathers its lines: each subject's figure is the round with the median CPU per invocation,
/// its wall p50 and p99 the medians of the rounds', its cold starts those of every round.
///
/// Why rounds: on this machine the CPU an invocation takes drifts by ±30 % over minutes (the
/// hypervisor, frequency, caches), more than the differences measured. One child per subject,
/// run one after the other, compares subjects at different moments; rounds taken in turn put
/// each subject in every moment, and the median round leaves out a round that met a burst.
pub async fn measure(
    bin_dir: &Path,
    peer_dir: &Path,
    work: &Path,
    template: &Path,
    plan: Plan,
    rig: Rig,
) -> Result<Vec<Invocations>, Error> {
    let Plan {
        count,
        cold,
        rounds,
    } = plan;
    let mut by_subject: Vec<Vec<Invocations>> = vec![Vec::new(); SUBJECTS.len()];
    for round in 0..rounds.max(1) {
        for (at, (subject, file, ..)) in SUBJECTS.iter().enumerate() {
            let dir = if file.starts_with("peer-") {
                peer_dir
            } else {
                bin_dir
            };
            // The cold starts asked for in the first round; one (the warm process) after it.
            let cold = if round == 0 { cold } else { 1 };
            let measured =
                run_child(subject, &dir.join(file), work, template, count, cold, rig).await?;
            by_subject[at].push(measured);
        }
    }
    Ok(by_subject.into_iter().map(median_round).collect())
}

/// How much [`measure`] runs: `count` warm invocations a round, `cold` fresh processes in the
/// first round, `rounds` rounds.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub count: u64,
    pub cold: usize,
    pub rounds: usize,
}

/// One subject's figure from its rounds (see [`measure`]).
fn median_round(mut rounds: Vec<Invocations>) -> Invocations {
    let median = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let cpus: Vec<f64> = rounds.iter().map(|r| r.cpu_us).collect();
    let p50 = median(rounds.iter().map(|r| r.wall_p50_us).collect());
    let p99 = median(rounds.iter().map(|r| r.wall_p99_us).collect());
    let colds: Vec<u64> = rounds.iter().flat_map(|r| r.cold_micros.clone()).collect();
    let mut sorted = cpus.clone();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted[sorted.len() / 2];
    let at = cpus.iter().position(|c| *c == middle).unwrap_or(0);
    let mut figure = rounds.swap_remove(at);
    figure.wall_p50_us = p50;
    figure.wall_p99_us = p99;
    figure.cold_micros = colds;
    figure.round_cpu_us = cpus;
    figure
}

/// Runs the `invocations` child once for `subject` and parses its lines.
async fn run_child(
    subject: &str,
    binary: &Path,
    work: &Path,
    template: &Path,
    count: u64,
    cold: usize,
    rig: Rig,
) -> Result<Invocations, Error> {
    let mut command = Rig::command(rig.load_core, &std::env::current_exe()?);
    command
        .arg("invocations")
        .arg("--subject")
        .arg(subject)
        .arg("--binary")
        .arg(binary);
    command
        .args([
            "--count",
            &count.to_string(),
            "--cold",
            &cold.to_string(),
            "--work",
        ])
        .arg(work)
        .arg("--template")
        .arg(template);
    let logs = work.join("logs").join(slug(subject));
    let _ = std::fs::remove_dir_all(&logs);
    command.env("RELEVO_LAMBDA_LOG_DIR", &logs);
    if let Some(core) = rig.server_core {
        command.args(["--server-core", &core.to_string()]);
    }
    let output = command
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await?;
    if !output.status.success() {
        return Err(format!("{subject}: {}", String::from_utf8_lossy(&output.stderr)).into());
    }
    let mut measured = Invocations {
        subject: subject.into(),
        binary_bytes: std::fs::metadata(binary)?.len(),
        ..Invocations::empty()
    };
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        match fields.as_slice() {
            ["invocation", "cold", micros] => measured.cold_micros.push(micros.parse()?),
            ["invocation", "warm", count, cpu, p50, p99, rss, foreign] => {
                measured.count = count.parse()?;
                measured.cpu_us = cpu.parse()?;
                measured.wall_p50_us = p50.parse()?;
                measured.wall_p99_us = p99.parse()?;
                measured.peak_rss_kib = rss.parse()?;
                measured.foreign_share = foreign.parse()?;
            }
            ["invocation", "log", bytes, lines] => {
                measured.log_bytes = bytes.parse()?;
                measured.log_lines = lines.parse()?;
            }
            ["invocation", "calls", target, per] => {
                measured.aws_calls.push((target.to_string(), per.parse()?));
            }
            _ => {}
        }
    }
    if measured.count == 0 {
        return Err(format!("{subject}: the child reported no warm invocations").into());
    }
    Ok(measured)
}

/// The options of the child.
pub struct Child {
    pub subject: String,
    pub binary: PathBuf,
    pub work: PathBuf,
    pub count: u64,
    pub cold: usize,
    pub server_core: Option<usize>,
    pub template: PathBuf,
}

/// A file-name form of a subject (`relevo-tools-call-token`).
fn slug(subject: &str) -> String {
    subject
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// The `invocations` child: prints `invocation\tcold\tMICROS` per fresh process and one
/// `invocation\twarm\tCOUNT\tCPU_US\tP50_US\tP99_US\tRSS_KIB\tFOREIGN` line.
pub fn child(options: &Child) -> Result<(), Error> {
    let (_, _, token, door) = SUBJECTS
        .iter()
        .find(|(name, ..)| *name == options.subject)
        .ok_or("unknown --subject")?;
    let (binary, launcher) = pinned(&options.binary, &options.work, options.server_core)?;
    let ticks = crate::load::ticks_per_sec()?;
    for sample in 0..options.cold.max(1) {
        let warm = if sample + 1 == options.cold.max(1) {
            options.count
        } else {
            0
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let result = runtime.block_on(one_process(
            &binary,
            &launcher,
            &options.template,
            *token,
            *door,
            options.subject.starts_with("rmcp"),
            warm,
            ticks,
        ));
        runtime.shutdown_timeout(Duration::from_secs(5));
        let (cold, warm) = result?;
        println!("invocation\tcold\t{cold}");
        if let Some(w) = warm {
            println!(
                "invocation\twarm\t{}\t{:.3}\t{:.1}\t{:.1}\t{}\t{:.4}",
                w.count, w.cpu_us, w.wall_p50_us, w.wall_p99_us, w.peak_rss_kib, w.foreign_share
            );
            println!("invocation\tlog\t{:.1}\t{:.3}", w.log_bytes, w.log_lines);
            for (target, per) in &w.aws_calls {
                println!("invocation\tcalls\t{target}\t{per:.4}");
            }
        }
    }
    Ok(())
}

/// The function binary (its canonical path: how its process is found) and the launcher that runs
/// it on the server core.
pub(crate) fn pinned(
    binary: &Path,
    work: &Path,
    core: Option<usize>,
) -> Result<(PathBuf, PathBuf), Error> {
    let binary = std::fs::canonicalize(binary).map_err(|e| {
        format!(
            "{}: {e} (infra/scripts/bench.sh builds it)",
            binary.display()
        )
    })?;
    let launcher = launcher(&binary, work, core)?;
    Ok((binary, launcher))
}

/// A script that execs `binary` on `core`: the function's pid is the binary's.
fn launcher(binary: &Path, work: &Path, core: Option<usize>) -> Result<PathBuf, Error> {
    let Some(core) = core else {
        return Ok(binary.to_path_buf());
    };
    let name = binary
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let script = work.join(format!("pinned-{name}.sh"));
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nexec taskset -c {core} '{}' \"$@\"\n",
            binary.display()
        ),
    )?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700))?;
    Ok(script)
}

/// One fresh process: its cold start in µs, then `warm` invocations measured. A `peer` runs as
/// its users deploy it: a function without `LoggingConfig` (Lambda's defaults: the text format,
/// START/END/REPORT written for every invocation), where relevo's runs with the template's.
#[allow(clippy::too_many_arguments)]
async fn one_process(
    binary: &Path,
    launcher: &Path,
    template: &Path,
    token: Token,
    door: Door,
    peer: bool,
    warm: u64,
    ticks: f64,
) -> Result<(u64, Option<Invocations>), Error> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let issuer_url = format!("http://{}", listener.local_addr()?);
    let issuer = relevo_auth::DevIssuer::generate(&issuer_url, cold::AUDIENCE);
    let jwks = serde_json::to_value(issuer.jwks())?;
    let (endpoint, calls) = cold::aws_stub_with(listener, jwks, token == Token::OverQuota).await?;
    let no_domain_mcp = |streamed: bool| -> Result<crate::deployed::Deployment, Error> {
        crate::deployed::functions(template, &issuer_url, cold::AUDIENCE, false)?
            .into_iter()
            .find(|f| {
                f.binary == "mcp"
                    && f.template_env
                        .get("RELEVO_RESPONSE_STREAMING")
                        .map(String::as_str)
                        == streamed.then_some("true")
            })
            .ok_or_else(|| {
                format!(
                    "template.yaml deploys no {} mcp function without a domain",
                    if streamed { "streamed" } else { "buffered" }
                )
                .into()
            })
    };
    let mut deployed = match door {
        Door::Rest => {
            crate::deployed::function(template, "tools-call", &issuer_url, cold::AUDIENCE)?
        }
        Door::HttpApi => no_domain_mcp(false)?,
        Door::FunctionUrl => no_domain_mcp(true)?,
    };
    let mut event = cold::event_through("tools-call", door != Door::Rest);
    if door == Door::FunctionUrl {
        event = relevo_gateway::lambda_local::events::as_function_url_event(event);
    }
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    match token {
        Token::Bearer => {
            cold::authorize(&mut event, &issuer.mint("bench", "bench", &[], now, 3600)?);
        }
        Token::None => deployed.set("RELEVO_AUTH", "off", NO_TOKEN),
        Token::Missing => {}
        Token::Forged => {
            let stranger = relevo_auth::DevIssuer::generate(&issuer_url, cold::AUDIENCE);
            cold::authorize(
                &mut event,
                &stranger.mint("bench", "bench", &[], now, 3600)?,
            );
        }
        Token::OverQuota => {
            // The deployed quota (the template's RatePerTenant); the stub refuses its lease.
            cold::authorize(&mut event, &issuer.mint("bench", "bench", &[], now, 3600)?);
        }
    }
    if peer {
        deployed.logging = relevo_template::Logging::default();
    }
    let started = Instant::now();
    let spec = relevo_gateway::lambda_local::FunctionSpec {
        name: "bench".into(),
        binary: launcher.to_path_buf(),
        env: deployed.env(&endpoint),
        memory_mb: deployed.memory_mb,
        timeout: Duration::from_secs(30),
        environments: 1,
        logging: deployed.logging.clone(),
    };
    let function = relevo_gateway::lambda_local::start_function(spec).await?;
    let wait = Duration::from_secs(30);
    let first = cold::answer(&function, event.clone(), wait).await?;
    match token.warm_status() {
        200 => greeted(&first)?,
        status => refused(&first, status)?,
    }
    let cold = started.elapsed().as_micros() as u64;
    if warm == 0 {
        return Ok((cold, None));
    }
    let pid = pid_of(binary).ok_or_else(|| format!("no process runs {}", binary.display()))?;
    let log = std::env::var("RELEVO_LAMBDA_LOG_DIR")
        .ok()
        .map(|dir| PathBuf::from(dir).join("bench.log"));
    // The cold invocation's lines reach the file before the warm ones are counted.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let log_before = log.as_deref().map_or(0, file_len);
    let calls_before = calls.snapshot();
    let window = rig::Window::open(ticks)?;
    let before = rig::process_run_secs(&pid)?;
    let mut walls = Vec::with_capacity(warm as usize);
    for _ in 0..warm {
        let sent = Instant::now();
        let answer = cold::answer(&function, event.clone(), wait).await?;
        match token.warm_status() {
            200 => greeted(&answer)?,
            status => refused(&answer, status)?,
        }
        walls.push(sent.elapsed().as_secs_f64() * 1e6);
    }
    let cpu = rig::process_run_secs(&pid)? - before;
    let foreign_share = window.foreign_share(cpu)?;
    walls.sort_by(f64::total_cmp);
    let at = |q: f64| walls[((walls.len() as f64 - 1.0) * q).round() as usize];
    let peak_rss_kib = rig::peak_rss_kib(&pid)?;
    let aws_calls = calls
        .snapshot()
        .into_iter()
        .map(|(target, n)| {
            let was = calls_before.get(&target).copied().unwrap_or(0);
            (target, (n - was) as f64 / warm as f64)
        })
        .filter(|(_, per)| *per > 0.0)
        .collect();
    // The last lines reach the file (the runtime appends them as the function writes them).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (log_bytes, log_lines) = match &log {
        Some(log) => function_log(log, log_before)?,
        None => (0, 0),
    };
    Ok((
        cold,
        Some(Invocations {
            count: warm,
            cpu_us: cpu * 1e6 / warm as f64,
            wall_p50_us: at(0.5),
            wall_p99_us: at(0.99),
            peak_rss_kib,
            foreign_share,
            log_bytes: log_bytes as f64 / warm as f64,
            log_lines: log_lines as f64 / warm as f64,
            aws_calls,
            ..Invocations::empty()
        }),
    ))
}

/// The answer is the refusal `status`, as a client gets it.
fn refused(answer: &Value, status: u16) -> Result<(), Error> {
    if answer["statusCode"] != status {
        return Err(format!("expected a {status}: {answer}").into());
    }
    Ok(())
}

/// Why the row without a token sets `RELEVO_AUTH=off`.
pub const NO_TOKEN: &str =
    "the row without a token measures the function without token verification";

/// What the local runtime adds to each JSON line of a function's output.
const LOG_STREAM_FIELD: &str = r#","logStream":"local-0""#;

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// The bytes and lines the function wrote to `log` after offset `from`: each line without its
/// newline and without the `logStream` field the local runtime added.
fn function_log(log: &Path, from: u64) -> Result<(u64, u64), Error> {
    let text = std::fs::read(log).unwrap_or_default();
    let added = text.get(from as usize..).unwrap_or_default();
    Ok(count_function_bytes(&String::from_utf8_lossy(added)))
}

fn count_function_bytes(text: &str) -> (u64, u64) {
    let mut bytes = 0u64;
    let mut lines = 0u64;
    for line in text.lines() {
        let injected = if line.contains(&LOG_STREAM_FIELD[1..]) {
            LOG_STREAM_FIELD.len()
        } else {
            0
        };
        bytes += line.len().saturating_sub(injected) as u64;
        lines += 1;
    }
    (bytes, lines)
}

/// The answer must be HTTP 200 carrying the greeting (a function answering errors fast would
/// otherwise look good).
pub(crate) fn greeted(answer: &Value) -> Result<(), Error> {
    let body = answer["body"].as_str().unwrap_or_default();
    let body = if answer["isBase64Encoded"] == true {
        String::from_utf8(base64::engine::general_purpose::STANDARD.decode(body)?)?
    } else {
        body.to_string()
    };
    let greeting = serde_json::from_str::<Value>(&body).ok().and_then(|b| {
        b["result"]["structuredContent"]["greeting"]
            .as_str()
            .map(String::from)
    });
    if answer["statusCode"] != 200 || greeting.as_deref() != Some("Hello, bench!") {
        return Err(format!("the function did not greet: {answer}").into());
    }
    Ok(())
}

/// The pid of the process whose executable is `binary`.
pub(crate) fn pid_of(binary: &Path) -> Option<String> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let exe = std::fs::read_link(entry.path().join("exe")).ok()?;
            (name.chars().all(|c| c.is_ascii_digit()) && exe == binary).then_some(name)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subject_is_its_median_round_by_cpu_with_median_walls_and_every_cold_start() {
        let round = |cpu: f64, p50: f64, cold: &[u64], rss: u64| Invocations {
            cpu_us: cpu,
            wall_p50_us: p50,
            wall_p99_us: p50 * 3.0,
            cold_micros: cold.to_vec(),
            peak_rss_kib: rss,
            count: 10,
            ..Invocations::empty()
        };
        let figure = median_round(vec![
            round(150.0, 300.0, &[9, 8], 1),
            round(100.0, 200.0, &[7], 2),
            round(120.0, 100.0, &[6], 3),
        ]);
        assert_eq!(figure.cpu_us, 120.0);
        assert_eq!(figure.peak_rss_kib, 3, "the median round's own record");
        assert_eq!((figure.wall_p50_us, figure.wall_p99_us), (200.0, 600.0));
        assert_eq!(figure.cold_micros, [9, 8, 7, 6]);
        assert_eq!(figure.round_cpu_us, [150.0, 100.0, 120.0]);
    }

    #[test]
    fn log_bytes_leave_out_the_local_log_stream_field_and_newlines() {
        let function_line = r#"{"level":"INFO","msg":"access"}"#;
        let logged = format!(
            "{}{LOG_STREAM_FIELD}}}\nplain text line\n",
            &function_line[..function_line.len() - 1]
        );
        assert_eq!(
            count_function_bytes(&logged),
            ((function_line.len() + "plain text line".len()) as u64, 2)
        );
    }

    #[test]
    fn subjects_get_log_directories_of_their_own() {
        assert_eq!(slug("relevo tools-call (token)"), "relevo-tools-call-token");
        assert_ne!(slug(SUBJECTS[0].0), slug(SUBJECTS[1].0));
    }
}
